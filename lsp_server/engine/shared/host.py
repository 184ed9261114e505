"""The engine process: one Engine (the model pair, its KV store, calibration and statistics) for every window,
served on a Unix socket (mode 0600). Each window's server is a connection; a generation runs on a worker
thread and streams its events back; a window's request cancels the other windows' background work (fills ahead,
and generations nobody waits for: `Cancel.yields`), and of the jobs waiting for the models it goes first (`Turns`);
the process exits after `idle_s` without a connection. A window's server is told the version and model
configuration the process was started with (`info`, identity.py)."""
from __future__ import annotations

import asyncio
import itertools
import logging
import os
import signal
import threading
import time
from concurrent.futures import Executor, ThreadPoolExecutor

from ..cancel import Cancel
from ..llama import ContextFullError
from . import identity, wire
from .turns import FILL, REQUEST, Turns

log = logging.getLogger("tandem.engine")
GOES_ON_WAIT_S = 5.0      # a window that does not answer whether a line goes on: it ends there


class _Conn:
    ids = itertools.count(1)

    def __init__(self, writer: asyncio.StreamWriter):
        self.id = next(self.ids)
        self.writer = writer
        self.cancels: dict[int, Cancel] = {}                 # running jobs, by request id
        self.fills: dict[int, Cancel] = {}                   # of those, the fills ahead (prewarm)
        self.replies: dict[int, tuple[threading.Event, dict]] = {}
        self.asked_at = 0.0                                  # its latest request (Turns: the last to ask first)


