"""The language server object: pygls's server plus the completion service and what it knows of documents.
Handlers live in the modules named after what they handle; each registers itself here."""
from __future__ import annotations

import asyncio
import logging
import sys

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.json_rpc import JsonRPCNotification

from .. import __version__
from ..service import CompletionService, Settings

log = logging.getLogger("tandem.server")


class TandemProtocol(LanguageServerProtocol):
    """pygls drops a request whose params do not fit the method's types without answering it, and the client
    waits forever; answer it with the error instead."""

    def structure_message(self, data):
        try:
            return super().structure_message(data)
        except JsonRpcException as e:
            if isinstance(data, dict) and "id" in data and "method" in data:
                detail = e.__cause__ or e
                self._send_response(data["id"], error=types.ResponseError(
                    code=e.code, message=f"{e.message}: {str(detail).splitlines()[0]} in {data['method']}"))
            # a "$/" notification nobody handles: pygls ignores it quietly
            return JsonRPCNotification(method="$/tandem/invalid", jsonrpc="2.0", params=None)


class TandemServer(LanguageServer):
    def __init__(self):
        super().__init__("tandem", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
                         protocol_cls=TandemProtocol)
        self.service = CompletionService(log=log.info)
        self.settings = Settings()
        self.refused: dict[str, str] = {}      # uri -> why this document is not completed (too large, binary)
        self.workspace_root: str | None = None
        self.load_task: asyncio.Task | None = None

    def message(self, kind: types.MessageType, text: str) -> None:
        self.window_show_message(types.ShowMessageParams(type=kind, message=f"Tandem: {text}"))

    def log_message(self, text: str) -> None:
        self.window_log_message(types.LogMessageParams(type=types.MessageType.Log, message=f"Tandem: {text}"))


def build_server() -> TandemServer:
    from . import completion, documents, lifecycle, statistics
    server = TandemServer()
    for module in (lifecycle, documents, completion, statistics):
        module.register(server)
    return server


def serve(tcp_port: int | None = None, host: str = "127.0.0.1") -> None:
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="tandem: %(message)s")
    logging.getLogger("pygls").setLevel(logging.WARNING)   # it logs every message at INFO
    server = build_server()
    try:
        if tcp_port is not None:
            server.start_tcp(host, tcp_port)
        else:
            server.start_io()
    finally:
        server.service.shutdown()
