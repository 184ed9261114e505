"""What is shown of an answer, from how sure the target was of it: the confidence gate.

Every token the target writes comes with its margin (the gap between its top two logits, engine/speculative.py).
A suggestion's score is a small logistic model over what those margins say about its first line (the line a
person takes or not: its least sure token, their mean, its first token), its length, and where the cursor stands
(`features`). Below the threshold of the `suggestions` level for its language and mode, nothing is shown; above
it, the lines after the first are kept up to the first line with an unsure token (a long answer cut to its sure
part, its brackets closed as after any cut), so a right first line is not lost with a wrong tail.

The weights and thresholds are `gate.json` beside this module, fitted by the lab on the tune half only
(`tandem-eval gate-fit`); a language or mode with too few examples there uses the threshold of all of them.
Where the engine gives no margins (a remote engine) nothing is gated, and the answer counts as unscored."""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from enum import StrEnum
from functools import lru_cache
from pathlib import Path

from ..postprocess import FILTERS, Around

WEIGHTS_FILE = Path(__file__).with_name("gate.json")


class Suggestions(StrEnum):
    """How much is shown (setting `suggestions`)."""
    EAGER = "eager"          # every answer (each is still scored and counted)
    BALANCED = "balanced"    # answers sure enough that showing them pays: the default
    QUIET = "quiet"          # only answers the target is very sure of


# what each level shows, as `tandem doctor` says it
MEANS = {Suggestions.EAGER: "every answer the model writes",
         Suggestions.BALANCED: "answers likely enough to be taken; long ones up to their first unsure line",
         Suggestions.QUIET: "only answers the model is very sure of: fewer, shorter suggestions"}


class Gated(StrEnum):
    """Why less was shown than the model wrote (tandem/stats `suggestions.gated`)."""
    UNSURE = "unsure"        # the first line's score was below the threshold: nothing shown
    CUT = "cut"              # shown up to the first line with an unsure token


@dataclass(frozen=True)
class Sureness:
    """The margins of a generation's tokens and where each token's text ends in the generation's text."""
    margins: tuple[float, ...] = ()
    ends: tuple[int, ...] = ()

    @property
    def known(self) -> bool:
        return bool(self.margins) and len(self.margins) >= len(self.ends) > 0

    def over(self, start: int, end: int) -> list[float]:
        """The margins of the tokens whose text overlaps [start, end) (a token begun before `start` counts: its
        text is part of what is shown)."""
        out, begin = [], 0
        for m, e in zip(self.margins, self.ends):
            if e > start and begin < end:
                out.append(m)
            begin = e
            if begin >= end:
                break
        return out


@dataclass(frozen=True)
class Weights:
    bias: float
    weights: dict[str, float]
    thresholds: dict[str, dict[str, float]]   # level -> "language/mode", "*/mode" or "*" -> the least score shown
    cut_margin: dict[str, float]             # level -> a later line with a token below this ends what is shown

    def threshold(self, level: Suggestions, language: str, mode: str) -> float | None:
        t = self.thresholds.get(str(level))
        if t is None:
            return None
        for key in (f"{language}/{mode}", f"*/{mode}", "*"):
            if key in t:
                return t[key]
        return None


@lru_cache(maxsize=4)
def load_weights(path: str = str(WEIGHTS_FILE)) -> Weights:
    d = json.loads(Path(path).read_text())
    return Weights(float(d["bias"]), {k: float(v) for k, v in d["weights"].items()},
                   {lvl: {k: float(v) for k, v in t.items()} for lvl, t in d["thresholds"].items()},
                   {lvl: float(v) for lvl, v in d["cut_margin"].items()})


def first_line_end(text: str) -> int:
    """Where the first line with code of `text` ends (its newline's index, or the text's length)."""
    start = len(text) - len(text.lstrip())
    end = text.find("\n", start)
    return len(text) if end < 0 else end


def mode_of(around: Around) -> str:
    """`line`: the cursor's line is blank before it (a new line); `mid`: in the middle of a statement."""
    return "mid" if around.line_before.strip() else "line"


def features(text: str, sure: Sureness, at: int, around: Around) -> dict[str, float] | None:
    """What the score reads of a suggestion `text` that starts at `at` in the generation's text; None where the
    margins are not known."""
    if not sure.known or not text.strip():
        return None
    first = sure.over(at, at + first_line_end(text))
    if not first:
        return None
    return {
        "low": math.log1p(max(0.0, min(first))),
        "mean": math.log1p(max(0.0, sum(first) / len(first))),
        "first": math.log1p(max(0.0, first[0])),
        "tokens": math.log1p(len(first)),
        "lines": math.log1p(text.strip("\n").count("\n")),
        "mid": 1.0 if mode_of(around) == "mid" else 0.0,
    }


