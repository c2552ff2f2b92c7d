"""What the rest of commwall needs from one node's topology, as plain data (JSON-ready).

* GPUs (name, bus id, sm, NUMA node), NVLinks per GPU, NVSwitch chips;
* NICs with speed, GPUDirect flag, and their nearest GPU(s) — the GPUs with the best direct
  path (lowest NCCL type, then highest bandwidth); a NIC is a *compute* NIC when that best
  path is PXB or better (it shares a PCIe switch with a GPU), else it is listed apart
  (storage, in-band management);
* GPU pairs with GPUDirect RDMA (NCCL's ``ncclTopoCheckGdr`` rule, see
  :mod:`commwall.io.node_topology_paths`);
* a ``cluster:`` fragment with the fields of :class:`commwall.scenario.ClusterSpec` the dump
  determines: ``gpus_per_node``, ``scale_up`` (``nvlink`` when every GPU pair is NVL or NVB),
  ``nics_per_node`` (compute NICs), ``gpudirect_rdma`` (every GPU has it to its nearest compute
  NIC), and, when known, ``pcie`` (generation of the GPUs' links) and ``cpu`` (intel/amd/other).

NVLinks per GPU from nvidia-smi: the sum of the NV# a GPU shows if that is at most 18 (direct
links, the most any GPU has had: H100 and B200, ``shared/reference/hardware.md``), else the
largest NV# (the same links counted once per peer behind NVSwitches).
"""

from __future__ import annotations

from typing import Any, Final

from commwall.io.node_topology_model import NodeTopology, PathType, cpu_above
from commwall.io.node_topology_paths import PathTable

__all__ = ["summary"]

#: Most NVLinks one GPU has had (H100, B200: 18).
MAX_NVLINKS_PER_GPU: Final = 18
_PCIE_GEN: Final = {
    "2.5": "gen1",
    "5": "gen2",
    "8": "gen3",
    "16": "gen4",
    "32": "gen5",
    "64": "gen6",
}


def _nvlinks(topo: NodeTopology, gpu: str) -> int:
    if topo.format != "nvidia-smi":
        return topo.nvlinks_of(gpu)
    counts = [n for (a, _), (_, n) in topo.reported.items() if a == gpu and n]
    return sum(counts) if sum(counts) <= MAX_NVLINKS_PER_GPU else max(counts)


def _pcie(topo: NodeTopology) -> str | None:
    gens = set()
    for g in topo.gpus:
        text = (g.link_speed or "").split("GT/s")[0].strip()
        try:
            key = f"{float(text):g}"
        except ValueError:
            return None
        if key not in _PCIE_GEN:
            return None
        gens.add(_PCIE_GEN[key])
    return gens.pop() if len(gens) == 1 else None


def _cpu(topo: NodeTopology) -> str | None:
    vendors = {(c.vendor or "").strip() for c in topo.cpus}
    if not vendors or "" in vendors:
        return None
    if vendors == {"GenuineIntel"}:
        return "intel"
    if vendors == {"AuthenticAMD"}:
        return "amd"
    return "other"


def summary(topo: NodeTopology, paths: PathTable) -> dict[str, Any]:
    """The node as data (module doc): devices, the path matrices, NIC affinity and the
    ``cluster`` fragment."""
    gpus = paths.gpus
    nics: list[dict[str, Any]] = []
    compute = 0
    nic_of = {n.name: n for n in topo.nics}
    for n in paths.nics:
        direct = [
            (paths.get(g, n).direct_type, -(paths.get(g, n).direct_bw_GBps or 0.0), g) for g in gpus
        ]
        best = min(direct, default=None)
        nearest = [g for t, b, g in direct if best is not None and (t, b) == best[:2]]
        is_compute = best is not None and best[0] <= PathType.PXB
        compute += is_compute
        nic = nic_of[n]
        nics.append(
            {
                "name": n,
                "busid": nic.busid,
                "speed_Gbps": None if nic.speed_mbps is None else nic.speed_mbps / 1000,
                "port": nic.port,
                "gdr": nic.gdr,
                "nearest_gpus": nearest,
                "nearest_type": None if best is None else best[0].name,
                "pxn_gpu": paths.local_gpu.get(n),
                "compute": is_compute,
            }
        )
    gpu_rows = [
        {
            "name": g.name,
            "busid": g.busid,
            "sm": g.sm,
            "rank": g.rank,
            "gdr": g.gdr,
            "numa_id": g.numa_id if g.numa_id is not None else _numa(topo, g.name),
            "nvlinks": _nvlinks(topo, g.name),
        }
        for g in topo.gpus
    ]
    gdr_pairs = [[g, n] for g in gpus for n in paths.nics if paths.get(g, n).gdr]
    scale_up = (
        "nvlink"
        if all(paths.get(a, b).type <= PathType.NVB for a in gpus for b in gpus if a != b)
        and len(gpus) > 1
        else "pcie"
    )
    fragment: dict[str, Any] = {"gpus_per_node": len(gpus), "scale_up": scale_up}
    if compute:
        fragment["nics_per_node"] = compute
        near: dict[str, list[str]] = {g: [] for g in gpus}
        for x in nics:
            if x["compute"]:
                for g in x["nearest_gpus"]:
                    near[g].append(x["name"])
        nearest_gdr = [any(paths.get(g, n).gdr for n in near[g]) for g in gpus]
        if topo.format != "nvidia-smi":
            fragment["gpudirect_rdma"] = all(nearest_gdr)
    if (pcie := _pcie(topo)) is not None:
        fragment["pcie"] = pcie
    if (cpu := _cpu(topo)) is not None:
        fragment["cpu"] = cpu
    return {
        "source": topo.source,
        "format": topo.format,
        "cpus": [
            {
                "name": c.name,
                "numa_id": c.numa_id,
                "vendor": c.vendor,
                "arch": c.arch,
                "family_id": c.family_id,
                "model_id": c.model_id,
            }
            for c in topo.cpus
        ],
        "pci_switches": len(topo.switches),
        "gpus": gpu_rows,
        "nvswitches": [s.busid for s in topo.nvswitches],
        "nics": nics,
        "gpu_gpu": _matrix(paths, gpus, gpus),
        "gpu_nic": _matrix(paths, gpus, paths.nics),
        "gpudirect_pairs": gdr_pairs,
        "cluster": fragment,
        "notes": paths.notes,
    }


def _numa(topo: NodeTopology, gpu: str) -> int | None:
    cpu = cpu_above(topo, gpu)
    for c in topo.cpus:
        if c.name == cpu:
            return c.numa_id
    return None


def _matrix(paths: PathTable, rows: list[str], cols: list[str]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for a in rows:
        out[a] = {}
        for b in cols:
            p = paths.get(a, b)
            out[a][b] = {
                "type": p.type.name,
                "bw_GBps": p.bw_GBps,
                "direct_type": p.direct_type.name,
                "direct_bw_GBps": p.direct_bw_GBps,
                "via": p.via,
                "nvlinks": p.nvlinks,
                "gdr": p.gdr,
            }
    return out
