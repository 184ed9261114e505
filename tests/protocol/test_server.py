"""The real `tandem serve` over stdio, with the real models (pytest-lsp)."""
from __future__ import annotations

import asyncio
import time

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from conftest import FIXTURES
from lsp_server.service.settings import Settings
from lsp_helpers import (SERVER, blank_cursor, inline, open_doc, popup, raw_request, setting, start, stats,
                         type_text, wait_ready)

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.models]
LSP = FIXTURES / "lsp"
# long enough that a multi-line answer is not cut by the time budget on a busy machine
# eager: these tests are of completion itself; what the gate holds back is test_gate_lsp.py's
OPTIONS = {"timeBudgetMs": 30000, "maxTokens": 64, "suggestions": "eager"}


@pytest_lsp.fixture(config=SERVER, scope="module")
async def client(lsp_client: LanguageClient):
    await start(lsp_client, OPTIONS)
    # before the models are ready a request gets an empty answer, not an error
    uri, text = open_doc(lsp_client, LSP / "inventory.py")
    lsp_client.early_answer = await inline(lsp_client, uri, blank_cursor(text))
    s = await wait_ready(lsp_client)
    assert s["ready"], s["load_error"]
    yield
    await lsp_client.shutdown_session()


async def test_capabilities_and_loading(client: LanguageClient):
    caps = client.init_result.capabilities
    assert caps.inline_completion_provider is not None
    assert caps.completion_provider is not None
    sync = caps.text_document_sync
    assert getattr(sync, "change", sync) == types.TextDocumentSyncKind.Incremental
    assert client.early_answer == ""
    s = await stats(client)
    assert s["by_source"].get("not_ready", 0) >= 1
    reports = [v for token, values in client.progress_reports.items() for v in values]
    assert any(isinstance(v, types.WorkDoneProgressBegin) for v in reports)
    assert any(isinstance(v, types.WorkDoneProgressEnd) and v.message == "ready" for v in reports)


@pytest.mark.parametrize("name, typed", [("inventory.py", "if quantity > "),
                                         ("cart.ts", "this.lines = this.lines.filter("),
                                         ("store.go", "if _, ok := s.items[key]; !")])
async def test_inline_multi_and_single_line(client: LanguageClient, name, typed):
    uri, text = open_doc(client, LSP / name)
    pos = blank_cursor(text)
    block = await inline(client, uri, pos)
    # an empty body after a block opener: a block of code, indented below the cursor's level
    assert block.strip(), "no completion for an empty function body"
    assert (await stats(client, records=True))["records"][-1]["multiline"] is True
    indent = text.split("\n")[pos.line]
    for line in block.split("\n")[1:]:
        assert not line.strip() or line.startswith(indent) or line.strip() in ("}", ")", "]"), block
    # mid-statement: one line
    after = type_text(client, uri, 2, pos, typed)
    line = await inline(client, uri, after)
    first, _, body = line.partition("\n")
    assert first.strip(), line
    if first.rstrip().endswith(("{", ":")):
        # the line opens a block the suffix does not hold: its body comes along (the line alone would not
        # compile), deeper than the cursor's line, and the answer ends with that block: its closer at the
        # cursor's level in a brace language, and nothing the model wrote after it
        body_lines = [l for l in body.split("\n") if l.strip()]
        closer = [body_lines.pop()] if name != "inventory.py" and body_lines else []
        assert body_lines and all(l.startswith(indent) and l[len(indent)] in " \t" for l in body_lines), line
        assert all(c.startswith(indent) and c.strip() == "}" for c in closer), line
    else:
        assert not body, line
    assert (await stats(client, records=True))["records"][-1]["multiline"] is False
    client.text_document_did_close(types.DidCloseTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))


async def test_popup_completion_item(client: LanguageClient):
    uri, text = open_doc(client, LSP / "store.go")
    pos = type_text(client, uri, 2, blank_cursor(text), "s.mu.RLo")
    items = await popup(client, uri, pos)
    assert len(items) == 1
    item = items[0]
    assert item.label.strip() and "\n" not in item.label and len(item.label) <= 62
    # it replaces the word typed so far, so the client's filter keeps it
    assert item.text_edit.new_text.startswith("RLo") and len(item.text_edit.new_text) > 3
    assert item.filter_text == item.text_edit.new_text
    assert item.text_edit.range.start.character == pos.character - 3


