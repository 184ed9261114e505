"""The model thread's queue of typed tasks (service/queue.py): priority order, the oldest first among equals,
cancel by id, by document, by kind, a request's yield, a cancelled task never runs, the models handed to a task
when it runs (a task asked of other models dropped), shutdown stopping the running task and dropping the waiting
ones, a failing task logged at warning and counted."""
from __future__ import annotations

import asyncio
import logging
import threading

import pytest

from lsp_server.engine import Cancel
from lsp_server.service.queue import ModelQueue, Priority, Task, TaskKind
from lsp_server.service.stats import ServerStats


MODELS = "the models loaded now"


@pytest.fixture
def queue():
    q = ModelQueue(lambda: MODELS)
    yield q
    q.shutdown()


def hold(queue: ModelQueue) -> tuple[threading.Event, Task]:
    """A task that holds the model thread until the event is set (the tasks posted meanwhile wait)."""
    release, started = threading.Event(), threading.Event()
    task = queue.post(Task(TaskKind.REQUEST, lambda models: (started.set(), release.wait(5))[1], what="holding"))
    assert started.wait(5)
    return release, task


def test_tasks_run_by_priority_and_the_oldest_first_among_equals(queue):
    release, _ = hold(queue)
    ran: list[str] = []
    tasks = [queue.post(Task(kind, lambda models, name=name: ran.append(name))) for kind, name in [
        (TaskKind.FILL, "fill"), (TaskKind.PREFETCH, "prefetch"), (TaskKind.REQUEST, "request 1"),
        (TaskKind.OFFER, "offer"), (TaskKind.REQUEST, "request 2"), (TaskKind.LOAD, "load")]]
    assert len(queue) == 7 and queue.kinds()["request"] == 3
    release.set()
    for t in tasks:
        t.future.result(5)
    assert ran == ["request 1", "request 2", "load", "prefetch", "offer", "fill"]
    assert [t.id for t in tasks] == sorted(t.id for t in tasks) and len({t.id for t in tasks}) == len(tasks)


def test_background_work_a_request_waits_for_runs_as_a_request(queue):
    release, _ = hold(queue)
    ran: list[str] = []
    waiters = [0]
    prefetch = queue.post(Task(TaskKind.PREFETCH, lambda models: ran.append("prefetch"),
                               urgent=lambda: waiters[0] > 0))
    request = queue.post(Task(TaskKind.REQUEST, lambda models: ran.append("request")))
    assert prefetch.priority is Priority.BACKGROUND
    waiters[0] = 1   # a request joined the prefetch
    assert prefetch.priority is Priority.NOW
    release.set()
    request.future.result(5)
    assert ran == ["prefetch", "request"]


def test_a_task_cancelled_by_id_never_runs_and_resolves_with_its_dropped_value(queue):
    release, _ = hold(queue)
    ran: list[str] = []
    step = queue.post(Task(TaskKind.FILL, lambda models: ran.append("step") or 7, Cancel(), dropped=0))
    other = queue.post(Task(TaskKind.FILL, lambda models: ran.append("other") or 3))
    assert queue.cancel(step.id) and step.cancel.is_set()
    release.set()
    assert step.future.result(5) == 0 and other.future.result(5) == 3
    assert ran == ["other"]
    assert not queue.cancel(step.id)   # gone: nothing to cancel
    assert not queue.cancel(12345)


def test_a_task_whose_flag_is_set_before_its_turn_never_runs(queue):
    release, _ = hold(queue)
    ran: list[str] = []
    cancel = Cancel()
    task = queue.post(Task(TaskKind.REQUEST, lambda models: ran.append("ran"), cancel))
    cancel.set_keeping(5)   # set from outside the queue (an edit, a newer request)
    release.set()
    assert task.future.result(5) is None and ran == []


def test_cancel_by_id_reaches_the_running_task_through_its_flag(queue):
    started = threading.Event()
    cancel = Cancel()

    def work(models) -> str:
        started.set()
        while not cancel.is_set():
            cancel.wait(0.01)
        return f"stopped, keeping {cancel.keep_until}"

    task = queue.post(Task(TaskKind.REQUEST, work, cancel))
    assert started.wait(5)
    assert queue.cancel(task.id, keep=12)
    assert task.future.result(5) == "stopped, keeping 12"


def test_a_failing_task_is_logged_at_warning_counted_and_its_waiter_gets_the_exception(caplog):
    stats = ServerStats()
    queue = ModelQueue(lambda: MODELS, on_failure=lambda stage, e: stats.failed(stage, e))
    try:
        def broken(models):
            raise ValueError("a planning bug")

        with caplog.at_level(logging.WARNING, logger="tandem.service"):
            task = queue.post(Task(TaskKind.FILL, broken, what="page"))
            with pytest.raises(ValueError, match="a planning bug"):
                task.future.result(5)
        assert stats.failures == {"model.fill": 1}
        assert stats.summary(0, 0)["failures"] == {"model.fill": 1}
        assert any(r.levelno == logging.WARNING and "fill" in r.getMessage() and "a planning bug" in r.getMessage()
                   for r in caplog.records), caplog.records
        after = queue.post(Task(TaskKind.REQUEST, lambda models: "still running"))
        assert after.future.result(5) == "still running"   # the thread goes on
    finally:
        queue.shutdown()


@pytest.mark.asyncio
async def test_submit_gives_the_event_loop_s_future():
    queue = ModelQueue(lambda: MODELS)
    try:
        assert await queue.submit(Task(TaskKind.LOAD, lambda models: threading.current_thread().name)) == \
            "tandem-model"
        gone = Cancel()
        gone.set()
        assert await queue.submit(Task(TaskKind.FILL, lambda models: 1, gone, dropped=0)) == 0
    finally:
        queue.shutdown()
    with pytest.raises(RuntimeError):
        queue.post(Task(TaskKind.FILL, lambda models: 1))
    await asyncio.sleep(0)


