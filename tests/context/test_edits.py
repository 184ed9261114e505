"""A document's edit history (context/edits.py), as a next-edit prompt reads it: keystrokes on the same lines
coalesce into one hunk, a change elsewhere closes it, an undo removes it, and the diff shows the hunks in the
order they were made. Each test feeds the history the document's successive texts, as the editor sends them."""
from __future__ import annotations

import re

import pytest

from lsp_server.context.edits import (MAX_HUNK_LINES, MAX_HUNKS, EditHistories, EditHistory, Hunk, line_change,
                                     pieces, text_change)

CODE = """def summarize(orders):
    total = 0
    for order in orders:
        total += order.price
    if total > 100:
        print("big order")
    return total
"""


def typed(history: EditHistory, line: int, old: str, new: str) -> str:
    """Select `old` on a line and type `new` over it, one keystroke at a time (the deletion of the selection is
    one change); returns the text."""
    lines = history.text.split("\n")
    at = lines[line].index(old)
    head, tail = lines[line][:at], lines[line][at + len(old):]
    for i in range(len(new) + 1):
        lines[line] = head + new[:i] + tail
        history.record("\n".join(lines))
    return history.text


def replaced(text: str, line: int, new: str | list[str]) -> str:
    lines = text.split("\n")
    lines[line:line + 1] = [new] if isinstance(new, str) else new
    return "\n".join(lines)


def shape(history: EditHistory) -> list[tuple[int, tuple, tuple]]:
    return [(h.start, h.old, h.new) for h in history.recent()]


def test_a_rename_typed_a_character_at_a_time_is_one_hunk_from_the_old_line_to_the_new():
    h = EditHistory(CODE)
    typed(h, 1, "total", "amount")
    assert shape(h) == [(1, ("    total = 0",), ("    amount = 0",))]
    assert h.open is not None and not h.hunks   # still being typed
    assert h.last() == h.open
    assert h.text == CODE.replace("    total = 0", "    amount = 0")


def test_keystrokes_on_an_adjacent_line_join_the_hunk():
    h = EditHistory(CODE)
    typed(h, 1, "total", "amount")
    typed(h, 2, "order in orders", "o in orders")   # the line just below
    typed(h, 0, "orders", "items")                 # and the one just above
    assert shape(h) == [(0, ("def summarize(orders):", "    total = 0", "    for order in orders:"),
                            ("def summarize(items):", "    amount = 0", "    for o in orders:"))]


def test_an_edit_far_away_closes_the_hunk():
    h = EditHistory(CODE)
    typed(h, 1, "total", "amount")
    typed(h, 5, "big", "large")
    assert shape(h) == [(1, ("    total = 0",), ("    amount = 0",)),
                        (5, ('        print("big order")',), ('        print("large order")',))]
    assert list(h.hunks) == h.recent()[:1] and h.open == h.recent()[1]
    assert h.recent()[0].at <= h.recent()[1].at


def test_a_rename_carried_to_each_use_in_turn_is_one_hunk_per_line():
    """What a next edit follows: the user renames the definition, then each use below, one line at a time
    (the lines are two apart, so each is a new hunk)."""
    h = EditHistory(CODE)
    for line in (1, 3, 6):
        typed(h, line, "total", "amount")
    assert [(s, o[0].strip(), n[0].strip()) for s, o, n in shape(h)] == [
        (1, "total = 0", "amount = 0"), (3, "total += order.price", "amount += order.price"),
        (6, "return total", "return amount")]


def test_typing_the_open_hunk_back_as_it_was_removes_it():
    h = EditHistory(CODE)
    typed(h, 5, "big", "large")                 # closed below by the next edit
    typed(h, 1, "total", "amount")
    typed(h, 1, "amount", "total")              # backspaced and typed again: no edit
    assert shape(h) == [(5, ('        print("big order")',), ('        print("large order")',))]
    assert h.open is None
    # and the next keystroke on that line starts a fresh hunk from the text as it is now
    typed(h, 1, "0", "1")
    assert shape(h)[-1] == (1, ("    total = 0",), ("    total = 1",))


