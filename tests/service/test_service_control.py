"""The service's control logic with a scripted engine (tests/scripted.py): answers, the typing cache, supersede,
joining a running generation, the fill pre-empted by a request, background tasks that fail. No model file: this is
`make check`'s tier; the same paths run with the real models in test_server*.py."""
from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import replace

import pytest

from lsp_server.context import Document
from lsp_server.pipeline import CompletionRequest, Pipeline
from lsp_server.service.queue import TaskKind
from lsp_server.service.scheduler import CompletionService
from lsp_server.service.settings import Settings
from scripted import FIM, ScriptedEngine, scripted_service

pytestmark = pytest.mark.asyncio

TEXT = "def area(w, h):\n    \n\nprint(area(2, 3))\n"
URI = "file:///t/area.py"


def service(answer=lambda prefix: "return w * h\n", warmup_pause_ms: int = -1,
            **kw) -> tuple[CompletionService, ScriptedEngine]:
    # eager: these tests are of the scheduling; what the gate and the predictor hold back is test_gate.py's
    return scripted_service(answer, "eager", warmup_pause_ms, **kw)


def request(text: str = TEXT, line: int = 1, col: int = 4) -> CompletionRequest:
    return CompletionRequest(Document("/t/area.py", text, "python"), line, col)


async def test_an_answer_then_the_same_place_from_the_cache():
    svc, engine = service()
    first = await svc.complete(URI, request())
    assert (first.text, first.source) == ("return w * h", "model")
    again = await svc.complete(URI, request())
    assert (again.text, again.source) == ("return w * h", "cache")
    assert len(engine.generations) == 1


async def test_typing_through_the_answer_is_served_from_the_cache():
    svc, engine = service()
    await svc.complete(URI, request())
    typed = TEXT.replace("    \n", "    return \n", 1)
    got = await svc.complete(URI, request(typed, 1, 11))
    assert (got.text, got.source) == ("w * h", "cache")
    assert len(engine.generations) == 1


async def test_an_answer_from_the_cache_asks_the_engine_nothing_on_the_event_loop():
    """The window's cache is looked at before the engine is asked what it holds (a round trip on the event loop
    when the engine is shared): with the prompt budget on, typing through an answer calls `cached` only from
    the context thread's planning."""
    import threading
    svc, engine = service()
    svc.settings = replace(svc.settings, prompt_budget_ms=700)
    calls: list[str] = []
    asked = engine.cached
    engine.cached = lambda tokens: calls.append(threading.current_thread().name) or asked(tokens)
    first = await svc.complete(URI, request())
    assert first.source == "model"
    loop_thread = threading.current_thread().name
    assert loop_thread in calls   # the model's answer did ask on the loop (too_far)
    calls.clear()
    got = await svc.complete(URI, request(TEXT.replace("    \n", "    return \n", 1), 1, 11))
    assert (got.text, got.source) == ("w * h", "cache")
    assert calls and loop_thread not in calls, calls


async def test_a_block_cut_by_the_token_limit_prefetches_what_follows_it_and_the_accept_finds_it_in_the_cache():
    script = {"    ": "x = w * h\n    y = x + 1\n    return y\n"}

    def answer(prefix: str) -> str:
        return next((v for k, v in script.items() if prefix.endswith(k)), "") if "x = w" not in prefix \
            else "\n    return x\n"

    svc, engine = service(answer=answer)
    svc.apply(replace(svc.settings, prefetch=True, max_tokens=20))
    first = await svc.complete(URI, request())
    assert first.source == "model" and first.text.startswith("x = w * h"), first
    for _ in range(200):   # the prefetch runs in the background
        if svc.stats.prefetches:
            break
        await asyncio.sleep(0.01)
    assert svc.stats.prefetches == 1 and len(engine.generations) == 2
    assert engine.generations[1].endswith(first.text)
    at = TEXT.index("    \n") + 4
    accepted = TEXT[:at] + first.text + TEXT[at:]
    before = accepted[:at + len(first.text)]
    got = await svc.complete(URI, request(accepted, before.count("\n"), len(before) - before.rfind("\n") - 1))
    assert got.source == "cache" and got.text.strip() == "return x", got
    assert len(engine.generations) == 2


