"""A cost file for `tandem bench --costs FILE` from the cost tool's measurements (costs.cpp) of a target and a
draft model, with what Tandem's Python loop adds on that machine's processor for each logits row it reads.

  cost_file.py TARGET.json DRAFT.json OUT.json --name NAME [--machine TEXT] [--models TEXT]
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import time

import numpy as np

VOCAB = 152064


def host_costs(vocab: int = VOCAB, reps: int = 2000) -> tuple[float, float]:
    """Seconds the engine's Python spends per logits row: the verify loop's top-2 (two argmax passes,
    llama.top2) and the draft model's token (its argmax and softmax denominator, drafters/model.py)."""
    logits = np.random.default_rng(0).standard_normal(vocab).astype(np.float32)
    t0 = time.perf_counter()
    for _ in range(reps):
        best = int(np.argmax(logits))
        v = float(logits[best])
        logits[best] = -np.inf
        int(np.argmax(logits))
        logits[best] = v
    row = (time.perf_counter() - t0) / reps
    t0 = time.perf_counter()
    for _ in range(reps):
        tok = int(np.argmax(logits))
        z = logits - logits[tok]
        1.0 / float(np.exp(z).sum())
    draft = (time.perf_counter() - t0) / reps
    return row, draft


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("target")
    ap.add_argument("draft")
    ap.add_argument("out")
    ap.add_argument("--name", required=True)
    ap.add_argument("--machine", default=platform.node())
    ap.add_argument("--models", default="")
    a = ap.parse_args(argv)
    target, draft = (json.load(open(p)) for p in (a.target, a.draft))
    row, draft_host = host_costs()
    out = {"name": a.name, "machine": a.machine, "models": a.models, "depth": target["depth"],
           "target_batch_s": target["batch_s"], "draft_token_s": draft["batch_s"]["1"],
           "draft_batch_s": draft["batch_s"], "host_row_s": round(row, 7), "host_draft_token_s": round(draft_host, 7),
           "measured": {"target": target["model"], "draft": draft["model"], "system": target.get("system", ""),
                        "reps": target.get("reps"), "note": "T(n): median of the reps, every row's argmax read "
                        "in C++; host_*: Tandem's numpy work per logits row on this machine's processor"}}
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)
    t = target["batch_s"]
    print(f"{a.out}: T(1) {t['1'] * 1e3:.2f} ms, T(4) {t.get('4', 0) * 1e3:.2f}, T(16) {t.get('16', 0) * 1e3:.2f}, "
          f"draft token {out['draft_token_s'] * 1e3:.2f} ms; host row {row * 1e3:.3f} ms, "
          f"draft token's host work {draft_host * 1e3:.3f} ms", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
