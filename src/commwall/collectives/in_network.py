"""In-network reduction: NVLink SHARP (NVLS, NVLS-tree) and InfiniBand SHARP (CollNet).

**NVLS** (NVSwitch3 and later, sm ≥ 90): each GPU reads its slice reduced by the switch
(``multimem.ld_reduce``) and writes the result once with a multicast store (sjeaugey, nccl#1083,
nccl#1506). NCCL *chooses* by a bus bandwidth independent of the rank count (``tuning.cc``
v2.28+)::

    busBw(all-reduce) = 2 · nCh · bwIntra · nvlsEfficiency · (nCh − 1)/nCh
    busBw(RS / AG)    = nCh · bwIntra · nvlsEfficiency · (nCh − 1)/nCh · (ppn − 1)/ppn

with ``nvlsEfficiency`` 0.85 on Hopper and 0.74 on Blackwell, ``nCh`` the NVLS graph's heads
(one per GPU, at most 32; ``search.cc``) and ``bwIntra`` the fastest entry of the search's speed
array that every head can be given (:func:`nvls_graph_bw`; on DGX H100 8 × 40 GB/s, which a
topology search log shows: "NVLS P5 nCh 8 bw 40", nccl#1197). That is the tuner's estimate.

The **time** follows the bytes (:func:`nvls_volume`): an all-reduce moves ``S(1 + 1/n)``
through each GPU's busier NVLink direction, at ``nvlsEfficiency`` of the NVLink bandwidth — with
4 of a node's GPUs 252 GB/s algbw on H100, which the rank-independent formula overstates by a
quarter — and never faster than the tuner's busbw (:func:`nvls_rate`): 476 GB/s on 8 H100
(nccl-tests#212 quotes a peak of ~480), flat from 8 to 72 GB200 as measured. The
kernel cuts the message into loops of ``channels × heads`` chunks (:func:`~commwall.collectives.nccl.nvls_chunk`)
that flow through its warp groups (scatter, reduce, gather): :data:`NVLS_STAGES` − 1 loops of
fill after NCCL's 25 µs latency (:func:`~commwall.collectives.pipeline.loop_time`). Simple
protocol only; latency ``hwLat[NVLINK][NVLS]``, no base latency.

**NVLS-tree** (several domains): NVLS inside each domain, a tree across domains on every rank's
NIC. Tuner: ``busBw = min(NVLS busBw, k · g · B_net, nCh · perChMaxNVLSTreeBw)`` with ``k = 2``
for two domains (each domain's NICs carry the data once) and 1 beyond; latency
``intraLat + 2·log2(N)·interLat``. Time: the NVLS volume inside the domain and the shard each
rank sends over its NIC (once with two domains, twice from three), in loops of
:func:`~commwall.collectives.nccl.nvls_tree_chunk` through :data:`NVLS_TREE_STAGES` warp groups.

**CollNet / IB SHARP** (``collnet``): reduce-scatter over NVLink, each rank sends its ``S/g`` slice
up the switch tree once and receives the reduced slice once (half a ring's network volume), then
all-gather over NVLink. This is a volume model, not ``tuning.cc``'s (which scales
``nCh·bwIntra`` by a channel/ppn factor): the two stages pipeline, the network side runs at
``0.9`` of the NIC bandwidth (NCCL's CollNet factor for RS/AG), and the latency is NCCL's
``2·(min(1, g−1)·intraLat + 0.4 µs·(g−1)) + interLat``.
"""

from __future__ import annotations

from typing import Final

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
from commwall.collectives.cost import (
    Cost,
    Unsupported,
    estimate_cost,
    step_latency,
    trivial,
)
from commwall.collectives.fabric import CommFabric
from commwall.collectives.nccl import MAX_NVLS_ARITY, nvls_chunk, nvls_tree_chunk, pieces
from commwall.collectives.ops import Op, busbw_factor
from commwall.collectives.pipeline import loop_time

