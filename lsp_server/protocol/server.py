"""The language server object: pygls's server plus the completion service and what it knows of documents.
Handlers live in the modules named after what they handle; each registers itself here."""
from __future__ import annotations

import asyncio
import json
import logging
import os
from urllib.parse import unquote

from lsprotocol import types
from pygls.exceptions import (FeatureNotificationError, FeatureRequestError, JsonRpcException, JsonRpcInternalError,
                              JsonRpcInvalidRequest, JsonRpcParseError)
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol, lsp_method
from pygls.protocol.json_rpc import JsonRPCNotification

from .. import __version__
from ..context.exclude import Excluder
from ..context.ring import Ring
from ..service import CompletionService, Settings
from ..service.layers import Layers

log = logging.getLogger("tandem.server")


INVALID = JsonRPCNotification(method="$/tandem/invalid", jsonrpc="2.0", params=None)


def _valid_id(msg_id) -> bool:
    return isinstance(msg_id, (int, str)) and not isinstance(msg_id, bool)


class TandemProtocol(LanguageServerProtocol):
    """pygls leaves some bad messages unanswered (params that do not fit the method's types, JSON that is not
    JSON-RPC) and the client waits forever; answer each with the JSON-RPC error instead."""

    def structure_message(self, data):
        # called for every JSON object, innermost first; only a message has "jsonrpc" and "method"
        if isinstance(data, dict) and "jsonrpc" in data and "method" in data:
            why = ("jsonrpc must be \"2.0\"" if data["jsonrpc"] != "2.0" else
                   "method must be a string" if not isinstance(data["method"], str) else
                   "id must be a number or a string" if "id" in data and not _valid_id(data["id"]) else "")
            if why:
                self.invalid_request(data, why)
                return INVALID   # a "$/" notification nobody handles: pygls ignores it quietly
            if "params" not in data:   # params may be left out; pygls's types want the field
                data = {**data, "params": None}
        try:
            return super().structure_message(data)
        except JsonRpcException as e:
            if isinstance(data, dict) and "id" in data and "method" in data:
                detail = e.__cause__ or e
                self._send_response(data["id"], error=types.ResponseError(
                    code=e.code, message=f"{e.message}: {str(detail).splitlines()[0]} in {data['method']}"))
            return INVALID

    def handle_message(self, message):
        # JSON that is not a JSON-RPC 2.0 message (an array, a number, an object without "jsonrpc": "2.0"):
        # pygls logs it and answers nothing, so a client waiting on its id would hang
        if getattr(message, "jsonrpc", None) != "2.0":
            self.invalid_request(message, "not a JSON-RPC 2.0 message")
            return
        if self._shutdown and getattr(message, "method", "exit") != "exit" and hasattr(message, "id"):
            # the LSP answers requests after shutdown with an error; pygls drops them
            self.invalid_request(message, "the server is shutting down")
            return
        super().handle_message(message)

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: types.DidChangeTextDocumentParams):
        # a change to a document never opened (a client that lost its didOpen): pygls's workspace raised KeyError
        # at it, reported as a failed handler; there is no text to apply it to, so it is left
        if unquote(params.text_document.uri) not in self.workspace.text_documents:
            log.warning("a change to %s, which was never opened: ignored", params.text_document.uri)
            return
        yield from super().lsp_text_document__did_change(params)

    def _execute_handler(self, msg_id, handler, callback, args=None, kwargs=None):
        # pygls files the future of every handler it runs under its message id, but only a request's answer
        # takes it out again: a notification's (one per keystroke, under a made-up id) stayed for good, about
        # 1.5 KiB each. Take each out once it is done, whatever the handler was.
        def done(future):
            try:
                callback(future)
            finally:
                if self._request_futures.get(msg_id) is future:
                    self._request_futures.pop(msg_id, None)
        super()._execute_handler(msg_id, handler, done, args, kwargs)

    def invalid_request(self, message, why: str) -> None:
        fields = message if isinstance(message, dict) else getattr(message, "__dict__", {})
        if "id" not in fields and "method" in fields:
            return   # a notification: nobody waits for an answer
        msg_id = fields.get("id") if _valid_id(fields.get("id")) else None
        log.warning("invalid message: %s", why)
        self._send_data({"jsonrpc": "2.0", "id": msg_id,
                         "error": {"code": JsonRpcInvalidRequest.CODE, "message": f"Invalid request: {why}"}})

    def parse_error(self, error: Exception) -> None:
        log.warning("a message that is not JSON: %s", error)
        self._send_data({"jsonrpc": "2.0", "id": None,
                         "error": {"code": JsonRpcParseError.CODE, "message": f"Parse error: {error}"}})


class TandemServer(LanguageServer):
    def __init__(self):
        super().__init__("tandem", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
                         protocol_cls=TandemProtocol)
        self.service = CompletionService(log=log.info)
        self.layers = Layers()                 # where each setting comes from (lifecycle.py fills it)
        self.settings = Settings()             # what they come to: self.layers.effective()
        self.refused: dict[str, str] = {}      # uri -> why this document is not completed (too large, binary)
        self.workspace_root: str | None = None
        self.ring = Ring()                     # recently edited and viewed code, for other documents' prompts
        self.load_task: asyncio.Task | None = None
        self._excluder: Excluder | None = None

    def excluder(self) -> Excluder:
        """The workspace's rules of what is never completed nor read (made again when the root or the exclude
        setting changes; it reads .tandemignore again when that changes)."""
        root, extra = self.workspace_root, tuple(self.settings.exclude)
        ex = self._excluder
        if ex is None or ex.extra != extra or ex.root != (os.path.realpath(root) if root else None):
            ex = self._excluder = Excluder(root, extra)
        return ex

    def report_server_error(self, error: Exception, source) -> None:
        # a body that is not JSON (or not UTF-8) is the client's fault: JSON-RPC answers it with -32700 and id
        # null; pygls would pop up a message in the editor instead
        if isinstance(error, (json.JSONDecodeError, UnicodeDecodeError)):
            self.protocol.parse_error(error)
            return
        if source is FeatureRequestError and not isinstance(error, JsonRpcInternalError):
            return   # an error the handler meant (invalid params, unknown document): the answer says it
        # a handler that raised otherwise is a bug: its traceback goes to the log (pygls only shows the message
        # in the editor, or answers a request with -32603), and the server goes on
        data = getattr(error, "data", None)
        where = "".join(data.get("traceback", [])) if isinstance(data, dict) else ""
        kind = {FeatureNotificationError: "a notification", FeatureRequestError: "a request"}.get(
            source, getattr(source, "__name__", str(source)))
        log.error("%s handler failed: %s\n%s", kind, error, where.rstrip())
        super().report_server_error(error, source)

    def message(self, kind: types.MessageType, text: str) -> None:
        self.window_show_message(types.ShowMessageParams(type=kind, message=f"Tandem: {text}"))

    def push_status(self, state: str, message: str = "") -> None:
        """`tandem/status` {state, message, enabled} as the state changes (loading, ready, generating, error;
        ready while switched off reads disabled), so a client shows it at once and need not poll."""
        if state == "ready" and not self.settings.enabled:
            state = "disabled"
        self.protocol.notify("tandem/status", {"state": state, "message": message, "enabled": self.settings.enabled})

    def log_message(self, text: str) -> None:
        self.window_log_message(types.LogMessageParams(type=types.MessageType.Log, message=f"Tandem: {text}"))
