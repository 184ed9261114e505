"""`syntax_cut` with the document's kept parse against parsing the text without the completion again: the same
cut? Every real-suite hole (`tandem-eval real`'s corpus, both halves, hole seed 0), each with 5 completions made
from its answer (whole; with a broken line after it, with and without a newline; cut halfway with a broken line and
one more; a broken line before it), in the block and the one-line mode; prints how many cuts differ and the time
each way.

    .venv/bin/python scripts/check-syntax-cut-parse.py [SEED]"""
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from evals.real.corpus import PROJECTS, ensure  # noqa: E402
from evals.real.holes import cut_project, read_source  # noqa: E402
from lsp_server.context.syntax import parse  # noqa: E402
from lsp_server.postprocess import syntax_cut  # noqa: E402
from lsp_server.postprocess.around import Around  # noqa: E402

BROKEN = ["x = (", "}", "if (", "foo(a,", "]", "{", "return", "else:", "\"", "/*"]


def main(seed: int) -> None:
    rng = random.Random(seed)
    same, differ, holes, t_parse, t_kept = 0, [], 0, 0.0, 0.0
    for spec in PROJECTS:
        p = ensure(spec, log=lambda m: None)
        for h in cut_project(p, 0):
            holed, start, _ = h.cut(read_source(p.root / h.file))
            prefix, suffix = holed[:start], holed[start:]
            tree = parse(holed, h.language)
            if tree is None:
                continue
            holes += 1
            lines = h.expected.split("\n")
            completions = [h.expected, h.expected + "\n" + rng.choice(BROKEN) + "\n", h.expected + "\n" + rng.choice(BROKEN),
                           "\n".join(lines[:max(1, len(lines) // 2)]) + "\n" + rng.choice(BROKEN) + "\nx = 1\n",
                           rng.choice(BROKEN) + "\n" + h.expected]
            for multiline in (True, False):
                for c in completions:
                    t = time.perf_counter()
                    a = syntax_cut.apply(c, Around(prefix, suffix, h.language, multiline))
                    t_parse += time.perf_counter() - t
                    t = time.perf_counter()
                    b = syntax_cut.apply(c, Around(prefix, suffix, h.language, multiline,
                                                   parsed=(holed, lambda: tree)))
                    t_kept += time.perf_counter() - t
                    if a == b:
                        same += 1
                    else:
                        differ.append((h.task_id, c, a, b))
        print(f"{spec.name}: {holes} holes so far, {same} cuts the same, {len(differ)} differ", flush=True)
    print(f"{holes} holes: {same} the same, {len(differ)} differ; parsed again {t_parse:.1f} s, kept parse {t_kept:.1f} s")
    for d in differ[:20]:
        print(repr(d)[:400])


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
