"""Scoring next-edit proposals against the suite's cases (`evals.suites.next_edit`).

A proposal is None (nothing proposed) or a replacement of lines of the case's window, `{start_line, end_line,
text}` (0-based, end exclusive, as `expected`). Per case:

- `exact`: the window with the proposal applied equals the window with the expected hunk applied, whitespace
  normalised (each line's runs of whitespace made one space, ends trimmed, blank lines left out), so a proposal
  that spans a few unchanged lines more than the hunk still counts;
- `located`: the proposal's range overlaps the true hunk's (a range of no lines, an insertion, counts as the
  line it is inserted before);
- `silent`: nothing proposed.

Over a set: on edit cases the share exact and located (of all edit cases) and proposed; precision, the share
of all proposals (on edit and no-edit cases) that are exact; on no-edit cases the share silent (the no-edit
rate). The baseline "no prediction" is `score([None] * len(cases))`: nothing exact, every no-edit case right."""
from __future__ import annotations

from collections import defaultdict


def normalise(text: str) -> str:
    return "\n".join(" ".join(line.split()) for line in text.splitlines() if line.strip())


def apply(window: str, start: int, end: int, text: str) -> str:
    lines = window.splitlines(keepends=True)
    if text and not text.endswith("\n"):
        text += "\n"
    return "".join(lines[:start]) + text + "".join(lines[end:])


def _span(start: int, end: int) -> tuple[int, int]:
    return start, max(end, start + 1)


def overlaps(a: tuple[int, int], b: tuple[int, int]) -> bool:
    (s1, e1), (s2, e2) = _span(*a), _span(*b)
    return s1 < e2 and s2 < e1


def valid(case: dict, proposal: dict) -> bool:
    n = len(case["before_window"].splitlines())
    return 0 <= proposal["start_line"] <= proposal["end_line"] <= n


def score_case(case: dict, proposal: dict | None) -> dict:
    exp = case["expected"]
    out = {"id": case["id"], "kind": case["kind"], "proposed": proposal is not None, "exact": False,
           "located": False}
    if proposal is None:
        return out
    if not valid(case, proposal):
        return out   # proposed, and wrong
    window = case["before_window"]
    after = normalise(apply(window, proposal["start_line"], proposal["end_line"], proposal["text"]))
    if after == normalise(window):
        out["proposed"] = False   # a proposal that changes nothing is nothing proposed
        return out
    if exp is not None:
        out["exact"] = after == normalise(apply(window, exp["start_line"], exp["end_line"], exp["text"]))
        out["located"] = overlaps((proposal["start_line"], proposal["end_line"]),
                                  (exp["start_line"], exp["end_line"]))
    return out


def summarise(rows: list[dict]) -> dict:
    edit = [r for r in rows if r["kind"] == "edit"]
    none = [r for r in rows if r["kind"] == "none"]
    proposed = [r for r in rows if r["proposed"]]

    def share(k, n):
        return round(k / n, 4) if n else None

    return {
        "cases": len(rows), "edit_cases": len(edit), "none_cases": len(none),
        "exact": share(sum(r["exact"] for r in edit), len(edit)),
        "located": share(sum(r["located"] for r in edit), len(edit)),
        "proposed_on_edit": share(sum(r["proposed"] for r in edit), len(edit)),
        "precision": share(sum(r["exact"] for r in proposed), len(proposed)),
        "no_edit_rate": share(sum(not r["proposed"] for r in none), len(none)),
        "proposals": len(proposed),
    }


def score(cases: list[dict], proposals: list[dict | None]) -> dict:
    """The figures over all cases and per language: {'all': {...}, 'python': {...}, ...}."""
    if len(cases) != len(proposals):
        raise ValueError(f"{len(proposals)} proposals for {len(cases)} cases")
    rows = [score_case(c, p) for c, p in zip(cases, proposals)]
    by_lang: dict[str, list[dict]] = defaultdict(list)
    for c, r in zip(cases, rows):
        by_lang[c["language"]].append(r)
    return {"all": summarise(rows), **{lang: summarise(rs) for lang, rs in sorted(by_lang.items())}}


def oracle(case: dict) -> dict | None:
    """The right answer as a proposal (the scorer's check on itself)."""
    exp = case["expected"]
    return None if exp is None else {k: exp[k] for k in ("start_line", "end_line", "text")}


def table(figures: dict) -> str:
    cols = ("cases", "exact", "located", "proposed_on_edit", "precision", "no_edit_rate")
    out = [f"{'':12}" + "".join(f"{c:>17}" for c in cols)]
    for key, row in figures.items():
        out.append(f"{key:12}" + "".join(f"{'-' if row[c] is None else row[c]:>17}" for c in cols))
    return "\n".join(out)


def main(argv=None) -> None:
    """Score a file of proposals, one JSON object a line, `{"id": ..., "proposal": null | {start_line, end_line,
    text}}` (a case without a line: nothing proposed), or a baseline: `--baseline none` (no prediction) or
    `oracle` (the scorer's check)."""
    import argparse
    import json

    from evals.suites.next_edit import DEFAULT_CASES, load_cases

    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("proposals", nargs="?", help="JSONL of {id, proposal}")
    ap.add_argument("--baseline", choices=("none", "oracle"))
    ap.add_argument("--cases", default=DEFAULT_CASES)
    ap.add_argument("--half", default="all", choices=("tune", "confirm", "all"))
    args = ap.parse_args(argv)
    cases = load_cases(args.cases, args.half)
    if args.baseline == "none":
        proposals = [None] * len(cases)
    elif args.baseline == "oracle":
        proposals = [oracle(c) for c in cases]
    elif args.proposals:
        with open(args.proposals, encoding="utf-8") as f:
            given = {row["id"]: row.get("proposal") for row in map(json.loads, filter(str.strip, f))}
        proposals = [given.get(c["id"]) for c in cases]
    else:
        ap.error("give a file of proposals or --baseline")
    print(table(score(cases, proposals)))


if __name__ == "__main__":
    main()
