"""The context stage: completion mode, outline of a cut prefix, snippets from other open files, and how they
land in the prompt."""
from lsp_server.context import Document
from lsp_server.context.assemble import DefinitionIndex, DocumentFiles, gather
from lsp_server.context.definitions import extract
from lsp_server.context.outline import headers_above, imports_above
from lsp_server.context.ranking import names_near, rank_in
from lsp_server.context.syntax import parse
from lsp_server.context.trigger import decide

PY = '''import os
from dataclasses import dataclass


class Repo:
    def __init__(self, root):
        self.root = root

    def load(self, name):
        path = os.path.join(self.root, name)
        return path
'''


def test_mode_single_line_mid_statement():
    m = decide("x = compute(", ")\n", "python")
    assert m.complete and not m.multiline


def test_mode_no_completion_with_text_right_of_the_cursor():
    assert not decide("x = comp", "ute(a, b)\n", "python").complete
    # closers and terminators to the right are fine
    assert decide("f(a, ", ");\n", "typescript").complete


def test_mode_a_condition_with_its_block_brace_right_of_the_cursor_is_one_line():
    # SAFIM's control-flow holes: `if (|) {`, `while (|) {`; text after the brace still says no
    m = decide("int f(int a) {\n    if (", ") {\n        return 1;\n    }\n}\n", "cpp")
    assert (m.complete, m.multiline, m.why) == (True, False, "mid-statement")
    assert not decide("int f(int a) {\n    for (int i = 0; ", "; i++) {\n    }\n}\n", "cpp").complete


def test_mode_multi_line_after_a_block_opener_and_in_an_empty_block():
    assert decide("def f(a):\n    ", "\n", "python").multiline
    assert decide("func f() {\n\t", "\n}\n", "go").multiline
    # an empty block whose opener is not on the line above
    assert decide("function f() {\n  // nothing yet\n  ", "\n}\n", "typescript").multiline


def test_mode_single_line_between_statements_of_a_block():
    prefix = "def f(a):\n    x = 1\n    "
    m = decide(prefix, "\n    return x\n", "python")
    assert m.complete and not m.multiline, m


def test_mode_single_line_after_a_block_opener_whose_body_is_already_below():
    # a new first line of a loop that already has a body (HumanEval/39/L11, 140/L4: the line written alone
    # was right, with a body of its own it was not)
    m = decide("def f(xs):\n    for x in xs:\n", "\n        print(x)\n    return xs\n", "python")
    assert m.complete and not m.multiline, m
    m = decide("func f(xs []int) {\n\tfor _, x := range xs {\n\t\t", "\n\t\tprint(x)\n\t}\n}\n", "go")
    assert m.complete and not m.multiline, m
    # the body below is shallower or missing: still the block's whole body
    assert decide("def f(xs):\n    for x in xs:\n", "\n    return xs\n", "python").multiline


def test_mode_single_line_where_the_missing_line_breaks_the_parse():
    # HumanEval/1/L5: the `if` the cursor's line will hold is missing, so its `elif` below is an error node
    # that hides the function's block; the cursor is still among the body's lines, not at top level
    prefix = "def f(s):\n    depth = 0\n    for c in s:\n"
    suffix = "\n            depth += 1\n        elif c == ')':\n            depth -= 1\n    return depth\n"
    m = decide(prefix, suffix, "python")
    assert m.complete and not m.multiline, m


def test_mode_multi_line_at_top_level():
    assert decide("import os\n\n", "", "python").multiline


def test_mode_without_a_grammar_is_single_line():
    m = decide("notes\n", "", "text")
    assert m.complete and not m.multiline


def test_outline_has_imports_and_enclosing_headers():
    tree = parse(PY, "python")
    assert imports_above(tree, 9) == "import os\nfrom dataclasses import dataclass\n"
    assert headers_above(tree, PY.encode(), (10, 8), 9) == "class Repo:\n    def load(self, name):\n"
    # a page that starts at line 10 (0-based) inside load() gets the same scopes for every cursor in it
    assert headers_above(tree, PY.encode(), (10, 0), 10) == "class Repo:\n    def load(self, name):\n"


def test_outline_leaves_out_what_the_window_still_shows():
    tree = parse(PY, "python")
    out = headers_above(tree, PY.encode(), (10, 8), 4)
    assert "def load" not in out and "class Repo" not in out and "import os" in imports_above(tree, 4)


