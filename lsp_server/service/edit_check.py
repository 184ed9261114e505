"""The target's check of a candidate next edit (context/candidates/): the seed's draft -> verify -> accept, applied
to edits. The candidate's change is cut out of the file as a fill-in-the-middle hole (only the span where it
differs from the text, widened to whole words: the rest of its lines stays in the prompt around the hole), the
target is asked to fill that hole with the candidate's text drafted whole, and one verify batch says whether
the target's own greedy answer is the candidate's. It is shown only then: what is shown is what the target would
write there.

The prompt is the completion pipeline's own for a cursor at the hole (its page, its other files), so the page the
file's completions left cached serves it and only the text from the cursor's line to the hole, the suffix and
the candidate's few tokens are evaluated."""
from __future__ import annotations

import difflib
import os
import threading
import time
from dataclasses import dataclass, replace

from ..context import Document
from ..context.candidates import MAX_CANDIDATES, Candidate, find
from ..context.edits import Hunk, keep_lines
from ..engine import GenerationRequest, StopReason
from ..engine.speculative import skip_blank_lines
from ..pipeline import CompletionRequest, Pipeline, Plan
from ..postprocess.next_edit import Edit, breaks_syntax, undoes

# the code after the hole in a check's prompt: the hole's own line and a few below say what fits it; the rest of
# the file costs evaluation time (it is not cached: the completions' suffix starts elsewhere)
CHECK_SUFFIX_TOKENS = 96


@dataclass(frozen=True)
class Hole:
    text: str            # the document as the check sees it: the candidate's other changes made, not this one
    start: int           # character offset in `text` where the hole starts
    end: int             # where it ends (the text from here on is the suffix)
    middle: str          # what the candidate writes in it


def _word(c: str) -> bool:
    return c.isalnum() or c == "_"


def _spans(old: str, new: str) -> list[list[int]]:
    """Where `new` differs from `old`, as [i1, i2, j1, j2] (old[i1:i2] becomes new[j1:j2]), each widened to whole
    words and to the spaces before them (a prompt that ends in a space or inside a word is not how the model saw
    code tokenized), those that then touch merged."""
    ops = difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes()
    spans = [[i1, i2, j1, j2] for tag, i1, i2, j1, j2 in ops if tag != "equal"]
    out: list[list[int]] = []
    for i1, i2, j1, j2 in spans:
        lo = out[-1][1] if out else 0   # not back into the span before
        while i1 > lo and _word(old[i1 - 1]) and (
                (i1 < i2 and _word(old[i1])) or (j1 < j2 and _word(new[j1])) or
                (i1 < len(old) and _word(old[i1]))):
            i1, j1 = i1 - 1, j1 - 1
        while i2 < len(old) and _word(old[i2]) and (
                (i2 > i1 and _word(old[i2 - 1])) or (j2 > j1 and _word(new[j2 - 1]))):
            i2, j2 = i2 + 1, j2 + 1
        line_start = old.rfind("\n", 0, i1) + 1
        while i1 > lo and old[i1 - 1] in " \t" and old[line_start:i1].strip(" \t"):   # not the indentation
            i1, j1 = i1 - 1, j1 - 1
        if out and i1 <= out[-1][1]:
            out[-1][1], out[-1][3] = i2, j2
        else:
            out.append([i1, i2, j1, j2])
    return out


def holes(text: str, cand: Candidate) -> list[Hole]:
    """One hole per place where the candidate changes the text, each with the candidate's other changes made
    around it: a change of two places is checked at both, the target seeing the other place changed."""
    lines = keep_lines(text)
    base = sum(map(len, lines[:cand.start]))
    old, new = cand.old_text, cand.text
    if cand.end >= len(lines) and lines and not lines[-1].endswith("\n") and new.endswith("\n"):
        new = new[:-1]   # the last line has no newline: the candidate's lines end where the text does
    spans = _spans(old, new)
    out = []
    for k, (i1, i2, j1, j2) in enumerate(spans):
        before, after, at = "", "", 0
        for m, (a1, a2, b1, b2) in enumerate(spans):   # the old text with every other span changed
            piece = new[b1:b2] if m != k else old[a1:a2]
            before += old[at:a1]
            if m == k:
                start = len(before)
            before += piece
            at = a2
        after = before + old[at:]
        head = text[:base]
        out.append(Hole(head + after + text[base + len(old):], base + start, base + start + i2 - i1,
                        new[j1:j2]))
    return out


@dataclass
class Check:
    """One hole of a candidate and the request that checks it (planned on the context thread, run on the model
    thread)."""
    candidate: Candidate
    hole: Hole
    request: GenerationRequest
    plan: Plan

    @property
    def suffix(self) -> str:
        return self.hole.text[self.hole.end:]


@dataclass
class Verdict:
    candidate: Candidate
    agreed: bool
    written: str                 # what the target wrote in the hole (up to where it left the candidate)
    margin: float | None         # the smallest top-2 logit gap over the tokens it wrote (None: not known)
    prompt_tokens: int = 0
    evaluated: int = 0           # prompt tokens not served from cached state
    seconds: float = 0.0


