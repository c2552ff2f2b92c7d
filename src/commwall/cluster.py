"""A resolved cluster: catalog parts + node shape + scale-out fabric, and what a communicator sees.

:func:`build_cluster` turns a :class:`~commwall.scenario.ClusterSpec` into a :class:`Cluster`,
checking that the parts exist and fit together. :meth:`Cluster.comm_fabric` then gives the
collective models the per-rank bandwidths and latencies of any communicator.

Scale-out bandwidth per GPU (bytes/s) is derived, not assumed::

    net_bw = nics_per_node × nic.rate / gpus_per_node     (line rate per GPU)
             × wire_efficiency(fabric, mtu)               (packet headers, see below)
             × NET_TRANSPORT_EFFICIENCY                   (what NCCL reaches of the payload rate)
             / oversubscription                           (when traffic leaves the leaf)
    without GPUDirect RDMA: min(that, PCIe x16 / 2)       (send and receive share the host path)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, TypeVar

import numpy as np
import numpy.typing as npt

from commwall.catalog import (
    GPU,
    NIC,
    Catalog,
    CatalogError,
    NVLinkGen,
    NVSwitch,
    PCIeGen,
    Switch,
    load_catalog,
)
from commwall.collectives import CommFabric, Gen, Hw, gen_for_sm
from commwall.collectives.constants import NET_OVERHEAD
from commwall.collectives.nccl import inter_node_ring_channels, nvls_channels, pow2_up
from commwall.scenario import (
    CalibrationSpec,
    ClusterSpec,
    LinkCalibration,
    ScenarioError,
    TopologySpec,
)
from commwall.transport.fabric import HEADER_BYTES

if TYPE_CHECKING:
    from commwall.topology import Topology

#: A GPU, node or rail index: one, or an array of them (numbering as :meth:`Cluster.own_rail`).
_Index = TypeVar("_Index", int, npt.NDArray[np.int64])

#: Share of a NIC's payload rate NCCL reaches: NVIDIA's guidance is 46–48 GB/s per 400G NDR NIC
#: (nccl-tests#290) and 24 GB/s per 200G HDR NIC (nccl-tests#119); 0.955 of the header-limited
#: rate sits in both ranges (47.4 and 23.7 GB/s).
NET_TRANSPORT_EFFICIENCY: Final = 0.955

#: Extra latency per network step without GPUDirect RDMA: a PCIe round trip through host memory
#: on each side (ours, an estimate).
HOST_BOUNCE_LATENCY: Final = 2e-6

#: The switch NCCL's NET latency constants were tuned on (an InfiniBand NDR fabric); other
#: switches add their latency difference per hop.
REFERENCE_SWITCH: Final = "quantum-2-qm9700"


def wire_efficiency(fabric: str, mtu: int) -> float:
    """Payload share of the wire for full-MTU packets: ``mtu / (mtu + headers)``.

    >>> round(wire_efficiency("ib", 4096), 4)
    0.9937
    """
    return mtu / (mtu + HEADER_BYTES[fabric])


@dataclass(frozen=True)
class Cluster:
    """Everything the engines need to know about the machine."""

    name: str
    description: str
    gpu: GPU
    nvlink: NVLinkGen
    nvswitch: NVSwitch
    pcie: PCIeGen
    nic: NIC
    switch: Switch
    n_nodes: int
    gpus_per_node: int
    scale_up: str
    scale_up_domain: int
    nics_per_node: int
    fabric: str
    gpudirect_rdma: bool
    sharp: bool
    optics: str
    cpu: str
    mtu: int
    topology: TopologySpec
    tiers: int
    routing: str
    reference_switch_latency: float
    #: A prebuilt scale-out fabric used instead of building one (e.g. with failed cables,
    #: :func:`commwall.faults.failures.cluster_with_failures`); None: built from ``topology``.
    scale_out: Topology | None = None
    #: The PCIe generation the NIC's host link is built for (None: the node's, ``pcie``).
    nic_pcie: PCIeGen | None = None
    #: Per link class corrections fitted to measurements (``commwall calibrate``).
    calibration: CalibrationSpec = field(default_factory=CalibrationSpec)
    #: comm_fabric results by communicator shape (not an init field: ``replace`` starts afresh).
    _fabrics: dict[tuple[int, int], CommFabric] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    # ---- sizes ------------------------------------------------------------------------------

    @property
    def n_gpus(self) -> int:
        """GPUs in the cluster."""
        return self.n_nodes * self.gpus_per_node

    @property
    def n_domains(self) -> int:
        """Scale-up domains in the cluster."""
        return self.n_gpus // self.scale_up_domain

    def own_rail(self, gpu: _Index) -> _Index:
        """Rail of each GPU's own NIC: local index ``l = g % gpus_per_node`` owns rail
        ``l · nics_per_node // gpus_per_node`` (NICs spread evenly over a node's GPUs)."""
        return (gpu % self.gpus_per_node) * self.nics_per_node // self.gpus_per_node

    def rail_gpu(self, node: _Index, rail: _Index) -> _Index:
        """The first GPU of ``node`` whose own NIC is ``rail`` (PXN's proxy); with more NICs
        than GPUs, the GPU whose NICs include ``rail``."""
        gpn, rails = self.gpus_per_node, self.nics_per_node
        if rails >= gpn:
            return node * gpn + rail * gpn // rails
        return node * gpn + (rail * gpn + rails - 1) // rails

    @property
    def gen(self) -> Gen:
        """GPU generation row of NCCL's tables."""
        return gen_for_sm(self.gpu.sm)

    # ---- bandwidths -------------------------------------------------------------------------

    @property
    def intra_hw(self) -> Hw:
        """Hardware class of scale-up steps."""
        return Hw.NVLINK if self.scale_up == "nvlink" else Hw.PCI

    @property
    def intra_bw(self) -> float:
        """Per-GPU scale-up bandwidth as NCCL models it, bytes/s per direction.

        NVLink: links × NCCL's per-link constant (``topo.cc``: 18 × 20.6 GB/s on H100);
        PCIe: NCCL's x16 value for the generation (``width × speed / 80``).
        """
        factor = self.intra_calibration.bandwidth_factor
        if self.scale_up == "nvlink":
            return self.gpu.nvlink_links * self.nvlink.nccl_link_bandwidth * factor
        return self.pcie.nccl_bandwidth(16) * factor

    @property
    def scale_up_link_rate(self) -> float:
        """Physical per-GPU scale-up bandwidth per direction, bytes/s: NVLink links × the
        per-link payload rate, or PCIe x16 on PCIe-only nodes (× the calibrated scale-up
        factor, :mod:`commwall.calibration`). The flow and packet engines move bytes at this
        rate; :attr:`intra_bw` is NCCL's own (lower) model of it."""
        factor = self.intra_calibration.bandwidth_factor
        if self.scale_up == "nvlink":
            return float(self.gpu.nvlink_links * self.nvlink.per_link_bandwidth) * factor
        return float(self.pcie.bandwidth(16)) * factor

    @property
    def intra_calibration(self) -> LinkCalibration:
        """The fitted correction of the scale-up class (none: the model as is)."""
        fitted = self.calibration.nvlink if self.scale_up == "nvlink" else self.calibration.pcie
        return fitted or LinkCalibration()

    @property
    def net_calibration(self) -> LinkCalibration:
        """The fitted correction of the scale-out network (none: the model as is)."""
        return self.calibration.network or LinkCalibration()

    @property
    def nic_rate_per_gpu(self) -> float:
        """Scale-out line rate per GPU, bytes/s per direction."""
        return self.nics_per_node * self.nic.rate / self.gpus_per_node

    @property
    def radix(self) -> int:
        """Switch ports at the NIC rate (:func:`switch_radix`)."""
        return switch_radix(self.switch, self.nic.rate)

    @property
    def nodes_per_leaf(self) -> int:
        """Nodes whose NICs of one rail (rail designs) or all NICs (fat-tree) share a leaf."""
        radix = self.radix
        o = self.topology.oversubscription
        down = max(1, math.floor(radix * o / (o + 1)))
        if self.topology.kind == "fat-tree":
            return max(1, down // self.nics_per_node)
        return down

    @property
    def leaves_crossed(self) -> bool:
        """Whether scale-out traffic must climb above the leaf tier."""
        return self.tiers > 1 and self.n_nodes > self.nodes_per_leaf

    @property
    def net_bw_per_gpu(self) -> float:
        """Achievable scale-out bandwidth per GPU, bytes/s (see the module docstring)."""
        bw = self.nic_rate_per_gpu * wire_efficiency(self.fabric, self.mtu)
        bw *= NET_TRANSPORT_EFFICIENCY
        if self.leaves_crossed:
            bw /= self.topology.oversubscription
        if not self.gpudirect_rdma:
            bw = min(bw, self.pcie.bandwidth(16) / 2.0)
        return bw * self.net_calibration.bandwidth_factor

    @property
    def switch_hops(self) -> int:
        """Switches on the longest scale-out path (``2·tiers − 1`` once traffic leaves the leaf)."""
        return 2 * self.tiers - 1 if self.leaves_crossed else 1

    @property
    def net_extra_latency(self) -> float:
        """Per network step latency beyond NCCL's reference InfiniBand fabric, seconds."""
        extra = self.switch_hops * (self.switch.latency - self.reference_switch_latency)
        if not self.gpudirect_rdma:
            extra += HOST_BOUNCE_LATENCY
        return max(0.0, extra)

    def channels(self, n_domains: int = 1, ranks_per_domain: int | None = None) -> int:
        """NCCL ring/tree channels ("coll channels") of a communicator of this shape.

        One scale-up domain: what NCCL's search finds on the node's links, as its INFO logs show
        — 24 on 8 H100s (NCCL 2.28: "24 coll channels, 24 collnet channels, 16 nvls channels")
        and on 8 A100s ("Channel xx/24", nccl-tests#100), 32 on 8 B200s (nccl#1646); "the number
        of NCCL channels is directly related to" the 18 NVLinks per Hopper GPU (AddyLaddy,
        nccl#1429). PCIe-only nodes: 2 (L40S logs). Across domains: twice the channels of
        NCCL's graph search (:func:`~commwall.collectives.nccl.inter_node_ring_channels`: one
        per NIC the domain's ranks drive, doubled at 25 GB/s or more unless a post-Ampere GPU's
        path is below 50 GB/s and there are more than four) — two per NIC on eight 400G NICs
        (16 on two 8 × 400G H100 nodes in nccl#1538, DeepEP#106; "two channels per NIC makes
        the NIC utilization closer to peak", sjeaugey, nccl#438), four on at most four, two on
        200G HDR behind PCIe Gen4 — never more than inside one domain.
        """
        if self.scale_up != "nvlink":
            one = 2
        elif self.gpu.sm >= 100:
            one = 32
        elif self.gpu.sm >= 80:
            one = 24
        else:
            one = 12
        if n_domains <= 1:
            return one
        g = self.gpus_per_node if ranks_per_domain is None else ranks_per_domain
        nics = max(1, math.ceil(g * self.nics_per_node / self.gpus_per_node))
        graph = inter_node_ring_channels(
            nics=nics, path_gbps=self.nic_path_bw / 1e9, sm=self.gpu.sm
        )
        return max(2, min(one, 2 * graph))

    @property
    def nic_path_bw(self) -> float:
        """NCCL's bandwidth of the GPU-to-NIC path, bytes/s (``paths.cc``: the narrowest link on
        it): the NIC's port rate or its PCIe link (NCCL's ``width × speed / 80``, at the older of
        the NIC's and the node's generation), whichever is lower."""
        nic_link = self.nic_pcie or self.pcie
        link = min(self.pcie.nccl_bandwidth(16), nic_link.nccl_bandwidth(self.nic.pcie_lanes))
        return min(float(self.nic.rate), float(link))

    # ---- communicators -----------------------------------------------------------------------

    def comm_fabric(self, n_domains: int, ranks_per_domain: int) -> CommFabric:
        """The collective-model view of a communicator of ``n_domains × ranks_per_domain`` ranks."""
        key = (n_domains, ranks_per_domain)
        cached = self._fabrics.get(key)
        if cached is None:
            cached = self._fabrics[key] = self._comm_fabric(n_domains, ranks_per_domain)
        return cached

    def _comm_fabric(self, n_domains: int, ranks_per_domain: int) -> CommFabric:
        return CommFabric(
            n_domains=n_domains,
            ranks_per_domain=ranks_per_domain,
            intra_bw=self.intra_bw,
            intra_hw=self.intra_hw,
            net_bw_per_rank=self.net_bw_per_gpu,
            gen=self.gen,
            channels=(channels := self.channels(n_domains, ranks_per_domain)),
            nvls_channels=nvls_channels(self.gpu.sm, n_domains),
            p2p_channels=pow2_up(channels),
            nvlink_links=max(1, self.gpu.nvlink_links),
            nics_per_rank=max(1, self.nics_per_node // self.gpus_per_node),
            net_bw_per_nic=self.net_bw_per_gpu * self.gpus_per_node / max(1, self.nics_per_node),
            nic_gbps=self.nic_path_bw / 1e9,
            net_extra_latency=self.net_extra_latency,
            net_overhead=NET_OVERHEAD[self.cpu],
            cpu=self.cpu,
            hbm_bw=self.gpu.hbm_bandwidth,
            nvls=self.scale_up == "nvlink" and self.nvswitch.nvls and self.gpu.sm >= 90,
            collnet=self.sharp,
            gdr=self.gpudirect_rdma,
            intra_latency_adjust=self.intra_calibration.latency,
            intra_bw_factor=self.intra_calibration.bandwidth_factor,
            net_latency_adjust=self.net_calibration.latency,
        )

    def world(self, ranks_per_node: int | None = None) -> CommFabric:
        """The communicator nccl-tests across the whole cluster measures.

        ``ranks_per_node`` GPUs of every node take part (default: all of them); each keeps its
        own NIC share and NVLink, so fewer ranks per node means fewer ranks per domain, not
        faster ranks.
        """
        g = self.gpus_per_node if ranks_per_node is None else ranks_per_node
        if not 1 <= g <= self.gpus_per_node:
            raise ScenarioError(
                [f"ranks per node: {g} is not possible on {self.gpus_per_node}-GPU nodes; "
                 f"allowed: 1 to {self.gpus_per_node}"]
            )  # fmt: skip
        if self.scale_up_domain >= self.gpus_per_node:  # domains made of whole nodes
            nodes_per_domain = self.scale_up_domain // self.gpus_per_node
            return self.comm_fabric(self.n_domains, g * nodes_per_domain)
        domains_per_node = self.gpus_per_node // self.scale_up_domain  # e.g. PCIe islands
        used = min(g, domains_per_node)
        if g % used:
            raise ScenarioError(
                [f"ranks per node: {g} do not spread evenly over the node's {domains_per_node} "
                 f"scale-up domains; use 1 to {domains_per_node} or a multiple of {domains_per_node}"]
            )  # fmt: skip
        return self.comm_fabric(self.n_nodes * used, max(1, g // used))

    def scale_out_topology(self) -> Topology:
        """The scale-out fabric as a :class:`~commwall.topology.Topology`, built by the builder of
        ``topology.kind`` with this cluster's switch radix, NIC rate and switch latency (or the
        prebuilt ``scale_out`` fabric when one is set)."""
        from commwall.topology.kinds import build_fabric

        if self.scale_out is not None:
            return self.scale_out
        spec, nodes, rails = self.topology, self.n_nodes, self.nics_per_node
        common: dict[str, Any] = {"link_rate": self.nic.rate, "switch_latency": self.switch.latency}
        o = spec.oversubscription
        if spec.kind == "fat-tree":  # its NICs are the hosts; 1 or 2 tiers: one leaf–spine
            return build_fabric(spec.kind, nodes=nodes * rails, radix=self.radix,
                                tiers=max(2, self.tiers), oversubscription=o, **common)  # fmt: skip
        return build_fabric(spec.kind, nodes=nodes, rails=rails, radix=self.radix,
                            tiers=spec.tiers, oversubscription=o, **common)  # fmt: skip

    def summary(self) -> dict[str, Any]:
        """A flat description for tables and JSON."""
        return {
            "name": self.name,
            "gpus": self.n_gpus,
            "nodes": self.n_nodes,
            "gpu": self.gpu.name,
            "gpus_per_node": self.gpus_per_node,
            "scale_up": self.scale_up,
            "scale_up_domain": self.scale_up_domain,
            "scale_up_bw_per_gpu": self.intra_bw,
            "nic": f"{self.nics_per_node} x {self.nic.name}",
            "nic_rate_per_gpu": self.nic_rate_per_gpu,
            "net_bw_per_gpu": self.net_bw_per_gpu,
            "fabric": self.fabric,
            "switch": self.switch.name,
            "topology": self.topology.kind,
            "tiers": self.tiers,
            "oversubscription": self.topology.oversubscription,
            "routing": self.routing,
            "gpudirect_rdma": self.gpudirect_rdma,
            "sharp": self.sharp,
            "calibration": self.calibration.model_dump(exclude_none=True)
            if self.calibration != CalibrationSpec()
            else None,
        }


def switch_radix(switch: Switch, link_rate: float) -> int:
    """Ports of ``switch`` at ``link_rate``: faster ports split (a 64 × 800G box is 128 × 400G
    for 400G NICs; NVIDIA SN5600 and Broadcom TH5 datasheets, hardware.md §5)."""
    return switch.ports * max(1, int(switch.port_rate // link_rate))


def _tiers_needed(endpoints: int, radix: int) -> int:
    """Fewest folded-Clos tiers that hold ``endpoints`` at ``radix`` (R, R²/2, R³/4; Al-Fares 2008)."""
    for tiers in (1, 2, 3):
        if endpoints <= radix**tiers // 2 ** (tiers - 1):
            return tiers
    return 0


def build_cluster(spec: ClusterSpec, catalog: Catalog | None = None) -> Cluster:
    """Resolve parts and shape; raise :class:`ScenarioError` naming each bad field."""
    cat = catalog or load_catalog()
    errors: list[str] = []

    def part(kind: str, field: str, name: str | None, default: str | None) -> Any:
        chosen = name or default
        if chosen is None:
            errors.append(f"cluster.{field}: required when no preset is given")
            return None
        try:
            found = cat.get(kind, chosen)
        except CatalogError as err:
            errors.append(f"cluster.{field}: {err}")
            return None
        overrides = spec.overrides.get(field)
        if overrides:
            try:
                found = cat.with_overrides(found, overrides)
            except CatalogError as err:
                given = ", ".join(f"{k}: {v!r}" for k, v in overrides.items())
                errors.append(f"cluster.overrides.{field}: {err} (got {given})")
        return found

    for key in spec.overrides:
        if key not in ("gpu", "nvlink", "nvswitch", "pcie", "nic", "switch"):
            errors.append(
                f"cluster.overrides.{key}: unknown part (got {key!r}); allowed: gpu, nvlink, "
                "nvswitch, pcie, nic, switch"
            )
    preset = None
    if spec.preset is not None:
        try:
            preset = cat.preset(spec.preset)
        except CatalogError as err:
            raise ScenarioError([f"cluster.preset: {err}"]) from None
    gpu = part("gpu", "gpu", spec.gpu, preset.gpu if preset else None)
    nvswitch = part("nvswitch", "nvswitch", spec.nvswitch, preset.nvswitch if preset else None)
    nic = part("nic", "nic", spec.nic, preset.nic if preset else None)
    switch = part("switch", "switch", spec.switch, preset.switch if preset else None)
    pcie = part("pcie", "pcie", spec.pcie, preset.pcie if preset else None)
    nvlink = part("nvlink", "nvlink", None, gpu.nvlink if gpu else None) if gpu else None

    def shape(field: str, value: int | None, default: int | None) -> int:
        if value is not None:
            return value
        if default is None:
            errors.append(f"cluster.{field}: required when no preset is given")
            return 1
        return default

    gpus_per_node = shape(
        "gpus_per_node", spec.gpus_per_node, preset.gpus_per_node if preset else None
    )
    domain_default = preset.scale_up_domain if preset else gpus_per_node
    nics_default = preset.nics_per_node if preset else None
    if preset is not None and gpus_per_node != preset.gpus_per_node:
        # Other nodes of the preset's kind: a domain that was the node stays the node (a 4-GPU
        # HGX board does not share NVSwitches with its neighbour; a rack-wide NVL72 domain
        # keeps its size), and the node keeps the preset's NICs per GPU (at least one).
        if preset.scale_up_domain == preset.gpus_per_node:
            domain_default = gpus_per_node
        nics_default = max(1, -(-preset.nics_per_node * gpus_per_node // preset.gpus_per_node))
    if spec.scale_up == "pcie":
        domain_default = gpus_per_node
    scale_up_domain = shape("scale_up_domain", spec.scale_up_domain, domain_default)
    nics_per_node = shape("nics_per_node", spec.nics_per_node, nics_default)
    fabric = spec.fabric or (preset.fabric if preset else None)
    if fabric is None:
        errors.append("cluster.fabric: required when no preset is given (ib, roce or ethernet)")
        fabric = "ib"
    gdr = (
        spec.gpudirect_rdma
        if spec.gpudirect_rdma is not None
        else (preset.gpudirect_rdma if preset else True)
    )
    if errors:
        raise ScenarioError(errors)
    assert gpu is not None and nvswitch is not None and nic is not None
    assert switch is not None and pcie is not None and nvlink is not None

    n_gpus = spec.nodes * gpus_per_node
    if spec.scale_up == "pcie" and scale_up_domain > gpus_per_node:
        errors.append(
            f"cluster.scale_up_domain: a PCIe-only domain cannot span nodes "
            f"(got {scale_up_domain} with {gpus_per_node} GPUs per node); "
            f"allowed: {gpus_per_node} or a divisor of it"
        )
    elif scale_up_domain % gpus_per_node and gpus_per_node % scale_up_domain:
        errors.append(
            f"cluster.scale_up_domain: {scale_up_domain} GPUs must be a multiple or a divisor of "
            f"gpus_per_node ({gpus_per_node})"
        )
    elif scale_up_domain > gpus_per_node and n_gpus % scale_up_domain:
        nodes_per = scale_up_domain // gpus_per_node
        errors.append(
            f"cluster.nodes: {spec.nodes} nodes do not fill whole scale-up domains of "
            f"{scale_up_domain} GPUs ({nodes_per} nodes each); use a multiple of {nodes_per}"
        )
    if spec.scale_up == "nvlink" and scale_up_domain > 1:
        if gpu.nvlink_links == 0:
            errors.append(
                f"cluster.scale_up: {gpu.name} has no NVLink links (nvlink_links = 0), so it "
                f"cannot form an NVLink domain of {scale_up_domain}; use scale_up: pcie"
            )
        if nvswitch.nvlink != gpu.nvlink:
            fits = [n for n in cat.names("nvswitch") if cat.nvswitch(n).nvlink == gpu.nvlink]
            errors.append(
                f"cluster.nvswitch: {nvswitch.name} has {nvswitch.nvlink} ports but {gpu.name} "
                f"uses {gpu.nvlink}; allowed: {', '.join(fits) or 'none in the catalog'}"
            )
    want = "ib" if fabric == "ib" else "ethernet"
    if switch.fabric != want:
        errors.append(
            f"cluster.switch: {switch.name} is an {switch.fabric} switch but the fabric is {fabric}; "
            f"pick an {want} switch (`commwall catalog switch`)"
        )
    if spec.sharp and not (fabric == "ib" and switch.sharp):
        errors.append(
            f"cluster.sharp: in-network reduction needs an InfiniBand switch with SHARP; "
            f"{switch.name} on {fabric} has none"
        )
    if fabric not in nic.fabrics:
        errors.append(
            f"cluster.nic: {nic.name} does not speak {fabric} (it supports {', '.join(nic.fabrics)})"
        )
    endpoints = spec.nodes * nics_per_node
    radix = switch_radix(switch, nic.rate)
    needed = _tiers_needed(endpoints, radix)
    tiers = spec.topology.tiers or needed
    if spec.topology.kind == "rail-optimized" and needed:
        from commwall.topology import rail_optimized_tiers

        # the rails meet at the spines: 2 tiers even where one switch would hold every port
        rail_tiers = rail_optimized_tiers(
            spec.nodes, nics_per_node, radix, spec.topology.oversubscription
        )
        needed = min(3, max(needed, rail_tiers))
        tiers = spec.topology.tiers or needed
    if needed == 0:
        errors.append(
            f"cluster.nodes: {endpoints} NIC ports exceed a 3-tier fat tree of radix "
            f"{radix} ({radix**3 // 4}); use a larger-radix switch"
        )
    elif spec.topology.kind == "rail-only" and spec.nodes > radix:
        errors.append(
            f"cluster.topology.kind: rail-only puts each rail on one switch of {radix} ports, "
            f"so at most {radix} nodes (got {spec.nodes}); use rail-optimized"
        )
    elif spec.topology.kind != "rail-only" and tiers < needed:
        allowed = "3" if needed == 3 else f"{needed} to 3"
        fix = f"allowed: {allowed}, or leave it out to get the fewest that fit"
        if tiers == 1 and spec.topology.kind == "rail-optimized":
            errors.append(
                "cluster.topology.tiers: 1; a rail-optimized fabric joins its rails through "
                f"spines, so it has 2 or 3 tiers ({fix}); one switch per rail and no spine is "
                "cluster.topology.kind: rail-only"
            )
        else:
            held = radix**tiers // 2 ** (tiers - 1)
            errors.append(
                f"cluster.topology.tiers: {tiers} tier(s) of radix {radix} hold at most "
                f"{held} NIC ports but the cluster has {endpoints}; {fix}"
            )
    if errors:
        raise ScenarioError(errors)
    if spec.topology.kind == "rail-only":
        tiers = 1
    try:
        reference = cat.switch(REFERENCE_SWITCH).latency
    except CatalogError:
        reference = switch.latency
    return Cluster(
        name=spec.preset or "custom",
        description=preset.description if preset else "custom cluster",
        gpu=gpu,
        nvlink=nvlink,
        nvswitch=nvswitch,
        pcie=pcie,
        nic=nic,
        switch=switch,
        n_nodes=spec.nodes,
        gpus_per_node=gpus_per_node,
        scale_up=spec.scale_up,
        scale_up_domain=scale_up_domain,
        nics_per_node=nics_per_node,
        fabric=fabric,
        gpudirect_rdma=gdr,
        sharp=spec.sharp,
        optics=spec.optics.technology,
        cpu=spec.cpu or (preset.cpu if preset else "intel"),
        mtu=spec.mtu,
        topology=spec.topology,
        tiers=max(tiers, 1),
        routing=spec.routing,
        reference_switch_latency=reference,
        calibration=spec.calibration,
        nic_pcie=cat.pcie(nic.pcie),
    )


def cluster_from_option(
    source: str,
    *,
    nodes: int | None = None,
    sharp: bool | None = None,
    gdr: bool | None = None,
    option: str = "--cluster",
) -> Cluster:
    """The cluster a command-line option names: a preset, or a scenario file's cluster.

    ``nodes``, ``sharp`` and ``gdr`` override the spec. A preset whose multi-node NVLink domain
    is larger than the GPUs asked for (2 of an NVL72's 18 trays) becomes one partial domain.
    Errors name ``option``.
    """
    from pathlib import Path

    from commwall.scenario import load_scenario

    if source.endswith((".yaml", ".yml")) or Path(source).is_file():
        spec = load_scenario(source).cluster
    else:
        try:
            load_catalog().preset(source)
        except CatalogError as e:
            raise ScenarioError([str(e)], option) from None
        spec = ClusterSpec(preset=source)
    update: dict[str, Any] = {}
    if nodes is not None:
        update["nodes"] = nodes
    if spec.preset and spec.scale_up_domain is None:
        preset = load_catalog().preset(spec.preset)
        gpus = (nodes or spec.nodes) * (spec.gpus_per_node or preset.gpus_per_node)
        if preset.scale_up_domain > gpus:
            update["scale_up_domain"] = gpus
    if sharp is not None:
        update["sharp"] = sharp
    if gdr is not None:
        update["gpudirect_rdma"] = gdr
    if update:
        from pydantic import ValidationError

        from commwall.scenario import validation_messages

        try:
            spec = ClusterSpec.model_validate({**spec.model_dump(), **update})
        except ValidationError as err:  # e.g. --nodes 10000000 beyond cluster.nodes' limit
            messages = validation_messages(err)
            if all(m.startswith("nodes: ") for m in messages):
                raise ScenarioError(
                    [m.removeprefix("nodes: ") for m in messages], "--nodes"
                ) from None
            raise ScenarioError(messages, option) from None
    return build_cluster(spec)
