"""`tandem-eval replay`: typing sessions replayed against `tandem serve` over stdio, as a person types them.

Each session (fixtures/replays/sessions.json) names a real file and a stretch of it (see `load_sessions`); the file is opened without
that stretch, which is then typed character by character with human timing (seeded): quick keys, pauses at
word ends and line ends, auto-indent after a newline. After every keystroke the client asks for an inline
completion and cancels the previous request if it is still open, as VS Code does. At a pause the user looks
at the ghost text: the request is awaited and its latency counted. A suggestion that matches what the user is
about to type is typed through (the next requests should come from the cache) or, half of the time, accepted."""
from __future__ import annotations

import asyncio
import json
import random
import shlex
import sys
import time
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.client import LanguageClient

from evals.sessions.replay_report import TARGETS, engine_running_note, print_report, report  # noqa: F401 (re-exported)
from lsp_server.bench.fixtures import MARKER, find_fixture



@dataclass
class Session:
    file: Path
    offset: int
    length: int
    seed: int
    text: str      # the whole file, with the stretch that is typed


@dataclass
class Counts:
    keystrokes: int = 0
    requests: int = 0
    cancelled_by_client: int = 0
    answered: int = 0
    empty: int = 0
    errors: int = 0
    typing_through: int = 0
    typing_through_cache: int = 0
    typing_through_reuse: int = 0
    accepted: int = 0
    accepted_chars: int = 0
    pause_latency_ms: list[float] = field(default_factory=list)
    pause_sources: list[str] = field(default_factory=list)
    answered_latency_ms: list[float] = field(default_factory=list)
    sources: dict[str, int] = field(default_factory=dict)
    typing_s: float = 0.0     # the users' own time (typing, pausing, reading), before compression by --speed


def default_sessions() -> Path:
    return find_fixture("replays/sessions.json", "--sessions")


def load_sessions(path: Path) -> list[Session]:
    """Each session is a file with the stretch to type: either a benchmark fixture ("bench": the file with its
    `<CURSOR>` replaced by its `.expected` text, which is what gets typed) or any file ("file", "offset",
    "length")."""
    out = []
    for i, s in enumerate(json.loads(path.read_text())):
        if "bench" in s:
            file = path.parent / s["bench"]
            raw = file.read_text(encoding="utf-8")
            expected = Path(f"{file}.expected").read_text(encoding="utf-8")
            offset = raw.index(MARKER)
            text = raw[:offset] + expected + raw[offset + len(MARKER):]
            out.append(Session(file, offset, len(expected), s.get("seed", i), text))
        else:
            file = path.parent / s["file"]
            out.append(Session(file, s["offset"], s["length"], s.get("seed", i), file.read_text(encoding="utf-8")))
    return out


def position(text: str, offset: int) -> types.Position:
    line = text.count("\n", 0, offset)
    start = text.rfind("\n", 0, offset) + 1
    return types.Position(line=line, character=len(text[start:offset].encode("utf-16-le")) // 2)


def replace_range(client, uri: str, version: int, text: str, start: int, end: int, new: str) -> str:
    """Send the edit that replaces text[start:end] with `new` as the document's `version`; the text after it."""
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[types.TextDocumentContentChangePartial(
            range=types.Range(start=position(text, start), end=position(text, end)), text=new)]))
    return text[:start] + new + text[end:]


def next_key(rest: str) -> str:
    """What the user presses next to type `rest`: one character, but a newline brings the next line's
    indentation with it (the editor's auto-indent), and leading indentation is one key (Tab)."""
    c = rest[0]
    if c != "\n" and c not in " \t":
        return c
    j = 1 if c == "\n" else 0
    while j < len(rest) and rest[j] in " \t":
        j += 1
    return rest[:j]


class Typist:
    """Human timing, seeded: ~110 ms between keys, pauses after words and at line ends."""

    def __init__(self, seed: int, speed: float):
        self.rng, self.speed = random.Random(seed), speed
        self.clock = 0.0   # the user's own time so far, uncompressed by `speed`

    def _spend(self, seconds: float) -> float:
        self.clock += seconds
        return seconds / self.speed

    def gap(self) -> float:
        return self._spend(min(0.3, max(0.04, self.rng.lognormvariate(-2.2, 0.35))))

    def pause_after(self, key: str) -> float:
        if "\n" in key:
            return self._spend(self.rng.uniform(0.6, 1.5))
        if key in " ,.()[]{}:;=" and self.rng.random() < 0.3:
            return self._spend(self.rng.uniform(0.4, 1.2))
        return 0.0

    def accepts(self) -> bool:
        return self.rng.random() < 0.5

    def reaction(self) -> float:
        """Reading a suggestion before accepting it."""
        return self._spend(self.rng.uniform(0.3, 0.8))

    def read(self) -> float:
        """Reading the file and finding the place before typing."""
        return self._spend(3.0)


