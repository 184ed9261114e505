"""Names a hole must define: what the code below the cursor uses that nothing above it binds.

A line emptied at the start of a function (`res, switch = [], True`) leaves names the rest of the function
reads; a completion that does not bind them is a NameError however plausible it looks. Python only: its
bindings are syntax (assignments, loops, parameters, imports), and a miss only costs a few generated tokens
(see postprocess.Around.line_end)."""
from __future__ import annotations

import builtins
import keyword
import re
import textwrap

from tree_sitter import Node, Tree

from .syntax import parse

# a broken parse (the empty line inside a statement) makes identifiers of keywords
BUILTINS = frozenset(dir(builtins)) | {"self", "cls", "__name__", "__file__"} | frozenset(keyword.kwlist) \
    | frozenset(keyword.softkwlist)
# the targets of an assignment whose value goes on past the line (`table = {`), which does not parse alone
ASSIGNED = re.compile(r"^[ \t]*([A-Za-z_][\w, \t()*\[\]]*?)[ \t]*(?::[^=\n]*)?=(?!=)", re.M)
# what a binding target may be built of: `a, (b, *c) = ...`
PATTERNS = {"pattern_list", "tuple_pattern", "list_pattern", "list_splat_pattern", "tuple", "list",
            "parenthesized_expression", "expression_list", "as_pattern_target", "typed_parameter",
            "list_splat", "dictionary_splat_pattern"}
TARGET_FIELDS = {("assignment", "left"), ("for_statement", "left"), ("for_in_clause", "left"),
                 ("named_expression", "name"), ("function_definition", "name"), ("class_definition", "name"),
                 ("default_parameter", "name"), ("typed_default_parameter", "name"), ("aliased_import", "alias")}
COMPREHENSIONS = {"list_comprehension", "set_comprehension", "dictionary_comprehension", "generator_expression"}


def _field(node: Node) -> str | None:
    parent = node.parent
    for i, child in enumerate(parent.children):
        if child.id == node.id:
            return parent.field_name_for_child(i)
    return None


def _binds(node: Node) -> bool:
    """Whether this identifier is bound where it stands (an assignment's target, a parameter, an import)."""
    child, parent = node, node.parent
    while parent is not None and parent.type in PATTERNS:
        child, parent = parent, parent.parent
    if parent is None:
        return False
    if parent.type in ("parameters", "lambda_parameters", "global_statement", "nonlocal_statement",
                       "as_pattern_target"):
        return True
    if parent.type in ("import_statement", "import_from_statement", "dotted_name", "aliased_import"):
        return _import_binds(node)
    return (parent.type, _field(child)) in TARGET_FIELDS


def _import_binds(node: Node) -> bool:
    """`import a.b` binds a; `from m import n` binds n; `... as x` binds x only."""
    parent = node.parent
    if parent.type == "aliased_import":
        return _field(node) == "alias"
    if parent.type != "dotted_name":
        return False
    holder = parent.parent
    if holder is None or holder.type == "aliased_import":
        return False
    if holder.type == "import_from_statement":
        return _field(parent) == "name"
    return holder.type == "import_statement" and parent.children[0].id == node.id


def _skipped(node: Node) -> bool:
    """An identifier that names no variable: an attribute (`x.attr`) or a keyword argument (`f(key=...)`)."""
    parent = node.parent
    field = _field(node)
    return ((parent.type == "attribute" and field == "attribute")
            or (parent.type == "keyword_argument" and field == "name")
            or parent.type in ("import_from_statement",)            # `from .m import *`
            or (parent.type == "dotted_name" and not _import_binds(node)))


def _identifiers(node: Node, start: int = 0, end: int | None = None):
    """The identifiers under `node` in document order; with `start` and `end`, those that start in that byte
    range (the subtrees outside it are not walked)."""
    stack = [node]
    while stack:
        n = stack.pop()
        if end is not None and (n.end_byte < start or n.start_byte >= end):
            continue
        if n.type == "identifier":
            if end is None or start <= n.start_byte:
                yield n
        else:
            stack.extend(reversed(n.children))


def _text(tree: Tree) -> tuple[bytes, int]:
    """The tree's text and the byte it starts at: the module node starts at the first code, after any blank lines
    at the top of the file, and its offsets are the file's."""
    return tree.root_node.text, tree.root_node.start_byte


