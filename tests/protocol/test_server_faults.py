"""A server whose models cannot load stays up, says why, answers empty, and recovers when the configuration
points at good models."""
from __future__ import annotations

import asyncio

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from conftest import FIXTURES
from lsp_helpers import SERVER, blank_cursor, inline, open_doc, start, stats, wait_ready

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.models]


@pytest.fixture(scope="module")
def broken_model(tmp_path_factory):
    path = tmp_path_factory.mktemp("models") / "broken.gguf"
    path.write_bytes(b"GGUF" + b"\0" * 64)     # a header cut short
    return path


@pytest_lsp.fixture(config=SERVER, scope="module")
async def client(lsp_client: LanguageClient, broken_model):
    await start(lsp_client, {"target": str(broken_model), "timeBudgetMs": 30000, "suggestions": "eager"})
    yield
    await lsp_client.shutdown_session()


async def test_a_broken_model_is_reported_and_requests_get_empty_answers(client: LanguageClient, broken_model):
    s = await wait_ready(client)
    assert not s["ready"] and "broken.gguf" in s["load_error"]
    await asyncio.sleep(0.2)
    assert any("could not be loaded" in m.message and m.type == types.MessageType.Error for m in client.messages)
    uri, text = open_doc(client, FIXTURES / "lsp" / "inventory.py")
    assert await inline(client, uri, blank_cursor(text)) == ""
    # fixing the setting reloads the models, and completions work
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"timeBudgetMs": 30000, "suggestions": "eager"}))   # eager: the answer is shown, sure or not
    for _ in range(300):
        s = await stats(client)
        if s["ready"]:
            break
        await asyncio.sleep(0.2)
    assert s["ready"] and s["load_error"] is None
    assert (await inline(client, uri, blank_cursor(text))).strip()
