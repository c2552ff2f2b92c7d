"""``commwall report``: each input kind through the CLI, PNGs, and bad input (exit 2, one line)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from commwall.cli import app
from commwall.report.fixtures import EXAMPLE, make_sweep

pytest.importorskip("plotly")
runner = CliRunner()


def test_scenario_then_its_json_then_a_sweep(tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    result = runner.invoke(
        app, ["report", str(EXAMPLE), "-o", str(out), "--png", str(tmp_path / "png")]
    )
    assert result.exit_code == 0, result.output
    assert out.read_text().count('class="chart"') == len(list((tmp_path / "png").glob("*.png")))
    ran = runner.invoke(app, ["run", str(EXAMPLE), "--json"])
    (tmp_path / "result.json").write_text(ran.stdout)
    result = runner.invoke(
        app, ["report", str(tmp_path / "result.json"), "-o", str(tmp_path / "j.html")]
    )
    assert result.exit_code == 0, result.output
    assert "Llama-3-8B pure DP" in (tmp_path / "j.html").read_text()
    sweep = make_sweep(tmp_path / "sweep")
    result = runner.invoke(
        app, ["report", str(sweep), "-o", str(tmp_path / "s.html"), "--metric", "mfu"]
    )
    assert result.exit_code == 0, result.output
    assert "MFU against cluster.nodes" in (tmp_path / "s.html").read_text()


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["missing.yaml"], "missing.yaml: no such file or directory"),
        (["notascenario.yaml"], "notascenario.yaml: flavour: unknown key"),
        (["empty"], "empty: no sweep points"),
        (["notaresult.json"], "notaresult.json: not a commwall result (missing"),
        (
            [str(EXAMPLE), "--engine", "packet"],
            "--engine: 'packet' is not allowed; allowed: analytic",
        ),
        ([str(EXAMPLE), "--default"], "--default: give either a SOURCE"),
        ([str(EXAMPLE), "-o", "report.pdf"], "--output: 'report.pdf' must end in .html"),
    ],
)
def test_bad_input_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], expected: str
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notascenario.yaml").write_text("flavour: vanilla\n")
    (tmp_path / "notaresult.json").write_text(json.dumps({"hello": "world"}))
    (tmp_path / "empty").mkdir()
    result = runner.invoke(app, ["report", *args])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and expected in lines[0], lines
    assert "Traceback" not in result.output
