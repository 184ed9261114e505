"""The only stage that knows LSP: handlers that turn editor messages into pipeline requests and back."""
from .app import build_server
from .server import TandemServer

__all__ = ["TandemServer", "build_server"]
