"""Ring algorithms: NCCL's flat ring across NVLink and the network.

All-reduce is a ring reduce-scatter followed by a ring all-gather (Patarasuk & Yuan, JPDC 69(2)
2009): ``2(p−1)`` steps, each rank sends ``2(p−1)/p·S`` bytes — the lower bound for any
point-to-point all-reduce, so ring busbw equals the ring's bottleneck bandwidth ``B =
min(intra_bw, g·net_bw)`` across domains: every channel's ring crosses each domain boundary once,
so the domain's NICs together carry what one NVLink hop carries.

**Choice** (:attr:`~commwall.collectives.cost.Cost.tuner_time`): NCCL's model (``tuning.cc``
v2.30, ``shared/reference/nccl-model.md`` §4.8)::

    T = baseLat + (nsteps − nInter)·intraLat + nInter·interLat + volume / B_proto

with ``nInter = 2(N−1)`` network steps for all-reduce (``N−1`` for RS/AG), the ×1.4 "plateau"
on multi-node Simple all-reduce, and the protocol's bandwidth (LL half the link and at most
``llMaxBw``; LL128 0.92 and at most ``nCh·perChMaxRingLL128Bw``).

**Time** (:attr:`~commwall.collectives.cost.Cost.time`): NCCL's launch plan
(:func:`~commwall.collectives.nccl.channels_used`, :func:`~commwall.collectives.nccl.ring_chunking`)
priced by :func:`~commwall.collectives.pipeline.ring_time`: each channel runs ``loops × nsteps``
steps of one chunk in ``k`` slices, at the pace of the slowest hop class (its per-channel share
of the link, the protocol's per-channel cap, the per-slice synchronisation, the network window)
or of the latency around the ring, whichever is slower. Broadcast and reduce are a chain from the
root (:func:`~commwall.collectives.pipeline.chain_time`).

>>> from commwall.collectives.constants import Gen, Hw, Proto
>>> f = CommFabric(1, 8, 300e9, Hw.NVLINK, 0.0, Gen.HOPPER, channels=24)
>>> round(ring(Op.ALL_REDUCE, 2**30, f, Proto.SIMPLE).busbw / 1e9)
284
>>> round(ring(Op.ALL_REDUCE, 2**30, f, Proto.SIMPLE).tuner_time * 1e6)  # NCCL's estimate
6335
"""

from __future__ import annotations

from dataclasses import replace

from commwall.collectives.constants import (
    LL128_RING_EFFICIENCY,
    LL_EFFICIENCY,
    PER_CH_MAX_RING_LL128_BW,
    RING_SIMPLE_PLATEAU,
    Gen,
    Hw,
    Proto,
    gbps,
    per_node_column,
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
    ring_proto_bw,
    sm_channel_bw,
    step_latency,
    trivial,
)
from commwall.collectives.fabric import CommFabric
from commwall.collectives.nccl import (
    NCCL_STEPS,
    SLICE_STEPS,
    channels_used,
    chunk_bytes,
    pieces,
    ring_chunking,
)
from commwall.collectives.ops import Op
from commwall.collectives.pipeline import Hop, chain_time, ring_time


def ring_bandwidth(f: CommFabric) -> tuple[float, str]:
    """The ring's bottleneck bandwidth (bytes/s) and which hardware class sets it."""
    if f.n_domains == 1:
        return f.intra_bw, f.intra_hw.value
    if f.ranks_per_domain == 1:
        return f.net_bw_per_rank, Hw.NET.value
    if f.node_net_bw < f.intra_bw:
        return f.node_net_bw, Hw.NET.value
    return f.intra_bw, f.intra_hw.value


def channel_rate(f: CommFabric, proto: Proto, link_bw: float, channels: int) -> float:
    """Bytes/s one of ``channels`` ring channels moves over a hop class of ``link_bw`` in total.

    Simple: its share of the link, at most what one SM copies (:func:`sm_channel_bw`). LL128:
    0.92 of the share, at most ``perChMaxRingLL128Bw``. LL: half the share, and the SM-bound LL
    cap ``llMaxBw`` split over all the graph's channels (``tuning.cc``).
    """
    share = link_bw / max(1, channels)
    if proto is Proto.SIMPLE:
        return min(share, sm_channel_bw(f, proto))
    if proto is Proto.LL128:
        cap = gbps(PER_CH_MAX_RING_LL128_BW[f.gen][per_node_column(f.n_domains)])
        return min(LL128_RING_EFFICIENCY * share, cap)
    return min(LL_EFFICIENCY * share, ll_max_bw(f) / max(1, f.channels))


def ring_hops(f: CommFabric, proto: Proto, channels: int, *, window: int) -> list[Hop]:
    """The hop classes around one ring channel: ``p − N`` scale-up hops and ``N`` network hops
    (one per domain boundary), or ``p`` scale-up hops in one domain."""
    p, n_dom = f.nranks, f.n_domains
    intra = intra_hop(f, "ring", proto, 1.0, 0)
    if n_dom == 1:
        rate = channel_rate(f, proto, f.intra_bw, channels)
        return [Hop(intra.latency, intra.overhead, rate, window, p)]
    hops = []
    if p > n_dom:
        # Every GPU sends over NVLink in every channel: the GPU a ring leaves the domain from
        # hands its data over NVLink to the GPU next to the channel's NIC (PXN, "NET/IB/k(g)" in
        # NCCL's logs), so the scale-up share is the link over all channels.
        rate = channel_rate(f, proto, f.intra_bw, channels)
        hops.append(Hop(intra.latency, intra.overhead, rate, window, p - n_dom))
    # a channel leaves the domain through one NIC (NCCL's ring graph gives each channel one
    # net device; its per-channel inter bandwidth is at most that NIC's, search.cc): a
    # communicator with fewer channels than the domain's NICs (its maxCTAs) uses only that
    # many NICs
    nic_bw = f.net_bw_per_nic or f.net_bw_per_rank / f.nics_per_rank
    net_link = min(f.node_net_bw, f.channels * nic_bw)
    net_rate = channel_rate(f, proto, net_link, channels)
    share = net_link / max(1, channels)
    hops.append(net_hop(f, "ring", proto, net_rate, n_dom, window=window, link_share=share))
    return hops


