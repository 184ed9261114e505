"""tree-sitter parsers by language id, with the few questions the later stages ask of a tree.
Languages without a grammar get None everywhere and fall back to plain text windows."""
from __future__ import annotations

import threading
from collections import OrderedDict
from functools import lru_cache

from tree_sitter import Node, Parser, Tree

# our language ids that the language pack names differently; ids missing here are used as they are
PACK_NAMES = {"text": None}
# past this size a parse is not worth its time on a keystroke (tree-sitter parses ~10 MB/s here)
MAX_PARSE_BYTES = 1 << 20
# a smaller text is parsed afresh at each change: within a few milliseconds, and as fast as telling the last tree
# of the edit
INCREMENTAL_BYTES = 64 << 10


@lru_cache(maxsize=None)
def parser_for(language: str) -> Parser | None:
    name = PACK_NAMES.get(language, language)
    if not name:
        return None
    try:
        from tree_sitter_language_pack import get_parser
        return get_parser(name)
    except Exception:   # the pack raises LookupError or its own error for unknown names
        return None


def parse(text: str, language: str) -> Tree | None:
    parser = parser_for(language)
    data = text.encode("utf-8")
    if parser is None or len(data) > MAX_PARSE_BYTES:
        return None
    return parser.parse(data)


class Trees:
    """The parse of each document's text as last asked, by path (the newest two documents: a tree of a 1 MB file
    holds ~40 MB). A keystroke's request, the fill ahead and the offer plan the same text, and a 500 kB file takes
    ~65 ms to parse here: the same text is parsed once, and a text that differs from the last one by an edit is
    parsed again from the last tree, as tree-sitter's incremental parsing allows (~30 ms). Where that tree holds an
    error the text is parsed afresh: error recovery from a reused tree may read broken code otherwise than a fresh
    parse does (C++, Java and C#: 51 of 13,436 such trees, none of 16,564 without an error), and a place must get
    the same answer in the editor as in the evaluations, which parse afresh."""

    def __init__(self, documents: int = 2):
        self.documents = documents
        self._last: OrderedDict[str, tuple[str, str, bytes, Tree | None]] = OrderedDict()
        self._lock = threading.Lock()

    def _kept(self, path: str, text: str, language: str) -> tuple[tuple | None, bool]:
        """The document's kept entry in this language (or None), and whether it is of exactly this text."""
        with self._lock:
            hit = self._last.get(path)
        if hit is None or hit[1] != language:
            return None, False
        return hit, hit[0] is text or hit[0] == text

    def get(self, path: str, text: str, language: str) -> Tree | None:
        """The tree kept of exactly this text, or None (nothing is parsed): for a later stage that must not keep a
        tree alive itself (a plan may live on in an offer, and a 1 MB file's tree holds ~40 MB)."""
        hit, same = self._kept(path, text, language)
        return hit[3] if same else None

    def parse(self, path: str, text: str, language: str) -> Tree | None:
        hit, same = self._kept(path, text, language)
        if same:
            return hit[3]
        parser, data = parser_for(language), text.encode("utf-8")
        if parser is None or len(data) > MAX_PARSE_BYTES:
            tree = None
        elif hit is not None and hit[3] is not None and len(data) >= INCREMENTAL_BYTES:
            old = hit[3].copy()   # the last tree may still be in use: the edit goes on a copy
            _edit(old, hit[2], data)
            tree = parser.parse(data, old)
            if tree.root_node.has_error:
                tree = parser.parse(data)
        else:
            tree = parser.parse(data)
        with self._lock:
            self._last[path] = (text, language, data, tree)
            self._last.move_to_end(path)
            while len(self._last) > self.documents:
                self._last.popitem(last=False)
        return tree


def _edit(tree: Tree, old: bytes, new: bytes) -> None:
    """Tell `tree`, a parse of `old`, that its text is now `new`: the bytes between their common start and end
    changed."""
    start = common_start(old, new)
    tail = common_end(old, new, min(len(old), len(new)) - start)
    old_end, new_end = len(old) - tail, len(new) - tail
    tree.edit(start_byte=start, old_end_byte=old_end, new_end_byte=new_end, start_point=_point(new, start),
              old_end_point=_point(old, old_end), new_end_point=_point(new, new_end))


def _point(data: bytes, at: int) -> tuple[int, int]:
    return data.count(b"\n", 0, at), at - (data.rfind(b"\n", 0, at) + 1)


_STEP = 4096


def common_start(a: bytes | str, b: bytes | str) -> int:
    """How many bytes (or characters) `a` and `b` start with alike; compared a block at a time."""
    n, i = min(len(a), len(b)), 0
    while i < n and a[i:i + _STEP] == b[i:i + _STEP]:
        i += _STEP
    i = min(i, n)
    while i < n and a[i] == b[i]:
        i += 1
    return i


def common_end(a: bytes | str, b: bytes | str, limit: int) -> int:
    """How many bytes (or characters) `a` and `b` end with alike, at most `limit`."""
    k = 0
    while k + _STEP <= limit and a[len(a) - k - _STEP:len(a) - k] == b[len(b) - k - _STEP:len(b) - k]:
        k += _STEP
    while k < limit and a[len(a) - k - 1] == b[len(b) - k - 1]:
        k += 1
    return k


def error_count(node: Node) -> int:
    """ERROR and MISSING nodes under node: how broken the text is, comparable between two parses. A walk with a
    stack of its own, not a recursion: an unclosed `(` typed above a C table of 100 kB makes a tree 100,000 deep."""
    n, stack = 0, [node]
    while stack:
        node = stack.pop()
        if node.has_error:
            n += node.is_error or node.is_missing
            stack.extend(node.children)
    return n


# grammars that accept a suite with no statement in it (`if x:` followed by a dedent) as an empty node, where
# the language itself rejects it
EMPTY_SUITES = {"python": "block"}


@lru_cache(maxsize=None)
def _suite_query(language: str):
    from tree_sitter import Query
    from tree_sitter_language_pack import get_language
    return Query(get_language(PACK_NAMES.get(language, language)), f"({EMPTY_SUITES[language]}) @suite")


def broken_count(tree: Tree, language: str) -> int:
    """error_count, plus the empty suites a grammar lets pass and the language does not."""
    n = error_count(tree.root_node)
    if language in EMPTY_SUITES:
        from tree_sitter import QueryCursor
        found = QueryCursor(_suite_query(language)).captures(tree.root_node).get("suite", [])
        n += sum(1 for node in found if node.named_child_count == 0)
    return n


def byte_col(line_text: str, col: int) -> int:
    return len(line_text[:col].encode("utf-8"))


def text_of(node: Node) -> str:
    return node.text.decode("utf-8", errors="replace") if node.text is not None else ""
