"""The result type of every collective cost model, and helpers the algorithms share.

A :class:`Cost` is an α–β answer: a fixed ``latency`` (launch, per-step hardware latencies) plus a
``bw_time`` proportional to the message size. Both come from closed forms, so the same numbers can
be re-derived by hand (the tests do).
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
    Gen,
    Hw,
    Proto,
    gbps,
    per_node_column,
)
from commwall.collectives.fabric import CommFabric
from commwall.collectives.ops import Op, busbw_factor


class Unsupported(Exception):
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

    @property
    def time(self) -> float:
        """Total predicted time, seconds."""
        return self.latency + self.bw_time

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
    return Cost(op, "local", proto, nbytes, 1, 0.0, copy, 0, "hbm")


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
    column = "tree" if f.ranks_per_domain == 1 else algo
    lat = HW_LAT[Hw.NET][column][proto] + f.net_extra_latency
    if proto is Proto.SIMPLE:
        lat += f.net_extra_latency
    return max(0.0, lat + f.net_latency_adjust)


def ll_max_bw(f: CommFabric) -> float:
    """NCCL's LL bandwidth cap (``llMaxBws``): by GPU generation inside one node, by CPU
    vendor across nodes (row 0 Intel/other, row 1 AMD; ``tuning.cc``)."""
    col = per_node_column(f.n_domains)
    cpu_row = Gen.AMPERE if f.cpu == "amd" else Gen.VOLTA
    row = f.gen if f.n_domains == 1 else cpu_row
    return gbps(LL_MAX_BW[row][col])


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


def require(condition: bool, reason: str) -> None:
    """Raise :class:`Unsupported` with ``reason`` unless ``condition`` holds."""
    if not condition:
        raise Unsupported(reason)
