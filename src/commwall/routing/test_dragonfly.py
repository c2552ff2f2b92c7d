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
    """Inter-group Valiant routes cross exactly two global links and touch a third group;
    intra-group flows stay minimal (no global link)."""
    t: Topology = make()  # type: ignore[operator]
    e, size = int(t.params["endpoints"]), _group_size(t)
    rng = np.random.default_rng(0)
    src, dst = rng.integers(0, e, 300), rng.integers(0, e, 300)
    p = route_paths(t, src, dst, "valiant", seed=1)
    n_glob = _globals_per_route(t, p.links)
    inter = src // size != dst // size
    assert np.all(n_glob[inter] == 2)
    assert np.all(n_glob[~inter] == 0)
    for row, a, b in zip(p.links[inter], src[inter], dst[inter], strict=True):
        row = row[row >= 0]
        groups = set(t.node_group[t.link_dst[row]].tolist())
        assert len(groups - {a // size, b // size}) == 1  # one intermediate group
    assert np.array_equal(route(t, src, dst, "valiant", seed=1).hops, p.hops())


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
