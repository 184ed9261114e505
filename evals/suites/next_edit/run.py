"""`tandem-eval next-edit`: the product's next-edit prediction (lsp_server.service.next_edit.predict: candidates
checked by the target, else the free rewrite) over the suite's cases, beside the baselines on the same cases:
`before`, the prediction as it was before candidates (the repeat of the user's change shown unchecked, else the
free rewrite of 1 line above to 12 below, written to its end); `plain`, the same target asked plainly with the
same region (the recent edits and the code, no context above, no filters: the model's raw answer as the
proposal); and `none` (no prediction). `--speed` also generates each of the product's free rewrites without
speculation and compares: the output must be identical, and tokens/s is set side by side.

Each case's window is the document (the suite keeps no more of the file); the cursor is the case's. Before each
method's ask the engine's caches are emptied and the page of a completion at the cursor is evaluated, as the
editor's completions there leave it, with the next-edit prompt's head (its instructions, the same in every ask)
held in the KV store, as any earlier ask leaves it: every method starts from the same state, and none from
another's prompt. `before` asks with the prompt as it was worded then (its instructions after the edits, no head:
`OldEditPrompt`)."""
from __future__ import annotations

import json
import re
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

from lsp_server.context import Document
from lsp_server.context.edits import Hunk, keep_lines
from lsp_server.context.repeats import repeat
from lsp_server.engine import CUT_SHORT, GenerationRequest
from lsp_server.pipeline import CompletionRequest, Pipeline
from lsp_server.postprocess.next_edit import MIN_DEPARTURE_MARGIN, changed_lines, proposal
from lsp_server.prompt.chat import chat, tokens_of
from lsp_server.prompt.next_edit import (FENCE, LINES_ABOVE, LINES_BELOW, SYSTEM, EditPrompt, answer_end,
                                         build_prompt, fence_ticks, head_tokens, region_lines)
from lsp_server.service import next_edit as service_next_edit
from lsp_server.service.next_edit import MAX_EXTRA_TOKENS, predict, rewrite
from lsp_server.service.settings import Settings

from . import DEFAULT_CASES, load_cases
from .score import score, table

HUNK_RE = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def hunks_of(diff: str) -> list[Hunk]:
    """The hunks of a unified diff without context (the suite's `recent_edits`)."""
    out: list[Hunk] = []
    cur = None
    for line in diff.splitlines():
        m = HUNK_RE.match(line)
        if m:
            if cur:
                out.append(Hunk(cur[0], tuple(cur[1]), tuple(cur[2])))
            # the new side's first line; where it is empty (a deletion), the line after which it stands
            cur = (int(m.group(3)) - (m.group(4) != "0"), [], [])
        elif cur and line.startswith("-") and not line.startswith("---"):
            cur[1].append(line[1:])
        elif cur and line.startswith("+") and not line.startswith("+++"):
            cur[2].append(line[1:])
    if cur:
        out.append(Hunk(cur[0], tuple(cur[1]), tuple(cur[2])))
    return out


PLAIN = ("Recent edit:\n{t}diff\n{diff}{t}\n\nCode:\n{t}{fence}\n{region}{t}\n\nPredict the next edit. Reply with "
         "the rewritten code only.")


def plain(engine, case: dict, above: int, below: int) -> tuple[dict | None, float, int]:
    """The plain prompted model: the same region, a plain request, its answer taken as it is."""
    text, line = case["before_window"], case["cursor"]["line"]
    lines = text.splitlines(keepends=True)
    start, end = region_lines(len(lines), line, above, below)
    region = "".join(lines[start:end])
    fence = FENCE.get(case["language"], "")
    # as the product's prompt: the case's text never becomes control tokens, and its fences are longer than any
    # run of backticks in it, so that a fenced example in the region does not end the answer
    t = fence_ticks(case["recent_edits"], region)
    user = PLAIN.format(diff=case["recent_edits"], fence=fence, region=region, t=t)
    source = engine.tokenize(region)
    t0 = time.monotonic()
    gen = engine.generate(GenerationRequest(tokens_of(chat(user, f"{t}{fence}\n"), engine), max_tokens=len(source) +
                                            MAX_EXTRA_TOKENS, stop=(t,), language=case["language"],
                                            rewrite_source=source, time_budget_s=NO_TIME_LIMIT_S))
    answer, closed = answer_end(gen.text, region)
    change = changed_lines(region, answer, gen.stop_reason in CUT_SHORT and not closed)
    if change is None:
        return None, time.monotonic() - t0, len(gen.tokens)
    i1, i2, new = change
    return {"start_line": start + i1, "end_line": start + i2, "text": new}, time.monotonic() - t0, len(gen.tokens)


