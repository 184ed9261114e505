"""Turns raw model text into what the editor shows. One filter per module; each is a pure function
(completion, Around) -> completion, knows nothing of the engine, and has golden cases in
tests/postprocess/golden/<filter>.toml."""
from __future__ import annotations

from dataclasses import replace

from .around import Around
from . import (close_cut_block, drop_closer_overlap, drop_dead_end, drop_line_rest_repeat, drop_repetition,
               drop_suffix_repeat, drop_unfinished_line, fit_indent, keep_opened_block, single_line, stay_in_block, syntax_cut,
               trim_trailing_blank)

FILTERS = {
    "single_line": single_line.apply,
    "fit_indent": fit_indent.apply,
    "keep_opened_block": keep_opened_block.apply,
    "drop_unfinished_line": drop_unfinished_line.apply,
    "trim_trailing_blank": trim_trailing_blank.apply,
    "drop_repetition": drop_repetition.apply,
    "stay_in_block": stay_in_block.apply,
    "drop_suffix_repeat": drop_suffix_repeat.apply,
    "drop_closer_overlap": drop_closer_overlap.apply,
    "drop_line_rest_repeat": drop_line_rest_repeat.apply,
    "drop_dead_end": drop_dead_end.apply,
    "syntax_cut": syntax_cut.apply,
    "close_cut_block": close_cut_block.apply,
}
# a block cut short is closed after every cut (what it closes must be what is shown); trimming again last: a cut
# may leave trailing blank lines behind; a cut line goes before keep_opened_block cuts at a block's end (what
# that leaves is whole: dropping its last line then would drop a finished one)
ORDER = ("single_line", "fit_indent", "drop_unfinished_line", "keep_opened_block", "trim_trailing_blank",
         "drop_repetition", "stay_in_block", "drop_suffix_repeat", "drop_closer_overlap", "drop_line_rest_repeat",
         "drop_dead_end", "syntax_cut", "close_cut_block", "trim_trailing_blank")


def run(completion: str, around: Around) -> str:
    if around.maybe_block and around.ended and not around.multiline:
        around = replace(around, multiline=True)   # the model said where the hole ends: its block is the answer
    if not around.multiline and around.with_body and around.opens_block(completion):
        around = replace(around, multiline=True, block_of_line=True)   # the line opens a block: its body comes too
    for name in ORDER:
        if not completion:
            break
        before, completion = completion, FILTERS[name](completion, around)
        if name == "single_line" and around.truncated and len(completion) < len(before) \
                and before[len(completion)] == "\n":
            around = replace(around, truncated=False)   # the line ended before the text was cut: it is whole
    return completion


__all__ = ["Around", "FILTERS", "run"]
