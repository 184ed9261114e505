"""Golden cases for each post-processing filter: (completion, prefix, suffix) -> expected."""
import pytest

from lsp_server import postprocess
from lsp_server.postprocess import drop_closer_overlap, trim_trailing_blank

TRIM = [
    ("x = 1\n\n   \n", "", "", "x = 1"),
    ("   \n\t\n", "", "", ""),
    ("foo(a)   ", "", "", "foo(a)"),
    ("if x:\n    y\n", "", "", "if x:\n    y"),
]

CLOSERS = [
    # the suffix already closes the call the prefix opened
    ("a, b)", "f(", ")\n", "a, b"),
    ("x})", "g({", "})", "x"),
    # the completion opened and closed its own call: keep it
    ("h(a)", "x = ", ")\n", "h(a)"),
    # nothing in common
    ("a, b)", "f(", "\nnext", "a, b)"),
    # only the part of the overlap that closes the prefix's bracket goes
    ("len(x))", "print(", ")", "len(x)"),
]


@pytest.mark.parametrize("completion,prefix,suffix,expected", TRIM)
def test_trim_trailing_blank(completion, prefix, suffix, expected):
    assert trim_trailing_blank.apply(completion, prefix, suffix) == expected


@pytest.mark.parametrize("completion,prefix,suffix,expected", CLOSERS)
def test_drop_closer_overlap(completion, prefix, suffix, expected):
    assert drop_closer_overlap.apply(completion, prefix, suffix) == expected


def test_chain():
    assert postprocess.run("a, b)\n\n", "f(", ")", ) == "a, b"
