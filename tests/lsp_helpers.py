"""Driving the real `tandem serve` over stdio with pytest-lsp."""
from __future__ import annotations

import asyncio
import time
from pathlib import Path

from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from conftest import FIXTURES, tandem_cmd
from evals.sessions.replay import plain

SERVER = ClientServerConfig(server_command=tandem_cmd() + ["serve"])
LANGUAGE_IDS = {".py": "python", ".ts": "typescript", ".go": "go"}


async def start(client: LanguageClient, options: dict | None = None, spec: str = "visual-studio-code",
                root: Path = FIXTURES / "lsp") -> None:
    caps = client_capabilities(spec)
    client.init_result = await client.initialize_session(types.InitializeParams(
        capabilities=caps, root_uri=root.as_uri(), initialization_options=options or {}))


async def stats(client: LanguageClient, records: bool = False) -> dict:
    return plain(await client.protocol.send_request_async("tandem/stats", {"records": records}))


async def health(client: LanguageClient) -> dict:
    return plain(await client.protocol.send_request_async("tandem/health", None))


def setting(s: dict, key: str) -> dict:
    """A setting in effect as tandem/stats or tandem/health lists it: {"key", "value", "origin"}."""
    return {e["key"]: e for e in s["settings"]}[key]


async def wait_ready(client: LanguageClient, timeout: float = 180) -> dict:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        s = await stats(client)
        if s["ready"] or s["load_error"]:
            return s
        await asyncio.sleep(0.2)
    raise TimeoutError("the server did not load its models")


def open_doc(client: LanguageClient, path: Path, text: str | None = None, language_id: str | None = None,
             uri: str | None = None) -> tuple[str, str]:
    text = path.read_text() if text is None else text
    uri = uri or path.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
        uri=uri, language_id=language_id or LANGUAGE_IDS.get(path.suffix, "plaintext"), version=1, text=text)))
    return uri, text


def blank_cursor(text: str) -> types.Position:
    """The last whitespace-only line that is not empty: the fixtures' empty function body."""
    lines = text.split("\n")
    i = max(n for n, l in enumerate(lines) if l and not l.strip())
    return types.Position(line=i, character=len(lines[i]))


def type_text(client: LanguageClient, uri: str, version: int, pos: types.Position, text: str) -> types.Position:
    """Insert text at pos (no newlines); returns the cursor after it."""
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[types.TextDocumentContentChangePartial(
            range=types.Range(start=pos, end=pos), text=text)]))
    return types.Position(line=pos.line, character=pos.character + len(text.encode("utf-16-le")) // 2)


async def inline(client: LanguageClient, uri: str, pos: types.Position,
                 kind: types.InlineCompletionTriggerKind = types.InlineCompletionTriggerKind.Automatic) -> str:
    res = await client.text_document_inline_completion_async(types.InlineCompletionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=pos,
        context=types.InlineCompletionContext(trigger_kind=kind)))
    items = res.items if isinstance(res, types.InlineCompletionList) else (res or [])
    return items[0].insert_text if items else ""


async def popup(client: LanguageClient, uri: str, pos: types.Position):
    res = await client.text_document_completion_async(types.CompletionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=pos))
    return res.items if isinstance(res, types.CompletionList) else (res or [])


async def raw_request(client: LanguageClient, method: str, params, msg_id: str, timeout: float = 30):
    """Send a request as raw JSON, past the client's own type checks (for malformed params), and get its result
    as the JSON came (no conversion to lsprotocol's types)."""
    fut = asyncio.get_running_loop().create_future()
    client.protocol._request_futures[msg_id] = fut
    client.protocol._send_data({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
    return await asyncio.wait_for(fut, timeout)
