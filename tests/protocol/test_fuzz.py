"""Protocol fuzzing over stdio against the real server with the real models: malformed JSON-RPC, wrong types,
out-of-range positions, unknown methods, huge lines, binary and invalid text, for completions and next edits
(`textDocument/copilotInlineEdit`, code actions, the accept command, `tandem/nextEditDismissed`). After every
case the server must still be up, and every request it was sent must have been answered with a result or a
JSON-RPC error."""
from __future__ import annotations

import json
import os

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from conftest import FIXTURES
from lsp_helpers import blank_cursor
from rawlsp import RawServer

pytestmark = pytest.mark.models

EXAMPLES = int(os.environ.get("TANDEM_FUZZ_EXAMPLES", "200"))
DOC = FIXTURES / "lsp" / "inventory.py"
# short generations and prompts: the fuzzer is after the protocol, and this keeps a case under a second or two
OPTIONS = {"maxTokens": 6, "maxTokensSingleLine": 6, "prefixTokens": 256, "prefetch": False,
           "suggestions": "eager"}   # the last test asks for an answer, whatever the gate thinks of it
# -32603 (internal error) is a handler that crashed: a bug, not an answer
ERROR_CODES = {-32700, -32600, -32601, -32602, -32800, -32801}

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2 ** 70), 2 ** 70) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=10)
odd_ints = st.one_of(st.integers(-3, 2 ** 40), st.sampled_from([2 ** 31 - 1, 2 ** 31, 2 ** 53, -(2 ** 31)]))
coordinates = st.one_of(odd_ints, odd_ints, st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=3),
                        st.none())
