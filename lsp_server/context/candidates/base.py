"""What every candidate module shares: a candidate (a replacement of whole lines of the current text), how one
is made, and the order and grouping of the places a change is repeated at."""
from __future__ import annotations

from dataclasses import dataclass

from ..edits import keep_lines


@dataclass(frozen=True)
class Candidate:
    start: int           # the first replaced line of the current text (0-based)
    end: int             # the line after the last (start == end: an insertion before `start`)
    text: str            # the new lines, each ending in "\n"
    kind: str            # the module that found it
    old_text: str = ""   # the lines replaced

    def applied(self, text: str) -> str:
        lines = keep_lines(text)
        if lines and not lines[-1].endswith("\n") and self.end >= len(lines):
            lines[-1] += "\n"
        return "".join(lines[:self.start]) + self.text + "".join(lines[self.end:])


def make(text: str, start: int, end: int, new_text: str, kind: str) -> Candidate | None:
    """A candidate of whole lines, or None where it changes nothing or lies outside the text."""
    lines = keep_lines(text)
    if not 0 <= start <= end <= len(lines):
        return None
    old = "".join(lines[start:end])
    if old.rstrip("\n") == new_text.rstrip("\n"):
        return None
    return Candidate(start, end, new_text, kind, old)


# occurrences this many unchanged lines apart, or fewer, are one edit (as a commit's hunks are joined); those
# further down are the next edit's, proposed once this one is taken
GAP = 2


def cluster(lines_at: list[int], first: int, gap: int = GAP) -> list[int]:
    """The occurrences from `first` on, down to the first gap of more than `gap` lines without one."""
    out = [first]
    for n in sorted(x for x in lines_at if x > first):
        if n - out[-1] > gap + 1:
            break
        out.append(n)
    return out


def nearest_first(lines_at: list[int], cursor_line: int) -> list[int]:
    """Line numbers ordered as the next edit is looked for: those at or below the cursor first (nearest first),
    then those above it (nearest first)."""
    below = sorted(n for n in lines_at if n >= cursor_line)
    above = sorted((n for n in lines_at if n < cursor_line), reverse=True)
    return below + above
