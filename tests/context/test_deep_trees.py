"""Code whose syntax tree is deeper than Python's recursion limit, through every stage of the pipeline (context with
and without the project around the file, the fast prompt, a scripted generation, post-processing): an unclosed
bracket above thousands of definitions (tree-sitter nests each in the one before; brotli's tables went 117,000
deep under `x = (`), and valid code nested thousands deep. No model file (make check)."""
from __future__ import annotations

import sys

import pytest

from lsp_server.context import Document
from lsp_server.context.syntax import parse
from lsp_server.pipeline import CompletionRequest, Pipeline
from lsp_server.service.settings import Settings
from conftest import tree_depth
from scripted import ScriptedEngine

SHAPES = {
    "python, broken": ("python", "py", "x = (\n" + "".join(
        f"def helper_{i}(a, b):\n    return a * {i} + b\n\n" for i in range(1500))),
    "rust, broken": ("rust", "rs", "let x = (\n" + "".join(
        f"fn f{i}(a: i32) -> i32 {{ a + {i} }}\n" for i in range(1500))),
    "javascript, arrays": ("javascript", "js", "const data = " + "[" * 5000 + "1" + "]" * 5000 +
                           ";\nfunction f(a) {\n  return a;\n}\n"),
    "go, calls": ("go", "go", "package main\n\nvar x = " + "f(" * 3000 + "1" + ")" * 3000 +
                  "\n\nfunc g(a int) int {\n\treturn a\n}\n"),
}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_every_stage_answers_in_a_tree_deeper_than_the_recursion_limit(shape, tmp_path):
    language, ext, text = SHAPES[shape]
    assert tree_depth(parse(text, language)) > sys.getrecursionlimit()
    path = tmp_path / f"deep.{ext}"
    path.write_text(text)
    lines = text.split("\n")
    # a block with an unclosed bracket in it: post-processing parses the file with it, and cuts it
    s = Settings()
    pipeline = Pipeline(ScriptedEngine(lambda prefix: "a = 1\n    b = (\n    c = 2\n", token_s=1e-6, step_s=0),
                        s.prompt_budget(), s.fast_prefix_tokens)
    for line in (1, len(lines) // 2):
        for root in (None, str(tmp_path)):
            plan = pipeline.plan(CompletionRequest(Document(str(path), text, language), line, 0, root=root))
            for p in (plan, pipeline.plan_fast(plan, 192)):
                answer = pipeline.finish(p, pipeline.generate(p)).text
                assert "b = (" not in answer, (shape, line, answer)
