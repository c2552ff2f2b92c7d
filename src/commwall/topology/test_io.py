"""Generic import: edge lists and GraphML, validated on the way in."""

from __future__ import annotations

from pathlib import Path

import networkx as nx
import pytest

from commwall.topology import NodeKind, TopologyError, from_edge_list, from_graphml


def test_edge_list(tmp_path: Path) -> None:
    p = tmp_path / "net.txt"
    p.write_text(
        "# two GPUs on one switch\n"
        "node g0 gpu\n"
        "node sw switch 1\n"
        "g0 sw 400Gb/s 100ns 3\n"
        "g1 sw 200Gb/s\n"
    )
    t = from_edge_list(p)
    assert t.name == "net" and t.n_links == 4
    assert t.params["names"] == ["g0", "sw", "g1"]
    assert NodeKind.from_code(int(t.node_kind[0])) is NodeKind.GPU
    assert NodeKind.from_code(int(t.node_kind[2])) is NodeKind.NIC  # one cable, no kind: endpoint
    assert t.link_capacity.tolist() == [50e9, 50e9, 25e9, 25e9]
    assert t.link_latency[0] == pytest.approx(100e-9) and t.link_length_m[0] == 3.0
    assert t.endpoints().tolist() == [0, 2]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a b 400Gb\n", "net.txt:1: capacity='400Gb'"),
        ("a\n", "net.txt:1: write 'A B"),
        ("node a router\na b\n", "kind 'router' is not allowed; allowed: gpu"),
        ("a a\n", "joins a node to itself"),
        ("a b 1 1 x\n", "length_m 'x' is not a number"),
        ("node a\n", "write 'node NAME KIND"),
    ],
)
def test_edge_list_errors(tmp_path: Path, text: str, message: str) -> None:
    p = tmp_path / "net.txt"
    p.write_text(text)
    with pytest.raises(TopologyError, match=message):
        from_edge_list(p)


def test_graphml_round_trip(tmp_path: Path) -> None:
    g = nx.Graph()
    g.add_node("h0", kind="nic", tier=0)
    g.add_node("h1", kind="nic", tier=0)
    g.add_node("s", kind="switch", tier=1)
    g.add_edge("h0", "s", capacity=50e9, latency=1e-7, length_m=2.0)
    g.add_edge("h1", "s", capacity="200 Gb/s")
    p = tmp_path / "net.graphml"
    nx.write_graphml(g, p)
    t = from_graphml(p)
    assert t.counts().endpoints == 2 and t.counts().switches == {1: 1}
    assert sorted(set(t.link_capacity.tolist())) == [25e9, 50e9]


def test_graphml_unreadable(tmp_path: Path) -> None:
    p = tmp_path / "bad.graphml"
    p.write_text("not xml")
    with pytest.raises(TopologyError, match="not a readable GraphML"):
        from_graphml(p)
