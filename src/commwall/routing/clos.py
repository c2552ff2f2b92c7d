"""Routes on a folded Clos, computed with numpy from the :class:`ClosStructure` integers.

A route between endpoints whose lowest common tier is ``level`` (1 same leaf, 2 same pod, 3
across pods) is fixed by six digits (:meth:`ClosStructure.links` packs them into one index):
``j`` the spine (= plane), ``u`` the leaf→spine copy, ``w`` the spine→leaf copy, ``c`` the core
of plane ``j``, ``x`` the spine→core copy, ``y`` the core→spine copy. Every function here works on
whole arrays of flows, so 10⁵ flows cost milliseconds, not a Python call each.

Per-hop choices follow how the switches make them (Al-Fares et al., SIGCOMM 2008, §3 two-level
routing; RFC 2992 hash-threshold ECMP): the source leaf picks ``(j, u)`` among its
``spines_per_pod · leaf_parallel`` uplinks, the spine picks ``(c, x)`` among its
``cores_per_plane · spine_parallel`` uplinks, the core picks the copy ``y`` down to the destination
pod's spine ``j``, and that spine picks the copy ``w`` down to the destination leaf.

>>> from commwall.topology import fat_tree
>>> s = fat_tree(4).path_fn
>>> g = geometry(s, np.array([0]), np.array([15]))
>>> d = digits_from_index(s, g.level, np.array([3]))
>>> links_from_digits(s, g, d)[0].tolist() == s.links(0, 15, 3).tolist()
True
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from commwall.routing.hashing import U64Array, pick_salted, salt_hash
from commwall.routing.policy import RoutingError
from commwall.routing.routes import FloatArray, IntArray, Routes, aggregate
from commwall.topology.clos import ClosStructure
from commwall.topology.graph import Topology

__all__ = [
    "ClosGeometry",
    "Digits",
    "adaptive_digits",
    "digits_from_index",
    "ecmp_digits",
    "geometry",
    "index_from_digits",
    "links_from_digits",
    "no_route_error",
    "spray_routes",
]

#: Width of a Clos route row: access up, leaf→spine, spine→core, core→spine, spine→leaf, access down.
WIDTH = 6


@dataclass(frozen=True)
class ClosGeometry:
    """Per flow: endpoints, level (0 same endpoint .. 3 other pod), leaves and pods."""

    src: IntArray
    dst: IntArray
    level: IntArray
    la: IntArray
    lb: IntArray
    pa: IntArray
    pb: IntArray

    def take(self, rows: IntArray) -> ClosGeometry:
        """The geometry of flows ``rows`` (e.g. one row per sub-flow)."""
        return ClosGeometry(
            *(getattr(self, f)[rows] for f in ("src", "dst", "level", "la", "lb", "pa", "pb"))
        )


@dataclass(frozen=True)
class Digits:
    """Per flow route digits (see the module doc); zero where the level does not use them."""

    j: IntArray
    u: IntArray
    w: IntArray
    c: IntArray
    x: IntArray
    y: IntArray


def no_route_error(src: int, dst: int, flow: int) -> RoutingError:
    """The error for a pair the fabric does not join (rail-only fabrics across rails)."""
    return RoutingError(
        f"src={src}, dst={dst} (flow {flow}): the fabric has no route between these endpoints; "
        "in a rail-only fabric cross-rail traffic must first be forwarded over NVLink to the "
        "NIC on the destination's rail (PXN), then sent rail-locally"
    )


def geometry(s: ClosStructure, src: IntArray, dst: IntArray) -> ClosGeometry:
    """Levels, leaves and pods of flows ``src -> dst``; raises when a pair has no route."""
    la, lb = s.endpoint_leaf[src], s.endpoint_leaf[dst]
    pa, pb = la // s.leaves_per_pod, lb // s.leaves_per_pod
    level = np.where(src == dst, 0, np.where(la == lb, 1, np.where(pa == pb, 2, 3)))
    routes = np.array([s.routes_at_level(v) for v in range(4)], dtype=np.int64)
    bad = np.flatnonzero(routes[level] == 0)
    if len(bad):
        i = int(bad[0])
        raise no_route_error(int(src[i]), int(dst[i]), i)
    return ClosGeometry(src, dst, level.astype(np.int64), la, lb, pa, pb)


def digits_from_index(s: ClosStructure, level: IntArray, index: IntArray) -> Digits:
    """Digits of route ``index`` (the packing :meth:`ClosStructure.links` unpacks)."""
    m1, m2, c1 = max(s.leaf_parallel, 1), max(s.spine_parallel, 1), max(s.cores_per_plane, 1)
    three = level == 3
    i = index.astype(np.int64)
    y = np.where(three, i % m2, 0)
    i = np.where(three, i // m2, i)
    x = np.where(three, i % m2, 0)
    i = np.where(three, i // m2, i)
    c = np.where(three, i % c1, 0)
    i = np.where(three, i // c1, i)
    w, i = i % m1, i // m1
    u, j = i % m1, i // m1
    up = level >= 2
    return Digits(j * up, u * up, w * up, c, x, y)


def index_from_digits(s: ClosStructure, level: IntArray, d: Digits) -> IntArray:
    """Route index of digits ``d`` (inverse of :func:`digits_from_index`; 0 below level 2)."""
    m1, m2, c1 = s.leaf_parallel, s.spine_parallel, s.cores_per_plane
    two = (d.j * m1 + d.u) * m1 + d.w
    three = ((two * c1 + d.c) * m2 + d.x) * m2 + d.y
    return np.where(level == 3, three, np.where(level == 2, two, 0)).astype(np.int64)


def links_from_digits(s: ClosStructure, g: ClosGeometry, d: Digits) -> IntArray:
    """``(n, 6)`` link ids of each flow's route, in order, padded with -1 (2, 4 or 6 links)."""
    e, m1, m2 = s.n_endpoints, s.leaf_parallel, s.spine_parallel
    s1, c1 = s.spines_per_pod, s.cores_per_plane
    base = e + s.leaf_spine_cables
    acc_up, acc_down = 2 * g.src, 2 * g.dst + 1
    up1 = 2 * (e + (g.la * s1 + d.j) * m1 + d.u)
    down1 = 2 * (e + (g.lb * s1 + d.j) * m1 + d.w) + 1
    up2 = 2 * (base + ((g.pa * s1 + d.j) * c1 + d.c) * m2 + d.x)
    down2 = 2 * (base + ((g.pb * s1 + d.j) * c1 + d.c) * m2 + d.y) + 1
    lv = g.level
    none = np.full(len(lv), -1, dtype=np.int64)
    is1, is2, is3 = lv == 1, lv == 2, lv == 3
    out = np.empty((len(lv), WIDTH), dtype=np.int64)
    out[:, 0] = np.where(lv >= 1, acc_up, none)
    out[:, 1] = np.select([is1, is2, is3], [acc_down, up1, up1], none)
    out[:, 2] = np.select([is2, is3], [down1, up2], none)
    out[:, 3] = np.select([is2, is3], [acc_down, down2], none)
    out[:, 4] = np.where(is3, down1, none)
    out[:, 5] = np.where(is3, acc_down, none)
    return out


