"""Everything the prompt stage needs about a cursor, gathered from the document, its tree, the other open
documents and, given the workspace root, the files the document imports on disk and the ring of recently
edited and viewed code: prefix/suffix, the outline for a page that starts below the file's top, the other
files' snippets for the repository-level head, and the completion mode."""
from __future__ import annotations

import os
from collections import OrderedDict
from dataclasses import dataclass, field
from functools import partial
from typing import Callable, Sequence

from .definitions import Definition, extract
from .document import Document, language_for_path
from .exclude import Excluder, is_secret
from .imports import Project, candidates, project_for
from .names import needed_names
from .near_lines import tail_lines
from .outline import enclosing_scopes, header_of, imports_above
from .ranking import IDENT, Near, names_near, rank_in, ranked, ranked_in_file
from .ring import Chunk
from .similar import SimilarChoices, similar_lines
from .syntax import Trees, byte_col, parse
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
    path: str | None = None       # the document's path as the head names it (workspace-relative); None: its own
    repo: str | None = None       # the repository's name in the head; None: the default
    # the fast prompt's files: the imported definitions that the code nearest the cursor uses
    near_files: list[tuple[str, str]] = field(default_factory=list)
    # the fast prompt's lines from elsewhere in this file like the code above the cursor (similar.py)
    similar: list[tuple[str, str]] = field(default_factory=list)
    # (the document's text, a lookup of its parse), for the post-processing's syntax checks: the lookup gives the
    # kept tree while it is kept (context.syntax.Trees.get), else None; a context does not keep a tree alive
    parsed: tuple[str, Callable[[], object]] | None = field(default=None, repr=False)


class DocumentFiles:
    """The other files' snippets chosen for each document, kept while they stay valid: a jump, or a file opened
    since, must not change the start of the document's prompts (every page's cached state begins with them).
    A choice is made again when one of its snippets is gone from its document. Bounded (LRU)."""

    def __init__(self, limit: int = MAX_FILE_CHOICES):
        self.limit = limit
        self._chosen: OrderedDict[str, list[tuple[str, str]]] = OrderedDict()
        # the choices made with the project around a document (project_files): one per document, with the
        # scopes (functions) it serves
        self._scoped: OrderedDict[str, ProjectChoice] = OrderedDict()

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
        return len(self._chosen) + len(self._scoped)

    def scoped(self, key: str) -> "ProjectChoice | None":
        hit = self._scoped.get(key)
        if hit is not None:
            self._scoped.move_to_end(key)
        return hit

    def keep(self, key: str, choice: "ProjectChoice") -> None:
        self._scoped[key] = choice
        self._scoped.move_to_end(key)
        while len(self._scoped) > self.limit:
            self._scoped.popitem(last=False)


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
           outlines: PageOutlines | None = None, root: str | None = None,
           recent: Sequence[Chunk] = (), near_tokens: int = 0, exclude: tuple[str, ...] = (),
           similar_tokens: int = 0, similar_chosen: SimilarChoices | None = None,
           trees: Trees | None = None) -> CursorContext:
    """The context of a cursor. `root`: the workspace root, whose files the document imports are read from disk
    for their definitions (None: none); `recent`: the ring's chunks of recently edited and viewed code. With
    either, the head's files are chosen by project_files; without, from the other open documents only.
    `near_tokens`: the room of the fast prompt's files (the imported definitions the nearest code uses);
    `exclude`: the user's patterns of files never read (settings.exclude); `similar_tokens`: the fast prompt's room
    for the lines elsewhere in the document like those above the cursor (`similar_chosen` keeps a choice while the
    cursor stays near it); `trees`: the parses kept of the documents' texts (a request and the fill plan the same
    text)."""
    prefix, suffix = doc.split(line, col)
    tree = trees.parse(doc.path, doc.text, doc.language) if trees is not None else parse(doc.text, doc.language)
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
    others = [o for o in others if o.path != doc.path and not is_secret(o.path)]
    same = [o for o in others if family(o.language) == family(doc.language)]
    files: list[tuple[str, str]] = []
    near_files: list[tuple[str, str]] = []
    shown_path = repo = None
    if root is not None or recent:
        files, near_files, shown_path, repo = project_files(doc, line, col, prefix, suffix, tree, others, same,
                                                            index, context_tokens, chosen, root, recent, near_tokens,
                                                            exclude)
    elif same and context_tokens > 0:
        def choose() -> list[tuple[str, str]]:
            defs = [d for o in same for d in index.definitions(o)]
            return pack(rank_in(defs, doc.text), same, context_tokens)
        files = chosen.get(doc.path, same, choose) if chosen is not None else choose()
    needs = needed_names(tree, len(prefix.encode("utf-8")), doc.language)
    shown = shown_path or doc.path
    room = int(similar_tokens * CHARS_PER_TOKEN)
    found = similar_chosen.get(doc.path, doc.text, line, room) if similar_chosen is not None and room > 0 \
        else similar_lines(doc.text, line, room)
    similar = [(shown, s.text) for s in found]
    lookup = partial(trees.get, doc.path, doc.text, doc.language) if trees is not None else (lambda: tree)
    return CursorContext(prefix, suffix, doc.language, mode, outline, files, imports, needs, shown_path, repo,
                         near_files, similar, (doc.text, lookup) if tree is not None else None)


