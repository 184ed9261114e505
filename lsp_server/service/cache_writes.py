"""What a finished generation puts in the typing cache: a pure function of the plan and the generation (the
post-processing it runs is the pipeline's). The scheduler applies the writes; tests read them directly."""
from __future__ import annotations

from dataclasses import dataclass, replace

from ..engine import CUT_SHORT, ENDS_HOLE, Generation
from ..pipeline import Pipeline, Plan


@dataclass(frozen=True)
class CacheWrite:
    prefix: str
    suffix: str
    text: str
    done: bool = False        # nothing is to come at this place (the cache answers "" there)
    continued: bool = False   # the next line of a one-line generation that went on past its line
    confidence: dict | None = None   # the gate's verdict on `text` (gate.Gate.writes)


def cache_writes(plan: Plan, gen: Generation) -> list[CacheWrite]:
    """The whole answer (an early answer showed only a part), where the hole is filled, and for a one-line job
    that went on past its line, the next line, for when this one is accepted."""
    text, finish = gen.text, Pipeline.finish_text
    ended = gen.stop_reason in ENDS_HOLE
    truncated = gen.stop_reason in CUT_SHORT
    whole = finish(replace(plan.around, truncated=truncated, ended=ended), text)
    out = [CacheWrite(plan.prefix, plan.suffix, whole)]
    if ended and whole and whole.rstrip() == text.rstrip():
        # the model ended the middle, or went on to write the code below again: where its text ends, the hole
        # is filled, and the next suggestion there is none (not a generation that writes more)
        out.append(CacheWrite(plan.prefix + whole, plan.suffix, "", done=True))
    # key it by the line as it was shown (after post-processing), which is what an accept inserts; a line that
    # opens a block is keyed alone too, its body then being the next line
    alone = replace(plan.around, with_body=False)
    end = alone.line_end(text, final=True)
    if not plan.continues or end < 0:
        return out
    shown = finish(alone, text[:end])
    if not shown or not text.startswith(shown):
        return out
    if alone.body_below(shown):
        # the line opens a block whose body is the code below: the hole is filled, whatever body the model went
        # on to write of its own (HumanEval/132/L5: an `elif` line was missing)
        return out + [CacheWrite(plan.prefix + shown, plan.suffix, "", done=True)]
    # (where the model ended a block it may be missing, the rest of that block)
    around = replace(plan.around, prefix=plan.prefix + shown, truncated=truncated, ended=ended)
    nxt = finish(around, text[len(shown):])
    if nxt.strip():
        out.append(CacheWrite(plan.prefix + shown, plan.suffix, nxt, continued=True))
        if ended and shown + nxt == text:
            out.append(CacheWrite(plan.prefix + text, plan.suffix, "", done=True))
    return out
