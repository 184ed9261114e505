"""The bench's engine where generation happens on llama-server: plain decoding on a server without a draft
model, the server's own speculation on one with it (`-md DRAFT`). llama-server cannot switch its speculation
per request, so the two columns need two servers; the same prompts, alternating, as with the local engine."""
from __future__ import annotations

import threading

from lsp_server.engine.remote import RemoteEngine
from lsp_server.engine.speculative import Generation, GenerationRequest
from lsp_server.bench.side_by_side import PLAIN, TANDEM, Requests


class PlainAndServerSpeculation:
    def __init__(self, plain: RemoteEngine, spec: RemoteEngine):
        self.plain, self.spec = plain, spec
        self.target, self.cfg, self.fim = spec.target, spec.cfg, spec.fim
        self.draft = None
        self.costs = None            # measured by our controller only in-process
        self.warnings = plain.warnings + spec.warnings

    def tokenize(self, text: str) -> list[int]:
        return self.spec.tokenize(text)

    def cached(self, tokens: list[int]) -> int:
        return self.spec.cached(tokens)

    def prompt_seconds(self, tokens: int) -> float:
        return self.spec.prompt_seconds(tokens)

    def generate(self, req: GenerationRequest, cancel: threading.Event | None = None) -> Generation:
        return (self.spec if req.speculative else self.plain).generate(req, cancel)

    # for the bench: the servers' generations are timed whole, one after the other (two servers on one host
    # would share its cores if they ran at once), and the fastest pass of each path counts
    names = [PLAIN, TANDEM]
    side_by_side = False

    def run_pass(self, requests: Requests, n: int) -> dict[str, Generation]:
        order = (False, True) if n % 2 else (True, False)
        gens = {spec: self.generate(requests(spec, 0)) for spec in order}
        return {PLAIN: gens[False], TANDEM: gens[True]}

    def prewarm(self, tokens: list[int], cancel=None, draft: bool = False, keep: int = 0) -> int:
        self.plain.prewarm(tokens, cancel)
        return self.spec.prewarm(tokens, cancel)

    def close(self) -> None:
        self.plain.close()
        self.spec.close()
