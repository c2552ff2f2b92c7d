"""PAT — Parallel Aggregated Trees (NCCL 2.23+; Jeaugey, arXiv:2506.20252).

A Bruck/binomial-like all-gather and reduce-scatter for any rank count with ``log2(N)`` network
steps at small sizes. NCCL enables it only with exactly one GPU per node, Simple protocol, AG/RS
(nccl#1473, nccl#1594). Model (``tuning.cc`` v2.30; latencies in µs)::

    lat = 8 + ⌊log2 N⌋·interLat/3.5 + 2.8·nRanks
    T   = lat + S / (0.75·B_net)

NCCL converts no algBw for non-ring all-gather/reduce-scatter, so the bandwidth term is the full
``S`` over 0.75 of the per-rank network bandwidth.
"""

from __future__ import annotations

from commwall.collectives.constants import PAT_EFFICIENCY, Hw, Proto
from commwall.collectives.cost import Cost, base_latency, require, step_latency
from commwall.collectives.fabric import CommFabric
from commwall.collectives.ops import Op

#: PAT's per-rank latency term, 2.8 µs per rank (``tuning.cc``).
PAT_PER_RANK_LAT = 2.8e-6


def pat(op: Op, nbytes: float, f: CommFabric, proto: Proto) -> Cost:
    """PAT all-gather / reduce-scatter at one rank per node."""
    require(
        op in (Op.ALL_GATHER, Op.REDUCE_SCATTER),
        f"PAT implements all_gather and reduce_scatter only, not {op.value}",
    )
    require(f.ranks_per_domain == 1, "PAT runs with exactly one GPU per node")
    require(f.n_domains > 1, "PAT needs several nodes")
    require(proto is Proto.SIMPLE, "PAT runs the Simple protocol only")
    n = f.n_domains
    depth = n.bit_length() - 1  # NCCL's log2i: floor
    latency = (
        base_latency("pat", proto)
        + depth * step_latency(f, Hw.NET, "pat", proto) / 3.5
        + PAT_PER_RANK_LAT * n
    )
    bw_time = nbytes / (PAT_EFFICIENCY * f.net_bw_per_rank)
    return Cost(op, "pat", proto, nbytes, n, latency, bw_time, max(1, depth), Hw.NET.value)
