"""Next edits over LSP (the service's next_edit.py predicts them):

- `textDocument/copilotInlineEdit` (a request, modelled on GitHub's copilot-language-server): `{textDocument:
  {uri, version}, position}` -> `{edits: [{id, range, text, textDocument: {uri, version}, command}]}`, an empty
  list where there is nothing to propose (the setting is off, the models are loading, the user typed on). Clients
  send it when an edit rests; `$/cancelRequest` stops its generation.
- the code action "Tandem: apply the suggested edit", the way for every client (Helix's only one): the proposal
  for the document's version, computed when the user asks for code actions (never when an editor asks on its own
  at every cursor move);
- the command `tandem.nextEditAccepted` [id] that an edit and the action carry, and the notification
  `tandem/nextEditDismissed` {id}: counted in tandem/stats (`next_edit`)."""
from __future__ import annotations

import os
from urllib.parse import urlparse

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams
from pygls.uris import to_fs_path
from pygls.workspace import TextDocument

from ..service.next_edit import Proposal
from .documents import _field, _numbers, _uri, language_of, open_document, request_for, server_position
from .server import TandemServer

ACCEPTED_COMMAND = "tandem.nextEditAccepted"
ACTION_TITLE = "Tandem: apply the suggested edit"


def lsp_edit(doc: TextDocument, p: Proposal) -> tuple[types.Range, str]:
    """The proposal's whole lines as an LSP range and its text. The range starts at column 0 (the same in every
    position encoding) and ends at column 0 of the line after the last replaced one, or, where the document has no
    newline at its end and the edit reaches it, at the end of the last line: there is no line after it to end at,
    so the range takes that line in whole and the text ends without a newline, as the file did. An insertion
    after such a line starts at the line's start and writes the line again before the new ones (an empty range at
    its end would start mid-line, which clients that preview whole lines misread); a deletion reaching it starts
    at the line before it, whose newline goes with it."""
    lines = doc.source.split("\n")     # the service's lines: "\n" ends one, "\r" stays with its line
    e, text = p.edit, p.edit.text
    if e.end < len(lines):              # a newline ends the last line replaced: whole lines, as they are
        return types.Range(start=types.Position(line=e.start, character=0),
                           end=types.Position(line=e.end, character=0)), text
    last = len(lines) - 1
    eol = "\r\n" if text.endswith("\r\n") else "\n"   # a CRLF document's edit ends its lines with "\r\n"
    first = min(e.start, len(lines))
    if first > last:                    # an insertion after the last line
        first, text = last, lines[last] + eol + text
    elif not text and first > 0:        # the last lines deleted: the line before them ends the file now
        first -= 1
        text = lines[first] + "\n"
    if text.endswith("\r\n"):
        text = text[:-2]
    elif text.endswith("\n"):
        text = text[:-1]
    end = types.Position(line=last, character=doc.position_codec.client_num_units(lines[last]))
    return types.Range(start=types.Position(line=first, character=0), end=end), text


def _wanted(ls: TandemServer, doc: TextDocument) -> bool:
    return (ls.settings.next_edit and ls.service.ready and doc.uri not in ls.refused
            and ls.settings.language_enabled(language_of(doc)))


def shown_path(ls: TandemServer, doc: TextDocument) -> str:
    """The document's path as the prompt names it: relative to the workspace (as a diff names files; the small
    model follows a diff of `src/shop.py` better than one of a long absolute path), else its file name."""
    path = to_fs_path(doc.uri)
    if not path:   # no file: `untitled:Untitled-1`, a notebook's cell; named by the last part of the uri's path
        return os.path.basename(urlparse(doc.uri).path) or doc.uri
    root = ls.workspace_root
    try:
        if root and os.path.commonpath([root, path]) == root:
            return os.path.relpath(path, root)
    except ValueError:   # on another drive than the workspace, or (a Windows path read here) not absolute
        pass
    return os.path.basename(path) or path


async def _ask(ls: TandemServer, doc: TextDocument, line: int) -> Proposal | None:
    # the candidates' checks are asked as a completion at the line would be: with its other documents and project
    return await ls.service.next_edits.ask(doc.uri, doc.source, doc.version, line, shown_path(ls, doc),
                                           language_of(doc), request_for(ls, doc, line, 0))


def _current(ls: TandemServer, doc: TextDocument, p: Proposal | None) -> Proposal | None:
    """The proposal while the document is still the text it was made for."""
    live = ls.workspace.text_documents.get(doc.uri)
    return p if p is not None and live is not None and live.version == p.version else None


def register(server: TandemServer) -> None:
    @server.feature("textDocument/copilotInlineEdit")
    async def inline_edit(ls: TandemServer, params):
        uri, pos = _uri(params), _field(params, "position")
        if not isinstance(uri, (str, type(None))):   # a list or an object would fail as a dict key, not as params
            raise JsonRpcInvalidParams(f"unknown document {uri!r}: textDocument.uri must be a string")
        doc = open_document(ls, uri)
        line, char = _field(pos, "line"), _field(pos, "character")
        if not _numbers(line, char):
            raise JsonRpcInvalidParams("position must be {line, character}, numbers from 0")
        line, _ = server_position(doc, types.Position(line=line, character=char))
        if not _wanted(ls, doc):
            return {"edits": []}
        p = _current(ls, doc, await _ask(ls, doc, line))
        if p is None:
            return {"edits": []}
        rng, text = lsp_edit(doc, p)
        return {"edits": [{
            "id": p.id, "text": text,
            "range": {"start": {"line": rng.start.line, "character": rng.start.character},
                      "end": {"line": rng.end.line, "character": rng.end.character}},
            "textDocument": {"uri": doc.uri, "version": p.version},
            "command": {"title": "Accept next edit", "command": ACCEPTED_COMMAND, "arguments": [p.id]},
        }]}

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION,
                    types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix]))
    async def code_action(ls: TandemServer, params: types.CodeActionParams):
        uri = params.text_document.uri
        if uri not in ls.workspace.text_documents:
            return []   # editors ask for code actions on their own: no error for a document we do not hold
        doc = ls.workspace.get_text_document(uri)
        if not _wanted(ls, doc):
            return []
        p = ls.service.next_edits.cached(uri, doc.version)
        invoked = params.context.trigger_kind in (None, types.CodeActionTriggerKind.Invoked)
        if p is None and invoked:
            try:
                line, _ = server_position(doc, params.range.start)
            except Exception:   # a range outside the text: no action, no error for a menu
                return []
            p = await _ask(ls, doc, line)
        p = _current(ls, doc, p)
        if p is None:
            return []
        rng, text = lsp_edit(doc, p)
        return [types.CodeAction(
            title=ACTION_TITLE, kind=types.CodeActionKind.QuickFix,
            edit=types.WorkspaceEdit(changes={uri: [types.TextEdit(range=rng, new_text=text)]}),
            command=types.Command(title="Accept next edit", command=ACCEPTED_COMMAND, arguments=[p.id]))]

    @server.command(ACCEPTED_COMMAND)
    def accepted(ls: TandemServer, *args):
        pid = args[0] if args else None
        if isinstance(pid, list):       # pygls hands the arguments over as one list or spread, by version
            pid = pid[0] if pid else None
        if isinstance(pid, str):
            ls.service.next_edits.accepted(pid)

    @server.feature("tandem/nextEditDismissed")
    def dismissed(ls: TandemServer, params=None):
        pid = _field(params, "id")
        if isinstance(pid, str):
            ls.service.next_edits.dismissed(pid)

