"""The speedup a machine would give, projected from shadow acceptance and that machine's cost curve.

The engine's own decision code runs unchanged (`speculative._choose_draft`, the Controller with its acceptance
statistics learning as it goes): only the drafters are replays of what `shadow.record` saw at each position, and
a verify step's outcome is read off the greedy output (what it accepts, and where a near-tie row would be
decoded again) instead of being run. Each step is charged what the cost file says: T(n + 1) for verifying n
drafted tokens, one more T(1) for a near-tie row decoded again, the draft model's catch-up and tokens. Plain
decoding is charged T(1) per step. Prompt evaluation is in neither, as in the measured table.
"""
from __future__ import annotations

import json
import math
import platform
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from lsp_server.engine.acceptance import AcceptanceStats
from lsp_server.engine.controller import Controller
from lsp_server.engine.costs import CostModel
from lsp_server.engine.drafters import Draft, NgramDrafter, TemplateDrafter
from lsp_server.engine.llama import shared_prefix
from lsp_server.engine.speculative import NEAR_TIE, GenerationRequest, _choose_draft
from evals.speed.shadow import ShadowPrompt

MODEL = "model"   # the speed table's fixed draft-model path
FIXED_K = 3        # its draft length, like llama.cpp's default --draft


@dataclass
class CostCurve:
    """A machine's costs: seconds for a target batch of n tokens at a stated depth, a draft-model token, and
    (where measured) a draft-model batch of n tokens, its catch-up after accepted tokens."""
    name: str
    target_s: dict[int, float]
    draft_token_s: float | None = None
    draft_batch_s: dict[int, float] = field(default_factory=dict)
    depth: int | None = None
    machine: str = ""
    models: str = ""
    # what Tandem's Python adds per logits row read (top-2 of a verify row; a draft token's argmax and softmax),
    # where T(n) was measured without it (the cost tool reads rows in C++; the engine's own calibration reads
    # them in Python, so its curve has these at 0)
    host_row_s: float = 0.0
    host_draft_token_s: float = 0.0
    # Tandem's own work per step of its loop beyond plain decoding's (planning, the drafters' checks): measured
    # in a bench run (projected.planning_s); a cost file from the cost tool has none
    step_s: float = 0.0

    def __post_init__(self):
        if not self.target_s or 1 not in self.target_s:
            raise ValueError(f"cost curve {self.name}: it needs T(1), the cost of one target token")
        if len(self.target_s) < 2:
            raise ValueError(f"cost curve {self.name}: it needs T(n) for at least two batch sizes")
        if any(not (v > 0 and math.isfinite(v)) for v in self.target_s.values()):
            raise ValueError(f"cost curve {self.name}: every T(n) must be a positive number of seconds")

    def cost_model(self) -> CostModel:
        """The costs as the engine would calibrate them there: its Python reads every row of a batch."""
        costs = CostModel({n: t + n * self.host_row_s for n, t in self.target_s.items()},
                          self.draft_token_s + self.host_draft_token_s if self.draft_token_s is not None else None)
        costs._keep_monotone()
        return costs

    def draft_batch(self, n: int) -> float:
        """What the draft model's catch-up of n tokens costs (one batch)."""
        if n <= 0:
            return 0.0
        if self.draft_batch_s:
            return self._draft_curve.target(n) if len(self.draft_batch_s) > 1 else \
                self.draft_batch_s[min(self.draft_batch_s)] * n
        return (self.draft_token_s or 0.0) * n

    @cached_property
    def _draft_curve(self) -> CostModel:
        """The draft's batch costs as a curve (interpolated between sizes), made once: asked at every proposal."""
        return CostModel(dict(self.draft_batch_s))

    def to_json(self) -> dict:
        return {"name": self.name, "machine": self.machine, "models": self.models, "depth": self.depth,
                "target_batch_s": {str(k): v for k, v in sorted(self.target_s.items())},
                "draft_token_s": self.draft_token_s,
                "draft_batch_s": {str(k): v for k, v in sorted(self.draft_batch_s.items())},
                "host_row_s": self.host_row_s, "host_draft_token_s": self.host_draft_token_s, "step_s": self.step_s}

    @classmethod
    def from_json(cls, d: dict, name: str) -> "CostCurve":
        try:
            return cls(d.get("name") or name, {int(k): float(v) for k, v in d["target_batch_s"].items()},
                       float(d["draft_token_s"]) if d.get("draft_token_s") is not None else None,
                       {int(k): float(v) for k, v in (d.get("draft_batch_s") or {}).items()},
                       d.get("depth"), d.get("machine", ""), d.get("models", ""),
                       float(d.get("host_row_s") or 0.0), float(d.get("host_draft_token_s") or 0.0),
                       float(d.get("step_s") or 0.0))
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise ValueError(f"{name} is not a cost file (target_batch_s: {{n: seconds}}, draft_token_s): {e}")

    @classmethod
    def load(cls, path: str) -> "CostCurve":
        try:
            data = json.loads(Path(path).read_text())
        except OSError as e:
            raise ValueError(f"cannot read the cost file {path}: {e.strerror or e}")
        except ValueError as e:
            raise ValueError(f"{path} is not JSON: {e}")
        if not isinstance(data, dict):
            raise ValueError(f"{path} is not a cost file (target_batch_s: {{n: seconds}}, draft_token_s)")
        curve = cls.from_json(data, Path(path).name)
        curve.name = Path(path).name
        return curve

    def scaled_to(self, name: str, verify_means: dict[int, float], draft_scale: float = 1.0) -> "CostCurve":
        """This curve's shape at the level a run met: each batch size the run verified takes the run's own mean
        (the sizes between two it met, the ratio interpolated; beyond, the nearest one's), the draft model's costs
        times `draft_scale`. A curve measured apart, at another moment, is not always what the run's steps paid
        (this host's speed drifts; before the bench ran every decode on one thread, its paths' threads alone
        added ~20 ms a decode on a 2-core machine)."""
        base = self.cost_model()
        ratios = {n: t / base.target(n) for n, t in sorted(verify_means.items()) if t > 0}
        if not ratios:
            return self

        def ratio(n: int) -> float:
            sizes = sorted(ratios)
            if n <= sizes[0]:
                return ratios[sizes[0]]
            if n >= sizes[-1]:
                return ratios[sizes[-1]]
            lo = max(k for k in sizes if k <= n)
            hi = min(k for k in sizes if k >= n)
            w = 0.0 if hi == lo else (n - lo) / (hi - lo)
            return ratios[lo] * (1 - w) + ratios[hi] * w

        draft = None if self.draft_token_s is None else (self.draft_token_s + self.host_draft_token_s) * draft_scale
        return CostCurve(name, {n: base.target(n) * ratio(n) for n in self.target_s}, draft,
                         {n: t * draft_scale for n, t in self.draft_batch_s.items()}, self.depth, self.machine,
                         self.models)

    @classmethod
    def measured_here(cls, target, draft, depth: int, name: str = "this machine") -> "CostCurve":
        """This machine's curve measured now with the engine's own models and Python row reads, at a depth."""
        from lsp_server.engine.costs import measure_curve
        t, d = measure_curve(target, draft, depth)
        return cls(name, t, d.get(1), d, depth, platform.node(), "the engine's models")

    @classmethod
    def of_engine(cls, costs: CostModel, name: str = "this machine") -> "CostCurve":
        """The engine's own curve (calibrated here, kept current by the run's steps)."""
        return cls(name, {n: costs.target(n) for n in sorted(costs.batch_s)}, costs.draft(),
                   machine=platform.node())


