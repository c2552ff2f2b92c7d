"""The numba-compiled event loop behind :mod:`commwall.engines.packet.fast`.

It replays, on flat integer arrays, exactly what the pure-Python engine does on every fabric —
credit-based links (InfiniBand); PFC links that pause their ingress (RoCE: ECN marks, CNPs,
DCQCN rate control and pacing); or links without flow control whose switches drop (lossy
Ethernet with NewReno windows, RoCE without PFC) or trim (Ultra Ethernet: ECN marks, NSCC
windows) what their dynamic threshold refuses; rate caps; bit errors, dropped at the far end or
replayed on the link; one fixed route per flow (ECMP) with go-back-N receivers, or a choice per
packet at every switch — spraying on the packet's entropy value, adaptive on the shortest egress
queue — with selective receivers: the same events, drawn from the same ``(time, sequence)`` heap
order, with the same arithmetic and the same random draws. Only the bookkeeping differs —
packets, queues, pipes, timers and credit updates are rows of preallocated arrays linked by
index instead of Python objects. ``fast.py`` packs a built network into these arrays, runs
:func:`run_kernel` and writes the results back.

Every function takes the state as one tuple ``st`` (see :data:`STATE`) and unpacks what it
needs. Pools (heap, packets, timer queue, credit updates) have fixed capacities: running out sets
an error code and stops the run, and ``fast.py`` grows them (or runs it again with larger pools).

Importing this module does not import numba: the functions are plain Python until
:func:`jit_all` makes them numba functions (the JIT loop), or :mod:`commwall.engines.packet.aot`
compiles them ahead of time into an extension module that runs without numba.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeVar, cast

import numpy as np

# the order of the arrays in the state tuple ``st``
STATE = (
    "G", "H", "P", "PPB", "N", "F", "R", "SQ", "K", "S", "TQ", "CH", "FL", "TK", "TF", "SP", "SM",
    "ST", "FD", "EN", "NS", "CN", "CO", "CL", "CP", "RQ", "NA", "FR", "MT", "PE", "NT", "FN",
    "TM", "FQ", "DQ", "XO", "PB",
)  # fmt: skip
(
    I_G, I_H, I_P, I_PPB, I_N, I_F, I_R, I_SQ, I_K, I_S, I_TQ, I_CH, I_FL, I_TK, I_TF, I_SP, I_SM,
    I_ST, I_FD, I_EN, I_NS, I_CN, I_CO, I_CL, I_CP, I_RQ, I_NA, I_FR, I_MT, I_PE, I_NT, I_FN,
    I_TM, I_FQ, I_DQ, I_XO, I_PB,
) = range(37)  # fmt: skip
# EN: the entropy value of every packet sequence number of every flow (SQ's rows); NS: each
# node's hash salt (uint64); per flow and direction, the nodes a packet may visit (CN, sorted),
# each with its candidate egress ports CP[CO : CO + CL] (components.Node.receive); RQ: the
# selective senders' retransmission queues (Sender.retx), one link per packet sequence number;
# NA: each node's admission share α (float); FR: each flow's NewReno window and threshold (float);
# MT: the network's Mersenne Twister (random.Random's 624 words; its index is G_MTI); PE: each
# port's ECN pmax (float); NT: each node's trimming; FN: each flow's NSCC state (float); TM: the
# timers, three per flow (retransmission, pacing, DCQCN's rate tick); FQ: each flow's DCQCN
# state and pacing (float); DQ: DCQCN's constants (float); XO: per node, the ingress ports it
# has paused (PFC XOFF sent), in order, from N_XOFF; PB: each port's probability that a full
# packet has a bit error (Port.corrupt_p, float)

# G: global scalars
(
    G_NOW, G_SEQ, G_HSIZE, G_PFREE, G_TFREE, G_CFREE, G_EVENTS, G_FLOWS_LEFT, G_SENDERS_LEFT,
    G_END, G_ERR, G_ERRARG, G_SENT, G_DELIVERED, G_DUPLICATE, G_DISCARDED, G_RETX, G_TIMEOUTS,
    G_FIRST_DONE, G_NSAMP, G_ACK_EVERY, G_ACK_SIZE, G_LIMIT, G_SAMPLE, G_PICK, G_SELECTIVE,
    G_RENO, G_DROPPED, G_DROP_PACKETS, G_MTI, G_TRIMMED, G_TRIM_PACKETS, G_REPATHS, G_NSCC,
    G_DCQCN, G_FAST_RECOVERY, G_TICK_PS, G_CNP_INTERVAL, G_CNPS_SENT, G_CNPS_RECEIVED,
    G_PAUSES_SENT, G_RESUMES_SENT, G_CORRUPTED, G_CORRUPT_PACKETS, G_LINK_REPLAYS, G_PUSED,
    G_TUSED, G_CUSED, G_STARTED, G_LEN,
) = range(50)  # fmt: skip

# how switches choose among a flow's candidate ports (components.PICK_*)
PICK_FIXED, PICK_SPRAY, PICK_ADAPTIVE = 0, 1, 2

# error codes (G_ERR)
(
    ERR_NONE, ERR_HEAP, ERR_PACKETS, ERR_TIMERS, ERR_CREDITS, ERR_OVERFLOW, ERR_ROUTE,
    ERR_FRUITLESS, ERR_ROOM,
) = range(9)  # fmt: skip

#: Rows each pool (heap, packets, timers, credit holders) keeps free before an event runs: an
#: event that finds less stops the loop with ERR_ROOM, before it starts, so that the caller can
#: grow the pools and run on from there (an event takes a few rows; one that takes more than
#: this, such as a task starting many flows, runs out mid-event: ERR_HEAP and friends, and the
#: caller reruns from the start with larger pools).
ROOM = 64

#: endpoints.MAX_FRUITLESS_TIMEOUTS: timeouts in a row with nothing acknowledged stop the run
MAX_FRUITLESS_TIMEOUTS = 64

# H: the heap, one row per event
H_T, H_Q, H_K, H_I, H_A = range(5)
EV_DONE, EV_ARRIVE, EV_CREDIT, EV_TIMER, EV_TASK, EV_SAMPLE, EV_PAUSE = range(7)

# P: ports (queues are head/tail pairs: column, column + 1)
(
    P_DST, P_SRC, P_DELAY, P_CUT, P_PROP, P_PERIOD, P_MAXPKT, P_SCHED, P_CREDITS, P_CREDIT_DUE,
    P_HOLDER, P_BUSY, P_CUR_SIZE, P_CUR_SER, P_HELD, P_QBYTES, P_QAREA, P_QLAST, P_QPEAK, P_TXB,
    P_TXP, P_BUSYPS, P_CTRL, _P_CTRL_T, P_DATA, _P_DATA_T, P_PIPE, _P_PIPE_T, P_ARMED, P_FC,
    P_DROPS, P_HASECN, P_KMIN, P_KMAX, P_MARKS, P_TRIMS, P_PAUSED, P_PAUSED_SINCE, P_PAUSED_PS,
    P_PAUSE_FRAMES, P_XOFF, P_INGRESS, P_INGRESS_PEAK, P_PAUSE_DELAY, P_REPLAYS, P_LEN,
) = range(46)  # fmt: skip

# NT: node trimming (components.Node.trim, trim_bytes, trim_queue)
NT_TRIM, NT_BYTES, NT_QUEUE, NT_LEN = range(4)

# link flow control (components.FC_*)
FC_NONE, FC_PFC, FC_CREDIT = 0, 1, 2

# N: nodes (N_XOFF: where the node's paused ingress ports start in XO, N_NXOFF: how many)
N_BUF, N_OCC, N_PEAK, N_HEADROOM, N_XOFF, N_NXOFF, N_LEN = range(7)

#: bytes under the XOFF level at which a paused ingress port resumes (components.Node._resume)
PFC_RESUME_OFFSET = 3000

# F: flows, with their sender and receiver (F_DQ*: DCQCN's timer and byte counters and whether a
# CNP came since the last tick)
(
    F_SRC, F_DST, F_N, F_LAST, F_MTU, F_HEADER, F_RTO_PS, F_SCHED, F_RSCHED, F_FOFF, F_FLEN,
    F_ROFF, F_RLEN, F_SQOFF, F_NEXT_SEQ, F_UNA, F_INFLIGHT, F_READY, F_DONE, F_SNEXT,
    F_EXPECTED, F_NAKFOR, F_RECEIVED, F_SINCE, F_START, F_FINISH, F_TASK, F_CFOFF, F_CFLEN,
    F_CROFF, F_CRLEN, F_RQHEAD, F_RQTAIL, F_DUPACKS, F_FRUITLESS, F_BASE_RTT, F_NEXT_TIME,
    F_DQI, F_DQJ, F_DQSEEN, F_LAST_CNP, F_LEN,
) = range(42)  # fmt: skip

# TM: timers (kernel.Timer), row 3·flow + T_*; TM_QH/TM_QT: its armings waiting off the heap
TM_GEN, TM_DEAD, TM_INHEAP, TM_TAIL, TM_QH, TM_QT, TM_LEN = range(7)
T_RTO, T_PACE, T_TICK = range(3)

# FQ: DCQCN (transport.dcqcn.Dcqcn) and pacing (Sender.pace, ps per wire byte; 0: line rate)
FQ_RATE, FQ_TARGET, FQ_ALPHA, FQ_BYTES, FQ_LINE, FQ_PACE, FQ_CAP, FQ_LEN = range(8)
# DQ: DCQCN's constants (transport.dcqcn.DcqcnParams)
DQ_G, DQ_BYTE_COUNTER, DQ_RAI, DQ_RHAI, DQ_MIN_RATE, DQ_LEN = range(6)

# FN: NSCC (transport.nscc.Nscc), seconds and bytes as floats
(
    FN_CWND, FN_INC, FN_ACKED_SINCE, FN_AVG_DELAY, FN_LAST_MD, FN_LAST_ADJUST, FN_QA_START,
    FN_QA_BYTES, FN_BASE_RTT, FN_TARGET, FN_FI, FN_ALPHA, FN_ETA, FN_MAXWND, FN_MSS, FN_LEN,
) = range(16)  # fmt: skip

#: picoseconds per second (kernel.PS_PER_S)
PS_PER_S = 10**12

# FR: NewReno (transport.reno.Reno)
FR_CWND, FR_SSTHRESH, FR_LEN = range(3)

# SQ: per packet sequence number of every flow (uint8)
SQ_ACKED, SQ_OUT, SQ_SENT, SQ_QUEUED, SQ_GOT, SQ_LEN = range(6)

# K: the packet pool
(
    K_FLOW, K_KIND, K_SEQ, K_SIZE, K_PAYLOAD, K_DUE, K_INPORT, K_HOP, K_ENT, K_ACK, K_TRIM, K_ECN,
    K_SENT, K_CORRUPT, K_NEXT, K_LEN,
) = range(16)  # fmt: skip
DATA, ACK, NACK, CNP = 0, 1, 2, 3

# S: NIC schedulers (round-robin lists of senders)
S_PORT, S_HEAD, S_TAIL, S_COUNT, S_LEN = range(5)

# TQ: timer armings waiting off the heap (kernel.Timer._queued)
TQ_T, TQ_Q, TQ_GEN, TQ_NEXT, TQ_LEN = range(5)

# CH: credit updates in flight (components.Port.credit_holder)
CH_AMOUNT, CH_NEXT, CH_LEN = range(3)

# TK: tasks
# TK: tasks; their flows are TF[TK_FOFF : TK_FOFF + TK_FLEN], the tasks waiting for them
# TF[TK_DOFF : TK_DOFF + TK_DLEN] (Task.dependents)
(
    TK_DELAY, TK_START, TK_END, TK_LEFT, TK_FOFF, TK_FLEN, TK_READY, TK_WAITING, TK_DOFF, TK_DLEN,
    TK_LEN,
) = range(11)  # fmt: skip

#: rows of the queue-occupancy series before it halves (Network._sample)
MAX_SAMPLES = 1024

_F = TypeVar("_F", bound=Callable[..., Any])

#: Every kernel function and its numba options, in definition order. The decorators below only
#: record them: importing this module does not import numba (~65 MiB resident, and the cached
#: kernel's LLVM objects another ~64 MiB), so ``fast.py`` reads the layout above for free and a
#: process that runs the ahead-of-time build of the loop (:mod:`commwall.engines.packet.aot`)
#: never loads numba at all. :func:`jit_all` turns them into numba functions.
_KERNEL_FUNCTIONS: list[tuple[str, dict[str, Any]]] = []
_jitted = False


def _jit(fn: _F) -> _F:
    """Compile ``fn`` with numba once :func:`jit_all` runs, cached on disk (``__pycache__``).
    The kernel allocates nothing, so it runs without numba's reference counting
    (``_nrt=False``): the atomic increments it would add on every array access cost half the
    run time."""
    _KERNEL_FUNCTIONS.append((fn.__name__, {"cache": True, "nogil": True, "_nrt": False}))
    return fn


def _jit_inline(fn: _F) -> _F:
    """:func:`_jit`, and inlined where it is called (numba's IR inliner). A call that takes the
    state tuple ``st`` passes its 37 arrays flattened: ~290 machine words pushed on the stack
    per call (2,304 bytes in ``_dispatch``'s calls), several times per event. The functions on
    every event's path that have one or two callers are inlined, and ``_start`` and the leaves
    ``_pick``, ``_random``, ``_error_p``; ``_start``'s own callees (``_pull``, ``_next_packet``)
    and the many-caller ``_control``, ``_arm`` and ``_wake`` stay calls: inlining them too took
    the first compile from ~1 to 2-6 minutes and 1.5-5 GB (benchmarks/README.md)."""
    options = {"cache": True, "nogil": True, "_nrt": False, "inline": "always"}
    _KERNEL_FUNCTIONS.append((fn.__name__, options))
    return fn


def jit_all() -> Callable[[tuple[Any, ...]], int]:
    """Import numba and replace every kernel function of this module by its numba function
    (once; numba compiles each on its first call, or loads it from its cache); returns
    :func:`run_kernel`. A kernel function calls the others through this module's globals, so
    after this every call inside the loop is compiled code."""
    global _jitted
    if not _jitted:
        from numba import njit

        names = globals()
        for name, options in _KERNEL_FUNCTIONS:
            names[name] = njit(**options)(names[name])
        _jitted = True
    return cast(Callable[[tuple[Any, ...]], int], globals()["run_kernel"])


# ---- the heap ------------------------------------------------------------------------------


@_jit
def _push_seq(G: Any, H: Any, t: int, seq: int, kind: int, idx: int, arg: int) -> None:
    """Push an event with a sequence number drawn earlier (a deferred timer arming)."""
    i = G[G_HSIZE]
    if i >= H.shape[0]:
        G[G_ERR] = ERR_HEAP
        return
    G[G_HSIZE] = i + 1
    while i > 0:
        up = (i - 1) >> 1
        ut = H[up, H_T]
        if ut < t or (ut == t and H[up, H_Q] < seq):
            break
        H[i, H_T] = ut
        H[i, H_Q] = H[up, H_Q]
        H[i, H_K] = H[up, H_K]
        H[i, H_I] = H[up, H_I]
        H[i, H_A] = H[up, H_A]
        i = up
    H[i, H_T] = t
    H[i, H_Q] = seq
    H[i, H_K] = kind
    H[i, H_I] = idx
    H[i, H_A] = arg


@_jit
def _draw(G: Any) -> int:
    """The next sequence number (the kernel's ``next(counter)``)."""
    seq = G[G_SEQ]
    G[G_SEQ] = seq + 1
    return int(seq)


@_jit
def _push(G: Any, H: Any, t: int, kind: int, idx: int, arg: int) -> None:
    """``heappush(heap, (t, next(counter), handler, arg))``."""
    _push_seq(G, H, t, _draw(G), kind, idx, arg)


@_jit
def _pop(G: Any, H: Any) -> tuple[int, int, int, int]:
    """Pop the earliest event: (time, kind, index, argument)."""
    t, kind, idx, arg = H[0, H_T], H[0, H_K], H[0, H_I], H[0, H_A]
    n = G[G_HSIZE] - 1
    G[G_HSIZE] = n
    if n > 0:
        lt, lq = H[n, H_T], H[n, H_Q]
        lk, li, la = H[n, H_K], H[n, H_I], H[n, H_A]
        i = 0
        while True:
            c = 2 * i + 1
            if c >= n:
                break
            r = c + 1
            if r < n and (
                H[r, H_T] < H[c, H_T] or (H[r, H_T] == H[c, H_T] and H[r, H_Q] < H[c, H_Q])
            ):
                c = r
            ct = H[c, H_T]
            if lt < ct or (lt == ct and lq < H[c, H_Q]):
                break
            H[i, H_T] = ct
            H[i, H_Q] = H[c, H_Q]
            H[i, H_K] = H[c, H_K]
            H[i, H_I] = H[c, H_I]
            H[i, H_A] = H[c, H_A]
            i = c
        H[i, H_T] = lt
        H[i, H_Q] = lq
        H[i, H_K] = lk
        H[i, H_I] = li
        H[i, H_A] = la
    return t, kind, idx, arg


# ---- packets and linked queues -------------------------------------------------------------


@_jit
def _new_packet(G: Any, K: Any, flow: int, kind: int, seq: int, size: int, payload: int) -> int:
    """A packet from the pool (-1 and an error when it is empty)."""
    pkt = G[G_PFREE]
    if pkt < 0:
        G[G_ERR] = ERR_PACKETS
        return -1
    G[G_PFREE] = K[pkt, K_NEXT]
    G[G_PUSED] += 1
    K[pkt, K_FLOW] = flow
    K[pkt, K_KIND] = kind
    K[pkt, K_SEQ] = seq
    K[pkt, K_SIZE] = size
    K[pkt, K_PAYLOAD] = payload
    K[pkt, K_DUE] = 0
    K[pkt, K_INPORT] = -1
    K[pkt, K_HOP] = 0
    K[pkt, K_ENT] = 0
    K[pkt, K_ACK] = -1
    K[pkt, K_TRIM] = 0
    K[pkt, K_ECN] = 0
    K[pkt, K_SENT] = 0
    K[pkt, K_CORRUPT] = 0
    K[pkt, K_NEXT] = -1
    return int(pkt)


# ---- random.Random (CPython's _randommodule.c: MT19937, genrand_res53) ----------------------

_MT_N, _MT_M = 624, 397
_MT_MASK = 0xFFFFFFFF


@_jit
def _genrand(G: Any, MT: Any) -> int:
    """One 32-bit draw of the Mersenne Twister, as CPython's genrand_uint32."""
    if G[G_MTI] >= _MT_N:
        for kk in range(_MT_N):
            y = (MT[kk] & 0x80000000) | (MT[(kk + 1) % _MT_N] & 0x7FFFFFFF)
            z = MT[(kk + _MT_M) % _MT_N] ^ (y >> 1)
            if y & 1:
                z ^= 0x9908B0DF
            MT[kk] = z & _MT_MASK
        G[G_MTI] = 0
    y = MT[G[G_MTI]]
    G[G_MTI] += 1
    y ^= y >> 11
    y ^= (y << 7) & 0x9D2C5680
    y ^= (y << 15) & 0xEFC60000
    y ^= y >> 18
    return int(y & _MT_MASK)


@_jit_inline
def _random(st: Any) -> float:
    """random.Random.random(): 53 bits from two draws."""
    G, MT = st[I_G], st[I_MT]
    a = _genrand(G, MT) >> 5
    b = _genrand(G, MT) >> 6
    return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0)


_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


@_jit
def _mix64(z: Any) -> Any:
    """components.mix64 on a uint64 (the splitmix64 finaliser; products wrap mod 2**64)."""
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    return z ^ (z >> np.uint64(31))


@_jit_inline
def _pick(st: Any, node: int, f: int, pkt: int, forward: bool) -> int:
    """The egress port Node.receive chooses at ``node`` for ``pkt`` of flow ``f`` (spraying or
    adaptive routing); -1 and an error if the flow has no route there."""
    G, P, F, K = st[I_G], st[I_P], st[I_F], st[I_K]
    NS, CN, CO, CL, CP = st[I_NS], st[I_CN], st[I_CO], st[I_CL], st[I_CP]
    if forward:
        lo, hi = F[f, F_CFOFF], F[f, F_CFOFF] + F[f, F_CFLEN]
    else:
        lo, hi = F[f, F_CROFF], F[f, F_CROFF] + F[f, F_CRLEN]
    end = hi
    while lo < hi:
        mid = (lo + hi) >> 1
        if CN[mid] < node:
            lo = mid + 1
        else:
            hi = mid
    if lo >= end or CN[lo] != node:
        G[G_ERR] = ERR_ROUTE
        G[G_ERRARG] = node
        return -1
    first, count = CO[lo], CL[lo]
    if count == 1:
        return int(CP[first])
    h = _mix64(np.uint64(K[pkt, K_ENT]) ^ NS[node])
    if G[G_PICK] != PICK_ADAPTIVE:
        return int(CP[first + np.int64(h % np.uint64(count))])
    # the shortest egress queue; ties go by the entropy hash, in candidate order
    least = P[CP[first], P_QBYTES]
    ties = 1
    for i in range(first + 1, first + count):
        q = P[CP[i], P_QBYTES]
        if q < least:
            least = q
            ties = 1
        elif q == least:
            ties += 1
    want = 0 if ties == 1 else np.int64(h % np.uint64(ties))
    for i in range(first, first + count):
        if P[CP[i], P_QBYTES] == least:
            if want == 0:
                return int(CP[i])
            want -= 1
    return -1


@_jit
def _free_packet(G: Any, K: Any, pkt: int) -> None:
    K[pkt, K_NEXT] = G[G_PFREE]
    G[G_PFREE] = pkt
    G[G_PUSED] -= 1


@_jit
def _append(Q: Any, row: int, col: int, K: Any, pkt: int) -> None:
    """Append ``pkt`` to the queue whose head/tail are ``Q[row, col]``/``Q[row, col + 1]``."""
    K[pkt, K_NEXT] = -1
    tail = Q[row, col + 1]
    if tail < 0:
        Q[row, col] = pkt
    else:
        K[tail, K_NEXT] = pkt
    Q[row, col + 1] = pkt


@_jit
def _popleft(Q: Any, row: int, col: int, K: Any) -> int:
    """Remove and return the head of a non-empty queue."""
    pkt = Q[row, col]
    nxt = K[pkt, K_NEXT]
    Q[row, col] = nxt
    if nxt < 0:
        Q[row, col + 1] = -1
    return int(pkt)


# ---- ports (components.Port) ---------------------------------------------------------------


@_jit_inline
def _start(st: Any, p: int) -> None:
    """Port.start: begin serialising the next eligible packet, if any."""
    G, H, P, PPB, K = st[I_G], st[I_H], st[I_P], st[I_PPB], st[I_K]
    if P[p, P_CTRL] >= 0:
        pkt = _popleft(P, p, P_CTRL, K)
    elif P[p, P_PAUSED]:
        return
    elif P[p, P_DATA] >= 0:
        pkt = P[p, P_DATA]
        if P[p, P_FC] == FC_CREDIT:
            size = K[pkt, K_SIZE]
            if P[p, P_CREDITS] < size:
                return
            P[p, P_CREDITS] -= size
        _popleft(P, p, P_DATA, K)
        P[p, P_HELD] = K[pkt, K_INPORT]
        K[pkt, K_INPORT] = -1
    elif P[p, P_SCHED] >= 0:
        credited = P[p, P_FC] == FC_CREDIT
        if credited and P[p, P_CREDITS] < P[p, P_MAXPKT]:
            return
        pkt = _pull(st, P[p, P_SCHED])
        if pkt < 0:
            return
        if credited:
            P[p, P_CREDITS] -= K[pkt, K_SIZE]
    else:
        return
    P[p, P_BUSY] = 1
    size = K[pkt, K_SIZE]
    P[p, P_CUR_SIZE] = size
    ser = int(size * PPB[p] + 0.5)
    P[p, P_CUR_SER] = ser
    done = G[G_NOW] + ser
    _push(G, H, done, EV_DONE, p, 0)
    arrive = done + P[p, P_DELAY]
    cut = P[p, P_CUT]
    if cut:
        arrive -= cut if cut < ser else ser
    if st[I_PB][p] != 0.0:  # bit errors: the far end's FCS check will fail
        if _random(st) < _error_p(st, p, size):
            K[pkt, K_CORRUPT] = 1
        tail = P[p, P_PIPE + 1]
        if tail >= 0 and arrive < K[tail, K_DUE]:  # in order behind a link-level replay
            arrive = K[tail, K_DUE]
    K[pkt, K_DUE] = arrive
    _append(P, p, P_PIPE, K, pkt)
    if not P[p, P_ARMED]:
        P[p, P_ARMED] = 1
        _push(G, H, arrive, EV_ARRIVE, p, 0)


@_jit
def _has_work(P: Any, p: int) -> bool:
    return bool(P[p, P_CTRL] >= 0 or P[p, P_DATA] >= 0 or P[p, P_SCHED] >= 0)


@_jit_inline
def _done(st: Any, p: int) -> None:
    """Port.done: the tail left; free its buffer here, count it, start the next one."""
    G, P, N = st[I_G], st[I_P], st[I_N]
    P[p, P_BUSY] = 0
    size = P[p, P_CUR_SIZE]
    P[p, P_TXB] += size
    P[p, P_TXP] += 1
    P[p, P_BUSYPS] += P[p, P_CUR_SER]
    held = P[p, P_HELD]
    if held >= 0:
        P[p, P_HELD] = -1
        now = G[G_NOW]
        P[p, P_QAREA] += P[p, P_QBYTES] * (now - P[p, P_QLAST])
        P[p, P_QLAST] = now
        P[p, P_QBYTES] -= size
        node = P[p, P_SRC]
        N[node, N_OCC] -= size
        fc = P[held, P_FC]
        if fc == FC_CREDIT:
            _return_credit(st, held, size)
        elif fc == FC_PFC:  # Node.release
            P[held, P_INGRESS] -= size
            if N[node, N_NXOFF]:
                _resume(st, node)
    if _has_work(P, p):
        _start(st, p)


@_jit_inline
def _arrive(st: Any, p: int) -> None:
    """Port.arrive: deliver every packet whose time has come to the far end."""
    G, H, P, K = st[I_G], st[I_H], st[I_P], st[I_K]
    now = G[G_NOW]
    while P[p, P_PIPE] >= 0 and K[P[p, P_PIPE], K_DUE] <= now and G[G_ERR] == ERR_NONE:
        pkt = _popleft(P, p, P_PIPE, K)
        if K[pkt, K_CORRUPT] and P[p, P_REPLAYS]:
            _replay(st, p, pkt, now)
            continue
        _receive(st, P[p, P_DST], pkt, p)
    if P[p, P_PIPE] >= 0:
        _push(G, H, K[P[p, P_PIPE], K_DUE], EV_ARRIVE, p, 0)
    else:
        P[p, P_ARMED] = 0


@_jit_inline
def _error_p(st: Any, p: int, size: int) -> float:
    """Port._error_p: a full packet's error probability, or less for a smaller one."""
    full = st[I_PB][p]
    maxpkt = st[I_P][p, P_MAXPKT]
    if size >= maxpkt:
        return float(full)
    return float(-math.expm1(size / maxpkt * math.log1p(-full)))


@_jit
def _replay(st: Any, p: int, pkt: int, now: int) -> None:
    """Port._replay: link-level retry; the packet and everything behind it in the pipe arrive
    a link round trip and one serialisation later (the replay may fail again)."""
    G, P, PPB, K = st[I_G], st[I_P], st[I_PPB], st[I_K]
    G[G_CORRUPT_PACKETS] += 1
    G[G_LINK_REPLAYS] += 1
    size = K[pkt, K_SIZE]
    delta = 2 * P[p, P_PROP] + int(size * PPB[p] + 0.5)
    K[pkt, K_CORRUPT] = 1 if _random(st) < _error_p(st, p, size) else 0
    K[pkt, K_DUE] = now + delta
    later = P[p, P_PIPE]
    while later >= 0:
        K[later, K_DUE] += delta
        later = K[later, K_NEXT]
    K[pkt, K_NEXT] = P[p, P_PIPE]  # appendleft
    P[p, P_PIPE] = pkt
    if P[p, P_PIPE + 1] < 0:
        P[p, P_PIPE + 1] = pkt


@_jit
def _return_credit(st: Any, p: int, nbytes: int) -> None:
    """Port.return_credit: the credit travels back on the next flow-control update."""
    G, H, P, CH = st[I_G], st[I_H], st[I_P], st[I_CH]
    period = P[p, P_PERIOD]
    due = -(-G[G_NOW] // period) * period + P[p, P_PROP]
    holder = P[p, P_HOLDER]
    if holder >= 0 and P[p, P_CREDIT_DUE] == due:
        CH[holder, CH_AMOUNT] += nbytes
        return
    holder = G[G_CFREE]
    if holder < 0:
        G[G_ERR] = ERR_CREDITS
        return
    G[G_CFREE] = CH[holder, CH_NEXT]
    G[G_CUSED] += 1
    CH[holder, CH_AMOUNT] = nbytes
    P[p, P_HOLDER] = holder
    P[p, P_CREDIT_DUE] = due
    _push(G, H, due, EV_CREDIT, p, holder)


@_jit
def _credit(st: Any, p: int, holder: int) -> None:
    """Port._credit: a flow-control update arrived."""
    G, P, CH = st[I_G], st[I_P], st[I_CH]
    P[p, P_CREDITS] += CH[holder, CH_AMOUNT]
    if P[p, P_HOLDER] == holder:
        P[p, P_HOLDER] = -1
    CH[holder, CH_NEXT] = G[G_CFREE]
    G[G_CFREE] = holder
    G[G_CUSED] -= 1
    if not P[p, P_BUSY] and _has_work(P, p):
        _start(st, p)


@_jit
def _send_pause(st: Any, p: int, pause: int) -> None:
    """Network.send_pause: XOFF (1) or XON (0) reaches port ``p`` one cable delay and a pause
    frame (behind a full packet) later."""
    G, H, P = st[I_G], st[I_H], st[I_P]
    G[G_PAUSES_SENT if pause else G_RESUMES_SENT] += 1
    _push(G, H, G[G_NOW] + P[p, P_PAUSE_DELAY], EV_PAUSE, p, pause)


@_jit
def _set_paused(st: Any, p: int, pause: int) -> None:
    """Port.set_paused: a PFC XOFF or XON from the far end arrived."""
    G, P = st[I_G], st[I_P]
    now = G[G_NOW]
    if pause and not P[p, P_PAUSED]:
        P[p, P_PAUSED_SINCE] = now
        P[p, P_PAUSE_FRAMES] += 1
    elif not pause and P[p, P_PAUSED]:
        P[p, P_PAUSED_PS] += now - P[p, P_PAUSED_SINCE]
    P[p, P_PAUSED] = pause
    if not pause and not P[p, P_BUSY]:
        _start(st, p)


@_jit
def _resume(st: Any, node: int) -> None:
    """Node._resume: XON to every paused ingress port now 3 KB under the XOFF level, or empty
    (the rest stay paused, in order)."""
    P, N, XO = st[I_P], st[I_N], st[I_XO]
    level = (
        st[I_NA][node] * (N[node, N_BUF] - N[node, N_HEADROOM] - N[node, N_OCC]) - PFC_RESUME_OFFSET
    )
    off = N[node, N_XOFF]
    kept = 0
    for i in range(N[node, N_NXOFF]):
        port = XO[off + i]
        if P[port, P_INGRESS] <= level or P[port, P_INGRESS] == 0:
            P[port, P_XOFF] = 0
            _send_pause(st, port, 0)
        else:
            XO[off + kept] = port
            kept += 1
    N[node, N_NXOFF] = kept


# ---- nodes (components.Node) ---------------------------------------------------------------


@_jit_inline
def _receive(st: Any, node: int, pkt: int, in_port: int) -> None:
    """Node.receive: deliver the packet here or forward it along its flow's route."""
    G, P, N, F, R, K = st[I_G], st[I_P], st[I_N], st[I_F], st[I_R], st[I_K]
    if K[pkt, K_CORRUPT]:  # the FCS check fails: dropped here (Network.corrupted)
        G[G_CORRUPT_PACKETS] += 1
        if K[pkt, K_KIND] == DATA and not K[pkt, K_TRIM]:
            G[G_CORRUPTED] += K[pkt, K_PAYLOAD]
            if P[in_port, P_FC] == FC_CREDIT:
                _return_credit(st, in_port, K[pkt, K_SIZE])
        _free_packet(G, K, pkt)
        return
    f = K[pkt, K_FLOW]
    hop = K[pkt, K_HOP] + 1
    fixed = G[G_PICK] == PICK_FIXED
    if K[pkt, K_KIND] == DATA:
        if F[f, F_DST] == node:
            if P[in_port, P_FC] == FC_CREDIT and not K[pkt, K_TRIM]:
                _return_credit(st, in_port, K[pkt, K_SIZE])  # the NIC drains at once
            _on_data(st, f, pkt)
            _free_packet(G, K, pkt)
            return
        out = R[F[f, F_FOFF] + hop] if fixed else _pick(st, node, f, pkt, True)
        if out >= 0 and K[pkt, K_TRIM]:  # a trimmed header travels as control
            K[pkt, K_HOP] = hop
            _append(P, out, P_CTRL, K, pkt)
            if not P[out, P_BUSY]:
                _start(st, out)
            return
    else:
        if F[f, F_SRC] == node:
            _on_control(st, f, pkt)
            _free_packet(G, K, pkt)
            return
        out = R[F[f, F_ROFF] + hop] if fixed else _pick(st, node, f, pkt, False)
        if out < 0:
            return
        K[pkt, K_HOP] = hop
        _append(P, out, P_CTRL, K, pkt)
        if not P[out, P_BUSY]:
            _start(st, out)
        return
    if out < 0:
        return
    K[pkt, K_HOP] = hop
    size = K[pkt, K_SIZE]
    if P[in_port, P_FC] == FC_NONE:  # admission against α × the free buffer, else a drop
        NT = st[I_NT]
        free = N[node, N_BUF] - N[node, N_OCC]
        if size > free or P[out, P_QBYTES] + size > st[I_NA][node] * free:
            if NT[node, NT_TRIM]:
                _trim(st, node, pkt, out)
            else:
                P[out, P_DROPS] += 1
                G[G_DROP_PACKETS] += 1
                G[G_DROPPED] += K[pkt, K_PAYLOAD]
                _free_packet(G, K, pkt)
            return
        if NT[node, NT_TRIM] and P[out, P_QBYTES] + size > NT[node, NT_QUEUE]:
            _trim(st, node, pkt, out)
            return
    elif P[in_port, P_FC] == FC_PFC:  # count the ingress; over the XOFF level, pause it
        ingress = P[in_port, P_INGRESS] + size
        P[in_port, P_INGRESS] = ingress
        if ingress > P[in_port, P_INGRESS_PEAK]:
            P[in_port, P_INGRESS_PEAK] = ingress
        if not P[in_port, P_XOFF] and ingress > st[I_NA][node] * (
            N[node, N_BUF] - N[node, N_HEADROOM] - N[node, N_OCC]
        ):
            P[in_port, P_XOFF] = 1
            XO = st[I_XO]
            XO[N[node, N_XOFF] + N[node, N_NXOFF]] = in_port
            N[node, N_NXOFF] += 1
            _send_pause(st, in_port, 1)
    occupancy = N[node, N_OCC] + size
    N[node, N_OCC] = occupancy
    if occupancy > N[node, N_PEAK]:
        N[node, N_PEAK] = occupancy
        if occupancy > N[node, N_BUF]:
            G[G_ERR] = ERR_OVERFLOW
            G[G_ERRARG] = node
            return
    K[pkt, K_INPORT] = in_port
    now = G[G_NOW]
    qbytes = P[out, P_QBYTES]
    if P[out, P_HASECN] and not K[pkt, K_ECN] and qbytes > P[out, P_KMIN]:
        # EcnParams.probability, then one draw of the network's generator below 1
        if qbytes > P[out, P_KMAX]:
            p = 1.0
        else:
            p = st[I_PE][out] * (qbytes - P[out, P_KMIN]) / max(P[out, P_KMAX] - P[out, P_KMIN], 1)
        if p >= 1.0 or _random(st) < p:
            K[pkt, K_ECN] = 1
            P[out, P_MARKS] += 1
    P[out, P_QAREA] += qbytes * (now - P[out, P_QLAST])
    P[out, P_QLAST] = now
    qbytes += size
    P[out, P_QBYTES] = qbytes
    if qbytes > P[out, P_QPEAK]:
        P[out, P_QPEAK] = qbytes
    _append(P, out, P_DATA, K, pkt)
    if not P[out, P_BUSY]:
        _start(st, out)


@_jit
def _trim(st: Any, node: int, pkt: int, out: int) -> None:
    """Node._trim: cut the payload; the header goes on at control priority (Ultra Ethernet)."""
    G, P, K, NT = st[I_G], st[I_P], st[I_K], st[I_NT]
    G[G_TRIM_PACKETS] += 1
    G[G_TRIMMED] += K[pkt, K_PAYLOAD]
    P[out, P_TRIMS] += 1
    K[pkt, K_TRIM] = 1
    K[pkt, K_SIZE] = NT[node, NT_BYTES]
    _append(P, out, P_CTRL, K, pkt)
    if not P[out, P_BUSY]:
        _start(st, out)


# ---- the NIC scheduler and the sender (endpoints.Sender, transport.nscc.Nscc) ---------------


@_jit
def _pull(st: Any, s: int) -> int:
    """Scheduler.pull: the next data packet of the ready senders, round-robin, or -1."""
    F, S = st[I_F], st[I_S]
    for _ in range(S[s, S_COUNT]):
        f = S[s, S_HEAD]
        nxt = F[f, F_SNEXT]
        S[s, S_HEAD] = nxt
        if nxt < 0:
            S[s, S_TAIL] = -1
        S[s, S_COUNT] -= 1
        pkt = _next_packet(st, f)
        if pkt >= 0:
            _ready_append(S, F, s, f)
            return pkt
        F[f, F_READY] = 0
    return -1


@_jit
def _ready_append(S: Any, F: Any, s: int, f: int) -> None:
    F[f, F_SNEXT] = -1
    tail = S[s, S_TAIL]
    if tail < 0:
        S[s, S_HEAD] = f
    else:
        F[tail, F_SNEXT] = f
    S[s, S_TAIL] = f
    S[s, S_COUNT] += 1


@_jit
def _wake(st: Any, f: int) -> None:
    """Scheduler.wake: the sender of flow ``f`` may be able to send again."""
    P, F, S = st[I_P], st[I_F], st[I_S]
    if not F[f, F_READY]:
        F[f, F_READY] = 1
        s = F[f, F_SCHED]
        _ready_append(S, F, s, f)
        port = S[s, S_PORT]
        if not P[port, P_BUSY]:
            _start(st, port)


@_jit
def _payload(F: Any, f: int, seq: int) -> int:
    return int(F[f, F_LAST] if seq == F[f, F_N] - 1 else F[f, F_MTU])


@_jit
def _next_packet(st: Any, f: int) -> int:
    """Sender.next_packet (a NSCC or NewReno window or the in-flight cap, then the pace), or
    -1."""
    G, F, SQ, K, FL, RQ = st[I_G], st[I_F], st[I_SQ], st[I_K], st[I_FL], st[I_RQ]
    if F[f, F_DONE]:
        return -1
    off = F[f, F_SQOFF]
    head = F[f, F_RQHEAD]  # the retransmission queue (selective only; else always empty)
    while head >= 0 and SQ[off + head, SQ_ACKED]:
        SQ[off + head, SQ_QUEUED] = 0
        head = _rq_pop(F, RQ, f)
    if head >= 0:
        seq = head
    else:
        seq = F[f, F_NEXT_SEQ]
        if seq >= F[f, F_N]:
            return -1
    size = _payload(F, f, seq)
    inflight = F[f, F_INFLIGHT]
    if inflight > 0:
        if G[G_NSCC]:
            if inflight + size > st[I_FN][f, FN_CWND]:
                return -1
        elif G[G_RENO]:
            if inflight + size > st[I_FR][f, FR_CWND]:
                return -1
        elif inflight + size > FL[0]:
            return -1
    now = G[G_NOW]
    pace = st[I_FQ][f, FQ_PACE]
    if pace != 0.0 and now < F[f, F_NEXT_TIME]:  # paced: its time has not come
        _arm(st, 3 * f + T_PACE, F[f, F_NEXT_TIME])
        return -1
    if head >= 0:
        _rq_pop(F, RQ, f)
        SQ[off + seq, SQ_QUEUED] = 0
    else:
        F[f, F_NEXT_SEQ] = seq + 1
    pkt = _new_packet(G, K, f, DATA, seq, size + F[f, F_HEADER], size)
    at = F[f, F_SQOFF] + seq
    EN = st[I_EN]  # one row when routes are fixed (ECMP): no packet's entropy is drawn then
    K[pkt, K_ENT] = EN[at] if at < EN.shape[0] else 0
    K[pkt, K_SENT] = now
    if SQ[at, SQ_SENT]:
        G[G_RETX] += size
    SQ[at, SQ_SENT] = 1
    if not SQ[at, SQ_OUT]:
        SQ[at, SQ_OUT] = 1
        F[f, F_INFLIGHT] = inflight + size
    G[G_SENT] += size
    wire = size + F[f, F_HEADER]
    if pace != 0.0:
        last = F[f, F_NEXT_TIME]
        F[f, F_NEXT_TIME] = (now if now > last else last) + int(wire * pace)
    if G[G_DCQCN] and _dcqcn_sent(st, f, wire):
        _set_pace(st, f)  # only a rate change moves the pace
    if st[I_TM][3 * f + T_RTO, TM_DEAD] < 0:
        _arm(st, 3 * f + T_RTO, now + F[f, F_RTO_PS])
    return pkt


@_jit
def _rq_pop(F: Any, RQ: Any, f: int) -> int:
    """Drop the head of flow ``f``'s retransmission queue; the new head (-1: empty)."""
    head = F[f, F_RQHEAD]
    nxt = RQ[F[f, F_SQOFF] + head]
    F[f, F_RQHEAD] = nxt
    if nxt < 0:
        F[f, F_RQTAIL] = -1
    return int(nxt)


@_jit
def _resend(st: Any, f: int, seq: int) -> None:
    """Sender._resend (selective): queue ``seq`` for retransmission."""
    F, SQ, RQ = st[I_F], st[I_SQ], st[I_RQ]
    if seq < 0 or seq >= F[f, F_N]:
        return
    at = F[f, F_SQOFF] + seq
    if SQ[at, SQ_ACKED] or SQ[at, SQ_QUEUED]:
        return
    _drop_outstanding(F, SQ, f, seq)
    SQ[at, SQ_QUEUED] = 1
    RQ[at] = -1
    tail = F[f, F_RQTAIL]
    if tail < 0:
        F[f, F_RQHEAD] = seq
    else:
        RQ[F[f, F_SQOFF] + tail] = seq
    F[f, F_RQTAIL] = seq


@_jit
def _drop_outstanding(F: Any, SQ: Any, f: int, seq: int) -> None:
    at = F[f, F_SQOFF] + seq
    if SQ[at, SQ_OUT]:
        SQ[at, SQ_OUT] = 0
        F[f, F_INFLIGHT] -= _payload(F, f, seq)


@_jit_inline
def _on_control(st: Any, f: int, pkt: int) -> None:
    """Sender.on_control: an ACK, NACK or CNP arrived."""
    F, SQ, K = st[I_F], st[I_SQ], st[I_K]
    if F[f, F_DONE]:
        return
    seq = K[pkt, K_SEQ]
    selective = st[I_G][G_SELECTIVE]
    if K[pkt, K_KIND] == ACK:
        if selective:
            _ack_one(st, f, pkt)
        else:
            _ack(st, f, seq)
    elif K[pkt, K_KIND] == NACK:
        if selective:  # a trimmed packet: resend it now
            _resend(st, f, seq)
            if st[I_G][G_NSCC]:
                _nscc_quick_adapt(st[I_FN], f, st[I_G][G_NOW] / PS_PER_S)
        elif F[f, F_UNA] <= seq < F[f, F_NEXT_SEQ]:
            for s in range(seq, F[f, F_NEXT_SEQ]):
                _drop_outstanding(F, SQ, f, s)
            F[f, F_NEXT_SEQ] = seq
    elif K[pkt, K_KIND] == CNP and st[I_G][G_DCQCN]:
        G = st[I_G]
        _dcqcn_cnp(st, f)
        _arm(st, 3 * f + T_TICK, G[G_NOW] + G[G_TICK_PS])
        _set_pace(st, f)
        G[G_CNPS_RECEIVED] += 1
    if not F[f, F_DONE]:
        _wake(st, f)


@_jit
def _ack(st: Any, f: int, cum: int) -> None:
    """Sender._ack (go-back-N: cumulative)."""
    G, F, SQ = st[I_G], st[I_F], st[I_SQ]
    newly = 0
    una = F[f, F_UNA]
    while una < cum:
        size = _payload(F, f, una)
        at = F[f, F_SQOFF] + una
        if not SQ[at, SQ_ACKED]:
            SQ[at, SQ_ACKED] = 1
            newly += size
        if SQ[at, SQ_OUT]:
            SQ[at, SQ_OUT] = 0
            F[f, F_INFLIGHT] -= size
        una += 1
    F[f, F_UNA] = una
    if newly:
        F[f, F_FRUITLESS] = 0
        _arm(st, 3 * f + T_RTO, G[G_NOW] + F[f, F_RTO_PS])
    if una >= F[f, F_N]:
        _complete(st, f)


@_jit
def _ack_one(st: Any, f: int, pkt: int) -> None:
    """Sender._ack (selective): the packet the ACK names arrived; una moves past what is
    acked; NSCC or NewReno adjust the window."""
    G, F, SQ, K = st[I_G], st[I_F], st[I_SQ], st[I_K]
    seq = K[pkt, K_ACK]
    n = F[f, F_N]
    off = F[f, F_SQOFF]
    newly = 0
    if 0 <= seq < n and not SQ[off + seq, SQ_ACKED]:
        SQ[off + seq, SQ_ACKED] = 1
        newly = _payload(F, f, seq)
        _drop_outstanding(F, SQ, f, seq)
    old = una = F[f, F_UNA]
    while una < n and SQ[off + una, SQ_ACKED]:
        una += 1
    F[f, F_UNA] = una
    if G[G_RENO]:
        if una == old and una < n and newly:
            F[f, F_DUPACKS] += 1
            if F[f, F_DUPACKS] == 3:
                _resend(st, f, una)
                _reno_halve(st[I_FR], f, _mss(F, f))
        elif una > old:
            F[f, F_DUPACKS] = 0
    if newly:
        F[f, F_FRUITLESS] = 0
        if G[G_NSCC]:
            now = G[G_NOW]
            delay = max(now - K[pkt, K_SENT] - F[f, F_BASE_RTT], 0) / PS_PER_S
            if _nscc_ack(st[I_FN], f, now / PS_PER_S, newly, delay, K[pkt, K_ECN] != 0):
                G[G_REPATHS] += 1  # Network.repath: counted (each packet sprays anew)
        elif G[G_RENO]:  # Reno.on_ack
            FR, mss = st[I_FR], _mss(F, f)
            if FR[f, FR_CWND] < FR[f, FR_SSTHRESH]:
                FR[f, FR_CWND] += newly
            else:
                FR[f, FR_CWND] += mss * newly / FR[f, FR_CWND]
        _arm(st, 3 * f + T_RTO, G[G_NOW] + F[f, F_RTO_PS])
    if una >= n:
        _complete(st, f)


@_jit
def _nscc_ack(FN: Any, f: int, now_s: float, acked: int, delay_s: float, ecn: bool) -> bool:
    """Nscc.on_ack (transport/nscc.py), operation for operation; True: change path."""
    FN[f, FN_AVG_DELAY] += 0.0125 * (delay_s - FN[f, FN_AVG_DELAY])
    FN[f, FN_QA_BYTES] += acked
    repath = False
    target = FN[f, FN_TARGET]
    if not ecn:
        if delay_s >= target:
            FN[f, FN_INC] += FN[f, FN_FI] * acked
        else:
            FN[f, FN_INC] += FN[f, FN_ALPHA] * acked * (target - delay_s)
    elif delay_s >= target:
        if now_s - FN[f, FN_LAST_MD] >= FN[f, FN_BASE_RTT]:
            avg = max(FN[f, FN_AVG_DELAY], delay_s, 1e-12)
            FN[f, FN_CWND] *= max(1.0 - 0.8 * (avg - target) / avg, 0.5)
            FN[f, FN_LAST_MD] = now_s
    else:
        repath = True
    FN[f, FN_ACKED_SINCE] += acked
    if (
        now_s - FN[f, FN_LAST_ADJUST] >= FN[f, FN_BASE_RTT]
        or FN[f, FN_ACKED_SINCE] >= 8 * FN[f, FN_MSS]
    ):
        FN[f, FN_CWND] += FN[f, FN_INC] / FN[f, FN_CWND] + FN[f, FN_ETA]
        FN[f, FN_INC] = 0.0
        FN[f, FN_ACKED_SINCE] = 0.0
        FN[f, FN_LAST_ADJUST] = now_s
    if delay_s > 4.0 * target:
        _nscc_quick_adapt(FN, f, now_s)
    FN[f, FN_CWND] = min(max(FN[f, FN_CWND], FN[f, FN_MSS]), FN[f, FN_MAXWND])
    return repath


@_jit
def _nscc_quick_adapt(FN: Any, f: int, now_s: float) -> None:
    """Nscc.quick_adapt (also Nscc.on_trim): fall to what was delivered over the last base RTT
    + target, when that is small."""
    if now_s - FN[f, FN_QA_START] < FN[f, FN_BASE_RTT] + FN[f, FN_TARGET]:
        return
    delivered = FN[f, FN_QA_BYTES]
    FN[f, FN_QA_START] = now_s
    FN[f, FN_QA_BYTES] = 0.0
    if delivered < FN[f, FN_MAXWND] / 8.0:
        FN[f, FN_CWND] = max(delivered, FN[f, FN_MSS])
        FN[f, FN_INC] = 0.0


@_jit
def _mss(F: Any, f: int) -> int:
    """The NewReno segment: a full packet on the wire (Sender: ``Reno(mtu + header)``)."""
    return int(F[f, F_MTU] + F[f, F_HEADER])


@_jit
def _reno_halve(FR: Any, f: int, mss: int) -> None:
    """Reno.on_dupacks: fast retransmit halves the window."""
    FR[f, FR_SSTHRESH] = max(FR[f, FR_CWND] / 2.0, 2.0 * mss)
    FR[f, FR_CWND] = FR[f, FR_SSTHRESH]


@_jit
def _complete(st: Any, f: int) -> None:
    """Sender._complete: its three timers cancelled."""
    G, F, TM = st[I_G], st[I_F], st[I_TM]
    F[f, F_DONE] = 1
    for tid in range(3 * f, 3 * f + 3):
        TM[tid, TM_GEN] += 1
        TM[tid, TM_DEAD] = -1
    G[G_SENDERS_LEFT] -= 1
    G[G_END] = G[G_NOW]


@_jit
def _timeout(st: Any, f: int) -> None:
    """Sender._timeout (go-back-N): resend from the first unacknowledged packet."""
    G, F, SQ = st[I_G], st[I_F], st[I_SQ]
    if F[f, F_DONE]:
        return
    G[G_TIMEOUTS] += 1
    F[f, F_FRUITLESS] += 1
    if F[f, F_FRUITLESS] > MAX_FRUITLESS_TIMEOUTS:  # Sender._timeout raises InvariantError
        G[G_ERR] = ERR_FRUITLESS
        G[G_ERRARG] = f
        return
    if G[G_SELECTIVE]:
        off = F[f, F_SQOFF]
        for s in range(F[f, F_UNA], F[f, F_NEXT_SEQ]):
            if not SQ[off + s, SQ_ACKED]:
                _resend(st, f, s)
    else:
        for s in range(F[f, F_UNA], F[f, F_NEXT_SEQ]):
            _drop_outstanding(F, SQ, f, s)
        F[f, F_NEXT_SEQ] = F[f, F_UNA]
    if G[G_NSCC]:  # Nscc.on_timeout: one MTU of window
        FN = st[I_FN]
        FN[f, FN_CWND] = FN[f, FN_MSS]
        FN[f, FN_QA_START] = G[G_NOW] / PS_PER_S
        FN[f, FN_QA_BYTES] = 0.0
    elif G[G_RENO]:  # Reno.on_timeout: the threshold as on duplicate ACKs, then one segment
        mss = _mss(F, f)
        _reno_halve(st[I_FR], f, mss)
        st[I_FR][f, FR_CWND] = float(mss)
    _arm(st, 3 * f + T_RTO, G[G_NOW] + F[f, F_RTO_PS])
    _wake(st, f)


# ---- DCQCN and pacing (transport.dcqcn.Dcqcn, Sender._set_pace, Sender._tick) --------------


@_jit
def _set_pace(st: Any, f: int) -> None:
    """Sender._set_pace: ps per wire byte at the lower of DCQCN's rate and the flow's cap."""
    FQ = st[I_FQ]
    line = FQ[f, FQ_LINE]
    rate = line
    if st[I_G][G_DCQCN]:
        rate = min(rate, FQ[f, FQ_RATE])
    cap = FQ[f, FQ_CAP]
    if cap != 0.0:
        rate = min(rate, cap)
    FQ[f, FQ_PACE] = 0.0 if rate >= line * (1 - 1e-12) else PS_PER_S / rate


@_jit
def _dcqcn_increase(st: Any, f: int) -> None:
    """Dcqcn._increase: fast recovery, additive or hyper increase of the target, then halfway."""
    F, FQ, DQ = st[I_F], st[I_FQ], st[I_DQ]
    fr = st[I_G][G_FAST_RECOVERY]
    i, j = F[f, F_DQI], F[f, F_DQJ]
    hi, lo = max(i, j), min(i, j)
    line = FQ[f, FQ_LINE]
    if hi > fr:
        if lo > fr:
            FQ[f, FQ_TARGET] += (lo - fr) * DQ[DQ_RHAI] * line
        else:
            FQ[f, FQ_TARGET] += DQ[DQ_RAI] * line
    FQ[f, FQ_TARGET] = min(FQ[f, FQ_TARGET], line)
    FQ[f, FQ_RATE] = min((FQ[f, FQ_TARGET] + FQ[f, FQ_RATE]) / 2.0, line)


@_jit
def _dcqcn_cnp(st: Any, f: int) -> None:
    """Dcqcn.on_cnp: cut the rate by α/2, raise α."""
    F, FQ, DQ = st[I_F], st[I_FQ], st[I_DQ]
    g = DQ[DQ_G]
    FQ[f, FQ_TARGET] = FQ[f, FQ_RATE]
    FQ[f, FQ_RATE] = max(DQ[DQ_MIN_RATE], FQ[f, FQ_RATE] * (1.0 - FQ[f, FQ_ALPHA] / 2.0))
    FQ[f, FQ_ALPHA] = (1.0 - g) * FQ[f, FQ_ALPHA] + g
    F[f, F_DQI] = 0
    F[f, F_DQJ] = 0
    FQ[f, FQ_BYTES] = 0.0
    F[f, F_DQSEEN] = 1


@_jit
def _dcqcn_sent(st: Any, f: int, nbytes: int) -> bool:
    """Dcqcn.on_sent: the byte counter; True if the rate may have changed."""
    F, FQ = st[I_F], st[I_FQ]
    line = FQ[f, FQ_LINE]
    if FQ[f, FQ_RATE] >= line and FQ[f, FQ_TARGET] >= line:
        return False
    FQ[f, FQ_BYTES] += nbytes
    if FQ[f, FQ_BYTES] >= st[I_DQ][DQ_BYTE_COUNTER]:
        FQ[f, FQ_BYTES] = 0.0
        F[f, F_DQJ] += 1
        _dcqcn_increase(st, f)
        return True
    return False


@_jit
def _tick(st: Any, f: int) -> None:
    """Sender._tick: DCQCN's timer (Dcqcn.on_tick: α decays without a CNP, the timer counter
    steps up), re-armed while the sender is below line rate."""
    G, F, FQ = st[I_G], st[I_F], st[I_FQ]
    if not F[f, F_DQSEEN]:
        FQ[f, FQ_ALPHA] *= 1.0 - st[I_DQ][DQ_G]
    F[f, F_DQSEEN] = 0
    F[f, F_DQI] += 1
    _dcqcn_increase(st, f)
    _set_pace(st, f)
    line = FQ[f, FQ_LINE]
    limited = FQ[f, FQ_RATE] < line or FQ[f, FQ_TARGET] < line
    if limited and not F[f, F_DONE]:
        _arm(st, 3 * f + T_TICK, G[G_NOW] + G[G_TICK_PS])
    _wake(st, f)


# ---- the timers (kernel.Timer): three per flow ------------------------------------------------


@_jit
def _arm(st: Any, tid: int, t: int) -> None:
    """Timer.arm: a later arming waits off the heap behind the pending one."""
    G, H, TM, TQ = st[I_G], st[I_H], st[I_TM], st[I_TQ]
    gen = TM[tid, TM_GEN] + 1
    TM[tid, TM_GEN] = gen
    TM[tid, TM_DEAD] = t
    seq = _draw(G)
    if TM[tid, TM_INHEAP] and t >= TM[tid, TM_TAIL]:
        q = G[G_TFREE]
        if q < 0:
            G[G_ERR] = ERR_TIMERS
            return
        G[G_TFREE] = TQ[q, TQ_NEXT]
        G[G_TUSED] += 1
        TQ[q, TQ_T] = t
        TQ[q, TQ_Q] = seq
        TQ[q, TQ_GEN] = gen
        TQ[q, TQ_NEXT] = -1
        tail = TM[tid, TM_QT]
        if tail < 0:
            TM[tid, TM_QH] = q
        else:
            TQ[tail, TQ_NEXT] = q
        TM[tid, TM_QT] = q
    else:
        _push_seq(G, H, t, seq, EV_TIMER, tid, gen)
        TM[tid, TM_INHEAP] += 1
    if t > TM[tid, TM_TAIL]:
        TM[tid, TM_TAIL] = t


@_jit_inline
def _fire(st: Any, tid: int, gen: int) -> None:
    """Timer._fire: move the next waiting arming onto the heap; run the callback if current
    (Sender._timeout, Sender._paced or Sender._tick)."""
    G, H, TM, TQ = st[I_G], st[I_H], st[I_TM], st[I_TQ]
    q = TM[tid, TM_QH]
    if q >= 0:
        nxt = TQ[q, TQ_NEXT]
        TM[tid, TM_QH] = nxt
        if nxt < 0:
            TM[tid, TM_QT] = -1
        _push_seq(G, H, TQ[q, TQ_T], TQ[q, TQ_Q], EV_TIMER, tid, TQ[q, TQ_GEN])
        TQ[q, TQ_NEXT] = G[G_TFREE]
        G[G_TFREE] = q
        G[G_TUSED] -= 1
    else:
        TM[tid, TM_INHEAP] -= 1
    if gen != TM[tid, TM_GEN]:
        return
    TM[tid, TM_DEAD] = -1
    f, kind = tid // 3, tid % 3
    if kind == T_RTO:
        _timeout(st, f)
    elif kind == T_PACE:
        _wake(st, f)
    else:
        _tick(st, f)


# ---- the receiver (endpoints.Receiver, go-back-N) ------------------------------------------


@_jit
def _control(st: Any, f: int, kind: int, seq: int, data: int) -> None:
    """Receiver._control: an ACK or NACK back to the sender, control class, carrying the
    sequence number and entropy value of the data packet ``data`` that prompted it."""
    G, P, F, K, S = st[I_G], st[I_P], st[I_F], st[I_K], st[I_S]
    pkt = _new_packet(G, K, f, kind, seq, G[G_ACK_SIZE], 0)
    if pkt < 0:
        return
    if data >= 0:  # (a CNP names no data packet)
        K[pkt, K_ENT] = K[data, K_ENT]
        K[pkt, K_ACK] = K[data, K_SEQ]
        K[pkt, K_ECN] = K[data, K_ECN]
        K[pkt, K_SENT] = K[data, K_SENT]
    port = S[F[f, F_RSCHED], S_PORT]
    _append(P, port, P_CTRL, K, pkt)
    if not P[port, P_BUSY]:
        _start(st, port)


@_jit_inline
def _on_data(st: Any, f: int, pkt: int) -> None:
    """Receiver.on_data: go-back-N accepts in order, discards (NACKs once) ahead and ACKs
    duplicates; selective accepts any new packet and ACKs every one."""
    G, F, K, SQ = st[I_G], st[I_F], st[I_K], st[I_SQ]
    seq = K[pkt, K_SEQ]
    if K[pkt, K_TRIM]:  # a trimmed header: ask for the packet again
        _control(st, f, NACK, seq, pkt)
        return
    if K[pkt, K_ECN] and G[G_DCQCN]:  # DCQCN's notification point: a CNP, at most one per
        now = G[G_NOW]  # flow per interval
        if now - F[f, F_LAST_CNP] >= G[G_CNP_INTERVAL]:
            F[f, F_LAST_CNP] = now
            _control(st, f, CNP, seq, -1)
            G[G_CNPS_SENT] += 1
    expected = F[f, F_EXPECTED]
    if G[G_SELECTIVE]:
        off, n = F[f, F_SQOFF], F[f, F_N]
        if SQ[off + seq, SQ_GOT]:
            G[G_DUPLICATE] += K[pkt, K_PAYLOAD]
            _control(st, f, ACK, expected, pkt)
            return
        SQ[off + seq, SQ_GOT] = 1
        _accept(st, f, K[pkt, K_PAYLOAD])
        while expected < n and SQ[off + expected, SQ_GOT]:
            expected += 1
        F[f, F_EXPECTED] = expected
        F[f, F_SINCE] = 0
        _control(st, f, ACK, expected, pkt)
        return
    if seq == expected:
        F[f, F_EXPECTED] = expected + 1
        F[f, F_NAKFOR] = -1
        _accept(st, f, K[pkt, K_PAYLOAD])
    elif seq > expected:
        G[G_DISCARDED] += K[pkt, K_PAYLOAD]
        if F[f, F_NAKFOR] != expected:
            F[f, F_NAKFOR] = expected
            _control(st, f, NACK, expected, pkt)
        return
    else:
        G[G_DUPLICATE] += K[pkt, K_PAYLOAD]
        _control(st, f, ACK, expected, pkt)
        return
    F[f, F_SINCE] += 1
    if F[f, F_SINCE] >= G[G_ACK_EVERY] or F[f, F_RECEIVED] == F[f, F_N] or K[pkt, K_ECN]:
        F[f, F_SINCE] = 0
        _control(st, f, ACK, F[f, F_EXPECTED], pkt)


@_jit
def _accept(st: Any, f: int, payload: int) -> None:
    """Receiver._accept and Network.flow_done."""
    G, F, TK, FD = st[I_G], st[I_F], st[I_TK], st[I_FD]
    received = F[f, F_RECEIVED] + 1
    F[f, F_RECEIVED] = received
    G[G_DELIVERED] += payload
    if received != F[f, F_N]:
        return
    now = G[G_NOW]
    F[f, F_FINISH] = now
    G[G_END] = now
    G[G_FLOWS_LEFT] -= 1
    if not G[G_FIRST_DONE]:  # fairness: what each started flow had when the first one ended
        G[G_FIRST_DONE] = 1
        for g in range(F.shape[0]):
            FD[g] = F[g, F_RECEIVED] if F[g, F_START] >= 0 else -1
    task = F[f, F_TASK]
    if task >= 0:
        TK[task, TK_LEFT] -= 1
        if TK[task, TK_LEFT] == 0:
            _end_task(st, task)


# ---- tasks and the queue series (network.Network) ------------------------------------------


@_jit
def _start_task(st: Any, task: int) -> None:
    """Network._start_task: start every flow of the task."""
    G, F, TK, TF = st[I_G], st[I_F], st[I_TK], st[I_TF]
    now = G[G_NOW]
    TK[task, TK_START] = now
    if TK[task, TK_FLEN] == 0:
        _end_task(st, task)
        return
    for i in range(TK[task, TK_FOFF], TK[task, TK_FOFF] + TK[task, TK_FLEN]):
        f = TF[i]
        F[f, F_START] = now
        _wake(st, f)


@_jit
def _end_task(st: Any, task: int) -> None:
    """Network._end_task: the tasks that waited only for this one start after their delay."""
    G, H, TK, TF = st[I_G], st[I_H], st[I_TK], st[I_TF]
    now = G[G_NOW]
    TK[task, TK_END] = now
    G[G_END] = now
    for i in range(TK[task, TK_DOFF], TK[task, TK_DOFF] + TK[task, TK_DLEN]):
        d = TF[i]
        TK[d, TK_WAITING] -= 1
        if TK[d, TK_WAITING] == 0:
            TK[d, TK_READY] = now
            _push(G, H, now + TK[d, TK_DELAY], EV_TASK, d, 0)


@_jit
def _sample(st: Any, interval: int) -> None:
    """Network._sample: every switch egress queue, halving the series at 1024 rows."""
    G, H, P, SP, SM, ST = st[I_G], st[I_H], st[I_P], st[I_SP], st[I_SM], st[I_ST]
    if not G[G_FLOWS_LEFT]:
        return
    row = G[G_NSAMP]
    ST[row] = G[G_NOW]
    for j in range(SP.shape[0]):
        SM[row, j] = P[SP[j], P_QBYTES]
    row += 1
    if row >= MAX_SAMPLES:
        half = (row + 1) // 2
        for i in range(half):
            ST[i] = ST[2 * i]
            for j in range(SP.shape[0]):
                SM[i, j] = SM[2 * i, j]
        row = half
        interval *= 2
    G[G_NSAMP] = row
    _push(G, H, G[G_NOW] + interval, EV_SAMPLE, 0, interval)


# ---- the loop (kernel.Simulator.run, network.Network.run) -----------------------------------


@_jit_inline
def _dispatch(st: Any, kind: int, idx: int, arg: int) -> None:
    if kind == EV_DONE:
        _done(st, idx)
    elif kind == EV_ARRIVE:
        _arrive(st, idx)
    elif kind == EV_CREDIT:
        _credit(st, idx, arg)
    elif kind == EV_TIMER:
        _fire(st, idx, arg)
    elif kind == EV_TASK:
        _start_task(st, idx)
    elif kind == EV_PAUSE:
        _set_paused(st, idx, arg)
    else:
        _sample(st, arg)


@_jit
def run_kernel(st: Any) -> int:
    """Schedule the tasks and the first sample as Network.run does (on the first call), run
    every event in (time, sequence) order until none are left or ``G[G_LIMIT]`` ran in all
    (-1: no limit); returns the error code (0: none). After ERR_ROOM the caller grows the pools
    (``fast._grow``) and calls again: the run goes on where it stopped."""
    G, H, F, TK = st[I_G], st[I_H], st[I_F], st[I_TK]
    K, TQ, CH = st[I_K], st[I_TQ], st[I_CH]
    if not G[G_STARTED]:
        G[G_STARTED] = 1
        for task in range(TK.shape[0]):
            if TK[task, TK_WAITING] == 0:
                TK[task, TK_READY] = 0
                _push(G, H, TK[task, TK_DELAY], EV_TASK, task, 0)
        if G[G_SAMPLE] > 0 and F.shape[0] > 0:
            _push(G, H, 0, EV_SAMPLE, 0, G[G_SAMPLE])
    limit = G[G_LIMIT]
    ran = G[G_EVENTS]
    while G[G_HSIZE] > 0 and ran != limit and G[G_ERR] == ERR_NONE:
        if (
            G[G_HSIZE] + ROOM > H.shape[0]
            or G[G_PUSED] + ROOM > K.shape[0]
            or G[G_TUSED] + ROOM > TQ.shape[0]
            or G[G_CUSED] + ROOM > CH.shape[0]
        ):
            G[G_ERR] = ERR_ROOM
            break
        t, kind, idx, arg = _pop(G, H)
        G[G_NOW] = t
        ran += 1
        _dispatch(st, kind, idx, arg)
    G[G_EVENTS] = ran
    return int(G[G_ERR])
