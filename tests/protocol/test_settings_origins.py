"""The real `tandem serve` over stdio, with a user config.toml (XDG_CONFIG_HOME in a temporary folder): what the file
sets is in effect with the file as its origin (tandem/stats and tandem/health say so), the editor's value of the
same key wins, and a configuration change without it falls back to the file. The file's backend points at a port
nothing listens on: the server says so and stays up."""
from __future__ import annotations

import asyncio
import os
import socket

import pytest
from lsprotocol import types
from pytest_lsp import ClientServerConfig

from conftest import FIXTURES, tandem_cmd
from lsp_helpers import health, setting, start, stats

# the backend's vocabulary is the default target's (read without weights)
pytestmark = [pytest.mark.asyncio, pytest.mark.models]


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def until(client, check, timeout: float = 30):
    for _ in range(int(timeout / 0.1)):
        s = await stats(client)
        if check(s):
            return s
        await asyncio.sleep(0.1)
    raise AssertionError(f"not in effect within {timeout} s: {s['settings']}")


async def test_the_config_file_s_settings_are_in_effect_until_the_editor_sets_them(tmp_path):
    url = f"http://127.0.0.1:{closed_port()}"
    config = tmp_path / "tandem" / "config.toml"
    config.parent.mkdir()
    config.write_text(f'maxTokensSingleLine = 7\nbackend = "{url}"\nbackendTimeoutMs = 500\n')
    client = await ClientServerConfig(server_command=tandem_cmd() + ["serve"], server_env={
        **os.environ, "XDG_CONFIG_HOME": str(tmp_path)}).start()
    try:
        # an editor sends only what its user set (and its own settings, which the server leaves to it)
        await start(client, {"maxTokens": 50, "logLevel": "debug"}, root=FIXTURES / "lsp")
        s = await stats(client)
        assert setting(s, "maxTokensSingleLine") == {"key": "maxTokensSingleLine", "value": 7, "origin": str(config)}
        assert setting(s, "backend") == {"key": "backend", "value": url, "origin": str(config)}
        assert setting(s, "maxTokens") == {"key": "maxTokens", "value": 50, "origin": "editor"}
        assert setting(s, "timeBudgetMs")["origin"] == "default"
        # nothing listens there: the server says so, and goes on answering
        s = await until(client, lambda s: s.get("backend", {}).get("health", {}).get("state") == "down")
        await asyncio.sleep(0.3)
        said = " ".join(m.message for m in client.messages) + str(s["load_error"]) + str(s["backend"])
        assert url.split("//")[1] in said, said

        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
            settings={"tandem": {"maxTokens": 50, "maxTokensSingleLine": 3}}))
        s = await until(client, lambda s: setting(s, "maxTokensSingleLine")["value"] == 3)
        assert setting(s, "maxTokensSingleLine")["origin"] == "editor"
        assert setting(s, "backend")["origin"] == str(config)
        # the next change replaces the editor's values: what it leaves out comes from the file, or the default
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"tandem": {}}))
        s = await until(client, lambda s: setting(s, "maxTokensSingleLine")["value"] == 7)
        assert setting(s, "maxTokensSingleLine")["origin"] == str(config)
        assert setting(s, "maxTokens") == {"key": "maxTokens", "value": 256, "origin": "default"}

        # tandem/health: the report `tandem doctor` prints, with the editor's layer
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
            settings={"tandem": {"gpu": "off"}}))
        await until(client, lambda s: setting(s, "gpu")["value"] == "off")
        h = await health(client)
        assert setting(h, "gpu") == {"key": "gpu", "value": "off", "origin": "editor"}
        assert setting(h, "backend")["origin"] == str(config)
        assert "the CPU (gpu: off)" in h["text"] and str(config) in h["text"] and "Python" in h["text"]
        assert h["server"]["workspace_root"] == str(FIXTURES / "lsp")
        assert [f["role"] for f in h["models"]["files"]] == ["vocabulary"]
        assert (await stats(client))["memory"]["rss_mib"]   # still up
    finally:
        await client.shutdown_session()
        await client.stop()


