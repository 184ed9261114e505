"""The draft model: greedy tokens from a small model of the same family, stopping when its confidence
drops or when the controller says one more token no longer pays."""
from __future__ import annotations

import time
from typing import Callable

import numpy as np

from ..llama import LlamaModel
from .base import Draft

CONFIDENCE_BUCKETS = (0.98, 0.9, 0.75, 0.5, 0.25, 0.0)


def confidence_bucket(p: float) -> str:
    for edge in CONFIDENCE_BUCKETS:
        if p >= edge:
            return f"p{int(edge * 100)}"
    return "p0"


class ModelDrafter:
    name = "model"

    def __init__(self, model: LlamaModel, p_min: float = 0.0):
        self.model, self.p_min = model, p_min

    def propose(self, ctx: list[int], max_len: int, keep_going: Callable[[Draft], bool], cancel=None,
                keep: int = 0) -> Draft:
        """Draft up to max_len tokens after ctx; `keep_going(draft)` decides after each token; the first `keep`
        tokens of ctx are worth keeping in the draft's KV store."""
        t0 = time.perf_counter()
        m = self.model
        m.prefill(ctx, keep=keep)
        draft = Draft(self.name)
        while len(draft.tokens) < max_len:
            logits = m.logits(-1)
            tok = int(np.argmax(logits))
            z = logits - logits[tok]
            p = 1.0 / float(np.exp(z).sum())
            if m.is_eog(tok) or p < self.p_min:
                break
            draft.tokens.append(tok)
            draft.buckets.append(confidence_bucket(p))
            draft.cost_s = time.perf_counter() - t0
            if len(draft.tokens) >= max_len or not keep_going(draft) or (cancel and cancel.is_set()):
                break
            m.decode([tok])
        draft.cost_s = time.perf_counter() - t0
        return draft
