"""The model thread and its one queue of typed tasks (llama.cpp's server-queue in small): every call on the model
(a load, a request's generation, a prefetch's, an offer's, a fill step, a next edit) is a task with an id, a kind,
the document it is for and a cancel flag, posted here; one thread takes them one at a time, so at most one model
call runs at a time. The queue is each task's one owner: it is created here, cancelled here (by id, by document,
by kind, or all), and forgotten here once it ends.

Order: when the thread is free, the tasks cancelled meanwhile leave first, in the order they came, each resolved
with its `dropped` value without running (a cancelled task never starts); then the live task of highest priority
runs, the oldest first among equals: a load and a request before a prefetch, an offer or a next edit (unless a
request waits for that one), those before a fill step. A task's cancel flag is the one its work checks (the engine
stops within a chunk): cancelling sets it, whether the task waits or runs.

A task takes the models when it runs, not when it is asked: its work is handed the models loaded then (`models()`),
and a task asked of other models than those (a reload came between) is dropped instead, as is every task but a
load while none are loaded. A task whose work raises is logged at warning with its kind and counted
(`on_failure`); its future carries the exception to whoever waits for it."""
from __future__ import annotations

import asyncio
import concurrent.futures
import itertools
import logging
import threading
import weakref
from dataclasses import dataclass, field
from enum import IntEnum, StrEnum
from typing import Any, Callable, Collection

from ..engine import Cancel

log = logging.getLogger("tandem.service")

# at the interpreter's exit, each queue's thread stops what runs, drops what waits, and ends
_queues: weakref.WeakSet[ModelQueue] = weakref.WeakSet()


def _at_exit() -> None:
    for queue in list(_queues):
        queue.shutdown(wait=False)


threading._register_atexit(_at_exit)


class TaskKind(StrEnum):
    LOAD = "load"            # (re)loading the models
    REQUEST = "request"      # a request's generation
    PREFETCH = "prefetch"    # the next suggestion, generated as if the shown one were accepted (prefetch.py)
    OFFER = "offer"          # the page's answer where a shorter prompt's was shown (offer.py)
    FILL = "fill"            # a fill step: prompt tokens evaluated ahead (fill.py)
    NEXT_EDIT = "next_edit"  # the edit that follows the user's change (next_edit.py)


# what is asked of the models loaded now: a reload stops all of it (a load itself cannot stop part way)
WORK = frozenset(TaskKind) - {TaskKind.LOAD}


class Priority(IntEnum):
    """Lower runs first."""
    NOW = 0          # a load, a request (and background work a request waits for)
    BACKGROUND = 1   # a prefetch, an offer, a next edit
    IDLE = 2         # a fill step


PRIORITY = {TaskKind.LOAD: Priority.NOW, TaskKind.REQUEST: Priority.NOW, TaskKind.PREFETCH: Priority.BACKGROUND,
            TaskKind.OFFER: Priority.BACKGROUND, TaskKind.FILL: Priority.IDLE,
            TaskKind.NEXT_EDIT: Priority.BACKGROUND}


@dataclass(eq=False)
class Task:
    kind: TaskKind
    # runs on the model thread, handed the models loaded when it runs; its value is the task's result
    work: Callable[[Any], Any]
    # what its work checks (the engine within a chunk); none given: a fresh one, that gives way to other windows'
    # requests in a shared engine unless the kind is a request's or a load
    cancel: Cancel | None = None
    dropped: Any = None                          # the result of a task cancelled (or dropped) before it started
    # whether a request waits for it now (a prefetch or an offer a request joined): it then runs as one
    urgent: Callable[[], bool] | None = None
    what: str = ""                               # for the log
    uri: str | None = None                       # the document it is for (None: none)
    # the models it was asked of (its prompt's tokens are theirs): dropped where others are loaded when its turn
    # comes; None: whatever is loaded then (its work asks them for what it needs)
    made_for: Any = None
    id: int = -1                                 # given by the queue
    future: concurrent.futures.Future = field(default_factory=concurrent.futures.Future)

    def __post_init__(self) -> None:
        if self.cancel is None:
            self.cancel = Cancel(yields=PRIORITY[self.kind] is not Priority.NOW)

    @property
    def priority(self) -> Priority:
        if self.urgent is not None and self.urgent():
            return Priority.NOW
        return PRIORITY[self.kind]


