"""Pages: where a prompt's prefix starts, chosen so that it stays put while the cursor moves or the user types
inside a large region of a file, with the file's text tokenized so that a prefix cut at the cursor's line is a
start of the page's token stream. One cached page then serves every cursor inside it: a jump evaluates only the
cursor's line, the suffix and the FIM tokens.

Segments: a line with text, together with the blank lines after it. Qwen's pre-tokenizer never joins a token
across the start of a line that has text (checked on 2,304 texts: every HumanEval prompt and solution, real
files, the fixtures), so tokenizing segment by segment gives exactly the tokens of the whole text, and each
segment's tokens are kept from one request to the next.

Boundaries are content-defined, like rsync's chunks: a segment starts a page when a hash of its first line (and
the line with text before it) is 0 modulo the grid's modulus, or, where no such line came for the grid's gap of
characters, modulo a smaller one. An edit moves only the boundaries right below it; a page further down keeps
its start and its cached state. A cursor may use every boundary that leaves at most the prefix budget of text above it: the
earliest (the most context) unless a later one, with at least half the budget of context, is the one cached.
"""
from __future__ import annotations

import zlib
from collections import OrderedDict
from dataclasses import dataclass

from .long_lines import clip_long_lines


@dataclass(frozen=True)
class Grid:
    """How dense a document's page boundaries are."""
    modulus: int     # mean distance between boundaries, in segments
    gap: int         # a stretch of this many characters without a boundary gets boundaries from `dense`
    dense: int


PAGES = Grid(24, 1600, 6)      # about 250 tokens of code between boundaries
# the small pages of fast answers' prompts (the nearest ~100 tokens), so that a short jump shares one too
SMALL_PAGES = Grid(4, 320, 2)
# the outline of a page that does not start the file may take this share of the prefix budget
OUTLINE_SHARE = 4
# the left edge of a prefix with no boundary in reach moves in steps of this many lines
PREFIX_ANCHOR_LINES = 16
SEGMENT_CACHE_ENTRIES = 100_000


class SegmentTokens:
    """The tokens of each segment's text, kept across requests (least recently used out)."""

    def __init__(self, tok, limit: int = SEGMENT_CACHE_ENTRIES):
        self.tok, self.limit = tok, limit
        self._cache: OrderedDict[str, list[int]] = OrderedDict()
        self._clipped: tuple[str, str, tuple[str, str]] | None = None

    def clip(self, prefix: str, suffix: str) -> tuple[str, str]:
        """The text around a cursor with its long lines cut (long_lines.py), kept for the last text: a request
        builds up to five prompts of it, and the check reads the whole file."""
        last = self._clipped
        if last is None or last[0] is not prefix or last[1] is not suffix:
            last = self._clipped = (prefix, suffix, clip_long_lines(prefix, suffix))
        return last[2]

    @property
    def fim(self):
        return self.tok.fim

    def tokenize(self, text: str) -> list[int]:
        return self.tok.tokenize(text)

    def segment(self, text: str) -> list[int]:
        toks = self._cache.get(text)
        if toks is None:
            toks = self._cache[text] = self.tok.tokenize(text)
            if len(self._cache) > self.limit:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(text)
        return toks

    def __len__(self) -> int:
        return len(self._cache)


def segment_cache(tok) -> SegmentTokens:
    return tok if isinstance(tok, SegmentTokens) else SegmentTokens(tok)


@dataclass(frozen=True)
class Page:
    start: int          # the line the page's text starts at
    end: int            # the line after the page's text (the last line a cursor of this page may be on, + 1)
    context: int        # tokens of text between the start and the cursor (for the cursor it was chosen for)
    anchored: bool      # False: no boundary in reach, the start follows the cursor in PREFIX_ANCHOR_LINES steps


