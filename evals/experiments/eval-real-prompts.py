"""Which prompt answers best at a new place: the real-code suite's holes (`tandem-eval real`'s corpus and holes),
answered in-process by the server's pipeline with prompts of several shapes, scored like the suite (first line
exact, similarities). No server, no timing: the quality each prompt shape can give, beside its size.

    .venv/bin/python scripts/eval-real-prompts.py HALF LIMIT CONFIGS OUT.json [--cross] [--ids RUN.json]

CONFIGS, comma-separated: MODEL SIZE [s SUFFIX]; MODEL T (the target) or D (the draft model alone); SIZE `page`
(the server's page prompt) or N (a fast prompt of N tokens of the nearest lines); `sN` a suffix budget of N
tokens (default: the server's); `pN` the project around the file (the workspace root given), with N tokens of
the definitions the nearest code uses in a fast prompt; `bN` N tokens of the code below the cursor's line in
the fast prompt's head (fastBelowTokens; default: the server's); `mN` N tokens of the lines elsewhere in the file
like those above the cursor in the fast prompt's head (fastSimilarTokens); `nN` those lines only where their
window's similarity is at least N/100 (`context/similar.MIN_SCORE`, default 30); `xN` a prefix budget of N tokens (the
page's). `--ids RUN.json`: exactly the holes a `tandem-eval real --json` run answered (LIMIT then caps them), to
set the server's answers beside the prompts' on the same holes. Each answer keeps its tokens' texts and top-2 logit gaps (`pieces`, `margins`). `R` alone: raw FIM with the whole file (`tandem-eval real`'s raw answer, no post-processing). Example: `tune 60 T96,T192,T384,Tpage,Tpages256 /tmp/prompts.json`."""
import json
import random
import re
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from evals.common.halves import in_half  # noqa: E402
from evals.real.corpus import PROJECTS, ensure  # noqa: E402
from evals.real.holes import cut_project, read_source  # noqa: E402
from evals.real.score import broken, score  # noqa: E402
from lsp_server.context import Document, similar as similar_module  # noqa: E402
from lsp_server.engine import EngineConfig, make_engine, registry  # noqa: E402
from lsp_server.pipeline import CompletionRequest, Pipeline  # noqa: E402
from lsp_server.prompt import PromptBudget  # noqa: E402
from lsp_server.service.settings import Settings  # noqa: E402


MIN_SCORE = similar_module.MIN_SCORE


