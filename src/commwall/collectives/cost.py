"""The result type of every collective cost model, and helpers the algorithms share.

A :class:`Cost` carries two answers:

* ``latency + bw_time`` — the time the collective takes, from NCCL's launch plan priced by
  :mod:`commwall.collectives.pipeline` (channels used at this size, chunks and slices, per-slice
  synchronisation, network windows, pipeline fill). ``latency`` is the part contention cannot
  slow (launch, fills, per-step latencies), ``bw_time`` the bandwidth-bound part.
* ``tuner_time`` — what NCCL's own tuning model (``tuning.cc``: ``lat + S/algBw``) predicts. NCCL
  picks the algorithm and protocol with the lowest of these, so :func:`~commwall.collectives.tuner.choose`
  does too; it is not the time the collective takes (NCCL's model is a selection heuristic and
  is optimistic between 1 and 256 MiB).

Both come from closed forms, so the same numbers can be re-derived by hand (the tests do).
"""

from __future__ import annotations

from dataclasses import dataclass

from commwall.collectives.constants import (
    BASE_LAT,
    HW_LAT,
    LL128_RING_EFFICIENCY,
    LL_EFFICIENCY,
    LL_MAX_BW,
    PER_CH_MAX_RING_LL128_BW,
    PER_CH_MAX_TREE_BW,
    WIRE_DATA_SHARE,
    Gen,
    Hw,
    Proto,
    gbps,
    per_node_column,
)
from commwall.collectives.fabric import CommFabric
from commwall.collectives.nccl import NCCL_STEPS
from commwall.collectives.ops import Op, busbw_factor
from commwall.collectives.pipeline import Hop
from commwall.errors import CommwallError


class Unsupported(CommwallError):
    """This algorithm × protocol cannot run this operation on this fabric; ``str()`` says why."""


@dataclass(frozen=True)
class Cost:
    """Predicted time of one collective call.

    ``latency`` and ``bw_time`` are seconds; ``time = latency + bw_time``.
    ``bottleneck`` names the hardware class that bounds the bandwidth term.
    """

    op: Op
    algo: str
    proto: Proto
    nbytes: float
    nranks: int
    latency: float
    bw_time: float
    steps: int
    bottleneck: str
    tuner_time: float | None = None
    """NCCL's tuning-model estimate (seconds) used to choose; None: same as :attr:`time`."""
    channels: int = 0
    """Channels (SMs) the collective runs on at this size (0: not an NCCL kernel)."""
    estimated: bool = False
    """True for a tuner-only answer (``estimate=True``): ``latency + bw_time`` is NCCL's estimate,
    not the time the collective takes."""

    @property
    def time(self) -> float:
        """Total predicted time, seconds."""
        return self.latency + self.bw_time

    @property
    def selection_time(self) -> float:
        """The time NCCL's tuner compares algorithms by (:attr:`tuner_time`, else :attr:`time`)."""
        return self.time if self.tuner_time is None else self.tuner_time

    @property
    def algbw(self) -> float:
        """nccl-tests algbw, bytes/s (0 for an empty call)."""
        return self.nbytes / self.time if self.time > 0 else 0.0

    @property
    def busbw(self) -> float:
        """nccl-tests busbw, bytes/s."""
        return self.algbw * busbw_factor(self.op, self.nranks)


def trivial(op: Op, nbytes: float, f: CommFabric, proto: Proto) -> Cost:
    """A communicator of one rank: NCCL copies the buffer locally (read + write through HBM)."""
    copy = 2.0 * nbytes / f.hbm_bw if f.hbm_bw > 0 else 0.0
    return Cost(op, "local", proto, nbytes, 1, 0.0, copy, 0, "hbm", channels=1)


def estimate_cost(
    op: Op,
    algo: str,
    proto: Proto,
    nbytes: float,
    f: CommFabric,
    latency: float,
    bw_time: float,
    steps: int,
    bottleneck: str,
) -> Cost:
    """A tuner-only :class:`Cost` (NCCL's ``latency + S/algBw``) for :func:`~commwall.collectives.tuner.choose`
    to rank candidates without pricing every one's launch plan."""
    return Cost(
        op, algo, proto, nbytes, f.nranks, latency, bw_time, steps, bottleneck,
        latency + bw_time, 0, True,
    )  # fmt: skip


