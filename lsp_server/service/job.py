"""A generation the service runs for a document, and how a later request or edit relates to it."""
from __future__ import annotations

import asyncio
import time

from ..engine import Cancel, StopReason
from ..pipeline import Plan
from ..postprocess.drop_unfinished_line import LAST_WORD


# tokens at the end of a prompt's stable part that a keystroke near the cursor may change (the cursor's line)
CURSOR_LINE_TOKENS = 32


# an early answer shows at least this many characters (not a lone `if`)
EARLY_MIN_CHARS = 6


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
        self.waiters = 0
        self.future: asyncio.Future | None = None

    def set_partial(self, text: str, n_tokens: int) -> None:
        self.partial, self.n_tokens = text, n_tokens
        self.loop.call_soon_threadsafe(self.progress.set)

    def set_prompt(self, tokens: int, reused: int, restored: int, seconds: float) -> None:
        self.prompt_info = (tokens, reused, seconds)
        self.restored = restored
        self.gen_started_at = time.perf_counter()

    def take(self, typed: str, one_line: bool, early_s: float | None = None, line_s: float | None = None):
        """What this job has for a request that typed `typed` since its prefix: ("text", raw, gen, early) when
        there is an answer (gen is None while the generation goes on), "wait", "gone" (cancelled), or
        "diverged". After `early_s` of generation a long line or block is answered early (its raw text so far;
        post-processing keeps what is whole) while the generation goes on to fill the cache; a one-line answer
        whose code line is still being written waits for the line's end up to `line_s` (at least `early_s`)."""
        if self.future.done():
            gen = self.future.result()
            if gen is None or gen.stop_reason == StopReason.CANCELLED:
                return "gone"
            if not gen.text.startswith(typed):
                return "diverged"
            return "text", gen.text[len(typed):], gen, False
        part = self.partial
        if not (part.startswith(typed) or typed.startswith(part)):
            return "diverged"
        ran = time.perf_counter() - self.gen_started_at if self.gen_started_at is not None else None
        late = early_s is not None and ran is not None and ran >= early_s
        # where a block may be missing, the answer waits for the model to end it, up to the early answer's time
        if one_line and len(part) > len(typed) and (late or not self.plan.mode.maybe_block):
            end = self.plan.around.line_end(part, len(typed))
            if end >= 0:   # its line is finished: answer now, let it go on
                return "text", part[len(typed):end], None, False
        if late and len(part) > len(typed):
            rest = part[len(typed):]
            if one_line:
                start = self.plan.around.code_start(part)
                code_end = part.find("\n", start)
                if code_end < 0:   # the code line being written (comment lines before it do not count)
                    if line_s is not None and ran < line_s:
                        # a line shown unfinished is a wrong first line whatever follows (`if (this.`): most
                        # lines end a few tokens later (docs/quality.md, "A line still being written")
                        return "wait"
                    whole = LAST_WORD.sub("", part[max(start, len(typed)):]).rstrip()
                else:   # past it, the line opens a block (see Around.line_end): a finished line of its body
                    whole = part[max(code_end, len(typed)):part.rfind("\n")].strip()
            else:          # a block: its finished lines
                end = rest.rfind("\n")
                whole = rest[:end].rstrip() if end > 0 else ""
            if len("".join(whole.split())) >= EARLY_MIN_CHARS:
                return "text", rest, None, True
        return "wait"

    def extends(self, prefix: str, suffix: str) -> bool:
        """True when `prefix` is this job's prefix plus text typed in agreement with what it has written."""
        p0 = self.plan.prefix
        if self.cancel.is_set() or suffix != self.plan.suffix or not prefix.startswith(p0):
            return False
        typed, part = prefix[len(p0):], self.partial
        n = min(len(typed), len(part))
        return typed[:n] == part[:n] and (len(typed) < len(part) or not self.future.done())

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
