"""The confidence gate and the predictor with the real default models and the packaged weights: an answer the
target is sure of is shown, one it is unsure of is gated, a long one is cut to its sure lines, and `eager` shows
them all; the service's counts follow."""
from __future__ import annotations

import pytest

from lsp_server.context import Document
from lsp_server.pipeline import CompletionRequest, Pipeline
from lsp_server.service import gate
from lsp_server.service.gate import Suggestions
from lsp_server.service.scheduler import CompletionService
from lsp_server.service.settings import Settings

pytestmark = [pytest.mark.asyncio, pytest.mark.models]

# the target is sure of the other coordinate, and unsure what a loop over a range is for
SURE = ("point.py", "class Point:\n    def __init__(self, x, y):\n        self.x = x\n        \n", 3, 8)
UNSURE = ("loop.py", "for i in range(10):\n    \n", 1, 4)
# a loop the target is sure of, then a line after it that it is not
LONG = ("sum.ts", "export function sum(xs: number[]): number {\n  let total = 0;\n  \n}\n", 2, 2)


def service(engine, level: str) -> CompletionService:
    s = Settings(suggestions=Suggestions(level), time_budget_ms=30000, early_answer_ms=0, prefetch=False,
                 warmup_pause_ms=-1, prompt_budget_ms=-1)
    svc = CompletionService()
    svc.settings = s
    svc.pipeline = Pipeline(engine, s.prompt_budget(), s.fast_prefix_tokens)
    return svc


async def complete(svc: CompletionService, case):
    name, text, line, col = case
    return await svc.complete(f"file:///gate/{name}", CompletionRequest(Document(f"/gate/{name}", text), line, col))


async def test_a_sure_answer_is_shown_and_an_unsure_one_gated(engine):
    svc = service(engine, "balanced")
    sure = await complete(svc, SURE)
    assert sure.text == "self.y = y" and sure.confidence["score"] is not None
    unsure = await complete(svc, UNSURE)
    assert (unsure.text, unsure.why) == ("", "unsure"), unsure
    s = svc.summary()["suggestions"]
    assert (s["shown"], s["scored"], s["gated"].get("unsure")) == (1, 2, 1), s
    # eager shows what balanced held back, with the score that held it back
    eager = await complete(service(engine, "eager"), UNSURE)
    assert eager.text.strip() and eager.confidence["score"] < sure.confidence["score"]


async def test_a_long_answer_is_cut_before_its_least_sure_line(engine):
    """One real generation and its real margins, judged with the packaged weights at a cut margin set between its
    later lines' least margins: what is shown is the answer up to the line the target was least sure of."""
    name, text, line, col = LONG
    pipeline = service(engine, "eager").pipeline
    plan = pipeline.plan(CompletionRequest(Document(f"/gate/{name}", text), line, col, max_tokens=96,
                                           record_margins=True))
    gen = pipeline.generate(plan)
    shown = pipeline.finish(plan, gen).text
    sure = gate.Sureness(tuple(gen.margins), tuple(gen.ends))
    assert len(gen.margins) == len(gen.ends) == len(gen.tokens)
    eager = gate.judge(shown, sure, 0, plan.around, Suggestions.EAGER)
    lows = list(eager.line_lows)
    assert shown.count("\n") >= 2 and len(lows) >= 2, (shown, lows)
    least = lows.index(min(lows))
    w = gate.load_weights()
    before = lows[:least]
    at = (lows[least] + (min(before) if before else lows[least] + 2.0)) / 2   # above it, below those before it
    cut = gate.judge(shown, sure, 0, plan.around, Suggestions.BALANCED,
                     gate.Weights(w.bias, w.weights, {"balanced": {"*": 0.0}}, {"balanced": at}))
    assert cut.gated is gate.Gated.CUT, (shown, lows, at)
    kept = [ln for ln in shown.split("\n")[1:] if ln.strip()]
    # every line before the least sure one is kept, and none after it (the brackets it opened closed again)
    assert all(ln in cut.text for ln in kept[:least]) and kept[least] not in cut.text.split("\n"), (shown, cut.text)
    assert cut.text.split("\n")[0] == shown.split("\n")[0]
