"""The engine a window's server uses when the models live in the shared engine process: tokens are counted
here (the model's vocabulary, without weights), everything the models do is asked of the engine process over
its Unix socket. No engine process answers: one is started (under a lock, so two windows starting together
start one), and the caller waits while it loads. It dies: each window is told once, and the next request starts
a new one. Only an engine of this server's version and model configuration is used (identity.py)."""
from __future__ import annotations

import fcntl
import json
import os
import queue
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from contextlib import contextmanager
from dataclasses import asdict, replace
from typing import BinaryIO

from .. import registry
from ..backend import BackendError
from ..cancel import Cancel
from ..config import IDLE_S, EngineConfig
from ..gguf import ModelFileError
from ..llama import ContextFullError, VocabularyFile
from ..remote import RemoteModel
from ..speculative import Generation, GenerationRequest
from ..vocab import fim_tokens
from . import identity, wire
from .identity import MAX_SOCKET_PATH, hello, runtime_dir, socket_path  # noqa: F401 (importers of client)

START_WAIT_S = 600.0     # the models load in the engine process (a first calibration takes a while)
CANCEL_POLL_S = 0.01     # how soon a cancel flag that is not a Cancel reaches the engine process
CALL_WAIT_S = 30.0       # a quick question (what is cached) that takes longer: the engine is stuck
ENGINE = [sys.executable, "-m", "lsp_server.cli.main", "engine"]   # the engine process (tests start a stand-in)


class EngineDown(BackendError):
    """The engine process is gone (it died, or could not start)."""


class _Counters:
    """engine.target.counters, read from the engine process when asked (the statistics)."""

    def __init__(self, engine: "SharedEngine"):
        self._engine = engine

    def __getattr__(self, name: str) -> int:
        return self._engine.host_summary().get("counters", {}).get(name, 0)


class SharedModel(RemoteModel):
    """The remote engine's stand-in for a local model (`engine.target`), its counters the engine process's."""

    def __init__(self, path: str, vocab: VocabularyFile, engine: "SharedEngine"):
        super().__init__(path, vocab)
        self.counters = _Counters(engine)


