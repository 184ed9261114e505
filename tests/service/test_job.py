"""What a running generation has for a request (Job.take), with a stand-in plan and no model: a finished
line is answered at once, a long line or block early with its whole words or lines, and a request that
typed something else is told the job went another way."""
import asyncio
import time
from types import SimpleNamespace

from lsp_server.context.trigger import Mode
from lsp_server.postprocess import Around
from lsp_server.service.job import EARLY_MIN_CHARS, Job, Take, Text


def job_with(partial: str, started_s_ago: float | None = None, prefix: str = "x = ", suffix: str = "\n",
             maybe_block: bool = False) -> Job:
    async def make():
        j = Job("file:///x.py", SimpleNamespace(
            prefix=prefix, suffix=suffix, mode=Mode(True, False, "test", maybe_block=maybe_block),
            around=Around(prefix, suffix, "python", multiline=False, maybe_block=maybe_block)))
        j.future = asyncio.get_running_loop().create_future()
        j.set_partial(partial, 3)
        if started_s_ago is not None:
            j.gen_started_at = time.perf_counter() - started_s_ago
        return j
    return asyncio.run(make())


def test_a_finished_line_is_answered_at_once():
    assert job_with("compute(a, b)\nnext").take("", one_line=True) == Text("compute(a, b)", None, False)
    # typed through part of it: the rest
    assert job_with("compute(a, b)\n").take("comp", one_line=True) == Text("ute(a, b)", None, False)


def test_a_finished_line_that_opens_a_block_waits_for_its_body():
    def job(prefix, suffix, partial):
        return job_with(partial, prefix=prefix, suffix=suffix)
    # `if n == 1:` with `return 18` below at the same level: the body must come with it
    assert job("def f(n):\n", "\n    return 18\n", "    if n == 1:\n        ret").take("", one_line=True) is Take.WAIT
    # the body is already below it: the line alone is the answer
    assert job("def f(n):\n", "\n        return 1\n", "    if n == 1:\n").take("", one_line=True) == \
        Text("    if n == 1:", None, False)
    # a comment line first: the answer is the comment with the code line after it
    assert job("def f(n):\n", "\n    return m\n", "    # the half\n    m = n").take("", one_line=True) is Take.WAIT
    assert job("def f(n):\n", "\n    return m\n", "    # the half\n    m = n // 2\n").take("", one_line=True) == \
        Text("    # the half\n    m = n // 2", None, False)
    # typed through the comment: the code line
    assert job("def f(n):\n", "\n    return m\n", "    # the half\n    m = n // 2\n").take(
        "    # the half\n", one_line=True) == Text("    m = n // 2", None, False)


def test_a_line_still_being_written_waits_then_answers_early():
    assert job_with("compute(alpha, be").take("", one_line=True, early_s=0.6) is Take.WAIT
    got = job_with("compute(alpha, be", started_s_ago=1.0).take("", one_line=True, early_s=0.6)
    assert got == Text("compute(alpha, be", None, True)   # post-processing then drops the cut word
    # too little to show yet
    assert len("".join("if".split())) < EARLY_MIN_CHARS
    assert job_with("if x", started_s_ago=1.0).take("", one_line=True, early_s=0.6) is Take.WAIT


def test_a_line_still_being_written_waits_for_its_end_up_to_the_line_s_time():
    # mobx's `if (this.isTracing_ !== TraceMode.NONE) {`, shown at 600 ms as `if (this.`: a wrong first line
    part = "if (this.isTracing_ !== Trace"
    assert job_with(part, started_s_ago=1.0).take("", one_line=True, early_s=0.6, line_s=1.2) is Take.WAIT
    # the line ended within it: the whole line, not an early answer
    assert job_with(part + "Mode.NONE) {\n", started_s_ago=1.0).take(
        "", one_line=True, early_s=0.6, line_s=1.2) == Text(part + "Mode.NONE) {", None, False)
    # past it: its whole words, as before
    assert job_with(part, started_s_ago=1.3).take("", one_line=True, early_s=0.6, line_s=1.2) == \
        Text(part, None, True)
    # a block's finished lines do not wait for it
    assert job_with("total = 0\n    for it", started_s_ago=1.0).take(
        "", one_line=False, early_s=0.6, line_s=1.2) == Text("total = 0\n    for it", None, True)


def test_a_line_that_opens_a_block_is_answered_early_only_with_a_finished_line_of_its_body():
    def make(partial):
        return job_with(partial, started_s_ago=1.0, prefix="def f(n):\n    ")
    # the line alone would not compile: no early answer until a body line is whole
    assert make("if n > limit:\n        raise ValueError(").take(
        "", one_line=True, early_s=0.6) is Take.WAIT
    assert make("if n > limit:\n        raise ValueError(n)\n        ret").take(
        "", one_line=True, early_s=0.6) == Text("if n > limit:\n        raise ValueError(n)\n        ret", None, True)
    # typed into the line: the same rule for the rest
    assert make("if n > limit:\n        raise ValueError(").take(
        "if n > ", one_line=True, early_s=0.6) is Take.WAIT
    # comment lines before the code line are not what an early answer shows
    assert make("# a comment long enough\n").take("", one_line=True, early_s=0.6) is Take.WAIT


def test_a_block_is_answered_early_only_with_a_finished_line():
    assert job_with("total = 0\n    for it", started_s_ago=1.0).take("", one_line=False, early_s=0.6) == \
        Text("total = 0\n    for it", None, True)
    assert job_with("total = 0", started_s_ago=1.0).take("", one_line=False, early_s=0.6) is Take.WAIT


def test_typing_something_else_is_a_divergence():
    assert job_with("compute(a, b)").take("comb", one_line=True) is Take.DIVERGED


def test_where_a_block_may_be_missing_the_answer_waits_for_the_model_s_end_up_to_the_early_time():
    prefix, suffix = "def f(xs):\n    total = 0\n", "\n    return total\n"
    part = "    total = sum(xs)\n    total *= 2\n"
    # the line is finished, but the model may be writing the block: wait (for the end, or the early time)
    assert job_with(part, 0.1, prefix, suffix, maybe_block=True).take("", one_line=True, early_s=0.6) is Take.WAIT
    assert job_with(part, None, prefix, suffix, maybe_block=True).take("", one_line=True) is Take.WAIT
    # past the early time: the sure part now, the generation goes on
    assert job_with(part, 1.0, prefix, suffix, maybe_block=True).take("", one_line=True, early_s=0.6) == \
        Text("    total = sum(xs)", None, False)
