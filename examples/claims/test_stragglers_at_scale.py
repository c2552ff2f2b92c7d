"""stragglers_at_scale: the step runs at its slowest rank; an all-wait step at its slowest packet."""

import math

import pytest
import stragglers_at_scale as claim

from commwall.faults.stragglers import expected_max_normal


@pytest.fixture(scope="module")
def n() -> claim.Numbers:
    return claim.numbers()


def test_slowest_rank_follows_the_extreme_value_law(n: claim.Numbers) -> None:
    for scale, r in zip(claim.SCALES, n.jitter_scaling, strict=True):
        expected = expected_max_normal(scale, n.compute, claim.JITTER * n.compute)
        if scale == 1:
            assert r.step_time.mean == pytest.approx(n.compute, rel=1e-3)
        else:
            assert r.step_time.mean - n.compute == pytest.approx(expected - n.compute, rel=0.05)


def test_one_slow_gpu_slows_everyone(n: claim.Numbers) -> None:
    assert n.one_slow.step_time.mean == pytest.approx(claim.SLOWDOWN * n.compute, rel=1e-12)


def test_all_wait_step_waits_for_the_slowest_packet(n: claim.Numbers) -> None:
    for scale, t in zip(claim.SCALES, n.global_tail, strict=True):
        harmonic = sum(1 / i for i in range(1, scale + 1))  # E[max of N exponentials] = θ·H_N
        assert t == pytest.approx(claim.TAIL * harmonic, rel=0.03)
    assert n.slowest_packet_factor == pytest.approx(math.log(16384) + 0.5772, rel=0.03)


def test_ring_steps_do_not_amplify_with_scale(n: claim.Numbers) -> None:
    small, large = n.ring_tail_per_step
    assert small == pytest.approx(large, rel=0.1)
    assert claim.TAIL < large < 3 * claim.TAIL


def test_combined_step_and_verdict(n: claim.Numbers) -> None:
    c = n.combined
    assert c.n_ranks == 16384
    assert c.step_time.mean > c.ideal + (claim.SLOWDOWN - 1) * n.compute
    assert 0 < c.waiting_share < 0.5
    assert n.holds


def test_main_prints_the_verdict(capsys: pytest.CaptureFixture[str]) -> None:
    claim.main()
    out = capsys.readouterr().out
    assert "verdict:  HOLDS" in out and "straggler amplification" in out
