"""The controller's decisions, with a fake cost model and fake acceptance (no models needed)."""
import pytest

from lsp_server.engine.acceptance import AcceptanceStats
from lsp_server.engine.controller import EXPLORATION_BUDGET, Controller
from lsp_server.engine.costs import CostModel
from lsp_server.engine.drafters.base import Draft

# the shapes measured here (CPU: verifying is compute-bound) and typical of a GPU (nearly free)
CPU = CostModel({1: 0.034, 2: 0.054, 4: 0.080, 8: 0.130, 16: 0.231}, draft_token_s=0.022)
GPU = CostModel({1: 0.020, 2: 0.0205, 4: 0.021, 8: 0.022, 16: 0.025}, draft_token_s=0.002)


def draft(n, drafter="ngram", bucket="n4"):
    return Draft(drafter, list(range(100, 100 + n)), [bucket] * n)


def teach(stats, lang, drafter, bucket, accept_rate, n=400, length=8):
    """Feed `n` drafts of `length` tokens accepted token by token with probability accept_rate."""
    import random
    rnd = random.Random(1)
    for _ in range(n):
        k = 0
        while k < length and rnd.random() < accept_rate:
            k += 1
        stats.record(lang, drafter, [bucket] * length, k)


def test_zero_drafts_when_speculation_cannot_pay():
    stats = AcceptanceStats()
    teach(stats, "python", "ngram", "n4", 0.4)
    c = Controller(CPU, stats)
    assert c.plan("python", draft(8)).n_verify == 0


def test_drafts_when_acceptance_is_high_even_on_cpu():
    stats = AcceptanceStats()
    teach(stats, "python", "ngram", "n4", 0.97)
    plan = Controller(CPU, stats).plan("python", draft(12))
    assert plan.n_verify >= 4
    assert plan.expected_rate > plan.plain_rate * 1.2


def test_more_drafts_where_verification_is_cheap():
    stats = AcceptanceStats()
    teach(stats, "python", "ngram", "n4", 0.7)
    cpu = Controller(CPU, stats).plan("python", draft(16)).n_verify
    gpu = Controller(GPU, stats).plan("python", draft(16)).n_verify
    assert gpu > cpu
    assert gpu >= 6


def test_draft_model_is_not_run_where_it_cannot_pay_and_is_where_it_can():
    stats = AcceptanceStats()
    assert not Controller(CPU, stats).model_can_pay()
    assert Controller(GPU, stats).model_can_pay()


def test_adapts_per_language():
    stats = AcceptanceStats()
    teach(stats, "python", "ngram", "n3", 0.95)
    teach(stats, "go", "ngram", "n3", 0.2)
    c = Controller(CPU, stats)
    assert c.plan("python", draft(8, bucket="n3")).n_verify > 0
    assert c.plan("go", draft(8, bucket="n3")).n_verify == 0
    # a language never seen leans on the pooled figure, which sits between the two
    q_new = stats.estimate("rust", "ngram", "n3", 1)
    assert stats.estimate("go", "ngram", "n3", 1) < q_new < stats.estimate("python", "ngram", "n3", 1)


def test_stays_within_draft_bounds():
    stats = AcceptanceStats()
    teach(stats, "python", "ngram", "n4", 0.99)
    assert Controller(GPU, stats, draft_max=3).plan("python", draft(16)).n_verify == 3
    # draft_min 3: a 2-token draft is not verified at all
    assert Controller(GPU, stats, draft_min=3).plan("python", draft(2)).n_verify == 0
    assert Controller(GPU, stats, draft_max=0).plan("python", draft(8)).n_verify == 0
    with pytest.raises(ValueError):
        Controller(GPU, stats, draft_min=5, draft_max=3)


