"""A multi-line completion cut short (the token limit, the time budget, an early answer) stays in the block it
starts in: it ends before the first line indented less than the cursor's line, and, after it has gone deeper,
before a blank line followed by a new statement at the cursor's own level (the next function, the next class).
Closers at the cursor's level (`}`) end it too but are kept: they close what the completion opened.

Where nothing of the cursor's Python function follows the hole (the code below is the next definition, or
nothing), the hole is the function's end: the completion may go down to the function's body level, and ends
below it (HumanEval/119/L6_L9: the `else` body, then the `if` after the loop, then the function's `return`).

Where the model ended the middle by itself (`Around.ended`), it has said where the hole ends: its text is the
answer up to a line that leaves the (outermost) function the cursor is in, such as the next function. On the
multi-line development set, cutting such answers at the block's end or at a blank line had lost 165 tasks for
2 (tune half 58.7 -> 64.9 %, confirm 57.5 -> 63.1 %: two loops apart by a blank line, a function's last
statement after a dedent)."""
import re

from ..context.near_lines import first_above, first_below, lines_above
from .around import Around, indent, line_opens_block

CLOSER_LINE = set(")]};, \t")
FUNCTION = re.compile(r"\s*(async\s+)?def\s")
CLASS = re.compile(r"\s*class\s")


def apply(completion: str, around: Around) -> str:
    if not around.multiline or "\n" not in completion:
        return completion
    if around.ended:
        return _in_its_definition(completion, around)
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
            if ind < floor:
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


def _in_its_definition(completion: str, around: Around) -> str:
    """An answer the model ended, up to a line that leaves the function the cursor is in (the next function, a
    clause at the top level): what lies between the code above and below is inside that function."""
    lines = completion.split("\n")
    line = around.line_before + lines[0]
    base = indent(line) if line.strip() else indent(line + "x")
    head, level = None, base
    for above in lines_above(around.prefix):
        if level == 0:
            break   # nothing further up is left of it
        if above.strip() and indent(above) < level:
            level = indent(above)
            if around.language == "python" and CLASS.match(above):
                break   # its next method is not the cursor's function
            if line_opens_block(above, around.language) and (around.language != "python" or FUNCTION.match(above)):
                head = above   # the outermost function around the cursor (a nested one's hole may go on below it)
    if head is None:
        return completion
    for i, line in enumerate(lines[1:], start=1):
        if line.strip() and indent(line) <= indent(head) and not set(line) <= CLOSER_LINE:
            return "\n".join(lines[:i])
    return completion


def function_end_floor(around: Around, base: int) -> int:
    """The lowest level the completion may go down to where the hole ends its Python function (see above):
    just inside that function; elsewhere `base`, its own."""
    if around.language != "python":
        return base
    head = first_above(around.prefix, lambda l: bool(l.strip()) and indent(l) < base
                       and re.match(r"\s*(async\s+)?def\s", l) is not None)
    if head is None:
        return base
    below = first_below(around.suffix)
    if below is not None and indent(below) > indent(head):
        return base   # the function goes on below the hole: its code says where the hole ends
    return indent(head) + 1