async def test_a_bad_config_file_is_named_and_the_editor_s_settings_still_apply(tmp_path):
    config = tmp_path / "tandem" / "config.toml"
    config.parent.mkdir()
    config.write_text('maxTokensSingleLine = "seven"\n')
    client = await ClientServerConfig(server_command=tandem_cmd() + ["serve"], server_env={
        **os.environ, "XDG_CONFIG_HOME": str(tmp_path)}).start()
    try:
        # a backend where nothing listens: no model is loaded for this
        await start(client, {"maxTokens": 50, "backend": f"http://127.0.0.1:{closed_port()}"}, root=FIXTURES / "lsp")
        await asyncio.sleep(0.3)
        errors = [m.message for m in client.messages if m.type == types.MessageType.Error]
        assert any(str(config) in m and "maxTokensSingleLine" in m for m in errors), errors
        s = await stats(client)
        assert setting(s, "maxTokens")["origin"] == "editor" and setting(s, "maxTokensSingleLine")["value"] == 40
        h = await health(client)
        assert not h["ok"] and any(str(config) in p["what"] and p["blocks"] for p in h["problems"])
    finally:
        await client.shutdown_session()
        await client.stop()


async def test_a_repository_s_tandem_toml_cannot_outweigh_its_user(tmp_path):
    """A cloned repository's tandem.toml that would re-include the user's secret files, turn on a language the user
    turned off, pin memory and keep the engine resident, and send the code elsewhere: only its harmless value and
    what narrows the user's choices apply; the rest is refused, each named."""
    url = f"http://127.0.0.1:{closed_port()}"
    config = tmp_path / "tandem" / "config.toml"
    config.parent.mkdir()
    config.write_text(f'exclude = ["*.secret"]\nlanguages = {{ markdown = false }}\ncontextSize = 2048\n'
                      f'backend = "{url}"\n')
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "tandem.toml").write_text('exclude = ["vendor/"]\nlanguages = { markdown = true }\n'
                                      'contextSize = 100000000\nkvStoreMiB = 60000\nengineIdleMinutes = 1000\n'
                                      'backend = "http://elsewhere.example:80"\nmaxTokensSingleLine = 9\n'
                                      'maxTokens = 2.5\n')
    client = await ClientServerConfig(server_command=tandem_cmd() + ["serve"], server_env={
        **os.environ, "XDG_CONFIG_HOME": str(tmp_path)}).start()
    try:
        await start(client, {}, root=repo)
        await asyncio.sleep(0.3)
        s = await stats(client)
        ws = str(repo / "tandem.toml")
        assert setting(s, "exclude") == {"key": "exclude", "value": ["*.secret", "vendor/"], "origin": ws}
        assert setting(s, "languages")["value"] == {"markdown": False}
        assert setting(s, "contextSize") == {"key": "contextSize", "value": 2048, "origin": str(config)}
        assert setting(s, "backend") == {"key": "backend", "value": url, "origin": str(config)}
        assert setting(s, "maxTokensSingleLine") == {"key": "maxTokensSingleLine", "value": 9, "origin": ws}
        for key in ("kvStoreMiB", "engineIdleMinutes", "maxTokens"):
            assert setting(s, key)["origin"] == "default", setting(s, key)
        said = [m.message for m in client.messages]
        for key in ("languages", "contextSize", "kvStoreMiB", "engineIdleMinutes", "backend", "maxTokens"):
            assert any(ws in m and key in m for m in said), (key, said)
        assert (await stats(client))["memory"]["rss_mib"]   # still up
    finally:
        await client.shutdown_session()
        await client.stop()


async def test_a_workspace_the_editor_does_not_trust_has_no_say_over_stdio(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "tandem.toml").write_text("maxTokensSingleLine = 9\n")
    client = await ClientServerConfig(server_command=tandem_cmd() + ["serve"], server_env={
        **os.environ, "XDG_CONFIG_HOME": str(tmp_path)}).start()
    try:
        # VS Code in a workspace the user has not trusted (and a backend where nothing listens: no model loads)
        await start(client, {"workspaceTrusted": False, "backend": f"http://127.0.0.1:{closed_port()}"}, root=repo)
        await asyncio.sleep(0.3)
        s = await stats(client)
        assert setting(s, "maxTokensSingleLine") == {"key": "maxTokensSingleLine", "value": 40, "origin": "default"}
        assert any("not trusted" in m.message and "tandem.toml" in m.message for m in client.messages)
    finally:
        await client.shutdown_session()
        await client.stop()
