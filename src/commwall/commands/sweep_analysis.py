"""``commwall sweep pareto|sensitivity|best SWEEP``: what a finished sweep says.

>>> # commwall sweep pareto runs/oversub --objectives step_time_s:min,network_cost_usd:min
>>> # commwall sweep sensitivity runs/oversub --metric step_time_s
>>> # commwall sweep best runs/oversub --metric tokens_per_s --where "power_w < 500e3" --top 3

This module registers nothing by itself (it has no ``register``): the ``commwall sweep`` group
calls :func:`add_commands` on itself. The analyses are :mod:`commwall.sweep.analysis`; the
``--where`` language is :mod:`commwall.sweep.expr`.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from commwall.console import fail, friendly, out

#: Metrics every point table shows after the axes (when the sweep has them).
KEY_METRICS = ("step_time_s", "comm_wait_share", "tokens_per_s", "network_cost_usd", "power_w")
#: ``pareto``'s default objectives.
DEFAULT_OBJECTIVES = "step_time_s:min,network_cost_usd:min"

SweepArg = Annotated[
    Path, typer.Argument(help="A sweep directory (SWEEP/points/*.parquet, SWEEP/sweep.yaml).")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the result as JSON.")]
AxesOpt = Annotated[
    str | None,
    typer.Option(
        help="Axis columns, comma-separated (default: SWEEP/sweep.yaml's axes, else every "
        "cluster./job./simulation./faults. column)."
    ),
]


def add_commands(sub: typer.Typer) -> None:
    """Add ``pareto``, ``sensitivity`` and ``best`` to the ``commwall sweep`` group ``sub``."""
    sub.command("pareto")(friendly(pareto))
    sub.command("sensitivity")(friendly(sensitivity))
    sub.command("best")(friendly(best))


# ---- formatting (shared with ``commwall compare``) ---------------------------------------------


def format_value(name: str, value: Any) -> str:
    """A metric or axis value for a table cell, in the unit its name says."""
    from commwall.units import format_size, format_time

    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if not isinstance(value, int | float):
        return str(value)
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    leaf = name.rsplit(".", 1)[-1]
    if leaf.endswith("_s") and name != "tokens_per_s":
        return str(format_time(value, digits=3))
    if leaf in ("comm_wait_share", "mfu"):
        return f"{value:.1%}"
    if leaf.endswith("_usd"):
        return f"${value / 1e6:,.2f}M"
    if leaf.endswith("_w"):
        return f"{value / 1e3:,.1f} kW"
    if leaf.endswith("_bytes"):
        return str(format_size(value, digits=3))
    if leaf.endswith("_Bps"):
        return f"{value / 1e12:,.1f} TB/s" if abs(value) >= 1e12 else f"{value / 1e9:,.1f} GB/s"
    return f"{value:,.0f}" if abs(value) >= 1e4 else f"{value:.4g}"


def _plain(record: Mapping[str, Any]) -> dict[str, Any]:
    """A point for JSON: everything but the resolved config (read it by ``point_id``)."""
    return {k: v for k, v in record.items() if k != "config"}


def _json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


# ---- loading ---------------------------------------------------------------------------------


def _load(sweep: Path, axes: str | None) -> tuple[list[dict[str, Any]], list[str]]:
    """The sweep's points and axis columns, or exit 2 naming SWEEP / --axes."""
    from commwall.sweep.analysis import AnalysisError, axis_columns, sweep_axes
    from commwall.sweep.store import POINTS, DamagedPoints, read_points

    if not sweep.is_dir():
        fail(f"SWEEP: {str(sweep)!r} is not a directory")
    try:
        records = read_points(sweep)
    except DamagedPoints as e:
        fail(f"SWEEP: {e}")
    except OSError as e:
        fail(f"SWEEP: cannot read the points of {str(sweep)!r}: {e.strerror or e}")
    if not records:
        fail(f"SWEEP: no points in {str(sweep / POINTS)!r} (run the sweep first)")
    try:
        named = [a.strip() for a in axes.split(",") if a.strip()] if axes else sweep_axes(sweep)
        found = axis_columns(records, named)
    except AnalysisError as e:
        fail(f"--axes: {e}" if axes else f"SWEEP: {e}")
    return records, found


def _counts(records: Sequence[Mapping[str, Any]]) -> str:
    ok = sum(r.get("status") == "ok" for r in records)
    return f"{len(records)} points, {ok} ok" + (
        f", {len(records) - ok} invalid or failed" if ok < len(records) else ""
    )


