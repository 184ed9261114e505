"""llama.cpp's own speculative decoding (`llama-speculative-simple`) on the same prompts and models."""
from __future__ import annotations

import re
import subprocess

_SPEED = re.compile(r"decoded\s+(\d+)\s+tokens in\s+([\d.]+)\s*s")
_ACCEPT = re.compile(r"accept\s*=\s*([\d.]+)\s*%")


def prompt_text(engine, tokens: list[int]) -> str:
    """The prompt as text with its special tokens spelled out (the tool parses them back)."""
    fim = engine.fim
    special = {t for t in (vars(fim).values() if fim else ()) if t is not None}
    return "".join(engine.target.token_text(t) if t in special else engine.target.detokenize([t])
                   for t in tokens)


def run(binary: str, engine, tokens: list[int], n_predict: int, draft_max: int = 3) -> dict:
    threads = str(engine.cfg.threads())
    cmd = [binary, "-m", engine.target.path, "-md", engine.draft.path, "-p", prompt_text(engine, tokens),
           "-n", str(n_predict), "--temp", "0", "-t", threads, "-td", threads, "-c", str(engine.cfg.n_ctx),
           "--spec-type", "draft-simple", "--spec-draft-n-max", str(draft_max)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    text = out.stdout + out.stderr
    m = _SPEED.search(text)
    if out.returncode or not m:
        raise RuntimeError(f"{binary} failed ({out.returncode}): {text[-800:]}")
    a = _ACCEPT.search(text)
    return {"tokens": int(m.group(1)), "seconds": float(m.group(2)),
            "acceptance": float(a.group(1)) / 100 if a else None}
