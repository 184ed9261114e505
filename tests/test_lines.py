"""The documents' lines as the LSP counts them (protocol/lines.py): an edit applied by offsets gives what pygls's
line-by-line rewrite gives, on every kind of range, and the lines follow the text."""
import random

from lsprotocol import types
from pygls.workspace import TextDocument

from lsp_server.protocol.lines import LspTextDocument

PIECES = ["a", "bc", "é", "中", "😀", "\t", " ", "\n", "\r\n", "\r", "\u2028", "\x85", "\x0c"]


def text_of(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(PIECES) for _ in range(n))


def change(rng: random.Random, doc: LspTextDocument) -> types.TextDocumentContentChangePartial:
    n = len(doc.lines)

    def pos():
        line = rng.randint(0, n + 1)
        return types.Position(line=line, character=rng.randint(0, 8))
    a, b = pos(), pos()
    if rng.random() < 0.8 and (b.line, b.character) < (a.line, a.character):
        a, b = b, a    # mostly forward ranges, some backwards
    return types.TextDocumentContentChangePartial(range=types.Range(start=a, end=b), text=text_of(rng, rng.randint(0, 5)))


def test_an_edit_by_offsets_is_the_edit_pygls_makes():
    rng = random.Random(5)
    for _ in range(300):
        text = text_of(rng, rng.randint(0, 60))
        ours = LspTextDocument("file:///a.py", text, sync_kind=types.TextDocumentSyncKind.Incremental)
        theirs = LspTextDocument("file:///a.py", text, sync_kind=types.TextDocumentSyncKind.Incremental)
        for _ in range(20):
            ch = change(rng, ours)
            ours.apply_change(ch)
            TextDocument._apply_incremental_change(theirs, ch)   # pygls's own, on the same lines
            assert ours.source == theirs.source, (text, ch)
            assert "".join(ours.lines) == ours.source
            assert [ours.line_offset(i) for i in range(len(ours.lines))] == \
                [sum(map(len, ours.lines[:i])) for i in range(len(ours.lines))]
