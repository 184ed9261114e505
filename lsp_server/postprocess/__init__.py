"""Turns raw model text into what the editor shows. One filter per module; each is a pure function
(completion, prefix, suffix) -> completion, knows nothing of the engine, and has golden cases in tests."""
from __future__ import annotations

from . import drop_closer_overlap, trim_trailing_blank

FILTERS = (trim_trailing_blank.apply, drop_closer_overlap.apply)


def run(completion: str, prefix: str, suffix: str) -> str:
    for f in FILTERS:
        completion = f(completion, prefix, suffix)
    return completion
