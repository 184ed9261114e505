"""Next edits: after a change, the edit that follows it (issue 52). Each open document's recent edits are kept
(context/edits.py); asked at a place, the target rewrites the region around it (prompt/next_edit.py) with the
rewrite drafter proposing the region's own tokens, and the answer becomes one replacement of whole lines or
nothing (postprocess/next_edit.py).

The generation is a task of the model thread's queue at background priority: a completion request goes first,
and an edit of the document cancels it (the user typed on, so the prediction is for a text that is gone)."""
from __future__ import annotations

import asyncio
import itertools
import logging
import statistics
import threading
import time
from collections import Counter, deque
from dataclasses import dataclass, field, replace

from ..context.edits import EditHistories, Hunk, keep_lines
from ..context.repeats import repeat
from ..context.usages import next_use
from ..engine import CUT_SHORT, ContextFullError, Generation, GenerationRequest, StopReason
from ..engine.interface import Engine
from ..postprocess.next_edit import MIN_DEPARTURE_MARGIN, Dropped, Edit, departure, proposal
from ..prompt.budget import prompt_room
from ..prompt.next_edit import LINES_ABOVE, LINES_BELOW, build_prompt, fitted, region_lines
from .queue import Task, TaskKind

log = logging.getLogger("tandem.service")

MAX_EXTRA_TOKENS = 48     # an answer may be this many tokens longer than the region (an added line or two)
TIME_BUDGET_S = 30.0      # a rewrite stops here (this CPU writes a 13-line region in 3-8 s)


@dataclass
class Prediction:
    edit: Edit | None
    dropped: Dropped | None      # why nothing is proposed (None: an edit, or no answer at all)
    generation: Generation | None
    prompt_tokens: int = 0
    region: tuple[int, int] = (0, 0)
    margin: float | None = None  # the top-2 logit gap where the answer leaves the region's text (None: unknown)
    source: str = "model"        # "repeat": the user's replacement made again, found in the text (no model)


def repeated(text: str, line: int, recent: list[Hunk], language: str) -> Prediction | None:
    """The user's last replacement made again where the old text still stands, through the filters; None where
    there is none (text work only: the service runs it on the context thread, not the model's)."""
    rep = repeat(text, recent[-1], language, line) if recent else None
    if rep is None:
        return None
    start, end, new_text = rep
    edit, _ = proposal(text, start, "".join(keep_lines(text)[start:end]), new_text, False, recent, language)
    return None if edit is None else Prediction(edit, None, None, 0, (start, end), None, "repeat")


