"""Topology metrics: closed forms for structured builders, graph algorithms for small or generic ones.

Each metric dispatches on ``topo.path_fn``: a :class:`ClosStructure` or :class:`DragonflyStructure`
answers from its few integers (fast at 100k endpoints); anything else falls back to a graph
algorithm (BFS, max-flow), fine up to a few thousand nodes. The ``*_bfs`` / ``*_maxflow`` variants
always use the graph; tests hold the two to the same answer on small instances.

Hops count links between two endpoints (host link included): 2 on one leaf, 4 within a pod,
6 across pods of a 3-tier fat tree.

>>> from commwall.topology import fat_tree
>>> t = fat_tree(4)
>>> diameter(t), path_diversity(t)
(6, {'same leaf': 1, 'same pod': 2, 'different pods': 4})
>>> bisection_bandwidth(t) == bisection_bandwidth_maxflow(t) == 8 * 50e9
True
"""

from __future__ import annotations

from collections import deque

import numpy as np
import numpy.typing as npt

from commwall.topology.clos import ClosStructure
from commwall.topology.dragonfly import DragonflyStructure
from commwall.topology.graph import Topology, TopologyError

__all__ = [
    "average_hops",
    "average_hops_bfs",
    "bisection_bandwidth",
    "bisection_bandwidth_maxflow",
    "diameter",
    "diameter_bfs",
    "oversubscription_per_tier",
    "path_diversity",
    "path_diversity_bfs",
]

_CLOS_LEVELS = {1: "same leaf", 2: "same pod", 3: "different pods"}
_MAX_BFS_WORK = 50_000_000  # endpoints x nodes: beyond this a BFS over all sources is too slow


