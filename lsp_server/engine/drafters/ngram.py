"""Prompt lookup: continue the context the way it continued after the most recent earlier occurrence of
its last n tokens. Free to run; right when the model is copying (field lists, repeated call shapes, text
that also appears in the suffix)."""
from __future__ import annotations

from .base import Draft


class NgramDrafter:
    name = "ngram"

    def __init__(self, min_n: int = 2, max_n: int = 8):
        self.min_n, self.max_n = min_n, max_n
        self.buckets = ("run",) + tuple(f"n{n}" for n in range(min_n, max_n + 1))   # where its drafts count
        self.ctx: list[int] = []
        self._last = (-1, -1)   # (context length, source position) of the last proposal
        # index[n][ngram] = position of the ngram's last token, for n-grams ending before the last token
        self.index: dict[int, dict[tuple, int]] = {}

    def start(self, tokens: list[int]) -> None:
        self.ctx = []
        self.index = {n: {} for n in range(self.min_n, self.max_n + 1)}
        self._last = (-1, -1)
        self.extend(tokens)

    def extend(self, tokens: list[int]) -> None:
        ctx, index = self.ctx, self.index
        for t in tokens:
            # the n-grams ending at the current last token become searchable once a newer token follows,
            # so a lookup never finds the very n-gram it is looking for
            end = len(ctx) - 1
            if end >= 0:
                for n, table in index.items():
                    if end + 1 >= n:
                        table[tuple(ctx[end - n + 1:end + 1])] = end
            ctx.append(t)

    def lookup(self) -> tuple[int, int] | None:
        """The longest n-gram ending the context that occurred before with something after it: (n, the position
        of that earlier occurrence's last token); what follows it there is the proposal."""
        ctx = self.ctx
        for n in range(self.max_n, self.min_n - 1, -1):
            if len(ctx) < n:
                continue
            pos = self.index[n].get(tuple(ctx[-n:]))
            if pos is not None and pos + 1 < len(ctx):
                return n, pos
        return None

    def propose(self, max_len: int) -> Draft | None:
        found = self.lookup() if max_len > 0 else None
        if found is None:
            return None
        n, pos = found
        cont = self.ctx[pos + 1:pos + 1 + max_len]
        return Draft(self.name, cont, [self.bucket(n, pos, len(self.ctx))] * len(cont))

    def bucket(self, n: int, pos: int, ctx_len: int) -> str:
        """A copy that kept pace with the output since the last proposal is a copy in progress, far more likely
        right than a fresh match. Called once per proposal (of a context of ctx_len tokens): it remembers it."""
        n0, p0 = self._last
        run = p0 >= 0 and pos - p0 == ctx_len - n0
        self._last = (ctx_len, pos)
        return "run" if run else f"n{n}"
