"""Plain greedy target vs Tandem on the same prompts, alternating in one run, per category."""
from __future__ import annotations

import json
import statistics
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from ..engine import Engine, GenerationRequest
from ..engine.speculative import Generation
from ..pipeline import Pipeline
from . import llama_reference
from .chart import speedup_svg
from .fixtures import CATEGORIES, Case, default_root, load_cases

NEAR_TIE = 0.5   # top-2 logit gap under which a divergence is a numerics near-tie, not a bug


@dataclass
class Tally:
    tokens: int = 0
    seconds: float = 0.0

    def add(self, tokens: int, seconds: float) -> None:
        self.tokens += tokens
        self.seconds += seconds

    @property
    def tok_s(self) -> float:
        return self.tokens / self.seconds if self.seconds else 0.0


@dataclass
class CategoryResult:
    category: str
    base: Tally = field(default_factory=Tally)
    spec: Tally = field(default_factory=Tally)
    model: Tally = field(default_factory=Tally)
    llama: Tally = field(default_factory=Tally)
    llama_accept: list = field(default_factory=list)
    drafted: dict = field(default_factory=dict)     # drafter -> [drafted, accepted]
    prompts: int = 0
    identical: int = 0
    divergences: list = field(default_factory=list)
    prompt_tokens: int = 0
    spreads: list = field(default_factory=list)     # per prompt and path: (fastest - slowest) / fastest pass
    # path (False: plain, True: Tandem, "model": fixed model draft) -> per prompt, its passes
    passes: dict = field(default_factory=lambda: {False: [], True: [], "model": []})


def _spread(gens: list[Generation]) -> float:
    speeds = [g.tok_s for g in gens if g.tok_s > 0]
    return (max(speeds) - min(speeds)) / max(speeds) if len(speeds) > 1 else 0.0


def typical_times(prompts: list[list[Generation]]) -> list[float]:
    """Each prompt's generation time with every step at the typical cost of its kind: the median, over all
    passes of these prompts, of the steps that did the same (one token decoded, N drafted tokens verified
    by a drafter). The host is shared and its speed moves by 5-10 % from one second to the next; a median
    over a thousand steps, taken alike for both paths while they alternate, moves far less than a whole pass
    (`aa_noise` says how much), so what differs between the paths is what they do. Passes without step
    timings (a server's) count whole: the fastest."""
    by_kind: dict[str, list[float]] = defaultdict(list)
    for gens in prompts:
        for g in gens:
            for k, s in zip(g.step_kind, g.step_s):
                by_kind[k].append(s)
    typical = {k: statistics.median(v) for k, v in by_kind.items()}
    return [statistics.fmean(sum(typical[k] for k in g.step_kind) for g in gens)
            if all(g.step_kind for g in gens) else min(g.gen_s for g in gens) for gens in prompts]


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


def aa_noise(prompts: list[list[Generation]]) -> float | None:
    """How far the figure of one path moves between two halves of its own passes (an A/A test): figures
    closer than this are not told apart by this run. Each prompt's passes are dealt to the halves in turn,
    starting with the other half from one prompt to the next."""
    halves = [[[g for i, g in enumerate(gens) if (n + i) % 2 == h] for n, gens in enumerate(prompts)]
              for h in (0, 1)]
    if any(not p for half in halves for p in half):
        return None      # a single pass has no halves
    a, b = (sum(typical_times(half)) for half in halves)
    return abs(a / b - 1) if b else None


def _tok_s(gens: list[Generation]) -> float:
    seconds = typical_times([gens])[0]
    return len(gens[0].tokens) / seconds if seconds else 0.0


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


