"""Random realistic edits at random places of the real corpus's files, through the pipeline's stages (plan, fast
prompt, generation by a scripted engine that writes a piece of the same file, post-processing), with and without
the project around the file: any exception is a bug. Prints each new kind of exception with where it came from.

    .venv/bin/python scripts/sweep-pipeline-edits.py SEED SECONDS"""
import sys, random, traceback, time, collections, pathlib
ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT)); sys.path.insert(0, str(ROOT / "tests"))
from scripted import ScriptedEngine
from evals.real.corpus import PROJECTS, ensure
from evals.real.holes import read_source
from lsp_server.context import Document
from lsp_server.context.document import language_for_path
from lsp_server.pipeline import CompletionRequest, Pipeline
from lsp_server.service.settings import Settings
rng = random.Random(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
EDITS = ["(", "[", "{", "}", ")", "\"", "'", "/*", "\"\"\"", "`", "if (", "def f(", "fn f(", "x = ", "\t", "\\", "#", "//", "<", "=>", "\r\n", "é", "😀"]
answer = {"text": ""}
s = Settings()
pl = Pipeline(ScriptedEngine(lambda prefix: answer["text"], token_s=1e-6, step_s=0.0), s.prompt_budget(),
              s.fast_prefix_tokens)
bugs = collections.Counter(); examples = {}
t_end = time.time() + float(sys.argv[2] if len(sys.argv) > 2 else 300)
files = []
for spec in PROJECTS:
    p = ensure(spec, log=lambda m: None)
    for f in p.root.rglob("*"):
        if f.is_file() and language_for_path(str(f)) != "text" and f.stat().st_size < 400_000 and "dist" not in f.parts:
            files.append((p, f))
print(len(files), "files", flush=True)
n = 0
while time.time() < t_end:
    p, f = rng.choice(files)
    try:
        text = read_source(f)
    except Exception:
        continue
    lang = language_for_path(str(f))
    for _ in range(rng.randint(0, 3)):   # edits
        at = rng.randint(0, len(text))
        e = rng.choice(EDITS) if rng.random() < 0.7 else text[rng.randint(0, len(text)):][:rng.randint(0, 300)]
        text = text[:at] + e + text[at + (rng.randint(0, 40) if rng.random() < 0.3 else 0):]
    lines = text.split("\n")
    line = rng.randrange(len(lines)); col = rng.randint(0, len(lines[line].rstrip("\r")))
    start = rng.randint(0, max(0, len(text) - 1))
    answer["text"] = text[start:start + rng.choice([5, 30, 120, 400])]
    root = str(p.root) if rng.random() < 0.5 else None
    try:
        plan = pl.plan(CompletionRequest(Document(str(f), text, lang), line, col, root=root))
        for x in (plan, pl.plan_fast(plan, 192)):
            pl.finish(x, pl.generate(x))
    except Exception as ex:
        tb = traceback.extract_tb(ex.__traceback__)
        key = (type(ex).__name__, tb[-1].filename.split("/")[-1], tb[-1].lineno)
        bugs[key] += 1
        if key not in examples:
            examples[key] = (str(f), line, col, str(ex)[:200], [f"{x.filename.split('/')[-1]}:{x.lineno}" for x in tb[-6:]])
            print("BUG", key, examples[key], flush=True)
    n += 1
print(n, "cases;", dict(bugs))