async def test_a_newer_request_supersedes_the_older_one():
    svc, engine = service(token_s=0.002)    # a prompt of ~50 tokens: 0.1 s
    older = asyncio.ensure_future(svc.complete(URI, request()))
    await asyncio.sleep(0.02)
    typed = TEXT.replace("    \n", "    r\n", 1)
    newer = await svc.complete(URI, request(typed, 1, 5))
    old = await older
    assert old.source == "superseded" and old.text == ""
    assert newer.source in ("model", "reuse") and newer.text


async def test_a_request_that_typed_what_the_generation_writes_joins_it():
    svc, engine = service(step_s=0.02)       # 12 characters: about 0.25 s of generation
    first = asyncio.ensure_future(svc.complete(URI, request()))
    while not engine.generations:
        await asyncio.sleep(0.005)
    await asyncio.sleep(0.08)                # a few characters written
    typed = TEXT.replace("    \n", "    re\n", 1)
    got = await svc.complete(URI, request(typed, 1, 6))
    assert got.source == "reuse" and got.text == "turn w * h", got
    await first
    assert len(engine.generations) == 1      # no second generation


async def test_background_work_yields_to_other_windows_until_a_request_waits_for_it():
    """A generation nobody waits for (a prefetch, an offer) is marked so that another window's request stops it
    in a shared engine (`Cancel.yields`); a request that joins it takes the mark off; a request's own generation
    never has it."""
    svc, engine = service(step_s=0.02)
    plan = svc.pipeline.plan(request())
    job = svc.start_job(URI, plan, TaskKind.OFFER)
    while not engine.cancels:
        await asyncio.sleep(0.005)
    assert engine.cancels[0] == (job.cancel, True)
    joined = asyncio.ensure_future(svc.complete(URI, request()))
    await asyncio.sleep(0.05)
    assert job.cancel.yields is False
    got = await joined
    assert got.source == "reuse" and got.text == "return w * h", got
    other = TEXT.replace("area", "volume")   # another document: a request's own generation
    got = await svc.complete("file:///t/volume.py", CompletionRequest(Document("/t/volume.py", other, "python"),
                                                                       1, 4))
    assert got.source == "model" and len(engine.cancels) == 2 and engine.cancels[1][1] is False, engine.cancels


async def test_a_request_pre_empts_the_fill_and_the_fill_goes_on_afterwards():
    long = "\n".join(f"x{i} = {i}" for i in range(400)) + "\n" + TEXT
    svc, engine = service(warmup_pause_ms=10, token_s=0.001)   # the page: ~800 tokens, 0.8 s
    svc.schedule_warmup(URI, request(long, 0, 0))              # opened at its top: the fill starts there
    while svc.filler.step is None:
        await asyncio.sleep(0.005)
    got = await svc.complete(URI, request(long, 401, 4))
    assert got.text == "return w * h" and got.source == "model"
    assert svc.filler.stats.preempted == 1
    runs = svc.filler.stats.runs
    for _ in range(200):                                        # idle again: the fill takes up the new place
        if svc.filler.stats.runs > runs:
            break
        await asyncio.sleep(0.01)
    assert svc.filler.stats.runs > runs


def suffix_len(tokens: list[int]) -> int:
    return tokens.index(FIM.middle) - tokens.index(FIM.suffix) - 1


async def test_the_suffix_is_longer_at_rest_than_while_typing():
    below = "".join(f"print(area({i}, {i}))\n" for i in range(20))
    text = "def area(w, h):\n    \n\n" + below
    svc, engine = service(answer=lambda prefix: "zz\n")    # never what is typed next: no answer from the cache
    svc.apply(replace(svc.settings, suffix_tokens_at_rest=128))
    await svc.complete(URI, request(text))                  # arrived here: at rest
    typed = text.replace("    \n", "    r\n", 1)
    await svc.complete(URI, request(typed, 1, 5))           # a keystroke at once: typing
    rest, typing = (suffix_len(p) for p in engine.prompts)
    settings = svc.settings
    assert typing <= settings.suffix_tokens_in_block < rest <= settings.suffix_tokens_at_rest, (rest, typing)


async def test_a_failing_background_task_is_logged_and_counted(caplog):
    svc, _ = service()

    async def broken():
        raise RuntimeError("boom")

    with caplog.at_level(logging.ERROR, logger="tandem.service"):
        task = svc.tasks.spawn(broken(), "a test task")
        with pytest.raises(RuntimeError):
            await task
        await asyncio.sleep(0)
    assert svc.tasks.failures == 1 and len(svc.tasks) == 0
    assert any("a test task failed: boom" in r.getMessage() for r in caplog.records)


