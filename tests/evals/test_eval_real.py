"""`tandem-eval real`: the corpus table and its sha256 check, holes cut by rule (deterministic, their texts
right, cross-file marking), the scorer, and a short run with the real models on local files (no network)."""
import hashlib
import io
import json
import random
import subprocess
import tarfile
from collections import Counter
from pathlib import Path

import pytest

from conftest import FIXTURES, ROOT, eval_cmd
from evals.common.halves import half_of
from evals.real.corpus import PROJECTS, CorpusError, Project, Spec, ensure, local_projects
from evals.real.holes import (BLOCK_MAX, BLOCK_MIN, NameIndex, block_bodies, code_rows, cut_project,
                                         holes_in_file)
from evals.real.score import levenshtein, score, similarity

REAL = FIXTURES / "real"
FIXTURE_FILES = ("httpx_models.py", "pflag_flag.go", "queryObserver.ts")
FORBIDDEN = {"requests", "rxjs", "cobra", "click", "anyhow", "@trpc/server", "httpx", "pflag",
             "@tanstack/query-core"}


def fixture_corpus(tmp_path: Path, lines: int | None = None) -> Path:
    """A folder of projects from the fixture files: one project per file (optionally cut to `lines`)."""
    corpus = tmp_path / "corpus"
    for name in FIXTURE_FILES:
        project = corpus / Path(name).stem
        project.mkdir(parents=True)
        text = (REAL / name).read_text(encoding="utf-8")
        if lines:
            text = "\n".join(text.split("\n")[:lines]) + "\n"
        (project / name).write_text(text, encoding="utf-8")
    return corpus


# ---- the corpus table -----------------------------------------------------------------------------------------

def test_the_table_pins_six_languages_two_projects_each_with_hashes_and_licences():
    langs = Counter(s.language for s in PROJECTS)
    assert set(langs) >= {"python", "typescript", "javascript", "go", "rust", "c"}
    assert min(langs.values()) >= 2
    for s in PROJECTS:
        assert s.registry in ("pypi", "npm", "debian")
        assert s.sha256 and len(s.sha256) == 64 and int(s.sha256, 16) >= 0, s.name
        assert s.version and s.licence and s.file
        assert not any(bad == s.name or f"-{bad}-" in s.name or s.name.endswith(f"-{bad}") for bad in FORBIDDEN), \
            s.name
    # split by project, each half keeps every language
    for half in ("tune", "confirm"):
        assert {s.language for s in PROJECTS if half_of(s.name) == half} == set(langs), half


def _archive(tmp_path: Path) -> tuple[Path, bytes]:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, text in (("demo-1.0/src/demo/a.py", "def f():\n    return 1\n"),
                           ("demo-1.0/LICENSE", "MIT\n")):
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return tmp_path, buf.getvalue()


def test_a_download_whose_sha256_differs_from_the_table_is_refused(tmp_path):
    cache, data = _archive(tmp_path)
    (cache / "downloads").mkdir()
    archive = cache / "downloads" / "demo-1.0.tar.gz"
    archive.write_bytes(data)
    spec = Spec("demo", "pypi", "1.0", "python", "MIT", "demo-1.0.tar.gz", hashlib.sha256(data).hexdigest(),
                "demo-1.0", ("src",))
    project = ensure(spec, cache, log=lambda m: None)   # already downloaded: no network
    assert (project.root / "src/demo/a.py").exists()
    assert project.licence_files == ["demo-1.0/LICENSE"]
    assert [p.name for p, _ in project.source_files()] == ["a.py"]
    archive.write_bytes(data + b"\0")   # tampered with
    with pytest.raises(CorpusError, match="sha256"):
        ensure(spec, cache, log=lambda m: None)


# ---- holes -----------------------------------------------------------------------------------------------------

