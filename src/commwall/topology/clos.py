"""The folded-Clos layout shared by the fat-tree, leaf–spine, rail-optimized and rail-only builders.

A :class:`ClosStructure` describes a Clos of up to three switch tiers in a few integers, and answers
equal-cost routes and metrics without touching the graph:

* endpoints ``0..E-1`` (NICs), each on one leaf (``endpoint_leaf``);
* leaves in pods of ``leaves_per_pod``; each leaf has ``leaf_parallel`` cables to each of its pod's
  ``spines_per_pod`` spines (0 spines: leaves only, as in a small rail-only fabric);
* spine ``j`` of every pod belongs to plane ``j`` and has ``spine_parallel`` cables to each of the
  plane's ``cores_per_plane`` cores (0: no core tier). This is the k-ary fat tree of Al-Fares,
  Loukissas and Vahdat, "A Scalable, Commodity Data Center Network Architecture", SIGCOMM 2008,
  generalised to tapered tiers, partial pods and parallel cables (NVIDIA DGX SuperPOD wiring).

Node numbering: endpoints, then leaves, then spines pod by pod, then cores plane by plane.
Cable numbering: access cables (cable ``e`` joins endpoint ``e`` to its leaf), then leaf–spine
cables ordered (leaf, spine, copy), then spine–core cables ordered (pod, spine, core, copy); cable
``c`` is links ``2c`` (up) and ``2c+1`` (down).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from commwall.topology import _checks as ck
from commwall.topology.graph import IntArray, LinkKind, Medium, NodeKind, Topology, TopologyError

__all__ = ["ClosStructure", "build_clos"]


@dataclass(frozen=True, eq=False)
class ClosStructure:
    """A folded Clos in a few integers (see the module doc); implements ``PathOracle``."""

    endpoint_leaf: IntArray
    n_leaves: int
    leaves_per_pod: int
    spines_per_pod: int
    leaf_parallel: int
    cores_per_plane: int
    spine_parallel: int

    # ---- sizes -----------------------------------------------------------------------------

    @property
    def n_endpoints(self) -> int:
        return len(self.endpoint_leaf)

    @property
    def n_pods(self) -> int:
        return -(-self.n_leaves // self.leaves_per_pod)

    @property
    def n_spines(self) -> int:
        return self.n_pods * self.spines_per_pod

    @property
    def n_cores(self) -> int:
        return self.spines_per_pod * self.cores_per_plane

    @property
    def switch_tiers(self) -> int:
        """Switch tiers built: 1 (leaves only), 2 (leaf–spine) or 3 (with cores)."""
        return 1 if self.spines_per_pod == 0 else 2 if self.cores_per_plane == 0 else 3

    @property
    def leaf_spine_cables(self) -> int:
        return self.n_leaves * self.spines_per_pod * self.leaf_parallel

    @property
    def spine_core_cables(self) -> int:
        return self.n_spines * self.cores_per_plane * self.spine_parallel

    def leaf_pod(self) -> IntArray:
        """Pod of each leaf."""
        return np.arange(self.n_leaves, dtype=np.int64) // self.leaves_per_pod

    # ---- routes (PathOracle) ---------------------------------------------------------------

    def _level(self, a: int, b: int) -> int:
        """0 same endpoint, 1 same leaf, 2 same pod, 3 different pods."""
        if a == b:
            return 0
        la, lb = int(self.endpoint_leaf[a]), int(self.endpoint_leaf[b])
        if la == lb:
            return 1
        return 2 if la // self.leaves_per_pod == lb // self.leaves_per_pod else 3

    def routes_at_level(self, level: int) -> int:
        """Equal-cost routes between two endpoints whose lowest common tier is ``level``."""
        if level <= 1:
            return 1
        same_pod = self.spines_per_pod * self.leaf_parallel**2
        if level == 2:
            return same_pod
        return same_pod * self.cores_per_plane * self.spine_parallel**2

    def count(self, src: int, dst: int) -> int:
        """Shortest routes from endpoint ``src`` to ``dst``: 1 on one leaf, S·m² in one pod,
        S·m²·C·n² across pods (k/2 and (k/2)² in a k-ary fat tree, Al-Fares §3)."""
        self._check_endpoint("src", src)
        self._check_endpoint("dst", dst)
        return self.routes_at_level(self._level(src, dst))

    def links(self, src: int, dst: int, index: int) -> IntArray:
        """Link indices of route ``index``: digits of ``index`` pick spine, copies, core."""
        level = self._level(src, dst)
        if level == 0:
            return np.empty(0, dtype=np.int64)
        if self.routes_at_level(level) == 0:
            raise TopologyError(f"no route from endpoint {src} to {dst} in this fabric")
        e, m1, m2 = self.n_endpoints, self.leaf_parallel, self.spine_parallel
        s1, c1 = self.spines_per_pod, self.cores_per_plane
        if level == 1:
            return np.array([2 * src, 2 * dst + 1], dtype=np.int64)
        la, lb = int(self.endpoint_leaf[src]), int(self.endpoint_leaf[dst])
        i = index
        if level == 3:
            i, y = divmod(i, m2)
            i, x = divmod(i, m2)
            i, c = divmod(i, c1)
        i, w = divmod(i, m1)
        j, u = divmod(i, m1)
        up1 = e + (la * s1 + j) * m1 + u
        down1 = e + (lb * s1 + j) * m1 + w
        if level == 2:
            return np.array([2 * src, 2 * up1, 2 * down1 + 1, 2 * dst + 1], dtype=np.int64)
        base = e + self.leaf_spine_cables
        pa, pb = la // self.leaves_per_pod, lb // self.leaves_per_pod
        up2 = base + ((pa * s1 + j) * c1 + c) * m2 + x
        down2 = base + ((pb * s1 + j) * c1 + c) * m2 + y
        return np.array(
            [2 * src, 2 * up1, 2 * up2, 2 * down2 + 1, 2 * down1 + 1, 2 * dst + 1], dtype=np.int64
        )

    def _check_endpoint(self, name: str, value: int) -> None:
        if not 0 <= value < self.n_endpoints:
            raise TopologyError(
                f"{name}={value}: not an endpoint; endpoints are 0..{self.n_endpoints - 1}"
            )

    # ---- metrics helpers -------------------------------------------------------------------

    def pair_counts(self) -> dict[int, int]:
        """Ordered pairs of distinct endpoints per level (1 same leaf, 2 same pod, 3 other pod)."""
        per_leaf = np.bincount(self.endpoint_leaf, minlength=self.n_leaves).astype(np.int64)
        per_pod = np.bincount(self.leaf_pod(), weights=per_leaf, minlength=self.n_pods)
        e = self.n_endpoints
        same_leaf = int((per_leaf * (per_leaf - 1)).sum())
        same_pod = int((per_pod * (per_pod - 1)).sum())
        return {1: same_leaf, 2: same_pod - same_leaf, 3: e * (e - 1) - same_pod}


def build_clos(
    name: str,
    structure: ClosStructure,
    *,
    link_rate: float,
    switch_latency: float,
    params: dict[str, Any],
) -> Topology:
    """Lay out the arrays of ``structure`` (vectorised: O(cables) numpy, no Python loop per node)."""
    s = structure
    e, n_leaves = s.n_endpoints, s.n_leaves
    leaf0 = e
    spine0 = leaf0 + n_leaves
    core0 = spine0 + s.n_spines
    n_nodes = core0 + s.n_cores
    tier = np.zeros(n_nodes, dtype=np.int8)
    tier[leaf0:spine0], tier[spine0:core0], tier[core0:] = 1, 2, 3
    kind = np.full(n_nodes, NodeKind.SWITCH.code, dtype=np.int8)
    kind[:e] = NodeKind.NIC.code
    leaf_pod = s.leaf_pod()
    group = np.concatenate(
        [
            leaf_pod[s.endpoint_leaf],
            leaf_pod,
            np.repeat(np.arange(s.n_pods), s.spines_per_pod),
            np.repeat(np.arange(s.spines_per_pod), s.cores_per_plane),  # plane of each core
        ]
    ).astype(np.int32)

    # leaf–spine cables, ordered (leaf, spine, copy)
    per_leaf = s.spines_per_pod * s.leaf_parallel
    ls_leaf = np.repeat(np.arange(n_leaves), per_leaf)
    ls_j = np.tile(np.repeat(np.arange(s.spines_per_pod), s.leaf_parallel), n_leaves)
    ls_spine = spine0 + leaf_pod[ls_leaf] * s.spines_per_pod + ls_j
    # spine–core cables, ordered (pod, spine, core, copy)
    per_spine = s.cores_per_plane * s.spine_parallel
    sc_spine = np.repeat(np.arange(s.n_spines), per_spine)
    sc_core = (sc_spine % max(s.spines_per_pod, 1)) * s.cores_per_plane + np.tile(
        np.repeat(np.arange(s.cores_per_plane), s.spine_parallel), s.n_spines
    )
    cable_a = np.concatenate([np.arange(e), leaf0 + ls_leaf, spine0 + sc_spine])
    cable_b = np.concatenate([leaf0 + s.endpoint_leaf, ls_spine, core0 + sc_core])
    sizes = (e, len(ls_leaf), len(sc_spine))
    length = np.repeat([ck.ACCESS_LENGTH_M, ck.LEAF_SPINE_LENGTH_M, ck.SPINE_CORE_LENGTH_M], sizes)
    medium = np.repeat([Medium.COPPER, Medium.FIBRE, Medium.FIBRE], sizes)
    s_per_m = np.repeat([ck.COPPER_S_PER_M, ck.FIBRE_S_PER_M, ck.FIBRE_S_PER_M], sizes)
    link_kind = np.repeat([LinkKind.ACCESS, LinkKind.UP, LinkKind.UP], sizes)
    topo = Topology.from_cables(
        name,
        node_kind=kind,
        node_tier=tier,
        node_group=group,
        cable_a=cable_a,
        cable_b=cable_b,
        capacity=link_rate,
        latency=length * s_per_m,
        length_m=length,
        medium=medium,
        kind=link_kind,
        params={
            **params,
            "endpoints": e,
            "leaves": n_leaves,
            "spines": s.n_spines,
            "cores": s.n_cores,
            "pods": s.n_pods,
            "tiers": s.switch_tiers,
            "link_rate": link_rate,
            "switch_latency": switch_latency,
        },
        path_fn=s,
    )
    return topo.validate()


def spread(n_links: int, n_targets_needed: int) -> tuple[int, int]:
    """(targets, parallel): spread ``n_links`` uplinks evenly over the fewest targets >=
    ``n_targets_needed`` that divide them (SuperPOD: 32 uplinks over 4, 8 or 16 spines)."""
    targets = ck.smallest_divisor_at_least(n_links, n_targets_needed)
    return targets, n_links // targets


def as_index(values: npt.ArrayLike) -> IntArray:
    """An int64 index array."""
    return np.asarray(values, dtype=np.int64)
