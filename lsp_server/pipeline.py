"""One completion request through every stage: context -> prompt -> engine -> postprocess.
The `tandem` CLI and the language server both call this; the server splits it in `plan` and `run` to put its
caches in between."""
from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field, replace
from typing import Callable

from . import postprocess
from .context import Document
from .context.near_lines import line_after
from .context.assemble import CursorContext, DefinitionIndex, DocumentFiles, PageOutlines, gather
from .context.similar import SimilarChoices
from .context.syntax import Trees
from .context.trigger import Mode, code_follows
from .engine import CUT_SHORT, ENDS_HOLE, Engine, Generation, GenerationRequest
from .prompt import Prompt, PromptBudget, PromptKind, PromptParts, build_fast_prompt, build_prompt, near_fills
from .prompt.pages import SegmentTokens


@dataclass
class CompletionRequest:
    document: Document
    line: int                 # 0-based
    col: int                  # 0-based, in characters
    max_tokens: int = 64      # for a multi-line completion
    max_tokens_single_line: int = 40
    speculative: bool = True
    time_budget_s: float | None = None
    record_margins: bool = False
    others: list[Document] = field(default_factory=list)   # the other open documents
    multiline: bool | None = None   # None: tree-sitter decides
    force: bool = False             # complete even where ghost text cannot be right
    # the workspace root: the files the document imports are read from under it for their definitions, and the
    # head names files relative to it (None: no context from disk)
    root: str | None = None
    recent: tuple = ()              # recently edited and viewed code of other files (context.ring.Chunk)
    exclude: tuple[str, ...] = ()   # the user's patterns of files never read as context (settings.exclude)
    at_rest: bool = False           # not typing (a new place, or a pause): the longer suffix (PromptBudget)
    suffix_cap: int | None = None   # at most this many suffix tokens (a next edit's check: service/edit_check.py)


@dataclass
class Plan:
    """A request after the context and prompt stages: what the engine will be asked."""
    request: CompletionRequest
    context: CursorContext
    prompt: Prompt
    max_tokens: int
    stop: tuple[str, ...]
    # one line is asked for but the generation goes on past its end: the next line, ready in the cache for
    # when the user accepts or types through this one (only where nothing stands right of the cursor)
    continues: bool = False

    @property
    def prefix(self) -> str:
        return self.context.prefix

    @property
    def suffix(self) -> str:
        return self.context.suffix

    @property
    def mode(self) -> Mode:
        return self.context.mode

    @property
    def around(self) -> postprocess.Around:
        return postprocess.Around(self.prefix, self.suffix, self.context.language, self.mode.multiline,
                                  needs=self.context.needs, maybe_block=self.mode.maybe_block,
                                  parsed=self.context.parsed)

    @property
    def writes_block(self) -> bool:
        """Whether the generation writes a block (asked for, or maybe wanted), not one line."""
        return self.mode.multiline or self.mode.maybe_block

    @property
    def fast(self) -> bool:
        return self.prompt.kind == PromptKind.FAST


@dataclass
class Completion:
    text: str                 # what the editor inserts at the cursor
    raw: str                  # what the model wrote, before post-processing
    generation: Generation | None
    prompt: Prompt | None
    mode: Mode | None = None
    skipped: str = ""         # why nothing was generated


# how a generation ends that says the hole is filled: the model's end of the middle, or a stop string (it began
# to write the code below again)
# room kept free of prompt in the context: a completion's tokens, the draft, and the file header's few tokens
GENERATION_RESERVE = 128 + 64
# where one line or a block may be wanted, the token limit stays at the block limit the single-line set was tuned
# with (the longer limit of a block asked for was measured on multi-line holes only: 4 of its 5 gains in 23 sampled
# tasks were blocks asked for)
# (256 gained on the tune half only, for twice the tokens)
LINE_OR_BLOCK_TOKENS = 96
# the prefix of a fast answer's prompt (the nearest lines), in tokens
FAST_PREFIX_TOKENS = 96
# where the code below needs names the hole must bind, the suffix reaches their first uses, up to this long: the
# model writes the name the code reads only when it sees it read (HumanEval/19/L0: `value_map`, used 10 lines
# below, past a 16- or 64-token suffix)
NEEDS_SUFFIX_TOKENS = 192


def uses_end(suffix: str, names: frozenset[str]) -> int:
    """Where in `suffix` the line ends that holds the last of the names' first uses (0: none found)."""
    end = 0
    for name in names:
        m = re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", suffix)
        if m:
            nl = suffix.find("\n", m.end())
            end = max(end, len(suffix) if nl < 0 else nl + 1)
    return end


