"""One cluster's link graph: the single owner of how GPUs, NICs and switches connect.

The flow engine (:mod:`commwall.engines.flow`) and the packet engine
(:mod:`commwall.engines.packet`) both run on :class:`ClusterLinks`; neither builds links of its
own.

**Nodes**, in this order: the scale-out topology's nodes
(:meth:`commwall.cluster.Cluster.scale_out_topology`; its endpoint ``node · nics_per_node +
rail`` is that node's NIC on ``rail``), then one node per GPU, then one scale-up switch per
scale-up domain (NVSwitch, or the PCIe switch of a PCIe-only node).

**Links**, directed, in this order:

- ``[0, L)``: the scale-out topology's links, ``L = 0`` when the cluster is one scale-up domain
  (it has no fabric);
- per GPU ``g``: ``L + 2g`` GPU → its scale-up switch, ``L + 2g + 1`` back, at the GPU's physical
  per-direction NVLink rate (:attr:`commwall.cluster.Cluster.scale_up_link_rate`: NVLink through
  NVSwitch is non-blocking, so a GPU's own ports are the only scale-up resource two transfers can
  share) or PCIe x16 on PCIe-only nodes;
- with a fabric, per GPU ``g``: ``P + 2g`` GPU → its own NIC over PCIe (GPUDirect RDMA) and
  ``P + 2g + 1`` back, ``P = L + 2·n_gpus``, at PCIe x16 and
  :data:`PCIE_ATTACH_LATENCY` (plus :data:`~commwall.cluster.HOST_BOUNCE_LATENCY` without
  GPUDirect RDMA).

**Rails and PXN** (the conventions of :mod:`commwall.engines.transfers`): a GPU's own NIC is
:meth:`~commwall.cluster.Cluster.own_rail`. A hop that leaves the scale-up domain on a NIC that is
not its GPU's own first crosses NVLink to the GPU that owns that NIC
(:meth:`~commwall.cluster.Cluster.rail_gpu`), at both ends: NCCL's PXN, "PCI × NVLink" (NCCL 2.12
release notes). :meth:`ClusterLinks.relays` works this out for a batch of hops.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Final

import numpy as np
import numpy.typing as npt

from commwall.cluster import HOST_BOUNCE_LATENCY
from commwall.topology.graph import LinkKind, Topology

if TYPE_CHECKING:
    from commwall.cluster import Cluster

__all__ = ["PCIE_ATTACH_LATENCY", "ClusterLinks", "Relays", "switch_label"]

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

#: PCIe latency from a GPU to its NIC with GPUDirect RDMA, one way (estimate, ours: a PCIe
#: switch hop on the order of 100s of ns).
PCIE_ATTACH_LATENCY: Final = 500e-9


def switch_label(topology: Topology, node: int) -> str:
    """``host 12``, ``leaf 3``, ``spine 1``, ``core 0``, ``router 5`` (dragonfly): a topology
    node's tier name, numbered within its tier."""
    tier = int(topology.node_tier[node])
    tiers = topology.node_tier
    first = int(np.searchsorted(tiers, tier)) if bool(np.all(np.diff(tiers) >= 0)) else 0
    name = {0: "host", 1: "leaf", 2: "spine", 3: "core"}.get(tier, f"tier-{tier}")
    if topology.params.get("kind") == "dragonfly" and tier == 1:
        name = "router"
    return f"{name} {node - first}"


@dataclass(frozen=True)
class Relays:
    """Where each GPU-to-GPU hop of a batch meets the scale-out fabric (parallel arrays).

    ``via_src`` sends on NIC endpoint ``ep_src`` (the sender itself, or with ``leg_src`` the GPU
    that owns the chosen NIC, reached over NVLink first); ``via_dst`` receives on ``ep_dst``.
    """

    ep_src: IntArray
    ep_dst: IntArray
    via_src: IntArray
    via_dst: IntArray
    leg_src: BoolArray
    leg_dst: BoolArray


