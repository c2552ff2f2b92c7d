"""lossless_fabrics: credits and PFC drop nothing, Ethernet without them drops; victims pay."""

import lossless_fabrics as claim
import pytest


@pytest.fixture(scope="module")
def n() -> claim.Numbers:
    return claim.numbers()


def test_lossless_fabrics_drop_nothing_and_finish_near_ideal(n: claim.Numbers) -> None:
    for fab in ("ib", "roce"):
        assert n.runs[fab].counters["drop_packets"] == 0
        assert "lossless fabric dropped nothing" in n.runs[fab].invariants
    # IB headers are smaller than RoCE's: it may finish a little under the RoCE ideal
    assert n.incast_time("ib") == pytest.approx(n.ideal, rel=0.03)
    assert n.runs["roce"].counters["pause_frames"] > 0


def test_ethernet_without_flow_control_drops(n: claim.Numbers) -> None:
    for fab in ("roce-nopfc", "lossy"):
        assert n.runs[fab].counters["drop_packets"] > 0
        assert n.runs[fab].counters["retransmitted"] > 0
    assert n.incast_time("roce-nopfc") > n.ideal


def test_back_pressure_slows_a_victim_flow(n: claim.Numbers) -> None:
    assert n.victim_slowdown("ib") > 2.0
    assert n.victim_slowdown("roce") > 1.2
    assert n.victim_slowdown("uec") < n.victim_slowdown("roce")
    assert n.holds


def test_main(n: claim.Numbers, capsys: pytest.CaptureFixture[str]) -> None:
    claim.main(n)
    assert "verdict:  HOLDS" in capsys.readouterr().out
