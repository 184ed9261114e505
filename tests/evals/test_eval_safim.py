"""`tandem-eval safim`: the data and its split by problem, the editor's view of a hole, the scorer that compiles
and runs the programs (checked on the ground truth), and a short run with the real models through the CLI."""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
from collections import defaultdict

import pytest

from conftest import ROOT, eval_cmd
from evals.suites import safim
from evals.common.halves import half_of
from evals.suites.programs import Runner, same_output
from evals.suites.safim import Task, UnitTest, editor_view, load_tasks, select, tasks_for

needs_data = pytest.mark.skipif(not safim.DEFAULT_DATA.is_file(), reason=f"no {safim.DEFAULT_DATA}")


@pytest.fixture(scope="module")
def tasks():
    return load_tasks(safim.DEFAULT_DATA)


def args(**kw) -> argparse.Namespace:
    base = dict(safim_kinds=["block", "control"], safim_languages=None, half="all", tasks=None, limit=0, seed=None)
    return argparse.Namespace(**{**base, **kw})


def row(eval_prompt: str, truth: str, task_id: str = "block_completion_000007", tests=True) -> dict:
    r = {"lang": "python", "task_id": task_id, "eval_prompt": eval_prompt, "ground_truth": truth,
         "prompt": "Complete the code in python to solve this programming problem:\n\nDescription: Add.\n\n"
                   "Code:\n\n..."}
    if tests:
        r["unit_tests"] = [{"input": "2 3", "output": ["5"]}]
    return r


@pytest.mark.slow
@needs_data
def test_the_data_loads_with_unique_ids_and_splits_by_problem(tasks):
    assert len(tasks) == 14308 and len({t.task_id for t in tasks}) == len(tasks)
    kinds = {t.kind for t in tasks}
    assert kinds == {"block", "control", "api"} and all("\r" not in t.prefix + t.suffix for t in tasks)
    # the API rows (no tests, no problem statement) carried block ids: renamed, and scored without tests
    api = [t for t in tasks if t.kind == "api"]
    assert len(api) == 310 and not any(t.tests for t in api) and api[0].task_id == "api_completion_000000"
    assert all(t.tests for t in tasks if t.kind != "api")
    # a problem's tasks, of every kind and language, fall in one half; both halves have tasks of each language
    halves = defaultdict(set)
    for t in tasks:
        halves[t.problem].add(half_of(t.problem))
    assert all(len(h) == 1 for h in halves.values()) and len(halves) > 400
    langs = {t.problem: set() for t in tasks}
    for t in tasks:
        langs[t.problem].add(t.lang)
    assert any(len(x) > 1 for x in langs.values())   # the same statement in several languages: one key
    tune, confirm = (tasks_for(args(half=h), safim.DEFAULT_DATA)[0] for h in ("tune", "confirm"))
    assert tune and confirm and not {t.task_id for t in tune} & {t.task_id for t in confirm}
    assert {t.lang for t in tune} == {t.lang for t in confirm} >= {"python", "cpp", "java"}
    # the block and control tasks cut from the same program share a problem
    by_id = {t.task_id: t for t in tasks}
    assert by_id["block_completion_000000"].problem == by_id["control_completion_000000"].problem
    again = tasks_for(args(half="tune"), safim.DEFAULT_DATA)[0]
    assert [t.task_id for t in again] == [t.task_id for t in tune]


def test_a_seeded_sample_is_shared_among_the_languages_and_kept_in_file_order():
    langs = ["cpp"] * 60 + ["java"] * 30 + ["python"] * 10
    ts = [Task(f"block_completion_{i:06}", lang, "block", "", "", "", [], str(i)) for i, lang in enumerate(langs)]
    a, b = select(ts, 9, 1), select(ts, 9, 1)
    assert a == b and a != select(ts, 9, 2) and len(a) == 9
    assert [t.lang for t in a].count("python") == 3 and [t.lang for t in a].count("cpp") == 3
    assert [t.task_id for t in a] == sorted(t.task_id for t in a)
    assert len(select(ts, 40, 1)) == 40 and [t.lang for t in select(ts, 40, 1)].count("python") == 10
    assert select(ts, 0, 1) == ts


def test_the_hole_becomes_a_cursor_in_the_document():
    # a hole of whole lines (its line's trailing blanks dropped): an empty line at the hole's indentation
    t = safim._task(row("a, b = map(int, input().split())\r\nif a:\r\n    {{completion}}  \r\nprint(s)\r\n",
                        "s = a + b\r\n    s += 0"))
    assert "\r" not in t.prefix + t.suffix + t.ground_truth and t.ground_truth == "s = a + b\n    s += 0"
    doc, line, col = editor_view(t)
    assert (line, col) == (2, 4) and doc.text.split("\n")[2] == "    " and doc.language == "python"
    assert doc.path == "solution.py" and t.program(t.ground_truth).endswith("    s += 0\nprint(s)\n")
    # a hole inside a line (a control task's condition): the cursor between what stays of the line
    t = safim._task(row("for x in range(3):\n    if {{completion}}:\n        print(x)\n", "x > 1",
                        "control_completion_000001"))
    doc, line, col = editor_view(t)
    assert (line, col) == (1, 7) and doc.text.split("\n")[1] == "    if :" and t.kind == "control"
    # an API task: renamed, its file is its problem
    t = safim._task({**row("import os\nx = {{completion}}\n", "os.getcwd()", tests=False),
                     "prompt": "Complete the code in python:\n\nimport os\n"})
    assert (t.task_id, t.kind, t.problem) == ("api_completion_000007", "api", "import os\nx = os.getcwd()\n")
    assert Runner().score(t, "os.getcwd( )").passed is False and Runner().score(t, " os.getcwd()\n").passed
    java = Task("x", "java", "block", "package a.b;\npublic final class Solve {\n", "}\n", "", [], "")
    assert java.path == "Solve.java"


