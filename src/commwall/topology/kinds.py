"""A scale-out fabric from its kind's name: the one place a name becomes a builder call, used by
``commwall topology``, ``traffic``, ``packet`` and the fault models (through the command's
options) and by :meth:`commwall.cluster.Cluster.scale_out_topology` (through a cluster's
``topology.kind``, a subset of these kinds: :data:`commwall.scenario.TOPOLOGY_KINDS`).

>>> build_fabric("leaf-spine", nodes=8, radix=8).counts().switches
{1: 2, 2: 1}
"""

from __future__ import annotations

from typing import Any

from commwall.scenario import FABRIC_KINDS
from commwall.topology.dragonfly import dragonfly, dragonfly_plus
from commwall.topology.fat_tree import Taper, fat_tree, leaf_spine, rail_only, rail_optimized
from commwall.topology.graph import Topology, TopologyError

__all__ = ["FABRIC_KINDS", "build_fabric"]


def build_fabric(
    kind: str,
    *,
    nodes: int | None = None,
    rails: int = 8,
    radix: int = 64,
    tiers: int | None = None,
    oversubscription: Taper | None = None,
    a: int | None = None,
    p: int | None = None,
    h: int | None = None,
    g: int | None = None,
    arrangement: str = "consecutive",
    l_leaves: int | None = None,
    s_spines: int | None = None,
    **physics: Any,
) -> Topology:
    """The fabric of ``kind`` (one of :data:`FABRIC_KINDS`).

    ``nodes``: hosts of a fat tree or leaf–spine (all the radix allows when None), servers of a
    rail design (each with ``rails`` NICs; required). ``tiers``: a fat tree's (default 3; 2 is a
    leaf–spine) or a rail-optimized fabric's (default: the fewest that hold it).
    ``oversubscription``: o for o:1 at the leaf, or one per tier from the leaf up (default 1).
    ``a, p, h, g, arrangement``: a dragonfly's; ``p, l_leaves, s_spines, h, g``: a
    dragonfly+'s. ``physics``: ``link_rate`` and ``switch_latency``.
    """
    if kind == "dragonfly":
        if a is None or p is None or h is None:
            raise TopologyError("dragonfly: a, p and h are required (routers per group, hosts "
                                "per router, global links per router)")  # fmt: skip
        return dragonfly(a, p, h, g, arrangement, **physics)  # type: ignore[arg-type]
    if kind == "dragonfly-plus":
        if p is None or l_leaves is None or s_spines is None or h is None:
            raise TopologyError("dragonfly-plus: p, l_leaves, s_spines and h are required")
        return dragonfly_plus(p, l_leaves, s_spines, h, g, arrangement, **physics)  # type: ignore[arg-type]
    if kind == "fat-tree":
        t = 3 if tiers is None else tiers
        o = 1.0 if oversubscription is None else oversubscription
        return fat_tree(radix, t, o, endpoints=nodes, **physics)
    first = _first(oversubscription)
    if kind == "leaf-spine":
        return leaf_spine(radix, nodes, first, **physics)
    if kind not in FABRIC_KINDS:
        raise TopologyError(f"kind: {kind!r} is unknown; allowed: {', '.join(FABRIC_KINDS)}")
    if nodes is None:
        raise TopologyError(f"{kind}: nodes is required (servers, each with {rails} NICs)")
    if kind == "rail-optimized":
        o = 1.0 if oversubscription is None else oversubscription
        return rail_optimized(nodes, rails, radix, o, tiers, **physics)
    return rail_only(nodes, rails, radix, first, **physics)


def _first(oversubscription: Taper | None) -> float:
    """The leaf tier's taper (1 when none is given)."""
    if oversubscription is None:
        return 1.0
    if isinstance(oversubscription, int | float):
        return float(oversubscription)
    return float(next(iter(oversubscription), 1.0))
