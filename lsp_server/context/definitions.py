"""The top-level definitions of a file, as the prompt shows another file's code: one Definition for both places
that show them, by two rules.

- An imported file (definitions, file_definitions): Python, TypeScript / JavaScript, Go and Rust, each by its
  own node types; a definition is shown whole when short, else by its header, docstring and, for a class
  (struct, impl, trait, interface), its members' headers; its members' names are kept for the ranking
  (`obj.member` near the cursor uses the class).
- An open document (extract): any language with a grammar, by the node types' names; a definition is shown
  whole when short, else by its header and its members' headers.

The two rules differ in what they take (an impl block, a Go type alias, every name of a `const a = 1, b = 2`)
and in what they show; each is kept as it was, since a change to either changes the prompts built."""
from __future__ import annotations

from dataclasses import dataclass

from .document import language_for_path
from .files import file_cache
from .outline import body_of, header_of, is_scope
from .syntax import parse, text_of

FULL_LINES = 10             # definitions this short are shown whole
DEF_MAX_LINES = 24          # longer ones by header, docstring and members' headers, at most this many lines
DEF_MAX_CHARS = 1600
DOC_LINES = 6               # a docstring or doc comment, at most
FULL_DEFINITION_LINES = 12  # an open document's definitions this short are shown whole


@dataclass(frozen=True)
class Definition:
    path: str
    name: str
    line: int                                   # 0-based
    text: str                                   # as the prompt shows it (_summary, _shown)
    members: frozenset[str] = frozenset()
    default: bool = False                       # TS/JS: the module's default export
    method: bool = False                        # Go: a method (called as x.Name)


_defs = file_cache()   # (path, text length, text hash) -> [Definition]


# ---- an imported file's definitions ------------------------------------------------------------------------------

PY_DEFS = {"function_definition", "class_definition"}
TS_DEFS = {"function_declaration", "generator_function_declaration", "class_declaration",
           "abstract_class_declaration", "interface_declaration", "type_alias_declaration", "enum_declaration",
           "lexical_declaration", "variable_declaration", "function_signature"}
GO_DEFS = {"function_declaration", "method_declaration", "type_declaration", "const_declaration",
           "var_declaration"}
RUST_DEFS = {"function_item", "struct_item", "enum_item", "trait_item", "type_item", "const_item", "static_item",
             "union_item", "impl_item", "macro_definition", "function_signature_item"}
COMMENTS = {"comment", "line_comment", "block_comment", "attribute_item"}
CLASS_WORDS = ("class", "struct", "impl", "trait", "interface", "enum")


def definitions(path: str, text: str, language: str) -> list[Definition]:
    """The top-level definitions of a file, each with the text that shows it (see _summary)."""
    tree = parse(text, language)
    if tree is None:
        return []
    source = text.encode("utf-8")
    out: list[Definition] = []
    children = tree.root_node.children
    for i, node in enumerate(children):
        out.extend(_defs_of(path, node, source, language, children[:i]))
    return out


def _doc_above(before: list, node) -> str:
    """The comments (and Rust attributes) right above a node: its doc comment."""
    lines: list[str] = []
    row = node.start_point[0]
    for prev in reversed(before):
        if prev.type not in COMMENTS or prev.end_point[0] < row - 1:
            break
        lines[:0] = text_of(prev).rstrip("\n").split("\n")
        row = prev.start_point[0]
    return "\n".join(lines[-DOC_LINES:])


def _name_of(node, imported: bool = True) -> str:
    """The name a definition goes by ("": none). imported=False names an open document's definitions as they
    have always been named, where a Go type_declaration goes by its first type_spec only and an impl block by
    nothing (so extract() leaves it out): their prompts stay as they were."""
    n = node.child_by_field_name("name")
    if n is None and node.type == "type_declaration":
        kinds = ("type_spec", "type_alias") if imported else ("type_spec",)
        spec = next((c for c in node.children if c.type in kinds), None)
        n = spec.child_by_field_name("name") if spec is not None else None
    if n is None and node.type == "impl_item" and imported:
        n = node.child_by_field_name("type")
        while n is not None and n.child_by_field_name("type") is not None:   # Foo<T> -> Foo
            n = n.child_by_field_name("type")
    if n is None and node.type in ("lexical_declaration", "variable_declaration"):   # its first name only
        decl = next((c for c in node.children if c.type == "variable_declarator"), None)
        n = decl.child_by_field_name("name") if decl is not None else None
    return text_of(n) if n is not None else ""