# ---- the project around the document ---------------------------------------------------------------------------

MAX_COVERED_SCOPES = 512
RECENT_SCOPES = 3            # a new choice keeps serving the scopes visited last, as room allows
MODULE_SCOPE_LINES = 40      # code outside any function: a scope per this many lines
FILE_SEP_CHARS = 16          # what a file's entry costs beyond its path and text (tokens of <|file_sep|>, newlines)


@dataclass(frozen=True)
class Piece:
    path: str         # the file (as the document list names it)
    text: str
    kind: str         # def | snippet | ring
    order: int        # where in its file (line), for putting a file's pieces in file order


@dataclass
class ProjectChoice:
    """What a document's head shows, and which of its scopes it serves: the head stays while the cursor moves
    among them, and a scope whose nearby code uses imported definitions the head lacks makes a new choice."""
    files: list[tuple[str, str]]
    pieces: list[Piece]
    covered: set[str] = field(default_factory=set)
    nears: list[Near] = field(default_factory=list)   # those of the scopes served last, newest first
    budget: int = 0
    # per scope served, the fast prompt's files: the definitions its nearest code uses (stable within the scope,
    # so the fast prompts' cached state is reused there too)
    near: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    near_budget: int = 0


def scope_of(tree, doc: Document, line: int, col: int) -> tuple[str, object | None]:
    """A key for the scope around the cursor (the headers of the scopes it is in; outside every scope, a band of
    lines) and the innermost function around it (a tree node, or None)."""
    if tree is None:
        return f"@{line // MODULE_SCOPE_LINES}", None
    lines = doc.text.split("\n", line + 1)
    here = lines[line] if line < len(lines) else ""
    point = (line, byte_col(here, min(col, len(here))))
    scopes = enclosing_scopes(tree, point)
    if not scopes:
        return f"@{line // MODULE_SCOPE_LINES}", None
    source = doc.text.encode("utf-8")
    key = "\n".join(header_of(n, source).strip() for n in scopes)
    func = next((n for n in reversed(scopes) if "function" in n.type or "method" in n.type), None)
    return key, func


def near_of(prefix: str, suffix: str, func) -> Near:
    """What the code around the cursor names: the lines around it and the function it is in."""
    weights = names_near(prefix, suffix)
    window = tail_lines(prefix, 30) + suffix[:2000]
    text = window
    if func is not None:
        body = func.text.decode("utf-8", "replace")[:20000] if func.text is not None else ""
        for name in IDENT.findall(body):
            weights[name] = weights.get(name, 0.0) + 0.25
        text = body + "\n" + window
    return Near.of(weights, text, prefix[-200:])


def project_files(doc: Document, line: int, col: int, prefix: str, suffix: str, tree, others: list[Document],
                  same: list[Document], index: DefinitionIndex, context_tokens: int, chosen: DocumentFiles | None,
                  root: str | None, recent: Sequence[Chunk], near_tokens: int = 0, exclude: tuple[str, ...] = ()
                  ) -> tuple[list[tuple[str, str]], list[tuple[str, str]], str | None, str | None]:
    """The head's files with the project around the document: (files, the fast prompt's files, the document's
    path as shown, repo)."""
    project: Project | None = project_for(root, exclude) if root and os.path.isdir(root) else None
    if project is not None and not project.inside(doc.path):
        project = None
    excluder = project.excluder if project is not None else Excluder(None, exclude)
    shown = project.shown if project is not None else (lambda p: p)
    shown_path = shown(doc.path) if project is not None else None
    repo = os.path.basename(project.root) if project is not None else None
    if context_tokens <= 0:
        return [], [], shown_path, repo
    same = [o for o in same if not excluder.excluded(o.path)]
    open_texts = {os.path.abspath(o.path): o.text for o in others}
    scope, func = scope_of(tree, doc, line, col)

    def text_now(path: str) -> str | None:
        if path in open_texts:
            return open_texts[path]
        return project.source(path) if project is not None and os.path.isabs(path) else None

    choice = chosen.scoped(doc.path) if chosen is not None else None
    if choice is not None and not (choice.budget == context_tokens and choice.near_budget == near_tokens
                                   and _valid(choice, text_now, same)):
        choice = None
    if choice is not None and scope in choice.covered:
        # the same scope: the same heads, nothing looked up
        return choice.files, choice.near.get(scope, []), shown_path, repo
    near = near_of(prefix, suffix, func)
    cands = []
    if project is not None:
        cands = candidates(project, project.imports(os.path.abspath(doc.path), doc.text, doc.language, tree),
                           open_texts)
    fast = _entries(_near_pieces(cands, near, near_tokens * CHARS_PER_TOKEN, shown), shown) if near_tokens > 0 else []
    if choice is not None:
        # another scope: the head stays if it already shows what the code here uses
        wanted = _near_pieces(cands, near, context_tokens * CHARS_PER_TOKEN, shown)
        have = {(p.path, p.text) for p in choice.pieces}
        if all((p.path, p.text) in have for p in wanted):
            if len(choice.covered) < MAX_COVERED_SCOPES:
                choice.covered.add(scope)
                choice.near[scope] = fast
            choice.nears = ([near] + choice.nears)[:RECENT_SCOPES]
            return choice.files, fast, shown_path, repo
    nears = [near] + (choice.nears[:RECENT_SCOPES - 1] if choice is not None else [])
    new = _choose(doc, cands, nears, same, index, recent, excluder, context_tokens, shown)
    new.covered.add(scope)
    new.near[scope] = fast
    new.near_budget = near_tokens
    if chosen is not None:
        chosen.keep(doc.path, new)
    return new.files, fast, shown_path, repo


