"""Holes cut by rule in real projects' files, for `tandem-eval real`.

In each file of 100-3000 lines: one-line holes on code lines (not blank, not a comment or docstring, not an
import, not a line of only closers), the line's text removed after its indentation, the cursor left there (as
`tandem-eval visits` empties a line); and block holes: the body (2-10 lines) of a function, an `if` or a `for`
found with tree-sitter, its lines removed and the cursor left on one empty line at the body's indentation.
Which lines and bodies is drawn with a seed from the file's own list, so the same corpus gives the same holes.

Each hole says whether its expected text uses a name defined in another file of the same project and not in
its own (`cross_file`): a name index over the project's files of that language, from tree-sitter definitions
(functions, classes, types, methods, fields, top-level constants and variables)."""
from __future__ import annotations

import builtins
import keyword
import random
import re
from dataclasses import dataclass, field
from pathlib import Path

from tree_sitter import Node

from lsp_server.context.syntax import parse
from evals.real.corpus import Project

MIN_LINES, MAX_LINES = 100, 3000
BLOCK_MIN, BLOCK_MAX = 2, 10
LINE_HOLES, BLOCK_HOLES = 2, 1      # per file
MAX_LINE_CHARS = 160

CLOSERS = re.compile(r"^[\s)\]}>;,]*$")
IDENT = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
LETTER = re.compile(r"[A-Za-z]")   # a line of only numbers and punctuation is a table's data
IMPORT_NODES = {"import_statement", "import_from_statement", "future_import_statement", "import_declaration",
                "import_spec", "import_spec_list", "use_declaration", "extern_crate_declaration", "preproc_include"}
IMPORT_LINE = re.compile(r"^\s*((const|let|var)\s.*=\s*require\(|export\s.*\sfrom\s+['\"]|#\s*include\b)")
# C's conditional compilation lines are not code a person completes
DIRECTIVE = re.compile(r"^\s*#\s*(if|ifdef|ifndef|else|elif|endif|pragma)\b")
STRINGS = {"string", "string_content", "template_string", "raw_string_literal", "interpreted_string_literal",
           "string_literal", "concatenated_string", "string_fragment"}

# definitions whose body can be a hole: node type -> the field holding the body
BODIES = {
    "python": {"function_definition": "body", "if_statement": "consequence", "for_statement": "body"},
    "typescript": {"function_declaration": "body", "method_definition": "body", "function_expression": "body",
                   "arrow_function": "body", "generator_function_declaration": "body",
                   "if_statement": "consequence", "for_statement": "body", "for_in_statement": "body"},
    "go": {"function_declaration": "body", "method_declaration": "body", "func_literal": "body",
           "if_statement": "consequence", "for_statement": "body"},
    "rust": {"function_item": "body", "if_expression": "consequence", "for_expression": "body"},
    "c": {"function_definition": "body", "if_statement": "consequence", "for_statement": "body"},
}
BODIES["javascript"] = BODIES["typescript"]
BODIES["tsx"] = BODIES["typescript"]

# definitions that give a name to the project (the name index)
DEFS = {
    "python": {"function_definition", "class_definition"},
    "typescript": {"function_declaration", "generator_function_declaration", "class_declaration",
                   "abstract_class_declaration", "method_definition", "interface_declaration",
                   "type_alias_declaration", "enum_declaration", "public_field_definition", "field_definition",
                   "property_signature", "method_signature", "abstract_method_signature", "function_signature"},
    "go": {"function_declaration", "method_declaration", "type_spec", "type_alias", "field_declaration",
           "method_spec", "method_elem"},
    "rust": {"function_item", "function_signature_item", "struct_item", "enum_item", "union_item", "trait_item",
             "type_item", "const_item", "static_item", "mod_item", "macro_definition", "enum_variant",
             "field_declaration"},
    "c": {"function_definition", "declaration", "type_definition", "struct_specifier", "union_specifier",
          "enum_specifier", "enumerator", "preproc_def", "preproc_function_def", "field_declaration"},
}
DEFS["javascript"] = DEFS["typescript"]
DEFS["tsx"] = DEFS["typescript"]
NAME_TYPES = {"identifier", "type_identifier", "field_identifier", "property_identifier", "constant",
              "private_property_identifier"}
