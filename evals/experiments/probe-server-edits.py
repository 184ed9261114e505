"""Random realistic edits in real files through the real server (the default settings): cursor moves, screens,
edits (unclosed brackets, quotes, pasted pieces, deletions), inline requests at the edit and elsewhere; every
request must get a result or a clear JSON-RPC error, never an internal error, and the server stays up; at the end the
server's copy of each document must equal the probe's. 8 source files of 2-200 kB drawn from `tandem-eval real`'s
corpus, and brotli's `dictionary_hash.c` (where an unclosed bracket makes a tree 47,000 deep).

    .venv/bin/python scripts/probe-server-edits.py SEED SECONDS"""
import sys, random, time, collections, pathlib
ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT)); sys.path.insert(0, str(ROOT / "tests"))
from rawlsp import RawServer
from lsp_server.context.document import language_for_path
rng = random.Random(int(sys.argv[1])); t_end = time.time() + float(sys.argv[2])
from evals.real.corpus import PROJECTS, ensure
roots = [ensure(spec, log=lambda m: None).root for spec in PROJECTS]
files = [str(f) for r in roots for f in r.rglob("*")
         if f.is_file() and language_for_path(str(f)) != "text" and "dist" not in f.parts]
files = [f for f in files if 2000 < len(open(f, errors="replace").read()) < 200_000]
files = rng.sample(files, 8) + [f for f in files if f.endswith("/enc/dictionary_hash.c")][:1]
EDITS = ["(", "[", "{", "}", ")", "\"", "'", "/*", "\"\"\"", "`", "if (", "x = (", "\t", "\\", "é", "😀", "\n", "\n\n"]
s = RawServer(); s.initialize({}, root=None); print("ready", s.wait_ready()["ready"], flush=True)
docs = {}
for f in files:
    uri = "file://" + f
    text = open(f, errors="replace").read().replace("\r\n", "\n")
    docs[uri] = [text, 1, language_for_path(f)]
    s.open(uri, text, docs[uri][2])
codes = collections.Counter(); n = 0; slow = []
def pos(text, off):
    line = text.count("\n", 0, off); col = off - (text.rfind("\n", 0, off) + 1)
    return {"line": line, "character": len(text[off - col:off].encode("utf-16-le")) // 2}
while time.time() < t_end:
    uri = rng.choice(list(docs)); text, ver, lang = docs[uri]
    off = rng.randint(0, len(text))
    act = rng.random()
    if act < 0.2:
        s.notify("tandem/didMoveCursor", {"uri": uri, "position": pos(text, off)})
    elif act < 0.3:
        l = pos(text, off)["line"]
        s.notify("tandem/visibleRanges", {"uri": uri, "ranges": [{"start": {"line": l, "character": 0}, "end": {"line": l + 40, "character": 0}}]})
    else:
        e = rng.choice(EDITS) if rng.random() < 0.7 else text[rng.randint(0, len(text)):][:rng.randint(0, 200)]
        cut = rng.randint(0, 30) if rng.random() < 0.3 else 0
        start, end = pos(text, off), pos(text, min(len(text), off + cut))
        text = text[:off] + e + text[off + cut:]
        ver += 1; docs[uri] = [text, ver, lang]
        s.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": ver},
                                            "contentChanges": [{"range": {"start": start, "end": end}, "text": e}]})
        off = off + len(e)
    if rng.random() < 0.6:
        t = time.time()
        r = s.wait(s.inline(uri, **pos(text, off)), timeout=120)
        dt = time.time() - t
        code = r["error"]["code"] if "error" in r else "result"
        codes[code] += 1; n += 1
        if code not in ("result", -32800):
            print("ERROR", uri.split("/")[-1], r["error"], flush=True)
        if dt > 8: slow.append((round(dt, 1), uri.split("/")[-1]))
    time.sleep(rng.choice([0.05, 0.2, 1.0]))
# the documents as the server holds them must match ours
bad = 0
for uri, (text, ver, lang) in docs.items():
    r = s.request("tandem/document", {"uri": uri, "text": True}, timeout=60)
    held = (r.get("result") or {}).get("text")
    if held is not None and held != text: bad += 1
print(n, "requests", dict(codes), "slow", slow[:10], "docs differing", bad, "alive", s.alive(), flush=True)
s.close()