class ClusterLinks:
    """Nodes, links and hop placement of one cluster (module doc)."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.gpn = cluster.gpus_per_node
        self.rails = cluster.nics_per_node
        self.domain = cluster.scale_up_domain
        self.n_gpus = cluster.n_gpus
        self.n_switches = max(1, -(-self.n_gpus // self.domain))

    # ---- numbering -----------------------------------------------------------------------

    @cached_property
    def topology(self) -> Topology:
        """The scale-out fabric (built on first use: one-domain jobs never need it)."""
        return self.cluster.scale_out_topology()

    @property
    def has_fabric(self) -> bool:
        """Whether the cluster spans more than one scale-up domain (so has a scale-out fabric)."""
        return self.cluster.n_domains > 1

    @cached_property
    def net_links(self) -> int:
        """Directed scale-out links, ``L`` (0 without a fabric)."""
        return self.topology.n_links if self.has_fabric else 0

    @cached_property
    def net_nodes(self) -> int:
        """Scale-out topology nodes (0 without a fabric)."""
        return self.topology.n_nodes if self.has_fabric else 0

    @property
    def gpu0(self) -> int:
        """Node index of GPU 0."""
        return self.net_nodes

    @property
    def switch0(self) -> int:
        """Node index of scale-up switch 0."""
        return self.net_nodes + self.n_gpus

    @property
    def n_nodes(self) -> int:
        """Nodes of the graph."""
        return self.switch0 + self.n_switches

    @property
    def scale_up_base(self) -> int:
        """Index of GPU 0's scale-up ``out`` link."""
        return self.net_links

    @property
    def scale_up_end(self) -> int:
        """One past the last scale-up link (scale-out and scale-up links: ``[0, scale_up_end)``)."""
        return self.net_links + 2 * self.n_gpus

    @property
    def pcie_base(self) -> int:
        """Index of GPU 0's PCIe link to its NIC (with a fabric)."""
        return self.scale_up_end

    @property
    def n_links(self) -> int:
        """Every link of the graph."""
        return self.scale_up_end + (2 * self.n_gpus if self.has_fabric else 0)

    def scale_up_link(self, gpu: IntArray | int, inbound: bool) -> IntArray | int:
        """GPU ``gpu``'s scale-up link out of it (``inbound`` False) or into it."""
        return self.scale_up_base + 2 * gpu + int(inbound)

    def pcie_link(self, gpu: IntArray | int, inbound: bool) -> IntArray | int:
        """GPU ``gpu``'s PCIe link to its NIC (``inbound`` False) or from it."""
        return self.pcie_base + 2 * gpu + int(inbound)

    def endpoint(self, gpu: IntArray, rail: IntArray) -> IntArray:
        """Scale-out endpoint of the NIC on ``rail`` of ``gpu``'s node."""
        return (gpu // self.gpn) * self.rails + rail

    # ---- arrays --------------------------------------------------------------------------

    @cached_property
    def link_src(self) -> IntArray:
        """Source node of every link."""
        return self._ends()[0]

    @cached_property
    def link_dst(self) -> IntArray:
        """Destination node of every link."""
        return self._ends()[1]

    def _ends(self) -> tuple[IntArray, IntArray]:
        g = np.arange(self.n_gpus, dtype=np.int64)
        gpu, switch = self.gpu0 + g, self.switch0 + g // self.domain
        src = [np.stack([gpu, switch], 1).reshape(-1)]
        dst = [np.stack([switch, gpu], 1).reshape(-1)]
        if self.has_fabric:
            t = self.topology
            nic = self.endpoint(g, self.cluster.own_rail(g))
            src = [t.link_src.astype(np.int64), *src, np.stack([gpu, nic], 1).reshape(-1)]
            dst = [t.link_dst.astype(np.int64), *dst, np.stack([nic, gpu], 1).reshape(-1)]
        return np.concatenate(src), np.concatenate(dst)

    def line_rate(self, payload_share: float = 1.0) -> FloatArray:
        """Rate of every link, bytes/s: scale-out links at their capacity × ``payload_share``
        (1: line rate; an engine that moves payload only passes the fabric's wire efficiency)
        × the cluster's calibrated network factor (:mod:`commwall.calibration`; a failed cable,
        capacity 0, is kept at 1 B/s so rate solvers need no special case); scale-up links at
        :attr:`~commwall.cluster.Cluster.scale_up_link_rate`, PCIe at x16."""
        rate = np.full(self.n_links, self.cluster.scale_up_link_rate)
        if self.has_fabric:
            cap = np.maximum(self.topology.link_capacity, 1.0)
            factor = payload_share * self.cluster.net_calibration.bandwidth_factor
            rate[: self.net_links] = cap * factor
            rate[self.pcie_base :] = float(self.cluster.pcie.bandwidth(16))
        return rate

    def latency(self) -> FloatArray:
        """Propagation latency of every link, seconds (scale-up ports: 0, their switch's own
        latency is the switch's)."""
        lat = np.zeros(self.n_links)
        if self.has_fabric:
            lat[: self.net_links] = self.topology.link_latency
            bounce = 0.0 if self.cluster.gpudirect_rdma else HOST_BOUNCE_LATENCY
            lat[self.pcie_base :] = PCIE_ATTACH_LATENCY + bounce
        return lat

    def fabric_mask(self) -> BoolArray:
        """True on scale-out links (they carry the fabric's flow control; the rest are
        credit-based whatever the fabric)."""
        mask = np.zeros(self.n_links, dtype=np.bool_)
        mask[: self.net_links] = True
        return mask

    # ---- names ---------------------------------------------------------------------------

    def node_kind(self, node: int) -> str:
        """``nic``, ``switch``, ``gpu`` or ``nvswitch`` (any scale-up switch)."""
        if node < self.net_nodes:
            return "nic" if int(self.topology.node_tier[node]) == 0 else "switch"
        return "gpu" if node < self.switch0 else "nvswitch"

    def node_name(self, node: int) -> str:
        """``node 3 NIC 1``, ``leaf 2``, ``GPU 12``, ``NVSwitch 0`` …"""
        if node < self.net_nodes:
            if int(self.topology.node_tier[node]) == 0:
                n, r = divmod(node, self.rails)
                return f"node {n} NIC {r}"
            return switch_label(self.topology, node)
        if node < self.switch0:
            return f"GPU {node - self.gpu0}"
        medium = "NVSwitch" if self.cluster.scale_up == "nvlink" else "PCIe switch"
        return f"{medium} {node - self.switch0}"

    def link_name(self, link: int) -> str:
        """``node 0 NIC 3 → leaf 0``, ``leaf 3 → spine 1``, ``GPU 12 NVLink out`` (``in``, or
        ``PCIe`` on PCIe-only nodes), ``GPU 12 PCIe to NIC`` (``from NIC``) …"""
        if not 0 <= link < self.n_links:
            return f"virtual link {link}"
        if link < self.net_links:
            src, dst = int(self.link_src[link]), int(self.link_dst[link])
            return f"{self.node_name(src)} → {self.node_name(dst)}"
        if link >= self.pcie_base:
            gpu, inbound = divmod(link - self.pcie_base, 2)
            return f"GPU {gpu} PCIe {'from' if inbound else 'to'} NIC"
        gpu, inbound = divmod(link - self.scale_up_base, 2)
        medium = "NVLink" if self.cluster.scale_up == "nvlink" else "PCIe"
        return f"GPU {gpu} {medium} {'in' if inbound else 'out'}"

    def link_class(self, link: int) -> str:
        """``scale-up``, ``access (NIC-leaf)``, ``leaf-spine``, ``spine-core``, ``PCIe (GPU-NIC)``
        … for grouping."""
        if link >= self.pcie_base and self.has_fabric:
            return "PCIe (GPU-NIC)"
        if link >= self.net_links:
            return "scale-up"
        t = self.topology
        kind = LinkKind(int(t.link_kind[link]))
        if kind is LinkKind.ACCESS:
            return "access (NIC-leaf)"
        return {2: "leaf-spine", 3: "spine-core"}.get(int(t.link_tier[link]), kind.name.lower())

    # ---- hops ----------------------------------------------------------------------------

    def relays(self, src: IntArray, dst: IntArray, rail: IntArray, pxn: bool | BoolArray) -> Relays:
        """Where GPU-to-GPU hops ``src → dst`` meet the fabric (vectorised).

        ``rail`` −1 lets the engine choose: the sender's own NIC, or with ``pxn`` the
        receiver's (NCCL PXN moves the data over NVLink to the GPU on the destination's rail
        first). A relay leg is needed only where the chosen NIC is not the GPU's own and another
        GPU owns it (GPUs may share one NIC).
        """
        c = self.cluster
        own_s, own_d = c.own_rail(src), c.own_rail(dst)
        chosen = np.where(rail >= 0, rail, np.where(pxn, own_d, -1))
        r_src = np.where(chosen >= 0, chosen, own_s)
        r_dst = np.where(chosen >= 0, chosen, own_d)
        proxy_s, proxy_d = c.rail_gpu(src // self.gpn, r_src), c.rail_gpu(dst // self.gpn, r_dst)
        leg_s = (own_s != r_src) & (proxy_s != src)
        leg_d = (own_d != r_dst) & (proxy_d != dst)
        return Relays(
            ep_src=self.endpoint(src, r_src),
            ep_dst=self.endpoint(dst, r_dst),
            via_src=np.where(leg_s, proxy_s, src),
            via_dst=np.where(leg_d, proxy_d, dst),
            leg_src=leg_s,
            leg_dst=leg_d,
        )
