"""Structural lookup: code that lists things repeats a line's shape with one name changed.

Mid-line, the current line is aligned with a recent line of the same shape; the names swapped so far
(`"currency": self.currency,` -> `"issue_date": self.`) are swapped in the rest of that line too, in each
name's own case style (`lastName` -> `firstName` also turns `last_name` into `first_name`).
At the start of a line, when the last two lines share a shape and differ in one name, the next line is
that shape with the name that follows in an earlier list of the same names (fields of a class, keys of
a schema, parameters of a signature).
Free to run, like prompt lookup; the controller learns how far to trust each kind.
"""
from __future__ import annotations

import re
from typing import Callable

from .base import Draft

_LEX = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+|[ \t]+|.")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_WORDS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
LOOKBACK_LINES = 6
LIST_LINES = 300         # how many earlier lines the list search reads
LEFT_CHARS = 12000       # how much text before the cursor the list search reads


def _is_ident(s: str) -> bool:
    return bool(_IDENT.fullmatch(s))


def words(ident: str) -> list[str]:
    return [w.lower() for w in _WORDS.findall(ident)]


def norm(ident: str) -> str:
    return "_".join(words(ident)) or ident


def _style(ident: str) -> str:
    if "_" in ident.strip("_"):
        return "upper" if ident.isupper() else "snake"
    if ident[:1].isupper() and any(c.islower() for c in ident):
        return "pascal"
    if any(c.isupper() for c in ident[1:]):
        return "camel"
    return "upper" if ident.isupper() and len(ident) > 1 else "snake"


def _render(ws: list[str], style: str) -> str:
    if style == "upper":
        return "_".join(w.upper() for w in ws)
    if style == "pascal":
        return "".join(w.capitalize() for w in ws)
    if style == "camel":
        return ws[0] + "".join(w.capitalize() for w in ws[1:])
    return "_".join(ws)


def substitute(ident: str, mapping: dict[str, str]) -> str:
    """Apply name swaps, also to the same words written in another case style."""
    if ident in mapping:
        return mapping[ident]
    ws = words(ident)
    for src, dst in mapping.items():
        sw, dw = words(src), words(dst)
        if not sw or not dw:
            continue
        for i in range(len(ws) - len(sw) + 1):
            if ws[i:i + len(sw)] == sw:
                return _render(ws[:i] + dw + ws[i + len(sw):], _style(ident))
    return ident


def lex(line: str) -> list[str]:
    return _LEX.findall(line)


def _align(cur: list[str], ref: list[str]) -> tuple[dict[str, str], str, int] | None:
    """Match the current line's lexemes to a reference line's; returns (swaps, rest of a partial last
    lexeme, index in ref where the continuation starts)."""
    if len(cur) > len(ref):
        return None
    mapping: dict[str, str] = {}
    anchors = 0
    for i, (c, r) in enumerate(zip(cur, ref)):
        last = i == len(cur) - 1
        if c == r:
            anchors += not c.isspace()
            continue
        if last and _is_ident(c) and _is_ident(r):
            # the name may still be growing (`max` on the way to `maxBytes`): draft only a known rest
            target = mapping.get(r)
            if target is not None and target.startswith(c):
                return (mapping, target[len(c):], i + 1) if anchors else None
            if target is None and r.startswith(c):
                return (mapping, r[len(c):], i + 1) if anchors else None
            return None
        if _is_ident(c) and _is_ident(r) and mapping.get(r, c) == c:
            mapping[r] = c
            continue
        if last and r.startswith(c):
            return (mapping, r[len(c):], i + 1) if anchors else None
        return None
    if not anchors or len(mapping) > 2:
        return None
    return mapping, "", len(cur)


def _slot(a: list[str], b: list[str]) -> tuple[str, str] | None:
    """Two lines that start with the same shape and differ in one name (the same way wherever it
    appears in that shared part): the (old, new) name. What follows the shared part may differ."""
    pair, anchors = None, 0
    for x, y in zip(a, b):
        if x == y:
            anchors += not x.isspace()
            continue
        if not (_is_ident(x) and _is_ident(y)):
            break
        p = (norm(x), norm(y))
        if pair is None:
            pair = p
        elif pair != p:
            return None
    return pair if pair and anchors >= 2 else None


