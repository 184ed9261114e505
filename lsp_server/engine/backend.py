"""Where a remote engine is and how to reach it: the settings and the CLI read this without loading the HTTP
client, which only a configured backend needs."""
from __future__ import annotations

import os
from dataclasses import dataclass

KINDS = ("llama-server", "openai")


class BackendError(RuntimeError):
    """The server could not be used: the message says what to do."""


@dataclass(frozen=True)
class BackendConfig:
    url: str
    kind: str = "llama-server"
    model: str = ""             # openai: the model name (default: the server's first in /v1/models)
    api_key_env: str = ""       # the environment variable that holds the API key (the key is never shown)
    timeout_s: float = 10.0     # connecting (an answer may be silent for up to SILENCE_S)
    verify_tls: bool = True
    max_in_flight: int = 2
    vocab: str = ""             # a GGUF whose vocabulary is the server model's ("": the default target's)

    def check(self) -> None:
        if not self.url.startswith(("http://", "https://")):
            raise BackendError(f"backend {self.url!r}: expected an http:// or https:// URL")
        if self.kind not in KINDS:
            raise BackendError(f"backend kind {self.kind!r}: choose from {', '.join(KINDS)}")
        if self.timeout_s <= 0 or self.max_in_flight < 1:
            raise BackendError("backend timeout must be positive and max in flight at least 1")

    def api_key(self) -> str | None:
        if not self.api_key_env:
            return None
        key = os.environ.get(self.api_key_env)
        if not key:
            raise BackendError(f"the environment variable {self.api_key_env} (backendApiKeyEnv) is not set")
        return key
