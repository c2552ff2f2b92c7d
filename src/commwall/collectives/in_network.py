"""In-network reduction: NVLink SHARP (NVLS, NVLS-tree) and InfiniBand SHARP (CollNet).

**NVLS** (NVSwitch3 and later, sm ≥ 90): each GPU reads its slice reduced by the switch
(``multimem.ld_reduce``) and writes the result once with a multicast store (sjeaugey, nccl#1083,
nccl#1506). NCCL models its bus bandwidth as independent of the rank count (``tuning.cc`` v2.28+)::

    busBw(all-reduce) = 2 · bwIntra · nvlsEfficiency · (nCh − 1)/nCh
    busBw(RS / AG)    = bwIntra · nvlsEfficiency · (nCh − 1)/nCh · (ppn − 1)/ppn
    algBw             = busBw · n / nsteps

with ``nvlsEfficiency`` 0.85 on Hopper and 0.74 on Blackwell. The NVLS graph's per-rank bandwidth
``bwIntra·(nCh−1)/nCh`` comes out of NCCL's topology search, which commwall does not run, so it is
taken as a fraction :data:`NVLS_GRAPH_FRACTION` of the GPU's NVLink bandwidth, calibrated once on
DGX H100 (~480 GB/s busbw, nccl-tests#212). The same fraction then gives 8-GPU GB200 and a whole
72-GPU NVL72 rack within 3% of CoreWeave's and OCI's measurements (``commwall.validation``), which
a per-byte volume model does not: measured NVLS busbw stays flat from 8 to 72 GPUs, as NCCL's
formula says. Simple protocol only; latency ``hwLat[NVLINK][NVLS]`` (25 µs), no base latency.

**NVLS-tree** (several domains): NVLS inside each domain, a tree across domains on every rank's
NIC. ``busBw = min(NVLS busBw, k · g · B_net, nCh · perChMaxNVLSTreeBw)`` with ``k = 2`` for two
domains (each domain's NICs carry the data once) and 1 beyond; latency
``intraLat + 2·log2(N)·interLat``.

**CollNet / IB SHARP** (``collnet``): reduce-scatter over NVLink, each rank sends its ``S/g`` slice
up the switch tree once and receives the reduced slice once (half a ring's network volume), then
all-gather over NVLink. This is a volume model, not ``tuning.cc``'s (which scales
``nCh·bwIntra`` by a channel/ppn factor): the two stages pipeline, the network side runs at
``0.9`` of the NIC bandwidth (NCCL's CollNet factor for RS/AG), and the latency is NCCL's
``2·(min(1, g−1)·intraLat + 0.4 µs·(g−1)) + interLat``.
"""

from __future__ import annotations

from commwall.collectives.constants import (
    COLLNET_ARITY_LAT,
    COLLNET_NET_EFFICIENCY,
    PER_CH_MAX_NVLS_TREE_BW,
    Gen,
    Hw,
    Proto,
    gbps,
    per_node_column,
    tree_correction,
)
from commwall.collectives.cost import Cost, require, step_latency, trivial
from commwall.collectives.fabric import CommFabric
from commwall.collectives.ops import Op, busbw_factor

#: NVLS graph bandwidth per rank as a share of the GPU's NVLink bandwidth (ours, calibrated on
#: DGX H100: 480 GB/s = 2 × 370.8 GB/s × 0.85 × this; nccl-tests#212).
NVLS_GRAPH_FRACTION = 480.0 / (2.0 * 370.8 * 0.85)


def nvls_busbw(op: Op, f: CommFabric) -> float:
    """NCCL's NVLS bus bandwidth inside one domain (see the module docstring), bytes/s."""
    per_rank = f.intra_bw * f.nvls_efficiency * NVLS_GRAPH_FRACTION
    if op is Op.ALL_REDUCE:
        return 2.0 * per_rank
    g = f.ranks_per_domain
    return per_rank * (g - 1) / g


