"""Everything the prompt stage needs about a cursor, gathered from the document, its tree and the other open
documents: prefix/suffix, the outline for a page that starts below the file's top, ranked snippets per page,
and the completion mode."""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Callable

from .document import Document
from .names import needed_names
from .outline import enclosing_scopes, header_of, imports_above
from .snippets import Definition, extract, rank_in
from .syntax import parse
from .trigger import Mode, decide

# rough characters per token, to pre-select snippets before the prompt stage counts exact tokens
CHARS_PER_TOKEN = 3.2
MAX_INDEXED_DOCUMENTS = 64
MAX_FILE_CHOICES = 256
MAX_PAGE_OUTLINES = 128


@dataclass
class CursorContext:
    prefix: str
    suffix: str
    language: str
    mode: Mode
    outline: Callable[[int], str] | None                     # outline(page start): the scopes around it
    files: list[tuple[str, str]] = field(default_factory=list)
    imports: Callable[[int], str] | None = None              # imports(page start): the imports above it
    needs: frozenset[str] = frozenset()                      # names the code below uses, unbound above


class DocumentFiles:
    """The other files' snippets chosen for each document, kept while they stay valid: a jump, or a file opened
    since, must not change the start of the document's prompts (every page's cached state begins with them).
    A choice is made again when one of its snippets is gone from its document. Bounded (LRU)."""

    def __init__(self, limit: int = MAX_FILE_CHOICES):
        self.limit = limit
        self._chosen: OrderedDict[str, list[tuple[str, str]]] = OrderedDict()

    def get(self, key: str, others: list[Document], choose: Callable[[], list[tuple[str, str]]]
            ) -> list[tuple[str, str]]:
        hit = self._chosen.get(key)
        if hit is not None and all(_still_there(path, text, others) for path, text in hit):
            self._chosen.move_to_end(key)
            return hit
        files = self._chosen[key] = choose()
        self._chosen.move_to_end(key)
        while len(self._chosen) > self.limit:
            self._chosen.popitem(last=False)
        return files

    def __len__(self) -> int:
        return len(self._chosen)


def _still_there(path: str, text: str, others: list[Document]) -> bool:
    """A chosen file's snippets are still worth showing while each one's first line is still in that file."""
    src = next((o.text for o in others if o.path == path), None)
    return src is not None and all(t.split("\n", 1)[0] in src for t in text.split("\n\n") if t)


class DefinitionIndex:
    """Definitions per open document, extracted again only when its text changes. Bounded (LRU)."""

    def __init__(self, limit: int = MAX_INDEXED_DOCUMENTS):
        self.limit = limit
        self._by_path: OrderedDict[str, tuple[int, list[Definition]]] = OrderedDict()

    def definitions(self, doc: Document) -> list[Definition]:
        key = hash(doc.text)
        hit = self._by_path.get(doc.path)
        if hit is None or hit[0] != key:
            hit = (key, extract(doc.path, doc.text, doc.language))
            self._by_path[doc.path] = hit
        self._by_path.move_to_end(doc.path)
        while len(self._by_path) > self.limit:
            self._by_path.popitem(last=False)
        return hit[1]

    def __len__(self) -> int:
        return len(self._by_path)


class PageOutlines:
    """The imports and scope headers above each page start, from a parse of the text above it only: an edit
    below a page's start (a line emptied, a statement half typed, which tree-sitter's error recovery may read
    as a different structure) must not change the page's outline and throw its cached state away. Keyed by
    that text; bounded (LRU)."""

    def __init__(self, limit: int = MAX_PAGE_OUTLINES):
        self.limit = limit
        self._by_text: OrderedDict[tuple[str, int, int, int], tuple[str, str]] = OrderedDict()

    def above(self, text: str, language: str, indent_of_next: int) -> tuple[str, str]:
        """(imports, scope headers) of a page that starts where `text` ends, with its first line indented so."""
        key = (language, len(text), hash(text), indent_of_next)
        hit = self._by_text.get(key)
        if hit is None:
            tree = parse(text, language)
            if tree is None:
                hit = ("", "")
            else:
                line = text.count("\n")
                hit = (imports_above(tree, line), scopes_open_at_end(tree, text, indent_of_next))
            self._by_text[key] = hit
            while len(self._by_text) > self.limit:
                self._by_text.popitem(last=False)
        self._by_text.move_to_end(key)
        return hit

    def __len__(self) -> int:
        return len(self._by_text)


