"""Every task of the model thread has one owner, the queue (service/queue.py), through the service's trails with a
scripted engine (tests/scripted.py): a reload stops every task asked of the old models and none runs on them once
they are closed, shutdown stops the running one and drops the waiting ones, a newer next-edit ask for a document
stops the older one whatever it is doing, a request stops the next edits, and an answer of nothing is remembered
for the document's version. No model file; the real server's reload is in tests/protocol/test_next_edit_lsp.py."""
from __future__ import annotations

import asyncio
import threading
from dataclasses import replace

import pytest

from lsp_server.context import Document
from lsp_server.engine import StopReason
from lsp_server.pipeline import CompletionRequest, Pipeline
from lsp_server.service.queue import Task, TaskKind
from lsp_server.service.scheduler import CompletionService
from lsp_server.service.settings import Settings
from scripted import ScriptedEngine

pytestmark = pytest.mark.asyncio

URI = "file:///t/orders.py"
DOC = ("def summarize(orders):\n"
       "    total = 0\n"
       "    for order in orders:\n"
       "        total += order.price\n"
       "    return total\n")
RENAMED = DOC.replace("    total = 0", "    amount = 0")


@pytest.fixture(autouse=True)
def model_path(monkeypatch):
    """Candidate edits (context/candidates/) are off here, so that each ask is the free rewrite: one task of the
    model thread whose prompt these tests script."""
    monkeypatch.setattr("lsp_server.service.next_edit.plan_candidates", lambda *args: [])


def region_of(prompt: str) -> str:
    return prompt.split("```python\n")[-2].split("```")[0]


def rename_all(prompt: str) -> str:
    if "```python\n" not in prompt:   # a completion's prompt (FIM)
        return "return w * h\n"
    return region_of(prompt).replace("total", "amount") + "```"


