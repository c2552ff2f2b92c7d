"""Vectorised Clos routes against the structure's own oracle, and routes that really connect."""

from __future__ import annotations

import numpy as np
import pytest

from commwall.routing import Paths, RoutingPolicy, route, route_paths
from commwall.routing.clos import (
    digits_from_index,
    geometry,
    index_from_digits,
    links_from_digits,
)
from commwall.topology import (
    ClosStructure,
    Topology,
    dragonfly,
    dragonfly_plus,
    fat_tree,
    leaf_spine,
    rail_optimized,
)

CLOS_FABRICS = {
    "leaf-spine": lambda: leaf_spine(8),
    "leaf-spine parallel cables": lambda: leaf_spine(16, endpoints=40),  # 4 spines x 2 cables
    "fat-tree": lambda: fat_tree(4),
    "fat-tree parallel spine-core": lambda: fat_tree(8, endpoints=40),  # 2 cores x 2 cables
    "fat-tree partial pods": lambda: fat_tree(8, endpoints=70),
    "fat-tree tapered leaf": lambda: fat_tree(8, oversubscription=(3.0, 1.0)),
    "fat-tree tapered spine": lambda: fat_tree(8, oversubscription=(1.0, 3.0)),
    "rail-optimized 3-tier": lambda: rail_optimized(64, rails=8, radix=16, tiers=3),
    "rail-optimized 2-tier": lambda: rail_optimized(16, rails=4, radix=16),
}


def _structure(t: Topology) -> ClosStructure:
    assert isinstance(t.path_fn, ClosStructure)
    return t.path_fn


def _random_pairs(e: int, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    src = rng.integers(0, e, n)
    dst = rng.integers(0, e, n)
    dst[:5] = src[:5]  # same endpoint
    dst[5:10] = np.minimum(src[5:10] + 1, e - 1)  # mostly the same leaf
    return src, dst


@pytest.mark.parametrize("fabric", list(CLOS_FABRICS))
def test_vectorised_links_equal_oracle(fabric: str) -> None:
    """links_from_digits(digits_from_index(i)) == ClosStructure.links(src, dst, i) for random
    pairs and route indices, and the digit packing round-trips."""
    t = CLOS_FABRICS[fabric]()
    s = _structure(t)
    rng = np.random.default_rng(7)
    src, dst = _random_pairs(s.n_endpoints, 300, rng)
    count = np.array([s.count(a, b) for a, b in zip(src, dst, strict=True)])
    index = (rng.random(len(src)) * count).astype(np.int64)
    g = geometry(s, src, dst)
    d = digits_from_index(s, g.level, index)
    rows = links_from_digits(s, g, d)
    for k in range(len(src)):
        expected = s.links(int(src[k]), int(dst[k]), int(index[k]))
        got = rows[k][rows[k] >= 0]
        assert got.tolist() == expected.tolist(), (fabric, k, src[k], dst[k], index[k])
    back = index_from_digits(s, g.level, d)
    assert np.array_equal(back[g.level >= 2], index[g.level >= 2])
    assert set(np.unique(g.level).tolist()) >= {0, 1, 2}


def _assert_chains(t: Topology, src: np.ndarray, dst: np.ndarray, p: Paths) -> None:
    """Every sub-path starts at src, ends at dst, and each link starts where the last ended."""
    assert len(p.sub_flow) >= len(src)
    for r in range(len(p.sub_flow)):
        f = int(p.sub_flow[r])
        links = p.links[r][p.links[r] >= 0]
        if src[f] == dst[f]:
            assert len(links) == 0
            continue
        assert t.link_src[links[0]] == src[f]
        assert t.link_dst[links[-1]] == dst[f]
        assert np.array_equal(t.link_dst[links[:-1]], t.link_src[links[1:]])
        assert len(np.unique(links)) == len(links)


CHAIN_FABRICS = {
    "fat-tree": lambda: fat_tree(8, endpoints=70),
    "rail-optimized": lambda: rail_optimized(64, rails=8, radix=16, tiers=3),
    "leaf-spine": lambda: leaf_spine(16, endpoints=40),
    "dragonfly": lambda: dragonfly(a=4, p=2, h=2),
    "dragonfly+": lambda: dragonfly_plus(2, 3, 2, 2),
}


@pytest.mark.parametrize("policy", ["ecmp", "flowlet", "adaptive", "valiant", "ugal"])
@pytest.mark.parametrize("fabric", list(CHAIN_FABRICS))
def test_routes_connect_src_to_dst(fabric: str, policy: str) -> None:
    t = CHAIN_FABRICS[fabric]()
    if policy in ("valiant", "ugal") and "dragonfly" not in fabric:
        return  # dragonfly-only policies: bad-input tests cover the error
    e = t.params["endpoints"]
    rng = np.random.default_rng(3)
    src, dst = _random_pairs(e, 200, rng)
    nbytes = rng.uniform(1e3, 2e6, len(src))
    pol = RoutingPolicy(policy, qps=2, flowlet_bytes=256e3, max_flowlets=4)
    p = route_paths(t, src, dst, pol, seed=5, nbytes=nbytes)
    _assert_chains(t, src, dst, p)
    assert np.allclose(np.bincount(p.sub_flow, weights=p.weight), 1.0)
    # route() is the per-(flow, link) sum of the same sub-paths
    r = route(t, src, dst, pol, seed=5, nbytes=nbytes)
    got = {(int(f), int(lk)): w for f, lk, w in zip(r.flow, r.link, r.weight, strict=True)}
    want: dict[tuple[int, int], float] = {}
    for row, f, w in zip(p.links, p.sub_flow, p.weight, strict=True):
        for lk in row[row >= 0]:
            want[int(f), int(lk)] = want.get((int(f), int(lk)), 0.0) + float(w)
    assert got.keys() == want.keys()
    assert all(abs(got[k] - want[k]) < 1e-12 for k in want)
    assert np.all(np.diff(r.flow) >= 0)
    assert np.array_equal(r.hops, p.hops())


def test_ecmp_route_is_an_oracle_route() -> None:
    """The hashed per-hop digits name one of the oracle's routes, whole."""
    t = fat_tree(8, endpoints=40)
    s = _structure(t)
    rng = np.random.default_rng(1)
    src, dst = _random_pairs(s.n_endpoints, 100, rng)
    p = route_paths(t, src, dst, RoutingPolicy("ecmp"), seed=9)
    for k in range(len(src)):
        a, b = int(src[k]), int(dst[k])
        options = [s.links(a, b, i).tolist() for i in range(s.count(a, b))] if a != b else [[]]
        row = p.links[k]
        assert row[row >= 0].tolist() in options


def test_chunked_route_equals_one_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    """Hashed policies are routed in chunks of sub-flows; chunking changes nothing."""
    import commwall.routing.api as api

    t = rail_optimized(64, rails=8, radix=16, tiers=3)
    rng = np.random.default_rng(2)
    src, dst = rng.integers(0, 512, 500), rng.integers(0, 512, 500)
    nbytes = rng.uniform(1e3, 1e6, 500)
    pol = RoutingPolicy("flowlet", qps=2)
    whole = route(t, src, dst, pol, seed=4, nbytes=nbytes)
    monkeypatch.setattr(api, "CHUNK_SUBFLOWS", 64)
    chunked = route(t, src, dst, pol, seed=4, nbytes=nbytes)
    for field in ("flow", "link", "weight", "hops"):
        assert np.array_equal(getattr(whole, field), getattr(chunked, field)), field
