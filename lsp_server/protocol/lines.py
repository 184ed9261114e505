"""Lines as the LSP counts them. pygls splits a document with str.splitlines, which also breaks lines at
U+2028, U+2029, U+0085, form feeds and other separators; editors break only at \\r\\n, \\n and \\r. A document
holding one of those (in a string or a comment) would have every later edit applied in the wrong place."""
from __future__ import annotations

import re
from functools import partial

from pygls.workspace import TextDocument, Workspace

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


class LspTextDocument(TextDocument):
    @property
    def lines(self):
        return tuple(_LINE.findall(self.source))


def _create(ws: Workspace, doc_uri: str, source=None, version=None, language_id=None) -> TextDocument:
    return LspTextDocument(doc_uri, source=source, version=version, language_id=language_id,
                           sync_kind=ws._sync_kind, position_codec=ws.position_codec)


def use_lsp_lines(ws: Workspace) -> None:
    """Make the workspace pygls built at initialize hold LspTextDocuments (before any document is opened)."""
    ws._create_text_document = partial(_create, ws)
