"""Python: a completion that starts a line takes an indentation its neighbours allow.

A line deeper than the plain statement above it, or a simple statement left of a deeper line below it, is an
IndentationError whatever it says; the first line of a block's body at or left of its opener is one too. Such
a completion moves, all its lines by the same amount, to the level the code around it leaves: the opener's
body as the suffix shows it, else the statement above's. Anything the neighbours do not force is left alone.
"""
from ..context.near_lines import first_below, head_lines, tail_lines
from .around import CLAUSES, Around, first_word, indent, python_code as _code


def _statements(text: str) -> tuple[list[str], bool]:
    """The statements of text, each from the line it starts on (not inside a bracket or a string, so its
    indentation counts) to the next one, and whether text ends inside a bracket or a string (the cursor's
    line is then no statement)."""
    depth, quote, i, starts = 0, "", 0, [0]
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if text.startswith(quote, i):
                i += len(quote)
                quote = ""
                continue
            if ch == "\n" and len(quote) == 1:
                quote = ""   # an unterminated one-line string: broken code, not our concern here
        elif ch == "#":
            nl = text.find("\n", i)
            i = len(text) if nl < 0 else nl
            continue
        elif ch in "\"'":
            quote = ch * 3 if text.startswith(ch * 3, i) else ch
            i += len(quote)
            continue
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth = max(0, depth - 1)
        elif ch == "\n" and depth == 0 and text[i - 1:i] != "\\":
            starts.append(i + 1)
        i += 1
    ends = starts[1:] + [len(text)]
    return [text[a:b].rstrip("\n") for a, b in zip(starts, ends)], \
        depth > 0 or bool(quote) or text.rstrip().endswith("\\")


def _recent(prefix: str, chars: int = 6000) -> str:
    """The prefix from the last top-level line within reach: where bracket and string state start afresh."""
    if len(prefix) <= chars:
        return prefix
    tail = prefix[-chars:]
    i = tail.find("\n")
    while i >= 0:
        if tail[i + 1:i + 2].strip():
            return tail[i + 1:]
        i = tail.find("\n", i + 1)
    return prefix


def _opens(statement: str) -> bool:
    """Whether a statement (or a line) opens a block: its last line ends in a colon (`follows:` in the first line
    of a docstring opens nothing)."""
    return _code(statement.rstrip().rsplit("\n", 1)[-1]).endswith(":")


def _target(statements: list[str], around: Around, first: str, last: str) -> int | None:
    code = [st for st in statements if st.strip() and not st.lstrip().startswith("#")]
    if not code:
        return None
    # indentation from the statement's first line, whether it opens a block from its last
    prev = code[-1]
    nxt = first_below(around.suffix, lambda l: bool(l.strip()) and not l.lstrip().startswith("#"))
    p, c = indent(prev), indent(first)
    n = indent(nxt) if nxt is not None else None
    if last is first and _opens(first) and n is not None and n <= c and first_word(first) not in CLAUSES:
        # one line, an opener, and the line below, which can only be its body, is not deeper (HumanEval/39/L14
        # `if n == 0:` written at the level of `return f[-1]` below it): the deepest level the code above allows
        # that puts the opener left of its body. (A longer completion ending in such an opener was cut short
        # there: the line is dropped, not the block moved.)
        return _opener_level(code, c, n)
    if _opens(prev):
        # the body's first line: one level in, where the suffix's body lines stand; also a plain statement in
        # it left of a deeper line below, which can only be that body's (HumanEval/95/L17: `state = "mixed"`
        # a level above the `break` under it)
        if n is None or n <= p:
            return None
        plain = last is first and not _opens(first) and not _statements(first.strip())[1]
        return n if c <= p or (plain and n > c) else None
    if c > p:
        return p
    # (unless the completion's own last line opens the block the deeper line below belongs to: HumanEval/5/L3_L5,
    # `result = []` and `for n in numbers[:-1]:` after an `if`'s `return []`)
    if c < p and n is not None and n > c and not _opens(first) and n <= p \
            and not (_opens(last) and n > indent(last)):
        return n
    return None


def _opener_level(code: list[str], c: int, n: int) -> int | None:
    """Where an opener at `c` goes so that the line below (at `n`) is its body: after an opener (the last of
    `code`, the statements above), one of the file's indentation steps into that one's body (HumanEval/109/L9,
    two-space steps); else the level of the statement above or of a block it is in, never out to the top level
    from within one."""
    p = indent(code[-1])
    if _opens(code[-1]):
        steps = [indent(b) - indent(a) for a, b in zip(code, code[1:]) if _opens(a) and indent(b) > indent(a)]
        step = max(set(steps), key=steps.count) if steps else 4
        t = p + step
        return t if t < n and t != c else None
    levels, lowest = [], p + 1
    for st in reversed(code):
        if indent(st) < lowest:
            lowest = indent(st)
            levels.append(lowest)
    return next((t for t in levels if t < n and t != c and (t > 0 or p == 0)), None)


def apply(completion: str, around: Around) -> str:
    if around.language != "python" or around.line_before.strip() or around.line_after.strip():
        return completion
    lines = completion.split("\n")
    first = around.line_before + lines[0]
    if not first.strip():
        return completion
    statements, open_at_end = _statements(_recent(around.prefix))
    if open_at_end:
        return completion
    neighbours = tail_lines(around.prefix, 3).split("\n") + head_lines(around.suffix, 3).split("\n")
    if any(l[:len(l) - len(l.lstrip())].count("\t") for l in neighbours + lines):
        return completion   # tabs: which width the file means is not ours to guess
    # the cursor's own line is the last one: it is not the line above
    last = next((l for l in reversed(lines[1:]) if l.strip() and not l.lstrip().startswith("#")), first)
    t = _target(statements[:-1], around, first, last)
    if t is None or t == indent(first):
        return completion
    delta = t - indent(first)
    out = []
    for line in lines:
        if not line.strip():
            out.append(line)
        elif delta > 0:
            out.append(" " * delta + line)
        elif len(line) - len(line.lstrip(" ")) >= -delta:
            out.append(line[-delta:])
        else:
            return completion   # the cursor's own indentation would have to go: not an insertion
    return "\n".join(out)
