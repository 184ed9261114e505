"""A definition the user's change left unused: the change took out the last use of a name (a call replaced, a
case dropped from a match), and the name now stands only where it is defined; the candidate takes that definition
out too (a function or method with its body, or a one-line member such as an enum variant, each with its doc
comment and the blank line that set it apart). A function other files may call (public by its language's rule)
is left alone: its last use in this file need not be its last use."""
from __future__ import annotations

import re

from ..edits import Hunk, keep_lines
from ..syntax import parse
from ..usages import uses
from .base import Candidate, make, nearest_first

NAME = re.compile(r"[A-Za-z_]\w*")
MIN_NAME = 4
# tree-sitter node types of a function or method, whose lines go with their name
FUNCTIONS = {"function_declaration", "method_declaration", "function_definition", "function_item",
             "method_definition", "constructor_declaration"}
COMMENT = ("//", "#", "/*", "*", "--")
# a member of a list that is a line of its own, its comma after it: `Name,`, `Name(Type),`, `NAME = 1,` (a line
# without one is a statement: a local variable's last use gone is no sign the variable should go)
MEMBER = re.compile(r"^\s*[A-Za-z_]\w*\s*(\([^()]*\)|=\s*[^,;]+)?\s*,\s*$")


def _private(line: str, name: str, language: str) -> bool:
    """Whether the function defined on `line` is private by its language's rule (Go's and Rust's unexported names
    are seen in their package or module at most; Python's by convention, its leading underscore)."""
    if language == "go":
        return not name[0].isupper()
    if language == "python":
        return name.startswith("_") and not name.endswith("__")
    if language == "rust":
        return not re.search(r"\bpub\b", line)
    if language in ("java", "kotlin", "csharp", "c_sharp", "scala"):
        return bool(re.search(r"\bprivate\b", line))
    if language in ("typescript", "tsx", "javascript"):
        if re.search(r"\bexport\b", line):
            return False
        method = line[:1].isspace() and not re.search(r"\bfunction\b", line)
        return not method or bool(re.search(r"\bprivate\b", line)) or f"#{name}" in line
    if language in ("c", "cpp"):
        return bool(re.search(r"\bstatic\b", line))
    return False   # a language whose rule this does not know: the function may be called from elsewhere


def _gone(recent: list[Hunk]) -> list[str]:
    """Names the recent edits took out of the lines they changed, the latest edit's first."""
    out: list[str] = []
    for h in reversed(recent):
        new = set(NAME.findall("\n".join(h.new)))
        for name in NAME.findall("\n".join(h.old)):
            if name not in new and len(name) >= MIN_NAME and name not in out:
                out.append(name)
    return out


def _function_lines(text: str, line: int, language: str) -> tuple[int, int] | None:
    tree = parse(text, language)
    if tree is None:
        return None
    row = text.split("\n")[line]
    col = len(row) - len(row.lstrip())   # at the definition's first word: column 0 of a method is its class's
    node = tree.root_node.named_descendant_for_point_range((line, col), (line, col))
    while node is not None and node.type not in FUNCTIONS:
        node = node.parent
    if node is None or node.start_point[0] != line:
        return None
    return node.start_point[0], node.end_point[0] + 1


def definition(text: str, line: int, language: str, name: str | None = None) -> tuple[int, int] | None:
    """The lines of the definition on `line` with its doc comment and one blank line that set it apart, or None
    where the line is no whole definition. Given the defined `name`, a function other files may call is None."""
    lines = keep_lines(text)
    span = _function_lines(text, line, language)
    if span is not None and name is not None and not _private(lines[line], name, language):
        return None
    if span is None:
        if not MEMBER.match(lines[line]):
            return None
        span = (line, line + 1)
    start, end = span
    while start > 0 and lines[start - 1].lstrip().startswith(COMMENT):
        start -= 1
    if end < len(lines) and not lines[end].strip() and (start == 0 or not lines[start - 1].strip()
                                                        or lines[start - 1].rstrip().endswith("}")):
        end += 1
    return start, end


def find(text: str, recent: list[Hunk], cursor_line: int, language: str) -> list[Candidate]:
    places = []
    for name in _gone(recent):
        at = uses(text, name, language)
        if len(at) != 1:
            continue   # still used (or never defined here): not left unused
        span = definition(text, at[0], language, name)
        if span is not None:
            places.append(span)
    if not places:
        return []
    first = nearest_first([s for s, _ in places], cursor_line)[0]
    start, end = next(p for p in places if p[0] == first)
    c = make(text, start, end, "", "unused")
    return [c] if c is not None else []