def test_definitions_of_other_files_ranked_by_the_names_the_page_uses():
    other = '''package shop

type Order struct {
\tID    string
\tTotal int
}

func NewOrder(id string) *Order {
\treturn &Order{ID: id}
}

func unrelated() {}
'''
    defs = extract("shop/order.go", other, "go")
    assert {d.name for d in defs} == {"Order", "NewOrder", "unrelated"}
    ranked = rank_in(defs, "func main() {\n\to := NewOrder(\"a\")\n\to.\n}\n")
    assert [s.text.split("\n")[0] for s in ranked][:1] == ["func NewOrder(id string) *Order {"]
    assert all("unrelated" not in s.text for s in ranked)



def test_an_open_documents_definitions_and_an_imported_files_are_taken_by_two_rules():
    # as they always were (context/definitions.py): one rule for both would change the prompts
    from lsp_server.context.definitions import definitions
    rust = "struct Foo<T> { a: T }\nimpl<T> Foo<T> {\n    fn new() -> Self { todo!() }\n}\n"
    assert [d.name for d in extract("a.rs", rust, "rust")] == ["Foo"]                 # no impl block
    assert [d.name for d in definitions("a.rs", rust, "rust")] == ["Foo", "Foo"]
    go = "package p\n\ntype A = B\n\ntype (\n\tC = D\n\tE struct{}\n)\n"
    assert [d.name for d in extract("a.go", go, "go")] == ["E"]                       # no type alias
    assert [d.name for d in definitions("a.go", go, "go")] == ["A", "C"]
    ts = "export const a = 1, b = 2;\n"
    assert [d.name for d in extract("a.ts", ts, "typescript")] == ["a"]               # the first name only
    assert [d.name for d in definitions("a.ts", ts, "typescript")] == ["a", "b"]

def test_names_near_the_cursor_weigh_more_the_closer_they_are():
    weights = names_near("far = 1\n" + "x = 0\n" * 8 + "near = $el\n", "below = 2\n")
    assert weights["near"] > weights["below"] > weights["far"] > 0
    # split at `$` (and at letters outside ASCII), unlike the ranking's IDENT: what the prompts have always shown
    assert "el" in weights and "$el" not in weights


def test_gather_packs_snippets_and_keeps_a_stable_order():
    helper = Document("/w/util.py", "def slugify(text):\n    return text.lower().replace(' ', '-')\n\n\n"
                                    "def unused():\n    pass\n")
    doc = Document("/w/main.py", "from util import slugify\n\ntitle = slugify(")
    chosen = DocumentFiles()
    ctx = gather(doc, 2, len("title = slugify("), [helper], DefinitionIndex(), context_tokens=256, chosen=chosen)
    assert ctx.files == [("/w/util.py", "def slugify(text):\n    return text.lower().replace(' ', '-')")]
    # kept for the document: a file opened later does not change its prompts (and their cached states)
    later = Document("/w/more.py", "def title():\n    return 1\n")
    ctx = gather(doc, 2, 16, [helper, later], DefinitionIndex(), context_tokens=256, chosen=chosen)
    assert ctx.files[0][0] == "/w/util.py" and len(ctx.files) == 1 and len(chosen) == 1
    # a chosen definition that is gone from its file is chosen again
    gone = Document("/w/util.py", "def unused():\n    pass\n")
    assert gather(doc, 2, 16, [gone, later], DefinitionIndex(), context_tokens=256,
                  chosen=chosen).files == [("/w/more.py", "def title():\n    return 1")]
    # another language's definitions are not offered; no room: nothing
    go = Document("/w/util.go", "func slugify(text string) string {\n\treturn text\n}\n")
    assert gather(doc, 2, 16, [go], DefinitionIndex(), context_tokens=256).files == []
    assert gather(doc, 2, 16, [helper], DefinitionIndex(), context_tokens=4).files == []


def test_definition_index_is_bounded_and_follows_edits():
    index = DefinitionIndex(limit=2)
    for i in range(3):
        index.definitions(Document(f"/w/m{i}.py", f"def f{i}():\n    pass\n"))
    assert len(index) == 2
    d = Document("/w/m2.py", "def changed():\n    pass\n")
    assert [x.name for x in index.definitions(d)] == ["changed"]


def test_code_of_the_cursors_block_below_asks_for_the_longer_suffix():
    from lsp_server.context.trigger import code_follows
    from lsp_server.prompt import PromptBudget
    # mid-body, the rest of the body below: it tells the completion which names it must define
    assert code_follows("def f(xs):\n    total = 0\n    ", "\n    for x in xs:\n        total += x\n")
    # at column 0 of an empty line inside a body (HumanEval's place)
    assert code_follows("def f(n):\n", "\n    return 18 * n\n")
    # the end of a block: the next definition below, or only closers
    assert not code_follows("class A:\n    def f(self):\n        ", "\n\n    def g(self):\n        pass\n")
    assert not code_follows("function f() {\n  ", "\n}\n")
    assert not code_follows("x = 1\n", "")
    b = PromptBudget(1024, 16, 512, suffix_in_block=64)
    assert b.for_place(True).suffix_tokens == 64 and b.for_place(False) is b
    assert PromptBudget(1024, 16, 512).for_place(True).suffix_tokens == 16
    assert b.total == 1024 + 64 + 512 and b.within(800).suffix_in_block < 64


