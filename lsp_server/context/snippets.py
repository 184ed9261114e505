"""Definitions from the other open documents that the code near the cursor uses by name, ranked and packed
into a token budget by the prompt stage. Each document's definitions are extracted once per version."""
from __future__ import annotations

import re
from dataclasses import dataclass

from .near_lines import head_lines, tail_lines
from .outline import body_of, header_of, is_scope
from .syntax import parse, text_of

IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
NEAR_LINES_ABOVE, NEAR_LINES_BELOW = 30, 8
FULL_DEFINITION_LINES = 12   # longer definitions are shown by their header (and members' headers)
NAMED_TYPES = ("definition", "declaration", "_item", "type_spec", "interface", "class", "function", "method")


@dataclass(frozen=True)
class Definition:
    path: str
    name: str
    line: int
    text: str


@dataclass
class Snippet:
    path: str
    text: str
    score: float


def _name(node) -> str:
    n = node.child_by_field_name("name")
    if n is None and node.type == "type_declaration":  # Go: type_declaration > type_spec name
        spec = next((c for c in node.children if c.type == "type_spec"), None)
        n = spec.child_by_field_name("name") if spec is not None else None
    if n is None and node.type in ("lexical_declaration", "variable_declaration"):
        decl = next((c for c in node.children if c.type == "variable_declarator"), None)
        n = decl.child_by_field_name("name") if decl is not None else None
    return text_of(n) if n is not None else ""


def _shown(node, source: bytes) -> str:
    text = text_of(node)
    if text.count("\n") < FULL_DEFINITION_LINES or not is_scope(node):
        return text
    lines = [header_of(node, source)]
    body = body_of(node)
    for c in (body.children if body is not None else []):
        if is_scope(c):
            lines.append(header_of(c, source) + (" ..." if not lines[-1].endswith("{") else ""))
    return "\n".join(lines)


def extract(path: str, text: str, language: str) -> list[Definition]:
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
        name = _name(inner)
        if name:
            out.append(Definition(path, name, node.start_point[0], _shown(node, source)))
    return out


def names_near(prefix: str, suffix: str) -> dict[str, float]:
    """Identifiers near the cursor, weighted by closeness."""
    weights: dict[str, float] = {}
    above = tail_lines(prefix, NEAR_LINES_ABOVE).split("\n")
    for i, line in enumerate(reversed(above)):
        for m in IDENT.findall(line):
            weights[m] = weights.get(m, 0.0) + 1.0 / (1 + i / 4)
    for i, line in enumerate(head_lines(suffix, NEAR_LINES_BELOW).split("\n")):
        for m in IDENT.findall(line):
            weights[m] = weights.get(m, 0.0) + 0.5 / (1 + i / 4)
    return weights


def rank(definitions: list[Definition], prefix: str, suffix: str) -> list[Snippet]:
    near = names_near(prefix, suffix)
    scored = [Snippet(d.path, d.text, near[d.name]) for d in definitions if d.name in near]
    scored.sort(key=lambda s: -s.score)
    return scored


def rank_in(definitions: list[Definition], text: str) -> list[Snippet]:
    """Definitions by how often a page's text uses their names (a page's choice, the same for all its cursors)."""
    counts: dict[str, int] = {}
    for m in IDENT.findall(text):
        counts[m] = counts.get(m, 0) + 1
    scored = [Snippet(d.path, d.text, counts[d.name]) for d in definitions if d.name in counts]
    scored.sort(key=lambda s: -s.score)
    return scored
