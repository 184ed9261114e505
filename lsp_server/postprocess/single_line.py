"""Mid-statement the editor wants one line: the rest of the cursor's line, or, when the model ends that line
at once, the next line (with the line break). Comment lines before that line come along with it: the model
said what it would write, and the line it then writes is the answer."""
from dataclasses import replace

from .around import Around


def apply(completion: str, around: Around) -> str:
    if around.multiline:
        return completion
    end = replace(around, with_body=False).line_end(completion, final=True)
    if end >= 0:
        return completion[:end]
    return completion if completion.strip() else ""