def run_bench(engine: Engine, args) -> list[dict]:
    root = Path(args.fixtures) if args.fixtures else default_root()
    cats = [c.strip() for c in args.categories.split(",")] if args.categories else None
    cases = load_cases(root, cats, args.limit)
    pipe = Pipeline(engine)
    results: dict[str, CategoryResult] = {}
    with_model = args.with_model_draft and engine.draft is not None
    if args.llama_speculative and engine.draft is None:
        raise SystemExit("tandem: --llama-speculative needs the draft model")
    log = lambda s: print(s, file=sys.stderr, flush=True)
    log(f"bench: {len(cases)} prompts, plain vs tandem{' vs fixed model draft' if with_model else ''}, "
        f"{args.max_tokens} tokens max, {args.repeat} repetition(s)")
    t_start = time.perf_counter()
    # warm-up: the first decode of a process pays for page faults and thread start
    warm, warm_prefix, _ = pipe.prompt_for(cases[0].document, cases[0].line, cases[0].col)
    engine.generate(_request(warm, warm_prefix, cases[0], 8, speculative=False))
    for n, case in enumerate(cases, 1):
        prompt, prefix, _ = pipe.prompt_for(case.document, case.line, case.col)
        r = results.setdefault(case.category, CategoryResult(case.category))
        r.prompts += 1
        r.prompt_tokens += len(prompt.tokens)
        # prompt evaluation is not part of generation speed (as in the article's table): done untimed, for
        # the draft model too where it may be used, as the server's warm-up does while the user types
        engine.prewarm(prompt.tokens, draft=with_model)
        same = True
        passes: dict = {False: [], True: [], "model": []}
        state = _State(engine)
        for rep in range(args.repeat):
            # which of the two runs first alternates, so neither always gets the fresher caches
            for speculative in ((False, True) if (n + rep) % 2 else (True, False)):
                if speculative:
                    state.rewind()
                g = engine.generate(_request(prompt, prefix, case, args.max_tokens, speculative=speculative))
                passes[speculative].append(g)
                if speculative:
                    state.passed()
            # the output is the text: tokens past a stop string are generated but never shown
            same = same and passes[False][-1].text == passes[True][-1].text
            if with_model:
                passes["model"].append(engine.generate(_request(prompt, prefix, case, args.max_tokens,
                                                                speculative=True, fixed_model_draft=3)))
        state.go_on()
        base, spec = (max(passes[k], key=lambda g: g.tok_s) for k in (False, True))
        for k, gens in passes.items():
            if gens:
                r.passes[k].append(gens)
        r.spreads += [_spread(passes[False]), _spread(passes[True])]
        for k, c in spec.drafters.items():
            d = r.drafted.setdefault(k, [0, 0])
            d[0] += c.drafted
            d[1] += c.accepted
        if args.llama_speculative:
            ref = llama_reference.run(args.llama_speculative, engine, prompt.tokens, args.max_tokens)
            r.llama.tokens += ref["tokens"]
            r.llama.seconds += ref["seconds"]
            if ref["acceptance"] is not None:
                r.llama_accept.append(ref["acceptance"])
        if same:
            r.identical += 1
        else:
            r.divergences.append(_divergence(engine, prompt, prefix, case, args.max_tokens, base, spec))
        used = ", ".join(f"{k} {c.accepted}/{c.drafted}" for k, c in spec.drafters.items()) or "no drafts"
        log(f"[{n}/{len(cases)}] {case.category}/{case.name}: {len(base.tokens)} tokens, "
            f"plain {_tok_s(passes[False]):.1f} tok/s, tandem {_tok_s(passes[True]):.1f} tok/s ({used}, "
            f"{spec.steps} steps, {spec.near_ties} near-ties re-decoded){'' if same else ', DIVERGED'}")

    rows = []
    for cat, r in results.items():
        # the machine is shared: each path's figure is its steps at their typical cost, the spread its noise
        for tally, k in ((r.base, False), (r.spec, True), (r.model, "model")):
            for gens, seconds in zip(r.passes[k], typical_times(r.passes[k])):
                tally.add(len(gens[0].tokens), seconds)
        noise = [x for x in (aa_noise(r.passes[False]), aa_noise(r.passes[True])) if x is not None]
        acc = {k: round(a / d, 3) if d else None for k, (d, a) in r.drafted.items()}
        row = {"category": cat, "label": CATEGORIES.get(cat, cat), "prompts": r.prompts,
               "tokens": r.base.tokens, "baseline_tok_s": round(r.base.tok_s, 2),
               "spec_tok_s": round(r.spec.tok_s, 2),
               "acceptance": acc, "drafted": {k: {"drafted": d, "accepted": a} for k, (d, a) in r.drafted.items()},
               "speedup": round(r.spec.tok_s / r.base.tok_s, 3) if r.base.tok_s else 0.0,
               "identical": round(r.identical / r.prompts, 3), "divergences": r.divergences,
               "mean_prompt_tokens": round(r.prompt_tokens / r.prompts), "passes": args.repeat,
               "spread": round(max(r.spreads, default=0.0), 4),
               "aa_noise": round(max(noise), 4) if noise else None}
        if args.llama_speculative:
            row["llama_speculative_tok_s"] = round(r.llama.tok_s, 2)
            row["llama_speculative_speedup"] = round(r.llama.tok_s / r.base.tok_s, 3) if r.base.tok_s else 0.0
            row["llama_speculative_acceptance"] = (round(sum(r.llama_accept) / len(r.llama_accept), 3)
                                                   if r.llama_accept else None)
        if with_model:
            row["model_draft_k3_tok_s"] = round(r.model.tok_s, 2)
            row["model_draft_k3_speedup"] = round(r.model.tok_s / r.base.tok_s, 3) if r.base.tok_s else 0.0
        rows.append(row)

    memory = None
    if not args.no_memory:
        from .memory import measure
        log("measuring resident memory of the target alone and of the pair (fresh processes)...")
        memory = measure(engine.target.path, engine.draft.path if engine.draft else None, engine.cfg.n_ctx)

    _print_table(rows, memory, with_model, time.perf_counter() - t_start, engine, bool(args.llama_speculative))
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "memory": memory,
                                               "costs": engine.costs.to_json() if engine.costs else None,
                                               "warnings": engine.warnings}, indent=2))
        log(f"wrote {args.json}")
    if args.chart:
        Path(args.chart).write_text(speedup_svg(rows, "Tandem speedup over plain greedy decoding (same run)"))
        log(f"wrote {args.chart}")
    return rows


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x * 100:.1f}%"


