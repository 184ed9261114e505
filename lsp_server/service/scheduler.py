"""Which work the model does, in what order: one generation at a time on the model thread; the newest request
or edit for a document supersedes older work; a request whose prefix extends a running generation waits for
it instead; typing through a shown suggestion is answered from the cache; a request whose page is too far from
cached is answered from a short prompt now (a fast answer); and when the user pauses, the page around the
cursor is filled ahead (fill.py; a real request pre-empts that)."""
from __future__ import annotations

import asyncio
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Callable

from ..engine import CUT_SHORT, ENDS_HOLE, Generation, StopReason, make_engine
from ..engine.backend import BackendError
from ..pipeline import CompletionRequest, Pipeline, Plan
from .cache import TypingCache
from .cache_writes import cache_writes
from .fill import Filler
from .job import CURSOR_LINE_TOKENS, Job
from .jobs import Jobs
from .offer import Offers
from .prefetch import Prefetcher
from .settings import Settings
from .stats import Record, ServerStats, Source
from .tasks import Background

log = logging.getLogger("tandem.service")

# where no prompt evaluates within the budget, a better one is taken over the one with least to evaluate when it
# leaves at most this many tokens more
FAST_GAIN = 32
# a request this soon after the document's previous one comes from someone typing: its answer will most likely
# be superseded by the next keystroke before it is seen
TYPING_GAP_S = 0.5
# while typing, a fast answer first evaluates this many more tokens of its page (about 0.4 s here): the page
# fills across the keystrokes, where a fill that waits for an idle model would never run and a fast prompt's
# own evaluation is lost at every keystroke
TYPING_PAGE_STEP = 32


@dataclass
class Answer:
    text: str
    source: Source
    multiline: bool = False
    why: str = ""


