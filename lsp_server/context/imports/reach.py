"""The definitions a document can reach through its imports: those of the files it imports, and, through a
package's __init__.py or a barrel index.ts, those of the files they re-export."""
from __future__ import annotations

from dataclasses import dataclass

from ..definitions import Definition, file_definitions
from ..document import language_for_path
from .base import Import
from .resolve import MAX_IMPORTED_FILES, Project

MAX_FOLLOW = 2              # re-exports followed (an __init__.py that imports the name from a module)
MAX_SAME_NAME = 3           # definitions of one name shown (a struct and its impl blocks)
MAX_REEXPORTS = 32
REEXPORTING = {"python", "typescript", "tsx", "javascript"}


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
