"""The model thread and its one queue of typed tasks (llama.cpp's server-queue in small): every call on the model
(a load, a request's generation, a prefetch's, an offer's, a fill step) is a task with an id, a kind and a
cancel flag, posted here; one thread takes them one at a time, so at most one model call runs at a time.

Order: when the thread is free, the tasks cancelled meanwhile leave first, in the order they came, each resolved
with its `dropped` value without running (a cancelled task never starts); then the live task of highest priority
runs, the oldest first among equals: a load and a request before a prefetch, an offer or a next edit (unless a
request waits for that one), those before a fill step. A task's cancel flag is the one its work checks (the engine stops within
a chunk): cancelling by id sets it, whether the task waits or runs. A task whose work raises is logged at warning
with its kind and counted (`on_failure`); its future carries the exception to whoever waits for it."""
from __future__ import annotations

import asyncio
import concurrent.futures
import itertools
import logging
import threading
import weakref
from dataclasses import dataclass, field
from enum import IntEnum, StrEnum
from typing import Any, Callable

log = logging.getLogger("tandem.service")

# at the interpreter's exit, each queue's thread runs what is left and ends (as a ThreadPoolExecutor's does)
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


class Priority(IntEnum):
    """Lower runs first."""
    NOW = 0          # a load, a request (and background work a request waits for)
    BACKGROUND = 1   # a prefetch, an offer
    IDLE = 2         # a fill step


PRIORITY = {TaskKind.LOAD: Priority.NOW, TaskKind.REQUEST: Priority.NOW, TaskKind.PREFETCH: Priority.BACKGROUND,
            TaskKind.OFFER: Priority.BACKGROUND, TaskKind.FILL: Priority.IDLE,
            TaskKind.NEXT_EDIT: Priority.BACKGROUND}


@dataclass(eq=False)
class Task:
    kind: TaskKind
    work: Callable[[], Any]                      # runs on the model thread; its value is the task's result
    cancel: threading.Event = field(default_factory=threading.Event)
    dropped: Any = None                          # the result of a task cancelled before it started
    # whether a request waits for it now (a prefetch or an offer a request joined): it then runs as one
    urgent: Callable[[], bool] | None = None
    what: str = ""                               # for the log
    id: int = -1                                 # given by the queue
    future: concurrent.futures.Future = field(default_factory=concurrent.futures.Future)

    @property
    def priority(self) -> Priority:
        if self.urgent is not None and self.urgent():
            return Priority.NOW
        return PRIORITY[self.kind]


class ModelQueue:
    def __init__(self, on_failure: Callable[[str, BaseException], None] = lambda stage, e: None,
                 name: str = "tandem-model"):
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

    def cancel(self, task_id: int, keep: int = 0) -> bool:
        """Cancel a waiting or running task by id (`keep`: the prompt tokens a running one still evaluates, where
        its flag takes them, see engine.Cancel). False when no such task is waiting or running."""
        with self._cond:
            task = next((t for t in self._waiting + [self._running] if t is not None and t.id == task_id), None)
            if task is None:
                return False
            if hasattr(task.cancel, "set_keeping"):
                task.cancel.set_keeping(keep)
            else:
                task.cancel.set()
            self._cond.notify()
            return True

    def __len__(self) -> int:
        """Tasks waiting or running."""
        with self._cond:
            return len(self._waiting) + (self._running is not None)

    def kinds(self) -> dict[str, int]:
        """Waiting or running tasks by kind (tandem/stats)."""
        with self._cond:
            out: dict[str, int] = {}
            for t in self._waiting + ([self._running] if self._running is not None else []):
                out[str(t.kind)] = out.get(str(t.kind), 0) + 1
            return out

    def shutdown(self, wait: bool = True) -> None:
        """No more tasks; those waiting still run (or leave, cancelled); `wait`: until the thread ends."""
        with self._cond:
            self._stopping = True
            self._cond.notify()
        thread = self._thread
        if wait and thread is not None and threading.current_thread() is not thread:
            thread.join()

    # ---- the model thread ------------------------------------------------------------------------------

    def _next(self) -> Task | None:
        """The next task to run (None: stop), dropping the cancelled ones first."""
        with self._cond:
            while True:
                dropped = [t for t in self._waiting if t.cancel.is_set()]
                if dropped:
                    self._waiting = [t for t in self._waiting if not t.cancel.is_set()]
                    for t in dropped:
                        if t.future.set_running_or_notify_cancel():
                            t.future.set_result(t.dropped)
                        log.debug("task %d (%s%s) cancelled before it started", t.id, t.kind,
                                  f": {t.what}" if t.what else "")
                if self._waiting:
                    task = min(self._waiting, key=lambda t: t.priority)   # min() keeps the oldest of equals
                    self._waiting.remove(task)
                    self._running = task
                    return task
                if self._stopping:
                    return None
                self._cond.wait()

    def _loop(self) -> None:
        while (task := self._next()) is not None:
            try:
                if not task.future.set_running_or_notify_cancel():
                    continue
                try:
                    value = task.work()
                except BaseException as e:   # every failure is the waiter's to handle; logged and counted here
                    log.warning("the model thread's %s task failed%s: %s", task.kind,
                                f" ({task.what})" if task.what else "", e, exc_info=log.isEnabledFor(logging.DEBUG))
                    self.on_failure(f"model.{task.kind}", e)
                    task.future.set_exception(e)
                else:
                    task.future.set_result(value)
            finally:
                with self._cond:
                    self._running = None
