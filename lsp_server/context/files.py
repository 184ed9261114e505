"""A project's files as context reads them: where its root is, which files are inside it, and their text.

Everything the context stage reads from disk is read here, so that nothing the Excluder refuses (secrets,
ignored files, anything outside the root) is ever opened, and nothing too large or binary is read whole. What is
read, and what is derived from it elsewhere, is cached by (path, mtime, size) or by the text: a keystroke asks
again for the same files."""
from __future__ import annotations

import os
import stat
import threading
from collections import OrderedDict
from typing import Callable

from .exclude import Excluder

MAX_FILE_BYTES = 256 << 10
MAX_CACHED = 256            # files whose text and definitions are kept
MAX_CACHED_CHARS = 16 << 20  # ... and their texts, in all
MARKERS = (".git", "pyproject.toml", "package.json", "go.mod", "Cargo.toml")


class Lru:
    """Bounded by entries, and by `size(value)` in total where given."""

    def __init__(self, limit: int = MAX_CACHED, size: Callable[[object], int] | None = None, max_size: int = 0):
        self.limit = limit
        self.size, self.max_size, self.total = size, max_size, 0
        self._d: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key):
        with self._lock:
            hit = self._d.get(key)
            if hit is not None:
                self._d.move_to_end(key)
            return hit

    def put(self, key, value) -> None:
        with self._lock:
            if self.size is not None:
                old = self._d.get(key)
                self.total += self.size(value) - (self.size(old) if old is not None else 0)
            self._d[key] = value
            self._d.move_to_end(key)
            while len(self._d) > self.limit or (self.size is not None and self.total > self.max_size
                                                 and len(self._d) > 1):
                _, gone = self._d.popitem(last=False)
                if self.size is not None:
                    self.total -= self.size(gone)

    def clear(self) -> None:
        with self._lock:
            self._d.clear()
            self.total = 0

    def __len__(self) -> int:
        return len(self._d)


# the caches of what files hold, wherever it is derived (definitions, imports): clear_caches() forgets them all,
# as a test that rewrites files within one mtime tick needs
_file_caches: list[Lru] = []


def file_cache(**kw) -> Lru:
    cache = Lru(**kw)
    _file_caches.append(cache)
    return cache


def clear_caches() -> None:
    for c in _file_caches:
        c.clear()


_texts = file_cache(size=lambda v: len(v[1] or ""), max_size=MAX_CACHED_CHARS)   # path -> (stamp, text | None)


def _read_file(path: str) -> str | None:
    """The one place that opens a file for its content: UTF-8 text, or None (binary, undecodable, unreadable)."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except OSError:
        return None
    if len(data) > MAX_FILE_BYTES or b"\0" in data[:8192]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _stamp(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return st.st_mtime_ns, st.st_size


def read_source(path: str, excluder: Excluder) -> str | None:
    """A file's text for context, or None: excluded, missing, over MAX_FILE_BYTES, binary. Cached by mtime."""
    if excluder.excluded(path):
        return None
    stamp = _stamp(path)
    if stamp is None or stamp[1] > MAX_FILE_BYTES:
        return None
    hit = _texts.get(path)
    if hit is not None and hit[0] == stamp:
        return hit[1]
    text = _read_file(path)
    _texts.put(path, (stamp, text))
    return text


class ProjectFiles:
    """A workspace root and the questions about its files that every language's import resolution asks."""

    def __init__(self, root: str, excluder: Excluder | None = None):
        self.root = os.path.realpath(root)
        self.excluder = excluder or Excluder(self.root)

    def inside(self, path: str) -> bool:
        rel = os.path.relpath(os.path.realpath(path), self.root)
        return not (rel == ".." or rel.startswith(".." + os.sep) or os.path.isabs(rel))

    def shown(self, path: str) -> str:
        """The path as the prompt names it: relative to the root where it is under it."""
        if not os.path.isabs(path):
            return path
        for p in (os.path.abspath(path), os.path.realpath(path)):
            rel = os.path.relpath(p, self.root)
            if not (rel == ".." or rel.startswith(".." + os.sep)):
                return rel.replace(os.sep, "/")
        return path

    def source(self, path: str, open_texts: dict[str, str] | None = None) -> str | None:
        """A file's text: the editor's where it is open (newer than the disk), else the disk's."""
        if open_texts and path in open_texts:
            return None if self.excluder.excluded(path) else open_texts[path]
        return read_source(path, self.excluder)

    def found(self, path: str) -> str | None:
        """The path, where it is a file under the root (a link that leads out of the root is not)."""
        return path if os.path.isfile(path) and self.inside(path) else None

    def upward(self, start: str, names: tuple[str, ...]) -> str | None:
        """The nearest of these files from folder `start` up to the root."""
        d = start
        while True:
            for n in names:
                p = os.path.join(d, n)
                if os.path.isfile(p):
                    return p
            if os.path.realpath(d) == self.root or not self.inside(d):
                return None
            parent = os.path.dirname(d)
            if parent == d:
                return None
            d = parent


def find_root(path: str, markers: tuple[str, ...] = MARKERS, exists: Callable[[str], bool] = os.path.exists
              ) -> str | None:
    """The nearest folder above a file that holds one of the markers (a repository, a package's manifest)."""
    d = os.path.dirname(os.path.abspath(path))
    while True:
        if any(exists(os.path.join(d, m)) for m in markers):
            return d
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent
