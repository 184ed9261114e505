"""A block cut short (by the token limit, the time budget or an early answer) is never shown unclosed: code the
user accepts must still compile. In a brace language the brackets the completion opened and left open are
closed, each on a line of its own at the level of the line that opened it (`})` where a call's lambda opened
both); the statement the cut left unfinished is already gone (drop_unfinished_line). In Python a trailing
line that opens a block with no body yet is dropped, and so is a statement whose brackets the cut left open.
(store.go in a fresh-clone CI run on a slow day: `ok {` and `return 0, ErrNotFound`, no `}`.)"""
from .around import BRACE_LANGUAGES, Around, python_code

PAIRS = {"(": ")", "[": "]", "{": "}"}


def unclosed(lines: list[str], comment: str, quotes: str = "\"'`") -> list[tuple[str, int]] | None:
    """The brackets left open by `lines`, outermost first, each with the index of the line that opened it;
    None where the text closes more than it opens (it closes something of the code above the hole: not ours)."""
    stack: list[tuple[str, int]] = []
    quote = ""
    for n, line in enumerate(lines):
        i = 0
        while i < len(line):
            c = line[i]
            if quote:
                if c == "\\":
                    i += 1
                elif c == quote:
                    quote = ""
            elif c in quotes:
                quote = c
            elif line.startswith(comment, i):
                break
            elif c in PAIRS:
                stack.append((c, n))
            elif c in ")]}":
                if not stack or PAIRS[stack[-1][0]] != c:
                    return None
                stack.pop()
            i += 1
        if quote != "`":
            quote = ""   # a string does not go on past its line, but a template literal may
    return stack


def apply(completion: str, around: Around) -> str:
    if not around.truncated or not around.multiline and not around.block_of_line or "\n" not in completion:
        return completion
    if around.language == "python":
        return _python(completion, around)
    if around.language not in BRACE_LANGUAGES:
        return completion
    lines = completion.split("\n")
    first = around.line_before + lines[0]
    # Rust's `'a` is a lifetime, not a quote
    stack = unclosed([first] + lines[1:], "//", "\"`" if around.language == "rust" else "\"'`")
    if not stack:
        return completion
    closers: list[str] = []
    while stack:
        at = stack[-1][1]
        run = ""
        while stack and stack[-1][1] == at:
            run += PAIRS[stack.pop()[0]]
        src = first if at == 0 else lines[at]
        closers.append(src[:len(src) - len(src.lstrip())] + run)
    return completion.rstrip() + "\n" + "\n".join(closers)


def _python(completion: str, around: Around) -> str:
    lines = completion.split("\n")
    while len(lines) > 1:
        if not lines[-1].strip():
            lines.pop()
            continue
        stack = unclosed([around.line_before + lines[0]] + lines[1:], "#")
        if stack:   # a statement over several lines, cut inside its brackets: drop it whole
            cut = stack[0][1]
        elif python_code(lines[-1]).endswith(":"):   # an opener whose body the cut left out
            cut = len(lines) - 1
        else:
            break
        if cut == 0:
            return completion   # the first line itself: nothing whole to show instead
        lines = lines[:cut]
    return "\n".join(lines)
