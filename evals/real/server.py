"""The server's variants of `tandem-eval real`: `tandem serve` over stdio, driven as an editor drives it, with
the project's folder as the workspace root.

- editor: at an editor's pace, as `tandem-eval visits` visits a spot: the file is open, the cursor moves to the
  hole's line (`tandem/didMoveCursor`), THINK_S later the hole's text is removed, PAUSE_S later an inline
  completion is asked for; its first answer counts (what the ghost text shows), with its latency and the prompt
  that answered it (the server's record: a fast prompt of the nearest lines, or the page). With a reading time
  (read_s) the user first reads that long, the cursor still at the previous place, and with `view` the editor
  shows a screen around the hole meanwhile (tandem/visibleRanges, as after a scroll);
- offered: after the editor's answer, what the editor shows once the server offers a better one
  (`tandem/betterCompletion`: the page's answer, generated once the fill has evaluated the page where a fast
  prompt's answer is shown; the client asks again and the server's cache answers), waiting for it as long as
  the server may still offer one (at most OFFER_WAIT_S); where none comes, the editor's answer. Its latency is
  from the first request to the answer shown last, `offered` says whether the answer changed;
- page: the same spot with time for the whole page: once the server's fill has evaluated the page around the
  cursor (its fill no longer runs the fast or page step, nor a generation; at most PAGE_WAIT_S), the document
  is closed and opened again as it is (the typing cache forgets the editor's answer; the KV store keeps the
  page) and the request is sent again: the page's prompt answers, evaluating only what is not cached yet. Where
  that answer was an early one (a long block, answered while it was still being written) the request is sent
  once more when the generation has ended, and the whole answer, from the server's cache, counts. (Lifting
  the prompt budget with a configuration change instead would wait, in the server's event loop, for the
  fill's step on the model thread.)

Each hole is put back after its answers, so every hole is asked on the file as released."""
from __future__ import annotations

import asyncio
import random
import time
from dataclasses import fields
from pathlib import Path

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.client import LanguageClient

from lsp_server.service.settings import Settings
from evals.real.holes import Hole, read_source
from evals.sessions.replay import Counts, Replayer, plain, position, replace_range, running_server, server_stats

THINK_S = 1.0           # at the spot before editing (as `tandem-eval visits`)
PAUSE_S = 1.0           # after removing the hole's text, before asking
ANSWER_TIMEOUT_S = 60.0
PAGE_TIMEOUT_S = 180.0   # the page variant has time for the whole page, on a busy machine too
PAGE_WAIT_S = 300.0     # the page variant waits at most this long for the fill of the page (a busy machine)
OFFER_WAIT_S = 300.0    # the offered variant waits at most this long for the server's offer
SCREEN_LINES = 40       # what an editor shows of a file (--real-view)
PROMPTS = {"fast": "fast", "model": "page", "cache": "cache", "reuse": "reuse"}


def has_setting(name: str) -> bool:
    return name in {f.name for f in fields(Settings)}


def project_server(server_cmd: list[str], root: Path, options: dict | None, log):
    """`tandem serve` over stdio with `root` as its workspace, its models loaded (replay.running_server)."""
    return running_server(server_cmd, options, lambda msg: log("  " + msg), root=root, name="tandem-eval-real")


