"""From a next-edit answer to the edit proposed, or to nothing and why (postprocess/next_edit.py). Golden cases in
tests/postprocess/golden/next_edit/, one TOML file per outcome: a document, the region of it the model rewrote
(`[first line, line after the last]`), the lines shown above it (`above`), the answer, whether it was cut short,
the user's recent hunks, and either the `edit` proposed (document lines, end exclusive) or why nothing is
(`dropped`)."""
import tomllib
from pathlib import Path

import pytest

from lsp_server.context.edits import EditHistory, Hunk
from lsp_server.postprocess.next_edit import Dropped, Edit, changed_lines, proposal, undoes
from lsp_server.prompt.next_edit import build_prompt, region_lines

GOLDEN = Path(__file__).parent / "golden" / "next_edit"
# `unsure` is judged from the generation's margins, not from the answer's text, and `too_long` and `no_margins`
# before any answer: tests/service covers them
OUTCOMES = {"edit"} | {str(d) for d in Dropped} - {"unsure", "too_long", "no_margins", "disagreed", "new_code"}


def cases():
    for path in sorted(GOLDEN.glob("*.toml")):
        for case in tomllib.loads(path.read_text())["case"]:
            yield pytest.param(path.stem, case, id=f"{path.stem}: {case['name']}")


def region_of(case) -> tuple[int, str]:
    start, end = case["region"]
    lines = case["document"].split("\n")
    body = [line + "\n" for line in lines[:-1]] + ([lines[-1] + "\n"] if lines[-1] else [])
    return start, "".join(body[start:end])


def test_every_outcome_has_golden_cases():
    assert {p.stem for p in GOLDEN.glob("*.toml")} == OUTCOMES
    for path in GOLDEN.glob("*.toml"):
        for case in tomllib.loads(path.read_text())["case"]:
            assert ("edit" in case) != ("dropped" in case), case["name"]


@pytest.mark.parametrize("name, case", list(cases()))
def test_golden(name, case):
    start, region = region_of(case)
    recent = [Hunk(h["start"], tuple(h["old"]), tuple(h["new"])) for h in case.get("recent", [])]
    edit, dropped = proposal(case["document"], start, region, case["answer"], case.get("cut", False), recent,
                             case.get("language", "python"), case.get("above", ""))
    if "edit" in case:
        assert dropped is None
        assert edit == Edit(**case["edit"])
    else:
        assert edit is None
        assert dropped == Dropped(case["dropped"])


def test_changed_lines_region_relative():
    region = "a\nb\nc\n"
    assert changed_lines(region, region, False) is None
    assert changed_lines(region, "a\nB\nc\n", False) == (1, 2, "B\n")
    assert changed_lines(region, "a\nb\nx\nc\n", False) == (2, 2, "x\n")           # an insertion
    assert changed_lines(region, "a\nc\n", False) == (1, 2, "")                   # a deletion
    assert changed_lines(region, "a\nb\nc", False) is None                        # the last newline missing
    assert changed_lines(region, "a\nb", True) is None                            # cut: the rest unwritten


def test_an_undo_is_told_from_the_next_edit():
    rename = [Hunk(1, ("    total = 0",), ("    amount = 0",))]
    assert undoes("    amount = 0\n", "    total = 0\n", rename)
    assert not undoes("    return total\n", "    return amount\n", rename)
    # whitespace aside
    assert undoes("    amount  =  0\n", "  total = 0\n", rename)
    # a hunk of whitespace only says nothing
    assert not undoes("x = 1\n", "y = 1\n", [Hunk(0, ("x = 1",), ("x =  1",))])


def test_the_region_and_the_edit_count_lines_as_the_editor_does():
    """A form feed (Emacs's page break, common in older Python) or a U+2028 in a comment is no line break for an
    editor: with str.splitlines the region started a line early and the edit was proposed a line further down
    than the lines it replaces."""
    for sep in ("\x0c", "# a\u2028b"):
        doc = (f"import os\n{sep}\ndef f(xs):\n    amount = 0\n    for x in xs:\n        total += x\n"
               "    return total\n")
        history = EditHistory(doc.replace("amount", "total"))
        history.record(doc)
        assert [h.start for h in history.recent()] == [3]
        p = build_prompt(doc, 3, history.diff("a.py"), "a.py", "python")
        assert (p.start, p.end) == (2, 7) and p.region.startswith("def f(xs):\n")
        edit, dropped = proposal(doc, p.start, p.region, p.region.replace("total", "amount"), False,
                                 history.recent(), "python")
        assert dropped is None
        lines = doc.split("\n")
        assert (edit.start, edit.end) == (5, 7)
        assert edit.old_text == "\n".join(lines[5:7]) + "\n"
        assert edit.text == "        amount += x\n    return amount\n"


def test_the_region_is_the_cursor_s_line_one_above_and_some_below():
    assert region_lines(100, 10) == (9, 15)
    assert region_lines(100, 0) == (0, 5)
    assert region_lines(12, 11) == (10, 12)          # at the end
    assert region_lines(1, 0) == (0, 1)
    doc = "".join(f"x{i} = {i}\n" for i in range(40))
    p = build_prompt(doc, 20, "", "a.py", "python")
    assert (p.start, p.end) == (19, 25) and p.region == "".join(f"x{i} = {i}\n" for i in range(19, 25))
    # four lines above the region are shown as context, not rewritten; the answer's fence is opened
    assert "```python\nx15 = 15\n" in p.text and "x18 = 18\n```" in p.text and "x14 = 14" not in p.text
    assert p.text.endswith("<|im_start|>assistant\n```python\n")
    # a last line without a newline is rewritten with one
    assert build_prompt("a = 1\nb = 2", 1, "", "a.py", "python").region == "a = 1\nb = 2\n"
    # the diff is shown without its `---`/`+++` lines (the sentence names the path): each token is evaluated afresh
    p = build_prompt(doc, 20, "--- a/a.py\n+++ b/a.py\n@@ -3 +3 @@\n-x2 = 1\n+x2 = 2\n", "a.py", "python")
    assert "```diff\n@@ -3 +3 @@\n-x2 = 1\n+x2 = 2\n```" in p.text and "+++ b/a.py" not in p.text


def test_departure_is_where_the_answer_leaves_the_region():
    from lsp_server.postprocess.next_edit import departure
    region = "    total = 0.0\n    for o in orders:\n        total += o.price\n"
    answer = "    total = 0.0\n    for o in orders:\n        amount += o.price\n"
    assert departure(region, answer) == answer.index("amount")
    # the context line written again before the region is skipped
    above = "def f(orders):\n"
    assert departure(region, above + answer, above) == len(above) + answer.index("amount")
    assert departure(region, region) == len(region)
