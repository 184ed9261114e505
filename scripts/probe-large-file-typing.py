"""Typing through a suggestion in a small file and in a 4 MB one, through the real server over stdio: each
keystroke's request is answered from the typing cache, so what it costs is the server's own work on the document
(docs/quality.md, "A keystroke in a large file").

    .venv/bin/python scripts/probe-large-file-typing.py
"""
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from rawlsp import RawServer  # noqa: E402

s = RawServer(); s.initialize({}, root=None); print("ready", s.wait_ready()["ready"], flush=True)
def ask(uri, line, ch, label):
    t = time.monotonic()
    r = s.request("textDocument/inlineCompletion", {"textDocument": {"uri": uri}, "position": {"line": line, "character": ch},
                                                     "context": {"triggerKind": 2}}, timeout=300)
    res = r.get("result"); items = res.get("items") if isinstance(res, dict) else res
    dt = time.monotonic()-t
    print(f"{label}: {dt:.2f}s text={(items[0]['insertText'] if items else None)!r:.50}", flush=True)
    return items[0]['insertText'] if items else ""
for name, n in (("small", 50), ("big", 80000)):
    text = "".join(f"def helper_{i}(a, b):\n    return a * {i} + b\n\n" for i in range(n))
    mid = (n // 2) * 3
    lines = text.split("\n"); lines.insert(mid, "def target(a, b):\n    ")
    text = "\n".join(lines)
    uri = f"file:///p/{name}.py"; s.open(uri, text)
    print(name, len(text), "bytes", flush=True)
    got = ask(uri, mid + 1, 4, f"{name} first")
    ask(uri, mid + 1, 4, f"{name} again (cache)")
    # type the suggestion's characters one by one: each request is answered from the typing cache
    v = 2; col = 4; times = []
    for ch in (got or "return a")[:8]:
        s.send({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {"textDocument": {"uri": uri, "version": v},
            "contentChanges": [{"range": {"start": {"line": mid + 1, "character": col}, "end": {"line": mid + 1, "character": col}}, "text": ch}]}})
        v += 1; col += 1
        t = time.monotonic()
        s.request("textDocument/inlineCompletion", {"textDocument": {"uri": uri}, "position": {"line": mid + 1, "character": col}, "context": {"triggerKind": 2}}, timeout=300)
        times.append(time.monotonic() - t)
    print(name, "typing through, ms:", [round(x * 1000) for x in times], flush=True)
s.close()
