"""The packet engine on a cluster: any :class:`~commwall.collectives.schedule.Schedule`,
packet by packet (``Engine`` protocol; small clusters).

Collectives are compiled exactly as the flow engine compiles them
(:func:`commwall.engines.transfers.compile_collective`: stages of pipelined chains, each
capped at the rate the analytic model gives it alone) and every hop of every chain becomes one
packet flow of the chain's bytes, paced at the chain's cap, from GPU to GPU. The graph the
packets cross is the scale-out topology plus, per GPU, its NVLink (or PCIe) ports to a scale-up
switch and its PCIe attachment to its NIC; scale-up and PCIe links are credit-based whatever the
fabric, scale-out links carry the fabric's flow control (:mod:`commwall.transport.fabric`).
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
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from commwall.cluster import HOST_BOUNCE_LATENCY
from commwall.collectives.ops import busbw_factor
from commwall.collectives.schedule import CollectiveTask, ComputeTask, Schedule
from commwall.collectives.tuner import choose, evaluate
from commwall.engines.base import PhaseResult, Result, check_order
from commwall.engines.communicators import exact_shape, group_members, non_blocking
from commwall.engines.packet.config import PacketConfig
from commwall.engines.packet.kernel import PS_PER_S, ps
from commwall.engines.packet.network import Network, PacketGraph, Progress, Task, route_maps
from commwall.engines.packet.result import summarise
from commwall.engines.packet.traffic import PACKET_ROUTINGS, default_routing, topology_routes
from commwall.engines.transfers import NETSWITCH, NVSWITCH, TransferPlan, compile_collective
from commwall.transport.fabric import TransportError, fabric_profile, for_routing

if TYPE_CHECKING:
    from commwall.cluster import Cluster

__all__ = ["MAX_PACKET_GPUS", "NOT_PACKET", "PCIE_ATTACH_LATENCY", "PacketEngine", "cluster_graph"]

#: Algorithms the packet engine cannot run: reduction inside the scale-out switches (SHARP).
NOT_PACKET = frozenset({"collnet"})

#: Largest cluster the engine accepts (GPUs): packet-level runs are for small fabrics.
MAX_PACKET_GPUS = 4096
#: PCIe latency from a GPU to its NIC with GPUDirect RDMA, one way (estimate, ours: a PCIe
#: switch hop on the order of 100s of ns).
PCIE_ATTACH_LATENCY = 500e-9


def _fabric_name(cluster: Cluster) -> str:
    return "ib" if cluster.fabric == "ib" else "roce"


@dataclass
class _Layout:
    """Node numbering of a cluster's packet graph."""

    n_net: int  # scale-out topology nodes (NIC endpoints first)
    gpu0: int  # node of GPU 0
    nvs0: int  # node of scale-up switch 0
    net_links: int
    su_base: int  # link index of GPU 0's scale-up out link
    pcie_base: int  # link index of GPU 0's PCIe link to its NIC


