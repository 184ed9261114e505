"""Next edits on the model's queue (service/next_edit.py) with a scripted engine (tests/scripted.py): what is
proposed and counted, what is refused and why, an edit of the document cancelling the prediction that waits or
runs, a completion request going first, the proposals settled once. No model file; the real models' answer is
in test_next_edit_models.py.

The scenario is a rename, whose repeat is a candidate the target checks (service/edit_check.py) before any
rewrite is asked: the tests of the free rewrite's path turn candidates off (`model_path`), and the last tests take
the candidates' path."""
from __future__ import annotations

import asyncio
import threading

import pytest

from lsp_server.pipeline import Pipeline
from lsp_server.service.model import Model
from lsp_server.service.next_edit import NextEdits
from lsp_server.service.queue import Task, TaskKind
from lsp_server.service.settings import Settings
from lsp_server.service.stats import ServerStats
from scripted import FIM, ScriptedEngine, fills

pytestmark = pytest.mark.asyncio


@pytest.fixture(autouse=True)
def model_path(request, monkeypatch):
    if "repeat_path" not in request.keywords:
        monkeypatch.setattr("lsp_server.service.next_edit.plan_candidates", lambda *args: [])

URI = "file:///t/orders.py"
DOC = ("def summarize(orders):\n"
       "    total = 0\n"
       "    for order in orders:\n"
       "        total += order.price\n"
       "    return total\n")
RENAMED = DOC.replace("    total = 0", "    amount = 0")


def region_of(prompt: str) -> str:
    """The region a next-edit prompt asks to rewrite (its last code block before the answer's)."""
    return prompt.split("```python\n")[-2].split("```")[0]


def rewrite(fn):
    """An answer written from the region the prompt holds, ended with the fence as the model ends it."""
    return lambda prompt: fn(region_of(prompt)) + "```"


RENAME_ALL = rewrite(lambda region: region.replace("total", "amount"))


@pytest.fixture
def setup():
    made: list[Model] = []

    def make(answer=RENAME_ALL, **kw) -> tuple[NextEdits, ScriptedEngine, Model]:
        engine = ScriptedEngine(answer, by_prompt=True, **{"token_s": 0.00002, "step_s": 0.0002, **kw})
        model = Model(ServerStats())
        s = Settings()
        model.pipeline = Pipeline(engine, s.prompt_budget(), s.fast_prefix_tokens)
        made.append(model)
        return NextEdits(model), engine, model

    yield make
    for model in made:
        model.shutdown()


def renamed(ne: NextEdits) -> str:
    """The user renames `total` on line 1, a keystroke at a time."""
    ne.opened(URI, DOC)
    ne.edited(URI, DOC.replace("    total = 0", "     = 0"))
    for i in range(1, len("amount") + 1):
        ne.edited(URI, DOC.replace("    total = 0", f"    {'amount'[:i]} = 0"))
    return RENAMED


def hold(model: Model) -> threading.Event:
    """A request that holds the model thread until the event is set (the tasks posted meanwhile wait)."""
    release, started = threading.Event(), threading.Event()
    model.queue.post(Task(TaskKind.REQUEST, lambda models: (started.set(), release.wait(10))[1], what="holding"))
    assert started.wait(5)
    return release


async def until(cond, timeout_s: float = 10.0) -> bool:
    for _ in range(int(timeout_s / 0.005)):
        if cond():
            return True
        await asyncio.sleep(0.005)
    return cond()


async def test_the_rename_carried_to_the_next_uses_is_proposed_and_counted(setup):
    ne, engine, _ = setup()
    text = renamed(ne)
    seen = []
    generate = engine.generate
    engine.generate = lambda req, cancel=None: seen.append(req) or generate(req, cancel)
    p = await ne.ask(URI, text, 7, 1, "orders.py", "python")
    assert p is not None and p.id == "ne-1" and p.uri == URI and p.version == 7
    assert (p.edit.start, p.edit.end) == (3, 5)
    assert p.edit.text == "        amount += order.price\n    return amount\n"
    assert p.edit.old_text == "        total += order.price\n    return total\n"
    # the prompt shows the rename as one hunk, and asks for the region from the line above the cursor
    prompt = engine.detokenize(engine.prompts[0])
    assert "@@ -2,1 +2,1 @@\n-    total = 0\n+    amount = 0\n" in prompt
    assert region_of(prompt) == text
    req = seen[0]
    assert req.rewrite_source == engine.tokenize(text) and req.stop == ("```",) and req.speculative
    assert req.max_tokens > len(req.rewrite_source)
    s = ne.summary()
    assert (s["requested"], s["proposed"], s["empty"], s["dropped"], s["filtered"]) == (1, 1, 0, 0, {})
    assert s["latency_ms_p50"] is not None and s["documents"] == 1
    # asked again for the same version: the proposal kept, no generation
    assert await ne.ask(URI, text, 7, 1, "orders.py", "python") is p and ne.cached(URI, 7) is p
    assert len(engine.generations) == 1


