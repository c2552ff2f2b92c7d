"""How many copies of a token the MoE dispatch sends: NCCL all-to-all vs DeepEP and HybridEP.

**All-to-all** (Megatron-Core's ``--moe-token-dispatcher-type alltoall``,
``MoEAlltoAllTokenDispatcher``): the router's ``top_k`` choices replicate each token once per
chosen expert before the all-to-all, so a token travels ``top_k`` times, one copy per expert,
wherever those experts sit; the combine returns as many.

**DeepEP and HybridEP** (``--moe-token-dispatcher-type flex --moe-flex-dispatcher-backend
deepep|hybridep``; Megatron-Core's MoE README: DeepEP "removes redundant tokens during
cross-node communication"): a token goes once to each *rank* that holds one of its experts,
and across domains once to each *domain* (DeepEP's internode kernels send one RDMA copy per
destination node with a bitmask of the ranks there that need it, ``SourceMeta``'s
``is_token_in_nvl_rank_bits`` in ``csrc/kernels/internode.cu``, and forward it over NVLink;
HybridEP does the same over a multi-node NVLink domain). The combine sums a token's expert
outputs on the way back the same way, so it carries as many copies as the dispatch.

:func:`dispatch_share` is the ratio of the two on the tier that bounds the exchange: the
scale-up links when the EP group sits in one domain (units: its ranks), the scale-out links
when it spans several (units: its domains). With routing uniform over the experts — what the
published benchmarks force (``moe_router_force_load_balancing``: random router logits) — a
token's expected remote copies are ``top_k·(u−1)/u`` under the all-to-all and
``D·(u−1)/u`` deduplicated over ``u`` units, where ``D`` is the expected number of distinct
units its experts fall in (:func:`units_reached`), so the share is ``D / top_k``.

Group-limited routing (DeepSeek-V3's node-limited routing, §2.1.2 of its report: each token
goes to at most ``group_topk`` of ``expert_groups`` groups; Hugging Face ``n_group`` and
``topk_group``, Megatron-Core's ``--moe-router-num-groups`` and ``--moe-router-group-topk``,
``group_limited_topk`` in ``megatron/core/transformer/moe/moe_utils.py``) first picks
``group_topk`` groups, then ``top_k`` experts among theirs; both picks are taken uniform.
"""

from __future__ import annotations

import functools
import math
from typing import Final, Literal

Dispatcher = Literal["alltoall", "deepep", "hybridep"]
#: Ranks DeepEP reaches over NVLink (``NUM_MAX_NVL_PEERS`` in DeepEP's ``csrc/kernels/
#: configs.cuh``): its internode kernels treat each 8 ranks as one NVLink node, whatever the
#: scale-up domain; HybridEP takes the whole NVLink domain (multi-node NVLink included).
DEEPEP_NVL_PEERS: Final = 8


def _none_chosen(pool: int, blocked: int, k: int) -> float:
    """P(``k`` draws without replacement from ``pool`` experts miss ``blocked`` of them):
    ``C(pool − blocked, k) / C(pool, k)``, through log-gamma to stay finite."""
    if blocked <= 0:
        return 1.0
    if pool - blocked < k:
        return 0.0
    return math.exp(
        math.lgamma(pool - blocked + 1)
        - math.lgamma(pool - blocked - k + 1)
        - math.lgamma(pool + 1)
        + math.lgamma(pool - k + 1)
    )


@functools.lru_cache(maxsize=1024)
def units_reached(
    n_experts: int, top_k: int, unit_experts: tuple[int, ...], groups: int = 1, group_topk: int = 1
) -> float:
    """Expected number of distinct units a token's ``top_k`` experts fall in.

    The experts ``0 … n_experts−1`` are split, in order, into units of ``unit_experts`` experts
    each (a rank's, or a domain's, contiguous as Megatron-Core places them) and into
    ``groups`` equal groups; a token picks ``group_topk`` groups, then ``top_k`` of their
    experts, each uniformly. A unit is missed when no chosen expert lies in it: summing over
    which of the groups it overlaps were chosen (counted by their number and the unit's experts
    they hold), ``P(miss) = Σ N(a, c) · C(G−m, T−a)/C(G, T) · C(n−c, k)/C(n, k)`` with ``m``
    the groups the unit overlaps, ``n = T·E/G`` the chosen groups' experts and ``N(a, c)`` the
    subsets of ``a`` overlapping groups holding ``c`` of the unit's experts.
    """
    if sum(unit_experts) != n_experts or min(unit_experts) < 1:
        raise ValueError(f"units {unit_experts} do not split {n_experts} experts")
    if n_experts % groups or not 1 <= group_topk <= groups:
        raise ValueError(f"{groups} groups, top {group_topk}, of {n_experts} experts")
    size = n_experts // groups
    pool = group_topk * size
    if top_k > pool:
        raise ValueError(f"top_k {top_k} exceeds the {pool} experts of {group_topk} groups")
    total = math.comb(groups, group_topk)
    reached, start = 0.0, 0
    for width in unit_experts:
        end = start + width
        overlaps = [
            min(end, (g + 1) * size) - max(start, g * size)
            for g in range(start // size, (end - 1) // size + 1)
        ]
        # subsets of the overlapped groups: (how many, the unit's experts they hold) → count
        counts: dict[tuple[int, int], int] = {(0, 0): 1}
        for o in overlaps:
            grown = dict(counts)
            for (a, c), n in counts.items():
                grown[(a + 1, c + o)] = grown.get((a + 1, c + o), 0) + n
            counts = grown
        others = groups - len(overlaps)
        miss = 0.0
        for (a, c), n in counts.items():
            if a <= group_topk and group_topk - a <= others:
                ways = n * math.comb(others, group_topk - a) / total
                miss += ways * _none_chosen(pool, c, top_k)
        reached += 1.0 - miss
        start = end
    return reached


def dispatch_units(ranks: int, per_domain: int, dispatcher: Dispatcher) -> tuple[int, int]:
    """(units, ranks per unit) the deduplicating ``dispatcher`` sends to once per token: the
    EP group's domains when it spans several (DeepEP's at most :data:`DEEPEP_NVL_PEERS` ranks),
    else its ranks."""
    if dispatcher == "deepep":
        per_domain = min(per_domain, DEEPEP_NVL_PEERS)
    per_domain = max(1, min(per_domain, ranks))
    if per_domain >= ranks:
        return ranks, 1
    return math.ceil(ranks / per_domain), per_domain


def dispatch_share(
    dispatcher: Dispatcher,
    *,
    n_experts: int,
    top_k: int,
    ranks: int,
    per_domain: int,
    groups: int = 1,
    group_topk: int = 1,
) -> float:
    """Bytes ``dispatcher`` moves per byte of Megatron-Core's all-to-all on the tier that bounds
    an EP group of ``ranks`` ranks, ``per_domain`` to a scale-up domain (module doc): 1 for
    ``alltoall``, ``D / top_k`` for DeepEP and HybridEP."""
    if dispatcher == "alltoall" or ranks <= 1:
        return 1.0
    n_units, per_unit = dispatch_units(ranks, per_domain, dispatcher)
    experts_per_rank = n_experts // ranks
    widths = [experts_per_rank * min(per_unit, ranks - u * per_unit) for u in range(n_units)]
    return units_reached(n_experts, top_k, tuple(widths), groups, group_topk) / top_k
