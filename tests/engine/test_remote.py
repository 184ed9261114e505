"""The remote engine against a real llama-server (built from the vendored llama.cpp, the default models): the
CLI, the server over stdio (inline and popup completions, cancellation, a killed server and its recovery, a
wrong API key), and the server's own speculation."""
from __future__ import annotations

import asyncio
import http.server
import json
import os
import subprocess
import threading
import time

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import ClientServerConfig, LanguageClient

from conftest import FIXTURES, ROOT, eval_cmd, tandem_cmd
from llama_server import LlamaServer, free_port
from lsp_helpers import blank_cursor, inline, open_doc, popup, setting, start, stats, type_text, wait_ready

pytestmark = pytest.mark.models
DEMO = ["fixtures/demo/orders.py", "--line", "40", "--col", "1", "--max-tokens", "48"]
KEY_VAR = "TANDEM_TEST_BACKEND_KEY"
KEY = "s3cret-key-for-the-test-only"


@pytest.fixture(scope="module")
def server():
    s = LlamaServer(slots=2).start()
    yield s
    s.stop()


def tandem(*args: str, env: dict | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(tandem_cmd() + list(args), capture_output=True, text=True, cwd=ROOT, timeout=timeout,
                          env={**os.environ, **(env or {})})


def test_complete_through_llama_server_prints_what_the_local_engine_prints(server):
    remote = tandem("complete", *DEMO, "--backend", server.url, "--json")
    assert remote.returncode == 0, remote.stderr
    local = tandem("complete", *DEMO, "--no-spec", "--json")
    assert local.returncode == 0, local.stderr
    r, l = json.loads(remote.stdout), json.loads(local.stdout)
    assert r["completion"].strip() and r["completion"] == l["completion"]
    assert r["stats"]["tokens"] > 0 and r["stats"]["prompt_tokens"] == l["stats"]["prompt_tokens"]


def test_complete_with_the_server_down_exits_with_one_line_that_says_what_to_do():
    out = tandem("complete", *DEMO, "--backend", f"http://127.0.0.1:{free_port()}", timeout=120)
    assert out.returncode == 1
    lines = [l for l in out.stderr.splitlines() if l.startswith("tandem:")]
    assert len(lines) == 1 and "cannot connect" in lines[0] and "is the server running" in lines[0]


def test_the_servers_own_speculation_is_counted():
    s = LlamaServer(draft=True, slots=1).start()
    try:
        out = tandem("complete", *DEMO, "--backend", s.url, "--json")
        assert out.returncode == 0, out.stderr
        d = json.loads(out.stdout)["stats"]["drafters"]
        assert d["server"]["drafted"] > 0 and 0 <= d["server"]["accepted"] <= d["server"]["drafted"]
    finally:
        s.stop()


# ---- the language server on the backend -----------------------------------------------------------------

def remote_config(url: str, **extra) -> dict:
    # eager: the predictor is not what these tests are of (the gate judges nothing here: no margins come back)
    return {"backend": url, "timeBudgetMs": 30000, "earlyAnswerMs": 0, "backendTimeoutMs": 5000, "maxTokens": 96,
            "suggestions": "eager", **extra}


SERVER = ClientServerConfig(server_command=tandem_cmd() + ["serve"])


@pytest_lsp.fixture(config=SERVER, scope="function")
async def lsp(lsp_client: LanguageClient):
    yield lsp_client
    await lsp_client.shutdown_session()


@pytest.mark.asyncio
async def test_inline_and_popup_completions_come_from_the_backend(lsp: LanguageClient, server):
    await start(lsp, remote_config(server.url))
    s = await wait_ready(lsp)
    assert s["ready"], s["load_error"]
    uri, text = open_doc(lsp, FIXTURES / "lsp" / "inventory.py")
    pos = blank_cursor(text)
    assert (await inline(lsp, uri, pos)).strip()
    items = await popup(lsp, uri, pos)
    assert items and items[0].insert_text or items[0].text_edit
    s = await stats(lsp)
    assert s["backend"]["health"]["state"] == "up" and s["backend"]["kind"] == "llama-server"
    assert s["backend"]["health"]["first_token_ms"] > 0 and not s["memory"]["kv_store"]["bytes"]


async def _generating(server: LlamaServer, timeout: float = 30) -> bool:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if any(server.slots_busy()):
            return True
        await asyncio.sleep(0.05)
    return False


async def _idle_within(server: LlamaServer, seconds: float) -> float:
    t0 = time.monotonic()
    while any(server.slots_busy()) and time.monotonic() - t0 < seconds + 3:
        await asyncio.sleep(0.05)
    return time.monotonic() - t0


# no filling ahead: a busy slot is then the request's own generation
QUIET = {"maxTokens": 400, "timeBudgetMs": 60000, "prefetch": False, "warmupPauseMs": -1}


@pytest.mark.asyncio
async def test_a_cancelled_request_frees_the_servers_slot(lsp: LanguageClient, server):
    await start(lsp, remote_config(server.url, **QUIET))
    assert (await wait_ready(lsp))["ready"]
    uri, text = open_doc(lsp, FIXTURES / "lsp" / "inventory.py")
    # the module's server is shared: the previous test's server may have left a generation that llama-server
    # stops only when it next looks for the closed connection
    await _idle_within(server, 5.0)
    assert not any(server.slots_busy())
    task = asyncio.ensure_future(lsp.protocol.send_request_async(
        types.TEXT_DOCUMENT_INLINE_COMPLETION, types.InlineCompletionParams(
            text_document=types.TextDocumentIdentifier(uri=uri), position=blank_cursor(text),
            context=types.InlineCompletionContext(trigger_kind=types.InlineCompletionTriggerKind.Invoked)),
        msg_id="remote-cancel"))
    assert await _generating(server)
    lsp.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="remote-cancel"))
    with pytest.raises(JsonRpcException) as err:
        await asyncio.wait_for(task, 10)
    assert err.value.code == -32800
    # llama-server looks for a closed connection once a second, then stops generating
    took = await _idle_within(server, 2.0)
    assert not any(server.slots_busy()) and took < 2.0, f"the slot still generated {took:.1f} s after the cancel"


