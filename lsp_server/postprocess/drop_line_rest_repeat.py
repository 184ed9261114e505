"""Drop the end of a one-line completion that writes again the text already right of the cursor on its line
(asked for there by key: `return | * height` answered `width * height` shows `width`). Closers alone are
drop_closer_overlap's."""
from .around import Around

CLOSERS = set(")]};,")


def apply(completion: str, around: Around) -> str:
    rest = around.line_after.strip()
    body = completion.rstrip()
    if not rest or set(rest) <= CLOSERS or "\n" in body or not body.endswith(rest):
        return completion
    kept = body[:-len(rest)]
    # the spaces between the answer and the text right of the cursor are the line's own when it starts with them
    return kept.rstrip(" \t") if around.line_after[:1] in " \t" else kept
