"""Link and switch failures: fail cables and switches of a fabric, then measure what is left.

:func:`fail_parts` takes a :class:`~commwall.topology.Topology` and a :class:`FailureSpec` (named
cables, named switches such as ``leaf:3`` or ``spine:0``, and random counts per cable class or
switch tier drawn from a seeded generator) and returns a new topology with the same arrays and
indices, where every failed cable (a failed switch fails all its cables) has capacity 0, is listed
in ``params["failed_cables"]``, and the route oracle is wrapped in :class:`SurvivingRoutes`, which
offers only the routes that avoid failed links. ECMP then hashes over the survivors
(hash-threshold rehash, RFC 2992: every flow's choice is recomputed, not just the broken ones'),
spraying spreads over them and adaptive routing picks among them.

:func:`failure_impact` reports what a set of failures does: bisection before and after (exact
max-flow on the graph, or the Clos closed form on large fabrics, then an upper bound), endpoints
cut off, pairs left with no route, the share of routes surviving per level, whether a job still
runs as configured and, when it does, the flow engine's collective slowdown.
:func:`study_failures` repeats it over random draws and summarises the distributions.

>>> from commwall.topology import leaf_spine
>>> t = leaf_spine(8)  # 32 hosts on 8 leaves, 4 spines
>>> f = fail_parts(t, FailureSpec(switches=("spine:0",)))
>>> t.path_count(0, 31), f.path_count(0, 31), len(f.params["failed_cables"])
(4, 3, 8)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Final

import numpy as np
import numpy.typing as npt

from commwall.checks import whole
from commwall.faults.errors import FaultError
from commwall.faults.stats import summarize
from commwall.topology.clos import ClosStructure
from commwall.topology.graph import IntArray, LinkKind, PathOracle, Topology
from commwall.topology.metrics import bisection_bandwidth, bisection_bandwidth_maxflow

if TYPE_CHECKING:
    from commwall.cluster import Cluster
    from commwall.routing.routes import Routes

__all__ = [
    "CABLE_CLASSES",
    "SWITCH_TIERS",
    "FailedParts",
    "FailureImpact",
    "FailureSpec",
    "FailureStudy",
    "SurvivingRoutes",
    "WorkloadImpact",
    "apply_failures",
    "cable_classes",
    "choose_failures",
    "cluster_with_failures",
    "fail_parts",
    "failure_impact",
    "measure_workloads",
    "study_failures",
]

#: Cable classes random failures draw from (``FailureSpec.random_cables`` keys).
CABLE_CLASSES: Final = ("access", "leaf-spine", "spine-core", "local", "global", "scale-up")
#: Switch tiers by name (``leaf:3``; ``router`` is tier 1 of a dragonfly).
SWITCH_TIERS: Final = {"leaf": 1, "router": 1, "spine": 2, "core": 3}
#: Largest fabric (nodes) whose bisection is measured by max-flow; beyond, the closed form.
MAX_FLOW_NODES: Final = 5000
#: Pairs checked for surviving routes on non-Clos fabrics (all when there are fewer).
MAX_CHECKED_PAIRS: Final = 20_000
_EMPTY = np.empty(0, dtype=np.int64)
_TIER_LABEL = {1: "leaf", 2: "spine", 3: "core"}


# ---- what to fail --------------------------------------------------------------------------


@dataclass(frozen=True)
class FailureSpec:
    """What to fail: ``cables`` by index, ``switches`` by node index or ``tier:index``
    (``leaf:3``, ``spine:0``, ``core:1``), and random counts per cable class
    (:data:`CABLE_CLASSES`) and per switch tier (:data:`SWITCH_TIERS`), drawn without replacement
    from the parts not already failed."""

    cables: tuple[int, ...] = ()
    switches: tuple[str | int, ...] = ()
    random_cables: Mapping[str, int] = field(default_factory=dict)
    random_switches: Mapping[str, int] = field(default_factory=dict)

    @property
    def is_random(self) -> bool:
        """Whether any part is drawn at random."""
        return any(self.random_cables.values()) or any(self.random_switches.values())

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return {
            "cables": list(self.cables),
            "switches": [str(s) for s in self.switches],
            "random_cables": dict(self.random_cables),
            "random_switches": dict(self.random_switches),
        }


@dataclass(frozen=True)
class FailedParts:
    """The failed switches (node indices) and every failed cable (a switch's cables included)."""

    cables: IntArray
    switches: IntArray


def cable_classes(topology: Topology) -> npt.NDArray[np.str_]:
    """Class of every cable: ``access``, ``leaf-spine``, ``spine-core``, ``local``, ``global``,
    ``scale-up`` (from ``link_kind`` and the tier of the cable's upper end)."""
    kind, tier = topology.link_kind[0::2], topology.link_tier[0::2]
    up = np.where(tier == 2, "leaf-spine", np.where(tier == 3, "spine-core", "up"))
    names = np.array(["access", "up", "local", "global", "scale-up"])
    out = names[np.clip(kind, 0, 4)]
    return np.where(kind == LinkKind.UP, up, out)


def _switch_node(topology: Topology, name: str | int) -> int:
    """Node index of a switch named by index or ``tier:index``."""
    text = str(name).strip().lower()
    if ":" in text:
        tier_name, _, idx = text.partition(":")
        if tier_name not in SWITCH_TIERS:
            raise FaultError(
                f"switches: {name!r} names tier {tier_name!r}; allowed: "
                f"{', '.join(SWITCH_TIERS)} (e.g. leaf:3) or a node index"
            )
        nodes = np.flatnonzero(topology.node_tier == SWITCH_TIERS[tier_name])
        if not idx.isdigit() or int(idx) >= len(nodes):
            raise FaultError(
                f"switches: {name!r} is out of range; {topology.name!r} has "
                f"{len(nodes)} {tier_name} switches ({tier_name}:0..{tier_name}:{len(nodes) - 1})"
            )
        return int(nodes[int(idx)])
    if (
        not text.isdigit()
        or not 0 <= int(text) < topology.n_nodes
        or topology.node_tier[int(text)] < 1
    ):
        raise FaultError(
            f"switches: {name!r} is not a switch; give tier:index (leaf:3, spine:0, core:1) or "
            f"the node index of a switch (tier >= 1, nodes 0..{topology.n_nodes - 1})"
        )
    return int(text)


def _draw(rng: np.random.Generator, pool: IntArray, n: int, what: str) -> IntArray:
    if n < 0 or n > len(pool):
        raise FaultError(f"{what}: {n} is not possible; allowed: 0 to {len(pool)}")
    return np.sort(rng.choice(pool, size=n, replace=False)).astype(np.int64) if n else _EMPTY


def _cables_of(topology: Topology, nodes: IntArray) -> IntArray:
    touch = np.isin(topology.link_src[0::2], nodes) | np.isin(topology.link_dst[0::2], nodes)
    return np.flatnonzero(touch).astype(np.int64)


def choose_failures(
    topology: Topology, spec: FailureSpec, rng: np.random.Generator | None = None
) -> FailedParts:
    """Resolve ``spec`` on ``topology``: named parts first, then the random draws from ``rng``
    (required when ``spec`` draws any) among the parts still alive. Raises :class:`FaultError`
    naming the bad field, its value and the allowed range."""
    cables = np.asarray(spec.cables, dtype=np.int64)
    bad = cables[(cables < 0) | (cables >= topology.n_cables)]
    if len(bad):
        raise FaultError(
            f"cables: {int(bad[0])} is out of range; {topology.name!r} has cables "
            f"0..{topology.n_cables - 1}"
        )
    switches = np.array([_switch_node(topology, s) for s in spec.switches], dtype=np.int64)
    if spec.is_random and rng is None:
        raise FaultError("rng: random failures need a numpy.random.Generator (seeded)")
    for tier_name, n in spec.random_switches.items():
        if tier_name not in SWITCH_TIERS:
            raise FaultError(
                f"random_switches: tier {tier_name!r} is unknown; allowed: {', '.join(SWITCH_TIERS)}"
            )
        pool = np.flatnonzero(topology.node_tier == SWITCH_TIERS[tier_name]).astype(np.int64)
        assert rng is not None
        picked = _draw(rng, np.setdiff1d(pool, switches), n, f"random_switches[{tier_name!r}]")
        switches = np.union1d(switches, picked)
    cables = np.union1d(cables, _cables_of(topology, switches)).astype(np.int64)
    classes = cable_classes(topology)
    for cls, n in spec.random_cables.items():
        if cls not in CABLE_CLASSES:
            raise FaultError(
                f"random_cables: class {cls!r} is unknown; allowed: {', '.join(CABLE_CLASSES)}"
            )
        pool = np.setdiff1d(np.flatnonzero(classes == cls), cables)
        assert rng is not None
        cables = np.union1d(cables, _draw(rng, pool, n, f"random_cables[{cls!r}]"))
    return FailedParts(cables=cables.astype(np.int64), switches=np.unique(switches))


def apply_failures(topology: Topology, parts: FailedParts) -> Topology:
    """A copy of ``topology`` with ``parts`` failed: their capacity 0, listed in
    ``params["failed_cables"]``/``["failed_switches"]`` (added to any failed before), and the
    oracle wrapped in :class:`SurvivingRoutes`. Indices and every other array are unchanged."""
    base = topology.path_fn
    if isinstance(base, SurvivingRoutes):
        base = base.base
    old = np.asarray(topology.params.get("failed_cables", ()), dtype=np.int64)
    cables = np.union1d(old, parts.cables).astype(np.int64)
    old_sw = np.asarray(topology.params.get("failed_switches", ()), dtype=np.int64)
    capacity = topology.link_capacity.copy()
    capacity[2 * cables], capacity[2 * cables + 1] = 0.0, 0.0
    alive = np.ones(topology.n_cables, dtype=bool)
    alive[cables] = False
    params = {
        **dict(topology.params),
        "failed_cables": tuple(cables.tolist()),
        "failed_switches": tuple(np.union1d(old_sw, parts.switches).astype(int).tolist()),
    }
    oracle = None if base is None else SurvivingRoutes(base, alive)
    return replace(topology, link_capacity=capacity, params=params, path_fn=oracle).validate()


def fail_parts(
    topology: Topology, spec: FailureSpec, rng: np.random.Generator | None = None
) -> Topology:
    """``topology`` with the parts ``spec`` names (and draws from ``rng``) failed."""
    return apply_failures(topology, choose_failures(topology, spec, rng))


def cluster_with_failures(cluster: Cluster, failed_fabric: Topology) -> Cluster:
    """``cluster`` whose scale-out fabric is ``failed_fabric`` (flow engine; the analytic engine
    does not look at the fabric's links)."""
    return replace(cluster, scale_out=failed_fabric)


# ---- routes that survive -------------------------------------------------------------------


class SurvivingRoutes:
    """A :class:`PathOracle` offering only the routes of ``base`` that avoid failed cables.

    Route ``i`` of a pair is the ``i``-th surviving route of ``base`` in its own order. The
    surviving indices are cached per pair — per leaf pair on a Clos, where they are computed in
    one vectorised pass from the route-index digits (:class:`ClosStructure` numbering) together
    with their switch-to-switch links. :meth:`spray_routes` sprays evenly over every survivor.
    """

    def __init__(self, base: PathOracle, cable_alive: npt.NDArray[np.bool_]) -> None:
        self.base = base
        self.cable_alive = cable_alive
        self._cache: dict[tuple[int, int], IntArray] = {}
        self._rows: dict[tuple[int, int], tuple[IntArray, IntArray]] = {}

    def count(self, src: int, dst: int) -> int:
        """Surviving routes from ``src`` to ``dst``."""
        return len(self.survivors(src, dst))

    def links(self, src: int, dst: int, index: int) -> IntArray:
        """Link indices of surviving route ``index``."""
        s = self.base
        if not isinstance(s, ClosStructure) or src == dst:
            return self.base.links(src, dst, int(self.survivors(src, dst)[index]))
        row = self.clos_rows(int(s.endpoint_leaf[src]), int(s.endpoint_leaf[dst]))[1][index]
        return np.concatenate(([2 * src], row, [2 * dst + 1]))

    def survivors(self, src: int, dst: int) -> IntArray:
        """Indices (in ``base``'s numbering) of the routes that avoid every failed cable."""
        s = self.base
        if isinstance(s, ClosStructure):
            if src == dst:
                return np.zeros(1, dtype=np.int64)
            if not (self.cable_alive[src] and self.cable_alive[dst]):  # access cable e = e
                return _EMPTY
            return self.clos_rows(int(s.endpoint_leaf[src]), int(s.endpoint_leaf[dst]))[0]
        found = self._cache.get((src, dst))
        if found is None:
            found = self._generic(src, dst)
            self._cache[(src, dst)] = found
        return found

    def _generic(self, src: int, dst: int) -> IntArray:
        alive = [
            i
            for i in range(self.base.count(src, dst))
            if bool(self.cable_alive[self.base.links(src, dst, i) // 2].all())
        ]
        return np.asarray(alive, dtype=np.int64)

    def clos_rows(self, la: int, lb: int) -> tuple[IntArray, IntArray]:
        """Surviving route indices between leaves ``la`` and ``lb`` and, per survivor, its
        switch-to-switch links in order (access links excluded): every index's digits decoded
        as :meth:`ClosStructure.links` does, its cables looked up at once."""
        found = self._rows.get((la, lb))
        if found is None:
            found = self._clos_rows(la, lb)
            self._rows[(la, lb)] = found
        return found

    def _clos_rows(self, la: int, lb: int) -> tuple[IntArray, IntArray]:
        s = self.base
        assert isinstance(s, ClosStructure)
        if la == lb:
            return np.zeros(1, dtype=np.int64), np.empty((1, 0), dtype=np.int64)
        level = 2 if la // s.leaves_per_pod == lb // s.leaves_per_pod else 3
        index = np.arange(s.routes_at_level(level), dtype=np.int64)
        e, m1, m2 = s.n_endpoints, s.leaf_parallel, s.spine_parallel
        s1, c1 = s.spines_per_pod, s.cores_per_plane
        i = index
        if level == 3:
            i, y = np.divmod(i, m2)
            i, x = np.divmod(i, m2)
            i, c = np.divmod(i, c1)
        i, w = np.divmod(i, m1)
        j, u = np.divmod(i, m1)
        up1, down1 = e + (la * s1 + j) * m1 + u, e + (lb * s1 + j) * m1 + w
        cables = [up1, down1]
        if level == 3:
            base = e + s.leaf_spine_cables
            pa, pb = la // s.leaves_per_pod, lb // s.leaves_per_pod
            up2 = base + ((pa * s1 + j) * c1 + c) * m2 + x
            down2 = base + ((pb * s1 + j) * c1 + c) * m2 + y
            cables = [up1, up2, down2, down1]
        ok = np.logical_and.reduce([self.cable_alive[cab] for cab in cables])
        half = len(cables) // 2  # the first half climbs (link 2c), the rest descends (2c + 1)
        rows = np.stack([2 * cab + (k >= half) for k, cab in enumerate(cables)], axis=1)
        return index[ok], rows[ok]

    def spray_routes(self, topology: Topology, src: IntArray, dst: IntArray) -> Routes:
        """Even spraying over every surviving route of each pair (weights 1/count, summed per
        link), vectorised per leaf pair on a Clos; other fabrics use the routing's generic
        spray over this oracle (its 64-route sampling)."""
        from commwall.routing import oracle as generic
        from commwall.routing.clos import no_route_error
        from commwall.routing.routes import Routes

        s = self.base
        if not isinstance(s, ClosStructure):
            return generic.spray_routes(self, topology, src, dst)
        real = src != dst
        dead = real & ~(self.cable_alive[src] & self.cable_alive[dst])
        keys = s.endpoint_leaf[src] * s.n_leaves + s.endpoint_leaf[dst]
        uniq, inverse = np.unique(keys, return_inverse=True)
        pair_links, pair_weights = [], []
        for key in uniq.tolist():
            _, rows = self.clos_rows(*divmod(key, s.n_leaves))
            links, n = np.unique(rows, return_counts=True)
            pair_links.append(links)
            pair_weights.append(n / max(len(rows), 1))
        size = np.array([len(x) for x in pair_links], dtype=np.int64)[inverse]
        bad = np.flatnonzero(
            dead | (real & (size == 0) & (s.endpoint_leaf[src] != s.endpoint_leaf[dst]))
        )
        if len(bad):
            i = int(bad[0])
            raise no_route_error(int(src[i]), int(dst[i]), i)
        per_flow = np.where(real, size + 2, 0)
        flow = np.repeat(np.arange(len(src), dtype=np.int64), per_flow)
        first = np.cumsum(per_flow) - per_flow
        link = np.empty(len(flow), dtype=np.int64)
        weight = np.ones(len(flow))
        link[first[real]] = 2 * src[real]
        link[(first + per_flow - 1)[real]] = 2 * dst[real] + 1
        middle = np.ones(len(flow), dtype=bool)
        middle[first[real]] = middle[(first + per_flow - 1)[real]] = False
        order = inverse[real]
        link[middle] = np.concatenate([pair_links[k] for k in order.tolist()] or [_EMPTY])
        weight[middle] = np.concatenate([pair_weights[k] for k in order.tolist()] or [np.empty(0)])
        hops = np.zeros(len(src), dtype=np.int64)
        if len(uniq):
            depth = np.array(
                [self.clos_rows(*divmod(k, s.n_leaves))[1].shape[1] for k in uniq.tolist()]
            )
            hops[real] = depth[order] + 2
        return Routes(flow=flow, link=link, weight=weight, n_flows=len(src),
                      extra_latency=np.zeros(len(src)), hops=hops)  # fmt: skip


# ---- impact --------------------------------------------------------------------------------


@dataclass(frozen=True)
class WorkloadImpact:
    """One workload before and after the failures: a collective's time (s) on the flow engine,
    or a traffic pattern's throughput with every flow active (bytes/s). ``slowdown`` is
    after/before for a time, before/after for a throughput (>= 1 means worse); None when the
    workload cannot run after the failures (``error`` says why)."""

    name: str
    routing: str
    unit: str
    before: float
    after: float | None
    error: str | None = None

    @property
    def slowdown(self) -> float | None:
        """How many times slower (>= 1 is worse), None when it cannot run."""
        if self.after is None:
            return None
        if self.unit == "s":
            return self.after / self.before if self.before > 0 else 1.0
        return self.before / self.after if self.after > 0 else float("inf")

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return {
            "workload": self.name,
            "routing": self.routing,
            "unit": self.unit,
            "before": self.before,
            "after": self.after,
            "slowdown": self.slowdown,
            "error": self.error,
        }


@dataclass(frozen=True)
class FailureImpact:
    """What one set of failures does to a fabric (and to a job on it, given a cluster)."""

    topology: str
    failed_cables: dict[str, int]
    failed_switches: tuple[str, ...]
    bisection_before: float
    bisection_after: float
    bisection_method: str
    endpoints_disconnected: tuple[int, ...]
    pairs: int
    pairs_without_route: int
    pairs_sampled: bool
    route_survival: dict[str, dict[str, float]]
    ranks_total: int | None
    ranks_remaining: int | None
    workloads: tuple[WorkloadImpact, ...]

    @property
    def bisection_loss(self) -> float:
        """Share of the bisection bandwidth lost (0..1)."""
        b = self.bisection_before
        return 1.0 - self.bisection_after / b if b > 0 else 0.0

    @property
    def runs_as_configured(self) -> bool:
        """Every endpoint is attached and every pair the fabric routed still has a route."""
        return not self.endpoints_disconnected and self.pairs_without_route == 0

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return {
            "topology": self.topology,
            "failed_cables": dict(self.failed_cables),
            "failed_cables_total": sum(self.failed_cables.values()),
            "failed_switches": list(self.failed_switches),
            "bisection_before_Bps": self.bisection_before,
            "bisection_after_Bps": self.bisection_after,
            "bisection_loss": self.bisection_loss,
            "bisection_method": self.bisection_method,
            "endpoints_disconnected": list(self.endpoints_disconnected),
            "pairs": self.pairs,
            "pairs_without_route": self.pairs_without_route,
            "pairs_sampled": self.pairs_sampled,
            "route_survival": self.route_survival,
            "runs_as_configured": self.runs_as_configured,
            "ranks_total": self.ranks_total,
            "ranks_remaining": self.ranks_remaining,
            "workloads": [w.to_dict() for w in self.workloads],
        }


def _switch_label(topology: Topology, node: int) -> str:
    tier = int(topology.node_tier[node])
    first = int(np.flatnonzero(topology.node_tier == tier)[0])
    return f"{_TIER_LABEL.get(tier, f'tier{tier}')}:{node - first}"


def _half(topology: Topology) -> npt.NDArray[np.bool_]:
    """The default bisection half of :mod:`commwall.topology.metrics`: whole leaves on a Clos
    (in leaf order), else the first half of the endpoints by index."""
    n = len(topology.endpoints())
    s = topology.path_fn.base if isinstance(topology.path_fn, SurvivingRoutes) else topology.path_fn
    if isinstance(s, ClosStructure):
        mask = np.zeros(n, dtype=bool)
        mask[np.argsort(s.endpoint_leaf, kind="stable")[: n // 2]] = True
        return mask
    return np.arange(n) < n // 2


def _bisection(before: Topology, after: Topology) -> tuple[float, float, str]:
    """Bisection (bytes/s, one direction) before and after, on the same halves."""
    half = _half(before)
    base = after.path_fn.base if isinstance(after.path_fn, SurvivingRoutes) else after.path_fn
    if before.n_nodes > MAX_FLOW_NODES and isinstance(base, ClosStructure):
        # aggregated tiers: exact without failures; with them an upper bound (a leaf may reach
        # spines the other side's leaves no longer reach)
        after_agg = replace(after, path_fn=base)
        return (
            bisection_bandwidth(replace(before, path_fn=base), half),
            bisection_bandwidth(after_agg, half),
            "closed form (after failures: upper bound)",
        )
    return (
        bisection_bandwidth_maxflow(before, half),
        bisection_bandwidth_maxflow(after, half),
        "max-flow",
    )


def _disconnected(topology: Topology) -> IntArray:
    """Endpoints with no working cable (their access cable or their leaf failed)."""
    alive = topology.link_capacity[0::2] > 0
    ends = topology.endpoints()
    a, b = topology.link_src[0::2], topology.link_dst[0::2]
    live = np.bincount(a[alive], minlength=topology.n_nodes) + np.bincount(
        b[alive], minlength=topology.n_nodes
    )
    cut: IntArray = ends[live[ends] == 0]
    return cut


@dataclass
class _Survival:
    """Accumulates per-level route survival over pairs."""

    pairs: int = 0
    lost: int = 0
    levels: dict[str, list[float]] = field(default_factory=dict)  # [pairs, share sum, min]

    def add(self, level: str, pairs: int, alive_pairs: int, share: float) -> None:
        """``pairs`` pairs of ``level``, ``alive_pairs`` of them with both ends attached, each
        of those keeping ``share`` of its routes."""
        row = self.levels.setdefault(level, [0.0, 0.0, 1.0])
        self.pairs += pairs
        self.lost += pairs - alive_pairs + (alive_pairs if share == 0 else 0)
        row[0] += pairs
        row[1] += alive_pairs * share
        if pairs:
            row[2] = min(row[2], share if alive_pairs == pairs else 0.0)

    def table(self) -> dict[str, dict[str, float]]:
        return {
            lv: {"pairs": r[0], "mean_share": r[1] / r[0] if r[0] else 0.0, "min_share": r[2]}
            for lv, r in self.levels.items()
        }


def _clos_survival(
    s: ClosStructure, oracle: SurvivingRoutes, rng: np.random.Generator
) -> tuple[_Survival, bool]:
    per_leaf = np.bincount(s.endpoint_leaf, minlength=s.n_leaves)
    alive_leaf = np.bincount(
        s.endpoint_leaf, weights=oracle.cable_alive[: s.n_endpoints], minlength=s.n_leaves
    ).astype(np.int64)
    la, lb = np.divmod(np.arange(s.n_leaves**2, dtype=np.int64), s.n_leaves)
    sampled = len(la) > MAX_CHECKED_PAIRS
    if sampled:
        pick = rng.choice(len(la), size=MAX_CHECKED_PAIRS, replace=False)
        la, lb = la[pick], lb[pick]
    out = _Survival()
    names = {1: "same leaf", 2: "same pod", 3: "different pods"}
    for a, b in zip(la.tolist(), lb.tolist(), strict=True):
        if a == b:
            n, k = int(per_leaf[a]), int(alive_leaf[a])
            out.add(names[1], n * (n - 1), k * (k - 1), 1.0)
            continue
        level = 2 if a // s.leaves_per_pod == b // s.leaves_per_pod else 3
        total = s.routes_at_level(level)
        if total == 0 or not per_leaf[a] or not per_leaf[b]:
            continue  # pairs the fabric never routed (rail-only across rails)
        share = len(oracle.clos_rows(a, b)[0]) / total
        pairs = int(per_leaf[a] * per_leaf[b])
        out.add(names[level], pairs, int(alive_leaf[a] * alive_leaf[b]), share)
    if sampled:  # scale the sampled leaf pairs up to all of them
        scale = s.n_leaves**2 / MAX_CHECKED_PAIRS
        out.pairs, out.lost = round(out.pairs * scale), round(out.lost * scale)
        for row in out.levels.values():
            row[0], row[1] = row[0] * scale, row[1] * scale
    return out, sampled


def _generic_survival(
    before: Topology, oracle: SurvivingRoutes, rng: np.random.Generator
) -> tuple[_Survival, bool]:
    ends = before.endpoints()
    n = len(ends)
    sampled = n * (n - 1) > MAX_CHECKED_PAIRS
    if sampled:
        a = rng.integers(0, n, MAX_CHECKED_PAIRS)
        b = (a + rng.integers(1, n, MAX_CHECKED_PAIRS)) % n
    else:
        a, b = np.divmod(np.arange(n * n, dtype=np.int64), n)
        a, b = a[a != b], b[a != b]
    group = before.node_group[ends]
    out = _Survival()
    for i, j in zip(ends[a].tolist(), ends[b].tolist(), strict=True):
        total = oracle.base.count(i, j)
        if total == 0:
            continue
        level = "same group" if group[i] == group[j] and group[i] >= 0 else "different groups"
        share = oracle.count(i, j) / total
        out.add(level, 1, 1, share)
    if sampled:
        scale = n * (n - 1) / MAX_CHECKED_PAIRS
        out.pairs, out.lost = round(out.pairs * scale), round(out.lost * scale)
        for row in out.levels.values():
            row[0], row[1] = row[0] * scale, row[1] * scale
    return out, sampled


def _survival(before: Topology, after: Topology, seed: int) -> tuple[_Survival, bool]:
    oracle = after.path_fn
    if not isinstance(oracle, SurvivingRoutes):
        return _Survival(), False
    rng = np.random.default_rng(seed)
    if isinstance(oracle.base, ClosStructure):
        return _clos_survival(oracle.base, oracle, rng)
    return _generic_survival(before, oracle, rng)


def _ranks(cluster: Cluster | None, disconnected: IntArray) -> tuple[int | None, int | None]:
    """Ranks of the world and ranks left once the ring re-forms without the nodes that lost a
    NIC (endpoint ``node · nics_per_node + rail``, :mod:`commwall.engines.flow.network`)."""
    if cluster is None:
        return None, None
    lost = len(np.unique(disconnected // cluster.nics_per_node))
    return cluster.n_gpus, (cluster.n_nodes - lost) * cluster.gpus_per_node


# ---- workloads before and after ------------------------------------------------------------

_Measured = dict[tuple[str, str], float | str]  # (workload, routing) -> value or why it failed


def _check_workloads(ops: Sequence[str], routings: Sequence[str]) -> None:
    from commwall.collectives import Op
    from commwall.engines.flow.engine import parse_routing

    allowed = [o.value for o in Op]
    for op in ops:
        if op not in allowed:
            raise FaultError(f"ops: {op!r} is not a collective; allowed: {', '.join(allowed)}")
    for r in routings:
        try:
            parse_routing(r)
        except ValueError as e:
            raise FaultError(f"routings: {e}") from None


def _workload_name(op: str, size: float) -> str:
    from commwall.units import format_size

    return f"{op} {format_size(size)}"


def measure_workloads(
    fabric: Topology,
    cluster: Cluster | None,
    *,
    ops: Sequence[str],
    size: float,
    routings: Sequence[str],
    seed: int = 0,
) -> _Measured:
    """With a cluster: each collective ``op`` of ``size`` bytes on the world communicator, its
    flow-engine time (s) on ``fabric``; without: a random permutation of ``size``-byte flows,
    its throughput with every flow active (bytes/s). Workloads the failures make unroutable
    give the error message instead."""
    from commwall.collectives import Op
    from commwall.collectives.schedule import CollectiveTask, Schedule
    from commwall.engines.communicators import world_group
    from commwall.engines.flow.engine import FlowEngine
    from commwall.engines.flow.traffic import pattern_flows, run_traffic
    from commwall.routing import RoutingError
    from commwall.topology import TopologyError

    out: _Measured = {}
    for r in routings:
        if cluster is None:
            src, dst = pattern_flows("permutation", len(fabric.endpoints()), seed=seed)
            try:
                result = run_traffic(fabric, src, dst, size, r, seed=seed)
                out[("permutation", r)] = result.throughput_at_start
            except (RoutingError, TopologyError) as e:
                out[("permutation", r)] = str(e)
            continue
        cl = cluster_with_failures(cluster, fabric)
        group = world_group(cl, cl.world())
        for op in ops:
            task = CollectiveTask(Op(op), size, group)
            try:
                t = FlowEngine().run(Schedule.single(task), cl, r, seed=seed).makespan
                out[(_workload_name(op, size), r)] = t
            except (RoutingError, TopologyError) as e:
                out[(_workload_name(op, size), r)] = str(e)
    return out


def _compare(before: _Measured, after: _Measured) -> tuple[WorkloadImpact, ...]:
    rows = []
    for (name, r), b in before.items():
        if isinstance(b, str):
            raise FaultError(f"workload {name} ({r}) does not run even without failures: {b}")
        a = after.get((name, r))
        unit = "B/s" if name == "permutation" else "s"
        err = (
            a
            if isinstance(a, str)
            else ("not run: the job cannot run as configured" if a is None else None)
        )
        rows.append(WorkloadImpact(name, r, unit, b, a if isinstance(a, float) else None, err))
    return tuple(rows)


def failure_impact(
    fabric: Topology,
    failed: Topology,
    *,
    cluster: Cluster | None = None,
    baseline: _Measured | None = None,
    ops: Sequence[str] = ("all_reduce", "alltoall"),
    size: float = 2.0**30,
    routings: Sequence[str] = ("ecmp",),
    seed: int = 0,
) -> FailureImpact:
    """The impact of the failures of ``failed`` (from :func:`fail_parts` on ``fabric``).

    ``baseline``: the workloads measured on ``fabric`` routed by the same survivor-aware oracle
    with nothing failed (computed when None), so a slowdown is the failures' alone, not a change
    of hash function. ``baseline={}`` skips the workloads. Workloads run only when the job runs
    as configured (every endpoint attached, every routed pair still routed).
    """
    failed_ids = np.asarray(failed.params.get("failed_cables", ()), dtype=np.int64)
    classes, counts = np.unique(cable_classes(fabric)[failed_ids], return_counts=True)
    switches = np.asarray(failed.params.get("failed_switches", ()), dtype=np.int64)
    before_bw, after_bw, method = _bisection(fabric, failed)
    cut = _disconnected(failed)
    survival, sampled = _survival(fabric, failed, seed)
    total, remaining = _ranks(cluster, cut)
    if baseline is None:
        _check_workloads(ops, routings)
        healthy = apply_failures(fabric, FailedParts(_EMPTY, _EMPTY))
        baseline = measure_workloads(
            healthy, cluster, ops=ops, size=size, routings=routings, seed=seed
        )
    runs = not len(cut) and survival.lost == 0
    after: _Measured = {}
    if baseline and runs:
        after = measure_workloads(failed, cluster, ops=ops, size=size, routings=routings, seed=seed)
    return FailureImpact(
        topology=fabric.name,
        failed_cables={str(c): int(n) for c, n in zip(classes, counts, strict=True)},
        failed_switches=tuple(_switch_label(fabric, int(n)) for n in switches),
        bisection_before=before_bw,
        bisection_after=after_bw,
        bisection_method=method,
        endpoints_disconnected=tuple(int(e) for e in cut),
        pairs=survival.pairs,
        pairs_without_route=survival.lost,
        pairs_sampled=sampled,
        route_survival=survival.table(),
        ranks_total=total,
        ranks_remaining=remaining,
        workloads=_compare(baseline, after),
    )


# ---- many draws ----------------------------------------------------------------------------


@dataclass(frozen=True)
class FailureStudy:
    """Impacts of ``spec`` over ``len(impacts)`` draws (one when nothing is random)."""

    spec: FailureSpec
    seed: int
    impacts: tuple[FailureImpact, ...]

    def summaries(self) -> dict[str, Any]:
        """Distributions (:func:`commwall.faults.stats.summarize`) of the bisection loss and of
        each workload's slowdown over the draws where it ran."""
        out: dict[str, Any] = {
            "bisection_loss": summarize([i.bisection_loss for i in self.impacts]).to_dict()
        }
        slow: dict[str, list[float]] = {}
        for impact in self.impacts:
            for w in impact.workloads:
                if w.slowdown is not None:
                    slow.setdefault(f"{w.name} {w.routing}", []).append(w.slowdown)
        out["slowdown"] = {k: summarize(v).to_dict() for k, v in slow.items()}
        out["runs_as_configured_share"] = float(
            np.mean([i.runs_as_configured for i in self.impacts])
        )
        return out

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return {
            "spec": self.spec.to_dict(),
            "seed": self.seed,
            "samples": len(self.impacts),
            "summary": self.summaries(),
            "impacts": [i.to_dict() for i in self.impacts],
        }


def study_failures(
    fabric: Topology,
    spec: FailureSpec,
    *,
    cluster: Cluster | None = None,
    samples: int = 1,
    seed: int = 0,
    ops: Sequence[str] = ("all_reduce", "alltoall"),
    size: float = 2.0**30,
    routings: Sequence[str] = ("ecmp",),
    workloads: bool = True,
) -> FailureStudy:
    """:func:`failure_impact` of ``spec`` for ``samples`` draws (draw ``k`` from
    ``default_rng([seed, k])``; one draw when nothing is random). Same inputs → same result."""
    whole("samples", samples, 1, error=FaultError)
    draws = samples if spec.is_random else 1
    choose_failures(fabric, spec, np.random.default_rng([seed, 0]))  # bad input fails first
    baseline: _Measured = {}
    if workloads:
        _check_workloads(ops, routings)
        healthy = apply_failures(fabric, FailedParts(_EMPTY, _EMPTY))
        baseline = measure_workloads(
            healthy, cluster, ops=ops, size=size, routings=routings, seed=seed
        )
    impacts = []
    for k in range(draws):
        failed = fail_parts(fabric, spec, np.random.default_rng([seed, k]))
        impacts.append(
            failure_impact(
                fabric,
                failed,
                cluster=cluster,
                baseline=baseline,
                ops=ops,
                size=size,
                routings=routings,
                seed=seed,
            )
        )
    return FailureStudy(spec=spec, seed=seed, impacts=tuple(impacts))
