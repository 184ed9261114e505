"""How the engine is configured, with every default and bound of it written once: the server's Settings and the
CLI take theirs from here (the engine cannot read Settings: it is a layer below the service)."""
from __future__ import annotations

import os
from dataclasses import dataclass
from enum import StrEnum


class EngineKind(StrEnum):
    """Where the models run (setting `engine`); a str, so settings files and the wire keep the plain values."""
    LOCAL = "local"      # in the server's own process
    SHARED = "shared"    # in one engine process every window's server connects to


class GpuMode(StrEnum):
    """Where the models' layers run (setting `gpu`)."""
    AUTO = "auto"    # every layer of both models on the GPU where the llama.cpp build has a GPU backend
    OFF = "off"      # on the CPU


class DraftResidency(StrEnum):
    """Whether a draft model that cannot pay stays loaded."""
    # unloaded after calibration where even at its best it cannot pay on this machine (its memory goes to the KV
    # store), loaded again when the measured costs say it could
    AUTO = "auto"
    ALWAYS = "always"    # it stays: benchmarks that compare a fixed draft


# "rewrite" drafts only for requests that rewrite a region (a next edit: GenerationRequest.rewrite_source)
DRAFTERS = ("ngram", "template", "model", "rewrite")

# the shared engine process exits after this long without a window; long enough that closing the last window
# and opening another does not load the models again
IDLE_S = 600.0


def check_draft_bounds(draft_min: int, draft_max: int) -> None:
    """ValueError unless 0 <= draft_min <= draft_max."""
    if draft_min < 0 or draft_max < 0 or draft_min > draft_max:
        raise ValueError(f"draft limits must satisfy 0 <= draftMin <= draftMax (got {draft_min}, {draft_max})")


@dataclass
class EngineConfig:
    target_path: str | None = None        # None: the default target from the model cache
    draft_path: str | None = None         # None: the default draft; "" or "none": no draft model
    n_ctx: int = 4096
    n_threads: int = 0                    # 0: every core
    n_gpu_layers: int = 0                 # target layers offloaded (needs a GPU build; machine.offload_layers)
    n_gpu_layers_draft: int = 0
    draft_min: int = 0
    draft_max: int = 16
    speculation: bool = True
    drafters: tuple[str, ...] = DRAFTERS
    stats_path: str | None = None         # None: in the cache folder; "" : do not persist
    calibration_path: str | None = None   # None: in the cache folder; "": measure every start
    kv_store_mib: int = -1                # RAM for stored KV states; -1: what keeps the process near RSS_GOAL_MIB
    draft_resident: DraftResidency = DraftResidency.AUTO
    cache_reuse: int = 0                  # >0: reuse cached runs of this many tokens at shifted positions

    def __post_init__(self):
        # the shared engine's process gets its configuration as JSON, where the residency is a plain string
        self.draft_resident = DraftResidency(self.draft_resident)

    def threads(self) -> int:
        return self.n_threads or os.cpu_count() or 1
