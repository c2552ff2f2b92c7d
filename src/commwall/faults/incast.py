"""Incast storms: N senders burst S bytes each at line rate r into one egress port of rate C.

**This is a fluid model**, not a packet simulation (the packet engine with real PFC frames,
credits and trimming is a separate, later issue). Traffic is a rate; the egress queue q(t) is
piecewise linear between events (a sender starts or finishes, the queue hits its limit or
empties), and every event is computed exactly, so a run costs O(events), not O(packets).

Buffer: the congested port may hold its share of the switch's shared buffer B under the dynamic
threshold T = α·(B − Q): with one congested queue Q settles at α·B/(1 + α) (Choudhury & Hahne,
"Dynamic queue length thresholds for shared-memory packet switches", IEEE/ACM ToN 1998).
α defaults to 1/8, the value in the HPCC ns-3 MMU (``switch-mmu.cc``, transport.md §2.1), so
B = 128 MB (Spectrum-4, catalog) gives a 14.2 MB share.

What each fabric does when the queue reaches its limit (transport.md §2, §3, §7):

``lossy``  tail drop. Drops are shared by the senders in proportion to their arrival rate. A
           sender that lost bytes resends them one RTO after its last byte left (a synchronised
           incast loses whole windows, so no duplicate ACKs arrive: Vasudevan et al., SIGCOMM'09),
           the k-th retry after RTO·2^(k−1) (RFC 6298 back-off; unverified here). RTOmin 200 ms
           for TCP; a NIC's RoCE timeout is µs–ms (transport.md §7). Goodput collapses to
           N·S/(C·completion) once any byte drops, since completion ≥ RTO.
``roce``   PFC. At the limit the switch sends XOFF to every ingress port feeding the queue;
           nothing drops. Fluid limit of the XOFF/XON hysteresis: the queue stays at the
           limit and the active senders share C equally (each paused a 1 − C/(n·r) share of
           the time). In-flight bytes after XOFF land in per-port headroom (Cisco rule: frame in
           progress each side + response + 2 × cable delay × rate, transport.md §2.1), so the
           peak queue is limit + n·headroom. PAUSE frames: each hysteresis cycle (drain the
           3 KB resume offset at C, refill at n·r − C; HPCC MMU) is one XOFF + one XON per
           paused port; one quantum is 512 bit-times, the longest pause 65535 quanta
           (IEEE 802.1Qbb, transport.md §2.1). Congestion spreading: each paused port pauses
           every flow behind it (victim flows, head-of-line blocking; Guo et al. SIGCOMM'16) —
           counted here only as the number of ingress ports paused.
``ib``     credit flow control. Lossless; each sender may only have its per-VL receive buffer
           (credits) outstanding, so the queue is at most N·buffer and, once full, senders are
           throttled to C/n. No pause frames; the time each sender waits for credits is its
           credit stall (send time − S/r). Per-VL buffer default: r × credit loop (2 × cable
           delay + 1 µs; transport.md §1.1: buffer must cover link RTT × rate) (assumption).
``uec``    packet trimming. At the limit the switch cuts the payload and forwards a header
           (64 B of each 4150 B MTU: uet-htsim defaults, transport.md §3) at high priority; the
           receiver NACKs and the sender resends after one RTT (12 µs: uet-htsim default), never
           an RTO. Headers take h = 64/4150 of the egress while trimming, so payload trimmed at
           rate x = (A − C)/(1 − h). One RTT after the first trim the NACKs arrive and NSCC's
           QuickAdapt cuts each window to what was delivered (transport.md §3), modelled as
           every sender falling to a fair share C/n from then on (assumption: all senders are
           trimmed together, so their NACKs arrive together).

Senders are line-rate NIC transports (RDMA-style: a TCP window would cap the bytes in flight,
not modelled), and, UEC's QuickAdapt aside, no congestion control reacts within the burst (the
worst case; DCQCN's 50 µs
CNP pacing is too slow for large incasts anyway, transport.md §2.3). Propagation is ignored
except in UEC's RTT and in headroom. Randomness: sender start times are Normal(0, jitter)
(shifted so the first starts at 0), drawn from a seeded :class:`numpy.random.Generator`; K draws
give distributions of completion time, peak queue and drops (:func:`~commwall.faults.stats.summarize`).

Closed form, zero jitter, lossy, N·r > C (checked in the tests): the queue fills at N·r − C and
reaches the limit Q at t₁ = Q/(N·r − C); if S/r ≤ t₁ nothing drops, else N·S − C·S/r − Q bytes
drop in the first round; lossless completion is N·S/C exactly (the egress never idles).
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field
from typing import Final, Literal

import numpy as np

from commwall.checks import choice, number, whole
from commwall.faults.errors import FaultError
from commwall.faults.stats import Summary, summarize

__all__ = [
    "DEFAULT_ALPHA",
    "FABRICS",
    "PFC_QUANTUM_BITS",
    "Fabric",
    "IncastConfig",
    "IncastResult",
    "IncastRun",
    "buffer_share",
    "ideal_completion",
    "incast",
    "incast_once",
    "pfc_headroom",
]

Fabric = Literal["lossy", "roce", "ib", "uec"]
FABRICS: Final[tuple[Fabric, ...]] = ("lossy", "roce", "ib", "uec")

DEFAULT_ALPHA: Final = 1 / 8
"""Dynamic-threshold α of the HPCC ns-3 MMU (transport.md §2.1, code)."""
PFC_QUANTUM_BITS: Final = 512
"""One PFC pause quantum in bit-times (IEEE 802.1Qbb; transport.md §2.1)."""
PFC_MAX_QUANTA: Final = 65535
PFC_RESUME_OFFSET: Final = 3000.0
"""Bytes: XON once the queue is 3 KB below XOFF (HPCC MMU resume offset, transport.md §2.1)."""
UEC_TRIM_BYTES: Final = 64.0
UEC_MTU: Final = 4150.0
UEC_RTT: Final = 12e-6
"""Seconds: uet-htsim default base RTT (transport.md §3)."""
_PROPAGATION: Final = 5e-9  # s/m (transport.md §2.1: "cable ~5 ns/m")
_RESPONSE_BITS: Final = ((10e9, 30_720), (25e9, 40_960), (40e9, 60_416), (100e9, 201_728),
                         (400e9, 463_360))  # fmt: skip
"""IEEE 802.3 worst-case PAUSE response D_resp in bit-times by rate (transport.md §2.1)."""
_IB_CREDIT_TURNAROUND: Final = 1e-6  # s, credit update slack beyond the cable RTT (assumption)
_EPS: Final = 1e-12


def buffer_share(buffer_bytes: float, alpha: float = DEFAULT_ALPHA) -> float:
    """Bytes one congested port may hold under the dynamic threshold: α·B/(1 + α).

    Choudhury & Hahne, IEEE/ACM ToN 1998 (steady state of T = α·(B − Q) with one queue).

    >>> buffer_share(128e6, 1.0)
    64000000.0
    """
    return alpha * buffer_bytes / (1.0 + alpha)


def pfc_headroom(rate: float, cable_m: float = 10.0, mtu: float = 4096.0) -> float:
    """Per-port PFC headroom, bytes: MTU_S + MTU_R + response + 2 × cable delay × rate.

    Cisco Nexus PFC white paper rule (transport.md §2.1), with the sender's response time from
    the IEEE 802.3 D_resp row for the next rate up (400G for faster ports: unverified
    extrapolation). ``rate`` is bytes/s.

    >>> round(pfc_headroom(50e9, 10.0))
    71112
    """
    return 2 * mtu + _response_bits(rate) / 8 + 2 * _PROPAGATION * cable_m * rate


def _response_bits(rate: float) -> float:
    bps = rate * 8
    return next((b for r, b in _RESPONSE_BITS if bps <= r * 1.001), _RESPONSE_BITS[-1][1])


def ideal_completion(senders: int, size: float, sender_rate: float, egress_rate: float) -> float:
    """Seconds for N·S bytes through an egress of C with senders at r: max(N·S/C, S/r)."""
    return max(senders * size / egress_rate, size / sender_rate)


@dataclass(frozen=True)
class IncastConfig:
    """One incast: who sends what, into which port, on which fabric."""

    senders: int
    size: float
    """Bytes per sender."""
    sender_rate: float
    """Bytes/s per sender (line rate r)."""
    egress_rate: float
    """Bytes/s of the congested egress port (C)."""
    buffer: float
    """Bytes of the switch's shared buffer (B)."""
    fabric: Fabric
    alpha: float = DEFAULT_ALPHA
    rto: float = 200e-3
    """Lossy: retransmission timeout, seconds (TCP RTOmin; transport.md §7)."""
    rtt: float = UEC_RTT
    """UEC: seconds from a trim to the retransmission (NACK round trip)."""
    cable_m: float = 10.0
    jitter: float = 0.0
    """Seconds: σ of the senders' start times."""
    backoff: bool = True
    """Lossy: double the RTO on each consecutive timeout (RFC 6298; unverified here)."""
    ib_vl_buffer: float | None = None
    """IB: per-port receive buffer (credits), bytes; default r × (2 × cable delay + 1 µs)."""

    def __post_init__(self) -> None:
        whole("senders", self.senders, 1, error=FaultError)
        for name in ("size", "sender_rate", "egress_rate", "buffer", "alpha", "rto", "rtt"):
            number(name, getattr(self, name), 0.0, open_low=True, error=FaultError)
        for name in ("cable_m", "jitter"):
            number(name, getattr(self, name), 0.0, error=FaultError)
        choice("fabric", self.fabric, FABRICS, error=FaultError)

    @property
    def share(self) -> float:
        """Bytes the congested port may queue (:func:`buffer_share`)."""
        return buffer_share(self.buffer, self.alpha)

    @property
    def vl_buffer(self) -> float:
        if self.ib_vl_buffer is not None:
            return self.ib_vl_buffer
        return self.sender_rate * (2 * _PROPAGATION * self.cable_m + _IB_CREDIT_TURNAROUND)

    @property
    def queue_limit(self) -> float:
        """Bytes at which the fabric reacts (drop, XOFF, credits run out, trim)."""
        if self.fabric == "ib":
            return min(self.senders * self.vl_buffer, self.share)
        return self.share

    @property
    def ideal(self) -> float:
        return ideal_completion(self.senders, self.size, self.sender_rate, self.egress_rate)


