"""Stragglers: extreme-value closed forms, order statistics vs direct draws, determinism."""

from __future__ import annotations

import doctest
import math

import numpy as np
import pytest

from commwall.faults import FaultError, stragglers
from commwall.faults.stragglers import (
    CollectiveLoad,
    StepProfile,
    Variability,
    expected_max_normal,
    simulate_stragglers,
    straggler_scaling,
    sync_pattern,
    sync_steps,
)


@pytest.mark.parametrize("n", [1000, 4096, 16384, 100_000])
def test_mean_of_max_matches_extreme_value_approximation(n: int) -> None:
    mu, cv = 2.0, 0.05
    r = simulate_stragglers(StepProfile(mu, n), Variability(jitter=cv), steps=20_000, seed=3)
    approx = expected_max_normal(n, mu, mu * cv)
    extra, approx_extra = r.step_time.mean - mu, approx - mu
    assert extra == pytest.approx(approx_extra, rel=0.05)  # the excess over μ, not just μ
    lo, hi = r.step_time.mean_ci
    assert lo < r.step_time.mean < hi


def test_order_statistics_match_direct_draws() -> None:
    p = StepProfile(1.0, 2048)
    for v in (
        Variability(jitter=0.03),
        Variability(jitter=0.03, distribution="lognormal"),
        Variability(jitter=0.02, slow_ranks=3, slowdown=1.05),
        Variability(distribution="empirical", empirical=(0.9, 1.0, 1.0, 1.1, 1.3)),
    ):
        a = simulate_stragglers(p, v, steps=4000, seed=1, method="order", contributions=False)
        b = simulate_stragglers(p, v, steps=4000, seed=2, method="direct", contributions=False)
        se = math.hypot(a.step_time.std, b.step_time.std) / math.sqrt(4000)
        assert abs(a.step_time.mean - b.step_time.mean) < 5 * se + 1e-12, v
        assert a.step_time.quantile(0.99) == pytest.approx(b.step_time.quantile(0.99), rel=0.01)


def test_empirical_max_is_the_largest_sample() -> None:
    v = Variability(distribution="empirical", empirical=(1.0, 2.0, 3.0, 6.0))
    r = simulate_stragglers(StepProfile(1.0, 10_000), v, steps=500, seed=0, method="direct")
    assert r.step_time.minimum == pytest.approx(6.0 / 3.0)  # rescaled to mean 1: 6 / 3


def test_one_slow_rank_sets_the_pace() -> None:
    v = Variability(slow_ranks=1, slowdown=1.25)
    r = simulate_stragglers(StepProfile(4.0, 16384, fixed=1.0), v, steps=100, seed=0)
    assert r.step_time.minimum == r.step_time.maximum == pytest.approx(4.0 * 1.25 + 1.0)
    # 16,383 ranks wait 1 s for the one slow rank: the mean rank waits ~(5 − 4.00006) s
    assert r.compute_wait == pytest.approx(1.0 - 1.0 / 16384, rel=1e-9)


def test_os_noise_mean_and_direct_method() -> None:
    v = Variability(os_noise_rate=100.0, os_noise_duration=1e-3)
    r = simulate_stragglers(StepProfile(1.0, 256), v, steps=400, seed=0)
    assert r.method == "direct"
    # each rank sees Poisson(100) interruptions of 1 ms: the max over 256 of Poisson(100) is
    # about 100 + 2.9·10 (normal approximation of its upper quantile)
    assert 1.12 < r.step_time.mean < 1.14
    with pytest.raises(FaultError, match="method"):
        simulate_stragglers(StepProfile(1.0, 8), v, method="order")


def test_no_variability_is_the_ideal_step() -> None:
    r = simulate_stragglers(StepProfile(1.5, 1024, fixed=0.5), Variability(), steps=10)
    assert r.step_time.std == 0 and r.step_time.mean == 2.0 and r.slowdown.mean == 1.0
    assert r.waiting_share == 0.0


def test_global_step_waits_for_the_slowest_message() -> None:
    theta, p = 2e-6, 64
    load = CollectiveLoad("a2a", p, 1, 1, "global")
    v = Variability(message_tail=theta)
    r = simulate_stragglers(StepProfile(0.0, p, collectives=(load,)), v, steps=20_000, seed=0)
    harmonic = sum(1 / i for i in range(1, p + 1))  # E[max of p exponentials] = θ·H_p
    assert r.network_tail == pytest.approx(theta * harmonic, rel=0.03)


def test_ring_tail_grows_linearly_in_steps_not_with_log_p() -> None:
    v = Variability(message_tail=1e-6)
    per_step = []
    for p in (64, 512):
        load = CollectiveLoad("ring", p, 1, 2 * (p - 1), "ring")
        r = simulate_stragglers(StepProfile(0.0, p, collectives=(load,)), v, steps=2000)
        per_step.append(r.network_tail / (2 * (p - 1)))
    # each step waits only for its neighbour: between 1 and ~H_2-ish x θ per step, flat in p
    assert all(1e-6 < x < 3e-6 for x in per_step)
    assert per_step[1] == pytest.approx(per_step[0], rel=0.1)


