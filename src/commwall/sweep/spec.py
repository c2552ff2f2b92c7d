"""The sweep spec: a base scenario, axes over its fields, how to sample them, what to skip.

A spec is YAML::

    name: fabric choices for Llama-3-70B
    base: llama3-70b-dgx-h100.yaml      # a scenario file (relative to the spec), an inline
                                        # scenario mapping, or absent: the built-in default
    set:                                # fixed changes to the base, field path -> value
      job.dp: null                      # (null: back to the default, here "derived")
    axes:                               # field path -> values
      cluster.topology.kind: [rail-optimized, fat-tree]
      cluster.topology.oversubscription: {geometric: [1, 8, 2]}   # 1, 2, 4, 8
      cluster.nodes: {range: [32, 128, 32]}                        # 32, 64, 96, 128
    zip:                                # axes that move together (equal lengths)
      - {job.tp: [8, 4], job.pp: [4, 8]}
    seeds: [0, 1]                       # shorthand for the axis simulation.seed
    sampling: grid                      # grid (every combination) or random
    samples: 200                        # random: how many distinct points
    seed: 0                             # random: the sampling seed
    constraints:                        # points failing one are skipped, and counted
      - "`job.tp` * `job.pp` <= `cluster.nodes` * 8"

Axis values are a list, ``{range: [start, stop, step]}`` (``stop`` included when reached) or
``{geometric: [start, stop, factor]}``. An axis path must name a field of the scenario
(``commwall schema``); a path that cannot exist is an error before anything runs. A value the
field refuses makes that point ``invalid`` (stored, with the reason) rather than stopping the
sweep. The grid order is the axes' order, the last axis fastest; random sampling draws distinct
grid points with a seeded generator, so a spec always yields the same points in the same order.
"""

from __future__ import annotations

import copy
import functools
import itertools
import math
import types
import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

import numpy as np
from pydantic import BaseModel

from commwall.errors import CommwallError
from commwall.scenario import Scenario, ScenarioError, load_scenario

__all__ = ["Point", "SweepError", "SweepSpec", "load_sweep", "parse_sweep"]

#: The most points a grid may have before random sampling is required.
MAX_GRID: Final = 10_000_000
_KEYS: Final = {"name", "description", "base", "set", "axes", "zip", "seeds", "sampling",
                "samples", "seed", "constraints"}  # fmt: skip


class SweepError(CommwallError, ValueError):
    """A spec that cannot run; ``messages`` name each field, value and what is allowed."""

    def __init__(self, messages: list[str], origin: str = "sweep") -> None:
        self.messages = messages
        self.origin = origin
        super().__init__("\n".join(f"{origin}: {m}" for m in messages))


@dataclass(frozen=True)
class Point:
    """One design: its index in the sweep, its axis values and its resolved scenario."""

    index: int
    axes: dict[str, Any]
    config: dict[str, Any]


@dataclass(frozen=True)
class SweepSpec:
    """A validated sweep (module docstring)."""

    name: str
    base: dict[str, Any]
    axes: tuple[tuple[tuple[str, ...], tuple[tuple[Any, ...], ...]], ...]
    """Groups of axes that move together: (paths, value tuples); a plain axis is a group of one."""
    sampling: Literal["grid", "random"] = "grid"
    samples: int = 0
    seed: int = 0
    constraints: tuple[str, ...] = ()
    description: str = ""
    source: dict[str, Any] = field(default_factory=dict)

    @property
    def axis_names(self) -> list[str]:
        """Every axis path, in order."""
        return [p for paths, _ in self.axes for p in paths]

    @property
    def grid_size(self) -> int:
        """Points in the full grid."""
        return math.prod(len(values) for _, values in self.axes) if self.axes else 1

    @property
    def size(self) -> int:
        """Points the sweep enumerates (before constraints)."""
        return min(self.samples, self.grid_size) if self.sampling == "random" else self.grid_size

    def _sample(self, sizes: list[int]) -> list[tuple[int, ...]]:
        return _sample_indices(self, sizes)

    def points(self) -> Iterator[Point]:
        """Every point in sweep order (constraints not applied: see :func:`feasible`)."""
        sizes = [len(values) for _, values in self.axes]
        if self.sampling == "random":
            combos: Iterator[tuple[int, ...]] = iter(self._sample(sizes))
        else:
            combos = itertools.product(*(range(n) for n in sizes))
        for index, combo in enumerate(combos):
            axes: dict[str, Any] = {}
            config = copy.deepcopy(self.base)
            for (paths, values), k in zip(self.axes, combo, strict=True):
                for path, value in zip(paths, values[k], strict=True):
                    axes[path] = value
                    _set(config, path, value)
            yield Point(index, axes, config)


