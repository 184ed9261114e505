"""How the bench turns noisy passes into a figure (control logic: made-up step timings, no models)."""
import random

import pytest

from lsp_server.bench.run import aa_noise, typical_times
from lsp_server.engine.speculative import Generation


def gen(kinds: list[str], seconds: list[float]) -> Generation:
    return Generation("x", list(range(len(kinds))), "length", 10, 10, 0.0, sum(seconds), len(kinds),
                      step_s=seconds, step_kind=kinds)


def noisy(rnd: random.Random, cost: float) -> float:
    # this host: most steps a little slow, some bursts much slower
    return cost * (1 + rnd.uniform(0, 0.25) + (rnd.random() < 0.1) * rnd.uniform(0.3, 1.0))


def passes(rnd, kinds, costs, n=3):
    return [gen(kinds, [noisy(rnd, costs[k]) for k in kinds]) for _ in range(n)]


def test_the_same_steps_read_the_same_on_both_paths_through_the_noise():
    costs = {"1": 0.035, "end": 0.0001}
    rnd = random.Random(3)
    prompts = [["1"] * rnd.randint(20, 64) + ["end"] for _ in range(9)]
    plain = typical_times([passes(rnd, k, costs) for k in prompts])
    tandem = typical_times([passes(rnd, k, costs) for k in prompts])
    assert sum(plain) / sum(tandem) == pytest.approx(1.0, abs=0.01)
    # the fastest pass of each prompt, the figure before, reads with the noise of a few passes
    whole = [[sum(noisy(rnd, costs[k]) for k in kinds) for _ in range(3)] for kinds in prompts]
    again = [[sum(noisy(rnd, costs[k]) for k in kinds) for _ in range(3)] for kinds in prompts]
    assert abs(sum(map(min, whole)) / sum(map(min, again)) - 1) > abs(sum(plain) / sum(tandem) - 1)


def test_drafted_steps_count_at_their_own_cost():
    costs = {"1": 0.035, "template:2": 0.065, "end": 0.0001}
    rnd = random.Random(5)
    plain_kinds = ["1"] * 30 + ["end"]
    # the same 30 tokens where 5 steps each verified 2 template tokens of which 1 was right: 25 steps
    tandem_kinds = ["1"] * 20 + ["template:2"] * 5 + ["end"]
    plain = typical_times([passes(rnd, plain_kinds, costs, 9)])[0]
    tandem = typical_times([passes(rnd, tandem_kinds, costs, 9)])[0]
    expected = (20 * 0.035 + 5 * 0.065) / (30 * 0.035)
    assert tandem / plain == pytest.approx(expected, rel=0.03)


def test_passes_without_step_timings_count_whole():
    g = [Generation("x", [1, 2], "length", 1, 0, 0.0, s, 2) for s in (0.3, 0.2, 0.25)]
    assert typical_times([g]) == [0.2]


def test_the_a_a_check_shows_what_the_noise_leaves():
    costs = {"1": 0.035, "end": 0.0001}
    rnd = random.Random(7)
    prompts = [["1"] * 40 + ["end"] for _ in range(9)]
    quiet = aa_noise([passes(rnd, k, costs) for k in prompts])
    assert 0 <= quiet < 0.02
    # a load that slowed half of the passes by 20 % (those dealt to one half): the halves tell it
    loaded = [[gen(g.step_kind, [x * (1.2 if (n + i) % 2 else 1.0) for x in g.step_s]) for i, g in enumerate(gens)]
              for n, gens in enumerate(passes(rnd, k, costs, 4) for k in prompts)]
    assert aa_noise(loaded) > 0.1
    assert aa_noise([passes(rnd, k, costs, 1) for k in prompts]) is None
