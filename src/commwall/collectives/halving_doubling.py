"""Recursive halving-doubling (Rabenseifner) for any rank count.

Thakur, Rabenseifner & Gropp, IJHPCA 19(1) 2005: a reduce-scatter by recursive halving then an
all-gather by recursive doubling, ``2·lg p`` steps and ``2(p−1)/p·S`` bytes per rank — as many
bytes as a ring with logarithmically many latencies. For ``p`` not a power of two, the ``r = p − 2^⌊lg p⌋``
extra ranks first hand their whole vector to a partner and get the result back at the end
(two more steps of ``S`` bytes), which gives the closed form
``(2⌊lg p⌋ + 2)α + (2(p−1)/p + 2)·S·β`` when ``p' = 2^⌊lg p⌋`` (the paper's bound, using ``p``).

This implementation is topology aware in one way NCCL-style layouts reward: the reduce-scatter
exchanges the *largest* halves with the *nearest* partners (distance 1, 2, 4, …), so the big steps
stay on NVLink and only ``S/g``-sized steps cross the network; the all-gather mirrors it. Each
step costs NCCL's ring per-step latency of the hardware class it crosses plus bytes over that
class's per-rank bandwidth (one partner at a time, every rank of a domain on its own NIC).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from commwall.collectives.constants import Hw, Proto
from commwall.collectives.cost import (
    Cost,
    Unsupported,
    base_latency,
    ring_proto_bw,
    step_latency,
    trivial,
)
from commwall.collectives.fabric import CommFabric
from commwall.collectives.ops import Op

_SUPPORTED = (Op.ALL_REDUCE, Op.REDUCE_SCATTER, Op.ALL_GATHER, Op.BROADCAST, Op.REDUCE)


@lru_cache(maxsize=4096)
def _crosses(p: int, g: int, distance: int) -> bool:
    """Whether some exchange of the step at ``distance`` joins two domains (rank ``i`` in domain
    ``i // g``). ``distance`` 0 is the fold: extra rank ``2j`` into ``2j + 1`` (MPICH's pre-step
    for ``p`` not a power of two); the butterfly then runs on survivor ``q`` = rank ``2q + 1``
    for ``q < r`` and ``q + r`` above, so its pairs are labelled from those ranks."""
    extra = p - (1 << (p.bit_length() - 1))
    if distance == 0:
        ex = 2 * np.arange(extra, dtype=np.int64)
        return bool(np.any(ex // g != (ex + 1) // g))
    q = np.arange(p - extra, dtype=np.int64)
    partner = q ^ distance
    a = np.where(q < extra, 2 * q + 1, q + extra)
    b = np.where(partner < extra, 2 * partner + 1, partner + extra)
    return bool(np.any(a // g != b // g))


def _step_hw(f: CommFabric, distance: int) -> Hw:
    """Class a step at ``distance`` crosses: the network when any of its pairs straddles a
    domain boundary (the step waits for its slowest pair), else scale-up."""
    if f.n_domains == 1 or not _crosses(f.nranks, f.ranks_per_domain, distance):
        return f.intra_hw
    return Hw.NET


def halving_doubling_steps(op: Op, nbytes: float, f: CommFabric) -> list[tuple[float, Hw]]:
    """(bytes per rank, hardware class) of every step, in order."""
    p = f.nranks
    k = p.bit_length() - 1
    extra = p - (1 << k)
    pair_hw = _step_hw(f, 0)
    halving = [(nbytes / (1 << (j + 1)), _step_hw(f, 1 << j)) for j in range(k)]
    steps: list[tuple[float, Hw]] = []
    if extra and op is not Op.ALL_GATHER:
        steps.append((nbytes, pair_hw))  # extra ranks fold their vector into a partner
    if op is not Op.ALL_GATHER:
        steps.extend(halving)  # reduce-scatter (or the scatter half of a broadcast)
    if op is not Op.REDUCE_SCATTER:
        steps.extend(reversed(halving))  # all-gather mirrors it
    if extra and op is not Op.REDUCE_SCATTER:
        steps.append((nbytes, pair_hw))  # and hands the result back
    if extra and op is Op.REDUCE_SCATTER:
        steps.append((nbytes / p, pair_hw))
    if extra and op is Op.ALL_GATHER:
        steps.insert(0, (nbytes / p, pair_hw))
    return steps


def halving_doubling(
    op: Op, nbytes: float, f: CommFabric, proto: Proto, *, estimate: bool = False
) -> Cost:
    """Rabenseifner all-reduce (and its halves for RS/AG; scatter+allgather broadcast)."""
    if op not in _SUPPORTED:
        raise Unsupported(f"halving-doubling does not implement {op.value}")
    p = f.nranks
    if p == 1:
        return trivial(op, nbytes, f, proto)
    bw = {
        f.intra_hw: ring_proto_bw(f, proto, f.intra_bw) if f.ranks_per_domain > 1 else 0.0,
        Hw.NET: ring_proto_bw(f, proto, f.net_bw_per_rank) if f.n_domains > 1 else 0.0,
    }
    latency = base_latency("ring", proto)
    bw_time = 0.0
    net_time = 0.0
    steps = halving_doubling_steps(op, nbytes, f)
    for size, hw in steps:
        latency += step_latency(f, hw, "ring", proto)
        bw_time += size / bw[hw]
        if hw is Hw.NET:
            net_time += size / bw[hw]
    bottleneck = Hw.NET.value if net_time > bw_time / 2 else f.intra_hw.value
    return Cost(op, "halving_doubling", proto, nbytes, p, latency, bw_time, len(steps), bottleneck)