@dataclass(frozen=True)
class IncastRun:
    """One draw of the fluid model; times from the first sender's start."""

    completion: float
    peak_queue: float
    sent: float
    """Payload bytes put on the wire, retransmissions included."""
    delivered: float
    dropped: float
    """Payload bytes dropped (lossy) or trimmed (uec); 0 in lossless modes."""
    rounds: int
    """Transmission rounds of the sender that needed most (1: no loss)."""
    paused_time: np.ndarray = field(repr=False)
    """Per sender: seconds throttled (PFC paused / waiting for credits)."""
    pause_frames: float
    """RoCE: PAUSE frames (XOFF + XON) sent upstream, estimate; else 0."""
    ports_paused: int
    """RoCE/IB: ingress ports throttled at least once (congestion-spreading reach, hop 1)."""


def _check_conservation(cfg: IncastConfig, run: IncastRun) -> None:
    total = cfg.senders * cfg.size
    tol = 1e-9 * max(total, 1.0)
    if abs(run.sent - run.delivered - run.dropped) > tol or abs(run.delivered - total) > tol:
        raise AssertionError(
            f"incast conservation violated: sent {run.sent} != delivered {run.delivered} + "
            f"dropped {run.dropped}, or delivered != N·S = {total}"
        )
    if cfg.fabric in ("roce", "ib") and run.dropped > 0:
        raise AssertionError(f"lossless fabric {cfg.fabric} dropped {run.dropped} bytes")


