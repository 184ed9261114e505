"""The `tandem` command as a user runs it."""
import json
import subprocess

import pytest

from conftest import FIXTURES, ROOT, tandem_cmd


def run(*args, timeout=600):
    return subprocess.run(tandem_cmd() + list(args), capture_output=True, text=True, cwd=ROOT, timeout=timeout)


@pytest.mark.models
def test_complete_prints_a_completion_and_its_statistics():
    out = run("complete", str(FIXTURES / "demo" / "orders.py"), "--line", "40", "--col", "1", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert '"orderId": self.order_id' in data["completion"]
    s = data["stats"]
    assert s["tokens"] > 10 and s["tok_s"] > 0
    assert s["prompt_tokens"] == s["prompt_evaluated"] + s["prompt_reused"]
    assert s["speculative"] is True and "drafters" in s


@pytest.mark.models
def test_complete_plain_text_output():
    out = run("complete", str(FIXTURES / "demo" / "orders.py"), "--line", "40", "--col", "1", "--no-spec")
    assert out.returncode == 0, out.stderr
    assert "self.order_id" in out.stdout
    assert "tok/s" in out.stderr and "plain" in out.stderr and "reused from the KV cache" in out.stderr


def test_bad_positions_and_files_get_clear_errors(tmp_path):
    demo = str(FIXTURES / "demo" / "orders.py")
    out = run("complete", demo, "--line", "999", "--col", "1")
    assert out.returncode == 2 and "line 999 is outside the file" in out.stderr
    out = run("complete", demo, "--line", "1", "--col", "500")
    assert out.returncode == 2 and "column 500 is outside line 1" in out.stderr
    binary = tmp_path / "blob.py"
    binary.write_bytes(b"\x00\x01\x02binary")
    out = run("complete", str(binary), "--line", "1", "--col", "1")
    assert out.returncode == 2 and "binary" in out.stderr
    out = run("complete", str(tmp_path / "nope.py"), "--line", "1", "--col", "1")
    assert out.returncode == 2 and "cannot read" in out.stderr
    out = run("complete", demo, "--line", "40", "--col", "1", "--target", str(tmp_path / "none.gguf"))
    assert out.returncode == 1 and "model file not found" in out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.models
def test_bench_writes_the_table_and_json(tmp_path):
    js = tmp_path / "bench.json"
    out = run("bench", "--categories", "json-api", "--limit", "2", "--max-tokens", "24", "--no-memory",
              "--json", str(js))
    assert out.returncode == 0, out.stderr
    assert "| JSON schema & API mappings |" in out.stdout
    rows = json.loads(js.read_text())["rows"]
    assert len(rows) == 1
    for key in ("category", "baseline_tok_s", "spec_tok_s", "acceptance", "speedup", "identical"):
        assert key in rows[0]
    assert rows[0]["baseline_tok_s"] > 0 and rows[0]["spec_tok_s"] > 0
    # three alternating passes per path by default, their spread shown beside the speedup
    assert rows[0]["passes"] == 3 and 0 <= rows[0]["spread"] < 1 and "| Spread | A/A |" in out.stdout
    assert 0 <= rows[0]["aa_noise"] < 1


def test_bench_refuses_a_repeat_below_one_and_a_server():
    out = run("bench", "--repeat", "0", "--no-memory")
    assert out.returncode == 2 and "--repeat must be at least 1 (got 0)" in out.stderr
    assert "Traceback" not in out.stderr
    # a server's speed beside plain decoding needs two servers: the lab's speed command measures it
    out = run("bench", "--backend", "http://127.0.0.1:9", "--no-memory")
    assert out.returncode == 2 and "tandem-eval speed --backend URL --backend-plain URL" in out.stderr
