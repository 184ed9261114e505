"""Prefix-suffix-middle prompts (Qwen2.5-Coder does not do SPM), optionally repository-level:

    <|repo_name|>NAME\n<|file_sep|>other.py\n...<|file_sep|>current.py\n<|fim_prefix|>P<|fim_suffix|>S<|fim_middle|>

Stable parts come first so the KV cache survives keystrokes: a cursor move only invalidates what follows it,
and the prefix starts at a page boundary (pages.py) so that a jump inside the page keeps the cached state too.
"""
from __future__ import annotations

import hashlib
from array import array

from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Callable, Protocol

from ..context.near_lines import first_below, line_after, lines_below
from .long_lines import PARTIAL_TOKENS
from .pages import OUTLINE_SHARE, SMALL_PAGES, Page, SegmentTokens, Text, segment_cache


class PromptKind(StrEnum):
    """Which prompt a plan asks with (a str: it compares with, and serializes as, its value)."""
    PAGE = "page"   # the prefix starts at a page boundary
    FAST = "fast"   # the nearest lines only (an answer now, where the page is far from cached)


class Tokenizer(Protocol):
    fim: object  # FimTokens | None

    def tokenize(self, text: str) -> list[int]: ...


@dataclass(frozen=True)
class PromptBudget:
    prefix_tokens: int = 1536
    suffix_tokens: int = 256
    context_tokens: int = 1024
    suffix_in_block: int = 0   # the suffix where code of the cursor's own block follows it (0: suffix_tokens)
    suffix_at_rest: int = 0    # the suffix of a request where the user is not typing (0: as the others)
    near_tokens: int = 0       # a fast prompt's room for the other files' definitions its nearest lines use
    below_tokens: int = 0      # a fast prompt's room for the code below the cursor's line, in its head
    similar_tokens: int = 0    # a fast prompt's room for the lines elsewhere in the file like those above the cursor

    @property
    def total(self) -> int:
        return self.prefix_tokens + max(self.suffix_tokens, self.suffix_in_block, self.suffix_at_rest) + \
            self.context_tokens

    def within(self, room: int) -> "PromptBudget":
        """This budget, shrunk in proportion where it exceeds `room` tokens (keeping a little prefix)."""
        if self.total <= room:
            return self
        f = max(0, room) / self.total
        return PromptBudget(max(16, int(self.prefix_tokens * f)), int(self.suffix_tokens * f),
                            int(self.context_tokens * f), int(self.suffix_in_block * f), int(self.suffix_at_rest * f),
                            int(self.near_tokens * f), int(self.below_tokens * f), int(self.similar_tokens * f))

    def for_place(self, code_follows: bool, at_rest: bool = False) -> "PromptBudget":
        """The budget for one request: the longer suffix where the code below belongs to the cursor's block, and
        the longest where the user is not typing (it is evaluated once there, not again at every keystroke)."""
        want = max(self.suffix_tokens, self.suffix_in_block if code_follows else 0,
                   self.suffix_at_rest if at_rest else 0)
        return replace(self, suffix_tokens=want) if want != self.suffix_tokens else self


@dataclass
class PromptParts:
    prefix: str
    suffix: str
    path: str | None = None
    repo: str | None = None
    files: list[tuple[str, str]] = field(default_factory=list)   # (path, text) of other files, by priority
    # the fast prompt's files: the other files' definitions that the code nearest the cursor uses (few, short)
    near_files: list[tuple[str, str]] = field(default_factory=list)
    # the fast prompt's lines from elsewhere in the cursor's file like the code above it (context.similar)
    similar: list[tuple[str, str]] = field(default_factory=list)
    # what the model loses when the top of a long file is cut (from the context stage): outline(line) -> the
    # headers of the scopes around a page that starts at that line; imports(line) -> the import lines above it
    # (the same text for every page below them, so stored pages of a document share it)
    outline: Callable[[int], str] | None = None
    imports: Callable[[int], str] | None = None


