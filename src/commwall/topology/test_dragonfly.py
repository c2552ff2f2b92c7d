"""Dragonfly: Kim et al. ISCA'08 formulas, global wiring, MIN routes, bad input."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

from commwall.topology import Topology, TopologyError, dragonfly
from commwall.topology.dragonfly import DragonflyStructure


@pytest.mark.parametrize(("a", "p", "h"), [(1, 1, 1), (2, 1, 1), (4, 2, 2), (8, 4, 4), (6, 2, 3)])
def test_formulas(a: int, p: int, h: int) -> None:
    """g = a·h+1, N = a·p·(a·h+1), router radix p + (a−1) + h, one global link per group pair."""
    t = dragonfly(a, p, h)
    g = a * h + 1
    c = t.counts()
    assert t.params["g"] == g
    assert c.endpoints == a * p * g
    assert c.switches == {1: a * g}
    assert t.params["router_radix"] == p + (a - 1) + h
    assert c.by_kind.get("global", 0) == g * (g - 1) // 2
    assert c.by_kind.get("local", 0) == g * a * (a - 1) // 2
    # every router port is used: p hosts, a-1 local, h global
    degree = np.bincount(t.link_src, minlength=t.n_nodes)[c.endpoints :]
    assert set(degree.tolist()) == {p + (a - 1) + h}


def test_balanced_262656() -> None:
    """64-port routers, p = h = 16, a = 32: k = 63, g = 513, N = 262,656 (topology.md §4)."""
    t = dragonfly(32, 16, 16)
    assert t.params["g"] == 513 and t.params["router_radix"] == 63 and t.params["balanced"]
    assert t.counts().endpoints == 262_656


@pytest.mark.parametrize("arrangement", ["consecutive", "palm-tree"])
@pytest.mark.parametrize(("a", "p", "h", "g"), [(4, 2, 2, None), (4, 2, 2, 5), (3, 2, 2, 4)])
def test_every_group_pair_gets_its_global_links(
    arrangement: str, a: int, p: int, h: int, g: int | None
) -> None:
    t = dragonfly(a, p, h, g, arrangement)  # type: ignore[arg-type]
    groups, m = t.params["g"], t.params["global_links_per_group_pair"]
    glob = t.link_kind[0::2] == 3
    ga = t.node_group[t.link_src[0::2][glob]]
    gb = t.node_group[t.link_dst[0::2][glob]]
    pairs = np.bincount(np.minimum(ga, gb) * groups + np.maximum(ga, gb), minlength=groups**2)
    expected = np.zeros((groups, groups), dtype=int)
    expected[np.triu_indices(groups, 1)] = m
    assert pairs.reshape(groups, groups).tolist() == expected.tolist()


def _routes(t: Topology) -> dict[tuple[int, int], list[np.ndarray]]:
    n = t.counts().endpoints
    return {
        (s, d): [t.path_links(s, d, i) for i in range(t.path_count(s, d))]
        for s, d in itertools.permutations(range(n), 2)
    }


@pytest.mark.parametrize("arrangement", ["consecutive", "palm-tree"])
@pytest.mark.parametrize(("a", "p", "h", "g"), [(4, 2, 2, None), (6, 1, 3, 10), (2, 2, 1, None)])
def test_min_routes(arrangement: str, a: int, p: int, h: int, g: int | None) -> None:
    """MIN routes are walks src -> dst with at most one global link, at most 3 router hops, and
    their mean length is the closed form."""
    t = dragonfly(a, p, h, g, arrangement)  # type: ignore[arg-type]
    s = t.path_fn
    assert isinstance(s, DragonflyStructure)
    lengths = []
    for (src, dst), routes in _routes(t).items():
        assert len(routes) == (1 if t.node_group[src] == t.node_group[dst] else s.parallel)
        assert len({tuple(r.tolist()) for r in routes}) == len(routes)
        for r in routes:
            assert t.link_src[r[0]] == src and t.link_dst[r[-1]] == dst
            assert np.all(t.link_dst[r[:-1]] == t.link_src[r[1:]])
            assert np.count_nonzero(t.link_kind[r] == 3) <= 1
            lengths.append(len(r))
    assert max(lengths) == s.diameter() <= 5
    # closed form weights each pair's routes equally
    per_pair = [np.mean([len(r) for r in rs]) for rs in _routes(t).values()]
    assert s.average_hops() == pytest.approx(float(np.mean(per_pair)))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"a": 0, "p": 1, "h": 1}, "a: 0 is not allowed; allowed: a whole number >= 1"),
        ({"a": 4, "p": 0, "h": 1}, "p: 0 is not allowed; allowed: a whole number >= 1"),
        ({"a": 4, "p": 2, "h": -1}, "h: -1 is not allowed; allowed: a whole number >= 0"),
        ({"a": 4, "p": 2, "h": 2, "g": 10}, r"g=10: .* at most a·h\+1 = 9 groups"),
        ({"a": 4, "p": 2, "h": 2, "g": 0}, "g: 0 is not allowed; allowed: a whole number >= 1"),
        ({"a": 4, "p": 2, "h": 2, "global_arrangement": "random"}, "allowed: consecutive"),
        (
            {"a": 1000, "p": 1000, "h": 1000},
            "a router needs a-1\\+p\\+h = 2,999 ports; at most 1,024",
        ),
        ({"a": 256, "p": 256, "h": 256, "g": 2000}, "hosts; commwall builds at most 4,194,304"),
    ],
)
def test_bad_parameters(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(TopologyError, match=message):
        dragonfly(**kwargs)  # type: ignore[arg-type]


def test_fewer_groups_get_parallel_global_links() -> None:
    t = dragonfly(4, 2, 2, g=3)  # 8 global ports per group, 2 other groups: 4 links each
    assert t.params["global_links_per_group_pair"] == 4
    assert t.params["unused_global_ports_per_group"] == 0
    assert t.path_count(0, t.counts().endpoints - 1) == 4


@pytest.mark.parametrize(
    "kwargs",
    [
        {"a": 8, "p": 4, "h": 4, "g": 17},
        {"a": 4, "p": 2, "h": 2},
        {"a": 4, "p": 2, "h": 2, "g": 5, "global_arrangement": "palm-tree"},
        {"a": 1, "p": 2, "h": 2},
        {"a": 3, "p": 1, "h": 1, "g": 2},
    ],
)
def test_vectorised_routes_are_the_per_pair_routes(kwargs: dict[str, Any]) -> None:
    from commwall.routing.oracle import pad_rows

    o = dragonfly(**kwargs).path_fn
    rng = np.random.default_rng(0)
    src, dst = rng.integers(0, o.n_hosts, 2000), rng.integers(0, o.n_hosts, 2000)
    count = o.counts_many(src, dst)
    assert count.tolist() == [o.count(int(a), int(b)) for a, b in zip(src, dst, strict=True)]
    index = rng.integers(0, 1 << 30, 2000) % count
    rows = [o.links(int(a), int(b), int(k)) for a, b, k in zip(src, dst, index, strict=True)]
    many = o.links_many(src, dst, index)
    assert np.array_equal(pad_rows(rows, many.shape[1]), many)
