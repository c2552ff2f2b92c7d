"""The flow engine's view of a cluster: every link a collective's bytes can cross, as one array.

Link indices ``[0, L)`` are the scale-out topology's directed links
(:meth:`commwall.cluster.Cluster.scale_out_topology`), each carrying payload at line rate × the
fabric's wire efficiency (IB 26 B, RoCEv2 82 B of headers per MTU; ``cluster.wire_efficiency``).
Then every GPU has two scale-up links, ``out`` and ``in``, at its physical per-direction NVLink
bandwidth (links × per-link payload rate; NVLink through NVSwitch is non-blocking, so a GPU's own
ports are the only scale-up resource two transfers can share) or its PCIe x16 bandwidth on
PCIe-only nodes. Routing may append virtual aggregate links after those (packet spraying).

Hops map to links with the conventions of :mod:`commwall.engines.transfers`: GPU ``g`` is in
node ``g // gpus_per_node`` and scale-up domain ``g // scale_up_domain``; its own NIC is rail
``local · nics_per_node // gpus_per_node``; endpoint ``node · nics_per_node + rail`` of the
scale-out topology is that NIC. A hop whose NIC is not the GPU's own first crosses NVLink to the
GPU that owns it (NCCL's PXN, "PCI × NVLink", NCCL 2.12 release notes), at both ends.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from commwall.cluster import wire_efficiency
from commwall.engines.transfers import NETSWITCH, NVSWITCH
from commwall.topology.graph import LinkKind, NodeKind, Topology

if TYPE_CHECKING:
    from commwall.cluster import Cluster
    from commwall.routing import Routes

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class NetHops:
    """Hops that cross the scale-out fabric, as parallel arrays (one row per hop)."""

    row: IntArray  # index of the hop in the caller's hop arrays
    src_ep: IntArray  # scale-out endpoint (NIC) sending
    dst_ep: IntArray  # scale-out endpoint receiving; -1 = the NIC's own switch (SHARP)
    up_only: npt.NDArray[np.bool_]  # SHARP up (access link into the switch)
    down_only: npt.NDArray[np.bool_]  # SHARP down (access link out of the switch)


@dataclass(frozen=True)
class HopLinks:
    """Scale-up links of a batch of hops and the hops that need the scale-out fabric."""

    row: IntArray  # hop index of each scale-up link entry
    link: IntArray  # link index
    net: NetHops


class FlowNetwork:
    """Link arrays and hop → link mapping for one cluster."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.gpn = cluster.gpus_per_node
        self.rails = cluster.nics_per_node
        self.domain = cluster.scale_up_domain
        self.n_gpus = cluster.n_gpus

    # ---- links ---------------------------------------------------------------------------

    @cached_property
    def topology(self) -> Topology:
        """The scale-out fabric (built on first use: one-domain jobs never need it)."""
        return self.cluster.scale_out_topology()

    @cached_property
    def net_links(self) -> int:
        """Directed scale-out links (0 when the cluster is one scale-up domain)."""
        if self.cluster.n_domains <= 1:
            return 0
        return self.topology.n_links

    @property
    def scale_up_base(self) -> int:
        """Index of GPU 0's scale-up ``out`` link."""
        return self.net_links

    @property
    def n_links(self) -> int:
        """Real links: scale-out, then two per GPU."""
        return self.net_links + 2 * self.n_gpus

    @cached_property
    def scale_up_rate(self) -> float:
        """Physical per-GPU scale-up bandwidth per direction, bytes/s (× the cluster's
        calibrated scale-up factor, :mod:`commwall.calibration`)."""
        return self.cluster.scale_up_link_rate

    def capacity(self, fabric_scale: float = 1.0) -> FloatArray:
        """Payload capacity of every real link, bytes/s. ``fabric_scale`` shrinks the
        switch-to-switch links only (a cell fabric's cell headers; NIC ports carry plain packets)."""
        caps = np.full(self.n_links, self.scale_up_rate)
        if self.net_links:
            eff = wire_efficiency(self.cluster.fabric, self.cluster.mtu)
            t = self.topology
            scale = np.where(t.link_kind == LinkKind.ACCESS, 1.0, fabric_scale)
            # failed cables (capacity 0) carry no route; the fluid solver needs every link > 0
            net = eff * self.cluster.net_calibration.bandwidth_factor
            caps[: self.net_links] = np.maximum(t.link_capacity, 1.0) * net * scale
        return caps

    def virtual_capacity(self, routes: Routes | None) -> FloatArray:
        """Payload capacity of the routing's virtual (sprayed) links, which stand for switch
        links: line rate × wire efficiency × the routing's fabric scale."""
        if routes is None or not len(routes.virtual_capacity):
            return np.empty(0)
        eff = wire_efficiency(self.cluster.fabric, self.cluster.mtu)
        eff *= self.cluster.net_calibration.bandwidth_factor
        return np.asarray(routes.virtual_capacity, dtype=np.float64) * eff * routes.capacity_scale

    def link_name(self, link: int) -> str:
        """Human name of a link: ``GPU 12 NVLink out`` or ``leaf 3 → spine 1``."""
        if link >= self.net_links:
            gpu, direction = divmod(link - self.net_links, 2)
            medium = "NVLink" if self.cluster.scale_up == "nvlink" else "PCIe"
            if gpu >= self.n_gpus:
                return f"virtual link {link}"
            return f"GPU {gpu} {medium} {'in' if direction else 'out'}"
        t = self.topology
        a, b = int(t.link_src[link]), int(t.link_dst[link])
        return f"{self._node_name(a)} → {self._node_name(b)}"

    def bytes_by_class(self, link_bytes: FloatArray) -> dict[str, float]:
        """Bytes carried per link class (scale-up, access, leaf-spine, spine-core)."""
        totals = {"scale-up": float(link_bytes[self.net_links :].sum())}
        if self.net_links:
            t = self.topology
            moved = link_bytes[: self.net_links]
            access = t.link_kind == LinkKind.ACCESS
            totals["access (NIC-leaf)"] = float(moved[access].sum())
            for tier, name in ((2, "leaf-spine"), (3, "spine-core")):
                totals[name] = float(moved[~access & (t.link_tier == tier)].sum())
        return totals

    def link_class(self, link: int) -> str:
        """``scale-up``, ``access``, ``leaf-spine``, ``spine-core`` … for grouping."""
        if link >= self.net_links:
            return "scale-up"
        t = self.topology
        kind = LinkKind(int(t.link_kind[link]))
        if kind is LinkKind.ACCESS:
            return "access (NIC-leaf)"
        tier = int(t.link_tier[link])
        return {2: "leaf-spine", 3: "spine-core"}.get(tier, kind.name.lower())

    def _node_name(self, node: int) -> str:
        t = self.topology
        if int(t.node_tier[node]) == 0:
            n, r = divmod(node, self.rails)
            return f"node {n} NIC {r}"
        tier = int(t.node_tier[node])
        first = int(np.flatnonzero(t.node_tier == tier)[0])
        label = {1: "leaf", 2: "spine", 3: "core"}.get(tier, NodeKind.SWITCH.value)
        return f"{label} {node - first}"

    # ---- hops ----------------------------------------------------------------------------

    def own_rail(self, gpu: IntArray) -> IntArray:
        """Rail of each GPU's own NIC."""
        return (gpu % self.gpn) * self.rails // self.gpn

    def rail_gpu(self, node: IntArray, rail: IntArray) -> IntArray:
        """The first GPU of ``node`` whose own NIC is ``rail`` (PXN's proxy); with more NICs
        than GPUs, the GPU whose NICs include ``rail``."""
        if self.rails >= self.gpn:
            return node * self.gpn + rail * self.gpn // self.rails
        return node * self.gpn + (rail * self.gpn + self.rails - 1) // self.rails

    def hop_links(self, src: IntArray, dst: IntArray, rail: IntArray, *, pxn: bool) -> HopLinks:
        """Map hops to scale-up link entries and scale-out endpoint pairs (vectorised).

        ``rail`` −1 lets the engine choose: the sender's own NIC, or with ``pxn`` the receiver's
        (NCCL PXN moves the data over NVLink to the GPU on the destination's rail first).
        """
        src = np.asarray(src, dtype=np.int64)
        dst = np.asarray(dst, dtype=np.int64)
        rail = np.asarray(rail, dtype=np.int64)
        rows = np.arange(len(src), dtype=np.int64)
        base = self.scale_up_base
        rows_out: list[IntArray] = []
        links_out: list[IntArray] = []

        def su(mask: npt.NDArray[np.bool_], gpu: IntArray, direction: int) -> None:
            rows_out.append(rows[mask])
            links_out.append(base + 2 * gpu[mask] + direction)

        s_real, d_real = src >= 0, dst >= 0
        nvs_up, nvs_down = dst == NVSWITCH, src == NVSWITCH
        su(nvs_up & s_real, src, 0)
        su(nvs_down & d_real, dst, 1)
        both = s_real & d_real
        same = both & (np.maximum(src, 0) // self.domain == np.maximum(dst, 0) // self.domain)
        su(same, src, 0)
        su(same, dst, 1)
        sharp_up, sharp_down = (dst == NETSWITCH) & s_real, (src == NETSWITCH) & d_real
        net = both & ~same
        nets = net | sharp_up | sharp_down
        sender = np.where(s_real, src, dst)  # the GPU whose NIC a SHARP hop uses
        receiver = np.where(d_real, dst, src)
        chosen = np.where(rail >= 0, rail, np.where(pxn & net, self.own_rail(receiver), -1))
        r_src = np.where(chosen >= 0, chosen, self.own_rail(sender))
        r_dst = np.where(chosen >= 0, chosen, self.own_rail(receiver))
        # PXN legs: sender → proxy on its node, proxy on the far node → receiver
        node_s, node_d = sender // self.gpn, receiver // self.gpn
        proxy_s = self.rail_gpu(node_s, r_src)
        proxy_d = self.rail_gpu(node_d, r_dst)
        # a relay only when the NIC is not the GPU's own (GPUs may share one NIC)
        leg_s = (net | sharp_up) & (self.own_rail(sender) != r_src) & (proxy_s != sender)
        leg_d = (net | sharp_down) & (self.own_rail(receiver) != r_dst) & (proxy_d != receiver)
        su(leg_s, sender, 0)
        su(leg_s, proxy_s, 1)
        su(leg_d, proxy_d, 0)
        su(leg_d, receiver, 1)
        net_rows = rows[nets]
        net_hops = NetHops(
            row=net_rows,
            src_ep=(node_s * self.rails + r_src)[nets],
            dst_ep=np.where(net, node_d * self.rails + r_dst, -1)[nets],
            up_only=sharp_up[nets],
            down_only=sharp_down[nets],
        )
        if len(net_rows) and self.net_links == 0:
            raise ValueError("hops leave the scale-up domain of a one-domain cluster")
        return HopLinks(
            row=np.concatenate(rows_out) if rows_out else np.empty(0, np.int64),
            link=np.concatenate(links_out) if links_out else np.empty(0, np.int64),
            net=net_hops,
        )
