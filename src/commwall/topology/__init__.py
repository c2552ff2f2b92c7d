"""Topologies: pure builder functions returning a :class:`Topology`, and metrics on them.

>>> from commwall.topology import fat_tree, bisection_bandwidth
>>> t = fat_tree(8)
>>> t.counts().endpoints, bisection_bandwidth(t) / 50e9  # N/2 x link rate when non-blocking
(128, 64.0)
"""

from commwall.topology.clos import ClosStructure
from commwall.topology.dragonfly import DragonflyStructure, dragonfly
from commwall.topology.fat_tree import fat_tree, leaf_spine, rail_only, rail_optimized
from commwall.topology.graph import (
    LinkKind,
    Medium,
    NodeKind,
    PathOracle,
    Topology,
    TopologyCounts,
    TopologyError,
)
from commwall.topology.io import from_edge_list, from_graphml
from commwall.topology.metrics import (
    average_hops,
    bisection_bandwidth,
    bisection_bandwidth_maxflow,
    diameter,
    oversubscription_per_tier,
    path_diversity,
)

__all__ = [
    "ClosStructure",
    "DragonflyStructure",
    "LinkKind",
    "Medium",
    "NodeKind",
    "PathOracle",
    "Topology",
    "TopologyCounts",
    "TopologyError",
    "average_hops",
    "bisection_bandwidth",
    "bisection_bandwidth_maxflow",
    "diameter",
    "dragonfly",
    "fat_tree",
    "from_edge_list",
    "from_graphml",
    "leaf_spine",
    "oversubscription_per_tier",
    "path_diversity",
    "rail_only",
    "rail_optimized",
]
