"""What a filter knows of the place a completion goes."""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from ..context.names import bound_names
from ..context.near_lines import first_below, line_after, line_before

# how a line that opens a block ends, per language (a Python line may end in a comment after the colon)
BRACE_LANGUAGES = {"typescript", "tsx", "javascript", "go", "rust", "java", "c", "cpp", "c_sharp", "csharp", "kotlin",
                   "swift", "php", "scala", "dart"}
# how many more lines a one-line completion may take to bind the names the code below needs (see line_end)
DEFINING_LINES = 3
# Python lines that go on with the statement of the block above them, at its level
CLAUSES = {"elif", "else", "except", "finally"}
LINE_COMMENT = {"python": "#", **{lang: "//" for lang in BRACE_LANGUAGES}}


def python_code(line: str) -> str:
    """A Python line without its comment (a `#` inside a string is taken for one too: good enough here)."""
    return line.split("#", 1)[0].rstrip()


def first_word(line: str) -> str:
    """The keyword or name a line starts with (`else` of `    else:`)."""
    return re.match(r"\w*", line.strip()).group()


def indent(line: str) -> int:
    return len(line.expandtabs(4)) - len(line.expandtabs(4).lstrip())


def line_opens_block(line: str, language: str) -> bool:
    """Whether a code line opens a block: a Python line ends in a colon (before its comment), a brace language's in `{`."""
    code = python_code(line) if language == "python" else line.rstrip()
    return code.endswith(":") if language == "python" else language in BRACE_LANGUAGES and code.endswith("{")


