"""How often each drafter's tokens are accepted, per language, per bucket and per position in the draft.

The estimate for a language leans on the all-language figure until the language has its own evidence,
and that leans on a prior per bucket until there is evidence at all.
"""
from __future__ import annotations

import json
import math
import threading
from dataclasses import dataclass
from pathlib import Path

ALL = "*"
LANGUAGE_WEIGHT = 8.0    # observations after which a language's own rate counts as much as the global one
EXPLORATION = 1.0        # standard deviations of optimism for little-tried buckets
PRIOR_WEIGHT = 6.0     # a few lucky drafts must not make a bucket look reliable

# prior acceptance per bucket: long lookups are usually right, short ones rarely;
# the draft model's tokens roughly as likely as its own probability says
PRIORS = {"run": .7, "t-sub": .75, "t-same": .65, "t-next": .55, "n8": .6, "n7": .55, "n6": .5, "n5": .45, "n4": .4, "n3": .3, "n2": .2,
          # rewrite lookup: a copy in progress (an edit's answer copies the text it replaces but for the edit: most
          # of it is accepted, and a lower prior would never let the controller try it where a batch costs nearly
          # its tokens), a fresh alignment by k tokens, a one-for-one substitution guess
          "copy": .9, "k4": .6, "k3": .5, "k2": .4, "k1": .25, "sub": .35,
          "p98": .9, "p90": .8, "p75": .65, "p50": .45, "p25": .25, "p0": .1}


POSITION_BONUS = {"1": 0.0, "2": 0.05, "3-4": 0.1, "5-8": 0.12, "9+": 0.12}


def position_bucket(i: int) -> str:
    """i is 1-based: the first drafted token, the second, ..."""
    return "1" if i == 1 else "2" if i == 2 else "3-4" if i <= 4 else "5-8" if i <= 8 else "9+"


@dataclass
class Rate:
    accepted: int = 0
    tried: int = 0


class AcceptanceStats:
    def __init__(self, path: Path | None = None):
        self.path = path
        self.rates: dict[str, Rate] = {}
        self.version = 0         # bumped by every record: estimates derived from the rates are stale after it
        self._lock = threading.Lock()
        if path and path.exists():
            try:
                for k, (a, t) in json.loads(path.read_text()).items():
                    self.rates[k] = Rate(int(a), int(t))
            except (OSError, ValueError, TypeError):
                self.rates = {}   # a damaged file only costs what was learned

    @staticmethod
    def _key(lang: str, drafter: str, bucket: str, pos: int) -> str:
        return f"{lang}|{drafter}|{bucket}|{position_bucket(pos)}"

    def estimate(self, lang: str, drafter: str, bucket: str, pos: int, explore: bool = True) -> float:
        """Acceptance to plan with: the blended rate plus (`explore`) an exploration bonus that shrinks with
        evidence (upper confidence bound), so a kind of draft nobody has tried yet still gets tried."""
        # once a draft's first tokens are right it is usually on the right track: later positions start
        # from a higher prior
        prior = min(0.95, PRIORS.get(bucket.rstrip("+"), 0.5) + POSITION_BONUS[position_bucket(pos)])
        g = self.rates.get(self._key(ALL, drafter, bucket, pos), Rate())
        q_all = (g.accepted + PRIOR_WEIGHT * prior) / (g.tried + PRIOR_WEIGHT)
        r = self.rates.get(self._key(lang, drafter, bucket, pos), Rate())
        q = (r.accepted + LANGUAGE_WEIGHT * q_all) / (r.tried + LANGUAGE_WEIGHT)
        if pos > 1 or not explore:
            # only the first token is explored: optimism about later ones would make every draft long,
            # and on a CPU a long rejected draft is the costliest mistake
            return q
        evidence = g.tried + r.tried + PRIOR_WEIGHT
        return min(0.99, q + EXPLORATION * math.sqrt(q * (1 - q) / evidence))

    def record(self, lang: str, drafter: str, buckets: list[str], n_accepted: int) -> None:
        """The first n_accepted of these drafted tokens were accepted; the next one (if any) was not."""
        with self._lock:
            self.version += 1
            for i, bucket in enumerate(buckets[:n_accepted + 1], start=1):
                for l in (lang, ALL):
                    r = self.rates.setdefault(self._key(l, drafter, bucket, i), Rate())
                    r.tried += 1
                    r.accepted += i <= n_accepted

    def snapshot(self) -> dict[str, tuple[int, int]]:
        with self._lock:
            return {k: (r.accepted, r.tried) for k, r in self.rates.items()}

    def restore(self, snap: dict[str, tuple[int, int]]) -> None:
        """Back to what a snapshot held, so a run repeated for timing decides as its first pass did."""
        with self._lock:
            self.version += 1
            self.rates = {k: Rate(a, t) for k, (a, t) in snap.items()}

    def summary(self, lang: str | None = None) -> dict[str, dict[str, float]]:
        """Per drafter: tokens tried, accepted and the acceptance rate (for one language or all)."""
        out: dict[str, dict[str, float]] = {}
        for k, r in self.rates.items():
            l, drafter, _, _ = k.split("|")
            if l != (lang or ALL):
                continue
            d = out.setdefault(drafter, {"tried": 0, "accepted": 0})
            d["tried"] += r.tried
            d["accepted"] += r.accepted
        for d in out.values():
            d["rate"] = d["accepted"] / d["tried"] if d["tried"] else 0.0
        return out

    def save(self) -> None:
        if not self.path:
            return
        with self._lock:
            data = {k: [r.accepted, r.tried] for k, r in self.rates.items()}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=0, sort_keys=True))
        tmp.replace(self.path)
