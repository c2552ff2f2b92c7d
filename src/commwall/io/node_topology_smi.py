"""Read the matrix ``nvidia-smi topo -m`` prints.

Layout (NVIDIA driver ``nvidia-smi topo -m``; rows separated by tabs or spaces)::

            GPU0    GPU1    NIC0    CPU Affinity    NUMA Affinity   GPU NUMA ID
    GPU0     X      NV18    PIX     0-55,112-167    0               N/A
    GPU1    NV18     X      NODE    0-55,112-167    0               N/A
    NIC0    PIX     NODE     X

    Legend:
      X    = Self
      SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes
      NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node
      PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)
      PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)
      PIX  = Connection traversing at most a single PCIe bridge
      NV#  = Connection traversing a bonded set of # NVLinks

    NIC Legend:
      NIC0: mlx5_0

Older drivers name NIC columns by device (``mlx5_0``) and have no NIC legend, or no NIC
columns at all, and some have no ``GPU NUMA ID`` column; ``SOC`` is the old spelling of ``SYS``.
Windows line ends, colour escapes and text before the header or after the legend are ignored.

Codes map to NCCL's path types (``topo.h``): ``X``→LOC, ``NV#``→NVL with # links, ``PIX``→PIX,
``PXB``→PXB, ``PHB`` and ``NODE``→PHB (NCCL has no NODE: any path through a host bridge of one
CPU is PHB), ``SYS``/``SOC``→SYS. What the matrix cannot tell: bandwidths (no PCIe width or
speed, no NIC speed, no GPU model, so no NVLink generation), whether NVLinks go through
NVSwitches, GPUDirect support, and NCCL's flattening of Broadcom PCIe switches (nvidia-smi counts
every bridge, so it may say PXB where NCCL says PIX).
"""

from __future__ import annotations

import re
from typing import Final

from commwall.io.node_topology_model import Cpu, Gpu, Nic, NodeTopology, NodeTopologyError, PathType

__all__ = ["CODES", "find_header", "parse_nvidia_smi"]

#: nvidia-smi codes and NCCL's path type for each (NV# handled apart).
CODES: Final = {
    "X": PathType.LOC,
    "PIX": PathType.PIX,
    "PXB": PathType.PXB,
    "PHB": PathType.PHB,
    "NODE": PathType.PHB,
    "SYS": PathType.SYS,
    "SOC": PathType.SYS,
}
_NV: Final = re.compile(r"^NV(\d{1,3})$")
_ANSI: Final = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_GPU: Final = re.compile(r"^GPU(\d{1,4})$")
_NIC: Final = re.compile(r"^NIC(\d{1,4})$")
_LEGEND: Final = re.compile(r"^\s*(NIC\d{1,4})\s*:\s*(\S+)\s*$")
_TRAILING: Final = ("CPU", "NUMA", "GPU")  # first words of the affinity columns
_ALLOWED: Final = "X, NV<n>, PIX, PXB, PHB, NODE, SYS"


def _clean(line: str) -> str:
    return _ANSI.sub("", line).rstrip("\r\n")


def find_header(lines: list[str]) -> int | None:
    """Index of the matrix header (first word ``GPU0``, second not ``X``), or None."""
    for i, raw in enumerate(lines):
        words = _clean(raw).split()
        if words and words[0] == "GPU0" and (len(words) == 1 or words[1] != "X"):
            return i
    return None


