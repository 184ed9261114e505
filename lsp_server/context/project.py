"""The project around a file: the files it imports, found on disk under the workspace root, and their
definitions, shown by signature and docstring.

Imports resolved per language:
- Python: `import a.b`, `import a.b as c`, `from .x import y`, `from pkg.mod import name` (pkg/mod.py or
  pkg/mod/__init__.py; a name that is a submodule is that module), relative to the file's package, its
  package's source root, the workspace root and its `src/` folder; a name an `__init__.py` re-exports is
  followed to the file that defines it.
- TypeScript / JavaScript: relative specifiers (`./x`, `../y`, with .ts/.tsx/.d.ts/.js/.jsx/.mjs/.cjs and
  /index.*), and tsconfig.json's (or jsconfig.json's) `compilerOptions.paths` and `baseUrl`; `export ... from`
  in a barrel file is followed; `require('./x')`.
- Go: imports of the module's own packages (go.mod's `module` line): the package folder's .go files, not
  _test.go; and the cursor file's own package (its sibling files), which Go code uses without an import.
- Rust: `mod x;` (x.rs or x/mod.rs in the module's folder) and `use crate::a::b`, `use self::`, `use super::`,
  `use <this crate's name>::` (src/a.rs, src/a/mod.rs, ...).

Bounded: at most MAX_IMPORTED_FILES files per document, files over MAX_FILE_BYTES and binary files are not read,
and nothing the Excluder refuses (secrets, ignored files, anything outside the root) is ever opened. What is read
is cached by (path, mtime, size)."""
from __future__ import annotations

import json
import os
import re
import stat
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable

from .document import language_for_path
from .exclude import Excluder
from .outline import body_of, header_of, is_scope
from .syntax import parse, text_of

MAX_FILE_BYTES = 256 << 10
MAX_IMPORTED_FILES = 24
MAX_PACKAGE_FILES = 12      # Go: files read of one package folder
MAX_FOLLOW = 2              # re-exports followed (an __init__.py that imports the name from a module)
MAX_CACHED = 256            # files whose text and definitions are kept
MAX_CACHED_CHARS = 16 << 20  # ... and their texts, in all
RESOLVE_TTL_S = 30.0        # a document's resolved imports are looked for again after this (files come and go)
FULL_LINES = 10             # definitions this short are shown whole
DEF_MAX_LINES = 24          # longer ones by header, docstring and members' headers, at most this many lines
DEF_MAX_CHARS = 1600
DOC_LINES = 6               # a docstring or doc comment, at most
MAX_SAME_NAME = 3           # definitions of one name shown (a struct and its impl blocks)
MAX_REEXPORTS = 32
REEXPORTING = {"python", "typescript", "tsx", "javascript"}
TS_EXTENSIONS = (".ts", ".tsx", ".d.ts", ".js", ".jsx", ".mjs", ".cjs")


@dataclass(frozen=True)
class Import:
    path: str                                   # the imported file (absolute)
    names: tuple[tuple[str, str], ...] = ()     # (the name in that file, the name in the importing file)
    alias: str | None = None                    # the module's local name (`alias.name`); None: names only
    star: bool = False                          # all its names, unqualified (`import *`, Go's own package)


@dataclass(frozen=True)
class Definition:
    path: str
    name: str
    line: int                                   # 0-based
    text: str                                   # signature, docstring, members' signatures (bounded)
    members: frozenset[str] = frozenset()
    default: bool = False                       # TS/JS: the module's default export
    method: bool = False                        # Go: a method (called as x.Name)


# ---- reading files ------------------------------------------------------------------------------------------

class _Lru:
    """Bounded by entries, and by `size(value)` in total where given."""

    def __init__(self, limit: int = MAX_CACHED, size: Callable[[object], int] | None = None, max_size: int = 0):
        self.limit = limit
        self.size, self.max_size, self.total = size, max_size, 0
        self._d: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key):
        with self._lock:
            hit = self._d.get(key)
            if hit is not None:
                self._d.move_to_end(key)
            return hit

    def put(self, key, value) -> None:
        with self._lock:
            if self.size is not None:
                old = self._d.get(key)
                self.total += self.size(value) - (self.size(old) if old is not None else 0)
            self._d[key] = value
            self._d.move_to_end(key)
            while len(self._d) > self.limit or (self.size is not None and self.total > self.max_size
                                                 and len(self._d) > 1):
                _, gone = self._d.popitem(last=False)
                if self.size is not None:
                    self.total -= self.size(gone)

    def clear(self) -> None:
        with self._lock:
            self._d.clear()
            self.total = 0

    def __len__(self) -> int:
        return len(self._d)


