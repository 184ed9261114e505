"""A benchmark's own engine: the servers it starts get a runtime folder of the run's own, so their shared engine
(one for all of them, as for a user's editor windows) starts fresh with the run and is stopped at its end.

The engine's KV store keeps what any window evaluated. Run against the user's engine, the second run of a
side-by-side pair found the first run's pages cached on the same files and answered from them: on 2026-12-05
(`tandem-eval replay --real 12`, two settings one after the other) the second run's first line starts were answered
by the page in 0.7-1.6 s where the first run waited 2.1-2.9 s for a fast prompt. `--shared-engine` measures with
the user's running engine instead (as warm as daily use, and as the runs before it left it)."""
from __future__ import annotations

import os
import shutil
import tempfile
from contextlib import contextmanager
from typing import Iterator

from lsp_server.engine.shared.client import stop_all


@contextmanager
def own_engine(enabled: bool = True) -> Iterator[str | None]:
    """While it lasts, servers started from this process use a fresh runtime folder (XDG_RUNTIME_DIR), so they
    start an engine of their own there; on the way out that engine is stopped and the folder removed."""
    if not enabled:
        yield None
        return
    folder = tempfile.mkdtemp(prefix="tandem-bench-", dir="/tmp")   # short: a socket path has ~100 bytes
    before = os.environ.get("XDG_RUNTIME_DIR")
    os.environ["XDG_RUNTIME_DIR"] = folder
    try:
        yield folder
    finally:
        if before is None:
            os.environ.pop("XDG_RUNTIME_DIR", None)
        else:
            os.environ["XDG_RUNTIME_DIR"] = before
        stop_all(os.path.join(folder, "tandem"))
        shutil.rmtree(folder, ignore_errors=True)
