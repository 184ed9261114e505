"""An engine process of another Tandem version is not used: the socket's name and the handshake (`info`) carry the
version and the model configuration; an engine an upgrade left behind is stopped when this version starts its own
(unless windows of its version still use it), and the window says so once; an engine of this version is reused.
The engine processes here are the real host in front of no model (fake_engine.py), so no model file: make check."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from types import SimpleNamespace

import pytest

import lsp_server
from lsp_server.engine import EngineConfig
from lsp_server.engine.shared import SharedEngine, client, identity, socket_path
from lsp_server.engine.shared.client import stop_all

FAKE = Path(__file__).with_name("fake_engine.py")
ROOT = Path(__file__).resolve().parents[2]
OLD_NAME = "engine-0123456789abcdef.sock"   # how 0.2.0 named its socket: no version


class Vocab:
    def close(self) -> None:
        pass


@pytest.fixture
def rt(monkeypatch):
    """A runtime folder of the test's own (short: no /tmp fallback), the windows' engine command the stand-in, and
    a window's server that needs no model file."""
    folder = tempfile.mkdtemp(prefix="rt", dir="/tmp")
    monkeypatch.setenv("XDG_RUNTIME_DIR", folder)
    monkeypatch.setenv("PYTHONPATH", str(ROOT))   # the engine process runs in /
    monkeypatch.delenv("TANDEM_FAKE_VERSION", raising=False)
    monkeypatch.setattr(client, "ENGINE", [sys.executable, str(FAKE)])
    monkeypatch.setattr(client.registry, "verify_model_file", lambda path: None)
    monkeypatch.setattr(client, "VocabularyFile", lambda path: Vocab())
    monkeypatch.setattr(client, "fim_tokens", lambda vocab: None)
    target = os.path.join(folder, "t.gguf")
    Path(target).touch()
    env = SimpleNamespace(cfg=EngineConfig(target_path=target, stats_path=""), procs=[], logs=[], windows=[])
    env.tandem = identity.runtime_dir()
    try:
        yield env
    finally:
        for w in env.windows:
            w.close()
        stop_all(env.tandem)
        for p in env.procs:
            p.kill()
            p.wait()
        shutil.rmtree(folder, ignore_errors=True)


def window(rt) -> SharedEngine:
    w = SharedEngine(rt.cfg, log=rt.logs.append, idle_s=30)
    rt.windows.append(w)
    return w


def engine_of(rt, version: str, path: str) -> subprocess.Popen:
    """An engine process that says `version` ("none": nothing) on `path`, up and serving no window."""
    proc = subprocess.Popen([sys.executable, str(FAKE), "--socket", path, "--idle-exit", "60",
                             "--config", json.dumps(asdict(rt.cfg), default=list)],
                            env=dict(os.environ, TANDEM_FAKE_VERSION=version), cwd="/", start_new_session=True)
    rt.procs.append(proc)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        link = identity.hello(path, 1.0)
        if link is not None:
            others = identity.other_windows(link[0], link[1], 1.0)
            link[0].close()
            if others == 0:   # the host saw the last probe go: none but this one counted
                return proc
        time.sleep(0.05)
    raise AssertionError(f"the stand-in engine on {path} did not answer")


def gone(proc: subprocess.Popen, path: str) -> bool:
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        return False
    return not os.path.exists(path)


def said(w: SharedEngine, words: str) -> list[str]:
    return [n for n in w.notices() if words in n]


def named(version: str) -> str:
    return "says no version" if version == "none" else f"Tandem {version}"


def test_the_socket_s_name_carries_the_version_and_the_configuration(rt, monkeypatch):
    path = socket_path(rt.cfg)
    assert os.path.basename(path).startswith(f"engine-{lsp_server.__version__}-")
    assert socket_path(EngineConfig(target_path=rt.cfg.target_path, stats_path="", kv_store_mib=64)) == path
    assert socket_path(EngineConfig(target_path=rt.cfg.target_path, stats_path="", n_ctx=2048)) != path
    ident = identity.of(rt.cfg)
    # a server of another version on this machine at once: a socket of its own, never this one
    monkeypatch.setattr(lsp_server, "__version__", "9.9.9")
    assert socket_path(rt.cfg) != path and "-9.9.9-" in socket_path(rt.cfg)
    assert identity.of(rt.cfg) == {**ident, "version": "9.9.9"}


@pytest.mark.parametrize("version", ["0.1.0", "none"])
def test_an_engine_an_upgrade_left_is_replaced_once_and_one_of_this_version_is_reused(rt, version):
    old_path = os.path.join(rt.tandem, OLD_NAME)
    old = engine_of(rt, version, old_path)
    w = window(rt)
    assert gone(old, old_path)   # asked to stop (SIGTERM), it took its socket with it
    info = w._call("info")
    assert info["version"] == lsp_server.__version__ and info["config"] == identity.of(rt.cfg)["config"]
    assert w.pid == info["pid"] != old.pid
    (note,) = said(w, "stopped the shared engine")
    assert named(version) in note and f"pid {old.pid}" in note
    assert w.notices() == []   # once

    again = window(rt)
    assert again.pid == w.pid and again.notices() == []
    assert sum("starting the shared engine process" in line for line in rt.logs) == 1, rt.logs


def test_an_engine_of_another_version_that_still_serves_its_windows_stays(rt):
    old_path = os.path.join(rt.tandem, OLD_NAME)
    old = engine_of(rt, "0.1.0", old_path)
    old_window = identity.hello(old_path, 5.0)   # a window of 0.1.0, still open
    try:
        w = window(rt)
        assert old.poll() is None and os.path.exists(old_path)
        assert w.pid != old.pid and w._call("info")["version"] == lsp_server.__version__
        (note,) = said(w, "still serves 1 window(s)")
        assert "Tandem 0.1.0" in note and w.notices() == []
    finally:
        old_window[0].close()


@pytest.mark.parametrize("version", ["0.1.0", "none"])
def test_another_version_at_this_server_s_own_socket_is_replaced(rt, version):
    path = socket_path(rt.cfg)
    old = engine_of(rt, version, path)
    w = window(rt)
    assert old.wait(timeout=20) is not None and w.pid != old.pid
    assert w._call("info")["version"] == lsp_server.__version__
    (note,) = said(w, "stopped the shared engine")
    assert named(version) in note and w.notices() == []


def test_an_engine_started_from_a_package_that_changed_on_disk_is_used_and_said_once(rt, monkeypatch):
    """An upgrade under a running server: the engine it starts runs the new code. Starting it again would start the
    same code, and stopping it would stop the other windows it serves: it is used, and each window says so once."""
    monkeypatch.setenv("TANDEM_FAKE_VERSION", "9.9.9")
    w = window(rt)
    assert w._call("info")["version"] == "9.9.9"
    (note,) = said(w, "reload the window")
    assert "Tandem 9.9.9" in note and w.notices() == []
    other = window(rt)
    assert other.pid == w.pid and len(said(other, "reload the window")) == 1 and other.notices() == []
    assert sum("starting the shared engine process" in line for line in rt.logs) == 1, rt.logs
