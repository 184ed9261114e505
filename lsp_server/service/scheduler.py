"""Which work the model does, in what order: one generation at a time on the model thread; the newest request
or edit for a document supersedes older work; a request whose prefix extends a running generation waits for
it instead; typing through a shown suggestion is answered from the cache; and when the user pauses, the next
prompt's stable part is evaluated ahead (a real request pre-empts that)."""
from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable

from ..engine import ContextFullError, Engine, Generation
from ..pipeline import CompletionRequest, Pipeline, Plan
from ..prompt import PromptBudget
from .cache import TypingCache
from .settings import Settings
from .stats import Record, ServerStats


@dataclass
class Answer:
    text: str
    source: str          # model | reuse | cache | skipped | superseded | not_ready | disabled
    multiline: bool = False
    why: str = ""


class CompletionError(Exception):
    """A request that failed for a reason the user should read (the server stays up)."""


class _Job:
    def __init__(self, uri: str, plan: Plan):
        self.uri, self.plan = uri, plan
        self.cancel = threading.Event()
        self.partial = ""            # the text generated so far, written by the model thread
        self.waiters = 0
        self.future: asyncio.Future | None = None

    def set_partial(self, text: str) -> None:
        self.partial = text

    def extends(self, prefix: str, suffix: str) -> bool:
        """True when `prefix` is this job's prefix plus text typed in agreement with what it has written."""
        p0 = self.plan.prefix
        if self.cancel.is_set() or suffix != self.plan.suffix or not prefix.startswith(p0):
            return False
        typed, part = prefix[len(p0):], self.partial
        n = min(len(typed), len(part))
        return typed[:n] == part[:n] and (len(typed) < len(part) or not self.future.done())

    def survives(self, text: str) -> bool:
        """Whether an edit that made the document `text` leaves this job's answer usable."""
        p0, s0 = self.plan.prefix, self.plan.suffix
        if len(text) < len(p0) + len(s0) or not text.startswith(p0) or not text.endswith(s0):
            return False
        return self.extends(text[:len(text) - len(s0)], s0)


def budget_of(s: Settings) -> PromptBudget:
    return PromptBudget(prefix_tokens=s.prefix_tokens, suffix_tokens=s.suffix_tokens,
                        context_tokens=s.context_tokens)