@pytest.mark.parametrize("answer, why", [
    (lambda prompt: "```", "deletion"),                                    # nothing written
    (rewrite(lambda region: region.split("\n")[0] + "\n"), "deletion"),     # all lines but the first deleted
    (rewrite(lambda region: region), "copy"),                               # the region unchanged
    (rewrite(lambda region: region.replace("amount = 0", "total = 0")), "undo"),
    (rewrite(lambda region: region.replace("return total", "return }} ((")), "syntax"),
])
async def test_an_answer_refused_is_none_and_the_counts_say_why(setup, answer, why):
    ne, engine, _ = setup(answer)
    text = renamed(ne)
    assert await ne.ask(URI, text, 1, 1, "orders.py", "python") is None
    s = ne.summary()
    assert (s["requested"], s["proposed"], s["empty"], s["filtered"]) == (1, 0, 1, {why: 1})
    assert len(engine.generations) == 1 and ne.cached(URI, 1) is None


async def test_nothing_edited_or_a_stale_text_asks_the_model_nothing(setup):
    ne, engine, _ = setup()
    ne.opened(URI, DOC)
    assert await ne.ask(URI, DOC, 1, 1, "orders.py", "python") is None           # no edit to follow
    text = renamed(ne)
    assert await ne.ask(URI, DOC, 2, 1, "orders.py", "python") is None           # not the text it has
    assert await ne.ask("file:///t/other.py", text, 1, 1, "other.py", "python") is None   # never opened
    assert engine.generations == [] and ne.summary()["empty"] == 3


async def test_without_models_nothing_is_asked(setup):
    ne, engine, model = setup()
    text = renamed(ne)
    model.pipeline = None
    assert await ne.ask(URI, text, 1, 1, "orders.py", "python") is None
    assert engine.generations == []


async def test_an_edit_while_the_prediction_waits_cancels_it(setup):
    ne, engine, model = setup()
    text = renamed(ne)
    release = hold(model)
    try:
        asked = asyncio.ensure_future(ne.ask(URI, text, 1, 1, "orders.py", "python"))
        assert await until(lambda: len(model.queue) == 2)
        ne.edited(URI, text.replace("for order", "for o"))   # the user typed on
        assert ne.summary()["dropped"] == 1
    finally:
        release.set()
    assert await asyncio.wait_for(asked, 10) is None
    assert engine.generations == [] and engine.cancels == []   # it never started
    s = ne.summary()
    assert (s["proposed"], s["empty"], s["dropped"]) == (0, 0, 1)


async def test_an_edit_while_the_prediction_runs_stops_it(setup):
    ne, engine, _ = setup(step_s=0.02)   # a character each 20 ms: the answer takes about 3 s
    text = renamed(ne)
    asked = asyncio.ensure_future(ne.ask(URI, text, 1, 1, "orders.py", "python"))
    assert await until(lambda: engine.generations)   # its prompt is in: it is writing
    ne.edited(URI, text.replace("for order", "for o"))
    assert await asyncio.wait_for(asked, 10) is None
    assert engine.cancelled == 1   # stopped while writing (the engine's cancel), not run to its end
    s = ne.summary()
    assert (s["proposed"], s["empty"], s["dropped"], s["filtered"]) == (0, 0, 1, {})


async def test_a_completion_request_posted_meanwhile_runs_first(setup):
    ne, engine, model = setup()
    text = renamed(ne)
    ran: list[str] = []
    generate = engine.generate
    engine.generate = lambda req, cancel=None: ran.append("next edit") or generate(req, cancel)
    release = hold(model)
    try:
        asked = asyncio.ensure_future(ne.ask(URI, text, 1, 1, "orders.py", "python"))
        assert await until(lambda: len(model.queue) == 2)
        assert model.queue.kinds() == {"request": 1, "next_edit": 1}
        request = model.queue.post(Task(TaskKind.REQUEST, lambda models: ran.append("completion")))
    finally:
        release.set()
    p = await asyncio.wait_for(asked, 10)
    request.future.result(5)
    assert ran == ["completion", "next edit"]
    assert p is not None and (p.edit.start, p.edit.end) == (3, 5)


