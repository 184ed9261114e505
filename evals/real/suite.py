"""`tandem-eval real`: completion quality on holes cut by rule in real projects' files.

The corpus (real_corpus.py): released sources of pinned projects in six languages, fetched from the package
registries on first use (or `--real-fetch`) and checked by sha256; `--real-corpus DIR` takes a local folder of
projects instead. The holes (real_holes.py): one-line and block holes drawn with a seed, each marked
cross-file where its text uses a name that another file of the project defines and its own does not.

The answers, side by side on the same holes:
- raw: the model alone on the whole file (prefix and suffix up to the context), plain FIM, greedy, no
  post-processing, on an in-process engine; the token limit follows the hole (max(48, 2 x its tokens));
- editor: `tandem serve` over stdio at an editor's pace (real_server.py): the cursor moves to the hole, its
  text is removed, 1 s later an inline completion is asked for; the first answer counts, with its latency and
  the prompt that answered (fast or page). With --real-read S the user reads for S seconds before the cursor
  goes there (with --real-view the editor shows a screen around the hole meanwhile, as after a scroll);
- offered: the same request, then what an editor shows once the server offers a better answer there
  (`tandem/betterCompletion`: the page's, where a fast prompt's was shown) and it asks again; the editor's
  answer where none is offered. Its latency: from the first request to the answer shown last;
- page: the same server with time for the whole page (real_server.py);
- editor_noproject, offered_noproject, page_noproject: the same with `projectContext: false` (the default), the
  server without the project
  around the file (these need the server's `project_context` setting; without it they are skipped, said so).

A server and the in-process engine never run at once: per project, the server's passes first, then raw.
Scores (real_score.py): the first line exact and its edit similarity, the whole answer exact and its edit
similarity (lines trimmed), whether the file still parses. Reported per variant, per language, per kind of
hole and cross-file or not, with the server's latency p50/p95; JSON like `tandem-eval humaneval`'s (data,
tasks, partial, summary, results), written as it goes and resumable with --resume."""
from __future__ import annotations

import asyncio
import json
import os
import random
import statistics
import sys
import time
from dataclasses import asdict
from pathlib import Path

from lsp_server.service.stats import percentile
from evals.common.halves import in_half
from evals.real.corpus import PROJECTS, CorpusError, Project, cache_root, ensure, local_projects
from evals.real.holes import Hole, cut_project, read_source
from evals.real.score import broken, score
from evals.sessions.replay import server_command

VARIANTS = ("raw", "editor", "offered", "page", "editor_noproject", "offered_noproject", "page_noproject")
SERVER_VARIANTS = VARIANTS[1:]
TITLES = {"raw": "raw FIM, whole file (no post-processing)", "editor": "server, editor's pace",
          "offered": "server, then its offer",
          "page": "server, the whole page", "editor_noproject": "server, editor's pace, no project",
          "offered_noproject": "server, then its offer, no project",
          "page_noproject": "server, the whole page, no project",
          # derived from the offered variants: the editor's answer, or the same once an early answer's line was
          # completed (the first notification, moments after), before any page's offer
          "completed": "server, editor's pace, line completed",
          "completed_noproject": "server, editor's pace, completed, no proj."}
# the derived rows: (row, the variant it is read from, the editor's variant)
DERIVED = (("completed", "offered", "editor"), ("completed_noproject", "offered_noproject", "editor_noproject"))
# the server's passes: (variants it answers, its extra initializationOptions)
PASSES = ((("editor", "offered", "page"), {"projectContext": True}),
          (("editor_noproject", "offered_noproject", "page_noproject"), {"projectContext": False}))
WRITE_EVERY = 10


