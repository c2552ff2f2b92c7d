"""The public API and what bad input gets: one RoutingError naming the field, value, allowed."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

import commwall.routing as routing
from commwall.routing import ROUTINGS, RoutingError, RoutingPolicy, route, route_paths
from commwall.topology import NodeKind, Topology, fat_tree, rail_only, rail_optimized


def test_public_api() -> None:
    assert ROUTINGS == (
        "ecmp", "flowlet", "spray", "cells", "adaptive", "valiant", "ugal", "valiant-flow"
    )  # fmt: skip
    assert set(routing.__all__) == {
        "CELL_EFFICIENCY",
        "CELL_REASSEMBLY_LATENCY",
        "ROUTINGS",
        "Paths",
        "Routes",
        "RoutingError",
        "RoutingPolicy",
        "link_capacities",
        "link_load",
        "route",
        "route_paths",
    }
    assert issubclass(RoutingError, ValueError)
    p = RoutingPolicy("ecmp")
    assert (p.qps, p.polarized, p.flowlet_bytes, p.max_flowlets, p.adaptive_candidates) == (
        1,
        False,
        65536.0,
        16,
        8,
    )
    assert 0 < p.cell_efficiency <= 1 and p.cell_reassembly_latency >= 0


@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [
        ({"name": "rps"}, r"name='rps'.*allowed: ecmp, flowlet, spray, cells, adaptive"),
        ({"name": "ecmp", "qps": 0}, r"qps: 0 is not allowed; allowed: a whole number >= 1"),
        ({"name": "ecmp", "qps": 2.5}, r"qps: 2.5 is not allowed; allowed: a whole number"),
        ({"name": "ecmp", "qps": True}, r"qps: True is not allowed"),
        ({"name": "ecmp", "polarized": 1}, r"polarized=1: must be True or False"),
        ({"name": "flowlet", "flowlet_bytes": 0}, r"flowlet_bytes=0: must be a number > 0"),
        (
            {"name": "flowlet", "max_flowlets": 0},
            r"max_flowlets: 0 is not allowed; allowed: a whole number >= 1",
        ),
        ({"name": "cells", "cell_efficiency": 1.2}, r"cell_efficiency=1.2: .*> 0 and <= 1"),
        ({"name": "cells", "cell_reassembly_latency": -1}, r"cell_reassembly_latency=-1"),
        ({"name": "adaptive", "adaptive_candidates": 0}, r"adaptive_candidates: 0 is not allowed"),
    ],
)
def test_bad_policy(kwargs: dict[str, Any], pattern: str) -> None:
    with pytest.raises(RoutingError, match=pattern):
        RoutingPolicy(**kwargs)


def _t() -> Topology:
    return fat_tree(4)


@pytest.mark.parametrize(
    ("call", "pattern"),
    [
        (lambda t: route(t, [0, 1], [2], "ecmp"), r"dst: has 1 entries, need 2"),
        (lambda t: route(t, [[0]], [[1]], "ecmp"), r"src: must be a 1-D array"),
        (lambda t: route(t, [0.5], [1], "ecmp"), r"src: must hold integers"),
        (lambda t: route(t, [0], [16], "ecmp"), r"dst\[0\]=16: not an endpoint.*0\.\.15"),
        (lambda t: route(t, [-1], [3], "ecmp"), r"src\[0\]=-1: not an endpoint"),
        (lambda t: route(t, [0], [1], "ecmp", nbytes=[1, 2]), r"nbytes: must be 1 numbers"),
        (lambda t: route(t, [0], [1], "ecmp", nbytes=[-5.0]), r"nbytes\[0\]=-5.0"),
        (lambda t: route(t, [0], [1], "ecmp", flow_id=[1, 2]), r"flow_id: has 2 entries"),
        (lambda t: route(t, [0], [1], "ecmp", seed=1.5), r"seed=1.5: must be an integer"),
        (lambda t: route(t, [0], [1], "bogus"), r"name='bogus'.*allowed"),
        (lambda t: route(t, [0], [1], 3), r"policy=3: must be a RoutingPolicy"),
        (lambda t: route_paths(t, [0], [1], "spray"), r"name='spray'.*use route\(\)"),
    ],
)
def test_bad_inputs(call: Any, pattern: str) -> None:
    with pytest.raises(RoutingError, match=pattern):
        call(_t())


def test_no_path_fn() -> None:
    t = Topology.from_cables(
        "pair",
        node_kind=[NodeKind.GPU, NodeKind.SWITCH, NodeKind.GPU],
        node_tier=[0, 1, 0],
        cable_a=[0, 2],
        cable_b=[1, 1],
        capacity=50e9,
    )
    with pytest.raises(RoutingError, match=r"topology='pair': has no analytic routes"):
        route(t, [0], [2], "ecmp")


@pytest.mark.parametrize("policy", ["ecmp", "spray", "adaptive"])
def test_rail_only_cross_rail_needs_pxn(policy: str) -> None:
    """NICs on different rails have no route in a rail-only fabric: the error says PXN."""
    for t in (rail_only(32), rail_only(100, radix=16)):
        ok = route(t, [0], [8], policy)  # same rail
        assert ok.hops[0] >= 2
        with pytest.raises(RoutingError, match=re.escape("src=0, dst=1 (flow 1)") + ".*PXN"):
            route(t, [0, 0], [8, 1], policy)


def test_src_equals_dst_uses_no_link() -> None:
    t = rail_optimized(16, rails=4, radix=16)
    for name in ("ecmp", "spray", "adaptive", "flowlet"):
        r = route(t, [3, 3], [3, 9], RoutingPolicy(name, qps=4))
        assert r.hops.tolist()[0] == 0
        assert not np.any(r.flow == 0)
        assert r.extra_latency.shape == (2,)


def test_empty_batch() -> None:
    for name in ("ecmp", "spray", "adaptive", "flowlet"):
        r = route(_t(), np.array([], dtype=np.int64), np.array([], dtype=np.int64), name)
        assert r.n_flows == 0 and len(r.link) == 0 and r.hops.shape == (0,)


def test_link_load_rejects_wrong_rates() -> None:
    r = route(_t(), [0], [15], "ecmp")
    with pytest.raises(RoutingError, match=r"rates: has shape \(2,\), need \(1,\)"):
        routing.link_load(r, [1.0, 2.0], _t().n_links)
