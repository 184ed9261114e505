"""A ring of the code the user recently edited or looked at in other files (as llama.vim's ring of chunks):
chunks of about CHUNK_LINES lines around an edit, a cursor, or a range the editor shows, at most MAX_CHUNKS, the
oldest evicted first. A new chunk replaces the ones whose lines it shares by more than SIMILARITY (a Dice
coefficient over their lines: typing on in one place keeps one chunk there, the latest). The service records
into it; the context stage reads a snapshot. No LSP here: paths and 0-based lines."""
from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass, field

CHUNK_LINES = 32
MAX_CHUNKS = 16
SIMILARITY = 0.9
MIN_CHUNK_CHARS = 24     # a chunk of blank lines and braces tells the model nothing


@dataclass(frozen=True)
class Chunk:
    path: str
    start: int                      # 0-based first line
    text: str
    kind: str = "view"              # edit | view
    at: float = field(default=0.0, compare=False)

    @property
    def lines(self) -> list[str]:
        return self.text.split("\n")


def similarity(a: str, b: str) -> float:
    """Dice coefficient of two texts' lines (stripped, blank lines left out): 1.0 for the same lines."""
    la = Counter(l.strip() for l in a.split("\n") if l.strip())
    lb = Counter(l.strip() for l in b.split("\n") if l.strip())
    n = sum(la.values()) + sum(lb.values())
    if n == 0:
        return 1.0
    return 2.0 * sum((la & lb).values()) / n


def lines_of(text: str, start: int, end: int) -> tuple[int, list[str]]:
    """Lines [start, end) of text, clipped to it; splits no further than needed."""
    start = max(0, start)
    parts = text.split("\n", end)
    return start, parts[start:end]


class Ring:
    def __init__(self, max_chunks: int = MAX_CHUNKS, chunk_lines: int = CHUNK_LINES, similar: float = SIMILARITY):
        self.max_chunks = max_chunks
        self.chunk_lines = chunk_lines
        self.similar = similar
        self._chunks: list[Chunk] = []    # oldest first
        self._lock = threading.Lock()
        self.version = 0                  # counts changes

    def add(self, path: str, text: str, line: int, kind: str = "view") -> Chunk | None:
        """The chunk of lines around `line` (0-based) of a file's text."""
        half = self.chunk_lines // 2
        return self.add_range(path, text, line - half, line - half + self.chunk_lines, kind)

    def add_range(self, path: str, text: str, start: int, end: int, kind: str = "view") -> Chunk | None:
        """Lines [start, end) of a file's text (a longer range keeps its middle, chunk_lines long)."""
        if end - start > self.chunk_lines:
            mid = (start + end) // 2
            start, end = mid - self.chunk_lines // 2, mid - self.chunk_lines // 2 + self.chunk_lines
        start, lines = lines_of(text, start, max(start + 1, end))
        while lines and not lines[-1].strip():
            lines.pop()
        while lines and not lines[0].strip():
            lines.pop(0)
            start += 1
        body = "\n".join(lines)
        if len(body.strip()) < MIN_CHUNK_CHARS:
            return None
        chunk = Chunk(path, start, body, kind, time.monotonic())
        with self._lock:
            kept = [c for c in self._chunks if not (c.text == body or similarity(c.text, body) > self.similar)]
            kept.append(chunk)
            self._chunks = kept[-self.max_chunks:]
            self.version += 1
        return chunk

    def chunks(self) -> tuple[Chunk, ...]:
        """A snapshot, newest first."""
        with self._lock:
            return tuple(reversed(self._chunks))

    def forget(self, path: str) -> None:
        with self._lock:
            self._chunks = [c for c in self._chunks if c.path != path]
            self.version += 1

    def __len__(self) -> int:
        return len(self._chunks)
