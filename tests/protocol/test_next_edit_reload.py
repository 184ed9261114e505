"""A model setting changed while a next edit waits, with the real server and models over stdio: the reload stops
every task asked of the old models, the next edit among them, so none runs on the models the reload closes; the
ask answers nothing, no failure is counted, and the reloaded server answers the next requests."""
from __future__ import annotations

import asyncio
import time

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from conftest import FIXTURES
from lsp_helpers import SERVER, inline, open_doc, start, stats, wait_ready

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.models]

SETTINGS = {"timeBudgetMs": 60000, "prefetch": False, "maxTokens": 256}

SHOP = '''def summarize(orders, tax_rate=0.2):
    """Sum the orders' totals, with tax."""
    total = 0.0
    for order in orders:
        total += order.price * order.quantity
    total = total * (1 + tax_rate)
    return total
'''
# a list the model goes on writing to its token limit: its generation holds the model thread for seconds
SQUARES = "SQUARES = [\n" + "".join(f"    {i * i},\n" for i in range(1, 12)) + "    \n"


@pytest_lsp.fixture(config=SERVER, scope="module")
async def client(lsp_client: LanguageClient):
    await start(lsp_client, SETTINGS)
    s = await wait_ready(lsp_client)
    assert s["ready"], s["load_error"]
    yield
    await lsp_client.shutdown_session()


async def until(client: LanguageClient, cond, timeout_s: float = 120) -> dict:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout_s:
        s = await stats(client)
        if cond(s):
            return s
        await asyncio.sleep(0.05)
    raise TimeoutError(f"not reached in {timeout_s} s: {s['memory']['model_tasks']}, loads {s['loads']}")


async def test_a_reload_while_a_next_edit_waits_runs_nothing_on_the_old_models(client: LanguageClient):
    uri, _ = open_doc(client, FIXTURES / "lsp" / "shop.py", text=SHOP, uri="file:///tmp/tandem-ne/reload.py")
    # a new parameter: nothing to repeat from the text, so the model is asked
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangePartial(
            range=types.Range(start=types.Position(line=0, character=34), end=types.Position(line=0, character=34)),
            text=", discount=0")]))
    squares, _ = open_doc(client, FIXTURES / "lsp" / "shop.py", text=SQUARES,
                          uri="file:///tmp/tandem-ne/squares.py")
    end = types.Position(line=SQUARES.count("\n") - 1, character=4)
    completion = asyncio.ensure_future(inline(client, squares, end, types.InlineCompletionTriggerKind.Invoked))
    await until(client, lambda s: s["memory"]["model_tasks"] == {"request": 1})
    # the next edit waits behind the completion's generation
    asked = asyncio.ensure_future(client.protocol.send_request_async("textDocument/copilotInlineEdit", {
        "textDocument": {"uri": uri, "version": 2}, "position": {"line": 4, "character": 10}}))
    await until(client, lambda s: s["memory"]["model_tasks"] == {"request": 1, "next_edit": 1})
    # a model setting changes: the models load again
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"tandem": {**SETTINGS, "contextSize": 8192}}))
    res = await asyncio.wait_for(asked, 120)
    assert (res["edits"] if isinstance(res, dict) else res.edits) == []
    await asyncio.wait_for(completion, 120)
    s = await until(client, lambda s: s["loads"] == 2 and (s["ready"] or s["load_error"]))
    assert s["ready"] and s["failures"] == {}, s["failures"]
    assert s["next_edit"]["proposed"] == 0 and s["memory"]["model_tasks"] == {}
    # the reloaded server answers
    assert await asyncio.wait_for(inline(client, squares, end, types.InlineCompletionTriggerKind.Invoked), 120)
    assert (await stats(client))["failures"] == {}
