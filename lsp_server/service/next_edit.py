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

from ..context import Document
from ..context.edits import EditHistories, Hunk
from ..context.usages import next_use
from ..engine import CUT_SHORT, ContextFullError, Generation, GenerationRequest, StopReason
from ..engine.interface import Engine
from ..engine.speculative import departure_gap
from ..pipeline import CompletionRequest, Pipeline
from ..postprocess.next_edit import MIN_DEPARTURE_MARGIN, Dropped, Edit, departure, proposal
from ..prompt.budget import prompt_room
from ..prompt.next_edit import CONTEXT_ABOVE, LINES_ABOVE, LINES_BELOW, build_prompt, fitted, region_lines
from .edit_check import Verdict, first_agreed, plan_candidates
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
    # where the edit came from: a candidate's kind (context/candidates/: "repeat", "pattern", ...) the target
    # agreed with, "model" (the free rewrite) or "candidates" (candidates found, none agreed with)
    source: str = "model"
    checks: list[Verdict] = field(default_factory=list)   # the target's verdicts on the candidates asked about
    checks_s: float = 0.0


def predict(pipeline: Pipeline, place: CompletionRequest, diff: str, recent: list[Hunk], path: str,
            cancel: threading.Event | None = None, candidates: bool = True, free: bool = True,
            **rewrite_options) -> Prediction:
    """The next edit at the place (a document and its line, with the context a completion there would have) given
    the recent edits (a diff, and their hunks), on the calling thread (the lab; the server plans the candidates'
    checks on the context thread and runs `settle` as a task of the model thread). `path`: the document's name
    as the free rewrite's prompt shows it."""
    text = place.document.text
    place, recent = lf(place, recent)
    diff = diff.replace("\r\n", "\n")
    planned = plan_candidates(pipeline, place, recent) if candidates and recent else []
    return crlf(settle(pipeline.engine, planned, place.document, place.line, diff, recent, path, cancel, free,
                       **rewrite_options), text)


def settle(engine: Engine, planned: list, document: Document, line: int, diff: str, recent: list[Hunk], path: str,
           cancel: threading.Event | None = None, free: bool = True, **rewrite_options) -> Prediction:
    """The model's part: the first candidate the target agrees with (edit_check.py); where no candidate was found
    at all, the free rewrite of the region, shown only when the target was sure (`free`: asked at all)."""
    t0 = time.monotonic()
    found, verdicts = first_agreed(engine, planned, cancel)
    if found is not None:
        c = found.candidate
        return Prediction(Edit(c.start, c.end, c.text, c.old_text), None, None, found.prompt_tokens, (c.start, c.end),
                          found.margin, c.kind, verdicts, time.monotonic() - t0)
    if planned or not free or (cancel is not None and cancel.is_set()):
        # candidates were found and the target wrote none of them: it is no surer of an edit of its own there
        return Prediction(None, Dropped.DISAGREED if planned else None, None, source="candidates",
                          checks=verdicts, checks_s=time.monotonic() - t0)
    if not worth_rewriting(recent):
        return Prediction(None, Dropped.NEW_CODE, None, source="model")
    return rewrite(engine, document.text, line, diff, recent, path, document.language, cancel, **rewrite_options)


def worth_rewriting(recent: list[Hunk]) -> bool:
    """Whether the model's free rewrite is worth its seconds after these edits: not after lines only added (new
    code being written: what follows it is the completions' to write, and the rewrite of the region below found
    nothing there on the suite's tune half)."""
    return bool(recent) and bool(recent[-1].old)