async def test_a_fill_whose_planning_fails_is_logged_at_warning_with_its_stage_and_counted(caplog):
    """A planning bug in the fill does not vanish at the default log level: a warning that names the stage, and
    `failures` in tandem/stats."""
    svc, engine = service(warmup_pause_ms=0)

    def broken(req, view=False):
        raise IndexError("a planning bug")
    svc.filler.steps = broken
    with caplog.at_level(logging.WARNING, logger="tandem.fill"):
        svc.schedule_warmup(URI, request())
        assert await until(lambda: svc.stats.failures.get("fill.plan") == 1, 5.0), svc.stats.failures
    svc.filler.stop()
    assert svc.summary()["failures"] == {"fill.plan": 1} and not engine.generations
    assert any(r.levelno == logging.WARNING and "fill.plan" in r.getMessage() and "a planning bug" in r.getMessage()
               for r in caplog.records), caplog.records



async def test_a_far_place_fills_the_fast_prompt_twice_the_quick_size_first_and_then_answers_from_it():
    long = "\n".join(f"value_{i} = compute({i}, {i + 1})" for i in range(300)) + "\n" + TEXT
    svc, engine = service(token_s=0.001)
    svc.apply(replace(svc.settings, prompt_budget_ms=50))   # 50 tokens: the page (~1,000) is too far
    req = request(long, 301, 4)
    plan = svc.pipeline.plan(req)
    assert svc.too_far(plan)
    quick, twice, _ = (svc.pipeline.plan_fast(plan, n) for n in svc.pipeline.fast_sizes())
    steps = svc.filler.steps(req)
    assert steps[0].name == "fast" and steps[0].tokens == twice.prompt.tokens
    # the quick one is never filled (a page this short leaves out the longest one too: it fills soon)
    assert all(s.tokens != quick.prompt.tokens for s in steps)
    assert [s.name for s in steps[:2]] == ["fast", "page"]
    # nothing cached: the one with least to evaluate (the quick one) answers
    assert svc.model.choose_prompt(plan).prompt.tokens == quick.prompt.tokens
    # once the fill has evaluated the one twice as long, it fits the budget and answers instead
    engine.prewarm(steps[0].tokens)
    assert svc.model.choose_prompt(plan).prompt.tokens == twice.prompt.tokens


async def test_a_screen_read_away_from_the_cursor_fills_its_pages_and_the_cursor_is_the_focus_again_on_return():
    """tandem/visibleRanges after a scroll: where the cursor is not on the screen, the fill prepares the pages at
    the screen's middle (no fast prompt, no prompt at that one line, no answer to offer); where it is, nothing
    changes, and a screen with the cursor on it after reading elsewhere makes the cursor the focus again."""
    long = "\n".join(f"value_{i} = compute({i}, {i + 1})" for i in range(300)) + "\n" + TEXT
    svc, engine = service(warmup_pause_ms=10, token_s=0.0005)
    svc.apply(replace(svc.settings, prompt_budget_ms=50))   # the page (~1,000 tokens) is far from cached
    middle = request(long, 301, 4)
    assert [s.name for s in svc.filler.steps(middle)][:2] == ["fast", "page"]
    viewed = svc.filler.steps(middle, view=True)
    assert viewed and not {s.name for s in viewed} & {"fast", "prompt"} and viewed[0].name == "page"
    filled: list[list[int]] = []   # what the fill evaluated to its end
    prewarm = engine.prewarm
    engine.prewarm = lambda tokens, cancel=None, **kw: (
        n := prewarm(tokens, cancel, **kw), filled.append(tokens) if not (cancel and cancel.is_set()) else None)[0]
    top = request(long, 0, 0)
    svc.schedule_warmup(URI, top)               # opened at its top (as the protocol stage does)
    svc.viewed(URI, 0, 40, lambda: pytest.fail("the screen with the cursor on it built a request"))
    assert svc.filler.stats.views == 0 and svc.filler.focus == (URI, top) and not svc.filler.viewing
    svc.viewed(URI, 281, 320, lambda: middle)           # scrolled down: the cursor is off the screen
    assert svc.filler.stats.views == 1 and svc.filler.focus == (URI, middle) and svc.filler.viewing
    page = viewed[0].tokens
    assert await until(lambda: page in filled, 30), svc.filler.summary()
    assert svc.filler.stats.tokens["fast"] == 0 and svc.filler.stats.tokens["prompt"] == 0
    assert svc.offers.stats.generated == 0 and not engine.generations
    svc.viewed(URI, 0, 40, lambda: request(long, 20, 0))   # back to the cursor's screen
    assert svc.filler.focus == (URI, top) and not svc.filler.viewing and svc.filler.stats.views == 1
    svc.filler.stop()


