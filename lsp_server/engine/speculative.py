"""The generation loop: draft -> verify in one target batch -> accept the agreeing prefix plus the target's
own next token -> roll back. With no draft it is plain greedy decoding, through the same code."""
from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Callable, Protocol

from .controller import Controller, Plan
from .drafters import Draft, ModelDrafter, NgramDrafter, RewriteDrafter, TemplateDrafter
from .cancel import Cancelled
from .llama import ContextFullError, LlamaModel, top2


class StopReason(StrEnum):
    """Why a generation ended (a str: it compares with, and serializes as, its value)."""
    EOG = "eog"               # the model's end of the middle (or of generation)
    STOP = "stop"             # a stop string, or the end of a single-line request's line
    LENGTH = "length"         # the token limit
    TIME = "time"             # the time budget
    CANCELLED = "cancelled"   # the caller's cancel flag
    ERROR = "error"           # a remote engine failed (its health says why)
    SETTLED = "settled"       # a rewrite's change is done: it writes the region's lines as they stand again
    UNSURE = "unsure"         # a rewrite left its region's text where the target was not sure (GenerationRequest.sure)


# the model itself ended the middle (or began to write the code below): nothing is to come there
ENDS_HOLE = (StopReason.EOG, StopReason.STOP)
# a limit ended it while the model was still writing
CUT_SHORT = (StopReason.LENGTH, StopReason.TIME)


class StepObserver(Protocol):
    """What the benchmarks and tests see of the speculative loop from inside it; the editor's requests carry
    none. Set as a request's `observer`, it is called on the generating thread, in the local engine only (it
    does not cross the shared engine's socket). A class that subclasses it overrides what it needs: the other
    methods do nothing."""

    def step(self, emitted: int, drafter: str, drafted: list[int], accepted: int) -> None:
        """After each verify step, before its tokens are emitted: how many output tokens came before it, the
        drafter whose tokens were verified ("" for a plain step), those tokens, and how many were accepted."""

    def between_steps(self) -> None:
        """After each step the generation goes on from; the time it takes is not counted as the generation's
        (the bench runs several paths side by side, a step each in turn)."""


@dataclass
class GenerationRequest:
    tokens: list[int]
    max_tokens: int = 64
    stop: tuple[str, ...] = ()
    language: str = "text"
    speculative: bool = True
    time_budget_s: float | None = None
    record_margins: bool = False   # keep each chosen token's top-2 logit gap (for lossless checks)
    left_text: str = ""            # the text before the generation point, for structural drafters
    fixed_model_draft: int = 0     # >0: always draft this many tokens with the draft model, like
                                   # llama.cpp's fixed --draft settings (a comparison, not the controller)
    # after each verify step: the text so far, its tokens' count, their margins (empty unless record_margins) and
    # where each token's text ends in it (a completion's gate reads how sure each part of the text was)
    on_text: Callable[[str, int, list[float], list[int]], None] | None = None
    # (prompt tokens, reused, of those restored from the KV store, seconds) after prefill
    on_prompt: Callable[[int, int, int, float], None] | None = None
    single_line: bool = False      # stop at the end of the first line that has text (leading newlines pass)
    # with single_line: given the text up to a line's end, True lets the generation go on past that line (it
    # is a comment before the code line, or the line opens a block whose body must follow)
    goes_on: Callable[[str], bool] | None = None
    keep: int = 0                  # the prompt's first tokens worth a place in the KV store (a page's text)
    observer: StepObserver | None = None
    # the tokens of the region this generation rewrites (a next edit), which its output mostly copies: the
    # rewrite drafter proposes them from where the output stands in them; None for a completion
    rewrite_source: list[int] | None = None
    # an answer to verify (a candidate next edit): its tokens are drafted whole at each step, whatever the
    # controller would choose (one batch checks all of them), and the generation stops where the output leaves
    # this text or has written all of it; what the target wrote is the verdict
    expect: str | None = None
    # the region a rewrite copies, as text: the generation ends once the output has left it and then written
    # SETTLE_LINES of its lines again as they stand (the change is done; the rest is the region as it is)
    settle: str = ""
    # with `settle` and margins recorded: the generation ends where the output first leaves the region's text
    # if the target's top-2 gap at that token is below this (an answer shown only when sure would be dropped:
    # what it writes after that point is never used)
    sure: float = 0.0


