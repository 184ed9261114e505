"""The real-code holes whose completion mode a change of `context.trigger.decide` moves, answered in-process
before and after: the server's page prompt and the fast prompt the fill prepares first (192 tokens), the same
prompt both ways, scored like `tandem-eval real` (first line exact, whole answer exact, similarities, parses).
No server, no timing.

    .venv/bin/python scripts/eval-real-mode.py OLD_TRIGGER.py OUT.json [--half tune|confirm|all] [--prompts page,fastN,...]

OLD_TRIGGER.py: the module before the change (`git show REV:lsp_server/context/trigger.py > /tmp/old.py`)."""
import importlib.util
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from evals.common.halves import in_half  # noqa: E402
from evals.real.corpus import PROJECTS, ensure  # noqa: E402
from evals.real.holes import cut_project, read_source  # noqa: E402
from evals.real.score import broken, score  # noqa: E402
from lsp_server.context import Document, assemble  # noqa: E402
from lsp_server.context.trigger import decide  # noqa: E402
from lsp_server.engine import EngineConfig, make_engine, registry  # noqa: E402
from lsp_server.pipeline import CompletionRequest, Pipeline  # noqa: E402
from lsp_server.service.settings import Settings  # noqa: E402


def load_old(path: str):
    spec = importlib.util.spec_from_file_location("lsp_server.context.trigger_before", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod.decide


def main(old_path: str, out: str, half: str = "all", prompts: tuple[str, ...] = ("page", "fast192")) -> None:
    before = load_old(old_path)
    s = Settings()
    engine = make_engine(EngineConfig(target_path=str(registry.default_path(registry.DEFAULT_TARGET)),
                                      draft_path="none", speculation=False, stats_path="", kv_store_mib=0), None)
    pipe = Pipeline(engine, s.prompt_budget())
    results = []
    for spec in PROJECTS:
        if half != "all" and not in_half(spec.name, half):
            continue
        p = ensure(spec, log=lambda m: None)
        for h in cut_project(p, 0):
            text = read_source(p.root / h.file)
            holed, start, _ = h.cut(text)
            prefix, suffix = holed[:start], holed[start:]
            a, b = before(prefix, suffix, h.language), decide(prefix, suffix, h.language)
            if (a.multiline, a.maybe_block) == (b.multiline, b.maybe_block):
                continue
            line, col = holed[:start].count("\n"), start - (holed.rfind("\n", 0, start) + 1)
            doc = Document(str(p.root / h.file), holed, h.language)
            base = broken(text, h.language)
            row = {"id": h.task_id, "half": "tune" if in_half(spec.name, "tune") else "confirm",
                   "expected": h.expected, "before_mode": a.why, "after_mode": b.why}
            for prompt in prompts:
                for name, fn in (("before", before), ("after", decide)):
                    assemble.decide = fn
                    req = CompletionRequest(doc, line, col, max_tokens=s.max_tokens,
                                            max_tokens_single_line=s.max_tokens_single_line, speculative=False,
                                            force=True)
                    plan = pipe.plan(req)
                    if prompt != "page":   # fastN: a fast prompt of N tokens of the nearest lines
                        plan = pipe.plan_fast(plan, int(prompt.removeprefix("fast")))
                    gen = pipe.generate(plan)
                    answer = pipe.finish(plan, gen).text
                    row[f"{prompt}_{name}"] = {"text": answer, "tokens": len(gen.tokens),
                                               **score(answer, h.expected, holed, start, h.language, base)}
            assemble.decide = decide
            results.append(row)
            print(len(results), h.task_id, " ".join(f"{k}:{int(row[k]['first_exact'])}{int(row[k]['exact'])}"
                                                    for k in row if isinstance(row[k], dict)), flush=True)
            Path(out).write_text(json.dumps(results))
    n = len(results)
    for k in [f"{p}_{w}" for p in prompts for w in ("before", "after")]:
        rs = [r[k] for r in results]
        print(f"{k:15} first line exact {sum(r['first_exact'] for r in rs)}/{n}  whole exact "
              f"{sum(r['exact'] for r in rs)}/{n}  similarity {sum(r['sim'] for r in rs) / max(1, n):.3f}  parses "
              f"{sum(bool(r['parses']) for r in rs)}/{n}  tokens {sum(r['tokens'] for r in rs) / max(1, n):.0f}")


if __name__ == "__main__":
    t0 = time.perf_counter()
    args = sys.argv[1:]
    main(args[0], args[1], args[args.index("--half") + 1] if "--half" in args else "all",
         tuple(args[args.index("--prompts") + 1].split(",")) if "--prompts" in args else ("page", "fast192"))
    print(f"{time.perf_counter() - t0:.0f} s")
