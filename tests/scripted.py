"""A scripted engine for the service's control logic (make check): no model file, a character tokenizer, a
generate that writes a scripted text one token per step, calls back as the real one does and honours cancel. It
keeps a live cache of the last prompt's tokens, so `cached` and pre-emption behave as the engine's do; evaluation
takes `token_s` per token. What it writes comes from `answer(prefix) -> text` (with `by_prompt`, `answer(the
prompt's text)`: what the prompt holds decides); a fill-in-the-middle prompt goes to `fim_answer(prefix, suffix)`
where one is given (`fills(expected)`: the target writes what makes the file the expected text). Where the
generation stops is the real loop's rule (`text_stop`: stop strings, one line, an answer to verify, a rewrite
that settles)."""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Callable

from lsp_server.engine import ContextFullError, EngineConfig, Generation, StopReason
from lsp_server.engine.speculative import text_stop
from lsp_server.engine.vocab import FimTokens

FIM = FimTokens(prefix=1, suffix=2, middle=3, repo_name=4, file_sep=5)
BASE = 1000


@dataclass
class Counters:
    evaluated: int = 0
    reused: int = 0


@dataclass
class Target:
    counters: Counters = field(default_factory=Counters)
    tokens: list[int] = field(default_factory=list)   # the live cache


class ScriptedEngine:
    def __init__(self, answer: Callable[[str], str], token_s: float = 0.0005, step_s: float = 0.002,
                 by_prompt: bool = False, strict_context: bool = False,
                 fim_answer: Callable[[str, str], str] | None = None,
                 margin: Callable[[str, int], float] | None = None):
        self.answer, self.token_s, self.step_s, self.by_prompt = answer, token_s, step_s, by_prompt
        # (script, i) -> the margin of its i-th character (a token each); None: no margins, as a remote engine
        self.margin = margin
        self.fim_answer = fim_answer
        # ContextFullError where prompt and output do not fit cfg.n_ctx, as the real loop raises it (off by default:
        # with one token a character, some completion tests' prompts of long lines do not fit)
        self.strict_context = strict_context
        self.cfg = EngineConfig(stats_path="", calibration_path="")
        self.fim = FIM
        self.target = Target()
        self.draft = None
        self.draft_decision = "none (scripted)"
        self.backend = None
        self.warnings: list[str] = []
        self.records_margins = True   # (none are written: an answer's margin is unknown, and it is not filtered)
        self.prompt_tok_s = 1 / token_s
        self.lock = threading.Lock()
        self.generations: list[str] = []   # the prefix of each generation that ran (for the tests)
        self.prompts: list[list[int]] = []  # and its prompt
        self.cancels: list[tuple] = []       # each call's cancel flag, and whether it yielded to other windows then
        self.cancelled = 0

    # ---- tokens --------------------------------------------------------------------------------------------

    def tokenize(self, text: str, special: bool = False) -> list[int]:
        # one token a character: a chat template's control tokens written as text (`special`) stay characters
        return [BASE + ord(c) for c in text]

    def detokenize(self, tokens: list[int]) -> str:
        return "".join(chr(t - BASE) for t in tokens if t >= BASE)

    # ---- the engine's interface ------------------------------------------------------------------------------

    def cached(self, tokens: list[int]) -> int:
        n, live = 0, self.target.tokens
        for a, b in zip(tokens, live):
            if a != b:
                break
            n += 1
        return n

    def prompt_seconds(self, tokens: int) -> float:
        return tokens * self.token_s

    def _prefill(self, tokens: list[int], cancel) -> int:
        have = self.cached(tokens)
        self.target.counters.reused += have
        self.target.tokens = tokens[:have]
        for i in range(have, len(tokens)):
            if cancel is not None and cancel.is_set() and i >= getattr(cancel, "keep_until", 0):
                return -1
            time.sleep(self.token_s)
            self.target.tokens.append(tokens[i])
            self.target.counters.evaluated += 1
        return len(tokens) - have

    def prewarm(self, tokens: list[int], cancel=None, draft: bool = False, keep: int = 0) -> int:
        with self.lock:
            before = self.target.counters.evaluated
            self._prefill(tokens, cancel)
            return self.target.counters.evaluated - before

    def generate(self, req, cancel=None) -> Generation:
        self.cancels.append((cancel, getattr(cancel, "yields", None)))
        if self.strict_context and len(req.tokens) + req.max_tokens + self.cfg.draft_max + 1 > self.cfg.n_ctx:
            raise ContextFullError(f"prompt of {len(req.tokens)} tokens + {req.max_tokens} to generate does not "
                                   f"fit the context of {self.cfg.n_ctx} tokens")
        with self.lock:
            t0 = time.perf_counter()
            done = self._prefill(req.tokens, cancel)
            prompt_s = time.perf_counter() - t0
            reused = len(req.tokens) - max(0, done)
            if done < 0:
                self.cancelled += 1
                return Generation("", [], StopReason.CANCELLED, len(req.tokens), reused, prompt_s, 0.0, 0)
            if req.on_prompt:
                req.on_prompt(len(req.tokens), reused, 0, prompt_s)
            self.generations.append(req.left_text)
            self.prompts.append(list(req.tokens))
            toks = req.tokens
            if self.fim_answer is not None and toks and toks[-1] == FIM.middle and FIM.suffix in toks:
                at = toks.index(FIM.suffix)
                script = self.fim_answer(self.detokenize(toks[toks.index(FIM.prefix) + 1:at]),
                                         self.detokenize(toks[at + 1:]))
            else:
                script = self.answer(self.detokenize(req.tokens) if self.by_prompt else req.left_text)
            out, reason = "", StopReason.EOG
            margins: list[float] = []
            ends: list[int] = []
            longest = max((len(x) for x in req.stop), default=0)
            t1 = time.perf_counter()
            for ch in script:
                if cancel is not None and cancel.is_set():
                    reason = StopReason.CANCELLED
                    self.cancelled += 1
                    break
                if len(out) >= req.max_tokens:
                    reason = StopReason.LENGTH
                    break
                time.sleep(self.step_s)
                if self.margin is not None:
                    margins.append(self.margin(script, len(margins)))
                out, stopped = text_stop(req, out + ch, len(out), longest)
                ends.append(len(out))
                if stopped:
                    reason = stopped
                    break
                if req.on_text:
                    req.on_text(out, len(out), list(margins), list(ends))
            toks = self.tokenize(out)
            return Generation(out, toks, reason, len(req.tokens), reused, prompt_s, time.perf_counter() - t1,
                              len(toks), margins=margins if self.margin is not None else [],
                              ends=ends if self.margin is not None else [])

    def tune(self, *args) -> None:
        pass

    def store_summary(self) -> dict:
        return {"budget_bytes": 0, "bytes": 0, "target": None, "draft": None, "prompt_tok_s": self.prompt_tok_s}

    def summary(self) -> dict:
        return {}

    def notices(self) -> list[str]:
        return []

    def loaded(self) -> str:
        return "scripted engine"

    def close(self) -> None:
        pass


