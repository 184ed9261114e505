#!/usr/bin/env python3
"""The free rewrite framed two ways, on the cases of a half where the product asks one (no candidate found, the
last edit changed existing code), each from the same engine state (the suite's `fresh`): the product's chat
prompt (`chat`: service/next_edit.rewrite) and a fill-in-the-middle hole over the 6 lines below the cursor on the
file's page (`fill`: the completion pipeline's own prompt, its cached page serving it; the region's old lines
drafted by the rewrite drafter, the answer settled, the same unsure gate, ended where it leaves the region
unsure). Prints, per framing, the time from the ask to the answer, what is shown and how much of it is the next
hunk exactly; `--record` writes a ledger line. Run with the project's venv:
`.venv/bin/python evals/experiments/compare-rewrite-framing.py --half tune --record`."""
import argparse
import json
import statistics
import sys
import time
from dataclasses import replace

from evals import ledger
from evals.suites.next_edit import load_cases
from evals.suites.next_edit.run import NO_TIME_LIMIT_S, fresh, place_of, recent_of
from evals.suites.next_edit.score import score_case
from lsp_server.context import Document
from lsp_server.context.edits import keep_lines
from lsp_server.context.usages import next_use
from lsp_server.engine import CUT_SHORT, GenerationRequest, StopReason, make_engine
from lsp_server.pipeline import Pipeline
from lsp_server.postprocess.next_edit import MIN_DEPARTURE_MARGIN, departure, proposal
from lsp_server.prompt.next_edit import region_lines
from lsp_server.service.edit_check import CHECK_SUFFIX_TOKENS, plan_candidates
from lsp_server.service.next_edit import MAX_EXTRA_TOKENS, rewrite, worth_rewriting
from lsp_server.service.settings import Settings

BELOW = 6


def fill(pipe: Pipeline, case: dict) -> tuple[dict | None, str]:
    engine, place, recent = pipe.engine, place_of(case), recent_of(case)
    text, line, language = case["before_window"], case["cursor"]["line"], case["language"]
    lines = keep_lines(text)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    start = line + 1
    use = next_use(text, recent[-1], language, region_lines(len(lines), line, 1, BELOW)) if recent else None
    start = min(len(lines), start if use is None else use)
    end = min(len(lines), start + BELOW)
    region = "".join(lines[start:end])
    doc = Document(case["path"], "".join(lines[:start]) + "".join(lines[end:]), language)
    plan = pipe.plan(replace(place, document=doc, line=start, col=0, multiline=True, force=True,
                             suffix_cap=CHECK_SUFFIX_TOKENS))
    source = engine.tokenize(region)
    g = engine.generate(GenerationRequest(plan.prompt.tokens, max_tokens=len(source) + MAX_EXTRA_TOKENS,
                                          language=language, rewrite_source=source, record_margins=True,
                                          keep=plan.prompt.stable, time_budget_s=NO_TIME_LIMIT_S, settle=region,
                                          sure=MIN_DEPARTURE_MARGIN))
    if g.stop_reason == StopReason.UNSURE:
        return None, "unsure"
    cut = g.stop_reason in CUT_SHORT or g.stop_reason == StopReason.SETTLED
    edit, dropped = proposal(text, start, region, g.text, cut, recent, language)
    if edit is not None and g.margins:
        at = min(len(engine.tokenize(g.text[:departure(region, g.text)])), len(g.margins) - 1)
        if g.margins[at] < MIN_DEPARTURE_MARGIN:
            return None, "unsure"
    if edit is None:
        return None, str(dropped)
    return {"start_line": edit.start, "end_line": edit.end, "text": edit.text}, ""


def chat(pipe: Pipeline, case: dict) -> tuple[dict | None, str]:
    p = rewrite(pipe.engine, case["before_window"], case["cursor"]["line"], case["recent_edits"], recent_of(case),
                case["path"], case["language"], time_budget_s=NO_TIME_LIMIT_S)
    e = p.edit
    return (None, str(p.dropped)) if e is None else ({"start_line": e.start, "end_line": e.end, "text": e.text}, "")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--half", default="tune")
    ap.add_argument("--limit", type=int, default=0, help="at most this many free-rewrite cases")
    ap.add_argument("--record", action="store_true")
    args = ap.parse_args()
    machine = ledger.machine_speed()
    s = Settings()
    engine = make_engine(s.engine_config(), None, kind="local")
    pipe = Pipeline(engine, s.prompt_budget())
    ways = {"chat": chat, "fill": fill}
    got: dict[str, list] = {w: [] for w in ways}
    for case in load_cases(half=args.half):
        recent = recent_of(case)
        if not worth_rewriting(recent) or plan_candidates(pipe, place_of(case), recent):
            continue
        line = [case["id"]]
        for name, way in ways.items():
            fresh(pipe, case)
            t0 = time.monotonic()
            prop, why = way(pipe, case)
            took = time.monotonic() - t0
            exact = bool(prop and score_case(case, prop)["exact"])
            got[name].append((took, prop is not None, exact, case["kind"]))
            line.append(f"{name} {took:.2f} s {'SHOWN' if prop else why}{' EXACT' if exact else ''}")
        print(" | ".join(line), flush=True)
        if args.limit and len(got["chat"]) >= args.limit:
            break
    engine.close()
    summary = {}
    for name, rows in got.items():
        shown = sum(r[1] for r in rows)
        summary[name] = {"cases": len(rows), "latency_s_p50": round(statistics.median(r[0] for r in rows), 2),
                         "proposals": shown, "exact": sum(r[2] for r in rows),
                         "precision": round(sum(r[2] for r in rows) / shown, 3) if shown else 0.0,
                         "shown_on_no_edit": sum(r[1] and r[3] == "none" for r in rows)}
    print(json.dumps(summary, indent=1))
    if args.record:
        ledger.record(["evals/experiments/compare-rewrite-framing.py", *sys.argv[1:]], {"summary": summary}, None,
                      machine=machine)


if __name__ == "__main__":
    main()
