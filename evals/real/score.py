"""Scoring an answer to a hole of `tandem-eval real`: the first line exact (whitespace-trimmed) and its edit
similarity, the whole answer exact and its edit similarity (lines compared trimmed, blank lines left out), and
whether the file with the answer inserted still parses (no more ERROR or MISSING nodes, nor empty suites,
than the original file has)."""
from __future__ import annotations

from lsp_server.context.syntax import broken_count, parse


def levenshtein(a: str, b: str) -> int:
    """Edit distance (insertions, deletions, substitutions), bit-parallel (Myers 1999, Hyyrö 2001): one pass
    over `a` with the columns of `b` as the bits of Python integers."""
    if a == b:
        return 0
    if len(a) < len(b):
        a, b = b, a
    m = len(b)
    if m == 0:
        return len(a)
    peq: dict[str, int] = {}
    for i, c in enumerate(b):
        peq[c] = peq.get(c, 0) | (1 << i)
    mask = (1 << m) - 1
    high = 1 << (m - 1)
    pv, mv, score = mask, 0, m
    for c in a:
        eq = peq.get(c, 0)
        xv = eq | mv
        xh = (((eq & pv) + pv) ^ pv) | eq
        ph = (mv | ~(xh | pv)) & mask
        mh = pv & xh
        if ph & high:
            score += 1
        elif mh & high:
            score -= 1
        ph = ((ph << 1) | 1) & mask
        mh = (mh << 1) & mask
        pv = (mh | ~(xv | ph)) & mask
        mv = ph & xv
    return score


def similarity(a: str, b: str) -> float:
    """1 - Levenshtein / the longer length (1.0 for two empty texts)."""
    if not a and not b:
        return 1.0
    return 1.0 - levenshtein(a, b) / max(len(a), len(b))


def first_line(text: str) -> str:
    return next((l.strip() for l in text.split("\n") if l.strip()), "")


def normalized(text: str) -> str:
    """The text's lines trimmed, blank lines left out."""
    return "\n".join(l.strip() for l in text.split("\n") if l.strip())


def broken(text: str, language: str) -> int | None:
    tree = parse(text, language)
    return None if tree is None else broken_count(tree, language)


def score(answer: str, expected: str, holed: str, cursor: int, language: str,
          base_broken: int | None) -> dict:
    """The scores of `answer` given at `cursor` of the file with the hole cut (`holed`); `base_broken` is the
    original file's broken count (None: no grammar, and `parses` is None)."""
    a1, e1 = first_line(answer), first_line(expected)
    an, en = normalized(answer), normalized(expected)
    parses = None
    if base_broken is not None:
        after = broken(holed[:cursor] + answer + holed[cursor:], language)
        parses = after is not None and after <= base_broken
    return {"first_exact": a1 == e1, "first_sim": round(similarity(a1, e1), 4),
            "exact": an == en, "sim": round(similarity(an, en), 4), "parses": parses}
