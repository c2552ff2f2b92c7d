"""The regime accuracy `commwall run` quotes: the table built from a report, the narrowest cell
of enough runs, and silence where the table has nothing to say."""

from __future__ import annotations

from typing import Any

import pytest

from commwall.validation import accuracy
from commwall.validation.accuracy import (
    ALL,
    FAMILIES,
    MIN_RUNS,
    RegimeAccuracy,
    accuracy_for,
    accuracy_note,
    accuracy_table,
    layers_of,
    load_accuracy,
    quoted_cell,
    regime_markdown,
    scale_of,
)
from commwall.validation.training import SCALES, ValidationDataError, load_training_runs


def _cell(family: str, layers: str, scale: str, runs: int, **kw: float) -> RegimeAccuracy:
    values = {"median": -0.05, "median_abs": 0.06, "within_10": runs, "worst": -0.12, **kw}
    return RegimeAccuracy(family, layers, scale, runs, **values)  # type: ignore[arg-type]


def test_the_regime_of_a_job() -> None:
    assert layers_of(False, False) == "dense" and layers_of(False, True) == "dense"
    assert layers_of(True, True) == "MoE, sync-free"
    assert layers_of(True, False) == "MoE, host-synced"
    assert [scale_of(n) for n in (1, 8, 9, 64, 65, 512, 513, 4096, 4097)] == [
        "1-8 GPUs", "1-8 GPUs", "9-64 GPUs", "9-64 GPUs", "65-512 GPUs", "65-512 GPUs",
        "513-4,096 GPUs", "513-4,096 GPUs", "> 4,096 GPUs",
    ]  # fmt: skip
    assert FAMILIES["h200"] == FAMILIES["h100-sxm"] and FAMILIES["b200"] != FAMILIES["gb200"]


def test_the_table_counts_each_run_in_its_cell_and_the_widened_ones() -> None:
    """Three runs: a dense DGX B200 one and two dense H100 ones at two scales."""
    by_preset: dict[str, list[str]] = {}
    for run in load_training_runs():
        if run.skip is None and not run.spec.is_moe:
            by_preset.setdefault(run.preset, []).append(run.id)
    b200, (h1, h2) = by_preset["dgx-b200"][0], by_preset["dgx-h100"][:2]
    report: dict[str, Any] = {"runs": [
        {"id": b200, "error": -0.2}, {"id": h1, "error": 0.04}, {"id": h2, "error": -0.08},
    ]}  # fmt: skip
    cells = {(c.family, c.layers, c.scale): c for c in accuracy_table(report)}
    h100 = cells[("H100/H200", "dense", ALL)]
    assert (h100.runs, h100.within_10, h100.worst) == (2, 2, -0.08)
    assert h100.median == pytest.approx(-0.02) and h100.median_abs == pytest.approx(0.06)
    every = cells[(ALL, "dense", ALL)]
    assert (every.runs, every.within_10, every.worst, every.median) == (3, 2, -0.2, -0.08)
    assert all(c.layers == "dense" for c in cells.values())
    page = regime_markdown(report)
    assert page[1] == "## By regime: what `commwall run` quotes"
    rows = [line for line in page if line.startswith("| dense |")]
    assert (
        len(rows) == len(cells)
        and "| dense | H100/H200 | all | 2 | -2.0% | 6.0% | 2 | -8.0% |" in rows
    )
    with pytest.raises(ValidationDataError, match="not in the table"):
        accuracy_table({"runs": [{"id": "no-such-run", "error": 0.0}]})


def test_the_narrowest_cell_of_enough_runs_is_quoted(monkeypatch: pytest.MonkeyPatch) -> None:
    table = (
        _cell("H100/H200", "dense", "65-512 GPUs", MIN_RUNS),
        _cell("H100/H200", "dense", "9-64 GPUs", MIN_RUNS - 1),
        _cell("H100/H200", "dense", ALL, 20),
        _cell(ALL, "dense", "1-8 GPUs", 30),
        _cell(ALL, "dense", ALL, 60),
        _cell("A100", "dense", ALL, 3),
    )
    monkeypatch.setattr(accuracy, "load_accuracy", lambda: table)
    args = {"moe": False, "sync_free": False}
    assert accuracy_for("h100-sxm", gpus=256, **args) == table[0]
    assert accuracy_for("h200", gpus=32, **args) == table[2]  # 4 runs at its scale: widened
    assert accuracy_for("a100-sxm", gpus=8, **args) == table[3]  # 3 A100 runs: every family
    assert accuracy_for("a100-sxm", gpus=20000, **args) == table[4]
    assert accuracy_for("h100-sxm", gpus=64, moe=True, sync_free=False) is None  # no MoE run
    assert accuracy_for("mi300x", gpus=8, **args) is None  # a family never checked


def test_the_note_words_the_cell_and_asks_for_a_step_where_runs_miss(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    table = (
        _cell("GB200/GB300", "MoE, host-synced", ALL, 10, within_10=5, median=-0.1, worst=-0.4),
        _cell("GB200/GB300", "dense", ALL, 10, within_10=9, median=0.02),
    )
    monkeypatch.setattr(accuracy, "load_accuracy", lambda: table)
    base = {"gpus": 72, "kernel_model": True, "compute_scale": 1.0}
    moe = accuracy_note("gb300", moe=True, sync_free=False, **base)  # type: ignore[arg-type]
    assert moe is not None and moe.startswith(
        "on 10 published host-synced MoE GB200/GB300 runs the predicted step was 10% faster"
    )
    assert "within 10% on 5, worst -40%" in moe
    assert moe.endswith("fit job.moe_host_wait with `commwall calibrate step --fit moe_host_wait`")
    dense = accuracy_note("gb200", moe=False, sync_free=False, **base)  # type: ignore[arg-type]
    assert dense is not None and "2% slower" in dense and "calibrate" not in dense
    for change in ({"kernel_model": False}, {"compute_scale": 1.2}):
        args = {**base, **change}
        assert accuracy_note("gb200", moe=False, sync_free=False, **args) is None  # type: ignore[arg-type]
    measured = quoted_cell("gb300", moe=True, sync_free=False, measured_host_wait=True, **base)  # type: ignore[arg-type]
    assert measured is None  # a measured host wait: the table does not speak for it


def test_the_bundled_table_is_whole_and_consistent() -> None:
    """Every family has dense runs; each cell's counts agree with each other; the widened
    cells hold at least the runs of the cells inside them."""
    cells = load_accuracy()
    keyed = {(c.family, c.layers, c.scale): c for c in cells}
    for family in set(FAMILIES.values()):
        assert keyed[(family, "dense", ALL)].runs >= MIN_RUNS, family
    for c in cells:
        assert 0 <= c.within_10 <= c.runs and abs(c.worst) >= c.median_abs >= 0
        assert c.scale in {label for _, label in SCALES} | {ALL}
        assert keyed[(ALL, c.layers, ALL)].runs >= c.runs
    total = sum(c.runs for c in cells if c.family == ALL and c.scale == ALL)
    assert total == sum(1 for r in load_training_runs() if r.skip is None)
