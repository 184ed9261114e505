"""The next-edit suite's cases (issue 52, part 4) and its scorer: the committed cases are many enough, balanced,
split by project, consistent (the expected hunk changes the window, the cursor lies in it), and the scorer
gives the oracle full marks, no prediction none, and counts location, precision and silence as documented.
No model."""
from __future__ import annotations

import json
from collections import Counter

import pytest

from evals.common.halves import half_of
from evals.suites.next_edit import load_cases
from evals.suites.next_edit.build import PROJECTS, Hunk, apply, merge_close, wanted
from evals.suites.next_edit.score import normalise, oracle, overlaps, score, score_case

HELD_OUT = {"requests", "rxjs", "cobra", "click", "anyhow", "@trpc/server", "trpc"}


@pytest.fixture(scope="module")
def cases():
    return load_cases()


def test_cases_many_balanced_and_split_by_project(cases):
    assert len(cases) >= 300
    assert len({c["id"] for c in cases}) == len(cases)
    langs = Counter(c["language"] for c in cases)
    assert set(langs) == {"python", "typescript", "go", "rust", "java"}
    for half in ("tune", "confirm"):
        assert {c["language"] for c in cases if c["half"] == half} == set(langs)
    assert all(c["half"] == half_of(c["project"]) for c in cases)
    none = sum(c["kind"] == "none" for c in cases) / len(cases)
    assert 0.2 <= none <= 0.4
    assert not {c["project"] for c in cases} & HELD_OUT
    assert not {p.repo.split("/")[1] for p in PROJECTS} & HELD_OUT
    assert {c["licence"] for c in cases} <= {"MIT", "Apache-2.0", "MIT OR Apache-2.0", "BSD-3-Clause"}


def test_cases_consistent(cases):
    for c in cases:
        lines = c["before_window"].splitlines()
        assert len(lines) <= 100
        cur = c["cursor"]
        assert 0 <= cur["line"] < max(len(lines), 1) and 0 <= cur["character"] <= len(lines[cur["line"]])
        assert c["recent_edits"].startswith(f"--- a/{c['path']}\n+++ b/{c['path']}\n@@ ")
        assert c["recent_edits"].count("\n@@ ") == c["applied"]
        exp = c["expected"]
        if c["kind"] == "none":
            assert exp is None and c["applied"] == c["hunks"] == 1
            continue
        assert 1 <= c["applied"] < c["hunks"]
        assert 0 <= exp["start_line"] <= exp["end_line"] <= len(lines)
        assert "".join(lines[i] + "\n" for i in range(exp["start_line"], exp["end_line"])) == exp["old_text"]
        assert normalise(exp["text"]) != normalise(exp["old_text"])


def test_scorer_oracle_and_no_prediction(cases):
    full = score(cases, [oracle(c) for c in cases])
    assert full["all"]["exact"] == full["all"]["located"] == full["all"]["precision"] == 1.0
    assert full["all"]["no_edit_rate"] == 1.0
    empty = score(cases, [None] * len(cases))["all"]
    assert empty["exact"] == empty["located"] == 0.0 and empty["precision"] is None
    assert empty["no_edit_rate"] == 1.0
    assert set(full) == {"all", "python", "typescript", "go", "rust", "java"}


CASE = {"id": "x/1/edit", "kind": "edit", "language": "python",
        "before_window": "def f(a):\n    return a\n\n\nx = f(1)\n",
        "expected": {"start_line": 4, "end_line": 5, "text": "x = f(1, 2)\n", "old_text": "x = f(1)\n"}}
NONE = {"id": "x/2/none", "kind": "none", "language": "python", "before_window": "a = 1\n", "expected": None}


def test_scorer_one_case():
    # whitespace differences do not matter, a wider range with the same lines is the same edit
    r = score_case(CASE, {"start_line": 4, "end_line": 5, "text": "x = f(1,  2)   \n"})
    assert r["exact"] and r["located"]
    r = score_case(CASE, {"start_line": 3, "end_line": 5, "text": "\nx = f(1, 2)\n"})
    assert r["exact"] and r["located"]
    # the right place, the wrong text
    r = score_case(CASE, {"start_line": 4, "end_line": 5, "text": "x = f(2)\n"})
    assert not r["exact"] and r["located"] and r["proposed"]
    # elsewhere
    r = score_case(CASE, {"start_line": 0, "end_line": 1, "text": "def f(a, b=0):\n"})
    assert not r["exact"] and not r["located"]
    # an insertion just before the hunk's line overlaps it; a proposal that changes nothing is silence
    assert score_case(CASE, {"start_line": 4, "end_line": 4, "text": "y = 0\n"})["located"]
    assert not score_case(CASE, {"start_line": 1, "end_line": 2, "text": "    return a\n"})["proposed"]
    # out of range: proposed and wrong
    r = score_case(CASE, {"start_line": 7, "end_line": 9, "text": "z\n"})
    assert r["proposed"] and not r["located"]
    # no-edit case: silence is right, a proposal lowers precision
    s = score([CASE, NONE], [oracle(CASE), {"start_line": 1, "end_line": 1, "text": "b = 2\n"}])["all"]
    assert s["exact"] == 1.0 and s["precision"] == 0.5 and s["no_edit_rate"] == 0.0
    assert overlaps((2, 2), (2, 3)) and not overlaps((3, 3), (2, 3)) and overlaps((1, 4), (2, 2))


