"""Next edits over LSP with the real server and models: after a rename typed on one line, the server proposes the
follow-up (`textDocument/copilotInlineEdit`), applying it and running its command counts an acceptance, the code
action carries the same edit; typing on while a prediction runs drops it; an undone edit leaves nothing to follow;
the setting turns it off; bad requests get clear errors and the server stays up."""
from __future__ import annotations

import asyncio

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from conftest import FIXTURES
from evals.sessions.replay import plain
from lsp_helpers import SERVER, open_doc, raw_request, start, stats, wait_ready

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.models]

SHOP = '''def summarize(orders, tax_rate=0.2):
    """Sum the orders' totals, with tax."""
    total = 0.0
    for order in orders:
        total += order.price * order.quantity
    total = total * (1 + tax_rate)
    return total
'''
RENAMED_LINE = 2    # "    total = 0.0" -> "    amount = 0.0"


@pytest_lsp.fixture(config=SERVER, scope="module")
async def client(lsp_client: LanguageClient):
    await start(lsp_client, {"timeBudgetMs": 30000, "prefetch": False})
    s = await wait_ready(lsp_client)
    assert s["ready"], s["load_error"]
    yield
    await lsp_client.shutdown_session()


def close(client: LanguageClient, uri: str) -> None:
    """Each test closes what it opened: an open document is context for the others' prompts (their candidates'
    checks see it), so a test's text must not change another's answer."""
    client.text_document_did_close(types.DidCloseTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))


def rename(client: LanguageClient, uri: str, version: int, line: int = RENAMED_LINE) -> None:
    """`total` -> `amount` on one line, as an editor sends it: one change replacing the word."""
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[types.TextDocumentContentChangePartial(
            range=types.Range(start=types.Position(line=line, character=4),
                              end=types.Position(line=line, character=9)), text="amount")]))


async def ask(client: LanguageClient, uri: str, version: int, line: int, msg_id: str | None = None):
    params = {"textDocument": {"uri": uri, "version": version}, "position": {"line": line, "character": 10}}
    return await client.protocol.send_request_async("textDocument/copilotInlineEdit", params, msg_id=msg_id)


def field(obj, key):
    return obj[key] if isinstance(obj, dict) else getattr(obj, key)


def apply(text: str, edit) -> str:
    lines = text.split("\n")
    rng = field(edit, "range")
    s, e = field(field(rng, "start"), "line"), field(field(rng, "end"), "line")
    assert field(field(rng, "start"), "character") == 0 and field(field(rng, "end"), "character") == 0
    return "\n".join(lines[:s]) + ("\n" if s else "") + field(edit, "text") + "\n".join(lines[e:])


async def test_a_rename_is_followed_accepted_and_counted(client: LanguageClient):
    uri, text = open_doc(client, FIXTURES / "lsp" / "shop.py", text=SHOP, uri="file:///tmp/tandem-ne/shop.py")
    rename(client, uri, 2)
    edited = SHOP.replace("    total = 0.0", "    amount = 0.0")
    res = await ask(client, uri, 2, RENAMED_LINE)
    edits = field(res, "edits")
    assert len(edits) == 1, (res, str((await stats(client))["next_edit"]))
    assert (await stats(client))["next_edit"]["from_repeat"] == 1   # found in the text: no model needed
    edit = edits[0]
    assert field(field(edit, "textDocument"), "version") == 2
    after = apply(edited, edit)
    assert "amount += order.price" in after and "total += " not in after, after
    assert after.count("amount = 0.0") == 1 and after.startswith("def summarize(")
    cmd = field(edit, "command")
    assert field(cmd, "command") == "tandem.nextEditAccepted"
    # the code action carries the same edit for the same version, from the cache: no second generation
    # (read as JSON: lsprotocol's converter takes a CodeAction that carries a command for a Command)
    res = plain(await raw_request(client, "textDocument/codeAction", {
        "textDocument": {"uri": uri},
        "range": {"start": {"line": RENAMED_LINE, "character": 0}, "end": {"line": RENAMED_LINE, "character": 0}},
        "context": {"diagnostics": [], "triggerKind": 2}}, "ne-action"))
    assert [a["title"] for a in res] == ["Tandem: apply the suggested edit"]
    [text_edit] = res[0]["edit"]["changes"][uri]
    assert text_edit["newText"] == field(edit, "text")
    # the client applies it and runs the command
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=3),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=after)]))
    await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command=field(cmd, "command"), arguments=field(cmd, "arguments")))
    await client.workspace_execute_command_async(types.ExecuteCommandParams(   # twice: counted once
        command=field(cmd, "command"), arguments=field(cmd, "arguments")))
    s = (await stats(client))["next_edit"]
    assert s["proposed"] >= 1 and s["accepted"] == 1 and s["latency_ms_p50"] > 0, s
    close(client, uri)


