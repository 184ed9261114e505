"""A Python completion does not end in a statement that makes the code below unreachable: a `return`, `raise`,
`break` or `continue` at the level of the next code line below (one that is not a clause such as `else:`)
turns that line into dead code. The model went its own way there (HumanEval/126/L4: `return lst ==
sorted(lst)` written above `if all(...)`, after the `return False` the hole wanted); the line is dropped."""
import re

from .around import CLAUSES, Around, first_word, indent, python_code

TERMINATOR = re.compile(r"(return|raise|break|continue)\b")


def apply(completion: str, around: Around) -> str:
    if around.language != "python" or around.line_after.strip():
        return completion
    below = next((l for l in around.suffix.split("\n")[1:] if l.strip() and not around.comment_only(l)), None)
    if below is None or first_word(below) in CLAUSES or set(below.strip()) <= set(")]}"):
        return completion
    lines = completion.split("\n")
    last = max((i for i, l in enumerate(lines) if l.strip()), default=-1)
    if last < 0:
        return completion
    line = lines[last] if last else around.line_before + lines[0]
    if indent(line) == indent(below) and TERMINATOR.match(line.strip()):
        kept_lines = lines[:last]
        # an opener whose body was that line goes with it: the line below would become its body
        # (HumanEval/161/L6: `if flg == 0:` over `return s[::-1]`, above the loop's `idx += 1`)
        while kept_lines:
            i = max((j for j, l in enumerate(kept_lines) if l.strip() and not around.comment_only(l)), default=-1)
            opener = kept_lines[i] if i > 0 else around.line_before + kept_lines[0] if i == 0 else ""
            if i < 0 or not python_code(opener).endswith(":") or indent(opener) >= indent(line):
                break
            kept_lines = kept_lines[:i]
        kept = "\n".join(kept_lines)
        # what is left must hold code: a comment the model wrote above its line is no answer on its own
        return kept if any(l.strip() and not around.comment_only(l) for l in kept.split("\n")) else ""
    return completion