def _defs_of(path: str, node, source: bytes, language: str, before: list) -> list[Definition]:
    line = node.start_point[0]
    if language == "python":
        inner = node.child_by_field_name("definition") if node.type == "decorated_definition" else node
        if inner is not None and inner.type in PY_DEFS:
            name = _name_of(inner)
            text, members = _summary(node, source, language)
            return [Definition(path, name, line, text, members)] if name else []
        if node.type == "expression_statement" and node.named_children \
                and node.named_children[0].type == "assignment":
            left = node.named_children[0].child_by_field_name("left")
            if left is not None and left.type == "identifier":
                return [Definition(path, text_of(left), line, _clip(text_of(node), 3))]
        return []
    if language in ("typescript", "tsx", "javascript"):
        default = False
        inner = node
        if node.type == "export_statement":
            default = any(c.type == "default" for c in node.children)
            inner = node.child_by_field_name("declaration") or node.child_by_field_name("value")
            if inner is None:
                return []
        if inner.type not in TS_DEFS:
            return []
        doc = _doc_above(before, node)
        if inner.type in ("lexical_declaration", "variable_declaration"):
            out = []
            for decl in inner.named_children:
                n = decl.child_by_field_name("name") if decl.type == "variable_declarator" else None
                if n is not None and n.type == "identifier":
                    value = decl.child_by_field_name("value")
                    text, members = (_summary(node, source, language) if value is not None and "function" in
                                     value.type else (_clip(text_of(node), FULL_LINES), frozenset()))
                    out.append(Definition(path, text_of(n), line, _with_doc(doc, text), members, default))
            return out
        name = _name_of(inner)
        text, members = _summary(node, source, language, inner)
        return [Definition(path, name or ("default" if default else ""), line, _with_doc(doc, text), members,
                           default)] if (name or default) else []
    if language == "go":
        if node.type not in GO_DEFS:
            return []
        doc = _doc_above(before, node)
        if node.type in ("const_declaration", "var_declaration"):
            text = _clip(text_of(node), FULL_LINES)
            out = []
            for spec in node.named_children:
                for n in spec.children_by_field_name("name"):
                    out.append(Definition(path, text_of(n), line, _with_doc(doc, text)))
            return out
        name = _name_of(node)
        text, members = _summary(node, source, language)
        return [Definition(path, name, line, _with_doc(doc, text), members,
                           method=node.type == "method_declaration")] if name else []
    if language == "rust":
        if node.type not in RUST_DEFS:
            return []
        name = _name_of(node)
        text, members = _summary(node, source, language)
        return [Definition(path, name, line, _with_doc(_doc_above(before, node), text), members)] if name else []
    return []


def _with_doc(doc: str, text: str) -> str:
    return f"{doc}\n{text}" if doc else text


def _clip(text: str, lines: int) -> str:
    parts = text.split("\n")
    out = "\n".join(parts[:lines]) + ("\n..." if len(parts) > lines else "")
    return out[:DEF_MAX_CHARS]


def _docstring(body, language: str) -> str:
    if language != "python" or body is None or not body.named_children:
        return ""
    first = body.named_children[0]
    if first.type == "expression_statement" and first.named_children:   # (older grammars wrap it)
        first = first.named_children[0]
    if first.type == "string":
        return " " * first.start_point[1] + _clip(text_of(first), DOC_LINES)
    return ""


def _member_name(node) -> str:
    if node.type == "decorated_definition":
        node = node.child_by_field_name("definition") or node
    n = node.child_by_field_name("name")
    if n is None and node.type == "expression_statement" and node.named_children:
        a = node.named_children[0]
        left = a.child_by_field_name("left") if a.type == "assignment" else None
        n = left if left is not None and left.type == "identifier" else None
    if n is None and node.type == "field_declaration":   # Go: `Name, Other string`
        names = node.children_by_field_name("name")
        n = names[0] if names else None
    return text_of(n) if n is not None else ""


