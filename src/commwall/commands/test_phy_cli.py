"""CLI tests for ``commwall phy``."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from commwall.cli import app

runner = CliRunner()


def test_table_output() -> None:
    r = runner.invoke(app, ["phy", "--lane", "100G", "--pre-fec-ber", "1e-5"])
    assert r.exit_code == 0, r.output
    assert "RS(544,514) KP4" in r.output and "LL-FEC" in r.output
    assert "least-latency code meeting 1e-15: RS(272,258) LL-FEC" in r.output


def test_snr_gives_pre_fec_ber_and_json() -> None:
    r = runner.invoke(app, ["phy", "--lane", "200G", "--snr-db", "18", "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["lane"] == "200G" and data["modulation_levels"] == 4
    assert data["pre_fec_ber"] == pytest.approx(1.9e-7, rel=0.01)
    assert {o["fec"] for o in data["options"]} >= {"kp4", "kr4", "ll", "none"}
    assert data["best"] == "ll"


def test_no_code_meets() -> None:
    r = runner.invoke(app, ["phy", "--pre-fec-ber", "0.1", "--json"])
    assert r.exit_code == 0 and json.loads(r.stdout)["best"] is None
    r = runner.invoke(app, ["phy", "--pre-fec-ber", "0.1"])
    assert "no code meets" in r.output


def test_default_operating_point_and_modulation() -> None:
    r = runner.invoke(app, ["phy"])
    assert r.exit_code == 0 and "KP4 design point" in r.output
    r = runner.invoke(
        app, ["phy", "--lane", "25G", "--snr-db", "14", "--modulation", "nrz", "--json"]
    )
    assert r.exit_code == 0 and json.loads(r.stdout)["modulation_levels"] == 2


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--lane", "300G"], "--lane: '300G' is not a known lane generation; allowed: 25G"),
        (["--snr-db", "200"], "--snr-db: 200.0 is out of range; allowed"),
        (["--pre-fec-ber", "0.7"], "--pre-fec-ber: 0.7 is out of range; allowed: 0 < BER < 0.5"),
        (["--pre-fec-ber", "0"], "--pre-fec-ber"),
        (["--target-ber", "2"], "--target-ber"),
        (["--modulation", "qam16", "--snr-db", "20"], "--modulation: 'qam16' is not known"),
        (["--snr-db", "20", "--pre-fec-ber", "1e-5"], "give one, not both"),
        (["--snr-basis", "eb"], "--snr-basis"),
    ],
)
def test_errors_exit_2(args: list[str], needle: str) -> None:
    r = runner.invoke(app, ["phy", *args])
    assert r.exit_code == 2
    assert needle in " ".join(r.output.split())
    assert "Traceback" not in r.output
