"""Lines as the LSP counts them. pygls splits a document with str.splitlines, which also breaks lines at
U+2028, U+2029, U+0085, form feeds and other separators; editors break only at \\r\\n, \\n and \\r. A document
holding one of those (in a string or a comment) would have every later edit applied in the wrong place.

The lines and their offsets are kept until the text changes: pygls asks for them several times for each edit and
each position (it split the text again every time, and wrote the whole document out line by line for every
keystroke), which cost a keystroke in a 4 MB file 250-700 ms before any completion work."""
from __future__ import annotations

import re
from functools import partial
from itertools import accumulate

from lsprotocol import types
from pygls.workspace import TextDocument, Workspace

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")
# the separators other than \r and \n at which str.splitlines breaks a line: a text without them is split by
# str.splitlines, in about half the regex's time (4 MB: 10 ms to look for them and 11 to split, against 39)
_OTHER_BREAKS = re.compile("[\v\f\x1c\x1d\x1e\x85\u2028\u2029]")


def split_lines(source: str) -> tuple[str, ...]:
    """The lines of a text as editors count them, each with its line break."""
    if _OTHER_BREAKS.search(source) is None:
        return tuple(source.splitlines(keepends=True))
    return tuple(_LINE.findall(source))


class LspTextDocument(TextDocument):
    _lines_of: str | None = None       # the text the lines below were split from
    _lines: tuple[str, ...] = ()
    _starts: tuple[int, ...] = (0,)    # each line's offset in that text, and its length last

    @property
    def lines(self):
        source = self.source
        if source is not self._lines_of:
            self._lines = split_lines(source)
            self._starts = tuple(accumulate(map(len, self._lines), initial=0))
            self._lines_of = source
        return self._lines

    def line_offset(self, line: int) -> int:
        """Where a line starts in the source (its length past the last line)."""
        self.lines
        return self._starts[min(line, len(self._starts) - 1)]

    def _apply_incremental_change(self, change: types.TextDocumentContentChangePartial) -> None:
        """pygls's edit, by offsets: the text before the range's start, the new text, the text from its end."""
        lines = self.lines
        r = self._position_codec.range_from_client_units(lines, change.range)
        (sl, sc), (el, ec) = (r.start.line, r.start.character), (r.end.line, r.end.character)
        if sl >= len(lines) or el < sl:   # at or past the end, or backwards: as pygls does it
            super()._apply_incremental_change(change)
            return
        source = self.source
        start = self._starts[sl] + min(sc, len(lines[sl]))
        end = self._starts[el] + min(ec, len(lines[el])) if el < len(lines) else len(source)
        self._source = source[:start] + change.text + source[end:]


def _create(ws: Workspace, doc_uri: str, source=None, version=None, language_id=None) -> TextDocument:
    return LspTextDocument(doc_uri, source=source, version=version, language_id=language_id,
                           sync_kind=ws._sync_kind, position_codec=ws.position_codec)


def use_lsp_lines(ws: Workspace) -> None:
    """Make the workspace pygls built at initialize hold LspTextDocuments (before any document is opened)."""
    ws._create_text_document = partial(_create, ws)
