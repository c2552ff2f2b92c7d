"""Parquet results: typed columns, metadata, atomic writes, round trips and clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from commwall.cli import app
from commwall.io.parquet import ParquetError, flatten, read_parquet, write_parquet

runner = CliRunner()


def test_round_trip_keeps_types_nulls_and_metadata(tmp_path: Path) -> None:
    path = tmp_path / "rows.parquet"
    rows = [{"size": 8, "busbw": 1.5, "algo": "ring", "ok": True},
            {"size": 16, "busbw": 2, "algo": None, "ok": False, "extra": "late"}]  # fmt: skip
    write_parquet(path, rows, metadata={"cluster": {"name": "dgx-h100"}, "step_s": 1.25})
    back, meta = read_parquet(path)
    assert back[0] == {"size": 8, "busbw": 1.5, "algo": "ring", "ok": True, "extra": None}
    assert back[1]["busbw"] == 2.0 and back[1]["extra"] == "late"
    assert meta["cluster"] == {"name": "dgx-h100"} and meta["step_s"] == 1.25 and meta["version"]
    schema = pq.read_schema(path)
    assert str(schema.field("size").type) == "int64" and str(schema.field("ok").type) == "bool"
    assert str(schema.field("busbw").type) == "double"


def test_mixed_column_is_refused_and_nothing_is_left_behind(tmp_path: Path) -> None:
    path = tmp_path / "bad.parquet"
    path.write_bytes(b"previous")
    with pytest.raises(ParquetError, match="column 'x' holds int, str"):
        write_parquet(path, [{"x": 1}, {"x": "one"}])
    assert path.read_bytes() == b"previous"  # the old file stays whole
    assert list(tmp_path.iterdir()) == [path]  # no temporary file left


def test_flatten_nests_dots_and_lists_as_json() -> None:
    flat = flatten({"a": {"b": {"c": 1}}, "l": [1, {"k": 2}], "s": "x"})
    assert flat == {"a.b.c": 1, "l": json.dumps([1, {"k": 2}]), "s": "x"}


def test_run_writes_its_timeline(tmp_path: Path) -> None:
    path = tmp_path / "step.parquet"
    result = runner.invoke(app, ["run", "--parquet", str(path), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    rows, meta = read_parquet(path)
    assert meta["step_time_s"] == pytest.approx(report["step_time_s"])
    assert max(r["end_s"] for r in rows) >= report["step_time_s"]  # the timeline spans the step
    assert {"compute", "dp"} <= {r["category"] for r in rows}
    assert all(r["duration_s"] == pytest.approx(r["end_s"] - r["start_s"]) for r in rows)


def test_collective_rows_and_an_unwritable_path(tmp_path: Path) -> None:
    path = tmp_path / "ar.parquet"
    ok = runner.invoke(app, ["collective", "all_reduce", "--max", "1MiB", "--parquet", str(path)])
    assert ok.exit_code == 0, ok.output
    rows, meta = read_parquet(path)
    assert rows[-1]["size"] == 1 << 20 and meta["op"] == "all_reduce"
    bad = runner.invoke(app, ["run", "--parquet", str(tmp_path / "no" / "dir.parquet")])
    assert bad.exit_code == 2 and "--parquet: cannot write" in bad.output