@pytest.mark.asyncio
async def test_a_newer_request_supersedes_the_old_ones_generation_on_the_server(lsp: LanguageClient, server):
    await start(lsp, remote_config(server.url, **QUIET))
    assert (await wait_ready(lsp))["ready"]
    text = (FIXTURES / "lsp" / "inventory.py").read_text()
    uri, text = open_doc(lsp, FIXTURES / "lsp" / "inventory.py", text=text)
    pos = blank_cursor(text)
    old = asyncio.ensure_future(inline(lsp, uri, pos))
    assert await _generating(server)
    # a keystroke that leaves the old generation useless: its answer is empty, the new one is not
    pos2 = type_text(lsp, uri, 2, pos, "zz = ")
    new = await inline(lsp, uri, pos2)
    assert await asyncio.wait_for(old, 30) == ""
    assert new.strip()
    s = await stats(lsp, records=True)
    assert s["backend"]["health"]["errors"] == 0


def _fresh_doc(client: LanguageClient, n: int) -> tuple[str, types.Position]:
    """A document no cache has an answer for."""
    path = FIXTURES / "lsp" / "inventory.py"
    text = f"# visit {n} {time.time()}\n" + path.read_text()
    uri, text = open_doc(client, path, text=text, uri=(FIXTURES / "lsp" / f"inventory-{n}.py").as_uri())
    return uri, blank_cursor(text)


