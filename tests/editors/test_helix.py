"""Helix: the languages.toml parses and starts a command that exists, and the server driven the way Helix
drives it (its capabilities: UTF-8 positions, no inline completion, no $/cancelRequest) completes through the
popup path, with stale requests superseded; and a next edit comes as the code action Helix shows on space-a,
applied and counted as Helix applies one (its edit, then its command), at the end of a file without a final
newline too (LF and CRLF). No Helix binary can be had here, so these requests stand in for it (the sequence read
from helix-term's code_action and helix-view's Action::lsp)."""
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
from evals.sessions.replay import plain
from lsp_helpers import blank_cursor, open_doc, popup, raw_request, stats, wait_ready

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.models]
HELIX = ROOT / "editors" / "helix" / "languages.toml"

# what Helix 25.x announces (helix-lsp/src/client.rs): UTF-8 first, completion but no inline completion; code
# action literals with resolve of `edit` and `command`, workspace edits with documentChanges
HELIX_CAPS = types.ClientCapabilities(
    general=types.GeneralClientCapabilities(position_encodings=[
        types.PositionEncodingKind.Utf8, types.PositionEncodingKind.Utf32, types.PositionEncodingKind.Utf16]),
    text_document=types.TextDocumentClientCapabilities(
        completion=types.CompletionClientCapabilities(completion_item=types.ClientCompletionItemOptions(
            snippet_support=True, insert_replace_support=True, deprecated_support=True,
            documentation_format=[types.MarkupKind.Markdown])),
        synchronization=types.TextDocumentSyncClientCapabilities(did_save=True),
        code_action=types.CodeActionClientCapabilities(
            code_action_literal_support=types.ClientCodeActionLiteralOptions(
                code_action_kind=types.ClientCodeActionKindOptions(value_set=[
                    "", "quickfix", "refactor", "refactor.extract", "refactor.inline", "refactor.rewrite", "source",
                    "source.organizeImports", "source.fixAll"])),
            is_preferred_support=True, disabled_support=True, data_support=True,
            resolve_support=types.ClientCodeActionResolveOptions(properties=["edit", "command"]))),
    window=types.WindowClientCapabilities(work_done_progress=True),
    workspace=types.WorkspaceClientCapabilities(
        configuration=True, did_change_configuration=types.DidChangeConfigurationClientCapabilities(),
        apply_edit=True, execute_command=types.ExecuteCommandClientCapabilities(dynamic_registration=False),
        workspace_edit=types.WorkspaceEditClientCapabilities(document_changes=True, normalizes_line_endings=False)))


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
        # completion, and the code action that brings a next edit
        assert tandem and tandem[0]["only-features"] == ["completion", "code-action"]
        # a [[language]] replaces Helix's own list of servers: the sample keeps Helix's, Tandem last
        assert lang["language-servers"][:-1] == HELIX_DEFAULT_SERVERS[lang["name"]], lang["name"]
        assert lang["language-servers"][-1] == tandem[0]


# Helix 25.07.1's own language servers for those languages (its runtime languages.toml), which merging the sample
# must keep
HELIX_DEFAULT_SERVERS = {
    "python": ["ty", "ruff", "jedi", "pylsp"], "typescript": ["typescript-language-server"],
    "tsx": ["typescript-language-server"], "javascript": ["typescript-language-server"],
    "jsx": ["typescript-language-server"], "go": ["gopls", "golangci-lint-lsp"], "rust": ["rust-analyzer"],
    "java": ["jdtls"], "c": ["clangd"], "cpp": ["clangd"], "c-sharp": ["omnisharp"],
    "ruby": ["ruby-lsp", "solargraph"], "php": ["intelephense"], "lua": ["lua-language-server"],
    "kotlin": ["kotlin-language-server"], "swift": ["sourcekit-lsp"], "scala": ["metals"],
    "bash": ["bash-language-server"]}


# what a user adds under [language-server.tandem] as `config` (the sample has none); Helix sends it as the
# initializationOptions and again right after `initialized`
USER_CONFIG = {"maxTokensSingleLine": 40, "suggestions": "eager"}   # the popup item each test looks at


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


# a rename on the first line of a small function whose next lines use the old name: the follow-up is the same
# rename there (tests/editors/test_neovim_next_edit.py has the same case)
ORDERS = """def summarize(orders, tax_rate=0.2):
    total = 0.0
    for order in orders:
        total += order.price * order.quantity
    return total * (1 + tax_rate)
"""
ACTION = "Tandem: apply the suggested edit"


def change(client: LanguageClient, uri: str, version: int, start: tuple[int, int], end: tuple[int, int], text: str):
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[types.TextDocumentContentChangePartial(
            range=types.Range(start=types.Position(*start), end=types.Position(*end)), text=text)]))


def apply_edits(text: str, edits: list[dict]) -> str:
    """Text edits applied as Helix applies them (positions in UTF-8 bytes, the negotiated encoding; a line past the
    last is the end of the text)."""
    data = text.encode("utf-8")
    starts = [0] + [i + 1 for i, b in enumerate(data) if b == ord("\n")]

    def offset(p: dict) -> int:
        return len(data) if p["line"] >= len(starts) else min(starts[p["line"]] + p["character"], len(data))

    for e in sorted(edits, key=lambda e: (e["range"]["start"]["line"], e["range"]["start"]["character"]),
                    reverse=True):
        data = data[:offset(e["range"]["start"])] + e["newText"].encode("utf-8") + data[offset(e["range"]["end"]):]
    return data.decode("utf-8")


