"""The engine with the real default models."""
import threading
import time

import pytest

from lsp_server.bench.fixtures import load_cases
from lsp_server.engine import Cancel, ContextFullError, GenerationRequest
from lsp_server.engine.costs import CostModel

from conftest import FIXTURES

NEAR_TIE = 0.5


def fixture_prompts(pipeline, per_category=2):
    cases = load_cases(FIXTURES / "bench", limit=per_category)
    for case in cases:
        prompt, _, _ = pipeline.prompt_for(case.document, case.line, case.col)
        yield case, prompt


def test_fim_prompt_uses_the_vocabulary_fim_tokens(engine, pipeline):
    case, prompt = next(fixture_prompts(pipeline, 1))
    fim = engine.fim
    assert fim is not None
    toks = prompt.tokens
    assert toks.count(fim.prefix) == 1 and toks.count(fim.suffix) == 1 and toks[-1] == fim.middle
    assert toks.index(fim.prefix) < toks.index(fim.suffix)   # PSM: prefix, then suffix, then middle
    assert engine.target.token_text(fim.prefix) == "<|fim_prefix|>"


@pytest.fixture
def cheap_verification(engine):
    """Verification priced as on a GPU, so the controller drafts on any machine and the comparison below
    always compares speculation (on a compute-bound CPU it would rightly decode plainly)."""
    saved = engine.controller.costs
    engine.controller.costs = CostModel({1: 0.030, 2: 0.0305, 4: 0.031, 8: 0.032, 16: 0.035})
    yield
    engine.controller.costs = saved


def test_speculative_output_equals_plain_greedy(engine, pipeline, cheap_verification):
    compared, divergences, drafted = 0, [], 0
    for case, prompt in fixture_prompts(pipeline):
        req = dict(max_tokens=48, stop=prompt.stop, language=case.document.language)
        plain = engine.generate(GenerationRequest(prompt.tokens, speculative=False, record_margins=True, **req))
        spec = engine.generate(GenerationRequest(prompt.tokens, speculative=True, **req))
        drafted += sum(c.drafted for c in spec.drafters.values())
        compared += 1
        assert len(plain.tokens) > 0
        if plain.text != spec.text:
            i = next((k for k, (a, b) in enumerate(zip(plain.tokens, spec.tokens)) if a != b),
                     min(len(plain.tokens), len(spec.tokens)))
            divergences.append((case.name, i, plain.margins[i] if i < len(plain.margins) else None))
    print(f"compared {compared} prompts, {drafted} drafted tokens verified, divergences: {divergences}")
    assert compared >= 10
    assert drafted > 0, "speculation never ran, so this test compared nothing"
    for name, i, gap in divergences:
        assert gap is not None and gap < NEAR_TIE, f"{name}: diverged at token {i} with top-2 gap {gap}"
    # priced as on a GPU, drafts run long, and a near-tie in the KV of a batch-accepted token flips a token in
    # about one prompt in ten here (2 of 10 in one run, gaps 0.15 and 0.13); more would be a bug, not numerics
    assert len(divergences) <= compared // 4


def test_paths_side_by_side_on_contexts_of_one_copy_of_the_weights(engine, pipeline):
    """What the bench runs: plain decoding on a second context of the target's weights and Tandem on the
    engine's own, a step each in turn; each writes what it writes alone, and the waits are not its time."""
    from lsp_server.bench.side_by_side import TakesTurns, side_by_side
    from lsp_server.engine.speculative import generate

    case, prompt = next(fixture_prompts(pipeline, 1))
    req = lambda **kw: GenerationRequest(prompt.tokens, max_tokens=24, stop=prompt.stop,
                                         language=case.document.language, **kw)
    alone = engine.generate(req(speculative=False))
    twin = engine.target.another_context()
    try:
        assert twin.model is engine.target.model and twin.ctx is not engine.target.ctx
        order, waits = [], {"twin": 0.0, "own": 0.0}

        def on(name, model, speculative):
            def job(hand_on):
                def between():
                    order.append(name)
                    t = time.perf_counter()
                    hand_on()
                    time.sleep(0.02)        # a wait that must not count as this path's time
                    waits[name] += time.perf_counter() - t
                r = req(speculative=speculative, observer=TakesTurns(between))
                return (generate(model, engine.controller, r) if model is twin else engine.generate(r))
            return job

        t0 = time.perf_counter()
        got = side_by_side({"twin": on("twin", twin, False), "own": on("own", engine.target, True)})
        wall = time.perf_counter() - t0
    finally:
        twin.close()
    assert got["twin"].text == alone.text == got["own"].text
    assert order[:4] == ["twin", "own", "twin", "own"]
    for name, g in got.items():
        assert waits[name] >= 0.02 * (g.steps - 1)
        # counted in, the waits would make a path's time the whole wall time
        assert g.gen_s + waits[name] <= wall
    # the engine's own context is unharmed by the closed twin
    assert engine.generate(req(speculative=False)).text == alone.text


