"""NCCL's double binary tree all-reduce (Sanders, Speck & Träff, Parallel Computing 35(12) 2009).

NCCL's tree is hierarchical: a chain reduce inside each domain, a double binary tree across
domains, a chain broadcast back (nccl#530). Latency (``tuning.cc`` v2.30)::

    T_lat = baseLat + 2·((g−1)·intraLat + log2(N)·interLat)

Bandwidth: every rank sends and receives ``2S`` along its intra-domain chain; across domains a
domain's NICs carry ``2S`` per direction when N ≥ 3 (interior in one tree, leaf in the other) but
only ``S`` when N = 2 — the reason two-node tree runs report busbw above the NIC rate
(nccl-tests#196, nccl#812). NCCL's form ``algBw = busBw/2`` then applies ``min(0.92·busBw,
nCh·perChMaxTreeBw)`` for every protocol, the protocol's own factor on top (LL ``1/3.8`` capped at
``llMaxBw``, LL128 ``120/128`` or ``7/9`` in one node, capped per channel) and the empirical
``treeCorrectionFactor`` per size. That is NCCL's estimate (``tuner_time``), which it picks by.

**Time**: each channel pipelines its share in chunks (:func:`~commwall.collectives.nccl.tree_chunk`)
up the chain and tree and back down (:func:`~commwall.collectives.pipeline.chain_time`): the first
chunk crosses ``2(g−1)`` scale-up hops and ``2·log2 N`` network hops, the rest follow one per
service time of the slowest hop (its per-channel share of the tree bandwidth above, the per-slice
synchronisation, the network window of ``NCCL_STEPS`` chunks). The bandwidth part is then divided
by ``treeCorrectionFactor`` — NVIDIA's measured shortfall of the tree below its bandwidth model,
by protocol and size (LL128: 0.6 at 1–2 MiB, 0.8 at 4 MiB, 0.9 from 8 to 64 MiB, 1 from 128 MiB;
``tuning.cc`` v2.30), which NCCL applies to its own estimate. The chunk pipeline alone left
multi-node tree all-reduces 15–70 % fast at 1–64 MiB on every public two- to eight-node table
(A100, H100, H200, B200; IB and RoCE); with the factor, 67 compared points moved closer and 3
(one H100 table already within 6 %) moved away by more than 3 points (docs/validation.md).
"""

from __future__ import annotations

from typing import Final

from commwall.collectives.constants import (
    LL128_TREE_EFFICIENCY_MULTINODE,
    LL128_TREE_EFFICIENCY_SINGLENODE,
    PER_CH_MAX_TREE_BW,
    PER_CH_MAX_TREE_LL128_BW,
    TREE_LL_DIVISOR,
    TREE_SIMPLE_EFFICIENCY,
    Hw,
    Proto,
    gbps,
    per_node_column,
    tree_correction,
)
from commwall.collectives.cost import (
    Cost,
    Unsupported,
    base_latency,
    estimate_cost,
    intra_hop,
    ll_max_bw,
    net_hop,
    require_ll128,
    step_latency,
    trivial,
)
from commwall.collectives.fabric import CommFabric
from commwall.collectives.nccl import NCCL_STEPS, channels_used, log2i, pieces, tree_chunk
from commwall.collectives.ops import Op
from commwall.collectives.pipeline import Hop, chain_time

#: Network bytes/s one tree channel (one SM) moves per direction: "when NIC bw is smaller than
#: 100G (12GB/s), we can use one SM (two trees) to drive one NIC; otherwise, two SM's are needed"
#: (kwen2501, nccl PR #645), and "tree would require 32 SMs" to reach NVLS-tree's ~380 GB/s
#: (sjeaugey, nccl#1649) — 12 GB/s of busBw per channel. NCCL's tuner caps (``perChMaxTreeBw``)
#: are three times higher; with its default 16 channels a tree across 3+ nodes reaches ~190
#: GB/s busbw, as Together AI measured on B200 (195 GB/s from 4 nodes on).
TREE_CHANNEL_NET_BW: Final = 12e9


def tree_inter_volume(n_domains: int) -> float:
    """Bytes per direction through a domain's NICs, in units of S, for a DBT all-reduce."""
    if n_domains == 1:
        return 0.0
    return 1.0 if n_domains == 2 else 2.0


