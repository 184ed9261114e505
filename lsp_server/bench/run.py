"""Plain greedy target vs Tandem on the same prompts, side by side in one run, per category: `tandem bench`.

An evaluation lab adds to it without changing it (a fixed draft-model path, shadow acceptance, a reference
binary): more paths through the runner it passes, and a `BenchExtension` for the work after each prompt's timed
passes, the table's extra columns and the JSON's extra keys."""
from __future__ import annotations

import json
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..engine import Engine, GenerationRequest
from ..engine.speculative import Generation
from ..pipeline import Pipeline
from ..prompt import PromptBudget
from .fixtures import CATEGORIES, Case, default_root, load_cases
from .side_by_side import AGAIN, PLAIN, TANDEM, SideBySide

NEAR_TIE = 0.5   # top-2 logit gap under which a divergence is a numerics near-tie, not a bug


@dataclass
class CategoryResult:
    category: str
    drafted: dict = field(default_factory=dict)     # drafter -> [drafted, accepted]
    prompts: int = 0
    identical: int = 0
    divergences: list = field(default_factory=list)
    prompt_tokens: int = 0
    spreads: list = field(default_factory=list)     # per prompt and path: (fastest - slowest) / fastest pass
    passes: dict = field(default_factory=dict)      # path -> per prompt, its passes
    extra: dict = field(default_factory=dict)       # what extensions keep per category


@dataclass
class BenchPrompt:
    """One prompt of the run, as the paths were given it, with every path's passes."""
    case: Case
    prompt: object           # the FIM prompt (tokens, stop)
    prefix: str
    max_tokens: int
    passes: dict[str, list[Generation]]


class BenchExtension:
    """What a lab adds to the table; a subclass overrides what it needs. `after_prompt` runs after a prompt's
    timed passes (untimed work); `add_to_row` puts its figures into a category's row; `columns` are the table's
    extra cells (header, cell of a row); `report` runs once after the table and returns keys for the JSON."""
    columns: tuple[tuple[str, Callable[[dict], str]], ...] = ()

    def after_prompt(self, engine, p: BenchPrompt, result: CategoryResult) -> None:
        pass

    def add_to_row(self, result: CategoryResult, row: dict, base_tok_s: float, side_by_side: bool) -> None:
        pass

    def report(self, engine, results: dict[str, CategoryResult], rows: list[dict], log) -> dict:
        return {}


def _spread(gens: list[Generation]) -> float:
    speeds = [g.tok_s for g in gens if g.tok_s > 0]
    return (max(speeds) - min(speeds)) / max(speeds) if len(speeds) > 1 else 0.0


def path_seconds(prompts: list[list[Generation]], side_by_side: bool) -> list[float]:
    """Each prompt's generation time on one path. Run side by side, every pass of every path went through the
    same moments of the host, so the mean of a path's passes is its figure; timed one after the other (two
    servers), the fastest pass is the least disturbed."""
    return [statistics.fmean(g.gen_s for g in gens) if side_by_side else min(g.gen_s for g in gens)
            for gens in prompts]


def path_tok_s(prompts: list[list[Generation]], side_by_side: bool) -> float:
    seconds = sum(path_seconds(prompts, side_by_side))
    return sum(len(gens[0].tokens) for gens in prompts) / seconds if seconds else 0.0


def aa_noise(plain: list[list[Generation]], again: list[list[Generation]]) -> float | None:
    """How far two runs of plain decoding, side by side with the others, read apart (an A/A test): figures
    closer than this are not told apart by this run."""
    if not plain or not again:
        return None
    a, b = sum(path_seconds(plain, True)), sum(path_seconds(again, True))
    return abs(a / b - 1) if b else None


def _request(prompt, prefix: str, case: Case, max_tokens: int, **kw) -> GenerationRequest:
    return GenerationRequest(prompt.tokens, max_tokens=max_tokens, stop=prompt.stop,
                             language=case.document.language, left_text=prefix, **kw)


def _divergence(engine: Engine, prompt, prefix, case, max_tokens, base: Generation, spec: Generation) -> dict:
    i = next((k for k, (a, b) in enumerate(zip(base.tokens, spec.tokens)) if a != b),
             min(len(base.tokens), len(spec.tokens)))
    # margins are recorded in an extra, untimed plain run so the timed runs carry no extra work
    ref = engine.generate(_request(prompt, prefix, case, max_tokens, speculative=False, record_margins=True))
    gap = ref.margins[i] if i < len(ref.margins) else None
    return {"file": f"{case.category}/{case.name}", "token_index": i, "top2_gap": gap,
            "near_tie": gap is not None and gap < NEAR_TIE,
            "plain": engine.target.detokenize(base.tokens[i:i + 4]),
            "speculative": engine.target.detokenize(spec.tokens[i:i + 4])}