@dataclass
class DrafterCount:
    steps: int = 0        # verify steps that used this drafter
    drafted: int = 0      # drafted tokens sent to the target
    accepted: int = 0

    @property
    def acceptance(self) -> float:
        return self.accepted / self.drafted if self.drafted else 0.0


@dataclass
class Generation:
    text: str
    tokens: list[int]
    stop_reason: StopReason       # (a remote engine's comes as the same values)
    prompt_tokens: int
    prompt_reused: int
    prompt_s: float
    gen_s: float
    steps: int
    drafters: dict[str, DrafterCount] = field(default_factory=dict)
    margins: list[float] = field(default_factory=list)
    ends: list[int] = field(default_factory=list)   # where each token's text ends in `text`
    near_ties: int = 0            # verify rows decided again by one-token decoding
    prompt_restored: int = 0      # of the reused prompt tokens, those whose state came back from the KV store
    prompt_computed: int = 0      # prompt tokens actually evaluated (a cancelled prefill stops part way)
    # the costs this generation met: verify batch size -> each verify's seconds, and each verified draft-model
    # proposal's seconds (the bench sets them beside a cost curve measured apart)
    verify_s: dict[int, list[float]] = field(default_factory=dict)
    model_draft_s: list[float] = field(default_factory=list)

    @property
    def tok_s(self) -> float:
        return len(self.tokens) / self.gen_s if self.gen_s > 0 else 0.0

    @property
    def prompt_evaluated(self) -> int:
        return self.prompt_tokens - self.prompt_reused


class _Output:
    """Accumulates emitted tokens and decides when to stop."""

    def __init__(self, target: LlamaModel, req: GenerationRequest):
        self.target, self.req = target, req
        self.tokens: list[int] = []
        self.margins: list[float] = []
        self.ends: list[int] = []
        self.raw = bytearray()
        self.text = ""
        self._longest_stop = max((len(s) for s in req.stop), default=0)
        self._departure_open = req.sure > 0 and bool(req.settle) and req.record_margins

    def emit(self, tok: int, margin: float | None) -> StopReason | None:
        if self.target.is_eog(tok):
            return StopReason.EOG
        self.tokens.append(tok)
        if margin is not None:
            self.margins.append(margin)
        before = len(self.text)
        self.raw += self.target.piece(tok)
        self.text, reason = text_stop(self.req, self.raw.decode("utf-8", errors="ignore"), before,
                                      self._longest_stop)
        self.ends.append(len(self.text))
        if reason:
            return reason
        if self._departure_open:
            gap = departure_gap(self.req.settle, self.text, self.margins, self.target.tokenize)
            if gap is not None:
                self._departure_open = False
                if gap < self.req.sure:
                    return StopReason.UNSURE
        if len(self.tokens) >= self.req.max_tokens:
            return StopReason.LENGTH
        return None


def text_stop(req: GenerationRequest, text: str, before: int,
              longest_stop: int) -> tuple[str, StopReason | None]:
    """The text cut where the request says generation ends (a stop string, or the first line with text of a
    single-line request), and "stop" if it was cut; `before` is how much of the text was checked already.
    Shared by the local loop and the remote engine, which sees the same text arrive over HTTP."""
    if req.expect is not None and expect_decided(req.expect, text):
        # the target wrote the answer it was to verify, or something else: either way the verdict is in
        return text, StopReason.STOP
    if req.settle and (cut := settled(req.settle, text)) is not None:
        return text[:cut], StopReason.SETTLED
    if req.stop:
        start = max(0, before - longest_stop)
        cut = min((i for s in req.stop if (i := text.find(s, start)) >= 0), default=-1)
        if cut >= 0:
            return text[:cut], StopReason.STOP
    if req.single_line:
        body = len(text) - len(text.lstrip())
        cut = text.find("\n", body) if body < len(text) else -1
        while cut >= 0 and req.goes_on and req.goes_on(text[:cut]):
            cut = text.find("\n", cut + 1)
        if cut >= 0:
            return text[:cut], StopReason.STOP
    return text, None


# lines of its region a rewrite writes again as they stand, after its change, before it is taken as done
SETTLE_LINES = 2


