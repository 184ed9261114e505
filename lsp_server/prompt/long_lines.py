"""Lines too long for a prompt: a minified bundle, a base64 blob, a table of data on one line. A page starts at a
line and the cursor's line is taken whole (pages.py), so one line of megabytes above the cursor made a prompt of a
million tokens: seconds of tokenizing at every request, then an error that it does not fit the context. Each
line is cut to LINE_CHARS before anything is tokenized: a long line keeps its start and its end (what it binds,
what closes it), the cursor's line the LINE_CHARS nearest the cursor on either side (fim.py then keeps at most
its prefix budget, or PARTIAL_TOKENS, of the cursor's line). The line count does not change, so pages, outlines
and imports still name the document's lines."""
from __future__ import annotations

# above any line written by hand (SAFIM's problem statements, one paragraph a line, reach 3,016 characters)
LINE_CHARS = 4000
# the most of the cursor's line (with the blank lines below the line of text it belongs to) a prompt takes, where
# its prefix budget is smaller: a line written by hand fits (about 900 characters), and a longer one costs a
# fast prompt no more than a page of its own (each token ~10 ms to evaluate on a 2-core CPU)
PARTIAL_TOKENS = 256


def _cut(line: str) -> str:
    half = LINE_CHARS // 2
    return line[:half] + line[-half:] if len(line) > LINE_CHARS else line


def _has_long(text: str) -> bool:
    return len(text) > LINE_CHARS and max(map(len, text.split("\n"))) > LINE_CHARS


def clip_long_lines(prefix: str, suffix: str) -> tuple[str, str]:
    """The text before and after the cursor with every line cut to LINE_CHARS (the same strings where none is
    longer)."""
    if not (_has_long(prefix) or _has_long(suffix)):
        return prefix, suffix
    above, nl, before = prefix.rpartition("\n")
    after, nl2, below = suffix.partition("\n")
    prefix = ("\n".join(map(_cut, above.split("\n"))) if nl else "") + nl + before[-LINE_CHARS:]
    suffix = after[:LINE_CHARS] + nl2 + ("\n".join(map(_cut, below.split("\n"))) if nl2 else "")
    return prefix, suffix
