"""A Python completion does not end in a statement that makes the code below unreachable: a `return`, `raise`,
`break` or `continue` at the level of the next code line below (one that is not a clause such as `else:`)
turns that line into dead code. The model went its own way there (HumanEval/126/L4: `return lst ==
sorted(lst)` written above `if all(...)`, after the `return False` the hole wanted); the line is dropped."""
import re

from ..context.near_lines import first_below
from .around import CLAUSES, Around, first_word, indent, line_opens_block

TERMINATOR = re.compile(r"(return|raise|break|continue)\b")


def apply(completion: str, around: Around) -> str:
    if around.language != "python" or around.line_after.strip():
        return completion
    below = first_below(around.suffix, lambda l: bool(l.strip()) and not around.comment_only(l))
    if below is None or first_word(below) in CLAUSES or set(below.strip()) <= set(")]}"):
        return completion
    lines = completion.split("\n")
    last = max((i for i, l in enumerate(lines) if l.strip()), default=-1)
    if last < 0:
        return completion

    def whole(i: int) -> str:   # a line of the completion as the file will hold it (the first one after the cursor)
        return lines[i] if i else around.line_before + lines[0]

    line = whole(last)
    if indent(line) == indent(below) and TERMINATOR.match(line.strip()):
        # an opener whose body was that line goes with it: the line below would become its body
        # (HumanEval/161/L6: `if flg == 0:` over `return s[::-1]`, above the loop's `idx += 1`)
        end = last
        while True:
            i = max((j for j in range(end) if lines[j].strip() and not around.comment_only(lines[j])), default=-1)
            if i < 0 or not line_opens_block(whole(i), "python") or indent(whole(i)) >= indent(line):
                break
            end = i
        kept = "\n".join(lines[:end])
        # what is left must hold code: a comment the model wrote above its line is no answer on its own
        return kept if any(l.strip() and not around.comment_only(l) for l in kept.split("\n")) else ""
    return completion
