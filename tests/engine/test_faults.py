"""Faults while the server runs, with the real models over stdio: the model file truncated and then deleted
under it, a draft that is missing, a prompt larger than the context, code broken above thousands of definitions.
Each gets a clear message and a graceful fallback (the copy in memory, target-only, a shorter prompt), or simply an
answer, never a hang or a crash."""
from __future__ import annotations

import os
import queue
import shutil
import time

import pytest

from conftest import FIXTURES
from lsp_helpers import blank_cursor, setting
from rawlsp import RawServer

pytestmark = pytest.mark.models

DOC = FIXTURES / "lsp" / "inventory.py"


def messages(s: RawServer, wait_s: float = 0.0) -> list[str]:
    """window/showMessage texts received so far (waiting up to wait_s for a first one)."""
    out, deadline = [], time.monotonic() + wait_s
    while True:
        try:
            msg = s.notifications.get(timeout=max(0.0, deadline - time.monotonic()) if not out else 0)
        except queue.Empty:
            return out
        if msg.get("method") == "window/showMessage":
            out.append(msg["params"]["message"])


def started(options: dict) -> RawServer:
    s = RawServer()
    s.initialize(options, root=FIXTURES / "lsp")
    stats = s.wait_ready()
    assert stats["ready"], stats
    return s


def complete_at_blank(s: RawServer, uri: str, text: str, timeout: float = 120) -> str:
    pos = blank_cursor(text)
    res = s.wait(s.inline(uri, pos.line, pos.character), timeout=timeout)
    assert "result" in res, res
    items = res["result"]["items"]
    return items[0]["insertText"] if items else ""


def test_the_model_file_truncated_then_deleted_under_the_running_server(tmp_path):
    from lsp_server.engine import registry
    original = registry.default_path(registry.DEFAULT_TARGET)
    copy = tmp_path / original.name
    shutil.copy2(original, copy)   # same name, size and mtime: the measured batch costs still apply
    s = started({"target": str(copy), "draft": "none", "earlyAnswerMs": 0, "suggestions": "eager"})
    try:
        text = DOC.read_text()
        s.open(DOC.as_uri(), text)
        first = complete_at_blank(s, DOC.as_uri(), text)
        assert first.strip()

        os.truncate(copy, 1000)
        s.open("file:///faults/b.py", text)   # a new document: the model has to run, not the cache
        assert complete_at_blank(s, "file:///faults/b.py", text).strip()
        said = messages(s, wait_s=5)
        assert any(str(copy) in m and "truncated" in m and "memory" in m for m in said), said

        copy.unlink()
        s.open("file:///faults/c.py", text + "\n")
        assert complete_at_blank(s, "file:///faults/c.py", text + "\n").strip()
        said = messages(s, wait_s=5)
        assert any("was deleted" in m for m in said), said
        assert s.alive()
    finally:
        s.close()


def test_a_missing_draft_means_target_only_with_a_warning(tmp_path):
    missing = tmp_path / "no-such-draft.gguf"
    s = started({"draft": str(missing), "suggestions": "eager"})   # shown whatever the gate thinks
    try:
        said = messages(s, wait_s=5)
        assert any(str(missing) in m and "target-only" in m for m in said), said
        stats = s.request("tandem/stats", {})["result"]
        assert any(str(missing) in w for w in stats["engine"]["warnings"])
        text = DOC.read_text()
        s.open(DOC.as_uri(), text)
        assert complete_at_blank(s, DOC.as_uri(), text).strip()
    finally:
        s.close()


def test_a_prompt_larger_than_the_context_is_cut_to_fit():
    # a 512-token context with the default budgets (1,344 tokens of prompt) and a file far longer than that
    options = {"contextSize": 512, "earlyAnswerMs": 0, "suggestions": "eager"}
    s = started(options)
    try:
        said = messages(s, wait_s=5)
        assert any("do not fit a 512-token context" in m for m in said), said
        big = "\n\n".join([DOC.read_text().rsplit("\n    def remove", 1)[0]] * 12) + \
            "\n\n    def remove(self, sku: str, quantity: int) -> None:\n        \n"
        assert len(big) > 8000
        s.open("file:///faults/big.py", big)
        assert complete_at_blank(s, "file:///faults/big.py", big).strip()
        # a completion longer than the context leaves room for: the prompt is built again, shorter (a client sends
        # every setting its user set, each time)
        s.notify("workspace/didChangeConfiguration", {"settings": {"tandem": {**options, "maxTokens": 300}}})
        s.open("file:///faults/big2.py", big + "\n")
        assert complete_at_blank(s, "file:///faults/big2.py", big + "\n").strip()
        # one that cannot fit at all is refused alone with a clear message: it falls back to the layers below (the
        # default), and the others of the change apply
        s.notify("workspace/didChangeConfiguration", {"settings": {"tandem": {**options, "maxTokens": 600}}})
        said = messages(s, wait_s=5)
        assert any("contextSize 512 is too small for maxTokens 600" in m for m in said), said
        stats = s.request("tandem/stats", {})["result"]
        assert setting(stats, "maxTokens") == {"key": "maxTokens", "value": 256, "origin": "default"}, stats
        assert setting(stats, "contextSize")["value"] == 512 and stats["ready"] and s.alive()
    finally:
        s.close()


def log_lines(s: RawServer) -> list[str]:
    """window/logMessage texts received so far (and the showMessage ones, kept apart by a prefix)."""
    out = []
    while True:
        try:
            msg = s.notifications.get_nowait()
        except queue.Empty:
            return out
        s.__dict__.setdefault("drained", []).append(msg)   # for status_pushes
        if msg.get("method") == "window/logMessage":
            out.append(msg["params"]["message"])
        elif msg.get("method") == "window/showMessage":
            out.append("show: " + msg["params"]["message"])


