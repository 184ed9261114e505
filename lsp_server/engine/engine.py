"""The warm target/draft pair behind one lock, with the controller that decides how to use them, and the KV
store that keeps earlier prompts' states for them."""
from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import llama_cpp

from . import registry
from .acceptance import AcceptanceStats
from .cancel import Cancelled
from .config import DRAFTERS, DraftResidency, EngineConfig
from .controller import BEST_MODEL_ACCEPTANCE, Controller
from .costs import calibrate, calibration_key
from .drafters import ModelDrafter, NgramDrafter, RewriteDrafter, TemplateDrafter
from .gguf import ModelFileError
from .kvstore import KVStore
from .llama import LlamaModel
from .speculative import Generation, GenerationRequest, generate
from .vocab import FimTokens, fim_tokens, incompatibility


# the automatic KV store budget keeps the resident size of the process below this (the target is 2.5 GB), with
# room for parsing, compute buffers and the Python heap
RSS_GOAL_MIB = 2150
STORE_MIN_MIB, STORE_MAX_MIB = 128, 1024
# how often an unloaded draft model is considered again, in seconds
DRAFT_RECHECK_S = 60.0


def resident_mib() -> float:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _state_path(configured: str | None, default_name: str) -> Path | None:
    if configured == "":
        return None
    return Path(configured) if configured else registry.cache_dir() / default_name


