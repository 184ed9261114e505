"""The Neovim plugin's statusline component, snooze, per-filetype switch, :checkhealth tandem and
:TandemPullModels, headless with the real server and models (tests/editors/nvim_switches.lua)."""
import re
import sys

import pytest

from conftest import FIXTURES
from nvim_helpers import run_nvim

pytestmark = pytest.mark.models


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("switches")
    src = tmp / "store.go"
    src.write_text((FIXTURES / "lsp" / "store.go").read_text())
    res = run_nvim(tmp, "nvim_switches.lua", str(src), timeout=500, TANDEM_PYTHON=sys.executable)
    assert res["ok"], res
    return res


def test_the_statusline_follows_the_server_s_pushes_and_the_switches(session):
    res = session
    assert res["at_start"] == "Tandem loading", res
    assert res["seen"][0] == "Tandem loading" and "Tandem ready" in res["seen"], res["seen"]
    assert res["snoozed"] == "Tandem snoozed 30m" and res["snoozed_5"] == "Tandem snoozed 5m", res
    assert res["resumed"] == res["snooze_0"] == "Tandem ready", res
    assert "Tandem: :TandemSnooze takes minutes" in res["bad_snooze"], res
    assert res["language_off"] == res["python_off"] == "Tandem off" and res["language_on"] == "Tandem ready", res
    # switched off by the server's own push (tandem/status disabled), and on again
    assert res["disabled"] == "Tandem off" and res["enabled"] == "Tandem ready", res


def test_no_suggestion_is_asked_for_while_snoozed_or_switched_off(session):
    res = session
    assert res["asks_snoozed"] == 0 and res["asks_language_off"] == 0, res
    # the same typing asks once the snooze ends or the filetype is on again
    assert res["asks_resumed"] >= 1 and res["asks_language_on"] >= 1, res


def test_checkhealth_shows_the_plugin_s_checks_and_the_server_s_report(session):
    health = session["health"]
    assert re.search(r"server command: \S+ \(tandem \d+\.\d+\.\d+\)", health), health
    assert "server attached" in health and "models ready" in health, health
    text = session["health_text"]
    assert text and text.strip(), session
    # the server's report (tandem/health), line by line, as the server words it (the figures it measures at each
    # call, such as the machine's speed, aside)
    shown = [masked(line) for line in health.splitlines()]
    for report_line in filter(str.strip, text.splitlines()):
        assert any(masked(report_line) in line for line in shown), (report_line, health)


def masked(line: str) -> str:
    return re.sub(r"\d+", "N", line.strip())


def test_pull_models_runs_tandem_models_pull(session):
    assert session["pulled"].startswith("Tandem: models ready"), session["pulled"]
    assert "present and verified" in session["pulled"], session["pulled"]
