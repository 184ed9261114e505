"""Lines elsewhere in the cursor's own file that look like the code just above it, for a fast prompt's head.

A fast prompt (the nearest lines) is what answers at a new place on a slow machine, and it does not see the rest of
the file, where the model alone (the whole file in its prompt) finds the file's own patterns: the same error check
after every allocation, a sibling method's signature. Copilot and Continue retrieve such snippets from the open
files by the Jaccard similarity of their words with the code at the cursor; here the document itself is searched,
outside the lines the fast prompt holds. No LSP, no tree-sitter: lines and words.
"""
from __future__ import annotations

import re
from collections import OrderedDict
from dataclasses import dataclass

WORD = re.compile(r"[A-Za-z_$][\w$]*")
# the query: the non-blank lines right above the cursor's line (not the cursor's own line, so that typing on it
# keeps the choice, and with it the fast prompt's head and its cached state)
QUERY_LINES = 6
# lines around the cursor a fast prompt holds anyway (its nearest lines above, a few below): no window there
SKIP_ABOVE, SKIP_BELOW = 40, 8
# below this a window shares too little with the query to be worth its tokens
MIN_SCORE = 0.3
MAX_FILE_LINES = 20_000
# a window (as many lines as the query) is shown with the lines that follow it, and where cut to the budget, with
# at least MIN_LINES lines
FOLLOW_LINES = 3
MIN_LINES = 3


@dataclass(frozen=True)
class Similar:
    start: int      # 0-based first line in the document
    text: str
    score: float


def words(text: str) -> frozenset[str]:
    return frozenset(WORD.findall(text))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 0.0


def query_of(lines: list[str], line: int) -> frozenset[str]:
    above = [l for l in lines[max(0, line - 3 * QUERY_LINES):line] if l.strip()][-QUERY_LINES:]
    return words("\n".join(above))


def similar_lines(text: str, line: int, max_chars: int) -> list[Similar]:
    """The places in `text` most like the lines above `line` (0-based): each a window of as many lines as the
    query, with the lines after it, where the file went on from code like the cursor's (what the model is to write
    next), cut from the top to fit; outside the fast prompt's reach, not overlapping, within `max_chars` in all,
    in the file's order."""
    if max_chars <= 0:
        return []
    lines = text.split("\n")
    if len(lines) > MAX_FILE_LINES:
        return []
    query = query_of(lines, line)
    if len(query) < 4:
        return []
    per_line = [words(l) for l in lines]
    scored = []
    for start in range(0, max(1, len(lines) - QUERY_LINES + 1)):
        end = start + QUERY_LINES
        if end + FOLLOW_LINES > line - SKIP_ABOVE and start < line + SKIP_BELOW:
            continue
        window = frozenset().union(*per_line[start:end])
        score = jaccard(query, window)
        if score >= MIN_SCORE:
            scored.append((score, start))
    out: list[Similar] = []
    taken: list[int] = []   # the windows shown (their starts; a shown text may begin lower, cut from the top)
    used = 0
    for score, start in sorted(scored, key=lambda s: (-s[0], s[1])):
        if any(abs(start - t) < QUERY_LINES + FOLLOW_LINES for t in taken):
            continue
        kept, n = [], used
        for l in reversed(lines[start:start + QUERY_LINES + FOLLOW_LINES]):
            if n + len(l) + 1 > max_chars:
                break
            kept.insert(0, l)
            n += len(l) + 1
        if len([l for l in kept if l.strip()]) < MIN_LINES:
            continue
        first = start + QUERY_LINES + FOLLOW_LINES - len(kept)
        out.append(Similar(first, "\n".join(kept).strip("\n"), round(score, 3)))
        taken.append(start)
        used = n
    return sorted(out, key=lambda s: s.start)


# a choice made at one line serves the lines this near it while its lines are still in the file: typing a body line
# after line keeps the fast prompt's head, and the state cached for it
KEEP_LINES = 12
MAX_CHOICES = 64


class SimilarChoices:
    """The last choice of similar lines per document (bounded, the oldest document dropped first)."""

    def __init__(self, limit: int = MAX_CHOICES):
        self.limit = limit
        self._made: OrderedDict[str, tuple[int, int, list[Similar]]] = OrderedDict()

    def get(self, path: str, text: str, line: int, max_chars: int) -> list[Similar]:
        made = self._made.get(path)
        if made is not None and made[1] == max_chars and abs(line - made[0]) <= KEEP_LINES \
                and all(s.text in text for s in made[2]):
            self._made.move_to_end(path)
            return made[2]
        found = similar_lines(text, line, max_chars)
        self._made[path] = (line, max_chars, found)
        self._made.move_to_end(path)
        while len(self._made) > self.limit:
            self._made.popitem(last=False)
        return found
