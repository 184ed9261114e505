"""The post-processing of a `tandem-eval humaneval` run again, offline: each task's stored raw model text
(`pipeline.raw`) post-processed by today's rules, and the tasks whose answer changes run again in the sandbox.
What a rule change does to every answer of a run, without generating anything (the model is loaded for its
tokenizer only). Reports passes before and after, per half (`bench/halves.py`), and every task that moved.

    .venv/bin/python scripts/repost-humaneval.py RUN.json [DATA.jsonl.gz] [--show]

RUN.json: a `tandem-eval humaneval --json` file with the pipeline variant; DATA: its tasks (default: the file the
run names). A generation that stopped at its token limit is post-processed as truncated, one that ended the hole
as ended, as in the run."""
import json
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from evals.common.halves import in_half  # noqa: E402
from evals.suites.humaneval import editor_view, load_tasks, problem_of, program  # noqa: E402
from evals.common.sandbox import Sandbox  # noqa: E402
from lsp_server.engine import CUT_SHORT, ENDS_HOLE, EngineConfig, make_engine, registry  # noqa: E402
from lsp_server.pipeline import CompletionRequest, Pipeline  # noqa: E402
from lsp_server.service.settings import Settings  # noqa: E402


def main(run_path: str, data: str | None, show: bool) -> None:
    run = json.loads(Path(run_path).read_text())
    tasks = {t.task_id: t for t in load_tasks(data or run["data"])}
    settings = Settings()
    engine = make_engine(EngineConfig(target_path=str(registry.default_path(registry.DEFAULT_TARGET)),
                                      draft_path="none", speculation=False, stats_path="", kv_store_mib=0), None)
    pipe = Pipeline(engine, settings.prompt_budget())
    sandbox = Sandbox()
    tally = Counter()
    for r in run["results"]:
        p = r.get("pipeline")
        if not p or p.get("skipped"):
            continue
        task = tasks[r["task_id"]]
        half = "tune" if in_half(problem_of(task.task_id), "tune") else "confirm"
        doc, line, col, tail = editor_view(task)
        plan = pipe.plan(CompletionRequest(doc, line, col, max_tokens=settings.max_tokens,
                                           max_tokens_single_line=settings.max_tokens_single_line))
        around = replace(plan.around, truncated=p["stop"] in CUT_SHORT, ended=p["stop"] in ENDS_HOLE)
        middle = pipe.finish_text(around, p["raw"]) + tail if plan.mode.complete else p["middle"]
        passed = p["passed"]
        if middle != p["middle"]:
            passed = sandbox.run(program(task, middle)).passed
            moved = "gained" if passed and not p["passed"] else "lost" if p["passed"] and not passed else "changed"
            tally[half, moved] += 1
            print(f"{moved:8} {half:8} {task.task_id}")
            if show or moved != "changed":
                print(f"   before: {p['middle']!r}\n   after:  {middle!r}\n   raw:    {p['raw'][:200]!r}")
        tally[half, "before"] += p["passed"]
        tally[half, "after"] += passed
        tally[half, "tasks"] += 1
    for half in ("tune", "confirm"):
        n = tally[half, "tasks"]
        print(f"{half:8} {n} tasks: passed {tally[half, 'before']} -> {tally[half, 'after']} "
              f"(gained {tally[half, 'gained']}, lost {tally[half, 'lost']}, changed but same verdict "
              f"{tally[half, 'changed']})")


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    main(args[0], args[1] if len(args) > 1 else None, "--show" in sys.argv)