async def test_the_long_suffix_at_rest_is_taken_only_where_it_is_cached():
    """At rest the page's prompt has the longer suffix (suffixTokensAtRest); a request arriving before the fill
    evaluated it takes the same page with the typing suffix, which shares its start, not a fast prompt; the fast
    prompts keep the typing suffix (they are for an answer now)."""
    above = "\n".join(f"value_{i} = compute({i}, {i + 1})" for i in range(300)) + "\n"
    below = "".join(f"print(area({i}, {i}))\n" for i in range(40))
    text = above + "def area(w, h):\n    \n\n" + below
    svc, engine = service(token_s=0.001)
    svc.apply(replace(svc.settings, prompt_budget_ms=100, suffix_tokens_at_rest=128))   # 100 tokens a request
    req = replace(request(text, 301, 4), at_rest=True)
    plan = svc.pipeline.plan(req)
    short = svc.pipeline.plan_typing(plan)
    assert short is not plan and suffix_len(short.prompt.tokens) < suffix_len(plan.prompt.tokens)
    assert short.prompt.tokens[:short.prompt.tokens.index(FIM.suffix)] == \
        plan.prompt.tokens[:plan.prompt.tokens.index(FIM.suffix)]
    assert all(suffix_len(svc.pipeline.plan_fast(plan, n).prompt.tokens) == suffix_len(short.prompt.tokens)
               for n in svc.pipeline.fast_sizes())
    steps = {s.name: s for s in svc.filler.steps(req)}
    # the fill prepares the request at rest, and keeps all of it where the pages filled next overwrite it
    assert steps["prompt"].tokens == plan.prompt.tokens and steps["prompt"].keep == len(plan.prompt.tokens)
    # the page is evaluated, its long suffix not yet: the page with the typing suffix answers
    engine.prewarm(steps["page"].tokens)
    assert svc.too_far(plan) and not svc.too_far(short)
    assert svc.model.choose_prompt(plan).prompt.tokens == short.prompt.tokens
    # once the fill has evaluated the long one, the request takes it
    engine.prewarm(steps["prompt"].tokens)
    assert not svc.too_far(plan)
    # while typing there is one suffix: the plan is its own typing plan
    typing = svc.pipeline.plan(replace(req, at_rest=False))
    assert svc.pipeline.plan_typing(typing) is typing
    svc.apply(replace(svc.settings, suffix_tokens_at_rest=0))   # no longer suffix: the page's stable part is kept
    plan = svc.pipeline.plan(req)
    assert svc.pipeline.plan_typing(plan) is plan
    assert {s.name: s for s in svc.filler.steps(req)}["prompt"].keep == plan.prompt.stable


async def test_code_right_of_the_cursor_is_skipped_unless_the_user_asked():
    svc, engine = service(answer=lambda prefix: "w")
    text = "def area(w, h):\n    return  * h\n"
    typing = await svc.complete(URI, request(text, 1, 11))
    assert (typing.text, typing.source) == ("", "skipped") and not engine.generations
    asked = replace(request(text, 1, 11), force=True)
    got = await svc.complete(URI, asked)
    assert (got.text, got.source) == ("w", "model") and len(engine.generations) == 1