# keywords (a parse that failed on a macro can make a "definition" of one) and names no index should claim
KEYWORDS = {
    "python": set(keyword.kwlist) | set(dir(builtins)) | {"self", "cls"},
    "typescript": set("""break case catch class const continue debugger default delete do else enum export extends
        false finally for function if import in instanceof new null return super switch this throw true try typeof
        var void while with let static yield await async of as any boolean number string symbol never unknown
        undefined object type interface implements private protected public readonly declare keyof infer is
        constructor get set""".split()),
    "go": set("""break case chan const continue default defer else fallthrough for func go goto if import interface
        map package range return select struct switch type var nil true false iota append cap close complex copy
        delete imag len make new panic print println real recover error string int bool byte rune any""".split()),
    "rust": set("""as async await break const continue crate dyn else enum extern false fn for if impl in let loop
        match mod move mut pub ref return self Self static struct super trait true type unsafe use where while
        Some None Ok Err Option Result Box Vec String""".split()),
    "c": set("""auto break case char const continue default do double else enum extern float for goto if inline
        int long register restrict return short signed sizeof static struct switch typedef union unsigned void
        volatile while NULL size_t uint8_t uint16_t uint32_t uint64_t int8_t int16_t int32_t int64_t""".split()),
}
KEYWORDS["javascript"] = KEYWORDS["tsx"] = KEYWORDS["typescript"]


@dataclass
class Hole:
    task_id: str
    project: str
    language: str
    file: str            # relative to the project's root
    line: int            # 1-based: the (first) line emptied
    kind: str            # line | block
    expected: str        # the text removed after the cursor (a block's later lines with their indentation)
    lines: int = 1       # how many lines were removed
    indent: str = ""
    cross_file: bool = False
    cross_names: list[str] = field(default_factory=list)

    def cut(self, text: str) -> tuple[str, int, int]:
        """The file with this hole cut: (text, start offset, end offset) of what was removed; the cursor stands
        at the start offset."""
        return cut_lines(text, self.line, self.lines, self.indent)


def cut_lines(text: str, line: int, lines: int, indent: str) -> tuple[str, int, int]:
    """`text` without `lines` lines from the 1-based `line` on, but the first one's `indent`: (the text, the
    start and end offsets of what was removed)."""
    rows = text.split("\n")
    start = sum(len(l) + 1 for l in rows[:line - 1]) + len(indent)
    end = sum(len(l) + 1 for l in rows[:line - 1 + lines]) - 1
    return text[:start] + text[end:], start, end


def body_text(lines: list[str], first: int, last: int) -> tuple[str, str]:
    """Rows first..last (0-based) as a block hole takes them: (the first row's indentation, the rows' text after
    it, trailing blanks dropped)."""
    ind = _indent(lines[first])
    return ind, "\n".join(l.rstrip() for l in lines[first:last + 1])[len(ind):]


