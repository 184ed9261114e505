"""A name the user's change replaced, renamed where it is still used: a change that does more than rename (a
parameter given a new type and a new name, `boolean serializeLongsAsString` -> `LongSerializationPolicy
longSerializationPolicy`) still replaces one name by another in the same place; where the old name is gone from
the changed lines but tree-sitter finds it used elsewhere, those uses get the new one. context/repeats.py covers the
change that is nothing but the rename."""
from __future__ import annotations

import difflib
import re

from ..edits import Hunk
from ..usages import uses
from .base import Candidate, cluster, make, nearest_first

NAME = re.compile(r"[A-Za-z_]\w*")
MIN_NAME = 3


def substitutions(hunk: Hunk) -> list[tuple[str, str]]:
    """(old name, new name) pairs the change made in one place, where the old name is gone from its new lines and
    the new one was not in its old lines."""
    old_text, new_text = "\n".join(hunk.old), "\n".join(hunk.new)
    a, b = NAME.findall(old_text), NAME.findall(new_text)
    gone, came = set(a) - set(b), set(b) - set(a)
    out = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag != "replace" or i2 - i1 != j2 - j1:
            continue
        for x, y in zip(a[i1:i2], b[j1:j2]):
            if x in gone and y in came and len(x) >= MIN_NAME and (x, y) not in out:
                out.append((x, y))
    return out


def find(text: str, recent: list[Hunk], cursor_line: int, language: str) -> list[Candidate]:
    hunk = recent[-1]
    if not hunk.old or not hunk.new:
        return []
    subs = substitutions(hunk)
    if len(subs) != 1:
        return []   # several names replaced at once: no telling which of them the uses mean
    old, new = subs[0]
    lines = text.split("\n")
    own = range(hunk.start, hunk.start + len(hunk.new))
    at = [n for n in uses(text, old, language) if n < len(lines) and n not in own]
    if not at:
        return []
    first = nearest_first(at, cursor_line)[0]
    chosen = cluster(at, first)
    pat = re.compile(rf"(?<!\w){re.escape(old)}(?!\w)")
    start, end = chosen[0], chosen[-1] + 1
    out = [pat.sub(new, lines[n]) if n in chosen else lines[n] for n in range(start, end)]
    c = make(text, start, end, "".join(line + "\n" for line in out), "rename")
    return [c] if c is not None else []
