"""The warm target/draft pair behind one lock, with the controller that decides how to use them."""
from __future__ import annotations

import os
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import llama_cpp

from . import registry
from .acceptance import AcceptanceStats
from .controller import Controller
from .costs import calibrate, calibration_key
from .drafters import ModelDrafter, NgramDrafter, TemplateDrafter
from .gguf import ModelFileError
from .llama import Cancelled, LlamaModel
from .speculative import Generation, GenerationRequest, generate
from .vocab import FimTokens, fim_tokens, incompatibility


@dataclass
class EngineConfig:
    target_path: str | None = None        # None: the default target from the model cache
    draft_path: str | None = None         # None: the default draft; "" or "none": no draft model
    n_ctx: int = 4096
    n_threads: int = 0                    # 0: every core
    n_gpu_layers: int = 0                 # target layers offloaded (needs a CUDA/Metal build)
    n_gpu_layers_draft: int = 0
    draft_min: int = 0
    draft_max: int = 16
    speculation: bool = True
    drafters: tuple[str, ...] = ("ngram", "template", "model")
    stats_path: str | None = None         # None: in the cache folder; "" : do not persist
    calibration_path: str | None = None   # None: in the cache folder; "": measure every start

    def threads(self) -> int:
        return self.n_threads or os.cpu_count() or 1


def _state_path(configured: str | None, default_name: str) -> Path | None:
    if configured == "":
        return None
    return Path(configured) if configured else registry.cache_dir() / default_name


class Engine:
    def __init__(self, cfg: EngineConfig, log=lambda msg: print(msg, file=sys.stderr)):
        self.cfg, self.log = cfg, log
        self.warnings: list[str] = []
        self.lock = threading.Lock()
        threads = cfg.threads()

        target_path = cfg.target_path or str(registry.default_path(registry.DEFAULT_TARGET))
        if not cfg.target_path and not Path(target_path).exists():
            raise ModelFileError(f"{target_path}: default target model not found; run `tandem models pull`")
        registry.verify_model_file(target_path)
        if (cfg.n_gpu_layers or cfg.n_gpu_layers_draft) and not llama_cpp.llama_supports_gpu_offload():
            self.warn("GPU layers were asked for, but this llama-cpp-python build has no GPU support; "
                      "running on the CPU (see README: GPU)")
        self.target = LlamaModel(target_path, n_ctx=cfg.n_ctx, n_threads=threads,
                                 n_gpu_layers=cfg.n_gpu_layers, name="target")
        self.fim: FimTokens | None = fim_tokens(self.target)
        if self.fim is None:
            self.warn(f"{target_path}: the vocabulary has no FIM tokens; completions use the prefix only")

        self.draft: LlamaModel | None = None
        if "model" in cfg.drafters and cfg.draft_path not in ("", "none"):
            self.draft = self._load_draft(cfg, threads)

        key = calibration_key(self.target, self.draft, threads, (cfg.n_gpu_layers, cfg.n_gpu_layers_draft))
        self.costs = calibrate(self.target, self.draft,
                               _state_path(cfg.calibration_path, "calibration.json"), key, log=log)
        self.stats = AcceptanceStats(_state_path(cfg.stats_path, "acceptance.json"))
        self.controller = Controller(self.costs, self.stats, cfg.draft_min, cfg.draft_max)
        self.ngram = NgramDrafter() if "ngram" in cfg.drafters else None
        self.template = TemplateDrafter(self.target.tokenize) if "template" in cfg.drafters else None
        self.model_drafter = ModelDrafter(self.draft) if self.draft else None
        unknown = set(cfg.drafters) - {"ngram", "template", "model"}
        if unknown:
            raise ValueError(f"unknown drafter(s) {', '.join(sorted(unknown))}: choose from ngram, template, model")

    def file_changes(self) -> list[str]:
        """Model files that changed on disk since loading. The weights are in memory, so this engine goes on
        unharmed; the next load of the same paths is what would fail."""
        out = []
        for m in (self.target, self.draft):
            if m is not None and (change := m.file_change()):
                out.append(f"the {m.name} model file {m.path} {change} while loaded; completions go on from the "
                           f"copy in memory, but a restart or a model change will need a good file")
        return out

    def warn(self, msg: str) -> None:
        self.warnings.append(msg)
        self.log(f"warning: {msg}")

    def _load_draft(self, cfg: EngineConfig, threads: int) -> LlamaModel | None:
        path = cfg.draft_path or str(registry.default_path(registry.DEFAULT_DRAFT))
        try:
            registry.verify_model_file(path)
            draft = LlamaModel(path, n_ctx=cfg.n_ctx, n_threads=threads,
                               n_gpu_layers=cfg.n_gpu_layers_draft, name="draft")
        except ModelFileError as e:
            self.warn(f"draft model unusable, running target-only: {e}")
            return None
        why = incompatibility(self.target, draft)
        if why:
            draft.close()
            self.warn(f"draft model {path} cannot draft for {self.target.path}: {why}; running target-only")
            return None
        return draft

    def tokenize(self, text: str) -> list[int]:
        return self.target.tokenize(text)

    def generate(self, req: GenerationRequest, cancel: threading.Event | None = None) -> Generation:
        if not self.cfg.speculation:
            req.speculative = False
        with self.lock:
            return generate(self.target, self.controller, req, cancel, self.ngram, self.model_drafter,
                            self.template)

    def prewarm(self, tokens: list[int], cancel: threading.Event | None = None, draft: bool = False) -> int:
        """Evaluate a prompt ahead of its request, in the draft model too where it may be used (or `draft`).
        Returns the target tokens evaluated; a cancel keeps what was evaluated before it."""
        with self.lock:
            before = self.target.common_prefix(tokens)
            try:
                self.target.prefill(tokens, cancel=cancel)
                if self.draft is not None and self.cfg.speculation and (draft or self.controller.model_can_pay()):
                    self.draft.prefill(tokens, cancel=cancel)
            except Cancelled:
                pass
            return self.target.common_prefix(tokens) - before

    def close(self) -> None:
        self.stats.save()
        for m in (self.draft, self.target):
            if m is not None:
                m.close()
