"""A changed signature and the calls that no longer match it: the user's change gave a function one more
parameter (or one less), and a call elsewhere still passes the old number of arguments; the candidate passes the
new parameter's name at its place (right where the caller has a value of that name, as a parameter passed on
often is), or drops the argument at the removed one's place. The same holds for a call the user changed: another
call of that function with the old number of arguments gets the same new argument."""
from __future__ import annotations

import re

from ..edits import Hunk
from .base import Candidate, make, nearest_first
from .siblings import TYPE_FIRST, _name

CALLEE = re.compile(r"([A-Za-z_]\w*)\s*\(")
DEFINES = re.compile(r"\b(def|func|fn|function)\b")


def args_at(line: str, at: int) -> tuple[list[str], int, int] | None:
    """The arguments of the parenthesised list opening at `at`, and the span inside its parentheses; None where
    the list does not close on this line."""
    depth, cur, out, quote = 0, [], [], None
    for i in range(at, len(line)):
        ch = line[i]
        if quote:
            cur.append(ch)
            if ch == quote and line[i - 1] != "\\":
                quote = None
            continue
        if ch in "\"'`":
            quote = ch
        if ch in "([{":
            depth += 1
            if depth == 1:
                continue
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                out.append("".join(cur))
                items = [] if len(out) == 1 and not out[0].strip() else out
                return items, at + 1, i
        if depth == 1 and ch == ",":
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    return None


def _calls(line: str) -> list[tuple[str, list[str], int, int]]:
    out = []
    for m in CALLEE.finditer(line):
        got = args_at(line, m.end() - 1)
        if got is not None:
            out.append((m.group(1), *got))
    return out


def changed_call(hunk: Hunk, language: str) -> tuple[str, int, int, str, bool] | None:
    """(function, old arity, index of the argument added or removed, the argument added, whether a definition
    changed) for a one-line change that added or removed one argument or parameter; else None."""
    if len(hunk.old) != 1 or len(hunk.new) != 1:
        return None
    old, new = hunk.old[0], hunk.new[0]
    before = {name: args for name, args, _, _ in _calls(old)}
    for name, args, _, _ in _calls(new):
        was = before.get(name)
        if was is None or abs(len(args) - len(was)) != 1:
            continue
        strip_a, strip_b = [a.strip() for a in was], [a.strip() for a in args]
        longer, shorter = (strip_b, strip_a) if len(args) > len(was) else (strip_a, strip_b)
        k = next((i for i in range(len(shorter)) if longer[i] != shorter[i]), len(shorter))
        if longer[:k] + longer[k + 1:] != shorter:
            continue
        defines = bool(DEFINES.search(new)) or (language in TYPE_FIRST and new.rstrip().endswith("{")
                                               and "=" not in new and "return" not in new)
        added = ""
        if len(args) > len(was):
            added = (_name(strip_b[k], language) or "") if defines else strip_b[k]
            if not added:
                continue
        return name, len(was), k, added, defines
    return None


def find(text: str, recent: list[Hunk], cursor_line: int, language: str) -> list[Candidate]:
    hunk = recent[-1]
    got = changed_call(hunk, language)
    if got is None:
        return []
    name, arity, k, added, _ = got
    lines = text.split("\n")
    own = range(hunk.start, hunk.start + len(hunk.new))
    places = {}
    for n, line in enumerate(lines):
        if n in own or DEFINES.search(line):
            continue
        for callee, args, lo, hi in _calls(line):
            if callee == name and len(args) == arity:
                places.setdefault(n, (args, lo, hi))
    if not places:
        return []
    n = nearest_first(list(places), cursor_line)[0]
    args, lo, hi = places[n]
    if added:
        sep = args[0][:len(args[0]) - len(args[0].lstrip())] if args else ""
        new_args = args[:k] + [(" " if k else sep) + added] + args[k:]
        if k == 0 and len(new_args) > 1:
            new_args[1] = " " + new_args[1].lstrip()
    else:
        new_args = args[:k] + args[k + 1:]
        if k == 0 and new_args:
            new_args[0] = new_args[0].lstrip()
    line = lines[n]
    c = make(text, n, n + 1, line[:lo] + ",".join(new_args) + line[hi:] + "\n", "call")
    return [c] if c is not None else []
