"""An optional compiled event loop for the packet engine's traffic runs (numba).

The pure-Python engine stays the reference; this module runs the same simulation, event for
event, in :mod:`commwall.engines.packet.fast_kernel` (numba, ``cache=True``) for every fabric:

* fabric ``ib``: credit-based flow control on every link, no ECN, no congestion control,
  go-back-N receivers (acknowledging every ``PacketConfig.ack_every`` packets), a
  retransmission timer per sender (re-armed on every acknowledgement; it normally never fires);
* fabric ``lossy``: no link flow control — a switch admits a packet while its egress queue stays
  under α × the free buffer and drops it otherwise — NewReno windows (three duplicate ACKs halve
  the window and resend, a timeout restarts slow start), selective receivers;
* fabric ``uec``: the same admission, but a refused (or beyond the trimming queue) packet loses
  its payload and its header goes on as control (trimming, answered by a NACK and a resend),
  ECN marks drawn from the network's own ``random.Random`` (its Mersenne Twister replayed in
  the kernel and handed back), NSCC windows;
* fabric ``roce``: PFC — each ingress port's bytes counted against the dynamic XOFF level, the
  pause and resume frames one cable delay and a frame later, a paused port serving control
  only — ECN marks, CNPs from the receiver (at most one per flow per ``cnp_interval_s``) and
  DCQCN at the sender (rate cuts, the 55 µs tick timer, the byte counter, the pacing timer
  they set); ``roce-nopfc`` the same without PFC, over lossy admission, go-back-N;
* rate caps (``Network.add_flow``'s ``cap``): paced as in Python;
* bit errors (``PacketConfig.ber``): FCS drops recovered end to end, or link-level replays
  (``link_retry``), drawn from the same generator;
* any routing: ECMP (one fixed path per flow, both ways), spraying (each switch hashes the
  packet's entropy value with its salt) or adaptive (the shortest egress queue, ties by that
  hash) — the same choices, from the same candidate ports in the same order; out-of-order
  delivery makes InfiniBand's receivers selective there (``transport.for_routing``);
* tasks that wait for others (the packet engine's collective phases) and start after a delay.

:func:`run_fast` packs a built :class:`~commwall.engines.packet.network.Network` (flows and
tasks added, not yet run) into flat arrays, runs the kernel and writes every figure back into
the network's objects — flows, counters, ports, nodes, tasks, the queue series, the clock and
the event count — so :meth:`Network.check` and :func:`~commwall.engines.packet.result.summarise`
work unchanged and report bit-identical results.

The loop runs as an extension module numba built ahead of time (:mod:`commwall.engines.packet.aot`:
built once per kernel version into the user's cache, then loaded without numba or LLVM in the
process), or, where that cannot be built, under numba's JIT. numba is imported only for the
JIT loop or the build, and only when the compiled loop is asked for.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, TypeVar, cast

import numpy as np
import numpy.typing as npt

from commwall.engines.base import InvariantError
from commwall.engines.packet import aot
from commwall.engines.packet.components import (
    FC_PFC,
    PAUSE_FRAME,
    PICK_FIXED,
    mix64,
)
from commwall.engines.packet.config import KERNELS
from commwall.engines.packet.endpoints import MAX_FRUITLESS_TIMEOUTS
from commwall.engines.packet.kernel import PS_PER_S, ps
from commwall.engines.packet.network import Network, Progress
from commwall.transport.dcqcn import DcqcnParams
from commwall.transport.fabric import TransportError

__all__ = [
    "AUTO_MIN_EVENTS",
    "KERNELS",
    "estimated_events",
    "numba_available",
    "pick_kernel",
    "run_fast",
    "run_network",
    "unsupported",
]


IntArray = npt.NDArray[np.int64]
_T = TypeVar("_T")
_LOG = logging.getLogger("commwall.packet")
_MODULE = "commwall.engines.packet.fast_kernel"
_available: bool | None = None


def numba_available() -> bool:
    """Whether numba is installed (looked up, not imported: the import costs ~65 MiB and a
    moment, and the ahead-of-time loop does not need it)."""
    global _available
    if _available is None:
        _available = importlib.util.find_spec("numba") is not None
    return _available


def unsupported(net: Network) -> str | None:
    """Why the compiled kernel cannot run ``net`` (None: it can)."""
    prof = net.profile
    if (prof.link_fc, prof.sender) not in LINKS_AND_SENDERS or prof.reliability not in RELIABILITY:
        return (
            f"fabric {prof.name!r} is not credit-based without congestion control, RoCE with "
            "DCQCN, lossy with NewReno or UEC with NSCC"
        )
    if prof.trim and prof.sender != "nscc":
        return f"fabric {prof.name!r} trims without NSCC"
    if (prof.ecn is not None or any(p.ecn is not None for p in net.ports)) and (
        prof.sender not in ("nscc", "dcqcn")
    ):
        return f"fabric {prof.name!r} marks ECN without NSCC or DCQCN"
    if net.sim.heap or net.sim.events or net.sim.now:
        return "the network has already run"
    return None


#: Receivers the kernel replays: go-back-N (ECMP) and selective (spraying, adaptive routing).
RELIABILITY = ("gbn", "selective")
#: (link flow control, sender) pairs the kernel replays: InfiniBand's, RoCE's with and without
#: PFC, lossy Ethernet's and Ultra Ethernet's.
LINKS_AND_SENDERS = (
    ("credit", "none"),
    ("pfc", "dcqcn"),
    ("none", "dcqcn"),
    ("none", "reno"),
    ("none", "nscc"),
)


def pick_kernel(net: Network, requested: str) -> str:
    """The kernel that runs ``net``: ``"python"`` or ``"numba"`` (see ``PacketConfig.kernel``)."""
    if requested not in KERNELS:
        raise TransportError(f"kernel={requested!r}: allowed: {', '.join(KERNELS)}")
    if requested == "python":
        return "python"
    why = unsupported(net)
    if requested == "numba":
        if not numba_available():
            raise TransportError(
                "kernel='numba': numba is not installed (pip install 'commwall[numba]'); "
                "use kernel='auto' or 'python'"
            )
        if why is not None:
            raise TransportError(
                f"kernel='numba': the compiled kernel covers every fabric, routing and bit-error "
                f"rate, but {why}; use kernel='auto' or 'python'"
            )
        return "numba"
    if why is not None or estimated_events(net) < AUTO_MIN_EVENTS:
        return "python"  # (loading the compiled loop costs more than a small run)
    return "numba" if numba_available() else "python"


#: ``kernel="auto"`` compiles only runs estimated at this many events or more (a few seconds of
#: the Python loop): below it, packing the arrays and loading the loop (a few ms ahead of time,
#: ~0.4 s under numba's JIT; about a minute on the first run after an install, while it is
#: built) costs more than it saves.
AUTO_MIN_EVENTS = 1_000_000


def estimated_events(net: Network) -> int:
    """About how many events ``net`` will take: per data packet, a serialisation and an arrival
    at each hop both ways (data and its acknowledgement) and a few at the ends.

    The pure-Python loop runs ~300-450 k events/s on this project's 2-core reference machine.
    """
    total = 0
    mtu = net.mtu
    for flow in net.flows:
        hops = max(len(flow.fwd), 1)
        total += -(-flow.size // mtu) * (4 * hops + 3)
    return total


def run_network(net: Network, kernel: str, progress: Progress | None = None) -> None:
    """Run ``net`` with ``kernel`` (``"python"`` or ``"numba"``, from :func:`pick_kernel`);
    ``progress`` hears from the Python loop as it goes, from the compiled one at the end."""
    if kernel == "numba":
        run_fast(net)
        if progress is not None:
            net.report(progress)
    else:
        net.run(progress=progress)


# ---- packing ------------------------------------------------------------------------------


@dataclass
class _Pools:
    """Capacities of the kernel's preallocated pools (grown between events; doubled and rerun
    from the start when an event runs one dry)."""

    heap: int
    packets: int
    timers: int
    credits: int


def _table(rows: int, cols: int, fill: int = 0) -> IntArray:
    return np.full((rows, cols), fill, dtype=np.int64)


def _free_list(rows: int, cols: int, link: int) -> IntArray:
    """A pool of ``rows`` rows chained through column ``link`` (the last ends with -1)."""
    table = _table(rows, cols)
    table[:, link] = np.arange(1, rows + 1)
    table[-1, link] = -1
    return table


def _path(net: Network, route: dict[int, tuple[Any, ...]], start: int, end: int) -> list[int]:
    """The ports a packet follows from node ``start`` to ``end`` (one candidate per hop)."""
    path: list[int] = []
    node = start
    while node != end:
        cands = route.get(node)
        if cands is None or len(cands) != 1 or len(path) > len(net.nodes):
            raise TransportError(f"kernel='numba': a flow has no single route at node {node}")
        path.append(cands[0].index)
        node = cands[0].dst.index
    return path


def _pools(net: Network) -> _Pools:
    """First guesses of the pool sizes."""
    ports, flows = len(net.ports), len(net.flows)
    loops = sum(p.prop // max(p.credit_period, 1) + 3 for p in net.ports)
    credit_bytes = sum(p.credits_init for p in net.ports)
    acks = sum(f.sender.n // max(net.ack_every, 1) + 2 for f in net.flows)
    return _Pools(
        heap=4 * ports + loops + 2 * flows + len(net.tasks) + 64,
        packets=2 * credit_bytes // max(net.wire_mtu, 1) + 4 * flows + 1024,
        timers=min(acks, 4 * flows) + 1024,
        credits=loops + 64,
    )


def pack_state(net: Network) -> tuple[Any, ...]:
    """The compiled loop's state tuple for a fresh ``net``, with first-guess pools."""
    return _pack(net, _pools(net))