def test_model_drafting_stops_when_confidence_drops():
    stats = AcceptanceStats()
    c = Controller(GPU, stats)
    confident = Draft("model", [1, 2], ["p98", "p98"])
    unsure = Draft("model", [1, 2], ["p98", "p0"])
    assert c.keep_drafting("python", confident)
    assert not c.keep_drafting("python", unsure)


def test_costs_follow_measurements_and_stay_monotone():
    c = CostModel({1: 0.03, 2: 0.05, 4: 0.08})
    for _ in range(50):
        c.observe_target(2, 0.10)     # the machine got slower for 2-token batches
    assert c.target(2) > 0.08
    assert c.target(4) >= c.target(2)  # never cheaper to verify more
    assert c.target(3) >= c.target(2)


def test_a_stale_cost_curve_follows_the_machine():
    # calibrated while the machine was busy: every size looks 3x too slow
    c = CostModel({n: 3 * t for n, t in CPU.batch_s.items()})
    for _ in range(100):
        c.observe_target(1, CPU.batch_s[1])    # only plain steps are observed
    assert c.target(4) < 1.3 * CPU.batch_s[4]  # the untried sizes came down with them
    assert c.target(1) == pytest.approx(CPU.batch_s[1], rel=0.1)


def test_a_slow_minute_does_not_make_an_unloaded_draft_model_look_worth_loading():
    # the calibration's shape here, T(1) 76 ms, a draft token 48 ms: even 95 % accepted drafts would decode at
    # 0.98x plain, so the draft model is unloaded, and its cost is not measured while it is
    costs = CostModel({1: 0.076, 2: 0.118, 4: 0.143, 6: 0.196, 8: 0.241, 12: 0.292, 16: 0.292}, draft_token_s=0.048)
    c = Controller(costs, AcceptanceStats())
    ratio = c.model_best_rate() / c.plain_rate()
    assert not c.model_can_pay()
    for _ in range(40):   # the machine slows (another job): target tokens now take 100 ms
        costs.observe_target(1, 0.100)
    assert costs.target(1) == pytest.approx(0.100, rel=0.03)
    assert costs.draft() == pytest.approx(0.048 * 0.100 / 0.076, rel=0.03)   # the draft's cost moved with it
    assert c.model_best_rate() / c.plain_rate() == pytest.approx(ratio, rel=0.03)   # T(1)'s shape moves a little
    assert not c.model_can_pay()
    # what it read before, the draft's cost left at 48 ms against the slow target: 1.12x, worth loading (and
    # unloaded again once measured: here every 10-20 minutes, 2026-12-04/05)
    stale = Controller(CostModel({n: costs.target(n) for n in costs.batch_s}, draft_token_s=0.048), AcceptanceStats())
    assert stale.model_can_pay()
    # and a best case of 1.12x is not worth loading it again (RELOAD_MARGIN): the batches' costs drift too
    assert not stale.model_worth_loading()
    assert Controller(GPU, AcceptanceStats()).model_worth_loading()
    costs.observe_draft(0.050)   # measured again once loaded: taken in the units of the target's speed now
    assert costs.draft() == pytest.approx(0.9 * 0.048 * 0.100 / 0.076 + 0.1 * 0.050, rel=0.03)


def test_acceptance_persists(tmp_path):
    path = tmp_path / "acc.json"
    s = AcceptanceStats(path)
    teach(s, "python", "ngram", "n4", 0.9, n=50)
    s.save()
    again = AcceptanceStats(path)
    assert again.estimate("python", "ngram", "n4", 1) == pytest.approx(s.estimate("python", "ngram", "n4", 1))
    assert again.summary("python")["ngram"]["tried"] > 0
    path.write_text("{broken")
    assert AcceptanceStats(path).rates == {}


# measured on a 2-core AMD EPYC VM (Zen 4): verifying costs nearly what its tokens would cost one by one
COMPUTE_BOUND = CostModel({1: 0.031, 2: 0.052, 4: 0.091, 8: 0.219, 16: 0.274})


