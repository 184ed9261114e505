"""A bare JSON-RPC client for `tandem serve` over stdio: it sends any bytes it is given (malformed ones too),
and a reader thread sorts what comes back into responses by id and notifications."""
from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from pathlib import Path

from conftest import tandem_cmd


def frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def key(msg_id):
    """Responses are filed by id; ids of any JSON type (a fuzzer sends objects too) become a hashable key."""
    return json.dumps(msg_id, sort_keys=True)


class RawServer:
    def __init__(self, cwd: Path | None = None, env: dict | None = None):
        self.proc = subprocess.Popen(tandem_cmd() + ["serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, cwd=cwd, env=env)
        self.responses: dict = {}
        self.cond = threading.Condition()
        self.notifications: queue.Queue = queue.Queue()
        self.stderr: list[str] = []
        self._next = 0
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    # ---- wire ----------------------------------------------------------------------------------------------

    def _read(self) -> None:
        out = self.proc.stdout
        while True:
            headers = {}
            while True:
                line = out.readline()
                if not line:
                    with self.cond:
                        self.cond.notify_all()
                    return
                line = line.strip()
                if not line:
                    break
                k, _, v = line.decode("ascii").partition(":")
                headers[k.strip().lower()] = v.strip()
            msg = json.loads(out.read(int(headers["content-length"])))
            if "id" in msg and "method" not in msg:
                with self.cond:
                    self.responses[key(msg["id"])] = msg
                    self.cond.notify_all()
            elif "id" in msg:   # a request from the server (configuration, progress create): answer it
                self.send({"jsonrpc": "2.0", "id": msg["id"], "result": None})
            else:
                self.notifications.put(msg)

    def _read_stderr(self) -> None:
        for line in self.proc.stderr:
            self.stderr.append(line.decode("utf-8", "replace"))

    def send_bytes(self, body: bytes) -> None:
        self.proc.stdin.write(frame(body))
        self.proc.stdin.flush()

    def send(self, msg: dict) -> None:
        self.send_bytes(json.dumps(msg).encode())

    # ---- requests ------------------------------------------------------------------------------------------

    def new_id(self) -> int:
        self._next += 1
        return self._next

    def request_async(self, method: str, params=None, msg_id=None):
        msg_id = self.new_id() if msg_id is None else msg_id
        msg = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        return msg_id

    def wait(self, msg_id, timeout: float = 60) -> dict:
        deadline = time.monotonic() + timeout
        with self.cond:
            while key(msg_id) not in self.responses:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"the server exited ({self.proc.returncode}):\n{''.join(self.stderr[-30:])}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no answer to request {msg_id!r} in {timeout}s")
                self.cond.wait(min(left, 1.0))
            return self.responses.pop(key(msg_id))

    def request(self, method: str, params=None, timeout: float = 60) -> dict:
        return self.wait(self.request_async(method, params), timeout)

    def notify(self, method: str, params) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    # ---- session -------------------------------------------------------------------------------------------

    def initialize(self, options: dict | None = None, root: Path | None = None) -> dict:
        res = self.request("initialize", {"processId": None, "rootUri": root.as_uri() if root else None,
                                          "capabilities": {}, "initializationOptions": options or {}})
        self.notify("initialized", {})
        return res

    def wait_ready(self, timeout: float = 180) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            s = self.request("tandem/stats", {})["result"]
            if s["ready"] or s["load_error"]:
                return s
            time.sleep(0.2)
        raise TimeoutError("the server did not load its models")

    def open(self, uri: str, text: str, language: str = "python", version: int = 1) -> None:
        self.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": language,
                                                              "version": version, "text": text}})

    def inline(self, uri: str, line: int, character: int, msg_id=None):
        return self.request_async("textDocument/inlineCompletion", {
            "textDocument": {"uri": uri}, "position": {"line": line, "character": character},
            "context": {"triggerKind": 2}}, msg_id)

    def rss_kib(self) -> int:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise RuntimeError("no VmRSS")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        if self.alive():
            try:
                self.request("shutdown", None, timeout=30)
                self.notify("exit", None)
                self.proc.wait(30)
            except (OSError, TimeoutError, RuntimeError, subprocess.TimeoutExpired):
                self.proc.kill()
        self.proc.wait()
