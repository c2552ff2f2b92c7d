"""``commwall topology``: figures for each kind, JSON, and clean failures (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from commwall.cli import app

runner = CliRunner()


def _json(*args: str) -> dict:  # type: ignore[type-arg]
    result = runner.invoke(app, ["topology", *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def test_fat_tree_table() -> None:
    result = runner.invoke(app, ["topology", "fat-tree", "--radix", "64"])
    assert result.exit_code == 0, result.output
    for text in ("65,536", "2,048 leaf, 2,048 spine, 1,024 core (total 5,120)", "1.638 PB/s"):
        assert text in result.output
    assert "same pod 32, different pods 1,024" in result.output


def test_fat_tree_json() -> None:
    s = _json("fat-tree", "--radix", "8", "--oversubscription", "3,1")
    assert s["endpoints"] == 8 * 6 * 4
    assert s["switches"] == {"leaf": 32, "spine": 16, "core": 8}
    assert s["oversubscription"] == {"leaf": 3.0, "spine": 1.0}
    assert s["diameter"] == 6


def test_leaf_spine_and_switch_from_catalog() -> None:
    s = _json("leaf-spine", "--switch", "quantum-hdr-qm8700")
    assert s["endpoints"] == 800 and s["switches"] == {"leaf": 40, "spine": 20}
    assert s["params"]["link_rate"] == 25e9
    assert s["bisection_bandwidth"] == 400 * 25e9


def test_rail_optimized_superpod() -> None:
    s = _json("rail-optimized", "--nodes", "127", "--rails", "8")
    assert s["switches"] == {"leaf": 32, "spine": 16}
    assert s["cables"] == {"leaf": 1016, "spine": 1024}


def test_rail_only_mentions_nvlink() -> None:
    result = runner.invoke(app, ["topology", "rail-only", "--nodes", "32"])
    assert result.exit_code == 0, result.output
    assert "NVLink" in result.output


def test_dragonfly() -> None:
    s = _json("dragonfly", "--a", "8", "--p", "4", "--h", "4", "--link-rate", "200Gb/s")
    assert s["params"]["g"] == 33 and s["endpoints"] == 8 * 4 * 33
    assert s["params"]["router_radix"] == 15 and s["params"]["balanced"] is True
    assert s["cables"]["global"] == 33 * 32 // 2
    assert s["diameter"] == 5
    result = runner.invoke(app, ["topology", "dragonfly", "--a", "4", "--p", "2", "--h", "2"])
    assert result.exit_code == 0 and "MIN routes" in result.output


def test_rail_optimized_bill_of_materials_json() -> None:
    from commwall.catalog import load_catalog
    from commwall.phy.optics import optic_choice

    s = _json("rail-optimized", "--nodes", "127", "--gpus-per-node", "8", "--gpu", "h100-sxm")
    b = s["bom"]
    assert b["switches_by_tier"] == {"leaf": 32, "spine": 16}
    assert b["cables_by_segment"] == {"access": {"sr": 1016}, "leaf-spine": {"sr": 1024}}
    assert b["transceivers_by_technology"] == {"dsp": 2 * 2040}
    cat = load_catalog()
    w = b["totals"]["watts"]
    assert w["switches"] == 48 * cat.switch("quantum-2-qm9700").power  # type: ignore[operator]
    assert w["optics"] == pytest.approx(4080 * optic_choice("dsp", "400G").power_w)
    assert w["gpus"] == 1016 * cat.gpu("h100-sxm").tdp
    assert b["totals"]["cost_is_estimate"] is True
    assert b["sources"]["quantum-2-qm9700.power"]
    rows = {r["optics"]: r for r in s["optics_comparison"]["rows"]}
    assert rows["cpo"]["interconnect_w"] < rows["lpo"]["interconnect_w"] < w["optics"]


def test_bill_of_materials_table_and_options() -> None:
    result = runner.invoke(
        app,
        ["topology", "rail-optimized", "--nodes", "31", "--optics", "cpo", "--gpus-per-node", "8"],
    )
    assert result.exit_code == 0, result.output
    for text in (
        "8 leaf + 4 spine × quantum-2-qm9700",
        "access 248 SR",
        "co-packaged",
        "GPUs",
        "h100-sxm",
        "cpo*",
        "network cost (~estimate)",
    ):
        assert text in result.output, text
    s = _json("fat-tree", "--radix", "8", "--length", "access=1", "--optics", "lpo")
    assert s["bom"]["cables_by_segment"]["access"] == {"dac": 128}
    assert set(s["bom"]["transceivers_by_technology"]) == {"lpo"}
    s = _json("leaf-spine", "--radix", "8", "--gpus-per-node", "4", "--gpu", "b200")
    assert s["bom"]["gpus"]["count"] == 32 * 4


def test_copper_beyond_reach_warns_in_the_table() -> None:
    result = runner.invoke(
        app, ["topology", "leaf-spine", "--radix", "8", "--link-rate", "800Gb/s"]
    )
    assert result.exit_code == 0, result.output
    assert "access 32 SR" in result.output and "warning" in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["fat-tree", "--radix", "63"], "k must be even"),
        (["torus"], "KIND 'torus' is not allowed"),
        (["dragonfly", "--a", "4"], "dragonfly needs --p, --h"),
        (["dragonfly", "--a", "4", "--p", "2", "--h", "2", "--g", "10"], "g=10"),
        (["rail-optimized"], "needs --nodes"),
        (["fat-tree", "--oversubscription", "x"], "--oversubscription: 'x' is not a ratio"),
        (["fat-tree", "--oversubscription", "0.5"], "must be >= 1"),
        (["leaf-spine", "--link-rate", "400Gb"], "link_rate='400Gb'"),
        (["leaf-spine", "--switch", "nope"], "nope"),
        (["leaf-spine", "--nodes", "5000"], "at most 2,048"),
        (["fat-tree", "--radix", "8", "--optics", "aoc"], "--optics: 'aoc' is not allowed"),
        (["fat-tree", "--radix", "8", "--length", "x"], "--length: 'x' is not SEGMENT=LENGTH"),
        (["fat-tree", "--radix", "8", "--length", "core=5"], "no segment 'core'"),
        (["fat-tree", "--radix", "8", "--length", "access=far"], "lengths['access']='far'"),
        (["fat-tree", "--radix", "8", "--gpus-per-node", "0"], "--gpus-per-node: must be"),
        (["fat-tree", "--radix", "8", "--gpu", "h999"], "unknown gpu 'h999'"),
        (["fat-tree", "--radix", "8", "--nic", "connectx-6"], "slower than the 400 Gb/s"),
        (["fat-tree", "--radix", "8", "--lanes-per-port", "3"], "not a known lane rate"),
    ],
)
def test_bad_input_exits_2_with_a_message(args: list[str], message: str) -> None:
    result = runner.invoke(app, ["topology", *args])
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Traceback" not in result.output


def test_scale_up_and_dragonfly_plus_kinds() -> None:
    import json as _json

    from typer.testing import CliRunner

    from commwall.cli import app

    runner = CliRunner()
    nvl = _json.loads(runner.invoke(app, ["topology", "nvl72", "--json"]).stdout)
    assert nvl["gpus"] == 72 and nvl["nvlink_links"] == 72 * 18
    assert nvl["aggregate_bandwidth"] == 72 * 18 * 100e9  # 1.8 TB/s per GPU, both directions
    node = _json.loads(runner.invoke(app, ["topology", "nvlink-node", "--json"]).stdout)
    assert node["per_gpu_bandwidth"] == 18 * 25e9  # H100: 18 NVLink4 links, 25 GB/s each way
    dfp = runner.invoke(app, ["topology", "dragonfly-plus", "--p", "4", "--l", "4", "--s", "4",
                              "--h", "4", "--json"])  # fmt: skip
    assert dfp.exit_code == 0 and _json.loads(dfp.stdout)["endpoints"] == 4 * 4 * 17
    bad = runner.invoke(app, ["topology", "dragonfly-plus", "--p", "4"])
    assert bad.exit_code == 2 and "needs --l, --s, --h" in bad.output


def test_topology_of_a_scenario_uses_its_parts() -> None:
    import json as _json
    from pathlib import Path

    from typer.testing import CliRunner

    from commwall.cli import app

    runner = CliRunner()
    example = Path(__file__).resolve().parents[3] / "examples" / "llama3-70b-dgx-h100.yaml"
    result = runner.invoke(app, ["topology", "--scenario", str(example), "--json"])
    assert result.exit_code == 0, result.output
    data = _json.loads(result.stdout)
    assert data["switches"] == {"leaf": 32, "spine": 16}  # the 4-SU SuperPOD
    assert runner.invoke(app, ["topology"]).exit_code == 2
    both = runner.invoke(app, ["topology", "fat-tree", "--scenario", str(example)])
    assert both.exit_code == 2 and "not both" in both.output


def test_draw_writes_a_picture(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    runner = CliRunner()
    out = tmp_path / "fabric.png"
    result = runner.invoke(app, ["topology", "leaf-spine", "--radix", "8", "--draw", str(out)])
    assert result.exit_code == 0, result.output
    assert out.stat().st_size > 5_000
    bad = runner.invoke(app, ["topology", "leaf-spine", "--radix", "8", "--draw", "x.jpg"])
    assert bad.exit_code == 2 and ".png, .svg or .pdf" in bad.output
