"""`tandem-eval humaneval`: completion quality on HumanEval infilling, scored by running the tests.

Three answers per task, side by side on one warm engine:
- raw FIM: the model on the task as given (the whole prefix and suffix in a plain FIM prompt), greedy, until its
  end-of-middle token or the token limit, with no post-processing;
- the pipeline, plain decoding: what the server shows, as the editor sees the task. The cursor stands on an empty
  line between the prompt and the suffix; context, prompt budgets, mode and post-processing are the server's
  defaults; no time budget, so the figure is about what the model writes, not what arrives in time;
- the pipeline, speculative: the same, through the speculative loop. It must score the same as plain decoding;
- Tab until done: accept what the server shows and ask again at the new cursor until it is done (evals/common/tab.py),
  through the server's own path (its caches, the continued line, the prefetched next suggestion).
"""
from __future__ import annotations

import json
import os
import random
import re
import sys
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path

import evals.common.jsonl as jsonl
from lsp_server.context import Document
from lsp_server.engine import Engine, GenerationRequest
from lsp_server.pipeline import CompletionRequest, Pipeline
from lsp_server.prompt import PromptBudget, PromptParts, build_prompt
from lsp_server.service.settings import Settings
from lsp_server.service.stats import percentile
from evals.common.halves import in_half
from evals.common.sandbox import Sandbox
from evals.common.tab import TabUntilDone

REPO = Path(__file__).resolve().parents[2]
DATA_NAME = "humaneval-single-line.jsonl.gz"
# the shared copy the issue names first, then the one kept in the repository (same bytes)
DEFAULT_DATA = (REPO.parent / "shared" / "data" / DATA_NAME, REPO / "fixtures" / "humaneval" / DATA_NAME)
REQUIRED = ("task_id", "prompt", "suffix", "test", "entry_point")
# one file name for every task and answer: the prompts then differ only where the code does, and the KV cache
# keeps the rest
TASK_FILE = "solution.py"
VARIANTS = ("raw", "plain", "pipeline", "tab")
RAW_CAP = 512
RAW_RULE = "max(--max-tokens, 2 x the canonical answer's tokens), at most 512"
TITLES = {"raw": "raw FIM (no post-processing)", "plain": "pipeline, plain decoding",
          "pipeline": "pipeline, speculative (the server's path)", "tab": "Tab until done (the server's path)"}


@dataclass
class Task:
    task_id: str
    prompt: str
    suffix: str
    test: str
    entry_point: str
    canonical: str = ""


@dataclass
class Answer:
    middle: str           # the text that ends up between prompt and suffix
    passed: bool
    exact: bool
    error: str = ""
    tokens: int = 0
    seconds: float = 0.0  # generation, after the prompt
    stop: str = ""
    skipped: str = ""     # why the pipeline offered nothing
    token_ids: list[int] = field(default_factory=list, repr=False)
    margins: list[float] = field(default_factory=list, repr=False)   # top-2 logit gap of each token
    steps: int = 0        # Tab until done: suggestions accepted, and each request's latency (ms)
    step_ms: list[float] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    raw: str = ""         # the pipeline's: what the model wrote, before post-processing
    mode: str = ""        # the pipeline's: the completion mode at the hole (context.trigger)


@dataclass
class TaskResult:
    task_id: str
    answers: dict[str, Answer] = field(default_factory=dict)


def default_data() -> Path:
    for p in DEFAULT_DATA:
        if p.exists():
            return p
    return DEFAULT_DATA[0]


def load_tasks(path: str | Path) -> list[Task]:
    """Tasks from a JSONL file, gzip or not (told by its first bytes, not its name)."""
    path = Path(path)
    tasks = []
    for n, row in jsonl.rows(path):
        missing = [k for k in REQUIRED if not isinstance(row.get(k), str)] if isinstance(row, dict) else REQUIRED
        if missing:
            raise ValueError(f"{path}:{n}: a task needs the string fields {', '.join(REQUIRED)}; "
                             f"missing or not text: {', '.join(missing)}")
        tasks.append(Task(row["task_id"], row["prompt"], row["suffix"], row["test"], row["entry_point"],
                          row.get("canonical_solution") or ""))
    if not tasks:
        raise ValueError(f"{path}: no tasks in it")
    return tasks


def problem_of(task_id: str) -> str:
    """The problem a task comes from (`HumanEval/19` of `MultiLineInfilling/HumanEval/19/L0_L2`): the unit the
    halves split by."""
    m = re.search(r"HumanEval/\d+", task_id)
    return m.group() if m else task_id


