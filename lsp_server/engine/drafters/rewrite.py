"""Rewrite lookup: a request that rewrites a region of code (a next edit) mostly copies the text it replaces,
so the next tokens of that text, from where the output stands in it, are a draft accepted in long runs.

The drafter keeps an alignment: the position in the source of the token the output should write next. While
the output follows the source it simply moves along ("copy"). Where the output departs from it (an inserted,
changed or deleted span) it aligns again by the output's last k tokens (k = max_k..1), at the occurrence
nearest after the current position (a rewrite is mostly monotonic: the same line repeated further up must not
pull it back), or else the nearest before (a moved line). With no occurrence it proposes nothing that step;
right after the output replaced one source token it guesses a one-for-one substitution ("sub": a rename)."""
from __future__ import annotations

from bisect import bisect_left

from .base import Draft


class RewriteDrafter:
    name = "rewrite"

    def __init__(self, max_k: int = 4):
        self.max_k = max_k
        # where its drafts count: in step with the source, freshly aligned by a k-token match, a substitution
        self.buckets = ("copy",) + tuple(f"k{k}" for k in range(max_k, 0, -1)) + ("sub",)
        self.src: list[int] = []
        self.out: list[int] = []
        # index[k][k-gram] = sorted positions just after each occurrence (the source token that follows it)
        self.index: dict[int, dict[tuple, list[int]]] = {}
        self.pos: int | None = None   # the source position the output should write next (None: not aligned)
        self.hint = 0                 # the last known position, kept while unaligned to search near it
        self.how = "copy"             # how the current alignment was found: the proposal's bucket

    @property
    def active(self) -> bool:
        return bool(self.src)

    def start(self, source: list[int] | None) -> None:
        """A new generation rewriting `source` (None or empty: the drafter stays inactive)."""
        self.src = list(source or [])
        self.out = []
        self.index = {k: {} for k in range(1, self.max_k + 1)}
        for k in range(1, self.max_k + 1):
            table = self.index[k]
            for end in range(k, len(self.src) + 1):
                table.setdefault(tuple(self.src[end - k:end]), []).append(end)
        # the output starts where the region starts
        self.pos, self.hint, self.how = (0, 0, "copy") if self.src else (None, 0, "copy")

    def extend(self, tokens: list[int]) -> None:
        for t in tokens:
            self.out.append(t)
            self._step(t)

    def _step(self, t: int) -> None:
        pos = self.pos
        if pos is not None and pos < len(self.src) and self.src[pos] == t:
            # still copying: stay in step, no search (a fresh match or a guess that held is now a run)
            self.pos, self.hint, self.how = pos + 1, pos + 1, "copy"
            return
        found = self.realign()
        if found is not None:
            self.pos, self.how = found
            self.hint = self.pos
        elif pos is not None and pos < len(self.src) and self.how != "sub":
            # one token in place of one source token: assume the source goes on after it (right for a
            # one-token rename); guessed once only, so a longer change does not drift through the source:
            # it finds its place again by suffix
            self.pos, self.hint, self.how = pos + 1, pos + 1, "sub"
        else:
            self.pos = None   # unaligned: nothing to propose until a suffix occurs again (near `hint`)

    def realign(self) -> tuple[int, str] | None:
        """(the source position after the nearest occurrence of the output's longest matching suffix, its
        bucket), or None when not even the last token occurs in the source."""
        for k in range(min(self.max_k, len(self.out)), 0, -1):
            ends = self.index[k].get(tuple(self.out[-k:]))
            if not ends:
                continue
            i = bisect_left(ends, self.hint)
            # nearest at or after where the output stood; failing that, the nearest before it
            return (ends[i] if i < len(ends) else ends[-1]), f"k{k}"
        return None

    def propose(self, max_len: int) -> Draft | None:
        if max_len <= 0 or self.pos is None:
            return None
        cont = self.src[self.pos:self.pos + max_len]
        return Draft(self.name, cont, [self.how] * len(cont)) if cont else None
