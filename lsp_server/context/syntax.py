"""tree-sitter parsers by language id, with the few questions the later stages ask of a tree.
Languages without a grammar get None everywhere and fall back to plain text windows."""
from __future__ import annotations

from functools import lru_cache

from tree_sitter import Node, Parser, Tree

# our language ids that the language pack names differently; ids missing here are used as they are
PACK_NAMES = {"text": None}
# past this size a parse is not worth its time on a keystroke (tree-sitter parses ~10 MB/s here)
MAX_PARSE_BYTES = 1 << 20


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


def error_count(node: Node) -> int:
    """ERROR and MISSING nodes under node: how broken the text is, comparable between two parses."""
    if not node.has_error:
        return 0
    n = 1 if (node.is_error or node.is_missing) else 0
    return n + sum(error_count(c) for c in node.children)


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


def node_at(tree: Tree, line: int, line_text: str, col: int) -> Node:
    point = (line, byte_col(line_text, col))
    return tree.root_node.descendant_for_point_range(point, point) or tree.root_node


def text_of(node: Node) -> str:
    return node.text.decode("utf-8", errors="replace") if node.text is not None else ""
