"""An answer to verify (`GenerationRequest.expect`, a candidate next edit) and a rewrite that settles
(`GenerationRequest.settle`): with the real models, a verified answer is drafted whole and comes back as the
target's own greedy output, in one batch where the target agrees; the generation stops where the target leaves
it. `settled` and `expect_decided` are checked on text alone."""
import pytest

from lsp_server.engine import GenerationRequest, StopReason
from lsp_server.engine.speculative import departure_gap, expect_decided, settled

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


@pytest.mark.parametrize("text,margins,want", [
    ("a = 1\nb = 2\n", [1.0] * 8, None),          # still the region's text
    ("a = 1\nb = 3", [9.0] * 6 + [0.5], 0.5),     # left it at the 7th token ("3"), where the gap was 0.5
    ("a = 1\nb = 3", [9.0] * 6, None),            # that token's gap is not in yet
    ("x", [2.0], 2.0),                            # left it at once
])
def test_departure_gap(text, margins, want):
    tokenize = lambda s: list(s.replace(" ", ""))   # a character a token, spaces joined to the next
    assert departure_gap(REGION, text, margins, tokenize) == want


@pytest.mark.models
def test_a_rewrite_ends_where_it_leaves_its_region_unsure_and_writes_the_same_up_to_there(engine):
    region = " a * b\n\n\ndef mul(a, b):\n    return a * b\n"
    req = lambda sure: GenerationRequest(engine.tokenize(PROMPT), max_tokens=24, settle=region, sure=sure,
                                         record_margins=True)
    whole = engine.generate(req(0.0))
    assert whole.text.startswith(" a - b") and whole.stop_reason != StopReason.UNSURE
    gap = departure_gap(region, whole.text, whole.margins, engine.tokenize)
    assert gap is not None
    # (a verify batch's logits differ from one-token decoding's in the last digits: a point either side of it)
    cut = engine.generate(req(gap + 1.0))      # not sure enough where it leaves " a * b": it stops there
    assert cut.stop_reason == StopReason.UNSURE
    assert whole.tokens[:len(cut.tokens)] == cut.tokens and len(cut.tokens) < len(whole.tokens)
    assert whole.text.startswith(cut.text) and not region.startswith(cut.text)
    kept = engine.generate(req(gap - 1.0))     # sure enough: it writes on as without the gate
    assert kept.tokens == whole.tokens and kept.stop_reason == whole.stop_reason


@pytest.mark.parametrize("expect,text,want", [
    (" a * b\n", " a", False),                     # following it
    (" a * b\n", " a * b\n", True),                # all of it written
    (" a * b\n", " a + b", True),                   # left it
    ("\nclass Nu", "\n", False),
    ("\nclass Nu", "class", False),                 # the blank line left out, the code after it followed
    ("\nclass Nu", "class Number", True),           # ... to its end
    ("\nclass Nu", "\n\nclass N", False),           # one blank line more
    ("\nclass Nu", "    def", True),                # something else
    ("\nclass Nu", "classic", True),
    ("\n", "x", True),                              # nothing but a blank line expected
    ("x = 1", "\nx = 1", True),                      # no blank line expected: one written is a departure
])
def test_expect_decided(expect, text, want):
    assert expect_decided(expect, text) is want
