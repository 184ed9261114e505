"""Fitting a prompt into the engine's context: the room a generation leaves its prompt, and the least trimmed
version of a prompt that fits it. A prompt that does not fit would be the engine's ContextFullError at every ask;
a builder trims its context instead (in the order it says) and gives up where even the most trimmed one does not
fit."""
from __future__ import annotations

from typing import Callable, TypeVar

T = TypeVar("T")


def prompt_room(n_ctx: int, max_tokens: int, draft_max: int) -> int:
    """The prompt tokens a generation of up to `max_tokens` may have: the speculative loop needs room for a whole
    draft past its last output token and the one it verifies with (engine/speculative.py checks the same)."""
    return n_ctx - max_tokens - draft_max - 1


def fit(build: Callable[[int], T], steps: int, tokens: Callable[[T], list[int]], room: int
        ) -> tuple[T, list[int]] | None:
    """`build(k)`, the prompt with its first k trimming steps taken (0 <= k <= steps, each step shorter), with
    the fewest steps whose tokens fit `room`, and its tokens; None where `build(steps)` does not fit either.
    Found by bisection: a prompt is tokenized a few times, not once a step."""
    seen: dict[int, list[int]] = {}

    def size(k: int) -> int:
        if k not in seen:
            seen[k] = tokens(build(k))
        return len(seen[k])

    if size(0) <= room:
        return build(0), seen[0]
    if steps <= 0 or size(steps) > room:
        return None
    lo, hi = 0, steps      # size(lo) > room >= size(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if size(mid) <= room:
            hi = mid
        else:
            lo = mid
    return build(hi), seen[hi]
