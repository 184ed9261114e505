"""What the server measures about itself, for `tandem/stats`. Bounded."""
from __future__ import annotations

import logging
import threading
from collections import deque
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from enum import StrEnum

RECORDS = 2000


class Source(StrEnum):
    """Where an answer came from (a str: it compares with, and serializes as, its value)."""
    MODEL = "model"             # a generation from the page's prompt
    FAST = "fast"               # a generation from a short prompt of the nearest lines
    REUSE = "reuse"             # a running generation the request joined
    CACHE = "cache"             # the typing cache
    SKIPPED = "skipped"         # no completion belongs here (the context stage said why)
    SUPERSEDED = "superseded"   # a newer request or edit replaced it
    NOT_READY = "not_ready"     # the models are loading (or could not be loaded)
    DISABLED = "disabled"       # completions are off for the language


class Stage(StrEnum):
    """Where a caught exception was caught (`failures` in tandem/stats counts them by stage)."""
    FILL_PLAN = "fill.plan"                  # working out the fill's steps for a place
    FILL_REFOCUS = "fill.refocus"            # ... for a new place while a step runs
    PREFETCH_PLAN = "prefetch.plan"          # planning the request after an accept
    PREFETCH_GENERATE = "prefetch.generate"  # its generation (the model thread's queue counts it too)
    OFFER_PLAN = "offer.plan"                # planning the page's request at a shown answer's place
    OFFER_GENERATE = "offer.generate"        # its generation (the model thread's queue counts it too)
    PROGRESS = "protocol.progress"           # the client's $/progress for a load
    # a task on the model thread (queue.py: "model." and its kind)
    MODEL_LOAD = "model.load"
    MODEL_REQUEST = "model.request"
    MODEL_PREFETCH = "model.prefetch"
    MODEL_OFFER = "model.offer"
    MODEL_FILL = "model.fill"
    MODEL_NEXT_EDIT = "model.next_edit"


@dataclass
class Record:
    language: str
    source: Source
    latency_s: float         # request received -> answer sent
    prompt_tokens: int = 0
    prompt_evaluated: int = 0
    tokens: int = 0          # generated for this request
    tok_s: float = 0.0
    multiline: bool = False
    shown_chars: int = 0
    queue_s: float = 0.0     # waiting for the model thread (a pre-empted warm-up or prefetch step)
    prompt_s: float = 0.0    # prompt evaluation
    gen_s: float = 0.0       # generation
    prompt_restored: int = 0  # prompt tokens whose KV state came back from the store
    page: int = -1           # the line the prompt's prefix starts at (-1: no model call)
    prompt: str = ""         # the prompt's digest (Prompt.digest; empty: no model call)


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    v = sorted(values)
    return v[min(len(v) - 1, max(0, round(q / 100 * (len(v) - 1))))]


