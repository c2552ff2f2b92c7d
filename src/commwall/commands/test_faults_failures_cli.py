"""``commwall faults failures`` end to end."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from commwall.cli import app

runner = CliRunner()


def invoke(*args: str) -> dict[str, Any]:
    result = runner.invoke(app, ["faults", "failures", *args, "--json"])
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def test_a_failed_core_of_a_fat_tree_as_json() -> None:
    data = invoke("--topology", "fat-tree", "--radix", "4", "--fail-switch", "core:0",
                  "--routing", "spray")  # fmt: skip
    impact = data["impacts"][0]
    assert impact["bisection_before_Bps"] == 8 * 50e9
    assert impact["bisection_after_Bps"] == 6 * 50e9
    assert impact["failed_switches"] == ["core:0"]
    (w,) = impact["workloads"]
    assert w["workload"] == "permutation" and w["slowdown"] >= 1.0


def test_random_draws_give_distributions_and_repeat_with_the_seed() -> None:
    args = ("--topology", "leaf-spine", "--radix", "8", "--fail-random-cables", "4",
            "--samples", "6", "--seed", "3")  # fmt: skip
    one, two = invoke(*args), invoke(*args)
    assert one == two and one["samples"] == 6
    loss = one["summary"]["bisection_loss"]
    assert loss["n"] == 6 and 0 < loss["mean"] <= 4 / 16  # 4 uplinks of 32 at most 4 x rate
    assert all(i["failed_cables"] == {"leaf-spine": 4} for i in one["impacts"])


def test_cluster_table() -> None:
    result = runner.invoke(app, ["faults", "failures", "--cluster", "dgx-h100", "--nodes", "8",
                                 "--fail-cable", "3", "--op", "all_reduce"])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "endpoints cut off 1" in result.output
    assert "56 of 64 ranks remain" in result.output and "cannot run" in result.output


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("--fail-switch", "spine:99"), "--fail-switch"),
        (("--fail-random-cables", "2", "--cable-tier", "uplinks"), "--cable-tier"),
        (("--fail-cable", "1", "--routing", "warp"), "--routing"),
        (("--fail-cable", "100000"), "--fail-cable"),
        ((), "nothing to fail"),
        (("--fail-cable", "1", "--size", "lots"), "--size"),
    ],
)
def test_bad_input_is_one_message_and_exit_2(args: tuple[str, ...], fragment: str) -> None:
    result = runner.invoke(app, ["faults", "failures", "--topology", "leaf-spine", "--radix", "8",
                                 *args])  # fmt: skip
    assert result.exit_code == 2, result.output
    assert fragment in result.output and "Traceback" not in result.output


def test_failures_and_bit_errors_in_one_scenario(tmp_path: Path) -> None:
    """Bit errors are counted over the fabric as built: a scenario that also fails cables used
    to stop on the failed cables' zero line rate."""
    from commwall.report.fixtures import FAULTS

    text = FAULTS.read_text() + "  failures:\n    random_cables: {leaf-spine: 2}\n"
    scenario = tmp_path / "both.yaml"
    scenario.write_text(text)
    result = runner.invoke(app, ["run", str(scenario), "--json"])
    assert result.exit_code == 0, result.output
    faults = json.loads(result.stdout)["faults"]
    assert faults["failures"] is not None and faults["bit_errors"]["directed_links"] > 0
