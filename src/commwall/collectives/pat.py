"""PAT — Parallel Aggregated Trees (NCCL 2.23+; Jeaugey, arXiv:2506.20252).

A Bruck/binomial-like all-gather and reduce-scatter for any rank count with ``log2(N)`` network
steps at small sizes. NCCL enables it only with exactly one GPU per node, Simple protocol, AG/RS
(nccl#1473, nccl#1594). Model (``tuning.cc`` v2.30; latencies in µs)::

    lat = 8 + ⌊log2 N⌋·interLat/3.5 + 2.8·nRanks
    T   = lat + S / (0.75·B_net)

NCCL converts no algBw for non-ring all-gather/reduce-scatter, so the bandwidth term is the full
``S`` over 0.75 of the per-rank network bandwidth. That is the tuner's estimate; the time charges
the same latency and the ``(N−1)/N·S`` bytes each rank really sends at its NIC's rate.
"""

from __future__ import annotations

from commwall.collectives.constants import PAT_EFFICIENCY, Hw, Proto
from commwall.collectives.cost import Cost, Unsupported, base_latency, step_latency
from commwall.collectives.fabric import CommFabric
from commwall.collectives.ops import Op

#: PAT's per-rank latency term, 2.8 µs per rank (``tuning.cc``).
PAT_PER_RANK_LAT = 2.8e-6


def pat(op: Op, nbytes: float, f: CommFabric, proto: Proto, *, estimate: bool = False) -> Cost:
    """PAT all-gather / reduce-scatter at one rank per node."""
    if op not in (Op.ALL_GATHER, Op.REDUCE_SCATTER):
        raise Unsupported(f"PAT implements all_gather and reduce_scatter only, not {op.value}")
    if f.ranks_per_domain != 1:
        raise Unsupported("PAT runs with exactly one GPU per node")
    if f.n_domains <= 1:
        raise Unsupported("PAT needs several nodes")
    if proto is not Proto.SIMPLE:
        raise Unsupported("PAT runs the Simple protocol only")
    n = f.n_domains
    depth = n.bit_length() - 1  # NCCL's log2i: floor
    latency = (
        base_latency("pat", proto)
        + depth * step_latency(f, Hw.NET, "pat", proto) / 3.5
        + PAT_PER_RANK_LAT * n
    )
    tuner_time = latency + nbytes / (PAT_EFFICIENCY * f.net_bw_per_rank)
    # Time: each rank sends (and receives) the other ranks' shards once over its NIC; the
    # 0.75 above is NCCL's selection penalty, not a loss of wire rate.
    bw_time = (n - 1) / n * nbytes / f.net_bw_per_rank
    return Cost(
        op,
        "pat",
        proto,
        nbytes,
        n,
        latency,
        bw_time,
        max(1, depth),
        Hw.NET.value,
        tuner_time,
        f.channels,
    )
