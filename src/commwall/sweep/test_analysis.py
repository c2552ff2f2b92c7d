"""Design-space analysis: fronts and layers against the definition, main effects on a grid whose
answer is known, the best design under constraints, and a small real sweep end to end."""

from __future__ import annotations

import copy
import doctest
import itertools
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from commwall.sweep import analysis
from commwall.sweep.analysis import (
    AnalysisError,
    axis_columns,
    best,
    dominates,
    pareto_front,
    pareto_ranks,
    parse_objectives,
    select,
    sensitivity,
    sweep_axes,
)
from commwall.sweep.expr import ExprError

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "llama3-8b-ddp-pcie.yaml"


def _recs(points: list[tuple[float, ...]], names: str = "abc") -> list[dict[str, Any]]:
    return [
        {"status": "ok", "index": i, **dict(zip(names, p, strict=False))}
        for i, p in enumerate(points)
    ]


def _brute_ranks(recs: list[dict[str, Any]], obj: list[analysis.Objective]) -> list[int]:
    """Layers by repeated peeling with the O(n²) definition."""
    left, rank, layer = set(range(len(recs))), [0] * len(recs), 0
    while left:
        front = {i for i in left if not any(dominates(recs[j], recs[i], obj) for j in left)}
        for i in front:
            rank[i] = layer
        left -= front
        layer += 1
    return rank


def test_doctests() -> None:
    assert doctest.testmod(analysis).failed == 0


_values = st.integers(0, 4).map(float)  # few values: many ties and duplicates


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 4), st.data())
def test_front_and_layers_match_the_definition(k: int, data: st.DataObject) -> None:
    points = data.draw(st.lists(st.tuples(*[_values] * k), max_size=40))
    goals = data.draw(st.lists(st.sampled_from(["min", "max"]), min_size=k, max_size=k))
    obj: list[analysis.Objective] = [(n, g) for n, g in zip("abcd", goals, strict=False)]
    recs = _recs(points, "abcd")
    expected = _brute_ranks(recs, obj)
    assert pareto_ranks(recs, obj) == expected
    front = pareto_front(recs, obj)
    assert [r["index"] for r in front] == [i for i, r in enumerate(expected) if r == 0]


def test_front_keeps_duplicates_skips_bad_points_and_keeps_order() -> None:
    recs = _recs([(2, 2), (1, 3), (2, 2), (3, 1), (3, 3)], "tc")
    recs += [
        {"status": "invalid", "index": 5, "t": 0.0, "c": 0.0},  # would dominate all: not ok
        {"status": "ok", "index": 6, "t": None, "c": 0.0},  # missing: not comparable
        {"status": "ok", "index": 7, "t": float("nan"), "c": 0.0},
    ]
    obj = parse_objectives("t:min,c")
    assert [r["index"] for r in pareto_front(recs, obj)] == [0, 1, 2, 3]
    assert pareto_ranks(recs, obj) == [0, 0, 0, 0, 1, None, None, None]
    assert pareto_front([], obj) == [] and pareto_ranks([], obj) == []


def test_maximising_and_objective_parsing() -> None:
    assert parse_objectives("step_time_s, tokens_per_s , power_w:MAX") == [
        ("step_time_s", "min"),
        ("tokens_per_s", "max"),
        ("power_w", "max"),
    ]
    recs = [{"status": "ok", "index": i, "t": t, "tokens_per_s": y}
            for i, (t, y) in enumerate([(1, 10), (2, 30), (3, 20)])]  # fmt: skip
    front = pareto_front(recs, parse_objectives("t,tokens_per_s"))
    assert [r["index"] for r in front] == [0, 1]
    for bad, message in (
        ("t:fast", "goal 'fast'; allowed: min, max"),
        ("t,,c", "empty metric name"),
    ):
        with pytest.raises(AnalysisError, match=message):
            parse_objectives(bad)


