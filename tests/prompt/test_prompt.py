"""Prompt layout and budgets with a stand-in tokenizer (one token per character) and the real one."""
from chartokens import CharTokenizer, head_of
from lsp_server.prompt import PromptBudget, PromptParts, build_prompt
from lsp_server.prompt.fim import stop_strings


def test_psm_layout_with_repository_header():
    p = build_prompt(CharTokenizer(), PromptParts("ab", "cd", path="x.py"))
    t = p.tokens
    assert t[0] == -4 and -5 in t
    i, j = t.index(-1), t.index(-2)
    assert t[i + 1:j] == [ord("a"), ord("b")] and t[j + 1:-1] == [ord("c"), ord("d")] and t[-1] == -3


def test_a_prompts_digest_names_its_tokens():
    a, b = (build_prompt(CharTokenizer(), PromptParts("ab", s, path="x.py")) for s in ("cd", "cd"))
    c = build_prompt(CharTokenizer(), PromptParts("ab", "ce", path="x.py"))
    assert a.digest() == b.digest() != c.digest() and len(a.digest()) == 16


def test_prefix_budget_keeps_the_end_and_its_start_stays_while_the_user_types():
    lines = [f"line {i:03d} = value_{i * 7 % 13}\n" for i in range(200)]
    budget = PromptBudget(prefix_tokens=20 * 50, suffix_tokens=10)
    starts = []
    for extra in range(20):   # the user types 20 more lines
        p = build_prompt(CharTokenizer(), PromptParts("".join(lines[:150 + extra]), ""), budget)
        assert p.prefix_tokens <= 20 * 50
        starts.append(p.prefix_cut_lines)
    # the start is a page boundary: it moves only when the prefix would outgrow its budget (at each boundary it
    # passes, when nothing is cached; a cached page stays in use as long as it fits)
    assert len(set(starts)) <= 4 and starts == sorted(starts)


def test_suffix_budget_keeps_whole_lines():
    p = build_prompt(CharTokenizer(), PromptParts("x", "aaaa\nbbbb\ncccc\n"), PromptBudget(suffix_tokens=11))
    assert p.suffix_tokens == 10 and p.suffix_cut


def test_stop_strings():
    assert stop_strings("x = f(", ")\n") == ("\n",)                  # mid-line: one line only
    assert stop_strings("    return {\n", "\n        }\n") == ("\n        }",)
    assert stop_strings("a", "") == ()


def test_real_tokenizer_prompt(engine):
    p = build_prompt(engine, PromptParts("def add(a, b):\n    ", "\n", path="m.py"))
    special = {t for t in vars(engine.fim).values() if t is not None}
    text = "".join(engine.target.token_text(t) if t in special else engine.target.detokenize([t])
                   for t in p.tokens)
    assert text.startswith("<|repo_name|>workspace\n<|file_sep|>m.py\n<|fim_prefix|>def add")
    assert text.endswith("<|fim_suffix|>\n<|fim_middle|>")


def test_a_cut_prefix_is_preceded_by_its_outline_within_the_budget():
    lines = ["import os\n", "class Big:\n"] + [f"    x{i:03d} = {i}\n" for i in range(300)]
    asked = []

    def outline(cut):
        asked.append(cut)
        return "import os\nclass Big:\n"

    budget = PromptBudget(prefix_tokens=400, suffix_tokens=10)
    p = build_prompt(CharTokenizer(), PromptParts("".join(lines), "", path="big.py", outline=outline), budget)
    assert p.prefix_cut_lines > 2 and asked and all(c > 0 for c in asked)
    assert p.outline_tokens == len("import os\nclass Big:\n")
    body = "".join(chr(t) for t in p.tokens if t > 0)
    assert "import os\nclass Big:\n    x" in body
    assert p.prefix_tokens <= 400


def test_other_files_are_packed_and_the_ones_that_do_not_fit_are_skipped():
    files = [("a.py", "A" * 50), ("b.py", "B" * 500), ("c.py", "C" * 20)]
    p = build_prompt(CharTokenizer(), PromptParts("x", "", path="m.py", files=files),
                     PromptBudget(context_tokens=120))
    body = "".join(chr(t) for t in p.tokens if t > 0)
    assert "A" * 50 in body and "C" * 20 in body and "B" not in body and p.files == 2


def test_the_suffix_is_longest_at_rest_and_longer_where_the_block_goes_on():
    b = PromptBudget(prefix_tokens=100, suffix_tokens=16, context_tokens=0, suffix_in_block=64, suffix_at_rest=128)
    assert b.for_place(False).suffix_tokens == 16
    assert b.for_place(True).suffix_tokens == 64
    assert b.for_place(False, at_rest=True).suffix_tokens == 128
    assert b.for_place(True, at_rest=True).suffix_tokens == 128
    assert b.total == 100 + 128
    small = b.within(114)   # shrunk in proportion, the suffix at rest with the others
    assert small.suffix_at_rest == 64 and small.suffix_tokens == 8 and small.suffix_in_block == 32
    below = "\n".join(f"line{i}" for i in range(60))
    typing = build_prompt(CharTokenizer(), PromptParts("x = ", below), b.for_place(False))
    rest = build_prompt(CharTokenizer(), PromptParts("x = ", below), b.for_place(False, at_rest=True))
    assert typing.suffix_tokens <= 16 < rest.suffix_tokens <= 128