def select(tasks: list[Task], limit: int, seed: int | None) -> list[Task]:
    """The first `limit` tasks, or with a seed a random sample of them, kept in file order: neighbouring tasks
    share most of their prompt, which the KV cache reuses."""
    if not limit or limit >= len(tasks):
        return list(tasks)
    if seed is None:
        return tasks[:limit]
    keep = set(random.Random(seed).sample(range(len(tasks)), limit))
    return [t for i, t in enumerate(tasks) if i in keep]


def program(task: Task, middle: str) -> str:
    return f"{task.prompt}{middle}{task.suffix}\n\n{task.test}\n\ncheck({task.entry_point})\n"


def same_code(a: str, b: str) -> bool:
    """Exact match up to trailing whitespace on each line and trailing blank lines."""
    def norm(s: str) -> str:
        return "\n".join(ln.rstrip() for ln in s.rstrip().split("\n"))
    return norm(a) == norm(b)


def editor_view(task: Task) -> tuple[Document, int, int, str]:
    """The task as an editor holds it: (document, line, col, what follows the completion in the middle).
    A prompt that ends at a line end puts the cursor on an empty line of its own above the suffix; the completion
    fills that line and the line break is already there."""
    if task.prompt.endswith("\n"):
        text, tail = task.prompt + "\n" + task.suffix, "\n"
    else:
        text, tail = task.prompt + task.suffix, ""
    line = task.prompt.count("\n")
    col = len(task.prompt) - (task.prompt.rfind("\n") + 1)
    return Document(TASK_FILE, text, "python"), line, col, tail


class Evaluator:
    def __init__(self, engine: Engine, settings: Settings, sandbox: Sandbox, max_tokens_raw: int = 64,
                 variants: tuple[str, ...] = VARIANTS):
        self.engine = engine
        self.settings = settings
        self.sandbox = sandbox
        self.max_tokens_raw = max_tokens_raw
        self.variants = variants
        self.pipeline = Pipeline(engine, settings.prompt_budget())
        # raw FIM sees the whole task, as benchmarks give it to a model
        self.raw_budget = PromptBudget(prefix_tokens=engine.cfg.n_ctx // 2, suffix_tokens=engine.cfg.n_ctx // 4,
                                       context_tokens=0)
        self.tab = TabUntilDone(engine, settings) if "tab" in variants else None

    def _pipeline(self, task: Task, speculative: bool) -> tuple[Answer, str]:
        doc, line, col, tail = editor_view(task)
        c = self.pipeline.complete(CompletionRequest(
            doc, line, col, max_tokens=self.settings.max_tokens,
            max_tokens_single_line=self.settings.max_tokens_single_line, speculative=speculative,
            record_margins=True))
        g = c.generation
        middle = c.text + tail
        return Answer(middle, False, same_code(middle, task.canonical), tokens=len(g.tokens) if g else 0,
                      seconds=round(g.gen_s, 3) if g else 0.0, stop=g.stop_reason if g else "",
                      skipped=c.skipped, token_ids=list(g.tokens) if g else [],
                      margins=list(g.margins) if g else [], raw=c.raw,
                      mode=c.mode.why if c.mode else ""), middle

    def _raw(self, task: Task) -> tuple[Answer, str]:
        prompt = build_prompt(self.engine, PromptParts(task.prompt, task.suffix, path=TASK_FILE),
                              self.raw_budget)
        g = self.engine.generate(GenerationRequest(prompt.tokens, max_tokens=self.raw_limit(task),
                                                   speculative=False, language="python"))
        return Answer(g.text, False, same_code(g.text, task.canonical), tokens=len(g.tokens),
                      seconds=round(g.gen_s, 3), stop=g.stop_reason), g.text

    def raw_limit(self, task: Task) -> int:
        """The floor's token limit follows the hole, as the pipeline's block limit gives a long hole room: twice
        the canonical answer's tokens, at least --max-tokens, at most RAW_CAP."""
        return min(RAW_CAP, max(self.max_tokens_raw, 2 * len(self.engine.tokenize(task.canonical))))

    def _tab(self, task: Task) -> tuple[Answer, str]:
        doc, line, col, tail = editor_view(task)
        prefix, suffix = doc.split(line, col)
        run = self.tab.run(TASK_FILE, "python", prefix, suffix, hole_lines=max(1, task.canonical.count("\n")))
        middle = run.middle + tail
        return Answer(middle, False, same_code(middle, task.canonical), stop=run.stop, steps=run.steps,
                      step_ms=run.step_ms, sources=run.sources), middle

    def answer(self, task: Task, variant: str) -> tuple[Answer, str]:
        if variant == "raw":
            return self._raw(task)
        if variant == "tab":
            return self._tab(task)
        return self._pipeline(task, speculative=variant == "pipeline")


