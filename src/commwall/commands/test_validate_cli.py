"""``commwall validate``: every bundled table compared or said why not, summaries per regime,
op, scale and role, options checked, and docs/validation.md current."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from commwall.cli import app
from commwall.validation.report import markdown_page, validation_report

runner = CliRunner()
DOC = Path(__file__).resolve().parents[3] / "docs" / "validation.md"


def test_every_measurement_is_compared_or_said_why_not() -> None:
    result = runner.invoke(app, ["validate", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    from commwall.validation import load_measurements

    ids = {m.id for m in load_measurements()}
    seen = {m["id"] for m in data["measurements"]} | {s["id"] for s in data["skipped"]}
    assert seen == ids
    for r in data["rows"]:
        if r["error"] is not None:
            expected = r["predicted_busbw_GBps"] / r["measured_busbw_GBps"] - 1
            assert abs(r["error"] - expected) < 1e-9
    summary = data["summary"]
    assert set(summary["role"]) == {"dev", "held_out"}
    assert {"all_reduce", "all_gather", "sendrecv", "alltoall"} <= set(summary["op"])
    assert all(s["why"] for s in data["skipped"])


def test_filters_and_bad_values_are_errors() -> None:
    big = validation_report(min_size=2**30)
    assert big["rows"] and all(r["size"] >= 2**30 for r in big["rows"])
    mid = validation_report(min_size=2**20, max_size=2**28, op="all_gather", role="held_out")
    assert mid["rows"] and all(r["op"] == "all_gather" for r in mid["rows"])
    assert all(r["role"] == "held_out" and 2**20 <= r["size"] <= 2**28 for r in mid["rows"])
    for args, word in ((["--min-size", "lots"], "lots"), (["--op", "allsum"], "allsum"),
                       (["--role", "train"], "train"),
                       (["--min-size", "1GiB", "--max-size", "1MiB"], "min <= max")):  # fmt: skip
        result = runner.invoke(app, ["validate", *args])
        assert result.exit_code == 2 and word in result.output, args


def test_table_prints_per_regime_op_scale_and_role() -> None:
    result = runner.invoke(app, ["validate", "--min-size", "1GiB"])
    assert result.exit_code == 0, result.output
    for word in ("median |e|", "op all_reduce", "scale 1 node", "role held_out", "≥ 1 GiB"):
        assert word in result.output, word
    rows = runner.invoke(app, ["validate", "--op", "sendrecv", "--rows"])
    assert rows.exit_code == 0 and "Predicted vs measured busbw" in rows.output


def test_docs_validation_md_is_current() -> None:
    """Regenerate with ``commwall validate --markdown > docs/validation.md``."""
    assert DOC.read_text(encoding="utf-8") == markdown_page(validation_report())
