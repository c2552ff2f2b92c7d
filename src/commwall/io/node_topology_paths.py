"""NCCL's path type and bandwidth between every GPU pair and every GPU→NIC pair of a node.

Done the way NCCL ``src/graph/paths.cc`` (v2.2x–v2.30) does it, on the graph NCCL
``src/graph/topo.cc`` builds from the topology XML:

Graph (``topo.cc``, ``ncclTopoGetSystemFromXml``):

* PCIe link of every device to its parent, both ways: ``width × speed / 80`` GB/s, speed per lane in
  100 Mb/s from ``link_speed`` (2.5/5/8/16/32/64 GT/s → 15/30/60/120/240/480; unrecognised → 60;
  width 0 or missing → 16). NCCL matches the exact strings of its ``kvDictPciGen``; this reader
  reads the number, so a spelling NCCL does not list (``"32.0 GT/s"``) gets its real generation
  here where NCCL falls back to 60.
* NVLink: ``count × NVLinkBw(sm)`` (:func:`nvlink_bw`); every NVSwitch is merged into one NVS node
  as NCCL does, links adding up; NVLink to a CPU (POWER9) and Grace C2C (``bw × count / 1000``).
* NIC: ports of one adapter (bus id without the function) share one NIC node; each port is a NET
  node linked at ``speed / 8000`` GB/s (speed ≤ 0 → 10 000 Mb/s). A ``<nic>`` directly under a
  CPU hangs on it at ``LOC_BW``.
* CPUs (NUMA nodes) all linked pairwise by ``SYS`` links of :func:`inter_cpu_bw`.
* Broadcom PEX Gen4/Gen5 switches in base mode, which present as two levels, are flattened into
  one (``ncclTopoFlattenBcmSwitches``; device id masks below) unless ``flatten_bcm=False``.

Paths (``paths.cc``):

1. ``ncclTopoSetPaths``: a breadth-first search from every CPU, GPU and NET. A neighbour's path
   is replaced when it has none yet or more hops, and the new bandwidth (the minimum over links)
   is higher. Its type is the worst of the links crossed, where PCI→PCI counts as PXB, a PCI hop
   touching a CPU as PHB, and NVLink→GPU→NVLink as NVB; the search may pass through a GPU only
   as that one NVB hop (``NCCL_NVB_DISABLE=0``).
2. GPU pairs beyond ``NCCL_P2P_LEVEL``'s default (PXB; SYS on AMD with at most two GPUs) are
   routed through the CPU local to the destination GPU.
3. P2C (Grace): GPU→CPU over C2C then PCIe to a NIC local to that GPU.
4. PXN (v2.12+, default on): GPU ``g`` reaches NIC ``n`` through the NIC's local GPU ``p`` (the
   GPU nearest the NIC, :func:`local_gpu`) when ``p`` reaches ``n`` at PXB/P2C or better with
   GPUDirect RDMA, ``p`` reaches ``g`` over NVLink (type ≤ NVL), and either ``p``'s bandwidth to
   ``n`` is higher than ``g``'s or ``g``'s own path is worse than PXN (it crosses a CPU). The path
   becomes PXN with bandwidth ``min(g→p, p→n)``. (v2.30 rule; v2.12–v2.2x tried every NVLink
   peer, with the same outcome on DGX/HGX nodes.)
5. GPUDirect RDMA (``ncclTopoCheckGdr``): needs ``gdr=1`` on GPU and NIC and a distance ≤ PXB
   (P2C with ``NCCL_NET_GDR_C2C=1``); for a PXN path the distance of the relay GPU counts. A
   path better than PHB without GDR is routed through the CPU local to the GPU.

``direct`` keeps the path of step 1 (what ``nvidia-smi topo -m`` describes); ``type`` is what
NCCL uses after steps 2–5. Bandwidths are NCCL's GB/s (G = 1e9), as in its logs.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Final

from commwall.io.node_topology_model import NodeTopology, PathType, cpu_above

__all__ = [
    "LOC_BW",
    "Path",
    "PathTable",
    "compute_paths",
    "inter_cpu_bw",
    "local_gpu",
    "nvlink_bw",
    "pci_bw",
]

# GB/s per link — NCCL src/graph/topo.h v2.30 (shared/reference/nccl-model.md §1).
LOC_BW: Final = 5000.0
SM60_NVLINK_BW: Final = 18.0
SM70_NVLINK_BW: Final = 20.0
SM80_NVLINK_BW: Final = 20.0
SM86_NVLINK_BW: Final = 12.0
SM90_NVLINK_BW: Final = 20.6
SM100_NVLINK_BW: Final = 40.1
AMD_BW: Final = 16.0
BDW_QPI_BW: Final = 6.0
SKL_QPI_BW: Final = 10.0
SRP_QPI_BW: Final = 22.0
ERP_QPI_BW: Final = 40.0
ZPI_BW: Final = 6.0
YONGFENG_ZPI_BW: Final = 9.0
P9_BW: Final = 32.0
ARM_BW: Final = 6.0
#: NIC speed NCCL assumes when a NIC reports none (Mb/s) — topo.cc ncclTopoAddNet.
DEFAULT_NET_MBPS: Final = 10_000
#: PCIe per-lane speed in 100 Mb/s by GT/s — topo.cc kvDictPciGen.
PCI_GEN_SPEED: Final = {2.5: 15, 5.0: 30, 8.0: 60, 16.0: 120, 32.0: 240, 64.0: 480}
#: Broadcom PEX switch masks NCCL flattens: (vendor<<48|device<<32|subvendor<<16|subdevice) &
#: ~0xfff — topo.cc ncclTopoFlattenBcmSwitches (Gen4, v2.8+) and getBcmGen (Gen5).
BCM_MASKS: Final = (0x1000C0101000A000, 0x1000C03010000000)

_GT: Final = re.compile(r"([0-9]+(?:\.[0-9]+)?)\s*GT/s")
_LINK_NET: Final = 10  # NCCL LINK_NET; paths treat it as LOC


def nvlink_bw(sm: int | None) -> float:
    """GB/s of one NVLink as NCCL counts it for compute capability ``sm`` (``topo.h``
    ``ncclTopoNVLinkBw``).

    >>> nvlink_bw(90), nvlink_bw(80), nvlink_bw(100), nvlink_bw(86)
    (20.6, 20.0, 40.1, 12.0)
    """
    s = sm or 0
    if s >= 100:
        return SM100_NVLINK_BW
    if s >= 90:
        return SM90_NVLINK_BW
    if s == 86:
        return SM86_NVLINK_BW
    if s >= 80:
        return SM80_NVLINK_BW
    if s >= 70:
        return SM70_NVLINK_BW
    return SM60_NVLINK_BW


def pci_bw(link_speed: str | None, link_width: int | None) -> float:
    """NCCL's PCIe link bandwidth, GB/s: ``width × speed / 80`` (``topo.cc`` ncclTopoAddPci).

    >>> pci_bw("32.0 GT/s PCIe", 16), pci_bw("16.0 GT/s PCIe", 16), pci_bw(None, 0)
    (48.0, 24.0, 12.0)
    """
    width = link_width or 16
    speed = 60
    m = _GT.search(link_speed or "")
    if m:
        speed = PCI_GEN_SPEED.get(float(m.group(1)), 60)
    return width * speed / 80.0


def inter_cpu_bw(
    arch: str | None, vendor: str | None, family: int | None, model: int | None
) -> float:
    """GB/s NCCL gives the link between two CPUs (NUMA nodes): ``topo.cc`` ncclTopoGetInterCpuBw
    with ``topo.h`` v2.30 constants; Intel by model id (≥0xCF Emerald Rapids, ≥0x8F Sapphire
    Rapids, ≥0x55 Skylake, else Broadwell).

    >>> inter_cpu_bw("x86_64", "GenuineIntel", 6, 143), inter_cpu_bw("x86_64", "AuthenticAMD", 23, 49)
    (22.0, 16.0)
    """
    a = (arch or "").lower()
    if a.startswith("ppc"):
        return P9_BW
    if a in ("arm64", "aarch64"):
        return ARM_BW
    if a not in ("x86_64", ""):
        return LOC_BW
    v = (vendor or "").strip()
    if v == "GenuineIntel":
        m = model or 0
        if family != 6:
            return BDW_QPI_BW
        if m >= 0xCF:
            return ERP_QPI_BW
        if m >= 0x8F:
            return SRP_QPI_BW
        return SKL_QPI_BW if m >= 0x55 else BDW_QPI_BW
    if v == "AuthenticAMD":
        return AMD_BW
    if v in ("CentaurHauls", "Shanghai"):
        return YONGFENG_ZPI_BW if family == 7 and model == 0x5B else ZPI_BW
    return LOC_BW


@dataclass(frozen=True)
class Path:
    """How NCCL connects ``src`` to ``dst``: ``type`` and ``bw_GBps`` as NCCL uses them;
    ``direct_type``/``direct_bw_GBps`` before PXN, P2P and GPUDirect adjustments; ``via`` the
    relay (a GPU for PXN, a CPU without P2P/GPUDirect); ``hops`` the devices crossed, ``src``
    first (empty when only an nvidia-smi matrix was read); ``nvlinks`` the NV# nvidia-smi shows
    or the links of a direct NVLink; ``gdr`` GPUDirect RDMA on a GPU→NIC path (None: unknown).
    Bandwidths are None when the input does not give them (nvidia-smi)."""

    src: str
    dst: str
    type: PathType
    bw_GBps: float | None
    direct_type: PathType
    direct_bw_GBps: float | None
    via: str | None = None
    hops: tuple[str, ...] = ()
    nvlinks: int | None = None
    gdr: bool | None = None


@dataclass
class PathTable:
    """Paths between GPUs (``gpu_gpu``) and from GPUs to NICs (``gpu_nic``), keyed by names."""

    gpus: list[str]
    nics: list[str]
    paths: dict[tuple[str, str], Path] = field(default_factory=dict)
    local_gpu: dict[str, str | None] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def get(self, src: str, dst: str) -> Path:
        """The path from ``src`` to ``dst`` (KeyError if not computed)."""
        return self.paths[(src, dst)]


# ---- the graph NCCL builds ---------------------------------------------------------------------

_GPU, _PCI, _NVS, _CPU, _NIC, _NET = "GPU", "PCI", "NVS", "CPU", "NIC", "NET"


@dataclass
class _Graph:
    kind: dict[str, str] = field(default_factory=dict)
    # links[a] = {(b, link type): bw}; NCCL's ncclTopoConnectNodes adds bandwidth of repeats
    links: dict[str, dict[tuple[str, int], float]] = field(
        default_factory=lambda: defaultdict(dict)
    )

    def connect(self, a: str, b: str, ltype: int, bw: float, *, both: bool = True) -> None:
        for x, y in ((a, b), (b, a)) if both else ((a, b),):
            key = (y, ltype)
            self.links[x][key] = self.links[x].get(key, 0.0) + bw


def _device_id(s: object) -> int:
    """64-bit vendor|device|subsystem ids of a switch as NCCL packs them (0 where unparsable)."""
    total = 0
    for shift, attr in (
        (48, "vendor"),
        (32, "device"),
        (16, "subsystem_vendor"),
        (0, "subsystem_device"),
    ):
        text = getattr(s, attr) or "0"
        try:
            total += (int(text, 16) & 0xFFFF) << shift
        except ValueError:
            return 0
    return total


def _flattened_parents(topo: NodeTopology) -> dict[str, str]:
    """Parent of each device after Broadcom switch flattening (sub-switches with the top
    switch's device id are removed and their children hang from the top switch)."""
    parent = {s.name: s.parent for s in topo.switches}
    ids = {s.name: _device_id(s) for s in topo.switches}
    removed: dict[str, str] = {}
    for s in topo.switches:
        if s.name in removed or (ids[s.name] & ~0xFFF) not in BCM_MASKS:
            continue
        for sub in topo.switches:
            if parent[sub.name] == s.name and ids[sub.name] == ids[s.name]:
                removed[sub.name] = s.name
    return removed


def _build(topo: NodeTopology, flatten_bcm: bool) -> _Graph:
    g = _Graph()
    merged = _flattened_parents(topo) if flatten_bcm else {}

    def up(name: str | None) -> str | None:
        while name in merged:
            name = merged[name]
        return name

    cpu_bw = {}
    for c in topo.cpus:
        g.kind[c.name] = _CPU
        cpu_bw[c.name] = inter_cpu_bw(c.arch, c.vendor, c.family_id, c.model_id)
    for s in topo.switches:
        if s.name not in merged:
            g.kind[s.name] = _PCI
    for s in topo.switches:
        parent = up(s.parent)
        if s.name not in merged and parent in g.kind:
            g.connect(s.name, parent, 4, pci_bw(s.link_speed, s.link_width))
    sms = {}
    for gpu in topo.gpus:
        g.kind[gpu.name] = _GPU
        sms[gpu.name] = gpu.sm
        parent = up(gpu.parent)
        if parent in g.kind:
            g.connect(gpu.name, parent, 4, pci_bw(gpu.link_speed, gpu.link_width))
    nvs = {n.name for n in topo.nvswitches}
    for link in topo.nvlinks:
        bw = link.count * nvlink_bw(sms.get(link.gpu))
        if link.target in nvs:
            g.kind[_NVS] = _NVS
            g.connect(link.gpu, _NVS, 1, bw)
        elif g.kind.get(link.target) == _CPU:
            g.connect(link.gpu, link.target, 1, bw)
        else:  # GPU→GPU: the other GPU's own <nvlink> adds the reverse direction
            g.connect(link.gpu, link.target, 1, bw, both=False)
    for c2c in topo.c2c:
        cpu = cpu_above(topo, c2c.gpu)
        if cpu is not None:
            g.connect(c2c.gpu, cpu, 3, c2c.bw_MBps * c2c.count / 1000.0)
    for nic in topo.nics:
        parent = up(nic.parent)
        if parent not in g.kind:
            continue
        adapter = f"NIC/{nic.busid[:-2]}" if nic.busid else f"NIC/{parent}"
        if adapter not in g.kind:
            g.kind[adapter] = _NIC
            bw = LOC_BW if nic.busid is None else pci_bw(nic.link_speed, nic.link_width)
            g.connect(adapter, parent, 4, bw)
        g.kind[nic.name] = _NET
        mbps = nic.speed_mbps if nic.speed_mbps and nic.speed_mbps > 0 else DEFAULT_NET_MBPS
        g.connect(adapter, nic.name, _LINK_NET, mbps / 8000.0)
    cpus = [c.name for c in topo.cpus]
    for a in cpus:
        for b in cpus:
            if a != b:
                g.connect(a, b, 9, cpu_bw[a], both=False)
    return g


@dataclass
class _P:
    type: int
    bw: float
    hops: tuple[str, ...]  # from this node to the base, both included


def _bfs(g: _Graph, base: str) -> dict[str, _P]:
    """``ncclTopoSetPaths`` from ``base``: the path from every node to ``base``."""
    paths: dict[str, _P] = {base: _P(int(PathType.LOC), LOC_BW, (base,))}
    level = [base]
    while level:
        nxt: list[str] = []
        for node in level:
            path = paths[node]
            count = len(path.hops) - 1
            for (rem, ltype), lbw in g.links[node].items():
                # pass through a GPU only as one NVLink→GPU→NVLink hop (NVB)
                if (
                    node != base
                    and g.kind[node] == _GPU
                    and (ltype != 1 or g.kind[rem] != _GPU or count > 1)
                ):
                    continue
                bw = min(path.bw, lbw)
                old = paths.get(rem)
                if (old is None or len(old.hops) - 1 > count) and (old is None or old.bw < bw):
                    t = 0 if ltype == _LINK_NET else ltype
                    if g.kind[node] == _PCI and g.kind[rem] == _PCI:
                        t = int(PathType.PXB)
                    if ltype == 4 and (g.kind[node] == _CPU or g.kind[rem] == _CPU):
                        t = int(PathType.PHB)
                    if g.kind[node] == _GPU and path.type == 1 and t == 1 and count + 1 > 1:
                        t = int(PathType.NVB)
                    paths[rem] = _P(max(path.type, t), bw, (rem, *path.hops))
                    if rem not in nxt:
                        nxt.append(rem)
        level = nxt
    return paths


def _join(a: _P, b: _P, ptype: int) -> _P:
    return _P(ptype, min(a.bw, b.bw), a.hops + b.hops[1:])


def local_gpu(
    nic: str, gpus: list[str], to_nic: dict[tuple[str, str], tuple[int, float]], nics: list[str]
) -> str | None:
    """The GPU NCCL pairs with ``nic`` for PXN (``ncclTopoGetLocalGpu``): among the GPUs with
    the best path to it (lowest type, then highest bandwidth), the k-th for the k-th NIC that
    has the same nearest GPUs, so two NICs on a switch with two GPUs go one to each (NCCL
    spreads them by channel; this is that spreading's first choice)."""

    def nearest(n: str) -> list[str]:
        best = min(((to_nic[(g, n)][0], -to_nic[(g, n)][1]) for g in gpus), default=None)
        return [g for g in gpus if (to_nic[(g, n)][0], -to_nic[(g, n)][1]) == best]

    mine = nearest(nic)
    if not mine or to_nic[(mine[0], nic)][0] >= PathType.SYS:
        return None
    peers = [n for n in nics if nearest(n) == mine]
    return mine[peers.index(nic) % len(mine)]


def compute_paths(topo: NodeTopology, *, flatten_bcm: bool = True) -> PathTable:
    """Every GPU↔GPU and GPU→NIC path of ``topo`` (module doc). nvidia-smi input takes the
    matrix as the direct paths and applies the same PXN rule on types alone."""
    if topo.format == "nvidia-smi":
        return _from_matrix(topo)
    g = _build(topo, flatten_bcm)
    gpus = [x.name for x in topo.gpus]
    nics = [n.name for n in topo.nics if n.name in g.kind]
    cpus = [c.name for c in topo.cpus]
    to: dict[str, dict[str, _P]] = {b: _bfs(g, b) for b in (*cpus, *gpus, *nics)}

    def path(a: str, b: str) -> _P:
        return to[b].get(a) or _P(int(PathType.DIS), 0.0, ())

    def local_cpu(x: str) -> str | None:
        ranked = sorted((len(path(x, c).hops), c) for c in cpus if path(x, c).hops)
        return ranked[0][1] if ranked else None

    table = PathTable(gpus, nics)
    amd_pair = len(gpus) <= 2 and any(
        (c.vendor or "").strip() == "AuthenticAMD" and (c.arch or "x86_64") == "x86_64"
        for c in topo.cpus
    )
    p2p_level = PathType.SYS if amd_pair else PathType.PXB
    gpu_of = {x.name: x for x in topo.gpus}
    for a in gpus:
        for b in gpus:
            direct = path(a, b)
            eff, via = direct, None
            cpu = local_cpu(b)
            if a != b and direct.type > p2p_level and cpu is not None:
                via = cpu
                eff = _join(path(a, cpu), path(cpu, b), max(path(a, cpu).type, path(cpu, b).type))
            links = sum(x.count for x in topo.nvlinks if x.gpu == a and x.target == b) or None
            table.paths[(a, b)] = _path(a, b, eff, direct, via, links, None)
    direct_nic = {(x, n): path(x, n) for x in gpus for n in nics}
    _p2c(topo, gpus, nics, direct_nic, path, local_cpu)
    key = {k: (v.type, v.bw) for k, v in direct_nic.items()}
    nic_of = {n.name: n for n in topo.nics}

    def gdr(x: str, n: str, distance: int) -> bool:
        ok = bool(gpu_of[x].gdr) and bool(nic_of[n].gdr)
        return ok and distance <= PathType.P2C

    for n in nics:
        p = local_gpu(n, gpus, key, nics)
        table.local_gpu[n] = p
        for x in gpus:
            direct = direct_nic[(x, n)]
            eff, via = direct, None
            if p is not None and p != x:
                to_p, peer = path(x, p), direct_nic[(p, n)]
                if (
                    peer.type <= PathType.P2C
                    and gdr(p, n, peer.type)
                    and to_p.type <= PathType.NVL
                    and (peer.bw > direct.bw or direct.type > PathType.PXN)
                ):
                    eff, via = _join(to_p, peer, int(PathType.PXN)), p
            distance = direct_nic[(p, n)].type if via is not None and p is not None else eff.type
            relay = p if via is not None and p is not None else x
            has_gdr = gdr(relay, n, distance)
            cpu = local_cpu(x)
            if eff.type < PathType.PHB and not has_gdr and cpu is not None:
                to_c, c_to = path(x, cpu), path(cpu, n)
                eff, via = _join(to_c, c_to, max(to_c.type, c_to.type)), cpu
            table.paths[(x, n)] = _path(x, n, eff, direct, via, None, has_gdr)
    if flatten_bcm and _flattened_parents(topo):
        table.notes.append("Broadcom PEX switches flattened as NCCL does (topo.cc)")
    return table


def _p2c(
    topo: NodeTopology,
    gpus: list[str],
    nics: list[str],
    direct: dict[tuple[str, str], _P],
    path: object,
    local_cpu: object,
) -> None:
    """P2C (v2.20+): a GPU on C2C reaches a NIC of its own CPU over C2C + PCIe — only on Grace
    nodes, which carry ``<c2c>``; elsewhere nothing changes."""
    if not topo.c2c:
        return
    assert callable(path) and callable(local_cpu)
    for x in gpus:
        cpu = local_cpu(x)
        if cpu is None or path(x, cpu).type != PathType.C2C:
            continue
        best = min((direct[(x, n)].type for n in nics), default=None)
        for n in nics:
            if direct[(x, n)].type == best and path(n, cpu).type == PathType.PHB:
                old = direct[(x, n)]
                direct[(x, n)] = _P(min(int(PathType.P2C), old.type), old.bw, old.hops)


def _path(
    a: str, b: str, eff: _P, direct: _P, via: str | None, links: int | None, gdr: bool | None
) -> Path:
    bw = round(eff.bw, 3) if eff.type != PathType.DIS else None
    dbw = round(direct.bw, 3) if direct.type != PathType.DIS else None
    return Path(a, b, PathType(eff.type), bw, PathType(direct.type), dbw, via, eff.hops, links, gdr)


def _from_matrix(topo: NodeTopology) -> PathTable:
    """Paths from an nvidia-smi matrix: the codes as direct types; NVB where two GPUs share an
    NVLink peer but no NVLink; PXN by the type part of step 4 (GPUDirect assumed, since the
    matrix cannot show it; bandwidths unknown)."""
    gpus = [x.name for x in topo.gpus]
    nics = [n.name for n in topo.nics]
    table = PathTable(gpus, nics)
    rep = topo.reported
    for a in gpus:
        for b in gpus:
            t, links = rep.get((a, b), (PathType.DIS, None))
            eff = t
            if t > PathType.NVB and any(
                rep.get((a, k), (PathType.DIS,))[0] == PathType.NVL
                and rep.get((k, b), (PathType.DIS,))[0] == PathType.NVL
                for k in gpus
            ):
                eff = PathType.NVB
            table.paths[(a, b)] = Path(a, b, eff, None, t, None, None, (), links, None)
    key = {(x, n): (int(rep.get((x, n), (PathType.DIS, None))[0]), 0.0) for x in gpus for n in nics}
    for n in nics:
        p = local_gpu(n, gpus, key, nics)
        table.local_gpu[n] = p
        for x in gpus:
            t = PathType(key[(x, n)][0])
            eff, via = t, None
            if (
                p is not None
                and p != x
                and key[(p, n)][0] <= PathType.PXB
                and table.get(x, p).direct_type <= PathType.NVL
                and t > PathType.PXN
            ):
                eff, via = PathType.PXN, p
            table.paths[(x, n)] = Path(x, n, eff, None, t, None, via, (), None, None)
    table.notes.append(
        "from nvidia-smi: no bandwidths; GPUDirect assumed for PXN; NODE read as PHB"
    )
    return table
