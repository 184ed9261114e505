"""The documents' lines as the LSP counts them (protocol/lines.py): an edit applied by offsets gives what pygls's
line-by-line rewrite gives, on every kind of range, and the lines follow the text."""
import random

from lsprotocol import types
from pygls.workspace import TextDocument

from lsp_server.protocol.lines import LspTextDocument, split_lines

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


def test_lines_break_at_cr_lf_and_crlf_only():
    rng = random.Random(6)
    plain = [p for p in PIECES if p not in ("\u2028", "\x85", "\x0c")]
    for pieces in (PIECES, plain, plain + ["\v", "\x1c", "\u2029"]):
        for _ in range(2000):
            text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 30)))
            lines = split_lines(text)
            assert "".join(lines) == text
            assert all(line.count("\n") + line.count("\r") - line.count("\r\n") == 1 for line in lines[:-1])
            assert lines == () or lines[-1].endswith(("\n", "\r")) or not set(lines[-1]) & set("\r\n")
            assert lines == tuple(l + e for l, e in _reference(text))


def _reference(text: str):
    """Lines by hand: break after \r\n, a lone \r or \n."""
    line, i = "", 0
    while i < len(text):
        if text.startswith("\r\n", i):
            yield line, "\r\n"
            line, i = "", i + 2
        elif text[i] in "\r\n":
            yield line, text[i]
            line, i = "", i + 1
        else:
            line, i = line + text[i], i + 1
    if line:
        yield line, ""