def open_brackets(code: str) -> int:
    """How many brackets `code` leaves open (outside string literals and comments, roughly)."""
    depth, quote, i = 0, "", 0
    while i < len(code):
        c = code[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote or c == "\n":
                quote = ""
        elif c in "\"'":
            quote = c
        elif c == "#":
            while i < len(code) and code[i] != "\n":
                i += 1
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        i += 1
    return depth


@dataclass(frozen=True)
class Around:
    prefix: str
    suffix: str
    language: str = "text"
    multiline: bool = True
    truncated: bool = False   # the generation hit its token limit or time budget mid-way
    with_body: bool = True    # a one-line completion that opens a block takes its body along (see opens_block)
    block_of_line: bool = False   # one line was asked for, and it opened a block: the completion is that block
    # names the code below uses that nothing above binds (context.names): a one-line completion that leaves
    # one unbound goes on for a few lines that bind it, if the model writes them
    needs: frozenset[str] = field(default_factory=frozenset)
    # one line was asked for where a block may be missing (context.trigger.Mode.maybe_block): the completion is
    # the block when the model ended the middle by itself (`ended`: end of the middle, or the code below again)
    maybe_block: bool = False
    ended: bool = False
    # (text, lookup): the document's text and a lookup of the context stage's parse of it (None once no longer
    # kept); syntax_cut counts the errors of the text without the completion on it where the text is still
    # prefix + suffix
    parsed: tuple | None = field(default=None, compare=False, repr=False)

    @property
    def line_before(self) -> str:
        return line_before(self.prefix)

    @property
    def line_after(self) -> str:
        return line_after(self.suffix)

    def comment_only(self, line: str) -> bool:
        mark = LINE_COMMENT.get(self.language)
        return bool(mark) and line.lstrip().startswith(mark)

    def code_start(self, middle: str) -> int:
        """Where the first line of `middle` with code begins: after blank lines and whole comment-only lines
        (a model often says what it will write before it writes it)."""
        pos = 0
        while (nl := middle.find("\n", pos)) >= 0:
            line = self.line_before + middle[:nl] if pos == 0 and nl > 0 else middle[pos:nl]
            if line.strip() and not self.comment_only(line):
                break
            pos = nl + 1
        return pos

    def opens_block(self, middle: str) -> bool:
        """Whether the cursor's line, finished by the first line of `middle` with code, opens a block whose
        body the suffix does not hold: a one-line completion then goes on into the body (`if n == 1:` alone is
        broken code)."""
        line = self._opener(middle)
        if line is None:
            return False
        if self.code_start(middle) == 0 and self.line_after.strip():
            return False   # the rest of the line stands right of the cursor: nothing follows it
        nxt = self._next_below()
        return nxt is None or indent(nxt) <= indent(line)

    def body_below(self, middle: str) -> bool:
        """Whether the first code line of `middle` opens a block whose body the suffix already holds (the code
        below is indented deeper): once that line is accepted the hole is filled (HumanEval/132/L5: an `elif`
        missing above its body), and the server keeps no next suggestion after it. (Where the model ended a
        block of its own there, that block is still the first answer: on the multi-line set a hole is as often
        an opener with the first lines of its body above the rest.)"""
        line = self._opener(middle)
        nxt = self._next_below()
        if line is None or nxt is None or indent(nxt) <= indent(line):
            return False
        if self.language == "python" and first_word(nxt) in CLAUSES or \
                set(nxt.strip()) <= set(")]}"):
            return False   # goes on with a statement the hole holds (`else:` of an `if` in it): not the body
        # the model's own body is at the level of the line below (deeper: the line below is in a block the hole
        # opens, HumanEval/127/L0_L2)
        start = self.code_start(middle)
        body = next((l for l in middle[start:].split("\n")[1:] if l.strip()), None)
        return body is None or indent(body) == indent(nxt)

    def _opener(self, middle: str) -> str | None:
        """The cursor's line finished by the first code line of `middle`, if it opens a block."""
        start = self.code_start(middle)
        first = middle[start:].split("\n", 1)[0]
        line = first if start else self.line_before + first
        return line if line_opens_block(line, self.language) else None

    def _next_below(self) -> str | None:
        return first_below(self.suffix)

    def block_end(self, middle: str) -> int:
        """For a `middle` whose first code line opens a block: where that block ends, after its closer (brace
        languages) or before the first line back at the opener's level that does not go on with its statement
        (Python: elif, else, except, finally). Only whole lines (ended by a line break) count; -1 while
        `middle` is still inside the block."""
        start = self.code_start(middle)
        nl = middle.find("\n", start)
        if nl < 0:
            return -1
        base = indent(middle[start:nl] if start else self.line_before + middle[:nl])
        pos = nl + 1
        while (end := middle.find("\n", pos)) >= 0:
            line = middle[pos:end].strip()
            if line and indent(middle[pos:end]) <= base:
                level = indent(middle[pos:end]) == base
                if self.language == "python":
                    if not (level and first_word(line) in CLAUSES):
                        return pos - 1
                elif line.startswith(("}", ")", "]")):
                    if not (level and line.endswith("{")):   # `} else {` goes on
                        return end
                else:
                    return pos - 1
            pos = end + 1
        return -1

    def goes_on(self, middle: str) -> bool:
        """For a one-line completion whose text so far, `middle`, ends at a line end: whether it goes on past
        that line. It does while it has only blank and comment lines (its code line is still to come), through
        the body of a code line that opens a block, to its end (see opens_block, block_end), and through the
        lines after it that bind names the code below needs (see line_end)."""
        return self.line_end(middle + "\n") < 0

    def _line_goes_on(self, middle: str) -> bool:
        if self.code_start(middle + "\n") > len(middle):
            return True
        return self.with_body and self.opens_block(middle) and self.block_end(middle + "\n") < 0

    def _line_end(self, middle: str, start: int = 0) -> int:
        rest = middle[start:]
        body = len(rest) - len(rest.lstrip())
        if body >= len(rest):
            return -1
        end = middle.find("\n", start + body)
        while end >= 0 and self._line_goes_on(middle[:end]):
            end = middle.find("\n", end + 1)
        return end

    def line_end(self, middle: str, start: int = 0, final: bool = False) -> int:
        """Where in `middle` a one-line completion ends (its first code line's end, with the body of a block
        that line opens), looking past `start` (what the user has typed of it already); -1 when `middle` does
        not reach that end. Where that line leaves names the code below needs unbound (`needs`), the
        completion takes up to DEFINING_LINES more lines of its level, to the one that binds the last of them;
        if they do not, it is the first line alone, and so it is when the text ends before (`final`)."""
        end = self._line_end(middle, start)
        if end < 0 or not self.needs or self.language != "python":
            return end
        if final and not self.truncated and not middle.endswith("\n"):   # it stopped at a line end, cut there
            return min(len(middle), self.line_end(middle + "\n", start, final))
        missing = self.needs - bound_names(self.line_before + middle[:end], self.language)
        if not missing:
            return end
        first = end
        at = self.code_start(middle)
        nl = middle.find("\n", at)
        level = indent(middle[at:nl] if at else self.line_before + middle[:nl])
        for _ in range(DEFINING_LINES):
            nxt = replace(self, prefix=self.prefix + middle[:end + 1], needs=frozenset())
            rest = middle[end + 1:]
            more = nxt._line_end(rest)
            if more < 0:
                return first if final else -1
            code = rest[nxt.code_start(rest):]
            if code.strip() and indent(code) != level or nxt.opens_block(rest):
                return first   # the block's end, or a block of its own: not a line of the answer's
            end += 1 + more
            while open_brackets(middle[first + 1:end]) > 0:   # a value over several lines: to its end
                more = middle.find("\n", end + 1)
                if more < 0:
                    return first if final else -1
                end = more
            missing = missing - bound_names(middle[first + 1:end], self.language)
            if not missing:
                return end
        return first
