"""An answer to verify (`GenerationRequest.expect`, a candidate next edit) and a rewrite that settles
(`GenerationRequest.settle`): with the real models, a verified answer is drafted whole and comes back as the
target's own greedy output, in one batch where the target agrees; the generation stops where the target leaves
it. `settled` is checked on text alone."""
import pytest

from lsp_server.engine import GenerationRequest, StopReason
from lsp_server.engine.speculative import settled

PROMPT = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return"


@pytest.mark.models
def test_an_expected_answer_the_target_agrees_with_is_its_greedy_output_in_one_batch(engine):
    plain = engine.generate(GenerationRequest(engine.tokenize(PROMPT), max_tokens=6, speculative=False))
    assert plain.text.startswith(" a - b")
    got = engine.generate(GenerationRequest(engine.tokenize(PROMPT), max_tokens=6, expect=plain.text,
                                            record_margins=True))
    assert got.tokens == plain.tokens and got.text == plain.text
    assert got.steps == 1                     # all of it drafted and accepted in one verify batch
    assert len(got.margins) == len(got.tokens)


@pytest.mark.models
def test_the_generation_stops_where_the_target_leaves_the_expected_answer(engine):
    got = engine.generate(GenerationRequest(engine.tokenize(PROMPT), max_tokens=8, expect=" a * b\n",
                                            speculative=False))
    assert got.stop_reason == StopReason.STOP
    assert got.text.startswith(" a ") and got.text != " a * b\n" and " a * b\n".startswith(got.text[:-1])


@pytest.mark.models
def test_speculation_off_still_drafts_the_expected_answer(engine):
    engine.cfg.speculation, was = False, engine.cfg.speculation
    try:
        got = engine.generate(GenerationRequest(engine.tokenize(PROMPT), max_tokens=4, expect=" a - b"))
    finally:
        engine.cfg.speculation = was
    assert got.text.startswith(" a - b") and got.steps == 1


REGION = "a = 1\nb = 2\nc = compute(a)\nd = compute(b)\ne = 5\n"


@pytest.mark.parametrize("text,want", [
    ("a = 1\nb = 2\n", None),                                    # still copying
    ("a = 1\nb = 3\nc = compute(a)\nd = compute(b)\n", 42),      # changed a line, then two lines as they stand
    ("a = 1\nc = compute(a)\nd = compute(b)\n", 36),             # took a line out
    ("a = 1\nb = 2\nx = 0\nc = compute(a)\nd = compute(b)\ne", 48),   # put one in; the unfinished line is left out
    ("a = 1\nb = 3\nc = compute(a)\n", None),                    # one line again is not yet settled
    ("x = 1\n}\n\n", None),                                       # lines without text say nothing
])
def test_settled(text, want):
    assert settled(REGION, text) == want