async def test_typing_on_drops_the_prediction(client: LanguageClient):
    uri, _ = open_doc(client, FIXTURES / "lsp" / "shop.py", text=SHOP, uri="file:///tmp/tandem-ne/typing.py")
    # a new parameter: nothing to repeat from the text, so the model is asked (a rename would be answered at once)
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangePartial(
            range=types.Range(start=types.Position(line=0, character=34), end=types.Position(line=0, character=34)),
            text=", discount=0")]))
    before = (await stats(client))["next_edit"]["dropped"]
    pending = asyncio.ensure_future(ask(client, uri, 2, RENAMED_LINE))
    await asyncio.sleep(0.3)
    client.text_document_did_change(types.DidChangeTextDocumentParams(   # the user types on
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=3),
        content_changes=[types.TextDocumentContentChangePartial(
            range=types.Range(start=types.Position(line=6, character=16), end=types.Position(line=6, character=16)),
            text=" ")]))
    res = await asyncio.wait_for(pending, 60)
    assert field(res, "edits") == []
    s = (await stats(client))["next_edit"]
    assert s["dropped"] == before + 1, s
    close(client, uri)


async def test_an_undone_edit_leaves_nothing_to_follow(client: LanguageClient):
    uri, _ = open_doc(client, FIXTURES / "lsp" / "shop.py", text=SHOP, uri="file:///tmp/tandem-ne/undo.py")
    rename(client, uri, 2)
    client.text_document_did_change(types.DidChangeTextDocumentParams(   # undo: the old text back
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=3),
        content_changes=[types.TextDocumentContentChangePartial(
            range=types.Range(start=types.Position(line=2, character=4), end=types.Position(line=2, character=10)),
            text="total")]))
    before = (await stats(client))["next_edit"]
    res = await ask(client, uri, 3, RENAMED_LINE)
    assert field(res, "edits") == []
    after = (await stats(client))["next_edit"]
    # answered at once, as nothing was edited: no generation ran
    assert after["empty"] == before["empty"] + 1 and after["proposed"] == before["proposed"]
    close(client, uri)


UNFORMATTED = """import os,sys


def summarize(orders, tax_rate = 0.2):
    \"\"\"Sum the orders' prices, with tax.\"\"\"
    total = 0.0
    for order in orders:
        total += order.price * order.quantity
    total = total * (1 + tax_rate)
    print( 'done' )
    return total
"""


def format_(text: str) -> str:
    """A formatter's work on lines 0, 3 and 9: pieces above and below the renamed line."""
    return (text.replace("import os,sys", "import os, sys").replace("tax_rate = 0.2", "tax_rate=0.2")
            .replace("print( 'done' )", 'print("done")'))


def replaced(client: LanguageClient, uri: str, version: int, line: int, character: int, old: str, new: str):
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[types.TextDocumentContentChangePartial(
            range=types.Range(start=types.Position(line=line, character=character),
                              end=types.Position(line=line, character=character + len(old))), text=new)]))


async def test_a_rename_is_still_followed_after_format_on_save(client: LanguageClient):
    """A rename, then the formatter's edits as one whole-document change (as VS Code and Neovim send them): the
    rename is still the edit to follow, found in the text at once, and so is the user's next rename after it."""
    uri, _ = open_doc(client, FIXTURES / "lsp" / "shop.py", text=UNFORMATTED, uri="file:///tmp/tandem-ne/fmt.py")
    replaced(client, uri, 2, 5, 4, "total", "amount")
    text = format_(UNFORMATTED.replace("    total = 0.0", "    amount = 0.0"))
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=3),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))
    before = (await stats(client))["next_edit"]
    [edit] = field(await ask(client, uri, 3, 5), "edits")
    after = apply(text, edit)
    assert after == text.replace("total", "amount"), after
    assert (await stats(client))["next_edit"]["from_repeat"] == before["from_repeat"] + 1
    # the user renames the next use by hand instead: that rename is followed
    replaced(client, uri, 4, 7, 8, "total", "amount")
    text = text.replace("        total +=", "        amount +=")
    [edit] = field(await ask(client, uri, 4, 7), "edits")
    assert apply(text, edit) == text.replace("total", "amount")
    s = (await stats(client))["next_edit"]
    assert s["from_repeat"] == before["from_repeat"] + 2 and s["from_model"] == before["from_model"], s
    close(client, uri)