def test_cancel_by_document_and_by_kind_reaches_waiting_and_running_tasks(queue):
    release, holding = hold(queue)
    posted = {(uri, kind): queue.post(Task(kind, lambda models: "ran", uri=uri, dropped="dropped"))
              for uri in ("a", "b") for kind in (TaskKind.REQUEST, TaskKind.FILL, TaskKind.NEXT_EDIT)}
    assert set(queue.cancel(uri="a")) == {posted["a", k] for k in (TaskKind.REQUEST, TaskKind.FILL,
                                                                   TaskKind.NEXT_EDIT)}
    assert queue.cancel(kinds=(TaskKind.NEXT_EDIT,)) == [posted["b", TaskKind.NEXT_EDIT]]   # a's is cancelled
    assert queue.cancel(uri="a") == []   # nothing more to cancel there
    assert not holding.cancel.is_set()
    release.set()
    results = {key: t.future.result(5) for key, t in posted.items()}
    assert results == {("a", TaskKind.REQUEST): "dropped", ("a", TaskKind.FILL): "dropped",
                       ("a", TaskKind.NEXT_EDIT): "dropped", ("b", TaskKind.REQUEST): "ran",
                       ("b", TaskKind.FILL): "ran", ("b", TaskKind.NEXT_EDIT): "dropped"}
    # every task, the running one's flag included
    started = threading.Event()
    running = queue.post(Task(TaskKind.REQUEST, lambda models: (started.set(), running.cancel.wait(5))[1]))
    assert started.wait(5) and queue.cancel(keep=7) == [running]
    assert running.future.result(5) is True and running.cancel.keep_until == 7


def test_a_request_stops_every_next_edit_and_the_other_documents_generations_nobody_waits_for(queue):
    release, _ = hold(queue)
    waited = [0]
    tasks = {name: queue.post(Task(kind, lambda models: "ran", uri=uri, dropped="stopped",
                                   cancel=Cancel(yields=yields), urgent=lambda: waited[0] > 0))
             for name, kind, uri, yields in [
                 ("other's prefetch", TaskKind.PREFETCH, "b", True),
                 ("other's answered request", TaskKind.REQUEST, "b", True),   # answered, writing on for the cache
                 ("other's waited request", TaskKind.REQUEST, "b", False),
                 ("own prefetch", TaskKind.PREFETCH, "a", True),              # joined or superseded by the request
                 ("own next edit", TaskKind.NEXT_EDIT, "a", True),
                 ("other's next edit", TaskKind.NEXT_EDIT, "b", True),
                 ("other's fill", TaskKind.FILL, "b", False)]}             # the fill gives way by priority
    stopped = queue.yield_to("a")
    assert {name for name, t in tasks.items() if t in stopped} == {
        "other's prefetch", "other's answered request", "own next edit", "other's next edit"}
    assert all(t.cancel.keep_until == 0 for t in stopped)
    release.set()
    assert {name: t.future.result(5) for name, t in tasks.items()} == {
        "other's prefetch": "stopped", "other's answered request": "stopped", "other's waited request": "ran",
        "own prefetch": "ran", "own next edit": "stopped", "other's next edit": "stopped", "other's fill": "ran"}


def test_a_task_is_handed_the_models_loaded_when_it_runs_and_dropped_if_other_models_are():
    loaded = ["first"]
    queue = ModelQueue(lambda: loaded[0])
    try:
        release, _ = hold(queue)
        seen: list = []
        any_models = queue.post(Task(TaskKind.NEXT_EDIT, lambda models: seen.append(models) or "ran"))
        for_first = queue.post(Task(TaskKind.REQUEST, lambda models: seen.append(models) or "ran", made_for="first",
                                    dropped="dropped"))
        loaded[0] = "second"   # a reload between the ask and the task's turn
        for_second = queue.post(Task(TaskKind.FILL, lambda models: seen.append(models) or "ran", made_for="second"))
        release.set()
        assert (any_models.future.result(5), for_first.future.result(5), for_second.future.result(5)) == \
            ("ran", "dropped", "ran")
        assert seen == ["second", "second"]
        # while none are loaded, only a load runs (and is handed None)
        loaded[0] = None
        none = queue.post(Task(TaskKind.REQUEST, lambda models: "ran", dropped="dropped"))
        load = queue.post(Task(TaskKind.LOAD, lambda models: f"loaded over {models}"))
        assert none.future.result(5) == "dropped" and load.future.result(5) == "loaded over None"
    finally:
        queue.shutdown()


def test_shutdown_stops_the_running_task_and_drops_the_waiting_ones():
    queue = ModelQueue(lambda: MODELS)
    started = threading.Event()

    def running_until_cancelled(models) -> str:
        started.set()
        return "stopped" if running.cancel.wait(5) else "ran to its end"

    running = queue.post(Task(TaskKind.NEXT_EDIT, running_until_cancelled))
    assert started.wait(5)
    ran: list[str] = []
    waiting = [queue.post(Task(kind, lambda models: ran.append("ran"), dropped="dropped"))
               for kind in (TaskKind.REQUEST, TaskKind.LOAD, TaskKind.FILL)]
    queue.shutdown(wait=True)
    assert running.future.result(0) == "stopped"
    assert [t.future.result(0) for t in waiting] == ["dropped"] * 3 and ran == []
