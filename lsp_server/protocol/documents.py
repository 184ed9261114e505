"""Open documents: pygls keeps the text in step with the editor (incremental sync); here we refuse what cannot
or must not be completed (too large, binary, a secret file, one the user excluded), tell the service about edits, and turn a document into a pipeline value."""
from __future__ import annotations

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams
from pygls.uris import to_fs_path
from pygls.workspace import TextDocument

from ..context import Document, language_for_path
from ..context.exclude import is_secret
from ..pipeline import CompletionRequest
from ..service.settings import EDITOR_LANGUAGE_IDS
from .lines import LspTextDocument
from .server import TandemServer



def language_of(doc: TextDocument) -> str:
    lang = language_for_path(doc.uri.split("?", 1)[0])
    if lang == "text" and doc.language_id:
        lang = EDITOR_LANGUAGE_IDS.get(doc.language_id, doc.language_id)
    return lang


def _check(ls: TandemServer, doc: TextDocument, announce: bool) -> None:
    bad_at = None
    try:
        size = len(doc.source.encode("utf-8"))
    except UnicodeEncodeError as e:   # JSON can carry lone UTF-16 surrogates; no tokenizer or parser takes them
        size, bad_at = len(doc.source.encode("utf-8", errors="surrogatepass")), e.start
    why = None
    if is_secret(to_fs_path(doc.uri) or doc.uri):
        # a key or a password typed here must not be completed (the model writes on what it sees), nor reach
        # another file's prompt (a backend sends prompts off the machine); cannot be turned off
        why = (f"{doc.filename or doc.uri} is a secret file (.env, keys, credentials: the built-in list); no "
               f"completions in it, and its text never enters a prompt")
    elif ls.excluder().by_user(to_fs_path(doc.uri) or doc.uri):
        why = (f"{doc.filename or doc.uri} is excluded (the exclude setting or the workspace's .tandemignore); no "
               f"completions in it, and its text never enters a prompt")
    elif size > ls.settings.max_file_bytes:
        why = (f"{doc.filename or doc.uri} is {size:,} bytes, over the {ls.settings.max_file_bytes:,}-byte limit; "
               f"no completions in it")
    elif "\0" in doc.source:
        why = f"{doc.filename or doc.uri} looks binary (NUL characters); no completions in it"
    elif bad_at is not None:
        why = (f"{doc.filename or doc.uri} holds text that is not valid Unicode (a lone UTF-16 surrogate at "
               f"character {bad_at:,}); no completions in it")
    before = ls.refused.get(doc.uri)
    if why:
        ls.refused[doc.uri] = why
        if announce and before is None:
            ls.message(types.MessageType.Warning, why)
    else:
        ls.refused.pop(doc.uri, None)


def recheck(ls: TandemServer) -> None:
    """The open documents judged again (the exclude setting changed): each newly refused one is said once."""
    for doc in list(ls.workspace.text_documents.values()):
        _check(ls, doc, announce=True)


def open_document(ls: TandemServer, uri: str) -> TextDocument:
    if uri not in ls.workspace.text_documents:
        raise JsonRpcInvalidParams(f"unknown document {uri}: it was not opened with textDocument/didOpen")
    if uri in ls.refused:
        raise JsonRpcInvalidParams(ls.refused[uri])
    return ls.workspace.get_text_document(uri)


def snapshot(doc: TextDocument) -> Document:
    path = to_fs_path(doc.uri) or doc.uri
    return Document(path, doc.source, language_of(doc))


def server_position(doc: LspTextDocument, pos: types.Position) -> tuple[int, int]:
    """The position as the pipeline's Document counts (lines end at "\n", columns in code points), or an
    InvalidParams error that says what is wrong with it. LSP lines also end at a lone "\r"."""
    lines = doc.lines
    n = len(lines)
    if pos.line > n or (pos.line == n and pos.character > 0):
        raise JsonRpcInvalidParams(f"line {pos.line} is outside the document ({n} lines)")
    if pos.line < n:
        text = lines[pos.line].rstrip("\r\n")
        width = doc.position_codec.client_num_units(text)
        if pos.character > width:
            raise JsonRpcInvalidParams(f"character {pos.character} is past the end of line {pos.line} "
                                       f"({width} units)")
        p = doc.position_from_client_units(pos)
        offset = doc.line_offset(p.line) + p.character
    else:
        offset = len(doc.source)
    source = doc.source
    return source.count("\n", 0, offset), offset - (source.rfind("\n", 0, offset) + 1)


def request_for(ls: TandemServer, doc: TextDocument, line: int, col: int) -> CompletionRequest:
    others = [snapshot(d) for u, d in ls.workspace.text_documents.items()
              if u != doc.uri and u not in ls.refused]
    if not ls.settings.project_context:
        return CompletionRequest(snapshot(doc), line, col, others=others)
    return CompletionRequest(snapshot(doc), line, col, others=others, root=ls.workspace_root,
                             recent=ls.ring.chunks(), exclude=ls.settings.exclude)


def record(ls: TandemServer, doc: TextDocument, line: int, kind: str, end: int | None = None) -> None:
    """Put the lines around `line` (or lines line..end) of a document in the ring of recent code."""
    if doc.uri in ls.refused or not ls.settings.project_context:
        return
    path = to_fs_path(doc.uri) or doc.uri
    if end is None:
        ls.ring.add(path, doc.source, line, kind)
    else:
        ls.ring.add_range(path, doc.source, line, end + 1, kind)


