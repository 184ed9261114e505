"""`tandem-eval safim`: completion quality on SAFIM (syntax-aware fill-in-the-middle: blocks, control-flow
conditions and API calls in Python, C++, Java and C#), block and control tasks scored by compiling the program
and running the problem's tests, API tasks by exact match.

Three answers per task, side by side on one warm engine, as in `tandem-eval humaneval`:
- raw FIM: the whole file around the hole (prefix and suffix up to the context), greedy, until end of middle or
  the token limit `RAW_RULE`, no post-processing;
- the pipeline, speculative: the server's first answer, the document as an editor holds it (the hole removed,
  the cursor where it was; a hole of whole lines leaves an empty line at the hole's indentation);
- Tab until done (evals/common/tab.py): accept and ask again until the server is done.

The data file labels its API rows (the ones without tests) block_completion_000000..309, ids its block tasks
use too: they are renamed api_completion_NNNNNN here. A task whose ground truth fails its own tests is
flagged and left out of the figures.
"""
from __future__ import annotations

import json
import random
import re
import sys
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, fields
from pathlib import Path

import evals.common.jsonl as jsonl
from lsp_server.context import Document
from lsp_server.engine import ContextFullError, Engine, GenerationRequest
from lsp_server.pipeline import CompletionRequest, Pipeline
from lsp_server.prompt import PromptBudget, PromptParts, build_prompt
from lsp_server.service.settings import Settings
from evals.common.halves import in_half
from evals.suites.humaneval import Answer, Tally, _pct, _public, _write
from evals.suites.programs import TESTED, Runner, same_code, toolchains
from evals.common.tab import TabUntilDone

REPO = Path(__file__).resolve().parents[2]
DATA_NAME = "safim-dev.jsonl.gz"
DEFAULT_DATA = REPO.parent / "shared" / "data" / DATA_NAME
HOLE = "{{completion}}"
KINDS = ("block", "control", "api")
LANGUAGES = ("python", "cpp", "java", "csharp")
VARIANTS = ("raw", "pipeline", "tab")
TITLES = {"raw": "raw FIM (no post-processing)", "pipeline": "pipeline, speculative (the server's path)",
          "tab": "Tab until done (the server's path)"}
RAW_CAP = 512
RAW_RULE = "max(--max-tokens, 2 x the ground truth's tokens), at most 512"


@dataclass
class UnitTest:
    input: str
    outputs: list[str]    # any of them is accepted


@dataclass
class Task:
    task_id: str
    lang: str
    kind: str
    prefix: str           # the program before the hole, "\n" line ends
    suffix: str
    ground_truth: str
    tests: list[UnitTest]
    problem: str          # what the halves split by: the problem statement, or the API task's file

    @property
    def path(self) -> str:
        if self.lang == "java":   # javac wants the public class in a file of its name
            m = re.search(r"public\s+(?:final\s+|abstract\s+)*class\s+(\w+)", self.prefix + self.suffix)
            return f"{m.group(1) if m else 'Main'}.java"
        return {"python": "solution.py", "cpp": "solution.cpp", "csharp": "Program.cs"}[self.lang]

    def program(self, middle: str) -> str:
        return self.prefix + middle + self.suffix


@dataclass
class TaskResult:
    task_id: str
    lang: str
    kind: str
    answers: dict[str, Answer] = field(default_factory=dict)
    canonical: dict = field(default_factory=dict)   # {passed, error}: the ground truth run on its own tests


def _lf(s: str) -> str:
    return s.replace("\r\n", "\n")


def _problem(row: dict, program: str) -> str:
    """The problem statement, so that a problem's tasks in every language fall in one half; an API task has
    none: its file (the same for every hole in it)."""
    m = re.search(r"Description:(.*?)\n\nCode:", _lf(row["prompt"]), re.S)
    return " ".join(m.group(1).split()) if m else program


