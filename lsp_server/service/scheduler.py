"""Which work the model does, in what order: one task at a time on the model thread (queue.py); the newest request
or edit for a document supersedes older work; a request whose prefix extends a running generation waits for
it instead; typing through a shown suggestion is answered from the cache; a request whose page is too far from
cached is answered from a short prompt now (a fast answer); and when the user pauses, the page around the
cursor is filled ahead (fill.py; a real request pre-empts that); a shown block's continuation is prefetched and
a shorter prompt's answer is bettered by the page's (offer.py), both as background jobs."""
from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, replace
from typing import Callable

from ..engine import CUT_SHORT, ENDS_HOLE, Generation, StopReason
from ..engine.backend import BackendError
from ..pipeline import CompletionRequest, Pipeline, Plan
from .cache import TypingCache
from .cache_writes import cache_writes
from .fill import Filler, where
from .gate import Gate, Gated
from .job import Job, Take
from .jobs import Jobs
from .model import Model
from .next_edit import NextEdits
from .offer import Offers
from .outcomes import Outcomes
from .predictor import predict
from .prefetch import after_accept, worth_it
from .queue import WORK, Task, TaskKind
from .settings import Settings
from .stats import Record, ServerStats, Source, Stage
from .tasks import Background

log = logging.getLogger("tandem.service")

# a request this soon after the document's previous one comes from someone typing: its answer will most likely
# be superseded by the next keystroke before it is seen
TYPING_GAP_S = 0.5


@dataclass
class Answer:
    text: str
    source: Source
    multiline: bool = False
    why: str = ""
    confidence: dict | None = None   # the gate's verdict on a generated answer (gate.Verdict.explained)
    asked: dict | None = None        # the predictor's, before it was generated (predictor.Prediction.explained)


