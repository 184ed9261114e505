"""Each open document's recent edits, as hunks of whole lines (what a next-edit prediction reads, as Zeta and
Sweep do): keystrokes on the same lines coalesce into one hunk, a change elsewhere closes it; an edit that
reverses the hunk before it (an undo, or typing the old text back) removes both; a close forgets the document.

A change of several pieces at once (format-on-save, organize imports, a replace-all, an undo of one of these) is
not the user typing and is not recorded: as one hunk it would span every piece, each later keystroke would touch
it, and the history would stop following the user. It closes the hunk being typed and is carried
under the recorded hunks instead, as if it had come before them: they move by the lines it adds or removes above
them, and a hunk takes in the pieces on its own lines (it reads as the formatter left it, from the same old
lines). So the user's last edit stays the one to follow, and the next keystroke starts a hunk of its own lines.

A hunk's line numbers are those of the text as it stood when the hunk was made, as in a sequence of diffs each
applied to the result of the one before."""
from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass

from .syntax import common_end, common_start

MAX_HUNKS = 6        # the recent edits a prompt shows, at most (the oldest go first)
MAX_HUNK_LINES = 24  # a hunk's lines on either side shown at most (a paste of a page tells little of what follows)


@dataclass(frozen=True)
class Hunk:
    start: int                 # 0-based line where the old lines stood (and the new ones stand)
    old: tuple[str, ...]       # lines without their ends
    new: tuple[str, ...]
    at: float = 0.0            # time.monotonic() of its last keystroke

    @property
    def end(self) -> int:
        """The line after the new lines."""
        return self.start + len(self.new)

    def reverses(self, other: "Hunk") -> bool:
        return self.start == other.start and self.old == other.new and self.new == other.old

    def diff(self) -> str:
        old, new = self.old[:MAX_HUNK_LINES], self.new[:MAX_HUNK_LINES]
        # an empty side's line is the one after which the lines were taken out or put in (as git writes it, and
        # the next-edit suite's diffs, which the prompt is measured with): `@@ -4,0 +5,1 @@` inserts after line 4
        head = (f"@@ -{self.start + bool(self.old)},{len(self.old)} "
                f"+{self.start + bool(self.new)},{len(self.new)} @@\n")
        return head + "".join(f"-{line}\n" for line in old) + "".join(f"+{line}\n" for line in new)


def line_change(before: list[str], after: list[str]) -> Hunk | None:
    """The one span of lines that differs between two versions (common leading and trailing lines left out);
    None where they are equal."""
    n = min(len(before), len(after))
    lo = 0
    while lo < n and before[lo] == after[lo]:
        lo += 1
    if lo == len(before) == len(after):
        return None
    hi = 0
    while hi < n - lo and before[-1 - hi] == after[-1 - hi]:
        hi += 1
    return Hunk(lo, tuple(before[lo:len(before) - hi]), tuple(after[lo:len(after) - hi]))


def text_change(before: str, after: str) -> Hunk | None:
    """`line_change` of two texts, without splitting either whole: their common start and end (compared a block
    at a time, as the parse's edits are) leave only the lines around the change to split and compare, so a
    keystroke in a large file costs microseconds, not a pass over every line."""
    start = common_start(before, after)
    if start == len(before) == len(after):
        return None
    tail = common_end(before, after, min(len(before), len(after)) - start)
    # the lines before the first difference's line, and those after the first "\n" of the common end, are alike
    first = before.rfind("\n", 0, start) + 1
    cut = before.find("\n", len(before) - tail)
    cut_b, cut_a = (len(before), len(after)) if cut < 0 else (cut, cut + len(after) - len(before))
    change = line_change(before[first:cut_b].split("\n"), after[first:cut_a].split("\n"))
    if change is None:
        return None
    return Hunk(change.start + before.count("\n", 0, first), change.old, change.new)


def pieces(change: Hunk) -> list[Hunk]:
    """The runs of differing lines in a change (the lines alike inside it left out), each at its line in the text
    before the change: a keystroke's change is one piece, a formatter's often many. Only a change whose two sides
    share a line is compared line by line, so a keystroke costs no comparison. The runs alike are skipped a block
    of lines at a time and each run that differs ends at the nearest pair of lines alike: a diff found in one pass
    over the lines (difflib passes over what is left of the file again for each piece, and a formatted file has
    hundreds). It may pair lines less well than difflib where they repeat; it is always a true diff."""
    old, new = change.old, change.new
    if not old or not new or set(old).isdisjoint(new):
        return [change]
    out: list[Hunk] = []
    i = j = 0
    while True:
        k = _alike(old, new, i, j)
        i, j = i + k, j + k
        if i == len(old) and j == len(new):
            return out
        a, b = _resync(old, new, i, j)
        out.append(Hunk(change.start + i, old[i:a], new[j:b]))
        i, j = a, b


def _alike(old: tuple[str, ...], new: tuple[str, ...], i: int, j: int) -> int:
    """How many lines from old[i] and new[j] on are alike (compared a block at a time)."""
    k, step = 0, 256
    while step:
        while i + k + step <= len(old) and j + k + step <= len(new) and \
                old[i + k:i + k + step] == new[j + k:j + k + step]:
            k += step
        step //= 4
    return k