def _scope_header(node, source: bytes, language: str) -> str:
    """A scope's header as one line of a summary: `def f(x): ...`, `fn f(&self) -> u8 { ... }`."""
    decorators = ""
    if node.type == "decorated_definition":
        inner = node.child_by_field_name("definition") or node
        decorators = "".join(text_of(d).strip() + "\n" for d in node.children if d.type == "decorator")
        indent = " " * node.start_point[1]
        decorators = "".join(indent + d + "\n" for d in decorators.split("\n") if d)
        node = inner
    head = header_of(node, source)
    return decorators + (head + " ..." if language == "python" else head + " ... }" if head.endswith("{")
                         else head)


def _summary(node, source: bytes, language: str, inner=None) -> tuple[str, frozenset[str]]:
    """A definition as the prompt shows it: whole when short; else its header, docstring, and for a class
    (struct, impl, trait, interface) its fields and its methods' headers; bounded."""
    inner = inner if inner is not None else node
    if inner.type == "decorated_definition":
        inner = inner.child_by_field_name("definition") or inner
    text = text_of(node)
    body = body_of(inner)
    members: list[str] = []
    if body is not None and any(w in inner.type for w in CLASS_WORDS):
        members = [m for m in (_member_name(c) for c in body.named_children) if m]
    if text.count("\n") < FULL_LINES or body is None:
        return _clip(text, DEF_MAX_LINES), frozenset(members)
    # what stands on lines above the definition's own header: decorators (an `export` on its line is in it)
    inner_line = source.rfind(b"\n", 0, inner.start_byte) + 1
    lead = source[node.start_byte:inner_line].decode("utf-8", "replace") if inner_line > node.start_byte else ""
    lines = [(" " * node.start_point[1] + lead.lstrip() if lead.strip() else "") + header_of(inner, source)]
    doc = _docstring(body, language)
    if doc:
        lines.append(doc)
    brace = lines[0].endswith("{")
    indent = " " * (node.start_point[1] + 4)
    if any(w in inner.type for w in CLASS_WORDS):
        for c in body.named_children:
            if c.type in COMMENTS or (doc and c.id == body.named_children[0].id):
                continue
            if is_scope(c) or c.type == "decorated_definition":
                lines.append(_scope_header(c, source, language))
            else:
                first = text_of(c).split("\n", 1)[0]
                lines.append(" " * c.start_point[1] + first)
            if len(lines) >= DEF_MAX_LINES:
                lines.append(indent + "...")
                break
    else:
        lines.append(indent + "...")
    if brace:
        lines.append(" " * node.start_point[1] + "}")
    return "\n".join(lines)[:DEF_MAX_CHARS], frozenset(members)


def file_definitions(path: str, text: str) -> list[Definition]:
    """definitions(), cached by the file's path and text."""
    key = (path, len(text), hash(text))
    hit = _defs.get(key)
    if hit is None:
        hit = definitions(path, text, language_for_path(path))
        _defs.put(key, hit)
    return hit


# ---- an open document's definitions ------------------------------------------------------------------------------

# substrings of node types that name a definition in most grammars: an open document may be in any language
NAMED_TYPES = ("definition", "declaration", "_item", "type_spec", "interface", "class", "function", "method")


def extract(path: str, text: str, language: str) -> list[Definition]:
    """The top-level definitions of an open document, in any language with a grammar (see _shown)."""
    tree = parse(text, language)
    if tree is None:
        return []
    source = text.encode("utf-8")
    out = []
    for node in tree.root_node.children:
        inner = node
        if node.type in ("export_statement", "decorated_definition"):
            inner = node.child_by_field_name("declaration") or node.child_by_field_name("definition") or node
        if not any(t in inner.type for t in NAMED_TYPES):
            continue
        name = _name_of(inner, imported=False)
        if name:
            out.append(Definition(path, name, node.start_point[0], _shown(node, source)))
    return out


def _shown(node, source: bytes) -> str:
    """Whole when short; else its header and its members' headers."""
    text = text_of(node)
    if text.count("\n") < FULL_DEFINITION_LINES or not is_scope(node):
        return text
    lines = [header_of(node, source)]
    body = body_of(node)
    for c in (body.children if body is not None else []):
        if is_scope(c):
            lines.append(header_of(c, source) + (" ..." if not lines[-1].endswith("{") else ""))
    return "\n".join(lines)
