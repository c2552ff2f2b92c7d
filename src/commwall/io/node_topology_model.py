"""One node's devices as read from a topology dump: CPUs (NUMA nodes), PCIe switches, GPUs,
NVSwitches, NVLinks, C2C links and NICs (:class:`NodeTopology`), NCCL's path types
(:class:`PathType`) and the errors a dump raises. The readers (:mod:`~commwall.io.node_topology_xml`,
:mod:`~commwall.io.node_topology_smi`) build it; :mod:`commwall.io.node_topology` is the way in."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from typing import TYPE_CHECKING

from commwall.errors import CommwallError

if TYPE_CHECKING:
    import networkx as nx  # type: ignore[import-untyped]  # no stubs in the venv

    from commwall.io.node_topology_paths import PathTable

__all__ = [
    "C2cLink",
    "Cpu",
    "Gpu",
    "Nic",
    "NodeTopology",
    "NodeTopologyError",
    "NvLink",
    "NvSwitch",
    "PathType",
    "PciSwitch",
    "cpu_above",
]


class NodeTopologyError(CommwallError, ValueError):
    """A topology dump that cannot be read: ``file:line: reason``."""

    def __init__(self, source: str, line: int, reason: str) -> None:
        super().__init__(f"{source}:{line}: {reason}")
        self.source = source
        self.line = line
        self.reason = reason


class PathType(IntEnum):
    """NCCL's path types, in NCCL's order (worse is larger): ``src/graph/topo.h`` at v2.30
    (``PATH_LOC`` … ``PATH_DIS``; ``shared/reference/nccl-model.md`` §2). C2C and P2C exist
    since v2.20 (Grace); earlier releases number the others without them."""

    LOC = 0  # the device itself
    NVL = 1  # NVLink only (direct or through NVSwitch)
    NVB = 2  # NVLink relayed through one other GPU
    C2C = 3  # chip-to-chip link to the CPU (Grace)
    PIX = 4  # at most one PCIe bridge
    PXB = 5  # several PCIe bridges, no host bridge
    P2C = 6  # GPU→CPU over C2C, then CPU→NIC over PCIe
    PXN = 7  # NIC reached through a peer GPU over NVLink (PCIe × NVLink)
    PHB = 8  # PCIe through a host bridge (the CPU)
    SYS = 9  # PCIe plus the SMP interconnect between CPUs / NUMA nodes
    NET = 10  # the network
    DIS = 11  # disconnected


@dataclass(frozen=True)
class Cpu:
    """A CPU node as NCCL sees it: one NUMA domain (``<cpu numaid=…>``)."""

    name: str
    numa_id: int
    arch: str | None = None  # x86_64, arm64, ppc64
    vendor: str | None = None  # GenuineIntel, AuthenticAMD, ...
    family_id: int | None = None
    model_id: int | None = None
    affinity: str | None = None  # hex mask (XML) or a CPU list (nvidia-smi)
    line: int = 0


@dataclass(frozen=True)
class PciSwitch:
    """A PCIe switch or bridge (``<pci class="0x0604xx">``, or any other non-GPU non-NIC
    function that has children)."""

    name: str
    busid: str
    parent: str  # name of a Cpu or PciSwitch
    vendor: str | None = None
    device: str | None = None
    subsystem_vendor: str | None = None
    subsystem_device: str | None = None
    link_speed: str | None = None  # as written, e.g. "32.0 GT/s PCIe"
    link_width: int | None = None
    line: int = 0


@dataclass(frozen=True)
class Gpu:
    """A GPU (``<pci class="0x03…"><gpu dev sm rank gdr>``, or a ``GPUn`` row of nvidia-smi)."""

    name: str  # GPU<dev>
    dev: int
    busid: str | None = None
    parent: str | None = None
    sm: int | None = None  # compute capability × 10 (80 A100, 90 H100)
    rank: int | None = None
    gdr: bool | None = None  # GPUDirect RDMA supported (None: unknown)
    link_speed: str | None = None
    link_width: int | None = None
    numa_id: int | None = None
    line: int = 0


@dataclass(frozen=True)
class NvSwitch:
    """An NVSwitch chip, known from the ``<nvlink target=… tclass="0x068000">`` pointing at it."""

    name: str  # NVS/<busid>
    busid: str


@dataclass(frozen=True)
class NvLink:
    """``count`` NVLinks from a GPU to a GPU, an NVSwitch or a CPU (POWER9)."""

    gpu: str
    target: str  # name of a Gpu, NvSwitch or Cpu
    count: int
    line: int = 0


@dataclass(frozen=True)
class C2cLink:
    """A Grace chip-to-chip link from a GPU to its CPU (``<c2c bw count>``, bw in MB/s per link)."""

    gpu: str
    bw_MBps: float
    count: int
    line: int = 0


@dataclass(frozen=True)
class Nic:
    """One network device (``<net name dev speed port gdr …>`` of a ``<nic>``): NCCL's NET.

    Ports of one adapter share ``busid``; ``parent`` is the PCIe switch or CPU above it."""

    name: str  # mlx5_0
    busid: str | None = None
    parent: str | None = None
    dev: int | None = None
    speed_mbps: int | None = None  # Mb/s as NCCL writes it (400000 = NDR 400G)
    port: int | None = None
    gdr: bool | None = None
    guid: str | None = None
    maxconn: int | None = None
    link_speed: str | None = None
    link_width: int | None = None
    numa_id: int | None = None
    line: int = 0


@dataclass
class NodeTopology:
    """Everything one dump says about one node.

    ``reported`` holds the relations an ``nvidia-smi topo -m`` matrix states directly,
    ``(a, b) → (type, nvlinks)``; for XML it is empty and paths come from the device graph.
    """

    source: str
    format: str
    version: str | None = None
    cpus: list[Cpu] = field(default_factory=list)
    switches: list[PciSwitch] = field(default_factory=list)
    gpus: list[Gpu] = field(default_factory=list)
    nvswitches: list[NvSwitch] = field(default_factory=list)
    nvlinks: list[NvLink] = field(default_factory=list)
    c2c: list[C2cLink] = field(default_factory=list)
    nics: list[Nic] = field(default_factory=list)
    reported: dict[tuple[str, str], tuple[PathType, int | None]] = field(default_factory=dict)

    def gpu(self, name: str) -> Gpu:
        """The GPU called ``name`` (KeyError if none)."""
        for g in self.gpus:
            if g.name == name:
                return g
        raise KeyError(name)

    def nvlinks_of(self, gpu: str) -> int:
        """NVLinks leaving ``gpu`` (to GPUs, NVSwitches or CPUs)."""
        return sum(link.count for link in self.nvlinks if link.gpu == gpu)

    def graph(self) -> nx.Graph:
        """The devices as an undirected networkx graph: node attribute ``kind`` (cpu, pci, gpu,
        nvswitch, nic, net) and edge attributes ``kind`` (pci, nvlink, c2c, sys, net) and, for
        NVLink, ``count``. NVSwitches stay separate here (NCCL merges them for its paths)."""
        import networkx as nx

        g = nx.Graph(source=self.source, format=self.format)
        for c in self.cpus:
            g.add_node(c.name, kind="cpu", numa_id=c.numa_id, vendor=c.vendor, arch=c.arch)
        for s in self.switches:
            g.add_node(s.name, kind="pci", busid=s.busid, link_width=s.link_width)
        for s in self.switches:
            g.add_edge(s.parent, s.name, kind="pci")
        for gpu in self.gpus:
            g.add_node(gpu.name, kind="gpu", busid=gpu.busid, sm=gpu.sm, rank=gpu.rank)
            if gpu.parent is not None:
                g.add_edge(gpu.parent, gpu.name, kind="pci")
        for nvs in self.nvswitches:
            g.add_node(nvs.name, kind="nvswitch", busid=nvs.busid)
        for link in self.nvlinks:
            g.add_edge(link.gpu, link.target, kind="nvlink", count=link.count)
        for c2c in self.c2c:
            cpu = cpu_above(self, c2c.gpu)
            if cpu is not None:
                g.add_edge(c2c.gpu, cpu, kind="c2c", count=c2c.count)
        for nic in self.nics:
            g.add_node(nic.name, kind="net", busid=nic.busid, speed_mbps=nic.speed_mbps)
            if nic.busid is not None and nic.parent is not None:
                adapter = f"NIC/{nic.busid}"
                g.add_node(adapter, kind="nic", busid=nic.busid)
                g.add_edge(nic.parent, adapter, kind="pci")
                g.add_edge(adapter, nic.name, kind="net")
            elif nic.parent is not None:
                g.add_edge(nic.parent, nic.name, kind="net")
        cpus = [c.name for c in self.cpus]
        for i, a in enumerate(cpus):
            for b in cpus[i + 1 :]:
                g.add_edge(a, b, kind="sys")
        return g

    def paths(self, *, flatten_bcm: bool = True) -> PathTable:
        """NCCL's path type and bandwidth for every GPU↔GPU and GPU↔NIC pair
        (:func:`commwall.io.node_topology_paths.compute_paths`)."""
        from commwall.io.node_topology_paths import compute_paths

        return compute_paths(self, flatten_bcm=flatten_bcm)


def cpu_above(topo: NodeTopology, name: str) -> str | None:
    """The CPU at the root of ``name``'s PCIe tree (None when it hangs from nothing)."""
    parents: dict[str, str | None] = {s.name: s.parent for s in topo.switches}
    parents.update({g.name: g.parent for g in topo.gpus})
    parents.update({n.name: n.parent for n in topo.nics})
    cpus = {c.name for c in topo.cpus}
    node: str | None = name
    for _ in range(len(parents) + 1):  # bounded: a malformed tree cannot loop forever
        if node is None or node in cpus:
            return node
        node = parents.get(node)
    return None
