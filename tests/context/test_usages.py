"""Renames and the uses of the old name that are left (context/usages.py): the next edit's region goes there."""
from lsp_server.context.edits import Hunk
from lsp_server.context.usages import next_use, renamed, uses

CODE = '''def summarize(orders):
    """The total of the orders."""
    amount = 0.0
''' + "    print(orders)\n" * 20 + '''    log("total")  # total, in a comment
    return total
'''


def test_a_rename_is_one_identifier_changed():
    assert renamed(Hunk(2, ("    total = 0.0",), ("    amount = 0.0",))) == ("total", "amount")
    # the same name changed twice on a line, and over two lines
    assert renamed(Hunk(0, ("x = total + total",), ("x = amount + amount",))) == ("total", "amount")
    assert renamed(Hunk(0, ("a = total", "b = total"), ("a = amount", "b = amount"))) == ("total", "amount")
    # not renames: two names, a literal, a changed shape, an insertion
    assert renamed(Hunk(0, ("f(a, b)",), ("f(c, d)",))) is None
    assert renamed(Hunk(0, ("x = 1",), ("x = 2",))) is None
    assert renamed(Hunk(0, ("f(a)",), ("f(a, b)",))) is None
    assert renamed(Hunk(0, (), ("total = 0",))) is None


def test_uses_are_identifiers_not_words_in_comments_or_strings():
    assert uses(CODE, "total", "python") == [CODE.split("\n").index("    return total")]
    # no grammar: whole words
    assert uses("total\ntotally\nsub total\n", "total", "text") == [0, 2]


def test_the_next_use_outside_the_region():
    hunk = Hunk(2, ("    total = 0.0",), ("    amount = 0.0",))
    last = CODE.split("\n").index("    return total")
    assert next_use(CODE, hunk, "python", (1, 15)) == last
    assert next_use(CODE, hunk, "python", (1, last + 1)) is None     # the region rewrites it anyway
    assert next_use(CODE, Hunk(2, ("x = 1",), ("x = 2",)), "python", (1, 15)) is None
    above = "total = 1\n" + "pass\n" * 30 + "amount = 2\n"
    assert next_use(above, Hunk(31, ("total = 2",), ("amount = 2",)), "python", (30, 32)) == 0
