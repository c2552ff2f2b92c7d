"""One node's devices and how NCCL would connect them, read from a topology dump.

Two inputs describe a node:

* NCCL's topology XML, the file NCCL writes when ``NCCL_TOPO_DUMP_FILE`` is set (format:
  NCCL ``src/graph/xml.cc`` / ``topo.cc``; ``shared/reference/nccl-model.md`` §8) — read by
  :mod:`commwall.io.node_topology_xml`;
* the matrix ``nvidia-smi topo -m`` prints — read by :mod:`commwall.io.node_topology_smi`.

:func:`read_node_topology` tells them apart. The result, :class:`NodeTopology`, lists CPUs (NUMA
nodes), PCIe switches, GPUs, NVSwitches, NVLinks and NICs; :meth:`NodeTopology.graph` is the
networkx view; :meth:`NodeTopology.paths` computes the NCCL path type and bandwidth of every
GPU↔GPU and GPU↔NIC pair (:mod:`commwall.io.node_topology_paths`); :func:`summarize` turns that
into what the rest of commwall needs, including a ``cluster:`` fragment for a scenario.

Malformed input raises :class:`NodeTopologyError` carrying the file, the line and the reason —
never any other exception.

>>> topo = parse_node_topology(SMI_SAMPLE, source="smi.txt")
>>> topo.format, [g.name for g in topo.gpus], [n.name for n in topo.nics]
('nvidia-smi', ['GPU0', 'GPU1'], ['mlx5_0'])
>>> p = topo.paths()
>>> p.get("GPU0", "GPU1").type.name, p.get("GPU0", "mlx5_0").type.name
('NVL', 'PIX')
>>> p.get("GPU1", "mlx5_0").type.name, p.get("GPU1", "mlx5_0").direct_type.name
('PXN', 'PHB')
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

from commwall.io.node_topology_model import (
    C2cLink,
    Cpu,
    Gpu,
    Nic,
    NodeTopology,
    NodeTopologyError,
    NvLink,
    NvSwitch,
    PathType,
    PciSwitch,
)
from commwall.io.node_topology_paths import PathTable, compute_paths
from commwall.io.node_topology_smi import find_header, parse_nvidia_smi
from commwall.io.node_topology_summary import summary
from commwall.io.node_topology_xml import parse_nccl_xml

__all__ = [
    "FORMATS",
    "SMI_SAMPLE",
    "C2cLink",
    "Cpu",
    "Gpu",
    "Nic",
    "NodeTopology",
    "NodeTopologyError",
    "NvLink",
    "NvSwitch",
    "PathTable",
    "PathType",
    "PciSwitch",
    "compute_paths",
    "detect_format",
    "parse_node_topology",
    "read_node_topology",
    "summarize",
]

#: Input formats :func:`read_node_topology` accepts (``auto`` detects one of the others).
FORMATS: Final = ("auto", "nccl-xml", "nvidia-smi")

#: A two-GPU ``nvidia-smi topo -m`` matrix (for examples and tests).
SMI_SAMPLE: Final = """\
\tGPU0\tGPU1\tNIC0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID
GPU0\t X \tNV18\tPIX\t0-55\t0\t\tN/A
GPU1\tNV18\t X \tNODE\t0-55\t0\t\tN/A
NIC0\tPIX\tNODE\t X \t\t\t\t

Legend:

  X    = Self
  NV#  = Connection traversing a bonded set of # NVLinks

NIC Legend:

  NIC0: mlx5_0
"""


def detect_format(text: str) -> str | None:
    """``nccl-xml`` for text that starts like XML, ``nvidia-smi`` for a ``GPU0 …`` header row,
    else None.

    >>> detect_format('<?xml version="1.0"?>\\n<system version="1"/>'), detect_format(SMI_SAMPLE)
    ('nccl-xml', 'nvidia-smi')
    """
    stripped = text.lstrip("\ufeff \t\r\n")
    if stripped.startswith("<"):
        return "nccl-xml"
    return "nvidia-smi" if find_header(text.splitlines()) is not None else None


def parse_node_topology(
    text: str, *, source: str = "<topology>", fmt: str = "auto"
) -> NodeTopology:
    """Read a topology dump held in ``text`` (``fmt``: one of :data:`FORMATS`)."""
    if fmt not in FORMATS:
        raise NodeTopologyError(
            source, 1, f"format {fmt!r} is not known; allowed: {', '.join(FORMATS)}"
        )
    if fmt == "auto":
        found = detect_format(text)
        if found is None:
            raise NodeTopologyError(
                source,
                1,
                "neither an NCCL topology XML (<system version=...>) nor `nvidia-smi topo -m` "
                "output (a header row GPU0 GPU1 ...)",
            )
        fmt = found
    if fmt == "nccl-xml":
        return parse_nccl_xml(text, source=source)
    return parse_nvidia_smi(text, source=source)


def read_node_topology(path: str | Path, *, fmt: str = "auto") -> NodeTopology:
    """Read the topology dump at ``path`` (NCCL XML or ``nvidia-smi topo -m``; ``fmt`` forces
    one, see :data:`FORMATS`)."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as e:
        raise NodeTopologyError(str(p), 0, f"cannot read it ({e.strerror or e})") from None
    text = data.decode("utf-8", errors="replace")
    return parse_node_topology(text, source=str(p), fmt=fmt)


def summarize(topo: NodeTopology, paths: PathTable | None = None) -> dict[str, Any]:
    """What the rest of commwall needs from a node (:mod:`commwall.io.node_topology_summary`)."""
    return summary(topo, paths if paths is not None else compute_paths(topo))