def _indent(line: str) -> str:
    return line[:len(line) - len(line.lstrip(" \t"))]


def next_item(lines: list[str], old: str, new: str) -> str | None:
    """In an earlier list with one item per line, the item after `new` when `old` came before it."""
    for b in range(len(lines) - 2, 0, -1):
        la, lb, lc = lines[b - 1], lines[b], lines[b + 1]
        if _indent(la) != _indent(lb) or _indent(lb) != _indent(lc):
            continue
        ib = [norm(x) if _is_ident(x) else None for x in lex(lb)]
        if new not in ib or old not in {norm(m.group()) for m in _IDENT.finditer(la)}:
            continue
        lc_lex = lex(lc)
        idx = ib.index(new)
        if idx < len(lc_lex) and _is_ident(lc_lex[idx]):
            cand = norm(lc_lex[idx])
        else:
            first = _IDENT.search(lc)
            cand = norm(first.group()) if first else None
        if cand and cand not in (old, new):
            return cand
    return None


class TemplateDrafter:
    name = "template"
    buckets = ("t-sub", "t-same", "t-next")   # where its drafts count

    def __init__(self, tokenize: Callable[[str], list[int]]):
        self.tokenize = tokenize

    def propose(self, text: str, max_len: int) -> Draft | None:
        """`text` is everything before the generation point (the prefix plus what was generated)."""
        text = text[-LEFT_CHARS:]
        cont, bucket = self._continue(text)
        if not cont:
            return None
        cur = text[text.rfind("\n") + 1:]
        toks = self._tokens_after(cur, cont)
        buckets = [bucket] * len(toks)
        if bucket != "t-next" and len(toks) < max_len:
            # a finished line in a list is usually followed by the list's next line
            nxt, _ = self._continue(text + cont)
            if nxt:
                more = self._tokens_after(cur, cont + nxt)
                if more[:len(toks)] == toks:
                    buckets += ["t-next"] * (len(more) - len(toks))
                    toks = more
        return Draft(self.name, toks[:max_len], buckets[:max_len]) if toks else None

    def _continue(self, text: str) -> tuple[str, str]:
        cut = text.rfind("\n")
        cur = text[cut + 1:]
        before = text[:cut + 1] if cut >= 0 else ""
        lines = [l for l in before.split("\n")[-LOOKBACK_LINES - 1:-1] if l.strip()]
        if not lines:
            return "", ""
        if cur.strip():
            return self._rest_of_line(cur, lines)
        return self._next_line(cur, lines, before)

    def _rest_of_line(self, cur: str, lines: list[str]) -> tuple[str, str]:
        cl = lex(cur)
        for ref in reversed(lines):
            got = _align(cl, lex(ref))
            if got is None:
                continue
            mapping, partial, start = got
            rl = lex(ref)
            rest = "".join(substitute(x, mapping) if _is_ident(x) else x for x in rl[start:])
            return partial + rest + "\n", ("t-sub" if mapping else "t-same")
        return "", ""

    def _next_line(self, cur: str, lines: list[str], before: str) -> tuple[str, str]:
        if len(lines) < 2:
            return "", ""
        p2, p1 = lines[-2], lines[-1]
        slot = _slot(lex(p2), lex(p1))
        if slot is None:
            return "", ""
        old, new = slot
        # the earlier list these names come from: the lines before the two template lines
        earlier = [l for l in before[:before.rfind(p2)].split("\n") if l.strip()][-LIST_LINES:]
        nxt = next_item(earlier, old, new)
        if not nxt:
            return "", ""
        line = "".join(substitute(x, {new: nxt}) if _is_ident(x) else x for x in lex(p1))
        if not line.startswith(cur):
            return "", ""
        return line[len(cur):] + "\n", "t-next"

    def _tokens_after(self, cur: str, cont: str) -> list[int]:
        # tokenize with the line so far, so the continuation splits the way the model writes it
        whole = self.tokenize(cur + cont)
        head = self.tokenize(cur)
        if whole[:len(head)] == head:
            return whole[len(head):]
        return self.tokenize(cont)
