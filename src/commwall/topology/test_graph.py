"""The Topology type: arrays, views, checks."""

from __future__ import annotations

import doctest
import importlib

import networkx as nx
import numpy as np
import pytest

from commwall.topology import LinkKind, NodeKind, Topology, TopologyError, fat_tree


def tiny() -> Topology:
    return Topology.from_cables(
        "tiny",
        node_kind=[NodeKind.GPU, NodeKind.SWITCH, NodeKind.NIC],
        node_tier=[0, 1, 0],
        cable_a=[0, 2],
        cable_b=[1, 1],
        capacity=[50e9, 25e9],
        length_m=2.0,
    )


def test_from_cables_lays_out_two_directions_per_cable() -> None:
    t = tiny().validate()
    assert t.n_nodes == 3 and t.n_links == 4 and t.n_cables == 2
    assert t.link_src.tolist() == [0, 1, 2, 1]
    assert t.link_dst.tolist() == [1, 0, 1, 2]
    assert t.link_capacity.tolist() == [50e9, 50e9, 25e9, 25e9]
    assert t.link_tier.tolist() == [1, 1, 1, 1]
    assert t.link_kind.tolist() == [LinkKind.ACCESS] * 4
    assert t.endpoints().tolist() == [0, 2]


def test_counts() -> None:
    c = tiny().counts()
    assert (c.endpoints, c.switches, c.cables, c.by_kind) == (2, {1: 1}, {1: 2}, {"access": 2})
    assert c.total_switches == 1 and c.total_cables == 2


def test_node_kind_codes_round_trip() -> None:
    for kind in NodeKind:
        assert NodeKind.from_code(kind.code) is kind
    assert [k.value for k in NodeKind] == ["gpu", "nic", "nvswitch", "pcie_switch", "cpu", "switch"]


def test_to_networkx_carries_attributes() -> None:
    g = tiny().to_networkx()
    assert isinstance(g, nx.MultiDiGraph)
    assert g.number_of_nodes() == 3 and g.number_of_edges() == 4
    assert g.nodes[1] == {"kind": "switch", "tier": 1, "group": -1}
    e = g.edges[2, 1, 2]
    assert e["capacity"] == 25e9 and e["length_m"] == 2.0 and e["medium"] == "copper"


def test_fat_tree_networkx_view_matches_arrays() -> None:
    t = fat_tree(4)
    g = t.to_networkx()
    assert g.number_of_edges() == t.n_links
    assert nx.is_strongly_connected(g)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("link_capacity", np.array([50e9, 50e9, 0.0, 0.0]), "capacity 0.0: must be > 0"),
        ("link_dst", np.array([1, 0, 1, 7], dtype=np.int32), "out of range"),
        ("link_dst", np.array([1, 0, 1, 0], dtype=np.int32), "not the two directions"),
        ("link_latency", np.array([0.0, 0.0, -1.0, 0.0]), "link_latency"),
        ("node_tier", np.array([0, 1], dtype=np.int8), "node_tier has 2 entries, need 3"),
    ],
)
def test_validate_names_the_problem(field: str, value: np.ndarray, message: str) -> None:
    t = tiny()
    broken = Topology(**{**vars(t), field: value})
    with pytest.raises(TopologyError, match=message):
        broken.validate()


def test_from_cables_checks_ranges() -> None:
    with pytest.raises(TopologyError, match="out of range"):
        Topology.from_cables(
            "x", node_kind=["gpu"], node_tier=[0], cable_a=[0], cable_b=[3], capacity=1
        )
    with pytest.raises(TopologyError, match="one pair per cable"):
        Topology.from_cables(
            "x", node_kind=["gpu"], node_tier=[0], cable_a=[0], cable_b=[], capacity=1
        )


def test_routes_need_a_path_fn() -> None:
    with pytest.raises(TopologyError, match="no analytic routes"):
        tiny().path_count(0, 2)


def test_route_index_out_of_range() -> None:
    with pytest.raises(TopologyError, match="index=4: route index out of range"):
        fat_tree(4).path_links(0, 15, 4)


@pytest.mark.parametrize(
    "module",
    ["graph", "clos", "fat_tree", "dragonfly", "metrics", "io", "__init__"],
)
def test_doctests(module: str) -> None:
    name = "commwall.topology" + ("" if module == "__init__" else f".{module}")
    result = doctest.testmod(importlib.import_module(name))
    assert result.failed == 0