#: Warp groups an NVLS kernel pipelines a loop through (``all_reduce.h`` ``runNvls``: scatter,
#: reduce with multicast, gather; reduce-scatter and all-gather have two). The pipeline holds one
#: loop per group, so ``stages − 1`` loops are fill.
NVLS_STAGES: Final[dict[Op, int]] = {Op.ALL_REDUCE: 3, Op.REDUCE_SCATTER: 2, Op.ALL_GATHER: 2}
#: NVLS-tree (``runNvlsTree``): scatter, reduce, the tree's send/receive with broadcast, gather.
NVLS_TREE_STAGES: Final = 4

#: NCCL's intra-node search speeds per channel, GB/s, fastest first (``search.cc``
#: ``speedArrayIntra``/``sm90SpeedArrayIntra``/``sm100SpeedArrayIntra``; nccl-model.md §3).
SEARCH_SPEEDS_INTRA: Final[dict[Gen, tuple[float, ...]]] = {
    Gen.VOLTA: (40, 30, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3),
    Gen.AMPERE: (40, 30, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3),
    Gen.HOPPER: (60, 50, 40, 30, 24, 20, 15, 12, 11, 6, 3),
    Gen.BLACKWELL: (90, 80, 70, 60, 50, 45, 40, 30, 24, 20, 19, 18),
}


def nvls_heads(f: CommFabric) -> int:
    """NVLS graph channels (heads): one per GPU of the domain, at most ``NCCL_MAX_NVLS_ARITY``."""
    return max(1, min(f.ranks_per_domain, MAX_NVLS_ARITY))


def nvls_graph_bw(f: CommFabric) -> float:
    """Per-head bandwidth NCCL's NVLS search settles on, bytes/s: the fastest search speed
    every head can have at once on a GPU's NVLinks (``heads × speed ≤ NVLink bandwidth``).

    >>> from commwall.collectives.constants import Hw
    >>> round(nvls_graph_bw(CommFabric(1, 8, 370.8e9, Hw.NVLINK, 0.0, Gen.HOPPER, nvls=True)) / 1e9)
    40
    """
    heads = nvls_heads(f)
    speeds = SEARCH_SPEEDS_INTRA[f.gen]
    factor = f.intra_bw_factor if f.intra_bw_factor > 0 else 1.0
    hardware = f.intra_bw / factor  # the search sees the links, not a fitted correction
    for speed in speeds:
        if heads * gbps(speed) <= hardware * (1 + 1e-9):
            return gbps(speed) * factor
    return gbps(speeds[-1]) * factor


def nvls_busbw(op: Op, f: CommFabric) -> float:
    """NCCL's NVLS bus bandwidth inside one domain, the tuner's figure (module doc), bytes/s."""
    heads = nvls_heads(f)
    per_head = nvls_graph_bw(f) * f.nvls_efficiency * (heads - 1) / heads
    if op is Op.ALL_REDUCE:
        return 2.0 * heads * per_head
    g = f.ranks_per_domain
    return heads * per_head * (g - 1) / g


def nvls_volume(op: Op, ranks: int) -> float:
    """Bytes per byte of ``S`` that cross each GPU's busier NVLink direction under NVLS
    (sjeaugey, nccl#1083 and nccl#1506): all-reduce — the switch reads all of a GPU's data for
    the reductions (``S`` out) and multicasts every reduced shard back (``S`` in), plus the GPU's
    own shard once more each way (``S/n``); reduce-scatter and all-gather — ``S`` one way."""
    if op is Op.ALL_REDUCE:
        return 1.0 + 1.0 / max(1, min(ranks, MAX_NVLS_ARITY))
    return 1.0