async def test_a_completion_request_stops_a_running_prediction(setup):
    """The service's completion trail has the queue stop the work nobody waits for first (queue.yield_to): a
    rewrite holding the model thread for seconds stops, and its ask answers nothing (through the service:
    test_model_tasks.py)."""
    ne, engine, model = setup(step_s=0.05)
    text = renamed(ne)
    asked = asyncio.ensure_future(ne.ask(URI, text, 1, 1, "orders.py", "python"))
    assert await until(lambda: model.queue.kinds() == {"next_edit": 1} and engine.generations)
    ne.yielded(model.queue.yield_to("file:///t/other.py"))
    assert await asyncio.wait_for(asked, 10) is None
    assert engine.cancelled == 1 and ne.summary()["yielded"] == 1 and ne.summary()["proposed"] == 0


async def test_a_new_ask_for_the_document_replaces_the_one_waiting(setup):
    ne, engine, model = setup()
    text = renamed(ne)
    release = hold(model)
    try:
        first = asyncio.ensure_future(ne.ask(URI, text, 1, 1, "orders.py", "python"))
        assert await until(lambda: len(model.queue) == 2)
        second = asyncio.ensure_future(ne.ask(URI, text, 1, 3, "orders.py", "python"))
        assert await until(lambda: len(model.queue) == 3)
    finally:
        release.set()
    assert await asyncio.wait_for(first, 10) is None    # cancelled: it leaves when the model thread is free
    p = await asyncio.wait_for(second, 10)
    assert p is not None and p.id == "ne-1" and len(engine.generations) == 1
    assert ne.summary()["requested"] == 2 and ne.summary()["proposed"] == 1


async def test_accepted_and_dismissed_count_once_and_unknown_ids_are_refused(setup):
    ne, engine, _ = setup()
    text = renamed(ne)
    p = await ne.ask(URI, text, 1, 1, "orders.py", "python")
    assert ne.accepted(p.id)
    assert not ne.accepted(p.id) and not ne.dismissed(p.id)   # settled already
    assert not ne.accepted("ne-999") and not ne.dismissed("bogus")
    assert ne.cached(URI, 1) is None
    # the edit applied, a next proposal, dismissed
    after = text.replace("total", "amount")
    ne.edited(URI, after.replace("def summarize(orders)", "def summarize(orders, tax)"))
    assert ne.cached(URI, 1) is None
    engine.answer = rewrite(lambda region: region.replace("return amount", "return amount * (1 + tax)"))
    q = await ne.ask(URI, ne.histories.get(URI).text, 2, 0, "orders.py", "python")
    assert q is not None and q.id == "ne-2" and q.edit.text == "    return amount * (1 + tax)\n"
    assert ne.dismissed(q.id) and not ne.dismissed(q.id) and not ne.accepted(q.id)
    s = ne.summary()
    assert (s["proposed"], s["accepted"], s["dismissed"]) == (2, 1, 1)


async def test_an_edit_forgets_the_proposal_for_the_text_before_it(setup):
    ne, _, _ = setup()
    text = renamed(ne)
    p = await ne.ask(URI, text, 1, 1, "orders.py", "python")
    assert ne.cached(URI, 1) is p
    ne.edited(URI, text + "\n")
    assert ne.cached(URI, 1) is None and ne.summary()["dropped"] == 0   # nothing was running


async def test_close_forgets_the_document_and_stops_its_prediction(setup):
    ne, engine, _ = setup(step_s=0.02)
    text = renamed(ne)
    asked = asyncio.ensure_future(ne.ask(URI, text, 1, 1, "orders.py", "python"))
    assert await until(lambda: engine.generations)
    ne.closed(URI)
    assert await asyncio.wait_for(asked, 10) is None and engine.cancelled == 1
    assert ne.histories.get(URI) is None and ne.summary()["documents"] == 0
    assert await ne.ask(URI, text, 1, 1, "orders.py", "python") is None   # no history: nothing to follow
    assert len(engine.generations) == 1


async def test_a_crlf_document_gets_its_edit_with_crlf_lines(setup):
    """The model writes "\\n": it is shown the text with "\\n" ends, and the edit gets the document's back."""
    ne, engine, _ = setup()
    crlf = DOC.replace("\n", "\r\n")
    ne.opened(URI, crlf)
    text = crlf.replace("    total = 0", "    amount = 0")
    ne.edited(URI, text)
    p = await ne.ask(URI, text, 1, 1, "orders.py", "python")
    assert "\r" not in engine.detokenize(engine.prompts[0])
    assert p is not None and (p.edit.start, p.edit.end) == (3, 5)
    assert p.edit.text == "        amount += order.price\r\n    return amount\r\n"
    assert p.edit.old_text == "".join(text.splitlines(keepends=True)[3:5])