def ecmp_digits(s: ClosStructure, g: ClosGeometry, key: U64Array, polarized: bool) -> Digits:
    """Hop-by-hop hashed choices (RFC 2992). Each switch hashes the flow key with its own salt
    (its node id, numbered as :func:`commwall.topology.clos.build_clos` does) — or, when
    ``polarized``, with one salt everywhere, so a spine reached by hash value ``h mod n₁ = j``
    sees only flows whose ``h mod n₂`` is correlated with ``j`` and leaves uplinks idle."""
    m1, m2 = max(s.leaf_parallel, 1), max(s.spine_parallel, 1)
    s1, c1 = s.spines_per_pod, s.cores_per_plane
    n1, n2 = max(s1 * s.leaf_parallel, 1), max(c1 * s.spine_parallel, 1)
    leaf0 = s.n_endpoints
    spine0 = leaf0 + s.n_leaves
    core0 = spine0 + s.n_spines
    if polarized:
        one = salt_hash(np.zeros(1, dtype=np.int64))

        def salt(ids: IntArray) -> U64Array:
            return one
    else:
        # hashed once per switch; one spare entry for the ids a missing tier yields (unused)
        table = salt_hash(np.arange(core0 + s.n_cores + 1, dtype=np.int64))

        def salt(ids: IntArray) -> U64Array:
            return table[ids]

    k1 = pick_salted(key, salt(leaf0 + g.la), n1)
    j, u = k1 // m1, k1 % m1
    k2 = pick_salted(key, salt(spine0 + g.pa * s1 + j), n2)
    c, x = k2 // m2, k2 % m2
    y = pick_salted(key, salt(core0 + j * c1 + c), m2) if m2 > 1 else np.zeros_like(k1)
    w = pick_salted(key, salt(spine0 + g.pb * s1 + j), m1) if m1 > 1 else np.zeros_like(k1)
    up, three = g.level >= 2, g.level == 3
    return Digits(j * up, u * up, w * up, c * three, x * three, y * three)


