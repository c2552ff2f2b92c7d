"""Where a job's communicators land on the cluster.

Ranks are ordered tensor-parallel fastest, then data-parallel, then pipeline stage (Megatron-LM's
default order ``tp-dp-pp``), and packed into scale-up domains of ``D`` consecutive GPUs. A
communicator of ``size`` ranks at ``stride`` then spans ``ceil(size / g)`` domains with
``g = min(size, D // stride)`` ranks in each (at least 1).
"""

from __future__ import annotations

import math

from commwall.collectives.schedule import Group


def group_shape(name: str, size: int, stride: int, domain: int) -> Group:
    """The :class:`Group` of a communicator of ``size`` ranks, ``stride`` apart, domains of ``domain``."""
    if size < 1 or stride < 1 or domain < 1:
        raise ValueError(f"group {name!r}: size, stride and domain must be >= 1")
    per_domain = max(1, min(size, domain // stride))
    return Group(name, math.ceil(size / per_domain), per_domain)


def pipeline_peer_group(tp: int, dp: int, domain: int) -> Group:
    """The two-rank group between adjacent pipeline stages (``tp × dp`` ranks apart)."""
    if tp * dp < domain:
        return Group("pp", 1, 2)
    return Group("pp", 2, 1)
