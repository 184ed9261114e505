"""Re-parse prefix + completion + suffix with tree-sitter and cut the completion at the last line end (or
its full length) that adds no syntax error the text did not already have. Without a grammar, or for a
completion cut short (unfinished by design: an open bracket there is no mistake): unchanged."""
from ..context.syntax import error_count, parse
from .around import Around

MAX_CANDIDATES = 24


def _errors(around: Around, middle: str) -> int | None:
    tree = parse(around.prefix + middle + around.suffix, around.language)
    return None if tree is None else error_count(tree.root_node)


def apply(completion: str, around: Around) -> str:
    if around.truncated:
        return completion
    baseline = _errors(around, "")
    if baseline is None:
        return completion
    if _errors(around, completion) <= baseline:
        return completion
    # candidate cut points: each line end, longest first
    ends = [i for i, c in enumerate(completion) if c == "\n"][::-1][:MAX_CANDIDATES]
    for end in ends:
        candidate = completion[:end]
        if candidate.strip() and _errors(around, candidate) <= baseline:
            return candidate
    return ""
