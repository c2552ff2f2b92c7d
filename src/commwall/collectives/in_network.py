"""In-network reduction: NVLink SHARP (NVLS, NVLS-tree) and InfiniBand SHARP (CollNet).

**NVLS** (NVSwitch3 and later, sm ≥ 90): each GPU reads its slice reduced by the switch
(``multimem.ld_reduce``) and writes the result once with a multicast store. Per rank and direction
an all-reduce moves ``S·(1 + 1/g)`` bytes instead of the ring's ``2(g−1)/g·S`` (volumes from
sjeaugey, nccl#1083 and nccl#1506), at NCCL's ``nvlsEfficiency`` of the NVLink bandwidth (0.85
Hopper, 0.74 Blackwell; ``tuning.cc`` v2.28+). Reduce-scatter sends ``S`` and all-gather receives
``S``, so NVLS brings no bandwidth gain there. Simple protocol only; latency
``hwLat[NVLINK][NVLS]`` (25 µs) with no base latency.

This volume model is a deliberate departure from ``tuning.cc``, whose NVLS bandwidth
(``2·bwIntra·nvlsEfficiency·(nCh−1)/nCh``) depends on the NVLS graph's per-channel bandwidth, which
commwall does not search for. The volume model reproduces measured 8-GPU NVLS all-reduce
(H100 480 GB/s busbw, GB200 840 GB/s; see ``commwall.validation``), so the tuner's NVLS-vs-ring
switch points may differ from NCCL's own.

**NVLS-tree** (several domains): NVLS inside each domain; each rank's ``S/g`` slice is all-reduced
across domains on its own NIC by a double binary tree (``S/g`` per direction for N = 2, ``2S/g``
for N ≥ 3); the two stages pipeline, so the slower bounds the bandwidth. Latency
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
    Hw,
    Proto,
    gbps,
    per_node_column,
)
from commwall.collectives.cost import Cost, require, step_latency, trivial
from commwall.collectives.fabric import CommFabric
from commwall.collectives.ops import Op
from commwall.collectives.tree import tree_inter_volume


def _nvls_intra_time(op: Op, nbytes: float, f: CommFabric) -> float:
    volume = nbytes * (1.0 + 1.0 / f.ranks_per_domain) if op is Op.ALL_REDUCE else nbytes
    return volume / (f.intra_bw * f.nvls_efficiency)


def nvls(op: Op, nbytes: float, f: CommFabric, proto: Proto) -> Cost:
    """NVLink SHARP inside one scale-up domain (all-reduce, reduce-scatter, all-gather)."""
    require(f.nvls and f.nvls_efficiency > 0, "NVLS needs NVSwitch3 or later and an sm90+ GPU")
    require(proto is Proto.SIMPLE, "NVLS runs the Simple protocol only")
    require(op in (Op.ALL_REDUCE, Op.REDUCE_SCATTER, Op.ALL_GATHER), f"NVLS has no {op.value}")
    require(f.n_domains == 1, "NVLS spans one scale-up domain; across domains use nvls_tree")
    if f.nranks == 1:
        return trivial(op, nbytes, f, proto)
    latency = step_latency(f, f.intra_hw, "nvls", proto)
    return Cost(
        op,
        "nvls",
        proto,
        nbytes,
        f.nranks,
        latency,
        _nvls_intra_time(op, nbytes, f),
        2,
        f.intra_hw.value,
    )


def nvls_tree(op: Op, nbytes: float, f: CommFabric, proto: Proto) -> Cost:
    """NVLS inside each domain plus a double binary tree across domains (all-reduce)."""
    require(f.nvls and f.nvls_efficiency > 0, "NVLS-tree needs NVSwitch3 or later and an sm90+ GPU")
    require(proto is Proto.SIMPLE, "NVLS-tree runs the Simple protocol only")
    require(op is Op.ALL_REDUCE, f"NVLS-tree implements all_reduce only, not {op.value}")
    require(f.n_domains > 1, "NVLS-tree needs several scale-up domains (NCCL disables it on one)")
    require(f.ranks_per_domain > 1, "NVLS-tree needs several ranks per domain")
    intra = _nvls_intra_time(op, nbytes, f)
    inter = tree_inter_volume(f.n_domains) * nbytes / f.ranks_per_domain / f.net_bw_per_rank
    # NCCL caps NVLS-tree busBw at nCh · perChMaxNVLSTreeBw (tuning.cc v2.28+).
    cap = f.channels * gbps(PER_CH_MAX_NVLS_TREE_BW[f.gen][per_node_column(f.n_domains)])
    capped = 2.0 * (f.nranks - 1) / f.nranks * nbytes / cap
    latency = step_latency(f, f.intra_hw, "nvls_tree", proto) + 2.0 * f.log2_domains * (
        step_latency(f, Hw.NET, "nvls_tree", proto)
    )
    bottleneck = Hw.NET.value if inter > intra else f.intra_hw.value
    if capped > max(intra, inter):
        bottleneck = "nccl per-channel cap"
    steps = 2 + 2 * max(1, round(f.log2_domains))
    bw_time = max(intra, inter, capped)
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
