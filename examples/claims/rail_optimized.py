"""Claim: "In a Rail-Optimized layout: GPU #1 in every single rack is connected to 'Switch Plane 1'
... This ensures that when an All-Reduce operation happens, the traffic stays within its 'rail,'
minimizing the number of 'hops' a packet takes through the network. This reduces latency and,
more importantly, reduces network contention."

64 DGX H100 nodes (512 GPUs, 8 x 400G NDR per node, Quantum-2 QM9700 leaves and spines, two
scalable units of 32 nodes), on commwall's flow engine, two ways to cable the same NICs:

* **rail-optimized** (the DGX SuperPOD design): NIC i of every node of a scalable unit (SU) on
  rail leaf i of that SU; the SUs' leaves meet at the spines.
* **fat-tree** (node-local cabling): all 8 NICs of a node on one leaf, so 4 nodes share a leaf.

An 8 GiB all-reduce over all 512 GPUs, ring (NCCL's 16 channels, two per NIC, each visiting the
64 nodes in order) and hierarchical (reduce-scatter in the node, 8 per-rail rings across nodes, all-gather):
the bytes every link class carries, the switches an inter-node hop crosses and the bus bandwidth
under ECMP over several seeds. A ring hop from node i to node i+1 on rail r stays on one leaf
unless i and i+1 are under different leaves: per channel that happens B = nodes / nodes per leaf
times (2 SU boundaries rail-optimized, 16 leaf boundaries fat-tree), so the leaf-spine cables
carry 2 (up and down) x B x 2(p-1)/p x 8 GiB in all, whatever the channel count. (8 GiB, not 1:
a 1 GiB ring over 512 ranks spends most of its 1,022 steps waiting on per-step latency, at about a
third of the link rate, so no layout's links are full enough to collide; 8 GiB is link-bound.)

And where the rail does not help by itself: expert-parallel all-to-all, 1 GiB per GPU in 8
concurrent groups of 8 nodes (EP 64, four groups per SU, the whole cluster busy), where GPU i of
a node sends to every GPU j of the other nodes. Without NCCL's PXN, GPU i uses its own NIC and
lands on NIC j of the other node: another rail, so over the spine for 7 of every 8 destinations.
With PXN the bytes first cross NVLink to the node's GPU j and stay on rail j.

Run: ``python examples/claims/rail_optimized.py``
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np
from _common import Cited, catalog, cite, fmt, report, table, verdict

from commwall.cluster import Cluster, build_cluster
from commwall.collectives import Op, Proto
from commwall.collectives.schedule import CollectiveTask, Group, Placement, Schedule
from commwall.engines.analytic import AnalyticEngine
from commwall.engines.communicators import group_members, world_group
from commwall.engines.flow.engine import FlowEngine
from commwall.engines.flow.network import FlowNetwork
from commwall.engines.transfers import compile_collective
from commwall.routing import RoutingPolicy, route
from commwall.scenario import ClusterSpec

CLAIM = (
    "In a Rail-Optimized layout ... when an All-Reduce operation happens, the traffic stays within "
    "its 'rail,' minimizing the number of 'hops' a packet takes through the network. This reduces "
    "latency and, more importantly, reduces network contention."
)
PRESET = "dgx-h100"
NODES = 64
#: The all-reduce's size (link-bound, see the module doc) and the all-to-all's per GPU.
AR_SIZE = 8 * 2**30
SIZE = 2**30
KINDS = ("rail-optimized", "fat-tree")
ALGOS = ("ring", "hierarchical")
SEEDS = tuple(range(4))
#: Expert-parallel all-to-all: groups of EP_NODES nodes, EP_COPIES of them side by side.
EP_NODES = 8
EP_COPIES = 8
A2A_ROUTINGS = ("ecmp", "ecmp+pxn")
#: The claim holds for all-reduce if the rail layout cuts the ring's spine bytes at least 4x,
#: never loses bus bandwidth to ECMP collisions, and does at least as well as the fat tree.
SPINE_CUT_AT_LEAST = 4.0
#: A run counts as slowed by the network when it takes 0.1% longer than without contention.
SLOWED = 1.001


@dataclass(frozen=True)
class AllReduceRow:
    kind: str
    algo: str
    bytes_by_class: dict[str, float]  # bytes, summed over links of the class (both directions)
    busbw: tuple[float, ...]  # bytes/s, ECMP, one per seed
    time: tuple[float, ...]  # s, ECMP, one per seed
    spray_busbw: float  # bytes/s, packet spraying (no collisions)
    analytic_time: float  # s, the analytic engine (no network contention)

    @property
    def busbw_mean(self) -> float:
        return float(np.mean(self.busbw))

    @property
    def slowed_seeds(self) -> int:
        """Seeds whose ECMP run is slower than the contention-free time."""
        return sum(t > self.analytic_time * SLOWED for t in self.time)


@dataclass(frozen=True)
class AllToAllRow:
    kind: str
    routing: str
    bytes_by_class: dict[str, float]
    busbw: float
    slowdown: float  # flow time over the analytic (contention-free) time

    @property
    def spine_share(self) -> float:
        """Share of the network bytes that cross the spine (both counted up and down)."""
        return self.bytes_by_class["leaf-spine"] / self.bytes_by_class["access (NIC-leaf)"]


@dataclass(frozen=True)
class Numbers:
    nodes: int
    gpus: int
    rails: int
    nodes_per_leaf: dict[str, int]  # per topology kind
    leaf_crossings: dict[str, int]  # ring hops per channel that leave their leaf, per kind
    switches_per_hop: dict[str, float]  # mean switches per inter-node ring hop, per kind
    switch_latency: float  # s
    channels: int  # ring channels (NCCL)
    channel_rate: float  # bytes/s, a ring channel's cap
    uplink: float  # bytes/s, payload capacity of one 400G cable
    allreduce: tuple[AllReduceRow, ...]
    alltoall: tuple[AllToAllRow, ...]
    inputs: tuple[Cited, ...]

    def ar(self, kind: str, algo: str) -> AllReduceRow:
        return next(r for r in self.allreduce if r.kind == kind and r.algo == algo)

    def a2a(self, kind: str, routing: str) -> AllToAllRow:
        return next(r for r in self.alltoall if r.kind == kind and r.routing == routing)

    @property
    def spine_cut(self) -> float:
        """Fat-tree over rail-optimized leaf-spine bytes of the ring all-reduce."""
        rail = self.ar("rail-optimized", "ring").bytes_by_class["leaf-spine"]
        fat = self.ar("fat-tree", "ring").bytes_by_class["leaf-spine"]
        return fat / rail

    @property
    def holds(self) -> bool:
        rail = [self.ar("rail-optimized", a) for a in ALGOS]
        fat = [self.ar("fat-tree", a) for a in ALGOS]
        return (
            self.spine_cut >= SPINE_CUT_AT_LEAST
            and all(r.slowed_seeds == 0 for r in rail)
            and all(r.busbw_mean >= f.busbw_mean / SLOWED for r, f in zip(rail, fat, strict=True))
        )


def cluster(kind: str) -> Cluster:
    return build_cluster(
        ClusterSpec.model_validate({"preset": PRESET, "nodes": NODES, "topology": {"kind": kind}})
    )


def ring_hops(cl: Cluster) -> tuple[int, float]:
    """Leaf crossings per channel of a node-order ring, and mean switches per inter-node hop
    (routes of NIC r of node i to NIC r of node i + 1, every rail)."""
    rails = cl.nics_per_node
    node = np.repeat(np.arange(cl.n_nodes), rails)
    rail = np.tile(np.arange(rails), cl.n_nodes)
    src = node * rails + rail
    dst = (node + 1) % cl.n_nodes * rails + rail
    hops = route(cl.scale_out_topology(), src, dst, RoutingPolicy("ecmp")).hops
    crossings = int(np.count_nonzero(hops > 2)) // rails
    return crossings, float(np.mean(hops - 1))


def world_task(cl: Cluster, op: Op, algo: str | None) -> CollectiveTask:
    return CollectiveTask(op, AR_SIZE, world_group(cl, cl.world()), algo, Proto.SIMPLE)


def ep_task(cl: Cluster) -> CollectiveTask:
    """All-to-all in EP_COPIES groups of EP_NODES consecutive nodes, all at once."""
    g = cl.gpus_per_node
    size = EP_NODES * g
    group = Group("ep", EP_NODES, g, Placement(size, bases=tuple(range(0, EP_COPIES * size, size))))
    return CollectiveTask(Op.ALLTOALL, SIZE, group, None, Proto.SIMPLE)


def flow(cl: Cluster, task: CollectiveTask, routing: str, seed: int = 0) -> Any:
    return FlowEngine("all").run(Schedule.single(task), cl, routing, seed=seed)


def ring_channels(cl: Cluster) -> tuple[int, float]:
    """NCCL ring channels of the all-reduce and each one's rate cap (bytes/s)."""
    task = world_task(cl, Op.ALL_REDUCE, "ring")
    cost = AnalyticEngine("all").cost(task, cl)
    plan = compile_collective(task.op, AR_SIZE, group_members(task.group, cl), cl, cost)
    chains = plan.stages[0].chains
    return len(chains), float(chains[0].rate)