# text an editor should never send but a broken one might: lone surrogates, NULs, odd line breaks, emoji
nasty = st.sampled_from(["\ud800", "\udfff", "\x00", "\uffff", "😀", "\r", "\r\n", "\n", "\u2028", "é", "\t"])
texts = st.one_of(st.text(max_size=300), st.lists(nasty, max_size=50).map("".join),
                  st.lists(st.text(max_size=40) | nasty, max_size=30).map("".join),
                  st.integers(5_000, 120_000).map(lambda n: "x = 1 + " * (n // 8)))   # one huge line
uris = st.one_of(st.just(DOC.as_uri()), st.just("file:///fuzz/doc.py"), st.text(max_size=30),
                 st.just("untitled:Untitled-1"), st.just("file:///" + "a" * 5000 + ".py"))
METHODS = ["textDocument/inlineCompletion", "textDocument/completion", "tandem/stats", "tandem/didAccept",
           "workspace/executeCommand", "completionItem/resolve", "textDocument/hover", "$/cancelRequest",
           "textDocument/didOpen", "textDocument/didChange", "textDocument/didClose", "initialize",
           "textDocument/copilotInlineEdit", "textDocument/codeAction", "tandem/nextEditDismissed"]
methods = st.one_of(st.sampled_from(METHODS), st.text(max_size=30))


def position_params(uri, line, character):
    return {"textDocument": {"uri": uri}, "position": {"line": line, "character": character},
            "context": {"triggerKind": 2}}


raw_bodies = st.one_of(st.binary(max_size=200), st.text(max_size=200).map(str.encode),
                       json_values.map(lambda v: json.dumps(v).encode()))
random_requests = st.tuples(st.just("request"), methods, json_values)
position_requests = st.tuples(
    st.just("request"), st.sampled_from(["textDocument/inlineCompletion", "textDocument/completion",
                                         "textDocument/copilotInlineEdit"]),
    st.builds(position_params, uris, coordinates, coordinates))
ranges = st.builds(lambda l0, c0, l1, c1: {"start": {"line": l0, "character": c0},
                                           "end": {"line": l1, "character": c1}},
                   coordinates, coordinates, coordinates, coordinates) | json_values
action_requests = st.tuples(st.just("request"), st.just("textDocument/codeAction"), st.builds(
    lambda uri, rng, kind: {"textDocument": {"uri": uri}, "range": rng, "context": {"diagnostics": [],
                                                                                  "triggerKind": kind}},
    uris, ranges, st.sampled_from([None, 1, 2, 3]) | json_values))
# the command an edit carries, with any arguments (an id proposed or not, or anything)
accepts = st.tuples(st.just("request"), st.just("workspace/executeCommand"), st.builds(
    lambda args: {"command": "tandem.nextEditAccepted", "arguments": args},
    st.lists(st.sampled_from(["ne-1", "ne-999"]) | json_values, max_size=2) | json_values))
opens = st.tuples(st.just("open"), st.sampled_from(["file:///fuzz/doc.py", "file:///fuzz/other.ts",
                                                    "untitled:Untitled-1"]), texts,
                  st.integers(0, 400), st.integers(0, 400))
changes = st.tuples(st.just("change"), coordinates, coordinates, coordinates, coordinates, texts)
# Tandem's own notifications, whose params pygls hands over unchecked: a cursor, a screen, or anything at all
cursors = st.builds(lambda uri, line, ch: {"uri": uri, "position": {"line": line, "character": ch}},
                    uris, coordinates, coordinates)
screens = st.builds(lambda uri, ranges: {"uri": uri, "ranges": ranges}, uris,
                    st.lists(st.builds(lambda a, b: {"start": {"line": a, "character": 0},
                                                     "end": {"line": b, "character": 0}}, coordinates, coordinates)
                             | json_values, max_size=3) | json_values)
notes = st.one_of(st.tuples(st.just("note"), st.just("tandem/didMoveCursor"), cursors | json_values),
                  st.tuples(st.just("note"), st.just("tandem/visibleRanges"), screens),
                  st.tuples(st.just("note"), st.just("tandem/nextEditDismissed"),
                            st.builds(lambda i: {"id": i}, st.sampled_from(["ne-1", "ne-999"]) | json_values)
                            | json_values))
steps = st.lists(st.one_of(raw_bodies.map(lambda b: ("raw", b)), random_requests, position_requests, opens,
                           changes, notes, action_requests, accepts), min_size=1, max_size=4)
FAILED = "handler failed"   # the server's log line where a handler raised (TandemServer.report_server_error)


@pytest.fixture(scope="module")
def server():
    s = RawServer()
    s.initialize(OPTIONS, root=FIXTURES / "lsp")
    assert s.wait_ready()["ready"]
    s.open(DOC.as_uri(), DOC.read_text())
    s.tally = {"cases": 0, "messages": 0, "requests": 0, "results": 0, "errors": {}}
    yield s
    print(f"\nfuzz: {s.tally}")
    s.close()


def run_step(s: RawServer, step, sent: list) -> None:
    kind = step[0]
    if kind == "raw":
        s.send_bytes(step[1])
    elif kind == "request":
        sent.append(s.request_async(step[1], step[2]))
    elif kind == "note":
        s.notify(step[1], step[2])
        sent.append(s.inline(DOC.as_uri(), 0, 0))   # and the server still answers after it
    elif kind == "open":
        _, uri, text, line, col = step
        s.open(uri, text, "typescript" if uri.endswith(".ts") else "python")
        sent.append(s.inline(uri, line, col))
    else:
        _, l0, c0, l1, c1, text = step
        s.notify("textDocument/didChange", {
            "textDocument": {"uri": "file:///fuzz/doc.py", "version": 2},
            "contentChanges": [{"range": {"start": {"line": l0, "character": c0},
                                          "end": {"line": l1, "character": c1}}, "text": text}]})
        sent.append(s.inline("file:///fuzz/doc.py", 0, 0))
    s.tally["messages"] += 1


def test_a_change_to_a_document_never_opened_and_numbers_past_the_lsp_range_fail_no_handler(server: RawServer):
    """Two the fuzzing met: pygls raised KeyError at a change to a document it does not hold, and lsprotocol's
    Position raises ValueError past the LSP's uinteger (2^31 - 1), which a handler's own check let through."""
    server.notify("textDocument/didChange", {
        "textDocument": {"uri": "file:///fuzz/never-opened.py", "version": 2},
        "contentChanges": [{"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
                            "text": "x"}]})
    server.notify("tandem/didMoveCursor", {"uri": DOC.as_uri(), "position": {"line": 2 ** 31, "character": 0}})
    res = server.request("textDocument/copilotInlineEdit", {"textDocument": {"uri": DOC.as_uri()},
                                                            "position": {"line": 2 ** 31, "character": 0}}, timeout=60)
    assert res["error"]["code"] == -32602 and "position must be" in res["error"]["message"]
    assert server.alive() and not [line for line in server.stderr if FAILED in line], "".join(server.stderr[-40:])


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.data_too_large])
@given(steps=steps)
def test_every_request_is_answered_and_the_server_stays_up(server: RawServer, steps):
    sent: list = []
    for step in steps:
        run_step(server, step, sent)
    for msg_id in sent:
        res = server.wait(msg_id, timeout=120)
        server.tally["requests"] += 1
        if "error" in res:
            code = res["error"]["code"]
            assert code in ERROR_CODES, res
            assert isinstance(res["error"]["message"], str) and res["error"]["message"]
            server.tally["errors"][code] = server.tally["errors"].get(code, 0) + 1
        else:
            assert "result" in res, res
            server.tally["results"] += 1
    # alive, and still completing real code after whatever came before; no handler raised
    assert server.alive(), "".join(server.stderr[-40:])
    assert not [line for line in server.stderr if FAILED in line], "".join(server.stderr[-40:])
    assert server.request("tandem/stats", {}, timeout=60)["result"]["ready"]
    server.tally["cases"] += 1


def test_the_server_still_completes_after_the_fuzzing(server: RawServer):
    pos = blank_cursor(DOC.read_text())
    res = server.wait(server.inline(DOC.as_uri(), pos.line, pos.character), timeout=120)
    assert res["result"]["items"][0]["insertText"].strip(), res
    assert server.alive()