class _ReplayNgram:
    name = "ngram"

    def __init__(self):
        self.buckets = NgramDrafter().buckets
        self._bucketing = NgramDrafter()   # only its memory of the last proposal, for the "run" bucket
        self.state: dict = {}
        self.ctx_len = 0

    def propose(self, max_len: int) -> Draft | None:
        p = self.state.get("ngram")
        if p is None or max_len <= 0:
            return None
        bucket = self._bucketing.bucket(*p.ngram, self.ctx_len)
        tokens = p.tokens[:max_len]
        return Draft(self.name, tokens, [bucket] * len(tokens))


class _ReplayTemplate:
    name = "template"
    buckets = TemplateDrafter.buckets

    def __init__(self):
        self.state: dict = {}

    def propose(self, text: str, max_len: int) -> Draft | None:
        p = self.state.get("template")
        if p is None or max_len <= 0:
            return None
        return Draft(self.name, p.tokens[:max_len], p.buckets[:max_len])


class _ReplayDraftModel:
    """The draft model's KV cache, as token ids (for the loop's catch-up rule), and its cost."""

    def __init__(self, prompt: list[int]):
        self.tokens = list(prompt)   # prewarmed with the prompt, as the bench and the server's warm-up do

    def cached_prefix(self, ctx: list[int]) -> int:
        return shared_prefix(self.tokens, ctx)


