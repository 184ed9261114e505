"""Drop closing brackets at the end of the completion that the suffix already starts with (the classic
duplicated `)` or `})`), but only brackets the completion did not open itself; with them the brace of the
statement's block where the line right of the cursor ends with it (`if (a > 0|) {`)."""

from .around import Around

PAIRS = {")": "(", "]": "[", "}": "{"}


def _unmatched_closers(text: str) -> set[int]:
    """Indices of closers in text that close something opened before the text (in the prefix)."""
    stack, out = [], set()
    for i, c in enumerate(text):
        if c in "([{":
            stack.append(c)
        elif c in PAIRS:
            if stack and stack[-1] == PAIRS[c]:
                stack.pop()
            else:
                out.add(i)
    return out


def apply(completion: str, around: Around) -> str:
    head = around.line_after.lstrip(" \t")
    unmatched = _unmatched_closers(completion)
    best = 0
    for i in range(1, min(len(completion), len(head)) + 1):
        start = len(completion) - i
        if completion[start:] != head[:i]:
            continue
        chars = range(start, len(completion))
        # the statement's block brace, where the line right of the cursor ends with it (`if (|) {`)
        brace = len(completion) - 1 if i == len(head.rstrip()) and head.rstrip().endswith("{") else -1
        if all(j in unmatched or j == brace or completion[j] in " \t" for j in chars) \
                and any(j in unmatched for j in chars):
            best = i
    return completion[:-best] if best else completion
