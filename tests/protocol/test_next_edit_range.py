"""A next edit's LSP range and text (protocol/next_edit.py `lsp_edit`) at a file's end and elsewhere: applied by
offsets as a client applies a text edit (in each position encoding), it gives the document the service's edit
describes, keeping the file's final newline or its lack of one, CRLF line ends included; the range is never
backwards (Helix refuses it; VS Code turns it round and glues the new line to the last one) and starts at a
line's start, where clients that preview whole lines read it."""
from __future__ import annotations

import pytest
from lsprotocol import types
from pygls.workspace import TextDocument
from pygls.workspace.position_codec import PositionCodec

from lsp_server.postprocess.next_edit import Edit
from lsp_server.protocol.next_edit import lsp_edit
from lsp_server.service.next_edit import Proposal

ENCODINGS = [types.PositionEncodingKind.Utf16, types.PositionEncodingKind.Utf8, types.PositionEncodingKind.Utf32]

# (document, the service's edit as (first line, line after the last, new lines), the document after it)
CASES = {
    "insertion after a last line without a newline": ("a\nb", (2, 2, "c\n"), "a\nb\nc"),
    "insertion of two lines there": ("a\nb", (2, 2, "c\nd\n"), "a\nb\nc\nd"),
    "insertion after a last line with a newline": ("a\nb\n", (2, 2, "c\n"), "a\nb\nc\n"),
    "insertion after the only line, without a newline": ("a", (1, 1, "b\n"), "a\nb"),
    "insertion before the last line without a newline": ("a\nb", (1, 1, "x\n"), "a\nx\nb"),
    "replacement of a last line without a newline": ("a\nb", (1, 2, "B\n"), "a\nB"),
    "replacement of it by two lines": ("a\nb", (1, 2, "B\nC\n"), "a\nB\nC"),
    "replacement of the last two lines without a newline": ("a\nb\nc", (1, 3, "B\n"), "a\nB"),
    "replacement of a last line with a newline": ("a\nb\n", (1, 2, "B\n"), "a\nB\n"),
    "deletion of a last line without a newline": ("a\nb", (1, 2, ""), "a"),
    "deletion of the last two lines without a newline": ("a\nb\nc", (1, 3, ""), "a"),
    "deletion of a last line with a newline": ("a\nb\n", (1, 2, ""), "a\n"),
    "deletion of the only line, without a newline": ("a", (0, 1, ""), ""),
    "insertion into an empty document": ("", (0, 0, "a\n"), "a\n"),
    "a line in the middle": ("a\nb\nc", (1, 2, "B\n"), "a\nB\nc"),
    "CRLF: insertion after a last line without a newline": ("a\r\nb", (2, 2, "c\r\n"), "a\r\nb\r\nc"),
    "CRLF: insertion after a last line with a newline": ("a\r\nb\r\n", (2, 2, "c\r\n"), "a\r\nb\r\nc\r\n"),
    "CRLF: replacement of a last line without a newline": ("a\r\nb", (1, 2, "B\r\n"), "a\r\nB"),
    "CRLF: replacement of a last line with a newline": ("a\r\nb\r\n", (1, 2, "B\r\n"), "a\r\nB\r\n"),
    "CRLF: deletion of a last line without a newline": ("a\r\nb", (1, 2, ""), "a"),
    "wide characters on a last line without a newline": ("é\n中😀b", (2, 2, "c\n"), "é\n中😀b\nc"),
    "wide characters replaced there": ("é\n中😀b", (1, 2, "x\n"), "é\nx"),
}


def offset(text: str, pos: types.Position, encoding: str) -> int:
    """A position's offset in the text as a client finds it: lines end at "\\n" (the CRLF's "\\r" is the line's
    own last character), the column counted in the encoding's units."""
    lines = text.split("\n")
    assert pos.line < len(lines), f"{pos} is past the last line"
    at = sum(len(line) + 1 for line in lines[:pos.line])
    codec, unit = {"utf-8": ("utf-8", 1), "utf-16": ("utf-16-le", 2), "utf-32": ("utf-32-le", 4)}[encoding]
    units = 0
    for i, ch in enumerate(lines[pos.line]):
        if units >= pos.character:
            return at + i
        units += len(ch.encode(codec)) // unit
    assert units == pos.character, f"{pos} is not at a character's boundary"
    return at + len(lines[pos.line])


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("case", CASES)
def test_the_edit_applied_as_a_client_applies_it_gives_the_proposed_text(case, encoding):
    source, (start, end, new), want = CASES[case]
    doc = TextDocument("file:///t/a.py", source, version=1, position_codec=PositionCodec(encoding=encoding))
    old = "".join(line + "\n" for line in source.split("\n"))[:-1]
    rng, text = lsp_edit(doc, Proposal("ne-1", doc.uri, 1, Edit(start, end, new, old)))
    assert (rng.start.line, rng.start.character) <= (rng.end.line, rng.end.character), rng   # never backwards
    assert rng.start.character == 0, rng   # whole lines: a client's preview reads them from the line's start
    a, b = offset(source, rng.start, encoding), offset(source, rng.end, encoding)
    assert source[:a] + text + source[b:] == want, (rng, text)