class ModelQueue:
    def __init__(self, models: Callable[[], Any], on_failure: Callable[[str, BaseException], None] = lambda s, e: None,
                 name: str = "tandem-model"):
        self.models = models     # the models loaded now (None while none are), handed to each task's work
        self.on_failure = on_failure
        self._ids = itertools.count(1)
        self._waiting: list[Task] = []
        self._running: Task | None = None
        self._cond = threading.Condition()
        self._stopping = False
        self._name = name
        self._thread: threading.Thread | None = None   # started with the first task
        _queues.add(self)

    # ---- the event loop's side -------------------------------------------------------------------------

    def post(self, task: Task) -> Task:
        """Queue a task; its `future` resolves with the work's value (or `dropped`). Returns it, with its id."""
        with self._cond:
            if self._stopping:
                raise RuntimeError("cannot post a task to the model thread after shutdown")
            task.id = next(self._ids)
            self._waiting.append(task)
            self._cond.notify()
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name=self._name)
                self._thread.start()
        return task

    def submit(self, task: Task) -> asyncio.Future:
        """`post`, and the task's future as the running event loop's (await it there)."""
        return asyncio.wrap_future(self.post(task).future)

    def cancel(self, task_id: int | None = None, *, uri: str | None = None, kinds: Collection[TaskKind] | None = None,
               where: Callable[[Task], bool] | None = None, keep: int = 0) -> list[Task]:
        """Cancel the waiting or running tasks that match: this id, this document's, of these kinds, for which
        `where(task)` holds (each given one must hold; none given: every task). A waiting one never starts, a
        running one stops within a chunk (`keep`: the prompt tokens it still evaluates, see engine.Cancel).
        Returns those whose flag this set or lowered (not those cancelled before)."""
        with self._cond:
            out = []
            for t in self._tasks():
                if (task_id is None or t.id == task_id) and (uri is None or t.uri == uri) and \
                        (kinds is None or t.kind in kinds) and (where is None or where(t)):
                    before = t.cancel.keep_until if t.cancel.is_set() else None
                    t.cancel.set_keeping(keep)
                    if before is None or t.cancel.keep_until < before:
                        out.append(t)
            if out:
                self._cond.notify()
            return out

    def yield_to(self, uri: str) -> list[Task]:
        """A completion request for this document: the work nobody waits for stops (one model thread: it would
        hold it, a next edit's rewrite for seconds): every next edit, and the other documents' generations nobody
        waits for (this document's own are joined or superseded by the request, keeping what prompts share).
        Returns them."""
        return self.cancel(where=lambda t: t.kind is TaskKind.NEXT_EDIT or (
            t.uri != uri and t.kind in (TaskKind.REQUEST, TaskKind.PREFETCH, TaskKind.OFFER) and t.cancel.yields))

    def __len__(self) -> int:
        """Tasks waiting or running."""
        with self._cond:
            return len(self._tasks())

    def kinds(self) -> dict[str, int]:
        """Waiting or running tasks by kind (tandem/stats)."""
        with self._cond:
            out: dict[str, int] = {}
            for t in self._tasks():
                out[str(t.kind)] = out.get(str(t.kind), 0) + 1
            return out

    def shutdown(self, wait: bool = True) -> None:
        """No more tasks: the running one is cancelled (it stops within a chunk), those waiting are dropped; `wait`:
        until the thread ends."""
        with self._cond:
            self._stopping = True
            for t in self._tasks():
                t.cancel.set_keeping(0)
            self._cond.notify()
        thread = self._thread
        if wait and thread is not None and threading.current_thread() is not thread:
            thread.join()

    def _tasks(self) -> list[Task]:
        return self._waiting + ([self._running] if self._running is not None else [])

    # ---- the model thread ------------------------------------------------------------------------------

    def _next(self) -> Task | None:
        """The next task to run (None: stop), dropping the cancelled ones first."""
        with self._cond:
            while True:
                dropped = [t for t in self._waiting if t.cancel.is_set()]
                if dropped:
                    self._waiting = [t for t in self._waiting if not t.cancel.is_set()]
                    for t in dropped:
                        self._drop(t, "cancelled before it started")
                if self._waiting:
                    task = min(self._waiting, key=lambda t: t.priority)   # min() keeps the oldest of equals
                    self._waiting.remove(task)
                    self._running = task
                    return task
                if self._stopping:
                    return None
                self._cond.wait()

    @staticmethod
    def _drop(task: Task, why: str) -> None:
        if task.future.set_running_or_notify_cancel():
            task.future.set_result(task.dropped)
        log.debug("task %d (%s%s) %s", task.id, task.kind, f": {task.what}" if task.what else "", why)

    def _loop(self) -> None:
        while (task := self._next()) is not None:
            models = self.models()
            if task.kind is not TaskKind.LOAD and (
                    models is None or (task.made_for is not None and task.made_for is not models)):
                self._forget()
                self._drop(task, "asked of models no longer loaded")
                continue
            if not task.future.set_running_or_notify_cancel():
                self._forget()
                continue
            failed: BaseException | None = None
            try:
                value = task.work(models)
            except BaseException as e:   # every failure is the waiter's to handle; logged and counted here
                log.warning("the model thread's %s task failed%s: %s", task.kind,
                            f" ({task.what})" if task.what else "", e, exc_info=log.isEnabledFor(logging.DEBUG))
                self.on_failure(f"model.{task.kind}", e)
                value, failed = None, e
            # forgotten before its waiter hears of it: a task that is over is none of the queue's to cancel
            self._forget()
            if failed is not None:
                task.future.set_exception(failed)
            else:
                task.future.set_result(value)

    def _forget(self) -> None:
        with self._cond:
            self._running = None
