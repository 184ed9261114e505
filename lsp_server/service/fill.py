"""Filling ahead: what the model thread evaluates while the user is idle, for the place the user is at (the
focus: the newest edit, request, cursor move or opened document). In order: the short prompts of a fast
answer where the page's state is far from cached (twice the quick one's size, then four times); the page
itself, to its end, so that every cursor in it is served; the next page where typing on will soon need it; the
prompt at the cursor, so that a request there evaluates nothing; where the answer shown there came from a
shorter prompt, the page's own answer (offer.py); and the pages next to the cursor's, above and below, where a
short jump lands. Where the user reads lines away from the cursor (a scroll), the focus is the middle of what
they read, and only its pages fill: a click there lands in a page whose state is cached. Chunk by chunk: a
request pre-empts it within one chunk (llama.cpp's abort callback), keeping what the two prompts share; the
engine's KV store keeps what was evaluated, and the fill resumes from there once the model is idle again."""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Awaitable, Callable

from ..engine import Cancel, shared_prefix
from ..engine.backend import BackendError
from ..pipeline import CompletionRequest, Plan
from ..prompt import PromptKind
from .job import CURSOR_LINE_TOKENS
from .model import Model
from .queue import Task, TaskKind
from .stats import Stage
from .tasks import Background

log = logging.getLogger("tandem.fill")

# an edit's request follows its change within this (editors send them together): the request trims the running
# step to what it shares itself (pre_empt, share), so the edit's place's steps, a whole plan of the document on
# the thread the request's plan waits for, are worked out only where no request came (the first keystrokes after
# a suggestion in a 4 MB file took 128-157 ms, the others 65-73). A cursor move, an open or a screen is taken at
# once: a request rarely follows at once, and the new place's fill waits until the running step stops (0.1-0.3 s
# later after a switch).
REFOCUS_DELAY_S = 0.05


class StepKind(StrEnum):
    """What a fill step evaluates (a str: it compares with, and serializes as, its value)."""
    FAST = "fast"       # a fast answer's short prompt (twice, four times the quick one's size)
    PAGE = "page"       # the page, to its end
    NEXT = "next"       # the next page, where typing on will soon need it
    PROMPT = "prompt"   # the prompt at the cursor
    NEAR = "near"       # the pages above and below the cursor's
    TYPING = "typing"   # (counted only) the page steps fast answers take first while the user types


@dataclass
class Step:
    name: StepKind
    tokens: list[int]
    keep: int            # how much of it is worth a place in the KV store
    wanted: int          # how much of it a request at the focus would share (kept when one pre-empts it)


@dataclass
class FillStats:
    runs: int = 0
    preempted: int = 0
    cursor_moves: int = 0    # tandem/didMoveCursor notifications taken
    views: int = 0           # tandem/visibleRanges away from the cursor, taken as a focus
    # evaluated, by step
    tokens: dict[StepKind, int] = field(default_factory=lambda: {k: 0 for k in StepKind})


