"""Plain traffic on the flow engine against known results: balls into bins, spraying, Kim et al."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from commwall.engines.flow.traffic import pattern_flows, read_matrix, run_traffic
from commwall.routing import RoutingPolicy
from commwall.topology import dragonfly, fat_tree, leaf_spine

RATE = 12.5e9  # 100 Gb/s


def test_patterns() -> None:
    src, dst = pattern_flows("permutation", 64, seed=3)
    assert sorted(dst.tolist()) == list(range(64)) and not np.any(src == dst)
    src, dst = pattern_flows("incast", 64, senders=10, seed=3)
    assert len(src) == 10 and set(dst.tolist()) == {0} and 0 not in src
    src, dst = pattern_flows("alltoall", 5)
    assert len(src) == 20 and not np.any(src == dst)
    for bad, kwargs in (("wave", {}), ("incast", {"senders": 64})):
        with pytest.raises(ValueError, match=r"pattern=|senders="):
            pattern_flows(bad, 64, **kwargs)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="flows"):
        pattern_flows("alltoall", 5000)


def test_single_flow_closed_form() -> None:
    """One flow: bytes / rate + cable propagation + one switch latency per switch crossed."""
    t = leaf_spine(4, 8, link_rate=RATE, switch_latency=600e-9)
    r = run_traffic(t, np.array([0]), np.array([7]), 2e6, "ecmp")  # other leaf: 3 switches
    cables = float(t.link_latency[t.path_links(0, 7, 0)].sum())
    assert len(t.path_links(0, 7, 0)) == 4
    assert r.fct[0] == pytest.approx(2e6 / RATE + 3 * 600e-9 + cables, rel=1e-9)


def test_incast_shares_the_receivers_link() -> None:
    t = leaf_spine(16, link_rate=RATE)
    src, dst = pattern_flows("incast", len(t.endpoints()), senders=16)
    r = run_traffic(t, src, dst, 1e6, "spray")
    assert r.fct.min() == pytest.approx(16 * 1e6 / RATE, rel=0.01)  # processor sharing
    assert r.throughput_at_start == pytest.approx(RATE)


def test_ecmp_permutation_loses_what_balls_into_bins_predicts() -> None:
    """Radix-64 leaf–spine, random permutations: each leaf hashes its ~32 leaving flows onto 32
    uplinks, so on average only 1 − (1 − 1/32)^32 = 63.4% of the uplinks carry anything and
    throughput cannot exceed that; with down-side collisions too it lands near half (Al-Fares
    et al. 2008 §2.3, Hedera NSDI 2010). Spraying restores a non-blocking fabric's 100%;
    adaptive routing (least-loaded uplink) sits in between."""
    t = leaf_spine(64, link_rate=RATE)
    n = 32
    bound = 1 - (1 - 1 / n) ** n
    ecmp, adaptive = [], []
    for seed in range(4):
        src, dst = pattern_flows("permutation", len(t.endpoints()), seed=seed)
        ecmp.append(run_traffic(t, src, dst, 2e6, "ecmp", seed=seed).throughput_ratio)
        adaptive.append(run_traffic(t, src, dst, 2e6, "adaptive", seed=seed).throughput_ratio)
        spray = run_traffic(t, src, dst, 2e6, "spray", seed=seed)
        assert spray.throughput_ratio == pytest.approx(1.0)
        assert spray.makespan == pytest.approx(2e6 / RATE, rel=0.01)
    assert 0.45 < np.mean(ecmp) < bound
    assert np.mean(adaptive) > np.mean(ecmp) + 0.1


def test_more_queue_pairs_smooth_ecmp() -> None:
    """Meta's QP scaling: 8 hashed sub-flows per connection average out collisions."""
    t = leaf_spine(64, link_rate=RATE)
    src, dst = pattern_flows("permutation", len(t.endpoints()), seed=0)
    one = run_traffic(t, src, dst, 2e6, RoutingPolicy("ecmp", qps=1))
    eight = run_traffic(t, src, dst, 2e6, RoutingPolicy("ecmp", qps=8))
    assert eight.throughput_ratio > one.throughput_ratio + 0.1
    assert eight.makespan < 0.8 * one.makespan


def test_hash_polarization_costs_throughput_on_three_tiers() -> None:
    t = fat_tree(16, 3, link_rate=RATE)
    src, dst = pattern_flows("permutation", len(t.endpoints()), seed=0)
    salted = run_traffic(t, src, dst, 2e6, RoutingPolicy("ecmp"))
    polarized = run_traffic(t, src, dst, 2e6, RoutingPolicy("ecmp", polarized=True))
    assert polarized.throughput_ratio < salted.throughput_ratio - 0.05


