"""``commwall compare``: scenarios side by side with deltas against the first, and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from commwall.cli import app

runner = CliRunner()
EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
OVERSUB = str(EXAMPLES / "llama3-70b-oversubscribed.yaml")


def test_default_against_an_oversubscribed_fabric() -> None:
    result = runner.invoke(app, ["compare", "--default", OVERSUB, "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    base, over = data["scenarios"]
    assert data["baseline"] == "default" and over["label"] == "llama3-70b-oversubscribed"
    assert over["file"] == OVERSUB and over["cluster"]["oversubscription"] == 3.0
    m0, m1 = base["metrics"], over["metrics"]
    d = over["delta_vs_first"]["network_cost_usd"]
    assert d["abs"] == pytest.approx(m1["network_cost_usd"] - m0["network_cost_usd"])
    assert d["rel"] == pytest.approx(m1["network_cost_usd"] / m0["network_cost_usd"] - 1)
    assert base["delta_vs_first"]["step_time_s"] == {"abs": 0.0, "rel": 0.0}
    # the cheaper fabric is slower: each wins its own row; equal rows have no winner
    assert data["best"]["network_cost_usd"] == ["llama3-70b-oversubscribed"]
    assert data["best"]["step_time_s"] == ["default"]
    assert "gpus" not in data["best"] and "breakdown.bubble_s" not in data["best"]
    assert set(m0) >= {"step_time_s", "tokens_per_s", "switches", "transceivers", "mfu"}


def test_table(tmp_path: Path) -> None:
    copy = tmp_path / "llama3-70b-oversubscribed.yaml"
    copy.write_text(Path(OVERSUB).read_text())
    result = runner.invoke(app, ["compare", OVERSUB, str(copy), "--default", "--engine",
                                 "analytic"])  # fmt: skip
    assert result.exit_code == 0, result.output
    text = result.output
    assert "Compared with default" in text and "network_cost_usd" in text
    assert "2:llama3-70b-oversubscribed" in text and "3:llama3-70b-oversubscribed" in text
    assert "pp)" in text and "-32.2%" in text and "cluster  1,024 x h100-sxm" in text


def test_bad_input(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("cluster: [\n")
    unfit = tmp_path / "unfit.yaml"
    unfit.write_text("cluster: {preset: dgx-h100, nodes: 2}\njob: {model: llama3-8b, dp: 3}\n")
    for args, message in (
        (["compare", OVERSUB], "give at least two scenario files"),
        (["compare", "--default", str(tmp_path / "missing.yaml")], "missing.yaml: cannot read"),
        (["compare", "--default", str(broken)], "broken.yaml: YAML syntax error"),
        (["compare", "--default", str(unfit)], "unfit.yaml: "),
        (["compare", "--default", OVERSUB, "--engine", "packet"], "--engine: 'packet'"),
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == 2, (args, result.output)
        assert message in result.output and "Traceback" not in result.output, result.output


def test_the_job_line_names_hybrid_sharding(tmp_path: Path) -> None:
    """Two jobs that differ only in job.dp_replicate are told apart on their job lines."""
    base = "cluster:\n  preset: dgx-h100\n  nodes: 2\njob:\n  model: llama3-8b\n  tp: 1\n"
    plain, hsdp = tmp_path / "plain.yaml", tmp_path / "hsdp.yaml"
    plain.write_text(base, encoding="utf-8")
    hsdp.write_text(base + "  dp_replicate: 2\n", encoding="utf-8")
    result = runner.invoke(app, ["compare", str(plain), str(hsdp), "--engine", "analytic"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "ZeRO-1 in 2 replicas" in text and text.count("ZeRO-1") == 2
