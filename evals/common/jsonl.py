"""Rows of an evaluation's JSONL data file, gzip or not (told by its first bytes, not its name), with one clear
error per kind of bad file."""
from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Iterator


def rows(path: str | Path) -> Iterator[tuple[int, object]]:
    """(line number, parsed JSON) for each non-blank line; ValueError naming the file (and line) otherwise."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise ValueError(f"{path}: cannot read ({e.strerror})") from e
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as e:
            raise ValueError(f"{path}: broken gzip data ({e})") from e
    for n, line in enumerate(raw.decode("utf-8", "replace").splitlines(), 1):
        if not line.strip():
            continue
        try:
            yield n, json.loads(line)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}:{n}: not JSON ({e.msg})") from e
