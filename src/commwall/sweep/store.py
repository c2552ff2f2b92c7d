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
* the metrics (:meth:`commwall.workload.simulate.StepReport.metrics`): ``step_time_s``,
  ``comm_wait_share``, ``tokens_per_s``, ``power_w``, ``network_cost_usd``, ``breakdown.<category>_s`` and so on;
* ``config``: the fully resolved scenario as JSON text.

Each file also carries, in its Parquet metadata, ``commwall.digest``: SHA-256 over the record
as canonical JSON (:func:`record_digest`). Every reader (:func:`check_points`, hence
``sweep status``, ``best``, ``pareto``, ``sensitivity``, ``report`` and ``query``) recomputes
it from the row it read, so a point changed after the sweep stored it — overwritten by another
tool, hand-edited, truncated, or from a version of commwall that wrote no digest — is named,
not used; ``sweep run`` on the same spec recomputes it. Files in ``points/`` whose name is not
``<16 hex digits>.parquet`` are not points: readers count them as extra and leave them alone.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import numpy as np

from commwall.errors import CommwallError
from commwall.io.parquet import read_parquet, write_parquet

__all__ = [
    "BASE_COLUMNS",
    "POINTS",
    "DamagedPoints",
    "StoredPoints",
    "check_points",
    "done_ids",
    "point_path",
    "read_points",
    "record_digest",
    "write_point",
]

#: The sub-directory of a sweep holding its points.
POINTS: Final = "points"
#: Columns every point record starts with.
BASE_COLUMNS: Final = ("point_id", "index", "status", "error", "seconds")
#: The name of a point file: the point's id and ``.parquet``.
_POINT_NAME: Final = re.compile(r"[0-9a-f]{16}\.parquet")
#: The ``kind`` metadata entry of a point file.
_KIND: Final = "sweep-point"
#: Threads reading point files.
_READERS: Final = 4


class DamagedPoints(CommwallError, ValueError):
    """Stored points that fail their check (:func:`check_points`); the message names them."""


@dataclass(frozen=True)
class StoredPoints:
    """What a sweep's ``points/`` folder holds, checked (:func:`check_points`).

    ``records``: the points whose content matches their digest, in sweep order;
    ``damaged``: ``(file name, why)`` for every point file that does not;
    ``extra``: names of the other files (not ``<id>.parquet``; ignored).
    """

    records: list[dict[str, Any]]
    damaged: list[tuple[str, str]] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)

    @property
    def damaged_ids(self) -> set[str]:
        """The ids of the damaged points (what ``sweep run`` recomputes)."""
        return {name.removesuffix(".parquet") for name, _ in self.damaged}

    def require_intact(self, sweep: str | Path) -> list[dict[str, Any]]:
        """The records, or :class:`DamagedPoints` naming the damaged files and the remedy."""
        if not self.damaged:
            return self.records
        shown = "; ".join(f"{name}: {why}" for name, why in self.damaged[:3])
        more = f" and {len(self.damaged) - 3} more" if len(self.damaged) > 3 else ""
        raise DamagedPoints(
            f"{sweep}: {len(self.damaged)} stored point(s) fail their content check "
            f"({shown}{more}); rerunning the sweep into this folder recomputes them "
            f"(commwall sweep run SPEC --out {sweep})"
        )


def record_digest(record: Mapping[str, Any]) -> str:
    """``sha256:`` and the hex SHA-256 of ``record`` as canonical JSON (keys sorted, numpy
    scalars as Python numbers): equal for a record and the row read back from its file."""
    plain = {k: (v.item() if isinstance(v, np.generic) else v) for k, v in record.items()}
    text = json.dumps(plain, sort_keys=True, separators=(",", ":"), allow_nan=True, default=str)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def point_path(sweep: str | Path, point_id: str) -> Path:
    """Where point ``point_id`` of ``sweep`` is stored."""
    return Path(sweep) / POINTS / f"{point_id}.parquet"


def write_point(sweep: str | Path, record: Mapping[str, Any]) -> Path:
    """Store one finished point atomically (its file appears whole or not at all)."""
    path = point_path(sweep, str(record["point_id"]))
    path.parent.mkdir(parents=True, exist_ok=True)
    write_parquet(path, [dict(record)], metadata={"kind": _KIND, "digest": record_digest(record)})
    return path


def done_ids(sweep: str | Path) -> set[str]:
    """Ids of the points stored intact (damaged ones are not done: ``sweep run`` redoes them)."""
    stored = check_points(sweep)
    return {str(r["point_id"]) for r in stored.records}


def read_points(sweep: str | Path) -> list[dict[str, Any]]:
    """Every stored point of ``sweep`` as a record, in sweep order (``index``);
    :class:`DamagedPoints` if any fails its check."""
    return check_points(sweep).require_intact(sweep)


def check_points(sweep: str | Path) -> StoredPoints:
    """Read and check every file in ``sweep``'s ``points/`` (module docstring); temporary
    files of an interrupted write (``.*``) are skipped."""
    folder = Path(sweep) / POINTS
    if not folder.is_dir():
        return StoredPoints([])
    records: list[dict[str, Any]] = []
    damaged: list[tuple[str, str]] = []
    extra: list[str] = []
    points: list[Path] = []
    for path in sorted(folder.iterdir()):
        if path.name.startswith("."):
            continue
        if _POINT_NAME.fullmatch(path.name) and path.is_file():
            points.append(path)
        else:
            extra.append(path.name)
    # Arrow reads without the GIL: a few threads read ~2x faster than one (benchmarks/README)
    with ThreadPoolExecutor(_READERS) as pool:
        for path, (record, why) in zip(points, pool.map(_checked, points), strict=True):
            if record is None:
                damaged.append((path.name, why))
            else:
                records.append(record)
    records.sort(key=lambda r: (r.get("index", 0), r.get("point_id", "")))
    return StoredPoints(records, damaged, extra)


def _checked(path: Path) -> tuple[dict[str, Any] | None, str]:
    """The point stored in ``path``, or ``None`` and why it cannot be used."""
    try:
        rows, meta = read_parquet(path)
    except (OSError, ValueError) as e:  # pyarrow's ArrowInvalid is a ValueError
        return None, f"not a readable Parquet file ({str(e).splitlines()[0] if str(e) else e})"
    if meta.get("kind") != _KIND or "digest" not in meta:
        return None, "no content hash (not written by commwall sweep run, or by an old version)"
    if len(rows) != 1:
        return None, f"holds {len(rows)} rows, not one point"
    if record_digest(rows[0]) != meta["digest"]:
        return None, "its content does not match its hash (changed after the sweep stored it)"
    if rows[0].get("point_id") != path.stem:
        return None, f"holds point {rows[0].get('point_id')!r}, not {path.stem!r}"
    return rows[0], ""
