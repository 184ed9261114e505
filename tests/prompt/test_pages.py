"""Pages: prefix starts that stay put while the cursor moves inside a region, content-defined boundaries,
segment tokenization, fast prompts. A stand-in tokenizer (one token per character) and the real one."""
import random

from lsp_server.engine.vocab import FimTokens
from lsp_server.prompt import PromptBudget, PromptParts, build_fast_prompt, build_prompt
from lsp_server.prompt.pages import SegmentTokens, Text

from conftest import FIXTURES

REAL = FIXTURES / "real"


class CharTokenizer:
    """About four characters a token, as code has with a real vocabulary; decodable."""
    fim = FimTokens(prefix=-1, suffix=-2, middle=-3, repo_name=-4, file_sep=-5)

    def __init__(self):
        self.ids: dict[str, int] = {}
        self.texts: dict[int, str] = {}

    def tokenize(self, text):
        out = []
        for i in range(0, len(text), 4):
            piece = text[i:i + 4]
            if piece not in self.ids:
                self.ids[piece] = len(self.ids) + 1000
                self.texts[self.ids[piece]] = piece
            out.append(self.ids[piece])
        return out

    def text(self, toks):
        return "".join(self.texts.get(t, "") for t in toks)


TOK = CharTokenizer()


def source(n=400, seed=0):
    """Code-like lines: functions of a few statements, blank lines between them."""
    rng = random.Random(seed)
    out = []
    for f in range(n // 6):
        out.append(f"def handler_{f}(request, value_{rng.randint(0, 99)}):")
        for s in range(4):
            out.append(f"    step_{s} = compute_{rng.randint(0, 999)}(value, {rng.randint(0, 9)})")
        out.append("")
    return "\n".join(out) + "\n"


BUDGET = PromptBudget(prefix_tokens=1024, suffix_tokens=16, context_tokens=0)


def prompt_at(text, line, col=None, budget=BUDGET, cached=None, tok=None):
    lines = text.split("\n")
    col = len(lines[line]) if col is None else col
    off = sum(len(l) + 1 for l in lines[:line]) + col
    return build_prompt(tok or TOK, PromptParts(text[:off], text[off:], path="m.py"), budget, cached)


def emptied(text, line):
    lines = text.split("\n")
    ind = lines[line][:len(lines[line]) - len(lines[line].lstrip())]
    lines[line] = ind
    return "\n".join(lines)


def shared(a, b):
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def test_a_jump_inside_a_page_keeps_its_start_and_the_cached_tokens_serve_it():
    text = source()
    first = prompt_at(text, 200, 0, cached=lambda toks: 0)   # nothing cached yet: a page is filled for here
    assert first.kind == "page" and first.prefix_cut_lines > 0 and first.anchored and first.fill
    fill = first.fill
    lines = text.split("\n")
    served = []
    for line in range(170, 232):
        if not lines[line].strip():
            continue
        p = prompt_at(emptied(text, line), line, cached=lambda toks: shared(toks, fill))
        if shared(p.tokens, fill) >= p.stable:
            served.append(line)
            # the page's tokens up to the cursor's segment are a start of the filled page: a jump here evaluates
            # only the cursor's segment, the suffix and the FIM tokens
            assert len(p.tokens) - shared(p.tokens, fill) <= 2 * len(TOK.tokenize(lines[line])) + 16 + 8
    # the filled page has the cursor in the middle of the cursors it serves: jumps up and down stay inside
    assert min(served) < 195 and max(served) > 205 and len(served) >= 25


def test_pages_overlap_so_the_context_above_a_cursor_never_drops_below_half_the_budget():
    text = source(900)
    text_budget = BUDGET.prefix_tokens - BUDGET.prefix_tokens // 4
    for line in range(300, 600, 7):
        p = prompt_at(text, line, 0)
        body = p.prefix_tokens - p.outline_tokens
        # (the cursor's own segment is not counted against the budget)
        assert text_budget - 560 <= body <= text_budget + len(TOK.tokenize(text.split("\n")[line - 1])) + 8, \
            (line, body)


def test_boundaries_are_content_defined_an_edit_above_moves_no_page_below():
    text = source(900)
    lines = text.split("\n")
    p = prompt_at(text, 700, 0)
    start_line = lines[p.prefix_cut_lines]
    edited = "\n".join(lines[:100] + ["    inserted = line(1)", "    another = line(2)"] + lines[100:])
    q = prompt_at(edited, 702, 0)
    assert edited.split("\n")[q.prefix_cut_lines] == start_line
    assert q.prefix_cut_lines == p.prefix_cut_lines + 2


def test_a_cached_later_page_is_preferred_when_it_saves_evaluation():
    text = source(900)
    lines = text.split("\n")
    p = prompt_at(text, 650, 0, cached=lambda toks: 0)
    assert p.prefix_cut_lines == prompt_at(text, 650, 0).prefix_cut_lines   # nothing cached: the most context
    t = Text(text, SegmentTokens(TOK))
    later = [b for b in range(p.prefix_cut_lines + 1, 640) if lines[b].strip() and t.is_boundary(b)]
    assert later, "no second boundary in reach"

    def cached_if_starts_at(b):
        # that page's state is cached up to the suffix (as after a jump inside it)
        return lambda toks: toks.index(-2) if TOK.text(toks[toks.index(-1) + 1:]).startswith(lines[b]) else 0

    chosen = [prompt_at(text, 650, 0, cached=cached_if_starts_at(b)).prefix_cut_lines for b in later]
    # a later page whose state is cached is taken when it leaves at least half the budget of context
    assert any(c == b for c, b in zip(chosen, later))
    assert all(c in (b, p.prefix_cut_lines) for c, b in zip(chosen, later))


def test_typing_on_fills_the_next_page_before_the_window_moves():
    text = source(900)
    lines = text.split("\n")
    starts, nexts = [], []
    for extra in range(60):   # the user types 60 new lines at line 600
        typed = lines[:600] + [f"    typed_{i} = value + {i}" for i in range(extra)] + lines[600:]
        t = "\n".join(typed)
        p = prompt_at(t, 600 + extra, 0)
        starts.append(typed[p.prefix_cut_lines])
        if p.next_fill:
            nexts.append((extra, p.next_fill))
    moves = [i for i in range(1, len(starts)) if starts[i] != starts[i - 1]]
    assert moves, "60 lines of typing should move the window"
    for i in moves:
        # before the move, the page the window moves to was offered for filling ahead
        assert any(e < i for e, _ in nexts)


def test_a_file_that_fits_is_one_page_without_an_outline():
    text = source(40)
    asked = []
    p = build_prompt(TOK, PromptParts(text[:300], text[300:], path="m.py",
                                      outline=lambda line: asked.append(line) or "import x\n"), BUDGET)
    assert p.prefix_cut_lines == 0 and p.outline_tokens == 0 and not asked
    assert TOK.text(p.fill).endswith(text)


def test_no_boundary_in_reach_falls_back_to_a_window_that_follows_the_cursor():
    text = "x = [\n" + "    (),\n" * 2000 + "]\n"   # no line with a letter or digit: no boundary
    p = prompt_at(text, 1500, 4)
    assert not p.anchored and p.prefix_cut_lines > 0


def test_the_fast_prompt_is_a_small_page_with_the_scope_headers_that_a_short_jump_shares():
    text = source(400)
    lines = text.split("\n")

    def parts_at(line):
        off = sum(len(l) + 1 for l in lines[:line])
        return PromptParts(text[:off], text[off:], path="m.py", files=[("other.py", "def helper(): pass")],
                           outline=lambda start: "class Handlers:\n    def run(self):\n",
                           imports=lambda start: "import os\n")

    p = build_fast_prompt(TOK, parts_at(301), BUDGET, 96, cached=lambda toks: 0)
    body = TOK.text(p.tokens)
    assert p.kind == "fast" and p.prefix_tokens <= 96 + 16 and p.prefix_cut_lines > 250
    assert "class Handlers:\n    def run(self):\n" in body and lines[300] in body
    assert p.files == 0 and "helper" not in body and "import os" not in body
    fill = p.tokens[:p.stable]    # what the fast answer left in the KV cache
    # a jump a line or two up finds the same small page cached: only its own line and the suffix are new (a jump
    # down leaves it soon: a cursor stands near the end of the small page with most context)
    for line in (299, 298):
        q = build_fast_prompt(TOK, parts_at(line), BUDGET, 96, cached=lambda toks: shared(toks, fill))
        assert q.prefix_cut_lines == p.prefix_cut_lines, line
        assert shared(q.tokens, fill) >= min(q.stable, len(fill)), line


def test_segment_tokens_equal_whole_text_tokens_with_the_real_tokenizer(engine):
    seg = SegmentTokens(engine)
    for path in sorted(REAL.glob("*.*")):
        if path.suffix not in (".py", ".ts", ".go"):
            continue
        text = path.read_text()
        t = Text(text, seg)
        assert t.tokens(0, len(t.lines)) == engine.tokenize(text), path.name
        # a prefix cut inside a segment: the segments before it, then the rest tokenized as a whole
        cut = len(text) // 2
        line = text.count("\n", 0, cut)
        cs = t.segment_start(line)
        assert t.tokens(0, cs) + engine.tokenize(text[t.offset(cs):cut]) == engine.tokenize(text[:cut])
    assert 0 < len(seg) <= seg.limit


def test_the_pages_next_to_the_cursors_serve_a_short_jump_up_or_down():
    from lsp_server.prompt import near_fills
    text = source(900)
    lines = text.split("\n")
    off = sum(len(l) + 1 for l in lines[:500])
    fills = near_fills(TOK, PromptParts(text[:off], text[off:], path="m.py"), BUDGET)
    assert len(fills) == 2
    own = prompt_at(text, 500, 0, cached=lambda toks: 0).fill

    def served_by(fill, line):
        p = prompt_at(emptied(text, line), line, cached=lambda toks: shared(toks, fill))
        return shared(p.tokens, fill) >= p.stable

    below = [l for l in range(500, 600) if lines[l].strip() and served_by(fills[0], l)]
    above = [l for l in range(400, 500) if lines[l].strip() and served_by(fills[1], l)]
    mine = [l for l in range(400, 600) if lines[l].strip() and served_by(own, l)]
    # each neighbour reaches past the cursor's own page on its side
    assert below and above and max(below) > max(mine) and min(above) < min(mine)
