"""Packets, ports and nodes: the data plane of the packet engine.

A :class:`Port` is the egress of one directed link, built htsim's way: a serialising queue
followed by a propagation pipe, each with at most one pending event while busy. Two classes
share a port: control (ACK, NACK, CNP, trimmed headers) is served first and is never paused,
credited or dropped; data waits behind it. Link-level flow control is a property of the port:

* ``FC_CREDIT`` (InfiniBand, and every NVLink/PCIe hop): the port sends a data packet only if it
  holds credits for the receiver's ingress buffer; the receiver returns them when the packet
  leaves its buffer, batched into flow-control updates every ``credit_period``, one cable delay
  later (IBA §7.9, reference transport.md §1.1).
* ``FC_PFC`` (RoCEv2): the receiver counts the bytes each ingress port holds; above a dynamic
  XOFF threshold it pauses the sender's port (one cable delay plus a 64-byte frame later), at
  3 KB below it resumes (IEEE 802.1Qbb; HPCC ns-3 MMU).
* ``FC_NONE``: admission against a dynamic threshold (Choudhury–Hahne: a queue may hold α ×
  the free shared buffer); over it a packet is dropped, or trimmed to its header where the fabric
  trims (Ultra Ethernet).

A :class:`Node` is a switch, a NIC or a GPU: it delivers packets addressed to it, and forwards
the rest along the flow's route — the candidates of its next hop, chosen once per flow (ECMP),
per packet by entropy (spraying) or by the shortest egress queue (adaptive routing).
"""

from __future__ import annotations

import math
from collections import deque
from heapq import heappush
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from commwall.engines.packet.endpoints import Flow
    from commwall.engines.packet.network import Network

__all__ = [
    "ACK",
    "CNP",
    "DATA",
    "FC_CREDIT",
    "FC_NONE",
    "FC_PFC",
    "NACK",
    "Node",
    "Packet",
    "Port",
    "mix64",
]

DATA, ACK, NACK, CNP = 0, 1, 2, 3
FC_NONE, FC_PFC, FC_CREDIT = 0, 1, 2
#: Bytes of a PFC pause frame (a 64-byte MAC control frame, IEEE 802.1Qbb).
PAUSE_FRAME = 64

# route choice per node
PICK_FIXED, PICK_SPRAY, PICK_ADAPTIVE = 0, 1, 2
_M64 = (1 << 64) - 1


def mix64(z: int) -> int:
    """The splitmix64 finaliser (Steele, Lea, Flood, OOPSLA 2014): a 64-bit hash whose every
    output bit depends on every input bit, so switches hashing the same entropy value with
    different salts choose independently (a weak mix makes consecutive hops pick correlated
    uplinks and leaves paths idle).

    >>> mix64(0), mix64(1) != mix64(2)
    (0, True)
    """
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    return z ^ (z >> 31)


class Packet:
    """One packet on the wire. ``size`` is wire bytes (payload + headers), ``payload`` the data
    bytes it carries (0 for control packets and trimmed headers)."""

    __slots__ = (
        "ack",
        "corrupt",
        "due",
        "ecn",
        "entropy",
        "flow",
        "in_port",
        "kind",
        "payload",
        "sent",
        "seq",
        "size",
        "trimmed",
    )

    def __init__(self, flow: Flow, kind: int, seq: int, size: int, payload: int, sent: int) -> None:
        self.flow = flow
        self.kind = kind
        self.seq = seq
        self.size = size
        self.payload = payload
        self.sent = sent
        self.ack = -1
        self.ecn = False
        self.trimmed = False
        self.corrupt = False
        self.entropy = 0
        self.in_port: Port | None = None
        self.due = 0  # when it reaches the far end of the link it is on (Port.pipe)


