"""The results ledger (evals/results.jsonl): one line per measurement, small enough to read. Raw result files go
to evals/out/ (git-ignored); what is kept is the date, the commit, the machine and its speed measured at the
time (this machine's speed moves 2x between days, so a figure means little without it), the command and the
headline figures."""
from __future__ import annotations

import datetime
import json
import subprocess
import time
from pathlib import Path

from lsp_server.engine.machine import machine_speed

HERE = Path(__file__).resolve().parent
LEDGER = HERE / "results.jsonl"
OUT = HERE / "out"

# the figures a report's summary rows carry that a ledger line keeps (the rest stays in the raw file)
HEADLINE_KEYS = ("pass_at_1", "exact_match", "exact", "tasks", "speedup", "baseline_tok_s", "spec_tok_s",
                 "p50_ms", "p90_ms", "accepted_chars", "parses", "from_ghost_share", "line_starts",
                 "line_starts_answered", "line_starts_right", "line_start_p50_ms", "line_start_answered_p50_ms",
                 "asks_sent", "asks_answered", "proposal_ms_p50", "located", "precision",
                 "no_edit_rate", "proposals", "latency_s_p50", "shown_latency_s_p50", "from_repeat", "identical",
                 "compared", "cases", "from_ghost", "shown", "wrong_shown")


def out_path(name: str) -> Path:
    """Where a command writes its raw result by default (git-ignored)."""
    OUT.mkdir(exist_ok=True)
    return OUT / f"{time.strftime('%Y%m%d-%H%M%S')}-{name}.json"


def commit() -> str:
    try:
        sha = subprocess.run(["git", "rev-parse", "--short=10", "HEAD"], cwd=HERE, capture_output=True, text=True,
                             timeout=10).stdout.strip()
        # the ledger's own new lines do not make the code a different one
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ":/",
                                ":(top,exclude)evals/results.jsonl"], cwd=HERE, capture_output=True, text=True,
                               timeout=10).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return (sha or "unknown") + ("+dirty" if dirty else "")


def headline(report: dict) -> dict:
    """The figures worth a ledger line: each summary row's (or table row's) headline keys."""
    rows = report.get("summary") or {r.get("category", str(i)): r for i, r in enumerate(report.get("rows", []))}
    if not rows:
        rows = report.get("by_kind") or ({"total": report["total"]} if isinstance(report.get("total"), dict) else {})
    out = {}
    for name, row in rows.items():
        if isinstance(row, dict):
            kept = {k: round(row[k], 3) if isinstance(row[k], float) else row[k]
                    for k in HEADLINE_KEYS if isinstance(row.get(k), (int, float))}
            if kept:
                out[name] = kept
    return out


def record(command: list[str], report: dict, raw: Path | None, ledger: Path = LEDGER, machine: dict | None = None) -> dict:
    """`machine`: the machine's speed measured when the run started (measured now where not given)."""
    line = {"date": datetime.date.today().isoformat(), "commit": commit(), "machine": machine or machine_speed(),
            "command": " ".join(command), "figures": headline(report)}
    if raw is not None:
        line["raw"] = str(raw)
    with ledger.open("a") as f:
        f.write(json.dumps(line, separators=(", ", ": ")) + "\n")
    return line