def test_holes_are_deterministic_and_their_expected_texts_are_what_was_cut(tmp_path):
    corpus = fixture_corpus(tmp_path)
    projects = local_projects(corpus)
    assert [p.name for p in projects] == ["httpx_models", "pflag_flag", "queryObserver"]
    holes = [h for p in projects for h in cut_project(p, seed=0)]
    again = [h for p in local_projects(corpus) for h in cut_project(p, seed=0)]
    assert holes == again
    other = [h for p in projects for h in cut_project(p, seed=1)]
    assert [h.task_id for h in other] != [h.task_id for h in holes]
    assert {h.language for h in holes} == {"python", "go", "typescript"}
    assert Counter(h.kind for h in holes) == {"line": 6, "block": 3}
    for h in holes:
        p = next(p for p in projects if p.name == h.project)
        original = (p.root / h.file).read_text(encoding="utf-8")
        holed, start, end = h.cut(original)
        lines = holed.split("\n")
        # the cursor stands on a line of only the indentation, at its end
        assert lines[h.line - 1] == h.indent
        assert holed[:start].endswith("\n" + h.indent)
        assert len(holed.split("\n")) == len(original.split("\n")) - h.lines + 1
        # putting the expected text back gives the file again (up to trailing whitespace)
        back = holed[:start] + h.expected + holed[start:]
        assert [l.rstrip() for l in back.split("\n")] == [l.rstrip() for l in original.split("\n")]
        first = h.expected.split("\n")[0]
        assert first.strip() and not first.startswith(("#", "//", "import ", "from ", "}", ")"))
        if h.kind == "block":
            assert BLOCK_MIN <= h.lines <= BLOCK_MAX
        else:
            assert h.lines == 1 and "\n" not in h.expected


def test_which_lines_and_bodies_can_be_holes():
    py = "\n".join([
        "import os",                       # 0 import
        "from x import (",                 # 1 import
        "    a,",                          # 2 inside the import
        ")",                               # 3 closer
        "",                                # 4 blank
        "# a comment",                     # 5
        "def f(x):",                       # 6 code
        '    """Doc',                      # 7 docstring
        '    string."""',                  # 8 inside it
        "    y = x + 1",                   # 9 code (body 9-11)
        "    if y:",                       # 10 code
        "        return y",                # 11 code (a one-line body: no block)
        "    return 0",                    # 12 code
        "S = '''text",                     # 13 code
        "more text'''",                    # 14 inside a string
        "",
    ])
    assert code_rows(py, "python") == [6, 9, 10, 11, 12, 13]
    assert block_bodies(py, "python") == [(7, 12)]
    go = "package main\n\nimport (\n\t\"fmt\"\n)\n\n// F does.\nfunc F() {\n\tx := 1\n\tfmt.Println(x)\n}\n"
    assert code_rows(go, "go") == [0, 7, 8, 9]
    assert block_bodies(go, "go") == [(8, 9)]
    ts = "import { a } from './a'\n/* block\n   comment */\nexport function g(): number {\n  const b = a()\n" \
         "  return b\n}\n"
    assert code_rows(ts, "typescript") == [3, 4, 5]
    assert block_bodies(ts, "typescript") == [(4, 5)]


