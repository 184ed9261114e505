"""An engine on an inference server (llama-server, vLLM or any OpenAI-compatible endpoint), behind the same
interface as the in-process Engine: the prompt stage still builds our own FIM prompt, and this engine sends it,
streams the answer back and stops it where the request says. The server's own speculation (fixed by its
flags) replaces our controller; its drafted and accepted counts come back in the statistics."""
from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field, replace

import httpx
from httpx_sse import SSEError, aconnect_sse

from . import registry
from .backend import BackendConfig, BackendError, BackendKind
from .config import EngineConfig
from .gguf import ModelFileError
from .llama import ContextFullError, ModelCounters, VocabularyFile, shared_prefix
from .speculative import DrafterCount, Generation, GenerationRequest, StopReason, text_stop
from .vocab import fim_tokens

# httpx logs every request at INFO: the server's own log says what matters
logging.getLogger("httpx").setLevel(logging.WARNING)
# after a failure the server is left alone for BACKOFF_S, doubled at each failure in a row, at most BACKOFF_MAX_S
BACKOFF_S, BACKOFF_MAX_S = 1.0, 30.0
# how often a running request looks at its cancel flag (the stream is closed at once when it is set)
CANCEL_POLL_S = 0.02
# the longest silence within an answer: a long prompt on a slow server says nothing until it is evaluated
SILENCE_S = 60.0
# the prompt speed assumed before the server's first timings arrive (tokens/s; a GPU does far more)
INITIAL_PROMPT_TOK_S = 200.0


@dataclass
class Health:
    state: str = "unknown"          # up | down | unknown (not asked yet)
    error: str = ""
    failures: int = 0               # in a row
    retry_at: float = 0.0           # monotonic time before which a down server is not asked again
    requests: int = 0
    errors: int = 0
    first_token_ms: float | None = None   # moving average: request sent -> first text

    def waiting(self) -> bool:
        return self.state == "down" and time.monotonic() < self.retry_at

    def summary(self) -> dict:
        return {"state": self.state, "error": self.error, "failures_in_a_row": self.failures,
                "retry_in_s": round(max(0.0, self.retry_at - time.monotonic()), 1) if self.state == "down" else 0,
                "requests": self.requests, "errors": self.errors,
                "first_token_ms": round(self.first_token_ms, 1) if self.first_token_ms is not None else None}


@dataclass
class _Stream:
    """What one streamed answer brought: text, token ids where the server sends them, and its own figures."""
    text: str = ""
    tokens: list[int] = field(default_factory=list)
    reason: str | None = None
    first_s: float | None = None
    timings: dict = field(default_factory=dict)


class RemoteModel:
    """The parts of a local model the service reads (`engine.target`): name, tokens, the live prompt."""

    def __init__(self, url: str, vocab: VocabularyFile):
        self.path, self.name, self.vocab_file = url, "target", vocab
        self.tokens: list[int] = []
        self.counters = ModelCounters()

    def detokenize(self, tokens: list[int]) -> str:
        return self.vocab_file.detokenize(tokens)

    def token_text(self, token: int) -> str:
        return self.vocab_file.token_text(token)