def _ports(net: Network, k: Any, sched: dict[int, int]) -> IntArray:
    P = _table(len(net.ports), k.P_LEN)
    for i, p in enumerate(net.ports):
        P[i, k.P_DST], P[i, k.P_SRC] = p.dst.index, p.src.index
        P[i, k.P_DELAY], P[i, k.P_CUT], P[i, k.P_PROP] = p.delay, p.cut, p.prop
        P[i, k.P_PERIOD], P[i, k.P_MAXPKT] = p.credit_period, p.max_packet
        P[i, k.P_SCHED] = sched.get(p.index, -1)
        P[i, k.P_CREDITS], P[i, k.P_CREDIT_DUE] = p.credits, p.credit_due
        P[i, k.P_QBYTES], P[i, k.P_QAREA], P[i, k.P_QLAST] = p.qbytes, p.q_area, p.q_last
        P[i, k.P_QPEAK], P[i, k.P_TXB], P[i, k.P_TXP] = p.q_peak, p.tx_bytes, p.tx_packets
        P[i, k.P_BUSYPS] = p.busy_ps
        P[i, k.P_FC], P[i, k.P_DROPS] = p.fc, p.drops
        P[i, k.P_MARKS], P[i, k.P_TRIMS] = p.marks, p.trims
        P[i, k.P_PAUSED], P[i, k.P_PAUSED_SINCE] = p.paused, p.paused_since
        P[i, k.P_PAUSED_PS], P[i, k.P_PAUSE_FRAMES] = p.paused_ps, p.pause_frames
        P[i, k.P_XOFF], P[i, k.P_INGRESS], P[i, k.P_INGRESS_PEAK] = (
            p.xoff,
            p.ingress,
            p.ingress_peak,
        )
        # Network.send_pause's delay: one cable delay and a pause frame behind a full packet
        P[i, k.P_PAUSE_DELAY] = p.prop + int((PAUSE_FRAME + net.wire_mtu) * p.ppb)
        P[i, k.P_REPLAYS] = p.replays
        if p.ecn is not None:
            P[i, k.P_HASECN], P[i, k.P_KMIN], P[i, k.P_KMAX] = 1, p.ecn.kmin, p.ecn.kmax
    for col in (k.P_HOLDER, k.P_HELD, k.P_CTRL, k.P_CTRL + 1, k.P_DATA, k.P_DATA + 1):
        P[:, col] = -1
    P[:, k.P_PIPE : k.P_PIPE + 2] = -1
    return P


