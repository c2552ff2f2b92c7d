"""``commwall node-topology FILE``: import one node's topology dump (NCCL XML or nvidia-smi).

>>> # NCCL_TOPO_DUMP_FILE=node.xml all_reduce_perf ...; commwall node-topology node.xml
>>> # nvidia-smi topo -m > topo.txt; commwall node-topology topo.txt --json

Prints the devices, the GPU×GPU and GPU×NIC matrices of NCCL path types with their bandwidths
(:mod:`commwall.io.node_topology_paths`), each NIC's nearest GPUs, and a ``cluster:`` fragment to
paste into a scenario. ``commwall topology`` builds fabrics from a KIND; this command reads a
real node, so it stands beside it rather than under it.
"""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any

import typer

from commwall.console import fail, friendly, out


def register(app: typer.Typer) -> None:
    """Add ``commwall node-topology`` to ``app``."""
    app.command("node-topology")(friendly(node_topology))


def node_topology(
    file: Annotated[
        str, typer.Argument(help="NCCL_TOPO_DUMP_FILE XML or `nvidia-smi topo -m` output.")
    ],
    fmt: Annotated[str, typer.Option("--format", help="auto, nccl-xml or nvidia-smi.")] = "auto",
    no_flatten: Annotated[
        bool,
        typer.Option(
            "--no-flatten",
            help="Keep two-level Broadcom PCIe switches as nvidia-smi sees them (NCCL flattens).",
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print everything as JSON.")] = False,
) -> None:
    """Import a node's topology: devices, NCCL path types and bandwidths between GPUs and to
    NICs, NIC affinity, and a cluster fragment for a scenario."""
    from commwall.io.node_topology import FORMATS, NodeTopologyError, read_node_topology
    from commwall.io.node_topology_summary import summary

    if fmt not in FORMATS:
        fail(f"--format: {fmt!r} is not allowed; allowed: {', '.join(FORMATS)}")
    try:
        topo = read_node_topology(file, fmt=fmt)
    except NodeTopologyError as e:
        fail(str(e))
    data = summary(topo, topo.paths(flatten_bcm=not no_flatten))
    if as_json:
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
        return
    _print(data)


def _cell(p: dict[str, Any]) -> str:
    text = p["type"] if p["bw_GBps"] is None else f"{p['type']} {p['bw_GBps']:g}"
    if p["nvlinks"]:
        text += f" x{p['nvlinks']}"
    if p["via"] and p["type"] == "PXN":
        text += f" ({p['via']})"
    return text


def _print(d: dict[str, Any]) -> None:
    from rich.table import Table

    gpus = [g["name"] for g in d["gpus"]]
    nics = [n["name"] for n in d["nics"]]
    cpus = ", ".join(f"{c['name']} ({c['vendor'] or '?'})" for c in d["cpus"]) or "not listed"
    out.print(
        f"[bold]{d['source']}[/] ({d['format']}): {len(gpus)} GPUs, {len(nics)} NICs, "
        f"{len(d['nvswitches'])} NVSwitches, {d['pci_switches']} PCIe switches; CPUs: {cpus}"
    )
    devices = Table(title="GPUs", title_justify="left")
    for col in ("GPU", "bus id", "sm", "NUMA", "NVLinks", "GDR"):
        devices.add_column(col)
    for g in d["gpus"]:
        devices.add_row(
            g["name"],
            g["busid"] or "-",
            str(g["sm"] or "-"),
            str(g["numa_id"] if g["numa_id"] is not None else "-"),
            str(g["nvlinks"]),
            _yes(g["gdr"]),
        )
    out.print(devices)
    for title, matrix, cols in (
        ("GPU x GPU (NCCL path type, GB/s)", d["gpu_gpu"], gpus),
        ("GPU x NIC (NCCL path type, GB/s; PXN relay in brackets)", d["gpu_nic"], nics),
    ):
        if not cols:
            continue
        table = Table(title=title, title_justify="left")
        table.add_column("")
        for c in cols:
            table.add_column(c)
        for g in gpus:
            table.add_row(g, *[_cell(matrix[g][c]) for c in cols])
        out.print(table)
    if d["nics"]:
        table = Table(title="NICs", title_justify="left")
        for col in ("NIC", "bus id", "Gb/s", "GDR", "nearest GPU(s)", "path", "role"):
            table.add_column(col)
        for n in d["nics"]:
            speed = "-" if n["speed_Gbps"] is None else f"{n['speed_Gbps']:g}"
            table.add_row(
                n["name"],
                n["busid"] or "-",
                speed,
                _yes(n["gdr"]),
                ", ".join(n["nearest_gpus"]) or "-",
                n["nearest_type"] or "-",
                "compute" if n["compute"] else "other",
            )
        out.print(table)
    out.print(f"GPUDirect RDMA pairs (GPU, NIC): {len(d['gpudirect_pairs'])}")
    out.print("cluster fragment for a scenario:")
    out.print("  cluster:", markup=False)
    for key, value in d["cluster"].items():
        text = str(value).lower() if isinstance(value, bool) else str(value)
        out.print(f"    {key}: {text}", markup=False)
    for note in d["notes"]:
        out.print(f"note: {note}", markup=False)


def _yes(value: bool | None) -> str:
    return "?" if value is None else ("yes" if value else "no")
