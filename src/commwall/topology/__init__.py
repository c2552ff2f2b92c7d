"""Topologies: pure builder functions returning a :class:`Topology`, and metrics on them.

>>> from commwall.topology import fat_tree, bisection_bandwidth
>>> t = fat_tree(8)
>>> t.counts().endpoints, bisection_bandwidth(t) / 50e9  # N/2 x link rate when non-blocking
(128, 64.0)
"""

from commwall.topology.clos import ClosStructure
from commwall.topology.dragonfly import (
    DragonflyPlusStructure,
    DragonflyStructure,
    dragonfly,
    dragonfly_plus,
)
from commwall.topology.fat_tree import (
    fat_tree,
    leaf_spine,
    rail_only,
    rail_optimized,
    rail_optimized_tiers,
)
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
from commwall.topology.kinds import FABRIC_KINDS, build_fabric
from commwall.topology.metrics import (
    average_hops,
    bisection_bandwidth,
    bisection_bandwidth_maxflow,
    diameter,
    oversubscription_per_tier,
    path_diversity,
)
from commwall.topology.scale_up import (
    NVSwitchStructure,
    PathType,
    ScaleUpFacts,
    nccl_path_type,
    nvl72,
    nvlink_domain,
    nvlink_node,
    pcie_node,
    pcie_tree,
    scale_up_facts,
)

__all__ = [
    "FABRIC_KINDS",
    "ClosStructure",
    "DragonflyPlusStructure",
    "DragonflyStructure",
    "LinkKind",
    "Medium",
    "NVSwitchStructure",
    "NodeKind",
    "PathOracle",
    "PathType",
    "ScaleUpFacts",
    "Topology",
    "TopologyCounts",
    "TopologyError",
    "average_hops",
    "bisection_bandwidth",
    "bisection_bandwidth_maxflow",
    "build_fabric",
    "diameter",
    "dragonfly",
    "dragonfly_plus",
    "fat_tree",
    "from_edge_list",
    "from_graphml",
    "leaf_spine",
    "nccl_path_type",
    "nvl72",
    "nvlink_domain",
    "nvlink_node",
    "oversubscription_per_tier",
    "path_diversity",
    "pcie_node",
    "pcie_tree",
    "rail_only",
    "rail_optimized",
    "rail_optimized_tiers",
    "scale_up_facts",
]