def add_arguments(parser) -> None:
    """This suite's own options of `tandem-eval` (prefixed --real-...)."""
    g = parser.add_argument_group("tandem-eval real")
    g.add_argument("--real-fetch", action="store_true",
                   help="fetch and check the pinned projects, print the corpus table and its holes, and stop")
    g.add_argument("--real-corpus", metavar="DIR",
                   help="a local folder of projects (each subfolder one; loose files one more) instead of the "
                        "pinned ones (no network)")
    g.add_argument("--real-projects", nargs="*", metavar="NAME", help="only these projects")
    g.add_argument("--real-skip", nargs="*", choices=VARIANTS, default=[], help="variants not to compute")
    g.add_argument("--real-cross", action="store_true",
                   help="only the cross-file holes (those whose answer uses a name another file defines)")
    g.add_argument("--real-hole-seed", type=int, default=0, metavar="N", help="the seed that draws the holes (default 0)")
    g.add_argument("--real-options", metavar="JSON", help="initializationOptions for the server, as JSON")
    g.add_argument("--real-pause", type=float, default=1.0, metavar="S",
                   help="editor: seconds between removing the hole's text and asking (default 1)")
    g.add_argument("--real-read", type=float, default=0.0, metavar="S",
                   help="editor: seconds the user reads before the cursor goes to the hole (default 0: it goes "
                        "there at once); the cursor stays at the previous place meanwhile")
    g.add_argument("--real-view", action="store_true",
                   help="editor: while reading (--real-read), the editor shows a screen of lines around the hole "
                        "(tandem/visibleRanges, as Tandem's VS Code client sends after a scroll)")


# ---- corpus and holes ----------------------------------------------------------------------------------------

def projects_for(args, log) -> tuple[str, list[Project]]:
    """(what the data is, the projects), fetched where needed."""
    return load_projects(getattr(args, "real_corpus", None), args.real_projects, args.half or "all", log)


def load_projects(corpus: str | None, names, half: str, log) -> tuple[str, list[Project]]:
    """(what the data is, the projects of `half`, only those `names` if any): the folders of a local `corpus`, or
    the pinned projects, each fetched (only those of the half) where it is not cached yet."""
    names = set(names or ())
    if corpus:
        folder = Path(corpus).resolve()
        projects = local_projects(folder)
        data = str(folder)
    else:
        projects = [ensure(s, log=log) for s in PROJECTS if (not names or s.name in names) and in_half(s.name, half)]
        data = f"{cache_root()} (pinned projects)"
    projects = [p for p in projects if (not names or p.name in names) and in_half(p.name, half)]
    if not projects:
        raise CorpusError(f"no project left in {data} (half {half}, projects {', '.join(sorted(names)) or 'all'})")
    return data, projects


def select(holes: list[Hole], args) -> list[Hole]:
    if getattr(args, "tasks", None):
        holes = [h for h in holes if any(h.task_id.endswith(t) for t in args.tasks)]
    if getattr(args, "real_cross", False):
        holes = [h for h in holes if h.cross_file]
    if args.limit and args.limit < len(holes):
        if args.seed is None:
            holes = holes[:args.limit]
        else:
            keep = set(random.Random(args.seed).sample(range(len(holes)), args.limit))
            holes = [h for i, h in enumerate(holes) if i in keep]
    return holes


def corpus_table(projects: list[Project], holes: list[Hole]) -> list[dict]:
    out = []
    for p in projects:
        mine = [h for h in holes if h.project == p.name]
        out.append({"name": p.name, "registry": p.registry, "version": p.version,
                    "language": p.language or ",".join(sorted({h.language for h in mine})) or "-",
                    "licence": p.licence, "licence_files": p.licence_files, "root": str(p.root),
                    "files": len({h.file for h in mine}), "holes": len(mine),
                    "line_holes": sum(h.kind == "line" for h in mine),
                    "block_holes": sum(h.kind == "block" for h in mine),
                    "cross_file_holes": sum(h.cross_file for h in mine)})
    return out


def print_corpus(table: list[dict], out=sys.stdout) -> None:
    print(f"{'project':36} {'registry':8} {'version':10} {'language':10} {'licence':30} {'files':>5} "
          f"{'holes':>5} {'line':>5} {'block':>5} {'cross':>5}", file=out)
    for r in table:
        print(f"{r['name']:36} {r['registry']:8} {r['version']:10} {r['language']:10} {r['licence'][:30]:30} "
              f"{r['files']:5d} {r['holes']:5d} {r['line_holes']:5d} {r['block_holes']:5d} "
              f"{r['cross_file_holes']:5d}", file=out)
    print(f"{'total':36} {'':8} {'':10} {'':10} {'':30} {sum(r['files'] for r in table):5d} "
          f"{sum(r['holes'] for r in table):5d} {sum(r['line_holes'] for r in table):5d} "
          f"{sum(r['block_holes'] for r in table):5d} {sum(r['cross_file_holes'] for r in table):5d}", file=out)