class CompletionService:
    def __init__(self, log: Callable[[str], None] = lambda m: None):
        self.log = log
        self.settings = Settings()
        self.pipeline: Pipeline | None = None
        self.load_error: str | None = None
        self.cache = TypingCache()
        self.stats = ServerStats()
        self.jobs: dict[str, list[_Job]] = {}
        # the model thread: every model call goes through it, so at most one generation runs at a time
        self.model_pool = ThreadPoolExecutor(1, thread_name_prefix="tandem-model")
        self.context_pool = ThreadPoolExecutor(1, thread_name_prefix="tandem-context")
        self._warm_cancel = threading.Event()
        self._warm_timer: asyncio.TimerHandle | None = None
        self._latest: dict[str, asyncio.Future] = {}   # uri -> set when a newer request for it arrives

    # ---- models and settings -------------------------------------------------------------------------

    async def load(self, settings: Settings, progress: Callable[[str], None]) -> str | None:
        """(Re)load the models for these settings on the model thread; returns an error message or None."""
        self.settings = settings
        self._cancel_all()
        loop = asyncio.get_running_loop()

        def work() -> Pipeline:
            old, self.pipeline = self.pipeline, None
            if old is not None:
                old.engine.close()
            cfg = settings.engine_config()
            progress(f"loading {cfg.target_path or 'the default target'} and "
                     f"{cfg.draft_path or 'the default draft'}")
            engine = Engine(cfg, log=progress)
            progress(f"models loaded ({engine.target.path}"
                     f"{', draft ' + engine.draft.path if engine.draft else ', no draft'})")
            return Pipeline(engine, budget_of(settings))

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
            engine: Engine = self.pipeline.engine
            engine.cfg.speculation = settings.speculation
            engine.controller.draft_min, engine.controller.draft_max = settings.draft_min, settings.draft_max
            self.pipeline.budget = budget_of(settings)
        self.cache = TypingCache()

    @property
    def ready(self) -> bool:
        return self.pipeline is not None

    # ---- requests --------------------------------------------------------------------------------------

    async def complete(self, uri: str, req: CompletionRequest) -> Answer:
        t0 = time.perf_counter()
        self._cancel_warmup()
        lang = req.document.language
        if self.pipeline is None:
            return self._done(t0, Answer("", "not_ready", why=self.load_error or "models are loading"), lang)
        if not self.settings.language_enabled(lang):
            return self._done(t0, Answer("", "disabled", why=f"completions are off for {lang}"), lang)
        # this request supersedes the document's older ones: they return empty now, whatever their job does
        loop = asyncio.get_running_loop()
        superseded = loop.create_future()
        previous = self._latest.get(uri)
        if previous is not None and not previous.done():
            previous.set_result(True)
        self._latest[uri] = superseded
        try:
            return await self._plan_and_answer(uri, req, superseded, t0)
        finally:
            if self._latest.get(uri) is superseded:
                del self._latest[uri]

    async def _plan_and_answer(self, uri: str, req: CompletionRequest, superseded: asyncio.Future,
                               t0: float) -> Answer:
        lang = req.document.language
        s = self.settings
        req.max_tokens, req.max_tokens_single_line = s.max_tokens, s.max_tokens_single_line
        req.time_budget_s = s.time_budget_ms / 1000 if s.time_budget_ms > 0 else None
        plan = await asyncio.get_running_loop().run_in_executor(self.context_pool, self.pipeline.plan, req)
        if not plan.mode.complete:
            return self._done(t0, Answer("", "skipped", why=plan.mode.why), lang)
        if superseded.done() or self.pipeline is None:
            return self._done(t0, Answer("", "superseded", why="a newer request replaced it"), lang)
        hit = self.cache.lookup(uri, plan.prefix, plan.suffix)
        if hit:
            return self._done(t0, Answer(hit, "cache", plan.mode.multiline), lang)

        return await self._answer(uri, plan, superseded, t0)

    async def _answer(self, uri: str, plan: Plan, superseded: asyncio.Future, t0: float) -> Answer:
        lang = plan.context.language
        loop = asyncio.get_running_loop()
        reuse = None
        for job in list(self.jobs.get(uri, ())):
            if reuse is None and job.extends(plan.prefix, plan.suffix):
                reuse = job
            else:
                job.cancel.set()     # superseded by this newer request
        for attempt in (1, 2):
            job = reuse or self._start(uri, plan)
            gen = await self._wait(job, superseded)
            if superseded.done() or gen is None or gen.stop_reason == "cancelled" or self.pipeline is None:
                return self._done(t0, Answer("", "superseded", why="a newer request or edit replaced it"), lang)
            completion = await loop.run_in_executor(self.context_pool, self.pipeline.finish, job.plan, gen)
            self.cache.store(uri, job.plan.prefix, job.plan.suffix, completion.text)
            text = completion.text
            if job is reuse:
                typed = plan.prefix[len(job.plan.prefix):]
                if not text.startswith(typed) or len(text) <= len(typed):
                    reuse = None     # the generation went another way than the user: generate for this prefix
                    continue
                text = text[len(typed):]
            return self._done(t0, Answer(text, "reuse" if job is reuse else "model", plan.mode.multiline), lang,
                              gen if job is not reuse else None)
        raise AssertionError("unreachable: the second attempt never reuses")

    async def _wait(self, job: _Job, superseded: asyncio.Future) -> Generation | None:
        """The job's generation, or None as soon as a newer request supersedes this one."""
        job.waiters += 1
        try:
            done, _ = await asyncio.wait([job.future, superseded], return_when=asyncio.FIRST_COMPLETED)
            # superseded: the newer request decides whether the job goes on (it may reuse it)
            return job.future.result() if job.future in done else None
        except asyncio.CancelledError:
            # $/cancelRequest: stop the model unless another request still waits for this generation
            if job.waiters == 1:
                job.cancel.set()
            raise
        finally:
            job.waiters -= 1

    def _start(self, uri: str, plan: Plan) -> _Job:
        job = _Job(uri, plan)
        pipeline = self.pipeline

        def run() -> Generation | None:
            if job.cancel.is_set():
                return None
            return pipeline.generate(plan, job.cancel, on_text=job.set_partial)

        job.future = asyncio.get_running_loop().run_in_executor(self.model_pool, run)
        self.jobs.setdefault(uri, []).append(job)
        job.future.add_done_callback(lambda f: self._finished(job, f))
        return job

    def _finished(self, job: _Job, fut: asyncio.Future) -> None:
        jobs = self.jobs.get(job.uri, [])
        if job in jobs:
            jobs.remove(job)
        if not jobs:
            self.jobs.pop(job.uri, None)
        if fut.cancelled() or fut.exception() is not None:
            return
        gen = fut.result()
        if gen is None:
            return
        if gen.stop_reason == "cancelled":
            self.stats.wasted_tokens += len(gen.tokens)
        else:
            self.stats.add_drafters(job.plan.request.document.language, gen.drafters)

    def _done(self, t0: float, ans: Answer, language: str, gen: Generation | None = None) -> Answer:
        rec = Record(language, ans.source, time.perf_counter() - t0, multiline=ans.multiline,
                     shown_chars=len(ans.text))
        if gen is not None:
            rec.prompt_tokens, rec.prompt_evaluated = gen.prompt_tokens, gen.prompt_evaluated
            rec.tokens, rec.tok_s = len(gen.tokens), gen.tok_s
        self.stats.add(rec)
        return ans

    # ---- edits and warm-up -----------------------------------------------------------------------------

    def on_edit(self, uri: str, text: str) -> None:
        """An edit supersedes the document's work unless it only typed what a generation is writing."""
        for job in list(self.jobs.get(uri, ())):
            if not job.survives(text):
                job.cancel.set()

    def on_close(self, uri: str) -> None:
        for job in self.jobs.get(uri, ()):
            job.cancel.set()
        self.cache.forget(uri)

    def schedule_warmup(self, req: CompletionRequest) -> None:
        """After the pause, evaluate the stable part of the prompt at this cursor (no generation)."""
        self._cancel_warmup()
        if self.pipeline is None or self.settings.warmup_pause_ms < 0:
            return
        loop = asyncio.get_running_loop()
        self._warm_timer = loop.call_later(self.settings.warmup_pause_ms / 1000,
                                           lambda: asyncio.ensure_future(self._warmup(req)))

    async def _warmup(self, req: CompletionRequest) -> None:
        pipeline = self.pipeline
        if pipeline is None or any(self.jobs.values()) or not self.settings.language_enabled(req.document.language):
            return
        cancel = self._warm_cancel = threading.Event()
        loop = asyncio.get_running_loop()
        try:
            plan = await loop.run_in_executor(self.context_pool, pipeline.plan, req)
        except Exception:   # a position the edit made invalid, a parse that failed: nothing to warm
            return
        if cancel.is_set() or not plan.mode.complete:
            return
        tokens = pipeline.stable_tokens(plan)
        evaluated = await loop.run_in_executor(
            self.model_pool, lambda: 0 if cancel.is_set() else pipeline.engine.prewarm(tokens, cancel))
        self.stats.warmups += 1
        self.stats.warmup_tokens += evaluated

    def _cancel_warmup(self) -> None:
        if self._warm_timer is not None:
            self._warm_timer.cancel()
            self._warm_timer = None
        self._warm_cancel.set()

    def _cancel_all(self) -> None:
        self._cancel_warmup()
        for jobs in self.jobs.values():
            for job in jobs:
                job.cancel.set()

    def summary(self, include_records: bool = False) -> dict:
        return self.stats.summary(self.cache.hits, self.cache.lookups, include_records)

    def shutdown(self) -> None:
        self._cancel_all()
        self.model_pool.shutdown(wait=True)
        self.context_pool.shutdown(wait=False)
        if self.pipeline is not None:
            self.pipeline.engine.close()