def test_a_drafter_that_cannot_pay_is_not_asked_until_its_statistics_change():
    buckets = ("run", "n2", "n3", "n4")
    stats = AcceptanceStats()
    c = Controller(COMPUTE_BOUND, stats)
    for b in buckets + tuple(b + "+" for b in buckets):   # "+": drafted where the target was sure
        teach(stats, "python", "ngram", b, 0.5, n=100)
    assert not c.may_pay("python", "ngram", buckets)
    # the same statistics on a GPU-like curve: worth asking
    assert Controller(GPU, stats).may_pay("python", "ngram", buckets)
    # one bucket turns out to be nearly always right: the ceiling is recomputed and the drafter asked again
    teach(stats, "python", "ngram", "run", 0.995, n=600, length=16)
    assert c.may_pay("python", "ngram", buckets)
    assert c.plan("python", draft(16, bucket="run")).n_verify >= 8
    assert c.plan("python", draft(16, bucket="n4")).n_verify == 0


def test_a_drafter_with_no_evidence_is_asked_on_the_strength_of_its_priors():
    assert Controller(COMPUTE_BOUND, AcceptanceStats()).may_pay("go", "template", ("t-sub", "t-same", "t-next"))
    assert not Controller(COMPUTE_BOUND, AcceptanceStats(), draft_max=0).may_pay("go", "template", ("t-sub",))


def test_exploring_little_tried_drafts_costs_at_most_its_budget():
    c = Controller(COMPUTE_BOUND, AcceptanceStats())
    d = draft(4, drafter="template", bucket="t-sub")
    first = c.plan("python", d)
    assert first.n_verify > 0 and first.explores     # nothing known yet: optimism tries it
    c.observe_step(COMPUTE_BOUND.target(first.n_verify + 1), first, accepted=0)   # and it was wrong
    assert c.explore_net_s > 0
    assert c.plan("python", d).n_verify == 0         # exploring has spent its share
    # plain steps earn it back: exploring may cost EXPLORATION_BUDGET of the time spent generating
    steps = 0
    while not c.plan("python", d).explores:
        c.observe_step(COMPUTE_BOUND.target(1))
        steps += 1
    assert c.explore_net_s <= EXPLORATION_BUDGET * c.generating_s
    assert steps * COMPUTE_BOUND.target(1) * EXPLORATION_BUDGET == pytest.approx(c.explore_net_s, rel=0.05)
    # an exploratory draft that was right is a credit
    again = c.plan("python", d)
    c.observe_step(COMPUTE_BOUND.target(again.n_verify + 1), again, accepted=again.n_verify)
    assert c.explore_net_s < 0.5 * EXPLORATION_BUDGET * c.generating_s
    # a draft that pays on what is known is never held back by the budget
    stats = AcceptanceStats()
    teach(stats, "python", "ngram", "n4", 0.97)
    sure = Controller(COMPUTE_BOUND, stats)
    sure.explore_net_s = 1.0
    plan = sure.plan("python", draft(8))
    assert plan.n_verify > 0 and not plan.explores


def test_what_was_learned_can_be_put_back():
    stats = AcceptanceStats()
    c = Controller(CostModel(dict(CPU.batch_s)), stats)
    teach(stats, "python", "ngram", "n4", 0.9, n=50)
    before = c.learned()
    kept = dict(before.acceptance)
    q, t4 = stats.estimate("python", "ngram", "n4", 1), c.costs.target(4)
    teach(stats, "python", "ngram", "n4", 0.1, n=50)
    c.costs.observe_target(4, 1.0)
    c.observe_step(0.5)
    c.restore(before)
    assert stats.estimate("python", "ngram", "n4", 1) == q
    assert c.costs.target(4) == t4 and c.generating_s == 0.0
    teach(stats, "python", "ngram", "n4", 0.1, n=5)   # learning on does not change what was kept
    assert before.acceptance == kept and stats.estimate("python", "ngram", "n4", 1) < q
