"""Fit the collective model's link classes to measured collectives (``commwall calibrate``).

The analytic collective model predicts every call from per-class pieces — per-step latencies
and per-rank bandwidths of the scale-up class (NVLink or PCIe) and of the network — through the
launch plan and pipeline NCCL runs (:mod:`commwall.collectives.nccl`, ``pipeline``), so a
calibration fits the times commwall itself predicts, not only ``tuning.cc``'s ``lat + S/bw``.
Calibration corrects each class the measurements exercise with two numbers
(:class:`~commwall.scenario.LinkCalibration`):

* ``bandwidth_factor`` ``f_c`` multiplies the class's modelled bandwidth;
* ``latency`` ``λ_c`` is added to every step over the class (never below 0 in total).

Let ``T̂_i(θ)`` be the model's time for measured point ``i`` (the NCCL-like tuner's choice, or
the algorithm/protocol the caller forces, as ``NCCL_ALGO``/``NCCL_PROTO`` do), ``T_i`` the
measured time and ``θ = (ln f_c, λ_c)``. The fit minimises, with SciPy's bounded trust-region
least squares (Branch, Coleman & Li 1999, ``scipy.optimize.least_squares``)::

    Σ_i (ln T̂_i(θ) − ln T_i)²  +  w² Σ_c ((ln f_c)² + (λ_c / 10 µs)²)

Relative (log) residuals weigh a 1 KiB call and a 1 GiB call alike; the small ridge term
(``w = 0.01``) keeps a class the data cannot see (e.g. NVLink when the network bounds every
size) at the model's own values instead of wandering. A class is fitted only if some measured
communicator uses it: scale-up with several ranks per domain, the network with several domains.

Held-out check: every ``holdout``-th size of each run (the 2nd, then every ``holdout``-th) is
left out of the fit and only predicted; the report gives the per-size error of both sets. The
calibration returned is the one fitted on the training sizes, so the held-out error printed is
that of the calibration written.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field, replace
from typing import Any, Final

import numpy as np
from scipy.optimize import least_squares  # type: ignore[import-untyped]  # no stubs in the venv

from commwall.cluster import Cluster
from commwall.collectives import Unsupported, choose
from commwall.collectives.constants import Proto
from commwall.collectives.nccl_env import apply_nccl_env
from commwall.collectives.ops import Op
from commwall.errors import CommwallError
from commwall.scenario import CalibrationSpec, LinkCalibration

__all__ = [
    "CLASSES",
    "CalibrationError",
    "Fit",
    "FitPoint",
    "Measured",
    "fit_calibration",
    "predict",
]

#: Link classes a calibration can correct.
CLASSES: Final = ("nvlink", "pcie", "network")
#: Ridge weight pulling unidentified parameters back to the model (module docstring).
RIDGE: Final = 0.01
#: Latency scale of the ridge term, seconds.
LATENCY_SCALE: Final = 10e-6
_FACTOR_BOUNDS: Final = (0.01, 100.0)
_LATENCY_BOUNDS: Final = (-1e-3, 1.0)


class CalibrationError(CommwallError, ValueError):
    """The measurements cannot be fitted (nothing measured, nothing the model can run)."""


@dataclass(frozen=True)
class Measured:
    """One measured size: what ran, on which communicator, how long it took."""

    source: str
    op: Op
    nbytes: float
    seconds: float
    cluster: Cluster
    ranks_per_node: int
    #: The ``NCCL_*`` settings the run used (a log's ``set by environment`` lines): the model
    #: prices it under them (:func:`~commwall.collectives.nccl_env.apply_nccl_env`).
    env: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class FitPoint:
    """A measured size with the model's time before and after calibration."""

    point: Measured
    held_out: bool
    before: float
    after: float
    algo: str

    @property
    def error_before(self) -> float:
        """Relative error of the uncalibrated model (predicted / measured − 1)."""
        return self.before / self.point.seconds - 1.0

    @property
    def error(self) -> float:
        """Relative error of the calibrated model (predicted / measured − 1)."""
        return self.after / self.point.seconds - 1.0


