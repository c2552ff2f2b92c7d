"""``commwall faults bit-errors`` and ``commwall faults incast``, end to end."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from commwall.cli import app

runner = CliRunner()


def invoke(*args: str) -> dict[str, object]:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    data: dict[str, object] = json.loads(result.stdout)
    return data


def test_bit_errors_json_and_poisson_law() -> None:
    d = invoke("faults", "bit-errors", "--nodes", "4", "--pre-fec-ber", "1e-4", "--ber-spread",
               "0", "--samples", "4", "--json")  # fmt: skip
    assert d["cluster"] == "dgx-h100"
    per_run, p_any = d["silent_corruptions_per_run"], d["p_at_least_one_in_run"]
    assert isinstance(per_run, dict) and isinstance(p_any, dict)
    # σ = 0: every draw identical; P(≥1) = 1 − exp(−expected count)
    assert per_run["min"] == per_run["max"]
    import math

    assert p_any["mean"] == pytest.approx(-math.expm1(-per_run["mean"]), rel=1e-9)


def test_bit_errors_table_and_worse_ber_is_worse() -> None:
    result = runner.invoke(app, ["faults", "bit-errors", "--nodes", "2", "--samples", "10"])
    assert result.exit_code == 0, result.output
    assert "time between silent corruptions" in result.output
    good = invoke("faults", "bit-errors", "--nodes", "2", "--samples", "10", "--json")
    bad = invoke("faults", "bit-errors", "--nodes", "2", "--samples", "10", "--pre-fec-ber",
                 "1e-4", "--json")  # fmt: skip
    assert bad["silent_corruptions_per_run"]["mean"] > good["silent_corruptions_per_run"]["mean"]  # type: ignore[index]


def test_incast_compares_fabrics() -> None:
    d = invoke("faults", "incast", "--senders", "64", "--size", "2MB", "--samples", "5", "--json")
    rows = {r["fabric"]: r for r in d["fabrics"]}  # type: ignore[attr-defined]
    assert set(rows) == {"lossy", "roce", "ib", "uec"}
    ideal = 64 * 2e6 / 50e9  # N·S/C at 400 Gb/s
    for name in ("roce", "ib"):  # lossless: no drops, ideal completion
        assert rows[name]["dropped_bytes"]["max"] == 0
        assert rows[name]["completion_s"]["p50"] == pytest.approx(ideal, rel=0.02)
    assert rows["lossy"]["dropped_bytes"]["mean"] > 0
    assert rows["lossy"]["completion_s"]["p50"] >= 0.2  # waits at least one 200 ms RTO


def test_incast_that_fits_the_buffer_drops_nothing() -> None:
    d = invoke("faults", "incast", "--senders", "4", "--size", "64KB", "--fabric", "lossy",
               "--samples", "3", "--json")  # fmt: skip
    row = d["fabrics"][0]  # type: ignore[index]
    assert row["dropped_bytes"]["max"] == 0 and row["p_any_drop"] == 0


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["incast", "--fabric", "carrier-pigeon"], "--fabric"),
        (["incast", "--size", "2 furlongs"], "furlongs"),
        (["incast", "--switch", "no-such-switch"], "no-such-switch"),
        (["bit-errors", "--pre-fec-ber", "2"], "pre_fec_ber"),
        (["bit-errors", "--step-time", "soon"], "--step-time"),
        (["bit-errors", "--cluster", "no-such-preset"], "no-such-preset"),
    ],
)
def test_bad_input(args: list[str], needle: str) -> None:
    result = runner.invoke(app, ["faults", *args, "--samples", "2"])
    assert result.exit_code == 2, result.output
    assert needle in result.output and "Traceback" not in result.output
