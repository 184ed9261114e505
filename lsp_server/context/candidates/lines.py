"""Whole lines inserted or deleted again: a line the user put in (an annotation, a derive, a decorator) goes in
again before the next line of the same shape that lacks it (only such lines: new code being typed is no pattern,
and on the suite's tune half every other inserted block repeated was wrong); lines the user took out go again where the same lines
stand elsewhere (a duplicated suppression, a second copy of a removed constant); a definition the user took out
(a method with its body) goes again where a definition with the same first line stands, its own body with it (an
override taken out of one subclass, then out of the next)."""
from __future__ import annotations

import re

from ..edits import Hunk, keep_lines
from .base import Candidate, make, nearest_first
from .unused import definition

WORD = re.compile(r"[A-Za-z_]\w*")
MIN_LINE = 6         # non-space characters a line needs to be worth repeating (not a brace, not `pass`)
MAX_LINES = 8        # an inserted or deleted block longer than this is new code, not a repeated touch
MAX_DEFINITION = 60  # lines of a definition taken out that still make one edit to repeat
SHAPE_WORDS = 2      # the shape of a line: its indentation and its first words


def _indent(line: str) -> str:
    return line[:len(line) - len(line.lstrip())]


def shape(line: str) -> tuple[str, tuple[str, ...]] | None:
    words = tuple(WORD.findall(line)[:SHAPE_WORDS])
    if not words:
        return None
    return _indent(line), words


def _solid(lines) -> bool:
    return any(len(line.strip()) >= MIN_LINE for line in lines)


def _trim(block: tuple[str, ...]) -> tuple[str, ...]:
    while block and not block[-1].strip():
        block = block[:-1]
    while block and not block[0].strip():
        block = block[1:]
    return block


ANNOTATION = ("@", "#[")   # Java and Kotlin annotations, Python and TypeScript decorators, Rust attributes


def inserted(text: str, hunk: Hunk, cursor_line: int) -> Candidate | None:
    block = _trim(hunk.new)
    if hunk.old or not block or len(block) > MAX_LINES or not _solid(block):
        return None
    if not all(line.lstrip().startswith(ANNOTATION) for line in block):
        return None
    lines = text.split("\n")
    # the line the insertion went before: the first line with text after it
    after = next((n for n in range(hunk.end, len(lines)) if lines[n].strip()), None)
    if after is None or (want := shape(lines[after])) is None:
        return None
    n_block = len(block)
    places = []
    for n, line in enumerate(lines):
        if hunk.start <= n <= after or shape(line) != want:
            continue
        if tuple(x.strip() for x in lines[max(0, n - n_block):n]) == tuple(x.strip() for x in block):
            continue   # it has the lines already
        places.append(n)
    if not places:
        return None
    n = nearest_first(places, cursor_line)[0]
    indent = _indent(lines[n])
    base = _indent(lines[after])
    new = [indent + line[len(base):] if line.startswith(base) else line for line in block]
    return make(text, n, n, "".join(line + "\n" for line in new), "insert")


def deleted(text: str, hunk: Hunk, cursor_line: int, language: str = "") -> Candidate | None:
    block = _trim(hunk.old)
    if hunk.new or not block or not _solid(block):
        return None
    if len(block) > MAX_LINES:
        return definition_again(text, block, cursor_line, language)
    lines = keep_lines(text)
    want = [line.strip() for line in block]
    places = [n for n in range(len(lines) - len(want) + 1)
              if [line.strip() for line in lines[n:n + len(want)]] == want]
    if not places:
        return definition_again(text, block, cursor_line, language)
    n = nearest_first(places, cursor_line)[0]
    end = n + len(want)
    # a blank line the user took out with the block goes with it here too
    if hunk.old[-1].strip() == "" and end < len(lines) and not lines[end].strip():
        end += 1
    return make(text, n, end, "", "delete")


def definition_again(text: str, block: tuple[str, ...], cursor_line: int, language: str) -> Candidate | None:
    """The user's deleted lines were a whole definition (its first line opens a body that the last line closes or
    that every later line is indented under): the definition elsewhere with the same first line, at the same
    indentation, goes too, with its own body (found in the syntax tree: a function or method)."""
    head, indent = block[0], _indent(block[0])
    if len(block) < 2 or len(block) > MAX_DEFINITION or len(head.strip()) < MIN_LINE:
        return None
    last = block[-1]
    closed = _indent(last) == indent and (last.strip().startswith("}") or last.strip() == "end")
    under = all(not line.strip() or len(_indent(line)) > len(indent) for line in block[1:])
    if not (closed or under):
        return None
    lines = keep_lines(text)
    places = [n for n, line in enumerate(lines) if line.rstrip("\r\n") == head.rstrip("\r\n")]
    for n in nearest_first(places, cursor_line):
        span = definition(text, n, language)
        if span is not None and span[1] - n >= 2:
            return make(text, span[0], span[1], "", "delete")
    return None


def find(text: str, recent: list[Hunk], cursor_line: int, language: str) -> list[Candidate]:
    hunk = recent[-1]
    c = inserted(text, hunk, cursor_line) or deleted(text, hunk, cursor_line, language)
    return [c] if c is not None else []
