"""Chooses, at each step, how many drafted tokens the target verifies: the number that maximizes the
expected tokens per second given measured costs and measured acceptance, zero included."""
from __future__ import annotations

from dataclasses import dataclass

from .acceptance import AcceptanceStats
from .config import EngineConfig, check_draft_bounds
from .costs import CostModel
from .drafters.base import Draft

# speculate only when it is expected to beat plain decoding by this fraction: a coin flip is not worth
# the wider batch on a noisy machine
MARGIN = 0.10
# the most a draft-model token could be worth: used to decide whether running the draft model can pay at all
BEST_MODEL_ACCEPTANCE = 0.95
# an unloaded draft model is loaded again only where even its best case beats plain decoding by this much: the
# costs of the batch sizes that are never tried drift from their calibration (plain steps are measured deep in
# real prompts, the batches' shape stays as calibrated at 192 tokens), and on this CPU a best case of 1.11-1.12x
# came and went with them, loading and unloading the draft every 10-20 minutes (2026-12-04/05); a machine where
# it pays (a GPU: 3x and more) is far above
RELOAD_MARGIN = 0.25
# how many questions a drafter's ceiling answers before it is worked out again from the current costs
CEILING_CALLS = 500
# what trying little-known drafts may cost, net, as a fraction of the time spent generating: where a wider
# batch costs nearly its tokens (a CPU), a rejected draft costs almost a whole step, and optimism about
# drafts that turn out wrong must not make speculation slower than plain decoding
EXPLORATION_BUDGET = 0.005


@dataclass
class Plan:
    n_verify: int            # drafted tokens to verify (0: plain decoding)
    expected_rate: float     # expected tokens per second
    plain_rate: float
    explores: bool = False   # verified only thanks to the optimism for little-tried drafts


@dataclass
class Learned:
    """What a controller has learned, to be put back (the bench repeats a generation for timing)."""
    acceptance: dict
    costs: CostModel
    explore_net_s: float
    generating_s: float


