"""`tandem-eval humaneval`: the data loading, the sandbox that runs model code, and a short run with the real
models through the CLI."""
from __future__ import annotations

import gzip
import json
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import ROOT, eval_cmd
from evals.suites.humaneval import (DEFAULT_DATA, Task, default_data, editor_view, load_tasks, program,
                                        same_code, select)
from evals.common.sandbox import Sandbox

TASK = {"task_id": "T/0", "entry_point": "add", "prompt": "def add(a, b):\n",
        "suffix": "\n\ndef unused():\n    pass\n", "canonical_solution": "    return a + b\n",
        "test": "def check(candidate):\n    assert candidate(2, 3) == 5\n"}


def test_the_repository_keeps_the_same_data_as_the_shared_copy():
    ours = DEFAULT_DATA[1]
    assert ours.is_file() and len(load_tasks(ours)) == 1033
    if DEFAULT_DATA[0].is_file():
        assert DEFAULT_DATA[0].read_bytes() == ours.read_bytes()
    assert default_data().is_file()


def test_tasks_load_from_gzip_or_plain_jsonl_and_bad_files_say_why(tmp_path):
    plain = tmp_path / "tasks.jsonl"
    plain.write_text(json.dumps(TASK) + "\n\n" + json.dumps({**TASK, "task_id": "T/1"}) + "\n")
    packed = tmp_path / "tasks.data"   # gzip told by its bytes, not its name
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    assert [t.task_id for t in load_tasks(plain)] == [t.task_id for t in load_tasks(packed)] == ["T/0", "T/1"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"task_id": "x", "prompt": "p"}) + "\n")
    with pytest.raises(ValueError, match="missing or not text: suffix, test, entry_point"):
        load_tasks(bad)
    bad.write_text("{not json\n")
    with pytest.raises(ValueError, match="bad.jsonl:1: not JSON"):
        load_tasks(bad)
    with pytest.raises(ValueError, match="cannot read"):
        load_tasks(tmp_path / "missing.jsonl")


def test_a_seeded_sample_is_reproducible_and_in_file_order():
    tasks = [Task(f"T/{i}", "", "", "", "f") for i in range(50)]
    a, b = select(tasks, 10, 7), select(tasks, 10, 7)
    assert a == b and len(a) == 10 and a != tasks[:10]
    assert [int(t.task_id[2:]) for t in a] == sorted(int(t.task_id[2:]) for t in a)
    assert select(tasks, 10, None) == tasks[:10] and select(tasks, 0, 3) == tasks


def test_the_editor_puts_the_cursor_on_an_empty_line_between_prompt_and_suffix():
    task = Task(**{k: TASK[k] for k in ("task_id", "prompt", "suffix", "test", "entry_point")})
    doc, line, col, tail = editor_view(task)
    assert (line, col, tail) == (1, 0, "\n")
    assert doc.text.split("\n")[1] == "" and doc.text == task.prompt + "\n" + task.suffix
    assert same_code("    return a + b  \n\n", "    return a + b\n") and not same_code("return a+b", "return a + b")


def test_the_sandbox_scores_code_by_running_it():
    box = Sandbox(timeout_s=3)
    task = Task(**{k: TASK[k] for k in ("task_id", "prompt", "suffix", "test", "entry_point")})
    assert box.run(program(task, "    return a + b\n")).passed
    wrong = box.run(program(task, "    return a - b\n"))
    assert not wrong.passed and "AssertionError" in wrong.error
    slow = box.run(program(task, "    while True:\n        pass\n"))
    assert not slow.passed and "timeout" in slow.error
    net = box.run("import socket\nsocket.create_connection(('pypi.org', 443), timeout=2)\n")
    assert not net.passed and "not allowed" in net.error
    if box.prefix:   # a fresh socket module past the guard still finds no network in the namespace
        net = box.run("import importlib, socket\nimportlib.reload(socket)\n"
                      "socket.create_connection(('151.101.0.223', 443), timeout=2)\n")
        assert not net.passed and "unreachable" in net.error.lower(), net
    mark = Path(tempfile.gettempdir()) / "tandem-sandbox-escape-check"
    mark.unlink(missing_ok=True)
    escape = box.run(f"import os\nos.system('touch {mark}')\n")
    assert not escape.passed and "not allowed" in escape.error and not mark.exists()
    assert not box.run("import subprocess\nsubprocess.run(['true'])\n").passed
    assert box.run("open('scratch.txt', 'w').write('1')\n").passed   # its own folder, which goes away


def test_shared_engine_is_refused_where_no_server_starts_before_any_model_loads():
    """Only `tandem-eval real` starts servers: the other suites have no --shared-engine, said at once (no model is
    cached where the fast tier runs this, so a load would fail otherwise)."""
    for suite in ("safim", "humaneval"):
        shared = subprocess.run(eval_cmd() + [suite, "--shared-engine"], cwd=ROOT,
                                capture_output=True, text=True, timeout=60)
        assert shared.returncode == 2 and "unrecognized arguments: --shared-engine" in shared.stderr, shared.stderr