_texts = _Lru(size=lambda v: len(v[1] or ""), max_size=MAX_CACHED_CHARS)   # path -> (stamp, text | None)
_defs = _Lru()         # (path, stamp or text hash) -> [Definition]
_file_imports = _Lru()  # (path, stamp or text hash) -> [Import]
_resolved = _Lru()     # (root, path, hash of the import lines, ttl slot) -> [Import]


def clear_caches() -> None:
    for c in (_texts, _defs, _file_imports, _resolved):
        c.clear()


def _read_file(path: str) -> str | None:
    """The one place that opens a file for its content: UTF-8 text, or None (binary, undecodable, unreadable)."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except OSError:
        return None
    if len(data) > MAX_FILE_BYTES or b"\0" in data[:8192]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _stamp(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return st.st_mtime_ns, st.st_size


def read_source(path: str, excluder: Excluder) -> str | None:
    """A file's text for context, or None: excluded, missing, over MAX_FILE_BYTES, binary. Cached by mtime."""
    if excluder.excluded(path):
        return None
    stamp = _stamp(path)
    if stamp is None or stamp[1] > MAX_FILE_BYTES:
        return None
    hit = _texts.get(path)
    if hit is not None and hit[0] == stamp:
        return hit[1]
    text = _read_file(path)
    _texts.put(path, (stamp, text))
    return text


def _isfile(path: str) -> bool:
    return os.path.isfile(path)


# ---- definitions --------------------------------------------------------------------------------------------

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


def _name_of(node) -> str:
    n = node.child_by_field_name("name")
    if n is None and node.type == "type_declaration":
        spec = next((c for c in node.children if c.type in ("type_spec", "type_alias")), None)
        n = spec.child_by_field_name("name") if spec is not None else None
    if n is None and node.type == "impl_item":
        n = node.child_by_field_name("type")
        while n is not None and n.child_by_field_name("type") is not None:   # Foo<T> -> Foo
            n = n.child_by_field_name("type")
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


# ---- resolving imports --------------------------------------------------------------------------------------