def _task(row: dict) -> Task:
    kind, _, number = row["task_id"].partition("_completion_")
    kind = kind if row.get("unit_tests") else "api"
    prefix, suffix = _lf(row["eval_prompt"]).split(HOLE)
    first, nl, rest = suffix.partition("\n")
    if nl and not prefix[prefix.rfind("\n") + 1:].strip() and not first.strip():
        suffix = "\n" + rest   # a hole of whole lines: its line holds the indentation and nothing else
    truth = _lf(row["ground_truth"])
    tests = [UnitTest(_lf(t["input"]), [_lf(o) for o in t["output"]]) for t in row.get("unit_tests") or []]
    return Task(f"{kind}_completion_{number}", row["lang"], kind, prefix, suffix, truth, tests,
                _problem(row, prefix + truth + suffix))


def load_tasks(path: str | Path) -> list[Task]:
    """Tasks from SAFIM's JSONL, gzip or not (told by its first bytes)."""
    path = Path(path)
    tasks = []
    for n, row in jsonl.rows(path):
        try:
            if row["eval_prompt"].count(HOLE) != 1:
                raise ValueError(f"{path}:{n}: eval_prompt needs one {HOLE}")
            tasks.append(_task(row))
        except (KeyError, TypeError, AttributeError) as e:
            raise ValueError(f"{path}:{n}: not a SAFIM task ({type(e).__name__}: {e})") from e
    if not tasks:
        raise ValueError(f"{path}: no tasks in it")
    return tasks


def select(tasks: list[Task], limit: int, seed: int) -> list[Task]:
    """A seeded random sample of `limit` tasks, shared equally among the languages (a language that runs out
    leaves its share to the others), kept in file order."""
    if not limit or limit >= len(tasks):
        return list(tasks)
    rng = random.Random(seed)
    pools = {}
    for i, t in enumerate(tasks):
        pools.setdefault(t.lang, []).append(i)
    for ix in pools.values():
        rng.shuffle(ix)
    order = sorted(pools)
    rng.shuffle(order)   # who gets the shares that do not divide evenly
    keep: set[int] = set()
    while len(keep) < limit:
        for ix in (pools[lang] for lang in order):
            if ix and len(keep) < limit:
                keep.add(ix.pop())
    return [t for i, t in enumerate(tasks) if i in keep]


def editor_view(task: Task) -> tuple[Document, int, int]:
    """The task as an editor holds it: the hole removed, the cursor where it was."""
    line = task.prefix.count("\n")
    col = len(task.prefix) - (task.prefix.rfind("\n") + 1)
    return Document(task.path, task.prefix + task.suffix, task.lang), line, col