@dataclass(frozen=True)
class Fit:
    """The fitted calibration and how well it predicts."""

    calibration: CalibrationSpec
    classes: tuple[str, ...]
    points: tuple[FitPoint, ...]
    algo: str | None = None
    proto: str | None = None
    notes: tuple[str, ...] = field(default=())

    def _errors(self, held_out: bool, before: bool = False) -> list[float]:
        return [
            abs(p.error_before if before else p.error)
            for p in self.points
            if p.held_out == held_out
        ]

    def summary(self) -> dict[str, float | None]:
        """Median and max |error| of the training and held-out sizes, before and after."""
        out: dict[str, float | None] = {}
        for name, held in (("fit", False), ("held_out", True)):
            for when, before in (("before", True), ("after", False)):
                errs = self._errors(held, before)
                out[f"{name}_median_{when}"] = statistics.median(errs) if errs else None
                out[f"{name}_max_{when}"] = max(errs) if errs else None
        return out

    def to_dict(self) -> dict[str, Any]:
        """The fit as plain data (JSON)."""
        return {
            "calibration": self.calibration.model_dump(exclude_none=True),
            "classes": list(self.classes),
            "algo": self.algo,
            "proto": self.proto,
            "summary": self.summary(),
            "notes": list(self.notes),
            "points": [
                {
                    "source": p.point.source,
                    "op": p.point.op.value,
                    "size": p.point.nbytes,
                    "ranks": p.point.cluster.n_nodes * p.point.ranks_per_node,
                    "measured_us": p.point.seconds * 1e6,
                    "before_us": p.before * 1e6,
                    "after_us": p.after * 1e6,
                    "error_before": p.error_before,
                    "error": p.error,
                    "held_out": p.held_out,
                    "algo": p.algo,
                }
                for p in self.points
            ],
        }


def intra_class(cluster: Cluster) -> str:
    """The calibration class of ``cluster``'s scale-up steps: ``nvlink`` or ``pcie``."""
    return "nvlink" if cluster.scale_up == "nvlink" else "pcie"


def classes_seen(point: Measured) -> set[str]:
    """Link classes the communicator of ``point`` crosses."""
    fabric = point.cluster.world(point.ranks_per_node)
    seen = set()
    if fabric.ranks_per_domain > 1:
        seen.add(intra_class(point.cluster))
    if fabric.n_domains > 1:
        seen.add("network")
    return seen


def predict(
    point: Measured,
    calibration: CalibrationSpec,
    *,
    algo: str | None = None,
    proto: Proto | None = None,
) -> tuple[float, str]:
    """The model's time for ``point`` under ``calibration``, and the algorithm/protocol it used."""
    cluster = replace(point.cluster, calibration=calibration)
    fabric = cluster.world(point.ranks_per_node)
    chosen_algo = algo
    if point.env:  # the run's own settings; a forced algorithm or protocol wins over them
        fabric, env_algo, env_proto = apply_nccl_env(
            fabric, point.env, algo or "default", proto.value if proto else ""
        )
        chosen_algo, proto = env_algo, env_proto
    if chosen_algo is not None and point.op in (Op.ALLTOALL, Op.SENDRECV):
        chosen_algo = "direct"  # the only algorithm these operations have
    best = choose(point.op, point.nbytes, fabric, algo=chosen_algo, proto=proto).best
    return best.time, f"{best.algo}/{best.proto.value}"


def _spec(classes: tuple[str, ...], theta: np.ndarray[Any, Any], source: str) -> CalibrationSpec:
    fields: dict[str, Any] = {"source": source}
    for k, name in enumerate(classes):
        fields[name] = LinkCalibration(
            bandwidth_factor=float(math.exp(theta[2 * k])), latency=float(theta[2 * k + 1]) * 1e-6
        )
    return CalibrationSpec(**fields)


