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

from commwall.topology import _checks as ck
from commwall.topology.graph import IntArray, LinkKind, Medium, NodeKind, Topology, TopologyError

__all__ = ["ARRANGEMENTS", "DragonflyStructure", "dragonfly"]

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
        # consecutive: the other groups in order; palm-tree: port block d-1 leads to group i - d
        q = (j if j < i else j - 1) if self.arrangement == "consecutive" else (i - j) % self.g - 1
        return q * self.parallel + copy

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
    a = ck.check_int("a", a, 1, "a group needs at least one router")
    p = ck.check_int("p", p, 1, "each router needs at least one host")
    h = ck.check_int("h", h, 0)
    most = a * h + 1
    groups = most if g is None else ck.check_int("g", g, 1)
    if groups > most:
        raise TopologyError(
            f"g={groups}: a dragonfly with a={a} routers per group and h={h} global links per "
            f"router joins at most a·h+1 = {most} groups (one global link between every pair, "
            f"Kim et al. ISCA'08); use g <= {most} or raise h"
        )
    if global_arrangement not in ARRANGEMENTS:
        raise TopologyError(
            f"global_arrangement={global_arrangement!r}: allowed: {', '.join(ARRANGEMENTS)}"
        )
    rate = ck.check_rate("link_rate", link_rate)
    latency = ck.check_time("switch_latency", switch_latency)
    m = a * h // (groups - 1) if groups > 1 else 0
    n_hosts = a * p * groups
    n_routers = a * groups
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