# ---- the raw variant -----------------------------------------------------------------------------------------

class Raw:
    """The model alone on the whole file: plain FIM within the context (half of it for the prefix, a quarter for
    the suffix, as `tandem-eval humaneval`'s raw answer), greedy, no post-processing."""

    def __init__(self, engine):
        from lsp_server.prompt import PromptBudget
        self.engine = engine
        n_ctx = engine.cfg.n_ctx
        self.budget = PromptBudget(prefix_tokens=n_ctx // 2, suffix_tokens=n_ctx // 4, context_tokens=0)

    def answer(self, hole: Hole, holed: str, cursor: int) -> dict:
        from lsp_server.engine import GenerationRequest
        from lsp_server.prompt import PromptParts, build_prompt
        prompt = build_prompt(self.engine, PromptParts(holed[:cursor], holed[cursor:], path=hole.file), self.budget)
        want = max(48, 2 * len(self.engine.tokenize(hole.expected)))
        room = self.engine.cfg.n_ctx - len(prompt.tokens) - 32
        g = self.engine.generate(GenerationRequest(prompt.tokens, max_tokens=max(1, min(want, room)),
                                                   speculative=False, language=hole.language))
        return {"text": g.text, "tokens": len(g.tokens), "max_tokens": max(1, min(want, room)),
                "stop": g.stop_reason, "prompt_tokens": g.prompt_tokens, "prompt_evaluated": g.prompt_evaluated,
                "prompt_s": round(g.prompt_s, 3), "gen_s": round(g.gen_s, 3)}


# ---- tallies and the report ----------------------------------------------------------------------------------

def row(answers: list[dict]) -> dict:
    n = len(answers)
    lat = [a["latency_ms"] for a in answers if "latency_ms" in a]
    parsed = [a["parses"] for a in answers if a.get("parses") is not None]
    out = {"holes": n,
           "first_exact": sum(a["first_exact"] for a in answers),
           "first_exact_rate": round(sum(a["first_exact"] for a in answers) / n, 4) if n else None,
           "first_sim": round(statistics.fmean(a["first_sim"] for a in answers), 4) if n else None,
           "exact": sum(a["exact"] for a in answers),
           "exact_rate": round(sum(a["exact"] for a in answers) / n, 4) if n else None,
           "sim": round(statistics.fmean(a["sim"] for a in answers), 4) if n else None,
           "parses": sum(parsed), "parses_of": len(parsed),
           "parses_rate": round(sum(parsed) / len(parsed), 4) if parsed else None,
           "empty": sum(1 for a in answers if not a["text"].strip())}
    if lat:
        prompts: dict[str, int] = {}
        for a in answers:
            prompts[a.get("prompt") or "-"] = prompts.get(a.get("prompt") or "-", 0) + 1
        out.update({"latency_p50_ms": percentile(lat, 50), "latency_p95_ms": percentile(lat, 95),
                    "answered_by": prompts})
    return out


def with_derived(results: list[dict], variants: tuple[str, ...]) -> tuple[list[dict], tuple[str, ...]]:
    """The results with the derived rows (DERIVED) added where their variants were computed."""
    derived = tuple(d for d, src, ed in DERIVED if src in variants and ed in variants)
    if not derived:
        return results, variants
    out = []
    for r in results:
        r = dict(r)
        for d, src, ed in DERIVED:
            if d in derived and src in r and ed in r:
                r[d] = r[src].get("completed") or r[ed]
        out.append(r)
    return out, variants + derived


def tables(results: list[dict], variants: tuple[str, ...]) -> tuple[dict, dict]:
    results, variants = with_derived(results, variants)
    summary = {v: row([r[v] for r in results if v in r]) for v in variants}
    by = {}
    for name, key in (("language", lambda r: r["language"]), ("kind", lambda r: r["kind"]),
                      ("cross_file", lambda r: "cross-file" if r["cross_file"] else "same-file")):
        groups = sorted({key(r) for r in results})
        by[name] = {v: {g: row([r[v] for r in results if v in r and key(r) == g]) for g in groups}
                    for v in variants}
    # cross-file holes, by kind of hole too: the project's context should show there
    by["cross_file_kind"] = {v: {f"{'cross-file' if c else 'same-file'} {k}":
                                 row([r[v] for r in results if v in r and r["cross_file"] == c and r["kind"] == k])
                                 for c in (True, False) for k in ("line", "block")} for v in variants}
    return summary, by


def _pct(x, n) -> str:
    return f"{100 * x / n:5.1f} %" if n else "     -"


def print_report(report: dict, out=sys.stdout) -> None:
    s = report["summary"]
    print(f"\nReal projects: {report['tasks']} holes ({report['data']}; half {report['half']})", file=out)
    for v, why in report.get("skipped_variants", {}).items():
        print(f"  {v}: skipped: {why}", file=out)
    print(f"{'':42} {'holes':>5} {'1st exact':>9} {'1st sim':>7} {'exact':>7} {'sim':>6} {'parses':>7} "
          f"{'empty':>5} {'p50 ms':>7} {'p95 ms':>7}  answered by", file=out)
    for v, r in s.items():
        if not r["holes"]:
            continue
        p50, p95 = r.get("latency_p50_ms"), r.get("latency_p95_ms")
        by = ", ".join(f"{k} {n}" for k, n in sorted(r.get("answered_by", {}).items()))
        print(f"{TITLES[v]:42} {r['holes']:5d} {_pct(r['first_exact'], r['holes']):>9} {r['first_sim']:7.3f} "
              f"{_pct(r['exact'], r['holes']):>7} {r['sim']:6.3f} {_pct(r['parses'], r['parses_of']):>7} "
              f"{r['empty']:5d} {'-' if p50 is None else f'{p50:,.0f}':>7} "
              f"{'-' if p95 is None else f'{p95:,.0f}':>7}  {by}", file=out)
    shown = [v for v, r in s.items() if r["holes"]]
    for name, title in (("language", "first line exact by language"), ("kind", "first line exact by kind of hole"),
                        ("cross_file", "first line exact, cross-file holes or not"),
                        ("cross_file_kind", "whole answer similarity, cross-file or not, by kind")):
        table = report["tables"][name]
        groups = [g for g in sorted({g for v in shown for g in table[v]}) if any(table[v][g]["holes"]
                                                                              for v in shown)]
        print(f"\n{title}:", file=out)
        print(f"{'':24} {'holes':>5}" + "".join(f" {v[:16]:>16}" for v in shown), file=out)
        for g in groups:
            n = max(table[v][g]["holes"] for v in shown)
            cells = []
            for v in shown:
                r = table[v][g]
                cells.append("-" if not r["holes"] else (f"{r['sim']:.3f}" if name == "cross_file_kind"
                                                         else _pct(r["first_exact"], r["holes"]).strip()))
            print(f"{g:24} {n:5d}" + "".join(f" {c:>16}" for c in cells), file=out)


def write_json(path: str, report: dict) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        json.dump(report, f, indent=1)
    os.replace(tmp, path)


# ---- the run -------------------------------------------------------------------------------------------------

class Run:
    def __init__(self, args, data: str, projects: list[Project], holes: list[Hole], variants: tuple[str, ...],
                 skipped: dict[str, str], log):
        self.args, self.data, self.projects, self.holes = args, data, projects, holes
        self.variants, self.skipped, self.log = variants, skipped, log
        self.results: dict[str, dict] = {h.task_id: self._meta(h) for h in holes}
        self.files: dict[tuple[str, str], tuple[str, int | None]] = {}   # (project, file) -> (text, broken)
        self.roots = {p.name: p.root for p in projects}
        self.engine = None
        self.computed = 0
        self.total = 0
        self.t0 = time.perf_counter()
        self.since_write = 0
        self.model = {}

    @staticmethod
    def _meta(h: Hole) -> dict:
        d = asdict(h)
        d.pop("indent")
        return d

    def resume(self, path: str) -> int:
        report = json.loads(Path(path).read_text())
        if report.get("data") != self.data:
            raise ValueError(f"{path} is a run of {report.get('data')}, not of {self.data}")
        n = 0
        self.model = {k: report[k] for k in ("target", "n_ctx") if k in report}
        for r in report.get("results", []):
            mine = self.results.get(r["task_id"])
            if mine is None or mine["expected"] != r.get("expected"):
                continue
            for v in self.variants:
                if v in r:
                    mine[v] = r[v]
                    n += 1
        return n

    def missing(self, hole: Hole, variants) -> tuple[str, ...]:
        return tuple(v for v in variants if v in self.variants and v not in self.results[hole.task_id])

    def _file(self, hole: Hole) -> tuple[str, int | None]:
        key = (hole.project, hole.file)
        if key not in self.files:
            text = read_source(self.roots[hole.project] / hole.file)
            self.files[key] = (text, broken(text, hole.language))
        return self.files[key]

    def record(self, hole: Hole, variant: str, answer: dict) -> None:
        text, base = self._file(hole)
        holed, start, _ = hole.cut(text)
        answer.update(score(answer["text"], hole.expected, holed, start, hole.language, base))
        if isinstance(answer.get("completed"), dict):   # the offered variant's answer once its line was completed
            answer["completed"].update(score(answer["completed"]["text"], hole.expected, holed, start,
                                             hole.language, base))
        self.results[hole.task_id][variant] = answer
        self.computed += 1
        self.since_write += 1

    def progress(self, hole: Hole, answers: dict[str, dict]) -> None:
        done = sum(1 for r in self.results.values() for v in self.variants if v in r)
        spent = time.perf_counter() - self.t0
        left = self.total - done
        eta = f", {left * spent / self.computed / 60:.0f} min left" if self.computed else ""
        parts = []
        for v, a in answers.items():
            lat = f" {a['latency_ms']:,.0f} ms {a.get('prompt', '')}" if "latency_ms" in a else ""
            parts.append(f"{v}{lat} {'exact' if a['first_exact'] else 'sim %.2f' % a['first_sim']}")
        self.log(f"[{done}/{self.total}] {hole.project} {hole.file}:{hole.line} {hole.kind}"
                 f"{' cross' if hole.cross_file else ''}: " + "; ".join(parts) + eta)
        if self.args.json and self.since_write >= WRITE_EVERY:
            self.write(partial=True)

    def write(self, partial: bool) -> dict:
        report = self.report(partial)
        if self.args.json:
            write_json(self.args.json, report)
            self.since_write = 0
        return report

    def report(self, partial: bool) -> dict:
        done = [r for r in self.results.values() if any(v in r for v in self.variants)]
        summary, by = tables(done, self.variants)
        args = self.args
        return {
            "data": self.data, "tasks": len(self.holes), "partial": partial, "limit": args.limit, "seed": args.seed,
            "half": args.half, "hole_seed": args.real_hole_seed, "pause_s": args.real_pause,
            "read_s": getattr(args, "real_read", 0.0), "view": bool(getattr(args, "real_view", False)),
            "cross_only": bool(getattr(args, "real_cross", False)), "variants": list(self.variants),
            "skipped_variants": self.skipped, **self.model,
            "corpus": corpus_table(self.projects, self.holes),
            "summary": summary, "tables": by,
            "results": [r for r in self.results.values() if any(v in r for v in self.variants)],
        }

    # the server's passes over one project's holes, then raw
    def run_project(self, project: Project, holes: list[Hole], load_engine) -> None:
        options = json.loads(self.args.real_options) if self.args.real_options else {}
        cmd = server_command()
        for names, extra in PASSES:
            todo = [h for h in holes if self.missing(h, names)]
            if not todo:
                continue
            wanted = tuple(v for v in names if v in self.variants)
            plain = tuple(v.replace("_noproject", "") for v in wanted)
            self.log(f"{project.name}: {len(todo)} holes, {', '.join(wanted)} ({project.root})")

            def on_answer(hole: Hole, got: dict[str, dict], wanted=wanted) -> None:
                named = {}
                for v in wanted:
                    a = got.get(v.replace("_noproject", ""))
                    if a is not None and v not in self.results[hole.task_id]:
                        self.record(hole, v, a)
                        named[v] = self.results[hole.task_id][v]
                self.progress(hole, named)

            from evals.real.server import visit_project
            asyncio.run(visit_project(cmd, project.root, todo, plain, {**options, **extra}, self.log, on_answer,
                                      pause_s=self.args.real_pause, read_s=getattr(self.args, "real_read", 0.0),
                                      view=getattr(self.args, "real_view", False)))
            self.write(partial=True)
        todo = [h for h in holes if self.missing(h, ("raw",))]
        if todo:
            if self.engine is None:
                self.log("loading the in-process engine for raw FIM")
                over = {} if self.args.draft else {"draft_path": "none"}   # plain greedy: no draft needed
                self.engine, _ = load_engine(self.args, **over)
                self.model = {"target": self.engine.target.path, "n_ctx": self.engine.cfg.n_ctx}
            raw = Raw(self.engine)
            for hole in todo:
                text, _ = self._file(hole)
                holed, start, _ = hole.cut(text)
                self.record(hole, "raw", raw.answer(hole, holed, start))
                self.progress(hole, {"raw": self.results[hole.task_id]["raw"]})
            self.write(partial=True)

    def close(self) -> None:
        if self.engine is not None:
            self.engine.close()
            self.engine = None


def cli_main(args, load_engine, die) -> None:
    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    try:
        if not isinstance(json.loads(args.real_options or "{}"), dict):
            raise ValueError("not a JSON object")
    except ValueError as e:
        die(f"--real-options: {e}", 2)
    try:
        data, projects = projects_for(args, log)
    except CorpusError as e:
        die(str(e), 1)
    holes_all = [h for p in projects for h in cut_project(p, args.real_hole_seed)]
    if args.real_fetch:
        print_corpus(corpus_table(projects, holes_all))
        return
    holes = select(holes_all, args)
    if not holes:
        die(f"no holes to ask in {data}" + (f" whose id ends with {' '.join(args.tasks)}" if args.tasks else ""), 1)
    skip = set(args.real_skip or ()) | ({"raw"} & set(args.skip or ()))
    skipped = {v: "--real-skip" for v in VARIANTS if v in skip}
    from evals.real.server import has_setting
    if not has_setting("project_context"):
        for v in ("editor_noproject", "offered_noproject", "page_noproject"):
            if v not in skip:
                skipped[v] = "this server has no projectContext setting yet (service/settings.py project_context)"
                log(f"{v}: skipped: {skipped[v]}")
    variants = tuple(v for v in VARIANTS if v not in skipped)
    if not variants:
        die("every variant is skipped", 2)
    run = Run(args, data, projects, holes, variants, skipped, log)
    if args.resume:
        try:
            n = run.resume(args.resume)
        except (OSError, ValueError, KeyError) as e:
            die(f"--resume {args.resume}: {e}", 1)
        log(f"{n} answers taken from {args.resume}")
    run.total = len(holes) * len(variants)
    langs = sorted({h.language for h in holes})
    log(f"real projects: {len(holes)} holes in {len({(h.project, h.file) for h in holes})} files of "
        f"{len({h.project for h in holes})} projects ({', '.join(langs)}); variants: {', '.join(variants)}")
    try:
        for p in projects:
            mine = [h for h in holes if h.project == p.name]
            if mine and any(run.missing(h, VARIANTS) for h in mine):
                run.run_project(p, mine, load_engine)
    except KeyboardInterrupt:
        if args.json:
            run.write(partial=True)
        raise
    except (RuntimeError, OSError, ValueError) as e:   # a server that could not load its models, a broken file
        if args.json:
            run.write(partial=True)
        die(f"{e} (answers so far in {args.json})" if args.json else str(e), 1)
    finally:
        run.close()
    report = run.write(partial=False)
    print_report(report)
    if args.json:
        log(f"wrote {args.json}")