def step_latency(f: CommFabric, hw: Hw, algo: str, proto: Proto) -> float:
    """NCCL's per-step latency of ``hw``: scale-up ``hwLat[hw][algo][proto]``, or for the
    network :func:`net_latency`; plus the class's calibrated adjustment (never below 0)."""
    if hw is Hw.NET:
        return net_latency(f, algo, proto)
    return max(0.0, HW_LAT[hw][algo][proto] + f.intra_latency_adjust)


def net_latency(f: CommFabric, algo: str, proto: Proto) -> float:
    """NCCL's ``interLat`` (``tuning.cc``): ``hwLat[NET][Tree if ppn == 1 else algo][proto]``
    plus the fabric's own latency, counted twice for Simple (the receive-side flush), plus the
    calibrated adjustment (never below 0)."""

    def compute() -> float:
        column = "tree" if f.ranks_per_domain == 1 else algo
        lat = HW_LAT[Hw.NET][column][proto] + f.net_extra_latency
        if proto is Proto.SIMPLE:
            lat += f.net_extra_latency
        return max(0.0, lat + f.net_latency_adjust)

    return f.memo(("net_latency", algo, proto), compute)


def ll_max_bw(f: CommFabric) -> float:
    """NCCL's LL bandwidth cap (``llMaxBws``): by GPU generation inside one node, by CPU
    vendor across nodes (row 0 Intel/other, row 1 AMD; ``tuning.cc``)."""

    def compute() -> float:
        col = per_node_column(f.n_domains)
        cpu_row = Gen.AMPERE if f.cpu == "amd" else Gen.VOLTA
        row = f.gen if f.n_domains == 1 else cpu_row
        return gbps(LL_MAX_BW[row][col])

    return f.memo("ll_max_bw", compute)


def require_ll128(f: CommFabric) -> None:
    """NCCL enables LL128 only with NVLink inside the node and, across nodes, a GPUDirect path
    (``typeIntra <= NVB``, ``typeInter <= PXN``)."""
    if f.intra_hw is Hw.PCI:
        raise Unsupported("LL128 needs NVLink inside the node (NCCL disables it over PCIe)")
    if f.n_domains > 1 and not f.gdr:
        raise Unsupported("LL128 needs GPUDirect RDMA across nodes (NCCL disables it otherwise)")


def base_latency(algo: str, proto: Proto) -> float:
    """NCCL's launch latency ``baseLat[algo][proto]``."""
    return BASE_LAT[algo][proto]


def ring_proto_bw(f: CommFabric, proto: Proto, bw: float) -> float:
    """Bandwidth a ring-like (point-to-point) algorithm reaches with ``proto`` on links of ``bw``.

    NCCL ``tuning.cc``: Simple uses the link bandwidth; LL128 ``min(0.92·bw, nCh·perChMaxRingLL128)``;
    LL ``min(llMaxBw, 0.5·bw)`` (:func:`ll_max_bw`). LL128 needs NVLink inside the node and a
    GPUDirect path across nodes (:func:`require_ll128`).
    """
    col = per_node_column(f.n_domains)
    if proto is Proto.SIMPLE:
        return bw
    if proto is Proto.LL128:
        require_ll128(f)
        return min(
            LL128_RING_EFFICIENCY * bw, f.channels * gbps(PER_CH_MAX_RING_LL128_BW[f.gen][col])
        )
    return min(ll_max_bw(f), LL_EFFICIENCY * bw)


def sm_channel_bw(f: CommFabric, proto: Proto) -> float:
    """Most one channel (one SM's thread block) moves with ``proto``, bytes/s.

    NCCL's per-channel caps (``tuning.cc``, one-node column): LL128 ``perChMaxRingLL128Bw``,
    Simple ``perChMaxTreeBw`` (the cap NCCL measured for a full block copying with Simple). LL
    is limited by its line rate instead (:func:`ring_proto_bw`).
    """
    if proto is Proto.LL128:
        return gbps(PER_CH_MAX_RING_LL128_BW[f.gen][0])
    return gbps(PER_CH_MAX_TREE_BW[f.gen][0])