def skip_blank_lines(text: str) -> str:
    """The text without its leading blank lines."""
    at = 0
    while (end := text.find("\n", at)) >= 0 and not text[at:end].strip():
        at = end + 1
    return text[at:]


def expect_decided(expect: str, text: str) -> bool:
    """Whether the output has written all of the expected answer, or left it. Leading blank lines do not count
    where the answer has more than them: an output that writes the code after them at once, or one blank line
    more, still follows it (the candidate's check reads the code, edit_check.agrees)."""
    if text.startswith(expect) or expect.startswith(text):
        return text.startswith(expect)
    code, written = skip_blank_lines(expect), skip_blank_lines(text)
    if not code or written == text and code == expect:
        return True
    return written.startswith(code) or not code.startswith(written)


def settled(region: str, text: str, k: int = SETTLE_LINES) -> int | None:
    """Where a rewrite of `region` is done (the length of `text` to keep), or None: the output left the region's
    lines and its last `k` complete lines are again the region's, as they stand, after where it left them (one
    of them with some text: blank lines and braces repeat everywhere)."""
    end = text.rfind("\n") + 1
    out = text[:end].split("\n")[:-1]
    old = region.split("\n")
    i = next((n for n, (a, b) in enumerate(zip(out, old)) if a != b), None)
    if i is None or len(out) - k < i:
        return None
    tail = out[-k:]
    if not any(len(line.strip()) >= 6 for line in tail):
        return None
    for j in range(i + k, len(old) + 1):
        if old[j - k:j] == tail:
            return end
    return None


def departure_gap(region: str, text: str, margins: list[float], tokenize) -> float | None:
    """The target's top-2 gap at the token where a rewrite's output leaves the region's text (as many tokens in
    as the text before that point tokenizes to); None while it has not left it (or that token's gap is not in)."""
    i = len(os.path.commonprefix([text, region]))
    if i == min(len(text), len(region)):
        return None
    at = len(tokenize(text[:i])) if i else 0
    return margins[at] if at < len(margins) else None


log = logging.getLogger("tandem.spec")

# the draft model is only asked when its cache is nearly in step with the target's: catching up on a
# whole new prompt costs more than its drafts can win back in one completion
MODEL_CATCHUP_MAX = 48
# below this top-2 logit gap a verify-batch row is re-decoded alone (see the verify loop)
NEAR_TIE = 0.5
# a top-2 logit gap above this on the last token marks a stretch the target is sure of; drafts there are
# counted in their own acceptance buckets ("+")
CONFIDENT = 6.0


