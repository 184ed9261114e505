"""A completion cut short by the token limit or the time budget keeps what is whole: a block its whole lines,
a single line everything before a word that may be cut in two; a completion cut right after a line break is
whole as it is."""
import re

from .around import Around

# \Z, not $: `$` also matches before a final line break, and a line that ended is not cut
LAST_WORD = re.compile(r"(?<=[^A-Za-z0-9_])[A-Za-z0-9_]+\Z")


def apply(completion: str, around: Around) -> str:
    if not around.truncated:
        return completion
    if "\n" in completion:
        head, _, last = completion.rpartition("\n")
        if not last.strip():   # cut right after a line break (maybe with the next line's indentation)
            return completion
        if around.multiline and head.strip():
            return head
    return LAST_WORD.sub("", completion).rstrip()