def _flows(
    net: Network, k: Any, sched: dict[int, int], fixed: bool
) -> tuple[IntArray, IntArray, int]:
    """The flow table, the routes (forward and reverse port lists, ECMP only) and the packets
    in all."""
    F = _table(len(net.flows), k.F_LEN)
    routes: list[int] = []
    total = 0
    for i, flow in enumerate(net.flows):
        s = flow.sender
        fwd = _path(net, flow.fwd, flow.src.index, flow.dst.index) if fixed else []
        rev = _path(net, flow.rev, flow.dst.index, flow.src.index) if fixed else []
        F[i, k.F_SRC], F[i, k.F_DST] = flow.src.index, flow.dst.index
        F[i, k.F_N], F[i, k.F_LAST], F[i, k.F_MTU] = s.n, s.last, s.mtu
        F[i, k.F_HEADER], F[i, k.F_RTO_PS] = s.header, s.rto_ps
        F[i, k.F_SCHED] = sched[s.sched.port.index]
        F[i, k.F_RSCHED] = sched[flow.receiver.sched.port.index]
        F[i, k.F_FOFF], F[i, k.F_FLEN] = len(routes), len(fwd)
        routes += fwd
        F[i, k.F_ROFF], F[i, k.F_RLEN] = len(routes), len(rev)
        routes += rev
        F[i, k.F_SQOFF] = total
        total += s.n
        F[i, k.F_START], F[i, k.F_FINISH] = flow.start, flow.finish
        F[i, k.F_TASK] = flow.group if isinstance(flow.group, int) else -1
    F[:, k.F_SNEXT] = F[:, k.F_NAKFOR] = -1
    F[:, k.F_RQHEAD] = F[:, k.F_RQTAIL] = -1
    F[:, k.F_DUPACKS] = [flow.sender.dupacks for flow in net.flows]
    F[:, k.F_FRUITLESS] = [flow.sender.fruitless for flow in net.flows]
    F[:, k.F_BASE_RTT] = [flow.base_rtt for flow in net.flows]
    F[:, k.F_NEXT_TIME] = [flow.sender.next_time for flow in net.flows]
    F[:, k.F_LAST_CNP] = [flow.receiver.last_cnp for flow in net.flows]
    for i, flow in enumerate(net.flows):
        d = flow.sender.dcqcn
        if d is not None:
            F[i, k.F_DQI], F[i, k.F_DQJ], F[i, k.F_DQSEEN] = d.i, d.j, d.cnp_seen
    return F, np.asarray(routes, dtype=np.int64), total


def _timers(net: Network, k: Any) -> IntArray:
    """Three timers per flow (``fast_kernel.T_*``), none armed (the network has not run)."""
    TM = _table(3 * max(len(net.flows), 1), k.TM_LEN, -1)
    TM[:, k.TM_GEN] = TM[:, k.TM_INHEAP] = 0
    return TM


