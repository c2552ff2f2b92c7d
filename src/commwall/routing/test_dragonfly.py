"""Valiant and UGAL on dragonfly and Dragonfly+ (Kim et al., ISCA 2008 §4)."""

from __future__ import annotations

import numpy as np
import pytest

from commwall.routing import RoutingError, route, route_paths
from commwall.topology import LinkKind, Topology, dragonfly, dragonfly_plus, fat_tree


def _globals_per_route(t: Topology, links: np.ndarray) -> np.ndarray:
    glob = np.flatnonzero(t.link_kind == LinkKind.GLOBAL)
    return np.isin(links, glob).sum(axis=1)


def _group_size(t: Topology) -> int:
    return int(t.params["endpoints"]) // int(t.params["g"])


@pytest.mark.parametrize(
    "make", [lambda: dragonfly(a=4, p=2, h=2), lambda: dragonfly_plus(2, 3, 2, 2)]
)
def test_valiant_goes_through_an_intermediate_group(make: object) -> None:
    """Per-flow Valiant (``valiant-flow``): inter-group routes cross exactly two global links
    and touch a third group; intra-group flows stay minimal (no global link)."""
    t: Topology = make()  # type: ignore[operator]
    e, size = int(t.params["endpoints"]), _group_size(t)
    rng = np.random.default_rng(0)
    src, dst = rng.integers(0, e, 300), rng.integers(0, e, 300)
    p = route_paths(t, src, dst, "valiant-flow", seed=1)
    n_glob = _globals_per_route(t, p.links)
    inter = src // size != dst // size
    assert np.all(n_glob[inter] == 2)
    assert np.all(n_glob[~inter] == 0)
    for row, a, b in zip(p.links[inter], src[inter], dst[inter], strict=True):
        row = row[row >= 0]
        groups = set(t.node_group[t.link_dst[row]].tolist())
        assert len(groups - {a // size, b // size}) == 1  # one intermediate group
    assert np.array_equal(route(t, src, dst, "valiant-flow", seed=1).hops, p.hops())


def _ugal_valiant_share(t: Topology, dst: np.ndarray, seed: int) -> float:
    src = np.arange(len(dst))
    size = _group_size(t)
    p = route_paths(t, src, dst, "ugal", seed=seed)
    inter = src // size != dst // size
    return float(np.mean(_globals_per_route(t, p.links)[inter] == 2))


@pytest.mark.parametrize(
    "make", [lambda: dragonfly(a=8, p=4, h=4), lambda: dragonfly_plus(4, 4, 4, 4)]
)
def test_ugal_min_on_uniform_valiant_on_adversarial(make: object) -> None:
    """UGAL-G behaves like MIN under uniform random traffic and like VAL when every host of
    group i sends to group i+1 (Kim et al. §4.2)."""
    t: Topology = make()  # type: ignore[operator]
    e, size = int(t.params["endpoints"]), _group_size(t)
    uniform = _ugal_valiant_share(t, np.random.default_rng(3).permutation(e), seed=3)
    adversarial = _ugal_valiant_share(t, (np.arange(e) + size) % e, seed=3)
    assert uniform < 0.25
    assert adversarial > 0.6


def test_valiant_and_ugal_need_a_dragonfly() -> None:
    t = fat_tree(4)
    for name in ("valiant", "ugal"):
        with pytest.raises(RoutingError, match=r"name='(valiant|ugal)'.*dragonfly"):
            route(t, np.array([0]), np.array([15]), name)


def test_two_groups_fall_back_to_minimal() -> None:
    """With two groups there is no intermediate group: Valiant is MIN."""
    t = dragonfly(a=2, p=2, h=1, g=2)
    src, dst = np.array([0, 1]), np.array([4, 7])
    v = route(t, src, dst, "valiant", seed=2)
    m = route(t, src, dst, "ecmp", seed=2)
    assert np.array_equal(v.link, m.link)


@pytest.mark.parametrize(
    "make", [lambda: dragonfly(a=4, p=2, h=2), lambda: dragonfly_plus(2, 3, 2, 2)]
)
def test_valiant_spreads_each_flow_over_every_intermediate_group(make: object) -> None:
    """``valiant``, the fluid limit of per-packet Valiant: an inter-group flow is g − 2 equal
    parts, one through each other group, each crossing two global links."""
    t: Topology = make()  # type: ignore[operator]
    size, g = _group_size(t), int(t.params["g"])
    src = np.array([0, 1, 0])
    dst = np.array([size + 1, 2 * size, 1])  # two inter-group flows, one intra-group
    p = route_paths(t, src, dst, "valiant", seed=4)
    for flow, (a, b) in enumerate(zip(src.tolist(), dst.tolist(), strict=True)):
        rows = p.links[p.sub_flow == flow]
        if a // size == b // size:
            assert len(rows) == 1 and _globals_per_route(t, rows).tolist() == [0]
            continue
        assert len(rows) == g - 2 and np.allclose(p.weight[p.sub_flow == flow], 1 / (g - 2))
        assert (_globals_per_route(t, rows) == 2).all()
        middles = {
            frozenset(set(t.node_group[t.link_dst[r[r >= 0]]].tolist()) - {a // size, b // size})
            for r in rows
        }
        assert middles == {frozenset({m}) for m in range(g) if m not in (a // size, b // size)}


@pytest.mark.parametrize("pattern", ["adversarial", "permutation"])
def test_valiant_reaches_half_the_injection_bandwidth_under_any_traffic(pattern: str) -> None:
    """Kim et al. (ISCA 2008, §4.2): Valiant sends every byte over two global links, so a
    balanced dragonfly (a = 2p = 2h) carries about half its injection bandwidth under any
    pattern; per-flow choices collide and fall short (issue 20: 0.26 on this fabric)."""
    from commwall.engines.flow.traffic import group_size, pattern_flows, run_traffic

    t = dragonfly(a=8, p=4, h=4)  # 33 groups, 1,056 hosts
    src, dst = pattern_flows(pattern, t.counts().endpoints, group_size=group_size(t), seed=2)
    # accepted throughput with every flow active, over what the hosts' links would carry
    share = run_traffic(t, src, dst, 1e6, "valiant").throughput_ratio
    assert share == pytest.approx(0.5, rel=0.1)
    if pattern == "adversarial":
        assert run_traffic(t, src, dst, 1e6, "valiant-flow").throughput_ratio < 0.35