def _print_table(rows, memory, with_model, seconds, engine, with_llama=False) -> None:
    drafters = sorted({k for r in rows for k in r["acceptance"]}) or ["ngram"]
    spec = "Tandem" if engine.costs is not None else "Server's speculation"
    head = (f"| Task type | Plain target | {spec} | " + " | ".join(f"Acceptance ({d})" for d in drafters)
            + " | Net speedup | Spread | A/A | Identical |" + (" Model draft k=3 |" if with_model else "")
            + (" llama-speculative-simple (k=3) |" if with_llama else ""))
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for r in rows:
        acc = " | ".join(f"{r['acceptance'][d] * 100:.1f}% ({r['drafted'][d]['accepted']}/{r['drafted'][d]['drafted']})"
                         if r["acceptance"].get(d) is not None else "not used" for d in drafters)
        line = (f"| {r['label']} | {r['baseline_tok_s']:.1f} tok/s | {r['spec_tok_s']:.1f} tok/s | {acc} | "
                f"{r['speedup']:.3f}x | {r['spread'] * 100:.1f}% | {_pct(r['aa_noise'])} | "
                f"{r['identical'] * 100:.0f}% |")
        if with_model:
            line += f" {r['model_draft_k3_tok_s']:.1f} tok/s ({r['model_draft_k3_speedup']:.2f}x) |"
        if with_llama:
            acc = r["llama_speculative_acceptance"]
            line += (f" {r['llama_speculative_tok_s']:.1f} tok/s ({r['llama_speculative_speedup']:.2f}x"
                     f"{f', {acc * 100:.0f}% accepted' if acc is not None else ''}) |")
        print(line)
    for r in rows:
        for d in r["divergences"]:
            gap = "unknown" if d["top2_gap"] is None else f"{d['top2_gap']:.4f}"
            tie = ("near-tie" if d["near_tie"] else "NOT a near-tie" if d["top2_gap"] is not None
                   else "a server gives no logits to tell")
            print(f"divergence: {d['file']} at token {d['token_index']}: plain {d['plain']!r} vs "
                  f"tandem {d['speculative']!r}, top-2 logit gap {gap} "
                  f"({tie})")
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
          + (f", draft token {c.draft_token_s * 1e3:.0f}ms" if c.draft_token_s else "")
          + f"; bench took {seconds:.0f}s")