def _named(tree: Tree, names: set[str]):
    """The identifiers of the tree that spell one of `names`: where the text does, the leaf there (a match
    inside a longer word or a string is no identifier of its own)."""
    root = tree.root_node
    source, off = _text(tree)
    for name in names:
        word = name.encode("utf-8")
        for m in re.finditer(rb"(?<![A-Za-z0-9_])" + re.escape(word) + rb"(?![A-Za-z0-9_])", source):
            start, end = off + m.start(), off + m.end()
            n = root.descendant_for_byte_range(start, end)
            if n is not None and n.type == "identifier" and n.start_byte == start and n.end_byte == end:
                yield name, n


def _bound_at(node: Node) -> int:
    """Where a binding takes effect: a comprehension's variable before the expression that reads it."""
    n = node
    while n is not None and n.type not in COMPREHENSIONS and n.type not in ("function_definition", "module"):
        n = n.parent
    return n.start_byte if n is not None and n.type in COMPREHENSIONS else node.start_byte


def bound_names(text: str, language: str) -> frozenset[str]:
    """The names some lines of code bind (the lines may be indented and unfinished)."""
    if language != "python":
        return frozenset()
    tree = parse(textwrap.dedent(text), language)
    if tree is None:
        return frozenset()
    names = {n.text.decode("utf-8", "replace") for n in _identifiers(tree.root_node) if _binds(n)}
    if tree.root_node.has_error:
        names.update(w for m in ASSIGNED.finditer(text) for w in re.findall(r"[A-Za-z_]\w*", m.group(1)))
    return frozenset(names)


def _in_text(tree: Tree, cursor_byte: int) -> bool:
    """Whether the cursor stands in a string or a comment: text there binds nothing. A docstring being typed
    (its closing quotes not yet written) is a string to the next one's opening quotes, whose text then parses as
    code (`Add`, `Return`: names no hole binds)."""
    for at in {cursor_byte, max(cursor_byte - 1, 0)}:   # a comment at the end of its line ends at the cursor
        n = tree.root_node.descendant_for_byte_range(at, at)
        while n is not None:
            if (n.type == "comment" and n.start_byte < cursor_byte) or \
                    (n.type == "string" and n.start_byte < cursor_byte < n.end_byte):
                return True
            n = n.parent
    return False


def _dedent_after(tree: Tree, func: Node, cursor_byte: int) -> int:
    """Where the function ends by its indentation: the first line with text below the cursor's that is indented
    no deeper than its `def`. A broken parse (a bracket or string left open) may stretch the function's node
    over the functions after it."""
    source, off = _text(tree)
    indent = func.start_point[1]
    at = source.find(b"\n", cursor_byte - off)
    while at >= 0:
        start = at + 1
        nxt = source.find(b"\n", start)
        line = source[start:] if nxt < 0 else source[start:nxt]
        if line.strip() and len(line) - len(line.lstrip()) <= indent:
            return off + start
        at = nxt
    return off + len(source)


def needed_names(tree: Tree | None, cursor_byte: int, language: str) -> frozenset[str]:
    """Names the cursor's function uses below the cursor before (or without) binding them there, which
    nothing above the cursor and nothing outside the function binds. Empty outside a function."""
    if language != "python" or tree is None:
        return frozenset()
    func = tree.root_node.descendant_for_byte_range(cursor_byte, cursor_byte)
    while func is not None and func.type != "function_definition":
        func = func.parent
    if func is None or _in_text(tree, cursor_byte):
        return frozenset()
    end = func.end_byte if not func.has_error else min(func.end_byte, _dedent_after(tree, func, cursor_byte))
    start = max(func.start_byte, cursor_byte)
    later: dict[str, int] = {}     # names the function binds below the cursor: where first
    uses: dict[str, int] = {}      # names it reads below the cursor: where first
    for n in _identifiers(func, start, end):
        name = n.text.decode("utf-8", "replace")
        if _binds(n):
            at = _bound_at(n)
            later[name] = min(later.get(name, at), at)
        elif not _skipped(n):
            uses.setdefault(name, n.start_byte)
    wanted = {name for name, at in uses.items() if name not in BUILTINS and not later.get(name, at + 1) < at}
    # whether the rest of the file binds them, asked of those names' identifiers only, found by their text (asked
    # of every identifier of a 500 kB file, it took ~150 ms at each keystroke)
    bound = {name for name, n in _named(tree, wanted) if not start <= n.start_byte < end and _binds(n)}
    return frozenset(name for name in uses if name in wanted and name not in bound)
