"""Results as Apache Parquet: one table per file, typed columns, the run's context as metadata.

Any list of flat records (``dict`` of str → number, text, bool or None) becomes a Parquet table
through pyarrow; column types are inferred per column (int64, float64, bool, string; a column
holding ints and floats becomes float64), absent keys are nulls. The key-value metadata of the
file carries ``commwall.*`` entries as JSON (the version, and whatever the caller passes: the
scenario, the summary figures), so a file read alone still says what produced it. Writes are
atomic (:mod:`commwall.io.atomic`). Readers: pandas, polars, DuckDB, Spark, Arrow in any
language; :func:`read_parquet` returns the records and metadata for round trips.

>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "t.parquet"
>>> write_parquet(path, [{"size": 1024, "busbw": 1.5}, {"size": 2048, "busbw": None}],
...               metadata={"op": "all_reduce"})
>>> rows, meta = read_parquet(path)
>>> rows[1], meta["op"]
({'size': 2048, 'busbw': None}, 'all_reduce')
"""

from __future__ import annotations

import json
import numbers
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from commwall.errors import CommwallError
from commwall.io.atomic import atomic_path

__all__ = ["ParquetError", "flatten", "phase_records", "read_parquet", "write_parquet"]

_PREFIX = "commwall."


class ParquetError(CommwallError, ValueError):
    """Records that cannot become a table (a nested value, mixed types); names the column."""


def write_parquet(
    path: str | Path,
    records: Sequence[Mapping[str, Any]],
    *,
    metadata: Mapping[str, Any] | None = None,
) -> None:
    """Write ``records`` as one Parquet table at ``path`` (atomically; module docstring)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from commwall._version import __version__

    columns: dict[str, list[Any]] = {}
    for record in records:
        for key in record:
            columns.setdefault(key, [])
    arrays = []
    for name in columns:
        values = [_plain(record.get(name)) for record in records]
        arrays.append(pa.array(values, type=_column_type(name, values)))
    table = pa.Table.from_arrays(arrays, names=list(columns)) if columns else pa.table({})
    meta = {f"{_PREFIX}version": json.dumps(__version__)}
    for key, value in (metadata or {}).items():
        meta[f"{_PREFIX}{key}"] = json.dumps(value, default=str, allow_nan=True)
    table = table.replace_schema_metadata(meta)
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, compression="zstd")


def read_parquet(path: str | Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The records and the ``commwall.*`` metadata of a file :func:`write_parquet` wrote."""
    import pyarrow.parquet as pq

    with pq.ParquetFile(path) as file:  # lighter than pq.read_table for one small file
        table = file.read()
    raw = table.schema.metadata or {}
    meta = {
        k.decode()[len(_PREFIX) :]: json.loads(v)
        for k, v in raw.items()
        if k.decode().startswith(_PREFIX)
    }
    return table.to_pylist(), meta


def _column_type(name: str, values: list[Any]) -> Any:
    """The Arrow type of one column, or :class:`ParquetError` naming it."""
    import pyarrow as pa

    kinds = {_kind(v) for v in values if v is not None}
    if not kinds:
        return pa.null()
    if kinds <= {"bool"}:
        return pa.bool_()
    if kinds <= {"int"}:
        return pa.int64()
    if kinds <= {"int", "float"}:
        return pa.float64()
    if kinds <= {"str"}:
        return pa.string()
    names = ", ".join(sorted(kinds))
    raise ParquetError(
        f"column {name!r} holds {names}; allowed: numbers, text, booleans or None in one column"
    )


def _plain(value: Any) -> Any:
    """numpy scalars as Python numbers (Arrow's type inference wants the plain ones)."""
    return value.item() if isinstance(value, np.generic) else value


def _kind(value: Any) -> str:
    """``bool``, ``int``, ``float``, ``str`` (numpy scalars included) or the type's name."""
    if isinstance(value, bool | np.bool_):
        return "bool"
    if isinstance(value, numbers.Integral):
        return "int"
    if isinstance(value, numbers.Real):
        return "float"
    if isinstance(value, str):
        return "str"
    return type(value).__name__


def flatten(record: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``record`` with nested mappings as dotted columns and lists as JSON text.

    >>> flatten({"size": 8, "packet": {"drops": 0, "trims": 2}, "links": [1, 2]})
    {'size': 8, 'packet.drops': 0, 'packet.trims': 2, 'links': '[1, 2]'}
    """
    flat: dict[str, Any] = {}
    for key, value in record.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(flatten(value, f"{name}."))
        elif isinstance(value, list | tuple):
            flat[name] = json.dumps(value, default=str)
        else:
            flat[name] = value
    return flat


def phase_records(phases: Sequence[Any]) -> list[dict[str, Any]]:
    """An engine's timeline (:class:`~commwall.engines.base.PhaseResult`) as records: one row
    per phase, times in seconds, collectives with their op, bytes, ranks, algorithm and busbw."""
    return [
        {
            "name": p.name,
            "category": p.category,
            "stream": p.stream,
            "start_s": float(p.start),
            "end_s": float(p.end),
            "duration_s": float(p.end - p.start),
            "repeat": int(p.repeat),
            "op": p.op,
            "bytes": float(p.nbytes),
            "ranks": int(p.nranks),
            "algo": p.algo,
            "proto": p.proto,
            "busbw_Bps": float(p.busbw),
            "bottleneck": p.bottleneck,
        }
        for p in phases
    ]
