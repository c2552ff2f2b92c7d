"""Clos builders: counts against the published formulas and SuperPOD tables, routes, bad input."""

from __future__ import annotations

import numpy as np
import pytest

from commwall.topology import (
    Topology,
    TopologyError,
    fat_tree,
    leaf_spine,
    rail_only,
    rail_optimized,
)
from commwall.topology.metrics import path_diversity_bfs


@pytest.mark.parametrize("k", [4, 8, 16, 48, 64])
def test_fat_tree_counts(k: int) -> None:
    """k³/4 hosts, 5k²/4 switches, (k/2)² cores, one cable per host per tier (Al-Fares §3)."""
    c = fat_tree(k).counts()
    assert c.endpoints == k**3 // 4
    assert c.total_switches == 5 * k * k // 4
    assert c.switches == {1: k * k // 2, 2: k * k // 2, 3: k * k // 4}
    assert c.cables == {1: k**3 // 4, 2: k**3 // 4, 3: k**3 // 4}


@pytest.mark.parametrize("r", [4, 8, 16, 40, 64, 128])
def test_leaf_spine_counts(r: int) -> None:
    """R²/2 hosts on R leaves and R/2 spines = 3R/2 switches."""
    c = leaf_spine(r).counts()
    assert c.endpoints == r * r // 2
    assert c.switches == {1: r, 2: r // 2}
    assert c.total_switches == 3 * r // 2


def test_fat_tree_two_tiers_is_leaf_spine() -> None:
    assert fat_tree(8, tiers=2).counts() == leaf_spine(8).counts()


def test_taper_splits_ports() -> None:
    """o:1 -> R·o/(o+1) ports down: radix 64 at 3:1 puts 48 hosts on each leaf, 16 up."""
    t = leaf_spine(64, oversubscription=3.0)
    c = t.counts()
    assert c.endpoints == 64 * 48 and c.switches == {1: 64, 2: 16}
    assert t.params["oversubscription"] == (3.0,)


# DGX H100 SuperPOD, topology.md §2.1 Table 4: nodes -> (leaf, spine, leaf->spine cables)
H100_TABLE = {31: (8, 4, 256), 63: (16, 8, 512), 95: (24, 16, 768), 127: (32, 16, 1024)}
# DGX B200 SuperPOD, topology.md §2.2: nodes -> (leaf, spine, core, per-tier cables)
B200_TABLE = {
    64: (16, 8, 0, 512),
    128: (32, 16, 0, 1024),
    256: (64, 32, 0, 2048),
    512: (128, 128, 64, 4096),
    1024: (256, 256, 128, 8192),
    2048: (512, 512, 256, 16384),
}


@pytest.mark.parametrize("nodes", sorted(H100_TABLE))
def test_rail_optimized_matches_dgx_h100_superpod(nodes: int) -> None:
    leaves, spines, uplinks = H100_TABLE[nodes]
    for n in (nodes, nodes + 1):  # the RA removes one node per SU for UFM; a full SU is the same
        c = rail_optimized(n).counts()
        assert c.switches == {1: leaves, 2: spines}
        assert c.cables[2] == uplinks
        assert c.cables[1] == n * 8


@pytest.mark.parametrize("nodes", sorted(B200_TABLE))
def test_rail_optimized_matches_dgx_b200_superpod(nodes: int) -> None:
    leaves, spines, cores, cables = B200_TABLE[nodes]
    c = rail_optimized(nodes).counts()
    expected = {1: leaves, 2: spines} | ({3: cores} if cores else {})
    assert c.switches == expected
    assert set(c.cables.values()) == {cables}


def test_rail_optimized_puts_nic_i_on_leaf_i() -> None:
    t = rail_optimized(32)
    s = t.path_fn
    leaf_of = s.endpoint_leaf  # type: ignore[union-attr]
    assert leaf_of[np.arange(0, 256, 8)].tolist() == [0] * 32  # NIC 0 of every node -> leaf 0
    assert leaf_of[:8].tolist() == list(range(8))
    assert t.path_count(0, 8) == 1  # same rail, same SU: one switch hop
    assert len(t.path_links(0, 8)) == 2
    # cross-rail: up to one of 4 spines over one of 8 parallel cables, down one of 8: 4·8·8
    assert t.path_count(0, 1) == 256


def test_rail_only() -> None:
    t = rail_only(32)
    assert t.counts().switches == {1: 8} and t.counts().by_kind == {"access": 256}
    assert t.path_count(0, 8) == 1 and t.path_count(0, 1) == 0
    big = rail_only(100)  # a rail of 100 nodes is its own 2-tier leaf-spine
    assert big.counts().switches == {1: 32, 2: 16}
    assert big.path_count(0, 1) == 0  # still no route between rails
    with pytest.raises(TopologyError, match="no route"):
        big.path_fn.links(0, 1, 0)  # type: ignore[union-attr]


def _walk_ok(t: Topology, src: int, dst: int, links: np.ndarray) -> bool:
    return bool(
        t.link_src[links[0]] == src
        and t.link_dst[links[-1]] == dst
        and np.all(t.link_dst[links[:-1]] == t.link_src[links[1:]])
    )


SMALL = [
    fat_tree(4),
    fat_tree(6, endpoints=40),
    fat_tree(8, oversubscription=(3.0, 3.0), endpoints=100),
    leaf_spine(8, endpoints=13),
    rail_optimized(9, rails=4, radix=8),
    rail_optimized(40, rails=2, radix=8, oversubscription=(3.0, 1.0)),
    rail_only(20, rails=2, radix=8),
]


@pytest.mark.parametrize("t", SMALL, ids=lambda t: t.name)
def test_routes_are_distinct_walks_and_match_bfs_counts(t: Topology) -> None:
    """Every analytic route is a walk src -> dst, routes are distinct and shortest, and their
    number equals the number of shortest paths BFS counts (parallel cables distinct)."""
    bfs = path_diversity_bfs(t)
    for (src, dst), n in bfs.items():
        assert t.path_count(src, dst) == n
        routes = {tuple(t.path_links(src, dst, i).tolist()) for i in range(n)}
        assert len(routes) == n
        for r in routes:
            assert _walk_ok(t, src, dst, np.array(r))


def test_fat_tree_route_counts() -> None:
    """Same leaf 1, same pod k/2, different pods (k/2)²."""
    t = fat_tree(8)
    assert (t.path_count(0, 1), t.path_count(0, 4), t.path_count(0, 127)) == (1, 4, 16)


def test_link_physics() -> None:
    t = fat_tree(4, link_rate="200 Gb/s", switch_latency="300 ns")
    assert set(t.link_capacity.tolist()) == {25e9}
    assert t.params["switch_latency"] == pytest.approx(300e-9)
    assert t.link_length_m[0] == 3.0 and t.link_latency[0] == pytest.approx(3 * 4.5e-9)
    assert t.link_medium[0] == 0 and t.link_medium[-1] == 1


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda: fat_tree(k=63),
            "k=63: k must be even: a k-ary fat tree splits each switch's k ports half down, "
            "half up; use 62 or 64",
        ),
        (lambda: fat_tree(k=2), "k: 2 is not allowed; allowed: a whole number >= 4"),
        (lambda: fat_tree(k=8, tiers=4), "tiers=4: must be 2"),
        (lambda: fat_tree(k=8, oversubscription=(0.5, 1.0)), r"oversubscription\[0\]=0.5"),
        (lambda: fat_tree(k=8, oversubscription=(1.0,)), "give 2 ratio"),
        (lambda: fat_tree(k=8, endpoints=129), "endpoints=129: .* at most 128"),
        (lambda: leaf_spine(radix=7), "radix=7: radix must be even"),
        (
            lambda: leaf_spine(radix=8, endpoints=0),
            "endpoints: 0 is not allowed; allowed: a whole number >= 1",
        ),
        (lambda: leaf_spine(radix=64, endpoints=3000), "at most 2,048; use fat_tree"),
        (lambda: leaf_spine(radix=8, oversubscription=0.5), "oversubscription=0.5: must be >= 1"),
        (lambda: leaf_spine(radix=8, link_rate="400 Gb"), "link_rate='400 Gb'"),
        (lambda: leaf_spine(radix=8, link_rate=-1), "link_rate=-1"),
        (lambda: rail_optimized(nodes=0), "nodes: 0 is not allowed"),
        (lambda: rail_optimized(nodes=300, tiers=2), "use tiers=3"),
        (lambda: rail_optimized(nodes=70_000), "use a larger radix"),
        (lambda: rail_only(nodes=3000), "rail_optimized"),
        (lambda: rail_only(nodes=8, rails=0), "rails: 0 is not allowed"),
        (lambda: fat_tree(k=8.0), "k: 8.0 is not allowed; allowed: a whole number"),  # type: ignore[arg-type]
    ],
)
def test_bad_parameters_say_what_and_how(build: object, message: str) -> None:
    with pytest.raises(TopologyError, match=message):
        build()  # type: ignore[operator]
