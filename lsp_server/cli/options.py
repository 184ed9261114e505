"""Engine options shared by every command that loads models."""
from __future__ import annotations

import argparse

from ..engine import EngineConfig


def add_engine_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("models and speculation")
    g.add_argument("--target", metavar="GGUF", help="target model (default: the cached default target)")
    g.add_argument("--draft", metavar="GGUF", help="draft model; 'none' for target-only "
                   "(default: the cached default draft)")
    g.add_argument("--ctx", type=int, default=4096, help="context size in tokens (default 4096)")
    g.add_argument("--threads", type=int, default=0, help="CPU threads (default: all cores)")
    g.add_argument("-ngl", "--gpu-layers", type=int, default=0,
                   help="target layers offloaded to the GPU (needs a CUDA or Metal build)")
    g.add_argument("-ngld", "--gpu-layers-draft", type=int, default=0, help="draft layers offloaded")
    g.add_argument("--draft-min", type=int, default=0,
                   help="never verify fewer drafted tokens than this, except none (default 0)")
    g.add_argument("--draft-max", type=int, default=16, help="never draft more than this (default 16)")
    g.add_argument("--drafters", default="ngram,template,model",
                   help="drafters the controller may use, comma-separated (default ngram,template,model)")
    g.add_argument("--stats", metavar="PATH", help="acceptance statistics file ('' to keep them in memory)")


def engine_config(args: argparse.Namespace, **over) -> EngineConfig:
    cfg = EngineConfig(
        target_path=args.target, draft_path=args.draft, n_ctx=args.ctx, n_threads=args.threads,
        n_gpu_layers=args.gpu_layers, n_gpu_layers_draft=args.gpu_layers_draft, draft_min=args.draft_min,
        draft_max=args.draft_max, drafters=tuple(d.strip() for d in args.drafters.split(",") if d.strip()),
        stats_path=args.stats)
    for k, v in over.items():
        setattr(cfg, k, v)
    return cfg