def predict(engine: Engine, text: str, line: int, diff: str, recent: list[Hunk], path: str, language: str,
            cancel: threading.Event | None = None, speculative: bool = True, above: int = LINES_ABOVE,
            below: int = LINES_BELOW, time_budget_s: float = TIME_BUDGET_S,
            min_margin: float = MIN_DEPARTURE_MARGIN, repeats: bool = True) -> Prediction:
    """The next edit at `line` of `text` given the recent edits (a diff, and their hunks), on the calling thread
    (the model thread in the server; the lab's suite calls it directly)."""
    if "\r\n" in text:   # the model writes "\n": the lines compare without their "\r", which the edit gets back
        pred = predict(engine, text.replace("\r\n", "\n"), line, diff.replace("\r\n", "\n"), recent, path,
                       language, cancel, speculative, above, below, time_budget_s, min_margin, repeats)
        if pred.edit is not None:
            pred.edit = replace(pred.edit, text=pred.edit.text.replace("\n", "\r\n"),
                                old_text=pred.edit.old_text.replace("\n", "\r\n"))
        return pred
    if recent and repeats:   # the user's replacement made again where the old text still stands: no model needed
        found = repeated(text, line, recent, language)
        if found is not None:
            return found
    if recent:   # after a rename, the region goes where the old name is still used, if not near the cursor
        n_lines = text.count("\n") + (not text.endswith("\n"))
        use = next_use(text, recent[-1], language, region_lines(n_lines, line, above, below))
        line = line if use is None else use
    p = build_prompt(text, line, diff, path, language, above, below)
    if min_margin > 0 and not engine.records_margins:
        return Prediction(None, Dropped.NO_MARGINS, None, 0, (p.start, p.end))
    source = engine.tokenize(p.region)
    max_tokens = len(source) + MAX_EXTRA_TOKENS
    fits = fitted(p, engine, prompt_room(engine.cfg.n_ctx, max_tokens, engine.cfg.draft_max))
    if fits is None:
        return Prediction(None, Dropped.TOO_LONG, None, 0, (p.start, p.end))
    p, tokens = fits
    req = GenerationRequest(tokens=tokens, max_tokens=max_tokens, stop=(p.ticks,), language=language,
                            speculative=speculative, time_budget_s=time_budget_s, rewrite_source=source,
                            record_margins=True)
    try:
        gen = engine.generate(req, cancel)
    except ContextFullError:   # the draft limit was raised since cfg was read (by another window's draftMax)
        return Prediction(None, Dropped.TOO_LONG, None, len(tokens), (p.start, p.end))
    if gen.stop_reason in (StopReason.CANCELLED, StopReason.ERROR):
        return Prediction(None, None, gen, len(tokens), (p.start, p.end))
    answer, closed = p.answer(gen.text)
    edit, dropped = proposal(text, p.start, p.region, answer, gen.stop_reason in CUT_SHORT and not closed, recent,
                             language, p.above)
    margin = None
    if edit is not None and gen.margins:
        # the token where the answer leaves the region: as many as the text before that point tokenizes to
        at = min(len(engine.tokenize(answer[:departure(p.region, answer, p.above)])), len(gen.margins) - 1)
        margin = gen.margins[at]
        if margin < min_margin:
            edit, dropped = None, Dropped.UNSURE
    return Prediction(edit, dropped, gen, len(tokens), (p.start, p.end), margin)


@dataclass
class Proposal:
    id: str
    uri: str
    version: int
    edit: Edit
    at: float = field(default_factory=time.monotonic)


