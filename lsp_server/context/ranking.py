"""In what order other files' definitions are worth showing: those the code near the cursor uses first (by
closeness, by how they are named there), then those the rest of the document uses; an open document's
definitions by how often the document uses their names."""
from __future__ import annotations

import re
from dataclasses import dataclass

from .definitions import Definition
from .imports import Candidate
from .near_lines import head_lines, tail_lines

NEAR_LINES_ABOVE, NEAR_LINES_BELOW = 30, 8

IDENT = re.compile(r"[A-Za-z_$][\w$]*")
QUALIFIED = re.compile(r"([A-Za-z_$][\w$]*)\s*(?:\.|::)\s*([A-Za-z_$][\w$]*)")
ATTRIBUTE = re.compile(r"\.\s*([A-Za-z_$][\w$]*)")
AT_CURSOR = re.compile(r"([A-Za-z_$][\w$]*)\s*(?:\.|::)\s*([A-Za-z_$][\w$]*)?$")
# names_near and rank_in have always split identifiers at `$` and at letters outside ASCII (`$el` counts as
# `el`); IDENT for them would change which definitions the prompts show, so they keep this one
ASCII_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass
class Snippet:
    path: str
    text: str
    score: float


def names_near(prefix: str, suffix: str) -> dict[str, float]:
    """Identifiers near the cursor, weighted by closeness."""
    weights: dict[str, float] = {}
    above = tail_lines(prefix, NEAR_LINES_ABOVE).split("\n")
    for i, line in enumerate(reversed(above)):
        for m in ASCII_IDENT.findall(line):
            weights[m] = weights.get(m, 0.0) + 1.0 / (1 + i / 4)
    for i, line in enumerate(head_lines(suffix, NEAR_LINES_BELOW).split("\n")):
        for m in ASCII_IDENT.findall(line):
            weights[m] = weights.get(m, 0.0) + 0.5 / (1 + i / 4)
    return weights


@dataclass
class Near:
    """What the code around the cursor names: identifiers by weight, qualified names, attribute names."""
    weights: dict[str, float]
    qualified: dict[tuple[str, str], int]
    attributes: set[str]
    after: tuple[str, str] | None = None    # the cursor stands after `module.` (and the start of a name)

    @classmethod
    def of(cls, weights: dict[str, float], text: str, before_cursor: str = "") -> "Near":
        qual: dict[tuple[str, str], int] = {}
        for m in QUALIFIED.finditer(text):
            qual[(m.group(1), m.group(2))] = qual.get((m.group(1), m.group(2)), 0) + 1
        m = AT_CURSOR.search(before_cursor[-200:])
        return cls(weights, qual, set(ATTRIBUTE.findall(text)), (m.group(1), m.group(2) or "") if m else None)


def score(c: Candidate, near: Near) -> tuple[int, float] | None:
    """(tier, weight) of a candidate for the code near the cursor: 0 names imported by name or qualified by
    their module's name (`tax.rate`), 1 names reached otherwise (a same-package name, a class's method); None:
    not used there."""
    d = c.definition
    if c.explicit and c.local in near.weights:
        return 0, near.weights[c.local]
    if c.alias and (c.alias, d.name) in near.qualified:
        return 0, near.weights.get(d.name, 0.5)
    if c.alias and near.after and (c.alias == near.after[0] or c.alias.endswith("." + near.after[0])) \
            and d.name.startswith(near.after[1]) and not d.name.startswith("_"):
        return 0, 0.5   # `module.` at the cursor: what it holds
    if c.alias and "." in c.alias and any(q[1] == d.name and c.alias.endswith("." + q[0])
                                          for q in near.qualified):   # `import a.b` used as a.b.name
        return 0, 1.0
    if not c.alias and not c.explicit and d.name in near.weights and len(d.name) > 2:
        return 1, near.weights[d.name]
    if d.method and d.name in near.attributes:
        return 1, near.weights.get(d.name, 0.5)
    if (c.explicit or not c.alias or d.members):
        used = [m for m in d.members if len(m) > 2 and not m.startswith("__") and m in near.attributes]
        if used and (c.explicit or c.local or c.alias):
            return 1, 0.5 * max(near.weights.get(m, 0.5) for m in used)
    return None


def file_score(c: Candidate, counts: dict[str, int], qualified: dict[tuple[str, str], int]) -> float:
    """How much the whole document uses a candidate (0: not at all): for filling what room is left."""
    d = c.definition
    if c.explicit:
        return max(0, counts.get(c.local, 0) - 1)   # less its import
    if c.alias:
        return float(qualified.get((c.alias, d.name), 0))
    return float(counts.get(d.name, 0)) if len(d.name) > 2 else 0.0


def ranked(cands: list[Candidate], near: Near) -> list[tuple[int, float, Candidate]]:
    """Candidates used near the cursor, best first (tier, then weight, then import order), each definition once."""
    out, seen = [], set()
    for i, c in enumerate(cands):
        s = score(c, near)
        key = (c.definition.path, c.definition.line, c.definition.name)
        if s is not None and key not in seen:
            seen.add(key)
            out.append((s[0], -s[1], i, c))
    out.sort(key=lambda t: t[:3])
    return [(t, -w, c) for t, w, _, c in out]


def ranked_in_file(cands: list[Candidate], text: str) -> list[Candidate]:
    counts: dict[str, int] = {}
    for m in IDENT.findall(text):
        counts[m] = counts.get(m, 0) + 1
    qual: dict[tuple[str, str], int] = {}
    for m in QUALIFIED.finditer(text):
        qual[(m.group(1), m.group(2))] = qual.get((m.group(1), m.group(2)), 0) + 1
    scored, seen = [], set()
    for i, c in enumerate(cands):
        s = file_score(c, counts, qual)
        key = (c.definition.path, c.definition.line, c.definition.name)
        if s > 0 and key not in seen:
            seen.add(key)
            scored.append((-s, i, c))
    scored.sort(key=lambda t: t[:2])
    return [c for _, _, c in scored]


def rank_in(definitions: list[Definition], text: str) -> list[Snippet]:
    """Definitions by how often a page's text uses their names (a page's choice, the same for all its cursors)."""
    counts: dict[str, int] = {}
    for m in ASCII_IDENT.findall(text):
        counts[m] = counts.get(m, 0) + 1
    scored = [Snippet(d.path, d.text, counts[d.name]) for d in definitions if d.name in counts]
    scored.sort(key=lambda s: -s.score)
    return scored
