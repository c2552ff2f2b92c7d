"""Where a job's communicators land on the cluster.

Ranks are ordered tensor-parallel fastest, then context-parallel, then data-parallel, then
pipeline stage (Megatron-Core's default order ``tp-cp-dp-pp``; with ``cp = 1`` Megatron-LM's
``tp-dp-pp``), and packed into scale-up domains of ``D`` consecutive GPUs. A
communicator of ``size`` ranks at ``stride`` then spans ``ceil(size / g)`` domains with
``g = min(size, D // stride)`` ranks in each (at least 1). A group that does not fill its last
domain (dp 12 on 8-GPU domains: 8 + 4) is modelled as full domains (2 × 8), which overstates its
rank count; a :class:`Group` holds one shape, and this keeps the per-domain bandwidth of the
full domains.
"""

from __future__ import annotations

import functools
import math

from commwall.collectives.schedule import Group, Placement
from commwall.workload.errors import WorkloadError


def group_shape(name: str, size: int, stride: int, domain: int) -> Group:
    """The :class:`Group` of a communicator of ``size`` ranks, ``stride`` apart, domains of ``domain``."""
    if size < 1 or stride < 1 or domain < 1:
        raise WorkloadError(f"group {name!r}: size, stride and domain must be >= 1")
    per_domain = max(1, min(size, domain // stride))
    return Group(name, math.ceil(size / per_domain), per_domain)


def pipeline_peer_group(tp: int, dp: int, domain: int, stage: int = 0) -> Group:
    """The two-rank group between pipeline stages ``stage`` and ``stage + 1``.

    Stage ``s`` holds ranks ``[s·k, (s+1)·k)`` with ``k = tp × dp``, and rank ``r`` sends to
    ``r + k``. That pair leaves its scale-up domain when a multiple of ``domain`` lies in
    ``(r, r + k]``; the boundary counts as cross-domain when any of its pairs does.

    >>> [pipeline_peer_group(1, 4, 8, s).n_domains for s in range(3)]  # 8-GPU domains
    [1, 2, 1]
    """
    if tp < 1 or dp < 1 or domain < 1 or stage < 0:
        raise WorkloadError("pipeline peers: tp, dp and domain must be >= 1 and stage >= 0")
    k = tp * dp
    lo, hi = stage * k + 1, (stage + 2) * k - 1  # every r + 1 … r + k over the stage's ranks
    if hi // domain * domain >= lo:  # a domain boundary falls inside
        return Group("pp", 2, 1)
    return Group("pp", 1, 2)


@functools.lru_cache(maxsize=4096)
def megatron_placement(size: int, stride: int, span: int, offset: int = 0) -> Placement:
    """Every copy of a ``size``-rank communicator at ``stride`` inside ranks ``[offset, offset+span)``.

    In Megatron's mixed-radix rank order a copy starts at each rank ``b`` of the span whose digit
    ``(b − offset) // stride mod size`` is 0; its members follow at ``stride``. A pipeline stage
    of ``tp × dp`` ranks holds ``dp`` TP copies (stride 1) and ``tp`` DP copies (stride ``tp``).

    >>> megatron_placement(2, 4, 16).members().tolist()  # dp 2 at tp 4, a stage of 16 ranks
    [[0, 4], [1, 5], [2, 6], [3, 7], [8, 12], [9, 13], [10, 14], [11, 15]]
    """
    if size < 1 or stride < 1 or span < size * stride or span % (size * stride) or offset < 0:
        raise WorkloadError(
            f"placement of {size} ranks at stride {stride} does not tile a span of {span}"
        )
    # digit 0 of each block of size × stride ranks: its first `stride` ranks
    block = size * stride
    bases = tuple(offset + b + j for b in range(0, span, block) for j in range(stride))
    return Placement(size, stride, 1, bases)
