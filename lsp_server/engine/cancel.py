"""The cancel flag a generation or a prefill watches between (and, through llama.cpp's abort callback, inside)
its decode calls; pure Python, so the service and the shared engine's client use it without loading llama.cpp."""
from __future__ import annotations

import threading
from typing import Callable


class Cancel(threading.Event):
    """A cancel flag that may spare a prefix: prompt evaluation goes on up to `keep_until` tokens after it is
    set, because the request that replaced this one shares them and would evaluate them next anyway."""

    def __init__(self, yields: bool = False):
        super().__init__()
        self.keep_until = 0
        # background work nobody waits for (a prefetch, an offer, a generation going on after its answer): where
        # one engine serves several windows, another window's request stops it (in-process the service does)
        self.yields = yields
        self._listeners: list[Callable[["Cancel"], None]] = []

    def set_yields(self, yields: bool) -> None:
        if yields != self.yields:
            self.yields = yields
            for fn in list(self._listeners):
                fn(self)

    def set_keeping(self, keep_until: int) -> None:
        self.keep_until = max(0, keep_until) if not self.is_set() else min(self.keep_until, max(0, keep_until))
        self.set()

    def set(self) -> None:
        super().set()
        for fn in list(self._listeners):
            fn(self)

    def listen(self, fn: Callable[["Cancel"], None]) -> Callable[[], None]:
        """Call `fn(self)` when it is set, each time its limit changes after (at once if set already) and when
        `yields` changes, in the setter's thread: a cancel that crosses a socket goes at once, no waiting thread
        polls for it. Returns what stops it."""
        self._listeners.append(fn)
        if self.is_set():
            fn(self)
        return lambda: self._listeners.remove(fn) if fn in self._listeners else None


def kept(cancel) -> int:
    """The prompt position up to which a set flag still lets evaluation go on (a plain Event spares none)."""
    return getattr(cancel, "keep_until", 0)


def stops_at(cancel, end: int) -> bool:
    """Whether a prompt chunk ending at position `end` should stop for this cancel flag."""
    return cancel.is_set() and end > kept(cancel)


class Cancelled(Exception):
    """The caller's cancel flag was set."""