@pytest.mark.models
def test_a_short_run_with_the_real_model(tmp_path):
    out = tmp_path / "eval.json"
    p = subprocess.run(eval_cmd() + ["humaneval", "--limit", "4", "--json", str(out)], cwd=ROOT,
                       capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr
    assert "pass@1" in p.stdout and "speculative vs plain" in p.stdout
    r = json.loads(out.read_text())
    assert r["tasks"] == 4 and not r["partial"] and len(r["results"]) == 4
    assert set(r["summary"]) == {"raw", "plain", "pipeline", "tab"}
    for row in r["summary"].values():
        assert row["tasks"] == 4 and 0 <= row["passed"] <= 4
    first = r["results"][0]
    assert first["task_id"] == "SingleLineInfilling/HumanEval/0/L0"
    assert {"middle", "passed", "exact", "error", "tokens"} <= set(first["pipeline"])
    # the pipeline's middle ends with the line break the editor already had
    assert first["pipeline"]["middle"].endswith("\n")
    # what the JSON says passed really runs
    task = load_tasks(default_data())[0]
    assert Sandbox().run(program(task, first["pipeline"]["middle"])).passed == first["pipeline"]["passed"]
    bad = subprocess.run(eval_cmd() + ["humaneval", "--data", str(tmp_path / "none.jsonl")], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "cannot read" in bad.stderr


@pytest.mark.models
def test_a_long_run_resumes_from_its_json(tmp_path):
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    run = ["humaneval", "--skip", "raw", "plain", "tab"]
    p = subprocess.run(eval_cmd() + run + ["--limit", "2", "--json", str(first)], cwd=ROOT,
                       capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr
    r = json.loads(first.read_text())
    # as a run stopped after its first task would have left it, with a mark that it was not recomputed
    r["results"] = r["results"][:1]
    r["results"][0]["pipeline"]["middle"] = "    from_the_first_run = True\n"
    r["results"][0]["pipeline"]["passed"] = True
    first.write_text(json.dumps(r))
    p = subprocess.run(eval_cmd() + run + ["--limit", "3", "--resume", str(first), "--json", str(second)],
                       cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr
    assert "1 answered already" in p.stderr
    r2 = json.loads(second.read_text())
    assert r2["tasks"] == 3 and [x["task_id"] for x in r2["results"]] == [t.task_id for t in load_tasks(
        default_data())[:3]]
    assert r2["results"][0]["pipeline"]["middle"] == "    from_the_first_run = True\n"
    assert r2["summary"]["pipeline"]["tasks"] == 3 and r2["summary"]["pipeline"]["passed"] >= 1
    # a JSON without the variants asked for is refused, not half used
    p = subprocess.run(eval_cmd() + ["humaneval", "--skip", "raw", "tab", "--limit", "3", "--resume",
                                       str(first)], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert p.returncode != 0 and "no plain answers" in p.stderr


@pytest.mark.models
def test_tab_until_done_accepts_and_asks_again_through_the_servers_path(tmp_path):
    data = ROOT / "fixtures" / "humaneval" / "multi-line-sample.jsonl"
    out = tmp_path / "tab.json"
    p = subprocess.run(eval_cmd() + ["humaneval", "--data", str(data), "--skip", "raw", "plain",
                                       "--json", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr
    assert "Tab until done:" in p.stdout and "latency p50" in p.stdout
    r = json.loads(out.read_text())
    assert set(r["summary"]) == {"pipeline", "tab"} and r["summary"]["tab"]["requests"] >= 3
    tasks = {t.task_id: t for t in load_tasks(data)}
    for res in r["results"]:
        tab = res["tab"]
        # one request per accepted suggestion, and the one that said it was done (unless the answer ran away)
        assert len(tab["step_ms"]) == len(tab["sources"]) in (tab["steps"], tab["steps"] + 1), tab
        assert tab["stop"] in ("empty", "repeats", "grown", "steps") and all(ms > 0 for ms in tab["step_ms"])
        assert Sandbox().run(program(tasks[res["task_id"]], tab["middle"])).passed == tab["passed"]
    # the model ended its middle right after the first answer's line: the next Tab finds that nothing more is
    # to come, in the server's cache, at once (not a new generation that writes a line of its own)
    one = next(x for x in r["results"] if x["task_id"].endswith("0/L3_L4"))
    assert one["tab"]["sources"][1:2] == ["cache"] and one["tab"]["stop"] == "empty", one
    # a new line between statements, where a line or a block may be missing: the model wrote the block (a loop
    # and its body) and ended the middle, so the first answer is that whole block, and the next Tab is empty
    gcd = next(x for x in r["results"] if x["task_id"].endswith("13/L0_L1"))
    first = gcd["pipeline"]
    assert first["mode"] == "inside a block" and first["stop"] in ("eog", "stop"), first
    assert first["middle"].count("\n") == 2 and first["passed"], first
    assert gcd["tab"]["steps"] == 1 and gcd["tab"]["sources"][1:] == ["cache"] and gcd["tab"]["passed"], gcd
