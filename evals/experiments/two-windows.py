"""`.venv/bin/python scripts/two-windows.py`: two windows one after the other, as issue 24 measured them: each sends didChangeConfiguration after initialized;
time to the first answer of each, resident memory of all processes. engine shared, then local."""
import os, sys, time, tempfile, json
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests")); sys.path.insert(0, ROOT)
from rawlsp import RawServer
from lsp_server.engine.shared.client import stop_all
from pathlib import Path
CODE = "def total(prices):\n    s = 0\n    for p in prices:\n        \n    return s\n"
def rss(pid):
    for l in Path(f"/proc/{pid}/status").read_text().splitlines():
        if l.startswith("VmRSS:"): return int(l.split()[1]) / 1024
out = {}
for mode in ("shared", "local"):
    rt = tempfile.mkdtemp(); env = dict(os.environ, XDG_RUNTIME_DIR=rt)
    ws, firsts, after_init = [], [], []
    for i in range(2):
        t0 = time.monotonic()
        w = RawServer(env=env); w.initialize({"engine": mode})
        t1 = time.monotonic()   # the clock starts after initialized; t0 also counts the process's start
        w.notify("workspace/didChangeConfiguration", {"settings": {"tandem": {"engine": mode}}})
        st = w.wait_ready(); uri = f"file:///tmp/w{mode}{i}.py"; w.open(uri, CODE)
        a = w.wait(w.inline(uri, 3, 8), timeout=120)
        firsts.append(round(time.monotonic() - t0, 1)); after_init.append(round(time.monotonic() - t1, 1))
        ws.append(w)
    st = ws[0].request("tandem/stats", {})["result"]
    host = ((st.get("backend") or {}).get("shared_engine") or {}).get("pid")
    mem = [round(rss(w.proc.pid)) for w in ws] + ([round(rss(host))] if host else [])
    out[mode] = {"first_answer_s": firsts, "after_initialized_s": after_init, "rss_mib": mem, "total_mib": sum(mem)}
    for w in ws: w.close()
    if os.path.isdir(os.path.join(rt, "tandem")):
        stop_all(os.path.join(rt, "tandem"))
print(json.dumps(out))
