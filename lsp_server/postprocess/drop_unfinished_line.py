"""A completion cut short by the token limit or the time budget keeps what is whole: a block its whole lines,
a single line everything before a word that may be cut in two."""
import re

from .around import Around

LAST_WORD = re.compile(r"(?<=[^A-Za-z0-9_])[A-Za-z0-9_]+$")


def apply(completion: str, around: Around) -> str:
    if not around.truncated:
        return completion
    if around.multiline and "\n" in completion.strip():
        head, _, last = completion.rpartition("\n")
        # cut right after a line break (maybe with the next line's indentation): every line is whole
        return completion if not last.strip() else head
    return LAST_WORD.sub("", completion).rstrip()
