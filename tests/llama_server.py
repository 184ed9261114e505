"""A real llama-server (built from the llama.cpp llama-cpp-python vendors) on a free localhost port."""
from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

import httpx

from conftest import ROOT
from lsp_server.engine import registry


def binary() -> str:
    out = subprocess.run(["bash", str(ROOT / "scripts" / "build-llama-server.sh")], capture_output=True, text=True,
                         timeout=3600)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.strip().splitlines()[-1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LlamaServer:
    def __init__(self, draft: bool = False, api_key: str | None = None, slots: int = 2, port: int | None = None):
        self.draft, self.api_key, self.slots = draft, api_key, slots
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None
        self.log = Path(os.environ.get("TMPDIR", "/tmp")) / f"llama-server-{self.port}.log"

    def start(self, timeout: float = 180) -> "LlamaServer":
        cmd = [binary(), "-m", str(registry.default_path(registry.DEFAULT_TARGET)), "--host", "127.0.0.1",
               "--port", str(self.port), "-c", str(4096 * self.slots), "-np", str(self.slots), "-t", "2",
               "--no-webui"]
        if self.draft:
            cmd += ["-md", str(registry.default_path(registry.DEFAULT_DRAFT)), "--spec-type", "draft-simple",
                    "-td", "2"]
        if self.api_key:
            cmd += ["--api-key", self.api_key]
        self.proc = subprocess.Popen(cmd, stdout=open(self.log, "w"), stderr=subprocess.STDOUT)
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            assert self.proc.poll() is None, f"llama-server exited: {self.log.read_text()[-2000:]}"
            try:
                if httpx.get(self.url + "/health", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise TimeoutError(f"llama-server did not come up: {self.log.read_text()[-2000:]}")

    def slots_busy(self) -> list[bool]:
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        r = httpx.get(self.url + "/slots", headers=headers, timeout=5)
        r.raise_for_status()
        return [bool(s.get("is_processing")) for s in r.json()]

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)
        self.proc = None
