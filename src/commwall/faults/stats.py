"""Distributions with confidence intervals: what every fault model reports instead of one number.

:func:`summarize` turns Monte Carlo samples into a :class:`Summary`: mean with a 95% confidence
interval (normal approximation, standard error s/√n), and quantiles each with a distribution-free
95% interval from the order statistics (the binomial method: ranks ``j < k`` with
``P(j <= B < k) >= 0.95`` for ``B ~ Binomial(n, q)``; Conover, *Practical Nonparametric
Statistics*, 3rd ed., §3.2). :func:`poisson_rate_interval` is the exact (Garwood 1936) interval of
a rate estimated from a count of events.

>>> import numpy as np
>>> s = summarize(np.arange(1, 1001, dtype=float))
>>> s.mean, s.quantile(0.5)
(500.5, 500.5)
>>> lo, hi = s.quantile_interval(0.5); bool(lo < 500.5 < hi)
True
>>> [round(x, 1) for x in poisson_rate_interval(419, 54.0)]
[7.0, 8.5]
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
from scipy import stats  # type: ignore[import-untyped]  # no stubs in the venv

from commwall.faults.errors import FaultError

__all__ = ["QUANTILES", "Summary", "poisson_rate_interval", "summarize"]

#: Quantiles every summary reports.
QUANTILES: tuple[float, ...] = (0.01, 0.05, 0.5, 0.95, 0.99)
_Z95 = 1.959963984540054  # two-sided 95% normal quantile


@dataclass(frozen=True)
class Summary:
    """A sample's mean, spread and quantiles, each with a 95% confidence interval."""

    n: int
    mean: float
    std: float
    mean_ci: tuple[float, float]
    minimum: float
    maximum: float
    quantiles: Mapping[float, float] = field(default_factory=dict)
    quantile_cis: Mapping[float, tuple[float, float]] = field(default_factory=dict)

    def quantile(self, q: float) -> float:
        """The ``q`` quantile (one of :data:`QUANTILES`)."""
        return self.quantiles[self._key(q)]

    def quantile_interval(self, q: float) -> tuple[float, float]:
        """95% confidence interval of the ``q`` quantile."""
        return self.quantile_cis[self._key(q)]

    def _key(self, q: float) -> float:
        for k in self.quantiles:
            if math.isclose(k, q):
                return k
        raise FaultError(f"quantile {q!r} was not computed; allowed: {sorted(self.quantiles)}")

    def scaled(self, factor: float) -> Summary:
        """The same summary in other units (every value × ``factor`` > 0)."""
        return Summary(
            n=self.n,
            mean=self.mean * factor,
            std=self.std * factor,
            mean_ci=(self.mean_ci[0] * factor, self.mean_ci[1] * factor),
            minimum=self.minimum * factor,
            maximum=self.maximum * factor,
            quantiles={q: v * factor for q, v in self.quantiles.items()},
            quantile_cis={q: (a * factor, b * factor) for q, (a, b) in self.quantile_cis.items()},
        )

    def to_dict(self) -> dict[str, object]:
        """Plain data for JSON: quantiles keyed ``p1``, ``p50``, ``p99`` ..."""
        return {
            "n": self.n,
            "mean": self.mean,
            "std": self.std,
            "mean_ci95": list(self.mean_ci),
            "min": self.minimum,
            "max": self.maximum,
            **{_label(q): v for q, v in self.quantiles.items()},
            "quantile_ci95": {_label(q): list(ci) for q, ci in self.quantile_cis.items()},
        }


def _label(q: float) -> str:
    pct = q * 100
    return f"p{pct:g}"


def _order_interval(sorted_x: npt.NDArray[np.float64], q: float) -> tuple[float, float]:
    n = len(sorted_x)
    lo = int(stats.binom.ppf(0.025, n, q))
    hi = int(stats.binom.ppf(0.975, n, q)) + 1
    return float(sorted_x[max(lo - 1, 0)]), float(sorted_x[min(hi - 1, n - 1)])


def summarize(
    samples: npt.ArrayLike, quantiles: Sequence[float] = QUANTILES, *, name: str = "samples"
) -> Summary:
    """Summary of a 1-D sample of finite numbers (raises :class:`FaultError` naming ``name``)."""
    x = np.asarray(samples, dtype=np.float64).ravel()
    if x.size == 0:
        raise FaultError(f"{name}: no samples to summarize; need at least 1")
    if not np.all(np.isfinite(x)):
        raise FaultError(f"{name}: holds a value that is not finite (NaN or infinity)")
    xs = np.sort(x)
    n = len(xs)
    mean = float(xs.mean())
    std = float(xs.std(ddof=1)) if n > 1 else 0.0
    half = _Z95 * std / math.sqrt(n)
    qs = {float(q): float(np.quantile(xs, q)) for q in quantiles}
    cis = {float(q): _order_interval(xs, float(q)) for q in quantiles}
    return Summary(
        n=n,
        mean=mean,
        std=std,
        mean_ci=(mean - half, mean + half),
        minimum=float(xs[0]),
        maximum=float(xs[-1]),
        quantiles=qs,
        quantile_cis=cis,
    )


def poisson_rate_interval(
    events: int, exposure: float, confidence: float = 0.95
) -> tuple[float, float]:
    """Exact two-sided interval of a Poisson rate from ``events`` seen over ``exposure``.

    Garwood (1936): ``[χ²(α/2; 2k)/2, χ²(1−α/2; 2k+2)/2] / exposure`` (lower bound 0 for k = 0).
    """
    if isinstance(events, bool) or not isinstance(events, int) or events < 0:
        raise FaultError(f"events: {events!r}; allowed: an integer >= 0")
    if not math.isfinite(exposure) or exposure <= 0:
        raise FaultError(f"exposure: {exposure!r}; allowed: a finite number > 0")
    if not 0 < confidence < 1:
        raise FaultError(f"confidence: {confidence!r}; allowed: a number in (0, 1)")
    alpha = 1.0 - confidence
    lo = 0.0 if events == 0 else float(stats.chi2.ppf(alpha / 2, 2 * events)) / 2
    hi = float(stats.chi2.ppf(1 - alpha / 2, 2 * events + 2)) / 2
    return lo / exposure, hi / exposure
