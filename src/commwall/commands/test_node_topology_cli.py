"""``commwall node-topology``: tables, JSON, and bad files ending in one line (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from commwall.cli import app

runner = CliRunner()
FIXTURES = Path(__file__).parents[1] / "io" / "testdata" / "node_topology"


def test_tables_for_an_nccl_dump() -> None:
    result = runner.invoke(app, ["node-topology", str(FIXTURES / "dgx_h100_topo.xml")])
    assert result.exit_code == 0, result.output
    for text in (
        "8 GPUs, 10 NICs, 4 NVSwitches",
        "NVL 370.8",
        "PXB 48",
        "PXN 48",
        "nics_per_node: 8",
        "gpudirect_rdma: true",
        "scale_up: nvlink",
    ):
        assert text in result.output, text


def test_json_for_nvidia_smi() -> None:
    path = str(FIXTURES / "dgx_a100_nvidia_smi.txt")
    result = runner.invoke(app, ["node-topology", path, "--format", "nvidia-smi", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["format"] == "nvidia-smi" and len(data["gpus"]) == 8
    assert data["gpu_gpu"]["GPU0"]["GPU1"] == {
        "type": "NVL",
        "bw_GBps": None,
        "direct_type": "NVL",
        "direct_bw_GBps": None,
        "via": None,
        "nvlinks": 12,
        "gdr": None,
    }
    assert data["gpu_nic"]["GPU0"]["mlx5_2"]["type"] == "PXN"
    assert data["cluster"] == {"gpus_per_node": 8, "scale_up": "nvlink", "nics_per_node": 8}


def test_no_flatten_json() -> None:
    path = str(FIXTURES / "dgx_a100_topo.xml")
    result = runner.invoke(app, ["node-topology", path, "--no-flatten", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["gpu_nic"]["GPU0"]["mlx5_0"]["bw_GBps"] == 24.0


def test_bad_input(tmp_path: Path) -> None:
    bad = tmp_path / "bad.xml"
    bad.write_text('<system version="1">\n<cpu numaid="0">\n<pci busid="nope"/>\n</cpu></system>\n')
    for args, message in (
        (["node-topology", str(bad)], f"{bad}:3: <pci>: busid='nope' is not a PCI address"),
        (["node-topology", str(tmp_path / "missing.txt")], "cannot read it"),
        (["node-topology", str(bad), "--format", "csv"], "--format: 'csv' is not allowed"),
        (["node-topology", str(bad), "--format", "nvidia-smi"], ":1: no `nvidia-smi topo -m`"),
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == 2, result.output
        assert message in result.output and "Traceback" not in result.output
        assert len(result.output.strip().splitlines()) == 1, result.output
