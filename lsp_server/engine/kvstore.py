"""KV states of earlier prompts, kept in RAM so that a return to a page or a document restores its cache instead
of evaluating it again. Copying a sequence's state out of llama.cpp and back costs ~4 ms for a 1,500-token
page on this CPU (41 MiB), evaluating it again ~17 s; one unified llama.cpp cache with a sequence per page was
no faster to use and would reserve the whole budget up front (docs/server.md: "The KV store").

Least recently used first out, within a byte budget and a number of entries."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MAX_ENTRIES = 256


@dataclass
class Snapshot:
    tokens: np.ndarray     # int32: the tokens whose KV the blob holds, from position 0
    blob: np.ndarray       # uint8: llama_state_seq_get_data's bytes
    used: int = 0          # LRU clock

    @property
    def nbytes(self) -> int:
        return int(self.blob.nbytes)


@dataclass
class StoreCounters:
    saves: int = 0
    restores: int = 0
    restored_tokens: int = 0
    evictions: int = 0
    refused: int = 0       # a state larger than the whole budget


def shared(a: np.ndarray, b: np.ndarray) -> int:
    n = min(len(a), len(b))
    if not n:
        return 0
    diff = np.flatnonzero(a[:n] != b[:n])
    return int(diff[0]) if diff.size else n


class KVStore:
    def __init__(self, limit_bytes: int, max_entries: int = MAX_ENTRIES):
        self.limit_bytes, self.max_entries = max(0, int(limit_bytes)), max_entries
        self.entries: list[Snapshot] = []
        self.counters = StoreCounters()
        self._clock = 0

    @property
    def nbytes(self) -> int:
        return sum(e.nbytes for e in self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def best(self, tokens: list[int] | np.ndarray) -> tuple[Snapshot | None, int]:
        """The entry sharing the longest start with `tokens`, and how many tokens it shares."""
        want = np.asarray(tokens, dtype=np.int32)
        best, n = None, 0
        for e in list(self.entries):   # the context thread may ask while the model thread adds
            k = shared(e.tokens, want)
            if k > n:
                best, n = e, k
        return best, n

    def covers(self, tokens: list[int]) -> bool:
        """Whether an entry already holds the KV of all these tokens."""
        want = np.asarray(tokens, dtype=np.int32)
        return any(len(e.tokens) >= len(want) and shared(e.tokens, want) == len(want) for e in self.entries)

    def touch(self, entry: Snapshot) -> None:
        self._clock += 1
        entry.used = self._clock

    def add(self, tokens: list[int], blob: np.ndarray) -> Snapshot | None:
        if blob.nbytes > self.limit_bytes:
            self.counters.refused += 1
            return None
        snap = Snapshot(np.asarray(tokens, dtype=np.int32), blob)
        # an entry that is a start of the new one holds nothing the new one does not
        self.entries = [e for e in self.entries
                        if not (len(e.tokens) <= len(snap.tokens) and shared(e.tokens, snap.tokens) == len(e.tokens))]
        self.touch(snap)
        self.entries.append(snap)
        self.counters.saves += 1
        self._fit()
        return snap

    def drop(self, entry: Snapshot) -> None:
        self.entries = [e for e in self.entries if e is not entry]

    def resize(self, limit_bytes: int) -> None:
        self.limit_bytes = max(0, int(limit_bytes))
        self._fit()

    def clear(self) -> None:
        self.entries = []

    def _fit(self) -> None:
        while self.entries and (self.nbytes > self.limit_bytes or len(self.entries) > self.max_entries):
            oldest = min(self.entries, key=lambda e: e.used)
            self.drop(oldest)
            self.counters.evictions += 1

    def summary(self) -> dict:
        c = self.counters
        return {"entries": len(self.entries), "max_entries": self.max_entries, "bytes": self.nbytes,
                "limit_bytes": self.limit_bytes, "tokens": int(sum(len(e.tokens) for e in self.entries)),
                "saves": c.saves, "restores": c.restores, "restored_tokens": c.restored_tokens,
                "evictions": c.evictions, "refused": c.refused}