def scopes_open_at_end(tree, text: str, indent_of_next: int) -> str:
    """The headers of the scopes still open where `text` ends, for a next line indented `indent_of_next`: those
    around its last character whose header line is indented less (a scope that closed before does not count)."""
    body = text.rstrip()
    if not body:
        return ""
    row = body.count("\n")
    col = len(body[body.rfind("\n") + 1:].encode("utf-8"))
    source = text.encode("utf-8")
    out = []
    for node in enclosing_scopes(tree, (row, max(0, col - 1))):
        head = header_of(node, source)
        if len(head.expandtabs(4)) - len(head.expandtabs(4).lstrip()) < indent_of_next:
            out.append(head + "\n")
    return "".join(out)


def gather(doc: Document, line: int, col: int, others: list[Document], index: DefinitionIndex,
           context_tokens: int, chosen: DocumentFiles | None = None,
           outlines: PageOutlines | None = None) -> CursorContext:
    prefix, suffix = doc.split(line, col)
    tree = parse(doc.text, doc.language)   # once, for the mode
    mode = decide(prefix, suffix, doc.language, tree)
    outlines = outlines if outlines is not None else PageOutlines()
    starts: list[int] = []

    def above(start: int) -> tuple[str, str]:
        # the page's, not the cursor's: every cursor of the page gets the same one
        if tree is None:
            return "", ""
        if not starts:
            at = 0
            for l in doc.text.split("\n"):
                starts.append(at)
                at += len(l) + 1
        at = starts[min(start, len(starts) - 1)]
        first = doc.text[at:doc.text.find("\n", at) if "\n" in doc.text[at:] else len(doc.text)]
        return outlines.above(doc.text[:at], doc.language, len(first.expandtabs(4)) - len(first.expandtabs(4).lstrip()))

    def outline(start: int) -> str:
        return above(start)[1]

    def imports(start: int) -> str:
        return above(start)[0]

    # definitions in another language are rarely what the code calls, and each costs prompt evaluation
    others = [o for o in others if o.path != doc.path and family(o.language) == family(doc.language)]
    files: list[tuple[str, str]] = []
    if others and context_tokens > 0:
        def choose() -> list[tuple[str, str]]:
            defs = [d for o in others for d in index.definitions(o)]
            return pack(rank_in(defs, doc.text), others, context_tokens)
        files = chosen.get(doc.path, others, choose) if chosen is not None else choose()
    needs = needed_names(tree, len(prefix.encode("utf-8")), doc.language)
    return CursorContext(prefix, suffix, doc.language, mode, outline, files, imports, needs)


FAMILIES = {"typescript": "js", "tsx": "js", "javascript": "js", "c": "c", "cpp": "c"}


def family(language: str) -> str:
    return FAMILIES.get(language, language)


def pack(ranked, others: list[Document], context_tokens: int) -> list[tuple[str, str]]:
    """The best-ranked snippets that fit the budget, one entry per file, files and snippets in a stable order
    so the cache survives re-ranking."""
    room = context_tokens * CHARS_PER_TOKEN
    chosen = []
    for s in ranked:
        if len(s.text) + len(s.path) + 2 <= room:
            chosen.append(s)
            room -= len(s.text) + len(s.path) + 2
    by_path: dict[str, list[str]] = {}
    for s in chosen:
        by_path.setdefault(s.path, []).append(s.text)
    return [(p, "\n\n".join(sorted(texts, key=lambda t: doc_order(t, others, p))))
            for p, texts in sorted(by_path.items())]


def doc_order(text: str, others: list[Document], path: str) -> int:
    src = next((o.text for o in others if o.path == path), "")
    i = src.find(text.split("\n", 1)[0])
    return i if i >= 0 else len(src)
