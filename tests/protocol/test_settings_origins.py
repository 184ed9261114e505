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