# a case's generation is not cut by time: the figures are the same on a busy machine (the editor's requests have
# the server's budget)
NO_TIME_LIMIT_S = 600.0


OLD_ASK = ("My latest edits to `{path}`:\n{t}diff\n{diff}{t}\n\n{above}"
           "Rewrite the code below with the follow-up edits these changes require elsewhere (every other line "
           "unchanged; if nothing else needs to change, the code as it is).\n\n{t}{fence}\n{region}{t}")


@dataclass(frozen=True)
class OldEditPrompt(EditPrompt):
    """The free rewrite's prompt as `before` (e895366) worded it: the instructions after the edits and the code,
    no head kept."""

    @property
    def pieces(self):
        t, f = self.ticks, self.fence
        above = f"The code above it:\n{t}{f}\n{self.above}{t}\n\n" if self.above else ""
        user = OLD_ASK.format(path=self.path, diff=self.diff or "(none)\n", above=above, fence=f,
                              region=self.region, t=t)
        return chat(user, f"{t}{f}\n", system=SYSTEM)

    def head_tokens(self, tokenizer) -> list[int]:
        return []


def old_build_prompt(*args, **kwargs) -> OldEditPrompt:
    return OldEditPrompt(**vars(build_prompt(*args, **kwargs)))


def recent_of(case: dict) -> list[Hunk]:
    """The case's recent edits as the edit history keeps them: in the lines of the window, the document here."""
    return [Hunk(h.start - case["window_start"], h.old, h.new) for h in hunks_of(case["recent_edits"])]


def place_of(case: dict) -> CompletionRequest:
    return CompletionRequest(Document(case["path"], case["before_window"], case["language"]), case["cursor"]["line"],
                             0)


def fresh(pipeline: Pipeline, case: dict) -> None:
    """The engine as the editor leaves it at the case's cursor: nothing cached but the page of a completion there
    (the completions at every keystroke, and the fill at rest, evaluate it)."""
    engine = pipeline.engine
    target = getattr(engine, "target", None)
    if hasattr(target, "reset"):
        target.reset()
        if getattr(target, "store", None) is not None:
            target.store.clear()
    head = head_tokens(engine)
    engine.prewarm(head, keep=len(head))   # the page's prompt below overwrites it: the store keeps it
    line = case["cursor"]["line"]
    col = min(case["cursor"]["character"], len(keep_lines(case["before_window"])[line].rstrip("\n"))) \
        if line < len(keep_lines(case["before_window"])) else 0
    req = CompletionRequest(Document(case["path"], case["before_window"], case["language"]), line, col,
                            at_rest=True)
    plan = pipeline.plan(req)
    engine.prewarm(plan.prompt.tokens, keep=plan.prompt.stable)


def ours(pipeline: Pipeline, case: dict, above: int, below: int, speculative: bool = True,
         min_margin: float = MIN_DEPARTURE_MARGIN):
    t0 = time.monotonic()
    p = predict(pipeline, place_of(case), case["recent_edits"], recent_of(case), case["path"],
                speculative=speculative, above=above, below=below, time_budget_s=NO_TIME_LIMIT_S,
                min_margin=min_margin)
    took = time.monotonic() - t0
    e = p.edit
    prop = None if e is None else {"start_line": e.start, "end_line": e.end, "text": e.text}
    return prop, took, p


def before(pipeline: Pipeline, case: dict, above: int = LINES_ABOVE, below: int = 12):
    """The prediction before candidates (e895366): the user's replacement repeated where the old text stands,
    found in the text and shown unchecked; else the free rewrite of 1 line above to 12 below, with 12 lines above
    it shown, written to its end."""
    text, line, recent, language = case["before_window"], case["cursor"]["line"], recent_of(case), case["language"]
    t0 = time.monotonic()
    rep = repeat(text, recent[-1], language, line) if recent else None
    if rep is not None:
        start, end, new_text = rep
        edit, _ = proposal(text, start, "".join(keep_lines(text)[start:end]), new_text, False, recent, language)
        if edit is not None:
            return {"start_line": edit.start, "end_line": edit.end, "text": edit.text}, time.monotonic() - t0, None
    with mock.patch.object(service_next_edit, "build_prompt", old_build_prompt):
        p = rewrite(pipeline.engine, text, line, case["recent_edits"], recent, case["path"], language,
                    above=above, below=below, time_budget_s=NO_TIME_LIMIT_S, settles=False, context_above=12)
    e = p.edit
    prop = None if e is None else {"start_line": e.start, "end_line": e.end, "text": e.text}
    return prop, time.monotonic() - t0, p


