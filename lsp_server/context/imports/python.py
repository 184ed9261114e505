"""Python: `import a.b`, `import a.b as c`, `from .x import y`, `from pkg.mod import name` (pkg/mod.py or
pkg/mod/__init__.py; a name that is a submodule is that module), relative to the file's package, its package's
source root, the workspace root and its `src/` folder."""
from __future__ import annotations

import os

from ..files import ProjectFiles
from ..syntax import text_of
from .base import Import


def _py_roots(project: ProjectFiles, path: str) -> list[str]:
    d = os.path.dirname(path)
    top = d
    while os.path.isfile(os.path.join(top, "__init__.py")) and os.path.realpath(top) != project.root:
        top = os.path.dirname(top)
    roots = [top, project.root, os.path.join(project.root, "src"), d]
    out = []
    for r in roots:
        if r not in out and os.path.isdir(r) and project.inside(r):
            out.append(r)
    return out


def _py_module(project: ProjectFiles, path: str, module: str, level: int) -> str | None:
    parts = [p for p in module.split(".") if p]
    if level:
        base = os.path.dirname(path)
        for _ in range(level - 1):
            base = os.path.dirname(base)
        bases = [base]
    else:
        bases = _py_roots(project, path)
    for b in bases:
        p = os.path.join(b, *parts) if parts else b
        for cand in ((p + ".py", p + ".pyi") if parts else ()) + (os.path.join(p, "__init__.py"),):
            if project.found(cand):
                return cand
    return None


def resolve(project: ProjectFiles, path: str, nodes: list, text: str) -> list[Import]:
    out: list[Import] = []
    for node in nodes:
        if node.type == "import_statement":
            for c in node.named_children:
                if c.type == "aliased_import":
                    mod, alias = text_of(c.child_by_field_name("name")), text_of(c.child_by_field_name("alias"))
                else:
                    mod = alias = text_of(c)
                f = _py_module(project, path, mod, 0)
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
            base = _py_module(project, path, mod, level)
            explicit = []
            for name, local in names:
                sub = _py_module(project, path, f"{mod}.{name}" if mod else name, level) if "." not in name else None
                if sub and sub != base:
                    out.append(Import(sub, alias=local))
                else:
                    explicit.append((name, local))
            if base and (explicit or star):
                out.append(Import(base, names=tuple(explicit), star=star))
    return out
