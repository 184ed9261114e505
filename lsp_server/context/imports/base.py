"""What every language's import resolution gives back, and what they share. A language's module holds one
`resolve(root, path, nodes, text)`: the Imports of a document at `path` (absolute, under `root`), from its import
statements `nodes` (import_nodes) and its text, in the order of its imports."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Import:
    path: str                                   # the imported file (absolute)
    names: tuple[tuple[str, str], ...] = ()     # (the name in that file, the name in the importing file)
    alias: str | None = None                    # the module's local name (`alias.name`); None: names only
    star: bool = False                          # all its names, unqualified (`import *`, Go's own package)


def unquote(s: str) -> str:
    return s.strip().strip("'\"`")
