"""`tandem-eval replay --real`: a careful person typing function bodies in real files. What counts as exactly right
(golden cases), the bodies drawn, the typist's control logic against scripted answers (what it accepts, what it
counts, that the document ends as the file was), and a short run against the real server on a local project."""
from __future__ import annotations

import asyncio
import json
import shlex
import subprocess
import time

import pytest

from conftest import FIXTURES, ROOT, eval_cmd, tandem_cmd
from evals.real.corpus import local_projects
from evals.real.holes import read_source
from evals.real.typing import SPAN, CarefulTypist, exact_lines, figures, p50_censored, pick_bodies

REAL = FIXTURES / "real"


# ---- what a careful person accepts -----------------------------------------------------------------------------

@pytest.mark.parametrize("shown, rest, took", [
    # the whole suggestion, two exact lines
    ("x = 1\n    return x", "x = 1\n    return x\n", "x = 1\n    return x"),
    # the first line only: the second differs
    ("x = 1\n    return y", "x = 1\n    return x\n", "x = 1"),
    # the rest of the line, not the whole of it: nothing (the line is not complete)
    ("x = ", "x = 1\n", ""),
    # at a line end: the next line with its newline and indentation
    ("\n    return x", "\n    return x\n}", "\n    return x"),
    # a line that goes on past what comes next is wrong
    ("x = 1 + 2", "x = 1\n", ""),
    # only blanks: nothing to take
    ("\n   ", "\n   y", ""),
    ("", "x", ""),
])
def test_only_whole_lines_exactly_right_are_accepted(shown, rest, took):
    assert exact_lines(shown, rest) == took


def test_the_median_counts_an_unanswered_line_start_as_slower_than_any():
    assert p50_censored([100.0, 300.0, None]) == 300.0
    assert p50_censored([100.0, None, None]) is None
    assert p50_censored([100.0, 200.0, 300.0, None]) == 250.0
    assert p50_censored([]) is None


def test_bodies_are_function_bodies_of_3_to_12_lines_as_the_file_has_them(tmp_path):
    corpus = tmp_path / "corpus"
    for name in ("httpx_models.py", "pflag_flag.go", "queryObserver.ts"):
        (corpus / name.split(".")[0]).mkdir(parents=True)
        (corpus / name.split(".")[0] / name).write_text((REAL / name).read_text(encoding="utf-8"), encoding="utf-8")
    projects = local_projects(corpus)
    bodies = pick_bodies(projects, 6, seed=1)
    assert len(bodies) == 6 and bodies == pick_bodies(projects, 6, seed=1)
    assert {b.language for b in bodies} == {"python", "go", "typescript"}   # the languages in turn
    assert bodies != pick_bodies(projects, 6, seed=2)
    for b in bodies:
        assert SPAN[0] <= b.lines <= SPAN[1]
        lines = read_source(next(p.root for p in projects if p.name == b.project) / b.file).split("\n")
        assert b.indent + b.typed == "\n".join(l.rstrip() for l in lines[b.line - 1:b.line - 1 + b.lines])
        assert b.typed.count("\n") == b.lines - 1 and b.typed.strip()


# ---- the typist against scripted answers -----------------------------------------------------------------------

class ScriptedEditor:
    """Replayer's surface, answering each request at once (or never) by a script of the text before the cursor;
    it keeps the document as the typist's edits make it."""

    def __init__(self, answer):
        self.answer, self.doc, self.cancelled, self.notes = answer, "", 0, []
        self.client = self
        self.protocol = self

    def notify(self, method, params):
        self.notes.append((method, params["chars"]))

    async def request(self, uri, text, cursor):
        fut = asyncio.get_running_loop().create_future()
        ghost = self.answer(text[:cursor])
        if ghost is not None:
            fut.set_result(ghost)
            fut.done_at = time.perf_counter()
        return fut, "id", time.perf_counter()

    def result(self, fut, sent, at_pause):
        return fut.result(), "model"

    def cancel(self, fut, msg_id):
        self.cancelled += not fut.done()

    def insert(self, uri, version, text, cursor, new):
        self.doc = text[:cursor] + new + text[cursor:]
        return self.doc


BODY = "total = 0\n    for x in xs:\n        total += x\n    return total"
HEAD = "def f(xs):\n    "
TAIL = "\n\n\ndef g():\n    pass\n"


def _type(answer, wait_s=0.2):
    editor = ScriptedEditor(answer)
    typist = CarefulTypist(editor, cps=500.0, wait_s=wait_s, read_s=0.0)
    asyncio.run(typist.type_body("file:///f.py", 1, HEAD + TAIL, len(HEAD), BODY))
    return editor, typist.tally


