"""Which engine process a window's server uses: one of its own package version and model configuration. The
socket's name carries both (`socket_path`), so that servers of two versions on one machine (an upgrade while
windows of the old one stay open, two installs) each find their own engine and never share or fight over one
socket; and the engine says both when a server connects (`info`), which the server checks before it uses it.

An upgrade leaves the old version's engine behind, holding the models until its idle time ends: when a server
starts its own engine, those of other versions in the runtime folder that serve no window are stopped
(`retire`); one that still serves windows of its version stays for them, and exits when they are gone."""
from __future__ import annotations

import glob
import hashlib
import json
import os
import re
import signal
import socket
import time
from dataclasses import asdict
from typing import BinaryIO

from .. import registry
from ..config import EngineConfig
from . import wire

MAX_SOCKET_PATH = 100    # bytes; longer runtime folders fall back to /tmp/tandem-UID
STOP_WAIT_S = 10.0       # an engine asked to stop that still holds its socket after this is killed


def version() -> str:
    from ... import __version__   # as the package says it now (a test may make it another version)
    return __version__


def runtime_dir() -> str:
    base = os.environ.get("XDG_RUNTIME_DIR")
    path = os.path.join(base, "tandem") if base else f"/tmp/tandem-{os.getuid()}"
    os.makedirs(path, mode=0o700, exist_ok=True)
    os.chmod(path, 0o700)
    return path


def config_digest(cfg: EngineConfig) -> str:
    """The model configuration (what needs another load of the models to change) and the runtime folder."""
    key = {k: v for k, v in asdict(cfg).items()
           if k not in ("speculation", "draft_min", "draft_max", "kv_store_mib", "cache_reuse")}
    key["target_path"] = os.path.abspath(cfg.target_path or str(registry.default_path(registry.DEFAULT_TARGET)))
    key["cache"] = str(registry.cache_dir())
    key["runtime"] = runtime_dir()
    return hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:16]


def of(cfg: EngineConfig) -> dict:
    """What an engine process says of itself in `info`, and what a server expects it to say."""
    return {"version": version(), "config": config_digest(cfg)}


def same(info: dict, ident: dict) -> bool:
    """An engine that says nothing of its version (one from before versions were said) is of another."""
    return info.get("version") == ident["version"] and info.get("config") == ident["config"]


def socket_path(cfg: EngineConfig) -> str:
    """One engine process per version, model configuration and runtime folder: windows with the same models share
    it, others get their own."""
    folder = runtime_dir()
    name = f"engine-{re.sub(r'[^A-Za-z0-9.]+', '_', version())}-{config_digest(cfg)}.sock"
    path = os.path.join(folder, name)
    if len(path.encode()) > MAX_SOCKET_PATH:   # a Unix socket's path has room for ~107 bytes
        short = f"/tmp/tandem-{os.getuid()}"
        os.makedirs(short, mode=0o700, exist_ok=True)
        link, path = path, os.path.join(short, name)
        # where the socket would be, a link to it: `stop_all` and `retire` of the runtime folder find this engine
        if not os.path.islink(link):
            try:
                os.symlink(path, link)
            except FileExistsError:
                pass
    return path


def hello(path: str, timeout: float) -> tuple[socket.socket, BinaryIO, dict] | None:
    """A connection to the engine process at `path` that answers, its reading side, and what the process says of
    itself (`info`); None where none answers within `timeout`. An engine process that was just killed may still
    take a connection for a moment (its listening socket outlives the connections it served) and drop it
    unanswered: a connection counts once `info` is answered on it."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.settimeout(timeout)
        s.connect(path)
        s.sendall(wire.dumps({"id": 0, "op": "info"}))
        reader = s.makefile("rb")
        info = wire.loads(reader.readline())["result"]
        s.settimeout(None)
        return s, reader, info
    except (OSError, ValueError, KeyError, TypeError):
        s.close()
        return None


def other_windows(sock: socket.socket, reader: BinaryIO, timeout: float) -> int | None:
    """How many windows besides the asking connection the engine serves; None where it does not say."""
    try:
        sock.settimeout(timeout)
        sock.sendall(wire.dumps({"id": 1, "op": "summary"}))
        return int(wire.loads(reader.readline())["result"]["host"]["windows"]) - 1
    except (OSError, ValueError, KeyError, TypeError):
        return None


def stop(pid: int, path: str) -> None:
    """Ask the engine process to stop (SIGTERM: it takes its socket with it) and wait until the socket is gone, so
    that a new engine's socket there is not removed by the old one on its way out."""
    try:
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_WAIT_S
        while os.path.exists(path) and time.monotonic() < deadline:
            os.kill(pid, 0)
            time.sleep(0.05)
        if os.path.exists(path):
            os.kill(pid, signal.SIGKILL)
    except (OSError, TypeError):
        pass   # gone already


def retire(folder: str, ident: dict, own: str, timeout: float = 2.0) -> list[tuple[dict, int | None]]:
    """The engines in `folder` of another version than `ident`'s (`own`, this server's socket, aside), each with
    the windows it serves besides the asking one: stopped where that is 0. One that does not say (or serves some)
    stays: stopping it would stop windows of its version, whose next request would start it again."""
    out = []
    for found in sorted(glob.glob(os.path.join(folder, "engine-*.sock"))):
        path = os.path.realpath(found)   # a link to a shorter path (`socket_path`)
        if path == os.path.realpath(own) or (link := hello(path, timeout)) is None:
            continue
        sock, reader, info = link
        try:
            if info.get("version") == ident["version"]:
                continue   # another configuration of this version: other windows' engine
            others = other_windows(sock, reader, timeout)
        finally:
            reader.close()
            sock.close()
        if others == 0:
            stop(info.get("pid"), path)
        out.append((info, others))
    return out