def test_cells_pay_their_header_tax_without_fabric_speedup() -> None:
    t = leaf_spine(64, link_rate=RATE)
    src, dst = pattern_flows("permutation", len(t.endpoints()), seed=0)
    cells = run_traffic(t, src, dst, 2e6, "cells")
    policy = RoutingPolicy("cells")
    spray = run_traffic(t, src, dst, 2e6, "spray")
    # switch-to-switch links carry cells (256 B payload in 273 B), hosts' links plain packets:
    # without fabric speed-up, flows that leave their leaf get the cell efficiency of a link
    assert policy.cell_efficiency < cells.throughput_ratio < 0.99
    assert spray.throughput_ratio == pytest.approx(1.0)
    assert cells.fct.max() > spray.fct.max() + policy.cell_reassembly_latency


def _dragonfly_patterns(a: int, p: int) -> tuple[object, dict[str, tuple[np.ndarray, np.ndarray]]]:
    t = dragonfly(a, p, p, link_rate=RATE)
    n = len(t.endpoints())
    hosts = a * p
    groups = n // hosts
    uniform = pattern_flows("alltoall", n)  # the fluid form of uniform random traffic
    s = np.repeat(np.arange(n), hosts)
    d = ((s // hosts + 1) % groups) * hosts + np.tile(np.arange(hosts), n)
    return t, {"uniform": uniform, "adversarial": (s, d)}


def test_dragonfly_min_val_ugal_as_kim_et_al() -> None:
    """Kim, Dally, Scott & Abts, ISCA 2008, §4: under uniform random traffic minimal routing
    reaches full throughput and Valiant about half (every packet crosses two global links);
    under the adversarial pattern (group i → group i+1) minimal routing gets one global link for
    a·p hosts, 1/(a·p), Valiant spreads it over every group, and UGAL follows the better of the
    two in each case."""
    a, p = 4, 2
    t, patterns = _dragonfly_patterns(a, p)

    def ratio(pattern: str, routing: str) -> float:
        s, d = patterns[pattern]
        r = run_traffic(t, s, d, 1e6, routing)  # type: ignore[arg-type]
        return r.aggregate_throughput / r.ideal_throughput

    assert ratio("uniform", "ecmp") == pytest.approx(1.0, abs=0.02)
    assert 0.35 < ratio("uniform", "valiant") < 0.6
    assert ratio("uniform", "ugal") > 0.95
    minimal = ratio("adversarial", "ecmp")
    assert minimal == pytest.approx(1 / (a * p), rel=0.05)
    valiant = ratio("adversarial", "valiant")
    assert valiant > 1.8 * minimal
    # UGAL weighs MIN against a per-flow Valiant route: it follows that one; the fluid limit of
    # per-packet Valiant spreads further still
    per_flow = ratio("adversarial", "valiant-flow")
    assert ratio("adversarial", "ugal") > 0.95 * per_flow and valiant > per_flow


def test_read_matrix(tmp_path: object) -> None:
    from pathlib import Path

    path = Path(str(tmp_path)) / "m.csv"
    path.write_text("0,1,2MB\n# comment\n\n3,2,100\n", encoding="utf-8")
    src, dst, size = read_matrix(path)
    assert src.tolist() == [0, 3] and dst.tolist() == [1, 2] and size.tolist() == [2e6, 100.0]
    path.write_text("0,1\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"m.csv:1: expected"):
        read_matrix(path)
    path.write_text("0,1,2 furlongs\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"m.csv:1"):
        read_matrix(path)


def test_permutation_is_a_derangement_for_any_size() -> None:
    for n in (2, 3, 4, 5, 7):
        for seed in range(50):
            src, dst = pattern_flows("permutation", n, seed=seed)
            assert sorted(dst.tolist()) == list(range(n)) and not np.any(src == dst)


# ---- adversarial dragonfly traffic and htsim connection matrices (issue 20, item 2) -----------


def test_adversarial_sends_each_group_to_the_next_once_per_receiver() -> None:
    src, dst = pattern_flows("adversarial", 12, group_size=4, seed=1)
    assert (src == np.arange(12)).all()
    assert ((dst // 4) == (src // 4 + 1) % 3).all()  # group i -> group i+1, the last to the first
    assert sorted(dst.tolist()) == list(range(12))  # every host receives once
    with pytest.raises(ValueError, match="2 or more equal groups"):
        pattern_flows("adversarial", 12, group_size=None)
    with pytest.raises(ValueError, match="2 or more equal groups"):
        pattern_flows("adversarial", 12, group_size=5)


def test_minimal_routing_under_adversarial_traffic_reaches_one_over_ah() -> None:
    """Kim et al. (ISCA 2008, §4.2): with minimal routing, adversarial traffic gets 1/(a·h) of
    the injection bandwidth: a group's a·p hosts share its one global link to the next group
    (a balanced dragonfly, a = 2p = 2h, g = a·h + 1)."""
    from commwall.engines.flow.traffic import group_size
    from commwall.topology import dragonfly

    topo = dragonfly(4, 2, 2)
    src, dst = pattern_flows("adversarial", topo.counts().endpoints, group_size=group_size(topo))
    res = run_traffic(topo, src, dst, 1e6, "ecmp")
    alone = 1e6 / float(topo.link_capacity.max())
    assert alone / res.makespan == pytest.approx(1 / (4 * 2), rel=0.02)


def test_an_htsim_connection_matrix_reads_as_its_flows(tmp_path: Path) -> None:
    cm = tmp_path / "perm.cm"
    cm.write_text("Nodes 16\nConnections 2\n7->5 id 1 start 0 size 2000000\n"
                  "15->1 id 2 start 0 size 1000\n")  # fmt: skip
    src, dst, sizes = read_matrix(cm)
    assert src.tolist() == [7, 15] and dst.tolist() == [5, 1] and sizes.tolist() == [2e6, 1e3]


@pytest.mark.parametrize(
    ("text", "needle"),
    [("Nodes 4\nConnections 1\n0->1 id 1 start 5 size 10\n", "every flow must start at 0"),
     ("Nodes 4\nConnections 1\n0->1 id 1 start 0 size 10 trigger 2\n", "trigger"),
     ("Nodes 4\nConnections 2\n0->1 id 1 start 0 size 10\n", "says Connections 2 but lists 1"),
     ("Nodes 4\nConnections 1\n0->9 id 1 start 0 size 10\n", "node 9 of Nodes 4"),
     ("Nodes 4\nConnections 1\n0->1 id 1 start 0\n", "size: a whole number"),
     ("Nodes 4\nConnections 1\nzero->1 id 1 start 0 size 10\n", "expected 'SRC->DST"),
     ("Nodes four\n", "expected 'Nodes COUNT'")],
)  # fmt: skip
def test_an_htsim_matrix_we_cannot_run_is_named(tmp_path: Path, text: str, needle: str) -> None:
    cm = tmp_path / "x.cm"
    cm.write_text(text)
    with pytest.raises(ValueError, match=needle):
        read_matrix(cm)


def test_saturation_curves_against_closed_forms() -> None:
    """Issue 20, item 4: accepted throughput per offered load. Minimal routing under the
    dragonfly's adversarial pattern accepts min(λ, 1/(a·h)) (Kim et al. 2008); a non-blocking
    fat tree sprays a permutation at whatever is offered; accepted never exceeds offered and
    never falls as the load grows."""
    from commwall.engines.flow.traffic import group_size, saturation

    t = dragonfly(a=4, p=2, h=2)
    src, dst = pattern_flows("adversarial", t.counts().endpoints, group_size=group_size(t))
    loads = np.array([0.05, 0.1, 0.2, 0.5, 1.0])
    rows = saturation(t, src, dst, loads, "ecmp")
    assert [r["accepted"] for r in rows] == pytest.approx(np.minimum(loads, 1 / 8).tolist())
    ft = fat_tree(8)
    s2, d2 = pattern_flows("permutation", 128, seed=5)
    sprayed = saturation(ft, s2, d2, loads, "spray")
    assert [r["accepted"] for r in sprayed] == pytest.approx(loads.tolist(), rel=1e-9)
    for curve in (rows, sprayed, saturation(t, src, dst, loads, "valiant")):
        accepted = [r["accepted"] for r in curve]
        assert all(a <= o * (1 + 1e-9) for a, o in zip(accepted, loads, strict=True))
        assert accepted == sorted(accepted)
    # below saturation a flow's completion is its size at its share of the host's link
    rate = float(ft.link_capacity.max())
    assert sprayed[0]["completion_s"] == pytest.approx(2e6 / (0.05 * rate), rel=0.01)


@pytest.mark.parametrize("text", ["0:1", "1:0.1:-0.1", "a,b", ""])
def test_loads_we_cannot_read_are_named(text: str) -> None:
    from commwall.engines.flow.traffic import parse_loads

    with pytest.raises(ValueError, match="START:STOP:STEP"):
        parse_loads(text)


def test_offered_loads_are_fractions() -> None:
    from commwall.engines.flow.traffic import saturation

    with pytest.raises(ValueError, match=r"fractions in \(0, 1\]"):
        saturation(fat_tree(4), np.array([0]), np.array([1]), np.array([1.5]))