class _State:
    """What the controller has learned. Every Tandem pass of a prompt starts from what was learned before the
    prompt, so each pass explores and decides as a single run would (the fastest would otherwise be one that
    had learned from the others), and the run goes on from what the first pass learned. Plain passes teach
    nothing that counts. (A server's speculation learns nothing of ours: nothing to put back.)"""

    def __init__(self, engine):
        self.controller = getattr(engine, "controller", None)
        self.before = self.controller.learned() if self.controller else None
        self.after_first = None

    def rewind(self) -> None:
        if self.controller:
            self.controller.restore(self.before)

    def passed(self) -> None:
        if self.controller and self.after_first is None:
            self.after_first = self.controller.learned()

    def go_on(self) -> None:
        if self.controller:
            self.controller.restore(self.after_first or self.before)


def _log(s: str) -> None:
    print(s, file=sys.stderr, flush=True)


def run_bench(engine: Engine, args, runner=None, extensions: tuple[BenchExtension, ...] = ()) -> list[dict]:
    """`runner`: the paths (default: plain, plain again and Tandem side by side on the in-process engine; an
    engine that runs its own passes, as two servers do, is its own runner)."""
    root = Path(args.fixtures) if args.fixtures else default_root()
    cats = [c.strip() for c in args.categories.split(",")] if args.categories else None
    cases = load_cases(root, cats, args.limit)
    # the plain prompt of each case (its prefix and suffix, no other files), as long as the article's; an
    # editor's prompts are shorter (Settings.prompt_budget), which favours speculation less
    pipe = Pipeline(engine, PromptBudget(prefix_tokens=min(1536, engine.cfg.n_ctx // 2), suffix_tokens=256,
                                         context_tokens=0))
    results: dict[str, CategoryResult] = {}
    if runner is None:
        runner = engine if hasattr(engine, "run_pass") else SideBySide(engine)
    _log(f"bench: {len(cases)} prompts, {', '.join(runner.names)}{' side by side' if runner.side_by_side else ''}, "
         f"{args.max_tokens} tokens max, {args.repeat} pass(es)")
    t_start = time.perf_counter()
    # warm-up: the first decode of a process pays for page faults and thread start
    warm, warm_prefix, _ = pipe.prompt_for(cases[0].document, cases[0].line, cases[0].col)
    engine.generate(_request(warm, warm_prefix, cases[0], 8, speculative=False))
    try:
        passes_run = 0
        for n, case in enumerate(cases, 1):
            prompt, prefix, _ = pipe.prompt_for(case.document, case.line, case.col)
            r = results.setdefault(case.category, CategoryResult(case.category))
            r.prompts += 1
            r.prompt_tokens += len(prompt.tokens)
            # prompt evaluation is not part of generation speed (as in the article's table): done untimed, for
            # the draft model too where it may be used, as the server's warm-up does while the user types
            runner.prewarm(prompt.tokens)
            def requests(speculative: bool, fixed: int, prompt=prompt, prefix=prefix, case=case):
                return _request(prompt, prefix, case, args.max_tokens, speculative=speculative, fixed_model_draft=fixed)
            passes: dict = {name: [] for name in runner.names}
            same = True
            state = _State(engine)
            for _ in range(args.repeat):
                state.rewind()
                got = runner.run_pass(requests, passes_run)
                passes_run += 1
                state.passed()
                for name, g in got.items():
                    passes[name].append(g)
                # the output is the text: tokens past a stop string are generated but never shown
                same = same and got[PLAIN].text == got[TANDEM].text
            state.go_on()
            for ext in extensions:
                ext.after_prompt(engine, BenchPrompt(case, prompt, prefix, args.max_tokens, passes), r)
            base, spec = (max(passes[k], key=lambda g: g.tok_s) for k in (PLAIN, TANDEM))
            for k, gens in passes.items():
                r.passes.setdefault(k, []).append(gens)
            r.spreads += [_spread(passes[PLAIN]), _spread(passes[TANDEM])]
            for k, c in spec.drafters.items():
                d = r.drafted.setdefault(k, [0, 0])
                d[0] += c.drafted
                d[1] += c.accepted
            if same:
                r.identical += 1
            else:
                r.divergences.append(_divergence(engine, prompt, prefix, case, args.max_tokens, base, spec))
            used = ", ".join(f"{k} {c.accepted}/{c.drafted}" for k, c in spec.drafters.items()) or "no drafts"
            plain_tok_s, tandem_tok_s = (path_tok_s([passes[k]], runner.side_by_side) for k in (PLAIN, TANDEM))
            _log(f"[{n}/{len(cases)}] {case.category}/{case.name}: {len(base.tokens)} tokens, "
                 f"plain {plain_tok_s:.1f} tok/s, tandem {tandem_tok_s:.1f} tok/s ({used}, {spec.steps} steps, "
                 f"{spec.near_ties} near-ties re-decoded){'' if same else ', DIVERGED'}")
    finally:
        if runner is not engine:
            runner.close()

    rows = [_row(r, args.repeat, runner.side_by_side, extensions) for r in results.values()]
    memory = None
    if not args.no_memory:
        from .memory import measure
        _log("measuring resident memory of the target alone and of the pair (fresh processes)...")
        memory = measure(engine.target.path, engine.draft.path if engine.draft else None, engine.cfg.n_ctx)

    print_table(rows, memory, time.perf_counter() - t_start, engine,
                [c for ext in extensions for c in ext.columns])
    extra = {}
    for ext in extensions:
        extra.update(ext.report(engine, results, rows, _log))
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "memory": memory,
                                               "costs": engine.costs.to_json() if engine.costs else None,
                                               "warnings": engine.warnings, **extra}, indent=2))
        _log(f"wrote {args.json}")
    return rows


