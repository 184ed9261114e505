"""The next suggestion, generated before it is asked for: after a block is shown, what follows it as if it were
accepted, so that typing it through or accepting it finds the next completion in the cache. Any real request
pre-empts it (a request that agrees with it joins it instead, see Jobs); its answer reaches the cache through
the service's store of every finished generation."""
from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Protocol

from ..context import Document
from ..engine import ENDS_HOLE, Generation, StopReason
from ..pipeline import CompletionRequest, Plan

if TYPE_CHECKING:
    from concurrent.futures import Executor

    from ..pipeline import Pipeline
    from .cache import TypingCache
    from .job import Job
    from .jobs import Jobs
    from .settings import Settings
    from .stats import ServerStats
    from .tasks import Background

log = logging.getLogger("tandem.prefetch")


class PrefetchPort(Protocol):
    """What a prefetch needs of the service (the CompletionService is one): the pipeline and settings of the
    moment, the context thread, the typing cache, the jobs, where background tasks and counts go; whether a
    request for the document waits, how far a plan's prompt is from cached, and starting a job."""
    pipeline: Pipeline | None
    settings: Settings
    context_pool: Executor
    cache: TypingCache
    jobs: Jobs
    tasks: Background
    stats: ServerStats

    def request_waits(self, uri: str) -> bool: ...
    def too_far(self, plan: Plan) -> bool: ...
    def start_job(self, uri: str, plan: Plan, base: str | None = None, background: bool = False) -> Job: ...


def worth_it(plan: Plan, shown: str, gen: Generation | None) -> bool:
    """A block was shown and the model did not say the hole ends there (then there is nothing to prefetch)."""
    return bool(shown) and plan.mode.multiline and gen is not None and gen.stop_reason not in ENDS_HOLE


def after_accept(plan: Plan, shown: str) -> CompletionRequest:
    """The request an editor sends once `shown` is accepted: the document with it, the cursor at its end."""
    prefix = plan.prefix + shown
    req = plan.request
    doc = Document(req.document.path, prefix + plan.suffix, req.document.language)
    line, col = prefix.count("\n"), len(prefix) - (prefix.rfind("\n") + 1)
    return replace(req, document=doc, line=line, col=col)


class Prefetcher:
    def __init__(self, service: PrefetchPort):
        self.svc = service

    def shown(self, uri: str, plan: Plan, text: str, gen: Generation | None) -> None:
        """An answer was shown: prefetch what follows it, where that is worth it and the setting is on."""
        if self.svc.settings.prefetch and worth_it(plan, text, gen):
            self.svc.tasks.spawn(self._run(uri, after_accept(plan, text), plan.prefix), "a prefetch")

    async def _run(self, uri: str, req: CompletionRequest, base: str) -> None:
        svc = self.svc
        pipeline = svc.pipeline
        if pipeline is None or svc.request_waits(uri) or svc.jobs.has(uri):
            return
        try:
            plan = await asyncio.get_running_loop().run_in_executor(svc.context_pool, pipeline.plan, req)
        except Exception as e:   # the edit that followed made the place invalid: nothing to prefetch
            log.debug("prefetch at %s:%d not planned: %s", uri.rsplit("/", 1)[-1], req.line + 1, e)
            return
        if (not plan.mode.complete or svc.request_waits(uri) or svc.jobs.has(uri) or svc.pipeline is not pipeline
                or svc.cache.lookup(uri, plan.prefix, plan.suffix, count=False) is not None or svc.too_far(plan)):
            return   # (a prompt far from cached: filling its page comes first)
        job = svc.start_job(uri, plan, base=base, background=True)
        try:
            gen = await asyncio.shield(job.future)
        except Exception as e:   # the engine's fault was the job's own to report; none to store
            log.debug("prefetch at %s:%d failed: %s", uri.rsplit("/", 1)[-1], req.line + 1, e)
            return
        if gen is None or gen.stop_reason == StopReason.CANCELLED:
            return
        svc.stats.prefetches += 1
        svc.stats.prefetch_tokens += len(gen.tokens)
