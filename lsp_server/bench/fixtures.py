"""Benchmark cases: real-looking source files with the cursor marked by `<CURSOR>`."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..context import Document

MARKER = "<CURSOR>"

# folder name -> the article's row name (the first three are the article's task types)
CATEGORIES = {
    "python-boilerplate": "Python boilerplate & classes",
    "algorithmic": "Algorithmic logic",
    "json-api": "JSON schema & API mappings",
    "typescript": "TypeScript",
    "go": "Go",
}


@dataclass
class Case:
    category: str
    name: str
    document: Document
    line: int     # 0-based
    col: int      # 0-based
    expected: str | None


def find_fixture(relative: str, option: str, directory: bool = False) -> Path:
    """`fixtures/<relative>` (a file, or a folder) in the working directory or above, else above this package
    (a source checkout)."""
    here = Path(__file__).resolve()
    for parent in [Path.cwd(), *here.parents]:
        path = parent / "fixtures" / relative
        if path.is_dir() if directory else path.is_file():
            return path
    raise FileNotFoundError(f"fixtures/{relative} not found; pass {option}")


def default_root() -> Path:
    return find_fixture("bench", "--fixtures", directory=True)


def load_case(path: Path, category: str) -> Case:
    raw = path.read_text(encoding="utf-8")
    if raw.count(MARKER) != 1:
        raise ValueError(f"{path}: needs exactly one {MARKER} marker")
    off = raw.index(MARKER)
    text = raw.replace(MARKER, "")
    before = text[:off]
    line = before.count("\n")
    col = off - (before.rfind("\n") + 1)
    exp_path = path.with_name(path.name + ".expected")
    expected = exp_path.read_text(encoding="utf-8") if exp_path.exists() else None
    return Case(category, path.name, Document(str(path), text), line, col, expected)


def load_cases(root: Path, categories: list[str] | None = None, limit: int = 0) -> list[Case]:
    cases = []
    for cat in categories or list(CATEGORIES):
        folder = root / cat
        if not folder.is_dir():
            raise FileNotFoundError(f"no fixture folder {folder}")
        files = sorted(p for p in folder.iterdir() if p.is_file() and not p.name.endswith(".expected"))
        if limit:
            files = files[:limit]
        cases += [load_case(p, cat) for p in files]
    return cases
