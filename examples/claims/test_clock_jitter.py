"""clock_jitter: nanoseconds of clock offset cost a training step next to nothing."""

import clock_jitter as claim
import pytest


@pytest.fixture(scope="module")
def n() -> claim.Numbers:
    return claim.numbers()


def test_few_ns_is_negligible(n: claim.Numbers) -> None:
    assert 0 < n.extra_few_ns < 1e-3 * n.step
    assert not n.holds


def test_jitter_cost_grows_with_sigma_and_stays_below_the_tail(n: claim.Numbers) -> None:
    # the slowest of m normal offsets scales with σ: 20x the σ, about 20x the cost
    assert n.extra_hundred_ns == pytest.approx(20 * n.extra_few_ns, rel=0.25)
    assert n.extra_tail > 10 * n.extra_hundred_ns


def test_ack_timeout_closed_form(n: claim.Numbers) -> None:
    assert n.ack_timeout == pytest.approx(4.096e-6 * 2**18)
    assert n.ack_timeout > 1.0  # seconds: nine orders of magnitude above a few ns


def test_main_prints_the_verdict(capsys: pytest.CaptureFixture[str]) -> None:
    claim.main()
    out = capsys.readouterr().out
    assert "verdict:  DOES NOT HOLD" in out
