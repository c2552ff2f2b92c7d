"""The packet network: nodes and ports built from a graph, flows with their routes, the run, and
the counters and invariants the run checks.

:class:`PacketGraph` is what the network is built from — nodes (switches, NICs, GPUs) and
directed links with rate, propagation delay and whether the fabric's flow control applies
(scale-out links) or the link is credit-based whatever the fabric (NVLink, PCIe).
:func:`graph_from_topology` makes one from a :class:`~commwall.topology.Topology`.
"""

from __future__ import annotations

import gc
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from operator import attrgetter

import numpy as np
import numpy.typing as npt

from commwall.engines.base import EngineInputError, InvariantError
from commwall.engines.links import switch_label
from commwall.engines.packet.components import (
    FC_CREDIT,
    FC_NONE,
    FC_PFC,
    PAUSE_FRAME,
    PICK_ADAPTIVE,
    PICK_FIXED,
    PICK_SPRAY,
    Node,
    Packet,
    Port,
)
from commwall.engines.packet.config import PacketConfig
from commwall.engines.packet.endpoints import (
    Flow,
    Receiver,
    Scheduler,
    Sender,
)
from commwall.engines.packet.kernel import PS_PER_S, Simulator, ps
from commwall.topology.graph import Topology
from commwall.transport.fabric import (
    PFC_RESUME_OFFSET,
    FabricProfile,
    TransportError,
    pfc_headroom,
)

__all__ = ["PROGRESS_EVENTS", "Network", "PacketGraph", "Progress", "Task", "graph_from_topology"]

#: ``progress(events run, simulated seconds, flows done, flows)``: a run reporting where it is.
Progress = Callable[[int, float, int, int], None]
#: Events between two progress reports (~0.3 s of the Python loop on this project's machines).
PROGRESS_EVENTS = 100_000

IntArray = npt.NDArray[np.int64]

_QBYTES = attrgetter("qbytes")


@dataclass
class PacketGraph:
    """Nodes and directed links for a packet network (SI units: bytes/s, seconds)."""

    names: list[str]
    kinds: list[str]  # "host", "switch", "nic", "gpu", "nvswitch"
    link_src: IntArray
    link_dst: IntArray
    link_rate: npt.NDArray[np.float64]
    link_latency: npt.NDArray[np.float64]
    link_fabric: npt.NDArray[np.bool_]  # False: credit-based whatever the fabric
    link_names: list[str] = field(default_factory=list)

    @property
    def n_nodes(self) -> int:
        """Nodes in the graph."""
        return len(self.names)


def graph_from_topology(topology: Topology) -> PacketGraph:
    """The scale-out topology as a packet graph: endpoints are hosts, the rest switches."""
    names = [switch_label(topology, i) for i in range(topology.n_nodes)]
    kinds = ["host" if int(t) == 0 else "switch" for t in topology.node_tier.tolist()]
    src, dst = topology.link_src.astype(np.int64), topology.link_dst.astype(np.int64)
    return PacketGraph(
        names=names,
        kinds=kinds,
        link_src=src,
        link_dst=dst,
        link_rate=np.maximum(topology.link_capacity.astype(np.float64), 1.0),
        link_latency=topology.link_latency.astype(np.float64),
        link_fabric=np.ones(topology.n_links, dtype=np.bool_),
        link_names=[
            f"{names[a]} → {names[b]}" for a, b in zip(src.tolist(), dst.tolist(), strict=True)
        ],
    )


@dataclass
class Task:
    """Flows that start together once the tasks in ``after`` have ended and ``delay`` more
    picoseconds passed; the task ends when its last flow has been delivered."""

    name: str
    delay: int
    flows: list[Flow]
    after: tuple[int, ...] = ()
    ready: int = -1  # when the tasks it waits for had ended (its delay runs from here)
    start: int = -1
    end: int = -1
    waiting: int = 0
    left: int = 0
    dependents: list[int] = field(default_factory=list)


