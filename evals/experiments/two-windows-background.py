#!/usr/bin/env python3
"""Another window's request while this window's background generation (an offer's: 96 tokens) runs in the shared
engine process: its latency with the generation marked as background (`Cancel.yields`) and not (as a request,
which every generation was before that mark). Run with the project's venv: `.venv/bin/python
scripts/two-windows-background.py` (the default models; a fresh runtime folder of its own)."""
import os
import statistics
import tempfile
import threading
import time

os.environ["XDG_RUNTIME_DIR"] = tempfile.mkdtemp()
from lsp_server.engine import EngineConfig, GenerationRequest
from lsp_server.engine.cancel import Cancel
from lsp_server.engine.shared import SharedEngine

cfg = EngineConfig(stats_path="", kv_store_mib=64)
a = SharedEngine(cfg, log=lambda m: None, idle_s=5)
b = SharedEngine(cfg, log=lambda m: None, idle_s=5)
pa = a.tokenize("class Stack:\n    def __init__(self):\n        self.items = []\n\n    def push(self, x):\n        ")
pb = b.tokenize("def fibonacci(n):\n    ")
a.generate(GenerationRequest(pa, max_tokens=2)); b.generate(GenerationRequest(pb, max_tokens=2))
res = {True: [], False: []}
for rnd in range(5):
    for yields in (False, True):
        out = {}
        t = threading.Thread(target=lambda: out.update(g=a.generate(GenerationRequest(pa, max_tokens=96, speculative=False), Cancel(yields=yields))))
        t.start(); time.sleep(0.5)
        t0 = time.perf_counter()
        b.generate(GenerationRequest(pb, max_tokens=8, speculative=False))
        res[yields].append(time.perf_counter() - t0)
        t.join()
        print(f"round {rnd} yields={yields}: B's request {res[yields][-1]*1000:.0f} ms; A's generation {out['g'].stop_reason}, {len(out['g'].tokens)} tokens", flush=True)
for y in (False, True):
    print(f"yields={y}: B's request p50 {statistics.median(res[y])*1000:.0f} ms, max {max(res[y])*1000:.0f} ms")
a.close(); b.close()
