"""Folded-Clos builders: leaf–spine, k-ary fat tree, rail-optimized and rail-only fabrics.

Pure functions, like networkx generators: parameters in, a validated :class:`Topology` out, with
an analytic :class:`~commwall.topology.clos.ClosStructure` as ``path_fn`` so equal-cost routes
never need a graph search. Formulas: topology.md §1–3.

>>> t = fat_tree(4)
>>> c = t.counts()
>>> c.endpoints, c.total_switches  # k³/4 hosts, 5k²/4 switches (Al-Fares et al. SIGCOMM'08)
(16, 20)
>>> t.path_count(0, 15)  # hosts in different pods: (k/2)² routes
4
>>> leaf_spine(8).counts().endpoints  # R²/2
32
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from commwall.checks import whole
from commwall.topology import _checks as ck
from commwall.topology.clos import ClosStructure, build_clos, spread
from commwall.topology.graph import Topology, TopologyError

__all__ = ["fat_tree", "leaf_spine", "rail_only", "rail_optimized", "rail_optimized_tiers"]

Taper = float | Sequence[float]


#: Most hosts a Clos is built with: 4,194,304 (a radix-256 three-tier fat tree); a full radix-
#: 100,000 fat tree would need petabytes before the first link.
MAX_ENDPOINTS = 1 << 22
#: Most ports a switch may have here (the largest ASICs have 512).
MAX_RADIX = 1024


def _even_radix(name: str, value: object, what: str) -> int:
    r = whole(
        name, value, 4, why="a switch needs at least 2 ports down and 2 up", error=TopologyError
    )
    if r > MAX_RADIX:
        raise TopologyError(
            f"{name}={r:,}: at most {MAX_RADIX:,} ports per switch (the largest ASICs have 512)"
        )
    if r % 2:
        raise TopologyError(
            f"{name}={r}: {name} must be even: {what} splits each switch's {name} ports half "
            f"down, half up; use {r - 1} or {r + 1}"
        )
    return r


def _tapers(value: Taper, n: int) -> tuple[float, ...]:
    """Oversubscription per tier from a number (leaf tier only) or a sequence (one per tier)."""
    if isinstance(value, int | float):
        values = [value] + [1.0] * (n - 1)
    else:
        values = list(value)
        if len(values) != n:
            raise TopologyError(
                f"oversubscription={tuple(values)!r}: give {n} ratio(s), one per switch tier "
                "below the top (leaf, then spine), e.g. (3.0, 1.0)"
            )
    return tuple(
        ck.check_ratio("oversubscription" if n == 1 else f"oversubscription[{i}]", v)
        for i, v in enumerate(values)
    )


def _endpoints(value: int | None, maximum: int, what: str, fix: str) -> int:
    if value is None:
        if maximum > MAX_ENDPOINTS:
            raise TopologyError(
                f"{what} holds {maximum:,} hosts; commwall builds at most {MAX_ENDPOINTS:,}: "
                "give the endpoints (--nodes) or use a smaller radix"
            )
        return maximum
    e = whole("endpoints", value, 1, error=TopologyError)
    if e > MAX_ENDPOINTS:
        raise TopologyError(f"endpoints={e:,}: commwall builds at most {MAX_ENDPOINTS:,} hosts")
    if e > maximum:
        raise TopologyError(f"endpoints={e}: {what} holds at most {maximum:,}; {fix}")
    return e


def _two_tier(endpoint_leaf: np.ndarray, n_leaves: int, radix: int, up: int) -> ClosStructure:
    """One pod: leaves spread their ``up`` uplinks evenly over the fewest spines that fit."""
    if n_leaves == 1:
        spines, parallel = 0, 0
    else:
        spines, parallel = spread(up, -(-n_leaves * up // radix))
    return ClosStructure(
        endpoint_leaf=np.asarray(endpoint_leaf, dtype=np.int64),
        n_leaves=n_leaves,
        leaves_per_pod=n_leaves,
        spines_per_pod=spines,
        leaf_parallel=parallel,
        cores_per_plane=0,
        spine_parallel=0,
    )


def _three_tier(
    endpoint_leaf: np.ndarray, n_leaves: int, radix: int, up1: int, down2: int, up2: int
) -> ClosStructure:
    """Pods of ``down2`` leaves and ``up1`` spines (one cable each); spine j of each pod to the
    cores of plane j, spread over the fewest cores that fit (Al-Fares §3 at full size)."""
    pods = -(-n_leaves // down2)
    if pods == 1:
        cores, parallel = 0, 0
    else:
        cores, parallel = spread(up2, -(-pods * up2 // radix))
    return ClosStructure(
        endpoint_leaf=np.asarray(endpoint_leaf, dtype=np.int64),
        n_leaves=n_leaves,
        leaves_per_pod=down2,
        spines_per_pod=up1,
        leaf_parallel=1,
        cores_per_plane=cores,
        spine_parallel=parallel,
    )


def leaf_spine(
    radix: int,
    endpoints: int | None = None,
    oversubscription: float = 1.0,
    link_rate: str | float = ck.DEFAULT_LINK_RATE,
    switch_latency: str | float = ck.DEFAULT_SWITCH_LATENCY,
) -> Topology:
    """A 2-tier leaf–spine (folded Clos) of ``radix``-port switches.

    Non-blocking it holds R²/2 endpoints on R leaves and R/2 spines (3R/2 switches; NVIDIA
    Cumulus docs, topology.md §1). With an o:1 taper a leaf uses R·o/(o+1) ports down and
    R/(o+1) up. Fewer ``endpoints`` use fewer leaves, and leaves spread their uplinks over the
    fewest spines that fit, with parallel cables (as DGX SuperPOD does).

    >>> t = leaf_spine(64)
    >>> t.counts().endpoints, t.counts().switches
    (2048, {1: 64, 2: 32})
    """
    r = _even_radix("radix", radix, "a non-blocking leaf–spine")
    (o,) = _tapers(oversubscription, 1)
    down, up = ck.split_ports(r, o)
    e = _endpoints(
        endpoints,
        r * down,
        f"a 2-tier leaf–spine of radix-{r} switches at {o:g}:1",
        f"use fat_tree(k={r}, tiers=3), a larger radix or more oversubscription",
    )
    leaves = -(-e // down)
    structure = _two_tier(np.arange(e) // down, leaves, r, up)
    params = {"kind": "leaf-spine", "radix": r, "oversubscription": (o,)}
    return build_clos(
        f"leaf-spine R={r} {e} endpoints",
        structure,
        link_rate=ck.check_rate("link_rate", link_rate),
        switch_latency=ck.check_time("switch_latency", switch_latency),
        params=params,
    )


def fat_tree(
    k: int,
    tiers: int = 3,
    oversubscription: Taper = (1.0, 1.0),
    endpoints: int | None = None,
    link_rate: str | float = ck.DEFAULT_LINK_RATE,
    switch_latency: str | float = ck.DEFAULT_SWITCH_LATENCY,
) -> Topology:
    """A k-ary fat tree (Al-Fares, Loukissas, Vahdat, SIGCOMM 2008): k pods of k/2 edge and k/2
    aggregation switches, (k/2)² core switches; k³/4 hosts and 5k²/4 switches when non-blocking.

    ``oversubscription`` is (leaf, spine) o:1 tapers (a number tapers the leaf tier only); a
    tapered tier uses k·o/(o+1) ports down. ``tiers=2`` is :func:`leaf_spine`. Fewer
    ``endpoints`` fill pods in order; a single pod gets no core tier.

    >>> fat_tree(48).counts().switches  # 5k²/4 = 2,880: 2,304 edge+agg + 576 core
    {1: 1152, 2: 1152, 3: 576}
    """
    k = _even_radix("k", k, "a k-ary fat tree")
    if tiers not in (2, 3):
        raise TopologyError(
            f"tiers={tiers!r}: must be 2 (leaf–spine) or 3 (k-ary fat tree); 3 tiers of "
            f"radix-{k} switches already hold {k**3 // 4:,} hosts"
        )
    if tiers == 2:
        if isinstance(oversubscription, int | float):
            taper = float(oversubscription)
        else:  # (leaf,) or (leaf, spine): the spine is the top tier here, so no taper applies
            values = list(oversubscription)
            taper = _tapers(values, len(values) if 1 <= len(values) <= 2 else 2)[0]
        return leaf_spine(k, endpoints, taper, link_rate, switch_latency)
    o1, o2 = _tapers(oversubscription, 2)
    down1, up1 = ck.split_ports(k, o1, "oversubscription[0]")
    down2, up2 = ck.split_ports(k, o2, "oversubscription[1]")
    e = _endpoints(
        endpoints,
        k * down2 * down1,
        f"a 3-tier fat tree of radix-{k} switches at {o1:g}:1/{o2:g}:1",
        "use a larger k or more oversubscription",
    )
    leaves = -(-e // down1)
    structure = _three_tier(np.arange(e) // down1, leaves, k, up1, down2, up2)
    params = {"kind": "fat-tree", "radix": k, "k": k, "oversubscription": (o1, o2)}
    return build_clos(
        f"fat-tree k={k} {e} hosts",
        structure,
        link_rate=ck.check_rate("link_rate", link_rate),
        switch_latency=ck.check_time("switch_latency", switch_latency),
        params=params,
    )


def rail_optimized(
    nodes: int,
    rails: int = 8,
    radix: int = 64,
    oversubscription: Taper = 1.0,
    tiers: int | None = None,
    link_rate: str | float = ck.DEFAULT_LINK_RATE,
    switch_latency: str | float = ck.DEFAULT_SWITCH_LATENCY,
) -> Topology:
    """A rail-optimized Clos (NVIDIA DGX SuperPOD, topology.md §2): NIC ``i`` of every node in a
    scalable unit (SU) sits on leaf ``i`` of that SU, so same-rail traffic is one switch hop.

    An SU is as many nodes as a leaf has ports down (32 DGX at radix 64). Spines join the leaves
    of all SUs; when the leaves outnumber a spine's ports (more than 8 SUs at radix 64) a third
    (core) tier joins pods of leaves, as in the DGX B200 SuperPOD. ``tiers`` forces 2 or 3.
    Endpoint ``node * rails + rail`` is that node's NIC on that rail.

    >>> c = rail_optimized(127).counts()  # 4 SU DGX H100 SuperPOD (Table 4)
    >>> c.switches, c.cables[2]
    ({1: 32, 2: 16}, 1024)
    """
    n = whole("nodes", nodes, 1, error=TopologyError)
    rails = whole("rails", rails, 1, error=TopologyError)
    r = _even_radix("radix", radix, "a non-blocking Clos")
    o = _tapers(oversubscription, 1 if isinstance(oversubscription, int | float) else 2)
    o1, o2 = (o[0], 1.0) if len(o) == 1 else o
    down1, up1 = ck.split_ports(r, o1, "oversubscription")
    down2, up2 = ck.split_ports(r, o2, "oversubscription[1]")
    sus = -(-n // down1)
    leaves = rails * sus
    if tiers is None:
        tiers = rail_optimized_tiers(n, rails, r, o1)
    if tiers not in (2, 3):  # one tier cannot join the rails: that is rail_only()
        raise TopologyError(f"tiers={tiers!r}: must be 2, 3 or None (choose automatically)")
    max_leaves = r if tiers == 2 else r * down2
    if leaves > max_leaves:
        most = max_leaves // rails * down1
        raise TopologyError(
            f"nodes={n}: {sus} scalable units of {down1} nodes need {leaves} leaves, but "
            f"{tiers} tiers of radix-{r} switches join at most {max_leaves} ({most:,} nodes at "
            f"{rails} rails); use "
            + ("tiers=3" if tiers == 2 and leaves <= r * down2 else "a larger radix")
        )
    node = np.repeat(np.arange(n), rails)
    rail = np.tile(np.arange(rails), n)
    endpoint_leaf = (node // down1) * rails + rail
    if tiers == 2:
        structure = _two_tier(endpoint_leaf, leaves, r, up1)
    else:
        structure = _three_tier(endpoint_leaf, leaves, r, up1, down2, up2)
    params = {
        "kind": "rail-optimized",
        "radix": r,
        "nodes": n,
        "rails": rails,
        "nodes_per_su": down1,
        "scalable_units": sus,
        "oversubscription": (o1, o2) if tiers == 3 else (o1,),
    }
    return build_clos(
        f"rail-optimized {n} nodes x {rails} rails",
        structure,
        link_rate=ck.check_rate("link_rate", link_rate),
        switch_latency=ck.check_time("switch_latency", switch_latency),
        params=params,
    )


def rail_optimized_tiers(nodes: int, rails: int, radix: int, oversubscription: float) -> int:
    """The tiers :func:`rail_optimized` builds when not told: 2 (rail leaves and spines) while
    the leaves fit one spine's ports, else 3. Never 1: the spines are what join the rails.

    >>> rail_optimized_tiers(1, 8, 64, 1.0), rail_optimized_tiers(256, 8, 64, 1.0)
    (2, 2)
    >>> rail_optimized_tiers(257, 8, 64, 1.0)
    3
    """
    down1, _ = ck.split_ports(radix, oversubscription)
    return 2 if rails * -(-nodes // down1) <= radix else 3


def rail_only(
    nodes: int,
    rails: int = 8,
    radix: int = 64,
    oversubscription: float = 1.0,
    link_rate: str | float = ck.DEFAULT_LINK_RATE,
    switch_latency: str | float = ck.DEFAULT_SWITCH_LATENCY,
) -> Topology:
    """A rail-only fabric (Wang, Ghobadi et al., arXiv:2307.12169): one network per rail and no
    spine joining rails. A rail of at most ``radix`` nodes is one switch; a bigger rail is its own
    2-tier leaf–spine. Cross-rail traffic is out of this scale-out graph: it is first forwarded
    over NVLink inside the node (``path_count`` is 0 for NICs on different rails).

    >>> t = rail_only(32)
    >>> t.counts().switches, t.path_count(0, 8), t.path_count(0, 1)
    ({1: 8}, 1, 0)
    """
    n = whole("nodes", nodes, 1, error=TopologyError)
    rails = whole("rails", rails, 1, error=TopologyError)
    r = _even_radix("radix", radix, "a rail's leaf–spine")
    (o,) = _tapers(oversubscription, 1)
    node = np.repeat(np.arange(n), rails)
    rail = np.tile(np.arange(rails), n)
    if n <= r:
        structure = ClosStructure(
            endpoint_leaf=rail.astype(np.int64),
            n_leaves=rails,
            leaves_per_pod=1,
            spines_per_pod=0,
            leaf_parallel=0,
            cores_per_plane=0,
            spine_parallel=0,
        )
    else:
        down, up = ck.split_ports(r, o)
        per_rail = -(-n // down)
        if per_rail > r:
            raise TopologyError(
                f"nodes={n}: a rail's 2-tier leaf–spine of radix-{r} switches at {o:g}:1 holds "
                f"at most {r * down:,} nodes; use rail_optimized() (3 tiers) or a larger radix"
            )
        spines, parallel = spread(up, -(-per_rail * up // r))
        structure = ClosStructure(
            endpoint_leaf=(rail * per_rail + node // down).astype(np.int64),
            n_leaves=rails * per_rail,
            leaves_per_pod=per_rail,
            spines_per_pod=spines,
            leaf_parallel=parallel,
            cores_per_plane=0,
            spine_parallel=0,
        )
    params = {
        "kind": "rail-only",
        "radix": r,
        "nodes": n,
        "rails": rails,
        "oversubscription": (o,),
        "cross_rail": "forwarded over NVLink inside the node (not in this graph)",
    }
    return build_clos(
        f"rail-only {n} nodes x {rails} rails",
        structure,
        link_rate=ck.check_rate("link_rate", link_rate),
        switch_latency=ck.check_time("switch_latency", switch_latency),
        params=params,
    )
