"""Drop whitespace-only completions, trailing blank lines and trailing spaces: the suffix already carries
the layout that follows."""
from .around import Around


def apply(completion: str, around: Around) -> str:
    if not completion.strip():
        return ""
    lines = completion.split("\n")
    while len(lines) > 1 and not lines[-1].strip():
        lines.pop()
    lines[-1] = lines[-1].rstrip()
    return "\n".join(lines)