def plan_checks(pipeline: Pipeline, place: CompletionRequest, cand: Candidate) -> list[Check]:
    """The checks of one candidate, a hole each: the document with the hole cut out, planned as a completion at
    the hole would be (`place`: a completion request in the document, for its context: the other documents, the
    project, what was edited lately; a prompt with the same head as the completions' finds their pages)."""
    document = place.document
    out = []
    for h in holes(document.text, cand):
        text = h.text[:h.start] + h.text[h.end:]
        line = text.count("\n", 0, h.start)
        col = h.start - (text.rfind("\n", 0, h.start) + 1)
        req = replace(place, document=Document(document.path, text, document.language), line=line, col=col,
                      multiline=True, force=True, suffix_cap=CHECK_SUFFIX_TOKENS)
        plan = pipeline.plan(req)
        # drafted: the middle and what `agrees` reads after it (the next character of the code after the hole, or
        # where the middle is empty, as much of that code as must follow), so that one batch says it all
        suffix = h.text[h.end:]
        expect = h.middle + suffix[:after_middle(h.middle, suffix)]
        n = len(pipeline.engine.tokenize(expect))
        gen_req = GenerationRequest(plan.prompt.tokens, max_tokens=n + 1, language=document.language,
                                    expect=expect, record_margins=True, keep=plan.prompt.stable)
        out.append(Check(cand, h, gen_req, plan))
    return out


# characters of the code after the hole that the target must write again where the candidate writes nothing in
# it (lines taken out): that the code after the hole follows is all it can agree with there
AGAIN = 8


def after_middle(middle: str, suffix: str) -> int:
    """How much of the code after the hole a check reads after the middle (where it writes nothing: the blank lines
    after the hole, and then its first code)."""
    if middle:
        return min(1, len(suffix))
    blank = len(suffix) - len(skip_blank_lines(suffix))
    line = suffix[blank:suffix.find("\n", blank) + 1 or len(suffix)]
    return blank + min(AGAIN, len(line.rstrip("\n")) or 1, len(suffix) - blank)


def agrees(middle: str, written: str, stop: StopReason, suffix: str) -> bool:
    """Whether the target's answer is the candidate's. Where the candidate writes something, its tokens are the
    verdict: the target wrote the middle (not a longer name: `amounts` for `amount`); what it writes after it is
    its own continuation, the code after the hole in view. Where the candidate writes nothing (lines or words
    taken out), the target must end the middle there, or go on with the code after the hole for AGAIN characters
    (or to the end of the hole's line): it did not put back what was there. Blank lines do not count there: the
    target that writes the next class at once, where a blank line stands before it, went on with the code too."""
    if stop in (StopReason.CANCELLED, StopReason.ERROR) or not written.startswith(middle):
        return False
    rest = written[len(middle):]
    if middle:
        return not (rest and _word(middle[-1]) and _word(rest[0]))
    if not rest:   # it ended the middle at once, or the file ends there
        return stop == StopReason.EOG or (not suffix and stop == StopReason.STOP)
    rest, suffix = skip_blank_lines(rest), skip_blank_lines(suffix)
    same = len(os.path.commonprefix([rest, suffix]))
    return same > 0 and same >= after_middle(middle, suffix)


def run_checks(engine, checks: list[Check], cancel: threading.Event | None = None) -> Verdict:
    """Ask the target at each of a candidate's holes in turn (on the model thread), up to the first it does
    not agree with."""
    t0 = time.monotonic()
    written, margins, prompt, evaluated = [], [], 0, 0
    ok = bool(checks)
    for check in checks:
        gen = engine.generate(check.request, cancel)
        written.append(gen.text)
        margins += gen.margins
        prompt, evaluated = prompt + gen.prompt_tokens, evaluated + gen.prompt_evaluated
        ok = gen.stop_reason not in (StopReason.CANCELLED, StopReason.ERROR) and \
            agrees(check.hole.middle, gen.text, gen.stop_reason, check.suffix)
        if not ok:
            break
    return Verdict(checks[0].candidate if checks else None, ok, "\x00".join(written),
                   min(margins) if margins else None, prompt, evaluated, time.monotonic() - t0)


def plan_candidates(pipeline: Pipeline, place: CompletionRequest, recent: list[Hunk],
                    limit: int = MAX_CANDIDATES) -> list[list[Check]]:
    """The candidates for the edit after `recent` at the place's line (context/candidates/), those the filters
    let through (not an undo of the user's edit, not a break of the file's syntax), each with its checks (on the
    context thread)."""
    document = place.document

    def admit(cand: Candidate) -> bool:
        edit = Edit(cand.start, cand.end, cand.text, cand.old_text)
        return not (undoes(cand.old_text, cand.text, recent) or
                    breaks_syntax(document.text, edit, document.language))

    return [plan_checks(pipeline, place, cand)
            for cand in find(document.text, recent, place.line, document.language, limit, admit)]


def first_agreed(engine, planned: list[list[Check]], cancel: threading.Event | None = None
                 ) -> tuple[Verdict | None, list[Verdict]]:
    """The first candidate the target agrees with, and every verdict asked for (on the model thread)."""
    verdicts = []
    for checks in planned:
        if cancel is not None and cancel.is_set():
            break
        v = run_checks(engine, checks, cancel)
        verdicts.append(v)
        if v.agreed:
            return v, verdicts
    return None, verdicts