class Project:
    """A workspace root: what a document under it imports, and those files' definitions."""

    def __init__(self, root: str, excluder: Excluder | None = None):
        self.root = os.path.realpath(root)
        self.excluder = excluder or Excluder(self.root)

    # -- helpers
    def inside(self, path: str) -> bool:
        rel = os.path.relpath(os.path.realpath(path), self.root)
        return not (rel == ".." or rel.startswith(".." + os.sep) or os.path.isabs(rel))

    def shown(self, path: str) -> str:
        """The path as the prompt names it: relative to the root where it is under it."""
        if not os.path.isabs(path):
            return path
        for p in (os.path.abspath(path), os.path.realpath(path)):
            rel = os.path.relpath(p, self.root)
            if not (rel == ".." or rel.startswith(".." + os.sep)):
                return rel.replace(os.sep, "/")
        return path

    def source(self, path: str, open_texts: dict[str, str] | None = None) -> str | None:
        """A file's text: the editor's where it is open (newer than the disk), else the disk's."""
        if open_texts and path in open_texts:
            return None if self.excluder.excluded(path) else open_texts[path]
        return read_source(path, self.excluder)

    def _found(self, path: str) -> str | None:
        return path if _isfile(path) and self.inside(path) else None

    def _upward(self, start: str, names: tuple[str, ...]) -> str | None:
        """The nearest of these files from folder `start` up to the root."""
        d = start
        while True:
            for n in names:
                p = os.path.join(d, n)
                if _isfile(p):
                    return p
            if os.path.realpath(d) == self.root or not self.inside(d):
                return None
            parent = os.path.dirname(d)
            if parent == d:
                return None
            d = parent

    # -- the document's imports
    def imports(self, path: str, text: str, language: str, tree=None) -> list[Import]:
        """The files the document imports, in the order of its imports (each once), at most MAX_IMPORTED_FILES."""
        if not self.inside(path):
            return []
        if tree is None:
            tree = parse(text, language)
        if tree is None:
            return []
        nodes = _import_nodes(tree, language)
        lines = "\n".join(text_of(n) for n in nodes)
        key = (self.root, path, language, hash(lines), int(time.monotonic() // RESOLVE_TTL_S))
        hit = _resolved.get(key)
        if hit is None:
            hit = self._resolve(path, text, language, nodes)
            _resolved.put(key, hit)
        return hit

    def _resolve(self, path: str, text: str, language: str, nodes: list) -> list[Import]:
        path = os.path.abspath(path)
        if language == "python":
            out = self._python(path, nodes)
        elif language in ("typescript", "tsx", "javascript"):
            out = self._typescript(path, nodes, text)
        elif language == "go":
            out = self._go(path, nodes)
        elif language == "rust":
            out = self._rust(path, nodes)
        else:
            out = []
        seen, kept = set(), []
        for imp in out:
            key = (imp.path, imp.names, imp.alias, imp.star)
            if imp.path != path and key not in seen:
                seen.add(key)
                kept.append(imp)
        return kept[:MAX_IMPORTED_FILES * 2]

    def file_imports(self, path: str, text: str) -> list[Import]:
        """The imports of an imported file (to follow re-exports), cached by its text."""
        key = (self.root, path, len(text), hash(text))
        hit = _file_imports.get(key)
        if hit is None:
            language = language_for_path(path)
            tree = parse(text, language)
            hit = self._resolve(path, text, language, _import_nodes(tree, language)) if tree is not None else []
            _file_imports.put(key, hit)
        return hit

    # -- Python
    def _py_roots(self, path: str) -> list[str]:
        d = os.path.dirname(path)
        top = d
        while _isfile(os.path.join(top, "__init__.py")) and os.path.realpath(top) != self.root:
            top = os.path.dirname(top)
        roots = [top, self.root, os.path.join(self.root, "src"), d]
        out = []
        for r in roots:
            if r not in out and os.path.isdir(r) and self.inside(r):
                out.append(r)
        return out

    def _py_module(self, path: str, module: str, level: int) -> str | None:
        parts = [p for p in module.split(".") if p]
        if level:
            base = os.path.dirname(path)
            for _ in range(level - 1):
                base = os.path.dirname(base)
            bases = [base]
        else:
            bases = self._py_roots(path)
        for b in bases:
            p = os.path.join(b, *parts) if parts else b
            for cand in ((p + ".py", p + ".pyi") if parts else ()) + (os.path.join(p, "__init__.py"),):
                if self._found(cand):
                    return cand
        return None

    def _python(self, path: str, nodes: list) -> list[Import]:
        out: list[Import] = []
        for node in nodes:
            if node.type == "import_statement":
                for c in node.named_children:
                    if c.type == "aliased_import":
                        mod, alias = text_of(c.child_by_field_name("name")), text_of(c.child_by_field_name("alias"))
                    else:
                        mod = alias = text_of(c)
                    f = self._py_module(path, mod, 0)
                    if f:
                        out.append(Import(f, alias=alias))
            elif node.type == "import_from_statement":
                m = node.child_by_field_name("module_name")
                level, mod = 0, text_of(m) if m is not None else ""
                if m is not None and m.type == "relative_import":
                    prefix = next((c for c in m.children if c.type == "import_prefix"), None)
                    level = len(text_of(prefix)) if prefix is not None else 1
                    dotted = next((c for c in m.children if c.type == "dotted_name"), None)
                    mod = text_of(dotted) if dotted is not None else ""
                names: list[tuple[str, str]] = []
                for n in node.children_by_field_name("name"):
                    if n.type == "aliased_import":
                        names.append((text_of(n.child_by_field_name("name")), text_of(n.child_by_field_name("alias"))))
                    else:
                        names.append((text_of(n), text_of(n)))
                star = any(c.type == "wildcard_import" for c in node.children)
                base = self._py_module(path, mod, level)
                explicit = []
                for name, local in names:
                    sub = self._py_module(path, f"{mod}.{name}" if mod else name, level) if "." not in name else None
                    if sub and sub != base:
                        out.append(Import(sub, alias=local))
                    else:
                        explicit.append((name, local))
                if base and (explicit or star):
                    out.append(Import(base, names=tuple(explicit), star=star))
        return out

    # -- TypeScript / JavaScript
    def _tsconfig(self, path: str) -> tuple[str, str | None, dict[str, list[str]]]:
        """(folder the paths are relative to, baseUrl folder or None, paths) of the nearest tsconfig.json."""
        cfg = self._upward(os.path.dirname(path), ("tsconfig.json", "jsconfig.json"))
        if cfg is None:
            return "", None, {}
        options: dict = {}
        chain, seen = cfg, set()
        base_dir = os.path.dirname(cfg)
        paths_dir = None
        for _ in range(3):   # `extends`, followed a little: the nearest file's options win
            if chain is None or chain in seen:
                break
            seen.add(chain)
            data = _jsonc(self.source(chain) or "")
            opts = data.get("compilerOptions") if isinstance(data.get("compilerOptions"), dict) else {}
            here = os.path.dirname(chain)
            for k in ("baseUrl", "paths"):
                if k in opts and k not in options:
                    options[k] = opts[k]
                    if k == "baseUrl":
                        options["_base_from"] = here
                    if k == "paths":
                        paths_dir = here
            ext = data.get("extends")
            chain = os.path.normpath(os.path.join(here, ext + ("" if ext.endswith(".json") else ".json"))) \
                if isinstance(ext, str) and ext.startswith(".") else None
        base_url = os.path.normpath(os.path.join(options["_base_from"], options["baseUrl"])) \
            if isinstance(options.get("baseUrl"), str) else None
        paths = options.get("paths") if isinstance(options.get("paths"), dict) else {}
        paths = {k: [v for v in vs if isinstance(v, str)] for k, vs in paths.items() if isinstance(vs, list)}
        return base_url or paths_dir or base_dir, base_url, paths

    def _ts_file(self, base: str) -> str | None:
        stem, ext = os.path.splitext(base)
        cands = []
        if ext in (".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts"):
            if ext in (".js", ".jsx", ".mjs", ".cjs"):   # TypeScript's ESM imports name the .js it compiles to
                cands += [stem + ".ts", stem + ".tsx", stem + ".d.ts", stem + ".mts"]
            cands.append(base)
        cands += [base + e for e in TS_EXTENSIONS] + [os.path.join(base, "index" + e) for e in TS_EXTENSIONS]
        return next((c for c in cands if self._found(c)), None)

    def _ts_module(self, path: str, spec: str) -> str | None:
        if spec.startswith("."):
            return self._ts_file(os.path.normpath(os.path.join(os.path.dirname(path), spec)))
        paths_dir, base_url, paths = self._tsconfig(path)
        for pattern, targets in paths.items():
            if "*" in pattern:
                pre, _, post = pattern.partition("*")
                if not (spec.startswith(pre) and spec.endswith(post) and len(spec) >= len(pre) + len(post)):
                    continue
                star = spec[len(pre):len(spec) - len(post)]
            elif spec != pattern:
                continue
            else:
                star = ""
            for t in targets:
                f = self._ts_file(os.path.normpath(os.path.join(paths_dir, t.replace("*", star))))
                if f:
                    return f
        if base_url:
            return self._ts_file(os.path.normpath(os.path.join(base_url, spec)))
        return None

    def _typescript(self, path: str, nodes: list, text: str) -> list[Import]:
        out: list[Import] = []
        for node in nodes:
            src = node.child_by_field_name("source")
            if src is None:
                continue
            f = self._ts_module(path, _unquote(text_of(src)))
            if f is None:
                continue
            names: list[tuple[str, str]] = []
            alias, star = None, False
            if node.type == "import_statement":
                clause = next((c for c in node.children if c.type == "import_clause"), None)
                for c in clause.children if clause is not None else ():
                    if c.type == "identifier":
                        names.append(("default", text_of(c)))
                    elif c.type == "namespace_import":
                        ident = next((x for x in c.children if x.type == "identifier"), None)
                        alias = text_of(ident) if ident is not None else None
                    elif c.type == "named_imports":
                        for s in c.named_children:
                            if s.type == "import_specifier":
                                n, a = s.child_by_field_name("name"), s.child_by_field_name("alias")
                                names.append((text_of(n), text_of(a) if a is not None else text_of(n)))
            else:   # export ... from
                clause = next((c for c in node.children if c.type == "export_clause"), None)
                if clause is None:
                    star = True
                    ns = next((c for c in node.children if c.type == "namespace_export"), None)
                    if ns is not None:
                        star, alias = False, text_of(ns.named_children[-1]) if ns.named_children else None
                else:
                    for s in clause.named_children:
                        n, a = s.child_by_field_name("name"), s.child_by_field_name("alias")
                        if n is not None:
                            names.append((text_of(n), text_of(a) if a is not None else text_of(n)))
            if names or alias or star:
                out.append(Import(f, names=tuple(names), alias=alias, star=star))
            else:
                out.append(Import(f, star=True))   # `import "./x"`: its definitions, by name only
        for m in REQUIRE.finditer(text):
            f = self._ts_module(path, m.group(2))
            if f is None:
                continue
            target = m.group(1)
            if target.startswith("{"):
                names = [(p.split(":")[0].strip(), p.split(":")[-1].strip()) for p in target[1:-1].split(",")
                         if p.strip()]
                out.append(Import(f, names=tuple(names)))
            else:
                out.append(Import(f, alias=target))
        return out

    # -- Go
    def _go(self, path: str, nodes: list) -> list[Import]:
        out: list[Import] = []
        gomod = self._upward(os.path.dirname(path), ("go.mod",))
        module = None
        if gomod is not None:
            m = re.search(r"^\s*module\s+(\S+)", self.source(gomod) or "", re.M)
            module = m.group(1).strip('"') if m else None
        for node in nodes:
            for spec in _go_specs(node):
                p = spec.child_by_field_name("path")
                if p is None or module is None:
                    continue
                imp = _unquote(text_of(p))
                if imp != module and not imp.startswith(module + "/"):
                    continue
                folder = os.path.join(os.path.dirname(gomod), *imp[len(module):].strip("/").split("/"))
                n = spec.child_by_field_name("name")
                local = text_of(n) if n is not None else imp.rsplit("/", 1)[-1]
                if local == "_":
                    continue
                for f in self._go_files(folder):
                    out.append(Import(f, star=True) if local == "." else Import(f, alias=local))
        # the file's own package: its other files' names are used without an import
        mine = os.path.basename(path)
        for f in self._go_files(os.path.dirname(path), with_tests=mine.endswith("_test.go")):
            out.append(Import(f, star=True))
        return out

    def _go_files(self, folder: str, with_tests: bool = False) -> list[str]:
        if not os.path.isdir(folder) or not self.inside(folder):
            return []
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            return []
        files = [os.path.join(folder, n) for n in names
                 if n.endswith(".go") and (with_tests or not n.endswith("_test.go"))]
        return [f for f in files if _isfile(f)][:MAX_PACKAGE_FILES]

    # -- Rust
    def _crate(self, path: str) -> tuple[str | None, str]:
        """(the crate root's folder (src/), the crate's name as code names it)."""
        cargo = self._upward(os.path.dirname(path), ("Cargo.toml",))
        if cargo is None:
            return None, ""
        text = self.source(cargo) or ""
        m = re.search(r"^\[package\][^\[]*?^\s*name\s*=\s*\"([^\"]+)\"", text, re.M | re.S)
        return os.path.join(os.path.dirname(cargo), "src"), (m.group(1).replace("-", "_") if m else "")

    def _rust_root_file(self, src: str, path: str) -> str | None:
        if os.path.dirname(path) == src and os.path.basename(path) in ("main.rs", "lib.rs"):
            return path
        return self._found(os.path.join(src, "lib.rs")) or self._found(os.path.join(src, "main.rs"))

    def _rust_module_of(self, path: str) -> tuple[str, str]:
        """(file, folder of its submodules) of the module a file is."""
        if os.path.basename(path) in ("main.rs", "lib.rs", "mod.rs"):
            return path, os.path.dirname(path)
        return path, os.path.splitext(path)[0]

    def _rust_child(self, module: tuple[str, str], name: str) -> tuple[str, str] | None:
        folder = module[1]
        f = self._found(os.path.join(folder, name + ".rs"))
        if f:
            return f, os.path.join(folder, name)
        f = self._found(os.path.join(folder, name, "mod.rs"))
        return (f, os.path.join(folder, name)) if f else None

    def _rust_parent(self, module: tuple[str, str], src: str | None, path: str) -> tuple[str, str] | None:
        parent = os.path.dirname(module[1])
        if src is not None and os.path.normpath(parent) == os.path.normpath(src):
            root = self._rust_root_file(src, path)
            return (root, src) if root else None
        f = self._found(parent + ".rs") or self._found(os.path.join(parent, "mod.rs"))
        return (f, parent) if f else None

    def _rust(self, path: str, nodes: list) -> list[Import]:
        out: list[Import] = []
        src, crate_name = self._crate(path)
        here = self._rust_module_of(path)
        local_mods = set()
        for node in nodes:
            if node.type == "mod_item" and node.child_by_field_name("body") is None:
                name = text_of(node.child_by_field_name("name"))
                child = self._rust_child(here, name)
                local_mods.add(name)
                if child:
                    out.append(Import(child[0], alias=name))
        for node in nodes:
            if node.type != "use_declaration":
                continue
            arg = node.child_by_field_name("argument")
            for segs, alias, glob in _use_paths(arg, []) if arg is not None else []:
                if not segs:
                    continue
                first = segs[0]
                if first == "crate" or (crate_name and first == crate_name):
                    root = self._rust_root_file(src, path) if src else None
                    if root is None:
                        continue
                    module, rest = (root, src), segs[1:]
                elif first == "self":
                    module, rest = here, segs[1:]
                elif first == "super":
                    module, rest = here, segs
                    while rest and rest[0] == "super" and module is not None:
                        module = self._rust_parent(module, src, path)
                        rest = rest[1:]
                    if module is None:
                        continue
                elif first in local_mods:
                    module, rest = here, segs
                else:
                    continue   # another crate
                item = None
                for seg in rest:
                    if seg == "self":
                        break
                    child = self._rust_child(module, seg)
                    if child is None:
                        item = seg
                        break
                    module = child
                if item is not None:
                    out.append(Import(module[0], names=((item, alias or item),)))
                elif glob:
                    out.append(Import(module[0], star=True))
                elif module[0] != path:
                    last = [s for s in segs if s != "self"][-1]
                    out.append(Import(module[0], alias=alias or last))
        return out


REQUIRE = re.compile(r"(?:const|let|var)\s+(\{[^}]{0,400}\}|[A-Za-z_$][\w$]*)\s*=\s*require\(\s*['\"]([^'\"]+)['\"]\s*\)")
IMPORT_TYPES = {"import_statement", "import_from_statement", "future_import_statement", "import_declaration",
                "use_declaration", "mod_item"}
NESTED = {"if_statement", "try_statement", "with_statement", "block", "else_clause", "except_clause",
          "finally_clause"}


def _import_nodes(tree, language: str) -> list:
    """The import statements at the top level (and directly in a top-level `if`/`try`: TYPE_CHECKING,
    optional imports)."""
    out = []

    def visit(node, depth: int) -> None:
        for c in node.children:
            if c.type in IMPORT_TYPES or (c.type == "export_statement" and c.child_by_field_name("source")):
                out.append(c)
            elif depth < 3 and c.type in NESTED:
                visit(c, depth + 1)
    visit(tree.root_node, 0)
    return out


def _go_specs(node):
    for c in node.named_children:
        if c.type == "import_spec":
            yield c
        elif c.type == "import_spec_list":
            yield from (s for s in c.named_children if s.type == "import_spec")


def _path_segments(node) -> list[str]:
    if node is None:
        return []
    if node.type == "scoped_identifier":
        return _path_segments(node.child_by_field_name("path")) + [text_of(node.child_by_field_name("name"))]
    return [text_of(node)]


def _use_paths(node, prefix: list[str]) -> list[tuple[list[str], str | None, bool]]:
    """The paths a use declaration's argument names: (segments, alias, glob)."""
    t = node.type
    if t in ("identifier", "crate", "self", "super", "scoped_identifier"):
        return [(prefix + _path_segments(node), None, False)]
    if t == "use_as_clause":
        return [(prefix + _path_segments(node.child_by_field_name("path")),
                 text_of(node.child_by_field_name("alias")), False)]
    if t == "scoped_use_list":
        base = prefix + _path_segments(node.child_by_field_name("path"))
        lst = node.child_by_field_name("list")
        return _use_paths(lst, base) if lst is not None else []
    if t == "use_list":
        out = []
        for c in node.named_children:
            out += _use_paths(c, prefix)
        return out
    if t == "use_wildcard":
        inner = next((c for c in node.named_children), None)
        return [(prefix + _path_segments(inner), None, True)]
    return []


def _unquote(s: str) -> str:
    return s.strip().strip("'\"`")


def _jsonc(text: str) -> dict:
    """JSON with comments and trailing commas (tsconfig.json), or {}."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("//", i):
            i = text.find("\n", i)
            i = n if i < 0 else i
        elif text.startswith("/*", i):
            i = text.find("*/", i + 2)
            i = n if i < 0 else i + 2
        else:
            out.append(c)
            i += 1
    cleaned = re.sub(r",(\s*[}\]])", r"\1", "".join(out))
    try:
        data = json.loads(cleaned)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


# ---- candidates and their ranking ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Candidate:
    definition: Definition
    local: str              # the name the document uses for it ("" : by its own name, or qualified)
    alias: str | None       # the module's local name, for `alias.name`
    explicit: bool          # imported by name


def candidates(project: Project, imports: list[Import], open_texts: dict[str, str] | None = None
               ) -> list[Candidate]:
    """The definitions the document can reach through its imports, in import order (bounded)."""
    out: list[Candidate] = []
    files = 0
    for imp in imports:
        if files >= MAX_IMPORTED_FILES:
            break
        text = project.source(imp.path, open_texts)
        if text is None:
            continue
        files += 1
        defs = file_definitions(imp.path, text)
        if imp.alias or imp.star:
            for d in defs:
                out.append(Candidate(d, d.name if imp.star else "", imp.alias, False))
        if imp.alias and language_for_path(imp.path) in REEXPORTING:
            # a package's __init__.py or an index.ts: the names it imports are its own (`pkg.Name`)
            for sub in project.file_imports(imp.path, text):
                for name, local in sub.names[:MAX_REEXPORTS]:
                    other = project.source(sub.path, open_texts)
                    if other is not None:
                        out.extend(Candidate(d, "", imp.alias, False)
                                   for d in _find(project, sub.path, other, name, open_texts, MAX_FOLLOW - 1))
        for name, local in imp.names:
            found = _find(project, imp.path, text, name, open_texts, MAX_FOLLOW)
            out.extend(Candidate(d, local, None, True) for d in found)
    return out


def _find(project: Project, path: str, text: str, name: str, open_texts, depth: int) -> list[Definition]:
    """The definition of `name` in a file, or where the file imports it from (a re-export), `depth` deep."""
    defs = file_definitions(path, text)
    # (a Rust struct and its impl blocks go by the same name)
    hit = [d for d in defs if d.name == name or (name == "default" and d.default)]
    if hit or depth <= 0:
        return hit[:MAX_SAME_NAME]
    for imp in project.file_imports(path, text):
        source = next((orig for orig, local in imp.names if local == name), None)
        if source is None and not imp.star:
            continue
        other = project.source(imp.path, open_texts)
        if other is not None:
            found = _find(project, imp.path, other, source or name, open_texts, depth - 1)
            if found:
                return found
    return []


IDENT = re.compile(r"[A-Za-z_$][\w$]*")
QUALIFIED = re.compile(r"([A-Za-z_$][\w$]*)\s*(?:\.|::)\s*([A-Za-z_$][\w$]*)")
ATTRIBUTE = re.compile(r"\.\s*([A-Za-z_$][\w$]*)")
AT_CURSOR = re.compile(r"([A-Za-z_$][\w$]*)\s*(?:\.|::)\s*([A-Za-z_$][\w$]*)?$")


@dataclass
class Near:
    """What the code around the cursor names: identifiers by weight, qualified names, attribute names."""
    weights: dict[str, float]
    qualified: dict[tuple[str, str], int]
    attributes: set[str]
    after: tuple[str, str] | None = None    # the cursor stands after `module.` (and the start of a name)

    @classmethod
    def of(cls, weights: dict[str, float], text: str, before_cursor: str = "") -> "Near":
        qual: dict[tuple[str, str], int] = {}
        for m in QUALIFIED.finditer(text):
            qual[(m.group(1), m.group(2))] = qual.get((m.group(1), m.group(2)), 0) + 1
        m = AT_CURSOR.search(before_cursor[-200:])
        return cls(weights, qual, set(ATTRIBUTE.findall(text)), (m.group(1), m.group(2) or "") if m else None)


def score(c: Candidate, near: Near) -> tuple[int, float] | None:
    """(tier, weight) of a candidate for the code near the cursor: 0 names imported by name or qualified by
    their module's name (`tax.rate`), 1 names reached otherwise (a same-package name, a class's method); None:
    not used there."""
    d = c.definition
    if c.explicit and c.local in near.weights:
        return 0, near.weights[c.local]
    if c.alias and (c.alias, d.name) in near.qualified:
        return 0, near.weights.get(d.name, 0.5)
    if c.alias and near.after and (c.alias == near.after[0] or c.alias.endswith("." + near.after[0])) \
            and d.name.startswith(near.after[1]) and not d.name.startswith("_"):
        return 0, 0.5   # `module.` at the cursor: what it holds
    if c.alias and "." in c.alias and any(q[1] == d.name and c.alias.endswith("." + q[0])
                                          for q in near.qualified):   # `import a.b` used as a.b.name
        return 0, 1.0
    if not c.alias and not c.explicit and d.name in near.weights and len(d.name) > 2:
        return 1, near.weights[d.name]
    if d.method and d.name in near.attributes:
        return 1, near.weights.get(d.name, 0.5)
    if (c.explicit or not c.alias or d.members):
        used = [m for m in d.members if len(m) > 2 and not m.startswith("__") and m in near.attributes]
        if used and (c.explicit or c.local or c.alias):
            return 1, 0.5 * max(near.weights.get(m, 0.5) for m in used)
    return None


def file_score(c: Candidate, counts: dict[str, int], qualified: dict[tuple[str, str], int]) -> float:
    """How much the whole document uses a candidate (0: not at all): for filling what room is left."""
    d = c.definition
    if c.explicit:
        return max(0, counts.get(c.local, 0) - 1)   # less its import
    if c.alias:
        return float(qualified.get((c.alias, d.name), 0))
    return float(counts.get(d.name, 0)) if len(d.name) > 2 else 0.0


def ranked(cands: list[Candidate], near: Near) -> list[tuple[int, float, Candidate]]:
    """Candidates used near the cursor, best first (tier, then weight, then import order), each definition once."""
    out, seen = [], set()
    for i, c in enumerate(cands):
        s = score(c, near)
        key = (c.definition.path, c.definition.line, c.definition.name)
        if s is not None and key not in seen:
            seen.add(key)
            out.append((s[0], -s[1], i, c))
    out.sort(key=lambda t: t[:3])
    return [(t, -w, c) for t, w, _, c in out]


def ranked_in_file(cands: list[Candidate], text: str) -> list[Candidate]:
    counts: dict[str, int] = {}
    for m in IDENT.findall(text):
        counts[m] = counts.get(m, 0) + 1
    qual: dict[tuple[str, str], int] = {}
    for m in QUALIFIED.finditer(text):
        qual[(m.group(1), m.group(2))] = qual.get((m.group(1), m.group(2)), 0) + 1
    scored, seen = [], set()
    for i, c in enumerate(cands):
        s = file_score(c, counts, qual)
        key = (c.definition.path, c.definition.line, c.definition.name)
        if s > 0 and key not in seen:
            seen.add(key)
            scored.append((-s, i, c))
    scored.sort(key=lambda t: t[:2])
    return [c for _, _, c in scored]


_projects = _Lru(limit=8)


def project_for(root: str, exclude: tuple[str, ...] = ()) -> Project:
    """One Project per root and `exclude` setting (its Excluder reads the ignore files again when they change)."""
    key = (os.path.realpath(root), tuple(exclude))
    hit = _projects.get(key)
    if hit is None:
        hit = Project(key[0], Excluder(key[0], exclude))
        _projects.put(key, hit)
    return hit


MARKERS = (".git", "pyproject.toml", "package.json", "go.mod", "Cargo.toml")


def find_root(path: str, markers: tuple[str, ...] = MARKERS, exists: Callable[[str], bool] = os.path.exists
              ) -> str | None:
    """The nearest folder above a file that holds one of the markers (a repository, a package's manifest)."""
    d = os.path.dirname(os.path.abspath(path))
    while True:
        if any(exists(os.path.join(d, m)) for m in markers):
            return d
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent
