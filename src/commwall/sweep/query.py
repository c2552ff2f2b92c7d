"""SQL over a sweep's points with DuckDB (``commwall query SWEEP "SQL"``).

The points are exposed as the view ``points``: DuckDB's ``read_parquet`` over
``SWEEP/points/*.parquet`` with ``union_by_name`` (points of different statuses carry different
columns; absent ones are NULL). Dotted column names are quoted in SQL: ``"cluster.nodes"``.
The connection is in-memory and sandboxed: it reads the sweep's points and nothing else
(DuckDB's ``allowed_directories`` with external access off and the configuration locked), so a
query cannot write, attach, install or read other files.

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
    allowed = str(folder.resolve()).replace("'", "''") + "/"
    try:
        con.execute(
            f"create view points as select * from read_parquet('{pattern}', union_by_name = true)"
        )
        # read-only sandbox: the points and nothing else (no copy/attach/install, no other
        # files), and the settings locked so a query cannot lift it
        con.execute(f"set allowed_directories = ['{allowed}']")
        con.execute("set enable_external_access = false")
        con.execute("set lock_configuration = true")
    except duckdb.Error as e:
        con.close()
        first = str(e).strip().splitlines()[0]
        raise QueryError(f"{sweep}: cannot read the stored points: {first}") from None
    return con


def run_query(sweep: str | Path, sql: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Column names and rows of ``sql`` over ``sweep``'s points."""
    import duckdb

    if not sql.strip():
        raise QueryError("SQL: empty; give a query over the table points")
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