class HoleVisitor:
    """Asks one server for the holes of one project, a hole at a time, each with the file as released around
    it."""

    def __init__(self, client: LanguageClient, root: Path, options: dict, log, think_s: float = THINK_S,
                 pause_s: float = PAUSE_S, read_s: float = 0.0, view: bool = False):
        self.client, self.root, self.log = client, root, log
        self.options = options
        self.think_s, self.pause_s = think_s, pause_s
        self.read_s, self.view = read_s, view
        self.replayer = Replayer(client, Counts(), 1.0, log)
        self.docs: dict[str, tuple[str, int, str]] = {}    # relative path -> (uri, version, text)
        self.languages: dict[str, str] = {}

    def _open(self, hole: Hole) -> tuple[str, str]:
        if hole.file not in self.docs:
            path = self.root / hole.file
            text = read_source(path)
            uri = path.resolve().as_uri()
            self.client.text_document_did_open(types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(uri=uri, language_id=hole.language, version=1, text=text)))
            self.docs[hole.file] = (uri, 1, text)
            self.languages[hole.file] = hole.language
        uri, _, text = self.docs[hole.file]
        return uri, text

    def _edit(self, rel: str, start: int, end: int, new: str) -> str:
        uri, version, text = self.docs[rel]
        text = replace_range(self.client, uri, version + 1, text, start, end, new)
        self.docs[rel] = (uri, version + 1, text)
        return text

    def _reopen(self, rel: str) -> None:
        """Close the document and open it again as it is (the server's typing cache forgets it)."""
        uri, version, text = self.docs[rel]
        self.client.text_document_did_close(types.DidCloseTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=uri)))
        language = self.languages.get(rel, "plaintext")
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id=language, version=version + 1, text=text)))
        self.docs[rel] = (uri, version + 1, text)

    def _cursor(self, uri: str, text: str, line: int) -> None:
        """The cursor lands at the end of this (0-based) line."""
        start = sum(len(l) + 1 for l in text.split("\n")[:line])
        end = text.find("\n", start)
        self.client.protocol.notify("tandem/didMoveCursor", {"uri": uri, "position": {
            "line": line, "character": position(text, end if end >= 0 else len(text)).character}})

    def _show(self, uri: str, text: str, hole: Hole) -> None:
        """The editor shows a screen of SCREEN_LINES lines with the hole's line in it (where in it: drawn from the
        hole, the same on every run), as after a scroll to it (tandem/visibleRanges)."""
        n = text.count("\n") + 1
        line = hole.line - 1
        first = max(0, line - random.Random(hole.task_id).randrange(SCREEN_LINES // 8, SCREEN_LINES * 7 // 8))
        last = min(n - 1, first + SCREEN_LINES - 1)
        self.client.protocol.notify("tandem/visibleRanges", {"uri": uri, "ranges": [
            {"start": {"line": first, "character": 0}, "end": {"line": last, "character": 0}}]})

    async def _last_record(self) -> dict:
        recs = (await server_stats(self.client, records=True)).get("records", [])
        return recs[-1] if recs else {}

    async def _ask(self, uri: str, text: str, cursor: int,
                   timeout_s: float = ANSWER_TIMEOUT_S) -> tuple[str | None, float, dict]:
        """(answer or None, latency ms, the server's record of the request)."""
        fut, msg_id, sent = await self.replayer.request(uri, text, cursor)
        try:
            await asyncio.wait_for(asyncio.shield(fut), timeout_s)
        except (asyncio.TimeoutError, JsonRpcException):
            pass
        if not fut.done():
            self.replayer.cancel(fut, msg_id)
            return None, timeout_s * 1000, {}
        got = self.replayer.result(fut, sent, at_pause=True)
        latency = (fut.done_at - sent) * 1000
        return (got[0] if got else None), latency, await self._last_record()

    async def _idle(self, fill_steps: tuple[str, ...] = (), limit_s: float = PAGE_WAIT_S) -> float:
        """Wait until the server runs no generation and none of these steps of its fill (seen three times in a
        row, 0.25 s apart); the seconds waited."""
        t0 = time.perf_counter()
        quiet = 0
        while time.perf_counter() - t0 < limit_s:
            st = plain(await self.client.protocol.send_request_async("tandem/stats", {}))
            mem = st.get("memory") or {}
            busy = (st.get("fill") or {}).get("running") in fill_steps or mem.get("jobs", 0) \
                or mem.get("pending_requests", 0)
            quiet = 0 if busy else quiet + 1
            if quiet >= 3:
                break
            await asyncio.sleep(0.25)
        return time.perf_counter() - t0

    async def _offers(self) -> dict:
        return (await server_stats(self.client)).get("offers") or {}

    async def _offered(self, uri: str, text: str, cursor: int, editor: dict, before: dict,
                       limit_s: float = OFFER_WAIT_S) -> dict:
        """What the editor shows once the server has said all it will of the answer here (an early answer's line
        completed, the page's better answer offered), asking again at each `tandem/betterCompletion` as the
        clients do; the editor's answer where nothing comes. `completed` holds the answer after the first
        notification when it completed an early answer (what the editor shows moments after the first answer)."""
        t0 = time.perf_counter()
        same = dict(editor, offered=False, offer_s=None)
        st = await self._offers()
        page_due = st.get("waiting", 0) != before.get("waiting", 0)   # a fast prompt's answer, or while typing
        early_due = st.get("early", 0) != before.get("early", 0)      # shown early, its generation going on
        if not (page_due or early_due):
            return same   # not an answer the server looks at again (the page's own, the cache's)
        page_done = lambda o: sum(o.get(k, 0) for k in ("same", "silent", "offered", "stopped"))   # noqa: E731
        early_done = lambda o: o.get("completed", 0) + o.get("early_kept", 0)   # noqa: E731
        seen, quiet, asked, shown, completed = len(self.client.offers), 0, 0, None, None
        timed_out = False
        while True:
            notes = [t for u, t in self.client.offers[seen:] if u == uri]
            if len(notes) > asked:   # told: the editor asks again, and shows the cache's answer
                asked = len(notes)
                answer, _, rec = await self._ask(uri, text, cursor)
                latency = editor["latency_ms"] + (time.perf_counter() - t0) * 1000
                shown = self._answer(answer, latency, rec, offered=True, offer_s=round(notes[-1] - t0, 2))
                if asked == 1 and early_due:   # the first notification: a completion alone, not the page's offer
                    o = await self._offers()
                    if o.get("completed", 0) > before.get("completed", 0) and \
                            o.get("offered", 0) == before.get("offered", 0):
                        completed = shown
            o = await self._offers()
            if (not page_due or page_done(o) > page_done(before)) and \
                    (not early_due or early_done(o) > early_done(before)):
                if len([u for u, _ in self.client.offers[seen:] if u == uri]) == asked:
                    break
                continue
            if time.perf_counter() - t0 >= limit_s:
                timed_out = True
                break
            # nothing runs, and the fill does not either: nothing more is coming (stopped before it began)
            st = await server_stats(self.client)
            mem = st.get("memory") or {}
            busy = (st.get("fill") or {}).get("running") or mem.get("jobs", 0) or mem.get("pending_requests", 0)
            quiet = 0 if busy else quiet + 1
            if quiet >= 12:
                break
            await asyncio.sleep(0.25)
        out = shown or same
        more = {"completed": completed} if completed is not None else {}
        if timed_out:
            more["offer_timed_out"] = True
        return dict(out, **more)

    @staticmethod
    def _answer(text: str | None, latency: float, rec: dict, **more) -> dict:
        source = rec.get("source", "timeout" if text is None else "")
        return {"text": text or "", "latency_ms": round(latency, 1), "source": source,
                "prompt": PROMPTS.get(source, source), "prompt_tokens": rec.get("prompt_tokens", 0),
                "prompt_evaluated": rec.get("prompt_evaluated", 0), "tokens": rec.get("tokens", 0),
                **{k: round(rec.get(k) or 0.0, 3) for k in ("queue_s", "prompt_s", "gen_s")},
                "timed_out": text is None, **more}

    async def visit(self, hole: Hole, variants: tuple[str, ...]) -> dict[str, dict]:
        """The answers of `variants` (editor, page) at this hole."""
        uri, original = self._open(hole)
        _, start, end = hole.cut(original)
        removed = original[start:end]
        out: dict[str, dict] = {}
        if self.read_s > 0:   # the user reads (the cursor where it was), then goes to the hole
            if self.view:
                self._show(uri, original, hole)
            await asyncio.sleep(self.read_s)
        self._cursor(uri, original, hole.line - 1)
        await asyncio.sleep(self.think_s)
        text = self._edit(hole.file, start, end, "")
        try:
            if "editor" in variants or "offered" in variants:
                await asyncio.sleep(self.pause_s)
                before = await self._offers()
                answer, ms, rec = await self._ask(uri, text, start)
                out["editor"] = self._answer(answer, ms, rec)
                if "offered" in variants:
                    out["offered"] = await self._offered(uri, text, start, out["editor"], before)
            if "page" in variants:
                # the page's own fill and the prompt at the cursor (not the neighbouring pages)
                waited = await self._idle(("fast", "page", "next", "prompt"))
                self._reopen(hole.file)
                self._cursor(uri, text, hole.line - 1)
                answer, ms, rec = await self._ask(uri, text, start, PAGE_TIMEOUT_S)
                first = answer
                if answer:
                    await self._idle()
                    again, _, _ = await self._ask(uri, text, start, PAGE_TIMEOUT_S)
                    if again and len(again) > len(answer) and again.startswith(answer):
                        answer = again
                out["page"] = self._answer(answer, ms, rec, waited_s=round(waited, 1),
                                           early=bool(first) and answer != first)
        finally:
            self._edit(hole.file, start, start, removed)
        return out


async def visit_project(server_cmd: list[str], root: Path, holes: list[Hole], variants: tuple[str, ...],
                        options: dict, log, on_answer, think_s: float = THINK_S, pause_s: float = PAUSE_S,
                        read_s: float = 0.0, view: bool = False) -> None:
    """Ask one server (this project's folder as its workspace) for `variants` at each hole; `on_answer(hole,
    {variant: answer})` after each."""
    async with project_server(server_cmd, root, options, log) as client:
        visitor = HoleVisitor(client, root, options, log, think_s, pause_s, read_s, view)
        for hole in holes:
            on_answer(hole, await visitor.visit(hole, variants))