class RemoteEngine:
    def __init__(self, backend: BackendConfig, cfg: EngineConfig | None = None,
                 log=lambda msg: print(msg, file=sys.stderr)):
        backend.check()
        self.backend, self.log = backend, log
        self.warnings: list[str] = []
        # llama-server sends top probabilities (n_probs) only for tokens it sampled, none for those its own
        # speculation accepted, and an OpenAI-compatible server may send none: no margins come back
        self.records_margins = False
        self._notices: deque[str] = deque(maxlen=8)
        self.health = Health()
        self.lock = threading.Lock()
        vocab_path = backend.vocab or str(registry.default_path(registry.DEFAULT_TARGET))
        if not os.path.exists(vocab_path):
            raise ModelFileError(f"{vocab_path}: no vocabulary for the backend's tokens; set backendVocab to a "
                                 f"GGUF of the server model's family, or run `tandem models pull --target-only`")
        self.vocab = VocabularyFile(vocab_path)
        self.fim = fim_tokens(self.vocab)
        if self.fim is None:
            raise ModelFileError(f"{vocab_path}: this vocabulary has no FIM tokens, so no infilling prompt can be "
                                 f"built for the server; set backendVocab to the GGUF of a FIM model")
        self._special = {t for t in vars(self.fim).values() if t is not None}
        self.target = RemoteModel(backend.url.rstrip("/"), self.vocab)
        self.draft = None
        self.draft_decision = "on the server: its own speculation, as its flags set it"
        self.store_budget_mib = 0.0
        self.cfg = replace(cfg or EngineConfig(), draft_max=0)
        self.prompt_tok_s = INITIAL_PROMPT_TOK_S
        self.slots: list[list[int]] = [[]]       # what each of the server's slots holds, as far as we know
        self._slot_used: list[float] = [0.0]
        self.server_draft = DrafterCount()       # the server's own speculation, summed
        self._connected = False
        self.model_name = backend.model
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="tandem-http", daemon=True)
        self._thread.start()
        self.client: httpx.AsyncClient = self._run(self._client())
        try:
            self._run(self._connect())
        except BackendError as e:   # not fatal: the server may come up later; notices() says it once
            self._failed(str(e))

    # ---- the event loop the HTTP client lives on ----------------------------------------------------------

    def _run(self, coro):
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    async def _client(self) -> httpx.AsyncClient:
        b = self.backend
        headers = {}
        key = b.api_key()
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return httpx.AsyncClient(
            base_url=self.target.path, headers=headers, verify=b.verify_tls,
            timeout=httpx.Timeout(b.timeout_s, read=max(SILENCE_S, b.timeout_s)), trust_env=False,
            limits=httpx.Limits(max_connections=b.max_in_flight, max_keepalive_connections=b.max_in_flight))

    # ---- connecting: the server's context, slots and vocabulary -------------------------------------------

    async def _get(self, path: str) -> dict:
        try:
            r = await self.client.get(path)
        except httpx.HTTPError as e:
            raise BackendError(self._why(e)) from None
        await self._raise_for(r)
        try:
            return r.json()
        except ValueError:
            raise BackendError(f"backend {self.target.path}{path} answered something that is not JSON") from None

    async def _connect(self) -> None:
        if self.backend.kind == BackendKind.LLAMA_SERVER:
            props = await self._get("/props")
            gen = props.get("default_generation_settings") or {}
            n_ctx = gen.get("n_ctx") or props.get("n_ctx")
            n_slots = int(props.get("total_slots") or 1)
            probe = "def f(x):\n    return x  # é"
            try:
                r = await self.client.post("/tokenize", json={"content": probe})
            except httpx.HTTPError as e:
                raise BackendError(self._why(e)) from None
            await self._raise_for(r)
            theirs = r.json().get("tokens")
            if theirs != self.vocab.tokenize(probe):
                raise BackendError(f"the model on {self.target.path} does not tokenize like {self.vocab.path}: "
                                   f"set backendVocab to a GGUF of the server model's family")
        else:
            models = (await self._get("/v1/models")).get("data") or []
            if not models:
                raise BackendError(f"backend {self.target.path} serves no model (/v1/models is empty)")
            chosen = next((m for m in models if m.get("id") == self.backend.model), None) if self.backend.model \
                else models[0]
            if chosen is None:
                raise BackendError(f"backend {self.target.path} does not serve the model {self.backend.model!r}; "
                                   f"it serves {', '.join(str(m.get('id')) for m in models)}")
            self.model_name = chosen.get("id")
            n_ctx = chosen.get("max_model_len") or (chosen.get("meta") or {}).get("n_ctx_train")
            n_slots = 1
        if n_ctx:
            self.cfg.n_ctx = int(n_ctx)
        if len(self.slots) != n_slots:
            self.slots, self._slot_used = [[] for _ in range(n_slots)], [0.0] * n_slots
        self._connected = True
        self._succeeded(None)

    # ---- the engine interface -----------------------------------------------------------------------------

    def tokenize(self, text: str, special: bool = False) -> list[int]:
        return self.vocab.tokenize(text, special)

    def cached(self, tokens: list[int]) -> int:
        return max(shared_prefix(s, tokens) for s in self.slots)

    def prompt_seconds(self, tokens: int) -> float:
        return tokens / self.prompt_tok_s

    def generate(self, req: GenerationRequest, cancel: threading.Event | None = None) -> Generation:
        if len(req.tokens) + req.max_tokens > self.cfg.n_ctx:
            raise ContextFullError(f"prompt of {len(req.tokens)} tokens + {req.max_tokens} to generate does not "
                                   f"fit the backend's context of {self.cfg.n_ctx} tokens")
        with self.lock:
            return self._run(self._generate(req, cancel))

    def prewarm(self, tokens: list[int], cancel: threading.Event | None = None, draft: bool = False,
                keep: int = 0) -> int:
        """The prompt evaluated into a slot ahead of its request (llama-server: `n_predict` 0); returns the
        tokens the server evaluated."""
        if self.backend.kind != BackendKind.LLAMA_SERVER or not tokens:
            return 0
        req = GenerationRequest(list(tokens), max_tokens=0)
        with self.lock:
            gen = self._run(self._generate(req, cancel))
        return gen.prompt_computed

    def tune(self, speculation: bool, draft_min: int, draft_max: int, kv_store_mib: int, cache_reuse: int) -> None:
        """Our controller's settings do not reach the server: its speculation is its flags'."""

    def loaded(self) -> str:
        return (f"backend {self.target.path} ({self.backend.kind}, {len(self.slots)} slot(s), context "
                f"{self.cfg.n_ctx}): {self.health.state}; tokens from {self.vocab.path}")

    def notices(self) -> list[str]:
        """Messages for the user that came up since the last call: the server went down, or is back."""
        out = list(self._notices)
        self._notices.clear()
        return out

    def store_summary(self) -> dict:
        return {"budget_bytes": 0, "bytes": 0, "target": None, "draft": None,
                "prompt_tok_s": round(self.prompt_tok_s, 1), "on_server": True}

    def summary(self) -> dict:
        return {"url": self.target.path, "kind": self.backend.kind, "slots": len(self.slots),
                "context": self.cfg.n_ctx, "health": self.health.summary(),
                "server_speculation": {"drafted": self.server_draft.drafted,
                                       "accepted": self.server_draft.accepted}}

    def warn(self, msg: str) -> None:
        self.warnings.append(msg)
        self.log(f"warning: {msg}")

    def close(self) -> None:
        try:
            self._run(self.client.aclose())
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=5)
            self.vocab.close()

    # ---- one request --------------------------------------------------------------------------------------

    async def _generate(self, req: GenerationRequest, cancel: threading.Event | None) -> Generation:
        t0 = time.perf_counter()
        n = len(req.tokens)
        if self.health.waiting():
            return Generation("", [], StopReason.ERROR, n, 0, 0.0, 0.0, 0)
        self.health.requests += 1
        try:
            if not self._connected:
                await self._connect()
            slot = self._slot_for(req.tokens)
            reused = shared_prefix(self.slots[slot], req.tokens)
            task = asyncio.ensure_future(self._stream(req, slot, t0, reused))
            while not task.done():
                await asyncio.wait({task}, timeout=CANCEL_POLL_S)
                if not task.done() and cancel is not None and cancel.is_set():
                    # closing the stream is what makes llama-server and vLLM stop generating
                    task.cancel()
                    try:
                        await task
                    except asyncio.CancelledError:
                        pass
                    self.slots[slot] = req.tokens[:reused]
                    return Generation("", [], StopReason.CANCELLED, n, reused, time.perf_counter() - t0, 0.0, 0)
            out: _Stream = task.result()
        except BackendError as e:
            self._failed(str(e))
            return Generation("", [], StopReason.ERROR, n, 0, time.perf_counter() - t0, 0.0, 0)
        self._succeeded(out.first_s)
        t_end = time.perf_counter()
        timings = out.timings
        prompt_n = int(timings.get("prompt_n", n - reused) or 0)
        prompt_s = float(timings.get("prompt_ms", 0) or 0) / 1000 or (out.first_s or 0.0)
        if prompt_n >= 32 and prompt_s > 0:
            self.prompt_tok_s += 0.3 * (prompt_n / prompt_s - self.prompt_tok_s)
        tokens = out.tokens if out.tokens else self.vocab.tokenize(out.text)
        self.slots[slot] = list(req.tokens) + tokens
        self.target.tokens = self.slots[slot]
        self.target.counters.evaluated += prompt_n + len(tokens)
        self.target.counters.reused += max(0, n - prompt_n)
        drafters = {}
        if timings.get("draft_n"):
            c = DrafterCount(steps=1, drafted=int(timings["draft_n"]), accepted=int(timings.get("draft_n_accepted", 0)))
            drafters["server"] = c
            self.server_draft.drafted += c.drafted
            self.server_draft.accepted += c.accepted
        return Generation(out.text, tokens, StopReason(out.reason or "length"), n, max(0, n - prompt_n), prompt_s,
                          max(0.0, t_end - t0 - prompt_s), len(tokens), drafters=drafters, prompt_computed=prompt_n)

    def _slot_for(self, tokens: list[int]) -> int:
        """The slot that holds most of this prompt (so each document keeps its own), else the least recently
        used one."""
        best = max(range(len(self.slots)), key=lambda i: shared_prefix(self.slots[i], tokens))
        if shared_prefix(self.slots[best], tokens) < min(64, len(tokens) // 2):
            best = min(range(len(self.slots)), key=lambda i: self._slot_used[i])
        self._slot_used[best] = time.monotonic()
        return best

    def _body(self, req: GenerationRequest, slot: int) -> tuple[str, dict]:
        stop = list(req.stop)
        if self.backend.kind == BackendKind.LLAMA_SERVER:
            body = {"prompt": req.tokens, "n_predict": req.max_tokens, "stream": True, "cache_prompt": True,
                    "id_slot": slot if len(self.slots) > 1 else -1, "temperature": 0.0, "top_k": 1,
                    "stop": stop, "return_tokens": True, "n_probs": 0}
            if req.time_budget_s is not None:
                body["t_max_predict_ms"] = int(req.time_budget_s * 1000)
            return "/completion", body
        body = {"model": self.model_name, "prompt": self.prompt_text(req.tokens), "max_tokens": max(1, req.max_tokens),
                "temperature": 0.0, "stream": True, "stream_options": {"include_usage": True}}
        if stop:
            body["stop"] = stop
        return "/v1/completions", body

    def prompt_text(self, tokens: list[int]) -> str:
        """The prompt as text with its FIM tokens spelled out (the server parses them back)."""
        return "".join(self.vocab.token_text(t) if t in self._special else self.vocab.detokenize([t])
                       for t in tokens)

    async def _stream(self, req: GenerationRequest, slot: int, t0: float, reused: int) -> _Stream:
        path, body = self._body(req, slot)
        out = _Stream()
        longest = max((len(s) for s in req.stop), default=0)
        t_gen = None
        try:
            async with aconnect_sse(self.client, "POST", path, json=body) as source:
                await self._raise_for(source.response)
                async for event in source.aiter_sse():
                    if event.data == "[DONE]":
                        break
                    try:
                        data = json.loads(event.data)
                    except ValueError:
                        raise BackendError(f"backend {self.target.path} sent a malformed stream "
                                           f"({event.data[:80]!r})") from None
                    if not isinstance(data, dict):
                        raise BackendError(f"backend {self.target.path} sent a malformed stream "
                                           f"({event.data[:80]!r})")
                    if "error" in data:
                        raise BackendError(f"backend {self.target.path}: {_message(data)}")
                    piece, toks, final = self._chunk(data, out)
                    if piece or toks:
                        if out.first_s is None:
                            # the server has evaluated the prompt: generation starts (the early answer counts
                            # from here); what it reused is known for sure only at the end
                            out.first_s = time.perf_counter() - t0
                            t_gen = time.perf_counter()
                            if req.on_prompt is not None:
                                req.on_prompt(len(req.tokens), reused, 0, out.first_s)
                        before = len(out.text)
                        out.tokens += toks
                        out.text, reason = text_stop(req, out.text + piece, before, longest)
                        if reason:
                            out.reason = reason
                            break   # leaving the stream closes it: the server stops generating
                        if req.on_text is not None:
                            req.on_text(out.text, len(out.tokens) or len(self.vocab.tokenize(out.text)), [], [])
                        if req.time_budget_s is not None and t_gen is not None \
                                and time.perf_counter() - t_gen > req.time_budget_s:
                            out.reason = "time"
                            break
                    if final:
                        break
        except SSEError as e:   # an httpx error too: first
            raise BackendError(f"backend {self.target.path} did not answer with a stream: {e}") from None
        except httpx.HTTPError as e:
            raise BackendError(self._why(e)) from None
        return out

    def _chunk(self, data: dict, out: _Stream) -> tuple[str, list[int], bool]:
        """(text, token ids, last chunk) of one streamed event; the last sets why generation ended."""
        if self.backend.kind == BackendKind.LLAMA_SERVER:
            final = bool(data.get("stop"))
            if final:
                out.timings = data.get("timings") or {}
                out.reason = {"eos": "eog", "word": "stop", "limit": "length"}.get(data.get("stop_type"), "length")
            return data.get("content") or "", list(data.get("tokens") or []), final
        if usage := data.get("usage"):   # the last event (stream_options.include_usage), after the text
            cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
            out.timings = {"prompt_n": max(0, (usage.get("prompt_tokens") or 0) - cached)}
        c = (data.get("choices") or [{}])[0]
        finish = c.get("finish_reason")
        if finish:
            out.reason = "length" if finish == "length" else ("stop" if c.get("stop_reason") else "eog")
        return c.get("text") or "", [], False

    # ---- faults -------------------------------------------------------------------------------------------

    async def _raise_for(self, r: httpx.Response) -> None:
        if r.status_code < 400:
            return
        try:
            await r.aread()
            detail = _message(json.loads(r.content))
        except (ValueError, httpx.HTTPError):   # a body that is not JSON
            detail = r.reason_phrase
        if r.status_code in (401, 403):
            where = f"the key in {self.backend.api_key_env}" if self.backend.api_key_env else \
                "no key (set backendApiKeyEnv to the variable that holds it)"
            raise BackendError(f"backend {self.target.path} refused {where} (HTTP {r.status_code})")
        if r.status_code == 503:
            raise BackendError(f"backend {self.target.path} is not ready (HTTP 503: {detail}); it may be loading")
        raise BackendError(f"backend {self.target.path} answered HTTP {r.status_code}: {detail}")

    def _why(self, e: httpx.HTTPError) -> str:
        url = self.target.path
        if isinstance(e, httpx.ConnectError):
            return f"cannot connect to the backend {url} ({e or 'connection refused'}): is the server running there?"
        if isinstance(e, httpx.TimeoutException):
            limit = self.backend.timeout_s if isinstance(e, httpx.ConnectTimeout) else max(SILENCE_S,
                                                                                            self.backend.timeout_s)
            return f"the backend {url} did not answer within {limit:g} s"
        return f"the backend {url} broke off the answer ({type(e).__name__}: {e or 'the connection closed'})"

    def _failed(self, msg: str) -> None:
        # a server that comes back may be another one (restarted, other flags): ask it again, assume nothing cached
        self._connected = False
        self.slots = [[] for _ in self.slots]
        h = self.health
        h.errors += 1
        h.failures += 1
        h.retry_at = time.monotonic() + min(BACKOFF_MAX_S, BACKOFF_S * 2 ** (h.failures - 1))
        if h.state != "down" or h.error != msg:
            self._notices.append(f"{msg}. Completions are empty until it answers again.")
            self.log(f"backend: {msg}")
        h.state, h.error = "down", msg

    def _succeeded(self, first_s: float | None) -> None:
        h = self.health
        if h.state == "down":
            self._notices.append(f"the backend {self.target.path} answers again.")
            self.log(f"backend {self.target.path} answers again")
        h.state, h.error, h.failures = "up", "", 0
        if first_s is not None:
            ms = first_s * 1000
            h.first_token_ms = ms if h.first_token_ms is None else h.first_token_ms + 0.3 * (ms - h.first_token_ms)


def _message(data) -> str:
    err = data.get("error") if isinstance(data, dict) else None
    if isinstance(err, dict):
        return str(err.get("message") or err)[:300]
    return str(err or data)[:300]
