"""The same small changes on lines of the same shape: where each line of the user's change is explained wholly by a
few replacements of short pieces (`(_ formBinding)` -> `(formBinding)`, `'''` -> `\"\"\"`, `>= 40` -> `< 40` with
`cfg=` -> `cfg=no_`), the same replacements are made on the lines where those pieces still stand.

A line's pieces are the spans a token diff finds between its old and new text, each widened by the tokens around
it until it is long enough to say where it goes (a piece of one or two characters, `_` or `>=`, stands
everywhere). context/repeats.py covers the change that is one replacement of whole words; this covers the ones it
cannot (several pieces, a piece inside a word's neighbourhood)."""
from __future__ import annotations

import difflib
import re

from ..edits import Hunk
from .base import Candidate, cluster, make, nearest_first

# sub-word tokens (`no_btreemap` is `no`, `_`, `btreemap`): a change inside a name (a prefix added) is a piece of its own
TOKEN = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+|_|\s+|[^\w\s]")
MIN_PIECE = 3        # non-space characters an old piece needs (with its widening) to say where it goes
MAX_PIECES = 4       # a line changed in more places is not a pattern
MAX_WIDEN = 3        # tokens a piece is widened by on each side, at most


def _solid(s: str) -> int:
    return len(s.replace(" ", "").replace("\t", ""))


def _tokens(line: str) -> list[str]:
    out = TOKEN.findall(line)
    if "".join(out) != line:   # characters the tokens do not cover (non-ASCII letters): no pattern of this line
        raise ValueError("untokenizable line")
    return out


def pieces(old: str, new: str) -> list[tuple[str, str, bool, bool]] | None:
    """The replacements that turn `old` into `new`, each widened to at least MIN_PIECE characters, and whether a
    word character stands right before and after it in `old` (where it does, the piece matches inside a name);
    None where the line changed in too many places."""
    try:
        a, b = _tokens(old), _tokens(new)
    except ValueError:
        return None
    ops = [op for op in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes() if op[0] != "equal"]
    if not ops or len(ops) > MAX_PIECES:
        return None
    out = []
    for _, i1, i2, j1, j2 in ops:
        # text put in or taken out is placed by what stands on both sides of it (`orders` alone stands everywhere,
        # `orders)` is where a parameter went in); a replacement is placed by its own old text
        left = int(i1 == i2 or j1 == j2) if i1 > 0 else 0
        right = int(i1 == i2 or j1 == j2) if i2 < len(a) else 0
        while True:
            o = "".join(a[i1 - left:i2 + right])
            if _solid(o) >= MIN_PIECE or left + right >= 2 * MAX_WIDEN:
                break
            # widen towards the side with a token to take (the left first: `cfg=` says more than `btreemap`)
            if i1 - left > 0 and (left <= right or i2 + right >= len(a)):
                left += 1
            elif i2 + right < len(a):
                right += 1
            else:
                break
        o = "".join(a[i1 - left:i2 + right])
        n = "".join(a[i1 - left:i1]) + "".join(b[j1:j2]) + "".join(a[i2:i2 + right])
        if _solid(o) < MIN_PIECE or not o.strip():
            return None
        inside_left = i1 - left > 0 and _wordy(a[i1 - left - 1][-1]) and _wordy(o[0])
        inside_right = i2 + right < len(a) and _wordy(a[i2 + right][0]) and _wordy(o[-1])
        out.append((o, n, inside_left, inside_right))
    return out


def _wordy(c: str) -> bool:
    return c.isalnum() or c == "_"


def _pattern(piece: str, inside_left: bool = False, inside_right: bool = False) -> re.Pattern:
    left = r"(?<!\w)" if _wordy(piece[0]) and not inside_left else ""
    right = r"(?!\w)" if _wordy(piece[-1]) and not inside_right else ""
    return re.compile(left + re.escape(piece) + right)


def rewrite(line: str, reps: list[tuple[re.Pattern, str]]) -> str:
    for pat, new in reps:
        line = pat.sub(lambda m: new, line)
    return line


def replacements(hunk: Hunk) -> list[tuple[re.Pattern, str]] | None:
    """The pieces of a change of as many lines as it had, where they explain every changed line; else None."""
    if not hunk.old or len(hunk.old) != len(hunk.new):
        return None
    found: dict[str, tuple[str, bool, bool]] = {}
    for a, b in zip(hunk.old, hunk.new):
        if a == b:
            continue
        ps = pieces(a, b)
        if ps is None:
            return None
        for o, n, il, ir in ps:
            if found.setdefault(o, (n, il, ir))[0] != n:
                return None
    if not found:
        return None
    reps = [(_pattern(o, il, ir), n) for o, (n, il, ir) in found.items()]
    for a, b in zip(hunk.old, hunk.new):
        if rewrite(a, reps) != b:
            return None   # the pieces do not explain the line (a piece stood twice, or overlapped another)
    return reps


def find(text: str, recent: list[Hunk], cursor_line: int, language: str) -> list[Candidate]:
    hunk = recent[-1]
    reps = replacements(hunk)
    if reps is None:
        return []
    lines = text.split("\n")
    own = range(hunk.start, hunk.start + len(hunk.new))
    at = [n for n, line in enumerate(lines) if n not in own and any(p.search(line) for p, _ in reps)]
    if not at:
        return []
    first = nearest_first(at, cursor_line)[0]
    chosen = cluster(at, first)
    start, end = chosen[0], chosen[-1] + 1
    new = [rewrite(lines[n], reps) if n in chosen else lines[n] for n in range(start, end)]
    c = make(text, start, end, "".join(line + "\n" for line in new), "pattern")
    return [c] if c is not None else []
