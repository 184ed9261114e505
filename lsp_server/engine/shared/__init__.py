"""One engine for every editor window: a process that holds the model pair, the KV store and the calibration
(host.py), and the engine each `tandem serve` uses to reach it over a Unix socket (client.py), behind the same
interface as the in-process Engine. Messages are JSON lines (wire.py)."""
from .client import SharedEngine, socket_path

__all__ = ["SharedEngine", "socket_path"]
