"""From a next-edit answer (the region as the model rewrote it) to the edit proposed, or to nothing: the changed
lines as one replacement of whole lines, then the filters, each a reason to propose nothing (Tabby's rule: a
suggestion that may be wrong costs the user more than none):

- `copy`: the answer is the region again (whitespace aside);
- `undo`: it puts back what the user's recent edit took out (the model's favourite wrong answer);
- `syntax`: the file parsed before and does not after;
- `deletion`: it takes out several lines net, or writes nothing at all (how a rewrite that lost its way, or was
  cut, looks);
- `cut`: the answer was cut short before it wrote a changed line fully;
- `unsure`: where the answer first leaves the region's text, the model barely preferred that to copying on.

Two reasons come before any answer (the service decides them, and they are counted with the filters'):
- `too_long`: the region with the least context does not fit the engine's context (prompt/budget.py);
- `no_margins`: the engine gives no margins (a remote one), so `unsure` could not be judged: the model's own
  rewrite is not asked for (the candidates, checked by the target's greedy answer, still are);
- `disagreed`: candidates were found (context/candidates/) and the target, asked to fill their places, wrote
  none of them: no rewrite is asked either (the target is no surer of an edit of its own there);
- `new_code`: the user's last edit only added lines (new code being written, which the completions continue):
  no rewrite is asked."""
from __future__ import annotations

import difflib
from dataclasses import dataclass
from enum import StrEnum

from ..context.edits import Hunk, keep_lines
from ..context.syntax import error_count, parse

MAX_DELETED = 3   # lines an edit may take out net (its old lines less its new ones)


class Dropped(StrEnum):
    COPY = "copy"
    UNDO = "undo"
    SYNTAX = "syntax"
    DELETION = "deletion"
    CUT = "cut"
    UNSURE = "unsure"
    TOO_LONG = "too_long"
    NO_MARGINS = "no_margins"
    DISAGREED = "disagreed"      # candidates were found, and the target wrote none of them
    NEW_CODE = "new_code"        # the user's last edit only added lines: no rewrite is asked
    REPEATS = "repeats"          # it writes again a line that stands just above or below (`repeats_nearby`)


# the model's top-2 logit gap where its answer first leaves the region's text, below which the edit is not
# proposed: on the suite's tune half (30 cases, docs/evaluation.md) none of the model's own proposals was the
# next hunk, and those that were not repeats of the user's change all left the region at gaps of 4.5 or less;
# a departure the model barely preferred to copying on is wrong more often than right
MIN_DEPARTURE_MARGIN = 5.0


def departure(region: str, answer: str, above: str = "") -> int:
    """Where (a character offset of the answer) it first leaves the region's text: the lines it repeated from
    above the region skipped; len(answer) where it does not."""
    skip = 0
    shown = keep_lines(above)
    for k in range(len(shown), 0, -1):
        head = "".join(shown[-k:])
        if answer.startswith(head) and not region.startswith(head):
            skip = len(head)
            break
    i = 0
    rest = answer[skip:]
    n = min(len(rest), len(region))
    while i < n and rest[i] == region[i]:
        i += 1
    return skip + i


@dataclass(frozen=True)
class Edit:
    start: int           # the first replaced line of the document (0-based)
    end: int             # the line after the last (start == end: an insertion before `start`)
    text: str            # the new lines, each ending in "\n"
    old_text: str        # the lines replaced


def _norm(lines) -> list[str]:
    return [" ".join(line.split()) for line in lines if line.strip()]


def changed_lines(region: str, answer: str, cut: bool, above: str = "") -> tuple[int, int, str] | None:
    """The answer's change to the region as (first line, line after the last, new text), region-relative; None
    where it changes nothing. `cut`: the answer stopped at a limit, so its last line may be unfinished and the
    region's lines after what it wrote are not its deletions. `above`: the lines shown above the region, which
    the model sometimes writes again before it (they are not part of its answer)."""
    old = keep_lines(region)
    new = keep_lines(answer)
    shown = keep_lines(above)
    for k in range(min(len(shown), len(new)), 0, -1):
        if new[:k] == shown[-k:] and old[:k] != shown[-k:]:
            new = new[k:]
            break
    if new and not new[-1].endswith("\n"):
        if cut:
            new = new[:-1]
        else:
            new[-1] += "\n"
    ops = [op for op in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes() if op[0] != "equal"]
    if cut:   # what it did not get to write is not deleted
        while ops and ops[-1][0] == "delete" and ops[-1][2] == len(old):
            ops.pop()
        # nor where difflib folds it into the replacement of the last lines written (`b c d` -> `B` where the
        # answer stopped after `B`): the region's lines past those written, line for line, stay
        if ops and ops[-1][0] == "replace" and ops[-1][2] == len(old):
            tag, i1, i2, j1, j2 = ops[-1]
            ops[-1] = (tag, i1, min(i2, i1 + j2 - j1), j1, j2)
    if not ops:
        return None
    i1, j1 = ops[0][1], ops[0][3]
    i2, j2 = ops[-1][2], ops[-1][4]
    return i1, i2, "".join(new[j1:j2])