def _points_table(
    title: str,
    records: Sequence[Mapping[str, Any]],
    axes: Sequence[str],
    metrics: Sequence[str],
    extra: Sequence[tuple[str, Sequence[Any]]] = (),
) -> Table:
    """One row per point: its index, the extra columns, its axis values, then ``metrics``."""
    table = Table(title=title, title_justify="left")
    rows = [
        [
            str(r.get("index", "")),
            *(str(values[i]) for _, values in extra),
            *(format_value(a, r.get(a)) for a in axes),
            *(format_value(m, r.get(m)) for m in metrics),
        ]
        for i, r in enumerate(records)
    ]

    def widest(column: int) -> int:
        return max((len(row[column]) for row in rows), default=1)

    # numbers keep their width (a value cut mid-digit reads as another number); names fold
    table.add_column("#", justify="right", min_width=widest(0), no_wrap=True)
    for k, (name, _) in enumerate(extra, start=1):
        table.add_column(name, justify="right", min_width=widest(k), no_wrap=True)
    first = 1 + len(extra)
    for a in axes:  # fold, not ellipsis: a cut axis name says nothing
        table.add_column(escape(a), overflow="fold")
    for k, m in enumerate(metrics, start=first + len(axes)):
        table.add_column(escape(m), justify="right", overflow="fold", min_width=widest(k))
    for row in rows:
        table.add_row(*(escape(cell) for cell in row))
    return table


def _shown_metrics(records: Sequence[Mapping[str, Any]], first: Sequence[str]) -> list[str]:
    present = {k for r in records for k in r}
    return [m for m in dict.fromkeys([*first, *KEY_METRICS]) if m in present]


# ---- pareto ------------------------------------------------------------------------------------