def test_a_bench_pass_decodes_every_path_on_one_thread(engine, pipeline, monkeypatch):
    """The bench's paths take turns on threads of their own, but every llama_decode of a pass runs on the thread
    that runs the pass (a team of OpenMP threads per path slowed every decode here by ~20 ms)."""
    import llama_cpp

    from evals.speed.paths import with_model_draft

    case, prompt = next(fixture_prompts(pipeline, 1))
    sbs = with_model_draft(engine)   # plain, plain again, Tandem and a fixed draft on a draft context of its own
    threads = []
    real = llama_cpp.llama_decode

    def recording(ctx, batch):
        threads.append(threading.get_ident())
        return real(ctx, batch)

    try:
        sbs.prewarm(prompt.tokens)
        monkeypatch.setattr(llama_cpp, "llama_decode", recording)
        got = sbs.run_pass(lambda speculative, fixed: GenerationRequest(
            prompt.tokens, max_tokens=16, stop=prompt.stop, language=case.document.language,
            speculative=speculative, fixed_model_draft=fixed), 0)
        monkeypatch.undo()
    finally:
        sbs.close()
    assert len(threads) >= 10 and set(threads) == {threading.get_ident()}
    assert len({g.text for g in got.values()}) == 1 and len(got) == 4
    assert all(m.runs_on is None for m in sbs.contexts[:1] + [engine.draft])


def test_fixed_model_draft_is_lossless_too(engine, pipeline):
    if engine.draft is None:
        pytest.fail("the default draft model did not load: " + "; ".join(engine.warnings))
    case, prompt = next(fixture_prompts(pipeline, 1))
    req = dict(max_tokens=32, stop=prompt.stop, language=case.document.language)
    plain = engine.generate(GenerationRequest(prompt.tokens, speculative=False, **req))
    spec = engine.generate(GenerationRequest(prompt.tokens, speculative=True, fixed_model_draft=3, **req))
    assert spec.drafters["model"].drafted > 0
    assert spec.tokens == plain.tokens


def test_second_request_extending_the_first_evaluates_only_new_tokens(engine):
    text = "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n"
    first = engine.tokenize(text)
    engine.generate(GenerationRequest(first, max_tokens=4, speculative=False))
    extra = engine.tokenize("    if n < 2:\n        return n\n")
    before = engine.target.counters.evaluated
    g = engine.generate(GenerationRequest(first + extra, max_tokens=1, speculative=False))
    # what the KV cache already held is reused; only the new tokens are computed
    assert g.prompt_reused >= len(first) - 1
    assert g.prompt_evaluated <= len(extra) + 1
    assert g.steps == 0   # the one token came from the prompt's logits
    assert engine.target.counters.evaluated - before == g.prompt_evaluated
    # the same prompt again: nothing but the last token is evaluated
    g = engine.generate(GenerationRequest(first + extra, max_tokens=1, speculative=False))
    assert g.prompt_evaluated == 1


class CountingCancel:
    """A cancel flag that turns on at its n-th check, to count how many steps run after it is set."""

    def __init__(self, set_at):
        self.set_at, self.checks = set_at, 0

    def is_set(self):
        self.checks += 1
        return self.checks >= self.set_at


def test_cancel_stops_within_one_step(engine):
    toks = engine.tokenize("# A long list of numbers\nnumbers = [\n    1,\n    2,\n")
    flag = CountingCancel(set_at=6)   # checks 1-5 cover the prompt chunk(s) and first steps
    g = engine.generate(GenerationRequest(toks, max_tokens=200, speculative=True), cancel=flag)
    assert g.stop_reason == "cancelled"
    # the loop checks once per step (a draft model, if asked, once more inside the step): once the flag
    # is seen set, no further step starts
    assert flag.set_at <= flag.checks <= flag.set_at + 1
    assert g.steps <= flag.set_at
    assert len(g.tokens) < 200


def test_cancel_from_another_thread_returns_promptly(engine):
    # a list the model goes on counting: far more than 400 tokens if nothing stops it
    toks = engine.tokenize("squares = [\n" + "".join(f"    {i * i},\n" for i in range(1, 30)))
    ev = threading.Event()
    result = {}
    t = threading.Thread(target=lambda: result.setdefault("g", engine.generate(
        GenerationRequest(toks, max_tokens=400, speculative=False), cancel=ev)))
    t.start()
    time.sleep(1.0)
    t_set = time.perf_counter()
    ev.set()
    t.join(timeout=30)
    waited = time.perf_counter() - t_set
    assert result["g"].stop_reason == "cancelled"
    # one decode step is tens of milliseconds here; a full 400-token generation would take >10 s
    assert waited < 3.0, f"took {waited:.2f}s to stop after the cancel"


