"""The user's replacement made again where the old text still stands (a rename, a fixed typo, a literal made a
constant): context/repeats.py finds it; here it is one candidate among the others."""
from __future__ import annotations

from ..edits import Hunk
from ..repeats import repeat
from .base import Candidate, make


def find(text: str, recent: list[Hunk], cursor_line: int, language: str) -> list[Candidate]:
    found = repeat(text, recent[-1], language, cursor_line)
    if found is None:
        return []
    c = make(text, found[0], found[1], found[2], "repeat")
    return [c] if c is not None else []
