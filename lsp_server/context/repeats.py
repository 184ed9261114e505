"""A change to repeat: where the user's last edit replaced one piece of text by another on each of its lines (a
rename, a fixed typo, a literal replaced by a constant), the next edit is often the same replacement where the
old text still stands (the suite's commits do it in every language). Found from the text alone, no model: the
service proposes it at once, through the same filters as a model's answer.

The piece is the differing middle of each old/new line pair (their common start and end left out), widened to
whole words so that `undefinitelly` -> `indefinitely` is one word, not `un` -> `i`; where it is an identifier,
its uses are tree-sitter's identifiers (not a word in a comment or a string), else every occurrence of the text
as whole words."""
from __future__ import annotations

import re

from .edits import Hunk
from .usages import IDENTIFIER, uses

MIN_PIECE = 3        # a shorter old piece (`+`, `1`) is too common to say where the change goes
WINDOW = 12          # the lines after the first occurrence whose occurrences the same edit changes too


def _word(c: str) -> bool:
    return c.isalnum() or c == "_"


def piece(old: str, new: str) -> tuple[str, str] | None:
    """The differing middle of a changed line, widened to whole words: (old piece, new piece)."""
    if old == new:
        return None
    lo = 0
    while lo < min(len(old), len(new)) and old[lo] == new[lo]:
        lo += 1
    hi = 0
    while hi < min(len(old), len(new)) - lo and old[-1 - hi] == new[-1 - hi]:
        hi += 1

    def first_is_word() -> bool:   # either middle starts with a word character
        return (lo < len(old) - hi and _word(old[lo])) or (lo < len(new) - hi and _word(new[lo]))

    def last_is_word() -> bool:    # either middle ends with one
        return (len(old) - hi - 1 >= lo and _word(old[len(old) - hi - 1])) or \
            (len(new) - hi - 1 >= lo and _word(new[len(new) - hi - 1]))

    while lo > 0 and _word(old[lo - 1]) and first_is_word():
        lo -= 1
    while hi > 0 and _word(old[len(old) - hi]) and last_is_word():
        hi -= 1
    a, b = old[lo:len(old) - hi], new[lo:len(new) - hi]
    return (a, b) if a.strip() else None


def replacement(hunk: Hunk) -> tuple[str, str] | None:
    """The one replacement every line of the hunk makes, or None (lines added or removed, different changes)."""
    if not hunk.old or len(hunk.old) != len(hunk.new):
        return None
    found = {p for a, b in zip(hunk.old, hunk.new) if a != b and (p := piece(a, b)) is not None}
    if len(found) != 1:
        return None
    old, new = found.pop()
    return (old, new) if len(old.strip()) >= MIN_PIECE else None


def _pattern(text: str) -> re.Pattern:
    left = r"(?<![\w])" if _word(text[0]) else ""
    right = r"(?![\w])" if _word(text[-1]) else ""
    return re.compile(left + re.escape(text) + right)


def repeat(text: str, hunk: Hunk, language: str, cursor_line: int) -> tuple[int, int, str] | None:
    """The same replacement where the old piece still stands: (first line, line after the last, new lines),
    the occurrences from the nearest one below the cursor (else above) and those within WINDOW lines after it."""
    rep = replacement(hunk)
    if rep is None:
        return None
    old, new = rep
    lines = text.split("\n")
    pat = _pattern(old)
    if IDENTIFIER.fullmatch(old):
        at = [n for n in uses(text, old, language) if n < len(lines)]
    else:
        at = [n for n, line in enumerate(lines) if pat.search(line)]
    at = [n for n in at if not hunk.start <= n < hunk.start + len(hunk.new)]
    if not at:
        return None
    below = [n for n in at if n >= cursor_line]
    first = below[0] if below else at[-1]
    chosen = [n for n in at if first <= n < first + WINDOW]
    start, end = chosen[0], chosen[-1] + 1
    out = [pat.sub(lambda m: new, lines[n]) if n in chosen else lines[n] for n in range(start, end)]
    return start, end, "".join(line + "\n" for line in out)