def test_bad_objectives_name_the_allowed_columns() -> None:
    recs = [{"status": "ok", "index": 0, "t": 1.0, "topology": "fat-tree", "config": "{}"}]
    with pytest.raises(AnalysisError, match=r"objective 'x' is not a numeric .* allowed: t$"):
        pareto_front(recs, [("x", "min")])
    with pytest.raises(AnalysisError, match="objective 'topology'"):
        pareto_front(recs, [("topology", "min")])
    with pytest.raises(AnalysisError, match="no objectives"):
        pareto_front(recs, [])


def _grid() -> list[dict[str, Any]]:
    """y = 10·[a=2] + 3·[b='x'] + c on a full grid; one invalid point that must not count."""
    recs: list[dict[str, Any]] = []
    for i, (a, b, c) in enumerate(itertools.product((1, 2), ("x", "y"), (0.0, 1.0, 2.0))):
        y = 10.0 * (a == 2) + 3.0 * (b == "x") + c
        recs.append({"status": "ok", "index": i, "cluster.a": a, "job.b": b,
                     "simulation.c": c, "y": y, "z": -y, "bottleneck": "text"})  # fmt: skip
    recs.append({"status": "error", "index": 99, "cluster.a": 1, "job.b": "x", "y": 1e9})
    return recs


def test_sensitivity_recovers_the_main_effects() -> None:
    effects = sensitivity(_grid(), "y")
    assert [e.axis for e in effects] == ["cluster.a", "job.b", "simulation.c"]
    a, b, c = effects
    assert a.spread == pytest.approx(10.0) and b.spread == pytest.approx(3.0)
    assert c.spread == pytest.approx(2.0)
    assert a.best_value == 1 and b.best_value == "y" and c.best_value == 0.0
    assert a.mu_star == pytest.approx(10.0) and a.pairs == 6
    assert c.mu_star == pytest.approx(1.0) and c.pairs == 8  # 4 groups x 2 neighbouring steps
    lv = a.levels[1]
    assert (lv.value, lv.n, lv.min, lv.max) == (2, 6, 10.0, 15.0)
    assert lv.mean == pytest.approx(12.5) and lv.median == pytest.approx(12.5)
    overall = sum(r["y"] for r in _grid()[:-1]) / 12
    assert a.relative_spread == pytest.approx(10.0 / overall)
    # maximising flips the best value, not the ranking; explicit axes restrict
    assert sensitivity(_grid(), "z")[0].best_value == 2  # z = -y: lowest z at a = 2
    assert sensitivity(_grid(), "y", goal="max")[0].best_value == 2
    assert sensitivity(_grid(), "z", goal="max")[0].best_value == 1
    only = sensitivity(_grid(), "y", axes=["simulation.c"])
    assert [e.axis for e in only] == ["simulation.c"] and only[0].to_dict()["spread"] == 2.0


def test_sensitivity_bad_input() -> None:
    with pytest.raises(AnalysisError, match="metric 'bottleneck' is not a numeric column"):
        sensitivity(_grid(), "bottleneck")
    with pytest.raises(AnalysisError, match=r"axis 'cluster\.nope' is not a column"):
        sensitivity(_grid(), "y", axes=["cluster.nope"])
    with pytest.raises(AnalysisError, match="no axes"):
        sensitivity([{"status": "ok", "y": 1.0}], "y")
    with pytest.raises(AnalysisError, match=r"allowed: \(none: no ok points\)"):
        sensitivity([{"status": "error", "y": 1.0}], "y")


def test_best_under_constraints() -> None:
    recs = _grid()
    top = best(recs, "y", where="`cluster.a` == 2 and job.b in ('y',)", top=2)
    assert [(r["cluster.a"], r["job.b"], r["y"]) for r in top] == [(2, "y", 10.0), (2, "y", 11.0)]
    assert best(recs, "y", goal="max")[0]["y"] == 15.0  # the error point's 1e9 does not count
    assert best(recs, "y", where="y > 100") == []
    assert len(select(recs, None)) == 12 and len(select(recs, " ")) == 12
    with pytest.raises(ExprError, match=r"unknown column 'cluster\.b'"):
        best(recs, "y", where="cluster.b > 1")
    with pytest.raises(AnalysisError, match="top 0"):
        best(recs, "y", top=0)
    with pytest.raises(AnalysisError, match="goal 'low'"):
        best(recs, "y", goal="low")  # type: ignore[arg-type]


