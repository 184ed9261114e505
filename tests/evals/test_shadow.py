"""Shadow acceptance equals what a real speculative run accepts on the same prompts (the real models)."""
import pytest

from evals.speed import shadow
from lsp_server.bench.fixtures import default_root, load_cases
from evals.speed.projection import CostCurve, project_prompt, verdict
from lsp_server.engine import GenerationRequest
from lsp_server.engine.acceptance import AcceptanceStats
from lsp_server.engine.controller import Controller
from lsp_server.engine.costs import CostModel
from lsp_server.engine.llama import shared_prefix
from lsp_server.engine.speculative import NEAR_TIE, StepObserver, generate
from lsp_server.pipeline import Pipeline
from lsp_server.prompt import PromptBudget

MAX_TOKENS = 48
# A verify batch computes its rows with other kernels than one-token decoding: on these two prompts a row's top-2
# gap stood up to 0.38 logits from the same position's gap decoded alone (the shadow's record). Twice that bounds
# what a different batch split may move, far below a real choice.
DRIFT = 0.75


def _draft_tie(engine, ctx: list[int], a: list[int], b: list[int]) -> bool:
    """Where two proposals of the draft model for the same context part, whether the draft model stood at a
    near-tie there: each side's token (or the end of the proposal) within DRIFT of the best logit. The shadow and
    the real run fill the draft's cache in different batches, which moves its logits by the kernels' rounding;
    only a near-tie can turn that into a different token."""
    i = shared_prefix(a, b)
    m = engine.draft
    m.prefill(ctx + a[:i])
    logits = m.logits(-1)
    best = float(logits.max())
    ends = max((float(logits[t]) for t in range(len(logits)) if m.is_eog(t)), default=best)
    side = lambda x: float(logits[x[i]]) if i < len(x) else ends
    return best - side(a) < DRIFT and best - side(b) < DRIFT


def _eager() -> Controller:
    """A controller that sees verification as free (a flat cost curve): it drafts wherever it can, so that the
    real run verifies many drafts of every kind."""
    return Controller(CostModel({1: 0.05, 2: 0.05, 16: 0.05}, 0.001), AcceptanceStats(None), 0, 16)


@pytest.fixture
def exact_caches(engine):
    """Both models' caches evaluated here, exactly: no state restored from the KV store and no shifted reuse
    (earlier tests leave states behind that a later prompt may restore), so that the shadow and the real runs
    differ only in how their batches were split."""
    saved = engine.draft.store, engine.target.store, engine.draft.reuse_min, engine.target.reuse_min
    for m in (engine.draft, engine.target):
        m.store, m.reuse_min = None, 0
        m.reset()
    yield engine
    engine.draft.store, engine.target.store, engine.draft.reuse_min, engine.target.reuse_min = saved
    engine.draft.reset()
    engine.target.reset()


class Steps(StepObserver):
    """Each verify step's (output tokens before it, drafter, drafted tokens, accepted)."""

    def __init__(self):
        self.seen: list[tuple] = []

    def step(self, *seen) -> None:
        self.seen.append(seen)


def test_shadow_acceptance_equals_real_verification(exact_caches):
    engine = exact_caches
    pipe = Pipeline(engine, PromptBudget(prefix_tokens=1536, suffix_tokens=256, context_tokens=0))
    cases = load_cases(default_root(), ["python-boilerplate", "json-api"], 1)
    compared, ties, used = 0, 0, set()
    for case in cases:
        prompt, prefix, _ = pipe.prompt_for(case.document, case.line, case.col)
        lang = case.document.language
        sp = shadow.record(engine, case.name, prompt.tokens, prefix, lang, MAX_TOKENS, prompt.stop)
        assert len(sp.states) == sp.steps > 10
        # the model drafter, the free drafters alone, and a fixed draft of 4 model tokens
        for model, fixed in ((engine.model_drafter, 0), (None, 0), (engine.model_drafter, 4)):
            steps = Steps()
            g = generate(engine.target, _eager(), GenerationRequest(
                prompt.tokens, max_tokens=MAX_TOKENS, stop=prompt.stop, language=lang, left_text=prefix,
                fixed_model_draft=fixed, observer=steps),
                None, engine.ngram, model, engine.template)
            for j, drafter, drafted, accepted in steps.seen:
                if not drafter:
                    continue
                # past a near-tie where the two runs' kernels chose differently, the outputs part: compare
                # only the steps whose tokens both runs wrote alike
                if g.tokens[:j + accepted + 1] != sp.tokens[:j + accepted + 1]:
                    break
                p = sp.states[j - 1].get(drafter)
                assert p is not None, (case.name, j, drafter)
                if p.tokens[:len(drafted)] != drafted:
                    assert drafter == "model" and _draft_tie(engine, prompt.tokens + g.tokens[:j], p.tokens,
                                                             drafted), (case.name, j, drafter, p.tokens, drafted)
                    ties += 1
                v = verdict(sp, j, drafted)[0]
                if v != accepted:
                    # the row where they part stood near the near-tie line: the real batch's gap fell on one side
                    # of it (re-decoded, or not), the shadow's gap decoded alone on the other
                    k = j + min(v, accepted)
                    assert k < len(sp.margins) and abs(sp.margins[k] - NEAR_TIE) < DRIFT, (
                        case.name, j, drafter, drafted, accepted, v, sp.margins[k:k + 1])
                    ties += 1
                compared += 1
                used.add(drafter)
        # the projection on real records: a free verify batch pays, this machine's own curve hardly
        flat = CostCurve("flat", {1: 0.05, 2: 0.05, 16: 0.05}, 0.001)
        p = project_prompt(sp, _eager(), flat)
        assert p.speedup > 1.5 and sum(a for _, a in p.drafted.values()) > 0
        assert p.tokens == len(sp.tokens)
    assert compared >= 10 and {"model", "template", "ngram"} <= used
    assert ties <= compared // 4, (ties, compared)
