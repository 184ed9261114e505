"""Golden cases for each post-processing filter, one TOML file per filter in tests/golden/postprocess/:
prefix + suffix around the cursor, the raw completion, and what the filter must leave of it."""
import tomllib
from pathlib import Path

import pytest

from lsp_server import postprocess
from lsp_server.postprocess import FILTERS, Around

GOLDEN = Path(__file__).parent / "golden" / "postprocess"


def cases():
    for path in sorted(GOLDEN.glob("*.toml")):
        for case in tomllib.loads(path.read_text())["case"]:
            yield pytest.param(path.stem, case, id=f"{path.stem}: {case['name']}")


def around(case) -> Around:
    return Around(case.get("prefix", ""), case.get("suffix", ""), case.get("language", "text"),
                  case.get("multiline", True), case.get("truncated", False),
                  block_of_line=case.get("block_of_line", False), needs=frozenset(case.get("needs", ())))


def test_every_filter_has_golden_cases():
    assert {p.stem for p in GOLDEN.glob("*.toml")} == set(FILTERS)


@pytest.mark.parametrize("name, case", list(cases()))
def test_golden(name, case):
    assert FILTERS[name](case["completion"], around(case)) == case["expected"]


def test_the_chain_applies_the_filters_in_order():
    # a duplicated closer, trailing blank lines and a repeat of the line below, all at once
    a = Around("def f(a):\n    x = g(", ")\n    return x\n", "python", True)
    assert postprocess.run("a, 1)\n\n", a) == "a, 1"
    b = Around("def f(a):\n    ", "\n    return b\n", "python", True)
    assert postprocess.run("b = a * 2\n    return b\n\n\ndef g():\n    pass", b) == "b = a * 2"


def test_a_single_line_that_opens_a_block_keeps_its_body():
    # HumanEval/83: `if n == 1:` alone above `return 18 * ...` is an IndentationError; its body comes with it
    a = Around("def f(n):\n", "\n    return 18 * n\n", "python", multiline=False)
    assert a.opens_block("    if n == 1:\n        return 1")
    assert postprocess.run("    if n == 1:\n        return 1\n    return 18 * n", a) == "    if n == 1:\n        return 1"
    # the body is already there, or the line opens nothing: one line
    b = Around("def f(n):\n", "\n        return 1\n", "python", multiline=False)
    assert not b.opens_block("    if n == 1:")
    assert postprocess.run("    if n == 1:\n        return 2", b) == "    if n == 1:"
    c = Around("def f(n):\n    x = ", "\n    return x\n", "python", multiline=False)
    assert not c.opens_block("n + 1\n    y = 2")
    # a comment after the colon, and a brace language
    assert Around("", "\nreturn 1\n", "python", multiline=False).opens_block("if x:  # only once")
    assert Around("func f() {\n\t", "\n}\n", "go", multiline=False).opens_block("if x > 0 {")


def test_an_opener_line_kept_alone_on_purpose_is_not_cut_for_its_missing_body():
    # the server keys the next suggestion by the line as shown; an `if` line is shown alone, its body next
    a = Around("def f(n):\n    x = n", "\n    return x\n", "python", multiline=False, with_body=False)
    assert postprocess.run("\n    if x > 1:", a) == "\n    if x > 1:"


def test_a_comment_line_goes_on_to_the_code_line_and_its_block():
    a = Around("def f(n):\n", "\n    return 18 * n\n", "python", multiline=False)
    assert a.goes_on("    # the base case")
    assert not a.goes_on("    # the base case\n    m = 1")
    # the code line after the comment opens a block with no body below: its body comes too
    raw = "    # the base case\n    if n == 1:\n        return 1\n    return 18 * n"
    assert a.opens_block(raw)
    assert postprocess.run(raw, a) == "    # the base case\n    if n == 1:\n        return 1"
    assert a.line_end(raw) == -1 and Around("def f(n):\n", "\n    return 18 * n\n", "python", False,
                                            with_body=False).line_end(raw) == raw.index(":\n") + 1



def test_a_one_line_answer_that_opens_a_block_ends_with_the_block():
    # the generation stops at the block's end (line_end drives the engine's stop), and what the model wrote
    # after the block is cut
    a = Around("func f() {\n\t", "\n}\n", "go", multiline=False)
    text = "if x > 0 {\n\t\ty()\n\t}\n\tz()\n"
    assert a.line_end(text) == text.index("}") + 1
    assert postprocess.run(text, a) == "if x > 0 {\n\t\ty()\n\t}"
    # Python: the block is over at the first line back at its level, once that line is whole
    p = Around("def f(n):\n", "\n    return 18 * n\n", "python", multiline=False)
    assert p.goes_on("    if n == 1:\n        return 1") and not p.goes_on("    if n == 1:\n        return 1\n    x = 2")
    assert p.goes_on("    if n == 1:\n        return 1\n    else:")


def test_a_cut_answer_whose_opened_block_is_over_keeps_the_block_whole():
    # an early answer (taken for cut) past the block's end: the line being written after it goes, the block's
    # last line stays (it is whole)
    p = Around("class S:\n    def remove(self, sku, quantity):\n        if quantity > ", "\n", "python",
               multiline=False, truncated=True)
    text = ' self.items[sku].quantity:\n            raise ValueError("short")\n        self'
    assert postprocess.run(text, p) == ' self.items[sku].quantity:\n            raise ValueError("short")'
    g = Around("func f() {\n\t", "\n}\n", "go", multiline=False, truncated=True)
    assert postprocess.run("if x > 0 {\n\t\ty()\n\t}\n\tz(", g) == "if x > 0 {\n\t\ty()\n\t}"
    # the early answer taken at the body line's end
    assert postprocess.run(' self.items[sku].quantity:\n            raise ValueError("short")\n', p) == \
        ' self.items[sku].quantity:\n            raise ValueError("short")'