async def test_the_setting_turns_it_off(client: LanguageClient):
    uri, _ = open_doc(client, FIXTURES / "lsp" / "shop.py", text=SHOP, uri="file:///tmp/tandem-ne/off.py")
    rename(client, uri, 2)
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"tandem": {"timeBudgetMs": 30000, "prefetch": False, "nextEdit": False}}))
    try:
        before = (await stats(client))["next_edit"]["requested"]
        assert field(await ask(client, uri, 2, RENAMED_LINE), "edits") == []
        assert (await stats(client))["next_edit"]["requested"] == before   # not even asked
    finally:
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
            settings={"tandem": {"timeBudgetMs": 30000, "prefetch": False}}))
        close(client, uri)


async def test_bad_requests_get_errors_and_the_server_stays_up(client: LanguageClient):
    with pytest.raises(JsonRpcException) as err:
        await ask(client, "file:///nowhere/unknown.py", 1, 0)
    assert "unknown document" in str(err.value)
    uri, _ = open_doc(client, FIXTURES / "lsp" / "shop.py", text=SHOP, uri="file:///tmp/tandem-ne/bad.py")
    with pytest.raises(JsonRpcException) as err:
        await ask(client, uri, 1, 500)
    assert "outside the document" in str(err.value)
    with pytest.raises(JsonRpcException) as err:
        await raw_request(client, "textDocument/copilotInlineEdit", {"position": "here"}, "ne-malformed")
    assert "unknown document" in str(err.value)
    with pytest.raises(JsonRpcException) as err:
        await raw_request(client, "textDocument/copilotInlineEdit",
                          {"textDocument": {"uri": uri}, "position": {"line": -1}}, "ne-no-position")
    assert "position must be" in str(err.value)
    with pytest.raises(JsonRpcException) as err:   # past the LSP's uinteger: lsprotocol's Position refuses it
        await raw_request(client, "textDocument/copilotInlineEdit",
                          {"textDocument": {"uri": uri}, "position": {"line": 2 ** 31, "character": 0}},
                          "ne-huge-line")
    assert "position must be" in str(err.value)
    with pytest.raises(JsonRpcException) as err:
        await raw_request(client, "textDocument/copilotInlineEdit",
                          {"textDocument": {"uri": ["not", "a", "string"]}, "position": {"line": 0, "character": 0}},
                          "ne-list-uri")
    assert "must be a string" in str(err.value)
    client.protocol.notify("tandem/nextEditDismissed", {"id": "ne-never-proposed"})   # not counted
    s = await stats(client)
    assert s["ready"] and s["next_edit"]["dismissed"] == 0
    close(client, uri)


@pytest.mark.parametrize("uri", ["untitled:Untitled-1", "file:///D:/work/shop.py"])
async def test_a_document_with_no_file_in_the_workspace_gets_its_next_edit(client: LanguageClient, uri):
    """An unsaved buffer (no path at all) and a file another drive holds (a Windows path, not under the workspace
    root): the prompt names them by their last part, and the edit comes as for any file."""
    open_doc(client, FIXTURES / "lsp" / "shop.py", text=SHOP, language_id="python", uri=uri)
    rename(client, uri, 2)
    edits = field(await ask(client, uri, 2, RENAMED_LINE), "edits")
    assert len(edits) == 1 and "amount += order.price" in field(edits[0], "text")
    close(client, uri)


async def test_a_region_too_long_for_the_context_is_skipped_counted_and_the_server_stays_up(client: LanguageClient):
    """A line of tens of thousands of characters in the lines to rewrite (a minified bundle, a pasted blob): the
    prompt cannot fit the context, so no rewrite is asked for; every rest answers nothing, without an error."""
    wide = SHOP.replace("    for order in orders:\n", f"    for order in orders:  # {'ab ' * 12000}\n")
    uri, _ = open_doc(client, FIXTURES / "lsp" / "shop.py", text=wide, uri="file:///tmp/tandem-ne/wide.py")
    # a new parameter: nothing to repeat from the text, so the model's rewrite would be asked for
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangePartial(
            range=types.Range(start=types.Position(line=0, character=34), end=types.Position(line=0, character=34)),
            text=", discount=0")]))
    before = (await stats(client))["next_edit"]
    for _ in range(2):
        assert field(await ask(client, uri, 2, 0), "edits") == []
    s = (await stats(client))["next_edit"]
    # asked, and skipped; asked again at that version, answered from the first answer
    assert s["filtered"].get("too_long", 0) == before["filtered"].get("too_long", 0) + 1, s
    assert s["remembered"] == before["remembered"] + 1, s
    assert (await stats(client))["ready"]
    close(client, uri)
