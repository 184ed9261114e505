"""What a filter knows of the place a completion goes."""
from __future__ import annotations

from dataclasses import dataclass

# how a line that opens a block ends, per language (a Python line may end in a comment after the colon)
BRACE_LANGUAGES = {"typescript", "tsx", "javascript", "go", "rust", "java", "c", "cpp", "c_sharp", "kotlin",
                   "swift", "php", "scala", "dart"}


def python_code(line: str) -> str:
    """A Python line without its comment (a `#` inside a string is taken for one too: good enough here)."""
    return line.split("#", 1)[0].rstrip()


def indent(line: str) -> int:
    return len(line.expandtabs(4)) - len(line.expandtabs(4).lstrip())


@dataclass(frozen=True)
class Around:
    prefix: str
    suffix: str
    language: str = "text"
    multiline: bool = True
    truncated: bool = False   # the generation hit its token limit or time budget mid-way
    with_body: bool = True    # a one-line completion that opens a block takes its body along (see opens_block)

    @property
    def line_before(self) -> str:
        return self.prefix.rsplit("\n", 1)[-1]

    @property
    def line_after(self) -> str:
        return self.suffix.split("\n", 1)[0]

    def opens_block(self, middle: str) -> bool:
        """Whether the cursor's line, finished by the first line of `middle`, opens a block whose body the
        suffix does not hold: a one-line completion then goes on into the body (`if n == 1:` alone is broken
        code)."""
        body = len(middle) - len(middle.lstrip("\n"))
        first = middle[body:].split("\n", 1)[0]
        line = first if body else self.line_before + first
        code = python_code(line) if self.language == "python" else line.rstrip()
        if not (code.endswith(":") if self.language == "python" else
                self.language in BRACE_LANGUAGES and code.endswith("{")):
            return False
        after = self.line_after if body == 0 else ""
        if after.strip():
            return False   # the rest of the line stands right of the cursor: nothing follows it
        for nxt in self.suffix.split("\n")[1:]:
            if nxt.strip():
                return indent(nxt) <= indent(line)
        return True