def _p50(xs: list[float]) -> float | None:
    return round(statistics.median(xs), 2) if xs else None


def run(engine, cases: list[dict], methods: tuple[str, ...], above: int, below: int, speed: bool,
        out_path: Path | None, log=lambda m: print(m, flush=True),
        min_margin: float = MIN_DEPARTURE_MARGIN) -> dict:
    pipeline = Pipeline(engine, Settings().prompt_budget())
    results: dict[str, list] = {m: [] for m in methods}
    rows = []
    spec_tok, spec_s, plain_tok, plain_s, identical, compared = 0, 0.0, 0, 0.0, 0, 0
    latencies, shown_latencies, sources = [], [], {}
    # the free rewrite's time, ours and before's, on the cases where both asked the model to rewrite
    rewrite_s: dict[str, list[float]] = {"ours": [], "before": []}
    before_s, before_shown_s = [], []
    for i, case in enumerate(cases):
        row = {"id": case["id"]}
        if "ours" in methods:
            fresh(pipeline, case)
            prop, took, p = ours(pipeline, case, above, below, min_margin=min_margin)
            g = p.generation
            results["ours"].append(prop)
            latencies.append(took)
            if prop is not None:
                shown_latencies.append(took)
                sources[p.source] = sources.get(p.source, 0) + 1
            row["ours"] = {"proposal": prop, "s": round(took, 2), "dropped": p.dropped and str(p.dropped),
                           "source": p.source, "margin": p.margin, "checks_s": round(p.checks_s, 2),
                           "checks": [{"kind": v.candidate.kind, "agreed": v.agreed, "written": v.written,
                                       "margin": v.margin, "prompt": v.prompt_tokens, "evaluated": v.evaluated,
                                       "s": round(v.seconds, 2)} for v in p.checks]}
            if g is not None:
                row["ours"].update(tokens=len(g.tokens), gen_s=round(g.gen_s, 2), prompt_s=round(g.prompt_s, 2),
                                   steps=g.steps, answer=g.text, stop=str(g.stop_reason),
                                   rewrite_s=round(g.prompt_s + g.gen_s, 2))
            if speed and g is not None:
                fresh(pipeline, case)
                _, _, q = ours(pipeline, case, above, below, speculative=False, min_margin=min_margin)
                h = q.generation
                compared += 1
                identical += h.tokens == g.tokens
                spec_tok, spec_s = spec_tok + len(g.tokens), spec_s + g.gen_s
                plain_tok, plain_s = plain_tok + len(h.tokens), plain_s + h.gen_s
                row["plain_decoding"] = {"tokens": len(h.tokens), "gen_s": round(h.gen_s, 2),
                                         "same": h.tokens == g.tokens}
        if "before" in methods:
            fresh(pipeline, case)
            prop, took, p = before(pipeline, case, above)
            results["before"].append(prop)
            before_s.append(took)
            if prop is not None:
                before_shown_s.append(took)
            row["before"] = {"proposal": prop, "s": round(took, 2), "source": "repeat" if p is None else "model"}
            if p is not None and p.generation is not None:
                g = p.generation
                row["before"].update(tokens=len(g.tokens), rewrite_s=round(g.prompt_s + g.gen_s, 2))
                if "rewrite_s" in row.get("ours", {}):
                    rewrite_s["ours"].append(row["ours"]["rewrite_s"])
                    rewrite_s["before"].append(row["before"]["rewrite_s"])
        if "plain" in methods:
            fresh(pipeline, case)
            prop, took, n = plain(engine, case, above, below)
            results["plain"].append(prop)
            row["plain"] = {"proposal": prop, "s": round(took, 2), "tokens": n}
        if "none" in methods:
            results["none"].append(None)
        rows.append(row)
        if log:
            o = row.get("ours", {})
            log(f"[{i + 1}/{len(cases)}] {case['id']}: ours {'-' if not o.get('proposal') else o.get('source')} "
                f"({o.get('dropped') or ''}) {o.get('s', '')} s")
    figures = {m: score(cases, results[m]) for m in methods}
    # one row per method (the ledger keeps each row's headline figures), the languages' in `figures`
    summary: dict = {m: dict(figures[m]["all"]) for m in methods}
    if latencies:
        summary["ours"]["latency_s_p50"] = _p50(latencies)
        summary["ours"]["shown_latency_s_p50"] = _p50(shown_latencies)
        summary["ours"]["sources"] = sources
    if before_s:
        summary["before"]["latency_s_p50"] = _p50(before_s)
        summary["before"]["shown_latency_s_p50"] = _p50(before_shown_s)
    if rewrite_s["ours"]:
        summary["rewrite"] = {"compared": len(rewrite_s["ours"]), "ours_s_p50": _p50(rewrite_s["ours"]),
                              "before_s_p50": _p50(rewrite_s["before"]),
                              "speedup": round(sum(rewrite_s["before"]) / max(1e-9, sum(rewrite_s["ours"])), 2)}
    if speed and compared:
        summary["speed"] = {"compared": compared, "identical": identical,
                            "spec_tok_s": round(spec_tok / spec_s, 1) if spec_s else None,
                            "baseline_tok_s": round(plain_tok / plain_s, 1) if plain_s else None}
        if spec_s and plain_s:
            summary["speed"]["speedup"] = round((spec_tok / spec_s) / (plain_tok / plain_s), 2)
    if out_path:
        out_path.parent.mkdir(parents=True, exist_ok=True)
        with open(out_path, "w") as f:
            json.dump({"summary": summary, "figures": figures, "region": [above, below], "rows": rows}, f,
                      indent=1)
    summary["figures"] = figures
    return summary


