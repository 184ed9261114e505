"""Re-parse prefix + completion + suffix with tree-sitter and cut the completion at the line end (or its full
length) that leaves the fewest syntax errors, the longest such cut; none when every cut adds errors the text
did not already have. Without a grammar, or for a completion cut short (unfinished by design: an open bracket
there is no mistake): unchanged. Fewest, not merely no more than before: a text with an empty `if` body has
an error already, and a completion that trades it for a bodiless `else:` must still lose that line."""
from ..context.syntax import broken_count, error_count, parse
from .around import Around

MAX_CANDIDATES = 24


def _count(around: Around, tree) -> int:
    # a line shown alone on purpose (the opener of a block whose body comes as the next suggestion) is not
    # judged for the body it does not have yet
    return broken_count(tree, around.language) if around.with_body else error_count(tree.root_node)


def _errors(around: Around, middle: str) -> int | None:
    tree = parse(around.prefix + middle + around.suffix, around.language)
    return None if tree is None else _count(around, tree)


def _errors_without(around: Around) -> int | None:
    """The text's errors without the completion: from the context stage's parse of the document where the text is
    still the document's (a plan's prefix may have been extended by what the editor shows), saving a parse of the
    whole file (65-200 ms for 500 kB here). That parse is a fresh parse's tree (context.syntax.Trees)."""
    if around.parsed is not None:
        text, lookup = around.parsed
        prefix, suffix = around.prefix, around.suffix
        if len(text) == len(prefix) + len(suffix) and text.startswith(prefix) and text.endswith(suffix):
            tree = lookup()
            if tree is not None:
                return _count(around, tree)
    return _errors(around, "")


def apply(completion: str, around: Around) -> str:
    if around.truncated:
        return completion
    # the whole completion first: where it leaves no error (most do) the text without it need not be counted
    full = _errors(around, completion)
    if full is None or full == 0:
        return completion
    baseline = _errors_without(around)
    if baseline is None:
        return completion
    best, fewest = (completion, full) if full <= baseline else ("", baseline + 1)
    # candidate cut points: each line end, longest first, so the longest of equals wins
    ends = [i for i, c in enumerate(completion) if c == "\n"][::-1][:MAX_CANDIDATES]
    for end in ends:
        candidate = completion[:end]
        if candidate.strip():
            n = _errors(around, candidate)
            if n < fewest:
                best, fewest = candidate, n
                if n == 0:
                    break
    return best