def test_outputs_compare_by_token_with_numbers_close_enough():
    assert same_output("1 2\n3\n", " 1 2 3")
    assert same_output("0.3333333", "0.333333333") and same_output("1e9", "1000000000.0000001")
    assert not same_output("0.3334", "0.3333") and not same_output("1 2", "1 2 3") and not same_output("a", "b")
    assert same_output("yes No", "YES NO") and not same_output("abc", "ABC") and not same_output("nan", "0")


@pytest.mark.slow
def test_the_runner_scores_by_running_the_tests(tmp_path):
    add = Task("block_completion_1", "python", "block", "a, b = map(int, input().split())\n", "\nprint(s)\n",
               "s = a + b", [UnitTest("2 3", ["5"]), UnitTest("10 -1", ["9", "nine"])], "")
    box = Runner(timeout_s=3)
    assert box.score(add, "s = a + b").passed
    assert box.score(add, "s = a - b").error == "test 1: wrong answer"
    assert box.score(add, "s = a + b if a < 5 else 0").error == "test 2: wrong answer"
    assert "timeout" in box.score(add, "while True: pass").error
    assert "NameError" in box.score(add, "pass").error
    future = Task("x", "python", "block", "from __future__ import annotations\n", "\n", "", [UnitTest("", [""])], "")
    assert box.score(future, "import os").passed   # the guard runs first, the program's __future__ stays valid
    assert "not allowed" in box.score(future, "import os; os.system('true')").error


@pytest.mark.slow
@needs_data
@pytest.mark.parametrize("lang", ["python", "cpp", "java"])
def test_the_ground_truth_passes_its_tests_and_a_wrong_answer_fails(tasks, lang):
    if safim.toolchains((lang,), install=False)[lang]:
        pytest.skip(f"no {lang} toolchain")
    box = Runner(timeout_s=10)
    picked = [t for t in select([t for t in tasks if t.lang == lang and t.kind != "api"], 3, 5)]
    assert {t.kind for t in picked} <= {"block", "control"} and len(picked) == 3
    for t in picked:
        assert box.score(t, t.ground_truth).passed, (t.task_id, box.score(t, t.ground_truth))
    t = picked[0]
    wrong = box.score(t, "")
    assert not wrong.passed and wrong.error.startswith(("compile error", "test 1")), wrong


@pytest.mark.slow
@needs_data
def test_a_language_without_its_toolchain_is_left_out_with_why():
    if shutil.which("dotnet"):
        pytest.skip("a dotnet SDK is here")
    picked, left_out = tasks_for(args(limit=8, seed=3), safim.DEFAULT_DATA)
    assert "dotnet" in left_out["csharp"] and {t.lang for t in picked} == {"python", "cpp", "java"}
    picked, left_out = tasks_for(args(safim_kinds=["api"], safim_languages=["csharp"]), safim.DEFAULT_DATA)
    assert not left_out and len(picked) == 21   # API tasks need no compiler
    p = subprocess.run(eval_cmd() + ["safim", "--safim-languages", "csharp"], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "no block/control task in csharp" in p.stderr, p.stderr


@pytest.mark.models
@needs_data
def test_a_short_run_with_the_real_model_and_its_resumption(tmp_path):
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    run = ["safim", "--limit", "3", "--seed", "1"]
    p = subprocess.run(eval_cmd() + run + ["--json", str(first)], cwd=ROOT, capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0, p.stderr
    assert "pass@1" in p.stdout and "by language" in p.stdout and "csharp: block and control tasks skipped" in p.stdout
    r = json.loads(first.read_text())
    assert (r["tasks"], r["partial"], r["half"], r["seed"], r["limit"]) == (3, False, "all", 1, 3)
    assert r["data"].endswith("safim-dev.jsonl.gz") and "csharp" in r["skipped_languages"]
    assert set(r["summary"]) == {"raw", "pipeline", "tab"} and set(r["by_language"]) == {"python", "cpp", "java"}
    assert len(r["results"]) == 3 and r["canonical_fails"] == []
    for res in r["results"]:
        assert res["canonical"]["passed"] and {"raw", "pipeline", "tab"} <= set(res)
        assert {"middle", "passed", "exact", "error", "tokens", "stop"} <= set(res["pipeline"])
    # what the JSON says passed really runs
    by_id = {t.task_id: t for t in load_tasks(safim.DEFAULT_DATA)}
    res = r["results"][0]
    assert Runner().score(by_id[res["task_id"]], res["raw"]["middle"]).passed == res["raw"]["passed"]
    p = subprocess.run(eval_cmd() + run + ["--resume", str(first), "--json", str(second)], cwd=ROOT,
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    assert "3 answered already" in p.stderr
    r2 = json.loads(second.read_text())
    assert r2["results"] == r["results"] and r2["summary"] == r["summary"]
