"""Next edits: after a change, the edit that follows it (issue 52). Each open document's recent edits are kept
(context/edits.py); asked at a place, the target rewrites the region around it (prompt/next_edit.py) with the
rewrite drafter proposing the region's own tokens, and the answer becomes one replacement of whole lines or
nothing (postprocess/next_edit.py).

The generation is a task of the model thread's queue at background priority, which owns it: a completion request
goes first and stops it (queue.yield_to), an edit or a close of the document cancels it (the user typed on, so the
prediction is for a text that is gone), a newer ask for the document cancels it before anything of its own is
asked, and a reload or the server's end stops it. It takes the engine when it runs. An answer of nothing is kept
for the document's version, as a proposal is."""
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
from ..engine import CUT_SHORT, Generation, GenerationRequest, StopReason
from ..engine.interface import Engine
from ..postprocess.next_edit import MIN_DEPARTURE_MARGIN, Dropped, Edit, departure, proposal
from ..prompt.next_edit import LINES_ABOVE, LINES_BELOW, build_prompt, region_lines
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
    tokens = engine.tokenize(p.text, special=True)
    source = engine.tokenize(p.region)
    req = GenerationRequest(tokens=tokens, max_tokens=len(source) + MAX_EXTRA_TOKENS, stop=("```",),
                            language=language, speculative=speculative, time_budget_s=time_budget_s,
                            rewrite_source=source, record_margins=True)
    gen = engine.generate(req, cancel)
    if gen.stop_reason in (StopReason.CANCELLED, StopReason.ERROR):
        return Prediction(None, None, gen, len(tokens), (p.start, p.end))
    edit, dropped = proposal(text, p.start, p.region, gen.text, gen.stop_reason in CUT_SHORT, recent, language,
                             p.above)
    margin = None
    if edit is not None and gen.margins:
        # the token where the answer leaves the region: as many as the text before that point tokenizes to
        at = min(len(engine.tokenize(gen.text[:departure(p.region, gen.text, p.above)])), len(gen.margins) - 1)
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
        self._nothing: dict[str, int] = {}            # uri -> the version the model found nothing to propose for
        self._asks: Counter[str] = Counter()          # uri -> its asks so far (a newer one replaces an older one)
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
        self._nothing.pop(uri, None)
        self.counts["dropped"] += len(self.model.queue.cancel(uri=uri, kinds=(TaskKind.NEXT_EDIT,)))

    def closed(self, uri: str) -> None:
        self.histories.closed(uri)
        self.proposals.pop(uri, None)
        self._nothing.pop(uri, None)
        self._asks.pop(uri, None)
        self.model.queue.cancel(uri=uri, kinds=(TaskKind.NEXT_EDIT,))

    def yielded(self, tasks: list[Task]) -> None:
        """A completion request stopped these tasks (queue.yield_to): its predictions' asks answer nothing."""
        self.counts["yielded"] += sum(t.kind is TaskKind.NEXT_EDIT for t in tasks)

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
            self.counts["remembered"] += 1
            return cached
        if self._nothing.get(uri) == version:   # asked again (the editor's request, then the code action)
            self.counts["remembered"] += 1
            return None
        recent, diff = history.recent(), history.diff(path)
        if not recent:
            self.counts["empty"] += 1     # nothing was edited: there is no edit to follow
            return None
        # the newest ask for the document is the one answered: the older one's task stops now, and an older ask
        # still on the context thread posts nothing when it comes back (below)
        self._asks[uri] += 1
        ask = self._asks[uri]
        self.model.queue.cancel(uri=uri, kinds=(TaskKind.NEXT_EDIT,))
        # a repeat needs no model: found on the context thread, it does not wait behind the model thread's work
        # (a CRLF document's lines are compared without their "\r": predict() does that on the model thread)
        crlf = "\r\n" in text
        result: Prediction | None = None if crlf else await self.model.on_context(repeated, text, line, recent,
                                                                                 language)
        if self._asks[uri] != ask or self.histories.get(uri) is not history or history.text != text \
                or self.model.pipeline is not pipeline:
            return None   # a newer ask, the user typed on, the document closed, or a reload meanwhile
        if result is not None:
            return self._proposed(uri, version, result, t0)
        # on the engine of the models loaded when it runs (a reload in between cancels it)
        task = Task(TaskKind.NEXT_EDIT, lambda pipeline: predict(pipeline.engine, text, line, diff, recent, path,
                                                                  language, task.cancel, repeats=crlf),
                    what=f"next edit in {path}", uri=uri)
        try:
            result = await self.model.queue.submit(task)
        except asyncio.CancelledError:   # the client cancelled its request: the generation stops too
            self.model.queue.cancel(task.id)
            raise
        if result is None or task.cancel.is_set() or self.histories.get(uri) is not history or history.text != text:
            return None   # dropped: the user typed on (counted where the edit cancelled it), a newer ask, a request
        if result.edit is None:
            self.counts["empty"] += 1
            if result.dropped is not None:
                self.dropped[str(result.dropped)] += 1
            gen = result.generation
            if gen is None or gen.stop_reason not in (StopReason.CANCELLED, StopReason.ERROR):
                self._nothing[uri] = version   # (stopped elsewhere, or failed: asked again, it may yet say more)
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
        out = {k: self.counts[k] for k in ("requested", "proposed", "from_repeat", "from_model", "empty", "remembered",
                                           "dropped", "yielded", "accepted", "dismissed")}
        out["filtered"] = dict(self.dropped)
        out["latency_ms_p50"] = round(statistics.median(self.latency_ms)) if self.latency_ms else None
        out["documents"] = len(self.histories)
        return out