def test_undoing_the_edits_removes_them_newest_first():
    """The editor's undo puts each edit's text back in one change: the open hunk goes, then the closed one
    before it (reversed by one change)."""
    h = EditHistory(CODE)
    first = typed(h, 1, "total", "amount")
    typed(h, 5, "big", "large")
    assert len(h.recent()) == 2
    h.record(first)                 # undo the second edit
    assert shape(h) == [(1, ("    total = 0",), ("    amount = 0",))]
    assert h.open is None and len(h.hunks) == 1
    h.record(CODE)                  # undo the first
    assert h.recent() == [] and h.diff("a.py") == ""


def test_a_change_that_puts_back_an_older_hunk_than_the_last_is_an_edit_of_its_own():
    """Only the hunk just before can be undone (as an editor's undo goes): the first line put back while the
    second edit stands is a third hunk."""
    h = EditHistory(CODE)
    typed(h, 1, "total", "amount")
    typed(h, 5, "big", "large")
    h.record(replaced(h.text, 1, "    total = 0"))
    assert [s for s, _, _ in shape(h)] == [1, 5, 1]
    assert shape(h)[2] == (1, ("    amount = 0",), ("    total = 0",))


def test_lines_inserted_and_deleted():
    h = EditHistory(CODE)
    # Enter at the end of line 1 and a new line typed: an insertion (no old lines)
    text = replaced(CODE, 1, ["    total = 0", ""])
    h.record(text)
    for ch in "    count = 0":
        text = replaced(text, 2, h.text.split("\n")[2] + ch)
        h.record(text)
    assert shape(h) == [(2, (), ("    count = 0",))]
    # two lines deleted far below: a deletion (no new lines), in the text as it stood then
    lines = h.text.split("\n")
    h.record("\n".join(lines[:5] + lines[7:]))
    assert shape(h)[1] == (5, ("    if total > 100:", '        print("big order")'), ())
    assert h.diff("a.py") == ("--- a/a.py\n+++ b/a.py\n"
                              "@@ -2,0 +3,1 @@\n+    count = 0\n"
                              "@@ -6,2 +5,0 @@\n-    if total > 100:\n-        print(\"big order\")\n")


def test_the_diff_s_text():
    h = EditHistory(CODE)
    typed(h, 1, "total", "amount")
    typed(h, 6, "total", "amount")
    assert h.diff("src/orders.py") == ("--- a/src/orders.py\n+++ b/src/orders.py\n"
                                       "@@ -2,1 +2,1 @@\n-    total = 0\n+    amount = 0\n"
                                       "@@ -7,1 +7,1 @@\n-    return total\n+    return amount\n")
    assert EditHistory(CODE).diff("a.py") == ""


@pytest.mark.parametrize("hunk, head", [
    (Hunk(4, ("a",), ("b", "c")), "@@ -5,1 +5,2 @@"),
    (Hunk(4, (), ("b",)), "@@ -4,0 +5,1 @@"),      # an insertion: after line 4 (unified diff's convention)
    (Hunk(4, ("a", "b"), ()), "@@ -5,2 +4,0 @@"),  # a deletion: the new side is empty after line 4
    (Hunk(0, (), ("b",)), "@@ -0,0 +1,1 @@"),      # at the top of the file
])
def test_the_headers_of_empty_sides_follow_the_unified_diff_s_convention(hunk, head):
    """As git writes them, and the next-edit suite's `recent_edits` (what the prompt was measured with)."""
    assert hunk.diff().split("\n")[0] == head


def test_the_suite_s_reader_reads_the_history_s_diff_back():
    """The lab's runner turns a case's diff into hunks (for the filters) as the server has them."""
    from evals.suites.next_edit.run import hunks_of
    hunks = [Hunk(1, ("    total = 0",), ("    amount = 0",)), Hunk(4, (), ("    x = 1", "")),
             Hunk(7, ("a", "b"), ()), Hunk(0, (), ("# head",))]
    h = EditHistory("")
    h.hunks.extend(hunks)
    assert hunks_of(h.diff("a.py")) == hunks


