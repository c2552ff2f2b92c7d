"""What a finished sweep says: Pareto fronts, which axis matters, the best design under constraints.

Pure functions on point records (:func:`commwall.sweep.store.read_points`); only points with
``status == "ok"`` take part, and a point missing a value the analysis needs (``None`` or NaN)
is left out of that analysis.

Pareto dominance (Pareto 1896; as used in multi-objective optimisation, Deb 2001, *Multi-Objective
Optimization using Evolutionary Algorithms*, §2.4): with every objective turned into one to
minimise, point *a* dominates point *b* when *a* is no worse than *b* in every objective and
strictly better in at least one. The Pareto front is the set of points no other point dominates.
Two points with equal objective vectors do not dominate each other, so duplicates and ties stay
on the front together.

Non-dominated sorting (Deb, Pratap, Agarwal & Meyarivan 2002, "A fast and elitist multiobjective
genetic algorithm: NSGA-II", IEEE TEC 6(2)): layer 0 is the front, layer 1 the front of what is
left, and so on. A point's layer equals the length of the longest chain of points dominating it,
so the points can be placed one at a time in lexicographic order (no point dominates one before it
in that order), each into the first layer none of whose members dominates it; since domination
by layer *k* implies domination by every layer before it, that layer is found by binary search —
the "efficient non-dominated sort with binary search" of Zhang, Tian, Cheng & Jin 2015 (IEEE TEC
19(2)). For two objectives each layer is summarised by its last point, which makes the whole sort
O(n log n) (Jensen 2003, IEEE TEC 7(5)); the front alone uses the sort-and-scan idea of Kung,
Luccio & Preparata 1975 ("On finding the maxima of a set of vectors", J. ACM 22(4)).

Sensitivity (main effects, as in the analysis of factorial experiments: Box, Hunter & Hunter,
*Statistics for Experimenters*, 2nd ed. 2005, ch. 5): for each axis and each of its values, the
statistics of the metric over the points sharing that value; the axis's *spread* is the largest
minus the smallest of those per-value means (in the metric's unit), and axes are ranked by it.
On a full grid this is the classical main-effect range; on an irregular sample the per-value
means also carry the other axes' effects (they are marginal means). Beside it, ``mu_star`` is the
mean absolute change of the metric between neighbouring values of the axis with every other axis
held fixed — Morris's elementary effects (Morris 1991, Technometrics 33(2)) summarised by their
mean absolute value (Campolongo, Cariboni & Saltelli 2007), read off the grid instead of random
trajectories and not divided by the step (axes may be categorical).
"""

from __future__ import annotations

import itertools
import json
import math
import statistics
from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final, Literal

import numpy as np

from commwall.errors import CommwallError
from commwall.sweep.expr import compile_expr
from commwall.sweep.store import BASE_COLUMNS

__all__ = [
    "AXIS_PREFIXES",
    "MAXIMISE",
    "AnalysisError",
    "AxisEffect",
    "Goal",
    "LevelStats",
    "Objective",
    "axis_columns",
    "best",
    "columns",
    "dominates",
    "goal_of",
    "numeric_columns",
    "ok_records",
    "pareto_front",
    "pareto_ranks",
    "parse_objectives",
    "select",
    "sensitivity",
    "sweep_axes",
]

Goal = Literal["min", "max"]
#: A metric and whether smaller or larger is better.
Objective = tuple[str, Goal]

#: Columns whose names start with these (and hold a dot) are taken for axes.
AXIS_PREFIXES: Final = ("cluster.", "job.", "simulation.", "faults.")
#: Metrics where larger is better; every other metric defaults to smaller is better.
MAXIMISE: Final = frozenset(
    {
        "tokens_per_s",
        "mfu",
        "bisection_Bps",
        "net_bw_per_gpu_Bps",
        "scale_up_bw_per_gpu_Bps",
        "fits_in_memory",
    }
)
_PLAIN: Final = frozenset({float, int, bool})  # the common case, checked first (speed)
#: Columns that are neither axes nor metrics.
_BOOKKEEPING: Final = frozenset({*BASE_COLUMNS, "config"})


class AnalysisError(CommwallError, ValueError):
    """Input an analysis cannot use: one line naming the value and what is allowed."""


# ---- records and columns --------------------------------------------------------------------


