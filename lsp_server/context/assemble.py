"""Everything the prompt stage needs about a cursor, gathered from the document, its tree and the other open
documents: prefix/suffix, the outline for a cut prefix, ranked snippets, and the completion mode."""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Callable

from .document import Document
from .outline import outline_above
from .snippets import Definition, extract, rank
from .syntax import parse
from .trigger import Mode, decide

# rough characters per token, to pre-select snippets before the prompt stage counts exact tokens
CHARS_PER_TOKEN = 3.2
MAX_INDEXED_DOCUMENTS = 64


@dataclass
class CursorContext:
    prefix: str
    suffix: str
    language: str
    mode: Mode
    outline: Callable[[int], str] | None
    files: list[tuple[str, str]] = field(default_factory=list)


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


def gather(doc: Document, line: int, col: int, others: list[Document], index: DefinitionIndex,
           context_tokens: int) -> CursorContext:
    prefix, suffix = doc.split(line, col)
    tree = parse(doc.text, doc.language)   # once, for the mode and the outline
    mode = decide(prefix, suffix, doc.language, tree)

    def outline(cut_line: int) -> str:
        if tree is None:
            return ""
        point = (line, len(prefix.rsplit("\n", 1)[-1].encode("utf-8")))
        return outline_above(tree, doc.text.encode("utf-8"), point, cut_line)

    files: list[tuple[str, str]] = []
    if others and context_tokens > 0:
        defs = [d for o in others if o.path != doc.path for d in index.definitions(o)]
        room = context_tokens * CHARS_PER_TOKEN
        chosen = []
        for s in rank(defs, prefix, suffix):
            if len(s.text) + len(s.path) + 2 <= room:
                chosen.append(s)
                room -= len(s.text) + len(s.path) + 2
        # one entry per file, files and snippets in a stable order so the cache survives re-ranking
        by_path: dict[str, list[str]] = {}
        for s in chosen:
            by_path.setdefault(s.path, []).append(s.text)
        files = [(p, "\n\n".join(sorted(texts, key=lambda t: doc_order(t, others, p))))
                 for p, texts in sorted(by_path.items())]
    return CursorContext(prefix, suffix, doc.language, mode, outline, files)


def doc_order(text: str, others: list[Document], path: str) -> int:
    src = next((o.text for o in others if o.path == path), "")
    i = src.find(text.split("\n", 1)[0])
    return i if i >= 0 else len(src)
