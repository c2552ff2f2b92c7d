"""Router classes: solving a router-symmetric pattern's classes gives the per-flow answer."""

from __future__ import annotations

import numpy as np
import pytest

from commwall.engines.flow import traffic
from commwall.engines.flow.aggregate import router_classes
from commwall.engines.flow.traffic import pattern_flows, run_traffic, saturation
from commwall.routing import RoutingPolicy
from commwall.topology import dragonfly


def _per_flow(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(traffic, "router_classes", lambda *args, **kwargs: None)


def test_valiant_all_to_all_classes_are_the_per_flow_solution(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    t = dragonfly(a=4, p=2, h=2, link_rate=12.5e9)  # 9 groups, one global link per pair
    src, dst = pattern_flows("alltoall", 72)
    classes = router_classes(t, src, dst, np.full(len(src), 2e6), RoutingPolicy("valiant"))
    assert classes is not None
    assert classes.n_classes == 36 * 36 and classes.count.sum() == len(src)
    fast = run_traffic(t, src, dst, 2e6, "valiant")
    curve = saturation(t, src, dst, np.array([0.3, 1.0]), "valiant")
    _per_flow(monkeypatch)
    slow = run_traffic(t, src, dst, 2e6, "valiant")
    assert np.allclose(fast.fct, slow.fct, rtol=1e-9)
    assert fast.throughput_at_start == pytest.approx(slow.throughput_at_start, rel=1e-9)
    assert [b["link"] for b in fast.busiest] == [b["link"] for b in slow.busiest]
    assert [b["bytes"] for b in fast.busiest] == pytest.approx([b["bytes"] for b in slow.busiest])
    for a, b in zip(curve, saturation(t, src, dst, np.array([0.3, 1.0]), "valiant"), strict=True):
        assert a == pytest.approx(b, rel=1e-9)


@pytest.mark.parametrize(
    ("kwargs", "routing", "pattern"),
    [
        ({"a": 4, "p": 2, "h": 2}, "valiant", "permutation"),  # hosts of a router differ
        ({"a": 4, "p": 2, "h": 2}, "ecmp", "alltoall"),  # per-flow hashing: no classes
        ({"a": 4, "p": 2, "h": 2}, "valiant-flow", "alltoall"),
        ({"a": 4, "p": 2, "h": 2, "g": 5}, "valiant", "alltoall"),  # two links per pair: hashed
    ],
)
def test_classes_only_where_they_are_exact(
    kwargs: dict[str, int], routing: str, pattern: str
) -> None:
    t = dragonfly(**kwargs)
    n = int((t.node_tier == 0).sum())
    src, dst = pattern_flows(pattern, n, seed=1)
    size = np.full(len(src), 1e6)
    assert router_classes(t, src, dst, size, RoutingPolicy(routing)) is None


def test_unequal_sizes_or_a_missing_host_solve_flow_by_flow() -> None:
    t = dragonfly(a=4, p=2, h=2)
    src, dst = pattern_flows("alltoall", 72)
    policy = RoutingPolicy("valiant")
    size = np.full(len(src), 1e6)
    size[3] = 2e6
    assert router_classes(t, src, dst, size, policy) is None
    keep = src != 0  # host 0 sends nothing: its router's hosts are no longer alike
    assert router_classes(t, src[keep], dst[keep], np.full(int(keep.sum()), 1e6), policy) is None