def ok_records(records: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The records whose ``status`` is ``ok``, in their order."""
    return [r for r in records if r.get("status") == "ok"]


def columns(records: Iterable[Mapping[str, Any]]) -> list[str]:
    """Every column name appearing in ``records``, in order of first appearance."""
    seen: dict[str, None] = {}
    for r in records:
        seen.update(dict.fromkeys(r))
    return list(seen)


def _is_number(x: Any) -> bool:
    """Whether ``x`` is a real number (bools count; NaN counts, as a number with no value)."""
    return type(x) in _PLAIN or isinstance(x, int | float | np.integer | np.floating)


def _number(x: Any) -> float | None:
    """``x`` as a float when it is a number other than NaN, else ``None``."""
    if _is_number(x):
        v = float(x)
        return None if math.isnan(v) else v
    return None


def numeric_columns(records: Sequence[Mapping[str, Any]]) -> list[str]:
    """Columns holding a number in at least one record and nothing but numbers or nulls."""
    out = []
    for c in columns(records):
        values = [r.get(c) for r in records if r.get(c) is not None]
        if c not in _BOOKKEEPING and values and all(_is_number(v) for v in values):
            out.append(c)
    return out


def sweep_axes(sweep: str | Path) -> list[str] | None:
    """The axes named by ``SWEEP/sweep.yaml`` (the keys of its ``axes:`` mapping or its list of
    names, then its ``zip:`` groups' keys, then ``simulation.seed`` for ``seeds:``), or
    ``None`` when the file is missing or names none."""
    import yaml

    path = Path(sweep) / "sweep.yaml"
    try:
        spec = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return None
    except yaml.YAMLError as e:
        raise AnalysisError(f"{path}: not valid YAML: {e}") from None
    if not isinstance(spec, dict):
        return None
    axes = spec.get("axes")
    names: list[str] = []
    if isinstance(axes, dict):
        names += [str(k) for k in axes]
    elif isinstance(axes, list) and all(isinstance(a, str) for a in axes):
        names += axes
    for group in spec.get("zip") or []:  # axes that move together
        if isinstance(group, dict):
            names += [str(k) for k in group]
    if spec.get("seeds"):
        names.append("simulation.seed")
    return names or None


def axis_columns(
    records: Sequence[Mapping[str, Any]], axes: Sequence[str] | None = None
) -> list[str]:
    """The axis columns of ``records``: ``axes`` checked against the columns when given, else
    every column with a dot whose name starts with one of :data:`AXIS_PREFIXES`."""
    cols = columns(records)
    if axes is None:
        return [c for c in cols if c.startswith(AXIS_PREFIXES) and c not in _BOOKKEEPING]
    unknown = [a for a in axes if a not in cols]
    if unknown:
        raise AnalysisError(
            f"axis {unknown[0]!r} is not a column of the sweep; allowed: "
            + ", ".join(c for c in cols if c not in _BOOKKEEPING)
        )
    return list(axes)


def goal_of(metric: str) -> Goal:
    """``max`` for metrics where larger is better (:data:`MAXIMISE`), else ``min``."""
    return "max" if metric in MAXIMISE else "min"


def parse_objectives(text: str) -> list[Objective]:
    """``"step_time_s:min,tokens_per_s:max,power_w"`` as objectives (goal defaults per metric,
    :func:`goal_of`)."""
    out: list[Objective] = []
    for item in text.split(","):
        name, _, goal = item.strip().partition(":")
        name, goal = name.strip(), goal.strip().lower()
        if not name:
            raise AnalysisError(f"objectives {text!r}: empty metric name; write METRIC[:min|max]")
        if goal not in ("", "min", "max"):
            raise AnalysisError(f"objective {item.strip()!r}: goal {goal!r}; allowed: min, max")
        out.append((name, goal_of(name) if goal == "" else "min" if goal == "min" else "max"))
    return out


def _check_metric(records: Sequence[Mapping[str, Any]], metric: str, what: str) -> None:
    values = [v for r in records if (v := r.get(metric)) is not None]
    if not values or not all(_is_number(v) for v in values):
        numeric = numeric_columns(records)
        raise AnalysisError(
            f"{what} {metric!r} is not a numeric column of the sweep's ok points; allowed: "
            + (", ".join(numeric) or "(none: no ok points)")
        )


# ---- Pareto ------------------------------------------------------------------------------------


def dominates(a: Mapping[str, Any], b: Mapping[str, Any], objectives: Sequence[Objective]) -> bool:
    """Whether record ``a`` Pareto-dominates record ``b`` (module docstring).

    >>> dominates({"t": 1, "c": 5}, {"t": 2, "c": 5}, [("t", "min"), ("c", "min")])
    True
    >>> dominates({"t": 1, "c": 5}, {"t": 1, "c": 5}, [("t", "min"), ("c", "min")])
    False
    """
    sign = [1.0 if g == "min" else -1.0 for _, g in objectives]
    x = [s * float(a[m]) for s, (m, _) in zip(sign, objectives, strict=True)]
    y = [s * float(b[m]) for s, (m, _) in zip(sign, objectives, strict=True)]
    return all(p <= q for p, q in zip(x, y, strict=True)) and x != y


def _matrix(
    records: Sequence[Mapping[str, Any]], objectives: Sequence[Objective]
) -> tuple[np.ndarray, list[int]]:
    """Objective values to minimise (rows: usable ok records) and those records' positions."""
    if not objectives:
        raise AnalysisError("no objectives; give at least one METRIC[:min|max]")
    for name, goal in objectives:
        if goal not in ("min", "max"):
            raise AnalysisError(f"objective {name!r}: goal {goal!r}; allowed: min, max")
    ok = [(i, r) for i, r in enumerate(records) if r.get("status") == "ok"]
    for name, _ in objectives:
        if ok:  # nothing to compare is an empty front, not an error
            _check_metric([r for _, r in ok], name, "objective")
    sign = np.array([1.0 if g == "min" else -1.0 for _, g in objectives])
    cols = []
    for name, _ in objectives:
        values = [r.get(name) for _, r in ok]
        cols.append(np.array([np.nan if v is None else v for v in values], dtype=float))
    x = np.column_stack(cols).reshape(len(ok), len(objectives)) * sign
    usable = ~np.isnan(x).any(axis=1)  # a missing objective: the point cannot be compared
    return x[usable], [ok[i][0] for i in np.flatnonzero(usable).tolist()]


def _lex_order(x: np.ndarray) -> np.ndarray:
    """Row order sorted lexicographically (first objective first), stable."""
    return np.lexsort(x.T[::-1]) if len(x) else np.arange(0)


#: Candidate × comparison pairs per vectorised block (bounds the boolean temporaries).
_BLOCK: Final = 1 << 21


def _dominated(cands: np.ndarray, by: np.ndarray) -> np.ndarray:
    """For each row of ``cands``, whether some row of ``by`` dominates it (all <=, some <)."""
    out = np.zeros(len(cands), dtype=bool)
    step = max(1, _BLOCK // max(1, len(cands)))
    for j in range(0, len(by), step):
        b = by[j : j + step]
        le = np.ones((len(cands), len(b)), dtype=bool)
        lt = np.zeros_like(le)
        for m in range(cands.shape[1]):  # one objective at a time: 2-D passes, no tiny axis
            cm, bm = cands[:, m, None], b[None, :, m]
            le &= bm <= cm
            lt |= bm < cm
        out |= (le & lt).any(axis=1)
    return out


def _front_mask(x: np.ndarray) -> np.ndarray:
    """Which rows of ``x`` are non-dominated.

    Sort-and-scan (after Kung, Luccio & Preparata 1975): in lexicographic order no row can be
    dominated by a later one, so a row is on the front exactly when neither the front found so
    far nor a row of its own chunk dominates it (by transitivity a dominated dominator has a
    dominator on the front); chunks of rows keep the comparisons vectorised.
    """
    n, k = x.shape
    mask = np.zeros(n, dtype=bool)
    if k == 2:
        return _ranks2(x) == 0 if n else mask
    order = _lex_order(x)
    front = np.empty((0, k))
    chunk = 128
    for start in range(0, n, chunk):
        idx = order[start : start + chunk]
        c = x[idx]
        alive = ~_dominated(c, front)
        idx, c = idx[alive], c[alive]  # one dominated by a dropped row is dominated by the front
        keep = ~_dominated(c, c)
        mask[idx[keep]] = True
        front = np.concatenate([front, c[keep]])
    return mask


def _ranks2(x: np.ndarray) -> np.ndarray:
    """Non-dominated sorting layers for two objectives in O(n log n) (Jensen 2003).

    In lexicographic order each layer is summarised by the key (f2, f1) of the last point put
    in it; a point is dominated by a layer exactly when that key is below its own (f2, f1), and
    the keys increase from layer to layer, so a binary search finds its layer.
    """
    rank = np.zeros(len(x), dtype=np.int64)
    keys: list[tuple[float, float]] = []
    for i in _lex_order(x).tolist():
        key = (float(x[i, 1]), float(x[i, 0]))
        layer = bisect_left(keys, key)  # first layer whose key is not below: no dominator there
        if layer == len(keys):
            keys.append(key)
        else:
            keys[layer] = key
        rank[i] = layer
    return rank


def _ranks(x: np.ndarray) -> np.ndarray:
    """Non-dominated sorting layer of each row of ``x`` (minimise every column): two
    objectives by :func:`_ranks2`, more by peeling fronts (:func:`_front_mask`) one at a time."""
    if x.shape[1] == 2:
        return _ranks2(x)
    rank = np.zeros(len(x), dtype=np.int64)
    left = np.arange(len(x))
    layer = 0
    while len(left):
        on = _front_mask(x[left])
        rank[left[on]] = layer
        left = left[~on]
        layer += 1
    return rank


def pareto_ranks(
    records: Sequence[Mapping[str, Any]], objectives: Sequence[Objective]
) -> list[int | None]:
    """Each record's non-dominated sorting layer (0 = on the Pareto front), aligned with
    ``records``; ``None`` for records not ``ok`` or missing an objective value.

    >>> recs = [{"status": "ok", "t": t, "c": c} for t, c in [(1, 3), (2, 2), (2, 3), (3, 3)]]
    >>> pareto_ranks(recs, [("t", "min"), ("c", "min")])
    [0, 0, 1, 2]
    """
    x, keep = _matrix(records, objectives)
    out: list[int | None] = [None] * len(records)
    for i, r in zip(keep, _ranks(x).tolist() if len(keep) else [], strict=True):
        out[i] = int(r)
    return out


def pareto_front(
    records: Sequence[Mapping[str, Any]], objectives: Sequence[Objective]
) -> list[Mapping[str, Any]]:
    """The ``ok`` records no other ``ok`` record dominates, in their original order.

    ``objectives``: ``(metric, "min" | "max")`` pairs, e.g. ``[("step_time_s", "min"),
    ("network_cost_usd", "min")]``. Records with equal objective values are all kept.

    >>> recs = [{"status": "ok", "t": t, "c": c} for t, c in [(1, 3), (2, 2), (2, 3), (1, 3)]]
    >>> [(r["t"], r["c"]) for r in pareto_front(recs, [("t", "min"), ("c", "min")])]
    [(1, 3), (2, 2), (1, 3)]
    """
    x, keep = _matrix(records, objectives)
    if not keep:
        return []
    mask = _front_mask(x)
    return [records[i] for i, m in zip(keep, mask.tolist(), strict=True) if m]


# ---- sensitivity ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class LevelStats:
    """The metric over the points where an axis takes one value."""

    value: Any
    n: int
    mean: float
    median: float
    min: float
    max: float


@dataclass(frozen=True)
class AxisEffect:
    """One axis's main effect on a metric (module docstring)."""

    axis: str
    #: Per value of the axis, in value order.
    levels: tuple[LevelStats, ...]
    #: max − min of the per-value means, in the metric's unit.
    spread: float
    #: ``spread`` / |mean of the metric over all points| (``None`` when that mean is 0).
    relative_spread: float | None
    #: The value with the best mean (lowest for ``min``, highest for ``max``).
    best_value: Any
    #: Mean |change of the metric| between neighbouring values, all other axes fixed.
    mu_star: float | None
    #: Pairs of points ``mu_star`` averages over.
    pairs: int

    def to_dict(self) -> dict[str, Any]:
        """Plain data (JSON-ready when the axis values are)."""
        return asdict(self)


def _hashable(v: Any) -> Any:
    """``v`` as a dictionary key (lists and mappings as canonical JSON text)."""
    try:
        hash(v)
    except TypeError:
        return json.dumps(v, sort_keys=True, default=str)
    return v


def _value_order(v: Any) -> tuple[int, float, str]:
    """Sort key: numbers by value, then everything else by text; ``None`` last."""
    n = _number(v)
    if n is not None and not isinstance(v, bool):
        return (0, n, "")
    return (2, 0.0, "") if v is None else (1, 0.0, str(v))


def _mu_star(
    points: Sequence[tuple[dict[str, Any], float]], axis: str, axes: Sequence[str]
) -> tuple[float | None, int]:
    """Mean |Δ metric| between neighbouring values of ``axis`` with the other axes fixed."""
    others = [a for a in axes if a != axis]
    groups: dict[tuple[Any, ...], dict[Any, list[float]]] = {}
    for key, y in points:
        g = groups.setdefault(tuple(key[a] for a in others), {})
        g.setdefault(key[axis], []).append(y)
    steps: list[float] = []
    for g in groups.values():
        values = sorted(g, key=_value_order)
        means = [statistics.fmean(g[v]) for v in values]
        steps += [abs(b - a) for a, b in itertools.pairwise(means)]
    return (statistics.fmean(steps) if steps else None), len(steps)


def sensitivity(
    records: Sequence[Mapping[str, Any]],
    metric: str,
    axes: Sequence[str] | None = None,
    goal: Goal | None = None,
) -> list[AxisEffect]:
    """Each axis's main effect on ``metric``, most influential (largest spread) first.

    ``axes``: the axis columns (default :func:`axis_columns`); ``goal``: which end of the metric
    is better, for ``best_value`` (default :func:`goal_of`). Ties in spread keep axis order.

    >>> recs = [{"status": "ok", "a": a, "b": b, "y": 10 * a + b} for a in (1, 2) for b in (0, 1)]
    >>> [(e.axis, e.spread, e.best_value, e.mu_star) for e in sensitivity(recs, "y", ["a", "b"])]
    [('a', 10.0, 1, 10.0), ('b', 1.0, 0, 1.0)]
    """
    ok = ok_records(records)
    _check_metric(ok, metric, "metric")
    axes = axis_columns(ok, axes)
    if not axes:
        raise AnalysisError(
            "no axes: the sweep has no cluster./job./simulation./faults. columns; name them"
        )
    goal = goal or goal_of(metric)
    points: list[tuple[dict[str, Any], float]] = []
    for r in ok:
        y = _number(r.get(metric))
        if y is not None:
            points.append(({a: _hashable(r.get(a)) for a in axes}, y))
    if not points:
        raise AnalysisError(f"metric {metric!r}: no ok point has a value")
    overall = statistics.fmean(y for _, y in points)
    effects = []
    for axis in axes:
        by_value: dict[Any, list[float]] = {}
        for key, y in points:
            by_value.setdefault(key[axis], []).append(y)
        levels = tuple(
            LevelStats(v, len(ys), statistics.fmean(ys), statistics.median(ys), min(ys), max(ys))
            for v, ys in sorted(by_value.items(), key=lambda kv: _value_order(kv[0]))
        )
        means = [lv.mean for lv in levels]
        spread = max(means) - min(means)
        pick = min if goal == "min" else max
        best_level = pick(levels, key=lambda lv: lv.mean)
        mu, pairs = _mu_star(points, axis, axes)
        effects.append(
            AxisEffect(
                axis=axis,
                levels=levels,
                spread=spread,
                relative_spread=spread / abs(overall) if overall else None,
                best_value=best_level.value,
                mu_star=mu,
                pairs=pairs,
            )
        )
    return sorted(effects, key=lambda e: -e.spread)


# ---- best under constraints ------------------------------------------------------------------------


def select(records: Sequence[Mapping[str, Any]], where: str | None) -> list[Mapping[str, Any]]:
    """The ``ok`` records satisfying the expression ``where`` (:mod:`commwall.sweep.expr`;
    column names checked against the records'); every ``ok`` record when ``where`` is empty."""
    ok = ok_records(records)
    if not where or not where.strip():
        return ok
    test = compile_expr(where, columns(records)).test
    return [r for r in ok if test(r)]


def best(
    records: Sequence[Mapping[str, Any]],
    metric: str,
    goal: Goal | None = None,
    where: str | None = None,
    top: int = 1,
) -> list[Mapping[str, Any]]:
    """The ``top`` ``ok`` records with the best ``metric`` among those satisfying ``where``.

    ``goal``: ``min`` or ``max`` (default :func:`goal_of`); ``where``: a constraint such as
    ``"power_w < 500e3 and network_cost_usd <= 4e6 and fits_in_memory"`` (raises
    :class:`~commwall.sweep.expr.ExprError` when it is not valid). Ties keep sweep order;
    records without a value of ``metric`` are skipped. An empty list: nothing satisfies it.

    >>> recs = [{"status": "ok", "t": t, "p": p} for t, p in [(3, 1), (1, 9), (2, 2)]]
    >>> [r["t"] for r in best(recs, "t", where="p < 5")]
    [2]
    """
    if goal not in (None, "min", "max"):
        raise AnalysisError(f"goal {goal!r}; allowed: min, max")
    if top < 1:
        raise AnalysisError(f"top {top}; need at least 1")
    _check_metric(ok_records(records), metric, "metric")
    sign = 1.0 if (goal or goal_of(metric)) == "min" else -1.0
    scored = []
    for r in select(records, where):
        y = _number(r.get(metric))
        if y is not None:
            scored.append((sign * y, r))
    scored.sort(key=lambda s: s[0])  # stable: ties keep sweep order
    return [r for _, r in scored[:top]]