def _sample_indices(spec: SweepSpec, sizes: list[int]) -> list[tuple[int, ...]]:
    """``spec.size`` distinct grid points drawn with the spec's seed: by flat index where
    numpy can hold the grid's size, else axis by axis, redrawing repeats."""
    rng = np.random.default_rng(spec.seed)
    if spec.grid_size < 2**62:
        flat = rng.choice(spec.grid_size, size=spec.size, replace=False)
        return [tuple(int(i) for i in np.unravel_index(int(k), sizes)) for k in flat]
    seen: dict[tuple[int, ...], None] = {}
    while len(seen) < spec.size:
        seen.setdefault(tuple(int(rng.integers(n)) for n in sizes), None)
    return list(seen)


def load_sweep(path: str | Path) -> SweepSpec:
    """Read and validate the spec at ``path`` (a relative ``base`` is relative to it)."""
    from commwall.scenario import (
        MAX_EXPANDED_VALUES,
        ScenarioError,
        expanded_size,
        read_text_file,
        yaml_document,
    )

    p = Path(path)
    try:
        data = yaml_document(read_text_file(p, "sweep spec"), str(p))
    except ScenarioError as e:
        raise SweepError(e.messages, str(p)) from None
    if expanded_size(data) > MAX_EXPANDED_VALUES:
        raise SweepError(
            [f"expands to more than {MAX_EXPANDED_VALUES:,} values through YAML aliases"], str(p)
        )
    return parse_sweep(data, origin=str(p), root=p.parent)


def parse_sweep(data: object, *, origin: str = "sweep", root: Path | None = None) -> SweepSpec:
    """Validate a spec mapping (module docstring); every problem is reported at once."""
    if not isinstance(data, Mapping):
        raise SweepError(
            [f"a sweep spec is a mapping with axes:, got {type(data).__name__}"], origin
        )
    errors: list[str] = []
    for key in data:
        if key not in _KEYS:
            errors.append(f"{key}: unknown key; allowed: {', '.join(sorted(_KEYS))}")
    base = _base(data.get("base"), root or Path("."), errors)
    fixed = data.get("set") or {}
    if not isinstance(fixed, Mapping):
        errors.append("set: a mapping of field path -> value")
        fixed = {}
    for path, value in fixed.items():
        if _check_path(str(path), f"set.{path}", errors) and base:
            _set(base, str(path), value)
    groups: list[tuple[tuple[str, ...], tuple[tuple[Any, ...], ...]]] = []
    axes = data.get("axes") or {}
    if not isinstance(axes, Mapping):
        errors.append("axes: a mapping of field path -> values")
        axes = {}
    for path, spec in axes.items():
        values = _values(f"axes.{path}", spec, errors)
        if _check_path(str(path), f"axes.{path}", errors) and values:
            groups.append(((str(path),), tuple((v,) for v in values)))
    zips = data.get("zip") or []
    if not isinstance(zips, list):
        errors.append("zip: a list of mappings, each of axes with equally many values")
        zips = []
    for i, group in enumerate(zips):
        if not isinstance(group, Mapping) or not group:
            errors.append(f"zip[{i}]: a mapping of field path -> values")
            continue
        columns = {str(p): _values(f"zip[{i}].{p}", v, errors) for p, v in group.items()}
        lengths = {len(v) for v in columns.values()}
        ok = all(_check_path(p, f"zip[{i}].{p}", errors) for p in columns)
        if len(lengths) > 1:
            errors.append(f"zip[{i}]: the axes have {sorted(lengths)} values; they must be equal")
        elif ok and lengths and lengths != {0}:
            groups.append((tuple(columns), tuple(zip(*columns.values(), strict=True))))
    if "seeds" in data:
        seeds = _values("seeds", data["seeds"], errors)
        if any(not isinstance(s, int) or isinstance(s, bool) or s < 0 for s in seeds):
            errors.append(f"seeds: {seeds!r}; allowed: integers >= 0")
        elif seeds:
            groups.append((("simulation.seed",), tuple((s,) for s in seeds)))
    names = [p for paths, _ in groups for p in paths]
    for dup in sorted({p for p in names if names.count(p) > 1}):
        errors.append(f"{dup}: swept twice (in axes, zip or seeds); give it once")
    sampling = data.get("sampling", "grid")
    if sampling not in ("grid", "random"):
        errors.append(f"sampling: {sampling!r}; allowed: grid, random")
    samples = data.get("samples", 0)
    seed = data.get("seed", 0)
    if sampling == "random" and (not isinstance(samples, int) or samples < 1):
        errors.append(f"samples: {samples!r}; random sampling needs an integer >= 1")
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        errors.append(f"seed: {seed!r}; allowed: an integer >= 0")
    constraints = data.get("constraints") or []
    if isinstance(constraints, str):
        constraints = [constraints]
    if not isinstance(constraints, list) or not all(isinstance(c, str) for c in constraints):
        errors.append("constraints: a list of expressions (text)")
        constraints = []
    errors += _check_constraints(constraints, names)
    if errors:
        raise SweepError(errors, origin)
    spec = SweepSpec(
        name=str(data.get("name") or "sweep"),
        base=base,
        axes=tuple(groups),
        sampling=sampling,
        samples=int(samples),
        seed=int(seed),
        constraints=tuple(constraints),
        description=str(data.get("description") or ""),
        source={**data, "base": base},
    )
    if spec.sampling == "grid" and spec.grid_size > MAX_GRID:
        raise SweepError(
            [f"axes: the grid has {spec.grid_size:,} points (more than {MAX_GRID:,}); "
             "use sampling: random with samples: N"], origin)  # fmt: skip
    return spec


