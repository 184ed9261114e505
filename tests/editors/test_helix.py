"""Helix: the languages.toml parses and starts a command that exists, and the server driven the way Helix
drives it (its capabilities: UTF-8 positions, no inline completion, no $/cancelRequest) completes through the
popup path, with stale requests superseded."""
from __future__ import annotations

import asyncio
import shutil
import sys
import time
import tomllib
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from conftest import FIXTURES, ROOT, tandem_cmd
from lsp_server.protocol.languages import DEFAULT_LANGUAGES
from lsp_helpers import blank_cursor, open_doc, popup, stats, wait_ready

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.models]
HELIX = ROOT / "editors" / "helix" / "languages.toml"

# what Helix 25.x announces (helix-lsp/src/client.rs): UTF-8 first, completion but no inline completion
HELIX_CAPS = types.ClientCapabilities(
    general=types.GeneralClientCapabilities(position_encodings=[
        types.PositionEncodingKind.Utf8, types.PositionEncodingKind.Utf32, types.PositionEncodingKind.Utf16]),
    text_document=types.TextDocumentClientCapabilities(
        completion=types.CompletionClientCapabilities(completion_item=types.ClientCompletionItemOptions(
            snippet_support=True, insert_replace_support=True, deprecated_support=True,
            documentation_format=[types.MarkupKind.Markdown])),
        synchronization=types.TextDocumentSyncClientCapabilities(did_save=True)),
    window=types.WindowClientCapabilities(work_done_progress=True),
    workspace=types.WorkspaceClientCapabilities(configuration=True, did_change_configuration=
                                                types.DidChangeConfigurationClientCapabilities()))


@pytest.mark.asyncio(loop_scope="module")
async def test_languages_toml_registers_a_command_that_exists():
    conf = tomllib.loads(HELIX.read_text())
    server = conf["language-server"]["tandem"]
    assert server["args"] == ["serve"]
    # the command is the package's console script, installed next to this Python
    found = shutil.which(server["command"], path=str(Path(sys.executable).parent))
    assert found, f"{server['command']} not found beside {sys.executable}"
    # the sample pins no setting: the server's defaults and the user's config files apply
    assert "config" not in server, server
    # every client's languages (lsp_server/protocol/languages.py), in Helix's names, once each
    names = [lang["name"] for lang in conf["language"]]
    assert names == [lang.helix for lang in DEFAULT_LANGUAGES if lang.helix], names
    for lang in conf["language"]:
        tandem = [s for s in lang["language-servers"] if isinstance(s, dict) and s["name"] == "tandem"]
        assert tandem and tandem[0]["only-features"] == ["completion"]


# what a user adds under [language-server.tandem] as `config` (the sample has none); Helix sends it as the
# initializationOptions and again right after `initialized`
USER_CONFIG = {"maxTokensSingleLine": 40}


@pytest_lsp.fixture(config=ClientServerConfig(server_command=tandem_cmd() + ["serve"]), scope="module")
async def helix(lsp_client: LanguageClient):
    lsp_client.init_result = await lsp_client.initialize_session(types.InitializeParams(
        capabilities=HELIX_CAPS, root_uri=(FIXTURES / "lsp").as_uri(), initialization_options=USER_CONFIG))
    # as Helix does right after `initialized`, while the models load
    lsp_client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=USER_CONFIG))
    s = await wait_ready(lsp_client)
    assert s["ready"], s["load_error"]
    yield
    await lsp_client.shutdown_session()


def utf8_col(line: str) -> int:
    return len(line.encode("utf-8"))


async def test_utf8_positions_and_the_popup_item(helix: LanguageClient):
    assert helix.init_result.capabilities.position_encoding == types.PositionEncodingKind.Utf8
    # multi-byte characters before the cursor: columns are counted in UTF-8 bytes
    text = (FIXTURES / "lsp" / "store.go").read_text().replace('"not found"', '"introuvable: clé ☕"')
    uri, text = open_doc(helix, FIXTURES / "lsp" / "store.go", text=text, uri="file:///tmp/helix/store.go")
    pos = blank_cursor(text)
    lines = text.split("\n")
    line = lines[pos.line] + 'return 0, fmt.Errorf("clé ☕: %w", ErrNo'
    helix.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangePartial(
            range=types.Range(start=types.Position(line=pos.line, character=0),
                              end=types.Position(line=pos.line, character=utf8_col(lines[pos.line]))),
            text=line)]))
    cursor = types.Position(line=pos.line, character=utf8_col(line))
    items = await popup(helix, uri, cursor)
    assert len(items) == 1
    edit = items[0].text_edit
    assert edit.new_text.startswith("ErrNo") and len(edit.new_text) > len("ErrNo")
    # the edit replaces the word being typed, in UTF-8 units
    assert edit.range.start == types.Position(line=pos.line, character=cursor.character - len("ErrNo"))
    assert edit.range.end == cursor


async def test_without_cancel_requests_the_newest_request_wins(helix: LanguageClient):
    text = f"// helix supersede {time.time()}\n" + (FIXTURES / "lsp" / "inventory.py").read_text()
    uri, text = open_doc(helix, FIXTURES / "lsp" / "inventory.py", text=text, uri="file:///tmp/helix/inv.py")
    pos = blank_cursor(text)
    # Helix asks after each pause and never cancels: three requests as the user types on
    first = asyncio.ensure_future(popup(helix, uri, pos))
    await asyncio.sleep(0.3)
    typed = ""
    tasks = [first]
    for i, chunk in enumerate(["if ", "quantity "], start=2):
        helix.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=i),
            content_changes=[types.TextDocumentContentChangePartial(
                range=types.Range(start=types.Position(line=pos.line, character=pos.character + len(typed)),
                                  end=types.Position(line=pos.line, character=pos.character + len(typed))),
                text=chunk)]))
        typed += chunk
        tasks.append(asyncio.ensure_future(popup(helix, uri, types.Position(
            line=pos.line, character=pos.character + len(typed)))))
        await asyncio.sleep(0.3)
    t0 = time.perf_counter()
    stale = await asyncio.wait_for(asyncio.gather(*tasks[:-1]), 10)
    assert all(len(items) == 0 for items in stale), stale
    assert time.perf_counter() - t0 < 1.5
    last = await asyncio.wait_for(tasks[-1], 60)
    assert len(last) == 1 and last[0].text_edit.new_text.strip()
    assert (await stats(helix))["by_source"].get("superseded", 0) >= 2


async def test_the_models_load_once_although_the_configuration_came_during_the_load(helix: LanguageClient):
    assert (await stats(helix))["loads"] == 1
