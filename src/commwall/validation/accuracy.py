"""How close the kernel model has come to published runs like a user's, regime by regime.

``commwall run`` prints one number per step; this module says how far to trust it. A *regime* is
the GPU family (:data:`FAMILIES`), the kind of layers (dense; mixture-of-experts marked
sync-free, ``job.moe_sync_free``; or mixture-of-experts waiting on the host for each layer's
token counts) and the job's scale (the report's :data:`~commwall.validation.training.SCALES`).
For each regime the bundled table ``training_accuracy.json`` holds the model's step-time errors
(predicted / measured − 1) on the published runs of docs/validation-training.md: how many, their
median, the median of their magnitudes, how many lie within 10 %, and the worst. Cells of
fewer than :data:`MIN_RUNS` runs are not quoted on their own: the lookup widens to every scale
of the family, then to every family at that scale, then to every run of that kind of layers
(:func:`accuracy_for`), and says which it quotes.

The table is data, not a correction: no prediction reads it (a correction would be fitted to the
validation runs). :func:`accuracy_table` builds it from ``commwall validate --training --json``;
a slow test (``test_training.py``) recomputes the whole validation and fails when the bundled
file drifts from it. Regenerate it with ``python -m commwall.validation.accuracy``.
"""

from __future__ import annotations

import json
import statistics
import sys
from dataclasses import asdict, dataclass
from importlib import resources
from typing import Any, Final

from commwall.validation.training import SCALES, ValidationDataError, load_training_runs

__all__ = [
    "ALL",
    "DATA_FILE",
    "FAMILIES",
    "MIN_RUNS",
    "WELL_MET",
    "RegimeAccuracy",
    "accuracy_for",
    "accuracy_note",
    "accuracy_table",
    "family_of",
    "layers_of",
    "load_accuracy",
    "quoted_cell",
    "regime_markdown",
    "scale_of",
]

#: The GPU families the validation table has runs of, by catalog GPU name: the Grace-Blackwell
#: racks (one NVLink domain of up to 72) apart from the 8-GPU HGX/DGX Blackwell nodes, whose
#: expert-parallel all-to-alls leave the node sooner.
FAMILIES: Final[dict[str, str]] = {
    "a100-sxm": "A100",
    "h100-sxm": "H100/H200",
    "h200": "H100/H200",
    "b200": "B200/B300",
    "b300": "B200/B300",
    "gb200": "GB200/GB300",
    "gb300": "GB200/GB300",
}
#: The label of a widened cell: every family, or every scale.
ALL: Final = "all"
#: Fewest runs a cell needs to be quoted on its own (fewer: :func:`accuracy_for` widens it).
MIN_RUNS: Final = 5
#: Share of a cell's runs within 10 % below which the note asks for a measured step.
WELL_MET: Final = 0.8
#: The bundled table, beside this module.
DATA_FILE: Final = "training_accuracy.json"
#: The kinds of layers, in the order the table lists them.
LAYERS: Final = ("dense", "MoE, sync-free", "MoE, host-synced")


@dataclass(frozen=True)
class RegimeAccuracy:
    """The model's step-time errors on the published runs of one regime."""

    family: str  #: a :data:`FAMILIES` label, or :data:`ALL`
    layers: str  #: one of :data:`LAYERS`
    scale: str  #: a :data:`~commwall.validation.training.SCALES` label, or :data:`ALL`
    runs: int
    median: float  #: median of predicted / measured − 1 (negative: the model is faster)
    median_abs: float  #: median of its magnitude
    within_10: int  #: runs whose magnitude is at most 10 %
    worst: float  #: the error of largest magnitude (signed)

    def describe(self) -> str:
        """What runs these are, in words: "dense H100/H200 runs of 65-512 GPUs"."""
        what = "dense" if self.layers == "dense" else f"{self.layers.split(', ')[1]} MoE"
        family = "" if self.family == ALL else f" {self.family}"
        scale = "" if self.scale == ALL else f" of {self.scale}"
        return f"{what}{family} runs{scale}"

    def note(self) -> str:
        """The sentence ``commwall run`` prints under a step of this regime."""
        side = "faster" if self.median < 0 else "slower"
        note = (
            f"on {self.runs} published {self.describe()} the predicted step was "
            f"{abs(self.median):.0%} {side} than measured on the median (|error| median "
            f"{self.median_abs:.0%}, within 10% on {self.within_10}, worst {self.worst:+.0%}; "
            "docs/validation-training.md)"
        )
        if self.within_10 < WELL_MET * self.runs:
            note += (
                ": measure one step and fit job.moe_host_wait with `commwall calibrate step "
                "--fit moe_host_wait`"
                if self.layers == "MoE, host-synced"
                else ": measure one step and fit job.compute_scale with `commwall calibrate step`"
            )
        return note


