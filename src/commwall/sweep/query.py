"""SQL over a sweep's points with DuckDB (``commwall query SWEEP "SQL"``).

The points are exposed as the view ``points``: DuckDB's ``read_parquet`` over
``SWEEP/points/*.parquet`` with ``union_by_name`` (points of different statuses carry different
columns; absent ones are NULL). Dotted column names are quoted in SQL: ``"cluster.nodes"``.
The connection is in-memory and the files are only read.

>>> # run_query("runs/fabric", 'select "cluster.nodes", min(step_time_s) from points group by 1')
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["QueryError", "connect", "run_query"]


class QueryError(ValueError):
    """A query that cannot run: no such sweep, no points, or DuckDB's own message."""


def connect(sweep: str | Path) -> Any:
    """An in-memory DuckDB connection with the view ``points`` over ``sweep``'s points."""
    try:
        import duckdb
    except ImportError:
        raise QueryError("duckdb is not installed; pip install duckdb") from None
    folder = Path(sweep) / "points"
    files = sorted(p for p in folder.glob("*.parquet") if not p.name.startswith("."))
    if not files:
        raise QueryError(f"{sweep}: no stored points (is it a sweep directory?)")
    con = duckdb.connect(":memory:")
    pattern = str(folder / "[!.]*.parquet").replace("'", "''")
    con.execute(
        f"create view points as select * from read_parquet('{pattern}', union_by_name = true)"
    )
    return con


def run_query(sweep: str | Path, sql: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Column names and rows of ``sql`` over ``sweep``'s points."""
    import duckdb

    con = connect(sweep)
    try:
        result = con.execute(sql)
        if result.description is None:
            return [], []
        columns = [d[0] for d in result.description]
        return columns, result.fetchall()
    except duckdb.Error as e:
        first = str(e).strip().splitlines()[0]
        raise QueryError(f"SQL: {first}") from None
    finally:
        con.close()
