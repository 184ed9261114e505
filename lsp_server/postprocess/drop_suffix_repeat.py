"""Drop the end of a completion that writes again the lines already below the cursor (the next statement,
the block's closing line)."""
import re

from ..context.near_lines import lines_below
from .around import Around


def _norm(line: str) -> str:
    # a line of closers is told apart by its level: the `}` of an inner block is not the function's below
    code = line.strip()
    return line.rstrip().expandtabs(4) if set(code) <= CLOSERS else same_code(code)


def same_code(code: str) -> str:
    """A line of code up to the spaces around its operators and punctuation (`i += 1` is `i+=1`)."""
    return PUNCT_SPACE.sub(r"\1", code.strip())


PUNCT_SPACE = re.compile(r"\s*([^\w\s])\s*")


CLOSERS = set(")]};,")


def _below(suffix: str, n: int) -> list[str]:
    """The first n lines with code below the cursor's line, normalized: a completion of n lines can repeat no
    more (normalizing the rest of a 4 MB file took 1.4 s at every answer)."""
    out: list[str] = []
    for line in lines_below(suffix):
        if len(out) == n:
            break
        if line.strip():
            out.append(_norm(line))
    return out


def apply(completion: str, around: Around) -> str:
    lines = completion.split("\n")
    below = _below(around.suffix, len(lines))
    if not below or len(lines) < 2:
        return completion
    rest_of_line = _norm(around.line_after)
    # find the earliest completion line from which the rest repeats the lines below, in order
    for i in range(1, len(lines)):
        tail = [_norm(l) for l in lines[i:] if l.strip()]
        if not tail:
            break
        if tail == below[:len(tail)] or (rest_of_line and tail == ([rest_of_line] + below)[:len(tail)]):
            return "\n".join(lines[:i])
    return completion
