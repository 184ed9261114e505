"""Pages and the KV store with the real models: what a jump, a return and many documents cost in evaluated
tokens (engine counters), and speculation on restored states."""
import threading

import pytest

from lsp_server.context import Document
from lsp_server.engine import Cancel, GenerationRequest, shared_prefix
from lsp_server.engine.costs import CostModel
from lsp_server.engine.kvstore import KVStore
from lsp_server.engine.llama import PREFILL_CHUNK
from lsp_server.pipeline import CompletionRequest

from conftest import FIXTURES

REAL = FIXTURES / "real"


def request_at(path, line, others=()):
    """The file with one line emptied to its indentation, the cursor at its end (0-based line)."""
    lines = path.read_text().split("\n")
    indent = lines[line][:len(lines[line]) - len(lines[line].lstrip())]
    text = "\n".join(lines[:line] + [indent] + lines[line + 1:])
    return CompletionRequest(Document(str(path), text), line, len(indent), max_tokens=16, max_tokens_single_line=16,
                             speculative=False, others=list(others))


@pytest.fixture
def store(engine):
    """A store of its own for the test, so earlier tests' states do not answer for it."""
    saved, engine.target.store = engine.target.store, KVStore(512 << 20)
    engine.target.reset()
    yield engine.target.store
    engine.target.store = saved
    engine.target.reset()


def test_a_jump_inside_a_page_evaluates_only_from_the_cursors_line(engine, pipeline, store):
    path = REAL / "httpx_models.py"
    # the page around line 900 filled ahead, as the server does when the user is idle there
    filled = pipeline.plan(CompletionRequest(Document(str(path), path.read_text()), 899, 0)).prompt
    assert filled.prefix_cut_lines > 0 and filled.fill
    engine.prewarm(filled.fill, keep=len(filled.fill))
    tried = 0
    for line in (897, 903, 890, 906):
        plan = pipeline.plan(request_at(path, line))
        if not plan.mode.complete or shared_prefix(plan.prompt.tokens, filled.fill) < plan.prompt.stable:
            continue   # a cursor the filled page does not serve
        tried += 1
        before = engine.target.counters.evaluated
        gen = pipeline.generate(plan)
        evaluated = engine.target.counters.evaluated - before - len(gen.tokens)
        tail = len(plan.prompt.tokens) - plan.prompt.stable
        # the cursor's segment (the line above an emptied line, and the emptied line), the suffix, the FIM tokens
        assert evaluated <= tail + 1, (line, evaluated, tail)
        assert gen.prompt_reused >= plan.prompt.stable - 1
    assert tried >= 3
    # a jump below the last one finds the page in the store, not in the live cache (which the last request cut)
    assert store.counters.restores >= 1


