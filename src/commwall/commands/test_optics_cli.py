"""``commwall optics``: tables, JSON and exit-2 errors through typer's CliRunner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from commwall.catalog import load_catalog
from commwall.cli import app

runner = CliRunner()


def test_fleet_table_shows_every_technology_with_totals_and_saving() -> None:
    result = runner.invoke(app, ["optics", "--transceivers", "50000", "--speed", "800G"])
    assert result.exit_code == 0, result.output
    out = result.output
    for text in ("DSP", "LPO", "CPO", "DAC", "ACC", "AEC", "AOC", "pJ/bit", "saving vs DSP"):
        assert text in out
    assert "850 kW" in out and "425 kW" in out and "50%" in out
    assert "LRO: the catalog has no lro part" in out
    assert "estimate" in out


def test_fleet_json_is_computed_from_the_catalog() -> None:
    result = runner.invoke(app, ["optics", "--transceivers", "1000", "--speed", "800G", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    rows = {r["kind"]: r for r in data["rows"]}
    dsp = load_catalog().optic("dsp-800g")
    assert rows["dsp"]["total_power_w"] == pytest.approx(1000 * dsp.power)
    assert rows["dsp"]["energy_pj_per_bit"] == pytest.approx(dsp.energy_per_bit * 1e12)
    assert rows["cpo"]["scaled_from"] == "cpo-1.6t"
    assert data["speed_gbps"] == 800


def test_default_is_one_module_per_technology_at_800g() -> None:
    result = runner.invoke(app, ["optics", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["n_transceivers"] == 1 and data["speed_gbps"] == 800


def test_exact_lists_missing_speeds() -> None:
    result = runner.invoke(app, ["optics", "--speed", "400G", "--exact"])
    assert result.exit_code == 0, result.output
    assert "dsp-400g" in result.output
    assert "LPO: no lpo part at 400 Gb/s; lpo speeds: 800 Gb/s" in result.output


def test_cluster_tables_show_links_per_tier() -> None:
    result = runner.invoke(app, ["optics", "--cluster", "dgx-h100", "--nodes", "128"])
    assert result.exit_code == 0, result.output
    out = result.output
    assert "Links per tier" in out and "host-leaf" in out and "leaf-spine" in out
    assert "1,024" in out and "4,096" in out
    assert "assumptions:" in out


def test_cluster_json_counts_the_4_su_superpod() -> None:
    result = runner.invoke(app, ["optics", "--cluster", "dgx-h100", "--nodes", "128", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert [(t["tier"], t["links"]) for t in data["tiers"]] == [
        ("host-leaf", 1024),
        ("leaf-spine", 1024),
    ]
    assert {t["kind"] for t in data["technologies"]} == {"dsp", "lpo", "cpo"}


def test_scenario_cluster_with_lengths_and_taper(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(
        "cluster:\n  preset: dgx-h100\n  nodes: 128\n  topology:\n    oversubscription: 2.0\n"
        "job:\n  model: llama3-8b\n  tp: 8\n  dp: 128\n",
        encoding="utf-8",
    )
    args = ["optics", "--scenario", str(path), "--length", "host-leaf=3m", "--json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    tiers = {t["tier"]: t for t in json.loads(result.output)["tiers"]}
    assert tiers["leaf-spine"]["links"] == 512
    assert tiers["host-leaf"]["medium"]["name"] == "acc"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--scenario", "x.yaml", "--cluster", "dgx-h100"], "give one of them"),
        (["--cluster", "dgx-h100", "--transceivers", "5"], "--transceivers/--speed"),
        (["--cluster", "dgx-h100", "--exact"], "--exact"),
        (["--cluster", "no-such-preset"], "unknown preset"),
        (["--nodes", "4"], "--nodes: needs --cluster or --scenario"),
        (["--length", "host-leaf=3m"], "need --cluster or --scenario"),
        (["--cluster", "dgx-h100", "--length", "bogus"], "expected TIER=LENGTH"),
        (["--cluster", "dgx-h100", "--nodes", "2", "--length", "core=3m"], "no tier 'core'"),
        (
            ["--cluster", "dgx-h100", "--nodes", "2", "--length", "host-leaf=5km"],
            "longer than its reach",
        ),
        (["--speed", "fast"], "cannot read"),
        (["--speed", "0G"], "speed: must be a positive bandwidth"),
        (["--scenario", "/nonexistent/s.yaml"], "cannot read the file"),
    ],
)
def test_bad_input_exits_2_with_one_clear_message(args: list[str], message: str) -> None:
    result = runner.invoke(app, ["optics", *args])
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Traceback" not in result.output


def test_one_node_cluster_says_there_is_no_fabric() -> None:
    result = runner.invoke(app, ["optics", "--cluster", "dgx-h100", "--nodes", "1"])
    assert result.exit_code == 0, result.output
    assert "fabric   none: one node" in result.output and "Links per tier" not in result.output
    data = json.loads(
        runner.invoke(app, ["optics", "--cluster", "dgx-h100", "--nodes", "1", "--json"]).output
    )
    assert data["tiers"] == [] and data["transceivers"] == 0