def ring_tuner_latency(op: Op, nbytes: float, f: CommFabric, proto: Proto) -> float:
    """NCCL's ring latency for ``op`` (``tuning.cc``, module doc)."""
    latency = f.memo(("ring_latency", op, proto), lambda: _ring_latency(op, f, proto))
    all_reduce = op is Op.ALL_REDUCE
    p, n_dom = f.nranks, f.n_domains
    if all_reduce and n_dom > 1 and proto is Proto.SIMPLE and nbytes / (f.channels * p) >= 64:
        latency *= 1.9 if f.gen is Gen.VOLTA else RING_SIMPLE_PLATEAU
    return latency


def _ring_latency(op: Op, f: CommFabric, proto: Proto) -> float:
    p, n_dom = f.nranks, f.n_domains
    if op in (Op.BROADCAST, Op.REDUCE):
        # Pipelined chain; NCCL charges one hop of latency (sameChannels), Simple uses the Tree column.
        hw = Hw.NET if n_dom > 1 else f.intra_hw
        column = "tree" if proto is Proto.SIMPLE else "ring"
        return base_latency("ring", proto) + step_latency(f, hw, column, proto)
    all_reduce = op is Op.ALL_REDUCE
    nsteps = 2 * (p - 1) if all_reduce else p - 1
    n_inter = 0 if n_dom == 1 else (2 * (n_dom - 1) if all_reduce else n_dom - 1)
    intra_lat = step_latency(f, f.intra_hw, "ring", proto)
    if n_dom > 1:
        intra_lat = max(intra_lat, f.net_overhead * (3 if proto is Proto.SIMPLE else 1))
    inter_lat = step_latency(f, Hw.NET, "ring", proto)
    return base_latency("ring", proto) + (nsteps - n_inter) * intra_lat + n_inter * inter_lat


def ring(op: Op, nbytes: float, f: CommFabric, proto: Proto, *, estimate: bool = False) -> Cost:
    """NCCL ring cost for all-reduce, reduce-scatter, all-gather, broadcast and reduce."""
    if op in (Op.ALLTOALL, Op.SENDRECV):
        raise Unsupported(f"ring does not implement {op.value}: use the direct algorithm")
    p = f.nranks
    if p == 1:
        return trivial(op, nbytes, f, proto)
    if proto is Proto.LL128:
        require_ll128(f)
    bw, bottleneck = f.memo("ring_bandwidth", lambda: ring_bandwidth(f))
    tuner_bw = f.memo(("ring_proto_bw", proto), lambda: ring_proto_bw(f, proto, bw))
    chain = op in (Op.BROADCAST, Op.REDUCE)
    nsteps = p if chain else (2 * (p - 1) if op is Op.ALL_REDUCE else p - 1)
    volume = nbytes if chain else nsteps / p * nbytes
    tuner_lat = ring_tuner_latency(op, nbytes, f, proto)
    if estimate:
        return estimate_cost(
            op, "ring", proto, nbytes, f, tuner_lat, volume / tuner_bw, nsteps, bottleneck
        )
    tuner_time = tuner_lat + volume / tuner_bw
    # NCCL's traffic per byte of the *per-rank* count (enqueue.cc ncclFuncTrafficPerByte: 2 for
    # all-reduce, nRanks for all-gather and reduce-scatter); nbytes here is the whole buffer, so
    # all-gather and reduce-scatter move it once.
    traffic = 2 if op is Op.ALL_REDUCE else 1
    nc = channels_used(nbytes, proto, f.channels, ring_ll_ranks=p, traffic_per_byte=traffic)
    base = base_latency("ring", proto)
    if chain:
        # PipelineFrom/To: a chain from the root, one FIFO step per chunk (collectives.h). The
        # channels take the ring in different orders, so a chunk's later hops do not queue
        # behind other channels' first ones: inside a domain the chain fills at its per-hop
        # latencies (streams), as 8-GPU broadcasts measured on A100 (superbench) and B200 (MIT
        # ORCD) show — a chunk-by-chunk chain would be 2-3x slower there. Its network hops
        # are store-and-forward, as in every ring (`net_hop`): NCCL's proxy sends a step only
        # once the GPU has written all of it.
        per_channel = nbytes / nc
        items = pieces(per_channel, chunk_bytes(op, proto))
        path = ring_hops(f, proto, nc, window=NCCL_STEPS)
        net = path[-1] if f.n_domains > 1 else None
        path = [replace(h, count=h.count - (h is path[-1]), streaming=h is not net) for h in path]
        latency, bw_time = chain_time(
            items=items, slice_bytes=per_channel / items, path=path, base=base
        )
    else:
        plan = ring_chunking(op, proto, nbytes, nranks=p, channels=nc)
        per_slice = SLICE_STEPS.get(op, 1) if proto is Proto.SIMPLE else 1
        hops = ring_hops(f, proto, nc, window=NCCL_STEPS // per_slice)
        latency, bw_time = ring_time(
            steps=plan.loops * nsteps,
            slices=plan.slices,
            slice_bytes=plan.slice,
            hops=hops,
            base=base,
        )
    return Cost(op, "ring", proto, nbytes, p, latency, bw_time, nsteps, bottleneck, tuner_time, nc)
