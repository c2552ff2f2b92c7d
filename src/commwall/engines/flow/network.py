"""The flow engine's view of a cluster: the links a collective's bytes can cross, as one array.

The links are the cluster's link graph (:class:`commwall.engines.links.ClusterLinks`, shared with
the packet engine) up to its scale-up links: ``[0, L)`` the scale-out topology's directed links,
each carrying payload at line rate × the fabric's wire efficiency (IB 26 B, RoCEv2 82 B of
headers per MTU; ``cluster.wire_efficiency``), then every GPU's scale-up ``out`` and ``in``
links. The GPUs' PCIe attachments to their NICs are not loaded here (the flow model times a
network hop from NIC to NIC). Routing may append virtual aggregate links after these (packet
spraying).

Hops map to links with the graph's conventions: a hop inside a scale-up domain crosses the
sender's ``out`` and the receiver's ``in`` port; one that leaves it crosses the fabric between
the NIC endpoints :meth:`~commwall.engines.links.ClusterLinks.relays` gives (with NCCL's PXN
NVLink legs where the NIC is not the GPU's own).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from commwall.cluster import wire_efficiency
from commwall.engines.base import InvariantError
from commwall.engines.links import ClusterLinks
from commwall.engines.transfers import NETSWITCH, NVSWITCH
from commwall.topology.graph import LinkKind, Topology

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
    """Link capacities and hop → link mapping for one cluster."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.graph = ClusterLinks(cluster)
        self.domain = cluster.scale_up_domain

    # ---- links ---------------------------------------------------------------------------

    @property
    def topology(self) -> Topology:
        """The scale-out fabric (built on first use: one-domain jobs never need it)."""
        return self.graph.topology

    @property
    def net_links(self) -> int:
        """Directed scale-out links (0 when the cluster is one scale-up domain)."""
        return self.graph.net_links

    @property
    def scale_up_base(self) -> int:
        """Index of GPU 0's scale-up ``out`` link."""
        return self.graph.scale_up_base

    @property
    def n_links(self) -> int:
        """Real links: scale-out, then two per GPU."""
        return self.graph.scale_up_end

    def capacity(self, fabric_scale: float = 1.0) -> FloatArray:
        """Payload capacity of every real link, bytes/s. ``fabric_scale`` shrinks the
        switch-to-switch links only (a cell fabric's cell headers; NIC ports carry plain packets)."""
        eff = wire_efficiency(self.cluster.fabric, self.cluster.mtu)
        caps = self.graph.line_rate(payload_share=eff)[: self.n_links]
        if self.net_links:
            kind = self.topology.link_kind
            caps[: self.net_links] *= np.where(kind == LinkKind.ACCESS, 1.0, fabric_scale)
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
        return self.graph.link_name(link) if link < self.n_links else f"virtual link {link}"

    def link_class(self, link: int) -> str:
        """``scale-up``, ``access``, ``leaf-spine``, ``spine-core`` … for grouping."""
        return self.graph.link_class(link)

    def bytes_by_class(self, link_bytes: FloatArray) -> dict[str, float]:
        """Bytes carried per link class (scale-up, access, leaf-spine, spine-core)."""
        totals = {"scale-up": float(link_bytes[self.net_links : self.n_links].sum())}
        if self.net_links:
            t = self.topology
            moved = link_bytes[: self.net_links]
            access = t.link_kind == LinkKind.ACCESS
            totals["access (NIC-leaf)"] = float(moved[access].sum())
            for tier, name in ((2, "leaf-spine"), (3, "spine-core")):
                totals[name] = float(moved[~access & (t.link_tier == tier)].sum())
        return totals

    # ---- hops ----------------------------------------------------------------------------

    def hop_links(self, src: IntArray, dst: IntArray, rail: IntArray, *, pxn: bool) -> HopLinks:
        """Map hops to scale-up link entries and scale-out endpoint pairs (vectorised).

        ``rail`` −1 lets the engine choose: the sender's own NIC, or with ``pxn`` the receiver's
        (NCCL PXN moves the data over NVLink to the GPU on the destination's rail first).
        """
        src = np.asarray(src, dtype=np.int64)
        dst = np.asarray(dst, dtype=np.int64)
        rail = np.asarray(rail, dtype=np.int64)
        rows = np.arange(len(src), dtype=np.int64)
        rows_out: list[IntArray] = []
        links_out: list[IntArray] = []

        def su(mask: npt.NDArray[np.bool_], gpu: IntArray, inbound: int) -> None:
            rows_out.append(rows[mask])
            links_out.append(np.asarray(self.graph.scale_up_link(gpu[mask], bool(inbound))))

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
        at = self.graph.relays(sender, receiver, rail, pxn & net)
        # PXN legs: sender → proxy on its node, proxy on the far node → receiver
        leg_s = (net | sharp_up) & at.leg_src
        leg_d = (net | sharp_down) & at.leg_dst
        su(leg_s, sender, 0)
        su(leg_s, at.via_src, 1)
        su(leg_d, at.via_dst, 0)
        su(leg_d, receiver, 1)
        net_rows = rows[nets]
        net_hops = NetHops(
            row=net_rows,
            src_ep=at.ep_src[nets],
            dst_ep=np.where(net, at.ep_dst, -1)[nets],
            up_only=sharp_up[nets],
            down_only=sharp_down[nets],
        )
        if len(net_rows) and self.net_links == 0:
            raise InvariantError("hops leave the scale-up domain of a one-domain cluster")
        return HopLinks(
            row=np.concatenate(rows_out) if rows_out else np.empty(0, np.int64),
            link=np.concatenate(links_out) if links_out else np.empty(0, np.int64),
            net=net_hops,
        )
