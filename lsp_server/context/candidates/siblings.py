"""A new member listed where its siblings are listed: the user added a parameter, a field or a constant beside
others (`path, domain string, sameSite http.SameSite, secure bool`), and elsewhere those siblings are listed a line
each (a struct literal `Domain: domain,`, an assignment `self.domain = domain`, a `case`); the new one goes after the
sibling it follows, written as that sibling's line with the sibling's name replaced by the new one (in the
spellings the line uses: `domain`, `Domain`, `DOMAIN`)."""
from __future__ import annotations

import os
import re

from ..edits import Hunk
from .base import Candidate, make, nearest_first

NAME = re.compile(r"[A-Za-z_]\w*")
# languages whose declarations put the type before the name (`int x`): the name is an item's last word
TYPE_FIRST = {"java", "c", "cpp", "csharp", "kotlin", "scala"}
KEYWORDS = {"const", "let", "var", "val", "final", "static", "public", "private", "protected", "readonly", "pub",
            "mut", "self", "this", "def", "func", "fn", "function", "return", "case", "type", "struct", "class",
            "import", "from", "export", "use", "package", "default", "as", "require"}
RUN = 2              # siblings on consecutive lines that make a list of them
REACH = 4            # lines either side of an added line whose names are its siblings


def _name(item: str, language: str) -> str | None:
    item = item.split("=")[0]
    words = [w for w in NAME.findall(item) if w not in KEYWORDS]
    if not words:
        return None
    return words[-1] if language in TYPE_FIRST else words[0]


def _items(line: str, at: int = 0) -> list[str]:
    """The comma-separated items of the line's outermost parenthesised list that ends after `at` (where the line
    was changed: a method's parameters, not its receiver's `(c *Context)`)."""
    depth, start, out, cur = 0, None, [], []
    for i, ch in enumerate(line):
        if ch in "([{":
            depth += 1
            if depth == 1 and ch == "(" and start is None:
                start = i
                continue
        elif ch in ")]}":
            depth -= 1
            if depth == 0 and start is not None:
                if i < at:   # a list before the change
                    start, cur = None, []
                    continue
                out.append("".join(cur))
                return out
        if start is not None and depth == 1 and ch == ",":
            out.append("".join(cur))
            cur = []
        elif start is not None:
            cur.append(ch)
    return out


def added_member(text: str, hunk: Hunk, language: str) -> tuple[str, list[str], range] | None:
    """(the new name, its siblings in order with it among them, the lines of its own list) of the member the
    change added, or None."""
    if not hunk.new:
        return None
    lines = text.split("\n")
    everywhere = set(NAME.findall(text))
    old_names = set(NAME.findall("\n".join(hunk.old)))
    if len(hunk.old) == len(hunk.new) == 1:   # a member put into a list on one line (a parameter)
        items = _items(hunk.new[0], len(os.path.commonprefix([hunk.old[0], hunk.new[0]])))
        names = [_name(i, language) for i in items]
        new = [n for n in names if n and n not in old_names]
        if len(new) != 1 or len(names) < RUN + 1:
            return None
        return new[0], [n for n in names if n], range(hunk.start, hunk.end)
    if hunk.old:
        return None
    added = [line for line in hunk.new if line.strip()]
    if len(added) != 1:
        return None
    name = _name(added[0].strip().rstrip(",;"), language)
    if name is None or name in old_names or name not in everywhere:
        return None
    indent = len(added[0]) - len(added[0].lstrip())
    sibs, first, last = [], hunk.start, hunk.end
    for n in range(max(0, hunk.start - REACH), min(len(lines), hunk.end + REACH)):
        line = lines[n]
        if not line.strip() or len(line) - len(line.lstrip()) != indent:
            continue
        s = _name(line.strip().rstrip(",;"), language)
        if s:
            sibs.append(s)
            first, last = min(first, n), max(last, n + 1)
    return (name, sibs, range(first, last)) if name in sibs and len(sibs) >= RUN + 1 else None


def spellings(old: str, new: str) -> list[tuple[str, str]]:
    """The old name as a line may spell it, each with the new name spelled alike."""
    out: dict[str, str] = {}
    for a, b in ((old, new), (old[:1].upper() + old[1:], new[:1].upper() + new[1:]), (old.upper(), new.upper())):
        out.setdefault(a, b)
    return list(out.items())


def spelled(s: str) -> str:
    """A pattern for one spelling of a name as a whole word or the first piece of a camel-case one (`Path` in
    `PathPrefix`)."""
    return rf"(?<![A-Za-z0-9]){re.escape(s)}(?![a-z0-9])"


ALIGNED = re.compile(r" {2,}")


def renamed(line: str, old: str, new: str) -> str:
    """The line with the old name replaced by the new one in each spelling, the columns it aligns kept: a run of
    spaces after a renamed word (`Domain:   domain,` in a gofmt'ed literal) grows or shrinks so that what follows
    it starts where it did (one space at least)."""
    subs = {a: b for a, b in spellings(old, new)}
    pattern = "|".join(spelled(a) for a in sorted(subs, key=len, reverse=True))
    out, at, shift = [], 0, 0
    for m in re.finditer(f"{pattern}|{ALIGNED.pattern}", line):
        out.append(line[at:m.start()])
        word = m.group()
        if word in subs:
            out.append(subs[word])
            shift += len(subs[word]) - len(word)
        else:   # a run of spaces that aligns what follows it
            room = max(1, len(word) - shift)
            shift -= len(word) - room
            out.append(" " * room)
        at = m.end()
    return "".join(out) + line[at:]


def shape(line: str, name: str) -> str:
    """The line with the name (in each spelling) made a placeholder, its spaces made one, its last comma left out
    (the last member of a list may have none)."""
    for old, _ in spellings(name, name):
        line = re.sub(spelled(old), "\x00", line)
    return " ".join(line.split()).rstrip(",;")


def _has(line: str, name: str) -> bool:
    return any(re.search(spelled(s), line) for s, _ in spellings(name, name))


def find(text: str, recent: list[Hunk], cursor_line: int, language: str) -> list[Candidate]:
    hunk = recent[-1]
    got = added_member(text, hunk, language)
    if got is None:
        return []
    name, sibs, own = got
    i = sibs.index(name)
    before = sibs[i - 1] if i > 0 else None
    others = [s for s in sibs if s != name]
    lines = text.split("\n")
    places = []
    for n, line in enumerate(lines):
        if n in own or before is None or not _has(line, before):
            continue
        near = [lines[k] for k in range(max(0, n - len(sibs)), min(len(lines), n + len(sibs))) if k not in own]
        if sum(any(_has(x, s) for x in near) for s in others) < RUN or any(_has(x, name) for x in near):
            continue
        if sum(_has(line, s) for s in others) != 1:
            continue   # a line of the list names one sibling
        # and a line next to it is the same line for another sibling (`Path: path,` beside `Domain: domain,`)
        mine = shape(line, before)
        if not any(0 <= k < len(lines) and k not in own and shape(lines[k], s) == mine
                   for k in (n - 1, n + 1) for s in others if s != before and _has(lines[k], s)):
            continue
        places.append(n)
    if not places:
        return []
    n = nearest_first(places, cursor_line)[0]
    new_line = renamed(lines[n], before, name)
    if new_line.rstrip() and not new_line.rstrip().endswith((",", ";")) and n + 1 < len(lines) \
            and lines[n + 1].rstrip().endswith(","):
        new_line += ","
    c = make(text, n + 1, n + 1, new_line + "\n", "sibling")
    return [c] if c is not None else []