async def test_typing_through_a_suggestion_is_served_from_the_cache(client: LanguageClient):
    # no early answers here: the suggestion shown is then the whole line, and typing through it must give
    # exactly its rest (an early answer's rest may have grown by the time the user types)
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"tandem": {**OPTIONS, "earlyAnswerMs": 0}}))
    uri, text = open_doc(client, LSP / "cart.ts", uri=(LSP / "cart-copy.ts").as_uri())
    pos = type_text(client, uri, 2, blank_cursor(text), "const index = this.lines.findIndex(")
    first = await inline(client, uri, pos)
    assert len(first) >= 3, first
    before = (await stats(client))["cache"]["hits"]
    pos = type_text(client, uri, 3, pos, first[:2])
    t0 = time.perf_counter()
    rest = await inline(client, uri, pos)
    took = time.perf_counter() - t0
    assert rest == first[2:]
    assert (await stats(client))["cache"]["hits"] == before + 1
    assert took < 0.5, f"a cache hit took {took:.2f}s"
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"tandem": {**OPTIONS, "earlyAnswerMs": 600}}))


async def test_cancel_answers_32800_and_the_next_request_works(client: LanguageClient):
    uri, text = open_doc(client, LSP / "inventory.py", uri=(LSP / "inventory-cancel.py").as_uri())
    pos = blank_cursor(text)
    params = types.InlineCompletionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=pos,
        context=types.InlineCompletionContext(trigger_kind=types.InlineCompletionTriggerKind.Invoked))
    task = asyncio.ensure_future(client.protocol.send_request_async(
        types.TEXT_DOCUMENT_INLINE_COMPLETION, params, msg_id="cancel-me"))
    await asyncio.sleep(0.5)
    t0 = time.perf_counter()
    client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="cancel-me"))
    with pytest.raises(JsonRpcException) as err:
        await asyncio.wait_for(task, 10)
    assert err.value.code == -32800
    assert time.perf_counter() - t0 < 2.0
    assert (await inline(client, uri, pos)).strip()


async def test_a_newer_request_supersedes_the_old_one(client: LanguageClient):
    # a first line no cache has seen, so the old request has a whole prompt to evaluate
    text = f"// supersede test {time.time()}\n" + (LSP / "store.go").read_text()
    uri, text = open_doc(client, LSP / "store.go", text=text, uri=(LSP / "store-supersede.go").as_uri())
    pos = blank_cursor(text)
    old = asyncio.ensure_future(inline(client, uri, pos))
    await asyncio.sleep(0.5)
    t0 = time.perf_counter()
    new_pos = type_text(client, uri, 2, pos, "v, ok := s.items[")
    new = asyncio.ensure_future(inline(client, uri, new_pos))
    old_text = await asyncio.wait_for(old, 10)
    old_after = time.perf_counter() - t0
    assert old_text == ""
    assert old_after < 1.5, f"the superseded request took {old_after:.2f}s to return"
    assert (await asyncio.wait_for(new, 60)).strip()
    assert (await stats(client))["by_source"].get("superseded", 0) >= 1


async def test_a_configuration_change_takes_effect(client: LanguageClient):
    uri, text = open_doc(client, LSP / "store.go", uri=(LSP / "store-config.go").as_uri())
    pos = type_text(client, uri, 2, blank_cursor(text), "value, ok := s.items[")
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"tandem": {**OPTIONS, "languages": {"go": False}}}))
    assert await inline(client, uri, pos) == ""
    assert (await stats(client))["by_source"].get("disabled", 0) >= 1
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"tandem": {**OPTIONS, "languages": {"go": True}, "maxTokensSingleLine": 2}}))
    short = await inline(client, uri, pos)
    assert short.strip()
    s = await stats(client, records=True)
    assert setting(s, "maxTokensSingleLine")["value"] == 2
    assert s["records"][-1]["tokens"] <= 2
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"tandem": {**OPTIONS, "maxTokensSingleLine": 40, "noSuchSetting": 1, "maxTokens": 2.5}}))
    await asyncio.sleep(0.2)
    # each bad value is refused alone, named with its layer; the others apply
    assert any("noSuchSetting" in m.message and "editor settings" in m.message for m in client.messages)
    assert any("maxTokens" in m.message and "whole number" in m.message for m in client.messages)
    s = await stats(client)
    assert setting(s, "maxTokensSingleLine")["value"] == 40
    assert setting(s, "maxTokens") == {"key": "maxTokens", "value": Settings().max_tokens, "origin": "default"}
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"tandem": OPTIONS}))
    await asyncio.sleep(0.2)
    assert setting(await stats(client), "maxTokens")["value"] == OPTIONS["maxTokens"]


