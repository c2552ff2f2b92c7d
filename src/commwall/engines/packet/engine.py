"""The packet engine on a cluster: any :class:`~commwall.collectives.schedule.Schedule`,
packet by packet (``Engine`` protocol; small clusters).

Collectives are compiled exactly as the flow engine compiles them
(:func:`commwall.engines.transfers.compile_collective`: stages of pipelined chains, each
capped at the rate the analytic model gives it alone) and every hop of every chain becomes one
packet flow of the chain's bytes, paced at the chain's cap, from GPU to GPU. The graph the
packets cross is the cluster's link graph (:class:`commwall.engines.links.ClusterLinks`, the one
the flow engine uses): the scale-out topology plus, per GPU, its NVLink (or PCIe) ports to a
scale-up switch and its PCIe attachment to its NIC; scale-up and PCIe links are credit-based
whatever the fabric, scale-out links carry the fabric's flow control
(:mod:`commwall.transport.fabric`).
A hop through a NIC that is not the GPU's own crosses NVLink to the GPU that owns it first
(NCCL's PXN), at both ends, as in the flow engine. Without GPUDirect RDMA the PCIe hop to the NIC
adds :data:`commwall.cluster.HOST_BOUNCE_LATENCY` (a bounce through host memory).

Approximations (stated): the pipelined hops of a chain start together and each moves the
chain's bytes (the steady state of a pipeline, as in the flow engine); a stage's analytic
latency is charged before its flows start, as in the flow engine. NVLink SHARP (NVLS,
NVLS-tree) runs as flows into and out of the domain's NVSwitch node (the switch reduces and
multicasts, at the rate the time model gives each GPU); reduction in the scale-out switches
(CollNet/SHARP) is not modelled — the engine runs NCCL's next choice without it and says so
(``details["substitutions"]``).
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from commwall.collectives.ops import busbw_factor
from commwall.collectives.schedule import CollectiveTask, ComputeTask, Schedule
from commwall.collectives.tuner import choose, evaluate
from commwall.engines.base import PhaseResult, Result, check_order
from commwall.engines.communicators import exact_shape, group_members, non_blocking
from commwall.engines.links import ClusterLinks, IntArray, Relays
from commwall.engines.packet.config import PacketConfig
from commwall.engines.packet.fast import pick_kernel, run_network
from commwall.engines.packet.kernel import PS_PER_S, ps
from commwall.engines.packet.network import Network, PacketGraph, Progress, Task, route_maps
from commwall.engines.packet.result import summarise
from commwall.engines.packet.traffic import PACKET_ROUTINGS, default_routing, topology_routes
from commwall.engines.transfers import NETSWITCH, NVSWITCH, TransferPlan, compile_collective
from commwall.transport.fabric import TransportError, fabric_profile, for_routing

if TYPE_CHECKING:
    from commwall.cluster import Cluster

__all__ = ["MAX_PACKET_GPUS", "NOT_PACKET", "PacketEngine", "cluster_graph"]

#: Algorithms the packet engine cannot run: reduction inside the scale-out switches (SHARP).
NOT_PACKET = frozenset({"collnet"})

#: Largest cluster the engine accepts (GPUs): packet-level runs are for small fabrics.
MAX_PACKET_GPUS = 4096


def _fabric_name(cluster: Cluster) -> str:
    return "ib" if cluster.fabric == "ib" else "roce"


def cluster_graph(cluster: Cluster) -> tuple[PacketGraph, ClusterLinks]:
    """The cluster's link graph (:class:`~commwall.engines.links.ClusterLinks`) as a packet
    graph, with the link graph that numbers it."""
    links = ClusterLinks(cluster)
    graph = PacketGraph(
        names=[links.node_name(i) for i in range(links.n_nodes)],
        kinds=[links.node_kind(i) for i in range(links.n_nodes)],
        link_src=links.link_src,
        link_dst=links.link_dst,
        link_rate=links.line_rate(),
        link_latency=links.latency(),
        link_fabric=links.fabric_mask(),
        link_names=[links.link_name(i) for i in range(links.n_links)],
    )
    return graph, links


class PacketEngine:
    """Packet-level engine (``Engine`` protocol). ``fabric`` overrides the cluster's (``ib`` for
    InfiniBand clusters, ``roce`` for Ethernet ones): any of
    :data:`~commwall.transport.FABRICS`; ``progress`` hears how far a run is
    (:meth:`~commwall.engines.packet.network.Network.run`)."""

    name = "packet"

    def __init__(
        self,
        fabric: str | None = None,
        config: PacketConfig | None = None,
        policy: str = "nccl",
        progress: Progress | None = None,
    ) -> None:
        self.fabric = fabric
        self.config = config or PacketConfig()
        self.policy = policy
        self.progress = progress

    def run(
        self, schedule: Schedule, cluster: Cluster, routing: str | None = None, *, seed: int = 0
    ) -> Result:
        """Run ``schedule`` packet by packet; ``routing`` is ``ecmp``, ``spray`` or ``adaptive``
        (default: the fabric's, :func:`~commwall.engines.packet.traffic.default_routing`)."""
        if cluster.n_gpus > MAX_PACKET_GPUS:
            raise TransportError(
                f"cluster has {cluster.n_gpus} GPUs: the packet engine takes at most "
                f"{MAX_PACKET_GPUS}; use the flow engine for larger clusters"
            )
        fabric = self.fabric or _fabric_name(cluster)
        pick = (routing or default_routing(fabric)).lower()
        if pick not in PACKET_ROUTINGS:
            raise TransportError(
                f"routing={routing!r}: the packet engine takes {', '.join(PACKET_ROUTINGS)}"
            )
        cfg = self.config
        if cfg.mtu != cluster.mtu:
            cfg = replace(cfg, mtu=cluster.mtu)
        graph, links = cluster_graph(cluster)
        rate = float(np.max(graph.link_rate[: links.net_links])) if links.net_links else 1e11
        profile = for_routing(fabric_profile(fabric, rate, cfg.mtu), pick)
        switch_latency = float(cluster.switch.latency)
        net = Network(graph, profile, cfg, switch_latency=switch_latency, routing=pick, seed=seed)
        builder = _Builder(net, cluster, links, pick, seed)
        spans, plans = builder.tasks(schedule, self.policy)
        kernel = pick_kernel(net, cfg.kernel)  # "auto": the compiled loop for large runs
        t0 = time.perf_counter()
        run_network(net, kernel, self.progress)
        wall = time.perf_counter() - t0
        checked = net.check()
        packets = summarise(net, wall_s=wall, invariants=checked, kernel=kernel)
        result = _result(schedule, net, spans, plans, packets)
        if builder.notes:
            result.details["substitutions"] = list(builder.notes)
        return result


class _Builder:
    """Turns a schedule's phases into the network's tasks and flows."""

    def __init__(
        self, net: Network, cluster: Cluster, links: ClusterLinks, routing: str, seed: int
    ) -> None:
        self.net = net
        self.cluster = cluster
        self.links = links
        self.routing = routing
        self.seed = seed
        self.ideal = non_blocking(cluster)
        self.plans: dict[CollectiveTask, TransferPlan] = {}
        self.notes: list[str] = []  # what ran other than NCCL's choice, and why
        self.routes: dict[tuple[int, int, int], list[list[int]]] = {}

    # ---- compile -------------------------------------------------------------------------

    def plan(self, task: CollectiveTask, policy: str) -> TransferPlan:
        if task in self.plans:
            return self.plans[task]
        exact = exact_shape(task)
        shape = exact.group.n_domains, exact.group.ranks_per_domain
        fabric = exact.group.limited(self.ideal.comm_fabric(*shape))
        real = exact.group.limited(self.cluster.comm_fabric(*shape))
        choice = choose(
            exact.op, exact.nbytes, real, algo=exact.algo, proto=exact.proto, policy=policy
        )
        best = choice.best
        if best.algo in NOT_PACKET:
            options = [c for c in choice.considered if c.algo not in NOT_PACKET]
            if not options:
                raise TransportError(
                    f"{task.op.value} on {task.group.name!r}: only {best.algo} can run it, and "
                    "the packet engine does not model reduction in the scale-out switches "
                    "(SHARP); use the flow engine"
                )
            alt = min(options, key=lambda c: (c.selection_time, c.algo, c.proto.value))
            self.notes.append(
                f"{task.op.value} {exact.nbytes:.0f} B on {task.group.name!r}: NCCL's choice "
                f"{best.algo}/{best.proto.value} reduces in the scale-out switches (SHARP), which "
                f"the packet engine does not model; it runs {alt.algo}/{alt.proto.value} instead"
            )
            best = alt
        capped = best
        if best.algo not in ("local",):
            capped = evaluate(exact.op, exact.nbytes, fabric, best.algo, best.proto)
        members = group_members(exact.group, self.cluster)
        plan = compile_collective(
            exact.op, exact.nbytes, members, self.cluster, capped, group=exact.group
        )
        self.plans[task] = plan
        return plan

    # ---- tasks ---------------------------------------------------------------------------

    def tasks(
        self, schedule: Schedule, policy: str
    ) -> tuple[list[tuple[int, int]], list[TransferPlan | None]]:
        net = self.net
        spans: list[tuple[int, int]] = []
        plans: list[TransferPlan | None] = []
        stream_last: dict[str, int] = {}
        for phase in schedule.phases:
            deps = {spans[d][1] for d in phase.after}
            if phase.stream in stream_last:
                deps.add(stream_last[phase.stream])
            after = tuple(sorted(deps))
            first = len(net.tasks)
            task = phase.task
            if isinstance(task, ComputeTask):
                plans.append(None)
                net.add_task(Task(phase.name, ps(task.seconds * phase.repeat), [], after))
            else:
                plan = self.plan(task, policy)
                plans.append(plan)
                index: list[int] = []
                for stage in plan.stages:
                    inner = tuple(index[a] for a in stage.after)
                    waits = tuple(sorted(set(inner + (after if not stage.after else ()))))
                    flows = self.flows(stage, phase.repeat)
                    name = phase.name if len(plan.stages) == 1 else f"{phase.name} [{stage.name}]"
                    delay = ps(stage.latency * phase.repeat)
                    index.append(net.add_task(Task(name, delay, flows, waits)))
                if not index:
                    index.append(net.add_task(Task(phase.name, 0, [], after)))
                if len(index) > 1:
                    net.add_task(Task(f"{phase.name} end", 0, [], tuple(index)))
            last = len(net.tasks) - 1
            spans.append((first, last))
            stream_last[phase.stream] = last
        return spans, plans

    def flows(self, stage: Any, repeat: int) -> list[Any]:
        out = []
        for chain in stage.chains:
            size = round(chain.nbytes * repeat)
            if size < 1 or repeat == 0:
                continue
            if np.any(chain.src == NETSWITCH) or np.any(chain.dst == NETSWITCH):
                raise TransportError("SHARP hops are not modelled by the packet engine")
            for s, d, fwd, rev in self.hops(chain.src, chain.dst, chain.rail):
                out.append(
                    self.net.add_flow(
                        s,
                        d,
                        size,
                        route_maps(fwd, self.net.ports),
                        route_maps(rev, self.net.ports),
                        cap=float(chain.rate) if np.isfinite(chain.rate) else 0.0,
                    )
                )
        return out

    # ---- paths ---------------------------------------------------------------------------

    def hops(
        self, src: IntArray, dst: IntArray, rail: IntArray
    ) -> list[tuple[int, int, list[list[int]], list[list[int]]]]:
        """Per hop of a chain: its end nodes and the link lists (one per equal-cost fabric route)
        it may take forward and back (acknowledgements). NVLink SHARP hops (NVLS: one end is
        :data:`~commwall.engines.transfers.NVSWITCH`) run between the GPU and its domain's
        scale-up switch, which reduces and multicasts."""
        links = self.links
        src, dst = np.asarray(src, np.int64), np.asarray(dst, np.int64)
        rail = np.asarray(rail, np.int64)
        a, b = np.maximum(src, 0), np.maximum(dst, 0)
        nvls = (src == NVSWITCH) | (dst == NVSWITCH)
        same = a // links.domain == b // links.domain
        pxn = self.cluster.topology.kind == "rail-only"
        there, back = links.relays(a, b, rail, pxn), links.relays(b, a, rail, pxn)
        out = []
        for i, (s, d, r) in enumerate(zip(src.tolist(), dst.tolist(), rail.tolist(), strict=True)):
            if nvls[i]:
                gpu = d if s == NVSWITCH else s
                switch = links.switch0 + gpu // links.domain
                up = [[int(links.scale_up_link(gpu, inbound=False))]]
                down = [[int(links.scale_up_link(gpu, inbound=True))]]
                if s == NVSWITCH:
                    out.append((switch, links.gpu0 + gpu, down, up))
                else:
                    out.append((links.gpu0 + gpu, switch, up, down))
            elif same[i]:
                fwd, rev = [self._nvlink(s, d)], [self._nvlink(d, s)]
                out.append((links.gpu0 + s, links.gpu0 + d, fwd, rev))
            else:
                fwd, rev = self._paths(there, i, s, d, r), self._paths(back, i, d, s, r)
                out.append((links.gpu0 + s, links.gpu0 + d, fwd, rev))
        return out

    def _nvlink(self, a: int, b: int) -> list[int]:
        """GPU ``a`` → its scale-up switch → GPU ``b``."""
        links = self.links
        return [int(links.scale_up_link(a, inbound=False)), int(links.scale_up_link(b, True))]

    def _paths(self, at: Relays, i: int, src: int, dst: int, rail: int) -> list[list[int]]:
        """Link lists of hop ``i`` of ``at`` from GPU ``src`` to ``dst`` across the fabric: a PXN
        NVLink leg where the NIC is another GPU's, the PCIe attachment, one fabric route each,
        and the same in reverse order at the far end."""
        via_s, via_d = int(at.via_src[i]), int(at.via_dst[i])
        head = self._nvlink(src, via_s) if at.leg_src[i] else []
        tail = self._nvlink(via_d, dst) if at.leg_dst[i] else []
        head = [*head, int(self.links.pcie_link(via_s, inbound=False))]
        tail = [int(self.links.pcie_link(via_d, inbound=True)), *tail]
        routes = self._routes(int(at.ep_src[i]), int(at.ep_dst[i]), rail)
        return [head + f + tail for f in routes]

    def _routes(self, ep_s: int, ep_d: int, rail: int) -> list[list[int]]:
        key = (ep_s, ep_d, rail)
        fabric = self.routes.get(key)
        if fabric is None:
            topo = self.links.topology
            salt = self.seed + (rail if rail >= 0 else 0) * 7919
            fabric = topology_routes(topo, [ep_s], [ep_d], self.routing, salt)[0]
            self.routes[key] = fabric
        return fabric


def _result(
    schedule: Schedule,
    net: Network,
    spans: list[tuple[int, int]],
    plans: list[TransferPlan | None],
    packets: Any,
) -> Result:
    phases: list[PhaseResult] = []
    tasks = net.tasks
    for phase, plan, (first, last) in zip(schedule.phases, plans, spans, strict=True):
        start = min(t.ready for t in tasks[first : last + 1]) / PS_PER_S
        end = tasks[last].end / PS_PER_S
        if plan is None or not isinstance(phase.task, CollectiveTask):
            phases.append(
                PhaseResult(phase.name, phase.category, phase.stream, start, end, phase.repeat)
            )
            continue
        per_call = (end - start) / max(phase.repeat, 1)
        p = plan.nranks
        bus = busbw_factor(phase.task.op, p) * phase.task.nbytes / per_call if per_call > 0 else 0
        phases.append(
            PhaseResult(
                phase.name,
                phase.category,
                phase.stream,
                start,
                end,
                phase.repeat,
                op=phase.task.op.value,
                nbytes=phase.task.nbytes,
                nranks=p,
                algo=plan.algo,
                proto=plan.proto.value,
                busbw=bus,
                bottleneck=f"packet ({packets.fabric})",
            )
        )
    check_order(schedule, phases, tolerance=1e-12)
    makespan = max((ph.end for ph in phases), default=0.0)
    details = packets.to_dict()
    for key in ("engine", "tasks", "fct_s", "fct_mean_s", "makespan_s", "invariants_checked"):
        details.pop(key, None)
    details["fabric"] = packets.fabric
    return Result(
        engine="packet",
        phases=tuple(phases),
        makespan=makespan,
        counters={**packets.counters, "flows": float(packets.flows)},
        invariants=("dependencies respected", "streams serialised", *packets.invariants),
        details={"packet": details, "routing": packets.routing},
    )
