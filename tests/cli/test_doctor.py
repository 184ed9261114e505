"""`tandem doctor` as a user runs it: every setting in effect with where it came from (defaults < config.toml < the
workspace's tandem.toml around the working folder), the problems with what to do, and exit 1 when something stops
completion (a bad config file, a missing model)."""
import json
import os
import subprocess
import time

import pytest

from conftest import tandem_cmd


def doctor(cwd, config_home, *args, cache=None):
    env = {**os.environ, "XDG_CONFIG_HOME": str(config_home)}
    if cache is not None:
        env["TANDEM_CACHE_DIR"] = str(cache)
    t0 = time.monotonic()
    out = subprocess.run(tandem_cmd() + ["doctor", *args], capture_output=True, text=True, cwd=cwd, env=env,
                         timeout=120)
    return out, time.monotonic() - t0


@pytest.fixture
def places(tmp_path):
    (tmp_path / "cfg" / "tandem").mkdir(parents=True)
    (tmp_path / "ws" / ".git").mkdir(parents=True)
    (tmp_path / "ws" / "src").mkdir()
    return tmp_path / "cfg" / "tandem" / "config.toml", tmp_path / "ws"


@pytest.mark.models
def test_doctor_says_where_each_setting_comes_from(places, tmp_path):
    config, ws = places
    config.write_text('maxTokensSingleLine = 7\ngpu = "off"\ndraft = "none"\nengine = "local"\nsuggestions = "quiet"\n')
    (ws / "tandem.toml").write_text('[tandem]\nmaxTokens = 30\nbackend = "http://elsewhere:1"\n')
    out, took = doctor(ws / "src", tmp_path / "cfg", "--json")   # the workspace is found above the working folder
    assert out.returncode == 0, out.stdout + out.stderr
    r = json.loads(out.stdout)
    got = {s["key"]: (s["value"], s["origin"]) for s in r["settings"]}
    assert got["maxTokensSingleLine"] == (7, str(config)) and got["gpu"] == ("off", str(config))
    assert got["maxTokens"] == (30, str(ws / "tandem.toml"))
    assert got["backend"] == ("", "default") and got["timeBudgetMs"] == (1500, "default")
    # what the workspace may not set is a warning, not a failure
    assert any("backend" in p["what"] and not p["blocks"] for p in r["problems"])
    assert [(m["role"], m["state"]) for m in r["models"]["files"]] == [("target", "ok")]
    assert r["llama_cpp"]["runs_on"].startswith("the CPU") and r["machine"]["gflops"] > 0
    assert {e["name"] for e in r["editors"]} == {"code", "code-server", "codium", "nvim", "hx"}
    assert r["python"]["version"].startswith("3.") and r["version"]
    assert r["suggestions"] == {"level": "quiet", "gated": True,
                                "means": "only answers the model is very sure of: fewer, shorter suggestions"}
    assert took < 30, f"doctor took {took:.1f} s"   # no model load (a loaded CI machine: generous)
    # the text: the same, for a person
    text, _ = doctor(ws, tmp_path / "cfg")
    assert text.returncode == 0
    line = next(l for l in text.stdout.splitlines() if l.strip().startswith("maxTokensSingleLine"))
    assert "7" in line and str(config) in line
    assert "the CPU (gpu: off)" in text.stdout and "Problems:" in text.stdout
    assert "ghost text    suggestions: quiet, only answers the model is very sure of" in text.stdout, text.stdout


def test_a_bad_config_file_fails_with_what_is_wrong_and_where(places, tmp_path):
    config, ws = places
    config.write_text('maxTokens = "many"\n')
    out, _ = doctor(ws, tmp_path / "cfg", cache=tmp_path / "cache")
    assert out.returncode == 1
    assert f"ERROR: {config}: setting maxTokens: expected int" in out.stdout, out.stdout
    config.write_text("maxTokens = [\n")
    out, _ = doctor(ws, tmp_path / "cfg", "--json", cache=tmp_path / "cache")
    r = json.loads(out.stdout)
    assert out.returncode == 1 and not r["ok"]
    assert any(str(config) in p["what"] and p["blocks"] for p in r["problems"])
    assert {f["path"]: f["used"] for f in r["config_files"]}[str(config)] is False


def test_missing_models_fail_with_the_command_that_fetches_them(places, tmp_path):
    config, ws = places
    out, _ = doctor(ws, tmp_path / "cfg", cache=tmp_path / "empty-cache")
    assert out.returncode == 1
    assert "the target model" in out.stdout and "run `tandem models pull`" in out.stdout, out.stdout
    r = json.loads(doctor(ws, tmp_path / "cfg", "--json", cache=tmp_path / "empty-cache")[0].stdout)
    assert {m["role"]: m["state"] for m in r["models"]["files"]} == {"target": "missing", "draft": "missing"}
    # a missing draft alone does not stop completion (target-only)
    draft = [p for p in r["problems"] if "draft model" in p["what"]]
    assert draft and not draft[0]["blocks"]