@dataclass
class Tally:
    n: int = 0
    passed: int = 0
    exact: int = 0
    skipped: int = 0
    tokens: int = 0
    seconds: float = 0.0
    steps: int = 0
    step_ms: list[float] = field(default_factory=list)

    def add(self, a: Answer) -> None:
        self.n += 1
        self.steps += a.steps
        self.step_ms += a.step_ms
        self.passed += a.passed
        self.exact += a.exact
        self.skipped += bool(a.skipped)
        self.tokens += a.tokens
        self.seconds += a.seconds

    def row(self) -> dict:
        return {"tasks": self.n, "passed": self.passed, "pass_at_1": round(self.passed / self.n, 4) if self.n else 0,
                "exact": self.exact, "exact_match": round(self.exact / self.n, 4) if self.n else 0,
                "skipped": self.skipped, "tokens": self.tokens,
                "tok_s": round(self.tokens / self.seconds, 2) if self.seconds else 0,
                **({"steps_per_task": round(self.steps / self.n, 2), "requests": len(self.step_ms),
                    "step_ms_p50": percentile(self.step_ms, 50), "step_ms_p95": percentile(self.step_ms, 95)}
                   if self.step_ms else {})}


def divergence(plain: Answer, spec: Answer) -> dict:
    """Where speculative decoding first wrote another token than plain decoding, and how close the target's
    top two tokens were there (a near-tie lets the kernels of a verify batch and of one-token decoding part)."""
    i = 0
    while i < min(len(plain.token_ids), len(spec.token_ids)) and plain.token_ids[i] == spec.token_ids[i]:
        i += 1
    gaps = [m[i] for m in (plain.margins, spec.margins) if i < len(m)]
    return {"token": i, "gap": round(min(gaps), 3) if gaps else None}


def resumed(path: str, data: Path, variants: tuple[str, ...]) -> tuple[dict[str, TaskResult], dict[str, list]]:
    """The answers an earlier run of the same data and variants wrote to its JSON (partial or whole), so a long
    run goes on where it stopped; token ids and margins are not in the JSON, so a resumed task's divergence is
    the one it recorded."""
    report = json.loads(Path(path).read_text())
    if Path(report["data"]).name != data.name:
        raise ValueError(f"{path} is a run of {report['data']}, not of {data}")
    done = {}
    for r in report["results"]:
        if set(variants) - set(r):
            raise ValueError(f"{path} has no {', '.join(sorted(set(variants) - set(r)))} answers: resume it "
                             f"with the variants it was run with")
        names = {f.name for f in fields(Answer)}
        done[r["task_id"]] = TaskResult(r["task_id"], {v: Answer(**{k: x for k, x in r[v].items() if k in names})
                                                       for v in variants})
    differ: dict[str, list] = {}
    for d in report.get("speculative_differs_from_plain", []):
        differ.setdefault(d["task_id"], []).append(d)
    return done, differ


def _pct(x: int, n: int) -> str:
    return f"{100 * x / n:5.1f} %" if n else "    -"