def pareto(
    sweep: SweepArg,
    objectives: Annotated[
        str,
        typer.Option(
            help="METRIC[:min|max], comma-separated; a metric without a goal: max for "
            "tokens_per_s, mfu, bisection_Bps, min otherwise."
        ),
    ] = DEFAULT_OBJECTIVES,
    layers: Annotated[
        int,
        typer.Option(
            min=1, help="Show this many non-dominated sorting layers (1: the Pareto front)."
        ),
    ] = 1,
    axes: AxesOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """The designs no other design beats on every objective at once (the Pareto front)."""
    from commwall.sweep.analysis import AnalysisError, pareto_ranks, parse_objectives

    records, axis = _load(sweep, axes)
    try:
        obj = parse_objectives(objectives)
        ranks = pareto_ranks(records, obj)
    except AnalysisError as e:
        fail(f"--objectives: {e}")
    chosen = [(rk, r) for rk, r in zip(ranks, records, strict=True) if rk is not None]
    chosen = [(rk, r) for rk, r in chosen if rk < layers]
    first, sign = obj[0][0], 1.0 if obj[0][1] == "min" else -1.0
    chosen.sort(key=lambda p: (p[0], sign * float(p[1][first])))  # by layer, then objective 1
    compared = sum(rk is not None for rk in ranks)
    if as_json:
        _json(
            {
                "sweep": str(sweep),
                "objectives": [{"metric": m, "goal": g} for m, g in obj],
                "axes": axis,
                "points": len(records),
                "compared": compared,
                "front": sum(rk == 0 for rk in ranks),
                "layers": layers,
                "records": [{"rank": rk, **_plain(r)} for rk, r in chosen],
            }
        )
        return
    goals = ", ".join(f"{m} ({g})" for m, g in obj)
    out.print(
        f"[bold]{escape(str(sweep))}[/]: {_counts(records)}; {compared} compared on {escape(goals)}"
    )
    front = [r for rk, r in chosen if rk == 0]
    title = f"Pareto front: {len(front)} of {compared} designs" + (
        f" (and layer{'s' if layers > 2 else ''} {', '.join(map(str, range(1, layers)))})"
        if layers > 1
        else ""
    )
    extra = [("layer", [rk for rk, _ in chosen])] if layers > 1 else []
    metrics = _shown_metrics(records, [m for m, _ in obj])
    out.print(_points_table(title, [r for _, r in chosen], axis, metrics, extra))


# ---- sensitivity -------------------------------------------------------------------------------


def sensitivity(
    sweep: SweepArg,
    metric: Annotated[str, typer.Option(help="The metric whose sensitivity to report.")] = (
        "step_time_s"
    ),
    maximise: Annotated[
        bool | None,
        typer.Option(
            "--max/--min",
            help="Whether larger is better (for the best value); default per metric.",
        ),
    ] = None,
    axes: AxesOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """How much each axis moves METRIC (main effects), most influential axis first."""
    from commwall.sweep.analysis import AnalysisError, Goal
    from commwall.sweep.analysis import sensitivity as main_effects

    records, axis = _load(sweep, axes)
    goal: Goal | None = None if maximise is None else "max" if maximise else "min"
    if not axis:
        fail("--axes: the sweep has no cluster./job./simulation./faults. columns; name them")
    try:
        effects = main_effects(records, metric, axis, goal)
    except AnalysisError as e:
        fail(f"--metric: {e}")
    if as_json:
        _json({"sweep": str(sweep), "metric": metric, "axes": [eff.to_dict() for eff in effects]})
        return
    out.print(f"[bold]{escape(str(sweep))}[/]: {_counts(records)}; sensitivity of {metric}")
    table = Table(title=f"Axes by influence on {metric}", title_justify="left")
    for col in ("axis", "spread", "relative", "mu*", "best value"):
        table.add_column(col, justify="left" if col in ("axis", "best value") else "right")
    for eff in effects:
        table.add_row(
            escape(eff.axis),
            escape(format_value(metric, eff.spread)),
            "-" if eff.relative_spread is None else f"{eff.relative_spread:.1%}",
            "-" if eff.mu_star is None else escape(format_value(metric, eff.mu_star)),
            escape(format_value(eff.axis, eff.best_value)),
        )
    out.print(table)
    for eff in effects:
        t = Table(title=escape(eff.axis), title_justify="left")
        for col in ("value", "points", "mean", "median", "min", "max"):
            t.add_column(col, justify="left" if col == "value" else "right")
        for lv in eff.levels:
            t.add_row(
                escape(format_value(eff.axis, lv.value)),
                str(lv.n),
                *(escape(format_value(metric, v)) for v in (lv.mean, lv.median, lv.min, lv.max)),
            )
        out.print(t)


# ---- best --------------------------------------------------------------------------------------


def best(
    sweep: SweepArg,
    metric: Annotated[str, typer.Option(help="The metric to optimise.")] = "step_time_s",
    maximise: Annotated[
        bool | None,
        typer.Option("--max/--min", help="Largest or smallest is best; default per metric."),
    ] = None,
    where: Annotated[
        str | None,
        typer.Option(
            help='Constraint on columns, e.g. "power_w < 500e3 and fits_in_memory" '
            "(dotted or `backquoted` names, comparisons, and/or/not, in, + - * / **)."
        ),
    ] = None,
    top: Annotated[int, typer.Option(min=1, help="How many designs to show.")] = 1,
    axes: AxesOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """The best design(s) for METRIC among those meeting --where."""
    from commwall.sweep.analysis import AnalysisError, Goal, select
    from commwall.sweep.analysis import best as best_points
    from commwall.sweep.expr import ExprError

    records, axis = _load(sweep, axes)
    goal: Goal | None = None if maximise is None else "max" if maximise else "min"
    try:
        matching = len(select(records, where))
    except ExprError as e:
        fail(f"--where: {e}")
    try:
        found = best_points(records, metric, goal, where, top)
    except AnalysisError as e:
        fail(f"--metric: {e}")
    if as_json:
        _json(
            {
                "sweep": str(sweep),
                "metric": metric,
                "goal": goal or _goal(metric),
                "where": where,
                "matching": matching,
                "records": [_plain(r) for r in found],
            }
        )
        return
    cond = f" meeting {escape(where)}" if where else ""
    out.print(
        f"[bold]{escape(str(sweep))}[/]: {_counts(records)}; {matching}{cond}; "
        f"best by {metric} ({goal or _goal(metric)})"
    )
    if not found:
        out.print("no design meets the constraint")
        return
    table = Table(title=f"Best {len(found)} by {metric}", title_justify="left")
    table.add_column("")
    for rank, r in enumerate(found, 1):
        table.add_column(f"#{rank} (point {r.get('index', '?')})", justify="right")
    for name in [*axis, *_shown_metrics(records, [metric])]:
        table.add_row(escape(name), *(escape(format_value(name, r.get(name))) for r in found))
    table.add_row("point_id", *(str(r.get("point_id", "")) for r in found))
    out.print(table)


def _goal(metric: str) -> str:
    from commwall.sweep.analysis import goal_of

    return goal_of(metric)