def test_a_hunk_s_lines_shown_are_bounded():
    big = tuple(f"x{i} = {i}" for i in range(3 * MAX_HUNK_LINES))
    diff = Hunk(0, (), big).diff()
    assert diff.split("\n")[0] == f"@@ -0,0 +1,{len(big)} @@"
    assert diff.count("\n+") == MAX_HUNK_LINES and f"+x{MAX_HUNK_LINES - 1} =" in diff and f"+x{MAX_HUNK_LINES} =" not in diff


def test_the_recent_hunks_are_at_most_max_hunks_the_oldest_going_first():
    lines = [f"line_{i} = {i}" for i in range(60)]
    h = EditHistory("\n".join(lines))
    for k in range(MAX_HUNKS + 4):
        lines[k * 5] = f"edited_{k} = {k}"          # five lines apart: each a hunk of its own
        h.record("\n".join(lines))
    recent = h.recent()
    assert len(recent) == MAX_HUNKS
    assert [r.new[0] for r in recent] == [f"edited_{k} = {k}" for k in range(4, MAX_HUNKS + 4)]
    assert recent[-1] is h.open and h.diff("a.py").count("@@ -") == MAX_HUNKS


def test_an_undo_after_the_bound_shows_the_hunk_before_again():
    lines = [f"line_{i} = {i}" for i in range(60)]
    h = EditHistory("\n".join(lines))
    for k in range(MAX_HUNKS + 1):
        lines[k * 5] = f"edited_{k} = {k}"
        h.record("\n".join(lines))
    lines[MAX_HUNKS * 5] = f"line_{MAX_HUNKS * 5} = {MAX_HUNKS * 5}"   # the last edit undone
    h.record("\n".join(lines))
    assert [r.new[0] for r in h.recent()] == [f"edited_{k} = {k}" for k in range(MAX_HUNKS)]


def test_line_change():
    assert line_change(["a", "b"], ["a", "b"]) is None
    assert line_change(["a", "b", "c"], ["a", "x", "c"]) == Hunk(1, ("b",), ("x",))
    assert line_change(["a", "b"], ["a", "b", "c"]) == Hunk(2, (), ("c",))
    assert line_change(["a", "b", "b"], ["a", "b"]) == Hunk(2, ("b",), ())   # the last of equal lines
    assert line_change([""], ["x"]) == Hunk(0, ("",), ("x",))


def test_histories_by_uri_forget_a_closed_document():
    hs = EditHistories()
    hs.opened("file:///a.py", CODE)
    hs.opened("file:///b.py", "x = 1\n")
    hs.changed("file:///a.py", CODE.replace("total = 0", "amount = 0"))
    assert len(hs) == 2 and shape(hs.get("file:///a.py")) == [(1, ("    total = 0",), ("    amount = 0",))]
    assert hs.get("file:///b.py").recent() == []
    hs.closed("file:///a.py")
    assert hs.get("file:///a.py") is None and len(hs) == 1
    hs.closed("file:///a.py")   # twice: nothing
    hs.opened("file:///a.py", CODE)   # opened again: no history from before
    assert hs.get("file:///a.py").recent() == []


def test_a_document_changed_before_it_was_opened_starts_its_history_there():
    hs = EditHistories()
    hs.changed("file:///c.py", CODE)
    h = hs.get("file:///c.py")
    assert h is not None and h.text == CODE and h.recent() == []
    hs.changed("file:///c.py", CODE.replace("return total", "return total * 2"))
    assert shape(h) == [(6, ("    return total",), ("    return total * 2",))]


def test_text_change_is_line_change_without_splitting_the_whole_text():
    """The history compares two versions by their common start and end first (a keystroke in a large file):
    the hunk is the one a comparison of every line finds, at line ends, blank lines and the text's ends too."""
    import random
    rnd = random.Random(7)
    pieces = ["a", "b", "\n", "\n", "x", "ab\n", ""]
    for _ in range(20000):
        before = "".join(rnd.choice(pieces) for _ in range(rnd.randint(0, 8)))
        i = rnd.randint(0, len(before))
        j = rnd.randint(i, len(before))
        after = before[:i] + "".join(rnd.choice(pieces) for _ in range(rnd.randint(0, 3))) + before[j:]
        assert text_change(before, after) == line_change(before.split("\n"), after.split("\n")), (before, after)


