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
from lsprotocol import types

from conftest import FIXTURES, ROOT, eval_cmd, tandem_cmd
from evals.real.corpus import local_projects
from evals.real.holes import read_source
from evals.real.asks import REST_S, NextEditAsks
from evals.real.typing import SPAN, CarefulTypist, body_modes, exact_lines, figures, p50_censored, pick_bodies

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

    def __init__(self, answer, next_edit=None):
        self.answer, self.doc, self.cancelled, self.notes = answer, "", 0, []
        self.next_edit = next_edit or (lambda params: None)   # a next-edit ask's answer, or None: never
        self.asked: list[tuple[str, dict, float]] = []        # the next-edit asks: (id, params, when)
        self.client = self
        self.protocol = self
        self.last_confidence = self.last_asked = None   # (the server's verdicts on an answer: none here)

    def notify(self, method, params):
        self.notes.append((method, params["chars"] if isinstance(params, dict) and "chars" in params else params))

    async def send_request_async(self, method, params, msg_id=None):
        assert method == "textDocument/copilotInlineEdit"
        self.asked.append((msg_id, params, time.perf_counter()))
        answer = self.next_edit(params)
        if answer is None:
            await asyncio.Event().wait()
        return answer

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


# ---- next-edit asks as VS Code's client sends them ---------------------------------------------------------------

def test_an_ask_goes_out_once_the_typing_rests_and_is_cancelled_when_it_goes_on():
    """editors/vscode/src/next-edit.ts: each change restarts a 500 ms wait; the ask is for the version and the
    cursor of the last change; the next change cancels it with $/cancelRequest."""
    async def run():
        editor = ScriptedEditor(lambda before: None)
        asks = NextEditAsks(editor)
        text = "def f(x):\n    return x\n"
        asks.changed("file:///f.py", 2, text, 9)
        await asyncio.sleep(REST_S * 0.6)
        asks.changed("file:///f.py", 3, text, 14)         # typed on before the rest: no ask yet
        t0 = time.perf_counter()
        await asyncio.sleep(REST_S * 0.6)
        assert editor.asked == []
        await asyncio.sleep(REST_S * 0.8)
        [(msg_id, params, when)] = editor.asked
        assert when - t0 >= REST_S
        assert params == {"textDocument": {"uri": "file:///f.py", "version": 3},
                          "position": {"line": 1, "character": 4}}
        asks.changed("file:///f.py", 4, text, 15)          # the typing goes on: the ask still open is cancelled
        assert ("$/cancelRequest", types.CancelParams(id=msg_id)) in editor.notes
        asks.closed()                                       # and leaving the file drops the next one
        await asyncio.sleep(REST_S * 1.2)
        assert len(editor.asked) == 1
        assert (asks.tally.sent, asks.tally.cancelled, asks.tally.answered) == (1, 1, 0)
    asyncio.run(run())


def test_an_edit_for_the_version_is_a_proposal_and_the_next_change_dismisses_it():
    edit = {"id": "ne-7", "range": {"start": {"line": 5, "character": 0}, "end": {"line": 6, "character": 0}},
            "text": "    return y\n", "textDocument": {"uri": "file:///f.py", "version": 2}}

    async def run():
        editor = ScriptedEditor(lambda before: None, next_edit=lambda params: {
            "edits": [edit] if params["textDocument"]["version"] == 2 else []})
        asks = NextEditAsks(editor, rest_s=0.05)
        asks.changed("file:///f.py", 2, "a\nb\n", 2)
        await asyncio.sleep(0.2)
        assert asks.tally.proposals == 1 and asks.tally.seen[0]["range"] == [5, 6]
        asks.changed("file:///f.py", 3, "a\nbc\n", 4)
        assert ("tandem/nextEditDismissed", {"id": "ne-7"}) in editor.notes
        await asyncio.sleep(0.2)                             # answered without an edit: nothing shown
        asks.closed()
        assert [n for n in editor.notes if n[0] == "tandem/nextEditDismissed"] == [
            ("tandem/nextEditDismissed", {"id": "ne-7"})]
        t = asks.tally
        assert (t.sent, t.answered, t.proposals, t.dismissed, t.cancelled) == (2, 2, 1, 1, 0)
        assert len(t.answer_ms) == 2 and len(t.proposal_ms) == 1
    asyncio.run(run())