async def test_the_fill_runs_without_the_service_and_waits_while_a_request_holds_the_model():
    """The fill depends on the model's state (model.Model) and two functions, not on the service: here a model
    of its own, a request pending, and no offers. Its steps are tasks on the model's queue."""
    from lsp_server.service.fill import Filler
    from lsp_server.service.model import Model
    from lsp_server.service.stats import ServerStats
    from lsp_server.service.tasks import Background

    settings = Settings(warmup_pause_ms=0, prompt_budget_ms=-1)
    engine = ScriptedEngine(lambda prefix: "", token_s=0.0002)
    pending = [True]

    async def no_offer(uri, req) -> bool:
        return False

    model = Model(ServerStats())
    try:
        model.settings = settings
        model.pipeline = Pipeline(engine, settings.prompt_budget(), settings.fast_prefix_tokens)
        filler = Filler(model, Background(), pending=lambda: pending[0], offer=no_offer)
        req = request()
        filler.want(URI, req)
        await asyncio.sleep(0.2)
        assert filler.stats.runs == 0 and engine.target.counters.evaluated == 0   # a request holds the model
        pending[0] = False
        filler.kick()
        for _ in range(200):
            if filler.stats.runs and not filler._running:
                break
            await asyncio.sleep(0.01)
        prompt = model.pipeline.plan(replace(req, at_rest=True)).prompt
        assert filler.stats.runs == 1 and engine.cached(prompt.tokens) >= prompt.stable   # filled for the cursor
        assert model.stats.warmup_tokens == engine.target.counters.evaluated > 0
    finally:
        model.shutdown()


# ---- the better answer, offered (service/offer.py) ---------------------------------------------------------------

FAR = "".join(f"value_{i} = compute({i}, {i + 1})\n" for i in range(300))
MARK = "MARKER = 1\n"   # far enough above the cursor to be in the page's prompt and in no fast prompt's


def far_text() -> tuple[str, int]:
    above = FAR + MARK + "".join(f"total_{i} = {i}\n" for i in range(24))
    return above + TEXT, above.count("\n") + 1


def page_or_fast(page: str, fast: str):
    return lambda prefix: page if MARK in prefix else fast


async def until(cond, timeout_s: float = 20.0) -> bool:
    for _ in range(int(timeout_s / 0.01)):
        if cond():
            return True
        await asyncio.sleep(0.01)
    return cond()


def offering(answer, **kw) -> tuple[CompletionService, ScriptedEngine, list]:
    svc, engine = service(answer, warmup_pause_ms=10, token_s=0.0005, by_prompt=True, **kw)
    svc.apply(replace(svc.settings, prompt_budget_ms=50))   # 100 tokens a request: the page (~1,000) is far
    told: list = []
    svc.offers.notify = lambda uri, req: told.append((uri, req.line, req.col))
    return svc, engine, told


async def test_where_a_fast_answer_is_shown_the_pages_answer_is_offered_and_the_cache_gives_it():
    text, line = far_text()
    svc, engine, told = offering(page_or_fast("return w * h\n", "return 0\n"))
    plan = svc.pipeline.plan(request(text, line, 4))
    assert MARK in engine.detokenize(plan.prompt.tokens) and all(MARK not in engine.detokenize(svc.pipeline.plan_fast(plan, n).prompt.tokens)
                                       for n in svc.pipeline.fast_sizes())
    first = await svc.complete(URI, request(text, line, 4))
    assert (first.text, first.source) == ("return 0", "fast")
    # the fill evaluates the page, then generates its answer there: it differs, so the client is told
    assert await until(lambda: told), svc.offers.summary()
    assert told == [(URI, line, 4)] and svc.offers.stats.offered == 1
    again = await svc.complete(URI, request(text, line, 4))   # the client asks again: the cache answers
    assert (again.text, again.source) == ("return w * h", "cache")
    assert await until(lambda: not svc.filler._running)
    assert told == [(URI, line, 4)]   # once


async def test_the_same_answer_or_none_from_the_page_is_not_offered():
    text, line = far_text()
    for page, counted in (("return 0\n", "same"), ("\n", "silent")):
        svc, engine, told = offering(page_or_fast(page, "return 0\n"))
        first = await svc.complete(URI, request(text, line, 4))
        assert first.source == "fast"
        assert await until(lambda: getattr(svc.offers.stats, counted) == 1), svc.offers.summary()
        assert told == [] and svc.offers.stats.offered == 0 and svc.offers.stats.generated == 1
        again = await svc.complete(URI, request(text, line, 4))
        assert (again.text, again.source) == ("return 0", "cache")


