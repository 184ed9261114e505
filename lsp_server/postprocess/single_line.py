"""Mid-statement the editor wants one line: the rest of the cursor's line, or, when the model ends that line
at once, the next line (with the line break)."""
from .around import Around


def apply(completion: str, around: Around) -> str:
    if around.multiline:
        return completion
    lines = completion.split("\n")
    for i, line in enumerate(lines):
        if line.strip():
            return "\n".join(lines[:i + 1])
    return ""
