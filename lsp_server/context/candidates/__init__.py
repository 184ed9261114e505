"""Candidate next edits from the code's structure: cheap guesses at the edit that follows the user's change, each
found by a small module from the text (and its syntax tree) alone, for the target to verify before anything is
shown (service/edit_check.py). A candidate is a replacement of whole lines of the current text.

The kinds, each its own module:

- `repeat`: the user's replacement made again where the old text still stands (context/repeats.py);
- `pattern`: the same small changes on lines of the same shape (`(_ formBinding)` -> `(formBinding)` made on one
  receiver, proposed on the next), each line's change a few replacements that explain it wholly;
- `lines`: a line the user inserted (an annotation, a derive) inserted again before the next line of the same
  shape; a line deleted deleted again where it stands elsewhere;
- `renames`: a name the user's bigger change replaced (a parameter renamed with its type) renamed at its
  remaining uses;
- `unused`: the user's change took out a name's last use, and its definition goes too;
- `siblings`: a new field, parameter, constant or import listed where its siblings are listed (a struct literal,
  a constructor, a switch, an export list), written by analogy with the nearest sibling's line;
- `calls`: a function's parameters changed, and a call that still passes the old number of arguments.

Candidates are ordered: the nearest below the cursor first, the kinds found from the user's own text before the
guessed ones. None of them is shown unless the target, asked to fill the candidate's lines, writes the same."""
from __future__ import annotations

from typing import Callable

from ..edits import Hunk
from . import calls, lines, pattern, renames, repeat, siblings, unused
from .base import Candidate, cluster, make, nearest_first

MAX_CANDIDATES = 4   # verified per ask, at most (each costs the target one prompt and one batch)
FINDERS = (repeat.find, pattern.find, renames.find, lines.find, unused.find, siblings.find, calls.find)


def find(text: str, recent: list[Hunk], cursor_line: int, language: str,
         limit: int = MAX_CANDIDATES, admit: Callable[[Candidate], bool] | None = None) -> list[Candidate]:
    """The candidates for the edit after `recent` (oldest first, the last being the user's latest change), best
    first, at most `limit`, none overlapping another. `admit`: a filter applied before the overlaps are settled,
    so that a candidate it turns away does not keep out another at the same lines."""
    if not recent:
        return []
    found: list[Candidate] = []
    for finder in FINDERS:
        try:
            found.extend(finder(text, recent, cursor_line, language))
        except (ValueError, IndexError, RecursionError):   # a guess that cannot read this text is no guess
            continue
    out: list[Candidate] = []
    for c in found:
        if any(_overlap(c, o) or (c.start, c.end, c.text) == (o.start, o.end, o.text) for o in out):
            continue
        if admit is not None and not admit(c):   # asked only of those that would be kept (it may parse the file)
            continue
        out.append(c)
        if len(out) >= limit:
            break
    return out


def _overlap(a: Candidate, b: Candidate) -> bool:
    return a.start < max(b.end, b.start + 1) and b.start < max(a.end, a.start + 1)




__all__ = ["Candidate", "FINDERS", "MAX_CANDIDATES", "cluster", "find", "make", "nearest_first"]
