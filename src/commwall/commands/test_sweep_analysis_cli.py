"""``commwall sweep pareto|sensitivity|best``: on a small real sweep, as tables and JSON, and bad
input (exit 2, one line naming the option)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from commwall.commands.sweep_analysis import add_commands, format_value
from commwall.sweep.test_analysis import real_sweep

runner = CliRunner()


def _app() -> typer.Typer:
    """A stand-in for the CLI: a ``sweep`` group that add_commands fills."""
    app = typer.Typer()
    sub = typer.Typer()
    add_commands(sub)
    app.add_typer(sub, name="sweep")
    return app


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(real_sweep(tmp_path_factory.mktemp("sweep")))


def _run(*args: str) -> tuple[int, str]:
    result = runner.invoke(_app(), ["sweep", *args])
    return result.exit_code, result.output


def test_pareto(sweep: str) -> None:
    code, text = _run("pareto", sweep)
    assert code == 0, text
    assert "Pareto front: 6 of 12 designs" in text and "fat-tree" in text
    code, text = _run("pareto", sweep, "--objectives", "step_time_s,network_cost_usd,power_w",
                      "--layers", "2", "--json")  # fmt: skip
    assert code == 0, text
    data = json.loads(text)
    assert data["compared"] == 12 and data["front"] == 6
    assert {r["rank"] for r in data["records"]} == {0, 1}
    assert data["objectives"][2] == {"metric": "power_w", "goal": "min"}
    assert "config" not in data["records"][0] and "cluster.topology.kind" in data["records"][0]


def test_sensitivity(sweep: str) -> None:
    code, text = _run("sensitivity", sweep, "--json")
    assert code == 0, text
    axes = json.loads(text)["axes"]
    assert axes[0]["axis"] == "cluster.nics_per_node" and axes[0]["best_value"] == 2
    assert len(axes[0]["levels"]) == 2 and axes[0]["levels"][0]["n"] == 6
    code, text = _run("sensitivity", sweep, "--metric", "network_cost_usd",
                      "--axes", "cluster.topology.kind")  # fmt: skip
    assert code == 0, text
    assert "Axes by influence on network_cost_usd" in text and "rail-optimized" in text


def test_best(sweep: str) -> None:
    code, text = _run("best", sweep, "--where", "network_cost_usd < 300e3 and fits_in_memory",
                      "--top", "2")  # fmt: skip
    assert code == 0, text
    assert "9 meeting" in text and "#2 (point" in text and "point_id" in text
    code, text = _run("best", sweep, "--metric", "tokens_per_s", "--json")
    data = json.loads(text)
    assert data["goal"] == "max" and data["records"][0]["cluster.nics_per_node"] == 2
    code, text = _run("best", sweep, "--metric", "tokens_per_s", "--min", "--json")
    assert json.loads(text)["records"][0]["cluster.nics_per_node"] == 1
    code, text = _run("best", sweep, "--where", "power_w < 0")
    assert code == 0 and "no design meets the constraint" in text


def test_bad_input(sweep: str, tmp_path: Path) -> None:
    for args, message in (
        (["pareto", str(tmp_path / "nope")], "SWEEP: "),
        (["pareto", str(tmp_path)], "SWEEP: no points"),
        (["pareto", sweep, "--objectives", "step_time_s:fast"], "--objectives: "),
        (["pareto", sweep, "--objectives", "topology"], "--objectives: objective 'topology'"),
        (["sensitivity", sweep, "--metric", "bottleneck"], "--metric: metric 'bottleneck'"),
        (["sensitivity", sweep, "--axes", "cluster.nodes"], "--axes: axis 'cluster.nodes'"),
        (["best", sweep, "--where", "__import__('os')"], "--where: "),
        (["best", sweep, "--where", "powr_w < 1"], "did you mean 'power_w'?"),
        (["best", sweep, "--where", "topology < 3"], "cannot order"),
        (["best", sweep, "--metric", "nope"], "--metric: metric 'nope'"),
    ):
        code, text = _run(*args)
        assert code == 2, (args, text)
        assert message in text and "Traceback" not in text, (args, text)


def test_format_value() -> None:
    assert format_value("step_time_s", 1.5) == "1.5 s"
    assert format_value("breakdown.dp_s", 0.0123) == "12.3 ms"
    assert format_value("comm_wait_share", 0.561) == "56.1%"
    assert format_value("network_cost_usd", 5.2672e6) == "$5.27M"
    assert format_value("power_w", 815264.0) == "815.3 kW"
    assert format_value("tokens_per_s", 88671.2) == "88,671"
    assert format_value("fits_in_memory", True) == "yes" and format_value("x", None) == "-"
    assert format_value("cluster.topology.kind", "fat-tree") == "fat-tree"


def test_a_narrow_points_table_never_cuts_a_number() -> None:
    """On a narrow terminal the axis names fold; every metric value stays whole (issue 19)."""
    from rich.console import Console

    from commwall.commands.sweep_analysis import _points_table

    records = [{"index": i, "cluster.topology.oversubscription": 3.0, "job.tp": 8,
                "step_time_s": 12.3456789 + i, "tokens_per_s": 1_234_567.0 + i} for i in range(3)]  # fmt: skip
    table = _points_table("Pareto front", records, ["cluster.topology.oversubscription", "job.tp"],
                          ["step_time_s", "tokens_per_s"])  # fmt: skip
    console = Console(width=48, record=True, color_system=None)
    console.print(table)
    text = console.export_text()
    for i in range(3):
        assert f"1,234,56{7 + i}" in text and f"{12.3 + i:.1f} s" in text, text
