"""Prefix-suffix-middle prompts (Qwen2.5-Coder does not do SPM), optionally repository-level:

    <|repo_name|>NAME\n<|file_sep|>other.py\n...<|file_sep|>current.py\n<|fim_prefix|>P<|fim_suffix|>S<|fim_middle|>

Stable parts come first so the KV cache survives keystrokes: a cursor move only invalidates what follows it.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable, Protocol

# the left edge of the prefix moves in steps of this many lines, so typing does not shift it every line
PREFIX_ANCHOR_LINES = 16


class Tokenizer(Protocol):
    fim: object  # FimTokens | None

    def tokenize(self, text: str) -> list[int]: ...


@dataclass(frozen=True)
class PromptBudget:
    prefix_tokens: int = 1536
    suffix_tokens: int = 256
    context_tokens: int = 1024
    suffix_in_block: int = 0   # the suffix where code of the cursor's own block follows it (0: suffix_tokens)

    @property
    def total(self) -> int:
        return self.prefix_tokens + max(self.suffix_tokens, self.suffix_in_block) + self.context_tokens

    def within(self, room: int) -> "PromptBudget":
        """This budget, shrunk in proportion where it exceeds `room` tokens (keeping a little prefix)."""
        if self.total <= room:
            return self
        f = max(0, room) / self.total
        return PromptBudget(max(16, int(self.prefix_tokens * f)), int(self.suffix_tokens * f),
                            int(self.context_tokens * f), int(self.suffix_in_block * f))

    def for_place(self, code_follows: bool) -> "PromptBudget":
        """The budget for one request: the longer suffix where the code below belongs to the cursor's block."""
        if code_follows and self.suffix_in_block > self.suffix_tokens:
            return replace(self, suffix_tokens=self.suffix_in_block)
        return self


@dataclass
class PromptParts:
    prefix: str
    suffix: str
    path: str | None = None
    repo: str | None = None
    files: list[tuple[str, str]] = field(default_factory=list)   # (path, text) of other files, by priority
    # outline(cut_line) -> the imports and scope headers above a prefix cut at that line (from the context stage)
    outline: Callable[[int], str] | None = None


@dataclass
class Prompt:
    tokens: list[int]
    stop: tuple[str, ...]
    prefix_tokens: int
    suffix_tokens: int
    context_tokens: int
    prefix_cut_lines: int = 0     # lines dropped from the start of the prefix to fit its budget
    suffix_cut: bool = False
    outline_tokens: int = 0       # imports and scope headers standing in for the cut lines
    files: int = 0                # other files' snippets that fit the context budget


def _fit_prefix(tok: Tokenizer, prefix: str, budget: int) -> tuple[list[int], int]:
    toks = tok.tokenize(prefix)
    if len(toks) <= budget:
        return toks, 0
    lines = prefix.splitlines(keepends=True)
    used, start = 0, len(lines)
    while start > 0:
        n = len(tok.tokenize(lines[start - 1]))
        if used + n > budget:
            break
        used += n
        start -= 1
    # round the start up to an anchor so the same first line is kept while the user types on
    start = min(len(lines) - 1, -(-start // PREFIX_ANCHOR_LINES) * PREFIX_ANCHOR_LINES)
    return tok.tokenize("".join(lines[start:])), start


def _fit_suffix(tok: Tokenizer, suffix: str, budget: int) -> tuple[list[int], bool]:
    toks = tok.tokenize(suffix)
    if len(toks) <= budget:
        return toks, False
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
    cursor_line_rest, _, below = suffix.partition("\n")
    if cursor_line_rest.strip():
        # mid-line: the rest of the line is already there; the middle ends at the line's end
        return ("\n",)
    for line in below.split("\n"):
        if line.strip():
            return ("\n" + line,)
    return ()


# the outline of a cut prefix may take at most this share of the prefix budget
OUTLINE_SHARE = 4


def _fit_prefix_with_outline(tok: Tokenizer, parts: PromptParts, budget: int) -> tuple[list[int], int, int]:
    pre, cut = _fit_prefix(tok, parts.prefix, budget)
    if not cut or parts.outline is None:
        return pre, cut, 0
    outline = tok.tokenize(parts.outline(cut))[-(budget // OUTLINE_SHARE):]
    if not outline:
        return pre, cut, 0
    pre, cut = _fit_prefix(tok, parts.prefix, budget - len(outline))
    # a deeper cut may uncover one more header: ask again, still within the share
    outline = tok.tokenize(parts.outline(cut))[-(budget // OUTLINE_SHARE):]
    pre, cut = _fit_prefix(tok, parts.prefix, budget - len(outline))
    return outline + pre, cut, len(outline)


def build_prompt(tok: Tokenizer, parts: PromptParts, budget: PromptBudget = PromptBudget()) -> Prompt:
    fim = tok.fim
    if fim is None:  # no FIM tokens: a plain left-to-right prompt
        pre, cut, n_out = _fit_prefix_with_outline(tok, parts, budget.prefix_tokens)
        return Prompt(pre, stop_strings(parts.prefix, parts.suffix), len(pre), 0, 0, cut, outline_tokens=n_out)
    head: list[int] = []
    repo_level = fim.repo_name is not None and fim.file_sep is not None and (parts.files or parts.path)
    if repo_level:
        head += [fim.repo_name] + tok.tokenize(parts.repo or "workspace") + tok.tokenize("\n")
        room, n_files = budget.context_tokens, 0
        for path, text in parts.files:
            chunk = [fim.file_sep] + tok.tokenize(f"{path}\n{text}\n")
            if len(chunk) > room:
                continue   # a smaller one further down the priority list may still fit
            head += chunk
            room -= len(chunk)
            n_files += 1
        head += [fim.file_sep] + tok.tokenize(f"{parts.path or 'untitled'}\n")
    else:
        n_files = 0
    pre, cut, n_out = _fit_prefix_with_outline(tok, parts, budget.prefix_tokens)
    suf, suf_cut = _fit_suffix(tok, parts.suffix, budget.suffix_tokens)
    tokens = head + [fim.prefix] + pre + [fim.suffix] + suf + [fim.middle]
    return Prompt(tokens, stop_strings(parts.prefix, parts.suffix), len(pre), len(suf), len(head), cut, suf_cut,
                  outline_tokens=n_out, files=n_files)
