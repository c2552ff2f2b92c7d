"""The report of a design-space sweep (:class:`~commwall.report.inputs.SweepInput`).

Sections: the best points, Pareto fronts (step time against network cost and against power, the
non-dominated points highlighted), the metric against each swept axis, and the points that were
refused or failed with their reasons. Column names follow :mod:`commwall.sweep.store` and
:meth:`commwall.workload.simulate.StepReport.metrics`.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Sequence
from typing import Any

from commwall.report import fmt
from commwall.report.inputs import ReportError, SweepInput
from commwall.report.model import Block, Chart, Lines, Note, Report, Scatter, Section, Series, Table

__all__ = [
    "BEST_POINTS",
    "build_sweep_report",
    "front_ids",
    "metric_columns",
]

#: Rows of the best-points table.
BEST_POINTS = 10
#: Characters of an error message shown.
MAX_ERROR_CHARS = 300

_METRIC_TITLES = {
    "step_time_s": "step time (s)",
    "comm_wait_share": "waiting on communication (share)",
    "tokens_per_s": "tokens/s",
    "mfu": "MFU",
    "power_w": "power (W)",
    "network_cost_usd": "network cost (USD)",
}


def metric_columns(records: Sequence[dict[str, Any]], axes: Sequence[str]) -> list[str]:
    """Numeric columns of the ``ok`` points that are neither axes nor bookkeeping, sorted."""
    skip = {*axes, "index", "seconds"}
    found: set[str] = set()
    for r in records:
        if r.get("status") != "ok":
            continue
        found |= {k for k, v in r.items() if k not in skip and _finite(v)}
    return sorted(found)


def front_ids(ok: Sequence[dict[str, Any]], x: str) -> set[int]:
    """``id()`` of the points on the (``x``, step time) Pareto front, both minimised
    (:func:`commwall.sweep.analysis.pareto_front`)."""
    from commwall.sweep.analysis import pareto_front

    return {id(r) for r in pareto_front(ok, [(x, "min"), ("step_time_s", "min")])}


def build_sweep_report(
    source: SweepInput, *, metric: str = "step_time_s", generated: str | None = None
) -> Report:
    """The :class:`Report` of a sweep (module docstring); ``metric`` is what the sensitivity
    charts and the best-points ranking use (lower is better, except tokens/s and MFU)."""
    from commwall.sweep.analysis import axis_columns, sweep_axes

    records = list(source.records)
    named = sweep_axes(source.path)
    columns = {k for r in records for k in r}
    axes = axis_columns(records, [a for a in named if a in columns] if named else None)
    metrics = metric_columns(records, axes)
    if metrics and metric not in metrics:  # (no ok point at all: the failures still report)
        raise ReportError(
            f"metric: {metric!r} is not a numeric column of {source.path}; allowed: "
            + ", ".join(metrics)
        )
    ok = [r for r in records if r.get("status") == "ok" and _finite(r.get(metric))]
    higher_better = metric in ("tokens_per_s", "mfu")
    sections = [
        _best(ok, axes, metric, higher_better),
        _pareto(ok, axes),
        _sensitivity(ok, axes, metric),
        _failures(records),
    ]
    return Report(
        title=f"Sweep {_sweep_name(source.path) or source.path.name or source.path}",
        subtitle=_subtitle(source, records, axes),
        key_numbers=_key_numbers(records, ok),
        sections=tuple(sections),
        kind="sweep",
        generated=generated,
    )


def _sweep_name(folder: Any) -> str | None:
    """The ``name`` in the sweep's ``sweep.yaml`` (None when there is none)."""
    import yaml

    try:
        spec = yaml.safe_load((folder / "sweep.yaml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None
    name = spec.get("name") if isinstance(spec, dict) else None
    return str(name) if name else None


def _finite(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def _subtitle(
    source: SweepInput, records: list[dict[str, Any]], axes: list[str]
) -> tuple[str, ...]:
    base = ""
    for r in records:
        try:
            base = str(json.loads(r.get("config") or "{}").get("name", ""))
        except (TypeError, ValueError):
            continue
        if base:
            break
    lines = []
    if base:
        lines.append(f"base scenario: {base}")
    parts = [f"{a} ({len({_key(r.get(a)) for r in records})} values)" for a in axes]
    lines.append("axes: " + (", ".join(parts) or "none found"))
    lines.append(f"{len(records):,} points in {source.path}")
    return tuple(lines)


def _key_numbers(
    records: list[dict[str, Any]], ok: list[dict[str, Any]]
) -> tuple[tuple[str, str], ...]:
    status = {s: sum(r.get("status") == s for r in records) for s in ("ok", "invalid", "error")}
    numbers = [("points", f"{status['ok']:,} ok, {status['invalid']:,} invalid, "
                          f"{status['error']:,} error")]  # fmt: skip

    def best(col: str, high: bool = False) -> Any:
        vals = [r[col] for r in ok if _finite(r.get(col))]
        return (max(vals) if high else min(vals)) if vals else None

    numbers += [
        ("best step time", fmt.seconds(best("step_time_s"))),
        ("least waiting", fmt.pct(best("comm_wait_share"))),
        ("best MFU", fmt.pct(best("mfu", True))),
        ("most tokens/s", fmt.count(best("tokens_per_s", True))),
        ("least power", fmt.watts(best("power_w"))),
        ("cheapest network", fmt.usd(best("network_cost_usd"))),
    ]
    return tuple(numbers)


def _key(v: Any) -> str:
    return json.dumps(v, sort_keys=True, default=str)


def _label(v: Any) -> str:
    if isinstance(v, float):
        return fmt.num(v)
    return "–" if v is None else str(v)


def _point_text(r: dict[str, Any], axes: list[str]) -> str:
    lines = [f"point {r.get('index')} ({r.get('point_id')})"]
    lines += [f"{a} = {_label(r.get(a))}" for a in axes]
    lines.append(
        f"step {fmt.seconds(r.get('step_time_s'))}, waiting {fmt.pct(r.get('comm_wait_share'))}, "
        f"power {fmt.watts(r.get('power_w'))}, network {fmt.usd(r.get('network_cost_usd'))}"
    )
    return "\n".join(lines)


def _best(ok: list[dict[str, Any]], axes: list[str], metric: str, high: bool) -> Section:
    if not ok:
        return Section("best", "Best points", (Note("No point simulated successfully."),))
    ranked = sorted(ok, key=lambda r: ((-r[metric] if high else r[metric]), str(r["point_id"])))
    fronts = [front_ids(ok, x) for x in ("network_cost_usd", "power_w")]
    rows = []
    for n, r in enumerate(ranked[:BEST_POINTS], 1):
        marks = [name for name, f in zip(("cost", "power"), fronts, strict=True) if id(r) in f]
        rows.append(
            (
                str(n),
                str(r.get("index")),
                *(_label(r.get(a)) for a in axes),
                fmt.seconds(r.get("step_time_s")),
                fmt.pct(r.get("comm_wait_share")),
                fmt.pct(r.get("mfu")),
                fmt.count(r.get("tokens_per_s")),
                fmt.watts(r.get("power_w")),
                fmt.usd(r.get("network_cost_usd")),
                ", ".join(marks) or "–",
            )
        )
    headers = ("#", "point", *axes, "step time", "waiting", "MFU", "tokens/s", "power",
               "network cost", "Pareto (vs)")  # fmt: skip
    k = 2 + len(axes)
    table = Table(
        headers=headers,
        rows=tuple(rows),
        numeric=(0, 1, *range(k, k + 6)),
        caption=f"The {min(BEST_POINTS, len(ranked))} best of {len(ok):,} points by "
        f"{_METRIC_TITLES.get(metric, metric)}; 'Pareto' names the fronts the point is on.",
    )
    return Section("best", "Best points", (table,))


def _pareto(ok: list[dict[str, Any]], axes: list[str]) -> Section:
    timed = [r for r in ok if _finite(r.get("step_time_s"))]
    blocks: list[Block] = []
    for x, title, scale, unit in (
        ("network_cost_usd", "network cost", 1e-6, "million USD"),
        ("power_w", "power", 1e-3, "kW"),
    ):
        rows = [r for r in timed if _finite(r.get(x))]
        if not rows:
            blocks.append(Note(f"No point has {x}; no Pareto front against {title}."))
            continue
        on = front_ids(rows, x)
        rest = [r for r in rows if id(r) not in on]
        best = sorted((r for r in rows if id(r) in on), key=lambda r: (r[x], r["step_time_s"]))
        series = (
            _points("dominated", rest, x, scale, axes, markers_only=True),
            _points("Pareto front", best, x, scale, axes, highlight=True),
        )
        blocks.append(
            Chart(
                id=f"pareto-{x.split('_')[0]}",
                title=f"Step time against {title}: {len(best)} of {len(rows)} points non-dominated",
                body=Scatter(series=series),
                x_title=f"{title} ({unit})",
                y_title="step time (s)",
                caption="Lower-left is better; the highlighted points have no other point "
                f"that is both faster and lower in {title}.",
            )
        )
    return Section("pareto", "Pareto fronts", tuple(blocks))


def _points(
    name: str,
    rows: list[dict[str, Any]],
    x: str,
    scale: float,
    axes: list[str],
    *,
    highlight: bool = False,
    markers_only: bool = False,
) -> Series:
    return Series(
        name,
        tuple(float(r[x]) * scale for r in rows),
        tuple(float(r["step_time_s"]) for r in rows),
        text=tuple(_point_text(r, axes) for r in rows),
        highlight=highlight,
        markers_only=markers_only,
    )


def _sensitivity(ok: list[dict[str, Any]], axes: list[str], metric: str) -> Section:
    if not ok or not axes:
        return Section("sensitivity", "Sensitivity", (Note("Nothing to compare across axes."),))
    blocks: list[Block] = []
    for n, axis in enumerate(axes):
        values = [r.get(axis) for r in ok]
        numeric = all(_finite(v) for v in values)
        xs: list[float | str] = [
            float(v) if numeric and v is not None else _label(v) for v in values
        ]
        by: dict[Any, list[float]] = {}
        for xv, r in zip(xs, ok, strict=True):
            by.setdefault(xv, []).append(float(r[metric]))
        keys = sorted(by) if numeric else sorted(by, key=str)
        medians = tuple(float(statistics.median(by[k])) for k in keys)
        series = (
            Series(
                "points",
                tuple(xs),
                tuple(float(r[metric]) for r in ok),
                text=tuple(_point_text(r, axes) for r in ok),
                markers_only=True,
            ),
            Series("median", tuple(keys), medians, highlight=True),
        )
        blocks.append(
            Chart(
                id=f"sensitivity-{n}",
                title=f"{_METRIC_TITLES.get(metric, metric)} against {axis}",
                body=Lines(series=series),
                x_title=axis,
                y_title=_METRIC_TITLES.get(metric, metric),
                caption="Every point (other axes vary too) and the median at each value.",
                height=360,
            )
        )
    return Section("sensitivity", "Sensitivity to each axis", tuple(blocks))


def _failures(records: list[dict[str, Any]]) -> Section:
    bad = [r for r in records if r.get("status") != "ok"]
    if not bad:
        return Section("failures", "Invalid and failed points", (Note("Every point ran."),))
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in bad:
        reason = str(r.get("error") or "(no message)")
        if len(reason) > MAX_ERROR_CHARS:
            reason = reason[: MAX_ERROR_CHARS - 1] + "…"
        groups.setdefault((str(r.get("status")), reason), []).append(r)
    rows = tuple(
        (status, str(len(rs)), reason, ", ".join(str(r.get("index")) for r in rs[:8])
         + (" …" if len(rs) > 8 else ""))
        for (status, reason), rs in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    )  # fmt: skip
    table = Table(
        headers=("status", "points", "reason", "point indices"),
        rows=rows,
        numeric=(1,),
        caption="invalid: the scenario or cluster was refused; error: the simulation failed.",
    )
    return Section("failures", "Invalid and failed points", (table,))