class SharedEngine:
    def __init__(self, cfg: EngineConfig, log=lambda msg: print(msg, file=sys.stderr), idle_s: float = IDLE_S,
                 path: str | None = None):
        self.cfg, self.log, self.idle_s = replace(cfg), log, idle_s
        self.path = path or socket_path(cfg)
        self.ident = identity.of(cfg)
        target = cfg.target_path or str(registry.default_path(registry.DEFAULT_TARGET))
        if not os.path.exists(target):
            raise ModelFileError(f"{target}: target model not found; run `tandem models pull`")
        registry.verify_model_file(target)
        self.vocab = VocabularyFile(target)
        self.fim = fim_tokens(self.vocab)
        self.target = SharedModel(target, self.vocab, self)
        self.warnings: list[str] = []
        self.records_margins = True   # the engine process's local engine records them
        self._notices: deque[str] = deque(maxlen=8)
        self._told: set[int | None] = set()      # the engines of other versions it spoke of (once)
        self._lock = threading.Lock()            # one writer on the socket at a time
        self._state = threading.Lock()           # the connection, whether it is down, what waits on it
        self._ids = iter(range(1, 1 << 62))
        self._pending: dict[int, queue.Queue] = {}
        self._sent_on: dict[int, socket.socket] = {}   # request id -> the connection it went out on
        self._sock: socket.socket | None = None
        self._down: str | None = None
        self._summary: dict = {}
        self._summary_at = 0.0
        info = self._connect()
        self._draft_decision = info["draft_decision"]
        self.cfg.n_ctx, self.cfg.draft_max = info["n_ctx"], info["draft_max"]
        self.prompt_tok_s = info["prompt_tok_s"]
        self.warnings += info["warnings"]
        self._loaded = info["loaded"]
        self._draft_resident = info["draft"] is not None

    # ---- the engine process -------------------------------------------------------------------------------

    def _connect(self) -> dict:
        """Connect to the engine process, starting it first if none answers. What it says of itself (`info`)."""
        link = self._try_connect()
        if link is None:
            with open(self.path + ".lock", "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)    # another window may be starting it: wait for that one
                link = self._try_connect() or self._start()
        sock, reader, info = link
        with self._state:
            self._sock, self._down, self.pid = sock, None, info["pid"]
        threading.Thread(target=self._read, args=(sock, reader), name="tandem-engine-reader", daemon=True).start()
        return info

    def _try_connect(self) -> tuple[socket.socket, BinaryIO, dict] | None:
        link = hello(self.path, CALL_WAIT_S)
        if link is None or identity.same(link[2], self.ident):
            return link
        # Another version or configuration at this server's own socket, whose name only servers of this version
        # compute: one of them started it after the package on disk changed. Where no window uses it, it is stopped
        # and this server starts its own (`_start` keeps that one whatever it says: it runs the code there is).
        # Where windows use it, they are of this version too: stopping it would stop them, to start the same code.
        sock, reader, info = link
        if identity.other_windows(sock, reader, CALL_WAIT_S) == 0:
            reader.close()
            sock.close()
            identity.stop(info.get("pid"), self.path)
            self._tell(info, f"stopped the shared engine of {_named(info)} (pid {info.get('pid')}), which no "
                             f"window used; this server is Tandem {self.ident['version']}")
            return None
        sock.settimeout(None)
        return self._other_code(link)

    def _other_code(self, link: tuple[socket.socket, BinaryIO, dict]) -> tuple[socket.socket, BinaryIO, dict]:
        info, ours = link[2], self.ident["version"]
        why = "another model configuration" if info.get("version") == ours else f"{_named(info)}, this server {ours}"
        self._tell(info, f"the shared engine here runs {why}: Tandem changed on disk since this server started; "
                         f"reload the window (or restart the editor)")
        return link

    def _tell(self, info: dict, msg: str) -> None:
        """Once per engine process: in the log and to the user."""
        if info.get("pid") not in self._told:
            self._told.add(info.get("pid"))
            self.log(msg)
            self._notices.append(msg)

    def _retire(self) -> None:
        for info, others in identity.retire(runtime_dir(), self.ident, self.path):
            if others == 0:
                self._tell(info, f"stopped the shared engine of {_named(info)} (pid {info.get('pid')}), which no "
                                 f"window used: an upgrade left it; this is Tandem {self.ident['version']}")
            else:
                serves = "windows" if others is None else f"{others} window(s)"
                self._tell(info, f"the shared engine of {_named(info)} (pid {info.get('pid')}) still serves {serves} "
                                 f"of that version: it holds its models until they have closed and its idle time ends")

    def _start(self) -> tuple[socket.socket, BinaryIO, dict]:
        logfile = os.path.join(os.path.dirname(self.path), os.path.basename(self.path)[:-5] + ".log")
        self._retire()
        # the target as `ident` names it: the engine process runs in /, where a relative path names another file
        config = {**asdict(self.cfg), "target_path": os.path.abspath(self.target.path)}
        cmd = [*ENGINE, "--socket", self.path, "--idle-exit", str(self.idle_s),
               "--config", json.dumps(config, default=list)]
        self.log(f"starting the shared engine process (log: {logfile})")
        with open(logfile, "ab") as out:
            # cwd /: `python -m` puts the working folder first on sys.path, and a project may have its own lsp_server
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True,
                                    cwd="/")
        # reaped when it exits (idle, stopped, killed), so that it leaves no zombie behind while this window lives
        threading.Thread(target=proc.wait, name="tandem-engine-reaper", daemon=True).start()
        t0, said = time.monotonic(), 0.0
        while time.monotonic() - t0 < START_WAIT_S:
            if (link := hello(self.path, CALL_WAIT_S)) is not None:
                self.log(f"shared engine ready (pid {proc.pid}, {time.monotonic() - t0:.1f} s)")
                return link if identity.same(link[2], self.ident) else self._other_code(link)
            if proc.poll() is not None:
                raise EngineDown(f"the engine process exited with {proc.returncode} while loading: "
                                 f"{_tail(logfile)}")
            if time.monotonic() - said >= 5:
                said = time.monotonic()
                self.log(f"the shared engine is loading the models ({said - t0:.0f} s)")
            time.sleep(0.1)
        proc.kill()
        raise EngineDown(f"the engine process did not answer within {START_WAIT_S:.0f} s (log: {logfile})")

    def _read(self, sock: socket.socket, f: BinaryIO) -> None:
        try:
            for line in f:
                msg = wire.loads(line)
                q = self._pending.get(msg.get("id"))
                if q is not None:
                    q.put(msg)
        except (OSError, ValueError):
            pass
        self._lost(sock, "the shared engine process stopped")

    def _lost(self, sock: socket.socket, why: str) -> None:
        """The connection `sock` is gone: what was sent on it gets no answer, and the window is told once. Both a
        failed send and the connection's reader find it, in either order and maybe after a new connection was
        made: a request sent on the new one is not failed by the old one's end, nor is the window told twice."""
        with self._state:
            if sock is self._sock:
                if self._down is not None:
                    return   # said already
                self._down = why
                self._notices.append(f"{why}; the next request starts it again")
            waiting = [q for rid, q in self._pending.items() if self._sent_on.get(rid) is sock]
        for q in waiting:
            q.put({"ev": "error", "kind": "down", "message": why})

    def _send(self, msg: dict, opens: bool = False) -> None:
        """`opens`: the message starts a request (its answers come on this connection, or an error if it ends)."""
        with self._lock:
            if self._down is not None or self._sock is None:
                self._connect()
            sock = self._sock
            if opens:
                with self._state:
                    self._sent_on[msg["id"]] = sock
            try:
                sock.sendall(wire.dumps(msg))
            except OSError as e:
                why = f"the shared engine process cannot be reached ({e})"
                self._lost(sock, why)
                raise EngineDown(self._down or why) from None

    def _open(self, op: str, **kw) -> tuple[int, queue.Queue]:
        rid = next(self._ids)
        q: queue.Queue = queue.Queue()
        with self._state:
            self._pending[rid] = q
        try:
            self._send({"id": rid, "op": op, **kw}, opens=True)
        except BaseException:
            self._done(rid)
            raise
        return rid, q

    def _done(self, rid: int) -> None:
        with self._state:
            self._pending.pop(rid, None)
            self._sent_on.pop(rid, None)

    def _call(self, op: str, **kw):
        rid, q = self._open(op, **kw)
        try:
            try:
                msg = q.get(timeout=CALL_WAIT_S)
            except queue.Empty:
                raise EngineDown(f"the shared engine did not answer {op} within {CALL_WAIT_S:.0f} s") from None
            return self._result(msg)
        finally:
            self._done(rid)

    @staticmethod
    def _result(msg: dict):
        if msg.get("ev") == "error":
            if msg.get("kind") == "context_full":
                raise ContextFullError(msg["message"])
            if msg.get("kind") == "down":
                raise EngineDown(msg["message"])
            raise RuntimeError(msg["message"])
        return msg.get("result")

    # ---- the engine interface -----------------------------------------------------------------------------

    def tokenize(self, text: str, special: bool = False) -> list[int]:
        return self.vocab.tokenize(text, special)

    def cached(self, tokens: list[int]) -> int:
        try:
            return int(self._call("cached", tokens=tokens))
        except EngineDown:
            return 0   # nothing is cached in an engine that is not there; the request itself will say so

    def prompt_seconds(self, tokens: int) -> float:
        return tokens / self.prompt_tok_s if self.prompt_tok_s > 0 else 0.0

    def generate(self, req: GenerationRequest, cancel: threading.Event | None = None) -> Generation:
        try:
            return self._generate(req, cancel)
        except EngineDown:
            # the engine process died under this request: the window was told (notices); a new one answers it
            if cancel is not None and cancel.is_set():
                raise
            return self._generate(req, cancel)

    def _generate(self, req: GenerationRequest, cancel: threading.Event | None) -> Generation:
        yields = bool(getattr(cancel, "yields", False))
        rid, q = self._open("generate", request=wire.request_to_dict(req), yields=yields)
        try:
            with self._cancel_link(rid, cancel, q, yields) as receive:
                return self._generate_events(req, rid, receive)
        finally:
            self._done(rid)

    def _generate_events(self, req: GenerationRequest, rid: int, receive) -> Generation:
        while True:
            msg = receive()
            ev = msg.get("ev")
            if ev == "text" and req.on_text is not None:
                req.on_text(msg["text"], msg["n"], msg.get("margins", []), msg.get("ends", []))
            elif ev == "prompt" and req.on_prompt is not None:
                req.on_prompt(*msg["args"])
            elif ev == "goes_on":
                value = bool(req.goes_on(msg["text"])) if req.goes_on is not None else False
                self._send({"id": rid, "op": "reply", "value": value})
            elif ev in ("done", "error"):
                self._heard(msg)
                gen = wire.generation_from_dict(self._result(msg))
                self.target.tokens = list(req.tokens) + gen.tokens
                return gen

    @contextmanager
    def _cancel_link(self, rid: int, cancel: threading.Event | None, q: queue.Queue, yields: bool = False):
        """Pass the caller's cancel flag on to the engine process, with how far the prompt evaluation may still go
        (`Cancel.keep_until`: the tokens the pre-empting request shares), again each time that shrinks, and
        whether the work may give way to another window's request (`Cancel.yields`; sent with the request as
        `yields`) each time that changes. A `Cancel` says so itself, in the thread that sets it (a thread waking
        every few ms to look for it slowed the engine's decoding on a 2-core machine); another flag is polled
        while waiting. Yields what waits for the request's next message."""
        told: list[int | None] = [None]
        said_yields = [yields]
        lock = threading.Lock()

        def tell(c: threading.Event | None) -> None:
            if c is None:
                return
            if not c.is_set():
                y = bool(getattr(c, "yields", False))
                with lock:
                    if y != said_yields[0]:
                        said_yields[0] = y
                        self._send_if_up({"id": rid, "op": "yields", "value": y})
                return
            keep = getattr(c, "keep_until", 0)
            with lock:
                if told[0] is None or keep < told[0]:
                    told[0] = keep
                    self._send_if_up({"id": rid, "op": "cancel", "keep": keep})

        polled = cancel is not None and not isinstance(cancel, Cancel)

        def receive() -> dict:
            while True:
                try:
                    return q.get(timeout=CANCEL_POLL_S if polled else None)
                except queue.Empty:
                    tell(cancel)

        stop = cancel.listen(tell) if isinstance(cancel, Cancel) else None
        if stop is not None:
            tell(cancel)   # a change between the request's message and listening
        try:
            yield receive
        finally:
            if stop is not None:
                stop()

    def _send_if_up(self, msg: dict) -> None:
        """A message that is of no use to a new engine process (a cancel): sent only on a live connection, and
        never waiting long for the socket (this runs in the thread that set the flag, often the server's event
        loop; the lock is held for long only while a new engine process starts, which has nothing to cancel)."""
        if not self._lock.acquire(timeout=0.2):
            return
        try:
            if self._down is None and self._sock is not None:
                self._sock.sendall(wire.dumps(msg))
        except OSError:
            pass   # the reader says the engine is gone
        finally:
            self._lock.release()

    def _heard(self, msg: dict) -> None:
        """The engine process's prompt speed comes with each result: the budgets follow it as in-process."""
        if (rate := msg.get("prompt_tok_s")) is not None:
            self.prompt_tok_s = float(rate)

    def prewarm(self, tokens: list[int], cancel: threading.Event | None = None, draft: bool = False,
                keep: int = 0) -> int:
        rid, q = self._open("prewarm", tokens=tokens, draft=draft, keep=keep)
        try:
            with self._cancel_link(rid, cancel, q) as receive:
                msg = receive()
            self._heard(msg)
            return int(self._result(msg) or 0)
        finally:
            self._done(rid)

    def tune(self, speculation: bool, draft_min: int, draft_max: int, kv_store_mib: int, cache_reuse: int) -> None:
        """The engine process's settings: the last window to change them sets them for all."""
        self.cfg.speculation, self.cfg.draft_min, self.cfg.draft_max = speculation, draft_min, draft_max
        self._call("tune", args=[speculation, draft_min, draft_max, kv_store_mib, cache_reuse])

    def host_summary(self) -> dict:
        """What the engine process says of itself, at most once a second."""
        if time.monotonic() - self._summary_at > 1.0:
            try:
                self._summary = self._call("summary")
            except (EngineDown, RuntimeError):
                self._summary = {}
            self._summary_at = time.monotonic()
        return self._summary

    @property
    def draft(self):
        s = self.host_summary()
        return True if s.get("draft_resident", self._draft_resident) else None

    @property
    def draft_decision(self) -> str:
        # the engine process loads and unloads its draft model as measured costs move: the decision is read with
        # the residency, from the same summary, not kept from the connection
        return self.host_summary().get("draft_decision", self._draft_decision)

    def loaded(self) -> str:
        return f"shared engine (pid {self.pid}, {self.path}): {self._loaded}"

    def notices(self) -> list[str]:
        out = list(self._notices)
        self._notices.clear()
        if self._down is None:
            try:
                out += self._call("notices")
            except (EngineDown, RuntimeError):
                pass
        return out

    def store_summary(self) -> dict:
        s = self.host_summary()
        return {**s.get("store", {}), "shared": True}

    def summary(self) -> dict:
        s = self.host_summary()
        return {"shared_engine": {"socket": self.path, **s.get("host", {}), "up": self._down is None}}

    def warn(self, msg: str) -> None:
        self.warnings.append(msg)
        self.log(f"warning: {msg}")

    def close(self) -> None:
        """This window's connection ends; the engine process stays for the others (and exits when idle)."""
        sock, self._sock = self._sock, None
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()
        for q in list(self._pending.values()):   # what still waits for an answer gets none (no thread hangs)
            q.put({"ev": "error", "kind": "down", "message": "this window's connection to the engine closed"})
        self.vocab.close()


