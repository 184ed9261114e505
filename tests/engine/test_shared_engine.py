"""One engine for every window (setting `engine: shared`): two `tandem serve` processes over stdio share one
engine process that holds the models; it answers as the in-process engine does; a window's request makes the
other window's fill-ahead yield; the engine process that dies is started again by the next request, with one
message; it exits when no window has been connected for its idle time."""
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from lsp_server.engine import EngineConfig, GenerationRequest
from lsp_server.engine.cancel import Cancel
from lsp_server.engine.shared import SharedEngine, socket_path
from lsp_server.engine.shared.client import stop_all
from rawlsp import RawServer

pytestmark = pytest.mark.models

CODE = "def total(prices):\n    s = 0\n    for p in prices:\n        \n    return s\n"


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


OTHER_USER = "tandem-test-other"


def connect_as(user: str | None, path: str) -> str:
    """Connect to a Unix socket as another user (created here; the tests run as root): what happened."""
    if user is not None:
        try:
            pwd.getpwnam(user)
        except KeyError:
            subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", user],
                           check=True)
    code = ("import socket, sys\ns = socket.socket(socket.AF_UNIX)\ntry:\n    s.connect(sys.argv[1])\n"
            "    print('connected')\nexcept OSError as e:\n    print(type(e).__name__)\n")
    # a Python that user may run (this one may live in a folder of root's)
    python = shutil.which("python3", path="/usr/bin:/bin:/usr/local/bin") if user else sys.executable
    assert python, "no python3 in /usr/bin, /bin or /usr/local/bin for the other user"
    out = subprocess.run([python, "-c", code, path], user=user, capture_output=True, text=True, timeout=30, cwd="/")
    return out.stdout.strip() or out.stderr.strip()


def drain(w: RawServer) -> list[dict]:
    out = []
    while not w.notifications.empty():
        out.append(w.notifications.get_nowait())
    return out


@pytest.fixture
def runtime(tmp_path, monkeypatch):
    d = tmp_path / "rt"
    d.mkdir()
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(d))
    return d


def test_engine_local_keeps_the_models_in_the_window_server(runtime, tmp_path):
    """`shared` is the default; `local` still answers with the models in the window's own server, and starts no
    engine process."""
    w = RawServer(cwd=tmp_path, env=dict(os.environ, XDG_RUNTIME_DIR=str(runtime)))
    try:
        w.initialize({"engine": "local", "kvStoreMiB": 128})
        s = w.wait_ready()
        assert s["ready"] and not s["load_error"], s
        uri = (tmp_path / "w.py").as_uri()
        w.open(uri, CODE)
        answer = w.wait(w.inline(uri, 3, 8), timeout=120)
        assert answer["result"]["items"][0]["insertText"].strip(), answer
        s = w.request("tandem/stats", {})["result"]
        assert "shared_engine" not in (s.get("backend") or {}), s.get("backend")
        assert rss_mib(w.proc.pid) > 1000
        assert not list(runtime.rglob("engine-*")), list(runtime.rglob("*"))
    finally:
        w.close()