@dataclass
class Prompt:
    tokens: list[int]
    stop: tuple[str, ...]
    prefix_tokens: int
    suffix_tokens: int
    context_tokens: int
    prefix_cut_lines: int = 0     # lines dropped from the start of the prefix to fit its budget (the page start)
    suffix_cut: bool = False
    outline_tokens: int = 0       # imports and scope headers standing in for the cut lines
    files: int = 0                # other files' snippets that fit the context budget
    kind: PromptKind = PromptKind.PAGE
    stable: int = 0               # tokens before the cursor's segment: what the page's cached state serves
    fill: list[int] | None = None  # the page's tokens to its end (head, outline, text): what filling ahead evaluates
    page_end: int = 0             # the line after the page's text
    next_fill: list[int] | None = None   # the next page's tokens up to the cursor, when typing on will reach it
    anchored: bool = True         # False: no page boundary was in reach, the start follows the cursor

    def digest(self) -> str:
        """A short name for the token sequence: two records (or an offer and a record) with the same digest came
        from the same prompt."""
        return hashlib.blake2b(array("i", self.tokens).tobytes(), digest_size=8).hexdigest()


# code runs 3-4 characters a token: a suffix longer than this many characters a token of its budget is cut line by
# line without tokenizing all of it (the rest of a large file, at every request near its top)
SUFFIX_CHARS_PER_TOKEN = 16


def _fit_suffix(tok: Tokenizer, suffix: str, budget: int) -> tuple[list[int], bool]:
    reach = SUFFIX_CHARS_PER_TOKEN * max(budget, 1)
    if len(suffix) <= reach:
        toks = tok.tokenize(suffix)
        if len(toks) <= budget:
            return toks, False
    else:
        suffix = suffix[:suffix.rfind("\n", 0, reach) + 1]
    kept, used = [], 0
    for line in suffix.splitlines(keepends=True):
        n = len(tok.tokenize(line))
        if used + n > budget:
            break
        kept.append(line)
        used += n
    return tok.tokenize("".join(kept)), True


def stop_strings(prefix: str, suffix: str) -> tuple[str, ...]:
    """Stop when the middle starts writing the first non-blank line of the suffix again."""
    if line_after(suffix).strip():
        # mid-line: the rest of the line is already there; the middle ends at the line's end
        return ("\n",)
    line = first_below(suffix)
    return () if line is None else ("\n" + line,)


def _head(seg: SegmentTokens, parts: PromptParts, files: list[tuple[str, str]], budget: PromptBudget
          ) -> tuple[list[int], int]:
    """The repository-level header: other files' snippets, then the current file's name."""
    fim = seg.fim
    if fim is None or fim.repo_name is None or fim.file_sep is None or not (files or parts.path):
        return [], 0
    head = [fim.repo_name] + seg.segment(f"{parts.repo or 'workspace'}\n")
    room, n_files = budget.context_tokens, 0
    for path, text in files:
        chunk = [fim.file_sep] + seg.segment(f"{path}\n{text}\n")
        if len(chunk) > room:
            continue   # a smaller one further down the priority list may still fit
        head += chunk
        room -= len(chunk)
        n_files += 1
    return head + [fim.file_sep] + seg.segment(f"{parts.path or 'untitled'}\n"), n_files


# what a file entry costs beyond its text (<|file_sep|>, the path, newlines), in tokens
_HEAD_ROOM = 64


def _below(seg: SegmentTokens, parts: PromptParts, tokens: int) -> list[tuple[str, str]]:
    """The code below the cursor's line, up to `tokens` in whole lines, as a file entry of its own for the fast
    prompt's head: the model reads what follows the place (tune half: 17 / 20 of 45 first lines right without /
    with 128 tokens of it), and unlike a longer FIM suffix, which follows the prefix and is evaluated again after
    every edit, it stays while the user types on the line or opens new ones above it."""
    if tokens <= 0 or seg.fim is None or "\n" not in parts.suffix:
        return []
    kept, used = [], 0
    for line in lines_below(parts.suffix):
        used += len(seg.tokenize(line + "\n"))
        if used > tokens:
            break
        kept.append(line)
    text = "\n".join(kept).rstrip()
    return [(parts.path or "untitled", text)] if text.strip() else []


def _clipped(seg: SegmentTokens, parts: PromptParts) -> PromptParts:
    """The parts with no line longer than a prompt can hold (long_lines.py)."""
    prefix, suffix = seg.clip(parts.prefix, parts.suffix)
    return parts if prefix is parts.prefix and suffix is parts.suffix else replace(parts, prefix=prefix, suffix=suffix)