class CompletionService:
    def __init__(self, log: Callable[[str], None] = lambda m: None):
        self.log = log
        self.settings = Settings()
        self.pipeline: Pipeline | None = None
        self.load_error: str | None = None
        self.cache = TypingCache()
        self.stats = ServerStats()
        self.jobs = Jobs()
        # the model thread: every model call goes through it, so at most one generation runs at a time
        self.model_pool = ThreadPoolExecutor(1, thread_name_prefix="tandem-model")
        self.context_pool = ThreadPoolExecutor(1, thread_name_prefix="tandem-context")
        self.filler = Filler(self)
        self.prefetcher = Prefetcher(self)
        self.offers = Offers(self)   # the protocol stage sets its `notify`
        self._latest: dict[str, asyncio.Future] = {}   # uri -> set when a newer request for it arrives
        self._last_request: dict[str, float] = {}      # uri -> when its latest request arrived
        self._cursor: dict[str, CompletionRequest] = {}  # uri -> the cursor as last told (open, edit, move, request)
        self.loads = 0                                  # model loads since the start (one per start, normally)
        self.tasks = Background()

    # ---- models and settings -------------------------------------------------------------------------

    async def load(self, settings: Settings, progress: Callable[[str], None]) -> str | None:
        """(Re)load the models for these settings on the model thread; returns an error message or None."""
        self.settings = settings
        self.loads += 1
        self.cancel_all()
        loop = asyncio.get_running_loop()

        def work() -> Pipeline:
            old, self.pipeline = self.pipeline, None
            if old is not None:
                old.engine.close()
            cfg, backend = settings.engine_config(), settings.backend_config()
            progress(f"connecting to {backend.url}" if backend else
                     f"loading {cfg.target_path or 'the default target'} and {cfg.draft_path or 'the default draft'}")
            engine = make_engine(cfg, backend, log=progress, kind=settings.engine,
                                 idle_s=settings.engine_idle_minutes * 60)
            progress(engine.loaded())
            return Pipeline(engine, settings.prompt_budget(), settings.fast_prefix_tokens)

        try:
            self.pipeline = await loop.run_in_executor(self.model_pool, work)
            self.load_error = None
            self.cache = TypingCache()
        except Exception as e:   # a broken model file, an unusable build: the server stays up and says why
            self.load_error = str(e) or type(e).__name__
            self.pipeline = None
        return self.load_error

    def apply(self, settings: Settings) -> None:
        """Settings that take effect without reloading the models."""
        self.settings = settings
        if self.pipeline is not None:
            self.pipeline.engine.tune(settings.speculation, settings.draft_min, settings.draft_max,
                                      settings.kv_store_mib, settings.cache_reuse)
            self.pipeline.budget = settings.prompt_budget()
            self.pipeline.fast_tokens = settings.fast_prefix_tokens
        self.cache = TypingCache()

    @property
    def ready(self) -> bool:
        return self.pipeline is not None

    # ---- requests --------------------------------------------------------------------------------------

    async def complete(self, uri: str, req: CompletionRequest) -> Answer:
        t0 = time.perf_counter()
        self.filler.pre_empt()
        self.filler.requested(uri, req)
        self._cursor[uri] = req
        self.jobs.yield_to(uri)   # other documents' prefetches: one model thread, they would hold it
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
            return await self._plan_and_answer(uri, req, superseded, t0, typing)
        finally:
            if self._latest.get(uri) is superseded:
                del self._latest[uri]

    async def _plan_and_answer(self, uri: str, req: CompletionRequest, superseded: asyncio.Future,
                               t0: float, typing: bool = False) -> Answer:
        lang = req.document.language
        s = self.settings
        req.max_tokens, req.max_tokens_single_line = s.max_tokens, s.max_tokens_single_line
        req.time_budget_s = s.time_budget_ms / 1000 if s.time_budget_ms > 0 else None
        loop = asyncio.get_running_loop()
        plan = await loop.run_in_executor(self.context_pool, self.pipeline.plan, req)
        if not plan.mode.complete and not req.force:
            self.filler.share([])
            return self._done(t0, Answer("", Source.SKIPPED, why=plan.mode.why), lang)
        # the window's own cache first: the text around the cursor is the same whichever prompt would be chosen
        # below, and choosing asks the engine what it holds (a round trip when the engine is shared)
        hit = self.cache.lookup(uri, plan.prefix, plan.suffix)
        if hit is not None and (hit == "" or not self._running_has_more(uri, plan, hit)) and not superseded.done():
            # the fill that this request pre-empted goes on only as far as this prompt agrees with it
            self.filler.share(plan.prompt.tokens)
            if hit == "":   # the model said the hole ends here (see _store_final)
                return self._done(t0, Answer("", Source.CACHE, plan.mode.multiline, why="the code below follows"),
                                  lang)
            return self._done(t0, Answer(hit, Source.CACHE, plan.mode.multiline), lang)
        lead: list[int] = []
        if self.too_far(plan) and not (superseded.done() or self.pipeline is None):
            page = plan
            plan = await loop.run_in_executor(self.context_pool, self._choose_prompt, plan)
            if typing and plan.fast:
                lead = self._page_step(page)
        self.filler.share(plan.prompt.tokens)
        if superseded.done() or self.pipeline is None:
            return self._done(t0, Answer("", Source.SUPERSEDED, why="a newer request replaced it"), lang)
        return await self._answer(uri, plan, superseded, t0, lead)

    def request_waits(self, uri: str) -> bool:
        """Whether a request for this document is being answered (a prefetch for it then gives way)."""
        return uri in self._latest

    def requests_pending(self) -> bool:
        """Whether a request or a prefetch holds or waits for the model (the fill then waits its turn)."""
        return bool(self.jobs) or bool(self._latest)

    def _page_step(self, page: Plan) -> list[int]:
        """The page's tokens up to the cursor's segment as far as a fast answer evaluates them first, while
        typing (TYPING_PAGE_STEP more than are cached)."""
        stable = page.prompt.tokens[:page.prompt.stable]
        have = self.pipeline.engine.cached(stable)
        return stable[:have + TYPING_PAGE_STEP] if have < len(stable) else []

    def missing(self, plan: Plan) -> int:
        """Prompt tokens of a plan that neither the live cache nor the KV store holds."""
        return len(plan.prompt.tokens) - self.pipeline.engine.cached(plan.prompt.tokens)

    def too_far(self, plan: Plan) -> bool:
        """Whether evaluating what is not cached of this plan's prompt would take longer than the prompt budget
        (then a fast answer from the nearest lines is worth it)."""
        budget = self.settings.prompt_budget_ms
        if budget < 0 or self.pipeline is None or plan.fast:
            return False
        return self.pipeline.engine.prompt_seconds(self.missing(plan)) * 1000 > budget

    def _choose_prompt(self, plan: Plan) -> Plan:
        """The page's prompt is too far from cached: the best of it and the fast prompts (longest first) whose
        uncached part evaluates within the prompt budget; if none does, the one with least left to evaluate,
        a better one where it leaves hardly more (runs on the context thread)."""
        pipeline = self.pipeline
        typing = pipeline.plan_typing(plan)   # at rest: the page with the typing suffix, if it is shorter
        order = [plan] + ([typing] if typing is not plan else []) + \
            [pipeline.plan_fast(plan, n) for n in reversed(pipeline.fast_sizes())]   # best first
        missing = [self.missing(p) for p in order]
        log.debug("request at %s:%d: %s tokens (not cached)", plan.request.document.path.rsplit("/", 1)[-1],
                  plan.request.line + 1, ", ".join(f"{p.prompt.kind} {len(p.prompt.tokens)} ({m})"
                                                   for p, m in zip(order, missing)))
        budget = self.settings.prompt_budget_ms / 1000
        for p, m in zip(order, missing):
            if pipeline.engine.prompt_seconds(m) <= budget:
                return p
        least = min(missing)
        return next(p for p, m in zip(order, missing) if m <= least + FAST_GAIN)

    def _running_has_more(self, uri: str, plan: Plan, hit: str) -> bool:
        """Whether a generation still running for this place has written more than the cached answer (which
        was an early one): then it answers instead."""
        job = self.jobs.extending(uri, plan.prefix, plan.suffix)
        return job is not None and len(job.partial) - len(plan.prefix[len(job.plan.prefix):]) > len(hit)

    async def _answer(self, uri: str, plan: Plan, superseded: asyncio.Future, t0: float,
                      lead: list[int] | None = None) -> Answer:
        lang = plan.context.language
        loop = asyncio.get_running_loop()
        reuse = self.jobs.join_or_supersede(uri, plan)
        for attempt in (1, 2):
            job = reuse or self.start_job(uri, plan, lead=lead)
            typed = plan.prefix[len(job.plan.prefix):]
            got = await self._wait(job, superseded, typed, one_line=not plan.mode.multiline)
            if got == "diverged":
                reuse = None     # the generation went another way than the user: generate for this prefix
                continue
            if got == "gone" or superseded.done() or self.pipeline is None:
                return self._done(t0, Answer("", Source.SUPERSEDED, why="a newer request or edit replaced it"), lang)
            _, raw, gen, early = got
            truncated = early or (gen is not None and gen.stop_reason in CUT_SHORT)
            around = replace(plan.around, truncated=truncated,
                             ended=not early and gen is not None and gen.stop_reason in ENDS_HOLE)
            text = await loop.run_in_executor(self.context_pool, self.pipeline.finish_text, around, raw)
            self.cache.store(uri, plan.prefix, plan.suffix, text)
            self.prefetcher.shown(uri, plan, text, gen)
            self.offers.shown(uri, plan, job.plan, text)
            if early:
                self.offers.early(uri, plan, job, text)
            source = Source.REUSE if job is reuse else Source.FAST if job.plan.fast else Source.MODEL
            log.debug("answered (%s) after %.2fs: queue %.2fs, prompt %s", source, time.perf_counter() - t0,
                      job.queue_s, job.prompt_info)
            return self._done(t0, Answer(text, source, plan.mode.multiline), lang, job if job is not reuse else None)
        raise AssertionError("unreachable: the second attempt never reuses")

    async def _wait(self, job: Job, superseded: asyncio.Future, typed: str, one_line: bool):
        """The job's answer for this request (see `Job.take`), or "gone" once a newer request supersedes it."""
        job.waiters += 1
        job.cancel.set_yields(False)   # a request waits for it: it is not background work now
        try:
            while True:
                job.progress.clear()
                early = self.settings.early_answer_ms
                got = job.take(typed, one_line, early_s=early / 1000 if early > 0 else None,
                               line_s=max(early, self.settings.early_line_ms) / 1000 if early > 0 else None)
                if got != "wait":
                    return got
                progress = asyncio.ensure_future(job.progress.wait())
                try:
                    # woken by progress, the end, a newer request, or the clock (for the early answer)
                    await asyncio.wait([job.future, superseded, progress], timeout=0.05,
                                       return_when=asyncio.FIRST_COMPLETED)
                finally:
                    progress.cancel()
                # superseded: the newer request decides whether the job goes on (it may reuse it)
                if superseded.done():
                    return "gone"
        except asyncio.CancelledError:
            # $/cancelRequest: stop the model unless another request still waits for this generation
            if job.waiters == 1:
                job.cancel.set_keeping(self._near_cursor_keep(job.plan))
            raise
        finally:
            job.waiters -= 1
            if job.waiters == 0:   # answered, and going on to fill the cache: background work again
                job.cancel.set_yields(True)

    def start_job(self, uri: str, plan: Plan, base: str | None = None, lead: list[int] | None = None,
                  background: bool = False) -> Job:
        """A generation for this plan on the model thread. `base`: a prefetch's (see Job); `lead`: tokens of
        another prompt (the page's) to evaluate first, kept in the KV store; `background`: nobody waits for it
        yet (a prefetch, an offer)."""
        job = Job(uri, plan, base, background)
        if log.isEnabledFor(logging.DEBUG):
            log.debug("start a %s job at %s:%d (%s prompt, %d tokens, %d not cached%s)",
                      "prefetch" if base else "request", uri.rsplit("/", 1)[-1], plan.request.line + 1,
                      plan.prompt.kind, len(plan.prompt.tokens), self.missing(plan),
                      f"; the page to {len(lead)} first" if lead else "")
        pipeline = self.pipeline

        def run() -> Generation | None:
            job.started_at = time.perf_counter()
            if job.cancel.is_set():
                return None
            with self.stats.model_call():
                if lead:   # not cancelled: a step this short is worth finishing, the next keystroke goes on
                    try:
                        self.filler.stats.tokens["typing"] += pipeline.engine.prewarm(lead, keep=len(lead))
                    except BackendError as e:   # out of reach: the generation says so (or reaches a new one)
                        log.debug("the page's lead not evaluated: %s", e)
                    if job.cancel.is_set():
                        return None
                return pipeline.generate(plan, job.cancel, on_text=job.set_partial, on_prompt=job.set_prompt)

        job.future = asyncio.get_running_loop().run_in_executor(self.model_pool, run)
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
            self.offers.finished(job.uri, job)
            return
        self.stats.add_drafters(job.plan.request.document.language, gen.drafters)
        self.tasks.spawn(self._store_final(job, gen), "storing a generation's answer")

    async def _store_final(self, job: Job, gen: Generation) -> None:
        """Keep what a generation wrote in the cache (cache_writes.py; its post-processing runs on the context
        thread)."""
        if self.pipeline is None:
            return
        writes = await asyncio.get_running_loop().run_in_executor(self.context_pool, cache_writes, job.plan, gen)
        for w in writes:
            self.cache.store(job.uri, w.prefix, w.suffix, w.text, done=w.done)
            self.stats.continued += w.continued
        self.offers.finished(job.uri, job)

    def _done(self, t0: float, ans: Answer, language: str, job: Job | None = None) -> Answer:
        rec = Record(language, ans.source, time.perf_counter() - t0, multiline=ans.multiline,
                     shown_chars=len(ans.text))
        self.filler.kick()
        if job is not None and job.prompt_info is not None:
            rec.queue_s = job.queue_s
            rec.prompt_tokens, reused, rec.prompt_s = job.prompt_info
            rec.prompt_evaluated = rec.prompt_tokens - reused
            rec.prompt_restored = job.restored
            rec.page = job.plan.prompt.prefix_cut_lines
            rec.prompt = job.plan.prompt.digest()
            gen = job.future.result() if job.future.done() and not job.future.exception() else None
            if gen is not None:
                rec.tokens, rec.tok_s, rec.gen_s = len(gen.tokens), gen.tok_s, gen.gen_s
            else:   # answered before the generation ended (its line was done)
                rec.tokens = job.n_tokens
                rec.gen_s = time.perf_counter() - (job.started_at or t0) - rec.prompt_s
                rec.tok_s = rec.tokens / rec.gen_s if rec.gen_s > 0 else 0.0
        self.stats.add(rec)
        return ans

    # ---- edits and warm-up -----------------------------------------------------------------------------

    def on_edit(self, uri: str, text: str) -> None:
        """An edit supersedes the document's work unless it only typed what a generation is writing."""
        self.jobs.edited(uri, text, self._near_cursor_keep)

    def on_close(self, uri: str) -> None:
        self.jobs.cancel(uri)
        self.cache.forget(uri)
        self.filler.forget(uri)
        self.offers.forget(uri)
        self._last_request.pop(uri, None)
        self._cursor.pop(uri, None)

    def schedule_warmup(self, uri: str, req: CompletionRequest, edit: bool = False) -> None:
        """The user is here (an open, an edit, a cursor move): after the pause, fill ahead for this place."""
        self._cursor[uri] = req
        if self.pipeline is None or not self.settings.language_enabled(req.document.language):
            return
        self.filler.want(uri, req, edit=edit)

    def cursor_moved(self, uri: str, req: CompletionRequest) -> None:
        """The client says the cursor moved without an edit (tandem/didMoveCursor)."""
        self.filler.stats.cursor_moves += 1
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
            focus = self.filler.focus
            if self.filler.viewing and focus is not None and focus[0] == uri:
                self.filler.want(uri, cursor)
            return
        req = at_middle()
        if not self.settings.language_enabled(req.document.language):
            return
        self.filler.stats.views += 1
        self.filler.want(uri, req, view=True)

    def _near_cursor_keep(self, plan: Plan) -> int:
        """Tokens of this plan's prompt that a request a few keystrokes later will share: all before the
        cursor's line, give or take."""
        pipeline = self.pipeline
        if pipeline is None:
            return 0
        return max(0, len(pipeline.stable_tokens(plan)) - CURSOR_LINE_TOKENS)

    def cancel_all(self) -> None:
        self.filler.pre_empt()
        self.filler.cancel.set()
        self.jobs.cancel()

    # ---- what the protocol stage shows and counts -----------------------------------------------------

    def count_shown(self) -> None:
        self.stats.shown += 1

    def count_accepted(self, chars: int) -> None:
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
            "definition_index": {"documents": len(self.pipeline.index) if self.pipeline else 0,
                                 "limit": self.pipeline.index.limit if self.pipeline else None},
            "records": {"entries": len(self.stats.records), "limit": self.stats.records.maxlen},
            "jobs": len(self.jobs),
            "pending_requests": len(self._latest),
        }
        if self.pipeline is not None:
            engine = self.pipeline.engine
            out["memory"]["kv_store"] = engine.store_summary()
            out["memory"]["segment_tokens"] = {"entries": len(self.pipeline.segments),
                                               "limit": self.pipeline.segments.limit}
            out["memory"]["files_chosen"] = {"documents": len(self.pipeline.files_chosen),
                                             "limit": self.pipeline.files_chosen.limit}
            out["memory"]["page_outlines"] = {"entries": len(self.pipeline.outlines),
                                              "limit": self.pipeline.outlines.limit}
            out["draft_model"] = {"resident": engine.draft is not None, "decision": engine.draft_decision}
            out["engine"] = {"target_evaluated": engine.target.counters.evaluated,
                             "target_reused": engine.target.counters.reused, "warnings": list(engine.warnings)}
            if backend := engine.summary():
                out["backend"] = backend
        out["fill"] = self.filler.summary()
        out["offers"] = self.offers.summary()
        out["loads"] = self.loads
        out["background"] = {"running": len(self.tasks), "failed": self.tasks.failures}
        return out

    def shutdown(self) -> None:
        self.filler.stop()
        self.cancel_all()
        self.model_pool.shutdown(wait=True)
        self.context_pool.shutdown(wait=False)
        if self.pipeline is not None:
            self.pipeline.engine.close()