class Filler:
    """The fill's state and its steps; it posts each step to the model thread's queue as a task and takes its
    result. `pending()`: whether a request or a prefetch holds or waits for the model (the fill then waits its
    turn); `offer(uri, req)`: the page's answer offered at the cursor (the service runs it, offer.py)."""

    def __init__(self, model: Model, tasks: Background, pending: Callable[[], bool],
                 offer: Callable[[str, CompletionRequest], Awaitable[bool]]):
        self.model, self.tasks, self.pending, self.offer = model, tasks, pending, offer
        self.focus: tuple[str, CompletionRequest] | None = None
        self.viewing = False              # the focus is what the user reads, not where the cursor is
        self.cancel = Cancel()
        self.step: Step | None = None     # the step on the model thread now
        self.stats = FillStats()
        self._timer: asyncio.TimerHandle | None = None
        self._refocus_timer: asyncio.TimerHandle | None = None
        self._running = False
        self._at_once = False             # the focus is a move's (no request follows it): fill without the pause

    # ---- what the service tells it -----------------------------------------------------------------------

    def want(self, uri: str, req: CompletionRequest, view: bool = False, edit: bool = False) -> None:
        """The user is now here: fill for this place when idle. A fill running for an older place goes on only
        as far as it serves this place's first step (the same page: to its end; but where this place needs a
        fast answer's prompt first, that comes first), else it stops within a chunk; what it evaluated stays in
        the KV store, and a later step takes it up again. `view`: the user reads there, the cursor is elsewhere
        (no answer is shown there: only the pages fill). `edit`: the place of an edit, whose request follows."""
        self.focus, self.viewing = (uri, req), view
        self.stats.views += view
        log.debug("focus %s:%d%s%s", uri.rsplit("/", 1)[-1], req.line, " (viewed)" if view else "",
                  " (a fill runs)" if self._running else "")
        if self._running and self.step is not None:
            self._cancel_refocus()
            if edit:
                self._refocus_timer = asyncio.get_running_loop().call_later(REFOCUS_DELAY_S, self._refocus_now,
                                                                            self.focus)
            else:   # a move, an open, a screen: no request may follow, and the new place's fill waits for this
                self._refocus_now(self.focus)
        # a move's fill starts at once: the clients report a move once the cursor has rested (150 ms), and a
        # request there finds what was evaluated meanwhile; an edit's request follows it, so its fill waits
        self._at_once = not edit
        self.kick(None if edit else 0)

    def back_at_cursor(self, uri: str, cursor: CompletionRequest) -> bool:
        """The editor shows the cursor's lines again: where the focus was what the user read in this document,
        the cursor is the focus again (True)."""
        focus = self.focus
        if self.viewing and focus is not None and focus[0] == uri:
            self.want(uri, cursor)
            return True
        return False

    def cursor_moved(self) -> None:
        self.stats.cursor_moves += 1

    def lead_evaluated(self, tokens: int) -> None:
        """A fast answer evaluated this many tokens of its page first, while typing (the service's request)."""
        self.stats.tokens[StepKind.TYPING] += tokens

    def requested(self, uri: str, req: CompletionRequest) -> None:
        """A request arrived here: it is the focus (the fill resumes for it once the model is idle)."""
        self.focus, self.viewing = (uri, req), False
        self._at_once = False

    def _cancel_refocus(self) -> None:
        if self._refocus_timer is not None:
            self._refocus_timer.cancel()
            self._refocus_timer = None

    def _refocus_now(self, focus: tuple[str, CompletionRequest]) -> None:
        self._refocus_timer = None
        self.tasks.spawn(self._refocus(focus), "refocusing the fill")

    async def _refocus(self, focus: tuple[str, CompletionRequest]) -> None:
        if self.focus is not focus or self.step is None:
            return   # a request or a newer place came meanwhile, or the fill ended
        try:
            steps = await self.model.on_context(self.steps, focus[1], self.viewing)
        except Exception as e:   # as in _run: nothing to fill there; the running step stops
            self.model.stats.failed(Stage.FILL_REFOCUS, e, log, where(focus[0], focus[1]))
            steps = []
        step = self.step
        if self.focus is focus and step is not None:
            self.cancel.set_keeping(shared_prefix(step.tokens, steps[0].tokens) if steps else 0)
            log.debug("the %s fill goes on to %d of %d tokens for the new focus", step.name,
                      self.cancel.keep_until, len(step.tokens))

    def kick(self, delay_s: float | None = None) -> None:
        """Run after the warm-up pause (or `delay_s`) unless something else uses the model by then."""
        pause = self.model.settings.warmup_pause_ms
        if self.focus is None or self.model.pipeline is None or pause < 0:
            return
        if self._timer is not None:
            self._timer.cancel()
        loop = asyncio.get_running_loop()
        self._timer = loop.call_later(pause / 1000 if delay_s is None else delay_s,
                                      lambda: self.tasks.spawn(self._run(), "a fill"))

    def pre_empt(self) -> None:
        """A request arrived: stop after what it will probably share (refined by `share` once it is planned)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._cancel_refocus()
        self.cancel.set_keeping(self.step.wanted if self.step is not None else 0)

    def share(self, tokens: list[int]) -> None:
        """The pre-empting request's prompt: the running step goes on only as far as the two agree."""
        step = self.step
        if step is not None:
            keep = shared_prefix(step.tokens, tokens)
            self.cancel.set_keeping(keep)
            log.debug("a request pre-empts the %s fill at %d of %d tokens; it goes on to %d", step.name,
                      len(self.model.pipeline.engine.target.tokens) if self.model.pipeline else -1, len(step.tokens),
                      self.cancel.keep_until)

    def forget(self, uri: str) -> None:
        """The document closed (the service cancelled its tasks, the running step's among them): no fill for it."""
        if self.focus is not None and self.focus[0] == uri:
            self.focus = None

    def stop(self) -> None:
        """The server ends (the model thread's queue stops the running step): no fill starts again."""
        self.focus = None
        if self._timer is not None:
            self._timer.cancel()
        self._cancel_refocus()

    # ---- the fill ----------------------------------------------------------------------------------------

    def busy(self) -> bool:
        return self._running or self.pending()

    async def _run(self) -> None:
        model, pipeline = self.model, self.model.pipeline
        self._timer = None
        if pipeline is None or self.focus is None or self.busy():
            return   # a request or prefetch holds the model; it kicks the fill again when it is done
        focus, view = self.focus, self.viewing
        uri, req = focus
        if not model.settings.language_enabled(req.document.language):
            return
        self._running = True
        cancel = self.cancel = Cancel()
        self.stats.runs += 1
        model.stats.warmups += 1
        try:
            try:
                steps = await model.on_context(self.steps, req, view)
            except Exception as e:   # a position the edit made invalid, a parse that failed: nothing to fill
                model.stats.failed(Stage.FILL_PLAN, e, log, where(uri, req))
                return
            offered = view   # no answer is shown where the user only reads: nothing to offer there
            for step in steps + [None]:
                # a newer place came while the steps were worked out (no step ran yet to refocus) or between two
                # steps: the fill goes there (below) instead of filling an old place to its end
                if cancel.is_set() or model.pipeline is not pipeline or self.focus is not focus:
                    break
                if not offered and (step is None or step.name == StepKind.NEAR):
                    # the prompt at the cursor is cached: the page's answer there, before the neighbours
                    offered = True
                    self.step = None   # a request now stops the fill (and supersedes or joins the offer)
                    await self.offer(uri, req)
                    if cancel.is_set() or model.pipeline is not pipeline or self.focus is not focus:
                        break   # (the user moved meanwhile: fill for the new place, below)
                if step is None:
                    break
                if pipeline.engine.cached(step.tokens) >= len(step.tokens) - 1:
                    continue
                self.step = step
                log.debug("fill %s: %d tokens", step.name, len(step.tokens))

                def work(pipeline, step=step) -> int:   # the pipeline the steps were planned with (see Task)
                    if cancel.is_set():
                        return 0
                    with model.stats.model_call():
                        return pipeline.engine.prewarm(step.tokens, cancel, keep=step.keep)

                try:   # (a cancelled step never starts: 0 evaluated)
                    evaluated = await model.queue.submit(Task(TaskKind.FILL, work, cancel, dropped=0, what=step.name,
                                                              uri=uri, made_for=pipeline))
                except BackendError as e:   # the engine is out of reach; its notices tell the user, once
                    log.info("the fill stopped: %s", e)
                    break
                self.stats.tokens[step.name] += evaluated
                log.debug("fill %s: %d evaluated%s", step.name, evaluated, ", stopped" if cancel.is_set() else "")
                model.stats.warmup_tokens += evaluated
            if cancel.is_set():
                self.stats.preempted += 1
        finally:
            self.step = None
            self._running = False
        if self.focus is not focus and self.focus is not None:
            # the user moved while this ran: fill for the new place (at once after a move, as in want)
            self.kick(0 if self._at_once else None)

    def steps(self, req: CompletionRequest, view: bool = False) -> list[Step]:
        """What to evaluate for a focus, in order (runs on the context thread). Where the user only reads
        (`view`), the pages alone: a fast prompt or the prompt at one line of the screen would serve a click on
        that line only."""
        model, pipeline = self.model, self.model.pipeline
        # for the request that comes once the user stops here: at rest (its longer suffix)
        plan: Plan = pipeline.plan(replace(req, at_rest=True))
        p = plan.prompt
        out: list[Step] = []
        if plan.mode.complete and not view and model.too_far(plan):
            # the fast prompt twice the quick one's size first (its answers were right almost as often as the
            # page's, the quick one's half as often: a request arriving before it is done still takes it where
            # its rest is hardly more than the quick one), then the one twice as long again (a short jump down
            # from here evaluates only the lines between: each shares the small page above)
            sizes = pipeline.fast_sizes()[1:]
            if model.missing(plan) <= 2 * sizes[1]:
                sizes = sizes[:1]   # a small page (a short file) fills soon: the longer one would only delay it
            for n in sizes:
                fast = pipeline.plan_fast(plan, n).prompt
                # kept whole: the next step overwrites the live cache, and a request here restores all of it
                out.append(Step(StepKind.FAST, fast.tokens, len(fast.tokens), len(fast.tokens)))
        if p.fill and p.kind == PromptKind.PAGE:
            out.append(Step(StepKind.PAGE, p.fill, len(p.fill), max(0, p.stable - CURSOR_LINE_TOKENS)))
        if p.next_fill:
            out.append(Step(StepKind.NEXT, p.next_fill, len(p.next_fill), 0))
        if plan.mode.complete and not view:
            # a longer suffix at rest is kept whole: the neighbouring pages filled next overwrite the live cache,
            # and a request here takes that suffix only where it is cached (Pipeline.plan_typing)
            keep = len(p.tokens) if pipeline.plan_typing(plan) is not plan else p.stable
            out.append(Step(StepKind.PROMPT, p.tokens, keep, max(0, p.stable - CURSOR_LINE_TOKENS)))
        if p.kind == PromptKind.PAGE and p.prefix_cut_lines + p.prefix_tokens > 0:
            for fill in pipeline.near_fills(plan):
                out.append(Step(StepKind.NEAR, fill, len(fill), 0))
        return out

    def summary(self) -> dict:
        return {"runs": self.stats.runs, "preempted": self.stats.preempted,
                "cursor_moves": self.stats.cursor_moves, "views": self.stats.views,
                "tokens": {str(k): v for k, v in self.stats.tokens.items()},
                "focus": self.focus[0] if self.focus else None, "running": str(self.step.name) if self.step else None}


def where(uri: str, req: CompletionRequest) -> str:
    """A place, for the log: file:line."""
    return f"at {uri.rsplit('/', 1)[-1]}:{req.line + 1}"
