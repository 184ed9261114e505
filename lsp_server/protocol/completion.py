"""textDocument/inlineCompletion (ghost text: VS Code, Neovim 0.12) and textDocument/completion (one popup
item: Helix, Neovim 0.11). Both are async so that $/cancelRequest reaches them; the model runs on the
service's own thread."""
from __future__ import annotations

import re

from lsprotocol import types
from pygls.exceptions import JsonRpcInternalError, JsonRpcInvalidParams

from ..context import DocumentError
from ..engine import ContextFullError
from ..service import Answer
from .documents import open_document, record, request_for, server_position
from .server import TandemServer

WORD_BEFORE = re.compile(r"[A-Za-z0-9_$]*$")
LABEL_CHARS = 60
ACCEPT_COMMAND = "tandem.accepted"
# only popup clients use these (Helix, Neovim 0.11; inline completion asks at every edit): not the space, which
# would send a request at every word typed
TRIGGER_CHARACTERS = [".", "(", "[", "{", ",", ":", "="]


def report_notices(ls: TandemServer) -> None:
    """Tell the user what the engine has to say, once each time it comes up: a model file deleted or damaged
    under the running server, a backend that went down or is back."""
    for msg in ls.service.notices():
        ls.message(types.MessageType.Warning, msg)


async def answer(ls: TandemServer, uri: str, pos: types.Position, invoked: bool = False
                 ) -> tuple[Answer, object, int, int]:
    """`invoked`: the user asked (a key, not typing): answered even where ghost text is rarely right, such as
    with code right of the cursor."""
    report_notices(ls)
    doc = open_document(ls, uri)
    line, col = server_position(doc, pos)
    req = request_for(ls, doc, line, col)
    req.force = invoked
    record(ls, doc, line, "view")
    ls.push_status("generating")
    try:
        ans = await ls.service.complete(uri, req)
    except DocumentError as e:
        raise JsonRpcInvalidParams(str(e)) from e
    except ContextFullError as e:
        ls.message(types.MessageType.Warning, str(e))
        raise JsonRpcInternalError(str(e)) from e
    except RuntimeError as e:   # a model failure; the next request may work (the models stay loaded)
        ls.message(types.MessageType.Error, f"completion failed: {e}")
        raise JsonRpcInternalError(f"completion failed: {e}") from e
    finally:
        svc = ls.service
        ls.push_status("error" if svc.load_error else "ready" if svc.ready else "loading", svc.load_error or "")
    return ans, doc, line, col


def offer_better(ls: TandemServer, uri: str, req) -> None:
    """The service found a better answer at the place of a shown one (the page's, where a fast prompt's was
    shown): `tandem/betterCompletion` {uri, version, position} tells the client to ask again there (the cache
    answers). Only while the document is as it was then: after an edit the client asks anyway."""
    doc = ls.workspace.text_documents.get(uri)
    if doc is None or uri in ls.refused or doc.source != req.document.text:
        return
    line = doc.lines[req.line] if req.line < len(doc.lines) else ""
    pos = types.Position(line=req.line, character=doc.position_codec.client_num_units(line[:req.col]))
    ls.protocol.notify("tandem/betterCompletion", {"uri": uri, "version": doc.version,
                                                   "position": {"line": pos.line, "character": pos.character}})


def accepted_args(uri: str, ans: Answer) -> dict:
    """What an item's accept command tells the server back: the answer's size and source, and where it was
    scored, the gate's verdict (its score and what it read: the client passes it back untouched)."""
    out = {"uri": uri, "chars": len(ans.text), "source": str(ans.source)}
    if ans.confidence is not None:
        out["confidence"] = ans.confidence
    if ans.asked is not None:
        out["asked"] = ans.asked
    return out


def label_for(text: str) -> str:
    first = text.strip().split("\n", 1)[0].strip()
    more = "\n" in text.strip()
    if len(first) > LABEL_CHARS:
        first = first[:LABEL_CHARS - 1] + "…"
    return first + (" …" if more else "")


def documentation(ls: TandemServer, text: str) -> types.MarkupContent | str:
    """The whole completion for the popup's side panel, as Markdown where the client reads it."""
    caps = ls.client_capabilities.text_document
    item = caps.completion.completion_item if caps and caps.completion else None
    if item is not None and types.MarkupKind.Markdown in (item.documentation_format or ()):
        return types.MarkupContent(kind=types.MarkupKind.Markdown, value=f"```\n{text}\n```")
    return text


def register(server: TandemServer) -> None:
    server.service.offers.notify = lambda uri, req: offer_better(server, uri, req)

    @server.feature(types.TEXT_DOCUMENT_INLINE_COMPLETION, types.InlineCompletionOptions())
    async def inline_completion(ls: TandemServer, params: types.InlineCompletionParams):
        invoked = params.context is not None and \
            params.context.trigger_kind == types.InlineCompletionTriggerKind.Invoked
        ans, _, _, _ = await answer(ls, params.text_document.uri, params.position, invoked)
        if not ans.text:
            return types.InlineCompletionList(items=[])
        here = types.Range(start=params.position, end=params.position)
        return types.InlineCompletionList(items=[types.InlineCompletionItem(
            insert_text=ans.text, range=here,
            command=types.Command(title="Tandem: accepted", command=ACCEPT_COMMAND,
                                  arguments=[accepted_args(params.text_document.uri, ans)]))])

    @server.feature(types.TEXT_DOCUMENT_COMPLETION,
                    types.CompletionOptions(trigger_characters=TRIGGER_CHARACTERS, resolve_provider=False))
    async def completion(ls: TandemServer, params: types.CompletionParams):
        ans, doc, line, col = await answer(ls, params.text_document.uri, params.position)
        if not ans.text:
            return types.CompletionList(is_incomplete=True, items=[])
        # the item replaces the word before the cursor with word + completion, so the client's filter,
        # which matches what was typed against filterText, keeps it
        word = WORD_BEFORE.search(doc.lines[line][:col] if line < len(doc.lines) else "").group(0)
        start = types.Position(line=params.position.line,
                               character=params.position.character - doc.position_codec.client_num_units(word))
        new_text = word + ans.text
        item = types.CompletionItem(
            label=label_for(ans.text), kind=types.CompletionItemKind.Text, detail="Tandem",
            documentation=documentation(ls, ans.text),
            filter_text=new_text, sort_text="0", preselect=True,
            insert_text_format=types.InsertTextFormat.PlainText,
            text_edit=types.TextEdit(range=types.Range(start=start, end=params.position), new_text=new_text),
            command=types.Command(title="Tandem: accepted", command=ACCEPT_COMMAND,
                                  arguments=[accepted_args(params.text_document.uri, ans)]))
        # incomplete: the next keystroke asks again, which the typing-through cache answers at once
        return types.CompletionList(is_incomplete=True, items=[item])