def test_exact_lines_shown_at_line_starts_are_taken_and_the_file_ends_as_it_was():
    def oracle(before):
        # right where a line starts (after the indentation), silent elsewhere
        done = before[len(HEAD):]
        if done == "" or ("\n" in done and not done[done.rfind("\n") + 1:].strip()):
            return BODY[len(done):].split("\n")[0]
        return ""
    editor, t = _type(oracle)
    assert editor.doc == HEAD + BODY + TAIL
    assert t.chars == len(BODY) and t.line_starts == 4 and t.line_start_right == 4
    assert t.from_ghost == sum(len(l.strip()) for l in BODY.split("\n")) and t.accepts == 4
    assert t.keys == 3            # the three newlines, each with its indentation
    assert [m for m, _ in editor.notes] == ["tandem/didAccept"] * 4
    f = figures(t)
    assert f["line_starts_answered"] == 4 and f["from_ghost_share"] == t.from_ghost / len(BODY)


def test_a_suggestion_right_only_in_its_first_line_gives_that_line_and_a_wrong_one_nothing():
    def first_right(before):
        return "total = 0\n    for y in ys:" if before == HEAD else "oops"
    editor, t = _type(first_right)
    assert editor.doc == HEAD + BODY + TAIL
    assert t.from_ghost == len("total = 0") and t.accepts == 1
    assert editor.notes == [("tandem/didPartiallyAccept", len("total = 0"))]
    # every other answer came at once and was wrong: shown, in time, never right
    assert t.in_time > 0 and t.in_time_shown == t.in_time and t.in_time_right == 0


def test_line_starts_not_answered_within_the_wait_count_as_unanswered_and_are_cancelled():
    editor, t = _type(lambda before: None, wait_s=0.05)
    assert editor.doc == HEAD + BODY + TAIL
    assert t.line_starts == 4 and t.line_start_ms == [None] * 4 and t.from_ghost == 0
    assert figures(t)["line_start_p50_ms"] is None
    assert editor.cancelled == t.requests     # every request still open when the next key came was cancelled


# ---- the real server --------------------------------------------------------------------------------------------

@pytest.mark.models
def test_a_short_typing_session_against_the_real_server(tmp_path):
    corpus = tmp_path / "corpus"
    (corpus / "httpx").mkdir(parents=True)
    (corpus / "httpx" / "models.py").write_text((REAL / "httpx_models.py").read_text(encoding="utf-8"),
                                                encoding="utf-8")
    out = tmp_path / "typing.json"
    # the server as a side-by-side run names another checkout's (`--server-cmd`; the default is this tandem's serve)
    serve = shlex.join(tandem_cmd() + ["serve"])
    p = subprocess.run(eval_cmd() + ["replay", "--real", "1", "--corpus", str(corpus), "--half", "all",
                                       "--cps", "20", "--wait", "3", "--json", str(out), "--server-cmd", serve],
                       cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    r = json.loads(out.read_text())
    (s,) = r["sessions"]
    total = r["total"]
    assert total["chars"] == len(s["body"]["typed"]) and 1 <= total["line_starts"] <= s["body"]["lines"]
    assert total["requests"] >= total["keys"] + 1
    # the server answered: the first line start waited at most 3 s, and whatever came was counted
    assert total["line_starts_answered"] >= 1 and total["answered_in_time_right"] <= total["answered_in_time_shown"]
    assert 0 <= total["from_ghost"] <= total["chars"]
    assert "typing in real files: 1 function bodies" in p.stdout and "python" in p.stdout
    # the window's memory, models included, and whether the engine came from before this run (tests share one)
    assert r["peak_rss_mb"] > 300 and f"peak RSS {r['peak_rss_mb']:,.0f} MB" in p.stdout
    assert r["engine_was_running"] in ([], ["httpx"])
    # the server took the cursor's move to the body (it fills the place while the typist finds it)
    assert r["servers"]["httpx"]["cursor_moves"] == 1
    assert ("already running for httpx" in p.stdout) == bool(r["engine_was_running"])


@pytest.mark.parametrize("args, says", [
    (["--real", "0"], "--real needs at least 1 body"),
    (["--real", "1", "--cps", "0"], "--cps a positive speed"),
    (["--real", "1", "--corpus", "/nonexistent/corpus"], "no such folder of projects"),
])
def test_bad_options_get_a_clear_error_and_no_server(args, says):
    p = subprocess.run(eval_cmd() + ["replay"] + args, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and says in p.stderr and "Traceback" not in p.stderr
    assert "server ready" not in p.stderr
