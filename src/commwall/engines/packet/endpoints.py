"""Flows and the NIC: segmentation, per-queue-pair scheduling, ACK/NACK/CNP handling, timers.

A :class:`Flow` is one queue pair's message from a source node to a destination node. Its
:class:`Sender` cuts it into MTU packets and hands them to the NIC's :class:`Scheduler`, which
serves the ready queue pairs of one port round-robin when the port is free. A sender is ready
while its window is open (NSCC, NewReno), its pacing time has come (DCQCN, a collective's rate
cap) and it has something to send; a blocked sender is woken by the ACK, CNP, NACK or timer
that unblocks it, so an idle NIC costs no events.

Reliability follows the fabric: go-back-N (RoCEv2's NAK on a sequence gap, and IB) discards
out-of-order packets and rewinds the sender; selective (Ultra Ethernet RUD, TCP with SACK-like
per-packet ACKs) keeps them and resends only what was trimmed, lost or timed out. A
retransmission timer covers losses no later packet reveals.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

from commwall.engines.base import InvariantError
from commwall.engines.packet.components import ACK, CNP, DATA, NACK, Node, Packet, Port, mix64
from commwall.engines.packet.kernel import PS_PER_S, Timer
from commwall.transport.dcqcn import Dcqcn
from commwall.transport.nscc import Nscc
from commwall.transport.reno import Reno

if TYPE_CHECKING:
    from commwall.engines.packet.network import Network

__all__ = [
    "MAX_FRUITLESS_TIMEOUTS",
    "Flow",
    "Receiver",
    "Scheduler",
    "Sender",
    "entropy_base",
    "entropy_value",
]

#: A sender that times out this many times in a row with nothing acknowledged stops the run with
#: an error (a timeout shorter than the round trip, a link too slow for one packet per timeout).
MAX_FRUITLESS_TIMEOUTS = 64


def entropy_base(seed: int, flow_index: int) -> int:
    """A flow's entropy seed: different per flow and per run seed."""
    return mix64(((seed + 1) << 32) + flow_index)


def entropy_value(base: int, seq: int) -> int:
    """Packet ``seq``'s entropy value, 16 bits as UEC carries it in the UDP source port: a fresh,
    independent value per packet (oblivious spraying).

    >>> b = entropy_base(0, 7)
    >>> 0 <= entropy_value(b, 0) < 2**16, entropy_value(b, 0) != entropy_value(b, 1)
    (True, True)
    """
    return mix64(base + seq) >> 48


class Flow:
    """One message: ``size`` payload bytes from ``src`` to ``dst`` along ``fwd`` (data) and
    ``rev`` (control), each a map node index → candidate egress ports."""

    __slots__ = (
        "base_rtt",
        "cap",
        "dst",
        "finish",
        "fwd",
        "group",
        "index",
        "receiver",
        "rev",
        "sender",
        "size",
        "src",
        "start",
    )

    def __init__(
        self,
        index: int,
        src: Node,
        dst: Node,
        size: int,
        fwd: dict[int, tuple[Port, ...]],
        rev: dict[int, tuple[Port, ...]],
        *,
        cap: float = 0.0,
        group: Any = None,
    ) -> None:
        self.index = index
        self.src = src
        self.dst = dst
        self.size = size
        self.fwd = fwd
        self.rev = rev
        self.cap = cap  # bytes/s the sender may not exceed (0: none)
        self.group = group  # what the workload wants told when the flow completes
        self.start = -1
        self.finish = -1
        self.base_rtt = 0
        self.sender: Sender = None  # type: ignore[assignment]  # set when the network attaches it
        self.receiver: Receiver = None  # type: ignore[assignment]


class Scheduler:
    """Round-robin over the ready senders (and first the control packets) behind one port."""

    __slots__ = ("ctrl", "port", "ready")

    def __init__(self, port: Port) -> None:
        self.port = port
        self.ready: deque[Sender] = deque()
        self.ctrl: deque[Packet] = deque()
        port.source = self

    def pull(self) -> Packet | None:
        """The next data packet for the port, or None (senders that cannot send drop out)."""
        ready = self.ready
        for _ in range(len(ready)):
            s = ready.popleft()
            pkt = s.next_packet()
            if pkt is not None:
                ready.append(s)
                return pkt
            s.ready = False
        return None

    def wake(self, sender: Sender) -> None:
        """``sender`` may be able to send again."""
        if not sender.ready:
            sender.ready = True
            self.ready.append(sender)
            port = self.port
            if not port.busy:
                port.start()

    def control(self, pkt: Packet) -> None:
        """Send a control packet (ACK, NACK, CNP) out of this port."""
        self.port.enqueue_ctrl(pkt)


