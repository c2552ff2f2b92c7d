"""What a collective cost model needs to know about the hardware under one communicator.

A :class:`CommFabric` is the bridge from a resolved :class:`commwall.cluster.Cluster` to the
collective algorithms: they never look at catalog parts, only at these numbers. Ranks are laid out
domain-major (ranks ``0..g-1`` share scale-up domain 0, and so on), as NCCL orders ranks on
rail-optimized clusters; each rank owns ``net_bw_per_rank`` of scale-out bandwidth (one NIC per
GPU on DGX-class nodes) and ``intra_bw`` of scale-up bandwidth.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from commwall.collectives.constants import NVLS_EFFICIENCY, Gen, Hw
from commwall.collectives.errors import CollectiveError

T = TypeVar("T")


@dataclass(frozen=True)
class CommFabric:
    """Per-rank bandwidths and latencies seen by a communicator of ``n_domains × ranks_per_domain``.

    Bandwidths are bytes/s per direction, latencies seconds.
    """

    n_domains: int
    """N: scale-up domains (NVLink/NVSwitch nodes or racks) the communicator spans."""
    ranks_per_domain: int
    """g (NCCL's ppn): ranks of the communicator inside each domain."""
    intra_bw: float
    """Per-rank scale-up bandwidth as NCCL models it (NVLink links × NCCL's per-link constant)."""
    intra_hw: Hw
    """Hardware class of scale-up steps: ``Hw.NVLINK`` or ``Hw.PCI`` (PCIe-only nodes)."""
    net_bw_per_rank: float
    """Per-rank scale-out bandwidth after wire overhead, GPUDirect/host path and oversubscription."""
    gen: Gen
    """GPU generation row of NCCL's tables."""
    channels: int = 16
    """NCCL channels of the ring/tree graph for this communicator ("coll channels" in NCCL's INFO
    log): per-channel caps, the share of a link each channel gets, and how a message is cut."""
    nvls_channels: int = 16
    """NVLS channels (``nvls.cc``: 16 on Hopper, 24/32 on Blackwell)."""
    p2p_channels: int = 32
    """p2p channels (``p2pnChannels``: the coll channels rounded up to a power of two)."""
    nvlink_links: int = 18
    """NVLinks per GPU: NCCL gives a p2p peer two channels per NVLink of the path."""
    nics_per_rank: int = 1
    """NICs a rank drives across nodes (NCCL gives a network peer at least one channel per NIC)."""
    net_bw_per_nic: float | None = None
    """What one NIC moves, bytes/s, at the rate ``net_bw_per_rank`` is counted at (the node's
    scale-out bandwidth over its NICs); None: a rank's ``net_bw_per_rank`` over its
    ``nics_per_rank``."""
    nic_gbps: float = 50.0
    """The GPU-to-NIC path's bandwidth as NCCL counts it, GB/s: the NIC's ``speed_Mbps / 8000``
    (400G → 50) or the PCIe link before it when narrower (Gen5 x16 → 48; ``paths.cc``)."""
    net_extra_latency: float = 0.0
    """Fabric latency per network step beyond what NCCL's NET constants assume (s)."""
    net_overhead: float = 1e-6
    """NCCL_NET_OVERHEAD for the host CPU (1 µs Intel, 2 µs AMD)."""
    nvls: bool = False
    """Scale-up switches reduce in the switch (NVLink SHARP) and the GPU supports it."""
    collnet: bool = False
    """Scale-out switches reduce in the network (InfiniBand SHARP, NCCL CollNet)."""
    gdr: bool = True
    """GPUDirect RDMA: the NIC reads GPU memory directly (else a bounce through host memory)."""
    cpu: str = "intel"
    """Host CPU vendor (intel, amd, other): picks NCCL's multi-node LL cap row; ``other`` on
    Blackwell means a Grace host (NCCL doubles the network p2p chunk there)."""
    hbm_bw: float = 0.0
    """GPU memory bandwidth, bytes/s: a one-rank "collective" is a local copy at this rate."""
    intra_latency_adjust: float = 0.0
    """Fitted latency added to every scale-up step (s; ``commwall calibrate``, may be < 0)."""
    intra_bw_factor: float = 1.0
    """Fitted scale-up bandwidth factor already applied to ``intra_bw`` (``commwall
    calibrate``): NCCL's topology search sees the hardware, ``intra_bw / intra_bw_factor``, and
    its result is scaled by the factor like every other scale-up rate."""
    net_latency_adjust: float = 0.0
    """Fitted latency added to every network step (s; ``commwall calibrate``, may be < 0)."""
    net_peer_channels: int | None = None
    """``NCCL_NCHANNELS_PER_NET_PEER``: the p2p channels a network peer gets, as set (NCCL then
    skips its halving for many peers, ``paths.cc``); None: NCCL's own count."""

    def __post_init__(self) -> None:
        if self.n_domains < 1 or self.ranks_per_domain < 1:
            raise CollectiveError(
                f"a communicator needs >= 1 domain and >= 1 rank per domain, got "
                f"n_domains={self.n_domains}, ranks_per_domain={self.ranks_per_domain}"
            )
        if self.intra_bw <= 0 and self.ranks_per_domain > 1:
            raise CollectiveError(
                f"intra_bw must be > 0 B/s with several ranks per domain, got {self.intra_bw}"
            )
        if self.net_bw_per_rank <= 0 and self.n_domains > 1:
            raise CollectiveError(
                f"net_bw_per_rank must be > 0 B/s across domains, got {self.net_bw_per_rank}"
            )
        for name in ("channels", "nvls_channels", "p2p_channels", "nvlink_links", "nics_per_rank"):
            if getattr(self, name) < 1:
                raise CollectiveError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.net_peer_channels is not None and self.net_peer_channels < 1:
            raise CollectiveError(f"net_peer_channels must be >= 1, got {self.net_peer_channels}")

    def memo(self, key: object, compute: Callable[[], T]) -> T:
        """``compute()`` once per fabric and ``key`` (the cost models derive the same per-fabric
        figures for every size; a frozen dataclass keeps them in its instance dict)."""
        store: dict[object, Any] = self.__dict__.setdefault("_memo", {})
        if key not in store:
            store[key] = compute()
        value: T = store[key]
        return value

    @property
    def nranks(self) -> int:
        """Total ranks ``p = N × g``."""
        return self.n_domains * self.ranks_per_domain

    @property
    def node_net_bw(self) -> float:
        """Scale-out bandwidth of one domain: ``g × net_bw_per_rank``."""
        return self.ranks_per_domain * self.net_bw_per_rank

    @property
    def nvls_efficiency(self) -> float:
        """NCCL's nvlsEfficiency for this generation (0 where NVLS does not exist)."""
        return NVLS_EFFICIENCY[self.gen] if self.nvls else 0.0

    @property
    def log2_domains(self) -> float:
        """``log2(N)`` as NCCL uses it for tree depth (0 for one domain)."""
        return math.log2(self.n_domains) if self.n_domains > 1 else 0.0

    @property
    def injection_bw(self) -> float:
        """Everything one rank can push out at once: scale-up plus scale-out bandwidth."""
        intra = self.intra_bw if self.ranks_per_domain > 1 else 0.0
        net = self.net_bw_per_rank if self.n_domains > 1 else 0.0
        return intra + net

    def sub(
        self, *, n_domains: int | None = None, ranks_per_domain: int | None = None
    ) -> CommFabric:
        """The same hardware seen by a smaller communicator (a rail, or one domain)."""
        from dataclasses import replace

        return replace(
            self,
            n_domains=self.n_domains if n_domains is None else n_domains,
            ranks_per_domain=self.ranks_per_domain
            if ranks_per_domain is None
            else ranks_per_domain,
        )
