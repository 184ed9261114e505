"""The server put together: the handlers of each kind registered on a `TandemServer`, and `tandem serve`."""
from __future__ import annotations

import logging
import os
import sys

from . import completion, documents, health, lifecycle, next_edit, statistics
from .server import TandemServer


def build_server() -> TandemServer:
    server = TandemServer()
    for module in (lifecycle, documents, completion, statistics, health, next_edit):
        module.register(server)
    return server


def serve(tcp_port: int | None = None, host: str = "127.0.0.1") -> None:
    # TANDEM_LOG=debug shows the scheduler's decisions (fast answers, fills, what a pre-empted fill keeps)
    level = getattr(logging, os.environ.get("TANDEM_LOG", "info").upper(), logging.INFO)
    fmt = "tandem: %(relativeCreated)9.0f ms %(message)s" if level <= logging.DEBUG else "tandem: %(message)s"
    logging.basicConfig(stream=sys.stderr, level=level, format=fmt)
    # pygls logs every message at INFO, and httpx/httpcore every byte of the remote engine's traffic at DEBUG:
    # TANDEM_LOG=debug is for Tandem's own decisions
    for name in ("pygls", "httpx", "httpcore"):
        logging.getLogger(name).setLevel(logging.WARNING)
    server = build_server()
    try:
        if tcp_port is not None:
            server.start_tcp(host, tcp_port)
        else:
            server.start_io()
    finally:
        server.service.shutdown()
