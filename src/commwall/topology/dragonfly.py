"""Dragonfly (Kim, Dally, Scott, Abts, "Technology-Driven, Highly-Scalable Dragonfly Topology",
ISCA 2008): groups of ``a`` routers joined all-to-all by local links, ``p`` hosts and ``h`` global
links per router, at most ``g = a·h + 1`` groups (one global link between every pair), so
``N = a·p·(a·h + 1)`` hosts on routers of radix ``p + (a − 1) + h``; balanced when a = 2p = 2h.

Routes (``path_fn``) are the minimal (MIN) routes: local hop to the router holding a global link
to the destination group, the global link, local hop to the destination router — one route per
global link joining the two groups. They are at most 3 router hops but not always the graph's
shortest paths (two global hops can be shorter); Valiant/UGAL routing lives in ``routing/``.

>>> t = dragonfly(a=4, p=2, h=2)
>>> t.params["g"], t.counts().endpoints, t.params["router_radix"]
(9, 72, 7)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

import numpy as np
import numpy.typing as npt

from commwall.checks import whole
from commwall.topology import _checks as ck
from commwall.topology.fat_tree import MAX_ENDPOINTS, MAX_RADIX
from commwall.topology.graph import IntArray, LinkKind, Medium, NodeKind, Topology, TopologyError

__all__ = [
    "ARRANGEMENTS",
    "DragonflyPlusStructure",
    "DragonflyStructure",
    "dragonfly",
    "dragonfly_plus",
]

Arrangement = Literal["consecutive", "palm-tree"]
ARRANGEMENTS: Final = ("consecutive", "palm-tree")


@dataclass(frozen=True, eq=False)
class DragonflyStructure:
    """A dragonfly in a few integers plus the global wiring; implements ``PathOracle``.

    Hosts ``(group·a + router)·p + k``; routers follow the hosts. Cables: host cables, then
    local cables per group ordered (x < y), then global cables. ``port_link[i, t]`` is the
    directed link leaving group ``i`` through its global port ``t`` (router ``t // h``), -1 when
    the port is unused; ``port_peer[i, t]`` the router (within its group) it lands on.
    """

    a: int
    p: int
    h: int
    g: int
    parallel: int  # global links between each pair of groups
    arrangement: str
    port_link: npt.NDArray[np.int64]
    port_peer: npt.NDArray[np.int64]

    @property
    def n_hosts(self) -> int:
        return self.a * self.p * self.g

    @property
    def local_per_group(self) -> int:
        return self.a * (self.a - 1) // 2

    def port(self, i: int, j: int, copy: int) -> int:
        """Global port of group ``i`` holding copy ``copy`` of its link to group ``j``."""
        return _port(i, j, copy, self.g, self.parallel, self.arrangement)

    def local_link(self, group: int, x: int, y: int) -> int:
        """Directed local link from router ``x`` to router ``y`` of ``group``."""
        lo, hi = min(x, y), max(x, y)
        cable = (
            self.n_hosts
            + group * self.local_per_group
            + lo * self.a
            - lo * (lo + 1) // 2
            + (hi - lo - 1)
        )
        return 2 * cable + (0 if x < y else 1)

    def _split(self, host: int) -> tuple[int, int]:
        router = host // self.p
        return router // self.a, router % self.a

    def count(self, src: int, dst: int) -> int:
        """MIN routes from host ``src`` to ``dst``: 1 inside a group, else one per global link
        joining the two groups (``parallel``)."""
        for name, v in (("src", src), ("dst", dst)):
            if not 0 <= v < self.n_hosts:
                raise TopologyError(f"{name}={v}: not a host; hosts are 0..{self.n_hosts - 1}")
        gs, gd = src // (self.a * self.p), dst // (self.a * self.p)
        return 1 if gs == gd else self.parallel

    def links(self, src: int, dst: int, index: int) -> IntArray:
        """Link indices of MIN route ``index`` (the ``index``-th global link between the groups)."""
        if src == dst:
            return np.empty(0, dtype=np.int64)
        (gs, rs), (gd, rd) = self._split(src), self._split(dst)
        route = [2 * src]
        if gs == gd:
            if rs != rd:
                route.append(self.local_link(gs, rs, rd))
        else:
            t = self.port(gs, gd, index)
            x, y = t // self.h, int(self.port_peer[gs, t])
            if rs != x:
                route.append(self.local_link(gs, rs, x))
            route.append(int(self.port_link[gs, t]))
            if y != rd:
                route.append(self.local_link(gd, y, rd))
        route.append(2 * dst + 1)
        return np.array(route, dtype=np.int64)

    def counts_many(self, src: IntArray, dst: IntArray) -> IntArray:
        """:meth:`count` of every pair ``src[i] → dst[i]`` (vectorised; hosts must be valid)."""
        per_group = self.a * self.p
        return np.where(src // per_group == dst // per_group, 1, self.parallel).astype(np.int64)

    def ports_many(self, i: IntArray, j: IntArray, copy: IntArray) -> IntArray:
        """:meth:`port` of every ``(i[k], j[k], copy[k])`` (vectorised)."""
        consecutive = self.arrangement == "consecutive"
        q = np.where(j < i, j, j - 1) if consecutive else (i - j) % self.g - 1
        return q * self.parallel + copy

    def local_links_many(self, group: IntArray, x: IntArray, y: IntArray) -> IntArray:
        """:meth:`local_link` of every ``(group[k], x[k], y[k])`` (vectorised; ``x != y``)."""
        lo, hi = np.minimum(x, y), np.maximum(x, y)
        cable = self.n_hosts + group * self.local_per_group + lo * self.a - lo * (lo + 1) // 2
        link: IntArray = 2 * (cable + hi - lo - 1) + (x > y)
        return link

    def links_many(self, src: IntArray, dst: IntArray, index: IntArray) -> IntArray:
        """:meth:`links` of every pair as rows padded with −1 to the diameter (vectorised): the
        same links in the same order as one call per pair."""
        n = len(src)
        out = np.full((n, max(self.diameter(), 2)), -1, dtype=np.int64)
        routers_s, routers_d = src // self.p, dst // self.p
        gs, rs, gd, rd = (
            routers_s // self.a,
            routers_s % self.a,
            routers_d // self.a,
            routers_d % self.a,
        )
        col = np.zeros(n, dtype=np.int64)
        rows = np.arange(n)

        def put(mask: npt.NDArray[np.bool_], link: IntArray) -> None:
            out[rows[mask], col[mask]] = link[mask]
            col[mask] += 1

        real = src != dst
        put(real, 2 * src)
        same = real & (gs == gd)
        other = real & ~same
        safe_d = np.where(other, gd, (gs + 1) % max(self.g, 1))
        t = self.ports_many(gs, safe_d, np.where(other, index, 0))
        t = np.where(other, t, 0)
        x, y = t // self.h, self.port_peer[gs, t]
        put(
            same & (rs != rd),
            self.local_links_many(gs, rs, np.where(rs != rd, rd, (rs + 1) % self.a)),
        )
        put(
            other & (rs != x),
            self.local_links_many(gs, rs, np.where(rs != x, x, (rs + 1) % self.a)),
        )
        put(other, self.port_link[gs, t])
        put(
            other & (y != rd),
            self.local_links_many(gd, np.where(y != rd, y, (rd + 1) % self.a), rd),
        )
        put(real, 2 * dst + 1)
        return out

    def average_hops(self) -> float:
        """Mean links per MIN route over ordered pairs of distinct hosts (routes weighted equally):
        2 on one router, 3 in one group, 3 + 2(a−1)/a across groups."""
        a, p, g = self.a, self.p, self.g
        same_router = a * g * p * (p - 1)
        same_group = g * a * (a - 1) * p * p
        other = g * (g - 1) * (a * p) ** 2
        total = same_router + same_group + other
        if total == 0:
            return 0.0
        cross = 3 + 2 * (a - 1) / a
        return (2 * same_router + 3 * same_group + cross * other) / total

    def diameter(self) -> int:
        """Most links on a MIN route between two hosts (5 once a > 1 and g > 1)."""
        a, p, g = self.a, self.p, self.g
        if g > 1:
            return 3 + 2 * (a > 1)
        if a > 1:
            return 3
        return 2 if p > 1 else 0


def _port(i: int, j: int, copy: int, g: int, m: int, arrangement: str) -> int:
    """Global port of group ``i`` holding copy ``copy`` of its link to group ``j``."""
    # consecutive: the other groups in order; palm-tree: port block d-1 leads to group i - d
    q = (j if j < i else j - 1) if arrangement == "consecutive" else (i - j) % g - 1
    return q * m + copy


def _global_wiring(
    a: int, h: int, g: int, m: int, arrangement: str
) -> tuple[IntArray, IntArray, IntArray, IntArray]:
    """(group i, port t, group j, port t') of every used global port, vectorised."""
    ports = m * (g - 1)
    i = np.repeat(np.arange(g, dtype=np.int64), ports)
    t = np.tile(np.arange(ports, dtype=np.int64), g)
    q, c = t // m, t % m
    if arrangement == "consecutive":  # port block q leads to the q-th other group in order
        j = np.where(q < i, q, q + 1)
        q_back = np.where(i < j, i, i - 1)
    else:  # palm-tree: port block q leads to group i - (q + 1)
        j = (i - q - 1) % g
        q_back = g - q - 2
    return i, t, j, q_back * m + c


def _global_groups(
    g: int | None, globals_per_group: int, arrangement: str, too_many: str
) -> tuple[int, int]:
    """(groups, parallel global links per group pair) of a dragonfly-style fabric whose groups
    each have ``globals_per_group`` global links: at most one more group than that, and the links
    spread evenly over the other groups. ``too_many`` explains the limit."""
    most = globals_per_group + 1
    groups = most if g is None else whole("g", g, 1, error=TopologyError)
    if groups > most:
        raise TopologyError(f"g={groups}: {too_many}")
    if arrangement not in ARRANGEMENTS:
        raise TopologyError(
            f"global_arrangement={arrangement!r}: allowed: {', '.join(ARRANGEMENTS)}"
        )
    return groups, (globals_per_group // (groups - 1) if groups > 1 else 0)


def _check_size(switches: list[tuple[str, int]], hosts: tuple[str, int]) -> None:
    """The Clos builders' size limits, before any array is allocated: each ``(what, ports)``
    switch at most :data:`MAX_RADIX` ports, ``hosts = (what, count)`` at most
    :data:`MAX_ENDPOINTS`."""
    for what, ports in switches:
        if ports > MAX_RADIX:
            raise TopologyError(
                f"{what} = {ports:,} ports; at most {MAX_RADIX:,} per switch (the largest "
                "ASICs have 512)"
            )
    what, count = hosts
    if count > MAX_ENDPOINTS:
        raise TopologyError(f"{what}: {count:,} hosts; commwall builds at most {MAX_ENDPOINTS:,}")


def dragonfly(
    a: int,
    p: int,
    h: int,
    g: int | None = None,
    global_arrangement: Arrangement = "consecutive",
    link_rate: str | float = ck.DEFAULT_LINK_RATE,
    switch_latency: str | float = ck.DEFAULT_SWITCH_LATENCY,
) -> Topology:
    """A dragonfly of ``g`` groups (default and at most ``a·h + 1``) of ``a`` routers, each with
    ``p`` hosts and ``h`` global links (Kim et al., ISCA 2008, §3). With fewer groups each pair of
    groups gets ``a·h // (g − 1)`` parallel global links and left-over ports stay unused.

    ``global_arrangement``: ``"consecutive"`` (group i's global ports lead to the other groups in
    increasing order) or ``"palm-tree"`` (port block d−1 leads to group i − d), as compared by
    Camarero, Vallejo, Beivide, ACM TACO 2014.

    >>> dragonfly(32, 16, 16).counts().endpoints  # 32·16·(32·16+1) (topology.md §4)
    262656
    """
    a = whole("a", a, 1, why="a group needs at least one router", error=TopologyError)
    p = whole("p", p, 1, why="each router needs at least one host", error=TopologyError)
    h = whole("h", h, 0, error=TopologyError)
    groups, m = _global_groups(
        g, a * h, global_arrangement,
        f"a dragonfly with a={a} routers per group and h={h} global links per router joins at "
        f"most a·h+1 = {a * h + 1} groups (one global link between every pair, Kim et al. "
        f"ISCA'08); use g <= {a * h + 1} or raise h",
    )  # fmt: skip
    rate = ck.check_rate("link_rate", link_rate)
    latency = ck.check_time("switch_latency", switch_latency)
    n_hosts = a * p * groups
    n_routers = a * groups
    _check_size(
        [(f"a={a:,}, p={p:,}, h={h:,}: a router needs a-1+p+h", a - 1 + p + h)],
        (f"a={a:,}, p={p:,}, g={groups:,}", n_hosts),
    )
    router0 = n_hosts

    # host cables
    host_a = np.arange(n_hosts, dtype=np.int64)
    host_b = router0 + host_a // p
    # local cables: every pair x < y inside each group
    x, y = np.triu_indices(a, k=1)
    grp = np.repeat(np.arange(groups, dtype=np.int64), len(x))
    loc_a = router0 + grp * a + np.tile(x, groups)
    loc_b = router0 + grp * a + np.tile(y, groups)
    # global cables: each used port pair once (from the lower group)
    port_link = np.full((groups, a * h), -1, dtype=np.int64)
    port_peer = np.full((groups, a * h), -1, dtype=np.int64)
    if m:
        gi, t, gj, t_back = _global_wiring(a, h, groups, m, global_arrangement)
        keep = gi < gj
        gi, t, gj, t_back = gi[keep], t[keep], gj[keep], t_back[keep]
        glob_a = router0 + gi * a + t // h
        glob_b = router0 + gj * a + t_back // h
        cable = n_hosts + len(loc_a) + np.arange(len(gi), dtype=np.int64)
        port_link[gi, t], port_link[gj, t_back] = 2 * cable, 2 * cable + 1
        port_peer[gi, t], port_peer[gj, t_back] = t_back // h, t // h
    else:
        glob_a = glob_b = np.empty(0, dtype=np.int64)
    sizes = (n_hosts, len(loc_a), len(glob_a))
    length = np.repeat([ck.ACCESS_LENGTH_M, ck.LOCAL_LENGTH_M, ck.GLOBAL_LENGTH_M], sizes)
    s_per_m = np.repeat([ck.COPPER_S_PER_M, ck.COPPER_S_PER_M, ck.FIBRE_S_PER_M], sizes)
    structure = DragonflyStructure(
        a=a,
        p=p,
        h=h,
        g=groups,
        parallel=m,
        arrangement=global_arrangement,
        port_link=port_link,
        port_peer=port_peer,
    )
    tier = np.zeros(n_hosts + n_routers, dtype=np.int8)
    tier[router0:] = 1
    kind = np.full(n_hosts + n_routers, NodeKind.SWITCH.code, dtype=np.int8)
    kind[:n_hosts] = NodeKind.NIC.code
    group = np.concatenate([host_a // (a * p), np.arange(n_routers) // a]).astype(np.int32)
    topo = Topology.from_cables(
        f"dragonfly a={a} p={p} h={h} g={groups}",
        node_kind=kind,
        node_tier=tier,
        node_group=group,
        cable_a=np.concatenate([host_a, loc_a, glob_a]),
        cable_b=np.concatenate([host_b, loc_b, glob_b]),
        capacity=rate,
        latency=length * s_per_m,
        length_m=length,
        medium=np.repeat([Medium.COPPER, Medium.COPPER, Medium.FIBRE], sizes),
        kind=np.repeat([LinkKind.ACCESS, LinkKind.LOCAL, LinkKind.GLOBAL], sizes),
        params={
            "kind": "dragonfly",
            "a": a,
            "p": p,
            "h": h,
            "g": groups,
            "global_arrangement": global_arrangement,
            "global_links_per_group_pair": m,
            "unused_global_ports_per_group": a * h - m * (groups - 1) if groups > 1 else a * h,
            "router_radix": p + (a - 1) + h,
            "balanced": a == 2 * p == 2 * h,
            "endpoints": n_hosts,
            "routers": n_routers,
            "tiers": 1,
            "link_rate": rate,
            "switch_latency": latency,
        },
        path_fn=structure,
    )
    return topo.validate()


# ---- Dragonfly+ ------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class DragonflyPlusStructure:
    """A Dragonfly+ in a few integers plus the global wiring; implements ``PathOracle``.

    Hosts ``(group·l + leaf)·p + k``, then leaves ``group·l + leaf``, then spines
    ``group·s + spine``. Cables: host cables, leaf–spine cables ``(group·l + leaf)·s + spine``
    (link ``2c`` goes up), then global cables between spines. ``port_link[i, t]``: directed link
    leaving group ``i`` through global port ``t`` (spine ``t // h``), -1 if unused;
    ``port_peer[i, t]``: the spine (within its group) it lands on.
    """

    p: int
    l: int  # noqa: E741  (the paper's symbol)
    s: int
    h: int
    g: int
    parallel: int  # global links between each pair of groups
    arrangement: str
    port_link: npt.NDArray[np.int64]
    port_peer: npt.NDArray[np.int64]

    @property
    def n_hosts(self) -> int:
        return self.g * self.l * self.p

    def _up(self, group: int, leaf: int, spine: int) -> int:
        return 2 * (self.n_hosts + (group * self.l + leaf) * self.s + spine)

    def count(self, src: int, dst: int) -> int:
        """MIN routes: 1 on one leaf, ``s`` (one per spine) in one group, else one per global
        link joining the two groups (``parallel``)."""
        for name, v in (("src", src), ("dst", dst)):
            if not 0 <= v < self.n_hosts:
                raise TopologyError(f"{name}={v}: not a host; hosts are 0..{self.n_hosts - 1}")
        ls, ld = src // self.p, dst // self.p
        if ls == ld:
            return 1
        return self.s if ls // self.l == ld // self.l else self.parallel

    def links(self, src: int, dst: int, index: int) -> IntArray:
        """Link indices of MIN route ``index``: up to a spine (the ``index``-th spine in a group,
        else the spine holding the ``index``-th global link), across, down."""
        if src == dst:
            return np.empty(0, dtype=np.int64)
        (gs, ls), (gd, ld) = divmod(src // self.p, self.l), divmod(dst // self.p, self.l)
        route = [2 * src]
        if (gs, ls) != (gd, ld):
            if gs == gd:
                route += [self._up(gs, ls, index), self._up(gd, ld, index) + 1]
            else:
                t = _port(gs, gd, index, self.g, self.parallel, self.arrangement)
                x, y = t // self.h, int(self.port_peer[gs, t])
                route += [self._up(gs, ls, x), int(self.port_link[gs, t]), self._up(gd, ld, y) + 1]
        route.append(2 * dst + 1)
        return np.array(route, dtype=np.int64)

    def average_hops(self) -> float:
        """Mean links per MIN route over ordered pairs of distinct hosts: 2 on one leaf, 4 in
        one group, 5 across groups."""
        p, n, g = self.p, self.l, self.g  # n: leaves per group
        leaf = g * n * p * (p - 1)
        group = g * n * (n - 1) * p * p
        other = g * (g - 1) * (n * p) ** 2
        total = leaf + group + other
        return (2 * leaf + 4 * group + 5 * other) / total if total else 0.0

    def diameter(self) -> int:
        """Most links on a MIN route (5 once there are two groups)."""
        if self.g > 1:
            return 5
        return 4 if self.l > 1 else (2 if self.p > 1 else 0)

    def bisection_side(self) -> npt.NDArray[np.bool_]:
        """The halves :meth:`bisection_links` assumes, as a mask over hosts: the first
        ⌊g/2⌋ groups (one group: its first ⌊l/2⌋ leaves)."""
        host = np.arange(self.n_hosts)
        if self.g > 1:
            return host // (self.l * self.p) < self.g // 2
        return host // self.p < self.l // 2

    def bisection_links(self) -> int | None:
        """Max flow between the :meth:`bisection_side` halves, in links (all links equal);
        None when a spine has more global than leaf links (``l < h``), where cuts through single
        spines can be smaller and no closed form is given (use ``bisection_bandwidth_maxflow``).

        One group: ⌊l/2⌋·min(p, s) (each leaf pushes min(p, s) up). Several: the least group-level
        cut. A group either stays whole on its side or is cut below its spines (l·min(p, s)
        links) with its spines joining the other side; global links between the spine sides
        cost ``parallel`` per group pair. With x of the ⌊g/2⌋ A groups and y of the B groups
        whole: min over x, y of l·min(p,s)·(g − x − y) + m·(x + g_B − y)·(g_A − x + y), which
        includes the global cut g_A·g_B·m (Shpiner et al. HiPINEB 2017 give the global-link
        count; the cut enumeration is ours; max-flow agrees on every instance tested with
        l >= h, ~900 of them, and finds smaller cuts for some with l < h).
        """
        if self.l < self.h:
            return None
        c = self.l * min(self.p, self.s)
        if self.g == 1:
            return self.l // 2 * min(self.p, self.s)
        ga, gb, m = self.g // 2, self.g - self.g // 2, self.parallel
        x = np.arange(ga + 1)[:, None]
        y = np.arange(gb + 1)[None, :]
        cut = c * (self.g - x - y) + m * (x + gb - y) * (ga - x + y)
        return int(cut.min())


def dragonfly_plus(
    p: int,
    l: int,  # noqa: E741  (the paper's symbol)
    s: int,
    h: int,
    g: int | None = None,
    global_arrangement: Arrangement = "consecutive",
    link_rate: str | float = ck.DEFAULT_LINK_RATE,
    switch_latency: str | float = ck.DEFAULT_SWITCH_LATENCY,
) -> Topology:
    """A Dragonfly+ (Shpiner, Haramaty, Eliad, Zdornov, Gafni, Zahavi, "Dragonfly+: Low Cost
    Topology for Scaling Datacenters", HiPINEB 2017; topology.md §4): ``g`` groups, each a
    2-level fat tree of ``l`` leaves (``p`` hosts each) and ``s`` spines, every leaf cabled to
    every spine; each spine has ``h`` global links. At most ``s·h + 1`` groups (the default;
    one global link per group pair); with fewer, each pair gets ``s·h // (g − 1)`` parallel
    links. Leaf radix p + s, spine radix l + h; with radix-k switches and p = l = s = h = k/2 a
    group holds k²/4 hosts at full bisection and N = (k²/4)(k²/4 + 1).

    Routes (``path_fn``) are MIN: leaf -> spine (-> global -> spine) -> leaf.
    ``params["bisection_bandwidth"]`` (bytes/s, one direction, halves of whole groups) is the
    closed form :meth:`DragonflyPlusStructure.bisection_links` × ``link_rate``; None when
    l < h (see there).

    >>> t = dragonfly_plus(2, 2, 2, 2)
    >>> t.params["g"], t.counts().endpoints, t.counts().by_kind["global"]
    (5, 20, 10)
    >>> dragonfly_plus(20, 20, 20, 20).params["endpoints"]  # k = 40 (topology.md §4)
    160400
    """
    p = whole("p", p, 1, why="each leaf needs at least one host", error=TopologyError)
    l = whole("l", l, 1, why="a group needs at least one leaf", error=TopologyError)  # noqa: E741
    s = whole("s", s, 1, why="a group needs at least one spine", error=TopologyError)
    h = whole("h", h, 0, error=TopologyError)
    groups, m = _global_groups(
        g, s * h, global_arrangement,
        f"a Dragonfly+ with s={s} spines per group and h={h} global links per spine joins at "
        f"most s·h+1 = {s * h + 1} groups (one global link between every pair); use "
        f"g <= {s * h + 1} or raise s or h",
    )  # fmt: skip
    rate = ck.check_rate("link_rate", link_rate)
    latency = ck.check_time("switch_latency", switch_latency)
    n_hosts = groups * l * p
    given = f"p={p:,}, l={l:,}, s={s:,}, h={h:,}"
    _check_size(
        [(f"{given}: a leaf needs p+s", p + s), (f"{given}: a spine needs l+h", l + h)],
        (f"p={p:,}, l={l:,}, g={groups:,}", n_hosts),
    )
    leaf0 = n_hosts
    spine0 = leaf0 + groups * l
    n_nodes = spine0 + groups * s

    host_a = np.arange(n_hosts, dtype=np.int64)
    host_b = leaf0 + host_a // p
    leaf = np.repeat(np.arange(groups * l, dtype=np.int64), s)  # global leaf index
    loc_a = leaf0 + leaf
    loc_b = spine0 + leaf // l * s + np.tile(np.arange(s, dtype=np.int64), groups * l)
    port_link = np.full((groups, s * h), -1, dtype=np.int64)
    port_peer = np.full((groups, s * h), -1, dtype=np.int64)
    if m:
        gi, t, gj, t_back = _global_wiring(s, h, groups, m, global_arrangement)
        keep = gi < gj
        gi, t, gj, t_back = gi[keep], t[keep], gj[keep], t_back[keep]
        glob_a = spine0 + gi * s + t // h
        glob_b = spine0 + gj * s + t_back // h
        cable = n_hosts + len(loc_a) + np.arange(len(gi), dtype=np.int64)
        port_link[gi, t], port_link[gj, t_back] = 2 * cable, 2 * cable + 1
        port_peer[gi, t], port_peer[gj, t_back] = t_back // h, t // h
    else:
        glob_a = glob_b = np.empty(0, dtype=np.int64)
    structure = DragonflyPlusStructure(
        p=p,
        l=l,
        s=s,
        h=h,
        g=groups,
        parallel=m,
        arrangement=global_arrangement,
        port_link=port_link,
        port_peer=port_peer,
    )
    links = structure.bisection_links()
    # leaf–spine cables span a group's racks (fibre, leaf–spine length); global links are long
    sizes = (n_hosts, len(loc_a), len(glob_a))
    length = np.repeat([ck.ACCESS_LENGTH_M, ck.LEAF_SPINE_LENGTH_M, ck.GLOBAL_LENGTH_M], sizes)
    s_per_m = np.repeat([ck.COPPER_S_PER_M, ck.FIBRE_S_PER_M, ck.FIBRE_S_PER_M], sizes)
    tier = np.zeros(n_nodes, dtype=np.int8)
    tier[leaf0:spine0], tier[spine0:] = 1, 2
    kind = np.full(n_nodes, NodeKind.SWITCH.code, dtype=np.int8)
    kind[:n_hosts] = NodeKind.NIC.code
    group = np.concatenate(
        [host_a // (l * p), np.arange(groups * l) // l, np.arange(groups * s) // s]
    ).astype(np.int32)
    topo = Topology.from_cables(
        f"dragonfly+ p={p} l={l} s={s} h={h} g={groups}",
        node_kind=kind,
        node_tier=tier,
        node_group=group,
        cable_a=np.concatenate([host_a, loc_a, glob_a]),
        cable_b=np.concatenate([host_b, loc_b, glob_b]),
        capacity=rate,
        latency=length * s_per_m,
        length_m=length,
        medium=np.repeat([Medium.COPPER, Medium.FIBRE, Medium.FIBRE], sizes),
        kind=np.repeat([LinkKind.ACCESS, LinkKind.LOCAL, LinkKind.GLOBAL], sizes),
        params={
            "kind": "dragonfly-plus",
            "p": p,
            "l": l,
            "s": s,
            "h": h,
            "g": groups,
            "max_groups": s * h + 1,
            "global_arrangement": global_arrangement,
            "global_links_per_group_pair": m,
            "unused_global_ports_per_group": s * h - m * (groups - 1) if groups > 1 else s * h,
            "leaf_radix": p + s,
            "spine_radix": l + h,
            "balanced": p == l == s == h,
            "endpoints": n_hosts,
            "leaves": groups * l,
            "spines": groups * s,
            "routers": groups * (l + s),
            "tiers": 2,
            "link_rate": rate,
            "switch_latency": latency,
            "bisection_bandwidth": None if links is None else links * rate,
        },
        path_fn=structure,
    )
    return topo.validate()
