"""incast_storm: lossy fabrics drop and wait on timeouts; lossless ones do not."""

import incast_storm as claim
import pytest


@pytest.fixture(scope="module")
def n() -> claim.Numbers:
    return claim.numbers()


def test_lossless_fabrics_drop_nothing_and_finish_near_ideal(n: claim.Numbers) -> None:
    ideal = claim.SENDERS * claim.SIZE / claim.RATE
    for name in ("roce", "ib"):
        r = n.results[name]
        assert r.dropped.maximum == 0 and r.p_any_drop == 0
        assert r.completion.quantile(0.5) == pytest.approx(ideal, rel=0.05)


def test_lossy_fabric_drops_and_waits_for_timeouts(n: claim.Numbers) -> None:
    r = n.results["lossy"]
    assert r.p_any_drop == 1.0 and r.dropped.mean > 0
    assert r.completion.quantile(0.5) >= r.config.rto  # at least one RTO
    assert n.holds


def test_every_completion_is_at_least_ideal(n: claim.Numbers) -> None:
    for r in n.results.values():
        assert r.completion.minimum >= r.config.ideal * (1 - 1e-9)


def test_main(n: claim.Numbers, capsys: pytest.CaptureFixture[str]) -> None:
    claim.main(n)
    assert "verdict:  HOLDS" in capsys.readouterr().out
