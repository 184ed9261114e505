"""The lab's gate fit: which suggestions a replay's sessions give it, how many wrong ones each counts for, and the
threshold that pays."""
from __future__ import annotations

import pytest

from evals.real.gate_fit import best_threshold, examples, quiet_not_below_balanced, wrong_count

F = {"low": 1.0, "mean": 1.0, "first": 1.0, "tokens": 1.0, "lines": 0.0, "mid": 1.0}


def seen(got, want, source="model", took=0, features=F):
    return {"got": got, "want": want, "source": source, "took": took,
            "confidence": {"score": 0.3, "features": features} if features else None}


def run(line_starts, in_time, half="tune"):
    return {"half": half, "sessions": [{"body": {"language": "python"},
                                        "tally": {"line_start_seen": line_starts, "in_time_seen": in_time}}]}


def test_the_rest_shown_again_from_the_cache_counts_for_the_answer_it_is_the_rest_of():
    # an old server's cache answers carry no verdict: counted for the answer whose rest they are
    wrong = seen("return x + 1", "return x + 2")
    right = seen("y = 2", "y = 2", took=5)
    again = [seen("eturn x + 1", "eturn x + 2", "cache", features=None),
             seen("turn x + 1", "turn x + 2", "cache", features=None),
             seen("other()", "z", "cache", features=None)]   # the rest of nothing seen: no example's
    ex = examples([run([wrong, right], again)])
    assert [(e["got"], e["reshown"], wrong_count(e)) for e in ex] == [("return x + 1", 2, 3), ("y = 2", 0, 0)]


def test_a_cache_answer_with_its_verdict_is_an_example_of_its_own():
    ex = examples([run([seen("return x + 1", "return x + 2")], [seen("eturn x + 1", "eturn x + 2", "cache")])])
    assert [(e["got"], e["reshown"]) for e in ex] == [("return x + 1", 0), ("eturn x + 1", 0)]


def test_only_the_tune_half_is_fitted_on():
    with pytest.raises(ValueError, match="tune half only"):
        examples([run([], [], half="confirm")])


def test_a_wrong_answer_shown_again_raises_the_threshold():
    scores, took = [0.1, 0.2, 0.4, 0.8], [3, 0, 10, 10]
    # one wrong suggestion at 0.2 costs less than the 3 characters taken at 0.1: all are shown
    assert best_threshold(scores, took, 2.0)[0] == 0.0
    # shown again at ten more keys, it costs more: the threshold goes above it, below the other taken ones
    t, _ = best_threshold(scores, took, 2.0, [0, 11, 0, 0])
    assert 0.2 < t < 0.4


def test_quiet_is_never_below_balanced_in_any_cell():
    fitted = {"balanced": {"*": 0.1, "*/mid": 0.3, "python/line": 0.5},
              "quiet": {"*": 0.2, "python/mid": 0.25, "go/line": 0.05}}
    quiet = quiet_not_below_balanced(fitted)
    # a cell of its own raised to balanced's mode (python/mid: 0.3), one balanced has alone taken over
    # (python/line), one below balanced's all raised to it (go/line), the rest as fitted
    assert quiet == {"*": 0.2, "*/mid": 0.3, "python/mid": 0.3, "python/line": 0.5, "go/line": 0.1}
    assert fitted["quiet"] == {"*": 0.2, "python/mid": 0.25, "go/line": 0.05}   # the table it read is unchanged
