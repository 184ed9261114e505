"""The confidence gate (service/gate.py): the score, the threshold, the cut to the sure lines, as pure functions and
through the service with a scripted engine whose margins the test sets (the same paths with the real models:
test_gate_models.py)."""
from __future__ import annotations

import json

import pytest

from lsp_server.context import Document
from lsp_server.pipeline import CompletionRequest
from lsp_server.postprocess import Around
from lsp_server.service import gate
from lsp_server.service.gate import Gated, Suggestions, Sureness, Weights, judge
from scripted import scripted_service

W = Weights(bias=-4.0, weights={"low": 2.0}, thresholds={"balanced": {"*": 0.5}, "quiet": {"*": 0.9}},
            cut_margin={"balanced": 1.0, "quiet": 3.0})
PY = Around("def f(x):\n    ", "\n", "python", multiline=True)


def sure_of(text: str, margins: list[float]) -> Sureness:
    """One token a character."""
    assert len(margins) == len(text)
    return Sureness(tuple(margins), tuple(range(1, len(text) + 1)))


def test_the_margins_of_the_tokens_over_a_span_of_the_text():
    s = Sureness((1.0, 2.0, 3.0), (2, 5, 9))   # tokens "ab", "cde", "fghi"
    assert s.over(0, 2) == [1.0]
    assert s.over(1, 3) == [1.0, 2.0]
    assert s.over(5, 9) == [3.0]
    assert s.over(4, 6) == [2.0, 3.0]   # a token begun before the span counts


def test_a_sure_first_line_is_shown_whole():
    text = "return x + 1"
    v = judge(text, sure_of(text, [9.0] * len(text)), 0, PY, Suggestions.BALANCED, W)
    assert (v.text, v.gated) == (text, None)
    assert v.score > 0.5


def test_an_unsure_first_line_is_not_shown_and_says_why():
    text = "return x + 1"
    margins = [9.0] * len(text)
    margins[7] = 0.2   # the `x`: a near tie
    v = judge(text, sure_of(text, margins), 0, PY, Suggestions.BALANCED, W)
    assert (v.text, v.gated) == ("", Gated.UNSURE)
    assert v.explained()["gated"] == "unsure" and v.explained()["score"] < 0.5


def test_eager_shows_everything_but_still_scores_it():
    text = "return x + 1"
    v = judge(text, sure_of(text, [0.1] * len(text)), 0, PY, Suggestions.EAGER, W)
    assert (v.text, v.gated) == (text, None)
    assert v.score is not None and v.score < 0.5


def test_quiet_shows_less_than_balanced():
    text = "return x + 1"
    s = sure_of(text, [11.0] * len(text))   # score 0.73: balanced shows it, quiet does not
    assert judge(text, s, 0, PY, Suggestions.BALANCED, W).text == text
    assert judge(text, s, 0, PY, Suggestions.QUIET, W).text == ""


def test_a_long_answer_is_cut_before_its_first_unsure_line():
    text = "y = x * 2\n    z = y + 1\n    return z"
    margins = [9.0] * len(text)
    margins[text.index("return")] = 0.3
    v = judge(text, sure_of(text, margins), 0, PY, Suggestions.BALANCED, W)
    assert (v.text, v.gated) == ("y = x * 2\n    z = y + 1", Gated.CUT)


def test_a_cut_block_in_a_brace_language_is_closed():
    around = Around("function f(x) {\n  ", "\n}\n", "typescript", multiline=True)
    text = "if (x) {\n    a();\n    b();\n  }\n  return x;"
    margins = [9.0] * len(text)
    margins[text.index("b();")] = 0.3
    v = judge(text, sure_of(text, margins), 0, around, Suggestions.BALANCED, W)
    assert v.gated is Gated.CUT
    assert v.text.startswith("if (x) {\n    a();")
    assert "b()" not in v.text and v.text.rstrip().endswith("}")


def test_the_answer_is_read_where_it_starts_in_the_generation():
    """A request that typed part of a running generation's text: its answer's margins start there."""
    gen = "re" + "turn x"
    margins = [0.1, 0.1] + [9.0] * 6   # unsure of what was typed, sure of the rest
    assert judge("turn x", sure_of(gen, margins), 2, PY, Suggestions.BALANCED, W).text == "turn x"
    assert judge("turn x", sure_of(gen, [9.0, 9.0] + [0.1] * 6), 2, PY, Suggestions.BALANCED, W).text == ""


def test_without_margins_nothing_is_gated():
    """A remote engine gives none: the answer is shown, unscored."""
    v = judge("return x", Sureness(), 0, PY, Suggestions.QUIET, W)
    assert (v.text, v.score, v.gated) == ("return x", None, None)