def adaptive_digits(
    s: ClosStructure,
    topology: Topology,
    g: ClosGeometry,
    key: U64Array,
    load: FloatArray,
    order: IntArray,
) -> Digits:
    """Adaptive routing: flows in ``order`` each take, at every hop, the uplink (or parallel
    downlink copy) with the least load so far, load counted as bytes ÷ link capacity and ``load``
    added per flow (InfiniBand adaptive routing picks the least-loaded allowed output at decision
    time; reference/transport.md §1.2). Ties go to the first least-loaded option at or after the
    flow's ECMP hash choice, cyclically, so equal loads give the ECMP route.

    A Python loop over flows on plain lists: each decision is one C-level ``min`` and ``index``
    over a list slice of the switch's candidate links (a contiguous run of cables)."""
    e, m1, m2 = s.n_endpoints, s.leaf_parallel, s.spine_parallel
    s1, c1 = s.spines_per_pod, s.cores_per_plane
    n1, n2 = s1 * m1, c1 * m2
    base = e + s.leaf_spine_cables
    hint = ecmp_digits(s, g, key, polarized=False)
    h1 = (hint.j * max(m1, 1) + hint.u).tolist()
    h2 = (hint.c * max(m2, 1) + hint.x).tolist()
    hy, hw = hint.y.tolist(), hint.w.tolist()
    inv_cap = (1.0 / topology.link_capacity).tolist()
    util = [0.0] * topology.n_links
    lv, la, lb = g.level.tolist(), g.la.tolist(), g.lb.tolist()
    pa, pb, ld = g.pa.tolist(), g.pb.tolist(), load.tolist()
    n = len(lv)
    jj, uu, ww, cc, xx, yy = ([0] * n for _ in range(6))

    def least(first: int, count: int, start: int) -> int:
        """Index of the least-utilised of links first, first+2, ... (count of them)."""
        seg = util[first : first + 2 * count : 2]
        m = min(seg)
        try:
            return seg.index(m, start)
        except ValueError:
            return seg.index(m)

    for i in order.tolist():
        level = lv[i]
        if level < 2:
            continue
        amount = ld[i]
        k = least(2 * (e + la[i] * n1), n1, h1[i]) if n1 > 1 else 0
        j, u = divmod(k, m1)
        link = 2 * (e + la[i] * n1 + k)
        util[link] += amount * inv_cap[link]
        if level == 3:
            k = least(2 * (base + (pa[i] * s1 + j) * n2), n2, h2[i]) if n2 > 1 else 0
            c, x = divmod(k, m2)
            link = 2 * (base + (pa[i] * s1 + j) * n2 + k)
            util[link] += amount * inv_cap[link]
            first = 2 * (base + ((pb[i] * s1 + j) * c1 + c) * m2) + 1
            y = least(first, m2, hy[i]) if m2 > 1 else 0
            util[first + 2 * y] += amount * inv_cap[first + 2 * y]
            cc[i], xx[i], yy[i] = c, x, y
        first = 2 * (e + (lb[i] * s1 + j) * m1) + 1
        w = least(first, m1, hw[i]) if m1 > 1 else 0
        util[first + 2 * w] += amount * inv_cap[first + 2 * w]
        jj[i], uu[i], ww[i] = j, u, w
    arr = [np.asarray(v, dtype=np.int64) for v in (jj, uu, ww, cc, xx, yy)]
    return Digits(*arr)


