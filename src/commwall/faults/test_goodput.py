"""Goodput: the failure model reproduces its record, Young/Daly, Monte Carlo vs closed form."""

from __future__ import annotations

import doctest
import itertools
import math

import numpy as np
import pytest
from scipy import optimize  # type: ignore[import-untyped]

from commwall.faults import FaultError, goodput
from commwall.faults.goodput import (
    JobSize,
    RunPlan,
    daly_interval,
    expected_wall_time,
    goodput_study,
    load_failure_model,
    simulate_run,
    young_interval,
)
from commwall.faults.stats import poisson_rate_interval

HOUR = 3600.0


def test_model_reproduces_the_llama3_record() -> None:
    m = load_failure_model()
    assert sum(c.events for c in m.categories) == 419
    job = JobSize(16384)
    assert job.count("host") == 2048 and job.count("nic") == 16384
    assert m.rate_per_hour(job) * 1296 == pytest.approx(419)
    assert m.mtbf_hours(job) == pytest.approx(1296 / 419)
    gpu_share = m.rates_per_hour(job)["gpu"] / m.rate_per_hour(job)
    assert gpu_share == pytest.approx(262 / 419)


def test_interruption_rate_is_linear_in_the_job() -> None:
    m = load_failure_model()
    assert m.rate_per_hour(JobSize(32768)) == pytest.approx(2 * m.rate_per_hour(JobSize(16384)))
    assert m.with_scale(0.5).rate_per_hour(JobSize(8)) == pytest.approx(
        0.5 * m.rate_per_hour(JobSize(8))
    )


def test_rate_uncertainty_matches_garwood() -> None:
    m = load_failure_model()
    job = JobSize(16384)
    draws = m.sample_rates(job, np.random.default_rng(0), 200_000) * 1296
    lo, hi = poisson_rate_interval(419, 1.0)
    # the per-category posteriors add up to about the interval of the total count
    assert np.quantile(draws, 0.025) == pytest.approx(lo, rel=0.02)
    assert np.quantile(draws, 0.975) == pytest.approx(hi, rel=0.02)


def test_young_and_daly_intervals() -> None:
    d, m = 60.0, 3 * HOUR
    assert young_interval(d, m) == pytest.approx(math.sqrt(2 * d * m))
    # Daly's optimum is close to the numerical minimiser of his expected wall time
    best = optimize.minimize_scalar(
        lambda t: expected_wall_time(1e6, t, d, 600.0, m), bounds=(10, m), method="bounded"
    ).x
    assert daly_interval(d, m) == pytest.approx(best, rel=0.02)
    # ... and tends to Young's when the checkpoint is cheap
    assert daly_interval(1.0, 1e6) == pytest.approx(young_interval(1.0, 1e6), rel=1e-3)
    assert daly_interval(10.0, 4.0) == 4.0  # δ >= 2M: checkpoint every M


def test_expected_wall_time_limits() -> None:
    assert expected_wall_time(100.0, 10.0, 1.0, 5.0, math.inf) == pytest.approx(110.0)
    # rare failures: first order T_s(1 + δ/τ) + failures × (τ/2 + R)
    ts, tau, d, r, m = 1e5, 100.0, 1.0, 10.0, 1e9
    first = ts * (1 + d / tau) + ts / m * ((tau + d) / 2 + r)
    assert expected_wall_time(ts, tau, d, r, m) == pytest.approx(first, rel=1e-6)


def test_monte_carlo_mean_matches_daly() -> None:
    ts, tau, d, r, m = 20 * 86400.0, 1200.0, 60.0, 600.0, 3 * HOUR
    wall, fails = simulate_run(ts, tau, d, r, np.full(4000, 1 / m), seed=1)
    expected = expected_wall_time(ts, tau, d, r, m)
    se = wall.std() / math.sqrt(len(wall))
    assert abs(wall.mean() - expected) < 4 * se
    assert fails.mean() == pytest.approx(expected / m, rel=0.03)  # failures ≈ λ·T_w
    assert np.all(wall >= ts * (1 + d / tau) - 1e-6)


def test_goodput_falls_as_the_job_grows() -> None:
    plan = RunPlan(solve=30 * 86400.0, checkpoint=60.0, restart=600.0)
    r = goodput_study(JobSize(1024), plan, samples=200, scales=(1024, 8192, 65536, 262144))
    g = [row["goodput"] for row in r.scaling]
    assert all(a > b for a, b in itertools.pairwise(g))
    # each row equals Daly's closed form at that size
    m = load_failure_model()
    for row in r.scaling:
        mtbf = m.mtbf_hours(JobSize(int(row["gpus"]))) * HOUR
        tau = daly_interval(60.0, mtbf)
        assert row["goodput"] == pytest.approx(
            plan.solve / expected_wall_time(plan.solve, tau, 60.0, 600.0, mtbf)
        )


def test_study_at_llama3_scale() -> None:
    plan = RunPlan(solve=50 * 86400.0, checkpoint=60.0, restart=600.0)
    r = goodput_study(JobSize(16384), plan, samples=2000, seed=3)
    assert r.mtbf_hours == pytest.approx(1296 / 419)
    lo, hi = r.mtbf_hours_ci
    assert lo < r.mtbf_hours < hi
    assert r.interval == pytest.approx(r.daly)
    assert r.goodput.mean == pytest.approx(r.goodput_expected, rel=0.01)
    assert r.wall_days.mean > 50.0
    assert r.interruptions.mean == pytest.approx(r.wall_days.mean * 24 / r.mtbf_hours, rel=0.05)


def test_same_seed_same_result() -> None:
    plan = RunPlan(solve=5 * 86400.0)
    a = goodput_study(JobSize(4096), plan, samples=100, seed=5).to_dict()
    b = goodput_study(JobSize(4096), plan, samples=100, seed=5).to_dict()
    c = goodput_study(JobSize(4096), plan, samples=100, seed=6).to_dict()
    assert a == b and a != c


def test_bad_input_names_the_field() -> None:
    with pytest.raises(FaultError, match="gpus"):
        JobSize(0)
    with pytest.raises(FaultError, match="checkpoint"):
        RunPlan(solve=1.0, checkpoint=-1.0)
    with pytest.raises(FaultError, match="samples"):
        goodput_study(JobSize(8), RunPlan(solve=10.0), samples=1)
    with pytest.raises(FaultError, match="cannot make progress"):
        simulate_run(1e6, 1e5, 0.0, 0.0, np.array([1e-3]))
    with pytest.raises(FaultError, match="failure_scale"):
        load_failure_model().with_scale(0)


def test_doctests() -> None:
    assert doctest.testmod(goodput).failed == 0