def rss_peak_mb(pid: int, field: str = "VmHWM") -> float | None:
    """A process's peak resident size (VmHWM), or with field="VmRSS" its size now, in MB."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def started_before(pid: int, other: int) -> bool:
    """Whether process `pid` was started before process `other` (their start times in clock ticks)."""
    def start(p: int) -> int:
        stat = Path(f"/proc/{p}/stat").read_text()
        return int(stat[stat.rindex(")") + 2:].split()[19])
    try:
        return start(pid) < start(other)
    except (OSError, ValueError, IndexError):
        return False


def engine_pid(stats: dict) -> int | None:
    """The shared engine process's pid from a server's stats (None: the models are in the server's process)."""
    return ((stats.get("backend") or {}).get("shared_engine") or {}).get("pid")


def engine_was_running(server_pid: int, stats: dict) -> bool:
    """Whether the shared engine this server uses was already running when the server started (an earlier
    run's or another window's: idle engines stay up for engineIdleMinutes)."""
    host = engine_pid(stats)
    return bool(host) and started_before(host, server_pid)


def peak_rss_mb(server_pid: int, stats: dict) -> float | None:
    """The peak resident size of the server and, with the shared engine (stats' backend.shared_engine), of the
    engine process that holds its models: what this editor window costs in memory, models included. Where the
    engine was already running, its lifetime peak covers work before this run (2,691 MB after a day of
    evaluations, against ~1,970 from a fresh one): its size at the end stands in for it."""
    peak = rss_peak_mb(server_pid)
    host = engine_pid(stats)
    if peak is not None and host:
        engine = rss_peak_mb(host, "VmRSS" if engine_was_running(server_pid, stats) else "VmHWM")
        peak = peak + engine if engine is not None else None
    return peak


class Replayer:
    def __init__(self, client: LanguageClient, counts: Counts, speed: float, log, patience: float | None = None):
        self.client, self.c, self.speed, self.log = client, counts, speed, log
        self.patience = patience   # None: wait for every answer at a pause; else at most this or the pause
        self._ids = 0
        self.typist: Typist | None = None
        self.last_confidence: dict | None = None   # the gate's verdict on the last answer read (its command's)
        self.last_asked: dict | None = None        # ... and the predictor's, before it was generated

    async def request(self, uri: str, text: str, offset: int) -> tuple[asyncio.Future, str, float]:
        self._ids += 1
        msg_id = f"replay-{self._ids}"
        params = types.InlineCompletionParams(
            text_document=types.TextDocumentIdentifier(uri=uri), position=position(text, offset),
            context=types.InlineCompletionContext(trigger_kind=types.InlineCompletionTriggerKind.Automatic))
        fut = asyncio.ensure_future(self.client.protocol.send_request_async(
            types.TEXT_DOCUMENT_INLINE_COMPLETION, params, msg_id=msg_id))
        _mark_done_time(fut)
        self.c.requests += 1
        return fut, msg_id, time.perf_counter()

    async def answer(self, pending: tuple[asyncio.Future, str, float], pause: float = 15.0,
                     looks: bool = True) -> tuple[str, str] | None:
        """Wait for a request as a user waits for ghost text at a pause; (text, source) or None. A patient user
        (the replay) waits for it; a hurried one (the soak, whose time is compressed) waits only for the pause,
        or for its patience where it `looks` for a suggestion (a line end, an accept), then cancels it."""
        fut, msg_id, sent = pending
        wait = 15 if self.patience is None else max(pause, self.patience if looks else 0)
        try:
            await asyncio.wait_for(asyncio.shield(fut), wait)
        except (asyncio.TimeoutError, JsonRpcException):
            pass
        if not fut.done():
            self.cancel(fut, msg_id)
            return None
        return self.result(fut, sent, at_pause=True)

    def insert(self, uri: str, version: int, text: str, cursor: int, new: str) -> str:
        """Send the edit that inserts `new` at the cursor; the document's text after it."""
        return replace_range(self.client, uri, version, text, cursor, cursor, new)

    def count_through(self, through: bool, source: str) -> None:
        if through:
            self.c.typing_through_cache += source == "cache"
            self.c.typing_through_reuse += source == "reuse"

    def cancel(self, fut: asyncio.Future, msg_id: str) -> None:
        if not fut.done():
            self.client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))
            self.c.cancelled_by_client += 1

    def result(self, fut: asyncio.Future, sent: float, at_pause: bool) -> tuple[str, str] | None:
        """(text, source) of a finished request, counted; None when it failed or was cancelled."""
        try:
            res = fut.result()
        except (JsonRpcException, asyncio.CancelledError) as e:
            if not (isinstance(e, JsonRpcException) and e.code == -32800):
                self.c.errors += 1
            return None
        items = res.items if isinstance(res, types.InlineCompletionList) else (res or [])
        text = items[0].insert_text if items else ""
        source, self.last_confidence, self.last_asked = "empty", None, None
        if items and items[0].command and items[0].command.arguments:
            arg = items[0].command.arguments[0]
            source = arg.get("source", "model") if isinstance(arg, dict) else getattr(arg, "source", "model")
            self.last_confidence = arg.get("confidence") if isinstance(arg, dict) else None
            self.last_asked = arg.get("asked") if isinstance(arg, dict) else None
        latency = (fut.done_at - sent) * 1000 if hasattr(fut, "done_at") else None
        self.c.answered += 1
        self.c.empty += not text
        self.c.sources[source] = self.c.sources.get(source, 0) + 1
        if latency is not None:
            self.c.answered_latency_ms.append(latency)
            if at_pause:
                self.c.pause_latency_ms.append(latency)
                self.c.pause_sources.append(source if text else "empty")
        return text, source

    async def session(self, s: Session, limit_chars: int | None) -> None:
        full = s.text
        typed = full[s.offset:s.offset + s.length]
        if limit_chars:
            typed = typed[:limit_chars]
        text = full[:s.offset] + full[s.offset + s.length:]
        uri = s.file.resolve().as_uri()
        lang = {".py": "python", ".ts": "typescript", ".go": "go"}.get(s.file.suffix, "plaintext")
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id=lang, version=1, text=text)))
        typist = self.typist = Typist(s.seed, self.speed)   # the session in progress, for a soak's clock
        self.log(f"  {s.file.name}: typing {len(typed)} characters")
        await asyncio.sleep(typist.read())
        await self.type_stretch(uri, 1, text, s.offset, typed, typist)
        self.c.typing_s += typist.clock
        self.typist = None
        self.client.text_document_did_close(types.DidCloseTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=uri)))

    async def type_stretch(self, uri: str, version: int, text: str, cursor: int, typed: str,
                           typist: Typist) -> tuple[int, str]:
        """Type `typed` at `cursor` in an open document as a person does: a request after every key (the
        previous one cancelled), waiting for ghost text at pauses, typing through or accepting what matches.
        Returns the document's version and text afterwards."""
        done = 0
        pending: tuple[asyncio.Future, str, float] | None = None
        shown = ""          # the ghost text on screen, if any
        while done < len(typed):
            key = next_key(typed[done:])
            if pending is not None:
                self.cancel(pending[0], pending[1])
                pending = None
            through = bool(shown) and shown.startswith(key) and len(shown) > len(key)
            version += 1
            text = self.insert(uri, version, text, cursor, key)
            cursor += len(key)
            done += len(key)
            self.c.keystrokes += 1
            shown = shown[len(key):] if through else ""
            pending = await self.request(uri, text, cursor)
            if through:
                self.c.typing_through += 1
            pause = typist.pause_after(key) if done < len(typed) else 1.0 / self.speed
            if pause:
                t0 = time.perf_counter()
                got = await self.answer(pending, pause, looks="\n" in key)
                pending = None
                if got is not None:
                    shown, source = got
                    self.count_through(through, source)
                    # a suggestion that is what the user meant: half the time they read it and press Tab,
                    # and the editor asks for the next one at once (as VS Code does after an accept)
                    while shown and len(shown) >= 3 and typed[done:].startswith(shown) and typist.accepts():
                        await asyncio.sleep(typist.reaction())
                        version += 1
                        text = self.insert(uri, version, text, cursor, shown)
                        self.client.protocol.notify("tandem/didAccept", {"uri": uri, "chars": len(shown)})
                        cursor += len(shown)
                        done += len(shown)
                        self.c.accepted += 1
                        self.c.accepted_chars += len(shown)
                        shown = ""
                        if done >= len(typed):
                            break
                        got = await self.answer(await self.request(uri, text, cursor), pause)
                        shown = got[0] if got else ""
                await asyncio.sleep(max(0.0, pause - (time.perf_counter() - t0)))
            else:
                await asyncio.sleep(typist.gap())
                if pending[0].done():
                    got = self.result(pending[0], pending[2], at_pause=False)
                    pending = None
                    if got is not None:
                        shown, source = got
                        self.count_through(through, source)
        if pending is not None:
            self.cancel(pending[0], pending[1])
        return version, text


