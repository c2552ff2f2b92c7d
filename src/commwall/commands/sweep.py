"""``commwall sweep`` (run, status and the analyses) and ``commwall query SWEEP "SQL"``.

>>> # commwall sweep run fabric.yaml --out runs/fabric --jobs 2
>>> # commwall sweep run fabric.yaml --out runs/fabric --executor ray --address auto
>>> # commwall sweep status runs/fabric
>>> # commwall query runs/fabric "select topology, min(step_time_s) from points group by 1"

A sweep directory holds one Parquet file per finished point (:mod:`commwall.sweep.store`);
rerunning an interrupted sweep into the same directory computes only what is missing.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape as esc

from commwall.commands.sweep_analysis import add_commands
from commwall.console import err, fail, friendly, out


def register(app: typer.Typer) -> None:
    """Add ``commwall sweep`` and ``commwall query`` to ``app``."""
    sub = typer.Typer(
        no_args_is_help=True,
        help="Design-space sweeps: axes over a scenario, run locally or on Ray, stored as "
        "Parquet (one file per point, resumable).",
    )
    sub.command("run")(friendly(sweep_run))
    sub.command("status")(friendly(sweep_status))
    add_commands(sub)  # pareto, sensitivity, best
    app.add_typer(sub, name="sweep")
    app.command("query")(friendly(query))


def sweep_run(
    spec: Annotated[Path, typer.Argument(help="The sweep spec (YAML).")],
    out_dir: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="Results directory (default: SPEC without .yaml)."),
    ] = None,
    executor: Annotated[str, typer.Option(help="local (process pool) or ray.")] = "local",
    jobs: Annotated[
        int | None, typer.Option(min=1, help="Workers (default: the CPUs; 1: in-process).")
    ] = None,
    address: Annotated[
        str | None, typer.Option(help="Ray: the cluster to join ('auto': the running one).")
    ] = None,
    limit: Annotated[
        int | None, typer.Option(min=0, help="Compute at most this many new points.")
    ] = None,
    overwrite: Annotated[
        bool, typer.Option(help="Replace the results of another sweep in --out.")
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Only count the points (and the skipped ones).")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Run a sweep spec: every point simulated once, stored as it finishes; an interrupted
    sweep resumes where it stopped."""
    from commwall.sweep.runner import plan, run_sweep
    from commwall.sweep.spec import SweepError, load_sweep

    target = out_dir or spec.with_suffix("")
    if target == spec:
        target = spec.with_name(spec.name + ".results")
    try:
        sweep = load_sweep(spec)
        if dry_run:
            p = plan(sweep, target)
            data = {"points": p.total, "skipped": len(p.skipped), "duplicates": p.duplicates,
                    "stored": p.stored, "todo": len(p.todo), "axes": sweep.axis_names}  # fmt: skip
            if as_json:
                sys.stdout.write(json.dumps(data, indent=2) + "\n")
            else:
                out.print(
                    f"{esc(sweep.name)}: {p.total:,} points over {len(sweep.axis_names)} axes; "
                    f"{len(p.skipped):,} fail a constraint, {p.duplicates:,} repeat a design, "
                    f"{p.stored:,} already in {esc(str(target))}, {len(p.todo):,} to compute"
                )
            return
        summary = _run_with_progress(run_sweep, sweep, target, executor, jobs, address, limit,
                                     overwrite, quiet=as_json)  # fmt: skip
    except SweepError as e:
        fail("\n".join(f"{e.origin}: {m}" for m in e.messages))
    if as_json:
        sys.stdout.write(json.dumps(summary.to_dict(), indent=2, default=str) + "\n")
    else:
        _print_summary(summary)
    if summary.interrupted:
        raise typer.Exit(130)  # 128 + SIGINT, as shells report an interrupted command