def test_tree_tail_is_the_longest_leaf_root_path() -> None:
    v = Variability(message_tail=1e-6)
    load = CollectiveLoad("tree", 2, 1, 2, "tree")  # a leaf pair under one root, up and down
    r = simulate_stragglers(StepProfile(0.0, 2, collectives=(load,)), v, steps=20_000)
    # up: the slower of 2 leaf messages, then the root's own message: θ·H_2 + θ;
    # down: a message to each leaf, the call ends with the slower: θ·H_2. E = 4θ
    assert r.network_tail == pytest.approx(4e-6, rel=0.03)


def test_straggler_amplification_grows_with_scale() -> None:
    prof = StepProfile(1.0, 1024)
    res = straggler_scaling(prof, Variability(jitter=0.02), (1024, 16384, 131072), steps=4000)
    means = [r.step_time.mean for r in res]
    assert means[0] < means[1] < means[2]
    for r in res:
        assert r.step_time.mean - 1 == pytest.approx(
            expected_max_normal(r.n_ranks, 1.0, 0.02) - 1, rel=0.05
        )


def test_same_seed_same_result() -> None:
    v = Variability(jitter=0.02, message_tail=1e-6, slow_ranks=1, slowdown=1.01)
    prof = StepProfile(1.0, 4096, 0.1, (CollectiveLoad("dp", 4096, 2, 30, "tree"),))
    a = simulate_stragglers(prof, v, steps=500, seed=7).to_dict()
    b = simulate_stragglers(prof, v, steps=500, seed=7).to_dict()
    c = simulate_stragglers(prof, v, steps=500, seed=8).to_dict()
    assert a == b and a != c


def test_sync_steps_and_patterns() -> None:
    assert sync_steps("all_reduce", "ring", 8) == 14
    assert sync_steps("all_gather", "ring", 8) == 7
    assert sync_steps("all_reduce", "tree", 1024) == 20
    assert sync_steps("all_reduce", "nvls", 8) == 2
    assert sync_steps("alltoall", "direct", 64) == 1
    assert sync_steps("all_reduce", "ring", 1) == 0
    assert sync_pattern("ring") == "ring" and sync_pattern("pat") == "tree"
    assert sync_pattern("nvls") == "global"


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"jitter": -0.1}, "jitter"),
        ({"distribution": "cauchy"}, "distribution"),
        ({"distribution": "empirical"}, "empirical"),
        ({"slow_ranks": -1}, "slow_ranks"),
        ({"slowdown": 0.5}, "slowdown"),
        ({"message_tail": float("nan")}, "message_tail"),
    ],
)
def test_bad_variability_names_the_field(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(FaultError, match=field):
        Variability(**kwargs)  # type: ignore[arg-type]


def test_bad_profile_names_the_field() -> None:
    with pytest.raises(FaultError, match="n_ranks"):
        simulate_stragglers(StepProfile(1.0, 0), Variability())
    with pytest.raises(FaultError, match="steps"):
        simulate_stragglers(StepProfile(1.0, 8), Variability(), steps=1)
    with pytest.raises(FaultError, match="compute"):
        simulate_stragglers(StepProfile(-1.0, 8), Variability())


def test_profile_from_the_default_scenario() -> None:
    from commwall.defaults import default_scenario
    from commwall.workload.simulate import simulate

    report = simulate(default_scenario())
    prof = stragglers.profile_from_report(report)
    assert prof.n_ranks == report.n_gpus
    assert prof.ideal == pytest.approx(report.step_time)
    assert {c.name for c in prof.collectives} >= {"TP all-gather", "TP reduce-scatter"}
    tp = next(c for c in prof.collectives if c.name == "TP all-gather")
    assert tp.ranks == 8 and tp.pattern == "ring" and tp.steps_per_call == 7
    r = simulate_stragglers(prof, Variability(jitter=0.01, message_tail=1e-6), steps=200)
    assert r.step_time.mean > report.step_time


def test_doctests() -> None:
    assert doctest.testmod(stragglers).failed == 0
    from commwall.faults import stats

    assert doctest.testmod(stats).failed == 0


def test_summary_interval_covers_the_true_quantile() -> None:
    from commwall.faults.stats import summarize

    rng = np.random.default_rng(0)
    hits = 0
    for _ in range(200):
        s = summarize(rng.standard_normal(400))
        lo, hi = s.quantile_interval(0.5)
        hits += lo <= 0.0 <= hi
    assert hits >= 180  # a 95% interval covers the true median ~190 times in 200


def test_poisson_by_inverse_cdf_has_poisson_moments() -> None:
    from commwall.faults.stragglers import _poisson

    for mean in (0.05, 3.0, 40.0):
        x = _poisson(np.random.default_rng(0), mean, (200_000,))
        assert x.mean() == pytest.approx(mean, rel=0.02)
        assert x.var() == pytest.approx(mean, rel=0.03)
        assert x.min() >= 0 and np.all(x == np.round(x))
