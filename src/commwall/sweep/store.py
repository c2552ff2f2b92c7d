"""A sweep's results on disk: one Parquet file per finished point, written atomically.

Layout of a sweep directory::

    SWEEP/sweep.yaml            the sweep spec as given (for the record and for resuming)
    SWEEP/points/<id>.parquet   one row per finished point (ok, invalid or error)

Because every point is its own file, replaced into place only when complete
(:mod:`commwall.io.atomic`), a sweep killed at any moment keeps every point it finished and a
rerun skips them (:func:`done_ids`). DuckDB, pandas, polars and pyarrow read the directory as
one table (``read_parquet('SWEEP/points/*.parquet', union_by_name=true)``).

A point record (:data:`BASE_COLUMNS` first, then the axes, then the metrics):

* ``point_id``: 16 hex digits of SHA-256 over the point's resolved scenario (canonical JSON):
  the same design gets the same id in every sweep and every run;
* ``index``: its position in the sweep's enumeration; ``status``: ``ok``, ``invalid`` (the
  scenario or cluster was refused: ``error`` says why) or ``error`` (the simulation failed);
* ``seconds``: wall time spent on the point;
* one column per axis, named by its field path (``cluster.topology.oversubscription``);
* the metrics (:func:`commwall.sweep.evaluate.metrics`): ``step_time_s``, ``comm_wait_share``,
  ``tokens_per_s``, ``power_w``, ``network_cost_usd``, ``breakdown.<category>_s`` and so on;
* ``config``: the fully resolved scenario as JSON text.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from commwall.io.parquet import read_parquet, write_parquet

__all__ = ["BASE_COLUMNS", "POINTS", "done_ids", "point_path", "read_points", "write_point"]

#: The sub-directory of a sweep holding its points.
POINTS: Final = "points"
#: Columns every point record starts with.
BASE_COLUMNS: Final = ("point_id", "index", "status", "error", "seconds")


def point_path(sweep: str | Path, point_id: str) -> Path:
    """Where point ``point_id`` of ``sweep`` is stored."""
    return Path(sweep) / POINTS / f"{point_id}.parquet"


def write_point(sweep: str | Path, record: Mapping[str, Any]) -> Path:
    """Store one finished point atomically (its file appears whole or not at all)."""
    path = point_path(sweep, str(record["point_id"]))
    path.parent.mkdir(parents=True, exist_ok=True)
    write_parquet(path, [dict(record)], metadata={"kind": "sweep-point"})
    return path


def done_ids(sweep: str | Path) -> set[str]:
    """Ids of the points already stored (temporary files of an interrupted write excluded)."""
    folder = Path(sweep) / POINTS
    if not folder.is_dir():
        return set()
    return {p.stem for p in folder.glob("*.parquet") if not p.name.startswith(".")}


def read_points(sweep: str | Path) -> list[dict[str, Any]]:
    """Every stored point of ``sweep`` as a record, in sweep order (``index``)."""
    folder = Path(sweep) / POINTS
    if not folder.is_dir():
        return []
    records = []
    for path in sorted(folder.glob("*.parquet")):
        if path.name.startswith("."):
            continue
        rows, _ = read_parquet(path)
        records += rows
    return sorted(records, key=lambda r: (r.get("index", 0), r.get("point_id", "")))
