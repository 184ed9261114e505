"""Completions already shown, keyed by the text before the cursor: typing the characters of a shown
suggestion is answered with the rest of it, without the model. An empty entry (`done`) says that at exactly
this text nothing is to be suggested: the model ended its text there (its end of the middle, or the code
below again). Each entry keeps the gate's verdict on the answer it holds (gate.Verdict.explained), which a hit
reports with the rest it shows.
Bounded per document and in total."""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

PER_DOCUMENT = 32
TOTAL = 512


@dataclass(frozen=True)
class Entry:
    prefix_len: int
    prefix_hash: int
    suffix_hash: int
    text: str
    confidence: dict | None = None


class TypingCache:
    def __init__(self, per_document: int = PER_DOCUMENT, total: int = TOTAL):
        self.per_document, self.total = per_document, total
        self._docs: OrderedDict[str, list[Entry]] = OrderedDict()
        self.hits = self.lookups = 0

    def store(self, uri: str, prefix: str, suffix: str, text: str, done: bool = False,
              confidence: dict | None = None) -> None:
        if not text and not done:
            return
        entries = self._docs.setdefault(uri, [])
        entries.insert(0, Entry(len(prefix), hash(prefix), hash(suffix), text, confidence))
        del entries[self.per_document:]
        self._docs.move_to_end(uri)
        while sum(len(v) for v in self._docs.values()) > self.total:
            self._docs.popitem(last=False)

    def lookup(self, uri: str, prefix: str, suffix: str, count: bool = True) -> str | None:
        """The rest of a stored completion whose start the user has typed since, or None."""
        found = self.hit(uri, prefix, suffix, count)
        return None if found is None else found[0]

    def hit(self, uri: str, prefix: str, suffix: str, count: bool = True) -> tuple[str, dict | None] | None:
        """The rest of a stored completion whose start the user has typed since, with the gate's verdict on that
        completion; or None."""
        self.lookups += count
        suffix_hash = hash(suffix)
        for e in self._docs.get(uri, ()):
            if e.suffix_hash != suffix_hash or e.prefix_len > len(prefix):
                continue
            typed = prefix[e.prefix_len:]
            if not e.text:   # a `done` entry: only at its own prefix
                if typed:
                    continue
            elif len(typed) >= len(e.text) or not e.text.startswith(typed):
                continue
            if hash(prefix[:e.prefix_len]) == e.prefix_hash:
                self.hits += count
                return e.text[len(typed):], e.confidence
        return None

    def forget(self, uri: str) -> None:
        self._docs.pop(uri, None)

    def __len__(self) -> int:
        return sum(len(v) for v in self._docs.values())