def plain(obj):
    """pygls hands custom results over as namedtuples; make them dicts and lists again."""
    if hasattr(obj, "_asdict"):
        return {k: plain(v) for k, v in obj._asdict().items()}
    if isinstance(obj, dict):
        return {k: plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [plain(v) for v in obj]
    return obj


def _mark_done_time(fut: asyncio.Future) -> None:
    def done(f):
        f.done_at = time.perf_counter()
        if not f.cancelled():
            f.exception()   # a request the client cancelled ends in an error nobody else reads
    fut.add_done_callback(done)


@asynccontextmanager
async def running_server(server_cmd: list[str], options: dict | None = None, log=print, root: Path | None = None,
                         name: str = "tandem-replay"):
    """`tandem serve` started over stdio, initialized (with `root` as its workspace if given), with its models
    loaded; shut down on the way out."""
    client = LanguageClient(name, "1")

    @client.feature(types.WINDOW_LOG_MESSAGE)
    def _log(params: types.LogMessageParams):
        pass

    @client.feature(types.WINDOW_SHOW_MESSAGE)
    def _show(params: types.ShowMessageParams):
        log(f"server says: {params.message}")

    @client.feature("tandem/status")
    def _status(params):
        pass

    client.offers = []   # tandem/betterCompletion notifications: (uri, when), for the clients that ask again

    @client.feature("tandem/betterCompletion")
    def _better(params):
        uri = params.get("uri") if isinstance(params, dict) else getattr(params, "uri", None)
        client.offers.append((uri, time.perf_counter()))

    await client.start_io(server_cmd[0], *server_cmd[1:])
    try:
        uri = root.resolve().as_uri() if root is not None else None
        await client.initialize_async(types.InitializeParams(
            capabilities=types.ClientCapabilities(window=types.WindowClientCapabilities(work_done_progress=False)),
            root_uri=uri, workspace_folders=[types.WorkspaceFolder(uri=uri, name=root.name)] if uri else None,
            initialization_options=options or {}))
        client.initialized(types.InitializedParams())
        t0 = time.perf_counter()
        while True:
            st = await client.protocol.send_request_async("tandem/stats", {})
            if st.ready or st.load_error:
                break
            await asyncio.sleep(0.2)
        if st.load_error:
            raise RuntimeError(f"the server could not load its models: {st.load_error}")
        log(f"server ready in {time.perf_counter() - t0:.1f}s" + (f" (workspace {root})" if root else ""))
        yield client
        await client.shutdown_async(None)
        client.exit(None)
    finally:
        try:
            await asyncio.wait_for(client.stop(), 10)
        except Exception:
            pass


async def server_stats(client: LanguageClient, records: bool = False) -> dict:
    return plain(await client.protocol.send_request_async("tandem/stats", {"records": records}))


async def replay(sessions: list[Session], server_cmd: list[str], speed: float = 1.0,
                 limit_chars: int | None = None, options: dict | None = None, log=print) -> dict:
    counts = Counts()
    t_start = time.perf_counter()
    async with running_server(server_cmd, options, log) as client:
        r = Replayer(client, counts, speed, log)
        for s in sessions:
            await r.session(s, limit_chars)
        await asyncio.sleep(0.5)
        stats = await server_stats(client, records=True)
        peak = peak_rss_mb(client._server.pid, stats)
        was_running = engine_was_running(client._server.pid, stats)
    return report(counts, stats, peak, time.perf_counter() - t_start, speed, was_running)


def server_command(args=None) -> list[str]:
    """The server a bench drives: `--server-cmd` where the bench takes it (another checkout's server, to compare
    side by side), else this tandem's `serve`."""
    if getattr(args, "server_cmd", None):
        return shlex.split(args.server_cmd)
    return [sys.executable, "-m", "lsp_server.cli.main", "serve"]


def run_replay(args) -> dict:
    sessions = load_sessions(Path(args.sessions) if args.sessions else default_sessions())
    if args.only:
        sessions = [s for s in sessions if s.file.name in args.only]
    cmd = server_command(args)
    options = json.loads(args.options) if args.options else {}
    result = asyncio.run(replay(sessions, cmd, speed=args.speed, limit_chars=args.limit_chars, options=options,
                                log=lambda m: print(m, file=sys.stderr)))
    print_report(result)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    return result
