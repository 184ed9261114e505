"""Whose job uses the models next in the engine process, when several wait: a window's request before any fill
ahead, and among requests the one of the window that asked last (the user is typing there now; a window that
asked earlier has likely moved on); jobs of the same rank in the order they came."""
from __future__ import annotations

import itertools
import threading
from contextlib import contextmanager
from typing import Callable, Iterator

REQUEST, FILL = 0, 1


class Turns:
    def __init__(self):
        self._cond = threading.Condition()
        self._busy = False
        self._seq = itertools.count()
        self._waiting: list[tuple[int, Callable[[], tuple]]] = []

    @contextmanager
    def turn(self, rank: Callable[[], tuple]) -> Iterator[None]:
        """Hold the models for a job; `rank` is asked whenever a turn is given (smallest first), so a window that
        asks again meanwhile moves its waiting request forward."""
        me = (next(self._seq), rank)
        with self._cond:
            self._waiting.append(me)
            while self._busy or self._next() is not me:
                self._cond.wait()
            self._waiting.remove(me)
            self._busy = True
        try:
            yield
        finally:
            with self._cond:
                self._busy = False
                self._cond.notify_all()

    def _next(self):
        return min(self._waiting, key=lambda w: (*w[1](), w[0]))

    def waiting(self) -> int:
        with self._cond:
            return len(self._waiting)