@pytest.mark.asyncio
async def test_a_killed_server_is_reported_once_and_completions_come_back_with_it(lsp: LanguageClient):
    backend = LlamaServer(slots=1).start()
    again = LlamaServer(slots=1, port=backend.port)
    try:
        await start(lsp, remote_config(backend.url, prefetch=False, warmupPauseMs=-1))
        assert (await wait_ready(lsp))["ready"]
        assert (await inline(lsp, *_fresh_doc(lsp, 0))).strip()
        backend.stop()
        for n in range(1, 5):   # requests while it is down: empty, the server stays up, one message
            assert await inline(lsp, *_fresh_doc(lsp, n)) == ""
        await asyncio.sleep(0.3)
        down = [m for m in lsp.messages if "cannot connect" in m.message]
        assert len(down) == 1 and down[0].type == types.MessageType.Warning
        s = await stats(lsp)
        assert s["backend"]["health"]["state"] == "down" and s["backend"]["health"]["errors"] >= 1
        # requests within the backoff do not reach the network: fewer errors than requests
        assert s["backend"]["health"]["errors"] < 4
        again.start()
        got, n, t0 = "", 5, time.monotonic()
        while not got.strip() and time.monotonic() - t0 < 60:
            await asyncio.sleep(1)
            got = await inline(lsp, *_fresh_doc(lsp, n))
            n += 1
        assert got.strip()
        await asyncio.sleep(0.3)
        assert any("answers again" in m.message for m in lsp.messages)
        assert (await stats(lsp))["backend"]["health"]["state"] == "up"
    finally:
        backend.stop()
        again.stop()


ORDERS = '''def summarize(orders, tax_rate=0.2):
    total = 0.0
    for order in orders:
        total += order.price * order.quantity
    return total * (1 + tax_rate)
'''


def _edit(client: LanguageClient, uri: str, line: int, start: int, end: int, text: str) -> None:
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangePartial(
            range=types.Range(start=types.Position(line=line, character=start),
                              end=types.Position(line=line, character=end)), text=text)]))


async def _next_edit(client: LanguageClient, uri: str, line: int) -> list:
    res = await client.protocol.send_request_async("textDocument/copilotInlineEdit", {
        "textDocument": {"uri": uri, "version": 2}, "position": {"line": line, "character": 0}})
    return res["edits"] if isinstance(res, dict) else res.edits


@pytest.mark.asyncio
async def test_next_edits_on_the_backend_repeat_the_users_change_and_ask_it_for_no_rewrite(lsp: LanguageClient,
                                                                                            server):
    """The server gives no margins (and none at all for the tokens its own speculation accepts), so the model's
    own rewrite, shown only where the model was sure, is not asked for; the user's change repeated from the text
    is proposed as with the local models."""
    await start(lsp, remote_config(server.url, **QUIET))
    assert (await wait_ready(lsp))["ready"]
    renamed, _ = open_doc(lsp, FIXTURES / "lsp" / "inventory.py", text=ORDERS, uri="file:///tmp/tandem-remote/a.py")
    _edit(lsp, renamed, 1, 4, 9, "amount")
    [edit] = await _next_edit(lsp, renamed, 1)
    assert "amount += order.price" in (edit["text"] if isinstance(edit, dict) else edit.text)
    param, _ = open_doc(lsp, FIXTURES / "lsp" / "inventory.py", text=ORDERS, uri="file:///tmp/tandem-remote/b.py")
    _edit(lsp, param, 0, 34, 34, ", discount=0")
    await _idle_within(server, 5.0)
    before = await stats(lsp)
    assert await _next_edit(lsp, param, 0) == []
    after = await stats(lsp)
    assert after["next_edit"]["filtered"] == {"no_margins": 1}, after["next_edit"]
    assert after["next_edit"]["from_repeat"] == 1 and after["next_edit"]["from_model"] == 0
    assert after["backend"]["health"]["requests"] == before["backend"]["health"]["requests"]   # none was sent


WRONG = "not-the-key-4711"
KEYED = ClientServerConfig(server_command=tandem_cmd() + ["serve"], server_env={**os.environ, KEY_VAR: WRONG})


@pytest_lsp.fixture(config=KEYED, scope="function")
async def keyed(lsp_client: LanguageClient):
    yield lsp_client
    await lsp_client.shutdown_session()


