"""The service's job registry (service/jobs.py) and the prefetch's choices (service/prefetch.py), with plans from
the scripted engine: which job a request joins, which ones it supersedes and how much of their prompts they keep,
what an edit stops (a close, a reload or another document's request stops tasks through the model thread's queue:
test_queue.py). No model file (make check)."""
from __future__ import annotations

import asyncio

import pytest

from lsp_server.context import Document
from lsp_server.engine import Generation, StopReason
from lsp_server.pipeline import CompletionRequest, Pipeline
from lsp_server.service.job import Job
from lsp_server.service.jobs import Jobs
from lsp_server.service.prefetch import after_accept, worth_it
from lsp_server.service.settings import Settings
from scripted import ScriptedEngine

pytestmark = pytest.mark.asyncio

TEXT = "def area(w, h):\n    \n\nprint(area(2, 3))\n"


def pipeline() -> Pipeline:
    s = Settings()
    return Pipeline(ScriptedEngine(lambda prefix: "return w * h\n"), s.prompt_budget(), s.fast_prefix_tokens)


def plan_at(p: Pipeline, text: str, line: int, col: int):
    return p.plan(CompletionRequest(Document("/t/area.py", text, "python"), line, col))


def job(uri: str, plan, partial: str = "", waiters: int = 0, base: str | None = None) -> Job:
    j = Job(uri, plan, base)
    j.future = asyncio.get_running_loop().create_future()   # running
    j.partial, j.waiters = partial, waiters
    return j


async def test_a_request_joins_the_job_it_extends_and_supersedes_the_others_keeping_what_prompts_share():
    p = pipeline()
    here = plan_at(p, TEXT, 1, 4)
    writing = job("a", here, partial="return w * h")
    elsewhere = job("a", plan_at(p, TEXT.replace("    \n", "    x = 1\n    \n", 1), 2, 4))
    jobs = Jobs()
    jobs.add(writing)
    jobs.add(elsewhere)
    typed = plan_at(p, TEXT.replace("    \n", "    return \n", 1), 1, 11)
    assert jobs.join_or_supersede("a", typed) is writing
    assert not writing.cancel.is_set()
    assert elsewhere.cancel.is_set()
    shared = 0
    for x, y in zip(elsewhere.plan.prompt.tokens, typed.prompt.tokens):
        if x != y:
            break
        shared += 1
    assert 0 < elsewhere.cancel.keep_until == shared < len(typed.prompt.tokens)
    # typed against what it writes: nothing to join, every job superseded
    other = plan_at(p, TEXT.replace("    \n", "    print\n", 1), 1, 9)
    assert jobs.join_or_supersede("a", other) is None and writing.cancel.is_set()


async def test_an_edit_stops_the_jobs_it_leaves_behind_keeping_the_lines_above_where_they_are_unchanged():
    p = pipeline()
    plan = plan_at(p, TEXT, 1, 4)
    writing = job("a", plan, partial="return w * h")
    jobs = Jobs()
    jobs.add(writing)
    jobs.edited("a", TEXT.replace("    \n", "    ret\n", 1), lambda pl: 7)   # typed what it writes
    assert not writing.cancel.is_set()
    jobs.edited("a", TEXT.replace("    \n", "    pass\n", 1), lambda pl: 7)  # another way, same lines above
    assert writing.cancel.is_set() and writing.cancel.keep_until == 7
    above = job("a", plan, partial="return w * h")
    jobs.add(above)
    jobs.edited("a", "# new\n" + TEXT, lambda pl: 7)                            # a line above changed
    assert above.cancel.is_set() and above.cancel.keep_until == 0


async def test_the_registry_counts_and_removes_by_document():
    p = pipeline()
    plan = plan_at(p, TEXT, 1, 4)
    a1, a2, b = job("a", plan), job("a", plan), job("b", plan)
    jobs = Jobs()
    for j in (a1, a2, b):
        jobs.add(j)
    assert len(jobs) == 3 and jobs.has("a") and jobs.of("a") == [a1, a2]
    jobs.remove(a1)
    jobs.remove(a2)
    jobs.remove(a2)   # twice: no error
    assert not jobs.has("a") and len(jobs) == 1 and list(jobs) == [b]


async def test_a_prefetch_asks_where_the_shown_block_ends_and_only_after_a_block_the_model_did_not_end():
    p = pipeline()
    plan = plan_at(p, TEXT, 1, 4)
    req = after_accept(plan, "x = w\n    ")
    assert req.document.text == TEXT.replace("    \n", "    x = w\n    \n", 1)
    assert (req.line, req.col) == (2, 4)
    gen = lambda reason: Generation("x = w\n", [1], reason, 0, 0, 0.0, 0.0, 1)
    block = plan
    assert block.mode.multiline, block.mode
    assert worth_it(block, "x = w\n", gen(StopReason.LENGTH))
    assert not worth_it(block, "x = w\n", gen(StopReason.EOG))       # the model ended the hole
    assert not worth_it(block, "", gen(StopReason.LENGTH))       # nothing was shown
    assert not worth_it(block, "x = w\n", None)                      # an early answer: the generation goes on
