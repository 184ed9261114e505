"""What the model serves now (llama.cpp's server-context in small): the loaded pipeline and the settings of the
moment, the model thread's task queue (queue.py) and the context thread, and what a plan's prompt costs: how
much of it is not cached, whether that evaluates within the prompt budget, and which prompt a request takes
where it does not. The service, the fill and the offers read it; only the service changes it."""
from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

from ..engine import make_engine
from ..pipeline import Pipeline, Plan
from .job import CURSOR_LINE_TOKENS
from .queue import WORK, ModelQueue, Task, TaskKind
from .settings import Settings
from .stats import ServerStats

log = logging.getLogger("tandem.service")

# where no prompt evaluates within the budget, a better one is taken over the one with least to evaluate when it
# leaves at most this many tokens more
FAST_GAIN = 32
# while typing, a fast answer first evaluates this many more tokens of its page (about 0.4 s here): the page
# fills across the keystrokes, where a fill that waits for an idle model would never run and a fast prompt's
# own evaluation is lost at every keystroke
TYPING_PAGE_STEP = 32


class Model:
    def __init__(self, stats: ServerStats):
        self.stats = stats
        self.settings = Settings()
        self.pipeline: Pipeline | None = None   # what tasks use; None while none are loaded (or they load)
        self.load_error: str | None = None
        # the models open now, whether or not the service uses them: only the model thread changes it (a load's
        # task closes it), so a second reload asked while the first loads closes what the first opened
        self._open: Pipeline | None = None
        # the model thread: every model call is a task of its queue, so at most one runs at a time; each is
        # handed the pipeline loaded when it runs
        self.queue = ModelQueue(lambda: self.pipeline, on_failure=lambda stage, e: stats.failed(stage, e))
        self.context_pool = ThreadPoolExecutor(1, thread_name_prefix="tandem-context")
        self._loads = 0

    async def on_context(self, fn: Callable[..., Any], *args) -> Any:
        """`fn(*args)` on the context thread (planning, post-processing)."""
        return await asyncio.get_running_loop().run_in_executor(self.context_pool, fn, *args)

    # ---- loading ---------------------------------------------------------------------------------------

    async def load(self, settings: Settings, progress: Callable[[str], None]) -> str | None:
        """(Re)load the models for these settings on the model thread; returns an error message or None. Every
        task asked of the models loaded so far is cancelled, and none runs on them again: the queue hands each
        task the pipeline loaded when it runs, and none is while this loads (requests answer "loading")."""
        self.settings = settings
        self._loads += 1
        mine = self._loads
        self.pipeline = None
        self.queue.cancel(kinds=WORK)

        def work(_) -> Pipeline:
            # every task asked of the old models has left the thread (the running one stopped within a chunk)
            old, self._open = self._open, None
            if old is not None:
                old.engine.close()
            cfg, backend = settings.engine_config(), settings.backend_config()
            progress(f"connecting to {backend.url}" if backend else
                     f"loading {cfg.target_path or 'the default target'} and {cfg.draft_path or 'the default draft'}")
            engine = make_engine(cfg, backend, log=progress, kind=settings.engine,
                                 idle_s=settings.engine_idle_minutes * 60)
            progress(engine.loaded())
            self._open = Pipeline(engine, settings.prompt_budget(), settings.fast_prefix_tokens)
            return self._open

        try:
            pipeline = await self.queue.submit(Task(TaskKind.LOAD, work, what="loading the models"))
            self.load_error = None
        except Exception as e:   # a broken model file, an unusable build: the server stays up and says why
            # (the queue logged it at warning and counted it: model.load)
            self.load_error = str(e) or type(e).__name__
            pipeline = None
        if mine == self._loads:   # (a newer load asked meanwhile closes this one's models on the model thread)
            self.pipeline = pipeline
        return self.load_error

    def apply(self, settings: Settings) -> None:
        """Settings that take effect without reloading the models."""
        self.settings = settings
        if self.pipeline is not None:
            self.pipeline.engine.tune(settings.speculation, settings.draft_min, settings.draft_max,
                                      settings.kv_store_mib, settings.cache_reuse)
            self.pipeline.budget = settings.prompt_budget()
            self.pipeline.fast_tokens = settings.fast_prefix_tokens

    # ---- what a prompt costs ---------------------------------------------------------------------------

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

    def choose_prompt(self, plan: Plan) -> Plan:
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

    def page_step(self, page: Plan) -> list[int]:
        """The page's tokens up to the cursor's segment as far as a fast answer evaluates them first, while
        typing (TYPING_PAGE_STEP more than are cached)."""
        stable = page.prompt.tokens[:page.prompt.stable]
        have = self.pipeline.engine.cached(stable)
        return stable[:have + TYPING_PAGE_STEP] if have < len(stable) else []

    def near_cursor_keep(self, plan: Plan) -> int:
        """Tokens of this plan's prompt that a request a few keystrokes later will share: all before the
        cursor's line, give or take."""
        pipeline = self.pipeline
        if pipeline is None:
            return 0
        return max(0, len(pipeline.stable_tokens(plan)) - CURSOR_LINE_TOKENS)

    # ---- what it holds ---------------------------------------------------------------------------------

    def summary(self, out: dict) -> None:
        """Into a tandem/stats summary: the pipeline's bounded structures, the models, the engine, the backend,
        and the model thread's tasks."""
        pipeline = self.pipeline
        memory = out["memory"]
        memory["definition_index"] = {"documents": len(pipeline.index) if pipeline else 0,
                                      "limit": pipeline.index.limit if pipeline else None}
        memory["model_tasks"] = self.queue.kinds()
        if pipeline is None:
            return
        engine = pipeline.engine
        memory["kv_store"] = engine.store_summary()
        memory["segment_tokens"] = {"entries": len(pipeline.segments), "limit": pipeline.segments.limit}
        memory["files_chosen"] = {"documents": len(pipeline.files_chosen), "limit": pipeline.files_chosen.limit}
        memory["page_outlines"] = {"entries": len(pipeline.outlines), "limit": pipeline.outlines.limit}
        out["draft_model"] = {"resident": engine.draft is not None, "decision": engine.draft_decision}
        out["engine"] = {"target_evaluated": engine.target.counters.evaluated,
                         "target_reused": engine.target.counters.reused, "warnings": list(engine.warnings)}
        if backend := engine.summary():
            out["backend"] = backend

    def shutdown(self) -> None:
        """The running task stops within a chunk and the waiting ones are dropped; then the models are closed."""
        self.queue.shutdown(wait=True)
        self.context_pool.shutdown(wait=False)
        open_ = self._open or self.pipeline   # (a pipeline set from outside a load: the tests' scripted ones)
        if open_ is not None:
            open_.engine.close()