def test_two_windows_share_one_engine_process(runtime, tmp_path):
    env = dict(os.environ, XDG_RUNTIME_DIR=str(runtime))
    windows = [RawServer(cwd=tmp_path, env=env) for _ in range(2)]
    try:
        for w in windows:
            w.initialize({"engine": "shared", "kvStoreMiB": 128, "suggestions": "eager"})
            # the clients' configuration right after initialized, while the engine starts: no second start
            w.notify("workspace/didChangeConfiguration", {"settings": {"tandem": {
                "engine": "shared", "kvStoreMiB": 128, "suggestions": "eager"}}})
        stats = [w.wait_ready() for w in windows]
        assert all(s["ready"] and not s["load_error"] for s in stats), stats
        pids = {s["backend"]["shared_engine"]["pid"] for s in stats}
        assert len(pids) == 1, stats
        host = pids.pop()
        for i, w in enumerate(windows):
            uri = (tmp_path / f"w{i}.py").as_uri()
            w.open(uri, CODE)
            answer = w.wait(w.inline(uri, 3, 8), timeout=120)
            assert answer["result"]["items"][0]["insertText"].strip(), answer
        time.sleep(1.1)   # the window's view of the engine process is at most a second old
        s = windows[0].request("tandem/stats", {})["result"]
        assert s["backend"]["shared_engine"]["windows"] == 2 and s["loads"] == 1
        # the models were loaded, and every job of both windows (requests and fills) ran, on one thread: decoding
        # from a second one slowed every decode after it by 40-70 % (llama.cpp's OpenMP teams, docs/server.md)
        assert s["backend"]["shared_engine"]["model_threads"] == 1, s["backend"]
        assert s["backend"]["shared_engine"]["generations"] >= 2
        # the weights live in the engine process; the windows' servers hold documents, parsers and a vocabulary
        assert rss_mib(host) > 1000
        assert all(rss_mib(w.proc.pid) < 500 for w in windows), [rss_mib(w.proc.pid) for w in windows]

        # another Unix user cannot reach the engine: its folder is the user's alone, and the socket is 0600
        sock = s["backend"]["shared_engine"]["socket"]
        assert os.stat(sock).st_mode & 0o777 == 0o600
        assert connect_as(OTHER_USER, sock) == "PermissionError"
        folder = os.path.dirname(sock)
        os.chmod(folder, 0o755)   # even with the folder open to all, the socket refuses
        try:
            assert connect_as(OTHER_USER, sock) == "PermissionError"
        finally:
            os.chmod(folder, 0o700)
        assert connect_as(None, sock) == "connected"

        # the engine process dies under a request: a new one answers it, each window is told once (with its
        # next request), and no traceback reaches an editor
        uri = (tmp_path / "late.py").as_uri()
        windows[0].open(uri, "def mean(xs):\n    if not xs:\n        \n    return sum(xs) / len(xs)\n")
        asked = windows[0].inline(uri, 2, 8)
        time.sleep(0.3)
        os.kill(host, signal.SIGKILL)
        again = windows[0].wait(asked, timeout=240)
        assert "result" in again and again["result"]["items"][0]["insertText"].strip(), again
        for i, w in enumerate(windows):
            other_uri = (tmp_path / f"after{i}.py").as_uri()
            w.open(other_uri, "def square(x):\n    \n")
            answer = w.wait(w.inline(other_uri, 1, 4), timeout=240)
            assert "error" not in answer, answer
        for w in windows:
            shown = [m["params"]["message"] for m in drain(w) if m.get("method") == "window/showMessage"]
            assert sum("engine process stopped" in m for m in shown) == 1, shown
            assert not any("Traceback" in m for m in shown)
            assert not any("Traceback" in line for line in w.stderr), "".join(w.stderr)[-3000:]
        new_host = windows[1].request("tandem/stats", {})["result"]["backend"]["shared_engine"]["pid"]
        assert new_host != host and alive(new_host)
        # stopped (as `stop_all` does, with SIGTERM), the engine process takes its socket with it
        assert stop_all(str(runtime / "tandem")) == [new_host]
        deadline = time.monotonic() + 30
        while (alive(new_host) or os.path.exists(sock)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not alive(new_host) and not os.path.exists(sock)
    finally:
        for w in windows:
            w.close()
        stop_all(str(runtime / "tandem"))   # a user's would exit after engineIdleMinutes


def test_it_answers_as_the_in_process_engine_restarts_after_it_dies_and_exits_when_idle(runtime, engine):
    cfg = EngineConfig(stats_path="", kv_store_mib=64)
    window = SharedEngine(cfg, log=lambda m: None, idle_s=3)
    other = SharedEngine(cfg, log=lambda m: None, idle_s=3)
    try:
        assert other.pid == window.pid
        prompt = window.tokenize("def fibonacci(n):\n    ")
        shared = window.generate(GenerationRequest(prompt, max_tokens=32, speculative=False))
        local = engine.generate(GenerationRequest(engine.tokenize("def fibonacci(n):\n    "), max_tokens=32,
                                                  speculative=False))
        assert shared.text == local.text and shared.tokens == local.tokens
        # a streamed answer, a question back to the window (does the line go on), and a cancel
        seen, asked = [], []
        g = window.generate(GenerationRequest(prompt, max_tokens=48, single_line=True,
                                              on_text=lambda t, n, m, e: seen.append(t),
                                              goes_on=lambda t: asked.append(t) or False))
        assert seen and asked and "\n" not in g.text.strip()
        stop = threading.Event()
        stop.set()
        assert window.generate(GenerationRequest(prompt, max_tokens=200), stop).stop_reason == "cancelled"
        # a fill ahead of the other window yields to this window's request
        fill = threading.Thread(target=other.prewarm, args=(other.tokenize("x = 1\n" * 600),))
        fill.start()
        time.sleep(0.3)
        window.generate(GenerationRequest(prompt, max_tokens=4))
        fill.join(60)
        time.sleep(1.1)   # the summary is asked of the engine process at most once a second
        assert window.summary()["shared_engine"]["fills_yielded"] >= 1
        # so does a generation nobody waits for (a prefetch, an offer: `Cancel.yields`), unless a request of its
        # window joined it meanwhile (`set_yields(False)`): that one runs to its end, and the request waits
        for joined in (False, True):
            flag, out = Cancel(yields=True), {}
            bg = threading.Thread(target=lambda: out.update(g=other.generate(
                GenerationRequest(prompt, max_tokens=40, speculative=False), flag)))
            bg.start()
            time.sleep(0.3)
            if joined:
                flag.set_yields(False)
                time.sleep(0.1)
            window.generate(GenerationRequest(prompt, max_tokens=2, speculative=False))
            bg.join(60)
            g = out["g"]
            if joined:
                assert g.stop_reason == "length" and len(g.tokens) == 40, g
            else:
                assert g.stop_reason == "cancelled" and len(g.tokens) < 40, g
        # a fill pre-empted by a request that shares its first tokens goes on that far (`Cancel.keep_until`,
        # passed on to the engine process), so the request finds them cached
        long = window.tokenize("y = 2\n" * 400)
        stop = Cancel()
        threading.Timer(0.3, stop.set_keeping, args=(200,)).start()
        n = window.prewarm(long, stop)
        assert 200 <= n < len(long) and window.cached(long) >= 200, (n, len(long))

        # the engine process dies: each window is told once, and its next request starts a new one
        dead, old = window.pid, window._sock
        os.kill(dead, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while window._down is None and time.monotonic() < deadline:
            time.sleep(0.05)
        notes = window.notices()
        assert len(notes) == 1 and "stopped" in notes[0] and window.notices() == []
        again = window.generate(GenerationRequest(prompt, max_tokens=32, speculative=False))
        assert again.text == local.text
        info = window._call("info")
        assert info["pid"] != dead and alive(info["pid"])
        new_host = info["pid"]
        # the old connection's end found again, late (its reader, where a send found it first and the new
        # connection was made meanwhile): nothing sent on the new one fails, and the window is not told twice
        out = {}
        t = threading.Thread(target=lambda: out.update(g=window.generate(
            GenerationRequest(prompt, max_tokens=64, speculative=False))))
        t.start()
        deadline = time.monotonic() + 10
        while not window._sent_on and time.monotonic() < deadline:
            time.sleep(0.01)
        in_flight = bool(window._sent_on)
        window._lost(old, "the shared engine process stopped")
        t.join(60)
        assert in_flight and out["g"].stop_reason != "cancelled" and out["g"].text.startswith(local.text), out
        assert window.notices() == [] and window._down is None and window._call("info")["pid"] == new_host
    finally:
        window.close()
        other.close()
    # no window left: it exits after its idle time, and takes its socket with it
    deadline = time.monotonic() + 30
    while alive(new_host) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not alive(new_host) or open(f"/proc/{new_host}/stat").read().split()[2] == "Z"
    assert not Path(window.path).exists()


def test_a_socket_that_takes_a_connection_and_drops_it_is_not_taken_for_the_engine(runtime):
    """A killed engine process's listening socket may outlive its connections for a moment: a window that connects
    then (a request retried after the engine died) must not take it for the engine, whose answer would never come,
    but start a new one."""
    cfg = EngineConfig(stats_path="", kv_store_mib=64)
    dying = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dying.bind(socket_path(cfg))
    dying.listen(8)

    def drop() -> None:
        while True:
            try:
                conn, _ = dying.accept()
            except OSError:
                return
            conn.close()

    threading.Thread(target=drop, daemon=True).start()
    window = None
    try:
        window = SharedEngine(cfg, log=lambda m: None, idle_s=3)
        g = window.generate(GenerationRequest(window.tokenize("def f(x):\n    "), max_tokens=4, speculative=False))
        assert g.tokens and window.notices() == [] and window.pid != os.getpid() and alive(window.pid)
    finally:
        if window is not None:
            window.close()
        dying.close()
        stop_all(str(runtime / "tandem"))
