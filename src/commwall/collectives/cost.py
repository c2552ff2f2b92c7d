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


def trivial(op: Op, nbytes: float, algo: str, proto: Proto) -> Cost:
    """A communicator of one rank moves nothing."""
    return Cost(op, algo, proto, nbytes, 1, 0.0, 0.0, 0, "none")


def step_latency(f: CommFabric, hw: Hw, algo: str, proto: Proto) -> float:
    """NCCL's per-step latency ``hwLat[hw][algo][proto]`` plus any extra fabric latency on NET."""
    lat = HW_LAT[hw][algo][proto]
    if hw is Hw.NET:
        lat += f.net_extra_latency
    return lat


def base_latency(algo: str, proto: Proto) -> float:
    """NCCL's launch latency ``baseLat[algo][proto]``."""
    return BASE_LAT[algo][proto]


def ring_proto_bw(f: CommFabric, proto: Proto, bw: float) -> float:
    """Bandwidth a ring-like (point-to-point) algorithm reaches with ``proto`` on links of ``bw``.

    NCCL ``tuning.cc``: Simple uses the link bandwidth; LL128 ``min(0.92·bw, nCh·perChMaxRingLL128)``;
    LL ``min(llMaxBw, 0.5·bw)``. LL128 needs NVLink inside the node (NCCL enables it only when
    ``typeIntra <= NVB``), so it is unsupported on PCIe-only nodes.
    """
    col = per_node_column(f.n_domains)
    if proto is Proto.SIMPLE:
        return bw
    if proto is Proto.LL128:
        if f.intra_hw is Hw.PCI:
            raise Unsupported("LL128 needs NVLink inside the node (NCCL disables it over PCIe)")
        return min(
            LL128_RING_EFFICIENCY * bw, f.channels * gbps(PER_CH_MAX_RING_LL128_BW[f.gen][col])
        )
    return min(gbps(LL_MAX_BW[f.gen][col]), LL_EFFICIENCY * bw)


def require(condition: bool, reason: str) -> None:
    """Raise :class:`Unsupported` with ``reason`` unless ``condition`` holds."""
    if not condition:
        raise Unsupported(reason)
