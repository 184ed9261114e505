"""The check of a candidate next edit (service/edit_check.py): where the hole goes, and what counts as the target's
agreeing; the check with the real models is in test_next_edit_models.py."""
from __future__ import annotations

import pytest

from lsp_server.context.candidates import make
from lsp_server.engine import StopReason
from lsp_server.service.edit_check import after_middle, agrees, holes

TEXT = "def f(total):\n    x = total + 1\n    return x\n"


def cut(text: str, start: int, end: int, new: str):
    c = make(text, start, end, new, "test")
    assert c is not None
    (h,) = holes(text, c)
    return h.text[:h.start], h.middle, h.text[h.end:]


def test_the_hole_is_the_changed_word_with_the_space_before_it():
    assert cut(TEXT, 1, 2, "    x = amount + 1\n") == ("def f(total):\n    x =", " amount", " + 1\n    return x\n")


def test_a_change_inside_a_name_widens_to_the_whole_name():
    text = "engine.SetHTTPTemplate(templ)\n"
    prefix, middle, suffix = cut(text, 0, 1, "engine.SetHTMLTemplate(templ)\n")
    assert (prefix, middle, suffix) == ("engine.", "SetHTMLTemplate", "(templ)\n")


def test_an_inserted_line_is_a_hole_of_that_line_at_the_start_of_the_next():
    prefix, middle, suffix = cut(TEXT, 1, 1, "    y = 0\n")
    assert (prefix, middle, suffix) == ("def f(total):\n", "    y = 0\n", "    x = total + 1\n    return x\n")


def test_deleted_lines_are_a_hole_with_nothing_in_it():
    prefix, middle, suffix = cut(TEXT, 1, 2, "")
    assert (prefix, middle, suffix) == ("def f(total):\n", "", "    return x\n")


def test_indentation_is_not_taken_into_the_hole():
    prefix, middle, suffix = cut(TEXT, 1, 2, "    y = total + 1\n")
    assert (prefix[-5:], middle, suffix[:11]) == ("\n    ", "y", " = total + ")


def test_a_change_in_two_places_is_two_holes_each_with_the_other_change_made():
    text = "    if minor >= 40 {\n        cfg=btreemap\n"
    c = make(text, 0, 2, "    if minor < 40 {\n        cfg=no_btreemap\n", "test")
    a, b = holes(text, c)
    assert (a.text[:a.start], a.middle, a.text[a.end:]) == ("    if minor", " <", " 40 {\n        cfg=no_btreemap\n")
    assert (b.text[:b.start], b.middle, b.text[b.end:]) == ("    if minor < 40 {\n        cfg=", "no_btreemap", "\n")


def test_a_last_line_without_a_newline_keeps_none():
    text = "a = 1\nb = old"
    prefix, middle, suffix = cut(text, 1, 2, "b = new\n")
    assert (prefix, middle, suffix) == ("a = 1\nb =", " new", "")


@pytest.mark.parametrize("middle,written,stop,suffix,want", [
    ("amount", "amount", StopReason.EOG, " + 1\n", True),          # the candidate, then the end of the middle
    ("amount", "amount + 1", StopReason.LENGTH, " + 1\n", True),   # the candidate, then the code after it again
    ("amount", "amount * 2", StopReason.STOP, " + 1\n", True),     # its own continuation: the middle is the verdict
    ("amount", "amounts", StopReason.STOP, " + 1\n", False),       # a longer name than the middle's
    ("amount", "amo", StopReason.EOG, " + 1\n", False),            # stopped short
    ("amount", "total", StopReason.STOP, " + 1\n", False),         # another name
    ("amount", "amount", StopReason.STOP, "", True),               # the file ends there: written is all
    ("", "", StopReason.EOG, "x\n", True),                          # a deletion: nothing, then the end
    ("", "x\n", StopReason.LENGTH, "x\n", True),                    # nothing, then the code after it
    ("", "y", StopReason.STOP, "x\n", False),                       # something where nothing was to be
    ("", "return", StopReason.STOP, "return total\n", False),       # not far enough along the code after it
    ("", "return tot", StopReason.STOP, "return total\n", True),
    ("", "class Method(", StopReason.LENGTH, "\nclass Method(Field):\n", True),   # the blank line left out
    ("", "\n\nclass Method(", StopReason.LENGTH, "\nclass Method(Field):\n", True),   # or one more written
    ("", "    def", StopReason.LENGTH, "\nclass Method(Field):\n", False),   # the body goes on: not deleted
    ("", "\n", StopReason.LENGTH, "\nclass Method(Field):\n", False),     # a blank line is not the code after it
    ("a", "a", StopReason.CANCELLED, "b", False),
])
def test_agrees(middle, written, stop, suffix, want):
    assert agrees(middle, written, stop, suffix) is want


@pytest.mark.parametrize("middle,suffix,want", [
    ("x", " + 1\n", 1), ("", "return total\n", 8), ("", "x\n", 1), ("", "\n\nclass Method(Field):\n", 2 + 8),
    ("", "  \n", 3), ("", "", 0)])
def test_after_middle_reads_past_blank_lines(middle, suffix, want):
    assert after_middle(middle, suffix) == want
