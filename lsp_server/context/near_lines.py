"""The lines next to the cursor, read outward from it with str.find: a cursor's prefix and suffix in a large file
are megabytes each, and what the trigger, the prompt and the filters want of them is the cursor's line and the
first few lines above or below it. Splitting the rest of the file to find those cost tens of milliseconds per use
in a 4 MB file, several uses per keystroke."""
from __future__ import annotations

from typing import Callable, Iterator


def line_before(prefix: str) -> str:
    """The cursor's line, left of the cursor."""
    return prefix[prefix.rfind("\n") + 1:]


def line_after(suffix: str) -> str:
    """The cursor's line, right of the cursor."""
    end = suffix.find("\n")
    return suffix if end < 0 else suffix[:end]


def lines_below(suffix: str) -> Iterator[str]:
    """The lines after the cursor's line, top down."""
    start = suffix.find("\n") + 1
    while start:
        end = suffix.find("\n", start)
        yield suffix[start:] if end < 0 else suffix[start:end]
        start = end + 1


def lines_above(prefix: str) -> Iterator[str]:
    """The lines before the cursor's line, bottom up."""
    end = prefix.rfind("\n")
    while end >= 0:
        start = prefix.rfind("\n", 0, end)
        yield prefix[start + 1:end]
        end = start


def _has_text(line: str) -> bool:
    return bool(line.strip())


def first_below(suffix: str, keep: Callable[[str], bool] = _has_text) -> str | None:
    """The first line below the cursor's line that `keep` takes (by default: the first with text)."""
    return next((line for line in lines_below(suffix) if keep(line)), None)


def first_above(prefix: str, keep: Callable[[str], bool] = _has_text) -> str | None:
    """The nearest line above the cursor's line that `keep` takes (by default: the nearest with text)."""
    return next((line for line in lines_above(prefix) if keep(line)), None)


def tail_lines(prefix: str, n: int) -> str:
    """The last `n` lines of `prefix` (the cursor's line, left of the cursor, is the last): `"\\n".join(
    prefix.split("\\n")[-n:])` without the split."""
    start = len(prefix)
    for _ in range(n):
        start = prefix.rfind("\n", 0, start)
        if start < 0:
            return prefix
    return prefix[start + 1:]


def head_lines(suffix: str, n: int) -> str:
    """The first `n` lines of `suffix` (the cursor's line, right of the cursor, is the first)."""
    end = -1
    for _ in range(n):
        end = suffix.find("\n", end + 1)
        if end < 0:
            return suffix
    return suffix[:end]