@pytest.mark.parametrize("background, phase", [(True, "answer"), (False, "answer"), (True, "prompt")])
def test_background_work_abandons_the_batch_under_way_when_cancelled(engine, background, phase):
    """Work nobody waits for (`Cancel.yields`: a next edit, a prefetch, an offer) has its flag watched inside each
    batch, a prompt chunk's or a verify batch's: cancelled while one is decoded, it abandons it, so no token is
    evaluated after the cancel and a request that stopped it waits for no batch of it; the cache holds what was
    evaluated before. A request's own generation reads its flag between verify steps: the batch under way is
    finished first."""
    # (a prompt of its own for each case: none of it is cached, so its evaluation runs chunk by chunk)
    toks = engine.tokenize(f"# {phase}, {background}\nsquares = [\n" + "".join(f"    {i * i},\n" for i in range(1, 40)))
    target, cancel, at = engine.target, Cancel(yields=background), {}
    decode = target._llama_decode

    def cancelled_while_decoding() -> int:   # the flag is set as the batch starts: a prompt chunk after the first,
        n = len(target.tokens)               # or a verify batch a few steps into the answer
        if not at and (0 < n < len(toks) if phase == "prompt" else n > len(toks) + 8):
            at["evaluated"] = target.counters.evaluated
            cancel.set()
        return decode()

    target._llama_decode = cancelled_while_decoding
    try:
        g = engine.generate(GenerationRequest(toks, max_tokens=200, speculative=True), cancel)
    finally:
        del target._llama_decode
    assert at and g.stop_reason == "cancelled" and len(g.tokens) < 200
    after = target.counters.evaluated - at["evaluated"]
    if background or phase == "prompt":
        assert after == 0   # the batch was abandoned part way
    else:
        assert after >= 1   # the batch ran to its end before the flag was read
    assert target.tokens == (toks + g.tokens)[:len(target.tokens)]
    # the cache is in step with its bookkeeping: a generation from there equals one from a cold start, up to a
    # near-tie (the two evaluated the prompt in other batches, whose sums differ in the last bits)
    again = engine.generate(GenerationRequest(toks, max_tokens=12, speculative=False))
    target.truncate(0)
    cold = engine.generate(GenerationRequest(toks, max_tokens=12, speculative=False, record_margins=True))
    sure = next((i for i, m in enumerate(cold.margins) if m < 1.0), len(cold.tokens))
    assert again.tokens[:sure] == cold.tokens[:sure]


def test_cancel_during_prompt_evaluation(engine):
    toks = engine.tokenize("x = 1\n" * 400)
    ev = threading.Event()
    ev.set()
    g = engine.generate(GenerationRequest(toks, max_tokens=8), cancel=ev)
    assert g.stop_reason == "cancelled" and g.tokens == []


def test_prompt_larger_than_the_context_is_refused(engine):
    toks = engine.tokenize("y = 2\n" * 2000)
    assert len(toks) > engine.target.n_ctx
    with pytest.raises(ContextFullError, match="does not fit"):
        engine.generate(GenerationRequest(toks, max_tokens=8))
    # and the engine still works afterwards
    g = engine.generate(GenerationRequest(engine.tokenize("def add(a, b):\n"), max_tokens=8))
    assert g.tokens


def test_the_draft_limit_tuned_is_the_one_a_prompt_s_room_is_counted_from(engine):
    """engine.cfg.draft_max is what prompts are fitted with (prompt/budget.py, the pipeline); the loop checks the
    controller's: a draft limit raised by a setting without a reload left cfg behind, and a prompt that fitted by
    cfg's count was ContextFullError."""
    c = engine.controller
    saved = (engine.cfg.speculation, c.draft_min, c.draft_max, engine.cfg.kv_store_mib, engine.cfg.cache_reuse)
    try:
        engine.tune(True, 2, c.draft_max + 8, engine.cfg.kv_store_mib, engine.cfg.cache_reuse)
        assert (engine.cfg.draft_min, engine.cfg.draft_max) == (c.draft_min, c.draft_max) == (2, saved[2] + 8)
        # one token past the room counted from cfg is refused before anything is evaluated
        room = engine.cfg.n_ctx - 8 - engine.cfg.draft_max - 1
        with pytest.raises(ContextFullError):
            engine.generate(GenerationRequest(engine.tokenize("y = 2\n" * 2000)[:room + 1], max_tokens=8))
    finally:
        engine.tune(*saved)


def test_stop_strings_and_token_limit(engine):
    toks = engine.tokenize("for i in range(10):\n    print(i)\nfor j in range(10):\n")
    g = engine.generate(GenerationRequest(toks, max_tokens=5, speculative=False))
    assert g.stop_reason == "length" and len(g.tokens) == 5
    g = engine.generate(GenerationRequest(toks, max_tokens=60, stop=("\n",), speculative=True))
    assert g.stop_reason in ("stop", "eog") and "\n" not in g.text