@pytest.mark.asyncio
async def test_a_wrong_api_key_is_reported_and_never_shown(keyed: LanguageClient):
    backend = LlamaServer(slots=1, api_key=KEY).start()
    try:
        await start(keyed, remote_config(backend.url, backendApiKeyEnv=KEY_VAR))
        assert (await wait_ready(keyed))["ready"]
        uri, text = open_doc(keyed, FIXTURES / "lsp" / "inventory.py")
        assert await inline(keyed, uri, blank_cursor(text)) == ""
        await asyncio.sleep(0.3)
        refused = [m.message for m in keyed.messages if "refused" in m.message]
        assert len(refused) == 1 and KEY_VAR in refused[0] and "HTTP 401" in refused[0]
        s = await stats(keyed, records=True)
        assert s["backend"]["health"]["state"] == "down"
        everything = json.dumps(s) + " ".join(m.message for m in keyed.messages)
        assert WRONG not in everything and KEY_VAR in everything
    finally:
        backend.stop()


def test_the_right_api_key_is_sent_and_the_key_never_printed():
    backend = LlamaServer(slots=1, api_key=KEY).start()
    try:
        out = tandem("complete", *DEMO, "--backend", backend.url, "--backend-api-key-env", KEY_VAR, "--json",
                     env={KEY_VAR: KEY})
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout)["completion"].strip() and KEY not in out.stdout + out.stderr
        wrong = tandem("complete", *DEMO, "--backend", backend.url, "--backend-api-key-env", KEY_VAR,
                       env={KEY_VAR: WRONG})
        assert wrong.returncode == 1 and f"refused the key in {KEY_VAR}" in wrong.stderr
        assert WRONG not in wrong.stderr + wrong.stdout
        unset = tandem("complete", *DEMO, "--backend", backend.url, "--backend-api-key-env", "TANDEM_NO_SUCH_VAR")
        assert unset.returncode == 1 and "TANDEM_NO_SUCH_VAR" in unset.stderr and "not set" in unset.stderr
    finally:
        backend.stop()


@pytest.mark.asyncio
async def test_a_workspace_file_cannot_choose_the_backend_or_models(lsp: LanguageClient, tmp_path, server):
    (tmp_path / "tandem.toml").write_text(f'backend = "{server.url}"\ntarget = "/tmp/theirs.gguf"\n'
                                          f'maxTokens = 80\n')
    (tmp_path / "a.py").write_text("def f(x):\n    \n")
    await start(lsp, {"draft": "none"}, root=tmp_path)
    await asyncio.sleep(0.3)
    warned = [m.message for m in lsp.messages if "ignored" in m.message]
    assert warned and "backend" in warned[0] and "target" in warned[0] and "repository" in warned[0]
    s = await stats(lsp)
    assert [setting(s, k)["value"] for k in ("backend", "target", "maxTokens")] == ["", "", 80]


def user_config_env(tmp_path, url: str) -> dict:
    (tmp_path / "tandem").mkdir(exist_ok=True)
    (tmp_path / "tandem" / "config.toml").write_text(f'backend = "{url}"\n')
    return {**os.environ, "XDG_CONFIG_HOME": str(tmp_path)}


@pytest.mark.asyncio
async def test_the_users_own_config_may_choose_the_backend(tmp_path, server):
    config = ClientServerConfig(server_command=tandem_cmd() + ["serve"],
                                server_env=user_config_env(tmp_path, server.url))
    client = await config.start()
    try:
        await start(client, {"timeBudgetMs": 30000, "earlyAnswerMs": 0})
        s = await wait_ready(client)
        assert s["ready"] and setting(s, "backend")["value"] == server.url and s["backend"]["health"]["state"] == "up"
        assert not [m for m in client.messages if "ignored" in m.message]
    finally:
        await client.shutdown_session()
        await client.stop()