def nvls(op: Op, nbytes: float, f: CommFabric, proto: Proto) -> Cost:
    """NVLink SHARP inside one scale-up domain (all-reduce, reduce-scatter, all-gather)."""
    require(f.nvls and f.nvls_efficiency > 0, "NVLS needs NVSwitch3 or later and an sm90+ GPU")
    require(proto is Proto.SIMPLE, "NVLS runs the Simple protocol only")
    require(op in (Op.ALL_REDUCE, Op.REDUCE_SCATTER, Op.ALL_GATHER), f"NVLS has no {op.value}")
    require(f.n_domains == 1, "NVLS spans one scale-up domain; across domains use nvls_tree")
    if f.nranks == 1:
        return trivial(op, nbytes, f, proto)
    p = f.nranks
    latency = step_latency(f, f.intra_hw, "nvls", proto)
    bw_time = busbw_factor(op, p) * nbytes / nvls_busbw(op, f)  # algBw = busBw / factor
    return Cost(op, "nvls", proto, nbytes, p, latency, bw_time, 2, f.intra_hw.value)


def nvls_tree(op: Op, nbytes: float, f: CommFabric, proto: Proto) -> Cost:
    """NVLS inside each domain plus a tree across domains (all-reduce)."""
    require(f.nvls and f.nvls_efficiency > 0, "NVLS-tree needs NVSwitch3 or later and an sm90+ GPU")
    require(proto is Proto.SIMPLE, "NVLS-tree runs the Simple protocol only")
    require(op is Op.ALL_REDUCE, f"NVLS-tree implements all_reduce only, not {op.value}")
    require(f.n_domains > 1, "NVLS-tree needs several scale-up domains (NCCL disables it on one)")
    require(f.ranks_per_domain > 1, "NVLS-tree needs several ranks per domain")
    limits = [
        (nvls_busbw(op, f), f.intra_hw.value),
        (f.node_net_bw * (2.0 if f.n_domains == 2 else 1.0), Hw.NET.value),
        # NCCL caps NVLS-tree busBw at nCh · perChMaxNVLSTreeBw (tuning.cc v2.28+).
        (
            f.channels * gbps(PER_CH_MAX_NVLS_TREE_BW[f.gen][per_node_column(f.n_domains)]),
            "nccl per-channel cap",
        ),
    ]
    bus, bottleneck = min(limits)
    latency = step_latency(f, f.intra_hw, "nvls_tree", proto) + 2.0 * f.log2_domains * (
        step_latency(f, Hw.NET, "nvls_tree", proto)
    )
    steps = 2 + 2 * max(1, round(f.log2_domains))
    bw_time = busbw_factor(op, f.nranks) * nbytes / bus
    if f.gen is Gen.BLACKWELL and f.cpu in ("intel", "amd"):
        # tuning.cc v2.28+: NVLS-tree all-reduce on Blackwell with x86 hosts takes the tree
        # correction factor too.
        bw_time /= tree_correction(proto, nbytes, limit=24)
    return Cost(op, "nvls_tree", proto, nbytes, f.nranks, latency, bw_time, steps, bottleneck)


def collnet(op: Op, nbytes: float, f: CommFabric, proto: Proto) -> Cost:
    """InfiniBand SHARP all-reduce (NCCL CollNetDirect)."""
    require(f.collnet, "CollNet needs scale-out switches with in-network reduction (IB SHARP)")
    require(proto is Proto.SIMPLE, "CollNet runs the Simple protocol only")
    require(op is Op.ALL_REDUCE, f"this CollNet model implements all_reduce only, not {op.value}")
    require(f.n_domains > 1, "CollNet reduces across domains; one domain has nothing to offload")
    g = f.ranks_per_domain
    intra = 2.0 * (g - 1) / g * nbytes / f.intra_bw if g > 1 else 0.0
    inter = nbytes / g / (COLLNET_NET_EFFICIENCY * f.net_bw_per_rank)
    intra_lat = step_latency(f, f.intra_hw, "collnet", proto)
    latency = 2.0 * (min(1, g - 1) * intra_lat + COLLNET_ARITY_LAT * (g - 1)) + step_latency(
        f, Hw.NET, "collnet", proto
    )
    bottleneck = Hw.NET.value if inter > intra else f.intra_hw.value
    return Cost(op, "collnet", proto, nbytes, f.nranks, latency, max(intra, inter), 3, bottleneck)
