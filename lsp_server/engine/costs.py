"""What verifying n tokens in one target batch costs on this machine, and what a draft-model token costs.

Measured once at start-up (cached per model file, thread count and offload) and then kept current from the
timings of real steps, because this machine is shared and its speed drifts.
"""
from __future__ import annotations

import json
import os
import platform
import time
from dataclasses import dataclass, field
from pathlib import Path

from .llama import LlamaModel

CALIBRATION_SIZES = (1, 2, 3, 4, 5, 6, 8, 12, 16)
CALIBRATION_CONTEXT = 192
SCALE_EMA = 0.1    # how fast the curve follows the machine's speed
SHAPE_EMA = 0.01   # how fast one size's own measurements reshape the curve


@dataclass
class CostModel:
    """T(n) = scale * shape(n): the shape of the curve comes from calibration, the scale follows the
    machine's current speed, so a size that is rarely tried does not keep a stale cost."""
    batch_s: dict[int, float] = field(default_factory=dict)   # shape: seconds for a batch of n, as measured
    # seconds for one draft-model token at the curve's scale 1 (draft() is its cost now): it moves with the
    # machine's speed as the target's does, so that a draft model unloaded in a fast minute is not judged, in a
    # slow one, by its stale fast cost against the target's slow one (the decision is the ratio of the two, which
    # the machine's load hardly moves; the other cause of the loads and unloads seen here: controller.RELOAD_MARGIN)
    draft_token_s: float | None = None
    scale: float = 1.0

    def _shape(self, n: int) -> float:
        sizes = sorted(self.batch_s)
        if n in self.batch_s:
            return self.batch_s[n]
        if n >= sizes[-1]:  # extrapolate with the slope of the last segment
            a, b = sizes[-2], sizes[-1]
            return self.batch_s[b] + (n - b) * (self.batch_s[b] - self.batch_s[a]) / (b - a)
        lo = max(s for s in sizes if s < n)
        hi = min(s for s in sizes if s > n)
        w = (n - lo) / (hi - lo)
        return self.batch_s[lo] * (1 - w) + self.batch_s[hi] * w

    def target(self, n: int) -> float:
        return self.scale * self._shape(n)

    def draft(self) -> float | None:
        return None if self.draft_token_s is None else self.scale * self.draft_token_s

    def observe_target(self, n: int, seconds: float) -> None:
        shape = self._shape(n)
        self.scale += SCALE_EMA * (seconds / shape - self.scale)
        self.batch_s[n] = (1 - SHAPE_EMA) * shape + SHAPE_EMA * seconds / self.scale
        self._keep_monotone()

    def observe_draft(self, seconds_per_token: float) -> None:
        old, now = self.draft_token_s, seconds_per_token / self.scale
        self.draft_token_s = now if old is None else (1 - SCALE_EMA) * old + SCALE_EMA * now

    def _keep_monotone(self) -> None:
        # a noisy sample must not make a bigger batch look cheaper than a smaller one
        prev = 0.0
        for n in sorted(self.batch_s):
            prev = self.batch_s[n] = max(self.batch_s[n], prev)

    def snapshot(self) -> "CostModel":
        return CostModel(dict(self.batch_s), self.draft_token_s, self.scale)

    def restore(self, snap: "CostModel") -> None:
        self.batch_s, self.draft_token_s, self.scale = dict(snap.batch_s), snap.draft_token_s, snap.scale

    def to_json(self) -> dict:
        return {"batch_s": {str(k): self.target(k) for k in sorted(self.batch_s)},
                "draft_token_s": self.draft()}

    @classmethod
    def from_json(cls, d: dict) -> "CostModel":
        return cls({int(k): float(v) for k, v in d["batch_s"].items()}, d.get("draft_token_s"))


def _time_batches(m: LlamaModel, sizes, reps: int, depth: int = CALIBRATION_CONTEXT,
                  every_row: bool = True) -> dict[int, float]:
    """Seconds for a batch of n tokens after `depth` tokens, with every row's logits read (a verify batch) or
    only the last one's (a prompt's or a draft model's catch-up)."""
    base = [(i * 7919) % 5000 + 200 for i in range(depth)]  # arbitrary ordinary tokens
    m.reset()
    m.decode(base)
    out = {}
    for n in sizes:
        samples = []
        for r in range(reps):
            toks = [(base[(r + i) % len(base)] + 13) for i in range(n)]
            t0 = time.perf_counter()
            m.decode(toks, all_logits=every_row)
            for i in range(n if every_row else 1):  # the verify loop reads every row
                m.logits(i if every_row else -1).argmax()
            samples.append(time.perf_counter() - t0)
            m.truncate(len(base))
        out[n] = min(samples)   # the least disturbed sample: this machine is shared
    m.reset()
    return out


def measure_curve(target: LlamaModel, draft: LlamaModel | None, depth: int, reps: int = 3,
                  sizes=tuple(range(1, 18))) -> tuple[dict[int, float], dict[int, float]]:
    """T(n) of the target at a depth as calibration measures it (every row read, as verification does), and the
    draft model's batches (only the last row read, as its catch-up does), for a bench to set beside what it
    measured side by side."""
    return (_time_batches(target, sizes, reps, depth),
            _time_batches(draft, sizes[:16], reps, depth, every_row=False) if draft is not None else {})


def calibration_key(target: LlamaModel, draft: LlamaModel | None, n_threads: int, gpu: tuple) -> str:
    def ident(m):
        st = os.stat(m.path)
        return f"{os.path.basename(m.path)}:{st.st_size}:{st.st_mtime_ns}"
    # the host name too: a cache folder on a shared home must not carry one machine's costs to another
    return "|".join([ident(target), ident(draft) if draft else "-", f"t{n_threads}", f"gpu{gpu}",
                     platform.machine(), platform.node()])


def calibrate(target: LlamaModel, draft: LlamaModel | None, cache: Path | None, key: str,
              reps: int = 3, log=lambda s: None) -> CostModel:
    if cache and cache.exists():
        try:
            data = json.loads(cache.read_text())
            if key in data:
                return CostModel.from_json(data[key])
        except (OSError, ValueError, KeyError):
            pass
    log("measuring batch costs on this machine (once)...")
    t0 = time.perf_counter()
    costs = CostModel(_time_batches(target, CALIBRATION_SIZES, reps))
    if draft is not None:
        costs.draft_token_s = _time_batches(draft, (1,), reps + 2)[1]
    costs._keep_monotone()
    log(f"measured in {time.perf_counter() - t0:.1f}s: T(1)={costs.batch_s[1] * 1e3:.0f}ms "
        f"T(4)={costs.batch_s[4] * 1e3:.0f}ms T(16)={costs.batch_s[16] * 1e3:.0f}ms"
        + (f", draft token {costs.draft_token_s * 1e3:.0f}ms" if costs.draft_token_s else ""))
    if cache:
        try:
            data = json.loads(cache.read_text()) if cache.exists() else {}
        except (OSError, ValueError):
            data = {}
        data[key] = costs.to_json()
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps(data, indent=1))
    return costs
