"""A multi-line completion stays in the block it starts in: it ends before the first line indented less than
the cursor's line, and, after it has gone deeper, before a blank line followed by a new statement at the
cursor's own level (the next function, the next class). Closers at the cursor's level (`}`) end it too but
are kept: they close what the completion opened."""
from .around import Around, indent

CLOSER_LINE = set(")]};, \t")



def apply(completion: str, around: Around) -> str:
    if not around.multiline or "\n" not in completion:
        return completion
    lines = completion.split("\n")
    # the cursor's line as completed: at column 0 of an empty line the completion brings its own indentation
    line = around.line_before + lines[0]
    base = indent(line) if line.strip() else indent(line + "x")
    # the first line continues the cursor's line; its indentation is the cursor's
    deeper, blank_seen = False, False
    for i, line in enumerate(lines[1:], start=1):
        if not line.strip():
            blank_seen = True
            continue
        ind = indent(line)
        if ind < base:
            return "\n".join(lines[:i])
        if ind == base and deeper and blank_seen and not set(line) <= CLOSER_LINE:
            return "\n".join(lines[:i])
        if ind > base:
            deeper = True
        if set(line) <= CLOSER_LINE:
            blank_seen = False
    return completion