async def test_a_request_the_client_cancels_stops_its_generation(setup):
    ne, engine, model = setup(step_s=0.02)   # the answer takes about 3 s
    text = renamed(ne)
    asked = asyncio.ensure_future(ne.ask(URI, text, 1, 1, "orders.py", "python"))
    assert await until(lambda: engine.generations)
    asked.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asked
    assert await until(lambda: engine.cancelled == 1 and len(model.queue) == 0)
    ne.edited(URI, text + "\n")
    assert ne.summary()["dropped"] == 0   # nothing of it was left running


@pytest.mark.parametrize("gap, proposed", [(0.2, False), (4.0, True)])
async def test_an_edit_the_model_was_unsure_of_is_not_proposed(setup, gap, proposed):
    """The margin where the answer leaves the region's text decides (the margins come from the engine)."""
    from lsp_server.context.edits import EditHistory
    from lsp_server.service.next_edit import rewrite
    _, engine, _ = setup()
    history = EditHistory(DOC)
    history.record(RENAMED)
    generate = engine.generate

    def with_margins(req, cancel=None):
        assert req.record_margins
        gen = generate(req, cancel)
        gen.margins = [gap] * len(gen.tokens)
        return gen

    engine.generate = with_margins
    p = rewrite(engine, RENAMED, 1, history.diff("orders.py"), history.recent(), "orders.py", "python",
                min_margin=1.0)
    assert p.margin == gap
    assert (p.edit is not None) == proposed
    assert p.dropped == (None if proposed else "unsure")


@pytest.mark.repeat_path
async def test_a_rename_is_repeated_where_the_target_agrees_and_nothing_is_rewritten(setup):
    """The rename's repeat is a candidate; the target (scripted: it fills each hole as the renamed file has it)
    agrees at each of its places, and no free rewrite is asked."""
    want = RENAMED.replace("total", "amount")
    ne, engine, _ = setup(fim_answer=fills(want))
    text = renamed(ne)
    p = await ne.ask(URI, text, 3, 1, "orders.py", "python")
    assert p is not None and p.edit.text == "        amount += order.price\n    return amount\n"
    assert len(engine.prompts) == 2 and all(t[-1] == FIM.middle for t in engine.prompts)   # two checks, no rewrite
    s = ne.summary()
    assert (s["proposed"], s["from_repeat"], s["from_model"]) == (1, 1, 0)
    assert s["checks"] == {"repeat_agreed": 1}


@pytest.mark.repeat_path
async def test_a_candidate_the_target_disagrees_with_is_not_proposed_nor_is_a_rewrite_asked(setup):
    ne, engine, _ = setup(fim_answer=lambda prefix, suffix: "total")   # the target keeps the old name
    text = renamed(ne)
    assert await ne.ask(URI, text, 3, 1, "orders.py", "python") is None
    assert len(engine.prompts) == 1 and engine.prompts[0][-1] == FIM.middle   # one check, refused: no rewrite
    s = ne.summary()
    assert s["proposed"] == 0 and s["filtered"] == {"disagreed": 1} and s["checks"] == {"repeat_disagreed": 1}
    assert await ne.ask(URI, text, 3, 1, "orders.py", "python") is None   # remembered for the version
    assert len(engine.prompts) == 1 and ne.summary()["remembered"] == 1


@pytest.mark.repeat_path
async def test_a_change_with_no_candidate_asks_the_model_to_rewrite(setup):
    ne, engine, _ = setup()
    ne.opened(URI, DOC)
    ne.edited(URI, DOC.replace("def summarize(orders):", "def summarize(orders, tax):"))
    await ne.ask(URI, DOC.replace("def summarize(orders):", "def summarize(orders, tax):"), 2, 0, "orders.py",
                 "python")
    assert len(engine.generations) == 1 and engine.prompts[0][-1] != FIM.middle


@pytest.mark.repeat_path
async def test_new_lines_only_ask_the_model_nothing(setup):
    """Lines added (new code being typed) have no candidate here, and the free rewrite is not worth asking: the
    model thread is not held at all."""
    ne, engine, model = setup()
    ne.opened(URI, DOC)
    typed = DOC + "\n\ndef helper(x):\n    return x\n"
    ne.edited(URI, typed)
    assert await ne.ask(URI, typed, 2, 8, "orders.py", "python") is None
    assert engine.generations == [] and ne.summary()["filtered"] == {"new_code": 1}
