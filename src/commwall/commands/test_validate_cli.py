"""``commwall validate``: every bundled measurement compared, and docs/validation.md current."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from commwall.cli import app
from commwall.commands.validate import markdown_page, validation_table

runner = CliRunner()
DOC = Path(__file__).resolve().parents[3] / "docs" / "validation.md"


def test_every_measurement_is_compared_or_said_why_not() -> None:
    result = runner.invoke(app, ["validate", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    from commwall.validation import load_measurements

    ids = {m.id for m in load_measurements()}
    seen = {r["id"] for r in data["rows"]} | {s["id"] for s in data["skipped"]}
    assert seen == ids
    for r in data["rows"]:
        if r["measured_busbw_GBps"]:
            expected = r["predicted_busbw_GBps"] / r["measured_busbw_GBps"] - 1
            assert abs(r["error"] - expected) < 1e-9
    # bandwidth-bound sizes: the documented accuracy (README "How close to reality")
    assert data["median_abs_error_1GiB"] < 0.10


def test_min_size_filters_and_bad_size_is_an_error() -> None:
    big = validation_table(2**30)
    assert big["rows"] and all(r["size"] >= 2**30 for r in big["rows"])
    result = runner.invoke(app, ["validate", "--min-size", "lots"])
    assert result.exit_code == 2 and "lots" in result.output


def test_table_prints() -> None:
    result = runner.invoke(app, ["validate", "--min-size", "8GiB"])
    assert result.exit_code == 0, result.output
    assert "Predicted vs measured busbw" in result.output and "median |error|" in result.output


def test_docs_validation_md_is_current() -> None:
    """Regenerate with ``commwall validate --markdown > docs/validation.md``."""
    assert DOC.read_text(encoding="utf-8") == markdown_page(validation_table())