class _ReplayModelDrafter:
    name = "model"

    def __init__(self, curve: CostCurve, prompt: list[int]):
        self.curve = curve
        self.model = _ReplayDraftModel(prompt)
        self.state: dict = {}
        self.spent_s = 0.0   # what its proposals cost since the step began

    def propose(self, ctx: list[int], max_len: int, keep_going, cancel=None, keep: int = 0) -> Draft:
        p = self.state.get("model")
        # catch up with the context (at least its last token, whose logits the first draft token needs)
        catch_up = max(1, len(ctx) - self.model.cached_prefix(ctx))
        draft = Draft(self.name)
        for tok, bucket in zip(p.tokens if p else [], p.buckets if p else []):
            if len(draft.tokens) >= max_len:
                break
            draft.tokens.append(tok)
            draft.buckets.append(bucket)
            if len(draft.tokens) >= max_len or not keep_going(draft):
                break
        # every drafted token but the last was decoded to draft the next one; each one's logits were read
        decoded = max(0, len(draft.tokens) - 1)
        draft.cost_s = (self.curve.draft_batch(catch_up) + decoded * (self.curve.draft_token_s or 0.0)
                        + len(draft.tokens) * self.curve.host_draft_token_s)
        self.model.tokens = list(ctx) + draft.tokens[:decoded]
        self.spent_s += draft.cost_s
        return draft


class _Out:
    def __init__(self, tokens: list[int]):
        self.tokens, self.text = tokens, ""


@dataclass
class Projected:
    """One prompt (or a category's sum) under a cost curve."""
    tokens: int = 0
    plain_s: float = 0.0
    spec_s: float = 0.0
    steps: int = 0
    drafted: dict[str, list[int]] = field(default_factory=dict)   # drafter -> [drafted, accepted]
    model_draft_s: float = 0.0    # what the verified draft-model proposals cost, and how many there were
    model_proposals: int = 0

    def add(self, other: "Projected") -> None:
        self.model_draft_s += other.model_draft_s
        self.model_proposals += other.model_proposals
        self.tokens += other.tokens
        self.plain_s += other.plain_s
        self.spec_s += other.spec_s
        self.steps += other.steps
        for k, (d, a) in other.drafted.items():
            acc = self.drafted.setdefault(k, [0, 0])
            acc[0] += d
            acc[1] += a

    @property
    def speedup(self) -> float:
        return self.plain_s / self.spec_s if self.spec_s else 0.0


def verdict(sp: ShadowPrompt, j: int, drafted: list[int]) -> tuple[int, bool, int]:
    """What verifying `[tok] + drafted` after the first j output tokens gives, as `speculative._verify` decides it
    on the greedy path: (drafted tokens accepted, a near-tie row decoded again, the draft right at that row)."""
    n = len(drafted)
    right = shared_prefix(drafted, sp.tokens[j:])
    for i in range(n + 1):
        # row i predicts output token j + i (past the output: the end of generation, whose gap is not recorded)
        gap = sp.margins[j + i] if j + i < len(sp.margins) else math.inf
        if n and gap < NEAR_TIE:
            return i, True, int(i < n and i < right)
        if i < n and i < right:
            continue
        return i, False, 0
    raise AssertionError("unreachable: the last row always ends the loop")