def _around(seg: SegmentTokens, parts: PromptParts, grid=None) -> tuple[Text, int, int, list[int]]:
    """The document as segments, the cursor's line, its segment's first line and the tokens from there on."""
    text = Text(parts.prefix + parts.suffix, seg) if grid is None else Text(parts.prefix + parts.suffix, seg, grid)
    line = parts.prefix.count("\n")
    cs = text.segment_start(line)
    return text, line, cs, seg.tokenize(parts.prefix[text.offset(cs):])


def _assemble(seg: SegmentTokens, head: list[int], pre: list[int], suf: list[int]) -> list[int]:
    fim = seg.fim
    if fim is None:   # no FIM tokens: a plain left-to-right prompt
        return head + pre
    return head + [fim.prefix] + pre + [fim.suffix] + suf + [fim.middle]


def _paged(seg: SegmentTokens, parts: PromptParts, text: Text, page: Page, cs: int, partial: list[int],
           suf: tuple[list[int], bool], budget: PromptBudget, small: bool = False) -> Prompt:
    if small:
        extra = parts.similar if budget.similar_tokens > 0 else []
        head, n_files = _head(seg, parts, parts.near_files + extra + _below(seg, parts, budget.below_tokens),
                              replace(budget, context_tokens=budget.near_tokens + _HEAD_ROOM * bool(budget.below_tokens)
                                      + budget.below_tokens + (budget.similar_tokens + _HEAD_ROOM) * bool(extra)))
    else:
        head, n_files = _head(seg, parts, parts.files, budget)
    outline: list[int] = []
    if small:   # a fast answer's small page: the scopes around its start, no imports
        if page.start > 0 and parts.outline is not None:
            outline = seg.tokenize(parts.outline(page.start))[-(budget.prefix_tokens // OUTLINE_SHARE):]
    elif page.start > 0:
        # imports first (cut at their end: the same tokens for every page below them), then the scopes around
        # the page's start (cut at their start: the innermost count most)
        share = budget.prefix_tokens // (2 * OUTLINE_SHARE)
        if parts.imports is not None:
            outline += seg.segment(parts.imports(page.start))[:share]
        if parts.outline is not None:
            outline += seg.tokenize(parts.outline(page.start))[-(budget.prefix_tokens // OUTLINE_SHARE - len(outline)):]
    body = text.tokens(page.start, cs)
    start = head + ([seg.fim.prefix] if seg.fim is not None else []) + outline
    tokens = _assemble(seg, head, outline + body + partial, suf[0])
    return Prompt(tokens, stop_strings(parts.prefix, parts.suffix), len(outline) + len(body) + len(partial),
                  len(suf[0]), len(head), page.start, suf[1], outline_tokens=len(outline), files=n_files,
                  kind=PromptKind.FAST if small else PromptKind.PAGE, stable=len(start) + len(body),
                  fill=start + text.tokens(page.start, page.end), page_end=page.end, anchored=page.anchored)


# a later page is preferred to the one with most context only when it saves more than this many tokens of
# evaluation
PREFER_CACHED = 32
# the next page is worth filling ahead once the prefix uses this share of its budget (some 20 lines of typing
# before the current page runs out)
NEXT_PAGE_AT = 0.6


def build_prompt(tok: Tokenizer, parts: PromptParts, budget: PromptBudget = PromptBudget(),
                 cached: Callable[[list[int]], int] | None = None, small: bool = False) -> Prompt:
    """The prompt for a cursor, its prefix starting at a page boundary (see pages.py). `cached(tokens)`, when
    given, says how many leading tokens of a prompt are cached: a page that needs much less evaluation than the
    one with most context is then taken instead. `small`: a fast answer's prompt, a small page of about
    `budget.prefix_tokens` from a denser grid of boundaries, without other files or imports."""
    seg = segment_cache(tok)
    parts = _clipped(seg, parts)
    text, line, cs, partial = _around(seg, parts, SMALL_PAGES if small else None)
    partial = partial[-max(budget.prefix_tokens, PARTIAL_TOKENS):]
    # the cursor's own segment is left out of the count, so that the page does not change between the cursor at
    # the end of a line and the same line emptied, or typed half-way (a prompt may outgrow the budget by it)
    pages = text.pages(line, 0, budget.prefix_tokens)
    suf = _fit_suffix(seg, parts.suffix, budget.suffix_tokens) if seg.fim is not None else ([], False)
    built = {0: _paged(seg, parts, text, pages[0], cs, partial, suf, budget, small)}

    def candidate(i: int) -> Prompt:
        if i not in built:
            built[i] = _paged(seg, parts, text, pages[i], cs, partial, suf, budget, small)
        return built[i]

    best = built[0]
    have = cached(best.tokens) if cached is not None else 0
    if cached is not None and len(pages) > 1:
        todo = len(best.tokens) - have
        for i in range(1, len(pages)):
            if todo <= PREFER_CACHED // (4 if small else 1):
                break
            other = candidate(i)
            got = cached(other.tokens)
            # only a page whose state is there: a shorter prompt alone is no reason to give up context
            if got >= other.stable and len(other.tokens) - got + PREFER_CACHED // (4 if small else 1) < todo:
                best, have, todo = other, got, len(other.tokens) - got
    if have < best.stable and len(pages) > 1:
        # nothing cached serves this cursor: the page to fill is the one that puts it in the middle of the range
        # of cursors a page serves, so that a jump up or down from here stays inside it
        i = _centered(pages, budget)
        best.fill, best.page_end = candidate(i).fill, candidate(i).page_end
    if small:
        return best
    nxt = text.next_boundary(best.prefix_cut_lines, cs) if best.prefix_tokens > NEXT_PAGE_AT * budget.prefix_tokens \
        else None
    if nxt is not None:
        # typing on moves the cursor toward the end of this page's reach; the next page, filled up to the
        # cursor ahead of time, takes over without a stall
        npage = Page(nxt, cs, 0, True)
        ahead = _paged(seg, parts, text, npage, cs, partial, suf, budget)
        best.next_fill = ahead.tokens[:ahead.stable]
    return best


def _centered(pages: list[Page], budget: PromptBudget) -> int:
    """Of a cursor's pages, the one it stands in the middle of (a page serves the cursors that have from half
    its text budget of context to all of it)."""
    text_budget = budget.prefix_tokens - budget.prefix_tokens // OUTLINE_SHARE
    middle = (text_budget // 2 + text_budget) // 2
    return min(range(len(pages)), key=lambda k: abs(pages[k].context - middle))


def near_fills(tok: Tokenizer, parts: PromptParts, budget: PromptBudget) -> list[list[int]]:
    """The pages to fill next to the cursor's, below and above it: each serves the cursors about half a text
    budget away, where a short jump lands (they share the document's head and imports with the cursor's)."""
    seg = segment_cache(tok)
    parts = _clipped(seg, parts)
    text, line, _, _ = _around(seg, parts)
    text_budget = budget.prefix_tokens - budget.prefix_tokens // OUTLINE_SHARE
    out = []
    for down in (True, False):
        at = text.line_away(line, text_budget // 2, down)
        if at is None:
            continue
        pages = text.pages(at, 0, budget.prefix_tokens)
        page = pages[_centered(pages, budget)] if len(pages) > 1 else pages[0]
        if page.start == 0 and len(pages) == 1 and line < at:
            continue   # the file's first page: the cursor's own fill holds it
        fill = _paged(seg, parts, text, page, text.segment_start(at), [], ([], False), budget).fill
        out.append(fill)
    return out


def build_fast_prompt(tok: Tokenizer, parts: PromptParts, budget: PromptBudget, fast_tokens: int,
                      cached: Callable[[list[int]], int] | None = None) -> Prompt:
    """A short prompt for an answer now, where the cached state covers too little of the page's: the nearest
    `fast_tokens` of the file above the cursor (the headers of the scopes around them first) and, in
    `budget.near_tokens`, the other files' definitions that those lines use (`parts.near_files`), nothing else of
    other files; in `budget.similar_tokens`, the lines from elsewhere in the file like the cursor's
    (`parts.similar`). It is itself a small page, so a short jump from here shares it."""
    return build_prompt(tok, parts, replace(budget, prefix_tokens=fast_tokens), cached, small=True)
