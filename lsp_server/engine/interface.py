"""What the service, the pipeline and the CLI may ask of an engine: the local one (engine.py: the models in this
process), the shared one (shared/client.py: the models in one engine process for every window) and the remote one
(remote.py: an inference server). `make_engine` returns one of them as an `Engine`; anything else an
implementation offers (the local engine's controller and drafters, the remote one's health) is for the
benchmarks and tests that made that implementation on purpose."""
from __future__ import annotations

import threading
from typing import Protocol

from .config import EngineConfig
from .llama import ModelCounters
from .speculative import Generation, GenerationRequest
from .vocab import FimTokens


class TargetModel(Protocol):
    """The target model as the engine's users see it: which file or server, and what it has evaluated."""
    path: str
    name: str
    tokens: list[int]              # what its live cache holds, as far as this process knows
    counters: ModelCounters


class Engine(Protocol):
    cfg: EngineConfig              # as loaded (the shared and remote engines set n_ctx and draft_max as found)
    target: TargetModel
    draft: object | None           # None: no draft model resident
    draft_decision: str            # why the draft model is (not) resident, for the stats
    fim: FimTokens | None          # None: the vocabulary has no FIM tokens, prompts are the prefix only
    warnings: list[str]            # what the user was warned of while it loaded and since
    records_margins: bool          # generate keeps each output token's top-2 logit gap when the request asks
                                   # (record_margins); a remote engine cannot (its server's answer has none)

    def tokenize(self, text: str, special: bool = False) -> list[int]:
        """The target vocabulary's tokens of `text` (`special`: control tokens written as text, such as a chat
        template's, are those tokens)."""
        ...

    def cached(self, tokens: list[int]) -> int:
        """How many leading tokens of a prompt would be served without evaluating them."""
        ...

    def prompt_seconds(self, tokens: int) -> float:
        """What evaluating this many prompt tokens is expected to take, at the speed measured lately."""
        ...

    def generate(self, req: GenerationRequest, cancel: threading.Event | None = None) -> Generation:
        """Greedy output of the request's prompt (speculative where it pays: the same tokens either way);
        ContextFullError where prompt and output do not fit the context."""
        ...

    def prewarm(self, tokens: list[int], cancel: threading.Event | None = None, draft: bool = False,
                keep: int = 0) -> int:
        """Evaluate a prompt ahead of its request (in the draft model too where it may be used, or `draft`); its
        first `keep` tokens are worth a place in the KV store. Returns the target tokens evaluated."""
        ...

    def tune(self, speculation: bool, draft_min: int, draft_max: int, kv_store_mib: int, cache_reuse: int) -> None:
        """Settings that take effect without loading the models again."""
        ...

    def loaded(self) -> str:
        """What was loaded, for the progress shown while the server starts."""
        ...

    def notices(self) -> list[str]:
        """Messages for the user that came up since the last call (a model file changed on disk, a server or
        the engine process went down or came back); each is returned once."""
        ...

    def store_summary(self) -> dict:
        """The KV store's budget and contents, for the stats."""
        ...

    def summary(self) -> dict:
        """What this kind of engine adds to the stats (empty for the local one)."""
        ...

    def warn(self, msg: str) -> None:
        """Keep a warning for the user (`warnings`) and log it."""
        ...

    def close(self) -> None:
        """Release the models or the connection; the engine is not used after."""
        ...