def cluster_graph(cluster: Cluster) -> tuple[PacketGraph, _Layout]:
    """The cluster as a packet graph (module doc)."""
    from commwall.engines.packet.network import graph_from_topology

    gpn, rails, n_gpus = cluster.gpus_per_node, cluster.nics_per_node, cluster.n_gpus
    domains = max(1, n_gpus // cluster.scale_up_domain)
    if cluster.n_domains > 1:
        topo = cluster.scale_out_topology()
        base = graph_from_topology(topo)
        n_net = topo.n_nodes
    else:  # one scale-up domain: no fabric
        base = PacketGraph([], [], *(np.empty(0, np.int64),) * 2, np.empty(0), np.empty(0),
                           np.empty(0, np.bool_), [])  # fmt: skip
        n_net = 0
    names, kinds = list(base.names), ["nic" if k == "host" else k for k in base.kinds]
    gpu0 = len(names)
    names += [f"GPU {g}" for g in range(n_gpus)]
    kinds += ["gpu"] * n_gpus
    nvs0 = len(names)
    medium = "NVSwitch" if cluster.scale_up == "nvlink" else "PCIe switch"
    names += [f"{medium} {d}" for d in range(domains)]
    kinds += ["nvswitch"] * domains
    g = np.arange(n_gpus, dtype=np.int64)
    nvs = nvs0 + g // cluster.scale_up_domain
    su_rate = cluster.scale_up_link_rate
    src = [base.link_src, np.stack([gpu0 + g, nvs], 1).reshape(-1)]
    dst = [base.link_dst, np.stack([nvs, gpu0 + g], 1).reshape(-1)]
    net_rate = base.link_rate * cluster.net_calibration.bandwidth_factor
    rate = [net_rate, np.full(2 * n_gpus, su_rate)]
    lat = [base.link_latency, np.zeros(2 * n_gpus)]
    link_names = list(base.link_names)
    for gg in range(n_gpus):
        link_names += [f"GPU {gg} → {names[nvs[gg]]}", f"{names[nvs[gg]]} → GPU {gg}"]
    if n_net:
        nic = (g // gpn) * rails + (g % gpn) * rails // gpn
        attach = PCIE_ATTACH_LATENCY + (0.0 if cluster.gpudirect_rdma else HOST_BOUNCE_LATENCY)
        src.append(np.stack([gpu0 + g, nic], 1).reshape(-1))
        dst.append(np.stack([nic, gpu0 + g], 1).reshape(-1))
        rate.append(np.full(2 * n_gpus, float(cluster.pcie.bandwidth(16))))
        lat.append(np.full(2 * n_gpus, attach))
        for gg in range(n_gpus):
            link_names += [f"GPU {gg} → {names[nic[gg]]}", f"{names[nic[gg]]} → GPU {gg}"]
    n_base = len(base.link_src)
    fabric = np.zeros(n_base + sum(len(s) for s in src[1:]), dtype=np.bool_)
    fabric[:n_base] = True
    graph = PacketGraph(
        names=names,
        kinds=kinds,
        link_src=np.concatenate(src).astype(np.int64),
        link_dst=np.concatenate(dst).astype(np.int64),
        link_rate=np.concatenate(rate),
        link_latency=np.concatenate(lat),
        link_fabric=fabric,
        link_names=link_names,
    )
    layout = _Layout(n_net, gpu0, nvs0, n_base, n_base, n_base + 2 * n_gpus)
    return graph, layout


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
                f"{MAX_PACKET_GPUS}; use --engine flow for larger clusters"
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
        graph, layout = cluster_graph(cluster)
        rate = float(np.max(graph.link_rate[: layout.net_links])) if layout.net_links else 1e11
        profile = for_routing(fabric_profile(fabric, rate, cfg.mtu), pick)
        switch_latency = float(cluster.switch.latency)
        net = Network(graph, profile, cfg, switch_latency=switch_latency, routing=pick, seed=seed)
        builder = _Builder(net, cluster, layout, pick, seed)
        spans, plans = builder.tasks(schedule, self.policy)
        t0 = time.perf_counter()
        net.run(progress=self.progress)
        wall = time.perf_counter() - t0
        checked = net.check()
        result = _result(
            schedule, net, spans, plans, summarise(net, wall_s=wall, invariants=checked)
        )
        if builder.notes:
            result.details["substitutions"] = list(builder.notes)
        return result


class _Builder:
    """Turns a schedule's phases into the network's tasks and flows."""

    def __init__(self, net: Network, cluster: Cluster, layout: _Layout, routing: str, seed: int):
        self.net = net
        self.cluster = cluster
        self.lay = layout
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
        fabric = self.ideal.comm_fabric(exact.group.n_domains, exact.group.ranks_per_domain)
        real = self.cluster.comm_fabric(exact.group.n_domains, exact.group.ranks_per_domain)
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
                    "(SHARP); use --engine flow"
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
        plan = compile_collective(exact.op, exact.nbytes, members, self.cluster, capped)
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
            for s, d, r in zip(
                chain.src.tolist(), chain.dst.tolist(), chain.rail.tolist(), strict=True
            ):
                if s == NETSWITCH or d == NETSWITCH:
                    raise TransportError("SHARP hops are not modelled by the packet engine")
                lay = self.lay
                if NVSWITCH in (s, d):  # NVLink SHARP: the domain's switch reduces/multicasts
                    gpu = d if s == NVSWITCH else s
                    switch = lay.nvs0 + gpu // self.cluster.scale_up_domain
                    up, down = [[lay.su_base + 2 * gpu]], [[lay.su_base + 2 * gpu + 1]]
                    ends = (switch, lay.gpu0 + gpu) if s == NVSWITCH else (lay.gpu0 + gpu, switch)
                    fwd, rev = (down, up) if s == NVSWITCH else (up, down)
                else:
                    ends = (lay.gpu0 + s, lay.gpu0 + d)
                    fwd, rev = self.paths(s, d, r), self.paths(d, s, r)
                out.append(
                    self.net.add_flow(
                        ends[0],
                        ends[1],
                        size,
                        route_maps(fwd, self.net.ports),
                        route_maps(rev, self.net.ports),
                        cap=float(chain.rate) if np.isfinite(chain.rate) else 0.0,
                    )
                )
        return out

    # ---- paths ---------------------------------------------------------------------------

    def _own_rail(self, gpu: int) -> int:
        c = self.cluster
        return (gpu % c.gpus_per_node) * c.nics_per_node // c.gpus_per_node

    def _rail_gpu(self, node: int, rail: int) -> int:
        gpn, rails = self.cluster.gpus_per_node, self.cluster.nics_per_node
        if rails >= gpn:
            return node * gpn + rail * gpn // rails
        return node * gpn + (rail * gpn + rails - 1) // rails

    def _nvlink(self, a: int, b: int) -> list[int]:
        base = self.lay.su_base
        return [base + 2 * a, base + 2 * b + 1]

    def paths(self, src: int, dst: int, rail: int) -> list[list[int]]:
        """Link lists (one per equal-cost fabric route) of a hop from GPU ``src`` to ``dst``."""
        c, lay = self.cluster, self.lay
        if src // c.scale_up_domain == dst // c.scale_up_domain:
            return [self._nvlink(src, dst)]
        gpn, rails = c.gpus_per_node, c.nics_per_node
        pxn = c.topology.kind == "rail-only"
        chosen = rail if rail >= 0 else (self._own_rail(dst) if pxn else -1)
        r_src = chosen if chosen >= 0 else self._own_rail(src)
        r_dst = chosen if chosen >= 0 else self._own_rail(dst)
        node_s, node_d = src // gpn, dst // gpn
        head: list[int] = []
        tail: list[int] = []
        via_s, via_d = src, dst
        if self._own_rail(src) != r_src and self._rail_gpu(node_s, r_src) != src:
            via_s = self._rail_gpu(node_s, r_src)
            head = self._nvlink(src, via_s)
        if self._own_rail(dst) != r_dst and self._rail_gpu(node_d, r_dst) != dst:
            via_d = self._rail_gpu(node_d, r_dst)
            tail = self._nvlink(via_d, dst)
        ep_s, ep_d = node_s * rails + r_src, node_d * rails + r_dst
        head = [*head, lay.pcie_base + 2 * via_s]
        tail = [lay.pcie_base + 2 * via_d + 1, *tail]
        key = (ep_s, ep_d, rail)
        fabric = self.routes.get(key)
        if fabric is None:
            topo = self.cluster.scale_out_topology()
            salt = self.seed + (rail if rail >= 0 else 0) * 7919
            fabric = topology_routes(topo, [ep_s], [ep_d], self.routing, salt)[0]
            self.routes[key] = fabric
        return [head + f + tail for f in fabric]


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
