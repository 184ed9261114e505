"""A multi-line completion cut short by the token limit or the time budget keeps its whole lines only."""
from .around import Around


def apply(completion: str, around: Around) -> str:
    if not around.truncated or not around.multiline or "\n" not in completion:
        return completion
    return completion.rsplit("\n", 1)[0]
