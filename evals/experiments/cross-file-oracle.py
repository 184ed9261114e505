"""How often a cross-file hole's first line could be copied from the project: the real-code suite's cross-file holes
(every one of a half), and whether their first line (stripped) stands verbatim elsewhere in their own file (outside
the 40 lines above and 8 below that a fast prompt holds), in another source file of the project (not under dist/ or
build/: an npm package's compiled bundles repeat its sources), and in the 3 windows of other files most like the 6
lines above the cursor (Jaccard of identifiers, as context/similar.py scores its own file; a window of 6 lines and
the 3 after it, every third line). An upper bound for snippets of other files in the prompt: no model runs.

    .venv/bin/python scripts/cross-file-oracle.py tune|confirm
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from evals.common.halves import in_half  # noqa: E402
from evals.real.corpus import PROJECTS, ensure  # noqa: E402
from evals.real.holes import cut_project, read_source  # noqa: E402
from lsp_server.context.similar import (FOLLOW_LINES, MIN_SCORE, QUERY_LINES, SKIP_ABOVE, SKIP_BELOW,  # noqa: E402
                                        jaccard, query_of, words)

SOURCES = {".py", ".ts", ".tsx", ".js", ".mjs", ".go", ".rs", ".c", ".h"}
TOP, STEP = 3, 3


def has_line(text: str, line: str) -> bool:
    return any(l.strip() == line for l in text.split("\n"))


def sources(root: Path) -> dict[str, str]:
    return {str(f.relative_to(root)): read_source(f) for f in sorted(root.rglob("*"))
            if f.is_file() and f.suffix in SOURCES and not {"dist", "build"} & set(f.relative_to(root).parts)
            and f.stat().st_size < 400_000}


def most_like(query: frozenset[str], texts: list[str]) -> list[str]:
    found = []
    for t in texts:
        lines = t.split("\n")
        for i in range(0, max(1, len(lines) - QUERY_LINES), STEP):
            s = jaccard(query, words("\n".join(lines[i:i + QUERY_LINES])))
            if s >= MIN_SCORE:
                found.append((s, "\n".join(lines[i:i + QUERY_LINES + FOLLOW_LINES])))
    return [w for _, w in sorted(found, key=lambda x: -x[0])[:TOP]]


def main(half: str) -> None:
    n = in_file = in_other = in_windows = 0
    for spec in PROJECTS:
        if not in_half(spec.name, half):
            continue
        p = ensure(spec, log=lambda m: None)
        files = sources(p.root)
        for h in (h for h in cut_project(p, 0) if h.cross_file):
            first = next((l.strip() for l in h.expected.split("\n") if l.strip()), "")
            if not first:
                continue
            n += 1
            holed, start, _ = h.cut(read_source(p.root / h.file))
            lines, line = holed.split("\n"), holed[:start].count("\n")
            in_file += has_line("\n".join(lines[:max(0, line - SKIP_ABOVE)] + lines[line + SKIP_BELOW:]), first)
            others = [t for f, t in files.items() if f != h.file]
            in_other += any(has_line(t, first) for t in others)
            in_windows += any(has_line(w, first) for w in most_like(query_of(lines, line), others))
    print(f"{half}: {n} cross-file holes; first line elsewhere in its file {in_file}, in another file {in_other}, "
          f"in the {TOP} windows of other files most like the lines above {in_windows}")


if __name__ == "__main__":
    main(sys.argv[1])
