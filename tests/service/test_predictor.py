"""The acceptance predictor (service/predictor.py): what it reads around the cursor and of the document's recent
suggestions, when it skips a request, and the skip through the service with a scripted engine."""
from __future__ import annotations

import pytest

from lsp_server.context import Document
from lsp_server.pipeline import CompletionRequest
from lsp_server.service import predictor, stats
from lsp_server.service.gate import Suggestions
from lsp_server.service.outcomes import Outcomes
from lsp_server.service.predictor import Recent, Weights, features, predict
from scripted import scripted_service

# a model that believes only in the document's history (and so skips where the user took nothing lately)
W = Weights(bias=-3.0, weights={"taken": 6.0}, thresholds={"balanced": 0.2, "quiet": 0.5})


def test_what_it_reads_around_the_cursor():
    f = features("def f(x):\n    ", "\n", None, typing=False)
    assert (f["mid"], f["after_opener"], f["rest"], f["typing"]) == (0.0, 1.0, 0.0, 0.0)
    f = features("x = foo(", ")\n", None, typing=True)
    assert (f["mid"], f["open"], f["word"], f["rest"], f["typing"]) == (1.0, 1.0, 0.0, 1.0, 1.0)
    f = features("    # a comment about ", "\n", None, typing=True)
    assert (f["comment"], f["space"]) == (1.0, 1.0)
    assert features("value", "", None, False)["word"] == 1.0


def test_the_document_s_recent_fates_move_its_taken_share():
    r = Recent()
    start = r.taken_share
    for _ in range(10):
        r.add(False)
    assert r.taken_share < start
    for _ in range(10):
        r.add(True)
    assert r.taken_share > start   # the last ten only


def test_a_request_is_skipped_below_the_level_s_threshold_never_when_asked_for_or_eager():
    cold, warm = Recent(), Recent()
    for _ in range(10):
        cold.add(False)
        warm.add(True)
    assert predict("x = ", "\n", cold, True, Suggestions.BALANCED, w=W).skip
    assert not predict("x = ", "\n", warm, True, Suggestions.BALANCED, w=W).skip
    assert not predict("x = ", "\n", cold, True, Suggestions.BALANCED, forced=True, w=W).skip
    assert not predict("x = ", "\n", cold, True, Suggestions.EAGER, w=W).skip
    # after a pause the user waits for a suggestion (a popup client asks only then): always asked
    assert not predict("x = ", "\n", cold, False, Suggestions.BALANCED, w=W).skip
    p = predict("x = ", "\n", None, True, Suggestions.QUIET, w=W)
    assert p.skip and 0.0 < p.explained()["p"] < 0.5


def test_outcomes_tell_the_predictor_what_was_taken_and_dismissed():
    o = Outcomes(stats.ServerStats())
    o.shown("u", "x = ", "\n", "1")
    o.accepted("u")
    o.shown("u", "y = ", "\n", "2")
    o.edited("u", "y = 3\n")   # typed over
    assert list(o.recent("u").fates) == [1, 0]
    o.shown("u", "z = ", "\n", "4")
    o.edited("u", "z = 4\n")   # typed to its end
    assert list(o.recent("u").fates) == [1, 0, 1]
    o.forget("u")
    assert o.recent("u") is None


@pytest.mark.asyncio
async def test_the_service_does_not_ask_the_model_where_the_predictor_skips(monkeypatch):
    monkeypatch.setattr(predictor, "load_weights", lambda path=None: W)
    svc, engine = scripted_service(lambda prefix: "return w * h\n", "balanced")
    uri, text = "file:///t/area.py", "def area(w, h):\n    \n"
    for _ in range(10):
        svc.outcomes._fate(uri, False)   # the user dismissed the document's last ten suggestions
    # at rest (the document's first request): asked of the model whatever the predictor says
    first = await svc.complete(uri, CompletionRequest(Document("/t/area.py", text, "python"), 1, 4))
    assert first.text == "return w * h" and len(engine.generations) == 1
    # typing (another request for the document within half a second): skipped
    typed = "def area(w, h):\n    x\n"   # not the shown suggestion: no answer from the cache
    got = await svc.complete(uri, CompletionRequest(Document("/t/area.py", typed, "python"), 1, 5))
    assert (got.text, got.source, got.why) == ("", "skipped", "unlikely to be taken")
    assert len(engine.generations) == 1 and svc.summary()["suggestions"]["gated"] == {"predicted": 1}
    forced = CompletionRequest(Document("/t/area.py", typed, "python"), 1, 5, force=True)
    # asked for by key, typing or not: asked of the model
    assert (await svc.complete(uri, forced)).source == "model" and len(engine.generations) == 2