async def expect_error(coro, code: int, *words: str):
    with pytest.raises(JsonRpcException) as err:
        await coro
    assert err.value.code == code, err.value
    for w in words:
        assert w in str(err.value), str(err.value)


async def test_bad_input_gets_an_error_and_the_server_stays_up(client: LanguageClient, tmp_path):
    uri, text = open_doc(client, LSP / "inventory.py", uri=(LSP / "inventory-bad.py").as_uri())
    n_lines = len(text.split("\n"))
    await expect_error(inline(client, uri, types.Position(line=n_lines + 5, character=0)), -32602, "outside")
    await expect_error(inline(client, uri, types.Position(line=3, character=500)), -32602, "past the end")
    await expect_error(inline(client, (tmp_path / "never-opened.py").as_uri(), types.Position(line=0, character=0)),
                       -32602, "unknown document")
    # malformed params: the position is missing
    await expect_error(raw_request(client, types.TEXT_DOCUMENT_INLINE_COMPLETION,
                                   {"textDocument": {"uri": uri}}, "no-position"), -32602)
    await expect_error(raw_request(client, types.TEXT_DOCUMENT_COMPLETION,
                                   {"textDocument": {"uri": uri}, "position": {"line": "x", "character": -1}},
                                   "wrong-types"), -32602)
    # a huge file and a binary one: refused with a message, requests get a clear error
    huge_uri, _ = open_doc(client, tmp_path / "huge.py", text="x = 1\n" * 800_000)
    bin_uri, _ = open_doc(client, tmp_path / "blob.py", text="abc\0def\n")
    await asyncio.sleep(0.2)
    assert any("byte limit" in m.message for m in client.messages)
    assert any("binary" in m.message for m in client.messages)
    await expect_error(inline(client, huge_uri, types.Position(line=1, character=0)), -32602, "limit")
    await expect_error(inline(client, bin_uri, types.Position(line=0, character=3)), -32602, "binary")
    # a secret file (the built-in list): never completed in, said once when it opens
    env_uri, _ = open_doc(client, tmp_path / ".env", text="DATABASE_URL=postgres://admin:", language_id="dotenv")
    await asyncio.sleep(0.2)
    assert sum("secret file" in m.message for m in client.messages) == 1
    await expect_error(inline(client, env_uri, types.Position(line=0, character=30)), -32602, "secret file")
    # a language without a grammar: plain text windows, still an answer
    txt_uri, _ = open_doc(client, tmp_path / "notes.unknownlang", text="TODO list:\n1. buy milk\n2. ",
                          language_id="unknownlang")
    await inline(client, txt_uri, types.Position(line=2, character=3))
    # a method the server does not have
    await expect_error(client.protocol.send_request_async("tandem/noSuchMethod", {}), -32601)
    # and after all that, a normal request works
    assert (await inline(client, uri, blank_cursor(text))).strip()


async def test_a_line_of_megabytes_is_cut_to_fit_the_prompt(client: LanguageClient, tmp_path):
    """A minified bundle (one line of 2.3 MB, under the file limit): the cursor after it, at its end and before
    it gets an answer from a prompt of a page's size. It made a prompt of 1.2 million tokens (seven seconds of
    tokenizing at every request, then an error that it does not fit the context)."""
    line = "".join(f"var f{i}=function(a,b){{return a*{i}+b}};" for i in range(60_000))
    for name, text, at in (("after.min.js", line + "\n", types.Position(line=1, character=0)),
                           ("end.min.js", line, types.Position(line=0, character=len(line))),
                           ("before.min.js", "\n" + line, types.Position(line=0, character=0))):
        uri, _ = open_doc(client, tmp_path / name, text=text)
        await inline(client, uri, at)   # an error would raise here
        rec = (await stats(client, records=True))["records"][-1]
        assert rec["source"] in ("model", "fast", "empty"), (name, rec)
        assert rec["prompt_tokens"] <= 1500, (name, rec)