def generate(target: LlamaModel, controller: Controller, req: GenerationRequest, cancel=None,
             ngram: NgramDrafter | None = None, model_drafter: ModelDrafter | None = None,
             template: TemplateDrafter | None = None, rewrite: RewriteDrafter | None = None) -> Generation:
    need = len(req.tokens) + req.max_tokens + controller.draft_max + 1
    if need > target.n_ctx:
        raise ContextFullError(f"prompt of {len(req.tokens)} tokens + {req.max_tokens} to generate "
                               f"does not fit the context of {target.n_ctx} tokens")
    t0 = time.perf_counter()
    restored_before, evaluated_before = target.counters.restored, target.counters.evaluated
    try:
        reused = target.prefill(req.tokens, cancel=cancel, keep=req.keep)
    except Cancelled:
        t = time.perf_counter() - t0
        return Generation("", [], StopReason.CANCELLED, len(req.tokens), 0, t, 0.0, 0,
                          prompt_computed=target.counters.evaluated - evaluated_before)
    t_gen = time.perf_counter()
    restored = target.counters.restored - restored_before
    computed = target.counters.evaluated - evaluated_before
    if req.on_prompt is not None:
        req.on_prompt(len(req.tokens), reused, restored, t_gen - t0)
    out = _Output(target, req)
    counts: dict[str, DrafterCount] = {}
    record = req.record_margins
    speculate = req.speculative and controller.draft_max > 0
    lang = req.language
    # indexing a long prompt for lookups costs milliseconds: only for a drafter whose drafts can pay here
    if not (speculate and ngram and controller.may_pay(lang, ngram.name, ngram.buckets)):
        ngram = None
    if ngram:
        ngram.start(req.tokens)
    # a completion has no source to copy: the rewrite drafter only runs for a rewrite request
    if not (speculate and rewrite and req.rewrite_source
            and controller.may_pay(lang, rewrite.name, rewrite.buckets)):
        rewrite = None
    if rewrite:
        rewrite.start(req.rewrite_source)
    # an answer to verify is drafted whole, speculation on or off: the output is the target's either way
    expected = RewriteDrafter() if req.expect is not None else None
    if expected:
        expected.start(target.tokenize(req.expect))
    fixed = req.fixed_model_draft if model_drafter is not None else 0
    use_model = speculate and model_drafter is not None and (fixed > 0 or controller.model_can_pay())

    tok, last_gap = top2(target.logits(-1))
    margin = last_gap if record else None
    steps, near_ties, reason = 0, 0, None
    verify_s: dict[int, list[float]] = {}
    model_draft_s: list[float] = []
    trace = log.isEnabledFor(logging.DEBUG)
    paused = 0.0
    while True:
        reason = out.emit(tok, margin)
        if reason:
            break
        if cancel is not None and cancel.is_set():
            reason = StopReason.CANCELLED
            break
        if req.time_budget_s is not None and time.perf_counter() - t_gen - paused > req.time_budget_s:
            reason = StopReason.TIME
            break
        if ngram:
            ngram.extend([tok])
        if rewrite:
            rewrite.extend([tok])
        if expected:
            expected.extend([tok])

        if expected:
            draft = expected.propose(req.max_tokens - len(out.tokens))
            plan = Plan(len(draft.tokens), 0.0, 0.0) if draft else None
        else:
            draft, plan = (_choose_draft(controller, req, out, last_gap, ngram, template,
                                         model_drafter if use_model else None, fixed, cancel, rewrite)
                           if speculate else (None, None))
        n = plan.n_verify if plan else 0
        drafted = draft.tokens[:n] if n else []

        # work nobody waits for (a next edit, a prefetch, an offer, a generation writing on after its answer) has its
        # flag watched inside each verify batch too (llama.cpp's abort callback), as inside a prompt chunk: the
        # request that stops it then waits for no batch of it, where a batch of draftMax tokens holds a CPU for
        # many single steps' time. A request's own generation goes without: the callback runs at every graph node.
        # (Asked at each step: a request that joins a prefetch makes it a request's.)
        try:
            v = _verify(target, [tok] + drafted, cancel if getattr(cancel, "yields", False) else None)
        except Cancelled:   # the batch was abandoned part way: the cache holds what was accepted before it
            reason = StopReason.CANCELLED
            break
        controller.costs.observe_target(n + 1, v.seconds)
        verify_s.setdefault(n + 1, []).append(v.seconds)
        if n and draft.drafter == "model":
            model_draft_s.append(draft.cost_s)
        if speculate and not expected:
            controller.observe_step(v.seconds, plan, v.accepted, draft.cost_s if n else 0.0)
        near_ties += v.near_tie
        accepted, next_tok, margins = v.accepted, v.next_tok, v.margins
        if req.observer is not None:
            req.observer.step(len(out.tokens), draft.drafter if n else "", drafted, accepted)
        steps += 1
        if trace and n:
            log.debug("step %d: %s drafted %r (%s), accepted %d, target says %r", steps, draft.drafter,
                      target.detokenize(drafted), ",".join(draft.buckets[:n]), accepted,
                      target.detokenize([next_tok]))
        if n and not expected:
            controller.stats.record(lang, draft.drafter, draft.buckets[:n], accepted + v.right)
            c = counts.setdefault(draft.drafter, DrafterCount())
            c.steps += 1
            c.drafted += n
            c.accepted += accepted
        for i in range(accepted):
            reason = out.emit(drafted[i], margins[i] if record else None)
            if reason:
                break
            if ngram:
                ngram.extend([drafted[i]])
            if rewrite:
                rewrite.extend([drafted[i]])
            if expected:
                expected.extend([drafted[i]])
        if reason:
            break
        if req.on_text is not None:
            req.on_text(out.text, len(out.tokens), list(out.margins), list(out.ends))
        tok, last_gap = next_tok, margins[-1]
        margin = last_gap if record else None
        if req.observer is not None:
            t_wait = time.perf_counter()
            req.observer.between_steps()
            paused += time.perf_counter() - t_wait

    t_end = time.perf_counter()
    return Generation(text=out.text, tokens=out.tokens, stop_reason=reason, prompt_tokens=len(req.tokens),
                      prompt_reused=reused, prompt_s=t_gen - t0, gen_s=t_end - t_gen - paused, steps=steps,
                      drafters=counts, margins=out.margins, ends=out.ends, near_ties=near_ties,
                      prompt_restored=restored, prompt_computed=computed, verify_s=verify_s,
                      model_draft_s=model_draft_s)