def nvls_rate(op: Op, f: CommFabric) -> float:
    """Algorithm bytes/s NVLS sustains inside one domain: the NVLink volume at
    ``nvlsEfficiency`` (:func:`nvls_volume`), and at most the tuner's rank-independent bus
    bandwidth (:func:`nvls_busbw`), which NCCL's developers set from measurements and which
    the measurements bear out: NVLS all-reduce busbw is flat from 8 GB200 (OCI, 840 GB/s) to a
    72-GPU NVL72 rack (CoreWeave, 835 GB/s), where the volume alone would let it grow by a fifth.

    >>> from commwall.collectives.constants import Hw
    >>> h100 = CommFabric(1, 8, 370.8e9, Hw.NVLINK, 0.0, Gen.HOPPER, nvls=True)
    >>> round(nvls_rate(Op.ALL_REDUCE, h100) / 1e9)  # 476 GB/s busbw, the tuner's
    272
    """
    g = f.ranks_per_domain
    volume = f.intra_bw * f.nvls_efficiency / nvls_volume(op, g)
    return min(volume, nvls_busbw(op, f) / busbw_factor(op, g))


def nvls_loops(
    nbytes: float, f: CommFabric, chunk: float, *, stages: int, rate: float, latency: float
) -> tuple[float, float]:
    """``(latency, bw_time)`` of ``nbytes`` cut into loops of ``channels × heads`` chunks that
    flow through ``stages`` warp groups at ``rate`` algorithm bytes/s (module doc)."""
    per_loop = f.nvls_channels * nvls_heads(f) * chunk
    return loop_time(
        loops=pieces(nbytes, per_loop),
        stages=stages,
        loop_seconds=min(per_loop, nbytes) / rate,
        latency=latency,
    )


def nvls_plan(op: Op, nbytes: float, f: CommFabric) -> tuple[float, float, int]:
    """``(latency, bw_time, channels)`` of NVLS inside one domain (module doc)."""
    nc = f.nvls_channels
    chunk = nvls_chunk(nbytes, channels=nc, heads=nvls_heads(f))
    latency = step_latency(f, f.intra_hw, "nvls", Proto.SIMPLE)
    rate = nvls_rate(op, f)
    return (*nvls_loops(nbytes, f, chunk, stages=NVLS_STAGES[op], rate=rate, latency=latency), nc)


def nvls(op: Op, nbytes: float, f: CommFabric, proto: Proto, *, estimate: bool = False) -> Cost:
    """NVLink SHARP inside one scale-up domain (all-reduce, reduce-scatter, all-gather)."""
    if not (f.nvls and f.nvls_efficiency > 0):
        raise Unsupported("NVLS needs NVSwitch3 or later and an sm90+ GPU")
    if proto is not Proto.SIMPLE:
        raise Unsupported("NVLS runs the Simple protocol only")
    if op not in (Op.ALL_REDUCE, Op.REDUCE_SCATTER, Op.ALL_GATHER):
        raise Unsupported(f"NVLS has no {op.value}")
    if f.n_domains != 1:
        raise Unsupported("NVLS spans one scale-up domain; across domains use nvls_tree")
    if f.nranks == 1:
        return trivial(op, nbytes, f, proto)
    if not (op is Op.ALL_REDUCE or f.ranks_per_domain <= MAX_NVLS_ARITY):
        raise Unsupported(f"NCCL runs NVLS {op.value} on at most {MAX_NVLS_ARITY} ranks per domain")
    p = f.nranks
    tuner_lat = step_latency(f, f.intra_hw, "nvls", proto)
    tuner_bw_time = busbw_factor(op, p) * nbytes / nvls_busbw(op, f)
    if estimate:
        return estimate_cost(
            op, "nvls", proto, nbytes, f, tuner_lat, tuner_bw_time, 2, f.intra_hw.value
        )
    tuner_time = tuner_lat + tuner_bw_time
    latency, bw_time, nc = nvls_plan(op, nbytes, f)
    return Cost(op, "nvls", proto, nbytes, p, latency, bw_time, 2, f.intra_hw.value, tuner_time, nc)


