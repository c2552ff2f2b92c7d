"""optical_bit_errors: escaped link corruptions are rare with KP4; marginal links get flagged."""

import math

import optical_bit_errors as claim
import pytest


@pytest.fixture(scope="module")
def n() -> claim.Numbers:
    return claim.numbers()


def test_p_any_follows_the_poisson_law(n: claim.Numbers) -> None:
    for r in (n.healthy, n.marginal):
        lam = r.corruption_rate.mean
        # P(≥1) = 1 − exp(−λT) per draw; the mean of P is at most 1 − exp(−E[λ]T) (Jensen)
        assert r.p_any_in_run.mean <= 1 - math.exp(-lam * claim.RUN_DAYS * 86400) + 1e-12
        assert r.per_run.mean == pytest.approx(lam * claim.RUN_DAYS * 86400, rel=1e-6)


def test_worse_links_corrupt_more_and_get_flagged(n: claim.Numbers) -> None:
    assert n.marginal.corruption_rate.mean > 100 * n.healthy.corruption_rate.mean
    assert n.marginal.flagged["all"].mean > n.healthy.flagged["all"].mean
    assert n.healthy.p_any_in_run.mean < 1e-3


def test_verdict(n: claim.Numbers, capsys: pytest.CaptureFixture[str]) -> None:
    assert not n.holds and n.sdc_events == 6
    claim.main()
    assert "verdict:  DOES NOT HOLD" in capsys.readouterr().out