def read_source(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace").replace("\r\n", "\n")


def _indent(line: str) -> str:
    return line[:len(line) - len(line.lstrip(" \t"))]


def _byte_col(line: str, col: int) -> int:
    return len(line[:col].encode("utf-8"))


def _ancestors(node: Node | None):
    while node is not None:
        yield node
        node = node.parent


def code_rows(text: str, language: str, tree=None) -> list[int]:
    """0-based rows that can be one-line holes."""
    tree = tree or parse(text, language)
    lines = text.split("\n")
    out = []
    for row, line in enumerate(lines):
        s = line.strip()
        if not s or len(s) > MAX_LINE_CHARS or not LETTER.search(s) or CLOSERS.match(s) \
                or IMPORT_LINE.match(line) or DIRECTIVE.match(line):
            continue
        if tree is None:   # no grammar: comments by their look
            if not s.startswith(("#", "//", "/*", "* ", "*/", "--")):
                out.append(row)
            continue
        col = _byte_col(line, len(line) - len(line.lstrip(" \t")))
        node = tree.root_node.descendant_for_point_range((row, col), (row, col))
        skip = False
        for a in _ancestors(node):
            if a.type in IMPORT_NODES or "comment" in a.type or a.type == "ERROR":
                skip = True
                break
            if a.type in STRINGS and (a.start_point[0] < row or (a.parent is not None and (
                    a.parent.type in ("block", "module") or (a.parent.type == "expression_statement"
                                                             and a.parent.named_child_count == 1)))):
                skip = True   # inside a string that began above, or a docstring
                break
        if not skip:
            out.append(row)
    return out


def block_bodies(text: str, language: str, tree=None, kinds: dict[str, str] | None = None,
                 span: tuple[int, int] = (BLOCK_MIN, BLOCK_MAX)) -> list[tuple[int, int]]:
    """(first row, last row), 0-based, of bodies that can be block holes: 2-10 lines (`span`), whole lines, the
    first and last not blank; of the language's BODIES, or of `kinds` (node type -> its body's field)."""
    tree = tree or parse(text, language)
    kinds = BODIES.get(language) if kinds is None else kinds
    if tree is None or not kinds:
        return []
    lines = text.split("\n")
    out = set()
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        body_field = kinds.get(node.type)
        if body_field is None:
            continue
        body = node.child_by_field_name(body_field)
        if body is None:
            continue
        (r0, c0), (r1, c1) = body.start_point, body.end_point
        if language == "python":
            if body.type != "block" or lines[r0][:c0].strip() or r0 <= node.start_point[0]:
                continue
            first, last = r0, r1
        else:
            if body.type not in ("statement_block", "block", "compound_statement"):
                continue
            # `{` ends its line and `}` begins its own: the lines between are the body
            if lines[r0][c0 + 1:].strip() if c0 < len(lines[r0]) else True:
                continue
            if lines[r1][:max(0, c1 - 1)].strip():
                continue
            first, last = r0 + 1, r1 - 1
        if not span[0] <= last - first + 1 <= span[1]:
            continue
        if not lines[first].strip() or not lines[last].strip():
            continue
        if any(len(lines[r].strip()) > MAX_LINE_CHARS for r in range(first, last + 1)):
            continue
        out.add((first, last))
    return sorted(out)


def _name_of(node: Node) -> list[str]:
    """The names a definition node gives (C's come through its declarators)."""
    names = [c for c in node.children_by_field_name("name")]
    if not names:
        d = node.child_by_field_name("declarator")
        while d is not None and d.type not in NAME_TYPES:
            d = d.child_by_field_name("declarator") or next(
                (c for c in d.named_children if c.type in NAME_TYPES), None)
        if d is not None:
            names = [d]
        if node.type in ("type_definition", "field_declaration", "declaration"):
            names += [x for x in node.children_by_field_name("declarator") if x.type in NAME_TYPES]
    return [n.text.decode("utf-8", "replace") for n in names if n.type in NAME_TYPES]


def defined_names(text: str, language: str, tree=None) -> set[str]:
    tree = tree or parse(text, language)
    kinds = DEFS.get(language)
    if tree is None or not kinds:
        return set(re.findall(r"(?:def|class|func|fn|function|struct|type|interface)\s+([A-Za-z_]\w*)", text))
    out: set[str] = set()
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        if node.type in kinds:
            out.update(_name_of(node))
        # top-level (and class-level) constants and variables
        elif node.type in ("assignment",) and language == "python":
            holder = node.parent   # (grammars differ on whether an expression_statement stands between)
            if holder is not None and holder.type == "expression_statement":
                holder = holder.parent
            if holder is not None and (holder.type == "module" or (
                    holder.type == "block" and holder.parent is not None
                    and holder.parent.type == "class_definition")):
                left = node.child_by_field_name("left")
                if left is not None and left.type == "identifier":
                    out.add(left.text.decode("utf-8", "replace"))
        elif node.type == "variable_declarator" and language in ("typescript", "javascript", "tsx"):
            decl = node.parent
            top = decl.parent if decl is not None else None
            if top is not None and (top.type == "program" or (top.type == "export_statement"
                                                              and top.parent is not None
                                                              and top.parent.type == "program")):
                name = node.child_by_field_name("name")
                if name is not None and name.type == "identifier":
                    out.add(name.text.decode("utf-8", "replace"))
        elif node.type in ("const_spec", "var_spec") and language == "go":
            if node.parent is not None and node.parent.parent is not None \
                    and node.parent.parent.type == "source_file":
                out.update(n.text.decode("utf-8", "replace") for n in node.children_by_field_name("name"))
    return out


def scrub(text: str, language: str) -> str:
    """The text without its comments and string literals (their words name nothing)."""
    text = re.sub(r'"(?:\\.|[^"\\\n])*"', '""', text)
    if language != "rust":   # 'a is a lifetime there
        text = re.sub(r"'(?:\\.|[^'\\\n])*'", "''", text)
    if language == "python":
        return re.sub(r"#.*", "", text)
    return re.sub(r"//[^\n]*|/\*.*?\*/", "", text, flags=re.S)


class NameIndex:
    """Which files of a project define each name, per language."""

    def __init__(self, project: Project):
        self.by_name: dict[tuple[str, str], set[str]] = {}   # (language, name) -> files (relative paths)
        self.per_file: dict[str, set[str]] = {}
        for path, lang in project.source_files(index=True):
            rel = str(path.relative_to(project.root))
            try:
                names = defined_names(read_source(path), lang)
            except (OSError, ValueError):
                continue
            self.per_file[rel] = names
            for n in names:
                self.by_name.setdefault((lang, n), set()).add(rel)

    def cross_names(self, rel: str, language: str, expected: str) -> list[str]:
        own = self.per_file.get(rel, set())
        ignored = KEYWORDS.get(language, set())
        out = []
        for name in dict.fromkeys(IDENT.findall(scrub(expected, language))):
            if len(name) < 2 or name in own or name in ignored:
                continue
            if self.by_name.get((language, name), set()) - {rel}:
                out.append(name)
        return out


def holes_in_file(project: Project, path: Path, language: str, text: str, seed: int,
                  index: NameIndex | None = None, line_holes: int = LINE_HOLES,
                  block_holes: int = BLOCK_HOLES) -> list[Hole]:
    lines = text.split("\n")
    n = len(lines) - (1 if text.endswith("\n") else 0)
    if not MIN_LINES <= n <= MAX_LINES:
        return []
    tree = parse(text, language)
    rel = str(path.relative_to(project.root))
    rng = random.Random(f"{seed}/{project.name}/{rel}")
    rows = code_rows(text, language, tree)
    bodies = block_bodies(text, language, tree)
    picked = sorted(rng.sample(rows, min(line_holes, len(rows))))
    blocks = sorted(rng.sample(bodies, min(block_holes, len(bodies))))
    out = []
    for row in picked:
        ind = _indent(lines[row])
        out.append(Hole(f"{project.name}/{rel}:{row + 1}:line", project.name, language, rel, row + 1, "line",
                        lines[row][len(ind):].rstrip(), 1, ind))
    for first, last in blocks:
        ind, body = body_text(lines, first, last)
        out.append(Hole(f"{project.name}/{rel}:{first + 1}:block", project.name, language, rel, first + 1,
                        "block", body, last - first + 1, ind))
    if index is not None:
        for h in out:
            h.cross_names = index.cross_names(rel, language, h.expected)
            h.cross_file = bool(h.cross_names)
    return sorted(out, key=lambda h: (h.line, h.kind))


def cut_project(project: Project, seed: int = 0) -> list[Hole]:
    index = NameIndex(project)
    out: list[Hole] = []
    for path, lang in project.source_files():
        try:
            text = read_source(path)
        except OSError:
            continue
        out += holes_in_file(project, path, lang, text, seed, index)
    return out