def test_the_fast_prompt_shows_the_code_below_in_its_head_and_keeps_it_while_the_user_types():
    from lsp_server.prompt import build_fast_prompt
    above = "def total(items):\n    s = 0\n"
    below = "\n    return s\n\n\ndef mean(items):\n    return total(items) / len(items)\n"
    budget = PromptBudget(suffix_tokens=4, below_tokens=60)
    p = build_fast_prompt(CharTokenizer(), PromptParts(above + "    for", below, path="m.py"), budget, 200)
    head = head_of(p.tokens)
    # whole lines after the cursor's line, up to the budget (60 characters: the second def's body is left out)
    assert head == ("<|repo_name|>workspace\n<|file_sep|>m.py\n    return s\n\n\ndef mean(items):\n"
                    "<|file_sep|>m.py\n") and p.files == 1
    # typing on the line, and opening a new line, keep the head (its cached state serves the next request)
    for typed in ("    for i", "    for i in items:\n        s += i", "    for i in items:\n        "):
        q = build_fast_prompt(CharTokenizer(), PromptParts(above + typed, below, path="m.py"), budget, 200)
        assert head_of(q.tokens) == head
    # none asked, or nothing below: the head holds the file's name only
    for parts, b in ((PromptParts(above, below, path="m.py"), PromptBudget(suffix_tokens=4)),
                     (PromptParts(above, "", path="m.py"), budget)):
        assert head_of(build_fast_prompt(CharTokenizer(), parts, b, 200).tokens) == \
            "<|repo_name|>workspace\n<|file_sep|>m.py\n"
    # the page's prompt is not changed by it
    assert head_of(build_prompt(CharTokenizer(), PromptParts(above, below, path="m.py"), budget).tokens) == \
        "<|repo_name|>workspace\n<|file_sep|>m.py\n"


def test_long_lines_are_cut_and_everything_else_is_left_as_it_is():
    from lsp_server.prompt.long_lines import LINE_CHARS, clip_long_lines
    prefix, suffix = "def f(x):\n    return x\n\n", "\n\ndef g():\n    pass\n"
    got = clip_long_lines(prefix, suffix)
    assert got[0] is prefix and got[1] is suffix
    blob = "A" * 10 + "x" * 3 * LINE_CHARS + "Z" * 10
    p, s = clip_long_lines(f"data = '{blob}'\nvalue = '{blob}", f"{blob}'\n{blob}\nend\n")
    assert p.count("\n") == 1 and s.count("\n") == 3                      # the lines stay where they were
    assert all(len(l) <= LINE_CHARS for l in p.split("\n") + s.split("\n"))
    assert p.startswith("data = 'AAAA") and p.split("\n")[0].endswith("ZZZ'")   # its start and its end
    assert p.endswith("ZZZZ") and s.startswith("AAAA")                       # the cursor's nearest characters
    assert s.endswith("ZZZ\nend\n")


def test_a_line_of_megabytes_above_the_cursor_makes_a_prompt_of_a_page():
    # a minified bundle: its line is the segment of the empty line below it, which a prompt takes whole
    bundle = "".join(f"var f{i}=function(a,b){{return a*{i}+b}};" for i in range(60_000))
    budget = PromptBudget(prefix_tokens=768, suffix_tokens=16, context_tokens=0)
    p = build_prompt(CharTokenizer(), PromptParts(bundle + "\n", "\nmodule.exports = f1;\n"), budget)
    assert len(p.tokens) <= 768 + 16 + 64, len(p.tokens)
    assert p.tokens[p.tokens.index(-1) + 1:p.tokens.index(-2)][-3:] == [ord(c) for c in "};\n"]


class CountingTokenizer(CharTokenizer):
    def __init__(self):
        self.chars = 0

    def tokenize(self, text):
        self.chars += len(text)
        return super().tokenize(text)


def test_a_long_suffix_is_cut_without_tokenizing_all_of_it():
    from lsp_server.prompt.fim import _fit_suffix
    rest = "".join(f"def fn_{i}(x):\n    return x + {i}\n\n" for i in range(40_000))   # 1.3 MB below
    tok = CountingTokenizer()
    toks, cut = _fit_suffix(tok, rest, 64)
    assert cut and toks == CharTokenizer().tokenize(rest[:62])   # the whole lines within 64 tokens
    assert tok.chars < 10_000, tok.chars
    assert _fit_suffix(tok, "\n    pass\n", 64) == (CharTokenizer().tokenize("\n    pass\n"), False)