async def test_a_file_the_user_excludes_gets_no_completion_until_the_setting_lets_it(client: LanguageClient,
                                                                                     tmp_path):
    """The exclude setting, changed while the file is open: the file is refused with one message, and answered
    again once the pattern is gone."""
    uri, _ = open_doc(client, tmp_path / "gen_report.py", text="def total(xs):\n    s = 0\n    \n    return s\n")
    here = types.Position(line=2, character=4)
    await inline(client, uri, here)
    said = lambda: sum("is excluded" in m.message for m in client.messages)
    before = said()
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"tandem": {**OPTIONS, "exclude": ["gen_*.py"]}}))
    await asyncio.sleep(0.5)
    assert said() == before + 1
    await expect_error(inline(client, uri, here), -32602, "excluded")
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"tandem": {**OPTIONS, "exclude": []}}))
    await asyncio.sleep(0.5)
    await inline(client, uri, here)   # no error
    # a pattern gitignore does not take: the change is refused with a message, the file still answered
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"tandem": {**OPTIONS, "exclude": ["!"]}}))
    await asyncio.sleep(0.5)
    assert any("is not a gitignore pattern" in m.message for m in client.messages)
    await inline(client, uri, here)
    assert setting(await stats(client), "exclude")["value"] == []


async def test_asked_for_by_key_it_answers_where_typing_would_not(client: LanguageClient, tmp_path):
    """Code right of the cursor: no ghost text while typing (rarely right there), an answer when the user asks
    (VS Code's Alt+\\, an inline request with triggerKind Invoked)."""
    text = "def area(width, height):\n    return  * height\n"
    uri, _ = open_doc(client, tmp_path / "area.py", text=text)
    here = types.Position(line=1, character=len("    return "))
    assert await inline(client, uri, here) == ""
    asked = await inline(client, uri, here, types.InlineCompletionTriggerKind.Invoked)
    assert asked.strip() == "width", asked


async def test_accepted_suggestions_are_counted(client: LanguageClient):
    before = (await stats(client))["suggestions"]["accepted"]
    await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="tandem.accepted", arguments=[{"uri": "file:///x.py", "chars": 12}]))
    client.protocol.notify("tandem/didAccept", {"uri": "file:///x.py", "chars": 3})
    await asyncio.sleep(0.2)
    s = await stats(client)
    assert s["suggestions"]["accepted"] == before + 2
    assert s["latency_ms"]["p50"] is not None and s["acceptance"]


async def test_accepting_a_line_finds_the_next_one_ready(client: LanguageClient):
    uri, text = open_doc(client, LSP / "inventory.py", uri=(LSP / "inventory-accept.py").as_uri())
    pos = type_text(client, uri, 2, blank_cursor(text), "item = self.items[sku]")
    before = await stats(client)
    line = await inline(client, uri, pos)
    # one line, or one that opens a block with its body (README: post-processing)
    assert line.strip() and (line.count("\n") <= 1 or line.strip().split("\n")[0].rstrip().endswith(":")), line
    # the one-line generation goes on to the next line in the background
    for _ in range(100):
        s = await stats(client)
        if s["continued"] > before["continued"]:
            break
        await asyncio.sleep(0.1)
    assert s["continued"] > before["continued"], "the generation did not go on past the shown line"
    # accept: the editor inserts the line and asks again at once
    lines = line.split("\n")
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=3),
        content_changes=[types.TextDocumentContentChangePartial(range=types.Range(start=pos, end=pos), text=line)]))
    after = types.Position(line=pos.line + len(lines) - 1,
                           character=(pos.character if len(lines) == 1 else 0) + len(lines[-1]))
    t0 = time.perf_counter()
    nxt = await inline(client, uri, after)
    assert nxt.strip() and time.perf_counter() - t0 < 0.5
    assert (await stats(client))["cache"]["hits"] > s["cache"]["hits"]