def _resync(old: tuple[str, ...], new: tuple[str, ...], i: int, j: int) -> tuple[int, int]:
    """The nearest pair of lines alike after old[i] and new[j] differ (the fewest lines skipped on both sides
    together, in a window that grows until one is found), or both ends."""
    window = 16
    while True:
        end_i, end_j = min(len(old), i + window), min(len(new), j + window)
        at: dict[str, list[int]] = {}
        for b in range(j, end_j):
            at.setdefault(new[b], []).append(b)
        best = None
        for a in range(i, end_i):
            for b in at.get(old[a], ()):
                if best is None or a - i + b - j < best[0]:
                    best = (a - i + b - j, a, b)
        if best is not None:
            return best[1], best[2]
        if end_i == len(old) and end_j == len(new):
            return len(old), len(new)
        window *= 4


def _growth(hunks: list[Hunk]) -> int:
    return sum(len(h.new) - len(h.old) for h in hunks)


def _taken_in(h: Hunk, touching: list[Hunk]) -> Hunk | None:
    """A hunk with the pieces on its lines applied after it (pieces in the text after the hunk, sorted): from its
    old lines, and those the pieces reach beyond it, to what the pieces leave there; None where they put its old
    lines back. The lines beyond it are the pieces' own old lines, so no text is needed."""
    first, last = touching[0], touching[-1]
    left = first.old[:max(0, h.start - first.start)]
    right = last.old[max(0, h.end - last.start):] if last.start + len(last.old) > h.end else ()
    lo = h.start - len(left)
    new = list(left + h.new + right)
    for p in reversed(touching):
        new[p.start - lo:p.start - lo + len(p.old)] = p.new
    change = line_change(list(left + h.old + right), new)
    return None if change is None else Hunk(lo + change.start, change.old, change.new, h.at)


def keep_lines(text: str) -> list[str]:
    """The lines of a text with their "\n" ends (only "\n" ends a line, as LSP's positions count here; a last
    line without one is kept as it is)."""
    out = text.split("\n")
    last = out.pop()
    return [line + "\n" for line in out] + ([last] if last else [])


class EditHistory:
    """One document's edits. `record` is told each new version of the text."""

    def __init__(self, text: str):
        self.text = text
        self.hunks: deque[Hunk] = deque(maxlen=MAX_HUNKS)   # closed hunks, oldest first
        self._base: str | None = None         # the text before the open hunk's first keystroke
        self.open: Hunk | None = None         # the hunk being typed

    def record(self, text: str, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        before = self.text
        self.text = text
        change = text_change(before, text)
        if change is None:
            return
        parts = pieces(change)
        if len(parts) > 1:
            self._carry(parts)
            return
        if self.open is not None and not self._touches(change):
            self._close()
        if self.open is None:
            self._base = before
        self.open = text_change(self._base, text)
        if self.open is None:            # typed back to where the hunk began: no edit
            self._base = None
            return
        self.open = Hunk(self.open.start, self.open.old, self.open.new, now)
        if self.hunks and self.open.reverses(self.hunks[-1]):
            self.hunks.pop()             # an undo of the hunk before
            self.open, self._base = None, None

    def _touches(self, change: Hunk) -> bool:
        # in the coordinates of the text before this change, the open hunk's new lines are [start, end)
        return change.start <= self.open.end and change.start + len(change.old) >= self.open.start

    def _carry(self, parts: list[Hunk]) -> None:
        """A change of several pieces (at their lines in the text after the newest hunk) moved under the hunks,
        from the newest to the oldest: a piece above a hunk moves it by the lines it adds, a piece below moves by
        the hunk's own growth into the text before that hunk, and the pieces on a hunk's lines are taken in."""
        self._close()
        kept: list[Hunk] = []                     # the hunks as they read after the move, newest first
        for h in reversed(self.hunks):
            above = [p for p in parts if p.start + len(p.old) <= h.start]
            below = [p for p in parts[len(above):] if p.start >= h.end]
            touching = parts[len(above):len(parts) - len(below)]
            moved = _taken_in(h, touching) if touching else h
            if moved is not None:
                kept.append(Hunk(moved.start + _growth(above), moved.old, moved.new, moved.at))
            parts = above + [Hunk(p.start + len(h.old) - len(h.new), p.old, p.new) for p in below]
        self.hunks = deque(reversed(kept), maxlen=MAX_HUNKS)

    def _close(self) -> None:
        if self.open is not None:
            self.hunks.append(self.open)
        self.open, self._base = None, None

    def recent(self) -> list[Hunk]:
        """The recent hunks, oldest first, the one being typed last: MAX_HUNKS at most (the closed ones kept are
        MAX_HUNKS too, so that after an undo the one before it is shown again)."""
        return (list(self.hunks) + ([self.open] if self.open is not None else []))[-MAX_HUNKS:]

    def diff(self, path: str) -> str:
        """The recent hunks as a unified diff without context lines ("" where there are none)."""
        hunks = self.recent()
        if not hunks:
            return ""
        return f"--- a/{path}\n+++ b/{path}\n" + "".join(h.diff() for h in hunks)

    def last(self) -> Hunk | None:
        hunks = self.recent()
        return hunks[-1] if hunks else None


class EditHistories:
    """The edit histories of the open documents, by uri."""

    def __init__(self):
        self._by_uri: dict[str, EditHistory] = {}

    def opened(self, uri: str, text: str) -> None:
        self._by_uri[uri] = EditHistory(text)

    def changed(self, uri: str, text: str, now: float | None = None) -> None:
        history = self._by_uri.get(uri)
        if history is None:
            self._by_uri[uri] = EditHistory(text)
        else:
            history.record(text, now)

    def closed(self, uri: str) -> None:
        self._by_uri.pop(uri, None)

    def get(self, uri: str) -> EditHistory | None:
        return self._by_uri.get(uri)

    def __len__(self) -> int:
        return len(self._by_uri)
