"""The model thread's queue of typed tasks (service/queue.py): priority order, the oldest first among equals,
cancel by id, a cancelled task never runs, a failing task logged at warning and counted."""
from __future__ import annotations

import asyncio
import logging
import threading

import pytest

from lsp_server.engine import Cancel
from lsp_server.service.queue import ModelQueue, Priority, Task, TaskKind
from lsp_server.service.stats import ServerStats


@pytest.fixture
def queue():
    q = ModelQueue()
    yield q
    q.shutdown()


def hold(queue: ModelQueue) -> tuple[threading.Event, Task]:
    """A task that holds the model thread until the event is set (the tasks posted meanwhile wait)."""
    release, started = threading.Event(), threading.Event()
    task = queue.post(Task(TaskKind.REQUEST, lambda: (started.set(), release.wait(5))[1], what="holding"))
    assert started.wait(5)
    return release, task


def test_tasks_run_by_priority_and_the_oldest_first_among_equals(queue):
    release, _ = hold(queue)
    ran: list[str] = []
    tasks = [queue.post(Task(kind, lambda name=name: ran.append(name))) for kind, name in [
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
    prefetch = queue.post(Task(TaskKind.PREFETCH, lambda: ran.append("prefetch"), urgent=lambda: waiters[0] > 0))
    request = queue.post(Task(TaskKind.REQUEST, lambda: ran.append("request")))
    assert prefetch.priority is Priority.BACKGROUND
    waiters[0] = 1   # a request joined the prefetch
    assert prefetch.priority is Priority.NOW
    release.set()
    request.future.result(5)
    assert ran == ["prefetch", "request"]


def test_a_task_cancelled_by_id_never_runs_and_resolves_with_its_dropped_value(queue):
    release, _ = hold(queue)
    ran: list[str] = []
    step = queue.post(Task(TaskKind.FILL, lambda: ran.append("step") or 7, Cancel(), dropped=0))
    other = queue.post(Task(TaskKind.FILL, lambda: ran.append("other") or 3))
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
    task = queue.post(Task(TaskKind.REQUEST, lambda: ran.append("ran"), cancel))
    cancel.set_keeping(5)   # set from outside the queue (an edit, a newer request)
    release.set()
    assert task.future.result(5) is None and ran == []


def test_cancel_by_id_reaches_the_running_task_through_its_flag(queue):
    started = threading.Event()
    cancel = Cancel()

    def work() -> str:
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
    queue = ModelQueue(on_failure=lambda stage, e: stats.failed(stage, e))
    try:
        def broken():
            raise ValueError("a planning bug")

        with caplog.at_level(logging.WARNING, logger="tandem.service"):
            task = queue.post(Task(TaskKind.FILL, broken, what="page"))
            with pytest.raises(ValueError, match="a planning bug"):
                task.future.result(5)
        assert stats.failures == {"model.fill": 1}
        assert stats.summary(0, 0)["failures"] == {"model.fill": 1}
        assert any(r.levelno == logging.WARNING and "fill" in r.getMessage() and "a planning bug" in r.getMessage()
                   for r in caplog.records), caplog.records
        after = queue.post(Task(TaskKind.REQUEST, lambda: "still running"))
        assert after.future.result(5) == "still running"   # the thread goes on
    finally:
        queue.shutdown()


@pytest.mark.asyncio
async def test_submit_gives_the_event_loop_s_future():
    queue = ModelQueue()
    try:
        assert await queue.submit(Task(TaskKind.LOAD, lambda: threading.current_thread().name)) == "tandem-model"
        gone = Cancel()
        gone.set()
        assert await queue.submit(Task(TaskKind.FILL, lambda: 1, gone, dropped=0)) == 0
    finally:
        queue.shutdown()
    with pytest.raises(RuntimeError):
        queue.post(Task(TaskKind.FILL, lambda: 1))
    await asyncio.sleep(0)