class Closable(ScriptedEngine):
    """A scripted engine that says when it is used after `close()` (the real one's memory is freed then)."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.closed = False
        self.after_close: list[str] = []
        self.stops: list[StopReason] = []   # each generation's end

    def close(self) -> None:
        self.closed = True

    def _used(self, what: str) -> None:
        if self.closed:
            self.after_close.append(what)
            raise RuntimeError(f"{what} on a closed engine")

    def tokenize(self, text: str, special: bool = False) -> list[int]:
        self._used("tokenize")
        return super().tokenize(text, special)

    def prewarm(self, tokens, cancel=None, draft=False, keep=0) -> int:
        self._used("prewarm")
        return super().prewarm(tokens, cancel, draft, keep)

    def generate(self, req, cancel=None):
        self._used("generate")
        gen = super().generate(req, cancel)
        self.stops.append(gen.stop_reason)
        return gen


def scripted(step_s: float = 0.0002, answer=rename_all) -> Closable:
    return Closable(answer, by_prompt=True, token_s=0.00002, step_s=step_s)


SETTINGS = Settings(early_answer_ms=0, time_budget_ms=0, prompt_budget_ms=-1, prefetch=False, warmup_pause_ms=-1)


@pytest.fixture
def service():
    made: list[CompletionService] = []

    def make(engine: Closable) -> CompletionService:
        svc = CompletionService()
        svc.settings = SETTINGS
        svc.pipeline = Pipeline(engine, SETTINGS.prompt_budget(), SETTINGS.fast_prefix_tokens)
        made.append(svc)
        return svc

    yield make
    for svc in made:
        svc.shutdown()


@pytest.fixture
def reloading(monkeypatch, service):
    """A service whose loads make scripted engines, one for each load, in this order."""
    async def make(*engines: Closable) -> CompletionService:
        queue = list(engines)
        monkeypatch.setattr("lsp_server.service.model.make_engine", lambda *args, **kw: queue.pop(0))
        svc = service(engines[0])
        svc.pipeline = None
        assert await svc.load(SETTINGS, lambda msg: None) is None
        assert svc.pipeline.engine is engines[0]
        return svc
    return make


def renamed(svc: CompletionService, uri: str = URI) -> str:
    """The user renames `total` on line 1."""
    svc.next_edits.opened(uri, DOC)
    svc.on_edit(uri, RENAMED)
    return RENAMED


def ask(svc: CompletionService, text: str = RENAMED, version: int = 1, line: int = 1, uri: str = URI):
    return asyncio.ensure_future(svc.next_edits.ask(uri, text, version, line, "orders.py", "python"))


def hold(svc: CompletionService) -> threading.Event:
    """A task that holds the model thread until the event is set (the tasks posted meanwhile wait)."""
    release, started = threading.Event(), threading.Event()
    svc.model.queue.post(Task(TaskKind.REQUEST, lambda *models: (started.set(), release.wait(10))[1],
                              what="holding"))
    assert started.wait(5)
    return release


async def until(cond, timeout_s: float = 10.0) -> bool:
    for _ in range(int(timeout_s / 0.005)):
        if cond():
            return True
        await asyncio.sleep(0.005)
    return cond()


# ---- a reload (a model setting changed) -------------------------------------------------------------------------

async def test_a_reload_while_a_next_edit_waits_never_runs_it_on_the_closed_models(reloading):
    old, new = scripted(), scripted()
    svc = await reloading(old, new)
    renamed(svc)
    release = hold(svc)
    try:
        asked = ask(svc)
        assert await until(lambda: svc.model.queue.kinds() == {"request": 1, "next_edit": 1})
        reload = asyncio.ensure_future(svc.load(replace(SETTINGS, context_size=2048), lambda msg: None))
        assert await until(lambda: "load" in svc.model.queue.kinds())
    finally:
        release.set()
    assert await asyncio.wait_for(reload, 10) is None and svc.pipeline.engine is new
    assert await asyncio.wait_for(asked, 10) is None   # asked of the old models: it never ran
    assert old.closed and old.after_close == [] and old.generations == []
    assert new.generations == [] and svc.stats.failures == {}
    # asked again, the new models answer
    p = await asyncio.wait_for(ask(svc, version=2), 10)
    assert p is not None and (p.edit.start, p.edit.end) == (3, 5) and len(new.generations) == 1


async def test_a_reload_while_a_next_edit_runs_stops_it_and_closes_the_models_after_it(reloading):
    old, new = scripted(step_s=0.02), scripted()   # a character each 20 ms: the answer takes about 3 s
    svc = await reloading(old, new)
    renamed(svc)
    asked = ask(svc)
    assert await until(lambda: old.generations)   # its prompt is in: it is writing
    reload = asyncio.ensure_future(svc.load(replace(SETTINGS, context_size=2048), lambda msg: None))
    assert await asyncio.wait_for(reload, 10) is None and svc.pipeline.engine is new
    assert await asyncio.wait_for(asked, 10) is None
    assert old.stops == [StopReason.CANCELLED]   # stopped while writing, not run to its end first
    assert old.closed and old.after_close == [] and svc.stats.failures == {}


async def test_a_reload_stops_every_kind_of_task_asked_of_the_old_models(reloading):
    """A request's generation, a fill step and a next edit waiting behind another task: none of them runs once the
    models they were asked of are closed."""
    old, new = scripted(), scripted()
    svc = await reloading(old, new)
    renamed(svc)
    release = hold(svc)
    try:
        plan = svc.pipeline.plan(CompletionRequest(Document("/t/orders.py", RENAMED, "python"), 4, 4))
        job = svc.start_job(URI, plan, TaskKind.PREFETCH)
        asked = ask(svc)
        assert await until(lambda: svc.model.queue.kinds() == {"request": 1, "prefetch": 1, "next_edit": 1})
        reload = asyncio.ensure_future(svc.load(replace(SETTINGS, context_size=2048), lambda msg: None))
        assert await until(lambda: "load" in svc.model.queue.kinds())
    finally:
        release.set()
    assert await asyncio.wait_for(reload, 10) is None
    assert await asyncio.wait_for(job.future, 10) is None and await asyncio.wait_for(asked, 10) is None
    assert old.after_close == [] and old.generations == [] and new.generations == []
    assert svc.stats.failures == {}


# ---- shutdown ------------------------------------------------------------------------------------------------

async def test_shutdown_stops_the_running_next_edit_and_drops_the_waiting_work(service):
    engine = scripted(step_s=0.02)
    svc = service(engine)
    renamed(svc)
    other = "file:///t/other.py"
    renamed(svc, other)
    running, waiting = ask(svc), ask(svc, uri=other)
    assert await until(lambda: engine.generations and svc.model.queue.kinds() == {"next_edit": 2})
    svc.shutdown()   # returns once the model thread has ended
    assert engine.stops == [StopReason.CANCELLED] and len(engine.generations) == 1
    assert await asyncio.wait_for(running, 5) is None and await asyncio.wait_for(waiting, 5) is None


# ---- overlapping asks for one document --------------------------------------------------------------------------

@pytest.mark.parametrize("then", ["edit", "close", "request"])
async def test_two_overlapping_asks_leave_one_prediction_which_an_edit_close_or_request_stops(service, then):
    """The editor's request and an invoked code action ask for one document together: both find the text work
    (on the context thread) before them. The older ask gives way to the newer before it posts anything, so what
    stops the document's prediction stops all of it."""
    engine = scripted(step_s=0.02)
    svc = service(engine)
    text = renamed(svc)
    context_free = threading.Event()
    svc.model.context_pool.submit(context_free.wait, 10)   # the context thread is busy: both asks queue there
    first, second = ask(svc, line=1), ask(svc, line=3)
    await asyncio.sleep(0.05)
    context_free.set()
    assert await until(lambda: engine.generations)
    if then == "edit":
        svc.on_edit(URI, text.replace("for order", "for o"))
    elif then == "close":
        svc.on_close(URI)
    else:   # a completion request elsewhere: the next edits give way
        got = await svc.complete("file:///t/area.py", CompletionRequest(
            Document("/t/area.py", "def area(w, h):\n    \n", "python"), 1, 4))
        assert got.source == "model"
    assert await asyncio.wait_for(first, 10) is None and await asyncio.wait_for(second, 10) is None
    assert await until(lambda: len(svc.model.queue) == 0)
    assert len(engine.generations) == 1 + (then == "request")   # one prediction ran (and the request)
    assert engine.stops[0] == StopReason.CANCELLED, engine.stops   # stopped, not left to write its answer
    assert svc.next_edits.summary()["proposed"] == 0


