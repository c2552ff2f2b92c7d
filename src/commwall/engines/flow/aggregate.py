"""Flows that share every fabric link, solved as one: the exact shortcut that makes Valiant's
fluid limit on a large dragonfly take seconds.

Per-packet Valiant spreads each inter-group flow over all ``g − 2`` intermediate groups
(:func:`commwall.routing.dragonfly.valiant_spread`), so one flow touches ~100 links; a uniform
all-to-all on a 1,056-host dragonfly (a = 8, p = h = 4, g = 33) is 1.1 M flows and ~10⁸
flow × link entries. Yet every flow from router ``R1`` to router ``R2`` loads the same fabric
links in the same proportions (with one global link per group pair, nothing in the spread is
hashed per flow); only its hosts' own access links differ. When the pattern treats the hosts of
each router alike, the flows of one router pair form a *class* that can be solved as one flow:

* the class's rate variable is its members' common rate, and every incidence weight is
  multiplied by its member count ``m`` (a weighted max-min: raising the variable by one unit
  loads a link as ``m`` separate flows would, so classes share a bottleneck as their members do);
* the members' access links become one virtual link per router and direction (capacity: the
  sum of the hosts' access links), which under the symmetry condition carries exactly what each
  of its access links carries, times their number.

**When it applies** (checked, else the flows are solved one by one): ``valiant`` routing on a
dragonfly with one global link per group pair
(:class:`~commwall.topology.dragonfly.DragonflyStructure`, ``parallel == 1``); every flow the
same size; and for every class and every router, each of the router's hosts sends (receives)
the same number of the class's flows, with equal access-link capacities and latencies. A
uniform all-to-all satisfies it; a permutation and the adversarial pattern (a random host of
the next group each) do not, and have one flow per host, few enough not to need it. Under the
condition the class solution *is* the per-flow solution (every member of a class has the same
constraints), so completion times, link bytes and rates are unchanged; only the work shrinks
(by ``p²`` for an all-to-all).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from commwall.routing import RoutingPolicy, route
from commwall.routing.routes import Routes
from commwall.topology.dragonfly import DragonflyStructure
from commwall.topology.graph import Topology

__all__ = ["RouterClasses", "router_classes"]

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class RouterClasses:
    """Flows grouped by (source router, destination router): ``class_of[i]`` is flow ``i``'s
    class, whose representative flow ``first[c]`` is ``rep_src[c] → rep_dst[c]`` and which has
    ``count[c]`` members."""

    class_of: IntArray
    count: IntArray
    first: IntArray  # per class: its representative (first) flow
    rep_src: IntArray
    rep_dst: IntArray
    src_router: IntArray  # per class
    dst_router: IntArray  # per class

    def weights(self, routes: Routes) -> FloatArray:
        """Incidence weights of the class flows: each route weight × the class's member count
        (a class variable is its members' common rate)."""
        return routes.weight * self.count[routes.flow]

    @property
    def n_classes(self) -> int:
        """Classes (router pairs with traffic)."""
        return len(self.count)

    def routes(self, topology: Topology, policy: RoutingPolicy, seed: int, size: float) -> Routes:
        """The classes routed: the representatives' routes, their access links replaced by one
        virtual link per router and direction (module doc). The weights are one member's: the
        solver multiplies them by :attr:`count` (:meth:`weights`)."""
        n_classes = self.n_classes
        r = route(topology, self.rep_src, self.rep_dst, policy, seed=seed,
                  nbytes=np.full(n_classes, size))  # fmt: skip
        base = topology.n_links + r.n_virtual
        link = r.link.copy()
        up_routers, up_index = np.unique(self.src_router, return_inverse=True)
        down_routers, down_index = np.unique(self.dst_router, return_inverse=True)
        up = link == 2 * self.rep_src[r.flow]
        down = link == 2 * self.rep_dst[r.flow] + 1
        link[up] = base + up_index[r.flow[up]]
        link[down] = base + len(up_routers) + down_index[r.flow[down]]
        hosts = _hosts_by_router(topology)
        members = [2 * hosts[x] for x in up_routers.tolist()]
        members += [2 * hosts[x] + 1 for x in down_routers.tolist()]
        cap = np.maximum(topology.link_capacity, 1.0)
        virtual = np.array([float(cap[m].sum()) for m in members], dtype=np.float64)
        return replace(
            r,
            link=link,
            virtual_capacity=np.concatenate([r.virtual_capacity, virtual]),
            virtual_members=(*r.virtual_members, *members),
        )


def _host_routers(topology: Topology) -> IntArray:
    """The router node each host hangs off (endpoint ``e``'s access up-link is link ``2e``)."""
    n_hosts = int((topology.node_tier == 0).sum())
    return topology.link_dst[2 * np.arange(n_hosts)].astype(np.int64)


def _hosts_by_router(topology: Topology) -> dict[int, IntArray]:
    """Hosts under each router node."""
    edge = _host_routers(topology)
    order = np.argsort(edge, kind="stable")
    routers, starts = np.unique(edge[order], return_index=True)
    groups = np.split(order.astype(np.int64), starts[1:])
    return dict(zip(routers.tolist(), groups, strict=True))


def router_classes(
    topology: Topology, src: IntArray, dst: IntArray, size: FloatArray, policy: RoutingPolicy
) -> RouterClasses | None:
    """The flows' router classes when solving them as classes is exact (module doc), else None."""
    oracle = getattr(topology, "path_fn", None)
    if policy.name != "valiant" or not isinstance(oracle, DragonflyStructure):
        return None
    if oracle.parallel != 1 or len(src) < 2 or not np.all(size == size[0]):
        return None
    edge = _host_routers(topology)
    n_hosts = len(edge)
    for values in (topology.link_capacity, topology.link_latency):  # alike access links
        v = np.asarray(values, dtype=np.float64)
        if not (_equal_within(edge, v[0::2][:n_hosts]) and _equal_within(edge, v[1::2][:n_hosts])):
            return None
    rs, rd = edge[src], edge[dst]
    pair = rs * (int(edge.max()) + 1) + rd
    _, first, class_of, count = np.unique(
        pair, return_index=True, return_inverse=True, return_counts=True
    )
    per_router = np.bincount(edge)
    class_of = class_of.astype(np.int64)
    for host, router in ((src, rs), (dst, rd)):
        if not _balanced(host, class_of, router[first], per_router):
            return None
    return RouterClasses(
        class_of=class_of,
        count=count.astype(np.int64),
        first=first.astype(np.int64),
        rep_src=src[first],
        rep_dst=dst[first],
        src_router=rs[first],
        dst_router=rd[first],
    )


def _equal_within(edge: IntArray, values: FloatArray) -> bool:
    """Whether every router's hosts have equal ``values``."""
    lo = np.full(int(edge.max()) + 1, np.inf)
    hi = np.full(int(edge.max()) + 1, -np.inf)
    np.minimum.at(lo, edge, values)
    np.maximum.at(hi, edge, values)
    seen = np.isfinite(lo)
    return bool(np.all(lo[seen] == hi[seen]))


def _balanced(
    host: IntArray, class_of: IntArray, class_router: IntArray, per_router: IntArray
) -> bool:
    """Whether every class touches all the hosts of its router (at this end) and each of them
    equally often."""
    n_classes = len(class_router)
    pairs, per_pair = np.unique(host * n_classes + class_of, return_counts=True)
    pair_class = pairs % n_classes
    if np.any(np.bincount(pair_class, minlength=n_classes) != per_router[class_router]):
        return False
    lo = np.full(n_classes, np.iinfo(np.int64).max)
    hi = np.zeros(n_classes, dtype=np.int64)
    np.minimum.at(lo, pair_class, per_pair)
    np.maximum.at(hi, pair_class, per_pair)
    return bool(np.all(lo == hi))