def fills(expected: str) -> Callable[[str, str], str]:
    """A fill-in-the-middle answer that makes the file `expected` where the prompt's text around the hole allows
    (its prefix may start at a page, its suffix be cut: the hole is found by them), else one that writes "?"."""
    def answer(prefix: str, suffix: str) -> str:
        at = expected.find(prefix)
        if at < 0:
            return "?"
        rest = expected[at + len(prefix):]
        end = rest.find(suffix) if suffix else len(rest)
        return rest[:end] if end >= 0 else "?"
    return answer


def scripted_service(answer: Callable[[str], str], suggestions: str = "eager", warmup_pause_ms: int = -1,
                     **engine_kw):
    """The service over a ScriptedEngine (`engine_kw` go to it), answering at once: no early answers, no time
    budget, no fast prompts, no prefetch; `suggestions` eager unless a test is of what the gate and the predictor
    hold back. (service, engine)."""
    from lsp_server.pipeline import Pipeline
    from lsp_server.service.gate import Suggestions
    from lsp_server.service.scheduler import CompletionService
    from lsp_server.service.settings import Settings
    settings = Settings(early_answer_ms=0, time_budget_ms=0, prompt_budget_ms=-1, prefetch=False,
                        warmup_pause_ms=warmup_pause_ms, suggestions=Suggestions(suggestions))
    engine = ScriptedEngine(answer, **engine_kw)
    svc = CompletionService()
    svc.settings = settings
    svc.pipeline = Pipeline(engine, settings.prompt_budget(), settings.fast_prefix_tokens)
    return svc, engine