def _field(obj, key: str):
    """A field of a custom notification's params, as pygls hands them over (a dict, or an object); None where
    it is missing or the params are no object at all."""
    return obj.get(key) if isinstance(obj, dict) else getattr(obj, key, None)


def _uri(params):
    """A custom notification's document: `uri`, or LSP's usual `textDocument.uri`, which other clients' authors
    write by habit."""
    return _field(params, "uri") or _field(_field(params, "textDocument"), "uri")


UINTEGER_MAX = 2 ** 31 - 1   # the LSP's uinteger: lsprotocol's Position refuses more with a ValueError


def _numbers(*values) -> bool:
    """All are LSP line or character numbers: ints (not bools), from 0 to the LSP's uinteger's largest."""
    return all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= UINTEGER_MAX for v in values)


def register(server: TandemServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: TandemServer, params: types.DidOpenTextDocumentParams):
        doc = ls.workspace.get_text_document(params.text_document.uri)
        _check(ls, doc, announce=True)
        ls.service.next_edits.opened(doc.uri, doc.source)
        if doc.uri not in ls.refused and ls.service.ready:
            # an editor opens a file at its top: fill the page there (a small file's page is the whole file, so
            # a first request anywhere in it reuses everything up to its cursor)
            ls.service.schedule_warmup(doc.uri, request_for(ls, doc, 0, 0))

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: TandemServer, params: types.DidChangeTextDocumentParams):
        doc = ls.workspace.get_text_document(params.text_document.uri)
        _check(ls, doc, announce=True)
        ls.service.on_edit(doc.uri, doc.source)
        if doc.uri in ls.refused or not params.content_changes:
            return
        last = params.content_changes[-1]
        if isinstance(last, types.TextDocumentContentChangePartial):
            record(ls, doc, last.range.start.line, "edit")
            # the cursor is where the last change's inserted text ends
            lines = last.text.split("\n")
            line = last.range.start.line + len(lines) - 1
            char = (last.range.start.character if len(lines) == 1 else 0) + \
                doc.position_codec.client_num_units(lines[-1])
            try:
                l, c = server_position(doc, types.Position(line=line, character=char))
            except JsonRpcInvalidParams:   # a change that ends outside the text (a client's bug): no fill for it
                return
            ls.service.schedule_warmup(doc.uri, request_for(ls, doc, l, c), edit=True)

    @server.feature("tandem/didMoveCursor")
    def did_move_cursor(ls: TandemServer, params):
        """Where the cursor is, before any keystroke there (Tandem's VS Code and Neovim clients send it after
        a move): the page around it fills while the user reads. `{uri, position}` (or `{textDocument: {uri},
        position}`, see _uri). A notification: bad params are ignored."""
        uri, pos = _uri(params), _field(params, "position")
        if not isinstance(uri, str) or uri not in ls.workspace.text_documents or uri in ls.refused:
            return
        line, char = _field(pos, "line"), _field(pos, "character")
        if not _numbers(line, char) or not ls.service.ready:
            return
        doc = ls.workspace.get_text_document(uri)
        try:
            l, c = server_position(doc, types.Position(line=line, character=char))
        except JsonRpcInvalidParams:   # a cursor outside the document: a notification gets no error back
            return
        record(ls, doc, l, "view")
        ls.service.cursor_moved(uri, request_for(ls, doc, l, c))

    @server.feature("tandem/visibleRanges")
    def visible_ranges(ls: TandemServer, params):
        """The lines an editor shows of a document ({uri, ranges: [{start, end}]}; Tandem's VS Code client sends
        them after a scroll): recent code for the other documents' prompts, and where the cursor is
        not in them, the place the fill prepares (the middle of the largest range: the user reads there and may
        click there). A notification: bad params are ignored."""
        uri, ranges = _uri(params), _field(params, "ranges")
        if not isinstance(uri, str) or uri not in ls.workspace.text_documents or not isinstance(ranges, list) \
                or uri in ls.refused:
            return
        doc = ls.workspace.get_text_document(uri)
        shown: list[tuple[int, int]] = []
        for r in ranges[:8]:
            start, end = _field(_field(r, "start"), "line"), _field(_field(r, "end"), "line")
            if _numbers(start, end) and end >= start:
                record(ls, doc, start, "view", end)
                shown.append((start, min(end, len(doc.lines) - 1)))
        shown = [(a, b) for a, b in shown if a <= b]
        if not shown or not ls.service.ready:
            return
        first, last = (server_position(doc, types.Position(line=x, character=0))[0]
                       for x in (min(a for a, _ in shown), max(b for _, b in shown)))

        def at_middle():
            start, end = max(shown, key=lambda r: r[1] - r[0])
            middle = (start + end) // 2
            width = doc.position_codec.client_num_units(doc.lines[middle].rstrip("\r\n"))
            return request_for(ls, doc, *server_position(doc, types.Position(line=middle, character=width)))

        ls.service.viewed(uri, first, last, at_middle)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: TandemServer, params: types.DidCloseTextDocumentParams):
        ls.service.on_close(params.text_document.uri)
        ls.refused.pop(params.text_document.uri, None)