def feasible(spec: SweepSpec, point: Point) -> str | None:
    """None when ``point`` meets every constraint, else the first constraint it fails.
    Constraints read any field of the resolved scenario by its path (``commwall.sweep.expr``)."""
    if not spec.constraints:
        return None
    from commwall.sweep.expr import ExprError

    names = _flat(point.config)
    for i, constraint in enumerate(spec.constraints):
        try:
            if not _compiled(constraint).test(names):
                return constraint
        except ExprError as e:
            raise SweepError(
                [f"constraints[{i}] ({constraint}): {e} at the point {point.axes}"]
            ) from None
    return None


@functools.lru_cache(maxsize=256)
def _compiled(text: str) -> Any:
    from commwall.sweep.expr import compile_expr

    return compile_expr(text)


def _check_constraints(constraints: list[str], axes: list[str]) -> list[str]:
    """Each constraint must parse and read only fields a scenario has."""
    if not constraints:
        return []
    from commwall.sweep.expr import ExprError

    errors: list[str] = []
    for i, text in enumerate(constraints):
        try:
            expr = _compiled(text)
        except ExprError as e:
            errors.append(f"constraints[{i}]: {e}")
            continue
        for name in expr.names:
            _check_path(name, f"constraints[{i}] ({text})", errors)
    return errors


