"""``commwall traffic`` and the flow-engine options of ``run`` and ``collective``, end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from commwall.cli import app

runner = CliRunner()


def invoke(*args: str) -> dict[str, object]:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    data: dict[str, object] = json.loads(result.stdout)
    return data


def test_permutation_ecmp_loses_throughput_and_spray_recovers_it() -> None:
    common = ("traffic", "permutation", "--topology", "fat-tree", "--radix", "8", "--json")
    ecmp = invoke(*common)
    spray = invoke(*common, "--routing", "spray")
    assert ecmp["flows"] == 128 and spray["flows"] == 128
    assert float(spray["throughput_ratio"]) == pytest.approx(1.0)  # type: ignore[arg-type]
    assert float(ecmp["throughput_ratio"]) < 0.8  # type: ignore[arg-type]
    fct = spray["fct_s"]
    assert isinstance(fct, dict)
    # 2 MB at 100 Gb/s = 160 µs plus switches and cable propagation (a few µs)
    assert 2e6 / 12.5e9 < fct["p50"] < 1.05 * 2e6 / 12.5e9


def test_incast_table_and_json() -> None:
    result = runner.invoke(
        app, ["traffic", "incast", "--topology", "leaf-spine", "--radix", "16", "--senders", "8"]
    )
    assert result.exit_code == 0, result.output
    assert "completion time" in result.output and "p99" in result.output
    data = invoke("traffic", "incast", "--topology", "leaf-spine", "--radix", "16", "--senders",
                  "8", "--json")  # fmt: skip
    # 8 senders share the receiver's link: the last finishes after 8 x 2 MB at 100 Gb/s
    fct = data["fct_s"]
    assert isinstance(fct, dict)
    assert fct["max"] == pytest.approx(8 * 2e6 / 12.5e9, rel=0.01)


def test_user_matrix(tmp_path: Path) -> None:
    matrix = tmp_path / "flows.csv"
    matrix.write_text("# src,dst,bytes\n0,5,1MB\n1,5,1MB\n2,6,4MB\n", encoding="utf-8")
    data = invoke("traffic", "matrix", "--matrix", str(matrix), "--topology", "leaf-spine",
                  "--radix", "8", "--json")  # fmt: skip
    assert data["flows"] == 3
    assert data["total_bytes"] == pytest.approx(6e6)


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["traffic", "wave"], "allowed: permutation, incast, alltoall"),
        (["traffic", "permutation", "--routing", "magic"], "--routing: 'magic'"),
        (["traffic", "permutation", "--size", "2 parsecs"], "2 parsecs"),
        (["traffic", "incast", "--radix", "8", "--senders", "500"], "senders=500"),
        (["traffic", "matrix"], "needs --matrix"),
        (["traffic", "matrix", "--matrix", "/nonexistent/m.csv"], "cannot read"),
        (["traffic", "permutation", "--topology", "fat-tree", "--routing", "valiant"], "dragonfly"),
        (["traffic", "permutation", "--topology", "dragonfly"], "dragonfly needs --a"),
    ],
)
def test_bad_traffic_input_exits_2(args: list[str], fragment: str) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert fragment in result.output


def test_run_on_the_flow_engine_with_trace(tmp_path: Path) -> None:
    trace = tmp_path / "step.json"
    result = runner.invoke(app, ["run", "--engine", "flow", "--routing", "spray", "--trace",
                                 str(trace)])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "flow engine (spray)" in result.output
    assert "busiest links" in result.output
    events = json.loads(trace.read_text(encoding="utf-8"))["traceEvents"]
    assert any(e["ph"] == "X" for e in events)
    assert any(e["ph"] == "C" for e in events)  # link utilisation counters


def test_run_flags_are_checked() -> None:
    for args, fragment in (
        (["run", "--engine", "quantum"], "--engine: 'quantum'"),
        (["run", "--routing", "hot-potato"], "--routing"),
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == 2, result.output
        assert fragment in result.output


def test_collective_on_the_flow_engine() -> None:
    data = invoke("collective", "all_reduce", "--nodes", "4", "--engine", "flow", "--routing",
                  "ecmp", "--min", "1MiB", "--max", "64MiB", "--factor", "8", "--json")  # fmt: skip
    assert data["engine"] == "flow" and data["routing"] == "ecmp"
    rows = data["rows"]
    assert isinstance(rows, list) and len(rows) == 3
    for row in rows:
        # 4 DGX H100 on one leaf per rail: nothing contends, the flow engine agrees
        assert row["slowdown_vs_analytic"] == pytest.approx(1.0, abs=0.02)
    result = runner.invoke(app, ["collective", "all_reduce", "--routing", "ecmp"])
    assert result.exit_code == 2 and "--engine flow" in result.output


def test_a_saturation_curve_is_one_command() -> None:
    """Issue 20, item 4: ``--load`` prints accepted throughput per offered load."""
    data = invoke("traffic", "adversarial", "--topology", "dragonfly", "--a", "4", "--p", "2",
                  "--h", "2", "--load", "0.05:0.25:0.1", "--json")  # fmt: skip
    assert [round(r["offered"], 2) for r in data["loads"]] == [0.05, 0.15, 0.25]
    assert [r["accepted"] for r in data["loads"]] == pytest.approx([0.05, 0.125, 0.125])
    text = runner.invoke(app, ["traffic", "permutation", "--radix", "8", "--load", "0.5,1"])
    assert text.exit_code == 0 and "saturation throughput" in text.output
    bad = runner.invoke(app, ["traffic", "permutation", "--radix", "8", "--load", "2"])
    assert bad.exit_code == 2 and "fractions in (0, 1]" in bad.output
    bad = runner.invoke(app, ["traffic", "permutation", "--radix", "8", "--load", "x"])
    assert bad.exit_code == 2 and "--load: 'x'" in bad.output