def code_actions(result) -> list[dict]:
    """The answer's code actions as Helix reads them: lsp-types' untagged CodeActionOrCommand is a Command where
    `command` is a string, else a CodeAction (lsprotocol's converter would take the action for a Command)."""
    return [a for a in plain(result) or [] if not isinstance(a.get("command"), str)]


def text_edits(action: dict, uri: str, version: int) -> list[dict]:
    """The action's edits of the document, as Helix takes them: one, for this version."""
    edit = action["edit"]
    if edit.get("documentChanges"):
        (doc_edit,) = edit["documentChanges"]
        assert doc_edit["textDocument"]["uri"] == uri
        # Helix refuses a versioned edit for another version of the document ("outdated workspace edit")
        assert doc_edit["textDocument"].get("version") in (None, version), doc_edit["textDocument"]
        edits = doc_edit["edits"]
    else:
        assert list(edit["changes"]) == [uri], edit
        edits = edit["changes"][uri]
    assert len(edits) == 1, edits
    return edits


async def test_the_code_action_applies_the_next_edit_and_runs_its_command(helix: LanguageClient):
    uri, text = open_doc(helix, Path("orders.py"), text=ORDERS, uri="file:///tmp/helix/orders.py")
    before = (await stats(helix))["next_edit"]
    # Helix's `miw` then `c`, `amount`, Esc: the word deleted, then one change a character (a version each)
    change(helix, uri, 2, (1, 4), (1, 9), "")
    version = 2
    for i, ch in enumerate("amount"):
        version += 1
        change(helix, uri, version, (1, 4 + i), (1, 4 + i), ch)
    text = text.replace("    total = 0.0", "    amount = 0.0")
    # space-a in normal mode: the primary selection is the character under the cursor (the rename's last one);
    # Helix asks with the diagnostics there (none) and triggerKind Invoked
    res = await raw_request(helix, "textDocument/codeAction", {
        "textDocument": {"uri": uri},
        "range": {"start": {"line": 1, "character": 9}, "end": {"line": 1, "character": 10}},
        "context": {"diagnostics": [], "triggerKind": 1}}, "helix-code-action", timeout=300)
    actions = [a for a in code_actions(res) if a["title"] == ACTION]
    assert len(actions) == 1, (res, (await stats(helix))["next_edit"])
    action = actions[0]
    assert action["kind"] == "quickfix" and "disabled" not in action
    # both the edit and the command, so Helix has nothing to resolve: it applies the edit, then runs the command
    command = action["command"]
    assert command["command"] == "tandem.nextEditAccepted" and len(command["arguments"]) == 1, command
    edits = text_edits(action, uri, version)
    rng = edits[0]["range"]
    assert rng["start"]["character"] == rng["end"]["character"] == 0, edits   # whole lines
    new_text = apply_edits(text, edits)
    assert new_text == ORDERS.replace("total", "amount"), new_text
    # Helix sends the applied change, then runs the command on the server
    version += 1
    change(helix, uri, version, (rng["start"]["line"], 0), (rng["end"]["line"], 0), edits[0]["newText"])
    await asyncio.wait_for(helix.workspace_execute_command_async(types.ExecuteCommandParams(
        command=command["command"], arguments=command["arguments"])), 30)
    after = (await stats(helix))["next_edit"]
    assert after["accepted"] == before["accepted"] + 1, after
    assert after["dismissed"] == before["dismissed"], after
    # the server's copy of the document is the one Helix shows
    held = await helix.protocol.send_request_async("tandem/document", {"uri": uri, "text": True})
    assert (held.version, held.text) == (version, new_text), held


# the old name's last use on the last line, which has no newline: the rename's repeat replaces that line
AREA = "def area(width, height):\n    size = width * height\n    return size"


@pytest.mark.parametrize("eol", ["\n", "\r\n"], ids=["lf", "crlf"])
async def test_the_code_action_at_the_end_of_a_file_without_a_final_newline(helix: LanguageClient, eol: str):
    text = AREA.replace("\n", eol)
    uri, _ = open_doc(helix, Path("area.py"), text=text, uri=f"file:///tmp/helix/area_{len(eol)}.py")
    change(helix, uri, 2, (1, 4), (1, 8), "")   # `miw`, `c`, `area_size`: a version a character
    version = 2
    for i, ch in enumerate("area_size"):
        version += 1
        change(helix, uri, version, (1, 4 + i), (1, 4 + i), ch)
    text = text.replace("    size = ", "    area_size = ")
    res = await raw_request(helix, "textDocument/codeAction", {
        "textDocument": {"uri": uri},
        "range": {"start": {"line": 1, "character": 12}, "end": {"line": 1, "character": 13}},
        "context": {"diagnostics": [], "triggerKind": 1}}, f"helix-eof-{len(eol)}", timeout=300)
    actions = [a for a in code_actions(res) if a["title"] == ACTION]
    assert len(actions) == 1, (res, (await stats(helix))["next_edit"])
    edits = text_edits(actions[0], uri, version)
    start, end = edits[0]["range"]["start"], edits[0]["range"]["end"]
    # Helix refuses a range that ends before it starts
    assert (start["line"], start["character"]) <= (end["line"], end["character"]), edits
    # the last line renamed and the file still without a final newline, in its own line ends
    new_text = apply_edits(text, edits)
    assert new_text == AREA.replace("size", "area_size").replace("\n", eol), new_text
    version += 1
    change(helix, uri, version, (start["line"], start["character"]), (end["line"], end["character"]),
           edits[0]["newText"])
    held = await helix.protocol.send_request_async("tandem/document", {"uri": uri, "text": True})
    assert (held.version, held.text) == (version, new_text), held
