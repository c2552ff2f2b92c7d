"""Metrics: closed forms agree with max-flow and BFS on small instances."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from commwall.topology import (
    Topology,
    TopologyError,
    average_hops,
    bisection_bandwidth,
    bisection_bandwidth_maxflow,
    diameter,
    dragonfly,
    fat_tree,
    from_edge_list,
    leaf_spine,
    oversubscription_per_tier,
    path_diversity,
    rail_only,
    rail_optimized,
)
from commwall.topology.metrics import average_hops_bfs, diameter_bfs

RATE = 50e9  # 400 Gb/s

CLOS = [
    fat_tree(4),
    fat_tree(6),
    fat_tree(8),
    fat_tree(4, oversubscription=(3.0, 1.0)),
    fat_tree(8, oversubscription=(3.0, 3.0)),
    fat_tree(8, endpoints=70),
    fat_tree(8, endpoints=37, oversubscription=(3.0, 1.0)),
    leaf_spine(8),
    leaf_spine(8, endpoints=13),
    leaf_spine(8, oversubscription=3.0),
    leaf_spine(16, endpoints=40, oversubscription=3.0),
    rail_optimized(9, rails=4, radix=8),
    rail_optimized(20, rails=2, radix=8),
    rail_optimized(40, rails=2, radix=8),
    rail_optimized(40, rails=2, radix=8, oversubscription=(3.0, 1.0)),
    rail_only(8, rails=4, radix=8),
    rail_only(20, rails=2, radix=8),
]
DRAGONFLY = [
    dragonfly(3, 1, 1, 4),
    dragonfly(4, 2, 2, 8),
    dragonfly(4, 2, 2, 6),
    dragonfly(4, 2, 2, 6, "palm-tree"),
    dragonfly(2, 2, 2, 4),
    dragonfly(6, 3, 3, 10),
    dragonfly(4, 4, 1, 4),
    dragonfly(2, 1, 1),
]


@pytest.mark.parametrize("t", CLOS + DRAGONFLY, ids=lambda t: t.name)
def test_bisection_closed_form_equals_maxflow(t: Topology) -> None:
    assert bisection_bandwidth(t) == pytest.approx(bisection_bandwidth_maxflow(t), rel=1e-9)


@pytest.mark.parametrize("t", CLOS, ids=lambda t: t.name)
def test_clos_hops_closed_form_equal_bfs(t: Topology) -> None:
    assert diameter(t) == diameter_bfs(t)
    assert average_hops(t) == pytest.approx(average_hops_bfs(t), rel=1e-12)


@pytest.mark.parametrize("t", DRAGONFLY, ids=lambda t: t.name)
def test_dragonfly_min_routes_never_beat_shortest_paths(t: Topology) -> None:
    assert diameter_bfs(t) <= diameter(t)
    assert average_hops_bfs(t) <= average_hops(t) + 1e-12


def test_non_blocking_bisection_is_half_the_hosts() -> None:
    for t in (fat_tree(16), leaf_spine(64), rail_optimized(127)):
        n = t.counts().endpoints
        assert bisection_bandwidth(t) == n // 2 * RATE


def test_tapered_bisection() -> None:
    """3:1 at the leaf: the half can push only its leaves' uplinks."""
    t = leaf_spine(64, oversubscription=3.0)
    assert bisection_bandwidth(t) == 32 * 16 * RATE


def test_dragonfly_bisection_formula() -> None:
    """Global-channel bisection: (g/2)² links for even g (Kim et al. ISCA'08)."""
    t = dragonfly(4, 2, 2, 8)
    assert bisection_bandwidth(t) == 16 * RATE


def test_large_instances_use_closed_forms() -> None:
    t = fat_tree(64)
    assert bisection_bandwidth(t) == 32768 * RATE
    assert diameter(t) == 6
    assert path_diversity(t) == {"same leaf": 1, "same pod": 32, "different pods": 1024}
    assert oversubscription_per_tier(t) == {1: 1.0, 2: 1.0}
    d = dragonfly(32, 16, 16)
    assert diameter(d) == 5 and average_hops(d) == pytest.approx(4.9, abs=0.05)
    assert bisection_bandwidth(d) == min(262656 // 2, 256 * 257) * RATE


def test_path_diversity() -> None:
    assert path_diversity(fat_tree(8)) == {"same leaf": 1, "same pod": 4, "different pods": 16}
    assert path_diversity(leaf_spine(8)) == {"same leaf": 1, "same pod": 4}
    assert path_diversity(rail_only(8, rails=2, radix=8)) == {"same leaf": 1}
    assert path_diversity(dragonfly(4, 2, 2)) == {"same group": 1, "different groups": 1}


def test_oversubscription_per_tier() -> None:
    assert oversubscription_per_tier(fat_tree(8, oversubscription=(3.0, 1.0))) == {1: 3.0, 2: 1.0}
    assert oversubscription_per_tier(leaf_spine(64, oversubscription=3.0)) == {1: 3.0}
    assert oversubscription_per_tier(dragonfly(4, 2, 2)) == {}


def test_generic_topology_falls_back_to_graph_algorithms(tmp_path) -> None:  # type: ignore[no-untyped-def]
    p = tmp_path / "line.txt"
    p.write_text("h0 s0\nh1 s0\ns0 s1\nh2 s1\nh3 s1 100Gb/s\n")
    t = from_edge_list(p)
    assert diameter(t) == 3
    assert bisection_bandwidth(t) == 50e9  # h0, h1 -> h2, h3: the s0-s1 cable is the cut
    assert path_diversity(t) == {"min": 1, "max": 1}


def test_bfs_refuses_huge_graphs() -> None:
    with pytest.raises(TopologyError, match="too large for BFS"):
        diameter_bfs(fat_tree(64))


def test_custom_halves() -> None:
    t = fat_tree(4)
    same_leaf = [i in (0, 1) for i in range(16)]  # hosts 0,1 vs the rest
    assert bisection_bandwidth(t, same_leaf) == bisection_bandwidth_maxflow(t, same_leaf)
    with pytest.raises(TopologyError, match="side_a"):
        bisection_bandwidth(t, [True])


@settings(max_examples=25, deadline=None)
@given(
    k=st.sampled_from([4, 6, 8]),
    fill=st.floats(0.05, 1.0),
    o1=st.sampled_from([1.0, 1.5, 3.0]),
    o2=st.sampled_from([1.0, 3.0]),
)
def test_fat_tree_bisection_property(k: int, fill: float, o1: float, o2: float) -> None:
    full = fat_tree(k, oversubscription=(o1, o2)).counts().endpoints
    t = fat_tree(k, oversubscription=(o1, o2), endpoints=max(2, int(full * fill)))
    assert bisection_bandwidth(t) == pytest.approx(bisection_bandwidth_maxflow(t), rel=1e-9)
    assert average_hops(t) == pytest.approx(average_hops_bfs(t), rel=1e-12)


def test_tapered_rail_bisection_uses_leaf_aligned_halves() -> None:
    from commwall.topology import rail_optimized
    from commwall.topology.metrics import bisection_bandwidth, bisection_bandwidth_maxflow

    topo = rail_optimized(127, oversubscription=3)
    half_hosts = len(topo.endpoints()) // 2 * float(topo.link_capacity[0])
    bisection = bisection_bandwidth(topo)
    # a 3:1 taper: about a third of the half's host links, not the half a leaf-splitting cut shows
    assert bisection <= 0.4 * half_hosts
    assert bisection == bisection_bandwidth_maxflow(topo)
