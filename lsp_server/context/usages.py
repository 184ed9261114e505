"""Renames, and where a renamed name is still used: after the user renames a name on one line, the next edit is
where the old name still stands, which may be far from the cursor (the next edit's region goes there).

A rename is a hunk whose old and new lines differ in exactly one identifier (`total = 0.0` -> `amount = 0.0`,
or the same change in several identifiers of that one name); the uses are the identifier nodes tree-sitter finds
with that text (never a word in a comment or a string), or, for a language without a grammar, the whole words."""
from __future__ import annotations

import re

from .edits import Hunk
from .syntax import parse

WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\S")
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
IDENTIFIER_NODES = {"identifier", "field_identifier", "type_identifier", "property_identifier",
                    "shorthand_property_identifier", "shorthand_property_identifier_pattern", "package_identifier",
                    "constant", "simple_identifier"}


def renamed(hunk: Hunk) -> tuple[str, str] | None:
    """(old name, new name) where the hunk renames one name, else None."""
    if len(hunk.old) != len(hunk.new) or not hunk.old:
        return None
    pairs: set[tuple[str, str]] = set()
    for a, b in zip(hunk.old, hunk.new):
        ta, tb = WORD.findall(a), WORD.findall(b)
        if len(ta) != len(tb):
            return None
        for x, y in zip(ta, tb):
            if x != y:
                if not (IDENTIFIER.fullmatch(x) and IDENTIFIER.fullmatch(y)):
                    return None
                pairs.add((x, y))
    return pairs.pop() if len(pairs) == 1 else None


def uses(text: str, name: str, language: str) -> list[int]:
    """The lines (0-based) where `name` is used as an identifier, in order."""
    tree = parse(text, language)
    if tree is None:
        word = re.compile(rf"\b{re.escape(name)}\b")
        return [i for i, line in enumerate(text.split("\n")) if word.search(line)]
    target = name.encode("utf-8")
    found: set[int] = set()
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.child_count == 0:
            if node.type in IDENTIFIER_NODES and node.text == target:
                found.add(node.start_point[0])
        else:
            stack.extend(node.children)
    return sorted(found)


def next_use(text: str, hunk: Hunk, language: str, around: tuple[int, int]) -> int | None:
    """Where a renamed name is still used, outside the lines `around` (start, end) that are rewritten anyway:
    the nearest use below them, else the nearest above; None when the hunk is no rename or nothing is left."""
    names = renamed(hunk)
    if names is None:
        return None
    lines = uses(text, names[0], language)
    start, end = around
    if any(start <= n < end for n in lines):
        return None   # the region rewrites a use already
    below = [n for n in lines if n >= end]
    above = [n for n in lines if n < start]
    return below[0] if below else (above[-1] if above else None)