def p2p_block_bw(f: CommFabric) -> float:
    """Most one p2p channel's thread block copies with Simple into a peer of its node (over
    NVLink or PCIe), send and receive halves together, bytes/s (each half gets its share,
    :func:`~commwall.collectives.nccl.p2p_side_share`). A send to another node copies into its
    own GPU's FIFO instead, at :func:`sm_channel_bw`.

    NCCL has no p2p bandwidth model, so this is ours. Volta to Hopper: NCCL's one-node Simple
    cap ``perChMaxTreeBw`` (as :func:`sm_channel_bw`): 38.7 GB/s on Hopper, whose half-block
    19.4 GB/s is what a DGX H100's ``sendrecv_perf`` moves per channel (20.4 GB/s on 4 channels
    at 64 MiB, 20.3 on 8 at 128 MiB: commwall.validation). Blackwell: Hopper's rate times the
    ratio of NCCL's per-channel LL128 ring caps (``perChMaxRingLL128Bw`` 40.0 / 36.7, the one
    per-block cap NCCL gives both generations for a copy that the SM, not the link, bounds),
    i.e. 42.2 GB/s. NCCL's one-node ``perChMaxTreeBw`` for Blackwell (70.0) is not a copy
    rate: a B200's ``sendrecv_perf`` moves 21.0 GB/s a channel on 4 channels at 64 MiB and
    20.6 on 16 at 256 MiB (MIT ORCD, NCCL 2.29), and 20.0-20.3 on 32 at 16-32 GiB (Together
    AI), where 70 / 2 would be 35 (commwall.validation, ``docs/validation.md``).
    """
    if f.gen is Gen.BLACKWELL:
        hopper = PER_CH_MAX_TREE_BW[Gen.HOPPER][0]
        ratio = PER_CH_MAX_RING_LL128_BW[Gen.BLACKWELL][0] / PER_CH_MAX_RING_LL128_BW[Gen.HOPPER][0]
        return gbps(hopper * ratio)
    return sm_channel_bw(f, Proto.SIMPLE)


def slice_overhead(f: CommFabric, algo: str, proto: Proto) -> float:
    """GPU time per slice beyond its data (:mod:`commwall.collectives.pipeline`): NCCL's per-step
    latency of ``proto`` inside the node minus that of LL, which has no fence and no separate
    flag (``hwLat``, ``tuning.cc``; the difference is ours)."""
    table = HW_LAT[f.intra_hw][algo]
    return max(0.0, table[proto] - table[Proto.LL])


def intra_hop(f: CommFabric, algo: str, proto: Proto, rate: float, count: int) -> Hop:
    """The scale-up hop class of ``algo`` (:class:`~commwall.collectives.pipeline.Hop`)."""
    latency = max(0.0, HW_LAT[f.intra_hw][algo][Proto.LL] + f.intra_latency_adjust)
    window = NCCL_STEPS // (2 if proto is Proto.SIMPLE and algo == "ring" else 1)
    streaming = proto is not Proto.SIMPLE
    return Hop(latency, slice_overhead(f, algo, proto), rate, window, count, streaming)


def net_hop(
    f: CommFabric, algo: str, proto: Proto, rate: float, count: int, *, window: int,
    link_share: float,
) -> Hop:  # fmt: skip
    """The network hop class: NCCL's per-step network latency (:func:`net_latency`) and the GPU's
    per-slice overhead; ``window`` slices in flight per connection.

    Store-and-forward for every protocol (NCCL v2.30): the proxy posts a step's RDMA write only
    once all of it is in the connection's FIFO — for Simple and LL128 when the GPU advances the
    tail after writing and fencing the whole step (``postSend``, ``prims_ll128.h``), for LL when
    every line's flag of the step is set (``sendProxyProgress``, ``net.cc``). The step then crosses the wire
    whole at the channel's ``link_share`` of the NICs, flags included
    (:data:`~commwall.collectives.constants.WIRE_DATA_SHARE`); only the receiving GPU reads LL
    and LL128 lines as they land.

    The step's latency is NCCL's network figure alone: ``hwLat[NET]`` already differs by
    protocol by the GPU's per-step work — ring LL128 − LL is 4.0 − 2.7 = 1.3 µs across nodes,
    the same 1.3 µs as inside a node (1.9 − 0.6) — so the slice overhead counts in the hop's
    service time but is not added to its latency again. Adding it made every step of a
    two-node ring/LL128 ~1.3 µs too slow: a 95–100 µs floor where the two-node all-gathers of
    commwall.validation measure 77–82 µs (A100 HDR, H200 and B200 400G RoCE)."""
    return Hop(
        net_latency(f, algo, proto), slice_overhead(f, algo, proto), rate, window, count,
        streaming=False, forward_rate=link_share * WIRE_DATA_SHARE[proto],
        overhead_in_latency=True,
    )  # fmt: skip
