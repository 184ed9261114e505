"""Cut degenerate output: a line that ends in a short pattern repeated many times (`)))))))`, `a, a, a, a,`),
and a run of three or more identical lines (keep the first of them)."""
import re

from .around import Around

REPEATED_TAIL = re.compile(r"(.{1,12}?)\1{5,}\s*$")
MAX_SAME_LINES = 2


def apply(completion: str, around: Around) -> str:
    lines = completion.split("\n")
    out: list[str] = []
    for line in lines:
        m = REPEATED_TAIL.search(line)
        if m and m.group(1).strip():
            line = line[:m.start() + len(m.group(1))].rstrip()
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
