"""Where a remote engine is and how to reach it: the settings and the CLI read this without loading the HTTP
client, which only a configured backend needs. Its defaults and its validation are the settings' too."""
from __future__ import annotations

import os
from dataclasses import dataclass
from enum import StrEnum


class BackendKind(StrEnum):
    """The server's API (setting `backendKind`); a str, so settings files and the wire keep the plain values."""
    LLAMA_SERVER = "llama-server"   # its /completion, with slots and n_predict 0 for prefills
    OPENAI = "openai"               # /v1/completions: vLLM, llama-server's /v1, others


class BackendError(RuntimeError):
    """The server could not be used: the message says what to do."""


@dataclass(frozen=True)
class BackendConfig:
    url: str
    kind: BackendKind = BackendKind.LLAMA_SERVER
    model: str = ""             # openai: the model name (default: the server's first in /v1/models)
    api_key_env: str = ""       # the environment variable that holds the API key (the key is never shown)
    timeout_s: float = 10.0     # connecting (an answer may be silent for up to SILENCE_S)
    verify_tls: bool = True
    max_in_flight: int = 2
    vocab: str = ""             # a GGUF whose vocabulary is the server model's ("": the default target's)

    def __post_init__(self):
        if self.kind in list(BackendKind):
            object.__setattr__(self, "kind", BackendKind(self.kind))

    def check(self) -> None:
        """BackendError unless it can be used. An empty URL passes: the settings check their backend fields
        before a URL is set (none: the models in-process)."""
        if self.url and not self.url.startswith(("http://", "https://")):
            raise BackendError(f"backend {self.url!r}: expected an http:// or https:// URL")
        if self.kind not in list(BackendKind):
            raise BackendError(f"backendKind {self.kind!r}: choose from {', '.join(BackendKind)}")
        if self.timeout_s <= 0 or self.max_in_flight < 1:
            raise BackendError("backendTimeoutMs must be positive and backendMaxInFlight at least 1")

    def api_key(self) -> str | None:
        if not self.api_key_env:
            return None
        key = os.environ.get(self.api_key_env)
        if not key:
            raise BackendError(f"the environment variable {self.api_key_env} (backendApiKeyEnv) is not set")
        return key
