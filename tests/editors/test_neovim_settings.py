"""The Neovim plugin's settings and set-up, headless: its default filetypes are every client's list
(lsp_server/protocol/languages.py); a lazy.nvim spec with only `opts` works from the repository root; and with the
real server, the settings the user set in Neovim, and only those, are in effect as the editor's, over
config.toml and the workspace's tandem.toml (the server's tandem/stats `settings`: key, value, origin)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from lsp_server.protocol.languages import DEFAULT_LANGUAGES
from nvim_helpers import run_nvim


def test_the_default_filetypes_are_every_client_s_languages(tmp_path):
    res = run_nvim(tmp_path, "nvim_lazy.lua")
    assert res["default_filetypes"] == [lang.neovim for lang in DEFAULT_LANGUAGES if lang.neovim]


def test_a_lazy_nvim_spec_with_opts_loads_the_plugin_from_the_repository_root(tmp_path):
    """What lazy.nvim does with `{ dir = <checkout>, opts = {...} }` (or the GitHub name): the root on the runtime
    path, its plugin/ sourced, the one module under its lua/ as `main`, `require(main).setup(opts)`."""
    res = run_nvim(tmp_path, "nvim_lazy.lua")
    assert res["modules"] == ["tandem"], res        # lazy's main: the one module at the root's lua/
    assert res["plugin_files"] == ["tandem.lua"], res
    # plugin/ ran before setup: the commands and the highlight are there
    assert res["commands_before_setup"] == {"Tandem": True, "TandemSnooze": True, "TandemResume": True,
                                            "TandemToggleLanguage": True, "TandemPullModels": True}, res
    assert res["highlight"] == {"default": True, "link": "Comment"}, res
    # a colorscheme's `:hi clear` does not lose it; a user's own definition wins
    assert res["highlight_after_colorscheme"] == {"default": True, "link": "Comment"}, res
    assert res["user_highlight"] == "String", res
    # setup(opts) ran: the server is configured with the user's command and settings, and only those
    assert res["cmd"] == ["my-tandem", "serve"], res
    assert res["init_options"] == {"maxTokensSingleLine": 12}, res
    assert res["sent_settings"] == {"tandem": {"maxTokensSingleLine": 12}}, res
    assert res["filetypes"] == ["python", "go"], res
    assert res["enabled"] is True, res
    # no settings: an empty JSON object, not an array
    assert res["empty_settings_json"] == "{}", res


@pytest.fixture
def layered(tmp_path):
    """config.toml for the server Neovim starts ($XDG_CONFIG_HOME/tandem: nvim_helpers gives nvim, and so its
    server, tmp/config) with a backend (so no model loads) and a line limit; a workspace (.git) with a
    tandem.toml; the file opened in it."""
    config = tmp_path / "config" / "tandem" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('backend = "http://127.0.0.1:9"\nmaxTokensSingleLine = 17\n')
    work = tmp_path / "work"
    (work / ".git").mkdir(parents=True)
    (work / "tandem.toml").write_text("timeBudgetMs = 1234\n")
    src = work / "app.py"
    src.write_text("def area(w, h):\n    return w * h\n")
    return config, work / "tandem.toml", src


def origin_is(entry: dict, path: Path) -> bool:
    return entry["origin"] not in ("default", "editor") and Path(entry["origin"]).resolve() == path.resolve()


def run_settings(tmp_path, src, settings: dict) -> dict:
    res = run_nvim(tmp_path, "nvim_settings.lua", str(src), timeout=120, TANDEM_PYTHON=sys.executable,
                   TANDEM_SETTINGS=json.dumps(settings), TANDEM_CACHE_DIR=str(tmp_path / "cache"))
    assert res["ok"], res
    return res


def test_settings_from_config_toml_and_the_workspace_are_in_effect_when_neovim_sets_none(tmp_path, layered):
    config, workspace, src = layered
    res = run_settings(tmp_path, src, {})
    s = res["start"]
    assert s["backend"]["value"] == "http://127.0.0.1:9" and origin_is(s["backend"], config), s["backend"]
    assert s["maxTokensSingleLine"]["value"] == 17 and origin_is(s["maxTokensSingleLine"], config), s
    assert s["timeBudgetMs"]["value"] == 1234 and origin_is(s["timeBudgetMs"], workspace), s["timeBudgetMs"]
    # Neovim sent nothing of its own (an empty object): no setting is the editor's
    assert not [k for k, e in s.items() if e["origin"] == "editor"], s
    assert s["enabled"] == {"value": True, "origin": "default"}, s["enabled"]
    # nothing answers at the backend's address: the load failed, and the statusline component says so
    assert res["statusline"] == "Tandem error", res


def test_a_setting_in_neovim_wins_and_each_change_replaces_what_neovim_set_before(tmp_path, layered):
    config, workspace, src = layered
    res = run_settings(tmp_path, src, {"maxTokensSingleLine": 23})
    s = res["start"]
    assert s["maxTokensSingleLine"] == {"value": 23, "origin": "editor"}, s
    assert origin_is(s["backend"], config) and origin_is(s["timeBudgetMs"], workspace), s
    assert [k for k, e in s.items() if e["origin"] == "editor"] == ["maxTokensSingleLine"], s
    # :Tandem disable sends the user's whole table again, with enabled in it
    d = res["disabled"]
    assert d["enabled"] == {"value": False, "origin": "editor"}, d["enabled"]
    assert d["maxTokensSingleLine"] == {"value": 23, "origin": "editor"}, d
    # the table emptied and sent again: the file's values and the defaults are back
    e = res["emptied"]
    assert e["enabled"] == {"value": True, "origin": "default"}, e["enabled"]
    assert e["maxTokensSingleLine"]["value"] == 17 and origin_is(e["maxTokensSingleLine"], config), e
    assert not [k for k, v in e.items() if v["origin"] == "editor"], e