def tree_busbw(f: CommFabric, proto: Proto) -> tuple[float, str]:
    """NCCL-style tree busBw (``2S / T_bw``) for ``proto`` and the class that bounds it."""
    limits: list[tuple[float, str]] = []
    if f.ranks_per_domain > 1:
        limits.append((f.intra_bw, f.intra_hw.value))  # 2S along the chain / 2S → intra_bw
    inter = tree_inter_volume(f.n_domains)
    if inter > 0:
        limits.append((2.0 * f.node_net_bw / inter, Hw.NET.value))
    raw, bottleneck = min(limits)
    col = per_node_column(f.n_domains)
    # tuning.cc: every tree all-reduce first takes min(0.92·busBw, nCh·perChMaxTreeBw) ...
    bw = min(TREE_SIMPLE_EFFICIENCY * raw, f.channels * gbps(PER_CH_MAX_TREE_BW[f.gen][col]))
    # ... then the protocol's own factor and cap.
    if proto is Proto.LL:
        bw = min(bw / TREE_LL_DIVISOR, ll_max_bw(f))
    elif proto is Proto.LL128:
        require_ll128(f)
        factor = (
            LL128_TREE_EFFICIENCY_SINGLENODE
            if f.n_domains == 1
            else LL128_TREE_EFFICIENCY_MULTINODE
        )
        bw = min(bw * factor, f.channels * gbps(PER_CH_MAX_TREE_LL128_BW[f.gen][col]))
    return bw, bottleneck


def tree(op: Op, nbytes: float, f: CommFabric, proto: Proto, *, estimate: bool = False) -> Cost:
    """NCCL tree (double binary tree across domains, chains inside) all-reduce."""
    if op is not Op.ALL_REDUCE:
        raise Unsupported(f"NCCL's tree implements all_reduce only, not {op.value}")
    p = f.nranks
    if p == 1:
        return trivial(op, nbytes, f, proto)
    intra_lat = step_latency(f, f.intra_hw, "tree", proto)
    inter_lat = step_latency(f, Hw.NET, "tree", proto)
    g, n_dom = f.ranks_per_domain, f.n_domains
    depth = (g - 1) * intra_lat + f.log2_domains * inter_lat
    bw, bottleneck = tree_busbw(f, proto)
    tuner_time = (
        base_latency("tree", proto)
        + 2.0 * depth
        + 2.0 * nbytes / (bw * tree_correction(proto, nbytes))
    )
    steps = 2 * (g - 1) + 2 * max(1, round(f.log2_domains))
    if estimate:
        lat = base_latency("tree", proto) + 2.0 * depth
        return estimate_cost(op, "tree", proto, nbytes, f, lat, tuner_time - lat, steps, bottleneck)
    # Realistic: the chunk pipeline through the chain and the tree (module doc).
    nc = channels_used(nbytes, proto, f.channels, traffic_per_byte=2)
    chunk = tree_chunk(proto, nbytes, channels=nc, n_domains=n_dom, ppn=g)
    per_channel = nbytes / nc
    items = pieces(per_channel, chunk)
    rate = bw / 2.0 / f.channels  # a channel's share of busBw/2 (the algorithm bandwidth)
    if n_dom > 1:
        rate = min(rate, TREE_CHANNEL_NET_BW / tree_inter_volume(n_dom))
    path: list[Hop] = []
    if g > 1:
        path.append(intra_hop(f, "tree", proto, rate, 2 * (g - 1)))
    if n_dom > 1:
        hops = 2 * max(1, log2i(n_dom))
        share = f.node_net_bw / nc
        path.append(net_hop(f, "tree", proto, rate, hops, window=NCCL_STEPS, link_share=share))
    latency, bw_time = chain_time(
        items=items, slice_bytes=per_channel / items, path=path, base=base_latency("tree", proto)
    )
    # NCCL's own measured tree shortfall by size (treeCorrectionFactor) on the bandwidth term:
    # the chunk pipeline above does not produce it (module doc).
    bw_time /= tree_correction(proto, nbytes)
    return Cost(op, "tree", proto, nbytes, p, latency, bw_time, steps, bottleneck, tuner_time, nc)