def family_of(gpu: str) -> str | None:
    """The :data:`FAMILIES` label of catalog GPU ``gpu``, or None if the table has none."""
    return FAMILIES.get(gpu)


def layers_of(moe: bool, sync_free: bool) -> str:
    """The kind of layers of a job with experts (``moe``) or not, marked sync-free or not."""
    if not moe:
        return "dense"
    return "MoE, sync-free" if sync_free else "MoE, host-synced"


def scale_of(gpus: int) -> str:
    """The :data:`~commwall.validation.training.SCALES` label of a job on ``gpus`` GPUs."""
    return next(label for most, label in SCALES if gpus <= most)


def _widenings(family: str, layers: str, scale: str) -> tuple[tuple[str, str, str], ...]:
    """A regime's cell and the widened ones that hold it, narrowest first."""
    return (family, layers, scale), (family, layers, ALL), (ALL, layers, scale), (ALL, layers, ALL)


def _cell(family: str, layers: str, scale: str, errors: list[float]) -> RegimeAccuracy:
    magnitudes = [abs(e) for e in errors]
    worst: float = max(errors, key=abs)
    return RegimeAccuracy(
        family=family,
        layers=layers,
        scale=scale,
        runs=len(errors),
        median=round(statistics.median(errors), 4),
        median_abs=round(statistics.median(magnitudes), 4),
        within_10=sum(m <= 0.10 for m in magnitudes),
        worst=round(worst, 4),
    )


def accuracy_table(report: dict[str, Any]) -> list[RegimeAccuracy]:
    """Every regime's cell, and the widened ones, from a training validation report
    (:func:`~commwall.validation.training.training_report` or ``commwall validate --training
    --json``), in a fixed order: by kind of layers, family and scale."""
    from commwall.catalog import load_catalog

    catalog = load_catalog()
    runs = {r.id: r for r in load_training_runs()}
    keyed: dict[tuple[str, str, str], list[float]] = {}
    for row in report["runs"]:
        run = runs.get(row["id"])
        if run is None:
            raise ValidationDataError(f"the report's run {row['id']!r} is not in the table")
        family = family_of(catalog.preset(run.preset).gpu)
        if family is None:
            raise ValidationDataError(
                f"{run.id}: its GPU ({catalog.preset(run.preset).gpu}) has no family in "
                "commwall.validation.accuracy.FAMILIES"
            )
        layers = layers_of(run.spec.is_moe, bool(run.job.get("moe_sync_free")))
        scale = scale_of(run.n_gpus)
        for key in _widenings(family, layers, scale):
            keyed.setdefault(key, []).append(float(row["error"]))
    families = [*dict.fromkeys(FAMILIES.values()), ALL]
    scales = [label for _, label in SCALES] + [ALL]
    return [
        _cell(family, layers, scale, keyed[(family, layers, scale)])
        for layers in LAYERS
        for family in families
        for scale in scales
        if (family, layers, scale) in keyed
    ]