class Text:
    """A document's lines and segments, and the pages a cursor in it may use."""

    def __init__(self, text: str, seg: SegmentTokens, grid: Grid = PAGES):
        self.lines = text.split("\n")
        self.seg, self.grid = seg, grid
        self._hash: dict[int, int] = {}

    # ---- segments ---------------------------------------------------------------------------------------

    def has_text(self, i: int) -> bool:
        return bool(self.lines[i].strip())

    def segment_start(self, line: int) -> int:
        """The segment a line belongs to: the nearest line with text at or above it (or the file's start)."""
        while line > 0 and not self.has_text(line):
            line -= 1
        return line

    def next_segment(self, start: int) -> int:
        i = start + 1
        while i < len(self.lines) and not self.has_text(i):
            i += 1
        return i

    def segment_text(self, start: int, end: int | None = None) -> str:
        end = self.next_segment(start) if end is None else end
        body = "\n".join(self.lines[start:end])
        return body + "\n" if end < len(self.lines) else body

    def tokens(self, start: int, end: int) -> list[int]:
        """The tokens of the whole segments in the lines [start, end), segment by segment."""
        out: list[int] = []
        i = start
        while i < end:
            j = self.next_segment(i)
            out += self.seg.segment(self.segment_text(i, j))
            i = j
        return out

    def offset(self, line: int) -> int:
        """The character offset of a line's start."""
        return sum(map(len, self.lines[:line])) + line   # each line with its "\n"

    # ---- boundaries -------------------------------------------------------------------------------------

    def _h(self, i: int) -> int:
        h = self._hash.get(i)
        if h is None:
            prev = self.segment_start(i - 1) if i > 0 else -1
            key = (self.lines[prev].strip() if prev >= 0 else "") + "\0" + self.lines[i].strip()
            h = self._hash[i] = zlib.crc32(key.encode("utf-8", "surrogatepass"))
        return h

    def _natural(self, i: int) -> bool:
        return any(c.isalnum() for c in self.lines[i]) and self._h(i) % self.grid.modulus == 0

    def is_boundary(self, i: int) -> bool:
        """Whether the segment at line i starts a page (line 0 always does)."""
        if i == 0:
            return True
        if not self.has_text(i) or not any(c.isalnum() for c in self.lines[i]):
            return False
        if self._h(i) % self.grid.modulus == 0:
            return True
        if self._h(i) % self.grid.dense:
            return False
        # a dense boundary only where no natural one came within `gap` characters above
        chars, j = 0, i - 1
        while j >= 0 and chars < self.grid.gap:
            if j == 0 or (self.has_text(j) and self._natural(j)):
                return False
            chars += len(self.lines[j]) + 1
            j -= 1
        return True

    # ---- pages for a cursor -----------------------------------------------------------------------------

    def pages(self, cursor_line: int, partial_tokens: int, budget: int) -> list[Page]:
        """The pages a cursor on this line may use, the one with most context first. `partial_tokens`: the
        tokens of the cursor's own segment up to the cursor. A file whose whole prefix fits the budget has one
        page, its start, with no outline."""
        # counted from the segment above the cursor's line, so that the cursor at the end of a line and the same
        # line emptied (whose segment is then the line above) get the same pages
        cs = self.segment_start(cursor_line - 1) if cursor_line > 0 else 0
        text_budget = budget - budget // OUTLINE_SHARE
        used, i, seen = partial_tokens, cs, []
        while i > 0:
            j = self.segment_start(i - 1)
            used += len(self.seg.segment(self.segment_text(j)))
            if used > budget:
                break
            seen.append((j, used))
            i = j
        if i == 0 and used <= budget:
            return [Page(0, self._end(0, budget), used, True)]
        fits = [(j, n) for j, n in seen if n <= text_budget]
        bounds = [(j, n) for j, n in fits if self.is_boundary(j)]
        if not bounds:   # no boundary in reach: a window that follows the cursor
            start = fits[-1][0] if fits else cs
            start = self.segment_start(min(cursor_line, -(-start // PREFIX_ANCHOR_LINES) * PREFIX_ANCHOR_LINES))
            n = sum(len(self.seg.segment(self.segment_text(j))) for j, _ in seen if j >= start) + partial_tokens
            return [Page(start, self._end(start, text_budget), n, False)]
        bounds.reverse()   # earliest (most context) first
        first = bounds[0]
        out = [Page(first[0], self._end(first[0], text_budget), first[1], True)]
        for j, n in bounds[1:]:
            if n >= text_budget // 2:
                out.append(Page(j, self._end(j, text_budget), n, True))
        return out

    def line_away(self, line: int, tokens: int, down: bool) -> int | None:
        """The segment start about `tokens` of text below (or above) a line; None past the file's end."""
        used, i = 0, self.segment_start(line)
        while used < tokens:
            j = self.next_segment(i) if down else (self.segment_start(i - 1) if i > 0 else -1)
            if j < 0 or j >= len(self.lines):
                return None
            used += len(self.seg.segment(self.segment_text(min(i, j))))
            i = j
        return i

    def next_boundary(self, after: int, before: int) -> int | None:
        """The first page start below line `after` and above line `before` (the page a typist moves to)."""
        i = self.next_segment(after)
        while i < before:
            if self.is_boundary(i):
                return i
            i = self.next_segment(i)
        return None

    def _end(self, start: int, text_budget: int) -> int:
        """The line after the last segment that still fits the text budget counted from `start`."""
        used, i = 0, start
        while i < len(self.lines):
            j = self.next_segment(i)
            used += len(self.seg.segment(self.segment_text(i, j)))
            if used > text_budget:
                break
            i = j
        return max(i, self.next_segment(start))
