"""The flow engine: every collective of a schedule as fluid flows on the real topology.

Each collective phase is compiled (:func:`commwall.engines.transfers.compile_collective`) into
stages of *chains* — pipelined hop sequences that move at one rate, as an NCCL ring channel or
tree pipeline does — with a rate cap equal to what the analytic model gives the chain alone on an
ideal fabric. Chains become flows over the cluster's links (:class:`FlowNetwork`): scale-up ports
of each GPU, and the scale-out fabric along the routes the routing policy picks
(:mod:`commwall.routing`). All flows active at a time share links max-min fairly
(:mod:`commwall.engines.flow.fluid`), so concurrent DP, TP and PP traffic, ECMP collisions,
oversubscription and misaligned rails slow each other for real. On a non-blocking fabric with
ideal balancing nothing binds but the caps, and the engine reproduces the analytic engine (tests).

Approximations (stated, not hidden): a phase's ``repeat`` identical calls run back to back at the
rate of the first (exact when the traffic around them is steady); the analytic latency of each
stage is charged as a fixed delay before its flows start; every copy of a communicator placement
runs the collective at the same moment; routes are chosen once per connection (NCCL keeps its
queue pairs for the life of a communicator, so repeated calls take the same paths).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from commwall.collectives.cost import Cost
from commwall.collectives.ops import busbw_factor
from commwall.collectives.schedule import (
    CollectiveTask,
    ComputeTask,
    Schedule,
)
from commwall.collectives.tuner import ALGORITHMS, evaluate
from commwall.engines.analytic import AnalyticEngine
from commwall.engines.base import EngineInputError, PhaseResult, Result, check_order
from commwall.engines.communicators import exact_shape, group_members, non_blocking
from commwall.engines.flow.fluid import FlowBatch, FluidResult, FluidTask, simulate
from commwall.engines.flow.network import FlowNetwork
from commwall.engines.transfers import TransferPlan, compile_collective
from commwall.routing import Routes, RoutingPolicy, route
from commwall.routing.routes import fold_virtual
from commwall.scenario import parse_routing_name

if TYPE_CHECKING:
    from commwall.cluster import Cluster

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


def parse_routing(name: str | None, default: str = "ecmp") -> tuple[RoutingPolicy, bool]:
    """``(policy, pxn)`` for a routing name such as ``ecmp``, ``spray+pxn`` or ``pxn`` (the
    grammar is the scenario's, :func:`commwall.scenario.parse_routing_name`)."""
    text = name or default
    try:
        policy, pxn = parse_routing_name(text)
    except ValueError as e:
        raise EngineInputError(f"routing={e}") from None
    return RoutingPolicy(policy), pxn


@dataclass
class _Stage:
    """A compiled stage waiting for routes: its flows' scale-up entries and net hops."""

    chains: int
    nbytes: FloatArray
    cap: FloatArray
    su_flow: IntArray
    su_link: IntArray
    net_flow: IntArray  # flow of each net hop
    net_key: IntArray  # index into the run's unique net connections
    net_kind: IntArray  # 0 routed, 1 SHARP up, 2 SHARP down
    net_ep: IntArray  # endpoint for SHARP hops
    latency: float


@dataclass
class _Compiled:
    """What one collective phase became."""

    plan: TransferPlan
    stages: list[_Stage]
    analytic: Cost  # the analytic engine's cost of one call on this cluster


class FlowEngine:
    """Flow-level engine (``Engine`` protocol); ``progress`` hears how far a run is
    (:func:`~commwall.engines.flow.fluid.simulate`)."""

    name = "flow"

    def __init__(
        self,
        policy: str = "nccl",
        track: int = 16,
        progress: Callable[[int, float, int, int], None] | None = None,
    ) -> None:
        self.policy = policy
        self.track = track
        self.progress = progress
        self.analytic = AnalyticEngine(policy)

    def run(
        self, schedule: Schedule, cluster: Cluster, routing: str | None = None, *, seed: int = 0
    ) -> Result:
        """Run ``schedule`` as flows; ``routing`` as :func:`parse_routing` (default: the
        cluster's own routing)."""
        policy, pxn = parse_routing(routing, cluster.routing)
        # a rail-only fabric has no path between rails: cross-rail traffic must take NVLink first
        pxn = pxn or cluster.topology.kind == "rail-only"
        net = FlowNetwork(cluster)
        ideal = non_blocking(cluster)
        connections = _Connections()
        compiled: dict[CollectiveTask, _Compiled] = {}
        per_phase: list[_Compiled | None] = []
        for phase in schedule.phases:
            task = phase.task
            if isinstance(task, ComputeTask):
                per_phase.append(None)
                continue
            if task not in compiled:
                compiled[task] = self._compile(task, cluster, ideal, net, connections, pxn)
            per_phase.append(compiled[task])
        routes = connections.route(net, policy, seed)
        scale = routes.capacity_scale if routes is not None else 1.0
        capacity = np.concatenate([net.capacity(scale), net.virtual_capacity(routes)])
        tasks, phase_tasks = self._tasks(schedule, per_phase, routes, net)
        fluid = simulate(capacity, tasks, track=self.track, progress=self.progress)
        return self._result(
            schedule, per_phase, phase_tasks, fluid, net, capacity, policy, pxn, routes
        )

    # ---- compile -------------------------------------------------------------------------

    def _compile(
        self,
        task: CollectiveTask,
        cluster: Cluster,
        ideal: Cluster,
        net: FlowNetwork,
        connections: _Connections,
        pxn: bool,
    ) -> _Compiled:
        task = exact_shape(task)
        analytic = self.analytic.cost(task, cluster)
        fabric = task.group.limited(
            ideal.comm_fabric(task.group.n_domains, task.group.ranks_per_domain)
        )
        if analytic.algo in ALGORITHMS:
            capped = evaluate(task.op, task.nbytes, fabric, analytic.algo, analytic.proto)
        else:  # a one-rank "collective" (local copy): nothing crosses a link
            capped = analytic
        members = group_members(task.group, cluster)
        plan = compile_collective(task.op, task.nbytes, members, cluster, capped, group=task.group)
        stages = [_stage(stage, net, connections, pxn) for stage in plan.stages]
        return _Compiled(plan, stages, analytic)

    # ---- fluid tasks ---------------------------------------------------------------------

    def _tasks(
        self,
        schedule: Schedule,
        per_phase: list[_Compiled | None],
        routes: Routes | None,
        net: FlowNetwork,
    ) -> tuple[list[FluidTask], list[tuple[int, int]]]:
        """Fluid tasks for every phase; ``(first, last)`` task index of each phase."""
        tasks: list[FluidTask] = []
        spans: list[tuple[int, int]] = []
        stream_last: dict[str, int] = {}
        batches: dict[int, list[FlowBatch | None]] = {}
        for phase, comp in zip(schedule.phases, per_phase, strict=True):
            deps = tuple(spans[d][1] for d in phase.after)
            if phase.stream in stream_last:
                deps = (*deps, stream_last[phase.stream])
            deps = tuple(sorted(set(deps)))
            first = len(tasks)
            if comp is None:
                assert isinstance(phase.task, ComputeTask)
                tasks.append(FluidTask(phase.name, phase.task.seconds * phase.repeat, None, deps))
            else:
                key = id(comp)
                if key not in batches:
                    batches[key] = [_batch(s, routes, net) for s in comp.stages]
                stage_index: list[int] = []
                for s, (stage, batch) in enumerate(
                    zip(comp.plan.stages, batches[key], strict=True)
                ):
                    inner = tuple(stage_index[a] for a in stage.after)
                    after = tuple(sorted(set(inner + (deps if not stage.after else ()))))
                    flows = _repeat(batch, phase.repeat)
                    name = phase.name if len(comp.stages) == 1 else f"{phase.name} [{stage.name}]"
                    tasks.append(FluidTask(name, stage.latency * phase.repeat, flows, after))
                    stage_index.append(first + s)
                if len(stage_index) > 1:
                    tasks.append(FluidTask(f"{phase.name} end", 0.0, None, tuple(stage_index)))
            last = len(tasks) - 1
            spans.append((first, last))
            stream_last[phase.stream] = last
        return tasks, spans

    # ---- result --------------------------------------------------------------------------

    def _result(
        self,
        schedule: Schedule,
        per_phase: list[_Compiled | None],
        spans: list[tuple[int, int]],
        fluid: FluidResult,
        net: FlowNetwork,
        capacity: FloatArray,
        policy: RoutingPolicy,
        pxn: bool,
        routes: Routes | None = None,
    ) -> Result:
        phases: list[PhaseResult] = []
        slowest = 0.0
        flows = 0
        for phase, comp, (first, last) in zip(schedule.phases, per_phase, spans, strict=True):
            start, end = float(fluid.start[first]), float(fluid.end[last])
            if comp is None:
                phases.append(
                    PhaseResult(phase.name, phase.category, phase.stream, start, end, phase.repeat)
                )
                continue
            assert isinstance(phase.task, CollectiveTask)
            task, cost = phase.task, comp.analytic
            per_call = (end - start) / max(phase.repeat, 1)
            p = comp.plan.nranks
            bus = busbw_factor(task.op, p) * task.nbytes / per_call if per_call > 0 else 0.0
            ratio = per_call / cost.time if cost.time > 0 else 1.0
            slowest = max(slowest, ratio)
            flows += sum(s.chains for s in comp.stages)
            bottleneck = cost.bottleneck if ratio < 1.02 else f"contention (x{ratio:.2f})"
            phases.append(
                PhaseResult(
                    phase.name,
                    phase.category,
                    phase.stream,
                    start,
                    end,
                    phase.repeat,
                    op=task.op.value,
                    nbytes=task.nbytes,
                    nranks=p,
                    algo=comp.plan.algo,
                    proto=comp.plan.proto.value,
                    busbw=bus,
                    bottleneck=bottleneck,
                )
            )
        check_order(schedule, phases, tolerance=1e-12)
        real = net.n_links
        link_bytes, peak = _real_link_figures(fluid, net, capacity, routes)
        busy = link_bytes / np.maximum(capacity[:real], 1e-300)
        makespan = float(fluid.makespan)
        hot = _busiest(busy, net, per_class=2)
        links = [
            {
                "link": int(i),
                "name": net.link_name(int(i)),
                "class": net.link_class(int(i)),
                "capacity_Bps": float(capacity[i]),
                "bytes": float(link_bytes[i]),
                "mean_utilisation": float(busy[i] / makespan) if makespan > 0 else 0.0,
                "peak_utilisation": float(peak[i]),
            }
            for i in hot
        ]
        by_class = net.bytes_by_class(link_bytes)
        timeline = fluid.timeline
        series = {
            net.link_name(int(link)) if link < real else f"virtual link {int(link)}": (
                timeline.times.tolist(),
                timeline.utilisation[k].tolist(),
            )
            for k, link in enumerate(timeline.links)
        }
        return Result(
            engine=self.name,
            phases=tuple(phases),
            makespan=makespan,
            counters={
                "phases": float(len(phases)),
                "flows": float(flows),
                "links": float(real),
                "events": float(fluid.events),
                "max_slowdown_vs_analytic": slowest,
            },
            invariants=(
                "dependencies respected",
                "streams serialised",
                "no link above capacity",
                "every byte delivered",
            ),
            details={
                "routing": policy.name + ("+pxn" if pxn else ""),
                "busiest_links": links,
                "bytes_by_link_class": by_class,
                "link_utilisation": series,
            },
        )


# ---- helpers ---------------------------------------------------------------------------


class _Connections:
    """Unique scale-out connections ``(src NIC, dst NIC, channel)`` of a run, routed once."""

    def __init__(self) -> None:
        self.index: dict[tuple[int, int, int], int] = {}
        self.src: list[int] = []
        self.dst: list[int] = []
        self.channel: list[int] = []

    def add(self, src: IntArray, dst: IntArray, channel: IntArray) -> IntArray:
        keys = np.empty(len(src), dtype=np.int64)
        for i, key in enumerate(zip(src.tolist(), dst.tolist(), channel.tolist(), strict=True)):
            found = self.index.get(key)
            if found is None:
                found = len(self.src)
                self.index[key] = found
                self.src.append(key[0])
                self.dst.append(key[1])
                self.channel.append(key[2])
            keys[i] = found
        return keys

    def route(self, net: FlowNetwork, policy: RoutingPolicy, seed: int) -> Routes | None:
        if not self.src:
            return None
        src = np.asarray(self.src, dtype=np.int64)
        dst = np.asarray(self.dst, dtype=np.int64)
        # hash identity of a connection: its channel (NCCL opens queue pairs per channel)
        flow_id = np.asarray(self.channel, dtype=np.int64)
        return route(net.topology, src, dst, policy, seed=seed, flow_id=flow_id)


def _stage(stage: Any, net: FlowNetwork, connections: _Connections, pxn: bool) -> _Stage:
    """Scale-up entries and scale-out hops of every chain of ``stage``."""
    chains = stage.chains
    n = len(chains)
    if n == 0:
        empty_i = np.empty(0, dtype=np.int64)
        return _Stage(0, np.empty(0), np.empty(0), empty_i, empty_i, empty_i, empty_i, empty_i,
                      empty_i, float(stage.latency))  # fmt: skip
    lengths = np.array([len(c.src) for c in chains], dtype=np.int64)
    flow_of_hop = np.repeat(np.arange(n, dtype=np.int64), lengths)
    src = np.concatenate([c.src for c in chains]).astype(np.int64)
    dst = np.concatenate([c.dst for c in chains]).astype(np.int64)
    rail = np.concatenate([c.rail for c in chains]).astype(np.int64)
    hops = net.hop_links(src, dst, rail, pxn=pxn)
    h = hops.net
    kind = np.where(h.up_only, 1, np.where(h.down_only, 2, 0)).astype(np.int64)
    routed = kind == 0
    keys = np.full(len(h.row), -1, dtype=np.int64)
    if routed.any():
        keys[routed] = connections.add(
            h.src_ep[routed], h.dst_ep[routed], flow_of_hop[h.row[routed]]
        )
    return _Stage(
        chains=n,
        nbytes=np.array([c.nbytes for c in chains], dtype=np.float64),
        cap=np.array([c.rate for c in chains], dtype=np.float64),
        su_flow=flow_of_hop[hops.row],
        su_link=hops.link,
        net_flow=flow_of_hop[h.row],
        net_key=keys,
        net_kind=kind,
        net_ep=h.src_ep,
        latency=float(stage.latency),
    )


def _batch(stage: _Stage, routes: Routes | None, net: FlowNetwork) -> FlowBatch | None:
    """The stage's flows with their link entries (duplicates summed: a chain crossing a link
    twice loads it twice)."""
    if stage.chains == 0:
        return None
    keep = stage.nbytes > 0
    if not keep.any():
        return None
    flow_parts = [stage.su_flow]
    link_parts = [stage.su_link]
    weight_parts = [np.ones(len(stage.su_link))]
    sharp = stage.net_kind > 0
    if sharp.any():
        ep = stage.net_ep[sharp]
        flow_parts.append(stage.net_flow[sharp])
        link_parts.append(np.where(stage.net_kind[sharp] == 1, 2 * ep, 2 * ep + 1))
        weight_parts.append(np.ones(int(sharp.sum())))
    routed = ~sharp
    if routed.any():
        assert routes is not None
        f, link, w = _expand(routes, stage.net_key[routed], stage.net_flow[routed])
        # routing numbers virtual links after the topology's; ours sit after the GPU links
        link = np.where(link >= net.net_links, link - net.net_links + net.n_links, link)
        flow_parts += [f]
        link_parts += [link]
        weight_parts += [w]
    flow = np.concatenate(flow_parts)
    link = np.concatenate(link_parts)
    weight = np.concatenate(weight_parts)
    n_links = net.n_links + (len(routes.virtual_capacity) if routes is not None else 0)
    combined = flow * n_links + link
    unique, inverse = np.unique(combined, return_inverse=True)
    summed = np.bincount(inverse, weights=weight)
    flow_u, link_u = np.divmod(unique, n_links)
    # drop empty flows (nothing to move) by renumbering
    new_id = np.cumsum(keep) - 1
    mask = keep[flow_u]
    tail = None
    if routes is not None and routed.any() and np.any(routes.extra_latency > 0):
        tail = np.zeros(stage.chains)
        np.maximum.at(tail, stage.net_flow[routed], routes.extra_latency[stage.net_key[routed]])
        tail = tail[keep]
    return FlowBatch(
        nbytes=stage.nbytes[keep],
        cap=stage.cap[keep],
        entry_flow=new_id[flow_u[mask]],
        entry_link=link_u[mask],
        entry_weight=summed[mask].astype(np.float64),
        tail_latency=tail,
    )


def _expand(
    routes: Routes, keys: IntArray, flows: IntArray
) -> tuple[IntArray, IntArray, FloatArray]:
    """Route entries of connection ``keys[i]``, attributed to chain ``flows[i]``."""
    order = np.argsort(routes.flow, kind="stable")
    sorted_flow = routes.flow[order]
    starts = np.searchsorted(sorted_flow, keys, side="left")
    ends = np.searchsorted(sorted_flow, keys, side="right")
    counts = ends - starts
    total = int(counts.sum())
    owner = np.repeat(np.arange(len(keys)), counts)
    offset = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
    pick = order[np.repeat(starts, counts) + offset]
    return flows[owner], routes.link[pick], routes.weight[pick]


def _real_link_figures(
    fluid: FluidResult, net: FlowNetwork, capacity: FloatArray, routes: Routes | None
) -> tuple[FloatArray, FloatArray]:
    """Bytes and peak utilisation per real link, sprayed (virtual) links shared back out to
    the switch links they stand for."""
    real, nl = net.n_links, net.net_links
    link_bytes = np.array(fluid.link_bytes[:real], dtype=np.float64)
    peak = np.array(fluid.link_busy_peak[:real], dtype=np.float64)
    if routes is None or not len(routes.virtual_members):
        return link_bytes, peak
    values = np.concatenate([fluid.link_bytes[:nl], fluid.link_bytes[real:]])
    link_bytes[:nl] = fold_virtual(values, routes, nl, capacity[:nl])
    for i, members in enumerate(routes.virtual_members):
        peak[members] = np.maximum(peak[members], fluid.link_busy_peak[real + i])
    return link_bytes, peak


def _busiest(busy: FloatArray, net: FlowNetwork, per_class: int) -> list[int]:
    """The most used links (busy seconds), at most ``per_class`` of each link class, so a
    report shows the hottest NVLink port, NIC, leaf uplink and spine uplink side by side."""
    order = np.argsort(-busy, kind="stable")
    picked: list[int] = []
    seen: dict[str, int] = {}
    for i in order[:20000].tolist():  # enough to reach every class on any fabric we build
        if busy[i] <= 0:
            break
        cls = net.link_class(i)
        if seen.get(cls, 0) < per_class:
            seen[cls] = seen.get(cls, 0) + 1
            picked.append(i)
    return picked


def _repeat(batch: FlowBatch | None, repeat: int) -> FlowBatch | None:
    if batch is None or repeat == 1:
        return batch
    if repeat == 0:
        return None
    tail = None if batch.tail_latency is None else batch.tail_latency * repeat
    return replace(batch, nbytes=batch.nbytes * repeat, tail_latency=tail)
