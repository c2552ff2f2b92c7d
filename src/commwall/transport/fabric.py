"""Fabric profiles: what InfiniBand, RoCEv2 (with and without PFC), Ultra Ethernet and plain lossy
Ethernet do per packet, as data the packet engine reads.

=============  ============  ======  ========  ==========  ======================  ===========
fabric         link FC       ECN     trimming  per-packet  sender control          reliability
                                               spraying
=============  ============  ======  ========  ==========  ======================  ===========
``ib``         credits/VL    no      no        no (AR opt) none (credit backpres.) in order*
``roce``       PFC           yes     no        no          DCQCN                   go-back-N
``roce-nopfc`` none (drops)  yes     no        no          DCQCN                   go-back-N
``uec``        none          yes     yes       yes (EVs)   NSCC                    selective
``lossy``      none (drops)  no      no        no          NewReno window + RTO    selective
=============  ============  ======  ========  ==========  ======================  ===========

\\* IB with adaptive routing delivers out of order; the NIC reorders (ConnectX, reference
transport.md §1.2), modelled as a selective receiver.

Sources (``../shared/reference/transport.md``):

* Headers: IB 26 B, RoCEv2 82 B per packet (:data:`HEADER_BYTES`); UEC 82 B as
  RoCEv2 (Ethernet + IP + UDP + a transport header of BTH size; an assumption: UET's own header
  sizes were not re-read).
* ECN, RoCE: Kmin = 100·bw/25 KB, Kmax = 400·bw/25 KB (bw in Gb/s), Pmax = 0.2 — the HPCC ns-3
  Mellanox-style DCQCN configuration (§2.2, read from code). UEC: Kmin = 25, Kmax = 75 MTUs on a
  100-MTU trimming queue (uet-htsim 400G example, §2.2, §3).
* PFC headroom, Cisco's rule (§2.1): MTU in flight at the receiver + 2 × cable delay × rate +
  the sender's response (3,840 B) + MTU at the sender; XOFF at a dynamic share α = 1/8 of the free
  shared buffer (HPCC ns-3 MMU), XON 3 KB lower (HPCC resume offset).
* IB credits (§1.1): a link runs at full rate only if its per-VL receive buffer covers the credit
  loop (rate × (2 × cable delay + update period)); the default gives each ingress port rate ×
  (2 × cable delay + 2 × update period) plus four MTUs (a margin for batching and the far
  switch's latency), and never less than 64 KiB. Credit updates are batched to ``credit_period``
  (1 µs, assumption; the OMNeT++ IB model's ``credMinTime`` is 4.096 µs).
* Retransmission timeouts: RoCE/IB 4.096 µs × 2^14 ≈ 67 ms (the IB local-ACK-timeout encoding,
  IBTA vol. 1 §9.7.6.1.3; NCCL_IB_TIMEOUT sets the exponent; 14 here is an assumption, NCCL
  defaults differ by version); lossy Ethernet 200 µs (a datacenter-tuned RTOmin; Vasudevan et
  al., SIGCOMM 2009, argue for µs-scale RTOs against TCP's 200 ms); UEC 100 µs (assumption,
  about 8 RTTs of uet-htsim's 12 µs reference RTT).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Final

from commwall.errors import CommwallError

__all__ = [
    "ETHERNET_HEADER",
    "FABRICS",
    "HEADER_BYTES",
    "IB_HEADER",
    "EcnParams",
    "FabricProfile",
    "TransportError",
    "fabric_profile",
    "for_routing",
    "pfc_headroom",
]

#: Fabrics the packet engine simulates.
FABRICS: Final[tuple[str, ...]] = ("ib", "roce", "roce-nopfc", "uec", "lossy")
#: Per-packet header bytes. InfiniBand: LRH 8 + BTH 12 + ICRC 4 + VCRC 2 (IBTA spec vol. 1).
IB_HEADER: Final = 26
#: RoCEv2 / Ethernet: preamble+SFD 8 + Ethernet 14 + IPv4 20 + UDP 8 + BTH 12 + ICRC 4 + FCS 4
#: + inter-frame gap 12 (IBTA RoCEv2 annex A17; IEEE 802.3).
ETHERNET_HEADER: Final = 82
#: Header bytes per packet by a cluster's scale-out fabric (``cluster.fabric``).
HEADER_BYTES: Final[dict[str, int]] = {"ib": IB_HEADER, "roce": ETHERNET_HEADER,
                                       "ethernet": ETHERNET_HEADER}  # fmt: skip

#: PFC sender response time, bytes-equivalent (Cisco Nexus 5000 PFC white paper; transport.md §2.1).
PFC_RESPONSE_BYTES: Final = 3840
#: Shortest retransmission timeout accepted, seconds: a few datacenter round trips.
MIN_RTO: Final = 1e-6
#: PFC resume offset: XON this many bytes below XOFF (HPCC ns-3 ``switch-mmu.cc``).
PFC_RESUME_OFFSET: Final = 3000
#: Dynamic-threshold share of the free shared buffer (HPCC ns-3 MMU; Choudhury & Hahne 1998).
DEFAULT_ALPHA: Final = 1.0 / 8.0


class TransportError(CommwallError, ValueError):
    """A transport parameter is wrong; the message names it, its value and what is allowed."""


@dataclass(frozen=True)
class EcnParams:
    """RED-style ECN marking on an egress queue: p = 0 below ``kmin`` bytes, rising linearly to
    ``pmax`` at ``kmax``, 1 above (transport.md §2.2)."""

    kmin: int
    kmax: int
    pmax: float

    def __post_init__(self) -> None:
        if not 0 <= self.kmin <= self.kmax:
            raise TransportError(f"ecn kmin={self.kmin}, kmax={self.kmax}: need 0 <= kmin <= kmax")
        if not 0.0 < self.pmax <= 1.0:
            raise TransportError(f"ecn pmax={self.pmax}: must be in (0, 1]")

    def probability(self, queued: int) -> float:
        """Marking probability at ``queued`` bytes.

        >>> EcnParams(100, 300, 0.2).probability(200)
        0.1
        """
        if queued <= self.kmin:
            return 0.0
        if queued > self.kmax:
            return 1.0
        return self.pmax * (queued - self.kmin) / max(self.kmax - self.kmin, 1)


@dataclass(frozen=True)
class FabricProfile:
    """Everything fabric-specific the packet engine needs (see the module table)."""

    name: str
    header_bytes: int
    link_fc: str  # "credit", "pfc" or "none"
    sender: str  # "none", "dcqcn", "nscc" or "reno"
    reliability: str  # "gbn" (go-back-N) or "selective"
    ecn: EcnParams | None
    trim: bool
    trim_bytes: int
    trim_queue: int  # bytes of egress queue above which a data packet is trimmed
    spray: bool
    rto_s: float
    cnp_interval_s: float = 50e-6  # DCQCN NP: at most one CNP per flow per 50 µs (§2.3)
    alpha: float = DEFAULT_ALPHA

    @property
    def lossless(self) -> bool:
        """Whether the fabric must never drop for congestion."""
        return self.link_fc != "none"


def fabric_profile(
    name: str, rate: float, mtu: int, *, ecn: EcnParams | None = None, rto_s: float | None = None
) -> FabricProfile:
    """The profile of fabric ``name`` on links of ``rate`` bytes/s with ``mtu`` payload bytes.

    >>> p = fabric_profile("roce", 12.5e9, 4096)
    >>> p.link_fc, p.sender, p.ecn.kmin, p.ecn.kmax
    ('pfc', 'dcqcn', 400000, 1600000)
    >>> fabric_profile("uec", 12.5e9, 4096).trim_queue
    417800
    """
    if name not in FABRICS:
        raise TransportError(f"fabric={name!r}: unknown; allowed: {', '.join(FABRICS)}")
    if not (math.isfinite(rate) and rate > 0):
        raise TransportError(f"rate={rate!r}: must be a positive link rate in bytes/s")
    gbps = rate * 8 / 1e9
    if name == "ib":
        profile = FabricProfile(
            name, IB_HEADER, "credit", "none", "gbn", None, False, 0, 0, False, 67e-3
        )
    elif name in ("roce", "roce-nopfc"):
        mark = EcnParams(int(100 * gbps / 25 * 1000), int(400 * gbps / 25 * 1000), 0.2)
        fc = "pfc" if name == "roce" else "none"
        profile = FabricProfile(
            name, ETHERNET_HEADER, fc, "dcqcn", "gbn", mark, False, 0, 0, False, 67e-3
        )
    elif name == "uec":
        wire = mtu + ETHERNET_HEADER
        mark = EcnParams(25 * wire, 75 * wire, 1.0)
        profile = FabricProfile(
            name,
            ETHERNET_HEADER,
            "none",
            "nscc",
            "selective",
            mark,
            True,
            64,
            100 * wire,
            True,
            100e-6,
        )
    else:
        profile = FabricProfile(
            name, ETHERNET_HEADER, "none", "reno", "selective", None, False, 0, 0, False, 200e-6
        )
    if ecn is not None and profile.ecn is not None:  # only fabrics whose senders react to marks
        profile = replace(profile, ecn=ecn)
    if rto_s is not None:
        if not (math.isfinite(rto_s) and rto_s >= MIN_RTO):
            raise TransportError(
                f"rto={rto_s!r}: must be at least {MIN_RTO:g} s (a shorter timer fires before "
                "any acknowledgement can return)"
            )
        profile = replace(profile, rto_s=rto_s)
    return profile


def for_routing(profile: FabricProfile, routing: str) -> FabricProfile:
    """``profile`` as it runs under ``routing``: per-packet spraying and adaptive routing deliver
    out of order, and the NICs that are deployed with them place packets as they come (ConnectX
    with IB adaptive routing, transport.md §1.2; Spectrum-X SuperNICs with RoCE adaptive
    routing, NVIDIA's description, not re-read): a go-back-N receiver becomes selective.

    >>> for_routing(fabric_profile("roce", 12.5e9, 4096), "spray").reliability
    'selective'
    >>> for_routing(fabric_profile("roce", 12.5e9, 4096), "ecmp").reliability
    'gbn'
    """
    if routing != "ecmp" and profile.reliability == "gbn":
        return replace(profile, reliability="selective")
    return profile


def pfc_headroom(rate: float, propagation_s: float, mtu_wire: int) -> int:
    """Bytes a PFC ingress queue must hold after it sends XOFF (Cisco's rule, transport.md §2.1):
    the frame being received + 2 × cable delay × rate + the sender's response + the frame the
    sender is transmitting.

    >>> pfc_headroom(12.5e9, 1e-6, 4178)   # 100 Gb/s, 1 µs cable: 2 × 12,500 B on the wire
    37196
    """
    return int(mtu_wire + 2 * propagation_s * rate + PFC_RESPONSE_BYTES + mtu_wire)