class CompletionService:
    """The one orchestrator: every request's trail (`complete`, top to bottom below), the jobs on the model thread
    and what their ends store, and the background trails that post tasks to the same queue (the fill's steps,
    `_prefetch`, `_offer`). The fill and the offers keep their own state and decide; they hold the model's state
    (model.py), never the service."""

    def __init__(self, log: Callable[[str], None] = lambda m: None):
        self.log = log
        self.stats = ServerStats()
        self.model = Model(self.stats)
        self.cache = TypingCache()
        self.jobs = Jobs()
        self.tasks = Background()
        self.filler = Filler(self.model, self.tasks, pending=self.requests_pending, offer=self._offer)
        self.offers = Offers(self.model)   # the protocol stage sets its `notify`
        self.next_edits = NextEdits(self.model)
        self.gate = Gate(self.stats, lambda: self.settings.suggestions)
        self.outcomes = Outcomes(self.stats)
        self._latest: dict[str, asyncio.Future] = {}   # uri -> set when a newer request for it arrives
        self._last_request: dict[str, float] = {}      # uri -> when its latest request arrived
        self._cursor: dict[str, CompletionRequest] = {}  # uri -> the cursor as last told (open, edit, move, request)
        self.loads = 0                                  # model loads since the start (one per start, normally)

    # ---- models and settings (model.py holds them) -----------------------------------------------------

    @property
    def pipeline(self) -> Pipeline | None:
        return self.model.pipeline

    @pipeline.setter
    def pipeline(self, pipeline: Pipeline | None) -> None:
        self.model.pipeline = pipeline

    @property
    def settings(self) -> Settings:
        return self.model.settings

    @settings.setter
    def settings(self, settings: Settings) -> None:
        self.model.settings = settings

    @property
    def load_error(self) -> str | None:
        return self.model.load_error

    async def load(self, settings: Settings, progress: Callable[[str], None]) -> str | None:
        """(Re)load the models for these settings on the model thread; returns an error message or None."""
        self.settings = settings
        self.loads += 1
        self.cancel_all()
        error = await self.model.load(settings, progress)
        if error is None:
            self.cache = TypingCache()
        return error

    def apply(self, settings: Settings) -> None:
        """Settings that take effect without reloading the models."""
        self.model.apply(settings)
        self.cache = TypingCache()

    @property
    def ready(self) -> bool:
        return self.pipeline is not None

    def missing(self, plan: Plan) -> int:
        return self.model.missing(plan)

    def too_far(self, plan: Plan) -> bool:
        return self.model.too_far(plan)

    # ---- a request's trail -----------------------------------------------------------------------------

    async def complete(self, uri: str, req: CompletionRequest) -> Answer:
        t0 = time.perf_counter()
        self.filler.pre_empt()
        self.filler.requested(uri, req)
        self._cursor[uri] = req
        # the suggestion is awaited now: the work nobody waits for stops (every next edit, other documents' jobs)
        self.next_edits.yielded(self.model.queue.yield_to(uri))
        lang = req.document.language
        if self.pipeline is None:
            return self._done(t0, Answer("", Source.NOT_READY, why=self.load_error or "models are loading"), lang)
        if not self.settings.language_enabled(lang):
            return self._done(t0, Answer("", Source.DISABLED, why=f"completions are off for {lang}"), lang)
        # this request supersedes the document's older ones: they return empty now, whatever their job does
        loop = asyncio.get_running_loop()
        superseded = loop.create_future()
        previous = self._latest.get(uri)
        if previous is not None and not previous.done():
            previous.set_result(True)
        self._latest[uri] = superseded
        typing = t0 - self._last_request.get(uri, float("-inf")) < TYPING_GAP_S
        self._last_request[uri] = t0
        try:
            req.at_rest = not typing
            ans = await self._plan_and_answer(uri, req, superseded, t0, typing)
            if ans.text:
                self.stats.shown += 1
                self.outcomes.shown(uri, *req.document.split(req.line, req.col), ans.text)
            return ans
        finally:
            if self._latest.get(uri) is superseded:
                del self._latest[uri]

    async def _plan_and_answer(self, uri: str, req: CompletionRequest, superseded: asyncio.Future,
                               t0: float, typing: bool = False) -> Answer:
        lang = req.document.language
        s, pipeline = self.settings, self.pipeline
        req.max_tokens, req.max_tokens_single_line = s.max_tokens, s.max_tokens_single_line
        req.time_budget_s = s.time_budget_ms / 1000 if s.time_budget_ms > 0 else None
        plan = await self.model.on_context(pipeline.plan, req)
        if not plan.mode.complete and not req.force:
            self.filler.share([])
            return self._done(t0, Answer("", Source.SKIPPED, why=plan.mode.why), lang)
        # the window's own cache first: the text around the cursor is the same whichever prompt would be chosen
        # below, and choosing asks the engine what it holds (a round trip when the engine is shared)
        hit, judged = self.cache.hit(uri, plan.prefix, plan.suffix) or (None, None)
        if hit is not None and (hit == "" or not self._running_has_more(uri, plan, hit)) and not superseded.done():
            # the fill that this request pre-empted goes on only as far as this prompt agrees with it
            self.filler.share(plan.prompt.tokens)
            if hit == "":   # the model said the hole ends here (see _store_final)
                return self._done(t0, Answer("", Source.CACHE, plan.mode.multiline, why="the code below follows"),
                                  lang)
            self.offers.asked_again(uri, req, hit)
            return self._done(t0, Answer(hit, Source.CACHE, plan.mode.multiline, confidence=judged), lang)
        # a place where a suggestion is unlikely to be taken is not asked of the model (predictor.py), unless a
        # generation running for it already is
        pred = predict(plan.prefix, plan.suffix, self.outcomes.recent(uri), typing, s.suggestions, req.force)
        if pred.skip and self.jobs.extending(uri, plan.prefix, plan.suffix) is None:
            self.stats.gated_by("predicted")
            return self._done(t0, Answer("", Source.SKIPPED, why="unlikely to be taken"), lang)
        lead: list[int] = []
        if self.too_far(plan) and not (superseded.done() or self.pipeline is not pipeline):
            page = plan
            plan = await self.model.on_context(self.model.choose_prompt, plan)
            if typing and plan.fast:
                lead = self.model.page_step(page)
        self.filler.share(plan.prompt.tokens)
        if superseded.done() or self.pipeline is not pipeline:   # (a reload: the plan's tokens are the old models')
            return self._done(t0, Answer("", Source.SUPERSEDED, why="a newer request replaced it"), lang)
        return await self._answer(uri, plan, superseded, t0, lead, pred.explained())

    def _running_has_more(self, uri: str, plan: Plan, hit: str) -> bool:
        """Whether a generation still running for this place has written more than the cached answer (which
        was an early one): then it answers instead."""
        job = self.jobs.extending(uri, plan.prefix, plan.suffix)
        return job is not None and len(job.partial) - len(plan.prefix[len(job.plan.prefix):]) > len(hit)

    async def _answer(self, uri: str, plan: Plan, superseded: asyncio.Future, t0: float,
                      lead: list[int] | None = None, asked: dict | None = None) -> Answer:
        lang = plan.context.language
        reuse = self.jobs.join_or_supersede(uri, plan)
        for attempt in (1, 2):
            job = reuse or self.start_job(uri, plan, lead=lead)
            typed = plan.prefix[len(job.plan.prefix):]
            got = await job.wait(superseded, typed, not plan.mode.multiline, self._early_limits,
                                 keep=self.model.near_cursor_keep)
            if got is Take.DIVERGED:
                reuse = None     # the generation went another way than the user: generate for this prefix
                continue
            if got is Take.GONE or superseded.done() or self.pipeline is None:
                return self._done(t0, Answer("", Source.SUPERSEDED, why="a newer request or edit replaced it"), lang)
            gen, early = got.gen, got.early
            truncated = early or (gen is not None and gen.stop_reason in CUT_SHORT)
            around = replace(plan.around, truncated=truncated,
                             ended=not early and gen is not None and gen.stop_reason in ENDS_HOLE)
            text = await self.model.on_context(self.pipeline.finish_text, around, got.raw)
            verdict = self.gate.shown(text, job.sureness(gen), len(typed), around)
            text = verdict.text
            # nothing shown: the same generation would say the same at this place again
            judged = verdict.reported()
            self.cache.store(uri, plan.prefix, plan.suffix, text, done=verdict.gated is Gated.UNSURE, confidence=judged)
            self._prefetch_after(uri, plan, text, gen)
            self.offers.shown(uri, plan, job.plan, text)
            if early:
                self.offers.early(uri, plan, job, text)
            source = Source.REUSE if job is reuse else Source.FAST if job.plan.fast else Source.MODEL
            log.debug("answered (%s) after %.2fs: queue %.2fs, prompt %s", source, time.perf_counter() - t0,
                      job.queue_s, job.prompt_info)
            ans = Answer(text, source, plan.mode.multiline, why="unsure" if verdict.gated is Gated.UNSURE else "",
                         confidence=judged, asked=asked)
            return self._done(t0, ans, lang, job if job is not reuse else None)
        raise AssertionError("unreachable: the second attempt never reuses")

    def _early_limits(self) -> tuple[float | None, float | None]:
        """When an answer may come early (`Job.take`'s early_s and line_s), as the settings say now."""
        early = self.settings.early_answer_ms
        if early <= 0:
            return None, None
        return early / 1000, max(early, self.settings.early_line_ms) / 1000

    def _done(self, t0: float, ans: Answer, language: str, job: Job | None = None) -> Answer:
        rec = Record(language, ans.source, time.perf_counter() - t0, multiline=ans.multiline,
                     shown_chars=len(ans.text))
        self.filler.kick()
        if job is not None:
            job.record(rec, t0)
        self.stats.add(rec)
        return ans

    # ---- jobs: generations on the model thread ---------------------------------------------------------

    def request_waits(self, uri: str) -> bool:
        """Whether a request for this document is being answered (a prefetch for it then gives way)."""
        return uri in self._latest

    def requests_pending(self) -> bool:
        """Whether a request or a prefetch holds or waits for the model (the fill then waits its turn)."""
        return bool(self.jobs) or bool(self._latest)

    def start_job(self, uri: str, plan: Plan, kind: TaskKind = TaskKind.REQUEST, base: str | None = None,
                  lead: list[int] | None = None) -> Job:
        """A generation for this plan, a task on the model thread. `kind`: a request's, or background work that
        nobody waits for yet (a prefetch, an offer); `base`: a prefetch's (see Job); `lead`: tokens of another
        prompt (the page's) to evaluate first, kept in the KV store."""
        job = Job(uri, plan, base, background=kind is not TaskKind.REQUEST)
        plan.request.record_margins = True   # the gate reads them (free: each verify computes them)
        if log.isEnabledFor(logging.DEBUG):
            log.debug("start a %s job %s (%s prompt, %d tokens, %d not cached%s)", kind, where(uri, plan.request),
                      plan.prompt.kind, len(plan.prompt.tokens), self.missing(plan),
                      f"; the page to {len(lead)} first" if lead else "")

        def run(pipeline: Pipeline) -> Generation | None:   # the pipeline the plan was made with (see Task)
            job.started_at = time.perf_counter()
            if job.cancel.is_set():
                return None
            with self.stats.model_call():
                if lead:   # not cancelled: a step this short is worth finishing, the next keystroke goes on
                    try:
                        self.filler.lead_evaluated(pipeline.engine.prewarm(lead, keep=len(lead)))
                    except BackendError as e:   # out of reach: the generation says so (or reaches a new one)
                        log.debug("the page's lead not evaluated: %s", e)
                    if job.cancel.is_set():
                        return None
                return pipeline.generate(plan, job.cancel, on_text=job.set_partial, on_prompt=job.set_prompt)

        # a cancelled job never starts (None); a request that joins a prefetch or an offer makes it a request's
        task = Task(kind, run, job.cancel, urgent=lambda: job.waiters > 0, what=where(uri, plan.request), uri=uri,
                    made_for=self.pipeline)
        job.future = self.model.queue.submit(task)
        job.task_id = task.id
        self.jobs.add(job)
        job.future.add_done_callback(lambda f: self._finished(job, f))
        return job

    def _finished(self, job: Job, fut: asyncio.Future) -> None:
        self.jobs.remove(job)
        self.filler.kick()
        if fut.cancelled() or fut.exception() is not None:
            return
        gen = fut.result()
        if gen is None:
            return
        self.stats.generated_tokens += len(gen.tokens)
        if gen.stop_reason == StopReason.CANCELLED:
            self.stats.wasted_tokens += len(gen.tokens)
            self.offers.finished(job.uri, job, self.cache)
            return
        self.stats.add_drafters(job.plan.request.document.language, gen.drafters)
        self.tasks.spawn(self._store_final(job, gen), "storing a generation's answer")

    async def _store_final(self, job: Job, gen: Generation) -> None:
        """Keep what a generation wrote in the cache (cache_writes.py; its post-processing runs on the context
        thread)."""
        if self.pipeline is None:
            return
        writes = await self.model.on_context(cache_writes, job.plan, gen)
        writes = self.gate.writes(writes, job.plan.around, len(job.plan.prefix), job.sureness(gen))
        for w in writes:
            self.cache.store(job.uri, w.prefix, w.suffix, w.text, done=w.done, confidence=w.confidence)
            self.stats.continued += w.continued
        self.offers.finished(job.uri, job, self.cache)

    # ---- background trails: a prefetch, an offer (the fill's steps are its own, fill.py) ----------------

    def _prefetch_after(self, uri: str, plan: Plan, text: str, gen: Generation | None) -> None:
        """An answer was shown: prefetch what follows it, where that is worth it and the setting is on."""
        if self.settings.prefetch and worth_it(plan, text, gen):
            self.tasks.spawn(self._prefetch(uri, after_accept(plan, text), plan.prefix), "a prefetch")

    async def _prefetch(self, uri: str, req: CompletionRequest, base: str) -> None:
        pipeline = self.pipeline
        if pipeline is None or self.request_waits(uri) or self.jobs.has(uri):
            return
        try:
            plan = await self.model.on_context(pipeline.plan, req)
        except Exception as e:   # the edit that followed made the place invalid: nothing to prefetch
            self.stats.failed(Stage.PREFETCH_PLAN, e, log, where(uri, req))
            return
        if (not plan.mode.complete or self.request_waits(uri) or self.jobs.has(uri) or self.pipeline is not pipeline
                or self.cache.lookup(uri, plan.prefix, plan.suffix, count=False) is not None or self.too_far(plan)):
            return   # (a prompt far from cached: filling its page comes first)
        job = self.start_job(uri, plan, TaskKind.PREFETCH, base=base)
        try:
            gen = await asyncio.shield(job.future)
        except Exception as e:   # the engine's fault (the queue counted it as model.prefetch); none to store
            self.stats.failed(Stage.PREFETCH_GENERATE, e, log, where(uri, req))
            return
        if gen is None or gen.stop_reason == StopReason.CANCELLED:
            return
        self.stats.prefetches += 1
        self.stats.prefetch_tokens += len(gen.tokens)

    async def _offer(self, uri: str, req: CompletionRequest) -> bool:
        """The page's answer at this place, where a shorter prompt's is shown (the fill runs it once the page's
        prompt at the cursor is cached): generated, judged, and offered where it differs. True when the client
        was told."""
        pipeline = self.pipeline
        shown = self.offers.claim(uri, req) if pipeline is not None else None
        if shown is None:
            return False
        try:
            plan = await self.model.on_context(pipeline.plan, replace(shown.request, at_rest=True))
        except Exception as e:   # a place the edit made invalid: nothing to offer
            self.stats.failed(Stage.OFFER_PLAN, e, log, where(uri, req))
            return False
        # the page's prompt must be what the fill has cached, and another prompt than the one that answered
        if not self.offers.worth_generating(plan, shown) or self.too_far(plan) or self.pipeline is not pipeline:
            return False
        job = self.start_job(uri, plan, TaskKind.OFFER)
        with self.offers.running(uri, shown, job):
            try:
                gen = await asyncio.shield(job.future)
            except Exception as e:   # the engine's fault (the queue counted it as model.offer)
                self.stats.failed(Stage.OFFER_GENERATE, e, log, where(uri, req))
                return False
        if gen is None or gen.stop_reason == StopReason.CANCELLED:
            self.offers.stopped()
            return False
        self.offers.generated(plan)
        writes = await self.model.on_context(cache_writes, plan, gen)
        writes = self.gate.writes(writes[:1], plan.around, len(plan.prefix), job.sureness(gen))
        text = writes[0].text if writes else ""
        if not self.offers.judge(shown, text):
            return False
        # into the cache before the client is told (every finished generation is stored too, later)
        self.cache.store(uri, plan.prefix, plan.suffix, text, confidence=writes[0].confidence if writes else None)
        self.offers.offer(uri, shown, text)
        return True

    # ---- edits, the cursor, what the editor shows ------------------------------------------------------

    def on_edit(self, uri: str, text: str) -> None:
        """An edit supersedes the document's work unless it only typed what a generation is writing."""
        self.jobs.edited(uri, text, self.model.near_cursor_keep)
        self.next_edits.edited(uri, text)
        self.outcomes.edited(uri, text)

    def on_close(self, uri: str) -> None:
        self.model.queue.cancel(uri=uri)   # every task for it: its generations, fill steps, next edit
        self.cache.forget(uri)
        self.filler.forget(uri)
        self.offers.forget(uri)
        self.outcomes.forget(uri)
        self.next_edits.closed(uri)
        self._last_request.pop(uri, None)
        self._cursor.pop(uri, None)

    def schedule_warmup(self, uri: str, req: CompletionRequest, edit: bool = False) -> None:
        """The user is here (an open, an edit, a cursor move): after the pause, fill ahead for this place."""
        self._cursor[uri] = req
        if self.pipeline is None or not self.settings.language_enabled(req.document.language):
            return
        self.filler.want(uri, req, edit=edit)
        self.offers.moved(uri, req)

    def cursor_moved(self, uri: str, req: CompletionRequest) -> None:
        """The client says the cursor moved without an edit (tandem/didMoveCursor)."""
        self.filler.cursor_moved()
        self.schedule_warmup(uri, req)

    def viewed(self, uri: str, first: int, last: int, at_middle: Callable[[], CompletionRequest]) -> None:
        """The editor shows lines first..last of a document (tandem/visibleRanges). Where the cursor is not among
        them the user reads elsewhere (a scroll): fill the pages there (`at_middle()`: the request at their
        middle, built only then; a scroll while typing keeps the cursor on the screen), so that a click in them
        finds their state cached. Where it is, the cursor is the focus again (back from reading)."""
        if self.pipeline is None:
            return
        cursor = self._cursor.get(uri)
        if cursor is not None and first <= cursor.line <= last:
            if self.filler.back_at_cursor(uri, cursor):
                self.offers.moved(uri, cursor)
            return
        req = at_middle()
        if not self.settings.language_enabled(req.document.language):
            return
        self.filler.want(uri, req, view=True)

    def cancel_all(self) -> None:
        """Stop every task asked of the models (a reload, the client's shutdown): what waits never runs, what runs
        stops within a chunk; and no fill starts on its timer."""
        self.filler.pre_empt()
        self.model.queue.cancel(kinds=WORK)

    # ---- what the protocol stage shows and counts -----------------------------------------------------

    def count_accepted(self, chars: int, uri: str | None = None) -> None:
        self.outcomes.accepted(uri)
        self.stats.accepted += 1
        self.stats.accepted_chars += chars

    def count_partly_accepted(self, chars: int) -> None:
        """A word or a line of a suggestion taken (the rest still shown)."""
        self.stats.partly_accepted += 1
        self.stats.partly_accepted_chars += chars

    def warnings(self) -> list[str]:
        """What the loaded models and the prompt budgets warn about (said once after a load)."""
        if self.pipeline is None:
            return []
        engine = self.pipeline.engine
        return engine.warnings + self.pipeline.warnings + engine.notices()

    def notices(self) -> list[str]:
        """What the engine has to say since it was last asked (a model file damaged under it, a backend down)."""
        return self.pipeline.engine.notices() if self.pipeline is not None else []

    def summary(self, include_records: bool = False) -> dict:
        out = self.stats.summary(self.cache.hits, self.cache.lookups, include_records)
        # every structure that grows with use, next to its bound (the README lists them)
        out["memory"] = {
            "typing_cache": {"entries": len(self.cache), "limit": self.cache.total},
            "records": {"entries": len(self.stats.records), "limit": self.stats.records.maxlen},
            "jobs": len(self.jobs),
            "pending_requests": len(self._latest),
        }
        self.model.summary(out)
        out["fill"] = self.filler.summary()
        out["offers"] = self.offers.summary()
        out["next_edit"] = self.next_edits.summary()
        out["loads"] = self.loads
        out["background"] = {"running": len(self.tasks), "failed": self.tasks.failures}
        return out

    def shutdown(self) -> None:
        """No fill starts again; the running task stops within a chunk, the waiting ones are dropped, and the
        models are closed once the model thread has ended."""
        self.filler.stop()
        self.model.shutdown()
