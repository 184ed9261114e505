"""The next-edit asks a VS Code user's typing sends (`tandem-eval replay --real N --next-edit-asks on|both`), as
the extension sends them (editors/vscode/src/next-edit.ts):

- each change to the document dismisses the edit shown (`tandem/nextEditDismissed`), cancels the ask still open
  (`$/cancelRequest`) and the one waiting for the typing to rest;
- once the typing has rested 500 ms, `textDocument/copilotInlineEdit` at the cursor for the document's version;
- an answer that comes as the typing goes on is dropped; an edit for the version asked about is shown (counted a
  proposal);
- leaving the document cancels and dismisses, as switching editors does.

The typist never takes an edit: what is measured is what the asks cost its typing, and how often they propose."""
from __future__ import annotations

import asyncio
import statistics
import time
from dataclasses import asdict, dataclass, field

from lsprotocol import types
from pygls.exceptions import JsonRpcException

from evals.sessions.replay import plain, position

REST_S = 0.5          # REST_MS in next-edit.ts
METHOD = "textDocument/copilotInlineEdit"


@dataclass
class AskTally:
    sent: int = 0
    cancelled: int = 0          # still open when the typing went on: $/cancelRequest sent
    answered: int = 0           # an answer came before the typing went on, with an edit or without
    stale: int = 0              # came, unread, as the typing went on (the client drops it)
    proposals: int = 0          # ... with an edit for the version shown
    errors: int = 0
    dismissed: int = 0          # shown edits the typing went past
    answer_ms: list[float] = field(default_factory=list)
    proposal_ms: list[float] = field(default_factory=list)
    seen: list[dict] = field(default_factory=list)   # the proposals: where, the cursor and the new text

    def add(self, other: "AskTally") -> None:
        for k, v in asdict(other).items():
            setattr(self, k, getattr(self, k) + v)


def ask_figures(t: AskTally) -> dict:
    def p50(v: list[float]) -> float | None:
        return round(statistics.median(v)) if v else None
    return {"asks_sent": t.sent, "asks_cancelled": t.cancelled, "asks_answered": t.answered,
            "asks_stale": t.stale, "asks_errors": t.errors, "proposals": t.proposals, "dismissed": t.dismissed,
            "answer_ms_p50": p50(t.answer_ms), "proposal_ms_p50": p50(t.proposal_ms),
            "latency_s_p50": None if not t.proposal_ms else round(statistics.median(t.proposal_ms) / 1000, 3)}


class NextEditAsks:
    """One client's asks for the document being typed; `changed` after each edit the typist sends."""

    def __init__(self, client, rest_s: float = REST_S):
        self.client, self.rest_s = client, rest_s
        self.tally = AskTally()
        self._timer: asyncio.TimerHandle | None = None
        self._pending: tuple[asyncio.Future, str] | None = None
        self._shown: str | None = None      # the id of the edit shown
        self._doc: tuple[str, int, str, int] | None = None   # uri, version, text, cursor: what an ask is about
        self._ids = 0

    def changed(self, uri: str, version: int, text: str, cursor: int) -> None:
        self._dismiss()
        self._cancel()
        self._doc = (uri, version, text, cursor)
        self._timer = asyncio.get_running_loop().call_later(self.rest_s, self._ask)

    def closed(self) -> None:
        """The typist left the document."""
        self._cancel()
        self._dismiss()
        self._doc = None

    def _dismiss(self) -> None:
        if self._shown is not None:
            self.client.protocol.notify("tandem/nextEditDismissed", {"id": self._shown})
            self.tally.dismissed += 1
            self._shown = None

    def _cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._pending is not None:
            fut, msg_id = self._pending
            self._pending = None
            if not fut.done():
                self.client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))
                self.tally.cancelled += 1
            else:
                self.tally.stale += 1

    def _ask(self) -> None:
        self._timer = None
        uri, version, text, cursor = self._doc
        self._ids += 1
        msg_id = f"next-edit-{self._ids}"
        at = position(text, cursor)
        fut = asyncio.ensure_future(self.client.protocol.send_request_async(METHOD, {
            "textDocument": {"uri": uri, "version": version},
            "position": {"line": at.line, "character": at.character}}, msg_id=msg_id))
        sent = time.perf_counter()
        self._pending = (fut, msg_id)
        self.tally.sent += 1
        fut.add_done_callback(lambda f: self._answered(f, msg_id, version, cursor, text, sent))

    def _answered(self, fut: asyncio.Future, msg_id: str, version: int, cursor: int, text: str,
                  sent: float) -> None:
        if self._pending is None or self._pending[1] != msg_id:
            if not fut.cancelled():
                fut.exception()   # the typing went on (counted there): an error here is nobody's to read
            return
        self._pending = None
        try:
            res = plain(fut.result())
        except (JsonRpcException, asyncio.CancelledError):
            self.tally.errors += 1
            return
        ms = (time.perf_counter() - sent) * 1000
        self.tally.answered += 1
        self.tally.answer_ms.append(ms)
        edits = (res or {}).get("edits") or []
        if edits and edits[0]["textDocument"]["version"] == version:
            edit = edits[0]
            self.tally.proposals += 1
            self.tally.proposal_ms.append(ms)
            self._shown = edit["id"]
            self.tally.seen.append({"ms": round(ms), "cursor_line": text.count("\n", 0, cursor),
                                    "range": [edit["range"]["start"]["line"], edit["range"]["end"]["line"]],
                                    "text": edit["text"]})