def allreduce_row(cl: Cluster, kind: str, algo: str) -> AllReduceRow:
    task = world_task(cl, Op.ALL_REDUCE, algo)
    runs = [flow(cl, task, "ecmp", seed) for seed in SEEDS]
    return AllReduceRow(
        kind=kind,
        algo=algo,
        bytes_by_class=dict(runs[0].details["bytes_by_link_class"]),
        busbw=tuple(r.phases[0].busbw for r in runs),
        time=tuple(r.makespan for r in runs),
        spray_busbw=flow(cl, task, "spray").phases[0].busbw,
        analytic_time=AnalyticEngine("all").cost(task, cl).time,
    )


def alltoall_row(cl: Cluster, kind: str, routing: str) -> AllToAllRow:
    r = flow(cl, ep_task(cl), routing)
    return AllToAllRow(
        kind=kind,
        routing=routing,
        bytes_by_class=dict(r.details["bytes_by_link_class"]),
        busbw=r.phases[0].busbw,
        slowdown=float(r.counters["max_slowdown_vs_analytic"]),
    )


@cache
def numbers() -> Numbers:
    cat = catalog()
    preset = cat.preset(PRESET)
    switch = cat.switch(preset.switch)
    clusters = {kind: cluster(kind) for kind in KINDS}
    rail = clusters["rail-optimized"]
    hops = {kind: ring_hops(c) for kind, c in clusters.items()}
    channels, channel_rate = ring_channels(rail)
    inputs = (
        cite(preset, "gpus_per_node", unit="GPUs"),
        cite(preset, "nics_per_node", unit="NICs"),
        cite(cat.nic(preset.nic), "rate", unit="b/s"),
        cite(switch, "ports", unit="ports"),
        cite(switch, "latency", unit="s"),
        Cited(
            "nodes per scalable unit (one rail leaf per rail per SU)",
            rail.nodes_per_leaf,
            "nodes",
            preset.source_for("topology"),
        ),
    )
    return Numbers(
        nodes=NODES,
        gpus=rail.n_gpus,
        rails=rail.nics_per_node,
        nodes_per_leaf={k: c.nodes_per_leaf for k, c in clusters.items()},
        leaf_crossings={k: h[0] for k, h in hops.items()},
        switches_per_hop={k: h[1] for k, h in hops.items()},
        switch_latency=float(switch.latency),
        channels=channels,
        channel_rate=channel_rate,
        uplink=float(FlowNetwork(rail).capacity()[0]),
        allreduce=tuple(allreduce_row(clusters[k], k, a) for k in KINDS for a in ALGOS),
        alltoall=tuple(alltoall_row(clusters[k], k, r) for k in KINDS for r in A2A_ROUTINGS),
        inputs=inputs,
    )