class EngineHost:
    def __init__(self, engine, path: str, idle_s: float, model: Executor | None = None,
                 loaded_on: int | None = None, ident: dict | None = None):
        self.engine, self.path, self.idle_s = engine, path, idle_s
        self.ident = ident or {}   # what it says it is: `identity.of` the configuration it was started with
        self.model = model or ThreadPoolExecutor(1, thread_name_prefix="tandem-model")
        # the threads that ran the models (loading them, then every job): one, or decoding slows (see above)
        self.model_threads = {loaded_on} if loaded_on is not None else set()
        self.conns: set[_Conn] = set()
        self.left_at = time.monotonic()
        # jobs wait for their turn here, and run on the model thread when it comes
        self.pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="tandem-engine")
        self.loop: asyncio.AbstractEventLoop | None = None
        self.served = {"connections": 0, "generations": 0, "fills": 0, "fills_yielded": 0}
        self.turns = Turns()

    async def run(self) -> None:
        self.loop = asyncio.get_running_loop()
        if os.path.exists(self.path):
            os.unlink(self.path)   # a dead host's socket (the caller holds the start lock)
        old = os.umask(0o177)
        try:
            server = await asyncio.start_unix_server(self._serve, path=self.path, limit=64 << 20)
        finally:
            os.umask(old)
        os.chmod(self.path, 0o600)
        log.info("engine of Tandem %s ready on %s (exits after %.0f s without a window)",
                 self.ident.get("version", "?"), self.path, self.idle_s)
        stop = asyncio.Event()   # `tandem engine` stopped (stop_all): its socket goes with it
        self.loop.add_signal_handler(signal.SIGTERM, stop.set)
        try:
            while not stop.is_set() and (self.conns or time.monotonic() - self.left_at < self.idle_s):
                try:
                    await asyncio.wait_for(stop.wait(), min(1.0, self.idle_s / 4))
                except asyncio.TimeoutError:
                    pass
        finally:
            for conn in self.conns:
                for ev in list(conn.cancels.values()):
                    ev.set()
            server.close()
            if os.path.exists(self.path):
                os.unlink(self.path)
            self.pool.shutdown(wait=True, cancel_futures=True)
        if stop.is_set():
            log.info("stopped (SIGTERM)")
        else:
            log.info("no window for %.0f s: exiting", self.idle_s)

    # ---- connections ----------------------------------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = _Conn(writer)
        self.conns.add(conn)
        self.served["connections"] += 1
        try:
            while line := await reader.readline():
                try:
                    msg = wire.loads(line)
                except ValueError as e:
                    self._send(conn, {"id": None, "ev": "error", "kind": "bad_message", "message": str(e)})
                    continue
                self._dispatch(conn, msg)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            for ev in list(conn.cancels.values()):
                ev.set()   # a window gone: its work is of no use to anyone
            for ev, _ in list(conn.replies.values()):
                ev.set()
            self.conns.discard(conn)
            if not self.conns:
                self.left_at = time.monotonic()
            writer.close()

    def _send(self, conn: _Conn, msg: dict) -> None:
        if not conn.writer.is_closing():
            conn.writer.write(wire.dumps(msg))

    def _send_threadsafe(self, conn: _Conn, msg: dict) -> None:
        self.loop.call_soon_threadsafe(self._send, conn, msg)

    # ---- requests ---------------------------------------------------------------------------------------

    def _dispatch(self, conn: _Conn, msg: dict) -> None:
        op, rid = msg.get("op"), msg.get("id")
        if op == "cancel":
            if (ev := conn.cancels.get(rid)) is not None:
                ev.set_keeping(int(msg.get("keep") or 0))
            return
        if op == "yields":   # background work nobody waits for gives way to other windows' requests; or not now
            if (ev := conn.cancels.get(rid)) is not None:
                ev.set_yields(bool(msg.get("value")))   # (the engine watches such work's flag inside a batch too)
                if msg.get("value"):
                    conn.fills[rid] = ev
                else:   # a request of the window joined it: a request now
                    conn.fills.pop(rid, None)
                    conn.asked_at = time.monotonic()
                    self._yield_fills(conn)
            return
        if op == "reply":
            if (wait := conn.replies.get(rid)) is not None:
                wait[1]["value"] = bool(msg.get("value"))
                wait[0].set()
            return
        if op in ("generate", "prewarm"):
            cancel = conn.cancels[rid] = Cancel(yields=op == "generate" and bool(msg.get("yields")))
            if op == "prewarm" or msg.get("yields"):
                conn.fills[rid] = cancel
            if op == "generate" and not msg.get("yields"):
                conn.asked_at = time.monotonic()
                self._yield_fills(conn)
            self.loop.run_in_executor(self.pool, self._job, conn, rid, op, msg, cancel)
            return
        try:
            result = self._quick(op, msg)
        except Exception as e:   # a bad request: said to the window, the host goes on
            log.warning("%s failed: %s", op, e)
            self._send(conn, {"id": rid, "ev": "error", "kind": "runtime", "message": f"{op}: {e}"})
            return
        self._send(conn, {"id": rid, "ev": "done", "result": result})

    def _yield_fills(self, conn: _Conn) -> None:
        """A window asked for a completion: the other windows' fills ahead and the generations nobody waits for
        there (a prefetch, an offer, one going on after its answer) stop: theirs can wait, it cannot."""
        for other in self.conns:
            if other is not conn:
                for ev in list(other.fills.values()):
                    if not ev.is_set():
                        ev.set()
                        self.served["fills_yielded"] += 1

    def _quick(self, op: str, msg: dict):
        e = self.engine
        if op == "info":
            return self._info()
        if op == "cached":
            return e.cached(msg["tokens"])
        if op == "tune":
            e.tune(*msg["args"])
            return None
        if op == "notices":
            return e.notices()
        if op == "summary":
            return {"counters": vars(e.target.counters).copy(), "draft_resident": e.draft is not None,
                    "draft_decision": e.draft_decision, "prompt_tok_s": e.prompt_tok_s,
                    "store": e.store_summary(), "host": self._host_summary()}
        raise ValueError(f"unknown op {op!r}")

    def _info(self) -> dict:
        e = self.engine
        return {**self.ident, "pid": os.getpid(), "target": e.target.path, "draft": e.draft.path if e.draft else None,
                "n_ctx": e.cfg.n_ctx, "draft_max": e.cfg.draft_max, "loaded": e.loaded(), "warnings": list(e.warnings),
                "draft_decision": e.draft_decision, "prompt_tok_s": e.prompt_tok_s}

    def _host_summary(self) -> dict:
        from ..engine import resident_mib
        return {"pid": os.getpid(), "windows": len(self.conns), "rss_mib": round(resident_mib(), 1),
                "model_threads": len(self.model_threads), **self.served}

    def _job(self, conn: _Conn, rid: int, op: str, msg: dict, cancel: Cancel) -> None:
        # a window's request before the background work of any (a fill ahead, a generation nobody waits for)
        rank = lambda: (FILL, 0.0) if rid in conn.fills else (REQUEST, -conn.asked_at)   # noqa: E731
        with self.turns.turn(rank):
            self.model.submit(self._run_job, conn, rid, op, msg, cancel).result()

    def _run_job(self, conn: _Conn, rid: int, op: str, msg: dict, cancel: Cancel) -> None:
        self.model_threads.add(threading.get_ident())
        try:
            if op == "prewarm":
                self.served["fills"] += 1
                n = self.engine.prewarm(msg["tokens"], cancel, draft=bool(msg.get("draft")), keep=msg.get("keep", 0))
                self._done(conn, rid, n)
                return
            self.served["generations"] += 1
            req, callbacks = wire.request_from_dict(msg["request"])
            if "on_text" in callbacks:
                req.on_text = lambda text, n, margins, ends: self._send_threadsafe(
                    conn, {"id": rid, "ev": "text", "text": text, "n": n, "margins": margins, "ends": ends})
            if "on_prompt" in callbacks:
                req.on_prompt = lambda *a: self._send_threadsafe(conn, {"id": rid, "ev": "prompt", "args": list(a)})
            if "goes_on" in callbacks:
                req.goes_on = lambda text: self._ask_goes_on(conn, rid, text, cancel)
            gen = self.engine.generate(req, cancel)
            self._done(conn, rid, wire.generation_to_dict(gen))
        except ContextFullError as e:
            self._send_threadsafe(conn, {"id": rid, "ev": "error", "kind": "context_full", "message": str(e)})
        except Exception as e:   # the model failed on this request; the next may work (as in-process)
            log.exception("%s failed", op)
            self._send_threadsafe(conn, {"id": rid, "ev": "error", "kind": "runtime", "message": str(e)})
        finally:
            conn.cancels.pop(rid, None)
            conn.fills.pop(rid, None)

    def _done(self, conn: _Conn, rid: int, result) -> None:
        """A job's result, with the engine's prompt speed (each window's budgets follow it)."""
        self._send_threadsafe(conn, {"id": rid, "ev": "done", "result": result,
                                     "prompt_tok_s": self.engine.prompt_tok_s})

    def _ask_goes_on(self, conn: _Conn, rid: int, text: str, cancel: threading.Event) -> bool:
        """Whether the line goes on is the window's post-processing to say (it knows the code around)."""
        done, box = threading.Event(), {}
        conn.replies[rid] = (done, box)
        try:
            self._send_threadsafe(conn, {"id": rid, "ev": "goes_on", "text": text})
            done.wait(GOES_ON_WAIT_S)
            return bool(box.get("value", False)) and not cancel.is_set()
        finally:
            conn.replies.pop(rid, None)


def serve(cfg, path: str, idle_s: float) -> None:
    """Load the engine, then serve it until no window has been connected for `idle_s`."""
    from ..engine import LocalEngine
    def load():
        return LocalEngine(cfg, log=lambda m: log.info("%s", m)), threading.get_ident()

    ident = identity.of(cfg)   # before the load, which may change what it was asked for
    model = ThreadPoolExecutor(1, thread_name_prefix="tandem-model")
    engine, loaded_on = model.submit(load).result()
    try:
        asyncio.run(EngineHost(engine, path, idle_s, model, loaded_on, ident).run())
    finally:
        model.submit(engine.close).result()
        model.shutdown()