async def test_a_newer_ask_for_the_document_stops_the_running_one(service):
    engine = scripted(step_s=0.02)
    svc = service(engine)
    renamed(svc)
    first = ask(svc, line=1)
    assert await until(lambda: engine.generations)
    second = ask(svc, line=3)
    assert await asyncio.wait_for(first, 10) is None
    p = await asyncio.wait_for(second, 10)
    assert p is not None and engine.stops[0] == StopReason.CANCELLED and len(engine.generations) == 2


# ---- a request goes first ------------------------------------------------------------------------------------

async def test_a_completion_request_stops_a_running_prediction_of_any_document(service):
    """The completion trail stops the work nobody waits for: a rewrite holding the model thread for seconds stops,
    its ask answers nothing, and it is counted as yielded."""
    engine = scripted(step_s=0.05)
    svc = service(engine)
    text = renamed(svc)
    asked = ask(svc, text)
    assert await until(lambda: svc.model.queue.kinds() == {"next_edit": 1} and engine.generations)
    got = await svc.complete(URI, CompletionRequest(Document("/t/orders.py", text, "python"), 4, 16))
    assert got.source == "model"
    assert await asyncio.wait_for(asked, 10) is None
    assert engine.stops[0] == StopReason.CANCELLED
    s = svc.next_edits.summary()
    assert s["yielded"] == 1 and s["proposed"] == 0


# ---- nothing to propose, remembered ------------------------------------------------------------------------------

async def test_nothing_to_propose_is_remembered_for_the_version(service):
    engine = scripted(answer=lambda prompt: region_of(prompt) + "```")   # the region unchanged: a copy
    svc = service(engine)
    text = renamed(svc)
    assert await ask(svc, text, version=4) is None
    assert len(engine.generations) == 1
    assert await ask(svc, text, version=4, line=3) is None   # the same version: answered at once
    assert len(engine.generations) == 1
    s = svc.next_edits.summary()
    assert (s["requested"], s["empty"], s["remembered"], s["filtered"]) == (2, 1, 1, {"copy": 1})
    # the document changes: asked again
    changed = text.replace("for order in orders:", "for order in list(orders):")
    svc.on_edit(URI, changed)
    assert await ask(svc, changed, version=5) is None and len(engine.generations) == 2