def _columns(words: list[str]) -> tuple[list[str], list[str]]:
    """Device columns of the header, then the affinity column titles present."""
    devices: list[str] = []
    i = 0
    while i < len(words) and not (words[i] in _TRAILING and not _GPU.match(words[i])):
        devices.append(words[i])
        i += 1
    rest = " ".join(words[i:])
    titles = [t for t in ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID") if t in rest]
    return devices, titles


def _code(cell: str) -> tuple[PathType, int | None] | None:
    if cell in CODES:
        return CODES[cell], None
    m = _NV.match(cell)
    if m and int(m.group(1)) > 0:
        return PathType.NVL, int(m.group(1))
    return None


def _numa(value: str | None) -> int | None:
    return int(value) if value is not None and value.isdigit() and len(value) < 6 else None


def parse_nvidia_smi(text: str, *, source: str = "<nvidia-smi>") -> NodeTopology:
    """Read ``nvidia-smi topo -m`` output (module doc); raises NodeTopologyError with the line
    of any problem."""
    lines = text.splitlines()
    head = find_header(lines)
    if head is None:
        raise NodeTopologyError(
            source, 1, "no `nvidia-smi topo -m` header (a row starting GPU0 GPU1 ... NIC0 ...)"
        )
    hline = head + 1
    devices, titles = _columns(_clean(lines[head]).split())
    if len(set(devices)) != len(devices):
        raise NodeTopologyError(source, hline, "a device column appears twice in the header")
    for d in devices:
        if d.startswith("GPU") and not _GPU.match(d):
            raise NodeTopologyError(source, hline, f"column {d!r} is not GPU<n>")
    rows: dict[str, tuple[int, list[str], list[str]]] = {}
    legend: dict[str, str] = {}
    in_matrix = True
    for i in range(head + 1, len(lines)):
        line = _clean(lines[i])
        words = line.split()
        if in_matrix and (not words or words[0].startswith("Legend")):
            in_matrix = False
        if not in_matrix:
            if m := _LEGEND.match(line):
                legend[m.group(1)] = m.group(2)
            continue
        name = words[0]
        if name not in devices:
            raise NodeTopologyError(
                source, i + 1, f"row {name!r} is not a column of the header (line {hline})"
            )
        if name in rows:
            raise NodeTopologyError(source, i + 1, f"a second row for {name}")
        cells = words[1 : 1 + len(devices)]
        if len(cells) < len(devices):
            raise NodeTopologyError(
                source, i + 1, f"row {name} has {len(cells)} cells; the header has {len(devices)}"
            )
        rows[name] = (i + 1, cells, words[1 + len(devices) :])
    return _topology(source, hline, devices, titles, rows, legend)


def _topology(
    source: str,
    hline: int,
    devices: list[str],
    titles: list[str],
    rows: dict[str, tuple[int, list[str], list[str]]],
    legend: dict[str, str],
) -> NodeTopology:
    topo = NodeTopology(source=source, format="nvidia-smi")
    gpus = [d for d in devices if _GPU.match(d)]
    names = {d: d if _GPU.match(d) else legend.get(d, d) for d in devices}
    if len(set(names.values())) != len(names):
        raise NodeTopologyError(source, hline, "two columns name the same device (NIC Legend)")
    numa_col = titles.index("NUMA Affinity") if "NUMA Affinity" in titles else None
    cpu_col = titles.index("CPU Affinity") if "CPU Affinity" in titles else None
    cpus: dict[int, str | None] = {}
    for d in gpus:
        if d not in rows:
            raise NodeTopologyError(source, hline, f"no row for {d}")
        line, cells, extra = rows[d]
        numa = _numa(extra[numa_col]) if numa_col is not None and numa_col < len(extra) else None
        if numa is not None:
            cpus.setdefault(numa, extra[cpu_col] if cpu_col is not None else None)
        topo.gpus.append(Gpu(name=d, dev=int(d[3:]), numa_id=numa, line=line))
        for col, cell in zip(devices, cells, strict=True):
            code = _code(cell)
            if code is None:
                raise NodeTopologyError(
                    source, line, f"{d} to {col}: {cell!r} is not a topology code ({_ALLOWED})"
                )
            if (code[0] == PathType.LOC) != (col == d):
                what = "only the diagonal may be X" if col != d else "the diagonal must be X"
                raise NodeTopologyError(source, line, f"{d} to {col}: {cell!r} ({what})")
            if code[1] is not None and col not in gpus:
                raise NodeTopologyError(source, line, f"{d} to {col}: NVLink to a NIC ({cell!r})")
            topo.reported[(d, names[col])] = code
    for numa in sorted(cpus):
        topo.cpus.append(Cpu(name=f"CPU{numa}", numa_id=numa, affinity=cpus[numa]))
    for d in devices:
        if d in gpus:
            continue
        line = rows[d][0] if d in rows else hline
        topo.nics.append(Nic(name=names[d], line=line))
    return topo