def _dcqcn(
    net: Network, k: Any
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], DcqcnParams]:
    """Each flow's DCQCN state and pacing (FQ), and DCQCN's constants (DQ; every sender's are
    alike: ``Sender`` builds each with the defaults)."""
    FQ = np.zeros((max(len(net.flows), 1), k.FQ_LEN), dtype=np.float64)
    params = DcqcnParams()
    for i, flow in enumerate(net.flows):
        s = flow.sender
        FQ[i, k.FQ_LINE], FQ[i, k.FQ_PACE], FQ[i, k.FQ_CAP] = s.line, s.pace, flow.cap
        d = s.dcqcn
        if d is not None:
            FQ[i, k.FQ_RATE], FQ[i, k.FQ_TARGET] = d.rate, d.target
            FQ[i, k.FQ_ALPHA], FQ[i, k.FQ_BYTES] = d.alpha, d.bytes
            params = d.p
    DQ = np.zeros(k.DQ_LEN, dtype=np.float64)
    DQ[k.DQ_G], DQ[k.DQ_BYTE_COUNTER] = params.g, params.byte_counter
    DQ[k.DQ_RAI], DQ[k.DQ_RHAI] = params.rai_share, params.rhai_share
    DQ[k.DQ_MIN_RATE] = params.min_rate
    return FQ, DQ, params


def _nodes(net: Network, k: Any) -> tuple[IntArray, IntArray]:
    """The node table and XO, room per node for every PFC ingress port it may pause (the
    paused ones first, in order)."""
    N = _table(max(len(net.nodes), 1), k.N_LEN)
    room = [0] * len(net.nodes)
    for port in net.ports:
        if port.fc == FC_PFC:
            room[port.dst.index] += 1
    XO = np.full(max(sum(room), 1), -1, dtype=np.int64)
    at = 0
    for i, node in enumerate(net.nodes):
        N[i, k.N_BUF], N[i, k.N_OCC], N[i, k.N_PEAK] = node.buffer, node.occupancy, node.peak
        N[i, k.N_HEADROOM], N[i, k.N_XOFF], N[i, k.N_NXOFF] = node.headroom, at, len(node.xoffed)
        XO[at : at + len(node.xoffed)] = [port.index for port in node.xoffed]
        at += room[i]
    return N, XO


def _candidates(net: Network, k: Any, F: IntArray) -> tuple[IntArray, ...]:
    """Per flow and direction, the nodes a packet may reach (sorted) and each one's candidate
    egress ports in the order Node.receive chooses among them (columns F_CF*/F_CR* of ``F``)."""
    nodes: list[int] = []
    firsts: list[int] = []
    counts: list[int] = []
    ports: list[int] = []
    for i, flow in enumerate(net.flows):
        for route, (off, length) in ((flow.fwd, (k.F_CFOFF, k.F_CFLEN)),
                                     (flow.rev, (k.F_CROFF, k.F_CRLEN))):  # fmt: skip
            F[i, off], F[i, length] = len(nodes), len(route)
            for node in sorted(route):
                cands = route[node]
                nodes.append(node)
                firsts.append(len(ports))
                counts.append(len(cands))
                ports += [p.index for p in cands]
    return tuple(np.asarray(x or [0], dtype=np.int64) for x in (nodes, firsts, counts, ports))


