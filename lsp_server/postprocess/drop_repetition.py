"""Cut degenerate output: a line that ends in a pattern repeated many times (`)))))))`, `a, a, a, a,`, ` or
s.split(" ")` written until the token limit), and a run of three or more identical lines (keep the first of them)."""
import re

from .around import Around

REPEATED_TAIL = re.compile(r"(.{1,12}?)\1{5,}\s*$")
# a longer pattern (a call, a clause) four times or more in a row, to the line's end or to a copy cut short there:
# code that means it seldom ends a line so, a model caught in a loop does until its token limit (HumanEval/101/L0_L12)
LONG_REPEAT = re.compile(r"(.{13,64}?)\1{3,}")
MAX_SAME_LINES = 2


def _loop_end(line: str) -> int | None:
    """Where a line whose tail is a pattern written over and over is cut: after one copy of it, or None."""
    m = REPEATED_TAIL.search(line)
    if m and m.group(1).strip():
        return m.start() + len(m.group(1))
    for m in LONG_REPEAT.finditer(line):
        unit = m.group(1)
        if unit.strip() and unit.startswith(line[m.end():].rstrip()):
            # the copies are as well read from any point of the first; one from a space keeps the clause whole
            # (` or s.split(" ")`, not `) or s.split(" "`)
            k = next((i for i, c in enumerate(unit) if c.isspace()), 0)
            return m.start() + k + len(unit)
    return None


def apply(completion: str, around: Around) -> str:
    lines = completion.split("\n")
    out: list[str] = []
    for line in lines:
        end = _loop_end(line)
        if end is not None:
            line = line[:end].rstrip()
            if line.strip():
                out.append(line)
            break
        same = line.strip()
        if same and len(out) >= MAX_SAME_LINES and all(o.strip() == same for o in out[-MAX_SAME_LINES:]):
            while len(out) > 1 and out[-1].strip() == same and out[-2].strip() == same:
                out.pop()
            break
        out.append(line)
    return "\n".join(out)