async def test_where_a_line_or_a_block_may_be_missing_the_model_s_end_decides(client: LanguageClient):
    # a new line between statements: the model writes on, and where it ends the middle itself (here it began
    # the `return items` below again) the whole block is the answer, statements that open nothing included
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"tandem": {**OPTIONS, "earlyAnswerMs": 0}}))
    text = ('def swap_ends(items):\n    """Swap the first and the last item of the list, in place."""\n'
            '    first = items[0]\n    \n    return items\n')
    uri, _ = open_doc(client, LSP / "swap.py", text=text)
    block = await inline(client, uri, types.Position(line=3, character=4))
    lines = [l for l in block.split("\n") if l.strip()]
    assert len(lines) >= 2 and not any(l.rstrip().endswith(":") for l in lines), block
    assert all(l.startswith("    ") for l in block.split("\n")[1:]) and "return items" not in block, block
    # accepted, and asked again at the block's end: nothing more is to come there (the server kept the
    # model's end in its cache: not a new generation that writes a line of its own)
    await asyncio.sleep(0.3)
    last = block.rsplit("\n", 1)[-1]
    at = types.Position(line=3 + block.count("\n"), character=(0 if "\n" in block else 4) + len(last))
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangePartial(
            range=types.Range(start=types.Position(line=3, character=4), end=types.Position(line=3, character=4)),
            text=block)]))
    assert await inline(client, uri, at) == ""
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"tandem": {**OPTIONS, "earlyAnswerMs": 600}}))
    client.text_document_did_close(types.DidCloseTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))


async def test_an_answer_shown_early_is_completed_once_its_generation_ends(client: LanguageClient):
    """The early answer (here after 1 ms of generation: the first finished line of a block) is shown while the
    generation goes on; once it ends, `tandem/betterCompletion` names the place and asking again there gives the
    whole block from the cache."""
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"tandem": {**OPTIONS, "earlyAnswerMs": 1}}))
    text = ('class Parcel:\n    def __init__(self, sender, receiver, weight_kg, price_eur):\n'
            '        self.sender, self.receiver = sender, receiver\n'
            '        self.weight_kg, self.price_eur = weight_kg, price_eur\n\n'
            '    @staticmethod\n    def heaviest(parcels):\n        """The heaviest parcel of the list, None where it is empty; '
            'ties go to the cheaper one."""\n        \n')
    uri, _ = open_doc(client, LSP / "parcel.py", text=text)
    pos = types.Position(line=8, character=8)
    told: list = []
    waiting = asyncio.ensure_future(client.wait_for_notification("tandem/betterCompletion"))
    waiting.add_done_callback(lambda f: told.append(f.result()) if not f.cancelled() else None)
    before = (await stats(client))["offers"]
    try:
        first = await inline(client, uri, pos)
        t0 = time.monotonic()
        while True:   # the generation ends: completed (told), or it wrote nothing more there
            o = (await stats(client))["offers"]
            if o["completed"] + o["early_kept"] > before["completed"] + before["early_kept"]:
                break
            assert time.monotonic() - t0 < 120, o
            await asyncio.sleep(0.2)
        assert o["early"] == before["early"] + 1, o   # it was an early answer
        assert o["completed"] == before["completed"] + 1, (o, first)   # its line went on
        await asyncio.sleep(0.2)
        note = told[0] if told else None
        assert note and note.uri == uri and note.version == 1, told
        assert (note.position.line, note.position.character) == (8, 8), told
        again = await inline(client, uri, pos)
        s = await stats(client, records=True)
        assert s["records"][-1]["source"] == "cache"
        assert len(again) > len(first) and again.startswith(first.rstrip()), (first, again)
        assert s["offers"]["taken"] == before["taken"] + 1, s["offers"]   # the client took it up
    finally:
        waiting.cancel()
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
            settings={"tandem": {**OPTIONS, "earlyAnswerMs": 600}}))
        client.text_document_did_close(types.DidCloseTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=uri)))
