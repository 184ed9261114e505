"""`tandem-eval speed`: `tandem bench` (lsp_server/bench) with the lab's columns, each asked for by an option: a
fixed draft-model path, llama.cpp's own llama-speculative-simple, shadow acceptance and the speedup cost curves
project from it, and two llama-servers (plain, and with their own speculation) instead of the models in-process."""
from __future__ import annotations

from lsp_server.bench.run import run_bench
from lsp_server.cli.main import add_bench_arguments, die, load_engine
from lsp_server.cli.options import backend_config
from lsp_server.engine.config import DraftResidency


def add_arguments(b) -> None:
    add_bench_arguments(b)
    b.add_argument("--chart", metavar="PATH", help="write an SVG bar chart of the speedups")
    b.add_argument("--with-model-draft", action="store_true",
                   help="also run a fixed draft-model speculation (k=3, like llama.cpp's default) per prompt")
    b.add_argument("--llama-speculative", metavar="BIN",
                   help="also run llama.cpp's llama-speculative-simple (k=3) on the same prompts and models "
                        "(build it with evals/speed/build-llama-reference.sh)")
    b.add_argument("--shadow", action="store_true",
                   help="also record shadow acceptance (untimed): at every position of each prompt's plain "
                        "output, each drafter's proposal of up to 16 tokens and what verification would accept of "
                        "it; it is kept with the run's JSON, and the speedup this machine's own costs project from "
                        "it is printed beside the measured one")
    b.add_argument("--costs", metavar="FILE", action="append",
                   help="a cost curve (target_batch_s: T(n) in seconds, draft_token_s; scripts/gpu-costs/ measures "
                        "one on a GPU): project the speedup with it from the shadow acceptance (implies --shadow; "
                        "may be given more than once)")
    b.add_argument("--shadow-from", metavar="RUN.json",
                   help="no models: project from the shadow acceptance a `--shadow` run saved, with its own costs "
                        "and each --costs FILE")
    b.add_argument("--backend-plain", metavar="URL", help="with --backend: a llama-server with the same target and "
                   "no draft model, for the plain column (--backend's server speculates with its own -md)")


def run_speed(args) -> None:
    from evals.speed.paths import Chart, LlamaReference, ModelDraftColumn, Shadow, with_model_draft
    from evals.speed.projected import load_costs, reproject
    from lsp_server.bench.fixtures import CATEGORIES
    if args.repeat < 1:
        die(f"--repeat must be at least 1 (got {args.repeat})", 2)
    if args.shadow_from:
        try:
            reproject(args.shadow_from, args.costs, args.json, CATEGORIES)
        except ValueError as e:
            die(str(e), 2)
        return
    args.shadow = args.shadow or bool(args.costs)
    try:
        curves = load_costs(args.costs)   # a bad cost file is said before the long run
    except ValueError as e:
        die(str(e), 2)
    if args.backend:
        if args.shadow:
            die("--shadow and --costs record every drafter's proposals with the in-process models; not with "
                "--backend", 2)
        _on_servers(args)
        return
    # a fixed draft-model column, and the shadow's draft-model proposals, need the draft model even where the
    # controller would unload it
    engine, _ = load_engine(args, **({"draft_resident": DraftResidency.ALWAYS} if args.with_model_draft or args.shadow
                                     else {}))
    try:
        if args.llama_speculative and engine.draft is None:
            die("--llama-speculative needs the draft model", 2)
        with_model = args.with_model_draft and engine.draft is not None
        extensions = ([ModelDraftColumn()] if with_model else []) + \
            ([LlamaReference(args.llama_speculative)] if args.llama_speculative else []) + \
            ([Shadow(engine, curves, with_model)] if args.shadow else []) + \
            ([Chart(args.chart)] if args.chart else [])
        run_bench(engine, args, with_model_draft(engine) if with_model else None, tuple(extensions))
    finally:
        engine.close()


def _on_servers(args) -> None:
    """Plain decoding on --backend-plain, the server's own speculation on --backend: llama-server cannot switch
    its speculation per request."""
    from evals.speed.paths import Chart
    from evals.speed.remote import PlainAndServerSpeculation
    if not args.backend_plain:
        die("--backend URL needs --backend-plain URL too: a second llama-server with the same target and no draft "
            "model (llama-server cannot switch its speculation per request)", 2)
    if args.with_model_draft or args.llama_speculative:
        die("--with-model-draft and --llama-speculative compare in-process models; not with --backend", 2)
    spec_cfg = backend_config(args)
    args.no_memory = True   # the models' memory is the servers'
    spec, _ = load_engine(args)
    args.backend = args.backend_plain
    try:
        plain, _ = load_engine(args)
    except SystemExit:
        spec.close()
        raise
    args.backend = spec_cfg.url
    pair = PlainAndServerSpeculation(plain, spec)
    try:
        run_bench(pair, args, extensions=(Chart(args.chart),) if args.chart else ())
    finally:
        pair.close()