def _flat(config: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Every leaf of ``config`` by its dotted path."""
    out: dict[str, Any] = {}
    for key, value in config.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(_flat(value, f"{path}."))
        else:
            out[path] = value
    return out


def _base(base: object, root: Path, errors: list[str]) -> dict[str, Any]:
    """The base scenario as a resolved mapping (defaults filled in)."""
    from commwall.defaults import default_scenario
    from commwall.scenario import parse_scenario

    try:
        if base is None:
            scenario = default_scenario()
        elif isinstance(base, str):
            path = Path(base) if Path(base).is_absolute() else root / base
            scenario = load_scenario(path)
        elif isinstance(base, Mapping):
            scenario = parse_scenario(dict(base), "base")
        else:
            errors.append(f"base: {base!r}; allowed: a scenario file, a mapping or nothing")
            return {}
    except ScenarioError as e:
        errors += [f"base: {e.origin}: {m}" for m in e.messages]
        return {}
    return scenario.model_dump(mode="json")


#: Most values one axis may have.
MAX_AXIS_VALUES: Final = 100_000


def _values(where: str, spec: object, errors: list[str]) -> list[Any]:
    """An axis's values from a list, ``{range: [a, b, step]}`` or ``{geometric: [a, b, f]}``;
    each a single value (number, text, true/false or null), as a field takes it."""
    if isinstance(spec, list):
        if not spec:
            errors.append(f"{where}: no values")
        for value in spec:
            if not (value is None or isinstance(value, str | int | float | bool)):
                errors.append(
                    f"{where}: {value!r} is a {type(value).__name__}; allowed: single values "
                    "(numbers, text, true/false, null): sweep a nested field by its own path"
                )
                return []
        if len(spec) > MAX_AXIS_VALUES:
            errors.append(f"{where}: {len(spec):,} values; allowed: at most {MAX_AXIS_VALUES:,}")
            return []
        return spec
    if isinstance(spec, Mapping) and len(spec) == 1:
        (kind, args), = spec.items()  # fmt: skip
        if kind in ("range", "geometric") and isinstance(args, list) and len(args) == 3:
            a, b, step = args
            if all(isinstance(x, int | float) and not isinstance(x, bool) for x in args):
                return _expand(where, kind, a, b, step, errors)
    errors.append(
        f"{where}: {spec!r}; allowed: a list of values, {{range: [start, stop, step]}} or "
        "{geometric: [start, stop, factor]}"
    )
    return []


def _expand(where: str, kind: str, a: float, b: float, step: float, errors: list[str]) -> list[Any]:
    """The values of a range or geometric axis, counted before they are made."""
    if not all(math.isfinite(x) for x in (a, b, step)):
        errors.append(f"{where}: {kind} [{a}, {b}, {step}] needs finite numbers")
        return []
    if kind == "range":
        if step <= 0 or b < a:
            errors.append(f"{where}: range [{a}, {b}, {step}] needs step > 0 and stop >= start")
            return []
        n = math.floor((b - a) / step + 1e-9) + 1
    else:
        if a <= 0 or step <= 1 or b < a:
            errors.append(
                f"{where}: geometric [{a}, {b}, {step}] needs start > 0, factor > 1, stop >= start"
            )
            return []
        n = math.floor(math.log(b / a) / math.log(step) + 1e-9) + 1
    if n > MAX_AXIS_VALUES:
        errors.append(f"{where}: {n:,} values; allowed: at most {MAX_AXIS_VALUES:,} per axis")
        return []
    values = (
        [a + i * step for i in range(n)] if kind == "range" else [a * step**i for i in range(n)]
    )
    if all(isinstance(v, int) for v in (a, b, step)):
        return [round(v) for v in values]
    return [float(v) for v in values]


def _check_path(path: str, where: str, errors: list[str]) -> bool:
    """Whether ``path`` can name a field of a scenario (walks the pydantic models)."""
    model: Any = Scenario
    parts = path.split(".")
    if parts[0] == "faults":
        errors.append(
            f"{where}: sweep points simulate the step only, not the faults section; run "
            "commwall faults ... for fault studies"
        )
        return False
    for depth, part in enumerate(parts):
        fields = getattr(model, "model_fields", None)
        if fields is None:  # a free-form mapping (overrides, empirical lists): anything goes
            return True
        if part not in fields:
            here = ".".join(parts[:depth]) or "the scenario"
            errors.append(
                f"{where}: {part!r} is not a field of {here}; allowed: {', '.join(fields)}"
            )
            return False
        model = _model_of(fields[part].annotation)
        if model is None and depth < len(parts) - 1:
            errors.append(f"{where}: {'.'.join(parts[: depth + 1])} is a value, not a section")
            return False
    return True


def _model_of(annotation: Any) -> Any:
    """The pydantic model inside ``annotation`` (Optional/Annotated unwrapped), a dict marker
    for mappings, or None for plain values."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _model_of(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        for arg in typing.get_args(annotation):
            found = _model_of(arg)
            if found is not None:
                return found
        return None
    if origin is dict:
        return dict  # no model_fields: anything below is accepted
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None


def _set(config: dict[str, Any], path: str, value: Any) -> None:
    """Set the dotted ``path`` of ``config`` to ``value``, creating sections on the way."""
    parts = path.split(".")
    node = config
    for part in parts[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = {}
            node[part] = child
        node = child
    if value is None:  # null: back to the field's default
        node.pop(parts[-1], None)
    else:
        node[parts[-1]] = value