def project_prompt(sp: ShadowPrompt, controller: Controller, curve: CostCurve,
                   drafters: tuple[str, ...] = ("ngram", "template", "model"),
                   draft_model: bool = True, fixed: int = 0) -> Projected:
    """The speculative loop of `speculative.generate`, step by step, on the shadow records; `fixed`: a fixed
    draft of that many draft-model tokens every step (GenerationRequest.fixed_model_draft), not the controller."""
    lang = sp.language
    speculate = controller.draft_max > 0
    ngram = _ReplayNgram() if "ngram" in drafters else None
    template = _ReplayTemplate() if "template" in drafters else None
    model = _ReplayModelDrafter(curve, sp.prompt) if "model" in drafters and draft_model else None
    if not (speculate and ngram and controller.may_pay(lang, ngram.name, ngram.buckets)):
        ngram = None
    fixed = fixed if model is not None else 0
    use_model = speculate and model is not None and (fixed > 0 or controller.model_can_pay())
    req = GenerationRequest(sp.prompt, max_tokens=sp.max_tokens, language=lang, fixed_model_draft=fixed)
    t1 = curve.cost_model().target(1)
    out = Projected(tokens=len(sp.tokens), plain_s=sp.steps * t1)
    j = 1
    while j <= sp.steps:
        state = sp.states[j - 1]
        for d in (ngram, template, model):
            if d is not None:
                d.state = state
        if ngram:
            ngram.ctx_len = len(sp.prompt) + j
        if model:
            model.spent_s = 0.0
        draft, plan = (_choose_draft(controller, req, _Out(sp.tokens[:j]), sp.margins[j - 1], ngram, template,
                                     model if use_model else None, fixed, None)
                       if speculate else (None, None))
        n = plan.n_verify if plan else 0
        drafted = draft.tokens[:n] if n else []
        accepted, near_tie, right = verdict(sp, j, drafted)
        verify_s = controller.costs.target(n + 1)
        step_s = (verify_s + (t1 if near_tie else 0.0) + (model.spent_s if model else 0.0)
                  + (curve.step_s if speculate else 0.0))
        if speculate:
            controller.observe_step(verify_s, plan, accepted, draft.cost_s if n else 0.0)
        if n:
            controller.stats.record(lang, draft.drafter, draft.buckets[:n], accepted + right)
            c = out.drafted.setdefault(draft.drafter, [0, 0])
            c[0] += n
            c[1] += accepted
            if draft.drafter == "model":
                out.model_draft_s += draft.cost_s
                out.model_proposals += 1
        out.spec_s += step_s
        out.steps += 1
        j += accepted + 1
    return out


def project(prompts: list[tuple[str, ShadowPrompt]], curve: CostCurve, acceptance: dict,
            draft_min: int = 0, draft_max: int = 16,
            drafters: tuple[str, ...] = ("ngram", "template", "model"), fixed: int = 0) -> dict[str, Projected]:
    """Every prompt in the run's order, (category, record) each, with one controller learning as it goes from
    the statistics the run started from; the sums per category. `fixed`: the bench's fixed draft-model path
    instead (a draft of that many tokens every step)."""
    stats = AcceptanceStats(None)
    stats.restore(acceptance)
    controller = Controller(curve.cost_model(), stats, draft_min, draft_max)
    draft_model = curve.draft_token_s is not None
    out: dict[str, Projected] = {}
    for category, sp in prompts:
        out.setdefault(category, Projected()).add(project_prompt(sp, controller, curve, drafters, draft_model,
                                                                 fixed))
    return out