def _parts(ctx: CursorContext, req: CompletionRequest) -> PromptParts:
    """What the prompt stage gets of a cursor's context."""
    return PromptParts(ctx.prefix, ctx.suffix, path=ctx.path or req.document.path, repo=ctx.repo, files=ctx.files,
                       outline=ctx.outline, imports=ctx.imports, near_files=ctx.near_files, similar=ctx.similar)


class Pipeline:
    def __init__(self, engine: Engine, budget: PromptBudget, fast_tokens: int = FAST_PREFIX_TOKENS):
        """`budget`: the editor's is `Settings().prompt_budget()` (the server, `tandem complete` and the evaluations
        start from it); it is cut to what fits the context, with a warning."""
        self.engine = engine
        self.index = DefinitionIndex()
        self.files_chosen = DocumentFiles()
        self.outlines = PageOutlines()
        self.trees = Trees()
        self.similar_chosen = SimilarChoices()
        self.segments = SegmentTokens(engine)
        self.fast_tokens = fast_tokens
        n_ctx = engine.cfg.n_ctx
        room = max(0, n_ctx - GENERATION_RESERVE - engine.cfg.draft_max)
        asked = budget
        self.budget = asked.within(room)
        self.warnings: list[str] = []
        if self.budget != asked:
            self.warnings.append(
                f"the prompt budgets (prefix {asked.prefix_tokens} + suffix {asked.suffix_tokens} + context "
                f"{asked.context_tokens} tokens) do not fit a {n_ctx}-token context; using prefix "
                f"{self.budget.prefix_tokens}, suffix {self.budget.suffix_tokens}, context "
                f"{self.budget.context_tokens} (raise contextSize to keep them)")

    def prompt_for(self, doc: Document, line: int, col: int) -> tuple[Prompt, str, str]:
        """The plain prompt of a position (no other files), as the benchmark uses it."""
        prefix, suffix = doc.split(line, col)
        return build_prompt(self.segments, PromptParts(prefix, suffix, path=doc.path), self.budget), prefix, suffix

    def plan(self, req: CompletionRequest, fast: bool = False) -> Plan:
        """The request after the context and prompt stages. `fast`: a short prompt of the nearest lines, for an
        answer now where the cached state covers too little of the page's prompt."""
        ctx = gather(req.document, req.line, req.col, req.others, self.index, self.budget.context_tokens,
                     self.files_chosen, self.outlines, root=req.root, recent=req.recent, exclude=req.exclude,
                     near_tokens=self.budget.near_tokens, similar_tokens=self.budget.similar_tokens,
                     similar_chosen=self.similar_chosen, trees=self.trees)
        if req.multiline is not None:
            ctx.mode = Mode(True, req.multiline, "asked")
        return self._plan(req, ctx, fast)

    def near_fills(self, plan: Plan) -> list[list[int]]:
        """The pages next to the plan's, below and above, for filling ahead (see prompt.near_fills)."""
        return near_fills(self.segments, _parts(plan.context, plan.request), self.budget)

    def plan_fast(self, plan: Plan, tokens: int | None = None) -> Plan:
        """The same request with the short prompt of a fast answer, of `tokens` (default `fast_tokens`) of the
        nearest lines (its context is not gathered again)."""
        return self._plan(plan.request, plan.context, fast=True, fast_tokens=tokens)

    def plan_typing(self, plan: Plan) -> Plan:
        """The same page prompt with the suffix a request gets while typing, where the plan is at rest and its
        suffix is longer (`suffixTokensAtRest`): a request takes the long one only where it is cached, the
        short one shares its start (its context is not gathered again). The plan itself where the two agree."""
        req = plan.request
        if plan.fast or not req.at_rest:
            return plan
        follows = code_follows(plan.prefix, plan.suffix)
        if self.budget.for_place(follows, True) == self.budget.for_place(follows, False):
            return plan
        return self._plan(replace(req, at_rest=False), plan.context, fast=False)

    def fast_sizes(self) -> tuple[int, int, int]:
        """The fast prompts, smallest first: the quick one, and two and four times as long. On real files the
        quick one's first lines were right half as often as the page's, the one twice as long almost as often
        (eval real, tune half: 7, 11, 11 and 12 of 31); the fill evaluates the longer two, and a request takes
        the longest whose missing part evaluates within the prompt budget at the machine's measured speed."""
        return self.fast_tokens, 2 * self.fast_tokens, 4 * self.fast_tokens

    def _plan(self, req: CompletionRequest, ctx: CursorContext, fast: bool, fast_tokens: int | None = None) -> Plan:
        multiline = ctx.mode.multiline
        # a line that may take the lines binding the names below with it (postprocess.Around.line_end)
        max_tokens = req.max_tokens if multiline else min(req.max_tokens, LINE_OR_BLOCK_TOKENS) \
            if ctx.mode.maybe_block or ctx.needs else req.max_tokens_single_line
        parts = _parts(ctx, req)
        # a fast prompt is for an answer now: the longer suffix at rest is the page's, taken where it is cached
        budget = self.budget.for_place(code_follows(ctx.prefix, ctx.suffix), req.at_rest and not fast)
        if ctx.needs and (reach := uses_end(ctx.suffix, ctx.needs)):
            want = min(NEEDS_SUFFIX_TOKENS, len(self.segments.tokenize(ctx.suffix[:reach])))
            if want > budget.suffix_tokens:
                budget = replace(budget, suffix_tokens=want)
        if req.suffix_cap is not None and budget.suffix_tokens > req.suffix_cap:
            budget = replace(budget, suffix_tokens=req.suffix_cap)

        def build(b: PromptBudget) -> Prompt:
            if fast:
                return build_fast_prompt(self.segments, parts, b, min(fast_tokens or self.fast_tokens, b.prefix_tokens),
                                         cached=self.engine.cached)
            return build_prompt(self.segments, parts, b, cached=self.engine.cached)

        prompt = build(budget)
        # a prompt that does not fit with what it may generate is built again, shorter (a long completion asked
        # of a small context); a prompt that cannot be made to fit is the engine's ContextFullError
        room = self.engine.cfg.n_ctx - max_tokens - self.engine.cfg.draft_max - 1
        while len(prompt.tokens) > room and budget.total > 64:
            budget = budget.within(int(budget.total * min(0.75, room / len(prompt.tokens))))
            prompt = build(budget)
        # single-line: the engine stops at the end of the first line with text (a line ending at the cursor
        # may be followed by the next line), so "\n" alone is not a stop string here
        stop = prompt.stop if multiline else tuple(s for s in prompt.stop if s != "\n")
        continues = not multiline and not line_after(ctx.suffix).strip()
        return Plan(req, ctx, prompt, max_tokens, stop, continues)

    def stable_tokens(self, plan: Plan) -> list[int]:
        """The part of the prompt a keystroke at the cursor does not change: everything before the suffix."""
        fim = self.engine.fim
        toks = plan.prompt.tokens
        if fim is None or fim.suffix not in toks:
            return toks
        return toks[:toks.index(fim.suffix)]

    def generate(self, plan: Plan, cancel: threading.Event | None = None,
                 on_text: Callable[[str, int], None] | None = None,
                 on_prompt: Callable[[int, int, int, float], None] | None = None) -> Generation:
        req = plan.request
        return self.engine.generate(GenerationRequest(
            plan.prompt.tokens, max_tokens=plan.max_tokens, stop=plan.stop, language=req.document.language,
            speculative=req.speculative, time_budget_s=req.time_budget_s, record_margins=req.record_margins,
            left_text=plan.prefix, on_text=on_text, on_prompt=on_prompt,
            single_line=not plan.writes_block and not plan.continues, goes_on=plan.around.goes_on,
            keep=plan.prompt.stable), cancel)

    def finish(self, plan: Plan, gen: Generation) -> Completion:
        around = replace(plan.around, truncated=gen.stop_reason in CUT_SHORT,
                         ended=gen.stop_reason in ENDS_HOLE)
        return Completion(self.finish_text(around, gen.text), gen.text, gen, plan.prompt, plan.mode)

    @staticmethod
    def finish_text(around: postprocess.Around, raw: str) -> str:
        """Post-process model text for a place (the server's path: text may come before the generation ends)."""
        return postprocess.run(raw, around)

    def complete(self, req: CompletionRequest, cancel: threading.Event | None = None) -> Completion:
        plan = self.plan(req)
        if not plan.mode.complete and not req.force:
            return Completion("", "", None, plan.prompt, plan.mode, skipped=plan.mode.why)
        plan.continues = False   # one answer, nothing to keep ready for later
        return self.finish(plan, self.generate(plan, cancel))