def test_cross_file_holes_use_a_name_another_file_of_the_project_defines(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    (root / "helpers.py").write_text("def helper_one(x):\n    return x\n\n\nclass Widget:\n    pass\n\n"
                                     "LIMIT = 3\n")
    body = ["import helpers", "", "", "def local_fn(v):", "    return v", "", ""]
    for i in range(60):
        body += [f"def uses_{i}(v):", "    w = helper_one(v) + LIMIT", f"    return local_fn(w) + {i}"]
    (root / "main.py").write_text("\n".join(body) + "\n")
    alone = ["def local_fn(v):", "    return v", ""]
    for i in range(60):
        alone += [f"def only_{i}(v):", "    w = local_fn(v)", f"    return w + {i}"]
    (root / "alone.py").write_text("\n".join(alone) + "\n")
    project = Project("proj", "", root)
    index = NameIndex(project)
    assert index.cross_names("main.py", "python", "w = helper_one(v) + LIMIT") == ["helper_one", "LIMIT"]
    assert index.cross_names("main.py", "python", "return local_fn(w) + len(x)  # Widget") == []
    assert index.cross_names("helpers.py", "python", "return helper_one(x)") == []   # defined here
    holes = cut_project(project, seed=0)
    assert {h.file for h in holes} == {"main.py", "alone.py"}
    for h in holes:
        uses = "helper_one" in h.expected or "LIMIT" in h.expected
        assert h.cross_file == uses, h
        assert h.cross_names == [n for n in ("helper_one", "LIMIT") if n in h.expected]
    # a name defined in another language's file does not count; Go's definitions are indexed too
    (root / "types.go").write_text("package p\n\ntype Widget struct {\n\tSize int\n}\n\nfunc NewWidget() *Widget {"
                                   "\n\treturn &Widget{}\n}\n")
    index = NameIndex(project)
    assert index.cross_names("main.py", "python", "NewWidget()") == []
    assert index.cross_names("other.go", "go", "w := NewWidget(); w.Size = 2") == ["NewWidget", "Size"]


def test_files_outside_100_to_3000_lines_get_no_holes(tmp_path):
    root = tmp_path / "p"
    root.mkdir()
    (root / "short.py").write_text("x = 1\n" * 99)
    (root / "ok.py").write_text("x = 1\n" * 100)
    project = Project("p", "", root)
    assert {h.file for h in cut_project(project)} == {"ok.py"}
    path = root / "ok.py"
    assert holes_in_file(project, path, "python", "x = 1\n" * 3001, 0) == []


# ---- the scorer ----------------------------------------------------------------------------------------------

def test_edit_distance_is_levenshtein():
    def dp(a, b):
        prev = list(range(len(b) + 1))
        for i, ca in enumerate(a, 1):
            cur = [i]
            for j, cb in enumerate(b, 1):
                cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
            prev = cur
        return prev[-1]
    rng = random.Random(5)
    for _ in range(500):
        a = "".join(rng.choice("ab (x)\n") for _ in range(rng.randint(0, 90)))
        b = "".join(rng.choice("ab (x)\n") for _ in range(rng.randint(0, 90)))
        assert levenshtein(a, b) == dp(a, b)
    assert levenshtein("kitten", "sitting") == 3
    assert similarity("", "") == 1.0 and similarity("abc", "") == 0.0
    assert similarity("kitten", "sitting") == pytest.approx(1 - 3 / 7)


def test_the_score_of_an_answer():
    original = "def f(x):\n    if x:\n        y = x + 1\n        return y\n    return 0\n"
    holed = "def f(x):\n    if x:\n        \n    return 0\n"
    cursor = holed.index("        \n") + 8
    expected = "y = x + 1\n        return y"
    assert holed[:cursor] + expected + holed[cursor:] == original
    # lines are compared trimmed: another indentation is the same answer
    right = score("y = x + 1\n    return y\n", expected, holed, cursor, "python", 0)
    assert right == {"first_exact": True, "first_sim": 1.0, "exact": True, "sim": 1.0, "parses": True}
    good = score(expected, expected, holed, cursor, "python", 0)
    assert good["exact"] and good["parses"]
    first = score("  y = x + 1  \n        return x", expected, holed, cursor, "python", 0)
    assert first["first_exact"] and not first["exact"] and 0.9 < first["sim"] < 1 and first["parses"]
    broken = score("y = (x + ", expected, holed, cursor, "python", 0)
    assert not broken["first_exact"] and broken["first_sim"] < 1 and broken["parses"] is False
    empty = score("", expected, holed, cursor, "python", 0)
    assert empty["first_sim"] == 0.0 and empty["parses"] is False   # an empty suite is no Python
    # no grammar: no parse check
    assert score("a", "a", "x\n", 0, "text", None)["parses"] is None


# ---- a short run with the real models -------------------------------------------------------------------------

@pytest.mark.models
def test_a_short_run_on_local_projects_and_its_resume(tmp_path):
    corpus = fixture_corpus(tmp_path, lines=120)
    out, again = tmp_path / "real.json", tmp_path / "again.json"
    # a small page and context keep it short; the server's options go through
    run = ["real", "--real-corpus", str(corpus), "--limit", "2", "--ctx", "2048",
           "--real-options", '{"prefixTokens": 256}']
    p = subprocess.run(eval_cmd() + run + ["--json", str(out)], cwd=ROOT, capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    report = json.loads(out.read_text())
    assert report["data"] == str(corpus.resolve()) and report["tasks"] == 2 and report["partial"] is False
    variants = report["variants"]
    assert variants[:4] == ["raw", "editor", "offered", "page"]
    assert set(variants) | set(report["skipped_variants"]) == {"raw", "editor", "offered", "page",
                                                               "editor_noproject", "offered_noproject",
                                                               "page_noproject"}
    # with the rows derived from the offered variants: the editor's answer once an early answer was completed
    assert set(report["summary"]) == set(variants) | {"completed", "completed_noproject"}
    assert all(report["summary"][v]["holes"] == 2 for v in variants)
    assert len(report["results"]) == 2
    for r in report["results"]:
        assert {"task_id", "project", "language", "file", "line", "kind", "expected", "cross_file"} <= set(r)
        for v in variants:
            a = r[v]
            assert {"text", "first_exact", "first_sim", "exact", "sim", "parses"} <= set(a)
            if v != "raw":
                assert a["latency_ms"] > 0 and a["prompt"] in ("fast", "page", "cache", "reuse", "timeout",
                                                               "skipped", "superseded", "empty")
        assert "waited_s" in r["page"] and "early" in r["page"]
        # the offered answer: the editor's where none was offered, else another one, taken later
        for off, ed in ((r["offered"], r["editor"]), (r["offered_noproject"], r["editor_noproject"])):
            if off["offered"]:
                assert off["text"] != ed["text"] and off["latency_ms"] > ed["latency_ms"] and off["offer_s"] >= 0
                if "completed" in off:   # the first notification completed the editor's early answer
                    c = off["completed"]
                    assert c["text"] != ed["text"] and "first_exact" in c and c["latency_ms"] > ed["latency_ms"]
            else:
                assert off["text"] == ed["text"] and off["latency_ms"] == ed["latency_ms"]
    assert "first line exact by language" in p.stdout and "server, editor's pace" in p.stdout
    # resumed: nothing computed again, no server and no engine started
    p = subprocess.run(eval_cmd() + run + ["--resume", str(out), "--json", str(again)], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    assert f"{2 * len(variants)} answers taken" in p.stderr
    assert "server ready" not in p.stderr and "loading the in-process engine" not in p.stderr
    resumed = json.loads(again.read_text())
    assert resumed["results"] == report["results"] and resumed["summary"] == report["summary"]


def test_the_screen_an_editor_shows_around_a_hole_while_the_user_reads():
    """--real-view: a screen of SCREEN_LINES lines with the hole's line on it, where on it drawn from the hole (the
    same on every run, not always the middle), clipped to the file, sent as tandem/visibleRanges."""
    from evals.real.holes import Hole
    from evals.real.server import SCREEN_LINES, HoleVisitor

    class Protocol:
        def __init__(self):
            self.sent = []

        def notify(self, method, params):
            self.sent.append((method, params))

    class Client:
        protocol = Protocol()

    visitor = HoleVisitor(Client(), Path("."), {}, print, read_s=5, view=True)
    text = "\n".join(f"line {i}" for i in range(300))
    where = []
    for n, line in enumerate((150, 151, 152, 2, 299, 150)):
        hole = Hole(f"p/{n if n < 5 else 0}", "p", "python", "f.py", line, "line", "x")
        visitor._show("file:///f.py", text, hole)
        method, params = Client.protocol.sent[-1]
        (r,) = params["ranges"]
        first, last = r["start"]["line"], r["end"]["line"]
        assert method == "tandem/visibleRanges" and params["uri"] == "file:///f.py"
        assert 0 <= first <= line - 1 <= last <= 299 and last - first < SCREEN_LINES
        assert last - first == SCREEN_LINES - 1 or first == 0 or last == 299
        where.append(line - 1 - first)
    assert where[5] == where[0]            # the same hole: the same screen
    assert len(set(where[:3])) > 1         # not always at one place on the screen