class NextEdits:
    """The documents' edit histories, the prediction asked for each, and the proposals shown, accepted and
    dismissed (tandem/stats)."""

    def __init__(self, model):
        self.model = model               # service/model.py: the pipeline's engine and the model thread's queue
        self.histories = EditHistories()
        self.proposals: dict[str, Proposal] = {}      # uri -> the latest proposal for it
        self._running: dict[str, Task] = {}           # uri -> its prediction's task
        self._ids = itertools.count(1)
        self._issued: deque[str] = deque(maxlen=64)  # the ids proposed lately: only these count when accepted
        self.counts: Counter[str] = Counter()
        self.dropped: Counter[str] = Counter()
        self.latency_ms: deque[float] = deque(maxlen=200)   # the ask -> the answer, for proposals

    # ---- the documents -------------------------------------------------------------------------------

    def opened(self, uri: str, text: str) -> None:
        self.histories.opened(uri, text)

    def edited(self, uri: str, text: str) -> None:
        self.histories.changed(uri, text)
        self.proposals.pop(uri, None)
        task = self._running.pop(uri, None)
        if task is not None:
            self.model.queue.cancel(task.id)
            self.counts["dropped"] += 1

    def closed(self, uri: str) -> None:
        self.histories.closed(uri)
        self.proposals.pop(uri, None)
        task = self._running.pop(uri, None)
        if task is not None:
            self.model.queue.cancel(task.id)

    def yield_to_request(self) -> None:
        """A completion request came: the predictions running or waiting stop (a rewrite holds the model thread
        for seconds, and the queue does not pre-empt a running task); their asks answer nothing."""
        for task in list(self._running.values()):
            if self.model.queue.cancel(task.id):
                self.counts["yielded"] += 1

    # ---- a prediction ----------------------------------------------------------------------------------

    async def ask(self, uri: str, text: str, version: int, line: int, path: str, language: str) -> Proposal | None:
        """The next edit for this version of the document at `line`, or None (nothing to propose, the models
        are not loaded, or the document changed meanwhile)."""
        self.counts["requested"] += 1
        t0 = time.monotonic()
        pipeline = self.model.pipeline
        history = self.histories.get(uri)
        if pipeline is None or history is None or history.text != text:
            self.counts["empty"] += 1
            return None
        cached = self.proposals.get(uri)
        if cached is not None and cached.version == version:
            return cached
        recent, diff = history.recent(), history.diff(path)
        if not recent:
            self.counts["empty"] += 1     # nothing was edited: there is no edit to follow
            return None
        old = self._running.pop(uri, None)
        if old is not None:
            self.model.queue.cancel(old.id)
        engine = pipeline.engine
        # a repeat needs no model: found on the context thread, it does not wait behind the model thread's work
        # (a CRLF document's lines are compared without their "\r": predict() does that on the model thread)
        crlf = "\r\n" in text
        result: Prediction | None = None if crlf else await self.model.on_context(repeated, text, line, recent,
                                                                                 language)
        if result is not None:
            if self.histories.get(uri) is not history or history.text != text:
                return None   # the user typed on meanwhile
            return self._proposed(uri, version, result, t0)
        task = Task(TaskKind.NEXT_EDIT, lambda: None, what=f"next edit in {path}", dropped=None)
        task.work = lambda: predict(engine, text, line, diff, recent, path, language, task.cancel, repeats=crlf)
        self._running[uri] = task
        try:
            result = await self.model.queue.submit(task)
        except asyncio.CancelledError:   # the client cancelled its request: the generation stops too
            self.model.queue.cancel(task.id)
            raise
        finally:
            if self._running.get(uri) is task:
                del self._running[uri]
        if result is None or task.cancel.is_set() or self.histories.get(uri) is not history or history.text != text:
            return None   # dropped: the user typed on (counted where the edit cancelled it)
        if result.edit is None:
            self.counts["empty"] += 1
            if result.dropped is not None:
                self.dropped[str(result.dropped)] += 1
            return None
        return self._proposed(uri, version, result, t0)

    def _proposed(self, uri: str, version: int, result: Prediction, t0: float) -> Proposal:
        proposal_ = Proposal(f"ne-{next(self._ids)}", uri, version, result.edit)
        self.proposals[uri] = proposal_
        self._issued.append(proposal_.id)
        self.counts["proposed"] += 1
        self.counts[f"from_{result.source}"] += 1
        self.latency_ms.append((time.monotonic() - t0) * 1000)
        return proposal_

    def cached(self, uri: str, version: int) -> Proposal | None:
        p = self.proposals.get(uri)
        return p if p is not None and p.version == version else None

    # ---- what the user did with it -----------------------------------------------------------------------

    def _settle(self, pid: str, outcome: str) -> bool:
        """Count what happened to a proposal; False for an id never proposed (or already settled)."""
        if pid not in self._issued:
            return False
        self._issued.remove(pid)
        self.counts[outcome] += 1
        for uri, p in list(self.proposals.items()):
            if p.id == pid:
                del self.proposals[uri]
        return True

    def accepted(self, pid: str) -> bool:
        return self._settle(pid, "accepted")

    def dismissed(self, pid: str) -> bool:
        return self._settle(pid, "dismissed")

    def summary(self) -> dict:
        out = {k: self.counts[k] for k in ("requested", "proposed", "from_repeat", "from_model", "empty", "dropped",
                                           "yielded", "accepted", "dismissed")}
        out["filtered"] = dict(self.dropped)
        out["latency_ms_p50"] = round(statistics.median(self.latency_ms)) if self.latency_ms else None
        out["documents"] = len(self.histories)
        return out
