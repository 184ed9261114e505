"""Each suite's development data in two halves, split by problem or project (never by task: the tasks of one
problem share its code, so a rule tuned on some of them has seen the others). Tune on one half, report every
rule's gain on the other."""
from __future__ import annotations

import hashlib

HALVES = ("tune", "confirm", "all")


def half_of(key: str) -> str:
    """The half a problem or project belongs to: a hash of its key, so it does not move when data is added."""
    return "tune" if hashlib.sha256(key.encode("utf-8")).digest()[0] % 2 == 0 else "confirm"


def in_half(key: str, half: str) -> bool:
    if half not in HALVES:
        raise ValueError(f"unknown half {half!r}; one of {', '.join(HALVES)}")
    return half == "all" or half_of(key) == half