def report(summary: dict) -> str:
    out = [f"== {m}\n{table(fig)}" for m, fig in summary["figures"].items()]
    for m in ("ours", "before"):
        if "latency_s_p50" in summary.get(m, {}):
            o = summary[m]
            out.append(f"{m}: ask -> answer p50 {o['latency_s_p50']} s over every case, {o['shown_latency_s_p50']} s "
                       f"over the {o['proposals']} proposed" +
                       (f" (by source: {o['sources']})" if o.get("sources") else ""))
    if "rewrite" in summary:
        r = summary["rewrite"]
        out.append(f"the free rewrite where both asked it ({r['compared']} cases): ours p50 {r['ours_s_p50']} s, before "
                   f"p50 {r['before_s_p50']} s; {r['speedup']}x in all")
    if "speed" in summary:
        s = summary["speed"]
        out.append(f"speed on the same prompts: speculative {s['spec_tok_s']} tok/s, plain {s['baseline_tok_s']} "
                   f"tok/s ({s.get('speedup')}x); identical output {s['identical']}/{s['compared']}")
    return "\n".join(out)


def cli_main(args, load_engine) -> dict:
    cases = load_cases(Path(args.cases) if args.cases else DEFAULT_CASES, args.half,
                       args.languages.split(",") if args.languages else None)
    if args.limit:
        # an even spread over the languages and kinds, not the file's first cases
        step = max(1, len(cases) // args.limit)
        cases = cases[::step][:args.limit]
    engine, _ = load_engine(args)
    try:
        summary = run(engine, cases, tuple(args.methods.split(",")), args.above, args.below, args.speed,
                      Path(args.json) if args.json else None, min_margin=args.min_margin)
    finally:
        engine.close()
    print(report(summary))
    return summary


def add_arguments(p) -> None:
    p.add_argument("--cases", help="the suite's cases (default: the committed file)")
    p.add_argument("--half", default="tune", choices=("tune", "confirm", "all"))
    p.add_argument("--languages", help="comma-separated, e.g. python,go")
    p.add_argument("--limit", type=int, default=0, help="at most this many cases, spread over the half")
    p.add_argument("--methods", default="ours,plain,none", help="of ours, before, plain, none")
    p.add_argument("--above", type=int, default=LINES_ABOVE, help="region lines above the cursor's")
    p.add_argument("--below", type=int, default=LINES_BELOW, help="region lines below it")
    p.add_argument("--min-margin", type=float, default=MIN_DEPARTURE_MARGIN,
                   help="the unsure filter's threshold (0: off; to tune it from the rows' margins)")
    p.add_argument("--speed", action="store_true", help="also generate ours without speculation, side by side")