def incast_once(cfg: IncastConfig, starts: np.ndarray) -> IncastRun:
    """Run the fluid model once with the senders' start times ``starts`` (seconds).

    Events (a burst starts or ends, the queue reaches its limit or empties) are processed in
    time order; between them every rate is constant, so the queue and every counter move
    linearly and are updated exactly.
    """
    n, r, c = cfg.senders, cfg.sender_rate, cfg.egress_rate
    limit = cfg.queue_limit
    lossless = cfg.fabric in ("roce", "ib")
    h = UEC_TRIM_BYTES / UEC_MTU if cfg.fabric == "uec" else 0.0
    t0 = float(np.min(starts))
    pending: list[tuple[float, int, int, float]] = [
        (float(s) - t0, i, 1, cfg.size) for i, s in enumerate(starts)
    ]  # (start, sender, round, bytes)
    heapq.heapify(pending)
    remaining: dict[int, float] = {}
    burst_round: dict[int, int] = {}
    burst_lost: dict[int, float] = {}
    last_loss: dict[int, float] = {}
    completion = np.zeros(n)
    paused = np.zeros(n)
    throttled_ever = np.zeros(n, dtype=bool)
    t = q = peak = sent = dropped = 0.0
    throttled_time = 0.0  # seconds with the queue held at the limit (lossless)
    rounds = 1
    paced_from = math.inf  # uec: NACKs of the first trims arrive, senders fall to C/n
    while pending or remaining:
        if not remaining and pending[0][0] > t:
            ts = pending[0][0]
            q = max(0.0, q - c * (ts - t))
            t = ts
        while pending and pending[0][0] <= t + _EPS:
            _, i, k, b = heapq.heappop(pending)
            remaining[i] = b  # a sender's next burst starts only after its last one ended
            burst_round[i] = k
            burst_lost[i] = 0.0
            rounds = max(rounds, k)
        active = list(remaining)
        m = len(active)
        demand = m * r
        full = q >= limit - _EPS * max(limit, 1.0) and demand > c
        throttle = lossless or t >= paced_from - _EPS
        if full and throttle:
            rate, dq, loss_rate = c / m, 0.0, 0.0
        elif full:
            loss_rate = (demand - c) / (1.0 - h)  # trimmed/dropped payload, all senders
            rate, dq = r, 0.0
        else:
            rate, loss_rate = r, 0.0
            dq = demand - c if (q > 0.0 or demand > c) else 0.0
        if loss_rate > 0.0 and cfg.fabric == "uec" and paced_from == math.inf:
            paced_from = t + cfg.rtt  # the first trims' NACKs reach the senders
        # time to the next event
        dt = min(remaining[i] for i in active) / rate
        if pending:
            dt = min(dt, pending[0][0] - t)
        if paced_from > t:
            dt = min(dt, paced_from - t)
        if dq > 0.0:
            dt = min(dt, (limit - q) / dq)
        elif dq < 0.0:
            dt = min(dt, q / -dq)
        dt = max(dt, 0.0)
        # advance
        sent += c * dt if (full and throttle) else demand * dt
        if loss_rate > 0.0:
            per = loss_rate / m * dt
            for i in active:
                burst_lost[i] += per
                last_loss[i] = t + dt
            dropped += loss_rate * dt
        if full and throttle:
            for i in active:
                paused[i] += dt * (1.0 - rate / r)
                throttled_ever[i] = True
            throttled_time += dt
        q = min(max(q + dq * dt, 0.0), limit) if not full else limit
        peak = max(peak, q)
        t += dt
        for i in active:
            remaining[i] -= rate * dt
            if remaining[i] <= _EPS * cfg.size:
                del remaining[i]
                lost = burst_lost.pop(i)
                k = burst_round.pop(i)
                service = c - h * (loss_rate if loss_rate > 0 else 0.0)
                completion[i] = t + q / service
                if lost > _EPS * cfg.size:
                    if cfg.fabric == "lossy":
                        again = completion[i] + cfg.rto * (2.0 ** (k - 1) if cfg.backoff else 1.0)
                    else:  # uec: NACK one RTT after the last trim
                        again = max(t, last_loss[i] + cfg.rtt)
                    heapq.heappush(pending, (again, i, k + 1, lost))
    if cfg.fabric == "roce" and throttled_ever.any():
        # bytes in flight when XOFF lands fill each paused port's headroom (Cisco rule)
        peak = limit + int(throttled_ever.sum()) * pfc_headroom(r, cfg.cable_m)
    frames = 0.0
    ports = int(throttled_ever.sum()) if lossless else 0
    if cfg.fabric == "roce" and throttled_time > 0:
        # one XOFF/XON cycle: each signal takes the sender's response time + the cable round
        # trip to act (IEEE D_resp, transport.md §2.1), plus draining/refilling the 3 KB offset
        react = _response_bits(r) / (8 * r) + 2 * _PROPAGATION * cfg.cable_m
        refill = max(n * r - c, c * 1e-9)
        cycle = 2 * react + PFC_RESUME_OFFSET / c + PFC_RESUME_OFFSET / refill
        frames = 2.0 * ports * max(1.0, throttled_time / cycle)
    run = IncastRun(
        completion=float(completion.max()),
        peak_queue=peak,
        sent=sent,
        delivered=sent - dropped,
        dropped=dropped,
        rounds=rounds,
        paused_time=paused,
        pause_frames=frames,
        ports_paused=ports,
    )
    _check_conservation(cfg, run)
    return run


