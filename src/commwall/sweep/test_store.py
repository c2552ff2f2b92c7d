"""A sweep's stored points: the content hash survives the round trip and catches any change."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from commwall.io.parquet import read_parquet, write_parquet
from commwall.sweep.store import (
    DamagedPoints,
    check_points,
    done_ids,
    point_path,
    read_points,
    record_digest,
    write_point,
)

RECORD = {"point_id": "0123456789abcdef", "index": 3, "status": "ok", "error": None,
          "seconds": 0.25, "cluster.nodes": np.int64(8), "step_time_s": np.float64(1.5),
          "fits": True, "config": '{"name": "x"}', "nan": float("nan")}  # fmt: skip


def test_a_stored_point_reads_back_intact(tmp_path: Path) -> None:
    write_point(tmp_path, RECORD)
    stored = check_points(tmp_path)
    assert stored.damaged == [] and stored.extra == []
    (record,) = stored.records
    assert record_digest(record) == record_digest(RECORD)
    assert done_ids(tmp_path) == {"0123456789abcdef"}


def test_the_digest_sees_every_value() -> None:
    base = record_digest(RECORD)
    assert record_digest({**RECORD, "step_time_s": 1.5000000000000002}) != base
    assert record_digest({**RECORD, "fits": False}) != base
    assert record_digest({**RECORD, "error": ""}) != base
    assert record_digest(dict(reversed(list(RECORD.items())))) == base  # order is not content


@pytest.mark.parametrize(
    ("rewrite", "why"),
    [
        (lambda p, rows, meta: write_parquet(p, [{**rows[0], "step_time_s": 0.1}], metadata=meta),
         "does not match its hash"),
        (lambda p, rows, meta: write_parquet(p, rows), "no content hash"),
        (lambda p, rows, meta: write_parquet(p, rows + rows, metadata=meta), "holds 2 rows"),
        (lambda p, rows, meta: p.write_bytes(p.read_bytes()[:40]), "not a readable Parquet"),
        (lambda p, rows, meta: p.write_bytes(b""), "not a readable Parquet"),
    ],
)  # fmt: skip
def test_a_changed_point_is_damaged_not_used(tmp_path: Path, rewrite: object, why: str) -> None:
    path = write_point(tmp_path, RECORD)
    rows, meta = read_parquet(path)
    rewrite(path, rows, meta)  # type: ignore[operator]
    stored = check_points(tmp_path)
    assert stored.records == [] and stored.damaged_ids == {"0123456789abcdef"}
    assert why in stored.damaged[0][1]
    assert done_ids(tmp_path) == set()  # a resumed sweep recomputes it
    with pytest.raises(DamagedPoints, match=r"0123456789abcdef\.parquet"):
        read_points(tmp_path)


def test_a_point_under_another_points_name_is_damaged(tmp_path: Path) -> None:
    path = write_point(tmp_path, RECORD)
    path.rename(point_path(tmp_path, "fedcba9876543210"))
    assert "holds point '0123456789abcdef'" in check_points(tmp_path).damaged[0][1]


def test_other_files_are_extra_not_points(tmp_path: Path) -> None:
    write_point(tmp_path, RECORD)
    folder = tmp_path / "points"
    (folder / "README").write_text("x")
    (folder / "sub").mkdir()
    (folder / ".0123456789abcdef.parquet.tmp").write_text("half a write")
    write_parquet(folder / "best.parquet", [{"step_time_s": 0.0}])
    stored = check_points(tmp_path)
    assert len(stored.records) == 1 and stored.damaged == []
    assert stored.extra == ["README", "best.parquet", "sub"]