def test_a_return_restores_the_document_and_beyond_the_budget_it_is_evaluated_again(engine, pipeline, store):
    docs = [FIXTURES / "lsp" / "inventory.py", FIXTURES / "lsp" / "cart.ts", FIXTURES / "lsp" / "store.go"]
    plans = [pipeline.plan(request_at(p, len(p.read_text().split("\n")) // 2)) for p in docs]
    for plan in plans:
        pipeline.generate(plan)
    # back to the first document: its page comes from the store; only the cursor's segment, the suffix and the
    # FIM tokens are evaluated, as after a jump
    before = engine.target.counters.evaluated
    gen = pipeline.generate(plans[0])
    tail = len(plans[0].prompt.tokens) - plans[0].prompt.stable
    assert gen.prompt_restored >= plans[0].prompt.stable - 1 and gen.prompt_evaluated <= tail + 1
    assert engine.target.counters.evaluated - before <= gen.prompt_evaluated + len(gen.tokens)
    # a budget too small for any state: the return is evaluated again, and that is all
    store.resize(1 << 20)
    pipeline.generate(plans[1])
    gen = pipeline.generate(plans[2])
    assert gen.prompt_restored == 0 and gen.prompt_evaluated >= len(plans[2].prompt.tokens) // 2
    assert store.counters.refused >= 1 and len(store) == 0


def test_over_many_documents_the_store_stays_within_its_budget(engine, pipeline, store):
    budget = 24 << 20
    store.resize(budget)
    store.max_entries = 3
    per_token = engine.target.kv_bytes_per_token()
    for i in range(8):
        text = f"def function_{i}(value):\n    result = value * {i}\n" * 6 + f"\ndef main_{i}():\n    "
        doc = Document(f"/w/doc_{i}.py", text)
        plan = pipeline.plan(CompletionRequest(doc, text.count("\n"), 4, max_tokens=4, max_tokens_single_line=4,
                                               speculative=False))
        pipeline.generate(plan)
        assert store.nbytes <= budget and len(store) <= 3
        assert all(e.nbytes <= (len(e.tokens) + 8) * per_token for e in store.entries)
    assert store.counters.saves >= 7 and store.counters.evictions >= 4


def test_background_filling_stops_within_one_chunk(engine, store):
    toks = engine.tokenize("value = compute(1)\n" * 300)
    cancel = Cancel()
    done = {}
    t = threading.Thread(target=lambda: done.setdefault("n", engine.prewarm(toks, cancel, keep=len(toks))))
    t.start()
    while engine.target.counters.decode_calls == 0 or len(engine.target.tokens) < 2 * PREFILL_CHUNK:
        if not t.is_alive():
            break
    at = len(engine.target.tokens)
    cancel.set_keeping(0)
    t.join(30)
    # the chunk under way when the request came is abandoned mid-way (llama.cpp's abort callback)
    assert len(engine.target.tokens) <= at + PREFILL_CHUNK
    assert done["n"] < len(toks)
    # what it evaluated was worth keeping: a later fill goes on from there
    other = engine.tokenize("something else\n")
    engine.prewarm(other, keep=len(other))
    assert store.best(toks)[1] >= at - 1
    before = engine.target.counters.evaluated
    engine.prewarm(toks, keep=len(toks))
    assert engine.target.counters.evaluated - before <= len(toks) - at + 1


def test_a_cancel_inside_a_chunk_keeps_what_the_replacing_prompt_shares(engine, store):
    """A cancel that spares a start ending inside the chunk under way: the chunk is aborted, and the spared
    part evaluated after all, so a prompt cancelled at every keystroke still gets further each time."""
    toks = engine.tokenize("value = compute(1)\n" * 300)
    engine.target.prefill(toks[:8])
    cancel = Cancel()
    done = {}
    t = threading.Thread(target=lambda: done.setdefault("n", engine.prewarm(toks, cancel, keep=len(toks))))
    t.start()
    while len(engine.target.tokens) < 8 + PREFILL_CHUNK and t.is_alive():
        pass
    at = len(engine.target.tokens)
    cancel.set_keeping(at + PREFILL_CHUNK // 2)   # inside the chunk being evaluated now
    t.join(30)
    assert len(engine.target.tokens) == at + PREFILL_CHUNK // 2
    assert engine.target.tokens == toks[:len(engine.target.tokens)]


def test_speculation_on_a_restored_state_equals_plain_greedy(engine, pipeline, store):
    saved = engine.controller.costs
    engine.controller.costs = CostModel({1: 0.030, 2: 0.0305, 4: 0.031, 8: 0.032, 16: 0.035})
    try:
        plans = [pipeline.plan(request_at(FIXTURES / "demo" / "orders.py", 39)),
                 pipeline.plan(request_at(FIXTURES / "lsp" / "inventory.py", 10))]
        for plan in plans:
            plan.request.max_tokens = plan.max_tokens = 48
        for plan in plans:      # both states evaluated once: from here on each comes back from the store
            pipeline.generate(plan)
        runs = {}
        for speculative in (False, True):
            for plan in plans:
                plan.request.speculative = speculative
                plan.request.record_margins = True
                gen = pipeline.generate(plan)
                runs[(speculative, id(plan))] = gen
        assert all(g.prompt_restored > 0 for g in runs.values())
        drafted = 0
        for plan in plans:
            plain, spec = runs[(False, id(plan))], runs[(True, id(plan))]
            drafted += sum(c.drafted for c in spec.drafters.values())
            if plain.tokens != spec.tokens:
                i = next(k for k, (a, b) in enumerate(zip(plain.tokens, spec.tokens)) if a != b)
                assert plain.margins[i] < 0.5, f"diverged at token {i} with top-2 gap {plain.margins[i]}"
        assert drafted > 0
    finally:
        engine.controller.costs = saved


def test_reuse_with_a_position_shift_evaluates_only_what_is_new(engine, store):
    """Lines deleted above a cached stretch: with cacheReuse the stretch moves to its new positions instead of
    being evaluated again; speculation on the shifted cache still equals plain decoding on it."""
    lines = [f"    total += weights[{i}] * values[{i}]  # term {i}\n" for i in range(40)]
    head = engine.tokenize("def score(weights, values):\n    total = 0\n")
    body = [engine.tokenize(l) for l in lines]
    full = head + [t for b in body for t in b]
    cut = head + [t for b in body[6:] for t in b]        # six lines deleted near the top
    engine.target.reuse_min = 32
    saved = engine.controller.costs
    try:
        engine.target.prefill(full)
        before = engine.target.counters.evaluated
        reused = engine.target.prefill(cut)
        assert engine.target.counters.evaluated - before <= 1 and reused == len(cut) - 1
        assert engine.target.counters.shifted >= len(cut) - len(head) - 20   # (the lines start alike)
        engine.controller.costs = CostModel({1: 0.030, 2: 0.0305, 4: 0.031, 8: 0.032, 16: 0.035})
        runs = []
        for speculative in (False, True):
            engine.target.prefill(full)
            engine.target.prefill(cut)          # the same shifted state for both
            runs.append(engine.generate(GenerationRequest(cut, max_tokens=24, speculative=speculative,
                                                          record_margins=True)))
        plain, spec = runs
        if plain.tokens != spec.tokens:
            i = next(k for k, (a, b) in enumerate(zip(plain.tokens, spec.tokens)) if a != b)
            assert plain.margins[i] < 0.5, f"diverged at token {i} with top-2 gap {plain.margins[i]}"
    finally:
        engine.target.reuse_min = 0
        engine.controller.costs = saved


def test_an_unloaded_draft_model_is_loaded_again_once_it_could_pay(engine):
    """Where the draft cannot pay it is unloaded (here, on a CPU where verification costs nearly what its tokens
    do); priced as on a GPU it could, and the engine loads it again and gives it a share of the KV store."""
    from lsp_server.engine import engine as engine_module
    assert engine.draft is not None, "the session engine keeps its draft (draft_resident='always')"
    saved_costs, saved_draft, saved_drafter = engine.controller.costs, engine.draft, engine.model_drafter
    saved_budget = engine.store_budget_mib
    path = saved_draft.path
    try:
        engine.draft, engine.model_drafter, engine._draft_path = None, None, path
        engine._draft_checked = 0.0
        engine.controller.costs = CostModel({1: 0.030, 2: 0.0305, 4: 0.031, 8: 0.032, 16: 0.035}, 0.004)
        assert engine.controller.model_can_pay()
        assert engine.maybe_reload_draft()
        assert engine.draft is not None and engine.draft.path == path and engine.draft.store is not None
        assert engine.draft_decision.startswith("reloaded: ") and "can pay" in engine.draft_decision
        # the automatic store budget gives back what the draft's weights now take
        assert engine.store_budget_mib <= saved_budget
        # checked at most once a minute
        assert not engine.maybe_reload_draft() and engine_module.DRAFT_RECHECK_S >= 10
        with_draft = engine.store_budget_mib
        # priced as on this CPU again (verification costs what its tokens do): unloaded again where the engine
        # decides (auto), and its memory goes back to the store
        engine.cfg.draft_resident = "auto"
        engine.controller.costs = CostModel({1: 0.030, 2: 0.060, 4: 0.120, 8: 0.240, 16: 0.480}, 0.018)
        engine._draft_checked = 0.0
        assert engine.maybe_reload_draft()
        assert engine.draft is None and engine.model_drafter is None
        assert engine.draft_decision.startswith("unloaded again: ") and "cannot pay" in engine.draft_decision
        assert engine.store_budget_mib >= with_draft
    finally:
        engine.cfg.draft_resident = "always"
        if engine.draft is not None and engine.draft is not saved_draft:
            engine.draft.close()
        engine.draft, engine.model_drafter = saved_draft, saved_drafter
        engine.controller.costs = saved_costs
        engine.store_budget_mib = saved_budget
        engine._attach_stores()