def gb(x: float) -> str:
    return f"{x / 1e9:,.1f} GB"


def slowed_seeds(r: AllReduceRow) -> str:
    return f"slowed on {r.slowed_seeds} of {len(SEEDS)} seeds" if r.slowed_seeds else "not slowed"


def slowed(x: float) -> str:
    return f"slowed x{x:.2f}" if x > SLOWED else "not slowed"


def main() -> None:
    n = numbers()
    ring_r, ring_f = n.ar("rail-optimized", "ring"), n.ar("fat-tree", "ring")
    hier_r, hier_f = n.ar("rail-optimized", "hierarchical"), n.ar("fat-tree", "hierarchical")
    a_rail, a_rail_pxn = n.a2a("rail-optimized", "ecmp"), n.a2a("rail-optimized", "ecmp+pxn")
    a_fat, a_fat_pxn = n.a2a("fat-tree", "ecmp"), n.a2a("fat-tree", "ecmp+pxn")
    npl, cross, sw = n.nodes_per_leaf, n.leaf_crossings, n.switches_per_hop
    per_rail = n.channels // n.rails
    overfill = int(n.uplink // n.channel_rate) + 1
    ep = f"EP all-to-all ({EP_COPIES} x {EP_NODES} nodes)"
    answers = [
        (
            "cluster",
            f"{n.nodes} x {PRESET}, {n.gpus} GPUs, {n.rails} rails; a rail leaf holds "
            f"{npl['rail-optimized']} nodes (one SU), a fat-tree leaf {npl['fat-tree']} nodes",
        ),
        (
            "ring: leaf crossings / channel",
            f"rail-optimized {cross['rail-optimized']} of {n.nodes} node hops, "
            f"fat-tree {cross['fat-tree']} of {n.nodes}",
        ),
        (
            "ring: switches per node hop",
            f"rail-optimized {sw['rail-optimized']:.3f}, fat-tree {sw['fat-tree']:.3f}",
        ),
        (
            "ring: leaf-spine bytes",
            f"rail-optimized {gb(ring_r.bytes_by_class['leaf-spine'])}, fat-tree "
            f"{gb(ring_f.bytes_by_class['leaf-spine'])} ({n.spine_cut:.0f}x); NIC-leaf "
            f"{gb(ring_r.bytes_by_class['access (NIC-leaf)'])} on both",
        ),
        (
            f"ring busbw, ECMP, {len(SEEDS)} seeds",
            f"rail-optimized {fmt(ring_r.busbw_mean, 'B/s')} ({ring_r.slowed_seeds} seeds "
            f"slowed), fat-tree mean {fmt(ring_f.busbw_mean, 'B/s')}, worst "
            f"{fmt(min(ring_f.busbw), 'B/s')} ({ring_f.slowed_seeds} of {len(SEEDS)} slowed)",
        ),
        (
            "ring busbw, spraying",
            f"rail-optimized {fmt(ring_r.spray_busbw, 'B/s')}, "
            f"fat-tree {fmt(ring_f.spray_busbw, 'B/s')}",
        ),
        (
            "hierarchical: leaf-spine bytes",
            f"rail-optimized {gb(hier_r.bytes_by_class['leaf-spine'])}, "
            f"fat-tree {gb(hier_f.bytes_by_class['leaf-spine'])}",
        ),
        (
            "hierarchical busbw, ECMP",
            f"rail-optimized {fmt(hier_r.busbw_mean, 'B/s')} ({hier_r.slowed_seeds} slowed), "
            f"fat-tree {fmt(hier_f.busbw_mean, 'B/s')} ({hier_f.slowed_seeds} slowed)",
        ),
        (
            f"{ep}: over spine",
            f"rail-optimized {a_rail.spine_share:.1%} without PXN, {a_rail_pxn.spine_share:.1%} "
            f"with; fat-tree {a_fat.spine_share:.1%} either way",
        ),
        (
            f"{ep}: busbw",
            f"rail-optimized {fmt(a_rail.busbw, 'B/s')} ({slowed(a_rail.slowdown)}), with PXN "
            f"{fmt(a_rail_pxn.busbw, 'B/s')} ({slowed(a_rail_pxn.slowdown)}); fat-tree "
            f"{fmt(a_fat.busbw, 'B/s')} ({slowed(a_fat.slowdown)}), with PXN "
            f"{fmt(a_fat_pxn.busbw, 'B/s')} ({slowed(a_fat_pxn.slowdown)})",
        ),
        (
            f"{ep}: NVLink bytes",
            f"{gb(a_rail.bytes_by_class['scale-up'])} without PXN, "
            f"{gb(a_rail_pxn.bytes_by_class['scale-up'])} with",
        ),
    ]
    nvlink_more = a_rail_pxn.bytes_by_class["scale-up"] - a_rail.bytes_by_class["scale-up"]
    print(
        report(
            "rail_optimized",
            CLAIM,
            n.inputs,
            answers,
            verdict(
                n.holds,
                f"for all-reduce. A ring leaves its rail leaf only at the "
                f"{cross['rail-optimized']} SU boundaries ({cross['fat-tree']} leaf boundaries "
                f"when a node's NICs share a leaf): {n.spine_cut:.0f}x fewer bytes on the "
                f"leaf-spine cables, {sw['rail-optimized']:.2f} switches per hop instead of "
                f"{sw['fat-tree']:.2f}, and no ECMP collision slows it (busbw "
                f"{fmt(ring_r.busbw_mean, 'B/s')} on every seed, against "
                f"{fmt(ring_f.busbw_mean, 'B/s')} on average for the fat tree). The rail does not "
                f"keep all traffic by itself: an EP all-to-all without PXN sends "
                f"{a_rail.spine_share:.1%} of its bytes over the spine and is "
                f"{slowed(a_rail.slowdown)} (fat tree: {a_fat.spine_share:.0%}, "
                f"{slowed(a_fat.slowdown)}); PXN brings that to "
                f"{a_rail_pxn.spine_share:.0%} by moving {gb(nvlink_more)} more over NVLink.",
            ),
            notes=(
                f"the ring all-reduce is NVLink-bound here ({n.channels} channels x "
                f"{fmt(n.channel_rate, 'B/s')}): with spraying both layouts reach the same busbw; "
                "the layouts differ in how much traffic ECMP can collide.",
                f"rail-optimized cannot collide: at an SU boundary only {per_rail} channels leave "
                f"a rail leaf, {fmt(per_rail * n.channel_rate, 'B/s')} together, under one "
                f"uplink's {fmt(n.uplink, 'B/s')}. The fat tree sends all {n.channels} channels "
                f"out of a leaf at every {npl['fat-tree']}th node; {overfill} hashed onto one "
                "uplink overfill it.",
                "the hierarchical all-reduce's inter-node rings run one per rail, two channels "
                "each (NCCL's two per NIC): on the rail layout they never leave a rail leaf but "
                f"at the SU boundaries ({slowed_seeds(hier_r)}); on the fat tree they share "
                f"leaf uplinks ({slowed_seeds(hier_f)}), and it carries "
                f"{hier_f.bytes_by_class['leaf-spine'] / hier_r.bytes_by_class['leaf-spine']:.0f}x "
                "the spine bytes.",
                f"latency: a hop that leaves its leaf crosses 3 switches instead of 1 "
                f"({fmt(2 * n.switch_latency, 's')} more), negligible against an 8 GiB collective.",
                f"EP all-to-all without PXN: the rail leaves' uplinks run at "
                f"{a_rail.spine_share:.1%} of the NICs' traffic on average (the fat tree's at "
                f"{a_fat.spine_share:.0%}), close enough to full that ECMP's uneven hashing "
                "overfills some.",
                "PXN on the fat tree saves no spine bytes and funnels a node's traffic into fewer, "
                "fatter connections, which ECMP balances worse.",
            ),
        )
    )
    print()
    print(
        f"{AR_SIZE >> 30} GiB all-reduce over {n.gpus} GPUs: bytes per link class, busbw (ECMP, mean of seeds)"
    )
    print(
        table(
            ("layout / algorithm", "NVLink", "NIC-leaf", "leaf-spine", "busbw", "time"),
            (
                (
                    f"{r.kind} {r.algo}",
                    gb(r.bytes_by_class["scale-up"]),
                    gb(r.bytes_by_class["access (NIC-leaf)"]),
                    gb(r.bytes_by_class["leaf-spine"]),
                    fmt(r.busbw_mean, "B/s"),
                    fmt(float(np.mean(r.time)), "s"),
                )
                for r in n.allreduce
            ),
        )
    )
    print()
    print(f"{SIZE >> 30} GiB {ep}, {EP_NODES * n.rails} GPUs per group:")
    print(
        table(
            ("layout / routing", "NVLink", "NIC-leaf", "leaf-spine", "over spine", "busbw"),
            (
                (
                    f"{r.kind} {r.routing}",
                    gb(r.bytes_by_class["scale-up"]),
                    gb(r.bytes_by_class["access (NIC-leaf)"]),
                    gb(r.bytes_by_class["leaf-spine"]),
                    f"{r.spine_share:.1%}",
                    fmt(r.busbw, "B/s"),
                )
                for r in n.alltoall
            ),
        )
    )


if __name__ == "__main__":
    main()
