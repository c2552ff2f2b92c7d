"""Ring algorithms: NCCL's flat ring across NVLink and the network.

All-reduce is a ring reduce-scatter followed by a ring all-gather (Patarasuk & Yuan, JPDC 69(2)
2009): ``2(p−1)`` steps, each rank sends ``2(p−1)/p·S`` bytes — the lower bound for any
point-to-point all-reduce, so ring busbw equals the ring's bottleneck bandwidth. NCCL's latency
model (``tuning.cc`` v2.30, ``shared/reference/nccl-model.md`` §4.8)::

    T = baseLat + (nsteps − nInter)·intraLat + nInter·interLat + volume / B

with ``nInter = 2(N−1)`` network steps for all-reduce (``N−1`` for RS/AG) and
``B = min(intra_bw, g·net_bw)`` across domains: every channel's ring crosses each domain boundary
once, so the domain's NICs together carry what one NVLink hop carries.

>>> from commwall.collectives.constants import Gen, Hw, Proto
>>> f = CommFabric(1, 8, 300e9, Hw.NVLINK, 0.0, Gen.HOPPER)
>>> round(ring(Op.ALL_REDUCE, 2**30, f, Proto.SIMPLE).busbw / 1e9)
299
"""

from __future__ import annotations

from commwall.collectives.constants import RING_SIMPLE_PLATEAU, Gen, Hw, Proto
from commwall.collectives.cost import (
    Cost,
    base_latency,
    require,
    ring_proto_bw,
    step_latency,
    trivial,
)
from commwall.collectives.fabric import CommFabric
from commwall.collectives.ops import Op


def ring_bandwidth(f: CommFabric) -> tuple[float, str]:
    """The ring's bottleneck bandwidth (bytes/s) and which hardware class sets it."""
    if f.n_domains == 1:
        return f.intra_bw, f.intra_hw.value
    if f.ranks_per_domain == 1:
        return f.net_bw_per_rank, Hw.NET.value
    if f.node_net_bw < f.intra_bw:
        return f.node_net_bw, Hw.NET.value
    return f.intra_bw, f.intra_hw.value


def ring(op: Op, nbytes: float, f: CommFabric, proto: Proto) -> Cost:
    """NCCL ring cost for all-reduce, reduce-scatter, all-gather, broadcast and reduce."""
    require(
        op not in (Op.ALLTOALL, Op.SENDRECV),
        f"ring does not implement {op.value}: use the direct algorithm",
    )
    p, n_dom = f.nranks, f.n_domains
    if p == 1:
        return trivial(op, nbytes, f, proto)
    bw, bottleneck = ring_bandwidth(f)
    bw = ring_proto_bw(f, proto, bw)
    if op in (Op.BROADCAST, Op.REDUCE):
        # Pipelined chain; NCCL charges one hop of latency (sameChannels), Simple uses the Tree column.
        hw = Hw.NET if n_dom > 1 else f.intra_hw
        column = "tree" if proto is Proto.SIMPLE else "ring"
        latency = base_latency("ring", proto) + step_latency(f, hw, column, proto)
        return Cost(op, "ring", proto, nbytes, p, latency, nbytes / bw, p, bottleneck)

    all_reduce = op is Op.ALL_REDUCE
    nsteps = 2 * (p - 1) if all_reduce else p - 1
    n_inter = 0 if n_dom == 1 else (2 * (n_dom - 1) if all_reduce else n_dom - 1)
    intra_lat = step_latency(f, f.intra_hw, "ring", proto)
    if n_dom > 1:
        intra_lat = max(intra_lat, f.net_overhead * (3 if proto is Proto.SIMPLE else 1))
    inter_lat = step_latency(f, Hw.NET, "ring", proto)
    latency = base_latency("ring", proto) + (nsteps - n_inter) * intra_lat + n_inter * inter_lat
    if all_reduce and n_dom > 1 and proto is Proto.SIMPLE and nbytes / (f.channels * p) >= 64:
        latency *= 1.9 if f.gen is Gen.VOLTA else RING_SIMPLE_PLATEAU
    volume = nsteps / p * nbytes
    return Cost(op, "ring", proto, nbytes, p, latency, volume / bw, nsteps, bottleneck)