class LocalEngine:
    """The models in this process (the Engine protocol, interface.py)."""

    def __init__(self, cfg: EngineConfig, log=lambda msg: print(msg, file=sys.stderr)):
        self.cfg, self.log = cfg, log
        self.warnings: list[str] = []
        self.records_margins = True
        self._told: set[str] = set()
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
        self.target.reuse_min = max(0, cfg.cache_reuse)
        self.fim: FimTokens | None = fim_tokens(self.target)
        if self.fim is None:
            self.warn(f"{target_path}: the vocabulary has no FIM tokens; completions use the prefix only")

        unknown = set(cfg.drafters) - set(DRAFTERS)
        if unknown:
            raise ValueError(f"unknown drafter(s) {', '.join(sorted(unknown))}: choose from {', '.join(DRAFTERS)}")
        self.draft: LlamaModel | None = None
        self.draft_decision = "no draft model configured" if cfg.draft_path in ("", "none") else \
            "the model drafter is not among the drafters" if "model" not in cfg.drafters else ""
        if not self.draft_decision:
            self.draft = self._load_draft(cfg, threads)
            if self.draft is None:
                self.draft_decision = "the draft model could not be loaded (see the warnings)"

        key = calibration_key(self.target, self.draft, threads, (cfg.n_gpu_layers, cfg.n_gpu_layers_draft))
        self.costs = calibrate(self.target, self.draft,
                               _state_path(cfg.calibration_path, "calibration.json"), key, log=log)
        self.stats = AcceptanceStats(_state_path(cfg.stats_path, "acceptance.json"))
        self.controller = Controller(self.costs, self.stats, cfg.draft_min, cfg.draft_max)
        self.ngram = NgramDrafter() if "ngram" in cfg.drafters else None
        self.template = TemplateDrafter(self.target.tokenize) if "template" in cfg.drafters else None
        self.rewrite = RewriteDrafter() if "rewrite" in cfg.drafters else None
        self._draft_path = self.draft.path if self.draft is not None else None
        self._draft_checked = 0.0
        if self.draft is not None:
            self.draft_decision = "resident: " + self._draft_reason()
            if cfg.draft_resident == DraftResidency.AUTO and not self.controller.model_can_pay():
                self.draft_decision = "unloaded: " + self._draft_reason()
                self.draft.close()
                self.draft = None
        self.model_drafter = ModelDrafter(self.draft) if self.draft else None

        self.prompt_tok_s = self._initial_prompt_speed()
        self.store_budget_mib = self._store_budget(cfg.kv_store_mib)
        self._attach_stores()

    # ---- the draft model's residency and the KV store -------------------------------------------------------

    def _draft_reason(self) -> str:
        c = self.costs
        if c.draft_token_s is None:
            return "its cost was not measured"
        best = self.controller.model_best_rate() * c.target(1)
        can = self.controller.model_can_pay()
        return (f"a draft token costs {c.draft() * 1e3:.0f} ms, one target token {c.target(1) * 1e3:.0f} ms "
                f"and a batch of 4 {c.target(4) * 1e3:.0f} ms here, so even {BEST_MODEL_ACCEPTANCE:.0%} accepted "
                f"drafts would decode at {best:.2f}x plain decoding: it "
                + ("can pay, and is used where it does" if can else
                   "cannot pay, and its memory is better spent on the KV store; it is loaded again when the "
                   "measured costs say it could pay"))

    def maybe_reload_draft(self) -> bool:
        """Load an unloaded draft model again once the measured costs say it could pay (a GPU that became
        free, a machine less loaded), and unload it again (`draftResident` auto) once they say it cannot even
        match plain decoding: measured costs drift while another job loads the CPU, and the gap between the
        two thresholds (RELOAD_MARGIN) keeps it from going back and forth. Called on the model thread; checked once a
        minute at most. True when it was loaded or unloaded."""
        now = time.monotonic()
        if self._draft_path is None or now - self._draft_checked < DRAFT_RECHECK_S:
            return False
        self._draft_checked = now
        if self.draft is not None:
            if (self.cfg.draft_resident != DraftResidency.AUTO
                    or self.controller.model_best_rate() >= self.controller.plain_rate()):
                return False
            with self.lock:
                self.draft.close()
                self._set_draft(None, "unloaded again")
            self.log(f"draft model {self._draft_path} unloaded again: the measured costs say it cannot pay")
            return True
        if not self.controller.model_worth_loading():
            return False
        with self.lock:
            draft = self._load_draft(self.cfg, self.cfg.threads(), self._draft_path)
            if draft is None:
                return False
            self._set_draft(draft, "reloaded")
        self.log(f"draft model {self._draft_path} loaded again: the measured costs say it can pay now")
        return True

    def _set_draft(self, draft: LlamaModel | None, decision: str) -> None:
        """The draft model (un)loaded again: its drafter, the decision shown in the stats, and the automatic
        store budget (what the draft's weights leave free) with the stores that follow it. Under the lock."""
        self.draft, self.model_drafter = draft, ModelDrafter(draft) if draft is not None else None
        self.draft_decision = f"{decision}: " + self._draft_reason()
        if self.cfg.kv_store_mib < 0:
            self.store_budget_mib = self._store_budget(-1)
        self._attach_stores()

    def _initial_prompt_speed(self) -> float:
        # a prompt chunk of 64 tokens runs at about the per-token rate of a 16-token batch, or a little better
        return 16 / self.costs.target(16) if 16 in self.costs.batch_s else 50.0

    def _store_budget(self, asked_mib: int) -> float:
        if asked_mib >= 0:
            return float(asked_mib)
        rss = resident_mib()
        return float(min(STORE_MAX_MIB, max(STORE_MIN_MIB, RSS_GOAL_MIB - rss))) if rss else STORE_MIN_MIB

    def _attach_stores(self) -> None:
        """One store for the target and, where the draft model is used, one for it too (its cache follows the
        target's), the budget shared in proportion to what a token of each costs."""
        models = [self.target]
        if self.draft is not None and self.cfg.speculation and self.controller.model_can_pay():
            models.append(self.draft)
        elif self.draft is not None:
            self.draft.store = None
        per_token = {id(m): m.kv_bytes_per_token() for m in models}
        total = sum(per_token.values()) or 1
        limit = self.store_budget_mib * 2 ** 20
        for m in models:
            share = int(limit * per_token[id(m)] / total)
            if m.store is None:
                m.store = KVStore(share)
            else:
                m.store.resize(share)

    def resize_store(self, asked_mib: int) -> None:
        """A new budget for the KV store (a setting changed); the least recently used states go first."""
        with self.lock:
            self.store_budget_mib = self._store_budget(asked_mib) if asked_mib >= 0 else self.store_budget_mib
            self._attach_stores()

    def store_summary(self) -> dict:
        out = {"budget_bytes": int(self.store_budget_mib * 2 ** 20),
               "bytes": sum(m.store.nbytes for m in (self.target, self.draft) if m is not None and m.store),
               "target": self.target.store.summary() if self.target.store else None,
               "draft": self.draft.store.summary() if self.draft is not None and self.draft.store else None,
               "prompt_tok_s": round(self.prompt_tok_s, 1)}
        return out

    def cached(self, tokens: list[int]) -> int:
        """How many leading tokens of a prompt the target's live cache or its store would serve."""
        return self.target.cached_prefix(tokens)

    def prompt_seconds(self, tokens: int) -> float:
        """What evaluating this many prompt tokens is expected to take, at the speed measured lately."""
        return tokens / self.prompt_tok_s if self.prompt_tok_s > 0 else 0.0

    def _observe_prompt(self, tokens: int, seconds: float) -> None:
        # only real evaluations of some length; a single odd sample moves the estimate at most by half
        if tokens >= 32 and seconds >= 0.1:
            rate = min(max(tokens / seconds, self.prompt_tok_s / 2), self.prompt_tok_s * 2)
            self.prompt_tok_s += 0.3 * (rate - self.prompt_tok_s)

    def _file_changes(self) -> list[str]:
        """Model files that changed on disk since loading. The weights are in memory, so this engine goes on
        unharmed; the next load of the same paths is what would fail."""
        out = []
        for m in (self.target, self.draft):
            if m is not None and (change := m.file_change()):
                out.append(f"the {m.name} model file {m.path} {change} while loaded; completions go on from the "
                           f"copy in memory, but a restart or a model change will need a good file")
        return out

    def notices(self) -> list[str]:
        """Messages for the user that came up since the last call (a model file changed on disk)."""
        new = [m for m in self._file_changes() if m not in self._told]
        self._told.update(new)
        return new

    def tune(self, speculation: bool, draft_min: int, draft_max: int, kv_store_mib: int, cache_reuse: int) -> None:
        """Settings that take effect without loading the models again."""
        self.cfg.speculation = speculation
        # cfg as well: what a prompt may take of the context is counted from cfg.draft_max
        self.cfg.draft_min, self.cfg.draft_max = draft_min, draft_max
        self.controller.draft_min, self.controller.draft_max = draft_min, draft_max
        self.resize_store(kv_store_mib)
        for m in (self.target, self.draft):
            if m is not None:
                m.reuse_min = cache_reuse

    def loaded(self) -> str:
        """What was loaded, for the progress shown while the server starts."""
        return (f"models loaded ({self.target.path}{', draft ' + self.draft.path if self.draft else ', no draft'}); "
                f"draft model {self.draft_decision}; KV store {self.store_budget_mib:.0f} MiB")

    def summary(self) -> dict:
        return {}

    def warn(self, msg: str) -> None:
        self.warnings.append(msg)
        self.log(f"warning: {msg}")

    def _load_draft(self, cfg: EngineConfig, threads: int, path: str | None = None) -> LlamaModel | None:
        path = path or cfg.draft_path or str(registry.default_path(registry.DEFAULT_DRAFT))
        try:
            registry.verify_model_file(path)
            draft = LlamaModel(path, n_ctx=cfg.n_ctx, n_threads=threads,
                               n_gpu_layers=cfg.n_gpu_layers_draft, name="draft")
        except ModelFileError as e:
            self.warn(f"draft model unusable, running target-only: {e}")
            return None
        draft.reuse_min = max(0, cfg.cache_reuse)
        why = incompatibility(self.target, draft)
        if why:
            draft.close()
            self.warn(f"draft model {path} cannot draft for {self.target.path}: {why}; running target-only")
            return None
        return draft

    def tokenize(self, text: str, special: bool = False) -> list[int]:
        return self.target.tokenize(text, special)

    def generate(self, req: GenerationRequest, cancel: threading.Event | None = None) -> Generation:
        if not self.cfg.speculation:
            req.speculative = False
        with self.lock:
            gen = generate(self.target, self.controller, req, cancel, self.ngram, self.model_drafter,
                           self.template, self.rewrite)
        self._observe_prompt(gen.prompt_computed, gen.prompt_s)
        self.maybe_reload_draft()
        return gen

    def prewarm(self, tokens: list[int], cancel: threading.Event | None = None, draft: bool = False,
                keep: int = 0) -> int:
        """Evaluate a prompt ahead of its request, in the draft model too where it may be used (or `draft`);
        its first `keep` tokens go to the KV store when a later prompt overwrites them. Returns the target
        tokens evaluated; a cancel keeps what was evaluated before it."""
        with self.lock:
            before = self.target.counters.evaluated
            t0 = time.perf_counter()
            try:
                try:
                    self.target.prefill(tokens, cancel=cancel, keep=keep)
                finally:
                    evaluated = self.target.counters.evaluated - before
                    self._observe_prompt(evaluated, time.perf_counter() - t0)
                if self.draft is not None and self.cfg.speculation and (draft or self.controller.model_can_pay()):
                    self.draft.prefill(tokens, cancel=cancel, keep=keep)
            except Cancelled:
                pass
            return evaluated

    def close(self) -> None:
        self.stats.save()
        for m in (self.draft, self.target):
            if m is not None:
                m.close()
