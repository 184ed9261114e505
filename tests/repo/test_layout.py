"""The repository's shape, checked: the product's stages import one way, no file imports itself round a circle, no
module outgrows 500 lines, the lab (evals/) stays out of the product and its wheel, and measurements stay out of
the tree (a ledger line each, evals/results.jsonl)."""
from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import zipfile
from collections import defaultdict
from pathlib import Path

from conftest import ROOT

# what each part of lsp_server/ may import (besides itself): a request flows protocol -> service (pipeline) ->
# context, prompt, engine, postprocess; prompt and postprocess read text with context's helpers; the engine and
# context import no other stage (the engine reads the package's version)
ALLOWED = {
    "cli": {"bench", "protocol", "service", "pipeline", "context", "prompt", "engine", "postprocess", "lsp_server"},
    "bench": {"pipeline", "context", "prompt", "engine"},
    "protocol": {"service", "pipeline", "context", "engine", "lsp_server"},
    "service": {"pipeline", "context", "prompt", "engine", "postprocess"},
    "pipeline": {"context", "prompt", "engine", "postprocess"},
    "prompt": {"context"},
    "postprocess": {"context"},
    "context": set(),
    "engine": {"lsp_server"},   # the package's version, which the shared engine's socket and handshake carry
    "lsp_server": set(),
}


def modules(package: str) -> dict[str, Path]:
    out = {}
    for p in (ROOT / package).rglob("*.py"):
        parts = p.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = p
    return out


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The modules of `known` that `name` imports, at any depth of its code (a lazy import counts)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")[:len(name.split(".")) - node.level + (path.name == "__init__.py")]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            for a in node.names:
                target = f"{mod}.{a.name}" if f"{mod}.{a.name}" in known else mod
                if target in known and target != name:
                    found.add(target)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name in known and a.name != name}
    return found


def graph(package: str) -> dict[str, set[str]]:
    known = modules(package)
    return {name: imports(name, path, known) for name, path in known.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def stage(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def test_the_product_s_stages_import_one_way_and_no_file_imports_round_a_circle():
    edges = graph("lsp_server")
    up = sorted(f"{a} imports {b}" for a, bs in edges.items() for b in bs
                if stage(a) != stage(b) and stage(b) not in ALLOWED[stage(a)])
    assert not up
    assert not cycles(edges)
    assert not cycles(graph("evals"))


def test_no_module_outgrows_500_lines_and_the_speed_table_stays_small():
    sizes = {p: len(p.read_text().splitlines()) for pkg in ("lsp_server", "evals") for p in (ROOT / pkg).rglob("*.py")}
    assert not sorted(f"{p.relative_to(ROOT)}: {n}" for p, n in sizes.items() if n > 500)
    assert sum(n for p, n in sizes.items() if (ROOT / "lsp_server" / "bench") in p.parents) < 600


def test_the_product_knows_nothing_of_the_lab():
    named = [f"{p.relative_to(ROOT)}:{i}" for p in (ROOT / "lsp_server").rglob("*")
             if p.is_file() and p.suffix in (".py", ".toml", ".json", ".md")
             for i, line in enumerate(p.read_text(errors="replace").splitlines(), 1) if "evals" in line]
    assert not named


def test_the_wheel_holds_the_product_and_not_the_lab(tmp_path):
    # built from a copy of what git tracks, so that the build leaves nothing in the checkout
    src = tmp_path / "src"
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    for f in filter(None, files.split("\0")):
        if (ROOT / f).is_file():
            (src / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / f, src / f)
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(src)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    (wheel,) = tmp_path.glob("tandem_lsp-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert any(n.startswith("lsp_server/engine/") for n in names)
    assert not [n for n in names if n.startswith(("evals/", "tests/", "docs/"))]


def test_the_tree_holds_no_measurement_dumps():
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True,
                           check=True).stdout.split("\0")
    sizes = defaultdict(int)
    for f in filter(None, files):
        p = ROOT / f
        if p.is_file():
            sizes["all"] += p.stat().st_size
            sizes[f.split("/")[0]] += p.stat().st_size
    # the tree's code, tests and fixtures come to about 3 MB: a raw result file would show as a jump beyond this
    assert sizes["all"] < 3_500_000 and sizes["docs"] < 1_000_000, dict(sizes)
    ledger = ROOT / "evals" / "results.jsonl"
    assert ledger.exists() and ledger.stat().st_size < 200_000