def needs(prefix: str, suffix: str) -> set[str]:
    from lsp_server.context.names import needed_names
    return set(needed_names(parse(prefix + suffix, "python"), len(prefix.encode()), "python"))


def test_names_the_code_below_needs_and_nothing_above_binds():
    # HumanEval/70/L0: `res, switch = [], True` emptied; `switch = not switch` reads it before binding it
    body = "\n    while lst:\n        res.append(min(lst) if switch else max(lst))\n        switch = not switch\n    return res\n"
    assert needs("def strange_sort_list(lst):\n    ", body) == {"res", "switch"}
    # bound above (a parameter, an assignment, an import, a loop), builtins, attributes and keywords: not needed
    assert needs("import math\n\ndef f(xs, k=2):\n    total = 0\n    for i, x in enumerate(xs):\n        ",
                 "\n        total += math.floor(x) * k + i\n    return sorted(xs, key=len).count(total)\n") == set()
    # a comprehension's variable, a nested function's parameter, a name bound below before its use
    assert needs("def f(s):\n    ", "\n    def check(w):\n        return w\n    y = [c for c in s]\n    return y\n") == set()
    # what other functions and the module bind below counts as bound; names after the function do not count
    assert needs("def f(a):\n    ", "\n    return helper(a) + LIMIT\n\ndef helper(x):\n    return x\nLIMIT = 3\nprint(q)\n") == set()
    # the rest of the file binds a name only as that name: not inside a string, a comment or a longer name
    assert needs("def f(a):\n    ", "\n    return res\n\nx = 'res = 1'  # res = 2\nresult = 2\nres.x = 1\n") == {"res"}
    assert needs("def f(a):\n    ", "\n    return res\n\nx = 1\nres = 3\n") == set()
    # outside any function nothing is needed
    assert needs("", "\nprint(undefined_name)\n") == set()


def test_text_and_broken_parses_need_no_names():
    # attrs' _make.py typed in order (tandem-eval replay --real): a docstring whose closing quotes are not written
    # yet is a string up to the next function's docstring, whose prose then parses as code: `Add`, `Return`
    # were names to bind, so the suffix stretched to 192 tokens and was evaluated again at every keystroke
    nxt = '\n\ndef _make_ne():\n    """\n    Add equality methods to *cls* with *attrs*.\n    Return it.\n    """\n' \
          '    return __ne__\n'
    assert needs('def _add_eq(cls, attrs=None):\n    """\n    Add equal', nxt) == set()
    assert needs('def _add_eq(cls, attrs=None):\n    """', nxt) == set()
    # in a comment, at its end too
    assert needs("def f(lst):\n    # sort them", "\n    return res\n") == set()
    assert needs("def f(lst):\n    x = 1  # sor", "t\n    return res\n") == set()
    # ...but right after a closed string the hole is code again
    assert needs('def f(lst):\n    """Doc."""\n    ', "\n    return res\n") == {"res"}
    # a bracket left open stretches the function over the next one: its names are not this hole's
    assert needs("def f(lst):\n    x = g(lst,\n    ", "\n    return res\n\ndef g(a, b):\n    return other(a)\n") \
        == {"res"}   # not a, b, g, other
    # ...and so with blank lines above the file's first code, where the module's node starts after them
    assert needs("\n\n\ndef sources(root):\n    return {f: 1 for f in root\n            ",
                 "\n\n\ndef most_like(query, texts):\n    found = []\n    return found\n") == set()


def test_names_a_line_binds():
    from lsp_server.context.names import bound_names
    assert bound_names("    res, (a, *b) = [], (1, 2)\n    for i in x:\n", "python") == {"res", "a", "b", "i"}
    assert bound_names("    import os.path, sys as s2\n    from m import n1, n2 as n3\n", "python") == {"os", "s2", "n1", "n3"}
    assert bound_names("    x.attr = 1\n    d[k] = 2\n    y == 3\n", "python") == set()
    # a value that goes on past the line still binds its name
    assert bound_names("    value_map = {\n", "python") == {"value_map"}
    assert bound_names("let x = 1", "typescript") == set()