async def test_a_page_answer_is_not_offered_again_and_an_off_setting_offers_nothing():
    text, line = far_text()
    svc, engine, told = offering(page_or_fast("return w * h\n", "return 0\n"))
    svc.apply(replace(svc.settings, prompt_budget_ms=-1))    # the page always: nothing to offer
    got = await svc.complete(URI, request(text, line, 4))
    assert got.source == "model" and svc.offers.stats.waiting == 0
    svc, engine, told = offering(page_or_fast("return w * h\n", "return 0\n"))
    svc.apply(replace(svc.settings, prompt_budget_ms=50, offer_better=False))
    got = await svc.complete(URI, request(text, line, 4))
    assert got.source == "fast"
    await asyncio.sleep(1.5)   # the fill evaluates the page (~0.5 s) and stops there
    assert told == [] and svc.offers.stats.generated == 0 and len(engine.generations) == 1


async def test_a_move_elsewhere_stops_the_offer_and_tells_nothing():
    text, line = far_text()
    svc, engine, told = offering(page_or_fast("return w * h + w * h + w * h + w * h\n", "return 0\n"))
    engine.step_s = 0.05   # the page's answer takes ~2 s to write
    await svc.complete(URI, request(text, line, 4))
    assert await until(lambda: svc.offers._running is not None)
    svc.cursor_moved(URI, request(text, 10, 0))
    assert await until(lambda: svc.offers.stats.stopped == 1), svc.offers.summary()
    await asyncio.sleep(0.1)
    assert told == [] and svc.offers.stats.offered == 0


async def test_an_edit_at_the_place_before_the_offer_is_ready_stops_it_and_tells_nothing():
    text, line = far_text()
    svc, engine, told = offering(page_or_fast("return w * h + w * h + w * h + w * h\n", "return 0\n"))
    engine.step_s = 0.05
    await svc.complete(URI, request(text, line, 4))
    assert await until(lambda: svc.offers._running is not None)
    typed = text.replace("def area(w, h):\n    \n", "def area(w, h):\n    x\n", 1)
    svc.on_edit(URI, typed)                                  # as the protocol stage does after an edit
    svc.schedule_warmup(URI, request(typed, line, 5))
    assert await until(lambda: svc.offers.stats.stopped == 1), svc.offers.summary()
    assert told == []


# ---- an early answer completed (service/offer.py: Offers.early / finished) ---------------------------------------

BLOCK = "total = w * h\n    return total + w * h"


def early_service(answer: str = BLOCK + "\n") -> tuple[CompletionService, ScriptedEngine, list]:
    svc, engine = service(lambda prefix: answer, step_s=0.03)   # ~1 s of generation: its first line is early
    svc.apply(replace(svc.settings, early_answer_ms=60))
    told: list = []
    svc.offers.notify = lambda uri, req: told.append((uri, req.line, req.col))
    return svc, engine, told


async def test_an_early_answer_is_completed_when_its_generation_ends_and_the_cache_gives_the_whole_line():
    svc, engine, told = early_service()
    first = await svc.complete(URI, request())
    assert (first.source, first.text) == ("model", "total = w * h"), first
    assert await until(lambda: told), svc.offers.summary()
    assert told == [(URI, 1, 4)] and svc.offers.stats.completed == 1 and svc.offers.stats.early == 1
    again = await svc.complete(URI, request())
    assert (again.text, again.source) == (BLOCK, "cache")
    assert len(engine.generations) == 1


async def test_an_early_answer_left_for_another_place_is_not_completed():
    svc, engine, told = early_service()
    first = await svc.complete(URI, request())
    assert first.text and svc.offers.stats.early == 1
    svc.schedule_warmup(URI, request(TEXT, 3, 0))   # the cursor moves to the last line
    assert await until(lambda: svc.offers.stats.early_kept == 1), svc.offers.summary()
    await asyncio.sleep(0.8)   # the generation's end
    assert told == [] and svc.offers.stats.completed == 0


def counting_steps(svc: CompletionService) -> list:
    """Every focus the fill works out steps for, in order."""
    seen, steps = [], svc.filler.steps

    def counted(req, view=False):
        seen.append(req)
        return steps(req, view)
    svc.filler.steps = counted
    return seen


