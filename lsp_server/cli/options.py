"""Engine options shared by every command that loads models. Their defaults are the engine's own (engine/config.py,
engine/backend.py), which the server's Settings read too; Settings itself would bring the whole service in."""
from __future__ import annotations

import argparse
from dataclasses import replace

from ..engine import BackendConfig, BackendKind, EngineConfig


def add_engine_options(p: argparse.ArgumentParser) -> None:
    d, b = EngineConfig(), BackendConfig(url="")
    g = p.add_argument_group("models and speculation")
    g.add_argument("--target", metavar="GGUF", help="target model (default: the cached default target)")
    g.add_argument("--draft", metavar="GGUF", help="draft model; 'none' for target-only "
                   "(default: the cached default draft)")
    g.add_argument("--ctx", type=int, default=d.n_ctx, help=f"context size in tokens (default {d.n_ctx})")
    g.add_argument("--threads", type=int, default=d.n_threads, help="CPU threads (default: all cores)")
    g.add_argument("-ngl", "--gpu-layers", type=int, default=d.n_gpu_layers,
                   help="target layers offloaded to the GPU (needs a CUDA or Metal build)")
    g.add_argument("-ngld", "--gpu-layers-draft", type=int, default=d.n_gpu_layers_draft, help="draft layers offloaded")
    g.add_argument("--draft-min", type=int, default=d.draft_min,
                   help=f"never verify fewer drafted tokens than this, except none (default {d.draft_min})")
    g.add_argument("--draft-max", type=int, default=d.draft_max, help=f"never draft more than this "
                   f"(default {d.draft_max})")
    g.add_argument("--drafters", default=",".join(d.drafters),
                   help=f"drafters the controller may use, comma-separated (default {','.join(d.drafters)})")
    g.add_argument("--stats", metavar="PATH", help="acceptance statistics file ('' to keep them in memory)")
    r = p.add_argument_group("an inference server instead of the models in-process (docs/team-server.md)")
    r.add_argument("--backend", metavar="URL", help="the server's URL, e.g. http://127.0.0.1:8012")
    r.add_argument("--backend-kind", choices=list(BackendKind), default=b.kind,
                   help="llama-server (its /completion) or openai (/v1/completions: vLLM and others)")
    r.add_argument("--backend-model", default=b.model,
                   help="openai: the model name (default: the server's first)")
    r.add_argument("--backend-api-key-env", default=b.api_key_env, metavar="VAR",
                   help="the environment variable that holds the server's API key")
    r.add_argument("--backend-vocab", default=b.vocab, metavar="GGUF",
                   help="a GGUF of the server model's family, for its tokens (default: the default target's)")
    r.add_argument("--backend-timeout", type=float, default=b.timeout_s, metavar="S",
                   help=f"seconds to connect (default {b.timeout_s:g})")


def backend_config(args: argparse.Namespace) -> BackendConfig | None:
    if not getattr(args, "backend", None):
        return None
    return BackendConfig(url=args.backend, kind=args.backend_kind, model=args.backend_model,
                         api_key_env=args.backend_api_key_env, vocab=args.backend_vocab,
                         timeout_s=args.backend_timeout)


def engine_config(args: argparse.Namespace, **over) -> EngineConfig:
    cfg = EngineConfig(
        target_path=args.target, draft_path=args.draft, n_ctx=args.ctx, n_threads=args.threads,
        n_gpu_layers=args.gpu_layers, n_gpu_layers_draft=args.gpu_layers_draft, draft_min=args.draft_min,
        draft_max=args.draft_max, drafters=tuple(d.strip() for d in args.drafters.split(",") if d.strip()),
        stats_path=args.stats)
    return replace(cfg, **over)