class Sender:
    """The sending queue pair of one flow (module doc)."""

    __slots__ = (
        "acked",
        "c",
        "cc",
        "dcqcn",
        "done",
        "dupacks",
        "entropy_base",
        "flow",
        "fruitless",
        "gbn",
        "header",
        "inflight",
        "last",
        "line",
        "max_inflight",
        "mtu",
        "n",
        "net",
        "next_seq",
        "next_time",
        "nscc",
        "outstanding",
        "pace",
        "pace_timer",
        "queued",
        "ready",
        "reno",
        "retx",
        "rto",
        "rto_ps",
        "sched",
        "sent_once",
        "sim",
        "tick",
        "una",
    )

    def __init__(self, net: Network, flow: Flow, sched: Scheduler) -> None:
        self.net = net
        self.sim = net.sim
        self.c = net.c  # the network's counters, bumped in place on the hot path
        self.flow = flow
        self.sched = sched
        self.max_inflight = net.max_inflight
        self.entropy_base = entropy_base(net.seed, flow.index)
        prof = net.profile
        mtu = net.mtu
        self.mtu = mtu
        self.header = prof.header_bytes
        self.n = max(1, -(-flow.size // mtu))
        self.last = flow.size - (self.n - 1) * mtu
        self.next_seq = 0
        self.una = 0
        self.acked = bytearray(self.n)
        self.outstanding = bytearray(self.n)
        self.sent_once = bytearray(self.n)
        self.queued = bytearray(self.n)
        self.retx: deque[int] = deque()
        self.inflight = 0
        self.dupacks = 0
        self.fruitless = 0  # timeouts since data was last acknowledged
        self.ready = False
        self.done = False
        self.gbn = prof.reliability == "gbn"
        self.line = sched.port.rate
        self.next_time = 0
        self.pace = 0.0  # ps per wire byte while paced (0: line rate)
        self.rto_ps = int(prof.rto_s * PS_PER_S)
        self.rto = Timer(net.sim, self._timeout)
        self.pace_timer = Timer(net.sim, self._paced)
        self.tick: Timer | None = None
        self.dcqcn: Dcqcn | None = None
        self.nscc: Nscc | None = None
        self.reno: Reno | None = None
        if prof.sender == "dcqcn":
            self.dcqcn = Dcqcn(self.line)
            self.tick = Timer(net.sim, self._tick)
        elif prof.sender == "nscc":
            self.nscc = Nscc(self.line, max(flow.base_rtt, 1) / PS_PER_S, mtu + self.header)
        elif prof.sender == "reno":
            self.reno = Reno(mtu + self.header)
        self.cc = self.nscc or self.reno
        self._set_pace()

    # ---- sending -------------------------------------------------------------------------

    def payload(self, seq: int) -> int:
        """Payload bytes of packet ``seq``."""
        return self.last if seq == self.n - 1 else self.mtu

    def next_packet(self) -> Packet | None:
        """The next packet to send now, or None (blocked: a later event wakes the sender)."""
        if self.done:
            return None
        retx = self.retx
        if retx:
            acked = self.acked
            while retx and acked[retx[0]]:
                self.queued[retx.popleft()] = 0
        if retx:
            seq = retx[0]
        elif self.next_seq < self.n:
            seq = self.next_seq
        else:
            return None
        size = self.last if seq == self.n - 1 else self.mtu  # self.payload(seq), inlined
        inflight = self.inflight
        if inflight > 0:
            cc = self.cc  # the window: the congestion control's, else the in-flight cap
            if inflight + size > (cc.cwnd if cc is not None else self.max_inflight):
                return None
        now = self.sim.now
        pace = self.pace
        if pace and now < self.next_time:
            self.pace_timer.arm(self.next_time)
            return None
        if retx and retx[0] == seq:
            retx.popleft()
            self.queued[seq] = 0
        else:
            self.next_seq = seq + 1
        wire = size + self.header
        flow = self.flow
        pkt = Packet(flow, DATA, seq, wire, size, now)
        pkt.entropy = entropy_value(self.entropy_base, seq)
        if self.sent_once[seq]:
            self.net.retransmitted(size)
        self.sent_once[seq] = 1
        outstanding = self.outstanding
        if not outstanding[seq]:
            outstanding[seq] = 1
            self.inflight = inflight + size
        self.c["sent"] += size
        if pace:
            next_time = self.next_time
            self.next_time = (now if now > next_time else next_time) + int(wire * pace)
        dcqcn = self.dcqcn
        if dcqcn is not None and dcqcn.on_sent(wire):
            self._set_pace()  # only a rate change moves the pace
        if self.rto.deadline is None:  # not armed
            self.rto.arm(now + self.rto_ps)
        return pkt

    def _set_pace(self) -> None:
        rate = self.line
        if self.dcqcn is not None:
            rate = min(rate, self.dcqcn.rate)
        if self.flow.cap:
            rate = min(rate, self.flow.cap)
        self.pace = 0.0 if rate >= self.line * (1 - 1e-12) else PS_PER_S / rate

    def _paced(self) -> None:
        self.sched.wake(self)

    # ---- feedback ------------------------------------------------------------------------

    def on_control(self, pkt: Packet) -> None:
        """An ACK, NACK or CNP for this flow arrived."""
        if self.done:
            return
        kind = pkt.kind
        if kind == ACK:
            self._ack(pkt)
        elif kind == NACK:
            self._nack(pkt)
        elif kind == CNP and self.dcqcn is not None:
            self.dcqcn.on_cnp()
            assert self.tick is not None
            self.tick.arm(self.net.sim.now + int(self.dcqcn.p.period_s * PS_PER_S))
            self._set_pace()
            self.net.cnp_received()
        if not self.done:
            self.sched.wake(self)

    def _drop_outstanding(self, seq: int) -> None:
        if self.outstanding[seq]:
            self.outstanding[seq] = 0
            self.inflight -= self.payload(seq)

    def _ack(self, pkt: Packet) -> None:
        now = self.sim.now
        newly = 0
        acked = self.acked
        outstanding = self.outstanding
        n = self.n
        if self.gbn:
            cum = pkt.seq
            una = self.una
            mtu = self.mtu
            while una < cum:
                # self.payload and self._drop_outstanding, inlined: once per packet acked
                size = self.last if una == n - 1 else mtu
                if not acked[una]:
                    acked[una] = 1
                    newly += size
                if outstanding[una]:
                    outstanding[una] = 0
                    self.inflight -= size
                una += 1
            self.una = una
        else:
            seq = pkt.ack
            if 0 <= seq < n and not acked[seq]:
                acked[seq] = 1
                newly = self.payload(seq)
                self._drop_outstanding(seq)
            old = una = self.una
            while una < n and acked[una]:
                una += 1
            self.una = una
            if self.reno is not None:
                if una == old and una < n and newly:
                    self.dupacks += 1
                    if self.dupacks == 3:
                        self._resend(una)
                        self.reno.on_dupacks()
                elif una > old:
                    self.dupacks = 0
        if newly:
            self.fruitless = 0
            if self.nscc is not None:
                rtt = now - pkt.sent
                delay = max(rtt - self.flow.base_rtt, 0) / PS_PER_S
                if self.nscc.on_ack(now / PS_PER_S, newly, delay_s=delay, ecn=pkt.ecn):
                    self.net.repath(self.flow)
            elif self.reno is not None:
                self.reno.on_ack(newly)
            self.rto.arm(now + self.rto_ps)
        if self.una >= n:
            self._complete()

    def _nack(self, pkt: Packet) -> None:
        seq = pkt.seq
        if self.gbn:  # go back to the first packet the receiver is missing
            if seq >= self.una and seq < self.next_seq:
                for s in range(seq, self.next_seq):
                    self._drop_outstanding(s)
                self.next_seq = seq
        else:  # a trimmed packet: resend it now
            self._resend(seq)
            if self.nscc is not None:
                self.nscc.on_trim(self.net.sim.now / PS_PER_S)

    def _resend(self, seq: int) -> None:
        if 0 <= seq < self.n and not self.acked[seq] and not self.queued[seq]:
            self._drop_outstanding(seq)
            self.queued[seq] = 1
            self.retx.append(seq)

    def _timeout(self) -> None:
        if self.done:
            return
        self.net.timed_out()
        self.fruitless += 1
        if self.fruitless > MAX_FRUITLESS_TIMEOUTS:
            raise InvariantError(
                f"flow {self.flow.index} ({self.flow.src.name} → {self.flow.dst.name}) made no "
                f"progress over {MAX_FRUITLESS_TIMEOUTS} retransmission timeouts in a row: the "
                "timeout is shorter than a round trip, or the path cannot carry a packet"
            )
        if self.gbn:
            for s in range(self.una, self.next_seq):
                self._drop_outstanding(s)
            self.next_seq = self.una
        else:
            for s in range(self.una, self.next_seq):
                if not self.acked[s]:
                    self._resend(s)
        if self.nscc is not None:
            self.nscc.on_timeout(self.net.sim.now / PS_PER_S)
        elif self.reno is not None:
            self.reno.on_timeout()
        self.rto.arm(self.net.sim.now + self.rto_ps)
        self.sched.wake(self)

    def _tick(self) -> None:
        d = self.dcqcn
        assert d is not None and self.tick is not None
        d.on_tick()
        self._set_pace()
        if d.limited and not self.done:
            self.tick.arm(self.net.sim.now + int(d.p.period_s * PS_PER_S))
        self.sched.wake(self)

    def _complete(self) -> None:
        self.done = True
        self.rto.cancel()
        self.pace_timer.cancel()
        if self.tick is not None:
            self.tick.cancel()
        self.net.sender_done(self.flow)


class Receiver:
    """The receiving queue pair of one flow: accepts, ACKs, NACKs and sends CNPs."""

    __slots__ = (
        "ack_every",
        "ack_size",
        "c",
        "cnp",
        "expected",
        "flow",
        "gbn",
        "got",
        "last_cnp",
        "n",
        "nak_for",
        "net",
        "received",
        "sched",
        "since_ack",
    )

    def __init__(self, net: Network, flow: Flow, sched: Scheduler, n: int) -> None:
        self.net = net
        self.flow = flow
        self.sched = sched
        self.n = n
        self.got = bytearray(n)
        self.received = 0
        self.expected = 0
        self.nak_for = -1
        self.gbn = net.profile.reliability == "gbn"
        self.cnp = net.profile.sender == "dcqcn"  # whether ECN echoes as CNPs (DCQCN)
        self.c = net.c  # the network's counters, bumped in place on the hot path
        self.last_cnp = -(10**18)
        self.since_ack = 0
        self.ack_every = net.ack_every
        self.ack_size = net.ack_bytes

    def _control(self, kind: int, seq: int, data: Packet | None) -> None:
        pkt = Packet(self.flow, kind, seq, self.ack_size, 0, data.sent if data else 0)
        if data is not None:
            pkt.ack = data.seq
            pkt.ecn = data.ecn
            pkt.entropy = data.entropy
        self.sched.control(pkt)

    def on_data(self, pkt: Packet) -> None:
        """A data packet (or a trimmed header) for this flow arrived."""
        net = self.net
        seq = pkt.seq
        if pkt.trimmed:
            self._control(NACK, seq, pkt)
            return
        if pkt.ecn and self.cnp:
            now = net.sim.now
            if now - self.last_cnp >= net.cnp_interval:
                self.last_cnp = now
                self._control(CNP, seq, None)
                net.cnp_sent()
        if self.gbn:
            if seq == self.expected:
                self.expected += 1
                self.nak_for = -1
                self._accept(pkt)
            elif seq > self.expected:
                net.discarded(pkt.payload)
                if self.nak_for != self.expected:
                    self.nak_for = self.expected
                    self._control(NACK, self.expected, pkt)
                return
            else:
                net.duplicate(pkt.payload)
                self._control(ACK, self.expected, pkt)
                return
        elif self.got[seq]:
            net.duplicate(pkt.payload)
            self._control(ACK, self.expected, pkt)
            return
        else:
            self._accept(pkt)
            while self.expected < self.n and self.got[self.expected]:
                self.expected += 1
        self.since_ack += 1
        if self.since_ack >= self.ack_every or self.received == self.n or pkt.ecn or not self.gbn:
            self.since_ack = 0
            self._control(ACK, self.expected, pkt)

    def _accept(self, pkt: Packet) -> None:
        self.got[pkt.seq] = 1
        received = self.received + 1
        self.received = received
        self.c["delivered"] += pkt.payload
        if received == self.n:
            self.net.flow_done(self.flow)
