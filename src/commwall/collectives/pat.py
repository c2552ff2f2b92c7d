"""PAT — Parallel Aggregated Trees (NCCL 2.23+; Jeaugey, arXiv:2506.20252).

A Bruck/binomial-like all-gather and reduce-scatter for any rank count with ``log2(N)`` network
steps at small sizes. NCCL enables it only with exactly one GPU per node, Simple protocol, AG/RS
(nccl#1473, nccl#1594). Model (``tuning.cc`` v2.30)::

    T = 8 µs + log2(N)·interLat/3.5 + (N−1)/N·S / (0.75·B_net)

NCCL adds a ``2.8·n`` µs term whose unit we could not confirm from the source text; it is left
out (see ``shared/reference/nccl-model.md`` §6).
"""

from __future__ import annotations

from commwall.collectives.constants import PAT_EFFICIENCY, Hw, Proto
from commwall.collectives.cost import Cost, base_latency, require, step_latency
from commwall.collectives.fabric import CommFabric
from commwall.collectives.ops import Op


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
    latency = (
        base_latency("pat", proto) + f.log2_domains * step_latency(f, Hw.NET, "pat", proto) / 3.5
    )
    bw_time = (n - 1) / n * nbytes / (PAT_EFFICIENCY * f.net_bw_per_rank)
    return Cost(
        op, "pat", proto, nbytes, n, latency, bw_time, max(1, round(f.log2_domains)), Hw.NET.value
    )