def _row(r: CategoryResult, repeat: int, side_by_side: bool, extensions) -> dict:
    base, spec = (path_tok_s(r.passes.get(k, []), side_by_side) for k in (PLAIN, TANDEM))
    noise = aa_noise(r.passes[PLAIN], r.passes.get(AGAIN, []))
    row = {"category": r.category, "label": CATEGORIES.get(r.category, r.category), "prompts": r.prompts,
           "tokens": sum(len(gens[0].tokens) for gens in r.passes[PLAIN]), "baseline_tok_s": round(base, 2),
           "spec_tok_s": round(spec, 2),
           "acceptance": {k: round(a / d, 3) if d else None for k, (d, a) in r.drafted.items()},
           "drafted": {k: {"drafted": d, "accepted": a} for k, (d, a) in r.drafted.items()},
           "speedup": round(spec / base, 3) if base else 0.0,
           "identical": round(r.identical / r.prompts, 3), "divergences": r.divergences,
           "mean_prompt_tokens": round(r.prompt_tokens / r.prompts), "passes": repeat,
           "spread": round(max(r.spreads, default=0.0), 4),
           "aa_noise": round(noise, 4) if noise is not None else None}
    for ext in extensions:
        ext.add_to_row(r, row, base, side_by_side)
    return row


def print_table(rows, memory, seconds, engine, columns=()) -> None:
    drafters = sorted({k for r in rows for k in r["acceptance"]}) or ["ngram"]
    spec = "Tandem" if engine.costs is not None else "Server's speculation"
    head = (f"| Task type | Plain target | {spec} | " + " | ".join(f"Acceptance ({d})" for d in drafters)
            + " | Net speedup | Spread | A/A | Identical |" + "".join(f" {h} |" for h, _ in columns))
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for r in rows:
        acc = " | ".join(f"{r['acceptance'][d] * 100:.1f}% ({r['drafted'][d]['accepted']}/{r['drafted'][d]['drafted']})"
                         if r["acceptance"].get(d) is not None else "not used" for d in drafters)
        print(f"| {r['label']} | {r['baseline_tok_s']:.1f} tok/s | {r['spec_tok_s']:.1f} tok/s | {acc} | "
              f"{r['speedup']:.3f}x | {r['spread'] * 100:.1f}% | {'-' if r['aa_noise'] is None else format(r['aa_noise'], '.1%')} | "
              f"{r['identical'] * 100:.0f}% |" + "".join(f" {cell(r)} |" for _, cell in columns))
    for r in rows:
        for d in r["divergences"]:
            gap = "unknown" if d["top2_gap"] is None else f"{d['top2_gap']:.4f}"
            tie = ("near-tie" if d["near_tie"] else "NOT a near-tie" if d["top2_gap"] is not None
                   else "a server gives no logits to tell")
            print(f"divergence: {d['file']} at token {d['token_index']}: plain {d['plain']!r} vs "
                  f"tandem {d['speculative']!r}, top-2 logit gap {gap} ({tie})")
    if memory:
        pair = memory["pair_rss_mb"]
        print(f"memory (resident, warm): target alone {memory['target_rss_mb']:,.0f} MB"
              + (f", target + draft {pair:,.0f} MB (+{pair - memory['target_rss_mb']:,.0f} MB)" if pair else ""))
    c = engine.costs
    if c is None:   # generation on a server: its costs are its own
        print(f"plain on {engine.plain.target.path}, the server's own speculation on {engine.target.path}; "
              f"bench took {seconds:.0f}s")
        return
    print(f"measured costs: T(1)={c.target(1) * 1e3:.0f}ms T(2)={c.target(2) * 1e3:.0f}ms "
          f"T(4)={c.target(4) * 1e3:.0f}ms T(8)={c.target(8) * 1e3:.0f}ms T(16)={c.target(16) * 1e3:.0f}ms"
          + (f", draft token {c.draft() * 1e3:.0f}ms" if c.draft_token_s else "")
          + f"; bench took {seconds:.0f}s")
