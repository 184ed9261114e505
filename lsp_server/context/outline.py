"""What the model loses when the top of a long file is cut from the prompt: the file's imports and the
headers of the scopes around the cursor (class lines, function signatures). The prompt stage asks for the
outline of the lines above its cut and puts it before the prefix window."""
from __future__ import annotations

from tree_sitter import Node, Tree

from .syntax import text_of

SCOPE_WORDS = ("function", "method", "class", "impl", "interface", "trait", "struct", "namespace",
               "mod_item", "enum", "module_declaration")
IMPORT_TYPES = {"import_statement", "import_from_statement", "future_import_statement", "import_declaration",
                "use_declaration", "preproc_include", "package_clause", "package_declaration",
                "using_directive", "extern_crate_declaration"}
MAX_IMPORT_LINES = 40


def is_scope(node: Node) -> bool:
    return any(w in node.type for w in SCOPE_WORDS) and body_of(node) is not None


def body_of(node: Node) -> Node | None:
    body = node.child_by_field_name("body")
    if body is None:   # C's function_definition and a few others name it differently
        body = next((c for c in node.children if c.type in ("block", "compound_statement", "class_body",
                                                              "declaration_list", "field_declaration_list")),
                     None)
    return body


def header_of(node: Node, source: bytes) -> str:
    """The node's text up to its body, with the line's own indentation kept."""
    body = body_of(node)
    end = body.start_byte if body is not None else node.end_byte
    line_start = source.rfind(b"\n", 0, node.start_byte) + 1
    head = source[line_start:end].decode("utf-8", errors="replace").rstrip()
    if body is not None and source[body.start_byte:body.start_byte + 1] == b"{":
        head += " {"
    return head


def imports(tree: Tree) -> list[Node]:
    return [c for c in tree.root_node.children if c.type in IMPORT_TYPES]


def enclosing_scopes(tree: Tree, point: tuple[int, int]) -> list[Node]:
    node = tree.root_node.descendant_for_point_range(point, point)
    out = []
    while node is not None:
        if is_scope(node):
            out.append(node)
        node = node.parent
    return out[::-1]


def headers_above(tree: Tree, source: bytes, cursor: tuple[int, int], cut_line: int) -> str:
    """The headers of the scopes around the cursor that start above `cut_line`, without the imports: what a
    short prompt of the nearest lines keeps of the rest."""
    return "".join(header_of(node, source) + "\n" for node in enclosing_scopes(tree, cursor)
                   if node.start_point[0] < cut_line)


def imports_above(tree: Tree, cut_line: int) -> str:
    """The file's import lines above `cut_line`, in file order: the same text for every page below them."""
    found = [text_of(n) for n in imports(tree) if n.start_point[0] < cut_line][:MAX_IMPORT_LINES]
    return "".join(t + "\n" for t in found)
