"""Dragonfly+ (Shpiner et al. HiPINEB 2017): counts, radices, MIN routes, bisection closed form
vs max-flow, bad input."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from commwall.topology import (
    DragonflyPlusStructure,
    TopologyError,
    average_hops,
    bisection_bandwidth_maxflow,
    diameter,
    dragonfly_plus,
)


@pytest.mark.parametrize(
    ("p", "l", "s", "h", "g"),
    [(1, 1, 1, 1, None), (2, 2, 2, 2, None), (2, 3, 2, 1, None), (4, 2, 3, 2, 4), (3, 2, 2, 2, 1)],
)
def test_counts(p: int, l: int, s: int, h: int, g: int | None) -> None:  # noqa: E741
    """g <= s·h+1 groups of l leaves × p hosts and s spines; l·s local cables per group,
    m = s·h // (g−1) global links per group pair; every port used as wired."""
    t = dragonfly_plus(p, l, s, h, g)
    groups = s * h + 1 if g is None else g
    m = s * h // (groups - 1) if groups > 1 else 0
    c = t.counts()
    assert t.params["g"] == groups and t.params["global_links_per_group_pair"] == m
    assert c.endpoints == groups * l * p
    assert c.switches == {1: groups * l, 2: groups * s}
    assert c.by_kind.get("local", 0) == groups * l * s
    assert c.by_kind.get("global", 0) == groups * (groups - 1) // 2 * m
    assert t.params["leaf_radix"] == p + s and t.params["spine_radix"] == l + h
    degree = np.bincount(t.link_src, minlength=t.n_nodes)
    n = c.endpoints
    assert set(degree[n : n + groups * l].tolist()) == {p + s}
    spine_global = degree[n + groups * l :] - l
    assert spine_global.sum() == 2 * c.by_kind.get("global", 0)
    assert spine_global.max() <= h


def test_radix_40_scale() -> None:
    """p = l = s = h = k/2: group k²/4 hosts, N = (k²/4)(k²/4 + 1); k = 40 -> 160,400."""
    t = dragonfly_plus(20, 20, 20, 20)
    assert t.params["endpoints"] == 160_400 and t.params["balanced"]
    assert t.params["leaf_radix"] == t.params["spine_radix"] == 40
    assert t.params["g"] == 401
    # global cut of whole-group halves: 200 × 201 group pairs × 1 link
    assert t.params["bisection_bandwidth"] == 200 * 201 * t.params["link_rate"]


@pytest.mark.parametrize("arrangement", ["consecutive", "palm-tree"])
@pytest.mark.parametrize(
    ("p", "l", "s", "h", "g"),
    [
        (2, 2, 2, 2, None),
        (2, 2, 2, 2, 3),
        (1, 3, 2, 3, None),
        (3, 2, 2, 1, 2),
        (4, 3, 2, 2, 5),
        (2, 4, 3, 2, 4),
        (1, 1, 1, 1, 2),
        (2, 3, 1, 1, None),
        (3, 2, 2, 2, 1),
        (1, 4, 4, 4, 3),
    ],
)
def test_bisection_closed_form_matches_maxflow(
    arrangement: str,
    p: int,
    l: int,  # noqa: E741
    s: int,
    h: int,
    g: int | None,
) -> None:
    t = dragonfly_plus(p, l, s, h, g, arrangement)  # type: ignore[arg-type]
    st = t.path_fn
    assert isinstance(st, DragonflyPlusStructure)
    expected = bisection_bandwidth_maxflow(t, st.bisection_side())
    assert t.params["bisection_bandwidth"] == pytest.approx(expected, rel=1e-9)


def test_no_closed_form_when_spines_have_more_global_than_leaf_links() -> None:
    """l < h: a cut through one spine can be the smallest; the builder says so (None)."""
    t = dragonfly_plus(2, 1, 2, 2, 4)
    assert t.params["bisection_bandwidth"] is None
    st = t.path_fn
    assert isinstance(st, DragonflyPlusStructure)
    assert bisection_bandwidth_maxflow(t, st.bisection_side()) == pytest.approx(2 * 50e9)


@pytest.mark.parametrize("arrangement", ["consecutive", "palm-tree"])
@pytest.mark.parametrize(("p", "l", "s", "h", "g"), [(2, 2, 2, 2, None), (1, 3, 2, 2, 3)])
def test_min_routes(
    arrangement: str,
    p: int,
    l: int,  # noqa: E741
    s: int,
    h: int,
    g: int | None,
) -> None:
    """Routes are walks src -> dst with at most one global link; 2/4/5 links; the counts are
    1 / s / m; closed-form hops agree with the routes and with BFS."""
    t = dragonfly_plus(p, l, s, h, g, arrangement)  # type: ignore[arg-type]
    st = t.path_fn
    assert isinstance(st, DragonflyPlusStructure)
    lengths = []
    for src, dst in itertools.permutations(range(st.n_hosts), 2):
        n = t.path_count(src, dst)
        same_leaf = src // p == dst // p
        same_group = t.node_group[src] == t.node_group[dst]
        assert n == (1 if same_leaf else s if same_group else st.parallel)
        routes = [t.path_links(src, dst, i) for i in range(n)]
        assert len({tuple(r.tolist()) for r in routes}) == n
        for r in routes:
            assert t.link_src[r[0]] == src and t.link_dst[r[-1]] == dst
            assert np.all(t.link_dst[r[:-1]] == t.link_src[r[1:]])
            assert np.count_nonzero(t.link_kind[r] == 3) == (0 if same_group else 1)
            assert len(r) == (2 if same_leaf else 4 if same_group else 5)
        lengths.append(np.mean([len(r) for r in routes]))
    assert st.average_hops() == pytest.approx(float(np.mean(lengths)))
    assert st.diameter() == max(lengths) == diameter(t)  # BFS agrees: MIN routes are shortest
    assert st.average_hops() == pytest.approx(average_hops(t))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"p": 0, "l": 1, "s": 1, "h": 1}, "p: 0 is not allowed; allowed: a whole number >= 1"),
        ({"p": 1, "l": 0, "s": 1, "h": 1}, "l: 0 is not allowed; allowed: a whole number >= 1"),
        ({"p": 1, "l": 1, "s": 0, "h": 1}, "s: 0 is not allowed; allowed: a whole number >= 1"),
        ({"p": 1, "l": 1, "s": 1, "h": -1}, "h: -1 is not allowed; allowed: a whole number >= 0"),
        ({"p": 2, "l": 2, "s": 2, "h": 2, "g": 6}, r"g=6: .*at most s·h\+1 = 5 groups"),
        ({"p": 2, "l": 2, "s": 2, "h": 2, "global_arrangement": "x"}, "allowed: consecutive"),
        ({"p": 2, "l": 2, "s": 2, "h": 2, "link_rate": "fast"}, "link_rate='fast'"),
        ({"p": 1000, "l": 2, "s": 100, "h": 2}, "a leaf needs p\\+s = 1,100 ports"),
        ({"p": 512, "l": 512, "s": 512, "h": 512}, "hosts; commwall builds at most"),
    ],
)
def test_bad_parameters(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(TopologyError, match=message):
        dragonfly_plus(**kwargs)  # type: ignore[arg-type]