def _cut_in_a_change(region: str, answer: str) -> bool:
    """Whether a cut answer that changed none of the lines it wrote whole stopped in a line it was changing (its
    unfinished last line is not the start of the region's line there), rather than while copying."""
    written, old = keep_lines(answer), keep_lines(region)
    if not written or written[-1].endswith("\n"):
        return False
    k = len(written) - 1
    return k >= len(old) or not old[k].startswith(written[-1])


def undoes(old_text: str, new_text: str, recent: list[Hunk]) -> bool:
    """Whether the edit turns a recent hunk's new lines back into its old ones."""
    old, new = _norm(keep_lines(old_text)), _norm(keep_lines(new_text))
    for h in recent:
        h_old, h_new = _norm(h.old), _norm(h.new)
        if h_old == h_new:
            continue
        took_out = [line for line in h_old if line not in h_new]
        put_in = [line for line in h_new if line not in h_old]
        back = took_out and all(line in new and line not in old for line in took_out)
        removed = put_in and all(line in old and line not in new for line in put_in)
        if (back and (removed or not put_in)) or (removed and not took_out):
            return True
    return False


def breaks_syntax(document: str, edit: Edit, language: str) -> bool:
    lines = keep_lines(document)
    after = "".join(lines[:edit.start]) + edit.text + "".join(lines[edit.end:])
    before_tree = parse(document, language)
    if before_tree is None:
        return False   # no grammar: nothing to judge by
    after_tree = parse(after, language)
    return error_count(after_tree.root_node) > error_count(before_tree.root_node)


NEARBY_LINES = 12   # how far from the edit a line it would write again is looked for


def repeats_nearby(document: str, edit: Edit, recent: list[Hunk] = ()) -> bool:
    """Whether the edit writes a line of code that already stands within NEARBY_LINES of it: a rewrite that copies
    the lines shown above its region (imports, a comment block) back into it as new lines. Lines without a word
    of some length (a brace, `break;`) repeat by nature and do not count, nor do the lines the user's recent edits
    wrote: the same change on the next line of the same shape writes the user's line again."""
    lines = keep_lines(document)
    old = {x.strip() for x in keep_lines(edit.old_text)} | {x.strip() for h in recent for x in h.new}
    around = lines[max(0, edit.start - NEARBY_LINES):edit.start] + lines[edit.end:edit.end + NEARBY_LINES]
    near = {x.strip() for x in around}
    return any(len(x) >= 10 and any(c.isalnum() for c in x) and x in near and x not in old
               for x in (y.strip() for y in keep_lines(edit.text)))


def proposal(document: str, region_start: int, region: str, answer: str, cut: bool, recent: list[Hunk],
             language: str, above: str = "") -> tuple[Edit | None, Dropped | None]:
    """The edit to propose (document lines), or None and why (`above`: see changed_lines)."""
    if not answer.strip() and region.strip():
        # it wrote nothing: no answer (cut before its first line), or the whole region deleted
        return None, (Dropped.CUT if cut else Dropped.DELETION)
    change = changed_lines(region, answer, cut, above)
    if change is None:
        return None, (Dropped.CUT if cut and _cut_in_a_change(region, answer) else Dropped.COPY)
    i1, i2, text = change
    old_lines = keep_lines(region)[i1:i2]
    old_text = "".join(old_lines)
    if _norm(old_lines) == _norm(keep_lines(text)):
        return None, Dropped.COPY
    edit = Edit(region_start + i1, region_start + i2, text, old_text)
    if len(old_lines) - len(keep_lines(text)) > MAX_DELETED:
        return None, Dropped.DELETION   # several lines gone: a rewrite that lost its way, or stopped early
    if undoes(old_text, text, recent):
        return None, Dropped.UNDO
    if repeats_nearby(document, edit, recent):
        return None, Dropped.REPEATS
    if breaks_syntax(document, edit, language):
        return None, Dropped.SYNTAX
    return edit, None