def stop_all(folder: str | None = None) -> list[int]:
    """Stop the engine processes whose sockets are in `folder` (default: this user's runtime folder); their pids."""
    import glob
    import signal
    stopped = []
    for found in glob.glob(os.path.join(folder or runtime_dir(), "engine-*.sock")):
        # a link to a shorter path (`socket_path`); none that answers: gone already
        if (link := hello(os.path.realpath(found), 5.0)) is None:
            continue
        sock, _, info = link
        try:
            os.kill(info["pid"], signal.SIGTERM)
            stopped.append(info["pid"])
        except (OSError, KeyError, TypeError):
            pass   # gone already
        finally:
            sock.close()
    return stopped


def probe(cfg: EngineConfig, timeout: float = 1.0) -> dict | None:
    """What the engine process of this configuration says of itself (`info`: pid, what it loaded), None where none
    answers; it starts none."""
    link = hello(socket_path(cfg), timeout)
    if link is None:
        return None
    sock, reader, info = link
    reader.close()
    sock.close()
    return info


def _named(info: dict) -> str:
    return f"Tandem {info['version']}" if info.get("version") else "an earlier Tandem (it says no version)"


def _tail(path: str, n: int = 600) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(max(0, os.path.getsize(path) - n))
            return f.read().decode("utf-8", "replace").strip().replace("\n", " | ")
    except OSError:
        return "(no log)"