def run_eval(engine: Engine, args) -> dict:
    data = Path(args.data) if args.data else default_data()
    half = getattr(args, "half", "all") or "all"
    tasks = select([t for t in load_tasks(data) if in_half(problem_of(t.task_id), half)], args.limit, args.seed)
    if getattr(args, "tasks", None):
        tasks = [t for t in tasks if any(t.task_id.endswith(want) for want in args.tasks)]
        if not tasks:
            raise ValueError(f"{data}: no task id ends with any of {' '.join(args.tasks)}")
    settings = Settings()
    if args.suffix_tokens is not None:
        settings = replace(settings, suffix_tokens=args.suffix_tokens)
    if getattr(args, "suffix_tokens_in_block", None) is not None:
        settings = replace(settings, suffix_tokens_in_block=args.suffix_tokens_in_block)
    variants = tuple(v for v in VARIANTS if v not in set(args.skip or ()))
    ev = Evaluator(engine, settings, Sandbox(args.timeout), args.max_tokens, variants)
    tallies = {v: Tally() for v in variants}
    results: list[TaskResult] = []
    differ: list[dict] = []   # tasks where speculative and plain decoding wrote different code
    done, done_differ = resumed(args.resume, data, variants) if getattr(args, "resume", None) else ({}, {})
    print(f"HumanEval: {len(tasks)} tasks from {data}; variants: {', '.join(variants)}; "
          f"sandbox: {ev.sandbox.isolation}, {args.timeout:g}s timeout"
          + (f"; {sum(t.task_id in done for t in tasks)} answered already in {args.resume}" if done else ""),
          file=sys.stderr)
    pool = ThreadPoolExecutor(1, thread_name_prefix="tandem-eval-run")   # tests run while the model writes
    pending: list[tuple[Answer, Future]] = []
    t0 = time.perf_counter()
    tty = sys.stderr.isatty()
    cr = "\r" if tty else ""
    computed = 0
    for i, task in enumerate(tasks, 1):
        if task.task_id in done:
            res = done[task.task_id]
            results.append(res)
            differ += done_differ.get(task.task_id, [])
            for v in variants:
                tallies[v].add(res.answers[v])
            continue
        computed += 1
        res = TaskResult(task.task_id)
        for v in variants:
            ans, middle = ev.answer(task, v)
            res.answers[v] = ans
            pending.append((ans, pool.submit(ev.sandbox.run, program(task, middle))))
        if "plain" in res.answers and "pipeline" in res.answers \
                and res.answers["plain"].middle != res.answers["pipeline"].middle:
            differ.append({"task_id": task.task_id, **divergence(res.answers["plain"], res.answers["pipeline"])})
        results.append(res)
        for ans, fut in pending:
            out = fut.result()
            ans.passed, ans.error = out.passed, out.error
        pending.clear()
        for v in variants:
            tallies[v].add(res.answers[v])
        if tty or i % 25 == 0 or i == len(tasks):
            spent = time.perf_counter() - t0
            figures = "  ".join(f"{v} {_pct(tallies[v].passed, i).strip()}" for v in variants)
            print(f"{cr}[{i}/{len(tasks)}] pass@1 {figures}  "
                  f"{spent / computed:.1f} s/task, {(len(tasks) - i) * spent / computed / 60:.0f} min left   ",
                  end="" if tty and i < len(tasks) else "\n", file=sys.stderr, flush=True)
        if args.json and i % 50 == 0:
            _write(args.json, _report(data, tasks[:i], tallies, results, differ, ev, args, partial=True))
    pool.shutdown()
    if ev.tab is not None:
        ev.tab.close()
    report = _report(data, tasks, tallies, results, differ, ev, args)
    _print(report)
    if args.json:
        _write(args.json, report)
        print(f"wrote {args.json}", file=sys.stderr)
    return report


def _report(data, tasks, tallies, results, differ, ev: Evaluator, args, partial: bool = False) -> dict:
    return {
        "data": str(data), "tasks": len(tasks), "partial": partial, "limit": args.limit, "seed": args.seed,
        "half": getattr(args, "half", "all") or "all",
        "target": ev.engine.target.path, "draft": ev.engine.draft.path if ev.engine.draft else None,
        "suffix_tokens": ev.settings.suffix_tokens, "suffix_tokens_in_block": ev.settings.suffix_tokens_in_block,
        "max_tokens_raw": RAW_RULE.replace("--max-tokens", str(ev.max_tokens_raw)),
        "sandbox": ev.sandbox.isolation, "timeout_s": args.timeout,
        "summary": {v: t.row() for v, t in tallies.items()},
        "speculative_differs_from_plain": differ,
        "results": [{"task_id": r.task_id, **{v: _public(a) for v, a in r.answers.items()}} for r in results],
    }


def _public(a: Answer) -> dict:
    return {k: v for k, v in asdict(a).items() if k not in ("token_ids", "margins")}


def _write(path: str, report: dict) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        json.dump(report, f, indent=1)
    os.replace(tmp, path)


def _print(report: dict) -> None:
    n = report["tasks"]
    print(f"\nHumanEval infilling, {n} tasks ({report['data']})")
    print(f"{'':44} {'pass@1':>8} {'exact':>8} {'skipped':>8} {'tok/s':>7}")
    for v, row in report["summary"].items():
        print(f"{TITLES[v]:44} {_pct(row['passed'], n):>8} {_pct(row['exact'], n):>8} {row['skipped']:>8} "
              f"{row['tok_s']:>7.1f}")
    s = report["summary"]
    if "tab" in s and s["tab"].get("requests"):
        t = s["tab"]
        print(f"Tab until done: {t['steps_per_task']} suggestions accepted per task, {t['requests']} requests, "
              f"latency p50 {t['step_ms_p50']:.0f} ms, p95 {t['step_ms_p95']:.0f} ms")
    if "plain" in s and "pipeline" in s:
        d = report["speculative_differs_from_plain"]
        print(f"speculative vs plain: {n - len(d)}/{n} completions identical; pass@1 "
              f"{_pct(s['pipeline']['passed'], n).strip()} vs {_pct(s['plain']['passed'], n).strip()}")
        for x in d:
            print(f"  differs: {x['task_id']} from token {x['token']}, top-2 logit gap there "
                  f"{x['gap'] if x['gap'] is not None else '?'}")
