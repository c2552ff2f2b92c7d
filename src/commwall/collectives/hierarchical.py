"""Hierarchical (2-D) collectives: scale-up first, then one network collective per rail.

All-reduce = ring reduce-scatter inside each domain (``g`` ranks over NVLink) → ring all-reduce
of ``S/g`` across the ``N`` domains on every rail in parallel (one NIC per rank) → ring all-gather
inside each domain (``shared/reference/nccl-model.md`` §6; Mikami et al. 2018 for the 2-D form).
Reduce-scatter and all-gather use the same two stages. The stages run one after the other, so the
time is the sum of three ring costs, each with its own launch latency.
"""

from __future__ import annotations

from commwall.collectives.constants import Proto
from commwall.collectives.cost import Cost, Unsupported, trivial
from commwall.collectives.fabric import CommFabric
from commwall.collectives.ops import Op
from commwall.collectives.ring import ring


def hierarchical(
    op: Op, nbytes: float, f: CommFabric, proto: Proto, *, estimate: bool = False
) -> Cost:
    """Two-level all-reduce / reduce-scatter / all-gather."""
    if op not in (Op.ALL_REDUCE, Op.REDUCE_SCATTER, Op.ALL_GATHER):
        raise Unsupported(f"hierarchical does not implement {op.value}")
    p, g, n_dom = f.nranks, f.ranks_per_domain, f.n_domains
    if p == 1:
        return trivial(op, nbytes, f, proto)
    if not (n_dom > 1 and g > 1):
        raise Unsupported("hierarchical needs several domains with several ranks each")
    local = f.sub(n_domains=1)
    rail = f.sub(ranks_per_domain=1)
    if op is Op.ALL_REDUCE:
        parts = [
            ring(Op.REDUCE_SCATTER, nbytes, local, proto),
            ring(Op.ALL_REDUCE, nbytes / g, rail, proto),
            ring(Op.ALL_GATHER, nbytes, local, proto),
        ]
    elif op is Op.REDUCE_SCATTER:
        parts = [
            ring(Op.REDUCE_SCATTER, nbytes, local, proto),
            ring(Op.REDUCE_SCATTER, nbytes / g, rail, proto),
        ]
    else:
        parts = [
            ring(Op.ALL_GATHER, nbytes / g, rail, proto),
            ring(Op.ALL_GATHER, nbytes, local, proto),
        ]
    slowest = max(parts, key=lambda c: c.bw_time)
    return Cost(
        op,
        "hierarchical",
        proto,
        nbytes,
        p,
        sum(c.latency for c in parts),
        sum(c.bw_time for c in parts),
        sum(c.steps for c in parts),
        slowest.bottleneck,
        sum(c.selection_time for c in parts),
        max(c.channels for c in parts),
    )
