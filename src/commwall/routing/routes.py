"""What routing hands the flow engine: a sparse flow × link incidence, plus per-flow extras.

:class:`Paths` holds concrete sub-paths (one row of link ids per sub-flow: a queue pair, a
flowlet, or the whole flow), the form a packet engine or a chain check wants. :class:`Routes`
aggregates them per flow and link — entry ``k`` says flow ``flow[k]`` puts ``weight[k]`` of its
rate on link ``link[k]`` — and may use *virtual* links (ids ``>= topology.n_links``) that stand
for a group of real links loaded evenly (packet spraying).

>>> import numpy as np
>>> p = Paths(
...     sub_flow=np.array([0, 0]), links=np.array([[4, 7, -1], [4, 9, -1]]),
...     weight=np.array([0.5, 0.5]), n_flows=1)
>>> r = p.to_routes(n_links=12)
>>> r.link.tolist(), r.weight.tolist(), r.hops.tolist()
([4, 7, 9], [1.0, 0.5, 0.5], [2])
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from commwall.routing.policy import RoutingError
from commwall.topology.graph import Topology

__all__ = [
    "FloatArray",
    "IntArray",
    "Paths",
    "Routes",
    "aggregate",
    "link_capacities",
    "link_load",
]

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


def _empty_int() -> IntArray:
    return np.empty(0, dtype=np.int64)


def _empty_float() -> FloatArray:
    return np.empty(0, dtype=np.float64)


@dataclass(frozen=True, eq=False)
class Routes:
    """Sparse flow × link incidence: entry ``k`` says flow ``flow[k]`` puts ``weight[k]`` of its
    rate on link ``link[k]``. Entries are grouped by flow (ascending) with no duplicate
    ``(flow, link)``. Links ``>= n_links`` of the topology are *virtual* aggregate links:
    virtual link ``n_links + i`` has capacity ``virtual_capacity[i]`` (bytes/s) and stands for the
    real links ``virtual_members[i]``, which share its load evenly.

    ``extra_latency`` (s, per flow) is latency the route adds beyond links and switches (cell
    reassembly); ``capacity_scale`` multiplies every link capacity (cell headers); ``hops`` is
    the number of real links on each flow's longest sub-route (0 for ``src == dst``).
    """

    flow: IntArray
    link: IntArray
    weight: FloatArray
    n_flows: int
    virtual_capacity: FloatArray = field(default_factory=_empty_float)
    virtual_members: tuple[IntArray, ...] = ()
    extra_latency: FloatArray = field(default_factory=_empty_float)
    capacity_scale: float = 1.0
    hops: IntArray = field(default_factory=_empty_int)

    @property
    def n_virtual(self) -> int:
        """Number of virtual links."""
        return len(self.virtual_capacity)

    def __len__(self) -> int:
        return len(self.flow)


@dataclass(frozen=True, eq=False)
class Paths:
    """Concrete sub-paths: row ``r`` of ``links`` (padded with -1) is the route of a sub-flow of
    flow ``sub_flow[r]`` carrying ``weight[r]`` of that flow's rate; a flow's weights sum to 1
    (flows with ``src == dst`` have one empty row). Rows are grouped by flow (ascending)."""

    sub_flow: IntArray
    links: IntArray
    weight: FloatArray
    n_flows: int

    def hops(self) -> IntArray:
        """Links on each flow's longest sub-path."""
        per_row = np.count_nonzero(self.links >= 0, axis=1).astype(np.int64)
        n_sub = np.bincount(self.sub_flow, minlength=self.n_flows)
        out = np.zeros(self.n_flows, dtype=np.int64)
        has = n_sub > 0
        if has.any():  # rows are grouped by flow: one reduceat over each flow's rows
            out[has] = np.maximum.reduceat(per_row, (np.cumsum(n_sub) - n_sub)[has])
        return out

    def to_routes(self, n_links: int) -> Routes:
        """Aggregate per (flow, link): weights of sub-paths that share a link add up."""
        flow, link, weight = aggregate(self.sub_flow, self.links, self.weight, n_links)
        return Routes(
            flow=flow,
            link=link,
            weight=weight,
            n_flows=self.n_flows,
            extra_latency=np.zeros(self.n_flows),
            hops=self.hops(),
        )


def aggregate(
    sub_flow: IntArray, links: IntArray, weight: FloatArray, n_links: int
) -> tuple[IntArray, IntArray, FloatArray]:
    """(flow, link, weight) entries of padded sub-paths (rows grouped by flow), summed per
    (flow, link) and grouped by flow. A flow with one sub-path keeps its route order (unless the
    path repeats a link); several sub-paths give their links in ascending order."""
    single = len(sub_flow) < 2 or bool(np.all(sub_flow[1:] != sub_flow[:-1]))
    if single and _distinct_rows(links):
        return _flatten(sub_flow, links, weight)
    n_sub = np.bincount(sub_flow)
    first = np.cumsum(n_sub) - n_sub
    if np.array_equal(weight, weight[first][sub_flow]):
        return _aggregate_equal(links, weight, n_sub, first)
    return _aggregate_sorted(sub_flow, links, weight, n_links)


def _distinct_rows(links: IntArray) -> bool:
    """No row repeats a link (padding aside)."""
    if links.shape[1] < 2:
        return True
    s = np.sort(np.where(links >= 0, links, -1 - np.arange(links.shape[1])), axis=1)
    return not bool(np.any(s[:, 1:] == s[:, :-1]))