async def test_an_edit_s_request_trims_the_running_fill_and_its_steps_are_not_worked_out_first():
    """While a fill runs, an edit's change is followed by its request: the request trims the running step, so the
    new focus's steps (a whole plan of the document, on the thread the request's plan waits for) are not worked
    out on the way; a cursor move, which no request may follow, trims the running step for the new focus."""
    from lsp_server.service.fill import REFOCUS_DELAY_S
    long = "\n".join(f"x{i} = {i}" for i in range(400)) + "\n" + TEXT
    svc, engine = service(warmup_pause_ms=10, token_s=0.001)   # the page: ~800 tokens, 0.8 s
    svc.schedule_warmup(URI, request(long, 0, 0))
    while svc.filler.step is None:
        await asyncio.sleep(0.005)
    seen = counting_steps(svc)
    typed = request(long.replace("x0 = 0", "x0 = 01"), 0, 7)
    svc.schedule_warmup(URI, typed, edit=True)                 # the change ...
    got = await svc.complete(URI, typed)                       # ... and its request
    assert got.text and typed not in seen, (got, seen)
    while svc.filler.step is None:                            # the fill again, for the request's place
        await asyncio.sleep(0.005)
    seen.clear()
    moved = request(long.replace("x0 = 0", "x0 = 01"), 200, 0)
    svc.cursor_moved(URI, moved)                               # a move no request follows
    await asyncio.sleep(REFOCUS_DELAY_S + 0.3)
    assert moved in seen
    svc.filler.stop()


async def test_a_move_is_filled_at_once_and_an_edit_after_the_pause():
    """The clients report a move once the cursor has rested, and no request follows it: its fill starts at once
    (the pause would only delay what a later request there finds evaluated), also where it comes while a fill for
    another place runs. An edit's request follows the edit: its fill waits for the pause (warmupPauseMs)."""
    long = "\n".join(f"x{i} = {i}" for i in range(400)) + "\n" + TEXT
    svc, engine = service(warmup_pause_ms=1500, token_s=0.001)   # the page: ~800 tokens, 0.8 s
    seen = counting_steps(svc)
    first = request(long, 100, 0)
    svc.cursor_moved(URI, first)
    assert await until(lambda: first in seen, 1.0), "a move's fill waited for the pause"
    while svc.filler.step is None:
        await asyncio.sleep(0.005)
    second = request(long, 350, 0)
    svc.cursor_moved(URI, second)                   # while the first place's fill runs
    assert await until(lambda: svc.filler.step is not None and svc.filler.focus == (URI, second)
                       and seen.count(second) >= 2, 1.0), seen   # its steps (the refocus), then its own fill
    svc.filler.stop()
    assert await until(lambda: not svc.filler.busy(), 5)
    runs = svc.filler.stats.runs
    typed = request(long.replace("x5 = 5", "x5 = 55"), 5, 6)
    svc.schedule_warmup(URI, typed, edit=True)
    await asyncio.sleep(0.5)
    assert svc.filler.stats.runs == runs and typed not in seen, "an edit's fill did not wait for the pause"
    assert await until(lambda: typed in seen, 3)
    svc.filler.stop()


async def test_a_move_while_the_fill_works_out_its_steps_takes_the_fill_to_the_new_place():
    """A move that arrives while a fill is still working out its steps (a large file's plan takes a while; no step
    runs yet, so there is none to trim) stops that fill before its first step: the old place is not filled."""
    long = "\n".join(f"x{i} = {i}" for i in range(400)) + "\n" + TEXT
    svc, engine = service(warmup_pause_ms=10, token_s=0.001)
    steps, planning = svc.filler.steps, []

    def slow(req, view=False):
        planning.append(req)
        if len(planning) == 1:
            time.sleep(0.3)
        return steps(req, view)
    svc.filler.steps = slow
    filled: list[list[int]] = []
    prewarm = engine.prewarm
    engine.prewarm = lambda tokens, cancel=None, **kw: (filled.append(tokens), prewarm(tokens, cancel, **kw))[1]
    old, new = request(long, 10, 0), request(long, 350, 0)
    svc.cursor_moved(URI, old)
    assert await until(lambda: planning, 1)
    svc.cursor_moved(URI, new)                      # while the old place's steps are worked out
    assert await until(lambda: filled, 5)
    new_steps = [s.tokens for s in steps(new)]
    assert planning[-1] is new and filled[0] == new_steps[0], (planning, len(filled))
    assert not [s for s in steps(old) if s.tokens not in new_steps and s.tokens in filled]
    svc.filler.stop()