def test_the_typist_s_rests_send_the_asks_at_its_cursor():
    """Typing fast and never answered: the waits at the three line starts after a newline are the rests (the
    first line start is no change), each ask at the new line's indentation, each cancelled by the next key."""
    editor = ScriptedEditor(lambda before: None)
    asks = NextEditAsks(editor)
    typist = CarefulTypist(editor, cps=500.0, wait_s=REST_S + 0.3, read_s=0.0, asks=asks)
    asyncio.run(typist.type_body("file:///f.py", 1, HEAD + TAIL, len(HEAD), BODY))
    assert editor.doc == HEAD + BODY + TAIL
    at = [(p["position"]["line"], p["position"]["character"]) for _, p, _ in editor.asked]
    assert at == [(2, 4), (3, 8), (4, 4)]
    assert [p["textDocument"]["version"] for _, p, _ in editor.asked] == [
        1 + len("total = 0") + 1, 1 + len("total = 0") + 1 + len("for x in xs:") + 1,
        1 + len("total = 0") + 1 + len("for x in xs:") + 1 + len("total += x") + 1]
    cancels = [p.id for m, p in editor.notes if m == "$/cancelRequest"]
    assert cancels == [i for i, _, _ in editor.asked] and asks.tally.cancelled == 3


def test_both_modes_alternate_which_goes_first():
    assert [body_modes("both", n) for n in range(3)] == [("off", "on"), ("on", "off"), ("off", "on")]
    assert body_modes("on", 1) == ("on",) and body_modes("off", 0) == ("off",)


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


@pytest.mark.models
def test_typing_with_next_edit_asks_off_and_on_side_by_side_against_the_real_server(tmp_path):
    """The same body typed twice by one server, asks off and on; the asks reach the server (it counts them) and
    the report sets the two modes' line starts side by side."""
    corpus = tmp_path / "corpus"
    (corpus / "httpx").mkdir(parents=True)
    (corpus / "httpx" / "models.py").write_text((REAL / "httpx_models.py").read_text(encoding="utf-8"),
                                                encoding="utf-8")
    out = tmp_path / "typing.json"
    p = subprocess.run(eval_cmd() + ["replay", "--real", "1", "--corpus", str(corpus), "--half", "all",
                                     "--cps", "20", "--wait", "3", "--next-edit-asks", "both", "--json", str(out)],
                       cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    r = json.loads(out.read_text())
    off, on = r["sessions"]
    assert (off["asks"], on["asks"]) == ("off", "on") and off["body"] == on["body"]
    assert "asks_sent" not in off and set(r["by_mode"]) == {"off", "on"}
    asks = r["by_mode"]["on"]["next_edit_asks"]
    # the rest after the body sends one at least; each is answered, cancelled by the typing, or late
    assert asks["asks_sent"] >= 1 and asks == {k: on[k] for k in asks}
    assert asks["asks_answered"] + asks["asks_cancelled"] + asks["asks_stale"] + asks["asks_errors"] == \
        asks["asks_sent"]
    assert asks["proposals"] <= asks["asks_answered"] and asks["asks_errors"] == 0
    served = r["servers"]["httpx"]["next_edit"]
    assert served["requested"] >= asks["asks_answered"] + asks["asks_stale"] and served["requested"] >= 1
    for mode in ("off", "on"):
        assert r["by_mode"][mode]["total"]["chars"] == len(off["body"]["typed"])
        assert r["by_mode"][mode]["total"]["line_starts"] == (off if mode == "off" else on)["line_starts"]
    # how fast the line starts were answered is this machine's business; the report sets them side by side
    for key in ("line_start_p50_ms", "line_start_answered_p50_ms"):
        was, now = r["by_mode"]["off"]["total"][key], r["by_mode"]["on"]["total"][key]
        assert r["cost"][key] == {"off": was, "on": now,
                                  "change": None if not was or now is None else round(now / was - 1, 4)}
    assert set(r["summary"]) == {"asks_off", "asks_on"} and r["summary"]["asks_on"]["proposals"] == asks["proposals"]
    assert "each typed twice, next-edit asks off and on" in p.stdout and "1 function bodies" in p.stdout
    assert f"next-edit asks {asks['asks_sent']} (" in p.stdout and "line starts answered p50: asks off" in p.stdout


@pytest.mark.parametrize("args, says", [
    (["--real", "0"], "--real needs at least 1 body"),
    (["--real", "1", "--cps", "0"], "--cps a positive speed"),
    (["--real", "1", "--corpus", "/nonexistent/corpus"], "no such folder of projects"),
])
def test_bad_options_get_a_clear_error_and_no_server(args, says):
    p = subprocess.run(eval_cmd() + ["replay"] + args, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and says in p.stderr and "Traceback" not in p.stderr
    assert "server ready" not in p.stderr