# ---- a change of several pieces at once: format-on-save, organize imports ----------------------------------------

LONG = """import os \n\
import sys


def summarize(orders, tax_rate=0.2):
    total = 0
    for order in orders:
        total += order.price
    if total > 100:
        print('big order')
    total = total * (1 + tax_rate)
    log = {'total':total}
    print(log)
    return total  \n\
"""


def formatted(text: str) -> str:
    """What a formatter makes of a text: double quotes, a space after a colon and around `*` and `+=`, no spaces at
    the ends of lines. Of LONG it changes lines 0, 9, 11 and 13: pieces apart from each other, spanning the text."""
    text = re.sub(r"(\S)(\*|\+=)(\S)", r"\1 \2 \3", re.sub(r":(?=\S)", ": ", text.replace("'", '"')))
    return "\n".join(line.rstrip() for line in text.split("\n"))


def consistent(history: EditHistory) -> bool:
    """Each hunk's new lines stand at its start in the text after it: undone from the newest to the oldest, the
    hunks lead back from the document's text to the one they began from."""
    lines = history.text.split("\n")
    for h in reversed(history.recent()):
        if tuple(lines[h.start:h.end]) != h.new:
            return False
        lines[h.start:h.end] = h.old
    return True


def test_format_on_save_after_a_rename_leaves_the_rename_the_last_edit():
    """The formatter's pieces are not the user's edits: the rename stays the edit to follow (the client asks
    again after the save, and the same repeat is there), and it is closed."""
    h = EditHistory(LONG)
    typed(h, 5, "total", "amount")
    h.record(formatted(h.text))        # one change, as the editor sends the formatter's edits
    assert shape(h) == [(5, ("    total = 0",), ("    amount = 0",))]
    assert h.open is None and consistent(h)


def test_the_next_keystrokes_after_a_format_make_a_hunk_of_their_own():
    """The user's next edit is a hunk of its lines alone (it does not join one spanning the formatter's lines),
    and the one after it, far away, closes it."""
    h = EditHistory(LONG)
    typed(h, 5, "total", "amount")
    h.record(formatted(h.text))
    typed(h, 7, "total", "amount")
    assert shape(h)[-1] == (7, ("        total += order.price",), ("        amount += order.price",))
    assert len(h.recent()) == 2 and consistent(h)
    typed(h, 13, "total", "amount")
    assert [s for s, _, _ in shape(h)] == [5, 7, 13] and consistent(h)


def test_a_format_before_any_edit_leaves_no_history_and_the_first_edit_is_followed():
    h = EditHistory(LONG)
    h.record(formatted(LONG))
    assert h.recent() == [] and h.open is None
    typed(h, 7, "total", "amount")
    assert shape(h) == [(7, ("        total += order.price",), ("        amount += order.price",))]


def test_organize_imports_moves_the_edits_below_by_the_lines_it_adds_and_removes():
    """An import added and one removed (two pieces above the user's edits): the edits keep their lines, moved to
    where they stand now, so the diff the prompt reads is one that leads to the text."""
    h = EditHistory(LONG)
    typed(h, 5, "total", "amount")
    typed(h, 13, "total", "amount")
    lines = h.text.split("\n")
    h.record("\n".join(["import json", "import os"] + lines[2:3] + ["import re"] + lines[3:]))
    assert shape(h) == [(6, ("    total = 0",), ("    amount = 0",)),
                        (14, ("    return total  ",), ("    return amount  ",))]
    assert consistent(h)


def test_a_format_that_rewrites_the_line_being_edited_keeps_the_edit_as_it_now_reads():
    """The formatter changed the line the user just edited (and others far away): the user's hunk now reads
    as the formatter left it, from the same old line."""
    h = EditHistory(LONG)
    typed(h, 11, "'total':total", "'total':amount")
    h.record(formatted(h.text))
    assert shape(h) == [(11, ("    log = {'total':total}",), ('    log = {"total": amount}',))]
    assert consistent(h)