def test_builder_pieces():
    old = ["a", "b", "c", "d", "e", "f", "g", "h"]
    hunks = [Hunk(1, ["b"], ["B"]), Hunk(3, ["d"], ["D", "D2"]), Hunk(7, ["h"], [])]
    merged = merge_close(hunks, old)   # b and d: one unchanged line apart, one edit; h: three lines after d
    assert [(h.old_start, h.old, h.new) for h in merged] == [(1, ["b", "c", "d"], ["B", "c", "D", "D2"]),
                                                             (7, ["h"], [])]
    state, starts = apply(old, merged)
    assert state == ["a", "B", "c", "D", "D2", "e", "f", "g"] and starts == [1, 8]
    assert wanted("src/attr/_make.py", (".py",)) and not wanted("tests/test_make.py", (".py",))
    assert not wanted("src/types.test.ts", (".ts",)) and not wanted("deno/lib/types.ts", (".ts",))
    assert not wanted("gson/src/test/java/Foo.java", (".java",)) and not wanted("tree_test.go", (".go",))


def test_score_command(tmp_path, capsys, cases):
    from evals.suites.next_edit.score import main
    some = [c for c in cases if c["half"] == "tune"][:3]
    path = tmp_path / "p.jsonl"
    path.write_text("".join(json.dumps({"id": c["id"], "proposal": oracle(c)}) + "\n" for c in some))
    main([str(path), "--half", "tune"])
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["cases", "exact", "located", "proposed_on_edit", "precision", "no_edit_rate"]
    assert out[1].split()[:2] == ["all", str(sum(c["half"] == "tune" for c in cases))]
    main(["--baseline", "none"])
    assert capsys.readouterr().out.splitlines()[1].split() == ["all", str(len(cases)), "0.0", "0.0", "0.0", "-",
                                                               "1.0"]


def test_the_runner_scores_each_method_and_the_ledger_keeps_its_headlines(tmp_path, cases):
    """`tandem-eval next-edit`'s loop with a scripted engine that copies each region back: the product's path, the
    plain baseline and no prediction are scored on the same cases, the raw file has a row per case, and a ledger line keeps each method's figures."""
    from scripted import ScriptedEngine

    from evals import ledger
    from evals.suites.next_edit.run import hunks_of, run

    import re
    tune = [c for c in cases if c["half"] == "tune"]
    picked = [c for c in tune if c["kind"] == "edit"][:3] + [c for c in tune if c["kind"] == "none"][:3]

    def answer(prompt: str) -> str:
        # the last whole code block of the prompt is the region asked for: copied back, nothing is proposed
        blocks = re.findall(r"```\w*\n(.*?)```", prompt, re.S)
        return blocks[-1] + "```" if blocks else ""   # (a completion's page, evaluated before each ask)

    def keeps(prefix: str, suffix: str) -> str:
        return "?"   # a candidate's check: the target writes something else, and nothing is proposed

    engine = ScriptedEngine(answer, by_prompt=True, token_s=0.00001, step_s=0.0, fim_answer=keeps)
    out = tmp_path / "ne.json"
    summary = run(engine, picked, ("ours", "before", "plain", "none"), 1, 12, False, out, log=None)
    assert set(summary) >= {"ours", "plain", "none"}
    assert summary["ours"]["cases"] == summary["plain"]["cases"] == 6
    assert summary["ours"]["proposals"] == summary["before"]["proposals"] == summary["plain"]["proposals"] == 0
    raw = json.loads(out.read_text())
    assert [r["id"] for r in raw["rows"]] == [c["id"] for c in picked]
    line = ledger.record(["tandem-eval", "next-edit"], raw, out, ledger=tmp_path / "ledger.jsonl",
                         machine={"gflops": 1.0})
    assert {"ours", "plain", "none"} <= set(line["figures"]) and line["figures"]["none"]["no_edit_rate"] == 1.0
    # the suite's diffs read back as the hunks they were made of
    for c in picked:
        assert hunks_of(c["recent_edits"]), c["id"]