def rewrite(engine: Engine, text: str, line: int, diff: str, recent: list[Hunk], path: str, language: str,
            cancel: threading.Event | None = None, speculative: bool = True, above: int = LINES_ABOVE,
            below: int = LINES_BELOW, time_budget_s: float = TIME_BUDGET_S,
            min_margin: float = MIN_DEPARTURE_MARGIN, settles: bool = True,
            context_above: int = CONTEXT_ABOVE) -> Prediction:
    """The free rewrite: the target rewrites the region around `line` with the edit that follows applied, the
    rewrite drafter proposing the region's own tokens (`settles`: the answer ends once its change is done and it
    copies the region's lines again)."""
    if "\r\n" in text:   # the model writes "\n": the lines compare without their "\r", which the edit gets back
        pred = rewrite(engine, text.replace("\r\n", "\n"), line, diff.replace("\r\n", "\n"), recent, path,
                       language, cancel, speculative, above, below, time_budget_s, min_margin, settles,
                       context_above)
        if pred.edit is not None:
            pred.edit = replace(pred.edit, text=pred.edit.text.replace("\n", "\r\n"),
                                old_text=pred.edit.old_text.replace("\n", "\r\n"))
        return pred
    if recent:   # after a rename, the region goes where the old name is still used, if not near the cursor
        n_lines = text.count("\n") + (not text.endswith("\n"))
        use = next_use(text, recent[-1], language, region_lines(n_lines, line, above, below))
        line = line if use is None else use
    p = build_prompt(text, line, diff, path, language, above, below, context_above)
    if min_margin > 0 and not engine.records_margins:
        return Prediction(None, Dropped.NO_MARGINS, None, 0, (p.start, p.end))
    source = engine.tokenize(p.region)
    max_tokens = len(source) + MAX_EXTRA_TOKENS
    fits = fitted(p, engine, prompt_room(engine.cfg.n_ctx, max_tokens, engine.cfg.draft_max))
    if fits is None:
        return Prediction(None, Dropped.TOO_LONG, None, 0, (p.start, p.end))
    p, tokens = fits
    head = p.head_tokens(engine)
    req = GenerationRequest(tokens=tokens, max_tokens=max_tokens, stop=(p.ticks,), language=language,
                            speculative=speculative, time_budget_s=time_budget_s, rewrite_source=source,
                            record_margins=True, settle=p.region if settles else "", sure=min_margin,
                            keep=len(head) if head and tokens[:len(head)] == head else 0)
    try:
        gen = engine.generate(req, cancel)
    except ContextFullError:   # the draft limit was raised since cfg was read (by another window's draftMax)
        return Prediction(None, Dropped.TOO_LONG, None, len(tokens), (p.start, p.end))
    if gen.stop_reason in (StopReason.CANCELLED, StopReason.ERROR):
        return Prediction(None, None, gen, len(tokens), (p.start, p.end))
    if gen.stop_reason == StopReason.UNSURE:   # it left the region where it was not sure: nothing to show
        return Prediction(None, Dropped.UNSURE, gen, len(tokens), (p.start, p.end),
                          departure_gap(p.region, gen.text, gen.margins, engine.tokenize))
    answer, closed = p.answer(gen.text)
    # a settled answer stopped after its change: the region's lines it did not write again stand as they are
    cut = (gen.stop_reason in CUT_SHORT and not closed) or gen.stop_reason == StopReason.SETTLED
    edit, dropped = proposal(text, p.start, p.region, answer, cut, recent, language, p.above)
    margin = None
    if edit is not None and gen.margins:
        # the token where the answer leaves the region: as many as the text before that point tokenizes to
        at = min(len(engine.tokenize(answer[:departure(p.region, answer, p.above)])), len(gen.margins) - 1)
        margin = gen.margins[at]
        if margin < min_margin:
            edit, dropped = None, Dropped.UNSURE
    return Prediction(edit, dropped, gen, len(tokens), (p.start, p.end), margin)


def lf(place: CompletionRequest, recent: list[Hunk]) -> tuple[CompletionRequest, list[Hunk]]:
    """A CRLF document and its hunks with "\n" line ends: the candidates compare lines without their "\r", and
    the model writes "\n" (`crlf` gives the edit its "\r" back)."""
    text = place.document.text
    if "\r\n" not in text:
        return place, recent
    doc = replace(place.document, text=text.replace("\r\n", "\n"))
    return replace(place, document=doc), [replace(h, old=tuple(x.rstrip("\r") for x in h.old),
                                                  new=tuple(x.rstrip("\r") for x in h.new)) for h in recent]


