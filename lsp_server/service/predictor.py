"""Before generation: how likely a suggestion at this place is to be taken, from the text around the cursor and
what the user did with the document's recent suggestions. A request made while the user types (within half a
second of the document's previous one) below the threshold of the `suggestions` level is not asked of the model at
all (tandem/stats `gated.predicted`), so the model thread is free for the ones that will be taken. A request after
a pause (the user waits for a suggestion; a popup client asks only then) is always asked, and so is one the user
asked for by key. A small logistic model over a handful of features, each explainable (`features`); its weights
and thresholds are `predictor.json` beside this module, fitted by the lab on the tune half only
(`tandem-eval gate-fit`)."""
from __future__ import annotations

import json
import math
from collections import deque
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from .gate import Suggestions, logistic

WEIGHTS_FILE = Path(__file__).with_name("predictor.json")
RECENT = 10          # the document's last suggestions whose fate is remembered
PRIOR = (1, 4)       # the taken share a document starts with: 1 in 4, worth as much as that many suggestions
OPENERS = (":", "{", "(", "[", "=>", "->")
IDENT = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$")


class Recent:
    """What became of a document's last suggestions (1: taken, 0: dismissed)."""

    def __init__(self):
        self.fates: deque[int] = deque(maxlen=RECENT)

    def add(self, taken: bool) -> None:
        self.fates.append(1 if taken else 0)

    @property
    def taken_share(self) -> float:
        return (sum(self.fates) + PRIOR[0]) / (len(self.fates) + PRIOR[1])


def features(prefix: str, suffix: str, recent: Recent | None, typing: bool) -> dict[str, float]:
    """What the predictor reads at a cursor between `prefix` and `suffix`."""
    start = prefix.rfind("\n") + 1
    before = prefix[start:]
    end = suffix.find("\n")
    after = suffix if end < 0 else suffix[:end]
    above = ""
    for line in reversed(prefix[:start].split("\n")):
        if line.strip():
            above = line.rstrip()
            break
    code = before.strip()
    last = before[-1:] if before else ""
    return {
        "mid": 1.0 if code else 0.0,
        "after_opener": 1.0 if not code and above.endswith(OPENERS) else 0.0,
        "word": 1.0 if last in IDENT else 0.0,
        "open": 1.0 if last in "([{,=" else 0.0,
        "space": 1.0 if code and last in " \t" else 0.0,
        "length": math.log1p(len(code)),
        "rest": 1.0 if after.strip() else 0.0,
        "comment": 1.0 if code.startswith(("#", "//", "/*", "*", "--")) else 0.0,
        "taken": (recent or Recent()).taken_share,
        "typing": 1.0 if typing else 0.0,
    }


@dataclass(frozen=True)
class Weights:
    bias: float
    weights: dict[str, float]
    thresholds: dict[str, float]    # level -> the least probability asked of the model

    def probability(self, f: dict[str, float]) -> float:
        return logistic(self.bias, self.weights, f)


@lru_cache(maxsize=4)
def load_weights(path: str = str(WEIGHTS_FILE)) -> Weights:
    d = json.loads(Path(path).read_text())
    return Weights(float(d["bias"]), {k: float(v) for k, v in d["weights"].items()},
                   {k: float(v) for k, v in d["thresholds"].items()})


@dataclass(frozen=True)
class Prediction:
    probability: float
    features: dict[str, float]
    skip: bool

    def explained(self) -> dict:
        return {"p": round(self.probability, 3), "features": {k: round(v, 3) for k, v in self.features.items()}}


def predict(prefix: str, suffix: str, recent: Recent | None, typing: bool, level: Suggestions,
            forced: bool = False, w: Weights | None = None) -> Prediction:
    w = w or load_weights()
    f = features(prefix, suffix, recent, typing)
    p = w.probability(f)
    t = w.thresholds.get(str(level))
    skip = typing and not forced and level is not Suggestions.EAGER and t is not None and p < t
    return Prediction(p, f, skip=skip)
