"""A chat prompt as pieces: the template's own markers, which become its control tokens, and text, which never
does. A file that holds a marker's spelling (any LLM tooling does; a hostile repository may, to steer the answer)
is shown as the characters it holds: its `<|im_end|>` is text, not the end of the user's turn, and its
`<|fim_prefix|>` no FIM token. Any prompt builder of the Instruct target composes its prompt from these pieces."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Protocol

IM_START, IM_END = "<|im_start|>", "<|im_end|>"   # ChatML, the default target's template


class Tokenizer(Protocol):
    def tokenize(self, text: str, special: bool = False) -> list[int]: ...


@dataclass(frozen=True)
class Piece:
    text: str
    marker: bool = False   # one of the template's markers: tokenized as the control token it spells


def marker(text: str) -> Piece:
    return Piece(text, True)


def chat(user: str, answer_start: str, system: str | None = None) -> tuple[Piece, ...]:
    """A ChatML conversation of one user turn, the assistant's answer begun with `answer_start`."""
    out: list[Piece] = []
    if system is not None:
        out += [marker(IM_START), Piece(f"system\n{system}"), marker(IM_END), Piece("\n")]
    out += [marker(IM_START), Piece(f"user\n{user}"), marker(IM_END), Piece("\n"),
            marker(IM_START), Piece(f"assistant\n{answer_start}")]
    return tuple(out)


def text_of(pieces: Iterable[Piece]) -> str:
    """The prompt as one text (markers spelled out): for reading, never for tokenizing with special tokens."""
    return "".join(p.text for p in pieces)


def tokens_of(pieces: Iterable[Piece], tokenizer: Tokenizer) -> list[int]:
    """The pieces' tokens: each marker with special tokens on, each run of text between markers as one text with
    them off. The text is tokenized a run at a time, not a piece at a time, so that its tokens across the seams
    of the pieces are those of the whole text; llama.cpp splits a text at its control tokens before anything
    else, so for text that spells none the tokens are those of the whole prompt with special tokens on.
    (A vocabulary's user-defined tokens, such as Qwen's `<tool_call>`, are matched in any text, as the model's
    own tokenizer matches them: they are no control tokens.)"""
    out: list[int] = []
    run: list[str] = []
    for p in pieces:
        if p.marker:
            if run:
                out += tokenizer.tokenize("".join(run))
                run = []
            out += tokenizer.tokenize(p.text, special=True)
        else:
            run.append(p.text)
    if run:
        out += tokenizer.tokenize("".join(run))
    return out