def _side_a(topo: Topology, side_a: npt.ArrayLike | None) -> npt.NDArray[np.bool_]:
    """Mask over endpoints (in ``endpoints()`` order).

    Default: half of the endpoints. On a Clos the half is made of whole leaves, in leaf order,
    so at most one leaf is split: a cut through many leaves would count their local traffic as
    crossing and overstate a tapered fabric's bisection. Elsewhere the first half by index.
    """
    n = len(topo.endpoints())
    if side_a is None:
        if isinstance(topo.path_fn, ClosStructure):
            order = np.argsort(topo.path_fn.endpoint_leaf, kind="stable")
            mask = np.zeros(n, dtype=bool)
            mask[order[: n // 2]] = True
            return mask
        return np.arange(n) < n // 2
    mask = np.asarray(side_a, dtype=bool)
    if mask.shape != (n,):
        raise TopologyError(f"side_a: need one bool per endpoint ({n}), got shape {mask.shape}")
    return mask


# ---- bisection -----------------------------------------------------------------------------


def bisection_bandwidth(topo: Topology, side_a: npt.ArrayLike | None = None) -> float:
    """Bytes/s that one half of the endpoints can push to the other half (one direction).

    Halves: ``side_a`` (bool per endpoint) or half of the endpoints made of whole leaves (Clos)
    or whole groups (dragonfly, by numbering), which splits pods or SUs down the middle — the
    worst case for them. Closed form for Clos builders: greedy matching up the tiers,
    each tier capped by its uplink capacity (exact max-flow on a tree of aggregated tiers; N/2 ×
    link rate when non-blocking). Dragonfly: min(N/2 × host rate, ⌊g/2⌋·⌈g/2⌉·m × global rate),
    the global-channel bisection of Kim et al. ISCA'08 (exact for group-aligned halves: g even).
    Others: :func:`bisection_bandwidth_maxflow`.
    """
    s = topo.path_fn
    if isinstance(s, ClosStructure):
        return _clos_bisection(topo, s, _side_a(topo, side_a))
    if isinstance(s, DragonflyStructure) and side_a is None:
        hosts = s.n_hosts // 2 * float(topo.link_capacity[0])
        if s.g < 2:
            return hosts if s.a == 1 else bisection_bandwidth_maxflow(topo)
        glob = topo.link_capacity[topo.link_kind == 3]
        rate = float(glob[0]) if len(glob) else 0.0
        return min(hosts, (s.g // 2) * (s.g - s.g // 2) * s.parallel * rate)
    return bisection_bandwidth_maxflow(topo, side_a)


def _clos_bisection(topo: Topology, s: ClosStructure, in_a: npt.NDArray[np.bool_]) -> float:
    e, n_leaves = s.n_endpoints, s.n_leaves
    access = topo.link_capacity[0 : 2 * e : 2]
    supply = np.bincount(s.endpoint_leaf, weights=access * in_a, minlength=n_leaves)
    demand = np.bincount(s.endpoint_leaf, weights=access * ~in_a, minlength=n_leaves)
    local = np.minimum(supply, demand)
    flow = float(local.sum())
    if s.spines_per_pod == 0:
        return flow
    ls = topo.link_capacity[2 * e : 2 * (e + s.leaf_spine_cables) : 2]
    leaf_up = ls.reshape(n_leaves, -1).sum(axis=1)
    supply = np.minimum(supply - local, leaf_up)
    demand = np.minimum(demand - local, leaf_up)
    pod = s.leaf_pod()
    supply = np.bincount(pod, weights=supply, minlength=s.n_pods)
    demand = np.bincount(pod, weights=demand, minlength=s.n_pods)
    local = np.minimum(supply, demand)
    flow += float(local.sum())
    if s.cores_per_plane == 0:
        return flow
    base = e + s.leaf_spine_cables
    sc = topo.link_capacity[2 * base : 2 * (base + s.spine_core_cables) : 2]
    pod_up = sc.reshape(s.n_pods, -1).sum(axis=1)
    supply = np.minimum(supply - local, pod_up)
    demand = np.minimum(demand - local, pod_up)
    return flow + float(min(supply.sum(), demand.sum()))


def bisection_bandwidth_maxflow(topo: Topology, side_a: npt.ArrayLike | None = None) -> float:
    """Max flow (bytes/s) from the ``side_a`` endpoints to the others over the whole graph
    (networkx preflow-push). Parallel links add up. For small instances (a few thousand nodes)."""
    ends = topo.endpoints()
    in_a = _side_a(topo, side_a)
    import networkx as nx  # type: ignore[import-untyped]  # (imported here: ~11 MiB, rarely used)

    keys, cap = _cable_capacity(topo)
    g = nx.DiGraph()
    for (u, v), c in zip(keys.tolist(), cap.tolist(), strict=True):
        g.add_edge(u, v, capacity=c)
    source, sink = "source", "sink"
    for node, a in zip(ends.tolist(), in_a.tolist(), strict=True):
        if a:
            g.add_edge(source, node)  # no capacity attribute: unbounded
        else:
            g.add_edge(node, sink)
    if source not in g or sink not in g:
        return 0.0
    unit = float(topo.link_capacity.max()) / 1e9  # the integer capacities' unit, bytes/s
    return float(nx.maximum_flow_value(g, source, sink)) * unit


def _cable_capacity(topo: Topology) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Directed (src, dst) pairs and their summed capacity as integers (units of max/1e9) so the
    max-flow runs in exact integer arithmetic."""
    key = topo.link_src.astype(np.int64) * topo.n_nodes + topo.link_dst
    uniq, inverse = np.unique(key, return_inverse=True)
    scale = float(topo.link_capacity.max()) / 1e9 if topo.n_links else 1.0
    cap = np.bincount(inverse, weights=topo.link_capacity / scale)
    pairs = np.stack([uniq // topo.n_nodes, uniq % topo.n_nodes], axis=1)
    return pairs, np.rint(cap).astype(np.int64)


# ---- hops ----------------------------------------------------------------------------------


def _clos_levels(s: ClosStructure) -> dict[int, int]:
    """Pairs per level for the levels the fabric routes (drops unroutable ones, e.g. rail-only)."""
    return {lv: n for lv, n in s.pair_counts().items() if n and s.routes_at_level(lv)}


def diameter(topo: Topology) -> int:
    """Most links on a route between two endpoints (over the routed pairs; MIN routes for a
    dragonfly). Closed form for structured builders, BFS otherwise."""
    s = topo.path_fn
    if isinstance(s, ClosStructure):
        return 2 * max(_clos_levels(s), default=0)
    if isinstance(s, DragonflyStructure):
        return s.diameter()
    return diameter_bfs(topo)


def average_hops(topo: Topology) -> float:
    """Mean links on a route over ordered pairs of distinct, routed endpoints (MIN routes for a
    dragonfly). Closed form for structured builders, BFS otherwise."""
    s = topo.path_fn
    if isinstance(s, ClosStructure):
        levels = _clos_levels(s)
        total = sum(levels.values())
        return sum(2 * lv * n for lv, n in levels.items()) / total if total else 0.0
    if isinstance(s, DragonflyStructure):
        return s.average_hops()
    return average_hops_bfs(topo)


def _endpoint_distances(topo: Topology) -> npt.NDArray[np.float64]:
    ends = topo.endpoints()
    if len(ends) * topo.n_nodes > _MAX_BFS_WORK:
        raise TopologyError(
            f"{len(ends):,} endpoints x {topo.n_nodes:,} nodes is too large for BFS; build it with "
            "a structured builder (closed forms) or measure a smaller instance"
        )
    from scipy.sparse import csr_matrix  # type: ignore[import-untyped]  # (imported here: ~21 MiB)
    from scipy.sparse.csgraph import shortest_path  # type: ignore[import-untyped]

    adj = csr_matrix(
        (np.ones(topo.n_links), (topo.link_src, topo.link_dst)), shape=(topo.n_nodes,) * 2
    )
    dist = shortest_path(adj, unweighted=True, indices=ends)
    return np.asarray(dist[:, ends], dtype=np.float64)


def diameter_bfs(topo: Topology) -> int:
    """Graph diameter over endpoint pairs that are connected (BFS)."""
    d = _endpoint_distances(topo)
    finite = d[np.isfinite(d)]
    return int(finite.max()) if len(finite) else 0


def average_hops_bfs(topo: Topology) -> float:
    """Mean shortest-path links over ordered pairs of distinct connected endpoints (BFS)."""
    d = _endpoint_distances(topo)
    np.fill_diagonal(d, np.inf)
    finite = d[np.isfinite(d)]
    return float(finite.mean()) if len(finite) else 0.0


# ---- path diversity ------------------------------------------------------------------------


def path_diversity(topo: Topology) -> dict[str, int]:
    """Routes between two endpoints by how far apart they are.

    Clos: ``same leaf`` 1, ``same pod`` S·m², ``different pods`` S·m²·C·n² (k/2 and (k/2)² in a
    k-ary fat tree, Al-Fares §3); parallel cables count as distinct routes. Dragonfly (MIN):
    ``same group`` 1, ``different groups`` = global links per group pair. Other topologies: the
    fewest and most shortest paths over endpoint pairs (``min``/``max``, BFS).
    """
    s = topo.path_fn
    if isinstance(s, ClosStructure):
        return {_CLOS_LEVELS[lv]: s.routes_at_level(lv) for lv in _clos_levels(s)}
    if isinstance(s, DragonflyStructure):
        out = {"same group": 1}
        if s.g > 1:
            out["different groups"] = s.parallel
        return out
    counts = path_diversity_bfs(topo)
    values = [c for c in counts.values() if c > 0]
    return {"min": min(values, default=0), "max": max(values, default=0)}


def path_diversity_bfs(topo: Topology) -> dict[tuple[int, int], int]:
    """Number of shortest paths (parallel links distinct) for every ordered pair of distinct
    endpoints, by BFS path counting. Small graphs only."""
    ends = topo.endpoints()
    if len(ends) * topo.n_links > _MAX_BFS_WORK:
        raise TopologyError(f"{len(ends):,} endpoints: too large for BFS path counting")
    out_links: list[list[int]] = [[] for _ in range(topo.n_nodes)]
    for u, v in zip(topo.link_src.tolist(), topo.link_dst.tolist(), strict=True):
        out_links[u].append(v)
    is_end = topo.node_tier == 0
    result: dict[tuple[int, int], int] = {}
    for src in ends.tolist():
        dist = {src: 0}
        sigma = {src: 1}
        queue = deque([src])
        while queue:
            u = queue.popleft()
            if is_end[u] and u != src:
                continue  # endpoints do not forward
            for v in out_links[u]:
                if v not in dist:
                    dist[v] = dist[u] + 1
                    sigma[v] = 0
                    queue.append(v)
                if dist[v] == dist[u] + 1:
                    sigma[v] += sigma[u]
        for dst in ends.tolist():
            if dst != src:
                result[(src, dst)] = sigma.get(dst, 0)
    return result


# ---- oversubscription ----------------------------------------------------------------------


def oversubscription_per_tier(topo: Topology) -> dict[int, float]:
    """Downlink / uplink capacity of each switch tier that has uplinks (o for o:1), from the
    cables actually built: a partly filled leaf counts only its attached endpoints. Empty for
    flat topologies (dragonfly)."""
    src, dst = topo.link_src[0::2], topo.link_dst[0::2]
    lo = np.minimum(topo.node_tier[src], topo.node_tier[dst])
    hi = np.maximum(topo.node_tier[src], topo.node_tier[dst])
    cap = topo.link_capacity[0::2]
    out: dict[int, float] = {}
    for tier in sorted({int(t) for t in hi if t >= 1}):
        down = float(cap[(hi == tier) & (lo < tier)].sum())
        up = float(cap[(lo == tier) & (hi > tier)].sum())
        if up > 0 and down > 0:
            out[tier] = down / up
    return out
