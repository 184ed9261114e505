"""A multi-line completion stays in the block it starts in: it ends before the first line indented less than
the cursor's line, and, after it has gone deeper, before a blank line followed by a new statement at the
cursor's own level (the next function, the next class). Closers at the cursor's level (`}`) end it too but
are kept: they close what the completion opened.

Where the model ended the middle by itself (`Around.ended`), a lower line that goes on with the code above
is still the hole's: a Python clause (`else:`, `elif`, `except`) of a statement open above, or a closer of a
bracket the text around the hole leaves open. The completion's level drops to that line's (HumanEval/56: the
`if` body, then `elif ...:` and its body, then the loop's next statement).

Where nothing of the cursor's Python function follows the hole (the code below is the next definition, or
nothing), the hole is the function's end: the completion may go down to the function's body level, and ends
below it (HumanEval/119/L6_L9: the `else` body, then the `if` after the loop, then the function's `return`)."""
import re

from .around import CLAUSES, Around, first_word, indent, open_brackets

CLOSER_LINE = set(")]};, \t")
# the statements a Python clause goes on with (`else` also ends a loop or a `try`)
CLAUSE_OF = {"if", "elif", "else", "for", "while", "try", "except"}


def apply(completion: str, around: Around) -> str:
    if not around.multiline or "\n" not in completion:
        return completion
    lines = completion.split("\n")
    # the cursor's line as completed: at column 0 of an empty line the completion brings its own indentation
    line = around.line_before + lines[0]
    base = indent(line) if line.strip() else indent(line + "x")
    # the first line continues the cursor's line; its indentation is the cursor's
    deeper, blank_seen = False, False
    floor = function_end_floor(around, base)
    for i, line in enumerate(lines[1:], start=1):
        if not line.strip():
            blank_seen = True
            continue
        ind = indent(line)
        if ind < base:
            if not (ind >= floor or around.ended and goes_on_above(around, lines[:i], line)):
                return "\n".join(lines[:i])
            base, deeper, blank_seen = ind, False, False
            continue
        if ind == base and deeper and blank_seen and not set(line) <= CLOSER_LINE:
            return "\n".join(lines[:i])
        if ind > base:
            deeper = True
        if set(line) <= CLOSER_LINE:
            blank_seen = False
    return completion


def goes_on_above(around: Around, written: list[str], line: str) -> bool:
    """Whether `line`, indented below the completion's level, goes on with the code above the hole."""
    ind = indent(line)
    if set(line) <= CLOSER_LINE:
        # a bracket is left open by the text around the hole (a dict literal whose end is in the hole)
        return around.language == "python" and open_brackets(around.prefix + around.suffix) > 0 \
            and open_brackets(around.prefix + "\n".join(written)) > 0
    if around.language != "python" or first_word(line) not in CLAUSES:
        return False
    above = (around.prefix + "\n".join(written)).split("\n")
    opener = next((l for l in reversed(above) if l.strip() and indent(l) <= ind), "")
    return indent(opener) == ind and first_word(opener) in CLAUSE_OF


def function_end_floor(around: Around, base: int) -> int:
    """The lowest level the completion may go down to where the hole ends its Python function (see above):
    just inside that function; elsewhere `base`, its own."""
    if around.language != "python":
        return base
    head = next((l for l in reversed(around.prefix.split("\n")[:-1])
                 if l.strip() and indent(l) < base and re.match(r"\s*(async\s+)?def\s", l)), None)
    if head is None:
        return base
    below = next((l for l in around.suffix.split("\n")[1:] if l.strip()), None)
    if below is not None and indent(below) > indent(head):
        return base   # the function goes on below the hole: its code says where the hole ends
    return indent(head) + 1