def test_the_packaged_weights_rank_surer_answers_higher():
    w = gate.load_weights()
    assert set(w.thresholds) == {"balanced", "quiet"}
    text = "return x + 1"
    scores = [gate.score(gate.features(text, sure_of(text, [m] * len(text)), 0, PY), w) for m in (0.1, 2.0, 12.0)]
    assert scores == sorted(scores) and scores[0] < scores[-1]
    for level in (Suggestions.BALANCED, Suggestions.QUIET):
        assert 0.0 < w.threshold(level, "python", "line") < 1.0
    assert w.threshold(Suggestions.QUIET, "go", "mid") >= w.threshold(Suggestions.BALANCED, "go", "mid")
    read = gate.features(text, sure_of(text, [1.0] * len(text)), 0, PY)
    assert set(json.loads(gate.WEIGHTS_FILE.read_text())["weights"]) == set(read)   # every feature weighed


# ---- through the service (a scripted engine: one token a character, the margins the test gives) -----------------

TEXT = "def area(w, h):\n    \n\nprint(area(2, 3))\n"
URI = "file:///t/area.py"


@pytest.fixture
def weights(monkeypatch):
    monkeypatch.setattr(gate, "load_weights", lambda path=None: W)


def service(margin, suggestions="balanced", answer="return w * h\n"):
    return scripted_service(lambda prefix: answer, suggestions, margin=margin)


def request(text: str = TEXT, line: int = 1, col: int = 4) -> CompletionRequest:
    return CompletionRequest(Document("/t/area.py", text, "python"), line, col)


@pytest.mark.asyncio
async def test_the_service_gates_an_unsure_answer_and_remembers_it(weights):
    svc, engine = service(lambda s, i: 0.2)
    got = await svc.complete(URI, request())
    assert (got.text, got.why) == ("", "unsure")
    again = await svc.complete(URI, request())
    assert again.text == "" and len(engine.generations) == 1   # the cache says so: the model is not asked again
    s = svc.summary()["suggestions"]
    assert (s["shown"], s["scored"], s["gated"]) == (0, 1, {"unsure": 1})


@pytest.mark.asyncio
async def test_the_service_shows_a_sure_answer_with_its_score(weights):
    svc, _ = service(lambda s, i: 9.0)
    got = await svc.complete(URI, request())
    assert got.text == "return w * h"
    assert got.confidence["score"] > 0.5 and "features" in got.confidence
    assert svc.summary()["suggestions"]["shown"] == 1


@pytest.mark.asyncio
async def test_eager_shows_the_unsure_answer(weights):
    svc, _ = service(lambda s, i: 0.2, suggestions="eager")
    got = await svc.complete(URI, request())
    assert got.text == "return w * h" and got.confidence["score"] < 0.5
    assert svc.summary()["suggestions"]["gated"] == {}


@pytest.mark.asyncio
async def test_typing_through_shows_only_what_the_gate_let_through(weights):
    """The cache keeps what was shown: typing the sure part never brings back the unsure tail."""
    text = "def area(w, h):\n    \n"
    answer = "s = w * h\n    return s\n"

    def margin(script, i):
        return 0.3 if script[i:].startswith("return") else 9.0
    svc, _ = service(margin, answer=answer)
    got = await svc.complete(URI, request(text))
    assert got.text == "s = w * h"
    typed = text.replace("    \n", "    s = w \n", 1)
    through = await svc.complete(URI, request(typed, 1, 10))
    assert (through.text, through.source) == ("* h", "cache")
    assert svc.summary()["suggestions"]["gated"] == {"cut": 1}
    # the rest shown from the cache carries the verdict on the answer it is the rest of
    assert through.confidence == got.confidence and through.confidence["gated"] == "cut"


@pytest.mark.asyncio
async def test_a_typed_over_suggestion_counts_as_dismissed(weights):
    svc, _ = service(lambda s, i: 9.0)
    await svc.complete(URI, request())
    svc.on_edit(URI, TEXT.replace("    \n", "    ret\n", 1))          # typed through: still shown
    assert svc.summary()["suggestions"]["dismissed"] == 0
    svc.on_edit(URI, TEXT.replace("    \n", "    retx\n", 1))         # typed over
    assert svc.summary()["suggestions"]["dismissed"] == 1
    svc.on_edit(URI, TEXT.replace("    \n", "    retxy\n", 1))        # counted once
    assert svc.summary()["suggestions"]["dismissed"] == 1


@pytest.mark.asyncio
async def test_an_accepted_suggestion_is_not_dismissed(weights):
    svc, _ = service(lambda s, i: 9.0)
    await svc.complete(URI, request())
    svc.on_edit(URI, TEXT.replace("    \n", "    return w * h\n", 1))   # the accept's insertion
    svc.count_accepted(12, URI)
    svc.on_edit(URI, TEXT.replace("    \n", "    return w * h + 1\n", 1))
    s = svc.summary()["suggestions"]
    assert (s["accepted"], s["dismissed"]) == (1, 0)
    await svc.complete(URI, request())
    assert svc.outcomes.dismissed(URI) and svc.summary()["suggestions"]["dismissed"] == 1   # the client's Esc
    assert not svc.outcomes.dismissed(URI)   # nothing shown any more
