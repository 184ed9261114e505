"""Resident memory of the target alone and of the warm pair, each measured in a fresh process
(`python -m lsp_server.bench.memory TARGET [DRAFT]` prints JSON)."""
from __future__ import annotations

import json
import subprocess
import sys


def rss_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def _warm(path: str, n_ctx: int) -> object:
    from ..engine.llama import LlamaModel
    m = LlamaModel(path, n_ctx=n_ctx)
    m.decode(m.tokenize("def main():\n    print('hello')\n" * 8))   # touch every weight
    return m


def measure(target: str, draft: str | None, n_ctx: int) -> dict:
    """Run in a child process so one measurement does not see the other's pages."""
    def child(*paths):
        out = subprocess.run([sys.executable, "-m", "lsp_server.bench.memory", str(n_ctx), *paths],
                             capture_output=True, text=True, timeout=600)
        if out.returncode:
            raise RuntimeError(out.stderr[-1000:])
        return json.loads(out.stdout.strip().splitlines()[-1])
    alone = child(target)
    pair = child(target, draft) if draft else None
    return {"target_rss_mb": alone["rss"] / 2**20, "pair_rss_mb": pair["rss"] / 2**20 if pair else None,
            "python_rss_mb": alone["base"] / 2**20}


if __name__ == "__main__":
    base = rss_bytes()
    n_ctx = int(sys.argv[1])
    models = [_warm(p, n_ctx) for p in sys.argv[2:]]
    print(json.dumps({"rss": rss_bytes(), "base": base}))