def test_a_format_that_undoes_the_edit_being_typed_leaves_no_edit():
    """The formatter put back the line being edited as it was: that edit is gone, the one before stays."""
    h = EditHistory(LONG)
    typed(h, 5, "total", "amount")
    typed(h, 7, "total += order", "total+=order")
    h.record(formatted(h.text))
    assert shape(h) == [(5, ("    total = 0",), ("    amount = 0",))] and consistent(h)


def test_a_format_that_rewrites_an_older_edit_s_lines_keeps_it_as_it_now_reads():
    h = EditHistory(LONG)
    typed(h, 9, "big", "large")
    typed(h, 5, "total", "amount")
    h.record(formatted(h.text))
    assert shape(h) == [(9, ("        print('big order')",), ('        print("large order")',)),
                        (5, ("    total = 0",), ("    amount = 0",))]
    assert consistent(h)


def test_the_pieces_of_a_change_are_its_runs_of_differing_lines():
    lines = LONG.split("\n")
    assert [(p.start, p.old, p.new) for p in pieces(text_change(LONG, formatted(LONG)))] == [
        (n, (lines[n],), (formatted(LONG).split("\n")[n],)) for n in (0, 9, 11, 13)]
    keystroke = text_change(LONG, LONG.replace("total = 0", "tota = 0"))
    assert pieces(keystroke) == [keystroke]
    # an import added above, one taken out below: an insertion and a deletion, the lines between alike
    moved = ["import json"] + lines[:1] + lines[2:]
    assert [(p.start, p.old, p.new) for p in pieces(text_change(LONG, "\n".join(moved)))] == [
        (0, (), ("import json",)), (1, ("import sys",), ())]


def test_the_pieces_are_a_true_diff_of_any_two_texts():
    """Applied to the old lines, the pieces give the new ones, each between lines alike, on texts where lines
    repeat (blank lines, braces) and stretches long enough that the search widens several times."""
    import random
    rnd = random.Random(3)
    vocabulary = ["", "}", "x = 1", "return y"] + [f"line {n}" for n in range(400)]
    for _ in range(400):
        old = [rnd.choice(vocabulary) for _ in range(rnd.choice([5, 40, 400]))]
        new = list(old)
        for _ in range(rnd.randint(1, 8)):
            n = rnd.randrange(len(new) + 1)
            new[n:n + rnd.choice([0, 1, 3, 150])] = [rnd.choice(vocabulary) for _ in range(rnd.choice([0, 1, 2, 90]))]
        change = line_change(old, new)
        if change is None:
            continue
        got = pieces(change)
        rebuilt, end = list(old), len(old)
        for p in reversed(got):
            assert p.old != p.new and p.start + len(p.old) <= end
            assert rebuilt[p.start:p.start + len(p.old)] == list(p.old)
            rebuilt[p.start:p.start + len(p.old)] = p.new
            end = p.start
        assert rebuilt == new
        assert all(a.start + len(a.old) < b.start for a, b in zip(got, got[1:]))   # a line alike between


def test_the_history_stays_a_sequence_that_leads_to_the_text_through_any_changes():
    """Keystrokes, pastes and changes of many pieces at once, at random: the hunks always lead to the text, and
    after a change of several pieces nothing is open."""
    import random
    rnd = random.Random(56)
    words = ["a", "b", "x = 1", "", "    y", "z()"]
    for _ in range(300):
        lines = [rnd.choice(words) for _ in range(rnd.randint(1, 30))]
        h = EditHistory("\n".join(lines))
        for _ in range(12):
            lines = h.text.split("\n")
            if rnd.random() < 0.3:   # several lines changed at once, anywhere
                for n in sorted(rnd.sample(range(len(lines)), min(len(lines), rnd.randint(2, 5))), reverse=True):
                    lines[n:n + 1] = rnd.choice([[], [lines[n] + "!"], [lines[n], rnd.choice(words)]])
            else:                    # a keystroke or a small paste in one place
                n = rnd.randrange(len(lines))
                lines[n:n + rnd.randint(0, 2)] = [rnd.choice(words) for _ in range(rnd.randint(0, 2))]
            before, after = h.text, "\n".join(lines)
            h.record(after)
            assert consistent(h), shape(h)
            change = text_change(before, after)
            if change is not None and len(pieces(change)) > 1:
                assert h.open is None