def _flatten(
    sub_flow: IntArray, links: IntArray, weight: FloatArray
) -> tuple[IntArray, IntArray, FloatArray]:
    """Entries of rows taken as they are, in route order."""
    mask = links >= 0
    counts = mask.sum(axis=1)
    return np.repeat(sub_flow, counts), links[mask], np.repeat(weight, counts)


def _aggregate_equal(
    links: IntArray, weight: FloatArray, n_sub: IntArray, first: IntArray
) -> tuple[IntArray, IntArray, FloatArray]:
    """Duplicates summed when a flow's sub-paths weigh the same: flows with ``k`` sub-paths
    become one ``(flows, k·width)`` matrix whose rows are sorted, and a link's weight is its run
    length × the sub-path weight. Row sorts of short rows instead of one global sort: O(entries)
    memory and several times faster at 10⁶ sub-paths."""
    width = links.shape[1]
    parts: list[tuple[IntArray, IntArray, FloatArray]] = []
    for k in np.unique(n_sub[n_sub > 0]).tolist():
        fl = np.flatnonzero(n_sub == k)
        m = links[(first[fl][:, None] + np.arange(k)).reshape(-1)].reshape(len(fl), k * width)
        if k == 1 and _distinct_rows(m):  # one sub-path: keep the route order
            parts.append(_flatten(fl, m, weight[first[fl]]))
            continue
        m.sort(axis=1)  # padding (-1) first, so each row's links are a suffix
        start = m >= 0
        start[:, 1:] &= m[:, 1:] != m[:, :-1]
        r, c = np.nonzero(start)
        end = np.append(c[1:], k * width)
        end[:-1][r[1:] != r[:-1]] = k * width
        parts.append((fl[r], m[r, c], (end - c) * weight[first[fl]][r]))
    if len(parts) == 1:
        return parts[0]
    # interleave the buckets back into flow order without a global sort
    flows = np.concatenate([p[0] for p in parts])
    per_flow = np.bincount(flows, minlength=len(n_sub))
    offset = np.cumsum(per_flow) - per_flow
    out_f = np.empty(len(flows), dtype=np.int64)
    out_l = np.empty(len(flows), dtype=np.int64)
    out_w = np.empty(len(flows), dtype=np.float64)
    for f, lk, w in parts:
        new = np.flatnonzero(np.concatenate(([True], f[1:] != f[:-1])))
        rank = np.arange(len(f)) - np.repeat(new, np.diff(np.append(new, len(f))))
        pos = offset[f] + rank
        out_f[pos], out_l[pos], out_w[pos] = f, lk, w
    return out_f, out_l, out_w


def _aggregate_sorted(
    sub_flow: IntArray, links: IntArray, weight: FloatArray, n_links: int
) -> tuple[IntArray, IntArray, FloatArray]:
    """Duplicates summed by one sort of the combined (flow, link) key (any weights)."""
    mask = links >= 0
    counts = mask.sum(axis=1)
    flow = np.repeat(sub_flow, counts)
    key = flow * np.int64(n_links) + links[mask]
    w = np.repeat(weight, counts)
    order = np.argsort(key, kind="stable")
    key = key[order]
    start = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1])))
    summed = np.add.reduceat(w[order], start) if len(start) else w[:0]
    return key[start] // n_links, key[start] % n_links, summed


def link_capacities(topology: Topology, routes: Routes) -> FloatArray:
    """Capacity (bytes/s) of every link id ``routes`` may use: the topology's links, then the
    virtual ones, all multiplied by ``routes.capacity_scale``."""
    cap = np.concatenate([topology.link_capacity, routes.virtual_capacity])
    return cap * routes.capacity_scale


def link_load(routes: Routes, rates: npt.ArrayLike, n_links: int) -> FloatArray:
    """Bytes/s on each real link (``n_links`` of them) given per-flow ``rates``; a virtual link's
    load is split evenly over its members (even spraying puts the same bytes on each)."""
    r = np.asarray(rates, dtype=np.float64)
    if r.shape != (routes.n_flows,):
        raise RoutingError(f"rates: has shape {r.shape}, need ({routes.n_flows},), one per flow")
    total = np.bincount(
        routes.link, weights=routes.weight * r[routes.flow], minlength=n_links + routes.n_virtual
    )
    load: FloatArray = total[:n_links].astype(np.float64)
    for i, members in enumerate(routes.virtual_members):
        np.add.at(load, members, total[n_links + i] / len(members))
    return load


def fold_virtual(
    link_values: FloatArray, routes: Routes, n_links: int, capacity: FloatArray
) -> FloatArray:
    """Per-link values over ``[0, n_links)`` with every virtual link's value shared out to its
    member links in proportion to their capacity (an evenly sprayed group loads its members
    alike); ``link_values`` covers the real links, then the virtual ones after ``n_links``.
    ``capacity`` holds the real links' capacities."""
    folded = np.array(link_values[:n_links], dtype=np.float64)
    for i, members in enumerate(routes.virtual_members):
        value = float(link_values[n_links + i]) if n_links + i < len(link_values) else 0.0
        if value and len(members):
            share = capacity[members] / capacity[members].sum()
            np.add.at(folded, members, value * share)
    return folded
