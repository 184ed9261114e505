"""Candidate next edits from the code's structure: cheap guesses at the edit that follows the user's change, each
found by a small module from the text (and its syntax tree) alone, for the target to verify before anything is
shown (service/next_edit.py). A candidate is a replacement of whole lines of the current text.

The kinds, each its own module:

- `repeat`: the user's replacement made again where the old text still stands (context/repeats.py);
- `pattern`: the same small changes on lines of the same shape (`(_ formBinding)` -> `(formBinding)` made on one
  receiver, proposed on the next), each line's change a few replacements that explain it wholly;
- `lines`: a line the user inserted (an annotation, a derive) inserted again before the next line of the same
  shape; a line deleted deleted again where it stands elsewhere;
- `renames`: a name the user's bigger change replaced (a parameter renamed with its type) renamed at its
  remaining uses;
- `siblings`: a new field, parameter or constant listed where its siblings are listed (a struct literal, a
  constructor, a switch), written by analogy with the nearest sibling's line;
- `calls`: a function's parameters changed, and a call that still passes the old number of arguments.

Candidates are ordered: the nearest below the cursor first, the kinds found from the user's own text before the
guessed ones. None of them is shown unless the target, asked to fill the candidate's lines, writes the same."""
from __future__ import annotations

from dataclasses import dataclass

from ..edits import Hunk, keep_lines

MAX_CANDIDATES = 4   # verified per ask, at most (each costs the target one prompt and one batch)


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


def find(text: str, recent: list[Hunk], cursor_line: int, language: str,
         limit: int = MAX_CANDIDATES) -> list[Candidate]:
    """The candidates for the edit after `recent` (oldest first, the last being the user's latest change), best
    first, at most `limit`, none overlapping another."""
    from . import calls, lines, pattern, renames, repeat, siblings   # each imports this module for Candidate
    if not recent:
        return []
    found: list[Candidate] = []
    for finder in (repeat.find, pattern.find, renames.find, lines.find, siblings.find, calls.find):
        try:
            found.extend(finder(text, recent, cursor_line, language))
        except (ValueError, IndexError, RecursionError):   # a guess that cannot read this text is no guess
            continue
    out: list[Candidate] = []
    for c in found:
        if any(_overlap(c, o) or (c.start, c.end, c.text) == (o.start, o.end, o.text) for o in out):
            continue
        out.append(c)
        if len(out) >= limit:
            break
    return out


def _overlap(a: Candidate, b: Candidate) -> bool:
    return a.start < max(b.end, b.start + 1) and b.start < max(a.end, a.start + 1)


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