def test_axis_columns_and_sweep_yaml(tmp_path: Path) -> None:
    recs = _grid()
    assert axis_columns(recs) == ["cluster.a", "job.b", "simulation.c"]
    assert sweep_axes(tmp_path) is None
    (tmp_path / "sweep.yaml").write_text("axes:\n  cluster.a: [1, 2]\n  job.b: [x, y]\n")
    assert sweep_axes(tmp_path) == ["cluster.a", "job.b"]
    (tmp_path / "sweep.yaml").write_text("axes: [cluster.a]\n")
    assert sweep_axes(tmp_path) == ["cluster.a"]
    (tmp_path / "sweep.yaml").write_text("base: x.yaml\n")
    assert sweep_axes(tmp_path) is None
    (tmp_path / "sweep.yaml").write_text("axes: [\n")
    with pytest.raises(AnalysisError, match="not valid YAML"):
        sweep_axes(tmp_path)


def test_ten_thousand_points_within_a_second() -> None:
    rng = np.random.default_rng(1)
    recs = [
        {"status": "ok", "cluster.a": int(a), "job.b": float(b), "t": float(t), "c": float(c),
         "p": float(p)}
        for a, b, t, c, p in zip(rng.integers(0, 5, 10_000), rng.choice([1.0, 2.0, 4.0], 10_000),
                                 *rng.random((3, 10_000)), strict=True)
    ]  # fmt: skip
    for objectives in ("t,c", "t,c,p"):
        start = time.perf_counter()
        pareto_front(recs, parse_objectives(objectives))
        sensitivity(recs, "t")
        best(recs, "t", where="p < 0.5 and `cluster.a` in (1, 2)")
        assert time.perf_counter() - start < 2.0  # ~0.2 s on a laptop; slack for CI


def real_sweep(folder: Path) -> Path:
    """A 13-point sweep of the PCIe Llama-3-8B example: oversubscription × NICs per node ×
    topology, plus one invalid point (its DP does not match the GPUs)."""
    from commwall.scenario import load_scenario
    from commwall.sweep.evaluate import evaluate_point
    from commwall.sweep.store import write_point

    base = load_scenario(EXAMPLE).model_dump(mode="json")
    grid = itertools.product((1.0, 2.0, 4.0), (1, 2), ("fat-tree", "rail-optimized"))
    for i, (over, nics, kind) in enumerate(grid):
        config = copy.deepcopy(base)
        config["cluster"]["topology"].update(oversubscription=over, kind=kind)
        config["cluster"]["nics_per_node"] = nics
        axes = {"cluster.topology.oversubscription": over, "cluster.nics_per_node": nics,
                "cluster.topology.kind": kind}  # fmt: skip
        write_point(folder, evaluate_point(i, config, axes))
    bad = copy.deepcopy(base)
    bad["job"]["dp"] = 3
    axes = {"cluster.topology.oversubscription": 1.0, "cluster.nics_per_node": 1,
            "cluster.topology.kind": "fat-tree"}  # fmt: skip
    write_point(folder, evaluate_point(12, bad, axes))
    return folder


def test_on_a_real_sweep(tmp_path: Path) -> None:
    from commwall.sweep.store import read_points

    recs = read_points(real_sweep(tmp_path))
    assert len(recs) == 13 and recs[-1]["status"] == "invalid"
    obj = parse_objectives("step_time_s,network_cost_usd")
    front = pareto_front(recs, obj)
    assert front and all(r["status"] == "ok" for r in front)
    for r in recs[:-1]:  # every ok point is on the front or dominated by a front point
        assert r in front or any(dominates(f, r, obj) for f in front)
    effects = sensitivity(recs, "step_time_s")
    assert effects[0].axis == "cluster.nics_per_node" and effects[0].best_value == 2
    cheap = best(recs, "step_time_s", where="network_cost_usd < 300e3 and fits_in_memory")
    assert cheap and cheap[0]["network_cost_usd"] < 300e3