class Port:
    """The egress side of one directed link (module doc)."""

    __slots__ = (
        "busy",
        "busy_ps",
        "corrupt_p",
        "counter",
        "credit_due",
        "credit_holder",
        "credit_period",
        "credited",
        "credits",
        "credits_init",
        "ctrl",
        "cur_ser",
        "cur_size",
        "cut",
        "cut_ps",
        "data",
        "delay",
        "drops",
        "dst",
        "ecn",
        "fc",
        "heap",
        "held",
        "index",
        "ingress",
        "ingress_peak",
        "marks",
        "max_packet",
        "name",
        "net",
        "on_arrive",
        "on_credit",
        "on_done",
        "pause_frames",
        "paused",
        "paused_ps",
        "paused_since",
        "pipe",
        "pipe_armed",
        "ppb",
        "prop",
        "q_area",
        "q_last",
        "q_peak",
        "qbytes",
        "rate",
        "replays",
        "sim",
        "source",
        "src",
        "trims",
        "tx_bytes",
        "tx_packets",
        "xoff",
    )

    def __init__(
        self,
        net: Network,
        index: int,
        name: str,
        src: Node,
        dst: Node,
        rate: float,
        prop_ps: int,
        fc: int,
    ) -> None:
        self.net = net
        self.sim = net.sim
        self.heap = net.sim.heap
        self.counter = net.sim.counter
        self.cur_ser = 0
        self.cur_size = 0
        self.index = index
        self.name = name
        self.src = src
        self.dst = dst
        self.rate = rate  # bytes/s
        self.ppb = 1e12 / rate  # ps per byte
        self.prop = prop_ps
        self.fc = fc
        self.ctrl: deque[Packet] = deque()
        self.data: deque[Packet] = deque()
        self.pipe: deque[Packet] = deque()  # in flight, in order of ``due``
        self.pipe_armed = False
        self.busy = False
        self.paused = False
        self.paused_since = 0
        self.paused_ps = 0
        self.pause_frames = 0  # XOFF frames received from the far end
        self.xoff = False  # (as the far end's ingress) whether we paused this port
        self.ingress = 0  # bytes from this link sitting in the far end's buffer (PFC)
        self.ingress_peak = 0
        self.credits = 0
        self.credits_init = 0
        self.credit_period = 1
        self.credit_due = -1
        self.credit_holder: list[int] | None = None
        self.qbytes = 0
        self.q_area = 0  # byte·ps of data queue, for the time-weighted mean
        self.q_last = 0
        self.q_peak = 0
        self.ecn: Any = None  # EcnParams or None
        self.cut_ps = 0  # cut-through: how much earlier than the tail the far end may forward
        self.corrupt_p = 0.0
        self.replays = False  # link-level retry instead of an FCS drop (PacketConfig.link_retry)
        self.held: Port | None = None  # ingress port of the buffered packet being sent
        self.source: Any = None  # a NIC scheduler pulling packets when the port is free
        self.max_packet = 0
        self.tx_bytes = 0
        self.tx_packets = 0
        self.busy_ps = 0
        self.drops = 0
        self.marks = 0
        self.trims = 0
        # bound methods made once: the heap entries reuse them instead of a new one per push
        self.on_done = self.done
        self.on_arrive = self.arrive
        self.on_credit = self._credit
        self.freeze()

    def freeze(self) -> None:
        """Cache the constants the hot path derives from the configuration (call again after
        changing ``fc``, ``prop``, ``cut_ps`` or the far end's latency)."""
        self.credited = self.fc == FC_CREDIT
        self.delay = self.prop + self.dst.latency_ps
        self.cut = self.cut_ps if self.dst.forwards else 0

    # ---- queueing ------------------------------------------------------------------------

    def enqueue_ctrl(self, pkt: Packet) -> None:
        """Queue a control packet (served first, never paused or dropped)."""
        self.ctrl.append(pkt)
        if not self.busy:
            self.start()

    def start(self) -> None:
        """Begin serialising the next eligible packet, if any (the port is idle)."""
        # the hottest function: every hop of every packet, and every credit or idle poll
        ctrl = self.ctrl
        data = self.data
        if ctrl:
            pkt = ctrl.popleft()
        elif self.paused:
            return
        elif data:
            pkt = data[0]
            if self.credited:
                size = pkt.size
                if self.credits < size:
                    return
                self.credits -= size
            data.popleft()
            # the packet may reach the next node (cut-through) before its tail leaves here:
            # remember whose buffer it occupies now, the next node reuses ``in_port``
            self.held = pkt.in_port
            pkt.in_port = None
        elif self.source is not None:
            if self.credited and self.credits < self.max_packet:
                return
            pkt = self.source.pull()
            if pkt is None:
                return
            if self.credited:
                self.credits -= pkt.size
        else:
            return
        self.busy = True
        size = pkt.size
        self.cur_size = size  # a packet trimmed downstream (cut-through) shrinks before it leaves
        ser = int(size * self.ppb + 0.5)
        self.cur_ser = ser
        done = self.sim.now + ser
        heap = self.heap
        counter = self.counter
        # events pushed straight onto the kernel's heap (see Simulator): the hottest path
        heappush(heap, (done, next(counter), self.on_done, pkt))
        # into the pipe now: the far end sees the tail one cable delay after it leaves, or with
        # cut-through the head (``cut_ps`` earlier), plus its own forwarding latency
        arrive = done + self.delay
        cut = self.cut
        if cut:
            arrive -= cut if cut < ser else ser
        if self.corrupt_p:
            if self.net.rng.random() < self._error_p(pkt.size):
                pkt.corrupt = True
            tail = self.pipe[-1].due if self.pipe else 0
            if arrive < tail:  # the pipe stays in order behind a link-level replay
                arrive = tail
        pkt.due = arrive  # on the packet, not in a (time, packet) tuple: no allocation per hop
        self.pipe.append(pkt)
        if not self.pipe_armed:
            self.pipe_armed = True
            heappush(heap, (arrive, next(counter), self.on_arrive, None))

    def _replay(self, pkt: Packet, now: int) -> None:
        """Link-level retry (InfiniBand LLR, NVLink/PCIe replay; :mod:`commwall.phy.link`): the
        far end NAKs the failed packet, and one cable delay later this port resends it and
        every packet sent after it, in order (go-back-N on the link). Everything in the pipe
        arrives a link round trip plus one serialisation later; the replay may fail again. The
        resent bytes' serialisation is not charged to the link (its delay is)."""
        net = self.net
        net.c["corrupt_packets"] += 1
        net.c["link_replays"] += 1
        delta = 2 * self.prop + int(pkt.size * self.ppb + 0.5)
        pkt.corrupt = net.rng.random() < self._error_p(pkt.size)
        pkt.due = now + delta
        for later in self.pipe:
            later.due += delta
        self.pipe.appendleft(pkt)

    def _error_p(self, size: int) -> float:
        """Probability a packet of ``size`` wire bytes has a bit error (``corrupt_p`` is a full
        packet's; ACKs and trimmed headers are smaller targets)."""
        if size >= self.max_packet:
            return self.corrupt_p
        return -math.expm1(size / self.max_packet * math.log1p(-self.corrupt_p))

    def done(self, pkt: Packet) -> None:
        """The packet's tail left: free its buffer here, count it, start the next one."""
        self.busy = False
        size = self.cur_size
        self.tx_bytes += size
        self.tx_packets += 1
        self.busy_ps += self.cur_ser
        held = self.held
        if held is not None:
            self.held = None
            now = self.sim.now
            self.q_area += self.qbytes * (now - self.q_last)
            self.q_last = now
            self.qbytes -= size
            # Node.release, inlined for the credit-based links (IB, NVLink, PCIe)
            if held.credited:
                self.src.occupancy -= size
                held.return_credit(size)
            else:
                self.src.release(size, held)
        # nothing queued and no source: skip the call (most switch ports between packets)
        if self.ctrl or self.data or self.source is not None:
            self.start()

    def arrive(self, _: object) -> None:
        """Deliver every packet whose time has come to the far end."""
        now = self.sim.now
        pipe = self.pipe
        receive = self.dst.receive
        while pipe and pipe[0].due <= now:
            pkt = pipe.popleft()
            if pkt.corrupt and self.replays:
                self._replay(pkt, now)
                continue
            receive(pkt, self)
        if pipe:
            heappush(self.heap, (pipe[0].due, next(self.counter), self.on_arrive, None))
        else:
            self.pipe_armed = False

    # ---- flow control (called by the far end) --------------------------------------------

    def return_credit(self, nbytes: int) -> None:
        """The far end freed ``nbytes`` of this link's ingress buffer: the credit travels back
        on the next flow-control update, one cable delay later."""
        now = self.sim.now
        period = self.credit_period
        due = -(-now // period) * period + self.prop
        holder = self.credit_holder
        if holder is not None and self.credit_due == due:
            holder[0] += nbytes
            return
        holder = [nbytes]
        self.credit_holder = holder
        self.credit_due = due
        heappush(self.heap, (due, next(self.counter), self.on_credit, holder))

    def _credit(self, holder: list[int]) -> None:
        self.credits += holder[0]
        if self.credit_holder is holder:
            self.credit_holder = None
        if not self.busy and (self.ctrl or self.data or self.source is not None):
            self.start()

    def set_paused(self, paused: bool) -> None:
        """A PFC XOFF (True) or XON (False) from the far end arrived."""
        now = self.sim.now
        if paused and not self.paused:
            self.paused_since = now
            self.pause_frames += 1
        elif not paused and self.paused:
            self.paused_ps += now - self.paused_since
        self.paused = paused
        if not paused and not self.busy:
            self.start()

    def finish_stats(self, now: int) -> None:
        """Close the time integrals at ``now``."""
        self.q_area += self.qbytes * (now - self.q_last)
        self.q_last = now
        if self.paused:
            self.paused_ps += now - self.paused_since
            self.paused_since = now


class Node:
    """A switch, NIC or GPU (module doc). ``buffer`` bytes of shared packet buffer."""

    __slots__ = (
        "alpha",
        "buffer",
        "forwards",
        "headroom",
        "index",
        "kind",
        "latency_ps",
        "name",
        "net",
        "occupancy",
        "peak",
        "pick",
        "salt",
        "trim",
        "trim_bytes",
        "trim_queue",
        "xoffed",
    )

    def __init__(
        self, net: Network, index: int, name: str, kind: str, buffer: int, latency_ps: int
    ) -> None:
        self.net = net
        self.index = index
        self.name = name
        self.kind = kind
        self.buffer = buffer
        self.latency_ps = latency_ps
        self.forwards = kind == "switch"
        self.occupancy = 0
        self.peak = 0
        self.headroom = 0  # bytes reserved for PFC headroom on this node's ingress ports
        self.xoffed: list[Port] = []  # ingress ports this node has paused (PFC XOFF sent)
        self.alpha = 0.125
        self.pick = PICK_FIXED
        self.salt = mix64((net.seed << 32) + index + 1)  # this switch's hash seed
        self.trim = False
        self.trim_bytes = 64
        self.trim_queue = 0

    def receive(self, pkt: Packet, in_port: Port) -> None:
        """A packet arrived on ``in_port``: deliver it here or forward it."""
        flow = pkt.flow
        kind = pkt.kind
        if pkt.corrupt:  # the FCS check fails: dropped at the link's far end
            self.net.corrupted(pkt, in_port)
            return
        if kind == DATA:
            if flow.dst is self:
                if in_port.credited and not pkt.trimmed:
                    in_port.return_credit(pkt.size)  # the NIC drains at once
                flow.receiver.on_data(pkt)
                return
            cands = flow.fwd[self.index]
        else:
            if flow.src is self:
                flow.sender.on_control(pkt)
                return
            cands = flow.rev[self.index]
        if len(cands) == 1:
            out = cands[0]
        elif self.pick == PICK_ADAPTIVE:
            # the shortest egress queue; ties (idle uplinks, most of the time) go by the packet's
            # entropy hash as in spraying: "the first port" would steer every switch alike
            least = min([p.qbytes for p in cands])
            ties = [p for p in cands if p.qbytes == least]
            out = ties[0] if len(ties) == 1 else ties[mix64(pkt.entropy ^ self.salt) % len(ties)]
        else:  # spray: the packet's entropy value hashed with this switch's salt (ECMP on the EV)
            out = cands[mix64(pkt.entropy ^ self.salt) % len(cands)]
        if kind != DATA or pkt.trimmed:  # control class: no credit, buffer or pause
            # Port.enqueue_ctrl inlined (one call less per control packet per hop)
            out.ctrl.append(pkt)
            if not out.busy:
                out.start()
            return
        size = pkt.size
        fc = in_port.fc
        if fc == FC_NONE:
            free = self.buffer - self.occupancy
            if size > free or out.qbytes + size > self.alpha * free:
                if self.trim:
                    self._trim(pkt, out)
                else:
                    self.net.dropped(pkt, out)
                return
            if self.trim and out.qbytes + size > self.trim_queue:
                self._trim(pkt, out)
                return
        elif fc == FC_PFC:
            ingress = in_port.ingress + size
            in_port.ingress = ingress
            if ingress > in_port.ingress_peak:
                in_port.ingress_peak = ingress
            # self.xoff_threshold(), inlined: once per data packet per hop
            if not in_port.xoff and ingress > self.alpha * (
                self.buffer - self.headroom - self.occupancy
            ):
                in_port.xoff = True
                self.xoffed.append(in_port)
                self.net.send_pause(in_port, True)
        occupancy = self.occupancy + size
        self.occupancy = occupancy
        if occupancy > self.peak:
            self.peak = occupancy
            if occupancy > self.buffer:
                self.net.overflow(self, pkt)
        pkt.in_port = in_port
        qbytes = out.qbytes
        ecn = out.ecn
        if ecn is not None and not pkt.ecn and qbytes > ecn.kmin:
            p = ecn.probability(qbytes)
            if p >= 1.0 or self.net.rng.random() < p:
                pkt.ecn = True
                out.marks += 1
        # queue it (inline: once per data packet per hop)
        now = out.sim.now
        out.q_area += qbytes * (now - out.q_last)
        out.q_last = now
        qbytes += size
        out.qbytes = qbytes
        if qbytes > out.q_peak:
            out.q_peak = qbytes
        out.data.append(pkt)
        if not out.busy:
            out.start()

    def xoff_threshold(self) -> float:
        """PFC XOFF level of one ingress port: α × the free shared (non-headroom) buffer."""
        return self.alpha * (self.buffer - self.headroom - self.occupancy)

    def release(self, size: int, ip: Port) -> None:
        """A data packet of ``size`` bytes that came in on ``ip`` left this node: free its
        buffer and its ingress accounting."""
        self.occupancy -= size
        fc = ip.fc
        if fc == FC_CREDIT:
            ip.return_credit(size)
        elif fc == FC_PFC:
            ip.ingress -= size
            if self.xoffed:
                self._resume()

    def _resume(self) -> None:
        """Send XON to every paused ingress port now 3 KB under the XOFF level, or empty. Every
        departure re-checks them all (as HPCC's MMU does on dequeue): the level rises as other
        ports drain, and a port that has drained must not stay paused."""
        level = self.xoff_threshold() - 3000
        still = []
        for port in self.xoffed:
            if port.ingress <= level or port.ingress == 0:
                port.xoff = False
                self.net.send_pause(port, False)
            else:
                still.append(port)
        self.xoffed = still

    def _trim(self, pkt: Packet, out: Port) -> None:
        """Cut the payload; the header goes on at control priority (Ultra Ethernet)."""
        self.net.trimmed(pkt)
        out.trims += 1
        pkt.trimmed = True
        pkt.size = self.trim_bytes
        out.enqueue_ctrl(pkt)