def _def_piece(c) -> Piece:
    d = c.definition
    return Piece(d.path, d.text, "def", d.line)


def _cost(piece: Piece, shown: Callable[[str], str]) -> int:
    return len(piece.text) + len(shown(piece.path)) + FILE_SEP_CHARS


def _near_pieces(cands, near: Near, room: float, shown) -> list[Piece]:
    """The definitions the code near the cursor uses, as many as fit the room, best first."""
    out = []
    for _, _, c in ranked(cands, near):
        piece = _def_piece(c)
        if _cost(piece, shown) <= room:
            out.append(piece)
            room -= _cost(piece, shown)
    return out


def _choose(doc: Document, cands, nears: list[Near], same: list[Document], index: DefinitionIndex,
            recent: Sequence[Chunk], excluder: Excluder, context_tokens: int, shown) -> ProjectChoice:
    """Pieces by priority while they fit: the imported definitions used near the cursor (then near the scopes
    visited last), the other open documents' definitions this one uses, the recently edited and viewed code of
    other files, and the imported definitions the rest of the document uses."""
    room = context_tokens * CHARS_PER_TOKEN
    order: list[Piece] = []
    for near in nears:
        order += [_def_piece(c) for _, _, c in ranked(cands, near)]
    imported = {c.definition.path for c in cands}
    defs = [d for o in same if os.path.abspath(o.path) not in imported for d in index.definitions(o)]
    for s in rank_in(defs, doc.text):
        order.append(Piece(s.path, s.text, "snippet", doc_order(s.text, same, s.path)))
    fam = family(doc.language)
    for chunk in recent:
        if chunk.path != doc.path and family(language_for_path(chunk.path)) == fam \
                and not excluder.excluded(chunk.path):
            order.append(Piece(chunk.path, chunk.text, "ring", chunk.start))
    order += [_def_piece(c) for c in ranked_in_file(cands, doc.text)]
    picked: list[Piece] = []
    seen: set[tuple[str, str]] = set()
    for piece in order:
        if (piece.path, piece.text) in seen:
            continue
        if piece.kind == "ring" and any(p.path == piece.path and p.text in piece.text for p in picked):
            continue   # a definition already shown: the chunk would show it twice
        cost = _cost(piece, shown)
        if cost > room:
            continue
        seen.add((piece.path, piece.text))
        picked.append(piece)
        room -= cost
    return ProjectChoice(_entries(picked, shown), picked, budget=context_tokens, nears=nears)


def _entries(picked: list[Piece], shown) -> list[tuple[str, str]]:
    """One entry per file for definitions and snippets (in file order), one per ring chunk, in the order of
    each one's first piece."""
    groups: OrderedDict[tuple[str, int], list[Piece]] = OrderedDict()
    for i, p in enumerate(picked):
        key = (p.path, -1) if p.kind != "ring" else (p.path, i)
        groups.setdefault(key, []).append(p)
    return [(shown(path), "\n\n".join(p.text for p in sorted(ps, key=lambda p: p.order)))
            for (path, _), ps in groups.items()]


def _valid(choice: ProjectChoice, text_now: Callable[[str], str | None], same: list[Document]) -> bool:
    """A choice stands while each of its definitions' and snippets' first lines is still in its file (a ring
    chunk of a file that is open, too)."""
    for p in choice.pieces:
        if p.kind == "snippet":
            if not _still_there(p.path, p.text, same):
                return False
            continue
        src = text_now(os.path.abspath(p.path)) if os.path.isabs(p.path) else None
        if src is None:
            if p.kind == "ring":
                continue
            return False
        first = next((l for l in p.text.split("\n") if l.strip()), "")
        if first not in src:
            return False
    return True


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
