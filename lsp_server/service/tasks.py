"""Background tasks of the service (a fill, a prefetch, a store after a generation, a model load): each is kept
referenced until it ends (asyncio keeps only a weak one), and an exception that ends one is logged with what the
task was doing, never dropped."""
from __future__ import annotations

import asyncio
import logging
from typing import Coroutine

log = logging.getLogger("tandem.service")


class Background:
    def __init__(self):
        self._tasks: set[asyncio.Task] = set()
        self.failures = 0    # tasks that ended with an exception (tandem/stats)

    def spawn(self, coro: Coroutine, what: str) -> asyncio.Task:
        task = asyncio.ensure_future(coro)
        task.set_name(what)
        self._tasks.add(task)
        task.add_done_callback(self._ended)
        return task

    def _ended(self, task: asyncio.Task) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        e = task.exception()
        if e is not None:
            self.failures += 1
            log.error("%s failed: %s", task.get_name(), e, exc_info=e)

    def __len__(self) -> int:
        return len(self._tasks)