class ServerStats:
    def __init__(self):
        self.records: deque[Record] = deque(maxlen=RECORDS)
        self.drafters: dict[str, dict[str, dict[str, int]]] = {}   # language -> drafter -> counts
        self.generated_tokens = 0     # by every generation, to its end (answers, continuations, prefetches)
        self.wasted_tokens = 0        # generated, then thrown away (cancelled or superseded work)
        self.continued = 0            # one-line generations that went on to the next line
        self.prefetches = 0           # completions generated ahead, as if the shown one were accepted
        self.prefetch_tokens = 0
        self.warmups = 0
        self.warmup_tokens = 0
        self.shown = self.accepted = 0
        self.accepted_chars = 0
        self.partly_accepted = self.partly_accepted_chars = 0   # accept next word / next line
        self.dismissed = 0            # suggestions the client says were shown and not taken (Esc, typed over)
        self.scored = self.unscored = 0   # answers the confidence gate judged; those without margins (gate.py)
        self.gated: dict[str, int] = {}   # reason -> answers shown in part or not at all
        # calls on the model thread (generations and warm-ups), and how many ever ran at once: the model thread
        # is meant to make that one, and the counter checks it
        self.model_calls = 0
        self.model_active = 0
        self.model_peak = 0
        self._model_lock = threading.Lock()
        # exceptions caught by stage (a planning bug in the fill, a generation that failed on the model thread):
        # each is logged at warning where it is caught
        self.failures: dict[Stage, int] = {}

    def failed(self, stage: Stage, e: BaseException, logger: logging.Logger | None = None, what: str = "") -> None:
        """An exception caught at `stage` (fill.plan, prefetch.generate, model.request, ...): counted for
        tandem/stats, and logged at warning with the stage where `logger` is given (the model thread's queue
        logs its own)."""
        stage = Stage(stage)
        self.failures[stage] = self.failures.get(stage, 0) + 1
        if logger is not None:
            logger.warning("%s failed%s: %s", stage, f" ({what})" if what else "", e,
                           exc_info=logger.isEnabledFor(logging.DEBUG))

    @contextmanager
    def model_call(self):
        with self._model_lock:
            self.model_calls += 1
            self.model_active += 1
            self.model_peak = max(self.model_peak, self.model_active)
        try:
            yield
        finally:
            with self._model_lock:
                self.model_active -= 1

    def gate_judged(self, scored: bool, gated) -> None:
        """An answer judged by the gate (gate.py): scored or not, and why less of it was shown, if it was."""
        if scored:
            self.scored += 1
        else:
            self.unscored += 1
        if gated is not None:
            self.gated_by(gated)

    def gated_by(self, reason) -> None:
        """Less was shown than asked for, for this reason (the gate's, or `predicted`: the predictor's skip)."""
        self.gated[str(reason)] = self.gated.get(str(reason), 0) + 1

    def add(self, rec: Record) -> None:
        self.records.append(rec)

    def add_drafters(self, language: str, drafters: dict) -> None:
        per = self.drafters.setdefault(language, {})
        for name, c in drafters.items():
            d = per.setdefault(name, {"drafted": 0, "accepted": 0, "steps": 0})
            d["drafted"] += c.drafted
            d["accepted"] += c.accepted
            d["steps"] += c.steps

    def summary(self, cache_hits: int, cache_lookups: int, include_records: bool = False) -> dict:
        answered = [r for r in self.records if r.source in (Source.MODEL, Source.FAST, Source.REUSE, Source.CACHE)]
        lat = [r.latency_s * 1000 for r in answered]
        model = [r for r in self.records if r.source in (Source.MODEL, Source.FAST) and r.prompt_tokens]
        ratios = [r.prompt_evaluated / r.prompt_tokens for r in model]
        out = {
            "requests": len(self.records),
            "by_source": {s: sum(1 for r in self.records if r.source == s)
                          for s in sorted({r.source for r in self.records})},
            "latency_ms": {"p50": percentile(lat, 50), "p90": percentile(lat, 90), "p95": percentile(lat, 95),
                           "p99": percentile(lat, 99), "max": max(lat, default=None)},
            "tok_s": (sum(r.tokens for r in model) / sum(r.tokens / r.tok_s for r in model if r.tok_s)
                      if any(r.tok_s for r in model) else None),
            "cache": {"hits": cache_hits, "lookups": cache_lookups,
                      "hit_rate": cache_hits / cache_lookups if cache_lookups else None},
            "prompt": {"evaluated_fraction_p50": percentile(ratios, 50),
                       "evaluated_p50": percentile([r.prompt_evaluated for r in model], 50),
                       "size_p50": percentile([r.prompt_tokens for r in model], 50)},
            "tokens": {"generated": self.generated_tokens, "wasted": self.wasted_tokens,
                       "prefetched": self.prefetch_tokens},
            "prefetches": self.prefetches,
            "continued": self.continued,
            "warmups": {"runs": self.warmups, "tokens_evaluated": self.warmup_tokens},
            "acceptance": {lang: {name: {**d, "rate": d["accepted"] / d["drafted"] if d["drafted"] else None}
                                  for name, d in per.items()} for lang, per in self.drafters.items()},
            "suggestions": {"shown": self.shown, "accepted": self.accepted, "accepted_chars": self.accepted_chars,
                            "partly_accepted": self.partly_accepted,
                            "partly_accepted_chars": self.partly_accepted_chars, "dismissed": self.dismissed,
                            "scored": self.scored, "unscored": self.unscored, "gated": dict(self.gated)},
            "model": {"calls": self.model_calls, "running": self.model_active, "peak_concurrent": self.model_peak},
            "failures": {str(k): v for k, v in self.failures.items()},
        }
        if include_records:
            out["records"] = [asdict(r) for r in self.records]
        return out