class Network:
    """One packet simulation: build it, add flows and tasks, :meth:`run` it."""

    def __init__(
        self,
        graph: PacketGraph,
        profile: FabricProfile,
        config: PacketConfig,
        *,
        switch_latency: float,
        routing: str,
        seed: int = 0,
    ) -> None:
        self.sim = Simulator()
        self.graph = graph
        self.profile = profile
        self.config = config
        self.routing = routing
        self.mtu = config.mtu
        self.ack_every = config.ack_every
        self.ack_bytes = config.ack_bytes
        self.max_inflight = float(config.max_inflight) if config.max_inflight else float("inf")
        self.cnp_interval = ps(profile.cnp_interval_s)
        # one seeded stream for every per-packet draw (marking, bit errors): a stdlib Random is
        # an order of magnitude cheaper per draw than a numpy Generator (seeded from one)
        self.rng = random.Random(int(np.random.default_rng(seed).integers(2**63)))
        self.seed = seed
        self.nodes: list[Node] = []
        self.ports: list[Port] = []
        self.flows: list[Flow] = []
        self.tasks: list[Task] = []
        self.schedulers: dict[int, Scheduler] = {}
        self.c = dict.fromkeys(
            (
                "sent",
                "delivered",
                "duplicate",
                "discarded",
                "dropped",
                "corrupted",
                "trimmed",
                "retransmitted",
                "timeouts",
                "cnps_sent",
                "cnps_received",
                "repaths",
                "drop_packets",
                "trim_packets",
                "corrupt_packets",
                "pause_frames_sent",
                "resume_frames_sent",
                "link_replays",
            ),
            0,
        )
        self.flows_left = 0
        self.senders_left = 0
        self.end = 0  # ps: when the last flow, acknowledgement or task ended (stale timers later)
        self.first_done: list[int] | None = None
        self.samples: list[list[int]] = []
        #: the compiled loop's samples instead (one row per sample), a quarter of the memory
        self.sample_matrix: npt.NDArray[np.int64] | None = None
        self.sample_times: list[int] = []
        self._build(switch_latency)

    # ---- construction --------------------------------------------------------------------

    def _build(self, switch_latency: float) -> None:
        g, cfg, prof = self.graph, self.config, self.profile
        lat = ps(switch_latency)
        pick = {"ecmp": PICK_FIXED, "spray": PICK_SPRAY, "adaptive": PICK_ADAPTIVE}[self.routing]
        for i, (name, kind) in enumerate(zip(g.names, g.kinds, strict=True)):
            if kind == "switch":
                buf, latency = cfg.buffer, lat
            elif kind == "nvswitch":
                buf, latency = cfg.endpoint_buffer, ps(cfg.nvswitch_latency_s)
            else:
                buf, latency = cfg.endpoint_buffer, 0
            node = Node(self, i, name, kind, buf, latency)
            node.forwards = kind in ("switch", "nvswitch")
            node.pick = pick
            node.alpha = prof.alpha
            node.trim = prof.trim and kind == "switch"
            node.trim_bytes = prof.trim_bytes
            node.trim_queue = prof.trim_queue
            self.nodes.append(node)
        header = prof.header_bytes
        self.wire_mtu = cfg.mtu + header
        fabric_fc = {"credit": FC_CREDIT, "pfc": FC_PFC, "none": FC_NONE}[prof.link_fc]
        period = ps(cfg.credit_period_s)
        names = g.link_names or [f"link {i}" for i in range(len(g.link_src))]
        for i in range(len(g.link_src)):
            a, b = int(g.link_src[i]), int(g.link_dst[i])
            fabric = bool(g.link_fabric[i])
            port = Port(
                self,
                i,
                names[i],
                self.nodes[a],
                self.nodes[b],
                float(g.link_rate[i]),
                ps(float(g.link_latency[i]) + (cfg.fec_latency_s if fabric else 0.0)),
                fabric_fc if fabric else FC_CREDIT,
            )
            port.max_packet = self.wire_mtu
            port.credit_period = max(period, 1)
            if fabric and prof.ecn is not None and self.nodes[a].kind == "switch":
                port.ecn = prof.ecn
            if cfg.cut_through:
                port.cut_ps = int((self.wire_mtu - 64) * port.ppb)
            if fabric and cfg.ber > 0:
                port.corrupt_p = 1.0 - (1.0 - cfg.ber) ** (8 * self.wire_mtu)
                port.replays = cfg.link_retry
            port.freeze()
            self.ports.append(port)
        self._flow_control()

    def _flow_control(self) -> None:
        """Credits per ingress port (IB, NVLink, PCIe) and PFC headroom, checked against the
        buffers they come out of."""
        cfg = self.config
        ins: dict[int, list[Port]] = {}
        for port in self.ports:
            ins.setdefault(port.dst.index, []).append(port)
        for node_index, ports in ins.items():
            node = self.nodes[node_index]
            reserved = 0
            for port in ports:
                loop = port.rate * (2 * port.prop + 2 * port.credit_period) / PS_PER_S
                if port.fc == FC_CREDIT:
                    credits = cfg.credit_bytes or max(65536, int(loop) + 4 * self.wire_mtu)
                    port.credits = port.credits_init = credits
                    reserved += credits
                elif port.fc == FC_PFC:
                    reserved += pfc_headroom(port.rate, port.prop / PS_PER_S, self.wire_mtu)
            pfc = any(p.fc == FC_PFC for p in ports)
            node.headroom = reserved if pfc else 0
            need = reserved
            what = "credits" if any(p.fc == FC_CREDIT for p in ports) else "PFC headroom"
            if pfc:  # an empty buffer's XOFF level must pass one packet and the 3 KB XON offset
                need = reserved + int((self.wire_mtu + PFC_RESUME_OFFSET) / node.alpha) + 1
                what = "PFC headroom plus one packet over the XON offset at the dynamic share"
            elif node.forwards and any(p.fc == FC_NONE for p in ports):
                need = int(self.wire_mtu / node.alpha) + 1  # α × free must admit one packet
                what = "one packet at the dynamic share"
            if need > node.buffer:
                raise TransportError(
                    f"buffer={node.buffer} bytes at {node.name}: its {len(ports)} ingress ports "
                    f"need {need} bytes ({what}); give a larger buffer (at least {need} bytes) "
                    "or fewer ports"
                )

    # ---- flows ---------------------------------------------------------------------------

    def add_flow(
        self,
        src: int,
        dst: int,
        size: int,
        fwd: dict[int, tuple[Port, ...]],
        rev: dict[int, tuple[Port, ...]],
        *,
        cap: float = 0.0,
    ) -> Flow:
        """A flow of ``size`` payload bytes from node ``src`` to node ``dst``."""
        if size <= 0:
            raise EngineInputError(f"flow {len(self.flows)}: size={size} bytes; must be > 0")
        flow = Flow(len(self.flows), self.nodes[src], self.nodes[dst], int(size), fwd, rev, cap=cap)
        flow.base_rtt = self._base_rtt(flow)
        self.flows.append(flow)
        out = fwd[src][0]
        back = rev[dst][0]
        flow.sender = Sender(self, flow, self._scheduler(out))
        flow.receiver = Receiver(self, flow, self._scheduler(back), flow.sender.n)
        return flow

    def _scheduler(self, port: Port) -> Scheduler:
        sched = self.schedulers.get(port.index)
        if sched is None:
            sched = Scheduler(port)
            self.schedulers[port.index] = sched
        return sched

    def _base_rtt(self, flow: Flow) -> int:
        """Round trip of one full packet and its ACK on an empty network (first candidates)."""
        total = 0
        for route, size, start, end in (
            (flow.fwd, self.wire_mtu, flow.src, flow.dst),
            (flow.rev, self.ack_bytes, flow.dst, flow.src),
        ):
            node = start
            hops = 0
            while node is not end and hops < 64:
                port = route[node.index][0]
                total += int(size * port.ppb) + port.prop + port.dst.latency_ps
                node = port.dst
                hops += 1
        return total

    def add_task(self, task: Task) -> int:
        """Add ``task``; returns its index for later ``after``."""
        index = len(self.tasks)
        for dep in task.after:
            if not 0 <= dep < index:
                raise EngineInputError(
                    f"task {task.name!r} waits for task {dep}, not an earlier task"
                )
            self.tasks[dep].dependents.append(index)
        task.waiting = len(task.after)
        for flow in task.flows:
            flow.group = index
        self.tasks.append(task)
        return index

    # ---- the run -------------------------------------------------------------------------

    def run(self, max_events: int | None = None, progress: Progress | None = None) -> None:
        """Run until every flow has been delivered and acknowledged and the network is idle;
        ``progress(events, simulated seconds, flows done, flows)`` is called every
        :data:`PROGRESS_EVENTS` events and at the end (the events run are the same either way)."""
        for index, task in enumerate(self.tasks):
            task.left = len(task.flows)
            if task.waiting == 0:
                task.ready = 0
                self.sim.at(task.delay, self._start_task, index)
        self.flows_left = len(self.flows)
        self.senders_left = len(self.flows)
        sample = ps(self.config.sample_s)
        if sample > 0 and self.flows:
            self.sim.at(0, self._sample, sample)
        limit = max_events if max_events is not None else self.config.max_events
        # no cyclic garbage collection during the loop: packets, heap entries and pipes make no
        # reference cycles, and each collection would walk the whole network (10-20% of a run)
        collecting = gc.isenabled()
        gc.disable()
        try:
            if progress is None:
                self.sim.run(max_events=limit)
            else:
                self._run_reporting(limit, progress)
        finally:
            if collecting:
                gc.enable()
        self.finish(limit)

    def _run_reporting(self, limit: int | None, progress: Progress) -> None:
        """:meth:`Simulator.run` in slices of :data:`PROGRESS_EVENTS`, reporting after each."""
        left = limit if limit is not None and limit > 0 else None
        while True:
            chunk = PROGRESS_EVENTS if left is None else min(PROGRESS_EVENTS, left)
            ran = self.sim.run(max_events=chunk)
            self.report(progress)
            if left is not None:
                left -= ran
            if ran < chunk or left == 0:
                return

    def report(self, progress: Progress) -> None:
        """Call ``progress`` with where the run stands."""
        flows = len(self.flows)
        progress(self.sim.events, self.sim.now / PS_PER_S, flows - self.flows_left, flows)

    def finish(self, limit: int | None) -> None:
        """The end of a run (either event loop): a stalled run fails, the time integrals close."""
        if self.flows_left or self.senders_left:
            if limit is not None and self.sim.events >= limit:
                raise InvariantError(
                    f"max_events={limit}: the run stopped with {self.flows_left} flows "
                    "undelivered; allow more events or simulate less traffic"
                )
            raise InvariantError(
                f"{self.flows_left} flows undelivered and {self.senders_left} unacknowledged "
                "with no events left (a deadlock in flow control)"
            )
        for port in self.ports:
            port.finish_stats(self.sim.now)

    def _start_task(self, index: int) -> None:
        task = self.tasks[index]
        now = self.sim.now
        task.start = now
        if not task.flows:
            self._end_task(index)
            return
        for flow in task.flows:
            flow.start = now
            flow.sender.sched.wake(flow.sender)

    def _end_task(self, index: int) -> None:
        task = self.tasks[index]
        task.end = self.end = self.sim.now
        for d in task.dependents:
            dep = self.tasks[d]
            dep.waiting -= 1
            if dep.waiting == 0:
                dep.ready = self.sim.now
                self.sim.after(dep.delay, self._start_task, d)

    def _sample(self, interval: int) -> None:
        if not self.flows_left:
            return
        self.sample_times.append(self.sim.now)
        self.samples.append(list(map(_QBYTES, self.sampled_ports)))  # C-level attribute reads
        if len(self.samples) >= 1024:  # keep memory flat on long runs: halve the resolution
            self.samples = self.samples[::2]
            self.sample_times = self.sample_times[::2]
            interval *= 2
        self.sim.after(interval, self._sample, interval)

    @property
    def sampled_ports(self) -> list[Port]:
        """Ports whose queues the time series follow: switch egress ports."""
        cached: list[Port] | None = getattr(self, "_sampled", None)
        if cached is None:
            cached = [p for p in self.ports if p.src.forwards]
            self._sampled = cached
        return cached

    # ---- events the components report ----------------------------------------------------

    def flow_done(self, flow: Flow) -> None:
        """The receiver has every byte of ``flow``."""
        flow.finish = self.end = self.sim.now
        self.flows_left -= 1
        if self.first_done is None:  # fairness: what each flow had when the first one ended
            self.first_done = [f.receiver.received for f in self.flows if f.start >= 0]
        group = flow.group
        if group is not None:
            task = self.tasks[group]
            task.left -= 1
            if task.left == 0:
                self._end_task(group)

    def sender_done(self, flow: Flow) -> None:
        """The sender of ``flow`` has every byte acknowledged."""
        self.senders_left -= 1
        self.end = self.sim.now

    def send_pause(self, port: Port, pause: bool) -> None:
        """The far end of ``port`` sends XOFF/XON back over the reverse cable: it takes effect
        one cable delay and a pause frame later (and after the frame in progress there)."""
        self.c["pause_frames_sent" if pause else "resume_frames_sent"] += 1
        delay = port.prop + int((PAUSE_FRAME + self.wire_mtu) * port.ppb)
        self.sim.after(delay, port.set_paused, pause)

    def dropped(self, pkt: Packet, port: Port) -> None:
        """A data packet was dropped at admission to ``port``'s queue."""
        port.drops += 1
        self.c["drop_packets"] += 1
        self.c["dropped"] += pkt.payload

    def trimmed(self, pkt: Packet) -> None:
        """A data packet lost its payload (trimming)."""
        self.c["trim_packets"] += 1
        self.c["trimmed"] += pkt.payload

    def corrupted(self, pkt: Packet, in_port: Port) -> None:
        """A packet failed its FCS check at the far end of ``in_port``: dropped, recovered end to
        end (with ``PacketConfig.link_retry`` the link replays it instead: ``Port._replay``)."""
        self.c["corrupt_packets"] += 1
        if pkt.kind == 0 and not pkt.trimmed:
            self.c["corrupted"] += pkt.payload
            if in_port.fc == FC_CREDIT:
                in_port.return_credit(pkt.size)

    def overflow(self, node: Node, pkt: Packet) -> None:
        """A lossless buffer went over its size: the headroom or credits were wrong."""
        raise InvariantError(
            f"{node.name}: buffer holds {node.occupancy} bytes, above its {node.buffer} "
            f"(fabric {self.profile.name}): lossless flow control failed to stop a sender"
        )

    def duplicate(self, payload: int) -> None:
        self.c["duplicate"] += payload

    def discarded(self, payload: int) -> None:
        self.c["discarded"] += payload

    def retransmitted(self, payload: int) -> None:
        self.c["retransmitted"] += payload

    def timed_out(self) -> None:
        self.c["timeouts"] += 1

    def cnp_sent(self) -> None:
        self.c["cnps_sent"] += 1

    def cnp_received(self) -> None:
        self.c["cnps_received"] += 1

    def repath(self, flow: Flow) -> None:
        self.c["repaths"] += 1

    def fairness(self) -> float:
        """Jain's index of the packets each started flow had delivered when the first flow
        finished (1.0 for one flow)."""
        from commwall.engines.packet.result import jain

        return jain(self.first_done) if self.first_done else 1.0

    # ---- invariants ----------------------------------------------------------------------

    def check(self) -> list[str]:
        """Check the run's invariants; raise :class:`InvariantError` on a violation."""
        c = self.c
        accounted = (
            c["delivered"]
            + c["duplicate"]
            + c["discarded"]
            + c["dropped"]
            + c["corrupted"]
            + c["trimmed"]
        )
        if c["sent"] != accounted:
            raise InvariantError(
                f"bytes sent {c['sent']} != delivered + duplicates + discarded + dropped + "
                f"corrupted + trimmed = {accounted}"
            )
        size = sum(f.size for f in self.flows)
        if c["delivered"] != size:
            raise InvariantError(f"bytes delivered {c['delivered']} != bytes offered {size}")
        checked = [
            "bytes sent = delivered + duplicates + discarded + dropped + corrupted + trimmed",
            "every flow delivered and acknowledged",
        ]
        if self.profile.lossless:
            if c["drop_packets"] or c["trim_packets"]:
                raise InvariantError(
                    f"fabric {self.profile.name} is lossless but dropped {c['drop_packets']} "
                    "packets"
                )
            checked.append("lossless fabric dropped nothing")
        for node in self.nodes:
            if node.peak > node.buffer:
                raise InvariantError(f"{node.name}: buffer peaked at {node.peak} > {node.buffer}")
            if node.occupancy:
                raise InvariantError(f"{node.name}: {node.occupancy} bytes left in its buffer")
            if node.xoffed:
                raise InvariantError(f"{node.name}: {len(node.xoffed)} ports still paused")
        checked += ["no buffer above its size", "every buffer empty at the end"]
        end = max(self.sim.now, 1)
        for port in self.ports:
            # a port is busy exactly its bytes at line rate (each packet rounded to 1 ps), and
            # never longer than the run: it cannot have carried more than its rate allows
            at_rate = port.tx_bytes * port.ppb
            if port.busy_ps > end or abs(port.busy_ps - at_rate) > port.tx_packets:
                raise InvariantError(
                    f"{port.name}: busy {port.busy_ps} ps for {port.tx_bytes} bytes "
                    f"({at_rate:.0f} ps at line rate) in a run of {end} ps"
                )
            if port.paused or port.ingress:
                raise InvariantError(
                    f"{port.name}: still paused or holding {port.ingress} bytes of PFC ingress"
                )
            if port.fc == FC_CREDIT and port.credits != port.credits_init:
                raise InvariantError(
                    f"{port.name}: {port.credits} credits at the end, started with "
                    f"{port.credits_init}"
                )
        checked.append("no link above capacity")
        if any(p.fc == FC_CREDIT for p in self.ports):
            checked.append("every credit returned")
        return checked


def route_maps(
    paths: Sequence[Sequence[int]], ports: Sequence[Port]
) -> dict[int, tuple[Port, ...]]:
    """Node → candidate egress ports, the union of ``paths`` (link lists from one source to
    one destination): a packet at a node may take any link that starts one of the paths'
    remaining parts there (every builder's equal-cost routes are shortest, so none loops)."""
    options: dict[int, list[Port]] = {}
    for path in paths:
        for link in path:
            port = ports[link]
            here = options.setdefault(port.src.index, [])
            if port not in here:
                here.append(port)
    return {node: tuple(cands) for node, cands in options.items()}