def _starts(cfg: IncastConfig, rng: np.random.Generator) -> np.ndarray:
    if cfg.jitter == 0.0:
        return np.zeros(cfg.senders)
    x: np.ndarray = rng.normal(0.0, cfg.jitter, cfg.senders)
    return x - float(x.min())


@dataclass(frozen=True)
class IncastResult:
    """K draws of one incast: distributions with 95% intervals, plus the fabric's limits."""

    config: IncastConfig
    samples: int
    completion: Summary
    goodput: Summary
    """N·S / (C · completion): the share of the egress's time that carried the incast."""
    peak_queue: Summary
    dropped: Summary
    rounds: Summary
    paused_time_mean: Summary
    paused_time_max: Summary
    pause_frames: Summary
    ports_paused: Summary
    p_any_drop: float
    """Share of the draws in which any byte dropped or was trimmed."""

    def to_dict(self) -> dict[str, object]:
        c = self.config
        return {
            "fabric": c.fabric,
            "senders": c.senders,
            "size_bytes": c.size,
            "sender_rate_Bps": c.sender_rate,
            "egress_rate_Bps": c.egress_rate,
            "buffer_bytes": c.buffer,
            "alpha": c.alpha,
            "port_share_bytes": c.share,
            "queue_limit_bytes": c.queue_limit,
            "rto_s": c.rto if c.fabric == "lossy" else None,
            "rtt_s": c.rtt if c.fabric == "uec" else None,
            "jitter_s": c.jitter,
            "samples": self.samples,
            "ideal_completion_s": c.ideal,
            "completion_s": self.completion.to_dict(),
            "goodput_fraction": self.goodput.to_dict(),
            "peak_queue_bytes": self.peak_queue.to_dict(),
            "dropped_bytes": self.dropped.to_dict(),
            "rounds": self.rounds.to_dict(),
            "paused_time_mean_s": self.paused_time_mean.to_dict(),
            "paused_time_max_s": self.paused_time_max.to_dict(),
            "pause_frames": self.pause_frames.to_dict(),
            "ports_paused": self.ports_paused.to_dict(),
            "p_any_drop": self.p_any_drop,
            "pause_quantum_s": PFC_QUANTUM_BITS / (c.sender_rate * 8),
            "max_pause_s": PFC_MAX_QUANTA * PFC_QUANTUM_BITS / (c.sender_rate * 8),
            "model": "fluid (piecewise-linear queue, exact events); not a packet simulation",
        }


