"""What a finished generation puts in the typing cache (service/cache_writes.py): the plan from the real
pipeline (a scripted engine's character tokenizer), the generation given, the real post-processing."""
from lsp_server.context import Document
from lsp_server.engine import Generation, StopReason
from lsp_server.pipeline import CompletionRequest, Pipeline
from lsp_server.service.cache_writes import CacheWrite, cache_writes
from lsp_server.service.settings import Settings
from scripted import ScriptedEngine


def planned(text: str, line: int, col: int, multiline: bool | None = None):
    engine = ScriptedEngine(lambda prefix: "")
    pipeline = Pipeline(engine, Settings().prompt_budget())
    req = CompletionRequest(Document("/t/m.py", text, "python"), line, col, max_tokens=256, max_tokens_single_line=40,
                            multiline=multiline)
    return pipeline.plan(req)


def gen(text: str, reason=StopReason.EOG) -> Generation:
    return Generation(text, [0] * len(text), reason, 10, 0, 0.0, 0.0, 1)


def test_cache_writes_of_a_block_the_model_ended():
    plan = planned("def f(xs):\n    \n", 1, 4, multiline=True)
    writes = cache_writes(plan, gen("total = sum(xs)\n    return total"))
    assert writes[0] == CacheWrite(plan.prefix, plan.suffix, "total = sum(xs)\n    return total")
    # where the model's text ends, the hole is filled: nothing more to suggest there
    assert writes[1] == CacheWrite(plan.prefix + "total = sum(xs)\n    return total", plan.suffix, "", done=True)
    assert len(writes) == 2


def test_cache_writes_of_a_block_cut_by_the_limit_say_nothing_is_done():
    plan = planned("def f(xs):\n    \n", 1, 4, multiline=True)
    writes = cache_writes(plan, gen("total = sum(xs)\n    return tot", StopReason.LENGTH))
    assert [w.done for w in writes] == [False] and writes[0].text.startswith("total = sum(xs)")


def test_cache_writes_of_a_line_that_went_on_keep_the_next_line_for_the_accept():
    plan = planned("def f(xs):\n    total = 0\n    \n\nprint(f([1]))\n", 2, 4, multiline=False)
    assert plan.continues
    writes = cache_writes(plan, gen("for x in xs:\n        total += x\n", StopReason.LENGTH))
    first, nxt = writes[0], writes[-1]
    assert first.prefix == plan.prefix and first.text.startswith("for x in xs:")
    assert nxt.continued and nxt.prefix == plan.prefix + "for x in xs:" and "total += x" in nxt.text