def main(half: str, limit: int, configs: list[str], out: str, cross_only: bool = False,
         ids: set[str] | None = None) -> None:
    holes, projects = [], {}
    for spec in PROJECTS:
        if in_half(spec.name, half):
            p = ensure(spec, log=lambda m: None)
            projects[p.name] = p
            holes += cut_project(p, 0)
    random.Random(7).shuffle(holes)
    if ids is not None:
        holes = [h for h in holes if h.task_id in ids]
    holes = sorted(holes[:limit], key=lambda h: (h.project, h.file, h.line))
    engines, pipes, results = {}, {}, []

    def pipeline(kind: str) -> Pipeline:
        if kind not in engines:
            spec = registry.DEFAULT_TARGET if kind == "T" else registry.DEFAULT_DRAFT
            engines[kind] = make_engine(EngineConfig(target_path=str(registry.default_path(spec)), draft_path="none",
                                                     speculation=False, stats_path="", kv_store_mib=0), None)
            # the budgets these figures were measured with (docs/eval-real-prompts-*.json): a long page, for
            # the in-process comparison of prompts; the fast prompts' sizes are the configs' own
            pipes[kind] = Pipeline(engines[kind], PromptBudget(prefix_tokens=1536, suffix_tokens=256,
                                                               context_tokens=4096 - 192 - 16 - 1536 - 256))
        return pipes[kind]

    for i, h in enumerate(holes):
        p = projects[h.project]
        text = read_source(p.root / h.file)
        holed, start, _ = h.cut(text)
        line, col = holed[:start].count("\n"), start - (holed.rfind("\n", 0, start) + 1)
        doc = Document(str(p.root / h.file), holed, h.language)
        base = broken(text, h.language)
        if cross_only and not h.cross_file:
            continue
        similar_module.MIN_SCORE = MIN_SCORE
        row = {"id": h.task_id, "kind": h.kind, "lang": h.language, "cross": h.cross_file, "expected": h.expected,
               # the best window's similarity, where the fast prompt's similar lines were chosen from
               "similar_top": max((s.score for s in similar_module.similar_lines(holed, line, 1 << 20)), default=0)}
        for c in configs:
            if c == "R":
                from evals.real.suite import Raw
                pl = pipeline("T")
                a = Raw(pl.engine).answer(h, holed, start)
                row[c] = {"text": a["text"], "prompt_tokens": a["prompt_tokens"], "evaluated": a["prompt_evaluated"],
                          "prompt_s": a["prompt_s"], **score(a["text"], h.expected, holed, start, h.language, base)}
                continue
            kind, size, suffix, near, below, similar, min_score, prefix = re.fullmatch(
                r"([TD])(page|\d+)(?:s(\d+))?(?:p(\d+))?(?:b(\d+))?(?:m(\d+))?(?:n(\d+))?(?:x(\d+))?", c).groups()
            pl = pipeline(kind)
            similar_module.MIN_SCORE = int(min_score) / 100 if min_score is not None else MIN_SCORE
            pl.similar_chosen = similar_module.SimilarChoices()   # a choice made under another threshold
            pl.budget = Settings().prompt_budget()
            if suffix:
                pl.budget = replace(pl.budget, suffix_tokens=int(suffix), suffix_in_block=max(int(suffix), 64),
                                    suffix_at_rest=0)
            if near is not None:
                pl.budget = replace(pl.budget, near_tokens=int(near))
            if prefix is not None:
                pl.budget = replace(pl.budget, prefix_tokens=int(prefix))
            if similar is not None:
                pl.budget = replace(pl.budget, similar_tokens=int(similar))
            req = CompletionRequest(doc, line, col, max_tokens=256, max_tokens_single_line=40, speculative=False,
                                    force=True, root=str(p.root) if near is not None else None,
                                    record_margins=True)
            plan = pl.plan(req)
            if below is not None:
                pl.budget = replace(pl.budget, below_tokens=int(below))
            if size != "page":
                plan = pl.plan_fast(plan, int(size))
            gen = pl.generate(plan)
            answer = pl.finish(plan, gen).text
            row[c] = {"text": answer, "prompt_tokens": len(plan.prompt.tokens), "evaluated": gen.prompt_evaluated,
                      "prompt_s": round(gen.prompt_s, 3), **score(answer, h.expected, holed, start, h.language, base),
                      # each generated token's text and its top-2 logit gap (how sure the model was of it)
                      "pieces": [pl.engine.target.detokenize([t]) for t in gen.tokens],
                      "margins": [round(m, 3) for m in gen.margins]}
        results.append(row)
        print(i + 1, h.task_id, " ".join(f"{c}:{int(row[c]['first_exact'])}" for c in configs), flush=True)
        Path(out).write_text(json.dumps(results))
    n = len(results)
    for c in configs:
        fe = sum(r[c]["first_exact"] for r in results)
        print(f"{c:10} first line exact {fe}/{n} = {fe / n:.3f}  first-line similarity "
              f"{sum(r[c]['first_sim'] for r in results) / n:.3f}  mean prompt "
              f"{sum(r[c]['prompt_tokens'] for r in results) / n:.0f} tokens")


if __name__ == "__main__":
    t0 = time.perf_counter()
    rest = sys.argv[5:]
    run_ids = ({r["task_id"] for r in json.loads(Path(rest[rest.index("--ids") + 1]).read_text())["results"]}
               if "--ids" in rest else None)
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3].split(","), sys.argv[4], "--cross" in rest, run_ids)
    print(f"{time.perf_counter() - t0:.0f} s")
