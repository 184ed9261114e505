"""Shadow acceptance equals what a real speculative run accepts on the same prompts (the real models)."""
from lsp_server.bench import shadow
from lsp_server.bench.fixtures import default_root, load_cases
from lsp_server.bench.projection import CostCurve, project_prompt, verdict
from lsp_server.engine import GenerationRequest
from lsp_server.engine.acceptance import AcceptanceStats
from lsp_server.engine.controller import Controller
from lsp_server.engine.costs import CostModel
from lsp_server.engine.speculative import generate
from lsp_server.pipeline import Pipeline
from lsp_server.prompt import PromptBudget

MAX_TOKENS = 48


def _eager() -> Controller:
    """A controller that sees verification as free (a flat cost curve): it drafts wherever it can, so that the
    real run verifies many drafts of every kind."""
    return Controller(CostModel({1: 0.05, 2: 0.05, 16: 0.05}, 0.001), AcceptanceStats(None), 0, 16)


def test_shadow_acceptance_equals_real_verification(engine):
    pipe = Pipeline(engine, PromptBudget(prefix_tokens=1536, suffix_tokens=256, context_tokens=0))
    cases = load_cases(default_root(), ["python-boilerplate", "json-api"], 1)
    compared, used = 0, set()
    for case in cases:
        prompt, prefix, _ = pipe.prompt_for(case.document, case.line, case.col)
        lang = case.document.language
        sp = shadow.record(engine, case.name, prompt.tokens, prefix, lang, MAX_TOKENS, prompt.stop)
        assert len(sp.states) == sp.steps > 10
        # the model drafter, the free drafters alone, and a fixed draft of 4 model tokens
        for model, fixed in ((engine.model_drafter, 0), (None, 0), (engine.model_drafter, 4)):
            steps = []
            g = generate(engine.target, _eager(), GenerationRequest(
                prompt.tokens, max_tokens=MAX_TOKENS, stop=prompt.stop, language=lang, left_text=prefix,
                fixed_model_draft=fixed, on_step=lambda *a: steps.append(a)),
                None, engine.ngram, model, engine.template)
            for j, drafter, drafted, accepted in steps:
                if not drafter:
                    continue
                # past a near-tie where the two runs' kernels chose differently, the outputs part: compare
                # only the steps whose tokens both runs wrote alike
                if g.tokens[:j + accepted + 1] != sp.tokens[:j + accepted + 1]:
                    break
                p = sp.states[j - 1].get(drafter)
                assert p is not None, (case.name, j, drafter)
                assert p.tokens[:len(drafted)] == drafted, (case.name, j, drafter)
                assert verdict(sp, j, drafted)[0] == accepted, (case.name, j, drafter, drafted)
                compared += 1
                used.add(drafter)
        # the projection on real records: a free verify batch pays, this machine's own curve hardly
        flat = CostCurve("flat", {1: 0.05, 2: 0.05, 16: 0.05}, 0.001)
        p = project_prompt(sp, _eager(), flat)
        assert p.speedup > 1.5 and sum(a for _, a in p.drafted.values()) > 0
        assert p.tokens == len(sp.tokens)
    assert compared >= 10 and {"model", "template", "ngram"} <= used
