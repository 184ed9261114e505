"""The lines next to the cursor, read outward with str.find, are the lines a split of the prefix and the suffix
gives (context/near_lines.py): every line-break shape, empty lines, no line break at all."""
import random

from lsp_server.context.near_lines import (first_above, first_below, head_lines, line_after, line_before,
                                           lines_above, lines_below, tail_lines)

PIECES = ["a", " ", "\n", "\n", "b\n", "  x", "\t}", "\r\n", "é"]


def texts(n: int = 5000):
    rng = random.Random(7)
    yield from ("", "\n", "\n\n", "x", "x\n", "\nx")
    for _ in range(n):
        yield "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 14)))


def test_the_lines_below_and_above_are_the_split_s():
    for s in texts():
        assert line_after(s) == s.split("\n", 1)[0]
        assert line_before(s) == s.rsplit("\n", 1)[-1]
        assert list(lines_below(s)) == s.split("\n")[1:]
        assert list(lines_above(s)) == s.split("\n")[:-1][::-1]
        for n in range(1, 5):
            assert tail_lines(s, n) == "\n".join(s.split("\n")[-n:])
            assert head_lines(s, n) == "\n".join(s.split("\n")[:n])


def test_the_first_line_with_text_or_with_what_is_asked():
    for s in texts():
        assert first_below(s) == next((l for l in s.split("\n")[1:] if l.strip()), None)
        assert first_above(s) == next((l for l in s.split("\n")[:-1][::-1] if l.strip()), None)
        assert first_below(s, lambda l: "x" in l) == next((l for l in s.split("\n")[1:] if "x" in l), None)
    assert first_below("rest\n\n  \n    return x\ny") == "    return x"
    assert first_above("def f():\n    a = 1\n\n   \nb") == "    a = 1"
    assert first_below("only the cursor's line") is None and first_above("only the cursor's line") is None

