"""The lab's session commands (tandem-eval replay, visits) from the command line."""
import json
import subprocess

import pytest

from conftest import ROOT, eval_cmd


def run(*args, timeout=60):
    return subprocess.run(eval_cmd() + list(args), capture_output=True, text=True, cwd=ROOT, timeout=timeout)


@pytest.mark.parametrize("bench", [["replay", "--limit-chars", "5"], ["visits", "--limit", "1"]])
def test_benches_drive_the_server_command_they_are_given(bench):
    # --server-cmd drives another checkout's server side by side; a command that is not there is said in one line
    out = run(*bench, "--server-cmd", "/nonexistent/tandem serve", timeout=120)
    assert out.returncode == 1 and "No such file or directory: '/nonexistent/tandem'" in out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.models
def test_replay_types_a_session_against_the_real_server(tmp_path):
    out = tmp_path / "replay.json"
    r = subprocess.run(eval_cmd() + ["replay", "--only", "order_service.go", "--limit-chars", "30",
                                       "--speed", "2", "--json", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "last keystroke -> completion" in r.stdout and "peak RSS" in r.stdout
    data = json.loads(out.read_text())
    assert data["keystrokes"] >= 10 and data["requests"] == data["keystrokes"]
    assert data["errors"] == 0 and data["answered"] >= 1
    assert data["latency_ms"]["at_pause_n"] >= 1 and data["latency_ms"]["at_pause_p50"] > 0
    assert data["prompt"]["model_requests"] >= 1 and 0 < data["prompt"]["evaluated_fraction_median"] <= 1
    assert 500 < data["peak_rss_mb"] < 8000
    for key in ("typing_through", "tokens", "accepted", "sources"):
        assert key in data