def fit_calibration(
    points: list[Measured],
    *,
    holdout: int = 3,
    algo: str | None = None,
    proto: Proto | None = None,
    source: str = "",
) -> Fit:
    """Fit per-class bandwidth factors and latencies to ``points`` (module docstring)."""
    usable = [p for p in points if p.nbytes > 0 and p.seconds > 0]
    if not usable:
        raise CalibrationError("no measured size above 0 bytes with a time above 0 to fit")
    if holdout and holdout < 2:
        raise CalibrationError(f"holdout: {holdout}; allowed: 0 (none) or 2 and more")
    held = _held_out(usable, holdout)
    training = [p for p, h in zip(usable, held, strict=True) if not h]
    classes = tuple(c for c in CLASSES if any(c in classes_seen(p) for p in usable))
    if not classes:
        raise CalibrationError(
            "the runs cross no link class (one rank each): calibration needs runs of 2 or "
            "more ranks"
        )
    notes: list[str] = []
    base = CalibrationSpec(source=source)
    for p in usable:
        try:
            predict(p, base, algo=algo, proto=proto)
        except Unsupported as e:
            raise CalibrationError(f"{p.source}: the model cannot run it: {e}") from None
    measured = np.log([p.seconds for p in training])

    def residuals(theta: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        spec = _spec(classes, theta, source)
        model = [predict(p, spec, algo=algo, proto=proto)[0] for p in training]
        ridge = [RIDGE * v for v in theta[0::2]]
        ridge += [RIDGE * v * 1e-6 / LATENCY_SCALE for v in theta[1::2]]
        return np.concatenate([np.log(np.maximum(model, 1e-12)) - measured, ridge])

    lower = np.tile([math.log(_FACTOR_BOUNDS[0]), _LATENCY_BOUNDS[0] * 1e6], len(classes))
    upper = np.tile([math.log(_FACTOR_BOUNDS[1]), _LATENCY_BOUNDS[1] * 1e6], len(classes))
    theta0 = _start(classes, training, algo, proto, source, lower, upper)
    result = least_squares(
        residuals, theta0, bounds=(lower, upper), x_scale=np.tile([1.0, 10.0], len(classes)),
        diff_step=1e-4, method="trf",
    )  # fmt: skip
    theta = result.x
    at_bound = np.isclose(theta, lower) | np.isclose(theta, upper)
    for k, name in enumerate(classes):
        if at_bound[2 * k] or at_bound[2 * k + 1]:
            notes.append(f"{name}: a fitted value sits at its bound; the model may not fit")
    spec = _spec(classes, theta, source)
    fitted = []
    for p, h in zip(usable, held, strict=True):
        before, _ = predict(p, base, algo=algo, proto=proto)
        after, used = predict(p, spec, algo=algo, proto=proto)
        fitted.append(FitPoint(p, h, before, after, used))
    return Fit(
        spec, classes, tuple(fitted), algo, None if proto is None else proto.value, tuple(notes)
    )


def _held_out(points: list[Measured], holdout: int) -> list[bool]:
    """Which points are held out: every ``holdout``-th size of each run, starting at its 2nd."""
    if not holdout:
        return [False] * len(points)
    flags, index, last = [], 0, None
    for p in points:
        run = p.source.rsplit(":", 1)[0], p.op, p.cluster.n_nodes, p.ranks_per_node
        index = index + 1 if run == last else 0
        last = run
        flags.append(index % holdout == 1)
    if all(flags):
        return [False] * len(points)
    return flags


def _start(
    classes: tuple[str, ...],
    training: list[Measured],
    algo: str | None,
    proto: Proto | None,
    source: str,
    lower: np.ndarray[Any, Any],
    upper: np.ndarray[Any, Any],
) -> np.ndarray[Any, Any]:
    """A starting point from the data's own α–β shape: the bandwidth factor from the largest
    size's ratio, the latency from the smallest size's excess, per class, so the trust region
    starts near the answer even when the measured machine is 100× off the model."""
    theta = np.zeros(2 * len(classes))
    base = CalibrationSpec(source=source)
    big = max(training, key=lambda p: p.nbytes)
    small = min(training, key=lambda p: p.nbytes)
    ratio_big = predict(big, base, algo=algo, proto=proto)[0] / big.seconds
    theta[0::2] = math.log(min(max(ratio_big, _FACTOR_BOUNDS[0]), _FACTOR_BOUNDS[1]))
    scaled = _spec(classes, theta, source)
    t_small, _ = predict(small, scaled, algo=algo, proto=proto)
    steps = max(1, 2 * (small.cluster.n_nodes * small.ranks_per_node - 1))
    theta[1::2] = (small.seconds - t_small) / steps * 1e6
    return np.clip(theta, lower + 1e-9, upper - 1e-9)