def _run_with_progress(run: Any, sweep: Any, target: Path, *args: Any, quiet: bool) -> Any:
    """``run`` with a progress bar (points, rate, ETA) on standard error."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    executor, jobs, address, limit, overwrite = args
    columns = (TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
               TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), TimeRemainingColumn())  # fmt: skip
    with Progress(*columns, console=err, transient=True, disable=quiet) as bar:
        task = bar.add_task(sweep.name, total=None, rate="")

        def tick(done: int, todo: int) -> None:
            elapsed = bar.tasks[0].elapsed or 0.0
            rate = f"{done / elapsed:.1f} points/s" if elapsed > 0 else ""
            bar.update(task, completed=done, total=todo, rate=rate)

        return run(sweep, target, executor=executor, jobs=jobs, address=address, limit=limit,
                   overwrite=overwrite, progress=tick)  # fmt: skip


def _print_summary(s: Any) -> None:
    out.print(
        f"[bold]{esc(s.name)}[/]: {s.points:,} points; {s.skipped:,} skipped by constraints, "
        f"{s.duplicates:,} repeating a design, {s.stored_before:,} already stored, "
        f"{s.computed:,} computed now "
        f"({s.ok:,} ok, {s.invalid:,} invalid, {s.errors:,} errors) in {s.seconds:.1f} s "
        f"({s.points_per_second:.1f} points/s, {s.executor}, {s.workers} workers)"
    )
    for example in s.skipped_examples[:3]:
        out.print(f"  skipped {esc(str(example['axes']))}: fails {esc(example['constraint'])}")
    if s.interrupted:
        out.print("[yellow]interrupted:[/] every finished point is stored; rerun to continue")
    where = esc(s.out)
    out.print(f'results: {where} (commwall sweep status {where}; commwall query {where} "...")')


def sweep_status(
    sweep_dir: Annotated[Path, typer.Argument(help="A sweep's results directory.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the status as JSON.")] = False,
) -> None:
    """How far a sweep got: stored points by status, the reasons points were invalid, and
    (when its spec is there) how many remain."""
    from collections import Counter

    from commwall.sweep.runner import plan
    from commwall.sweep.spec import SweepError, parse_sweep
    from commwall.sweep.store import check_points

    if not (sweep_dir / "sweep.yaml").is_file():
        fail(f"{sweep_dir}: not a sweep directory (no sweep.yaml); run commwall sweep run first")
    try:
        stored = check_points(sweep_dir)
    except OSError as e:
        fail(f"{sweep_dir}: cannot read the stored points: {e.strerror or e}")
    points = stored.records
    status = Counter(p["status"] for p in points)
    reasons = Counter(str(p["error"]).split(";")[0] for p in points if p["status"] != "ok")
    import yaml

    remaining = None
    try:
        spec = parse_sweep(yaml.safe_load((sweep_dir / "sweep.yaml").read_text()),
                           origin=str(sweep_dir / "sweep.yaml"))  # fmt: skip
        remaining = len(plan(spec, sweep_dir, stored={p["point_id"] for p in points}).todo)
    except SweepError as e:
        err.print(f"note: the stored spec no longer validates: {esc(e.messages[0])}")
    data = {"stored": len(points), "status": dict(status), "remaining": remaining,
            "invalid_reasons": dict(reasons.most_common(10)),
            "damaged": dict(stored.damaged), "extra_files": stored.extra}  # fmt: skip
    if as_json:
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
        return
    parts = ", ".join(f"{n:,} {k}" for k, n in sorted(status.items()))
    left = "" if remaining is None else f"; {remaining:,} still to compute"
    out.print(
        f"{esc(str(sweep_dir))}: {len(points):,} points stored ({esc(parts or 'none')}){left}"
    )
    for reason, n in reasons.most_common(5):
        out.print(f"  {n:,} x {esc(reason)}")
    if stored.damaged:
        out.print(
            f"[yellow]{len(stored.damaged):,} damaged point file(s)[/], not counted (the next "
            "commwall sweep run of this spec recomputes them):"
        )
        for name, why in stored.damaged[:5]:
            out.print(f"  {esc(name)}: {esc(why)}")
    if stored.extra:
        shown = ", ".join(stored.extra[:5]) + (" ..." if len(stored.extra) > 5 else "")
        out.print(f"{len(stored.extra):,} other file(s) in points/, not points: {esc(shown)}")


def query(
    sweep_dir: Annotated[Path, typer.Argument(help="A sweep's results directory.")],
    sql: Annotated[str, typer.Argument(help="SQL over the table `points` (DuckDB).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print rows as JSON.")] = False,
    csv: Annotated[bool, typer.Option("--csv", help="Print rows as CSV.")] = False,
    limit: Annotated[int, typer.Option(min=1, help="Print at most this many rows.")] = 200,
) -> None:
    """Run SQL (DuckDB) over a sweep's points: the table `points` has one row per point,
    one column per axis (quote dotted names: "cluster.nodes") and per metric."""
    from commwall.sweep.query import QueryError, run_query

    try:
        columns, rows = run_query(sweep_dir, sql)
    except QueryError as e:
        fail(str(e))
    if as_json:
        records = [dict(zip(columns, row, strict=True)) for row in rows]
        sys.stdout.write(json.dumps(records, indent=2, default=str) + "\n")
        return
    if csv:
        import csv as csv_module

        writer = csv_module.writer(sys.stdout, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows(rows)
        return
    from rich.table import Table

    table = Table(show_header=True, header_style="bold")
    for column in columns:
        table.add_column(esc(column))
    for row in rows[:limit]:
        table.add_row(*(_cell(v) for v in row))
    out.print(table)
    if len(rows) > limit:
        out.print(f"({len(rows) - limit:,} more rows; --limit, --csv or --json for all)")


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return "" if value is None else esc(str(value))
