"""SQL over a sweep's points with DuckDB (``commwall query SWEEP "SQL"``).

The points are the table ``points``: DuckDB's ``read_parquet`` over the point files that pass
their content check (:func:`commwall.sweep.store.check_points`; a damaged one stops the query
and is named) with ``union_by_name`` (points of different statuses carry different columns; absent ones are
NULL), copied into an in-memory table before the query runs. Dotted column names are quoted in
SQL: ``"cluster.nodes"``. The connection is then sealed: no file access at all (external access
off, no allowed directories, no temporary directory), at most :data:`MEMORY_LIMIT` and
:data:`THREADS`, the configuration locked, and the query interrupted after
:data:`TIME_LIMIT_S` — so a query cannot write (not even into the sweep's own folder), attach,
install, read other files or run forever.

>>> # run_query("runs/fabric", 'select "cluster.nodes", min(step_time_s) from points group by 1')
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from commwall.errors import CommwallError

__all__ = ["MEMORY_LIMIT", "THREADS", "TIME_LIMIT_S", "QueryError", "connect", "run_query"]

#: Memory one query may use (DuckDB ``memory_limit``); nothing spills to disk.
MEMORY_LIMIT = "2GB"
#: Threads one query may use.
THREADS = 2
#: Seconds before a query is interrupted.
TIME_LIMIT_S = 120.0


class QueryError(CommwallError, ValueError):
    """A query that cannot run: no such sweep, no points, or DuckDB's own message."""


def connect(sweep: str | Path) -> Any:
    """An in-memory DuckDB connection with the view ``points`` over ``sweep``'s points."""
    try:
        import duckdb
    except ImportError:
        raise QueryError("duckdb is not installed; pip install duckdb") from None
    from commwall.sweep.store import DamagedPoints, check_points, point_path

    stored = check_points(sweep)
    try:
        records = stored.require_intact(sweep)
    except DamagedPoints as e:
        raise QueryError(str(e)) from None
    if not records:
        raise QueryError(f"{sweep}: no stored points (is it a sweep directory?)")
    # only the checked point files: not a damaged one, not an extra file someone put there
    files = ", ".join(
        "'" + str(point_path(sweep, r["point_id"])).replace("'", "''") + "'" for r in records
    )
    con = duckdb.connect(":memory:")
    try:
        con.execute(f"set memory_limit = '{MEMORY_LIMIT}'")
        con.execute(f"set threads = {THREADS}")
        con.execute(
            f"create table points as select * from read_parquet([{files}], union_by_name = true)"
        )
        # sealed: the points are in memory, so no file is needed any more — no reads, no
        # writes (COPY TO, even into the sweep), no attach/install, no spilling to a temporary
        # directory — and the settings locked so a query cannot lift it
        con.execute("set temp_directory = ''")
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
    import threading

    con = connect(sweep)
    timer = threading.Timer(TIME_LIMIT_S, con.interrupt)
    timer.daemon = True
    timer.start()
    try:
        result = con.execute(sql)
        if result.description is None:
            return [], []
        columns = [d[0] for d in result.description]
        return columns, result.fetchall()
    except duckdb.Error as e:
        first = str(e).strip().splitlines()[0]
        if not timer.is_alive():
            first = f"stopped after {TIME_LIMIT_S:g} s ({first})"
        raise QueryError(f"SQL: {first}") from None
    finally:
        timer.cancel()
        con.close()