def _choose_draft(controller: Controller, req: GenerationRequest, out: _Output, last_gap: float,
                  ngram: NgramDrafter | None, template: TemplateDrafter | None,
                  model_drafter: ModelDrafter | None, fixed: int, cancel,
                  rewrite: RewriteDrafter | None = None) -> tuple[Draft | None, Plan | None]:
    """The draft to verify and the plan for it: how many of its tokens (None: plain decoding this step)."""
    max_len = min(controller.draft_max, req.max_tokens - len(out.tokens))
    if max_len <= 0:
        return None, None
    if fixed:
        draft = model_drafter.propose(req.tokens + out.tokens, min(fixed, max_len), lambda d: True, cancel,
                                      keep=req.keep)
        return draft, Plan(len(draft.tokens), 0.0, 0.0)
    lang = req.language
    best: tuple[Draft | None, Plan | None] = (None, None)
    best_rate = controller.plain_rate()
    if template and not controller.may_pay(lang, template.name, template.buckets):
        template = None
    for cand in (rewrite.propose(max_len) if rewrite else None,
                 ngram.propose(max_len) if ngram else None,
                 template.propose(req.left_text + out.text, max_len) if template else None):
        if cand and last_gap >= CONFIDENT:
            cand.buckets = [b + "+" for b in cand.buckets]
        plan = controller.plan(lang, cand)
        if plan.n_verify and plan.expected_rate > best_rate:
            best, best_rate = (cand, plan), plan.expected_rate
    if model_drafter is not None and controller.model_can_pay(than=best_rate):
        ctx = req.tokens + out.tokens
        if len(ctx) - model_drafter.model.cached_prefix(ctx) <= MODEL_CATCHUP_MAX:
            mdraft = model_drafter.propose(ctx, max_len, lambda d: controller.keep_drafting(lang, d), cancel,
                                           keep=req.keep)
            if mdraft.tokens:
                controller.costs.observe_draft(mdraft.cost_s / len(mdraft.tokens))
                mplan = controller.plan(lang, mdraft)
                if mplan.n_verify and mplan.expected_rate > best_rate:
                    best = (mdraft, mplan)
    return best


@dataclass
class _Verdict:
    accepted: int           # drafted tokens accepted
    next_tok: int           # the target's own token after them
    margins: list[float]    # top-2 gap of each row read, the last one for next_tok
    seconds: float          # the batch's cost (without a near-tie re-decode)
    near_tie: bool = False
    right: int = 0          # 1 when a near-tie re-decode found the draft right at that row


def _verify(target: LlamaModel, inputs: list[int], cancel=None) -> _Verdict:
    """Decode `[last] + draft` in one batch, accept the agreeing prefix, roll the cache back to it. With `cancel`,
    the batch stops part way once it is set (Cancelled)."""
    n = len(inputs) - 1
    base = len(target.tokens)
    ts = time.perf_counter()
    target.decode(inputs, all_logits=bool(n), cancel=cancel)
    margins: list[float] = []
    for i in range(n + 1):
        pred, m = top2(target.logits(i if n else -1))
        if n and m < NEAR_TIE:
            # a verify batch computes its rows with other kernels than one-token decoding, and at a
            # near-tie that can flip the choice: decide this position the way plain decoding does
            seconds = time.perf_counter() - ts
            target.truncate(base + i)
            target.decode([inputs[i]])
            pred, m = top2(target.logits(-1))
            margins.append(m)
            return _Verdict(i, pred, margins, seconds, near_tie=True,
                            right=int(i < n and pred == inputs[i + 1]))
        margins.append(m)
        if i < n and pred == inputs[i + 1]:
            continue
        target.truncate(base + 1 + i)
        return _Verdict(i, pred, margins, time.perf_counter() - ts)
    raise AssertionError("unreachable: the last row always ends the loop")