def nvls_tree(
    op: Op, nbytes: float, f: CommFabric, proto: Proto, *, estimate: bool = False
) -> Cost:
    """NVLS inside each domain plus a tree across domains (all-reduce)."""
    if not (f.nvls and f.nvls_efficiency > 0):
        raise Unsupported("NVLS-tree needs NVSwitch3 or later and an sm90+ GPU")
    if proto is not Proto.SIMPLE:
        raise Unsupported("NVLS-tree runs the Simple protocol only")
    if op is not Op.ALL_REDUCE:
        raise Unsupported(f"NVLS-tree implements all_reduce only, not {op.value}")
    if f.n_domains <= 1:
        raise Unsupported("NVLS-tree needs several scale-up domains (NCCL disables it on one)")
    if f.ranks_per_domain <= 1:
        raise Unsupported("NVLS-tree needs several ranks per domain")
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
    tuner_lat = step_latency(f, f.intra_hw, "nvls_tree", proto) + 2.0 * f.log2_domains * (
        step_latency(f, Hw.NET, "nvls_tree", proto)
    )
    steps = 2 + 2 * max(1, round(f.log2_domains))
    tuner_bw_time = busbw_factor(op, f.nranks) * nbytes / bus
    if f.gen is Gen.BLACKWELL and f.cpu in ("intel", "amd"):
        # tuning.cc v2.28+: NVLS-tree all-reduce on Blackwell with x86 hosts takes the tree
        # correction factor too.
        tuner_bw_time /= tree_correction(proto, nbytes, limit=24)
    if estimate:
        return estimate_cost(
            op, "nvls_tree", proto, nbytes, f, tuner_lat, tuner_bw_time, steps, bottleneck
        )
    # Realistic: loops of channels x heads chunks through the NVLS and tree warp groups.
    n_dom, nc = f.n_domains, f.nvls_channels
    chunk = nvls_tree_chunk(nbytes, channels=nc, heads=nvls_heads(f), n_domains=n_dom)
    intra_rate = nvls_rate(op, f)
    # Each rank carries its S/g shard over its NIC, once with two domains (the two trees' roots
    # exchange), twice from three on (interior in one tree; nccl-tests#196, nccl#812).
    net_rate = f.node_net_bw / (1.0 if n_dom == 2 else 2.0)
    latency, bw_time = nvls_loops(
        nbytes, f, chunk, stages=NVLS_TREE_STAGES, rate=min(intra_rate, net_rate), latency=tuner_lat
    )
    bottleneck = f.intra_hw.value if intra_rate <= net_rate else Hw.NET.value
    return Cost(
        op, "nvls_tree", proto, nbytes, f.nranks, latency, bw_time, steps, bottleneck,
        tuner_lat + tuner_bw_time, nc,
    )  # fmt: skip


def collnet(op: Op, nbytes: float, f: CommFabric, proto: Proto, *, estimate: bool = False) -> Cost:
    """InfiniBand SHARP all-reduce (NCCL CollNetDirect)."""
    if not f.collnet:
        raise Unsupported("CollNet needs scale-out switches with in-network reduction (IB SHARP)")
    if proto is not Proto.SIMPLE:
        raise Unsupported("CollNet runs the Simple protocol only")
    if op is not Op.ALL_REDUCE:
        raise Unsupported(f"this CollNet model implements all_reduce only, not {op.value}")
    if f.n_domains <= 1:
        raise Unsupported("CollNet reduces across domains; one domain has nothing to offload")
    g = f.ranks_per_domain
    intra = 2.0 * (g - 1) / g * nbytes / f.intra_bw if g > 1 else 0.0
    inter = nbytes / g / (COLLNET_NET_EFFICIENCY * f.net_bw_per_rank)
    intra_lat = step_latency(f, f.intra_hw, "collnet", proto)
    latency = 2.0 * (min(1, g - 1) * intra_lat + COLLNET_ARITY_LAT * (g - 1)) + step_latency(
        f, Hw.NET, "collnet", proto
    )
    bottleneck = Hw.NET.value if inter > intra else f.intra_hw.value
    return Cost(
        op,
        "collnet",
        proto,
        nbytes,
        f.nranks,
        latency,
        max(intra, inter),
        3,
        bottleneck,
        channels=f.channels,
    )
