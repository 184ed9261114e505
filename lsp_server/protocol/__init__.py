"""The only stage that knows LSP: handlers that turn editor messages into pipeline requests and back."""
from .server import TandemServer, build_server

__all__ = ["TandemServer", "build_server"]
