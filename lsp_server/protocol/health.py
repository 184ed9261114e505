"""tandem/health (a request, no params): the report `tandem doctor` prints (service/health.py), with this server's
own settings' layers, the editor's included, and whether its models are ready. {"text": the report as text, and
the report's fields: "settings" [{key, value, origin}], "problems", "models", ...}. Clients show the text."""
from __future__ import annotations

import asyncio

from .. import __version__
from ..service.health import render, report
from .server import TandemServer


def register(server: TandemServer) -> None:
    @server.feature("tandem/health")
    async def health(ls: TandemServer, params=None):
        # a second of checks (the CPU's speed, the editors' --version) off the event loop: requests go on
        r = await asyncio.to_thread(report, ls.layers, __version__)
        r["server"] = {"ready": ls.service.ready, "load_error": ls.service.load_error,
                       "workspace_root": ls.workspace_root}
        state = ("models ready" if ls.service.ready else f"its models could not be loaded: {ls.service.load_error}"
                 if ls.service.load_error else "loading its models")
        text = f"{render(r)}\n\nThis editor's server (workspace {ls.workspace_root or 'none'}): {state}"
        return {"text": text, **r}