def _mix64_array(z: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """:func:`~commwall.engines.packet.components.mix64` over an array (wrapping uint64)."""
    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _entropies(net: Network, total: int) -> IntArray:
    """Every packet's entropy value (``endpoints.entropy_value``), flow after flow as SQ holds
    them. A flow whose ``base + seq`` passes 2**64 (Python's integers do not wrap) is done in
    Python."""
    out = np.zeros(max(total, 1), dtype=np.int64)
    at = 0
    for flow in net.flows:
        s = flow.sender
        base = s.entropy_base
        if base + s.n - 1 < 2**64:
            z = np.uint64(base) + np.arange(s.n, dtype=np.uint64)
            out[at : at + s.n] = (_mix64_array(z) >> np.uint64(48)).astype(np.int64)
        else:
            out[at : at + s.n] = [mix64(base + q) >> 48 for q in range(s.n)]
        at += s.n
    return out


def _tasks(net: Network, k: Any) -> tuple[IntArray, IntArray]:
    """The task table and TF: each task's flows, then the tasks waiting for it."""
    TK = _table(len(net.tasks), k.TK_LEN, -1)
    members: list[int] = []
    for i, task in enumerate(net.tasks):
        TK[i, k.TK_DELAY], TK[i, k.TK_LEFT] = task.delay, len(task.flows)
        TK[i, k.TK_READY], TK[i, k.TK_WAITING] = task.ready, task.waiting
        TK[i, k.TK_FOFF], TK[i, k.TK_FLEN] = len(members), len(task.flows)
        members += [f.index for f in task.flows]
        TK[i, k.TK_DOFF], TK[i, k.TK_DLEN] = len(members), len(task.dependents)
        members += task.dependents
    return TK, np.asarray(members or [0], dtype=np.int64)


def _pack(net: Network, pools: _Pools) -> tuple[Any, ...]:
    """The kernel's state tuple (``fast_kernel.STATE``) for a fresh ``net``."""
    k = _kernel()
    sched = {port: i for i, port in enumerate(net.schedulers)}
    S = _table(len(sched), k.S_LEN, -1)
    S[:, k.S_PORT] = list(sched)
    S[:, k.S_COUNT] = 0
    N, XO = _nodes(net, k)
    pick = net.nodes[0].pick if net.nodes else PICK_FIXED  # every node alike (Network._build)
    fixed = pick == PICK_FIXED
    F, R, total = _flows(net, k, sched, fixed)
    one = np.zeros(1, dtype=np.int64)
    CN, CO, CL, CP = (one, one, one, one) if fixed else _candidates(net, k, F)
    EN = one if fixed else _entropies(net, total)
    TK, TF = _tasks(net, k)
    sampled = np.asarray([p.index for p in net.sampled_ports], dtype=np.int64)
    limit = net.config.max_events
    G = np.zeros(k.G_LEN, dtype=np.int64)
    G[k.G_SEQ], G[k.G_END] = 1, net.end
    G[k.G_FLOWS_LEFT] = G[k.G_SENDERS_LEFT] = len(net.flows)
    G[k.G_ACK_EVERY], G[k.G_ACK_SIZE] = net.ack_every, net.ack_bytes
    G[k.G_LIMIT] = -1 if limit is None else limit
    G[k.G_SAMPLE] = ps(net.config.sample_s)
    G[k.G_PICK] = pick
    G[k.G_SELECTIVE] = net.profile.reliability == "selective"
    G[k.G_RENO] = net.profile.sender == "reno"
    G[k.G_DROPPED], G[k.G_DROP_PACKETS] = net.c["dropped"], net.c["drop_packets"]
    FR = np.zeros((max(len(net.flows), 1), k.FR_LEN), dtype=np.float64)
    FN = np.zeros((max(len(net.flows), 1), k.FN_LEN), dtype=np.float64)
    for i, flow in enumerate(net.flows):
        reno, nscc = flow.sender.reno, flow.sender.nscc
        if reno is not None:
            FR[i, k.FR_CWND], FR[i, k.FR_SSTHRESH] = reno.cwnd, reno.ssthresh
        if nscc is not None:
            FN[i] = [getattr(nscc, name) for name in _NSCC_FIELDS]
    G[k.G_NSCC] = net.profile.sender == "nscc"
    G[k.G_TRIMMED], G[k.G_TRIM_PACKETS] = net.c["trimmed"], net.c["trim_packets"]
    G[k.G_REPATHS] = net.c["repaths"]
    G[k.G_DCQCN] = net.profile.sender == "dcqcn"
    FQ, DQ, params = _dcqcn(net, k)
    G[k.G_FAST_RECOVERY] = params.fast_recovery
    G[k.G_TICK_PS] = int(params.period_s * PS_PER_S)  # as Sender arms its tick
    G[k.G_CNP_INTERVAL] = net.cnp_interval
    for key, name in _COUNTERS:
        G[getattr(k, key)] = net.c[name]
    _, words, _ = net.rng.getstate()
    G[k.G_MTI] = words[-1]
    NT = _table(max(len(net.nodes), 1), k.NT_LEN)
    for i, node in enumerate(net.nodes):
        NT[i] = (node.trim, node.trim_bytes, node.trim_queue)
    return (
        G,
        _table(pools.heap, 5),
        _ports(net, k, sched),
        np.asarray([p.ppb for p in net.ports], dtype=np.float64),
        N,
        F,
        R,
        np.zeros((max(total, 1), k.SQ_LEN), dtype=np.uint8),
        _free_list(pools.packets, k.K_LEN, k.K_NEXT),
        S,
        _free_list(pools.timers, k.TQ_LEN, k.TQ_NEXT),
        _free_list(pools.credits, k.CH_LEN, k.CH_NEXT),
        np.asarray([net.max_inflight], dtype=np.float64),
        TK,
        TF,
        sampled,
        np.zeros((k.MAX_SAMPLES, len(sampled)), dtype=np.int64),
        np.zeros(k.MAX_SAMPLES, dtype=np.int64),
        np.full(len(net.flows), -1, dtype=np.int64),
        EN,
        np.asarray([node.salt for node in net.nodes] or [0], dtype=np.uint64),
        CN,
        CO,
        CL,
        CP,
        np.full(max(total, 1), -1, dtype=np.int64),
        np.asarray([node.alpha for node in net.nodes] or [0.0], dtype=np.float64),
        FR,
        np.asarray(words[:-1], dtype=np.int64),
        np.asarray(
            [p.ecn.pmax if p.ecn is not None else 0.0 for p in net.ports] or [0.0], dtype=np.float64
        ),
        NT,
        FN,
        _timers(net, k),
        FQ,
        DQ,
        XO,
        np.asarray([p.corrupt_p for p in net.ports] or [0.0], dtype=np.float64),
    )


#: NSCC's state in the kernel's FN columns (``fast_kernel.FN_*`` order).
_NSCC_FIELDS = (
    "cwnd", "inc", "acked_since", "avg_delay", "last_md", "last_adjust", "qa_start", "qa_bytes",
    "base_rtt", "target", "fi", "alpha", "eta", "maxwnd", "mss",
)  # fmt: skip
_NSCC_STATE = 8
#: Counters the kernel keeps in G beyond the ones written back one by one.
_COUNTERS = (
    ("G_CNPS_SENT", "cnps_sent"),
    ("G_CNPS_RECEIVED", "cnps_received"),
    ("G_PAUSES_SENT", "pause_frames_sent"),
    ("G_RESUMES_SENT", "resume_frames_sent"),
    ("G_CORRUPTED", "corrupted"),
    ("G_CORRUPT_PACKETS", "corrupt_packets"),
    ("G_LINK_REPLAYS", "link_replays"),
)


def _grow(st: tuple[Any, ...], k: Any) -> tuple[Any, ...]:
    """``st`` after ERR_ROOM: every pool with fewer than ``ROOM`` free rows doubled (the heap
    keeps its entries; the new rows of a free list go to its front), the error cleared."""
    out = list(st)
    G = out[k.I_G]
    H = out[k.I_H]
    if G[k.G_HSIZE] + k.ROOM > H.shape[0]:
        out[k.I_H] = _table(2 * H.shape[0], H.shape[1])
        out[k.I_H][: H.shape[0]] = H
    for index, used, free, link in (
        (k.I_K, k.G_PUSED, k.G_PFREE, k.K_NEXT),
        (k.I_TQ, k.G_TUSED, k.G_TFREE, k.TQ_NEXT),
        (k.I_CH, k.G_CUSED, k.G_CFREE, k.CH_NEXT),
    ):
        old = out[index]
        rows = old.shape[0]
        if G[used] + k.ROOM > rows:
            new = _free_list(2 * rows, old.shape[1], link)
            new[:rows] = old
            new[-1, link] = G[free]
            G[free] = rows
            out[index] = new
    G[k.G_ERR] = k.ERR_NONE
    return tuple(out)


def _kernel() -> Any:
    return importlib.import_module(_MODULE)


def _user() -> str:
    getuid = getattr(os, "getuid", None)
    return str(getuid()) if getuid is not None else "any"


#: A file every process locks while it compiles the kernel or loads it from numba's on-disk
#: cache. numba writes that cache without a lock, and processes that compile the same function
#: at once can leave an index and object code that do not match — a segmentation fault when it
#: is loaded (numba#4807, numba#10128, open). A sweep's worker processes all start on a cold
#: cache together, so the first compiles and writes it while the others wait, then load it
#: (seconds and ~64 MiB each, instead of every worker compiling for a minute in ~800 MiB).
COMPILE_LOCK: Final = Path(tempfile.gettempdir()) / f"commwall-packet-kernel-{_user()}.lock"


def _locked(action: Callable[[], _T]) -> _T:
    """``action()`` while holding :data:`COMPILE_LOCK` (unlocked where file locks do not exist,
    Windows, or the temporary directory is not writable)."""
    try:
        import fcntl

        handle = open(COMPILE_LOCK, "a+b")  # noqa: SIM115 - closed below
    except (ImportError, OSError):
        return action()
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            return action()
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


#: The loop this process runs, once chosen: (``run_kernel``, ``"aot"`` or ``"jit"``).
_runner: tuple[Callable[[tuple[Any, ...]], int], str] | None = None


def compiled_loop(st: tuple[Any, ...]) -> tuple[Callable[[tuple[Any, ...]], int], str]:
    """The compiled loop for states like ``st``, and which it is: the ahead-of-time module
    (built under :data:`COMPILE_LOCK` on first use; :mod:`~commwall.engines.packet.aot`), or
    numba's JIT where it cannot be built or ``COMMWALL_PACKET_AOT=0``."""
    global _runner
    if _runner is None:
        run = _aot_loop()
        _runner = (run, "aot") if run is not None else (_jit_loop(st), "jit")
    return _runner


def compiled_kind() -> str | None:
    """Which compiled loop this process has run: ``"aot"``, ``"jit"`` or None (none yet)."""
    return None if _runner is None else _runner[1]


def _aot_loop() -> Callable[[tuple[Any, ...]], int] | None:
    """The built module's loop, building it first (under :data:`COMPILE_LOCK`) where it has
    not been built or failed before; None (with a logged reason) where it is not available."""
    if not aot.enabled():
        return None
    run = aot.load()
    if run is None and aot.failure() is None:

        def build() -> Callable[[tuple[Any, ...]], int] | None:
            if aot.load() is None and aot.failure() is None:  # (or another process built it)
                _LOG.warning(
                    "commwall: building the packet engine's compiled event loop, once per "
                    "install (about a minute), into %s",
                    aot.build_dir(),
                )
                aot.build()
            return aot.load()

        run = _locked(build)
    if run is None:
        _LOG.warning(
            "commwall: the packet engine's ahead-of-time event loop is not available (%s); "
            "running numba's JIT loop (the same events, ~120 MiB more memory). Delete %s to "
            "try the build again.",
            aot.failure() or "it did not load",
            aot.build_dir(),
        )
    return run


def _jit_loop(st: tuple[Any, ...]) -> Callable[[tuple[Any, ...]], int]:
    """numba's JIT loop, compiled for ``st``'s types or loaded from numba's cache under
    :data:`COMPILE_LOCK` (numba writes that cache without a lock)."""
    run: Any = _kernel().jit_all()
    if not run.signatures:
        import numba

        signature = (numba.typeof(st),)  # type: ignore[no-untyped-call]
        _locked(lambda: run.compile(signature))
    return cast(Callable[[tuple[Any, ...]], int], run)


# ---- running and writing back ----------------------------------------------------------------


def run_fast(net: Network) -> None:
    """:meth:`Network.run` on the compiled kernel: same events, same results (module doc)."""
    why = unsupported(net)
    if why is not None:
        raise TransportError(f"kernel='numba': {why}")
    k = _kernel()
    pools = _pools(net)
    grow = {k.ERR_HEAP: "heap", k.ERR_PACKETS: "packets", k.ERR_TIMERS: "timers"}
    grow[k.ERR_CREDITS] = "credits"
    while True:
        st = _pack(net, pools)
        run, _ = compiled_loop(st)
        try:
            err = run(st)
            while err == k.ERR_ROOM:  # grow the pools that ran low and go on
                st = _grow(st, k)
                err = run(st)
        except aot.LayoutError as e:  # a built module that does not match this packer
            raise InvariantError(
                f"the packet engine's built event loop does not fit this version's arrays ({e}); "
                f"delete {aot.build_dir()} (or set COMMWALL_PACKET_AOT=0) and run again"
            ) from e
        if err not in grow:
            break
        # An event ran a pool dry halfway (the run cannot go on): again from the start, with
        # the pools as grown so far and that one doubled.
        pools = _Pools(
            heap=len(st[k.I_H]), packets=len(st[k.I_K]), timers=len(st[k.I_TQ]),
            credits=len(st[k.I_CH]),
        )  # fmt: skip
        setattr(pools, grow[err], 2 * getattr(pools, grow[err]))
        del st
    G = st[0]
    if err == k.ERR_ROUTE:  # a packet reached a node its flow has no route from
        raise TransportError(f"kernel='numba': a flow has no route at node {int(G[k.G_ERRARG])}")
    if err == k.ERR_FRUITLESS:  # Sender._timeout's guard, the same words
        flow = net.flows[int(G[k.G_ERRARG])]
        raise InvariantError(
            f"flow {flow.index} ({flow.src.name} → {flow.dst.name}) made no progress over "
            f"{MAX_FRUITLESS_TIMEOUTS} retransmission timeouts in a row: the timeout is shorter "
            "than a round trip, or the path cannot carry a packet"
        )
    # only what the write-back reads: the pools (heap, packets, timers, entropies, candidate
    # tables) are let go first, so the objects it fills do not add to the run's peak memory
    arrays = {name: st[i] for i, name in enumerate(k.STATE) if name in _WRITTEN_BACK}
    del st
    _write_back(net, k, arrays)
    if err == k.ERR_OVERFLOW:
        net.overflow(net.nodes[int(G[k.G_ERRARG])], None)  # type: ignore[arg-type]
    net.finish(net.config.max_events)


#: The state arrays :func:`_write_back` reads.
_WRITTEN_BACK: Final = frozenset(
    ("G", "P", "N", "F", "CH", "FD", "FN", "FQ", "FR", "MT", "RQ", "SM", "SQ", "ST", "TK", "TM",
     "XO")
)  # fmt: skip


def _write_back(net: Network, k: Any, a: dict[str, Any]) -> None:
    """Every figure the Python objects would hold after the run."""
    G = a["G"].tolist()
    net.sim.now = G[k.G_NOW]
    net.sim.events += G[k.G_EVENTS]
    c = net.c
    c["sent"], c["delivered"] = G[k.G_SENT], G[k.G_DELIVERED]
    c["duplicate"], c["discarded"] = G[k.G_DUPLICATE], G[k.G_DISCARDED]
    c["retransmitted"], c["timeouts"] = G[k.G_RETX], G[k.G_TIMEOUTS]
    c["dropped"], c["drop_packets"] = G[k.G_DROPPED], G[k.G_DROP_PACKETS]
    c["trimmed"], c["trim_packets"] = G[k.G_TRIMMED], G[k.G_TRIM_PACKETS]
    c["repaths"] = G[k.G_REPATHS]
    for key, name in _COUNTERS:
        c[name] = G[getattr(k, key)]
    version, _, gauss = net.rng.getstate()
    net.rng.setstate((version, (*a["MT"].tolist(), G[k.G_MTI]), gauss))
    net.flows_left, net.senders_left = G[k.G_FLOWS_LEFT], G[k.G_SENDERS_LEFT]
    net.end = G[k.G_END]
    if G[k.G_FIRST_DONE]:
        net.first_done = [x for x in a["FD"].tolist() if x >= 0]
    rows = G[k.G_NSAMP]
    net.sample_matrix = a["SM"][:rows].copy()
    net.sample_times = a["ST"][:rows].tolist()
    _write_ports(net, k, a["P"], a["CH"])
    XO = a["XO"].tolist()
    for node, row in zip(net.nodes, a["N"].tolist(), strict=False):
        node.occupancy, node.peak = row[k.N_OCC], row[k.N_PEAK]
        at = row[k.N_XOFF]
        node.xoffed = [net.ports[p] for p in XO[at : at + row[k.N_NXOFF]]]
    _write_flows(net, k, a)
    for task, row in zip(net.tasks, a["TK"].tolist(), strict=True):
        task.ready, task.start, task.end = row[k.TK_READY], row[k.TK_START], row[k.TK_END]
        task.left, task.waiting = row[k.TK_LEFT], row[k.TK_WAITING]


def _write_ports(net: Network, k: Any, P: IntArray, CH: IntArray) -> None:
    for port, row in zip(net.ports, P.tolist(), strict=True):
        port.busy, port.cur_size, port.cur_ser = (
            bool(row[k.P_BUSY]),
            row[k.P_CUR_SIZE],
            row[k.P_CUR_SER],
        )
        port.tx_bytes, port.tx_packets, port.busy_ps = row[k.P_TXB], row[k.P_TXP], row[k.P_BUSYPS]
        port.qbytes, port.q_area, port.q_last = row[k.P_QBYTES], row[k.P_QAREA], row[k.P_QLAST]
        port.q_peak, port.credits = row[k.P_QPEAK], row[k.P_CREDITS]
        port.credit_due, port.pipe_armed = row[k.P_CREDIT_DUE], bool(row[k.P_ARMED])
        port.drops, port.marks, port.trims = row[k.P_DROPS], row[k.P_MARKS], row[k.P_TRIMS]
        holder = row[k.P_HOLDER]
        port.credit_holder = None if holder < 0 else [int(CH[holder, k.CH_AMOUNT])]
        port.paused, port.paused_since = bool(row[k.P_PAUSED]), row[k.P_PAUSED_SINCE]
        port.paused_ps, port.pause_frames = row[k.P_PAUSED_PS], row[k.P_PAUSE_FRAMES]
        port.xoff, port.ingress = bool(row[k.P_XOFF]), row[k.P_INGRESS]
        port.ingress_peak = row[k.P_INGRESS_PEAK]


def _write_flows(net: Network, k: Any, a: dict[str, Any]) -> None:
    F, SQ, RQ, FR, FN, FQ = a["F"], a["SQ"], a["RQ"], a["FR"], a["FN"], a["FQ"]
    dead = a["TM"][:, k.TM_DEAD].tolist()
    for i, (flow, row) in enumerate(zip(net.flows, F.tolist(), strict=True)):
        flow.start, flow.finish = row[k.F_START], row[k.F_FINISH]
        s, r = flow.sender, flow.receiver
        seqs = SQ[row[k.F_SQOFF] : row[k.F_SQOFF] + s.n]
        s.acked[:] = seqs[:, k.SQ_ACKED].tobytes()
        s.outstanding[:] = seqs[:, k.SQ_OUT].tobytes()
        s.sent_once[:] = seqs[:, k.SQ_SENT].tobytes()
        s.queued[:] = seqs[:, k.SQ_QUEUED].tobytes()
        s.retx.clear()
        seq = row[k.F_RQHEAD]
        while seq >= 0:
            s.retx.append(seq)
            seq = int(RQ[row[k.F_SQOFF] + seq])
        s.next_seq, s.una, s.inflight = row[k.F_NEXT_SEQ], row[k.F_UNA], row[k.F_INFLIGHT]
        s.dupacks, s.fruitless = row[k.F_DUPACKS], row[k.F_FRUITLESS]
        if s.reno is not None:
            s.reno.cwnd, s.reno.ssthresh = float(FR[i, k.FR_CWND]), float(FR[i, k.FR_SSTHRESH])
        if s.nscc is not None:  # the state; the constants after it never change
            for name, value in zip(_NSCC_FIELDS[:_NSCC_STATE], FN[i].tolist(), strict=False):
                setattr(s.nscc, name, value)
        s.done, s.ready = bool(row[k.F_DONE]), bool(row[k.F_READY])
        rto, pace, tick = dead[3 * i : 3 * i + 3]
        s.rto.deadline = None if rto < 0 else rto
        s.pace_timer.deadline = None if pace < 0 else pace
        s.next_time, s.pace = row[k.F_NEXT_TIME], float(FQ[i, k.FQ_PACE])
        d = s.dcqcn
        if d is not None and s.tick is not None:
            s.tick.deadline = None if tick < 0 else tick
            d.rate, d.target = float(FQ[i, k.FQ_RATE]), float(FQ[i, k.FQ_TARGET])
            d.alpha, d.bytes = float(FQ[i, k.FQ_ALPHA]), float(FQ[i, k.FQ_BYTES])
            d.i, d.j, d.cnp_seen = row[k.F_DQI], row[k.F_DQJ], bool(row[k.F_DQSEEN])
        r.last_cnp = row[k.F_LAST_CNP]
        r.expected, r.received = row[k.F_EXPECTED], row[k.F_RECEIVED]
        r.nak_for, r.since_ack = row[k.F_NAKFOR], row[k.F_SINCE]
        if r.gbn:
            r.got[: r.expected] = b"\x01" * r.expected
        else:
            r.got[:] = seqs[:, k.SQ_GOT].tobytes()