class Controller:
    def __init__(self, costs: CostModel, stats: AcceptanceStats, draft_min: int = EngineConfig.draft_min,
                 draft_max: int = EngineConfig.draft_max):
        check_draft_bounds(draft_min, draft_max)
        self.costs, self.stats = costs, stats
        self.draft_min, self.draft_max = draft_min, draft_max
        self._ceilings: dict[tuple, bool] = {}
        self._ceilings_version: tuple = ()
        self._ceiling_calls = 0
        self.explore_net_s = 0.0   # what exploratory drafts cost beyond plain decoding (negative: they won)
        self.generating_s = 0.0    # time of the speculative generation steps so far

    def plain_rate(self) -> float:
        return 1.0 / self.costs.target(1)

    def _allowed(self, n: int) -> range:
        return range(max(self.draft_min, 1), min(n, self.draft_max) + 1)

    def rate_curve(self, probs: list[float], draft_cost_s: float = 0.0) -> list[float]:
        """Expected tokens/s when verifying the first j drafted tokens, for j = 0..len(probs)."""
        rates, expected, alive = [self.plain_rate()], 1.0, 1.0
        for j, q in enumerate(probs, start=1):
            alive *= q
            expected += alive
            rates.append(expected / (self.costs.target(j + 1) + draft_cost_s * j))
        return rates

    def plan(self, lang: str, draft: Draft | None, per_token_cost_s: float = 0.0) -> Plan:
        plain = self.plain_rate()
        if not draft or not draft.tokens or self.draft_max == 0:
            return Plan(0, plain, plain)
        bold = self._plan(lang, draft, per_token_cost_s, explore=True)
        if not bold.n_verify:
            return bold
        sure = self._plan(lang, draft, per_token_cost_s, explore=False)
        if sure.n_verify == bold.n_verify:
            return bold
        if self.explore_net_s > EXPLORATION_BUDGET * self.generating_s:
            return sure     # exploring has cost its share: back when plain steps have earned more
        bold.explores = True
        return bold

    def _plan(self, lang: str, draft: Draft, per_token_cost_s: float, explore: bool) -> Plan:
        plain = self.plain_rate()
        probs = [self.stats.estimate(lang, draft.drafter, b, i, explore)
                 for i, b in enumerate(draft.buckets[:self.draft_max], start=1)]
        rates = self.rate_curve(probs, per_token_cost_s)
        best = max(self._allowed(len(probs)), key=lambda j: rates[j], default=0)
        if best and rates[best] > plain * (1 + MARGIN):
            return Plan(best, rates[best], plain)
        return Plan(0, plain, plain)

    def observe_step(self, seconds: float, plan: Plan | None = None, accepted: int = 0,
                     draft_cost_s: float = 0.0) -> None:
        """A speculative generation step took `seconds`; if it verified an exploratory plan, charge what that
        cost beyond the plain steps that would have produced the same tokens (a credit where it won)."""
        self.generating_s += seconds
        if plan is not None and plan.explores:
            self.explore_net_s += (self.costs.target(plan.n_verify + 1) + draft_cost_s
                                   - (accepted + 1) * self.costs.target(1))

    def learned(self) -> Learned:
        return Learned(self.stats.snapshot(), self.costs.snapshot(), self.explore_net_s, self.generating_s)

    def restore(self, learned: Learned) -> None:
        self.stats.restore(learned.acceptance)
        self.costs.restore(learned.costs)
        self.explore_net_s, self.generating_s = learned.explore_net_s, learned.generating_s

    def may_pay(self, lang: str, drafter: str, buckets: tuple[str, ...]) -> bool:
        """Could any draft of this drafter be worth verifying now? Its best bucket at every position is an
        upper bound on every plan for it; when even that loses, the drafter need not be asked at all (on a
        CPU where a wider batch costs nearly as much as its tokens, asking would be pure overhead). Its
        statistics only change when its drafts are verified, so the answer is kept until they do."""
        if self.draft_max == 0:
            return False
        # the costs' shape drifts slowly with every step measured: look again now and then
        version = (self.stats.version, id(self.costs), self._ceiling_calls // CEILING_CALLS)
        self._ceiling_calls += 1
        if self._ceilings_version != version:
            self._ceilings, self._ceilings_version = {}, version
        key = (lang, drafter, buckets)
        if key not in self._ceilings:
            every = buckets + tuple(b + "+" for b in buckets)   # "+": drafted where the target was sure
            probs = [max(self.stats.estimate(lang, drafter, b, i) for b in every)
                     for i in range(1, self.draft_max + 1)]
            rates = self.rate_curve(probs)
            best = max((rates[j] for j in self._allowed(len(probs))), default=0.0)
            self._ceilings[key] = best > self.plain_rate() * (1 + MARGIN)
        return self._ceilings[key]

    def model_best_rate(self) -> float:
        """The rate the draft model would reach if nearly all its tokens were accepted (0: no draft model)."""
        c = self.costs.draft()
        if c is None or self.draft_max == 0:
            return 0.0
        rates = self.rate_curve([BEST_MODEL_ACCEPTANCE] * self.draft_max, c)
        return max((rates[j] for j in self._allowed(self.draft_max)), default=0.0)

    def model_can_pay(self, than: float | None = None) -> bool:
        """Could the draft model beat `than` (default: plain decoding) even at its best?"""
        return self.model_best_rate() > (than or self.plain_rate()) * (1 + MARGIN)

    def model_worth_loading(self) -> bool:
        """Is an unloaded draft model worth loading again: its best case clearly above plain decoding?"""
        return self.model_best_rate() > self.plain_rate() * (1 + RELOAD_MARGIN)

    def keep_drafting(self, lang: str, draft: Draft) -> bool:
        """After each draft-model token: is one more likely to raise the expected rate?"""
        if len(draft.tokens) >= self.draft_max:
            return False
        c = self.costs.draft() or 0.0
        probs = [self.stats.estimate(lang, draft.drafter, b, i) for i, b in enumerate(draft.buckets, 1)]
        now = self.rate_curve(probs, c)[-1]
        # assume the next token is as likely as the last one
        nxt = self.rate_curve(probs + [probs[-1]], c)[-1]
        return nxt > now or len(draft.tokens) < self.draft_min
