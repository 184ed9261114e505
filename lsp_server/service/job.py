"""A generation the service runs for a document, and how a later request or edit relates to it."""
from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from enum import Enum
from typing import Callable

from ..engine import Cancel, Generation, StopReason
from ..pipeline import Plan
from ..postprocess.drop_unfinished_line import LAST_WORD
from .gate import Sureness
from .stats import Record


# tokens at the end of a prompt's stable part that a keystroke near the cursor may change (the cursor's line)
CURSOR_LINE_TOKENS = 32


# an early answer shows at least this many characters (not a lone `if`)
EARLY_MIN_CHARS = 6


class Take(Enum):
    """What a job has for a request when it has no text for it."""
    WAIT = "wait"            # not yet: its generation goes on
    GONE = "gone"            # it was cancelled (or a newer request superseded the one waiting)
    DIVERGED = "diverged"    # it went another way than the user typed: generate for the request's own prefix


@dataclass(frozen=True)
class Text:
    """What a job has for a request: its `raw` text from the request's cursor on (not post-processed), the
    generation when it ended (None while it goes on), and whether it is an early answer (part of a line or
    block the generation is still writing)."""
    raw: str
    gen: Generation | None = None
    early: bool = False


Taken = Text | Take


class Job:
    """One generation on the model thread, the requests waiting for it, and what it has written so far."""

    def __init__(self, uri: str, plan: Plan, base: str | None = None, background: bool = False):
        self.uri, self.plan = uri, plan
        self.loop = asyncio.get_running_loop()
        self.progress = asyncio.Event()   # set (from the model thread) whenever `partial` grows
        self.n_tokens = 0
        self.prompt_info: tuple[int, int, float] | None = None   # prompt tokens, reused, seconds
        self.restored = 0            # of the reused tokens, those restored from the KV store
        self.gen_started_at: float | None = None
        # a prefetch: the prefix the user had when it started; typing from there toward its prefix keeps it
        self.base = base
        self.queued_at = time.perf_counter()
        self.started_at: float | None = None
        # background work (a prefetch, an offer) gives way to other windows' requests until a request joins it
        self.cancel = Cancel(yields=background)
        self.partial = ""            # the text generated so far, written by the model thread
        self.sure = Sureness()       # ... and how sure the target was of each of its tokens (gate.py)
        self.waiters = 0
        self.future: asyncio.Future | None = None
        self.task_id = -1            # its task on the model thread (queue.py)

    def set_partial(self, text: str, n_tokens: int, margins: list[float] = (), ends: list[int] = ()) -> None:
        self.sure = Sureness(tuple(margins), tuple(ends))
        self.partial, self.n_tokens = text, n_tokens
        self.loop.call_soon_threadsafe(self.progress.set)

    def set_prompt(self, tokens: int, reused: int, restored: int, seconds: float) -> None:
        self.prompt_info = (tokens, reused, seconds)
        self.restored = restored
        self.gen_started_at = time.perf_counter()

    def take(self, typed: str, one_line: bool, early_s: float | None = None,
             line_s: float | None = None) -> Taken:
        """What this job has for a request that typed `typed` since its prefix: a `Text` when there is an answer,
        else `Take.WAIT`, `Take.GONE` (cancelled) or `Take.DIVERGED`. After `early_s` of generation a long line
        or block is answered early (its raw text so far; post-processing keeps what is whole) while the
        generation goes on to fill the cache; a one-line answer whose code line is still being written waits for
        the line's end up to `line_s` (at least `early_s`)."""
        if self.future.done():
            gen = self.future.result()
            if gen is None or gen.stop_reason == StopReason.CANCELLED:
                return Take.GONE
            if not gen.text.startswith(typed):
                return Take.DIVERGED
            return Text(gen.text[len(typed):], gen)
        part = self.partial
        if not (part.startswith(typed) or typed.startswith(part)):
            return Take.DIVERGED
        ran = time.perf_counter() - self.gen_started_at if self.gen_started_at is not None else None
        late = early_s is not None and ran is not None and ran >= early_s
        # where a block may be missing, the answer waits for the model to end it, up to the early answer's time
        if one_line and len(part) > len(typed) and (late or not self.plan.mode.maybe_block):
            end = self.plan.around.line_end(part, len(typed))
            if end >= 0:   # its line is finished: answer now, let it go on
                return Text(part[len(typed):end])
        if late and len(part) > len(typed):
            rest = part[len(typed):]
            if one_line:
                start = self.plan.around.code_start(part)
                code_end = part.find("\n", start)
                if code_end < 0:   # the code line being written (comment lines before it do not count)
                    if line_s is not None and ran < line_s:
                        # a line shown unfinished is a wrong first line whatever follows (`if (this.`): most
                        # lines end a few tokens later
                        return Take.WAIT
                    whole = LAST_WORD.sub("", part[max(start, len(typed)):]).rstrip()
                else:   # past it, the line opens a block (see Around.line_end): a finished line of its body
                    whole = part[max(code_end, len(typed)):part.rfind("\n")].strip()
            else:          # a block: its finished lines
                end = rest.rfind("\n")
                whole = rest[:end].rstrip() if end > 0 else ""
            if len("".join(whole.split())) >= EARLY_MIN_CHARS:
                return Text(rest, early=True)
        return Take.WAIT

    async def wait(self, superseded: asyncio.Future, typed: str, one_line: bool,
                   limits: Callable[[], tuple[float | None, float | None]] = lambda: (None, None),
                   keep: Callable[[Plan], int] = lambda plan: 0) -> Taken:
        """What this job has for a request that waits for it (see `take`; `limits()`: its early_s and line_s as
        the settings say now), once it has something other than `Take.WAIT`; `Take.GONE` once a newer request
        supersedes the request (`superseded` is set). While a request waits the job is not background work;
        cancelled ($/cancelRequest) while it alone waits, the generation stops, its prompt evaluation going on to
        `keep(plan)` tokens."""
        self.waiters += 1
        self.cancel.set_yields(False)   # a request waits for it: it is not background work now
        try:
            while True:
                self.progress.clear()
                early_s, line_s = limits()
                got = self.take(typed, one_line, early_s=early_s, line_s=line_s)
                if got is not Take.WAIT:
                    return got
                progress = asyncio.ensure_future(self.progress.wait())
                try:
                    # woken by progress, the end, a newer request, or the clock (for the early answer)
                    await asyncio.wait([self.future, superseded, progress], timeout=0.05,
                                       return_when=asyncio.FIRST_COMPLETED)
                finally:
                    progress.cancel()
                # superseded: the newer request decides whether the job goes on (it may reuse it)
                if superseded.done():
                    return Take.GONE
        except asyncio.CancelledError:
            # $/cancelRequest: stop the model unless another request still waits for this generation
            if self.waiters == 1:
                self.cancel.set_keeping(keep(self.plan))
            raise
        finally:
            self.waiters -= 1
            if self.waiters == 0:   # answered, and going on to fill the cache: background work again
                self.cancel.set_yields(True)

    def extends(self, prefix: str, suffix: str) -> bool:
        """True when `prefix` is this job's prefix plus text typed in agreement with what it has written."""
        p0 = self.plan.prefix
        if self.cancel.is_set() or suffix != self.plan.suffix or not prefix.startswith(p0):
            return False
        typed, part = prefix[len(p0):], self.partial
        n = min(len(typed), len(part))
        return typed[:n] == part[:n] and (len(typed) < len(part) or not self.future.done())

    def record(self, rec: Record, t0: float) -> None:
        """What this job's generation measured, into a request's record (`t0`: when the request came)."""
        if self.prompt_info is None:
            return
        rec.queue_s = self.queue_s
        rec.prompt_tokens, reused, rec.prompt_s = self.prompt_info
        rec.prompt_evaluated = rec.prompt_tokens - reused
        rec.prompt_restored = self.restored
        rec.page = self.plan.prompt.prefix_cut_lines
        rec.prompt = self.plan.prompt.digest()
        gen = self.future.result() if self.future.done() and not self.future.exception() else None
        if gen is not None:
            rec.tokens, rec.tok_s, rec.gen_s = len(gen.tokens), gen.tok_s, gen.gen_s
        else:   # answered before the generation ended (its line was done)
            rec.tokens = self.n_tokens
            rec.gen_s = time.perf_counter() - (self.started_at or t0) - rec.prompt_s
            rec.tok_s = rec.tokens / rec.gen_s if rec.gen_s > 0 else 0.0

    def sureness(self, gen: Generation | None) -> Sureness:
        """How sure the target was of each token of what this job wrote (its end's `gen`, or so far)."""
        if gen is not None:
            return Sureness(tuple(gen.margins), tuple(gen.ends))
        return self.sure

    @property
    def queue_s(self) -> float:
        return (self.started_at or self.queued_at) - self.queued_at

    def survives(self, text: str) -> bool:
        """Whether an edit that made the document `text` leaves this job's answer usable."""
        p0, s0 = self.plan.prefix, self.plan.suffix
        if not text.endswith(s0):
            return False
        prefix = text[:len(text) - len(s0)]
        if self.base is not None and prefix.startswith(self.base) and p0.startswith(prefix):
            return True   # typing through the suggestion this prefetch continues
        return len(prefix) >= len(p0) and self.extends(prefix, s0)
