"""The parses kept per document (context/syntax.Trees): the same text is parsed once, a large text after an edit
from the last tree, and every tree handed out is the one a fresh parse gives, broken code included."""
import random

import pytest

from lsp_server.context.syntax import INCREMENTAL_BYTES, Trees, parse


def shape(tree) -> list[tuple]:
    out, stack = [], [tree.root_node]
    while stack:
        n = stack.pop()
        out.append((n.type, n.start_byte, n.end_byte, n.is_missing, n.is_error))
        stack.extend(n.children)
    return out


def padded(text: str, language: str) -> str:
    """The text with enough small functions after it to be parsed incrementally."""
    one = "def pad_{i}(a):\n    return a + {i}\n\n" if language == "python" else \
        "int pad_{i}(int a) {{ return a + {i}; }}\n"
    pad, i = [], 0
    while len(text) + sum(map(len, pad)) < INCREMENTAL_BYTES + 1000:
        pad.append(one.format(i=i))
        i += 1
    return text + "\n" + "".join(pad)


# a statement half typed in a C++ loop nest: parsed from the last tree after one more "(", tree-sitter's error
# recovery reads it otherwise than a fresh parse does (found by random edits of SAFIM's C++ programs)
CPP = ("    vector<vector<pair<int, int>>> ;{1 g(n);\n    for (int kk=0; kk<=k; kk++) {\n"
       "        priority_queue<pair<ll, ll>> q;\n                if (-dist + e.second < d[e.first]) {\n"
       "            for (int i=0; i<n; i++) if (d[i] != 1e18) {\n                cht.add({-2*i, d[i] + (ll)i*i});\n"
       "            }\n            for (int i=0; i<n; i++) {\n"
       "                d[i] = min(d[i], cht.query(i) + (ll)i*i);\n            }\n        }\n    }\n}")


def test_the_same_text_is_parsed_once():
    trees = Trees()
    text = "def f(a):\n    return a\n"
    first = trees.parse("a.py", text, "python")
    assert trees.parse("a.py", "".join(text), "python") is first   # an equal text, another object
    assert trees.parse("a.py", text, "typescript") is not first    # the language decides too
    assert trees.parse("b.py", text, "python") is not first
    assert trees.parse("a.py", text, "text") is None


def test_a_kept_tree_is_looked_up_without_parsing():
    trees = Trees()
    text = "def f(a):\n    return a\n"
    assert trees.get("a.py", text, "python") is None
    kept = trees.parse("a.py", text, "python")
    assert trees.get("a.py", "".join(text), "python") is kept
    assert trees.get("a.py", text + "\n", "python") is None and trees.get("a.py", text, "typescript") is None
    assert trees.get("b.py", text, "python") is None
    assert trees.get("a.py", text, "python") is kept   # a look-up changes nothing kept


def test_a_tree_after_an_edit_is_a_fresh_parse_s_where_the_code_is_broken_too():
    trees = Trees()
    before = padded(CPP, "cpp")
    at = CPP.index(";{1") + 3
    after = before[:at] + "(" + before[at:]
    trees.parse("m.cpp", before, "cpp")
    assert shape(trees.parse("m.cpp", after, "cpp")) == shape(parse(after, "cpp"))


@pytest.mark.slow
def test_typing_in_a_large_file_gives_the_trees_of_fresh_parses():
    rng = random.Random(3)
    python = "class A:\n    def f(self, xs):\n        total = 0\n        \n        return total\n"
    for language, text in (("python", python), ("cpp", CPP)):
        text = padded(text, language)
        trees, pos = Trees(), text.index("total = 0") + 10 if language == "python" else text.index("q;") + 2
        trees.parse("doc", text, language)
        for _ in range(60):
            r = rng.random()
            if r < 0.7:
                s = rng.choice(["x", " ", "(", ")", ":", "{", "}", ";", "\"", "\n", "    ", "é"])
                text, pos = text[:pos] + s + text[pos:], pos + len(s)
            elif r < 0.85:
                text, pos = text[:pos - 1] + text[pos:], pos - 1
            else:
                pos = rng.randrange(len(text))
            assert shape(trees.parse("doc", text, language)) == shape(parse(text, language))