def logistic(bias: float, weights: dict[str, float], f: dict[str, float]) -> float:
    """A logistic model's probability for the features `f` (the gate's score, the predictor's estimate)."""
    z = bias + sum(weights.get(k, 0.0) * v for k, v in f.items())
    return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))


def score(f: dict[str, float], w: Weights) -> float:
    return logistic(w.bias, w.weights, f)


@dataclass(frozen=True)
class Verdict:
    text: str                         # what is shown
    score: float | None = None        # None: not scored (no margins)
    gated: Gated | None = None        # why less than the answer is shown
    features: dict | None = None
    line_lows: tuple[float, ...] = ()  # the least margin of each line after the first (where the cut looks)

    def explained(self) -> dict:
        """The verdict as the client's accept command carries it (and the lab reads it)."""
        out: dict = {"score": None if self.score is None else round(self.score, 3)}
        if self.gated:
            out["gated"] = str(self.gated)
        if self.features:
            out["features"] = {k: round(v, 3) for k, v in self.features.items()}
            out["line_lows"] = [round(v, 2) for v in self.line_lows]
        return out

    def reported(self) -> dict | None:
        """What an answer carries of its verdict: `explained`, or None where it was not scored."""
        return self.explained() if self.score is not None else None


def _later_lines(text: str, sure: Sureness, at: int) -> list[tuple[int, float]]:
    """Each line of `text` after its first line with code that is not blank: where it starts (the index of the
    newline before it) and the least margin of its tokens (inf where none is known)."""
    out, pos = [], first_line_end(text)
    while pos < len(text):
        end = text.find("\n", pos + 1)
        end = len(text) if end < 0 else end
        if text[pos:end].strip():
            ms = sure.over(at + pos + 1, at + end)
            out.append((pos, min(ms) if ms else math.inf))
        pos = end
    return out


def _cut(text: str, lines: list[tuple[int, float]], below: float, around: Around) -> str:
    """`text` up to the first of its later `lines` with a token whose margin is below `below`, its brackets
    closed as after any cut."""
    for pos, low in lines:
        if low < below:
            kept = text[:pos]
            return FILTERS["close_cut_block"](kept, replace(around, truncated=True)) or kept
    return text


def judge(text: str, sure: Sureness, at: int, around: Around, level: Suggestions,
          w: Weights | None = None) -> Verdict:
    """What of `text` (an answer starting at `at` in its generation's text) is shown at `level`."""
    f = features(text, sure, at, around)
    if f is None:
        return Verdict(text)
    w = w or load_weights()
    s = score(f, w)
    lines = _later_lines(text, sure, at)
    lows = tuple(low for _, low in lines)
    if level is Suggestions.EAGER:
        return Verdict(text, s, None, f, lows)
    t = w.threshold(level, around.language, mode_of(around))
    if t is not None and s < t:
        return Verdict("", s, Gated.UNSURE, f, lows)
    below = w.cut_margin.get(str(level))
    if below is not None and lows and min(lows) < below:
        cut = _cut(text, lines, below, around)
        if cut != text:
            return Verdict(cut, s, Gated.CUT, f, lows)
    return Verdict(text, s, None, f, lows)


class Gate:
    """The gate as the service runs it: each answer judged at the level the settings say, and counted."""

    def __init__(self, stats, level=lambda: Suggestions.BALANCED):
        self.stats, self.level = stats, level

    def shown(self, text: str, sure: Sureness, at: int, around: Around) -> Verdict:
        """What of an answer the client is sent (counted as scored or not, and gated by reason)."""
        if not text:
            return Verdict(text)
        v = judge(text, sure, at, around, self.level())
        self.stats.gate_judged(v.score is not None, v.gated)
        return v

    def writes(self, writes: list, around: Around, prefix_len: int, sure: Sureness) -> list:
        """A finished generation's cache writes (cache_writes.py) as the gate lets them: each one's text judged
        where it starts in the generation (`prefix_len`: the length of the prefix it was generated for); one
        that shows nothing is not kept, so a later request there asks the model (not counted: nothing was
        shown)."""
        out = []
        for w in writes:
            if not w.text:
                out.append(w)
                continue
            at = len(w.prefix) - prefix_len
            v = judge(w.text, sure, at, replace(around, prefix=w.prefix), self.level())
            if v.text:
                out.append(replace(w, text=v.text, confidence=v.reported()))
        return out