def load_accuracy() -> tuple[RegimeAccuracy, ...]:
    """The bundled table (:data:`DATA_FILE`)."""
    text = resources.files("commwall.validation").joinpath(DATA_FILE).read_text("utf-8")
    data = json.loads(text)
    return tuple(RegimeAccuracy(**cell) for cell in data["regimes"])


def accuracy_for(gpu: str, *, moe: bool, sync_free: bool, gpus: int) -> RegimeAccuracy | None:
    """The narrowest cell of at least :data:`MIN_RUNS` runs for a job of ``gpus`` GPUs of
    catalog GPU ``gpu``: its family, layers and scale; else its family at every scale; else
    every family at its scale; else every run of its layers. None when the table has no run of
    its family and layers (it then says nothing of a GPU it has never been checked on)."""
    family = family_of(gpu)
    if family is None:
        return None
    layers, scale = layers_of(moe, sync_free), scale_of(gpus)
    cells = {(c.family, c.layers, c.scale): c for c in load_accuracy()}
    if (family, layers, ALL) not in cells:
        return None
    for key in _widenings(family, layers, scale):
        cell = cells.get(key)
        if cell is not None and cell.runs >= MIN_RUNS:
            return cell
    return None


def quoted_cell(
    gpu: str,
    *,
    moe: bool,
    sync_free: bool,
    gpus: int,
    kernel_model: bool,
    compute_scale: float,
    measured_host_wait: bool = False,
) -> RegimeAccuracy | None:
    """The cell ``commwall run`` quotes under a step (:func:`accuracy_for`), or None: none when
    the job does not use the kernel model or carries a measured ``compute_scale`` or
    ``moe_host_wait`` (the table does not speak for those), or is of a GPU family the table has
    no runs of."""
    if not kernel_model or compute_scale != 1.0 or measured_host_wait:
        return None
    return accuracy_for(gpu, moe=moe, sync_free=sync_free, gpus=gpus)


def accuracy_note(
    gpu: str, *, moe: bool, sync_free: bool, gpus: int, kernel_model: bool, compute_scale: float
) -> str | None:
    """The sentence ``commwall run`` prints under a step (:meth:`RegimeAccuracy.note` of
    :func:`quoted_cell`), or None."""
    cell = quoted_cell(
        gpu, moe=moe, sync_free=sync_free, gpus=gpus, kernel_model=kernel_model,
        compute_scale=compute_scale,
    )  # fmt: skip
    return None if cell is None else cell.note()


def regime_markdown(report: dict[str, Any]) -> list[str]:
    """The per-regime section of docs/validation-training.md (the ``regimes`` of
    :func:`~commwall.validation.training.training_markdown`): every cell of
    :func:`accuracy_table`."""
    lines = [
        "",
        "## By regime: what `commwall run` quotes",
        "",
        "Under a step `commwall run` quotes the runs of the job's regime: its GPU family, its",
        "layers (dense; MoE marked sync-free, `job.moe_sync_free`; MoE waiting on the host for",
        f"each layer's token counts) and its scale, widened (`all`) where a cell has fewer than "
        f"{MIN_RUNS}",
        "runs (`commwall.validation.accuracy`, `training_accuracy.json`).",
        "",
        "| layers | GPUs | scale | runs | median error | median abs | within 10 % | worst |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {c.layers} | {c.family} | {c.scale} | {c.runs} | {c.median:+.1%} | "
        f"{c.median_abs:.1%} | {c.within_10} | {c.worst:+.1%} |"
        for c in accuracy_table(report)
    ]
    return lines


def main() -> None:
    """Print the bundled table recomputed from the whole validation (about 10 minutes on two
    cores, on :func:`~commwall.validation.training.default_jobs` worker processes)."""
    from commwall.validation.training import default_jobs, training_report

    cells = accuracy_table(training_report(workers=default_jobs()))
    sys.stdout.write(json.dumps({"regimes": [asdict(c) for c in cells]}, indent=1) + "\n")


if __name__ == "__main__":
    main()