# ---- a server that answers badly (a real HTTP server on localhost, answering what a broken one would) ------

class _Bad(http.server.BaseHTTPRequestHandler):
    mode = "malformed"

    def log_message(self, *args):
        pass

    def _send(self, code: int, body: bytes, ctype: str = "application/json") -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        real = json.loads(PROPS)
        self._send(200, json.dumps(real).encode())

    def do_POST(self):
        n = int(self.headers.get("Content-Length", 0))
        body = json.loads(self.rfile.read(n) or b"{}")
        if self.path == "/tokenize":
            self._send(200, json.dumps({"tokens": VOCAB.tokenize(body["content"])}).encode())
        elif self.mode == "malformed":
            self._send(200, b"data: {not json\n\n", "text/event-stream")
        elif self.mode == "500":
            self._send(500, json.dumps({"error": {"message": "out of memory", "code": 500}}).encode())
        elif self.mode == "not-a-stream":
            self._send(200, b"<html>a proxy's login page</html>", "text/html")


PROPS = json.dumps({"default_generation_settings": {"n_ctx": 4096}, "total_slots": 1})
VOCAB = None


@pytest.fixture(scope="module")
def bad_server():
    global VOCAB
    from lsp_server.engine import registry
    from lsp_server.engine.llama import VocabularyFile
    VOCAB = VocabularyFile(str(registry.default_path(registry.DEFAULT_TARGET)))
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Bad)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    VOCAB.close()


@pytest.mark.parametrize("mode, words", [("malformed", "malformed stream"), ("500", "HTTP 500: out of memory"),
                                         ("not-a-stream", "did not answer with a stream")])
def test_a_server_that_answers_badly_gets_an_empty_answer_and_a_reason(bad_server, mode, words):
    from lsp_server.engine import EngineConfig, GenerationRequest
    from lsp_server.engine.remote import BackendConfig, RemoteEngine
    _Bad.mode = mode
    e = RemoteEngine(BackendConfig(bad_server), EngineConfig(), log=lambda m: None)
    try:
        assert e.health.state == "up" and e.cfg.n_ctx == 4096
        g = e.generate(GenerationRequest(e.tokenize("def f():\n"), max_tokens=8))
        assert (g.text, g.stop_reason) == ("", "error")
        assert e.health.state == "down" and words in e.health.error
        notes = e.notices()
        assert len(notes) == 1 and words in notes[0]
        # within the backoff the next request does not reach the server, and says nothing new
        g = e.generate(GenerationRequest(e.tokenize("def g():\n"), max_tokens=8))
        assert g.stop_reason == "error" and e.health.errors == 1 and not e.notices()
    finally:
        e.close()


def lab(*args, timeout=300):
    return subprocess.run(eval_cmd() + list(args), capture_output=True, text=True, cwd=ROOT, timeout=timeout)


def test_bench_through_llama_server_plain_against_its_own_speculation(tmp_path):
    plain, spec = LlamaServer(slots=1), LlamaServer(draft=True, slots=1)
    try:
        plain.start()
        spec.start()
        out = tmp_path / "bench.json"
        p = lab("speed", "--backend", spec.url, "--backend-plain", plain.url, "--limit", "1", "--categories",
                   "python-boilerplate,algorithmic", "--max-tokens", "32", "--json", str(out))
        assert p.returncode == 0, p.stderr
        rows = json.loads(out.read_text())["rows"]
        assert [r["category"] for r in rows] == ["python-boilerplate", "algorithmic"]
        for r in rows:
            assert r["baseline_tok_s"] > 0 and r["spec_tok_s"] > 0 and r["speedup"] > 0
        assert sum(r["drafted"].get("server", {}).get("drafted", 0) for r in rows) > 0
        assert "the server's own speculation" in p.stdout
        alone = lab("speed", "--backend", spec.url, "--limit", "1")
        assert alone.returncode == 2 and "--backend-plain" in alone.stderr
    finally:
        plain.stop()
        spec.stop()