def status_pushes(s: RawServer) -> list[dict]:
    """The tandem/status notifications so far (those log_lines drained too), in order."""
    drained = s.__dict__.setdefault("drained", [])
    while True:
        try:
            drained.append(s.notifications.get(timeout=0.5))
        except queue.Empty:
            break
    return [m for m in drained if m.get("method") == "tandem/status"]


def test_a_configuration_sent_during_the_load_loads_the_models_once():
    # VS Code, Neovim and Helix all send workspace/didChangeConfiguration right after `initialized`
    s = RawServer()
    try:
        s.initialize({}, root=FIXTURES / "lsp")
        s.notify("workspace/didChangeConfiguration", {"settings": {"tandem": {"maxTokens": 200}}})
        assert not s.request("tandem/stats", {})["result"]["ready"]   # it came while the models loaded
        stats = s.wait_ready()
        assert stats["ready"] and stats["loads"] == 1, stats
        assert setting(stats, "maxTokens")["value"] == 200   # applied when the load ended
        time.sleep(0.5)
        said = log_lines(s)
        assert sum("models ready" in m for m in said) == 1, said
        # after the load a change of models loads once more; one of other settings does not
        s.notify("workspace/didChangeConfiguration", {"settings": {"tandem": {"maxTokens": 100}}})
        assert s.request("tandem/stats", {})["result"]["loads"] == 1
        # the state came as it changed (tandem/status): loading once, ready once; off and on again
        s.notify("workspace/didChangeConfiguration", {"settings": {"tandem": {"enabled": False}}})
        s.request("tandem/stats", {})
        states = [(m["params"]["state"], m["params"]["enabled"]) for m in status_pushes(s)]
        assert states == [("loading", True), ("ready", True), ("disabled", False)], states
        # on again, and a request: generating while it runs, ready after (the client needs no poll); eager, so that
        # the answer is shown whatever the gate thinks of it (test_gate_lsp.py)
        s.notify("workspace/didChangeConfiguration", {"settings": {"tandem": {"enabled": True,
                                                                              "suggestions": "eager"}}})
        text = DOC.read_text()
        s.open(DOC.as_uri(), text)
        assert complete_at_blank(s, DOC.as_uri(), text).strip()
        states = [(m["params"]["state"], m["params"]["enabled"]) for m in status_pushes(s)]
        assert states[3] == ("ready", True) and states[4] == ("generating", True), states
        assert states[-1] == ("ready", True) and set(states[3:]) == {("ready", True), ("generating", True)}, states
        # a word or a line of it taken (VS Code's accept next word / line): counted apart from whole accepts
        s.notify("tandem/didPartiallyAccept", {"uri": DOC.as_uri(), "chars": 5})
        s.notify("tandem/didPartiallyAccept", {"uri": DOC.as_uri(), "chars": "five"})   # counted, no chars
        got = s.request("tandem/stats", {})["result"]["suggestions"]
        assert got["partly_accepted"] == 2 and got["partly_accepted_chars"] == 5 and got["accepted"] == 0, got
    finally:
        s.close()


def test_a_model_change_during_the_load_loads_those_models_after_it():
    s = RawServer()
    try:
        s.initialize({}, root=FIXTURES / "lsp")
        s.notify("workspace/didChangeConfiguration", {"settings": {"tandem": {"draft": "none",
                                                                              "suggestions": "eager"}}})
        deadline = time.monotonic() + 180
        while (stats := s.request("tandem/stats", {})["result"])["loads"] < 2 or not stats["ready"]:
            assert time.monotonic() < deadline and not stats["load_error"], stats
            time.sleep(0.2)
        assert stats["loads"] == 2 and stats["draft_model"]["resident"] is False, stats
        assert setting(stats, "draft")["value"] == "none"
        time.sleep(0.5)
        said = log_lines(s)
        assert sum("models ready" in m for m in said) == 1, said
        assert any("loading again" in m for m in said), said
        text = DOC.read_text()
        s.open(DOC.as_uri(), text)
        assert complete_at_blank(s, DOC.as_uri(), text).strip()
    finally:
        s.close()


def test_code_broken_above_thousands_of_definitions_is_still_completed():
    """An unclosed `(` typed above 3,000 definitions: tree-sitter nests each definition in the one before, a tree
    deeper than Python's recursion limit (as `x = (` typed above brotli's 470 kB dictionary table makes one
    100,000 deep). A block asked for in such a file (Rust here) failed with "maximum recursion depth exceeded"
    while the bracket stayed open: counting the tree's errors recursed."""
    s = started({})
    try:
        for name, language, head, item, target in (
                ("deep.rs", "rust", "let x = (", "fn f{i}(a: i32) -> i32 {{ a + {i} }}\n",
                 "fn total(items: &[i32]) -> i32 {\n    \n}\n"),
                ("deep.py", "python", "x = (", "def helper_{i}(a, b):\n    return a * {i} + b\n\n",
                 "def total(items):\n    \n\n")):
            items = [item.format(i=i) for i in range(3000)]
            text = head + "\n" + "".join(items[:1500]) + target + "".join(items[1500:])
            uri = f"file:///faults/{name}"
            s.open(uri, text, language)
            body = text[:text.index(target)].count("\n") + 1
            for line, col in ((body, 4), (0, len(head))):
                res = s.wait(s.inline(uri, line, col), timeout=120)
                assert "result" in res, (name, line, res)
        assert s.alive()
    finally:
        s.close()
