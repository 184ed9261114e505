"""A document's imports, resolved to files under its workspace root by its language's module; cached."""
from __future__ import annotations

import os
import time

from ..document import language_for_path
from ..exclude import Excluder
from ..files import Lru, ProjectFiles, file_cache
from ..syntax import parse, text_of
from . import go, python, rust, typescript
from .base import Import

MAX_IMPORTED_FILES = 24
RESOLVE_TTL_S = 30.0        # a document's resolved imports are looked for again after this (files come and go)
RESOLVERS = {"python": python.resolve, "typescript": typescript.resolve, "tsx": typescript.resolve,
             "javascript": typescript.resolve, "go": go.resolve, "rust": rust.resolve}
IMPORT_TYPES = {"import_statement", "import_from_statement", "future_import_statement", "import_declaration",
                "use_declaration", "mod_item"}
NESTED = {"if_statement", "try_statement", "with_statement", "block", "else_clause", "except_clause",
          "finally_clause"}

_file_imports = file_cache()  # (root, path, text length, text hash) -> [Import]
_resolved = file_cache()      # (root, path, language, hash of the import lines, ttl slot) -> [Import]


class Project(ProjectFiles):
    """A workspace root: what a document under it imports."""

    def imports(self, path: str, text: str, language: str, tree=None) -> list[Import]:
        """The files the document imports, in the order of its imports (each once), at most MAX_IMPORTED_FILES."""
        if not self.inside(path):
            return []
        if tree is None:
            tree = parse(text, language)
        if tree is None:
            return []
        nodes = import_nodes(tree, language)
        lines = "\n".join(text_of(n) for n in nodes)
        key = (self.root, path, language, hash(lines), int(time.monotonic() // RESOLVE_TTL_S))
        hit = _resolved.get(key)
        if hit is None:
            hit = self._resolve(path, text, language, nodes)
            _resolved.put(key, hit)
        return hit

    def _resolve(self, path: str, text: str, language: str, nodes: list) -> list[Import]:
        path = os.path.abspath(path)
        resolve = RESOLVERS.get(language)
        out = resolve(self, path, nodes, text) if resolve is not None else []
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
            hit = self._resolve(path, text, language, import_nodes(tree, language)) if tree is not None else []
            _file_imports.put(key, hit)
        return hit


def import_nodes(tree, language: str) -> list:
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


_projects = Lru(limit=8)


def project_for(root: str, exclude: tuple[str, ...] = ()) -> Project:
    """One Project per root and `exclude` setting (its Excluder reads the ignore files again when they change)."""
    key = (os.path.realpath(root), tuple(exclude))
    hit = _projects.get(key)
    if hit is None:
        hit = Project(key[0], Excluder(key[0], exclude))
        _projects.put(key, hit)
    return hit
