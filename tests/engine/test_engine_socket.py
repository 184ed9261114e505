"""Where a window finds the shared engine process: one socket per model configuration and runtime folder; a
runtime folder whose path is too long for a Unix socket gets a short path with a link where the socket would be,
and `stop_all` of that folder stops the engine there too (no model file: make check)."""
import os
import shutil
import socket
import subprocess
import tempfile
import threading

from lsp_server.engine import EngineConfig
from lsp_server.engine.shared import wire
from lsp_server.engine.shared.client import MAX_SOCKET_PATH, socket_path, stop_all


def _serve_info(path: str, pid: int) -> threading.Thread:
    """A stand-in engine process on `path` that answers `info` with `pid` (what stop_all asks)."""
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(1)

    def run():
        conn, _ = srv.accept()
        msg = wire.loads(conn.makefile("rb").readline())
        conn.sendall(wire.dumps({"id": msg["id"], "ev": "done", "result": {"pid": pid}}))
        conn.close()
        srv.close()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def test_a_long_runtime_folder_gets_a_short_socket_that_stop_all_still_finds(tmp_path, monkeypatch):
    cfg = EngineConfig(target_path=str(tmp_path / "t.gguf"), stats_path="")
    long_dir = tmp_path / ("r" * 60) / ("u" * 40)
    long_dir.mkdir(parents=True)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(long_dir))
    path = socket_path(cfg)
    assert len(path.encode()) <= MAX_SOCKET_PATH and not path.startswith(str(long_dir))
    link = long_dir / "tandem" / os.path.basename(path)
    assert link.is_symlink() and os.readlink(link) == path
    assert socket_path(cfg) == path   # the same window asking again: the same engine

    # another runtime folder (another session of the user's, a test's own): another engine, never this one
    other_dir = tmp_path / ("s" * 60) / ("u" * 40)
    other_dir.mkdir(parents=True)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(other_dir))
    assert socket_path(cfg) != path

    if os.path.exists(path):
        os.unlink(path)
    child = subprocess.Popen(["sleep", "60"])
    try:
        served = _serve_info(path, child.pid)
        assert stop_all(str(long_dir / "tandem")) == [child.pid]
        assert child.wait(timeout=10) != 0   # SIGTERM
        served.join(timeout=10)
    finally:
        child.kill()
        if os.path.exists(path):
            os.unlink(path)


def test_a_short_runtime_folder_holds_the_socket_itself(monkeypatch):
    short = tempfile.mkdtemp(prefix="rt", dir="/tmp")   # pytest's own folders can be too long already
    try:
        monkeypatch.setenv("XDG_RUNTIME_DIR", short)
        path = socket_path(EngineConfig(target_path=os.path.join(short, "t.gguf"), stats_path=""))
        assert os.path.dirname(path) == os.path.join(short, "tandem") and not os.path.islink(path)
    finally:
        shutil.rmtree(short)


def test_the_draft_decision_is_read_with_the_residency_not_kept_from_the_connection():
    """The engine process unloads and loads its draft model again as measured costs move; a window connected
    before that must show the decision that goes with the residency it shows (the stats once said "reloaded"
    of a draft model that was not resident)."""
    import time
    from lsp_server.engine.shared.client import SharedEngine
    client = object.__new__(SharedEngine)   # its state as _connect and info left it, no engine process
    client._draft_resident, client._draft_decision = True, "reloaded: it can pay"
    client._summary = {"draft_resident": False, "draft_decision": "unloaded again: it cannot pay"}
    client._summary_at = time.monotonic()
    assert client.draft is None and client.draft_decision == "unloaded again: it cannot pay"
    client._summary = {}   # the engine process did not answer: what the connection said
    assert client.draft is True and client.draft_decision == "reloaded: it can pay"


def test_a_benchmark_gets_an_engine_of_its_own_and_stops_it(monkeypatch):
    """`tandem-eval replay | visits | eval real` (evals/common/own_engine.py): the servers a run starts find the engine in a
    fresh runtime folder, not the user's (whose KV store holds what earlier runs evaluated); at the end that
    engine is stopped, the folder removed and the user's folder is the runtime folder again."""
    from evals.common.own_engine import own_engine
    user = tempfile.mkdtemp(prefix="rt", dir="/tmp")
    monkeypatch.setenv("XDG_RUNTIME_DIR", user)
    cfg = EngineConfig(target_path=os.path.join(user, "t.gguf"), stats_path="")
    users_engine = socket_path(cfg)
    child = subprocess.Popen(["sleep", "60"])
    try:
        with own_engine() as folder:
            path = socket_path(cfg)
            assert os.environ["XDG_RUNTIME_DIR"] == folder and path != users_engine
            assert path.startswith(os.path.join(folder, "tandem"))
            served = _serve_info(path, child.pid)   # the run's servers started an engine there
        assert child.wait(timeout=10) != 0   # stopped at the end (SIGTERM)
        served.join(timeout=10)
        assert not os.path.exists(folder) and os.environ["XDG_RUNTIME_DIR"] == user
        assert socket_path(cfg) == users_engine
        with own_engine(enabled=False) as none:   # --shared-engine: the user's
            assert none is None and socket_path(cfg) == users_engine
    finally:
        child.kill()
        shutil.rmtree(user, ignore_errors=True)