def incast(cfg: IncastConfig, *, samples: int = 100, rng: np.random.Generator) -> IncastResult:
    """``samples`` draws of :func:`incast_once` with jittered starts → :class:`IncastResult`.

    With ``cfg.jitter == 0`` every draw is identical (the closed-form case).
    """
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
        raise FaultError(f"samples: {samples!r}; allowed: an integer >= 1")
    runs = [incast_once(cfg, _starts(cfg, rng)) for _ in range(samples)]
    comp = np.array([x.completion for x in runs])
    return IncastResult(
        config=cfg,
        samples=samples,
        completion=summarize(comp, name="completion"),
        goodput=summarize(cfg.senders * cfg.size / (cfg.egress_rate * comp), name="goodput"),
        peak_queue=summarize([x.peak_queue for x in runs], name="peak queue"),
        dropped=summarize([x.dropped for x in runs], name="dropped"),
        rounds=summarize([float(x.rounds) for x in runs], name="rounds"),
        paused_time_mean=summarize([float(x.paused_time.mean()) for x in runs], name="paused"),
        paused_time_max=summarize([float(x.paused_time.max()) for x in runs], name="paused"),
        pause_frames=summarize([x.pause_frames for x in runs], name="pause frames"),
        ports_paused=summarize([float(x.ports_paused) for x in runs], name="ports paused"),
        p_any_drop=float(np.mean([x.dropped > 0 for x in runs])),
    )