class Evaluator:
    def __init__(self, engine: Engine, settings: Settings, max_tokens_raw: int = 64,
                 variants: tuple[str, ...] = VARIANTS):
        self.engine = engine
        self.settings = settings
        self.max_tokens_raw = max_tokens_raw
        self.variants = variants
        self.pipeline = Pipeline(engine, settings.prompt_budget())
        # raw FIM sees the whole file, as far as the context holds it next to the longest answer
        room = engine.cfg.n_ctx - RAW_CAP - 64
        self.raw_budget = PromptBudget(prefix_tokens=room * 2 // 3, suffix_tokens=room // 3, context_tokens=0)
        self.tab = TabUntilDone(engine, settings) if "tab" in variants else None

    def raw_limit(self, task: Task) -> int:
        return min(RAW_CAP, max(self.max_tokens_raw, 2 * len(self.engine.tokenize(task.ground_truth))))

    def _raw(self, task: Task) -> Answer:
        prompt = build_prompt(self.engine, PromptParts(task.prefix, task.suffix, path=task.path), self.raw_budget)
        try:
            g = self.engine.generate(GenerationRequest(prompt.tokens, max_tokens=self.raw_limit(task),
                                                       speculative=False, language=task.lang))
        except ContextFullError as e:   # a prompt past its budget by a long line (bounded: rare)
            return Answer("", False, False, skipped=str(e))
        return Answer(g.text, False, same_code(g.text, task.ground_truth), tokens=len(g.tokens),
                      seconds=round(g.gen_s, 3), stop=g.stop_reason)

    def _pipeline(self, task: Task) -> Answer:
        doc, line, col = editor_view(task)
        c = self.pipeline.complete(CompletionRequest(
            doc, line, col, max_tokens=self.settings.max_tokens,
            max_tokens_single_line=self.settings.max_tokens_single_line, speculative=True))
        g = c.generation
        return Answer(c.text, False, same_code(c.text, task.ground_truth), tokens=len(g.tokens) if g else 0,
                      seconds=round(g.gen_s, 3) if g else 0.0, stop=g.stop_reason if g else "",
                      skipped=c.skipped, raw=c.raw, mode=c.mode.why if c.mode else "")

    def _tab(self, task: Task) -> Answer:
        run = self.tab.run(task.path, task.lang, task.prefix, task.suffix,
                           hole_lines=task.ground_truth.count("\n") + 1)
        return Answer(run.middle, False, same_code(run.middle, task.ground_truth), stop=run.stop,
                      steps=run.steps, step_ms=run.step_ms, sources=run.sources)

    def answer(self, task: Task, variant: str) -> Answer:
        return {"raw": self._raw, "pipeline": self._pipeline, "tab": self._tab}[variant](task)


# --- the run -----------------------------------------------------------------------------------------------

def tasks_for(args, data: Path) -> tuple[list[Task], dict[str, str]]:
    """The tasks the options ask for, and the languages left out of the tested kinds, with why."""
    kinds = tuple(args.safim_kinds)
    langs = tuple(args.safim_languages or LANGUAGES)
    why = toolchains(langs) if set(kinds) & set(TESTED) else {}
    left_out = {lang: w for lang, w in why.items() if w}
    tasks = [t for t in load_tasks(data) if t.kind in kinds and t.lang in langs
             and not (t.kind in TESTED and t.lang in left_out) and in_half(t.problem, args.half)]
    if args.tasks:
        tasks = [t for t in tasks if any(t.task_id.endswith(want) for want in args.tasks)]
    if not tasks:
        raise ValueError(f"{data}: no {'/'.join(kinds)} task in {', '.join(langs)} (half {args.half})"
                         + (f" ends with any of {' '.join(args.tasks)}" if args.tasks else ""))
    return select(tasks, args.limit, _seed(args)), left_out


def _seed(args) -> int:
    return 0 if args.seed is None else args.seed   # a sample is always drawn: the first rows are all Java blocks


def resumed(path: str, data: Path, variants: tuple[str, ...]) -> dict[str, TaskResult]:
    report = json.loads(Path(path).read_text())
    if Path(report["data"]).name != data.name:
        raise ValueError(f"{path} is a run of {report['data']}, not of {data}")
    names = {f.name for f in fields(Answer)}
    done = {}
    for r in report["results"]:
        if set(variants) - set(r):
            raise ValueError(f"{path} has no {', '.join(sorted(set(variants) - set(r)))} answers: resume it "
                             f"with the variants it was run with")
        done[r["task_id"]] = TaskResult(r["task_id"], r["lang"], r["kind"], {
            v: Answer(**{k: x for k, x in r[v].items() if k in names}) for v in variants}, r["canonical"])
    return done


@dataclass
class Tallies:
    """Per variant, overall and per language and kind; tasks whose ground truth fails are not counted."""
    variants: tuple[str, ...]
    all: dict = field(default_factory=dict)
    by: dict = field(default_factory=dict)   # ("language"|"kind", name) -> {variant: Tally}

    def add(self, res: TaskResult) -> None:
        if not res.canonical.get("passed"):
            return
        for table in (self.all, self.by.setdefault(("language", res.lang), {}),
                      self.by.setdefault(("kind", res.kind), {})):
            for v in self.variants:
                table.setdefault(v, Tally()).add(res.answers[v])

    def rows(self, axis: str) -> dict:
        return {name: {v: t.row() for v, t in table.items()} for (a, name), table in sorted(self.by.items())
                if a == axis}


def run_eval(engine: Engine, args, tasks: list[Task], left_out: dict[str, str], data: Path) -> dict:
    settings = Settings()
    variants = tuple(v for v in VARIANTS if v not in set(args.skip or ()))
    if not variants:
        raise ValueError("every variant is skipped")
    ev = Evaluator(engine, settings, args.max_tokens, variants)
    runner = Runner(args.timeout)
    tallies = Tallies(variants)
    results: list[TaskResult] = []
    done = resumed(args.resume, data, variants) if args.resume else {}
    for lang, why in left_out.items():
        print(f"SAFIM: {lang} block and control tasks skipped: {why}", file=sys.stderr)
    print(f"SAFIM: {len(tasks)} tasks from {data} (half {args.half}, seed {_seed(args)}, limit {args.limit or '-'});"
          f" variants: {', '.join(variants)}; {runner.isolation}, {args.timeout:g}s per test"
          + (f"; {sum(t.task_id in done for t in tasks)} answered already in {args.resume}" if done else ""),
          file=sys.stderr)
    pool = ThreadPoolExecutor(1, thread_name_prefix="tandem-safim-run")   # tests run while the model writes
    t0, computed = time.perf_counter(), 0
    tty = sys.stderr.isatty()
    for i, task in enumerate(tasks, 1):
        if task.task_id in done:
            results.append(done[task.task_id])
            tallies.add(done[task.task_id])
            continue
        computed += 1
        res = TaskResult(task.task_id, task.lang, task.kind)
        # the ground truth first (it runs while the model writes); answers that agree are run once
        runs: dict[str, Future] = {task.ground_truth: pool.submit(runner.score, task, task.ground_truth)}
        for v in variants:
            res.answers[v] = a = ev.answer(task, v)
            if a.middle not in runs:
                runs[a.middle] = pool.submit(runner.score, task, a.middle)
        out = runs[task.ground_truth].result()
        res.canonical = {"passed": out.passed, "error": out.error}
        for a in res.answers.values():
            out = runs[a.middle].result()
            a.passed, a.error = out.passed, out.error
        results.append(res)
        tallies.add(res)
        if tty or i % 10 == 0 or i == len(tasks):
            spent = time.perf_counter() - t0
            n = tallies.all[variants[0]].n if tallies.all else 0
            figures = "  ".join(f"{v} {_pct(t.passed, n).strip()}" for v, t in tallies.all.items())
            print(f"{chr(13) if tty else ''}[{i}/{len(tasks)}] pass@1 {figures}  "
                  f"{spent / computed:.1f} s/task, {(len(tasks) - i) * spent / computed / 60:.0f} min left   ",
                  end="" if tty and i < len(tasks) else "\n", file=sys.stderr, flush=True)
        if args.json and i % 50 == 0:
            _write(args.json, _report(data, tasks[:i], tallies, results, ev, runner, left_out, args, partial=True))
    pool.shutdown()
    if ev.tab is not None:
        ev.tab.close()
    report = _report(data, tasks, tallies, results, ev, runner, left_out, args)
    _print(report)
    if args.json:
        _write(args.json, report)
        print(f"wrote {args.json}", file=sys.stderr)
    return report


def _report(data, tasks, tallies: Tallies, results, ev: Evaluator, runner: Runner, left_out, args,
            partial: bool = False) -> dict:
    return {
        "data": str(data), "tasks": len(tasks), "partial": partial, "half": args.half, "seed": _seed(args),
        "limit": args.limit, "kinds": list(args.safim_kinds), "languages": sorted({t.lang for t in tasks}),
        "skipped_languages": left_out, "target": ev.engine.target.path,
        "draft": ev.engine.draft.path if ev.engine.draft else None,
        "max_tokens_raw": RAW_RULE.replace("--max-tokens", str(ev.max_tokens_raw)),
        "sandbox": runner.isolation, "timeout_s": args.timeout,
        "scoring": "block/control: all unit tests pass (stdout tokens; numbers within 1e-6, YES/NO in any "
                   "case); api: exact match; "
                   "exact: whitespace-normalised match with the ground truth; tasks whose ground truth fails "
                   "are left out of the figures",
        "canonical_fails": [{"task_id": r.task_id, "error": r.canonical.get("error", "")} for r in results
                            if r.canonical and not r.canonical.get("passed")],
        "summary": {v: t.row() for v, t in tallies.all.items()},
        "by_language": tallies.rows("language"), "by_kind": tallies.rows("kind"),
        "results": [{"task_id": r.task_id, "lang": r.lang, "kind": r.kind, "canonical": r.canonical,
                     **{v: _public(a) for v, a in r.answers.items()}} for r in results],
    }


def _print(report: dict) -> None:
    s = report["summary"]
    n = next(iter(s.values()))["tasks"] if s else 0
    print(f"\nSAFIM {'/'.join(report['kinds'])}, {n} tasks scored of {report['tasks']} ({report['data']}, half "
          f"{report['half']}, seed {report['seed']}, limit {report['limit'] or '-'})")
    print(f"{'':44} {'pass@1':>8} {'exact':>8} {'skipped':>8} {'tok/s':>7}")
    for v, row in s.items():
        print(f"{TITLES[v]:44} {_pct(row['passed'], n):>8} {_pct(row['exact'], n):>8} {row['skipped']:>8} "
              f"{row['tok_s']:>7.1f}")
    for axis in ("by_language", "by_kind"):
        print(f"\npass@1 / exact {axis.replace('_', ' ')}")
        print(f"{'':10} {'tasks':>6} " + " ".join(f"{v:>17}" for v in s))
        for name, rows in report[axis].items():
            k = next(iter(rows.values()))["tasks"]
            print(f"{name:10} {k:>6} " + " ".join(
                f"{_pct(r['passed'], k)} /{_pct(r['exact'], k)}" for r in rows.values()))
    if "tab" in s and s["tab"].get("requests"):
        t = s["tab"]
        print(f"\nTab until done: {t['steps_per_task']} suggestions accepted per task, {t['requests']} requests, "
              f"latency p50 {t['step_ms_p50']:.0f} ms, p95 {t['step_ms_p95']:.0f} ms")
    for lang, why in report["skipped_languages"].items():
        print(f"{lang}: block and control tasks skipped ({why})")
    if report["canonical_fails"]:
        print("left out, their ground truth fails its tests: "
              + ", ".join(f"{c['task_id']} ({c['error']})" for c in report["canonical_fails"]))


def add_arguments(parser) -> None:
    """This suite's own options of `tandem-eval` (prefixed --safim-...)."""
    parser.add_argument("--safim-kinds", nargs="+", choices=KINDS, default=list(TESTED),
                        help="SAFIM: the kinds of task (default: block control; api is scored by exact match)")
    parser.add_argument("--safim-languages", nargs="+", choices=LANGUAGES,
                        help="SAFIM: the languages (default: all; those without a compiler here are left out of "
                             "the tested kinds, with a message). With --limit, tasks are drawn equally per "
                             "language with --seed (default 0)")


def cli_main(args, load_engine, die) -> None:
    data = Path(args.data) if args.data else DEFAULT_DATA
    try:
        tasks, left_out = tasks_for(args, data)   # a bad data file or selection fails before the models load
    except ValueError as e:
        die(str(e))
    engine, _ = load_engine(args)
    try:
        run_eval(engine, args, tasks, left_out, data)
    except (ValueError, OSError) as e:   # a --resume file that does not fit
        die(str(e), 1)
    finally:
        engine.close()