def crlf(result: Prediction, text: str) -> Prediction:
    """The prediction's edit in the document's own line ends."""
    if result.edit is not None and "\r\n" in text and "\r\n" not in result.edit.text + result.edit.old_text:
        result.edit = replace(result.edit, text=result.edit.text.replace("\n", "\r\n"),
                              old_text=result.edit.old_text.replace("\n", "\r\n"))
    return result


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
        self.checks: Counter[str] = Counter()                # the target's verdicts by candidate kind
        self.check_ms: deque[float] = deque(maxlen=200)      # the checks of one ask, on the model thread

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

    async def ask(self, uri: str, text: str, version: int, line: int, path: str, language: str,
                  place: CompletionRequest | None = None) -> Proposal | None:
        """The next edit for this version of the document at `line`, or None (nothing to propose, the models
        are not loaded, or the document changed meanwhile). `place`: a completion request at the line, whose
        context (other documents, the project) the candidates' checks are asked with; `path`: the document's
        name as the free rewrite's prompt shows it."""
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
        place, recent = lf(place or CompletionRequest(Document(path, text, language), line, 0), recent)
        diff = diff.replace("\r\n", "\n")
        # the candidates and their prompts come from the text, on the context thread; only their checks wait for
        # the model thread
        planned = await self.model.on_context(plan_candidates, pipeline, place, recent)
        if self._asks[uri] != ask or self.histories.get(uri) is not history or history.text != text \
                or self.model.pipeline is not pipeline:
            return None   # a newer ask, the user typed on, the document closed, or a reload meanwhile
        free = worth_rewriting(recent) and pipeline.engine.records_margins
        if not planned and not free:
            self.counts["empty"] += 1
            self.dropped[str(Dropped.NEW_CODE if pipeline.engine.records_margins else Dropped.NO_MARGINS)] += 1
            self._nothing[uri] = version
            return None   # nothing to ask the model: the model thread is not held at all
        # on the engine of the models loaded when it runs (a reload in between cancels it)
        task = Task(TaskKind.NEXT_EDIT, lambda pipeline: settle(pipeline.engine, planned, place.document, place.line,
                                                                diff, recent, path, task.cancel, free),
                    what=f"next edit in {path}", uri=uri)
        try:
            result = await self.model.queue.submit(task)
        except asyncio.CancelledError:   # the client cancelled its request: the generation stops too
            self.model.queue.cancel(task.id)
            raise
        if result is None or task.cancel.is_set() or self.histories.get(uri) is not history or history.text != text:
            return None   # dropped: the user typed on (counted where the edit cancelled it), a newer ask, a request
        self._count_checks(result)
        if result.edit is None:
            self.counts["empty"] += 1
            if result.dropped is not None:
                self.dropped[str(result.dropped)] += 1
            gen = result.generation
            if gen is None or gen.stop_reason not in (StopReason.CANCELLED, StopReason.ERROR):
                self._nothing[uri] = version   # (stopped elsewhere, or failed: asked again, it may yet say more)
            return None
        return self._proposed(uri, version, crlf(result, text), t0)

    def _count_checks(self, result: Prediction) -> None:
        for v in result.checks:
            self.checks[f"{v.candidate.kind}_{'agreed' if v.agreed else 'disagreed'}"] += 1
        if result.checks:
            self.check_ms.append(result.checks_s * 1000)

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
        out["checks"] = dict(self.checks)
        out["checks_ms_p50"] = round(statistics.median(self.check_ms)) if self.check_ms else None
        out["latency_ms_p50"] = round(statistics.median(self.latency_ms)) if self.latency_ms else None
        out["documents"] = len(self.histories)
        return out