def spray_routes(s: ClosStructure, topology: Topology, g: ClosGeometry) -> Routes:
    """Per-packet spraying over every equal-cost route, with virtual aggregate links.

    Sprayed evenly, a flow puts the same share of its rate on every link of each group it
    crosses — all uplinks of the source leaf (V_up1), across pods all spine→core links of the
    source pod (V_up2) and all core→spine links into the destination pod (V_down2), and all
    spine→leaf links into the destination leaf (V_down1) — so each group behaves as one link of
    the summed capacity, and every member carries the group's load ÷ its size. The fluid model
    is exact for even spraying (no reordering or per-packet effects; equal member capacities, as
    the builders make).
    """
    e, m1, m2 = s.n_endpoints, s.leaf_parallel, s.spine_parallel
    s1, c1 = s.spines_per_pod, s.cores_per_plane
    n1, pod_up = s1 * m1, s1 * c1 * m2
    base = e + s.leaf_spine_cables
    lv = g.level
    span = max(s.n_leaves, s.n_pods)
    # group kinds: 0 up1(leaf), 1 down1(leaf), 2 up2(pod), 3 down2(pod)
    group_key = np.stack([g.la, span + g.lb, 2 * span + g.pa, 3 * span + g.pb], axis=1)
    used = np.stack([lv >= 2, lv >= 2, lv == 3, lv == 3], axis=1)
    keys, inverse = np.unique(group_key[used], return_inverse=True)
    vid = np.full(group_key.shape, -1, dtype=np.int64)
    vid[used] = topology.n_links + inverse.reshape(-1)
    kind, idx = keys // span, keys % span
    members: list[IntArray] = []
    for k, i in zip(kind.tolist(), idx.tolist(), strict=True):
        if k < 2:
            cables = e + i * n1 + np.arange(n1, dtype=np.int64)
        else:
            cables = base + i * pod_up + np.arange(pod_up, dtype=np.int64)
        members.append(2 * cables + (k % 2))
    capacity = np.array([topology.link_capacity[m].sum() for m in members], dtype=np.float64)
    none = np.full(len(lv), -1, dtype=np.int64)
    rows = np.stack(
        [
            np.where(lv >= 1, 2 * g.src, none),
            vid[:, 0],
            vid[:, 2],
            vid[:, 3],
            vid[:, 1],
            np.where(lv >= 1, 2 * g.dst + 1, none),
        ],
        axis=1,
    )
    # drop the padding inside rows: stable-sort each row's -1s to its end
    rows = np.take_along_axis(rows, np.argsort(rows < 0, axis=1, kind="stable"), axis=1)
    n = len(lv)
    flow, link, weight = aggregate(
        np.arange(n, dtype=np.int64), rows, np.ones(n), topology.n_links + len(members)
    )
    return Routes(
        flow=flow,
        link=link,
        weight=weight,
        n_flows=n,
        virtual_capacity=capacity,
        virtual_members=tuple(members),
        extra_latency=np.zeros(n),
        hops=2 * lv,
    )
