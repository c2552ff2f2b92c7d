"""adaptive_routing: per-packet adaptive routing cuts the tail ECMP collisions cause."""

import adaptive_routing as claim
import pytest


@pytest.fixture(scope="module")
def n() -> claim.Numbers:
    return claim.numbers()


def test_ecmp_collisions_stretch_the_tail(n: claim.Numbers) -> None:
    assert n.tail("ecmp") > 2.0
    # both engines see the collisions ECMP makes (same hash, same routes)
    assert n.packet["ecmp"].makespan >= n.flow["ecmp"].makespan


def test_adaptive_routing_routes_around_hotspots(n: claim.Numbers) -> None:
    assert n.tail("adaptive") < 0.5 * n.tail("ecmp")
    assert n.tail("spray") < n.tail("ecmp")
    for r in claim.ROUTINGS:
        assert n.packet[r].counters["drop_packets"] == 0  # credits: lossless whatever the route
        assert float(n.packet[r].fct.min()) >= n.ideal
    assert n.holds


def test_main(n: claim.Numbers, capsys: pytest.CaptureFixture[str]) -> None:
    claim.main(n)
    assert "verdict:  HOLDS" in capsys.readouterr().out
