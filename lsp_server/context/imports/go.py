"""Go: imports of the module's own packages (go.mod's `module` line): the package folder's .go files, not
_test.go; and the cursor file's own package (its sibling files), which Go code uses without an import."""
from __future__ import annotations

import os
import re

from ..files import ProjectFiles
from ..syntax import text_of
from .base import Import, unquote

MAX_PACKAGE_FILES = 12      # files read of one package folder


def resolve(project: ProjectFiles, path: str, nodes: list, text: str) -> list[Import]:
    out: list[Import] = []
    gomod = project.upward(os.path.dirname(path), ("go.mod",))
    module = None
    if gomod is not None:
        m = re.search(r"^\s*module\s+(\S+)", project.source(gomod) or "", re.M)
        module = m.group(1).strip('"') if m else None
    for node in nodes:
        for spec in _go_specs(node):
            p = spec.child_by_field_name("path")
            if p is None or module is None:
                continue
            imp = unquote(text_of(p))
            if imp != module and not imp.startswith(module + "/"):
                continue
            folder = os.path.join(os.path.dirname(gomod), *imp[len(module):].strip("/").split("/"))
            n = spec.child_by_field_name("name")
            local = text_of(n) if n is not None else imp.rsplit("/", 1)[-1]
            if local == "_":
                continue
            for f in _go_files(project, folder):
                out.append(Import(f, star=True) if local == "." else Import(f, alias=local))
    # the file's own package: its other files' names are used without an import
    mine = os.path.basename(path)
    for f in _go_files(project, os.path.dirname(path), with_tests=mine.endswith("_test.go")):
        out.append(Import(f, star=True))
    return out


def _go_files(project: ProjectFiles, folder: str, with_tests: bool = False) -> list[str]:
    if not os.path.isdir(folder) or not project.inside(folder):
        return []
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    files = [os.path.join(folder, n) for n in names
             if n.endswith(".go") and (with_tests or not n.endswith("_test.go"))]
    return [f for f in files if os.path.isfile(f)][:MAX_PACKAGE_FILES]


def _go_specs(node):
    for c in node.named_children:
        if c.type == "import_spec":
            yield c
        elif c.type == "import_spec_list":
            yield from (s for s in c.named_children if s.type == "import_spec")
