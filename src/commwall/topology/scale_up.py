"""Scale-up topologies: NVLink/NVSwitch domains and the PCIe tree inside a node.

Builders (numbers from the catalog, ``catalog/data/*.yaml``, facts from hardware.md §1–§4):

* :func:`nvlink_domain` — ``gpus`` GPUs, each spreading ``links_per_gpu`` NVLink links over
  ``chips`` NVSwitch chips (one cable per physical link), NVSwitch ports checked.
* :func:`nvlink_node` — an HGX/DGX board: H100/H200 18 links as 5+5+4+4 over 4 NVSwitch3,
  A100 12 links as 2×6 over 6 NVSwitch2, B200 18 links as 9+9 over 2 NVLink Switch chips.
* :func:`nvl72` — a GB200 NVL72 rack: every GPU one NVLink5 link to each of 18 switch chips.
* :func:`pcie_node` / :func:`pcie_tree` — GPUs (and NICs) under PCIe switches under CPU
  sockets; ``pcie_tree(preset)`` is the tree of a DGX-class node (GPU i and NIC i share a switch).
* :func:`scale_up_facts` (per-GPU bandwidth, bisection, hops) and :func:`nccl_path_type`
  (NCCL's LOC/NVL/NVB/PIX/PXB/PHB/SYS classification, nccl-model.md §2).

Conventions: GPUs are the endpoints (tier 0, numbered first); NVSwitch chips and PCIe switches
tier 1 (a second PCIe switch level tier 2), CPUs above them; NICs tier 1 (they hang off a PCIe
switch and face the scale-out fabric, which is not part of these graphs). Every cable has
``LinkKind.SCALE_UP`` and ``Medium.BOARD``; capacity is per direction. NVLink cables come one
per physical link, so ``counts().by_kind["scale_up"]`` counts links.

>>> t = nvlink_node("h100-sxm")
>>> t.params["links_per_chip"], t.n_cables
((5, 5, 4, 4), 144)
>>> scale_up_facts(t).per_gpu_bandwidth / 1e9  # 18 links × 25 GB/s, per direction
450.0
>>> nccl_path_type(t, 0, 1).name
'NVL'
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum
from typing import Any, Final, TypeVar

import numpy as np

from commwall.catalog import GPU, Catalog, CatalogError, NVLinkGen, NVSwitch, load_catalog
from commwall.checks import whole
from commwall.topology import _checks as ck
from commwall.topology.graph import IntArray, LinkKind, Medium, NodeKind, Topology, TopologyError
from commwall.topology.metrics import bisection_bandwidth_maxflow, diameter_bfs

__all__ = [
    "NVSwitchStructure",
    "PathType",
    "ScaleUpFacts",
    "nccl_path_type",
    "nvl72",
    "nvlink_domain",
    "nvlink_node",
    "pcie_node",
    "pcie_tree",
    "scale_up_facts",
]

#: Board trace / NVLink spine lengths, m: estimates (ours) for propagation only; the NVSwitch
#: traversal (``params["switch_latency"]``, catalog nvlink latency) dominates.
BOARD_LENGTH_M: Final = 0.3
NVL72_SPINE_LENGTH_M: Final = 1.0
#: CPU socket-to-socket bandwidth by vendor: NCCL's effective values (nccl-model.md §1,
#: topo.h): SRP_QPI_BW 22 GB/s (Sapphire Rapids, DGX H100's Xeon 8480C), AMD_BW 16 GB/s,
#: ARM_BW 6 GB/s. NCCL model constants, not measured link rates.
CPU_LINK_BW: Final = {"intel": 22e9, "amd": 16e9, "other": 6e9}

_T = TypeVar("_T")


# ---- NVLink / NVSwitch domains ---------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class NVSwitchStructure:
    """GPUs ``0..gpus-1`` each joined to chip ``c`` by ``split[c]`` parallel links; implements
    ``PathOracle``. Cable of GPU ``g``'s ``k``-th link to chip ``c``:
    ``cable0 + g·sum(split) + offset[c] + k``; its link ``2·cable`` goes GPU -> chip."""

    gpus: int
    split: tuple[int, ...]
    cable0: int = 0

    @property
    def links_per_gpu(self) -> int:
        return sum(self.split)

    def _cable(self, gpu: int, chip: int, k: int) -> int:
        return self.cable0 + gpu * self.links_per_gpu + sum(self.split[:chip]) + k

    def count(self, src: int, dst: int) -> int:
        """Routes GPU -> one chip -> GPU, parallel links distinct: Σ split[c]² (1 to itself)."""
        for name, v in (("src", src), ("dst", dst)):
            if not 0 <= v < self.gpus:
                raise TopologyError(f"{name}={v}: not a GPU; GPUs are 0..{self.gpus - 1}")
        return 1 if src == dst else sum(n * n for n in self.split)

    def links(self, src: int, dst: int, index: int) -> IntArray:
        """Link indices of route ``index``: up one link of ``src``, down one link of ``dst``."""
        if src == dst:
            return np.empty(0, dtype=np.int64)
        for chip, n in enumerate(self.split):
            if index < n * n:
                ka, kb = divmod(index, n)
                up, down = self._cable(src, chip, ka), self._cable(dst, chip, kb)
                return np.array([2 * up, 2 * down + 1], dtype=np.int64)
            index -= n * n
        raise TopologyError(f"index out of range: {src} -> {dst} has {self.count(src, dst)}")


def _catalog(catalog: Catalog | None) -> Catalog:
    return load_catalog() if catalog is None else catalog


def _lookup(name: str, value: str, get: Callable[[str], _T]) -> _T:
    """``get(value)``, a catalog miss re-raised as a TopologyError naming the parameter."""
    try:
        return get(value)
    except CatalogError as e:
        raise TopologyError(f"{name}={value!r}: {e}") from None


def _spread(links: int, chips: int) -> tuple[int, ...]:
    """``links`` over ``chips`` as evenly as possible, the extra links on the first chips
    (18 over 4 -> 5+5+4+4, the split NCCL topology dumps of HGX H100 show; hardware.md §2)."""
    q, r = divmod(links, chips)
    return tuple(q + 1 if c < r else q for c in range(chips))


def _check_ports(gpus: int, split: tuple[int, ...], chip: NVSwitch, what: str) -> None:
    used = gpus * max(split)
    if used <= chip.ports:
        return
    fit = chip.ports // max(split)
    head = (
        f"{what}: {gpus} GPUs × {max(split)} links put {used} links on one {chip.name} chip, "
        f"which has {chip.ports} ports"
    )
    if gpus > chip.ports:
        raise TopologyError(
            f"{head}; a one-level NVLink domain of {chip.name} holds at most {chip.ports} GPUs "
            f"(one link each to every chip); use gpus <= {fit} (larger domains need a second "
            f"NVSwitch tier, not modelled)"
        )
    links = sum(split)
    need = next(c for c in range(1, links + 1) if gpus * math.ceil(links / c) <= chip.ports)
    raise TopologyError(
        f"{head}; use at least {need} chips, or at most {fit} GPUs, or fewer links per GPU"
    )


def _domain(
    name: str,
    *,
    gpus: int,
    split: tuple[int, ...],
    nvlink: NVLinkGen,
    chip: NVSwitch,
    length_m: float,
    gpu_group: IntArray,
    chip_group: IntArray,
    params: dict[str, Any],
) -> Topology:
    chips = len(split)
    links = sum(split)
    per_gpu_chip = np.repeat(np.arange(chips, dtype=np.int64), split)  # chip of each GPU link
    cable_a = np.repeat(np.arange(gpus, dtype=np.int64), links)
    cable_b = gpus + np.tile(per_gpu_chip, gpus)
    kind = np.full(gpus + chips, NodeKind.NVSWITCH.code, dtype=np.int8)
    kind[:gpus] = NodeKind.GPU.code
    tier = np.ones(gpus + chips, dtype=np.int8)
    tier[:gpus] = 0
    rate = nvlink.per_link_bandwidth
    used = [gpus * n for n in split]
    topo = Topology.from_cables(
        name,
        node_kind=kind,
        node_tier=tier,
        node_group=np.concatenate([gpu_group, chip_group]),
        cable_a=cable_a,
        cable_b=cable_b,
        capacity=rate,
        latency=length_m * ck.COPPER_S_PER_M,
        length_m=length_m,
        medium=Medium.BOARD,
        kind=LinkKind.SCALE_UP,
        params={
            **params,
            "gpus": gpus,
            "endpoints": gpus,
            "nvswitches": chips,
            "nvswitch": chip.name,
            "nvlink": nvlink.name,
            "links_per_gpu": links,
            "links_per_chip": split,
            "nvlink_links": gpus * links,
            "per_link_bandwidth": rate,
            "nccl_link_bandwidth": nvlink.nccl_link_bandwidth,
            "per_gpu_bandwidth": links * rate,
            "aggregate_bandwidth": 2 * gpus * links * rate,  # bidirectional, as vendors quote
            "ports_used_per_chip": tuple(used),
            "ports_free_per_chip": tuple(chip.ports - u for u in used),
            "nvls": chip.nvls,
            "switch_latency": nvlink.latency,
            "tiers": 1,
        },
        path_fn=NVSwitchStructure(gpus=gpus, split=split),
    )
    return topo.validate()


def _nvlink_parts(cat: Catalog, nvlink: str, nvswitch: str) -> tuple[NVLinkGen, NVSwitch]:
    gen: NVLinkGen = _lookup("nvlink", nvlink, cat.nvlink)
    chip: NVSwitch = _lookup("nvswitch", nvswitch, cat.nvswitch)
    if chip.nvlink != gen.name:
        raise TopologyError(
            f"nvswitch={nvswitch!r} has {chip.nvlink} ports but nvlink={nvlink!r}: pick a chip "
            f"of the same NVLink generation"
        )
    return gen, chip


def _checked_domain(
    name: str,
    *,
    gpus: int,
    chips: int,
    links: int,
    gen: NVLinkGen,
    chip: NVSwitch,
    chips_param: str,
    params: dict[str, Any],
) -> Topology:
    if chips > links:
        raise TopologyError(
            f"{chips_param}={chips} > {links} links per GPU: some chips would get no link from "
            f"any GPU; use {chips_param} <= {links} or more links per GPU"
        )
    split = _spread(links, chips)
    _check_ports(gpus, split, chip, f"{chips_param}={chips}")
    return _domain(
        name,
        gpus=gpus,
        split=split,
        nvlink=gen,
        chip=chip,
        length_m=BOARD_LENGTH_M,
        gpu_group=np.zeros(gpus, dtype=np.int64),
        chip_group=np.zeros(chips, dtype=np.int64),
        params=params,
    )


def nvlink_domain(
    gpus: int,
    chips: int,
    links_per_gpu: int,
    *,
    nvlink: str = "nvlink5",
    nvswitch: str = "nvlink-switch-5",
    catalog: Catalog | None = None,
) -> Topology:
    """A one-level NVLink domain: every GPU spreads ``links_per_gpu`` links over ``chips``
    NVSwitch chips (evenly, extra links on the first chips); link rate from the catalog's
    ``nvlink`` generation, chip ports from ``nvswitch``.

    >>> t = nvlink_domain(16, 4, 8, nvlink="nvlink4", nvswitch="nvswitch3")
    >>> t.params["links_per_chip"], t.params["ports_free_per_chip"]
    ((2, 2, 2, 2), (32, 32, 32, 32))
    """
    gpus = whole("gpus", gpus, 1, error=TopologyError)
    chips = whole(
        "chips", chips, 1, why="a domain needs at least one NVSwitch chip", error=TopologyError
    )
    links_per_gpu = whole("links_per_gpu", links_per_gpu, 1, error=TopologyError)
    gen, chip = _nvlink_parts(_catalog(catalog), nvlink, nvswitch)
    return _checked_domain(
        f"nvlink-domain gpus={gpus} chips={chips} links={links_per_gpu}",
        gpus=gpus,
        chips=chips,
        links=links_per_gpu,
        gen=gen,
        chip=chip,
        chips_param="chips",
        params={"kind": "nvlink-domain"},
    )


def _board_preset(cat: Catalog, gpu: GPU) -> tuple[str, int] | None:
    """(nvswitch part, chip count) of a catalog preset whose node is one NVLink domain."""
    for p in cat.parts("preset"):
        preset = cat.preset(p.name)
        if preset.gpu == gpu.name and preset.scale_up_domain == preset.gpus_per_node:
            return preset.nvswitch, preset.nvswitch_count
    return None


def nvlink_node(
    gpu: str = "h100-sxm",
    *,
    gpus: int = 8,
    nvswitches: int | None = None,
    links: int | None = None,
    nvswitch: str | None = None,
    catalog: Catalog | None = None,
) -> Topology:
    """An HGX/DGX node: ``gpus`` GPUs on one NVSwitch board.

    Defaults come from the catalog: links per GPU from the GPU (``nvlink_links``), chip part and
    count from the 8-GPU preset of that GPU (dgx-h100: 4 × nvswitch3, so 18 links split
    5+5+4+4; dgx-a100: 6 × nvswitch2, 2 each; dgx-b200: 2 × nvlink-switch-5, 9+9). Link rate is
    the NVLink generation's per-link bandwidth (H100: 25 GB/s per direction, 450 GB/s per GPU).

    >>> nvlink_node("a100-sxm").params["links_per_chip"]
    (2, 2, 2, 2, 2, 2)
    >>> nvlink_node("b200").params["per_gpu_bandwidth"] / 1e9
    900.0
    """
    cat = _catalog(catalog)
    part: GPU = _lookup("gpu", gpu, cat.gpu)
    if part.nvlink_links == 0 and links is None:
        raise TopologyError(f"gpu={gpu!r} has no NVLink links; use pcie_node() for it")
    board = _board_preset(cat, part)
    if nvswitch is None:
        if board is None:
            raise TopologyError(
                f"gpu={gpu!r}: no catalog preset puts it on an NVSwitch board; pass nvswitch= "
                f"and nvswitches=, or use nvl72() for rack-scale NVLink"
            )
        nvswitch = board[0]
    if nvswitches is None:
        if board is None or board[0] != nvswitch:
            raise TopologyError(f"nvswitches: give the number of {nvswitch} chips on the board")
        nvswitches = board[1]
    gpus = whole("gpus", gpus, 1, error=TopologyError)
    nvswitches = whole("nvswitches", nvswitches, 1, error=TopologyError)
    n_links = part.nvlink_links if links is None else whole("links", links, 1, error=TopologyError)
    gen, chip = _nvlink_parts(cat, part.nvlink, nvswitch)
    return _checked_domain(
        f"nvlink-node {part.name} gpus={gpus}",
        gpus=gpus,
        chips=nvswitches,
        links=n_links,
        gen=gen,
        chip=chip,
        chips_param="nvswitches",
        params={"kind": "nvlink-node", "gpu": part.name},
    )


def nvl72(
    gpus: int = 72,
    switch_chips: int = 18,
    *,
    gpu: str = "gb200",
    nvswitch: str = "nvlink-switch-5",
    catalog: Catalog | None = None,
) -> Topology:
    """A GB200 NVL72 rack: every GPU one NVLink5 link to each of the 18 NVLink Switch chips
    (hardware.md §2), 72 × 18 = 1,296 links, 1.8 TB/s per GPU bidirectional, ~130 TB/s in all.

    ``node_group``: GPUs carry their compute tray (4 GPUs per tray, preset gb200-nvl72),
    chips their switch tray numbered after the compute trays (2 chips per tray).

    >>> t = nvl72()
    >>> t.n_cables, t.params["aggregate_bandwidth"] / 1e12
    (1296, 129.6)
    """
    gpus = whole("gpus", gpus, 1, error=TopologyError)
    switch_chips = whole("switch_chips", switch_chips, 1, error=TopologyError)
    cat = _catalog(catalog)
    part: GPU = _lookup("gpu", gpu, cat.gpu)
    links = part.nvlink_links
    if switch_chips > links:
        raise TopologyError(
            f"switch_chips={switch_chips}: a {part.name} has {links} NVLink links, so at most "
            f"{links} chips can each get one; use switch_chips <= {links}"
        )
    gen, chip = _nvlink_parts(cat, part.nvlink, nvswitch)
    split = _spread(links, switch_chips)
    _check_ports(gpus, split, chip, f"gpus={gpus}, switch_chips={switch_chips}")
    per_tray = 4  # 18 compute trays of 2 Grace + 4 B200 (hardware.md §1; preset gb200-nvl72)
    trays = -(-gpus // per_tray)
    return _domain(
        f"nvl{gpus} {part.name} chips={switch_chips}",
        gpus=gpus,
        split=split,
        nvlink=gen,
        chip=chip,
        length_m=NVL72_SPINE_LENGTH_M,
        gpu_group=np.arange(gpus, dtype=np.int64) // per_tray,
        chip_group=trays + np.arange(switch_chips, dtype=np.int64) // 2,
        params={"kind": "nvl72", "gpu": part.name, "compute_trays": trays},
    )


# ---- PCIe trees ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _PCIeSpec:
    gpus: int
    nics: int
    gpus_per_switch: int
    nics_per_switch: int
    leaf_per_upper: int  # 0: leaf switches sit on the CPU root ports
    cpus: int
    gpu_bw: float
    nic_bw: float
    uplink_bw: float
    cpu_bw: float


def _check_pcie_shape(s: _PCIeSpec) -> tuple[int, int]:
    """(leaf switches, upper switches); raises naming the parameter that does not divide."""
    if s.gpus % s.gpus_per_switch:
        raise TopologyError(
            f"gpus={s.gpus} is not a multiple of gpus_per_switch={s.gpus_per_switch}: every PCIe "
            f"switch holds the same number of GPUs; change either"
        )
    leaves = s.gpus // s.gpus_per_switch
    if s.nics != leaves * s.nics_per_switch:
        raise TopologyError(
            f"nics={s.nics}: {leaves} PCIe switches × nics_per_switch={s.nics_per_switch} hold "
            f"{leaves * s.nics_per_switch} NICs; make them agree"
        )
    upper = 0
    if s.leaf_per_upper:
        if leaves % s.leaf_per_upper:
            raise TopologyError(
                f"leaf_switches_per_upper={s.leaf_per_upper} does not divide the {leaves} leaf "
                f"PCIe switches; pick a divisor of {leaves}"
            )
        upper = leaves // s.leaf_per_upper
    roots = upper or leaves
    if roots % s.cpus:
        raise TopologyError(
            f"cpus={s.cpus}: {roots} PCIe switches on the root ports do not split evenly over "
            f"{s.cpus} CPU sockets; use a cpus value dividing {roots}"
        )
    return leaves, upper


def _pcie_arrays(s: _PCIeSpec) -> dict[str, Any]:
    leaves, upper = _check_pcie_shape(s)
    g0, n0 = 0, s.gpus
    l0 = n0 + s.nics
    u0 = l0 + leaves
    c0 = u0 + upper
    n_nodes = c0 + s.cpus
    roots = upper or leaves
    gpu = np.arange(s.gpus, dtype=np.int64)
    nic = np.arange(s.nics, dtype=np.int64)
    leaf = np.arange(leaves, dtype=np.int64)
    root = np.arange(roots, dtype=np.int64)
    root_cpu = root * s.cpus // roots
    leaf_root = leaf // s.leaf_per_upper if upper else leaf
    ci, cj = np.triu_indices(s.cpus, k=1)
    a = [g0 + gpu, n0 + nic]
    b = [l0 + gpu // s.gpus_per_switch, l0 + nic // max(s.nics_per_switch, 1)]
    cap = [np.full(s.gpus, s.gpu_bw), np.full(s.nics, s.nic_bw)]
    if upper:
        a.append(l0 + leaf)
        b.append(u0 + leaf_root)
        cap.append(np.full(leaves, s.uplink_bw))
    a += [(u0 if upper else l0) + root, c0 + ci]
    b += [c0 + root_cpu, c0 + cj]
    cap += [np.full(roots, s.uplink_bw), np.full(len(ci), s.cpu_bw)]
    kind = np.full(n_nodes, NodeKind.PCIE_SWITCH.code, dtype=np.int8)
    kind[:n0], kind[n0:l0], kind[c0:] = NodeKind.GPU.code, NodeKind.NIC.code, NodeKind.CPU.code
    tier = np.ones(n_nodes, dtype=np.int8)
    tier[:n0] = 0
    tier[u0:c0] = 2
    tier[c0:] = 3 if upper else 2
    leaf_cpu = root_cpu[leaf_root]
    numa = np.concatenate(
        [
            leaf_cpu[gpu // s.gpus_per_switch],
            leaf_cpu[nic // max(s.nics_per_switch, 1)],
            leaf_cpu,
            root_cpu if upper else np.empty(0, dtype=np.int64),
            np.arange(s.cpus),
        ]
    )
    return {
        "kind": kind,
        "tier": tier,
        "group": numa,
        "a": np.concatenate(a),
        "b": np.concatenate(b),
        "cap": np.concatenate(cap),
        "leaves": leaves,
        "upper": upper,
        "gpu_switch": (l0 + gpu // s.gpus_per_switch).tolist(),
        "nic_switch": (l0 + nic // max(s.nics_per_switch, 1)).tolist(),
    }


def _pcie_topology(
    name: str,
    s: _PCIeSpec,
    params: dict[str, Any],
    nv: tuple[NVLinkGen, NVSwitch, tuple[int, ...]] | None = None,
) -> Topology:
    arr = _pcie_arrays(s)
    kind, tier, group = arr["kind"], arr["tier"], arr["group"]
    a, b, cap = arr["a"], arr["b"], arr["cap"]
    path_fn = None
    extra: dict[str, Any] = {}
    if nv is not None:
        gen, chip, split = nv
        n0, n_cables = len(kind), len(a)
        chip_of_link = np.repeat(np.arange(len(split), dtype=np.int64), split)
        a = np.concatenate([a, np.repeat(np.arange(s.gpus, dtype=np.int64), sum(split))])
        b = np.concatenate([b, n0 + np.tile(chip_of_link, s.gpus)])
        cap = np.concatenate([cap, np.full(s.gpus * sum(split), gen.per_link_bandwidth)])
        kind = np.concatenate([kind, np.full(len(split), NodeKind.NVSWITCH.code, np.int8)])
        tier = np.concatenate([tier, np.ones(len(split), dtype=np.int8)])
        group = np.concatenate([group, np.full(len(split), -1)])
        path_fn = NVSwitchStructure(gpus=s.gpus, split=split, cable0=n_cables)
        extra = {
            "nvswitch": chip.name,
            "nvswitches": len(split),
            "nvlink": gen.name,
            "links_per_chip": split,
            "per_link_bandwidth": gen.per_link_bandwidth,
            "switch_latency": gen.latency,
        }
    topo = Topology.from_cables(
        name,
        node_kind=kind,
        node_tier=tier,
        node_group=group,
        cable_a=a,
        cable_b=b,
        capacity=cap,
        latency=BOARD_LENGTH_M * ck.COPPER_S_PER_M,
        length_m=BOARD_LENGTH_M,
        medium=Medium.BOARD,
        kind=LinkKind.SCALE_UP,
        params={
            **params,
            **extra,
            "gpus": s.gpus,
            "endpoints": s.gpus,
            "nics": s.nics,
            "cpus": s.cpus,
            "pcie_switches": arr["leaves"] + arr["upper"],
            "gpu_switch": tuple(arr["gpu_switch"]),
            "nic_switch": tuple(arr["nic_switch"]),
            "gpu_pcie_bandwidth": s.gpu_bw,
            "nic_pcie_bandwidth": s.nic_bw,
            "uplink_bandwidth": s.uplink_bw,
            "cpu_link_bandwidth": s.cpu_bw,
        },
        path_fn=path_fn,
    )
    return topo.validate()


def pcie_node(
    gpus: int = 8,
    *,
    gpus_per_switch: int = 2,
    nics_per_switch: int = 0,
    cpus: int = 2,
    leaf_switches_per_upper: int = 0,
    pcie: str = "gen4",
    gpu_lanes: int = 16,
    nic: str = "connectx-7",
    cpu_link: str | float = CPU_LINK_BW["intel"],
    catalog: Catalog | None = None,
) -> Topology:
    """A PCIe-only node (no NVLink): ``gpus`` GPUs, ``gpus_per_switch`` (and
    ``nics_per_switch`` NICs) under each PCIe switch, the switches split evenly over ``cpus``
    sockets joined all-to-all by ``cpu_link`` (default NCCL's SRP_QPI_BW, 22 GB/s).
    ``leaf_switches_per_upper`` > 0 adds a second switch level (PXB paths). Links are
    ``gpu_lanes`` wide at generation ``pcie`` (catalog); a NIC's link trains at the older of
    ``pcie`` and its own generation.

    >>> t = pcie_node(8, gpus_per_switch=2)
    >>> t.params["pcie_switches"], t.params["gpu_pcie_bandwidth"] / 1e9
    (4, 31.5)
    >>> nccl_path_type(t, 0, 1).name, nccl_path_type(t, 0, 2).name, nccl_path_type(t, 0, 7).name
    ('PIX', 'PHB', 'SYS')
    """
    gpus = whole("gpus", gpus, 1, error=TopologyError)
    gps = whole("gpus_per_switch", gpus_per_switch, 1, error=TopologyError)
    nps = whole("nics_per_switch", nics_per_switch, 0, error=TopologyError)
    cpus = whole("cpus", cpus, 1, error=TopologyError)
    lpu = whole("leaf_switches_per_upper", leaf_switches_per_upper, 0, error=TopologyError)
    cat = _catalog(catalog)
    gen = _lookup("pcie", pcie, cat.pcie)
    try:
        gpu_bw = gen.bandwidth(gpu_lanes)
    except CatalogError as e:
        raise TopologyError(f"gpu_lanes={gpu_lanes!r}: {e}") from None
    nic_bw = cat.nic_host_bandwidth(_lookup("nic", nic, cat.nic), pcie) if nps else 1.0
    spec = _PCIeSpec(
        gpus=gpus,
        nics=gpus // gps * nps if gpus % gps == 0 else -1,
        gpus_per_switch=gps,
        nics_per_switch=nps,
        leaf_per_upper=lpu,
        cpus=cpus,
        gpu_bw=gpu_bw,
        nic_bw=nic_bw,
        uplink_bw=gen.bandwidth(16),
        cpu_bw=ck.check_rate("cpu_link", cpu_link),
    )
    return _pcie_topology(
        f"pcie-node gpus={gpus} per-switch={gps} cpus={cpus}",
        spec,
        {"kind": "pcie-node", "pcie": gen.name, "tiers": 3 if lpu else 2},
    )


def pcie_tree(
    preset: str = "dgx-h100",
    *,
    pairs_per_switch: int = 1,
    leaf_switches_per_upper: int = 0,
    nvlink: bool = False,
    catalog: Catalog | None = None,
) -> Topology:
    """The PCIe tree of a DGX-class node from a catalog preset: GPU ``i`` and its NIC(s) under
    PCIe switch ``i // pairs_per_switch``, the switches split evenly over 2 CPU sockets (NUMA
    nodes, ``node_group``), all links at the preset's PCIe generation (a GPU's at the older of
    its own and the preset's). ``node_group`` holds each node's CPU socket (NUMA node; -1 for
    NVSwitch chips). ``nvlink=True`` adds the node's NVSwitch board, so that
    :func:`nccl_path_type` sees what NCCL sees (NVL between GPUs, PIX to the own NIC).

    Facts: DGX H100 has 8 single-port ConnectX-7, one per GPU, and 2 CPUs (hardware.md §1, §3).
    One GPU+NIC pair per switch is our reading of DGX H100 ``nvidia-smi topo -m`` (GPU↔own NIC
    PIX, other NICs on the socket via the host bridge); unverified, so ``pairs_per_switch`` is
    a parameter (DGX A100-style boards put two pairs on a switch, or two levels of switches).

    >>> t = pcie_tree("dgx-h100")
    >>> t.params["gpu_switch"][3] == t.params["nic_switch"][3]
    True
    >>> t.params["nic_pcie_bandwidth"] / 1e9  # ConnectX-7, Gen5 x16
    63.0
    """
    cat = _catalog(catalog)
    p = _lookup("preset", preset, cat.preset)
    pps = whole("pairs_per_switch", pairs_per_switch, 1, error=TopologyError)
    if p.cpu == "other" or p.scale_up_domain != p.gpus_per_node:
        raise TopologyError(
            f"preset={preset!r}: its GPUs reach Grace CPUs over C2C, not a host PCIe tree; "
            f"pcie_tree models x86 DGX/HGX nodes (e.g. dgx-h100, dgx-a100, dgx-b200)"
        )
    parts = cat.resolve(p)
    own = cat.pcie(parts.gpu.pcie)
    gpu_bw = min(own.bandwidth(16), parts.pcie.bandwidth(16))
    if p.gpus_per_node % pps:
        raise TopologyError(
            f"pairs_per_switch={pps} does not divide {p.gpus_per_node} GPUs per node; "
            f"pick a divisor of {p.gpus_per_node}"
        )
    switches = p.gpus_per_node // pps
    if p.nics_per_node % switches:
        raise TopologyError(
            f"pairs_per_switch={pps}: {p.nics_per_node} NICs do not split evenly over "
            f"{switches} PCIe switches; pick pairs_per_switch so they do"
        )
    spec = _PCIeSpec(
        gpus=p.gpus_per_node,
        nics=p.nics_per_node,
        gpus_per_switch=pps,
        nics_per_switch=p.nics_per_node // switches,
        leaf_per_upper=whole(
            "leaf_switches_per_upper", leaf_switches_per_upper, 0, error=TopologyError
        ),
        cpus=2,
        gpu_bw=gpu_bw,
        nic_bw=cat.nic_host_bandwidth(parts.nic, p.pcie),
        uplink_bw=parts.pcie.bandwidth(16),
        cpu_bw=CPU_LINK_BW[p.cpu],
    )
    nv = None
    if nvlink:
        split = _spread(parts.gpu.nvlink_links, p.nvswitch_count)
        _check_ports(p.gpus_per_node, split, parts.nvswitch, f"preset={preset!r}")
        nv = (parts.nvlink, parts.nvswitch, split)
    return _pcie_topology(
        f"pcie-tree {p.name}" + (" +nvlink" if nvlink else ""),
        spec,
        {
            "kind": "pcie-tree",
            "preset": p.name,
            "gpu": parts.gpu.name,
            "nic": parts.nic.name,
            "pcie": parts.pcie.name,
            "nccl_x16_bandwidth": parts.pcie.nccl_x16_bandwidth,
            "tiers": 3 if leaf_switches_per_upper else 2,
        },
        nv,
    )


# ---- analytic facts --------------------------------------------------------------------------


@dataclass(frozen=True)
class ScaleUpFacts:
    """Headline numbers of a scale-up topology (bandwidths in bytes/s, per direction unless
    named ``aggregate``)."""

    gpus: int
    switch_chips: int  # NVSwitch chips
    nvlink_links: int  # GPU–NVSwitch links
    per_gpu_bandwidth: float  # scale-up bandwidth out of one GPU (the smallest over GPUs)
    aggregate_bandwidth: float  # Σ over GPUs, both directions (how vendors quote 130 TB/s)
    bisection_bandwidth: float  # first half of the GPUs -> second half
    gpu_hops: int  # most links on a shortest route between two GPUs (2 through one NVSwitch)
    switch_hops: int  # nodes crossed on such a route (NVSwitch chips, PCIe switches, CPUs)


def scale_up_facts(topo: Topology) -> ScaleUpFacts:
    """Per-GPU bandwidth, bisection and hop counts. Closed forms for NVSwitch domains (built by
    :func:`nvlink_domain` and friends): bisection ⌊G/2⌋ × links × rate — every chip carries
    min(A, B) × its links per GPU; 2 links, 1 switch between any two GPUs. Other topologies:
    max-flow and BFS (small graphs).

    >>> f = scale_up_facts(nvl72())
    >>> f.nvlink_links, f.bisection_bandwidth / 1e12
    (1296, 32.4)
    """
    gpu_mask = topo.node_kind == NodeKind.GPU.code
    gpus = int(np.count_nonzero(gpu_mask))
    nvs = topo.node_kind == NodeKind.NVSWITCH.code
    out = np.bincount(topo.link_src, weights=topo.link_capacity, minlength=topo.n_nodes)
    per_gpu = float(out[gpu_mask].min()) if gpus else 0.0
    nvl = nvs[topo.link_src[0::2]] | nvs[topo.link_dst[0::2]]
    s = topo.path_fn
    if isinstance(s, NVSwitchStructure) and s.cable0 == 0:
        bisection = gpus // 2 * s.links_per_gpu * float(topo.link_capacity[0])
        hops, switches = (2, 1) if gpus > 1 else (0, 0)
    else:
        bisection = bisection_bandwidth_maxflow(topo)
        hops = diameter_bfs(topo)
        switches = max(hops - 1, 0)
    return ScaleUpFacts(
        gpus=gpus,
        switch_chips=int(np.count_nonzero(nvs)),
        nvlink_links=int(np.count_nonzero(nvl)),
        per_gpu_bandwidth=per_gpu,
        aggregate_bandwidth=2 * float(out[gpu_mask].sum()),
        bisection_bandwidth=bisection,
        gpu_hops=hops,
        switch_hops=switches,
    )


# ---- NCCL path types -------------------------------------------------------------------------


class PathType(IntEnum):
    """NCCL path types (``topo.h``, HEAD numbering; nccl-model.md §2). Lower is better."""

    LOC = 0
    NVL = 1
    NVB = 2
    C2C = 3
    PIX = 4
    PXB = 5
    P2C = 6
    PXN = 7
    PHB = 8
    SYS = 9
    NET = 10
    DIS = 11


_NVLINK_KINDS: Final = frozenset({NodeKind.GPU.code, NodeKind.NVSWITCH.code})


def _hop_type(ku: int, kv: int) -> PathType | None:
    """Type of one hop by the kinds of its ends (None: not a scale-up hop)."""
    cpu, pci, sw = NodeKind.CPU.code, NodeKind.PCIE_SWITCH.code, NodeKind.SWITCH.code
    if sw in (ku, kv):
        return None  # the network: NET, outside the node
    if ku in _NVLINK_KINDS and kv in _NVLINK_KINDS:
        return PathType.NVL
    if ku == kv == cpu:
        return PathType.SYS  # inter-socket SMP link (QPI/UPI/xGMI)
    if cpu in (ku, kv):
        return PathType.PHB  # a PCI hop touching a CPU (host bridge)
    if ku == kv == pci:
        return PathType.PXB  # PCI followed by PCI: switch to switch
    return PathType.PIX  # LINK_PCI (4): through at most one bridge so far


def nccl_path_type(topo: Topology, a: int, b: int) -> PathType:
    """NCCL's path type from node ``a`` to node ``b`` (GPU, NIC, ...) of a scale-up topology.

    Follows ``paths.cc`` (nccl-model.md §2): a path's type is the worst hop type, with PCI->PCI
    promoted to PXB, a PCI hop touching a CPU to PHB, the CPU–CPU link SYS, and NVLink relayed
    through another GPU NVB; NICs never forward, GPUs only NVLink->NVLink. Among routes the
    lowest type wins, then the fewest hops. C2C, P2C and PXN (Grace, proxy routes) are not
    modelled; nodes joined only through the network are DIS.
    """
    n = topo.n_nodes
    for name, v in (("a", a), ("b", b)):
        if not 0 <= v < n:
            raise TopologyError(f"{name}={v}: not a node; nodes are 0..{n - 1}")
    if a == b:
        return PathType.LOC
    kinds = topo.node_kind.tolist()
    order = np.argsort(topo.link_src, kind="stable")
    starts = np.searchsorted(topo.link_src[order], np.arange(n + 1))
    nbrs = topo.link_dst[order].tolist()
    gpu, nic = NodeKind.GPU.code, NodeKind.NIC.code
    best = {a: (0, 0)}
    heap = [(0, 0, a)]
    while heap:  # Dijkstra on (type, hops): the type only grows along a path
        t, h, u = heapq.heappop(heap)
        if (t, h) > best[u]:
            continue
        if u == b:
            return PathType(t)
        transit = u != a
        if transit and kinds[u] == nic:
            continue
        for v in nbrs[starts[u] : starts[u + 1]]:
            hop = _hop_type(kinds[u], kinds[v])
            if hop is None:
                continue
            if transit and kinds[u] == gpu:
                if hop != PathType.NVL or t > PathType.NVB:
                    continue
                hop = PathType.NVB
            key = (max(t, int(hop)), h + 1)
            if v not in best or key < best[v]:
                best[v] = key
                heapq.heappush(heap, (key[0], key[1], v))
    return PathType.DIS
