"""Plain traffic on a topology, packet by packet: N:1 incast, permutation, or any flow list.

>>> from commwall.topology import leaf_spine
>>> t = leaf_spine(4, 8, link_rate=12.5e9)      # 8 hosts at 100 Gb/s
>>> r = run_packet_traffic(t, [1, 2], [0, 0], 256 * 1024, "ib")
>>> r.counters["drop_packets"], round(r.fairness, 2)   # credits: lossless, shared evenly
(0.0, 1.0)
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence

import numpy as np
import numpy.typing as npt

from commwall.engines.packet.config import PacketConfig
from commwall.engines.packet.fast import pick_kernel, run_network
from commwall.engines.packet.network import (
    Network,
    Progress,
    Task,
    graph_from_topology,
    route_maps,
)
from commwall.engines.packet.result import PacketResult, summarise
from commwall.routing import route_paths
from commwall.routing.oracle import SPRAY_MAX_ROUTES
from commwall.scenario import PACKET_ROUTINGS
from commwall.topology.graph import Topology
from commwall.transport.fabric import (
    FABRICS,
    EcnParams,
    TransportError,
    fabric_profile,
    for_routing,
)

__all__ = [
    "PACKET_ROUTINGS",
    "default_routing",
    "run_packet_traffic",
    "topology_routes",
    "with_cable_latency",
]


def with_cable_latency(topology: Topology, seconds: float) -> Topology:
    """``topology`` with every cable's propagation delay set to ``seconds`` (the builders use
    the cable length; benchmarks and what-ifs want a round 1 µs).

    >>> from commwall.topology import leaf_spine
    >>> float(with_cable_latency(leaf_spine(4, 8), 1e-6).link_latency.max())
    1e-06
    """
    from dataclasses import replace

    if not (np.isfinite(seconds) and seconds >= 0):
        raise TransportError(f"latency={seconds!r}: must be a finite number of seconds >= 0")
    return replace(topology, link_latency=np.full(topology.n_links, float(seconds)))


def default_routing(fabric: str) -> str:
    """Ultra Ethernet sprays by entropy; the others hash flows (ECMP)."""
    return "spray" if fabric == "uec" else "ecmp"


def topology_routes(
    topology: Topology, src: Sequence[int], dst: Sequence[int], routing: str, seed: int
) -> list[list[list[int]]]:
    """Link lists per flow: the one ECMP path, or every equal-cost path (at most 64, evenly
    spaced, as :func:`commwall.routing.oracle.spray_routes`) for spraying and adaptive routing."""
    return list(iter_routes(topology, src, dst, routing, seed))


def iter_routes(
    topology: Topology, src: Sequence[int], dst: Sequence[int], routing: str, seed: int
) -> Iterator[list[list[int]]]:
    """:func:`topology_routes` one flow at a time: a sprayed flow's paths are built only when
    asked for, so that a caller that keeps only their union holds one flow's at a time."""
    s = np.asarray(src, dtype=np.int64)
    d = np.asarray(dst, dtype=np.int64)
    if routing == "ecmp":
        rows = route_paths(topology, s, d, "ecmp", seed=seed).links
        for i in range(len(s)):
            yield [[int(x) for x in rows[i] if x >= 0]]
        return
    oracle = topology.path_fn
    if oracle is None:
        raise TransportError(f"topology {topology.name!r} has no routes (path_fn is None)")
    for a, b in zip(s.tolist(), d.tolist(), strict=True):
        count = oracle.count(a, b)
        if count == 0:
            raise TransportError(f"no route from endpoint {a} to endpoint {b}")
        k = min(count, SPRAY_MAX_ROUTES)
        yield [oracle.links(a, b, (j * count) // k).tolist() for j in range(k)]


def run_packet_traffic(
    topology: Topology,
    src: Sequence[int] | npt.NDArray[np.int64],
    dst: Sequence[int] | npt.NDArray[np.int64],
    nbytes: int | float | Sequence[float],
    fabric: str,
    *,
    routing: str | None = None,
    config: PacketConfig | None = None,
    seed: int = 0,
    ecn: EcnParams | None = None,
    rto_s: float | None = None,
    progress: Progress | None = None,
) -> PacketResult:
    """Run flows ``src[i] → dst[i]`` (endpoint indices) of ``nbytes``, all starting at time 0,
    on ``topology`` with ``fabric`` (one of :data:`~commwall.transport.FABRICS`); ``ecn`` and
    ``rto_s`` replace the fabric's marking thresholds and retransmission timeout; ``progress``
    hears how far the run is (:meth:`~commwall.engines.packet.network.Network.run`)."""
    cfg = config or PacketConfig()
    net = build_traffic_network(
        topology, src, dst, nbytes, fabric, routing=routing, config=cfg, seed=seed, ecn=ecn,
        rto_s=rto_s,
    )  # fmt: skip
    kernel = pick_kernel(net, cfg.kernel)  # "auto": the compiled loop where it applies
    t0 = time.perf_counter()
    run_network(net, kernel, progress)
    wall = time.perf_counter() - t0
    checked = net.check()
    return summarise(net, wall_s=wall, invariants=checked, kernel=kernel)


def build_traffic_network(
    topology: Topology,
    src: Sequence[int] | npt.NDArray[np.int64],
    dst: Sequence[int] | npt.NDArray[np.int64],
    nbytes: int | float | Sequence[float],
    fabric: str,
    *,
    routing: str | None = None,
    config: PacketConfig | None = None,
    seed: int = 0,
    ecn: EcnParams | None = None,
    rto_s: float | None = None,
) -> Network:
    """The network :func:`run_packet_traffic` runs (the same arguments), built and not run."""
    cfg = config or PacketConfig()
    if fabric not in FABRICS:
        raise TransportError(f"fabric={fabric!r}: unknown; allowed: {', '.join(FABRICS)}")
    pick = routing or default_routing(fabric)
    if pick not in PACKET_ROUTINGS:
        raise TransportError(f"routing={pick!r}: allowed: {', '.join(PACKET_ROUTINGS)}")
    s = [int(x) for x in np.asarray(src).tolist()]
    d = [int(x) for x in np.asarray(dst).tolist()]
    if len(s) != len(d) or not s:
        raise TransportError(f"src and dst: need the same number (>= 1) of endpoints, got "
                             f"{len(s)} and {len(d)}")  # fmt: skip
    sizes = np.broadcast_to(np.asarray(nbytes, dtype=np.float64), (len(s),))
    if np.any(~np.isfinite(sizes)) or np.any(sizes < 1):
        raise TransportError("nbytes: every flow needs at least 1 byte")
    endpoints = int(np.count_nonzero(topology.node_tier == 0))
    for name, values in (("src", s), ("dst", d)):
        bad = [v for v in values if not 0 <= v < endpoints]
        if bad:
            raise TransportError(
                f"{name}={bad[0]}: not an endpoint; the topology has endpoints 0..{endpoints - 1}"
            )
    if any(a == b for a, b in zip(s, d, strict=True)):
        raise TransportError("a flow sends to itself (src == dst)")
    rate = float(np.max(topology.link_capacity))
    profile = for_routing(fabric_profile(fabric, rate, cfg.mtu, ecn=ecn, rto_s=rto_s), pick)
    graph = graph_from_topology(topology)
    switch_latency = float(topology.params.get("switch_latency", 0.0))
    net = Network(graph, profile, cfg, switch_latency=switch_latency, routing=pick, seed=seed)
    flows = []
    fwd_routes = iter_routes(topology, s, d, pick, seed)
    rev_routes = iter_routes(topology, d, s, pick, seed + 1)
    for i, (fwd_paths, rev_paths) in enumerate(zip(fwd_routes, rev_routes, strict=True)):
        fwd = route_maps(fwd_paths, net.ports)
        rev = route_maps(rev_paths, net.ports)
        flows.append(net.add_flow(s[i], d[i], int(sizes[i]), fwd, rev))
    net.add_task(Task("traffic", 0, flows))
    return net
