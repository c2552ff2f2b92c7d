"""Import a topology someone else drew: an edge list or a GraphML file, checked on the way in.

Edge list format (``#`` starts a comment)::

    node gpu0 gpu            # optional: declare a node's kind (gpu nic nvswitch pcie_switch cpu
    node sw0 switch 1        # switch) and tier; undeclared nodes are switches of tier 1, or
    gpu0 sw0 400Gb/s 100ns 3 # endpoints (nic, tier 0) when they have one cable and no kind given
                             # cable: a b [capacity] [latency] [length_m]

GraphML: node attributes ``kind`` and ``tier``, edge attributes ``capacity`` (bytes/s or a unit
string), ``latency`` (s or unit string), ``length_m``; each undirected edge is one cable.

>>> import tempfile, pathlib
>>> p = pathlib.Path(tempfile.mkdtemp()) / "tiny.txt"
>>> _ = p.write_text("h0 s0 400Gb/s\\nh1 s0 400Gb/s\\n")
>>> t = from_edge_list(p)
>>> t.counts().endpoints, t.n_links
(2, 4)
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from commwall.topology import _checks as ck
from commwall.topology.graph import Medium, NodeKind, Topology, TopologyError

if TYPE_CHECKING:  # networkx is imported where GraphML is read (~11 MiB on every start)
    import networkx as nx  # type: ignore[import-untyped]  # no stubs in the venv

__all__ = ["from_edge_list", "from_graphml", "from_networkx"]

_ENDPOINT_KINDS = (NodeKind.GPU, NodeKind.NIC)
_KINDS = ", ".join(k.value for k in NodeKind)


def _kind(value: object, where: str) -> NodeKind:
    try:
        return NodeKind(str(value))
    except ValueError:
        raise TopologyError(f"{where}: kind {value!r} is not allowed; allowed: {_KINDS}") from None


def _build(
    name: str,
    nodes: dict[str, dict[str, Any]],
    cables: Iterable[tuple[str, str, dict[str, Any], str]],
    link_rate: str | float,
) -> Topology:
    cable_list = list(cables)
    degree: dict[str, int] = dict.fromkeys(nodes, 0)
    for a, b, _, _ in cable_list:
        degree[a] = degree.get(a, 0) + 1
        degree[b] = degree.get(b, 0) + 1
    index = {n: i for i, n in enumerate(degree)}
    kinds, tiers = [], []
    for n in degree:
        attrs = nodes.get(n, {})
        if "kind" in attrs:
            kind = _kind(attrs["kind"], f"node {n!r}")
        else:
            kind = NodeKind.NIC if degree[n] == 1 else NodeKind.SWITCH
        default_tier = 0 if kind in _ENDPOINT_KINDS else 1
        tier = attrs.get("tier", default_tier)
        try:
            tier = int(tier)
        except (TypeError, ValueError):
            raise TopologyError(f"node {n!r}: tier {tier!r} must be a whole number") from None
        kinds.append(kind)
        tiers.append(tier)
    caps, lats, lengths = [], [], []
    for a, b, attrs, where in cable_list:
        if a == b:
            raise TopologyError(f"{where}: cable {a!r} -- {b!r} joins a node to itself")
        caps.append(ck.check_rate(f"{where}: capacity", attrs.get("capacity", link_rate)))
        lats.append(ck.check_time(f"{where}: latency", attrs.get("latency", 0.0)))
        try:
            length = float(attrs.get("length_m", 0.0))
        except (TypeError, ValueError):
            raise TopologyError(
                f"{where}: length_m {attrs['length_m']!r} is not a number"
            ) from None
        lengths.append(length)
    return Topology.from_cables(
        name,
        node_kind=kinds,
        node_tier=tiers,
        cable_a=[index[a] for a, _, _, _ in cable_list],
        cable_b=[index[b] for _, b, _, _ in cable_list],
        capacity=caps,
        latency=lats,
        length_m=lengths,
        medium=Medium.FIBRE,
        params={"kind": "imported", "names": list(index)},
    ).validate()


def from_edge_list(path: str | Path, link_rate: str | float = ck.DEFAULT_LINK_RATE) -> Topology:
    """Read the edge-list format above; cables without a capacity get ``link_rate``."""
    p = Path(path)
    nodes: dict[str, dict[str, Any]] = {}
    cables: list[tuple[str, str, dict[str, Any], str]] = []
    for number, raw in enumerate(p.read_text().splitlines(), 1):
        words = raw.split("#", 1)[0].split()
        where = f"{p.name}:{number}"
        if not words:
            continue
        if words[0] == "node":
            if len(words) not in (3, 4):
                raise TopologyError(f"{where}: write 'node NAME KIND [TIER]', got {raw.strip()!r}")
            nodes[words[1]] = {"kind": words[2], **({"tier": words[3]} if len(words) == 4 else {})}
            continue
        if not 2 <= len(words) <= 5:
            raise TopologyError(
                f"{where}: write 'A B [capacity] [latency] [length_m]', got {raw.strip()!r}"
            )
        attrs = dict(zip(("capacity", "latency", "length_m"), words[2:], strict=False))
        cables.append((words[0], words[1], attrs, where))
    return _build(p.stem, nodes, cables, link_rate)


def from_networkx(
    graph: nx.Graph, name: str = "imported", link_rate: str | float = ck.DEFAULT_LINK_RATE
) -> Topology:
    """Each undirected edge (or each direction pair of a directed graph) becomes one cable."""
    g = graph.to_undirected(as_view=False) if graph.is_directed() else graph
    nodes = {str(n): dict(d) for n, d in g.nodes(data=True)}
    cables = [(str(a), str(b), dict(d), f"edge {a!r}-{b!r}") for a, b, d in g.edges(data=True)]
    return _build(name, nodes, cables, link_rate)


def from_graphml(path: str | Path, link_rate: str | float = ck.DEFAULT_LINK_RATE) -> Topology:
    """Read a GraphML file (node ``kind``/``tier``, edge ``capacity``/``latency``/``length_m``)."""
    import networkx as nx

    p = Path(path)
    try:
        graph = nx.read_graphml(p)
    except Exception as e:  # networkx raises several parser errors; name the file either way
        raise TopologyError(f"{p}: not a readable GraphML file ({e})") from None
    return from_networkx(graph, p.stem, link_rate)
