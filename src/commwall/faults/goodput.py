"""Goodput over a whole run: failures interrupt a synchronous job; checkpoints bound the loss.

* **Interruption rate** of a job on ``G`` GPUs, ``H`` hosts and ``N`` NICs:
  ``λ = Σ_c n_c · λ_c`` over the failure categories of ``data/failure_rates.yaml`` (GPU, silent
  data corruption, network, NIC, host hardware, software), each ``λ_c = events / (components ×
  hours)`` from Meta's Llama 3 405B record (16,384 H100, 419 unexpected interruptions in 54 days;
  arXiv:2407.21783 Table 5). One failure anywhere stops a synchronous job, so λ grows linearly
  with the job. Each count's Poisson uncertainty is carried as a Jeffreys posterior
  ``λ_c ~ Gamma(events + ½, 1/exposure)`` (credible interval close to Garwood's exact one).
* **Checkpoint interval**: Young (1974) ``τ = √(2δM)``; Daly (2006, "A higher order estimate of
  the optimum checkpoint interval for restart dumps", FGCS 22:303) ``τ = √(2δM)·[1 + ⅓√(δ/2M) +
  (δ/2M)/9] − δ`` for ``δ < 2M`` (else ``τ = M``), with ``δ`` the checkpoint time and ``M = 1/λ``.
* **Expected wall time** for ``T_s`` of useful work, exponential failures, restart ``R`` (Daly
  2006, the same paper): ``T_w = M·e^{R/M}·(e^{(τ+δ)/M} − 1)·T_s/τ``; goodput ``T_s/T_w``.
* **Monte Carlo of the run**: each segment of ``τ + δ`` either finishes or fails after a
  truncated-exponential time; after a failure the job needs ``R + τ + δ`` without one (a failure
  during restart restarts it) — the process whose mean is Daly's formula. Failure rates are drawn
  from their posterior per sample, so the spread covers both luck and the rates' uncertainty.

>>> m = load_failure_model()
>>> round(m.mtbf_hours(JobSize(16384)), 2)  # reproduces the record it was derived from
3.09
>>> round(young_interval(60.0, 3.09 * 3600) / 60, 1)  # minutes between checkpoints
19.3
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

import numpy as np
import numpy.typing as npt
import yaml

from commwall.checks import number
from commwall.faults.errors import FaultError
from commwall.faults.stats import Summary, summarize

__all__ = [
    "COMPONENTS",
    "FailureCategory",
    "FailureModel",
    "GoodputResult",
    "JobSize",
    "RunPlan",
    "daly_interval",
    "expected_wall_time",
    "goodput_study",
    "load_failure_model",
    "simulate_run",
    "young_interval",
]

COMPONENTS = ("gpu", "host", "nic")
_HOUR = 3600.0
_MAX_DRAWS = 20_000_000  # truncated-exponential draws per study before the sums go Gaussian


# ---- the failure model -----------------------------------------------------------------------


@dataclass(frozen=True)
class JobSize:
    """How many of each failing component a job holds (hosts and NICs default from GPUs)."""

    gpus: int
    gpus_per_host: int = 8
    nics: int | None = None

    def __post_init__(self) -> None:
        for name in ("gpus", "gpus_per_host"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise FaultError(f"{name}: {value!r}; allowed: an integer >= 1")
        if self.nics is not None and (
            isinstance(self.nics, bool) or not isinstance(self.nics, int) or self.nics < 0
        ):
            raise FaultError(f"nics: {self.nics!r}; allowed: an integer >= 0")

    def count(self, per: str) -> int:
        """Components of kind ``per`` (gpu, host, nic)."""
        if per == "gpu":
            return self.gpus
        if per == "host":
            return -(-self.gpus // self.gpus_per_host)
        return self.gpus if self.nics is None else self.nics


@dataclass(frozen=True)
class FailureCategory:
    """Interruptions of one root cause, counted per component of kind ``per``."""

    name: str
    per: str
    events: int
    components: int
    exposure_hours: float
    detail: str

    @property
    def rate_per_hour(self) -> float:
        """Interruptions per component-hour (maximum likelihood)."""
        return self.events / (self.components * self.exposure_hours)


@dataclass(frozen=True)
class FailureModel:
    """Failure categories and a multiplier on every rate (``scale`` > 1: less reliable parts)."""

    categories: tuple[FailureCategory, ...]
    source: str
    scale: float = 1.0

    def with_scale(self, scale: float) -> FailureModel:
        """The same model with every rate × ``scale``."""
        if not math.isfinite(scale) or scale <= 0:
            raise FaultError(f"failure_scale: {scale!r}; allowed: a finite number > 0")
        return FailureModel(self.categories, self.source, scale)

    def rates_per_hour(self, job: JobSize) -> dict[str, float]:
        """Job interruptions per hour from each category."""
        return {c.name: self.scale * c.rate_per_hour * job.count(c.per) for c in self.categories}

    def rate_per_hour(self, job: JobSize) -> float:
        """Job interruptions per hour, all categories."""
        return sum(self.rates_per_hour(job).values())

    def mtbf_hours(self, job: JobSize) -> float:
        """Mean hours between job interruptions."""
        rate = self.rate_per_hour(job)
        return math.inf if rate == 0 else 1.0 / rate

    def sample_rates(
        self, job: JobSize, rng: np.random.Generator, n: int
    ) -> npt.NDArray[np.float64]:
        """``n`` draws of the job's interruptions per hour from the Jeffreys posterior of every
        category's count, ``Gamma(events + ½, 1)/(components × hours)``."""
        total = np.zeros(n)
        for c in self.categories:
            per_unit = rng.gamma(c.events + 0.5, 1.0, n) / (c.components * c.exposure_hours)
            total += self.scale * per_unit * job.count(c.per)
        return total


@cache
def _rates_file() -> dict[str, Any]:
    text = resources.files("commwall.faults").joinpath("data/failure_rates.yaml").read_text()
    data: dict[str, Any] = yaml.safe_load(text)
    return data


def load_failure_model() -> FailureModel:
    """The failure model shipped with commwall (Llama 3 405B record; estimates)."""
    data = _rates_file()
    cluster, hours = data["cluster"], float(data["exposure_hours"])
    cats = tuple(
        FailureCategory(
            name=c["name"],
            per=c["per"],
            events=int(c["events"]),
            components=int(cluster[f"{c['per']}s"]),
            exposure_hours=hours,
            detail=c["detail"],
        )
        for c in data["categories"]
    )
    return FailureModel(cats, "Llama 3 405B pre-training, arXiv:2407.21783 Table 5 (estimate)")


# ---- checkpoint interval and expected wall time ----------------------------------------------


def _positive(name: str, value: float, *, zero: bool = False) -> float:
    return number(name, value, 0.0, open_low=not zero, error=FaultError)


def young_interval(checkpoint: float, mtbf: float) -> float:
    """Young's first-order optimum seconds of work between checkpoints, √(2δM)."""
    return math.sqrt(2.0 * _positive("checkpoint", checkpoint) * _positive("mtbf", mtbf))


def daly_interval(checkpoint: float, mtbf: float) -> float:
    """Daly's higher-order optimum interval (Daly 2006); ``M`` when ``δ >= 2M``."""
    d, m = _positive("checkpoint", checkpoint), _positive("mtbf", mtbf)
    if d >= 2.0 * m:
        return m
    x = d / (2.0 * m)
    return math.sqrt(2.0 * d * m) * (1.0 + math.sqrt(x) / 3.0 + x / 9.0) - d


def expected_wall_time(
    solve: float, interval: float, checkpoint: float, restart: float, mtbf: float
) -> float:
    """Daly's expected wall-clock seconds for ``solve`` seconds of work:
    ``M·e^{R/M}·(e^{(τ+δ)/M} − 1)·T_s/τ`` (``expm1`` keeps it exact when failures are rare)."""
    s = _positive("solve", solve, zero=True)
    tau = _positive("interval", interval)
    d = _positive("checkpoint", checkpoint, zero=True)
    r = _positive("restart", restart, zero=True)
    if mtbf == math.inf:
        return s * (tau + d) / tau
    m = _positive("mtbf", mtbf)
    return m * math.exp(r / m) * math.expm1((tau + d) / m) * s / tau


# ---- Monte Carlo of a run --------------------------------------------------------------------


def _trunc_exp_sum(
    rng: np.random.Generator,
    counts: npt.NDArray[np.int64],
    rate: npt.NDArray[np.float64],
    cap: float,
) -> npt.NDArray[np.float64]:
    """Per sample, the sum of ``counts[i]`` times-to-failure given failure before ``cap``
    (exponential with ``rate[i]``, truncated at ``cap``; inverse CDF)."""
    total_draws = int(counts.sum())
    top = -np.expm1(-rate * cap)  # P(failure before cap)
    if total_draws <= _MAX_DRAWS:
        idx = np.repeat(np.arange(len(counts)), counts)
        u = rng.random(total_draws)
        t = -np.log1p(-u * top[idx]) / rate[idx]
        return np.bincount(idx, weights=t, minlength=len(counts)).astype(np.float64)
    # Too many to draw: the sum of K i.i.d. draws is normal with K·mean and K·variance.
    lc = rate * cap
    mean = 1.0 / rate - cap * np.exp(-lc) / top
    second = 2.0 / rate**2 - np.exp(-lc) * (cap**2 + 2.0 * cap / rate) / top
    var = np.maximum(second - mean**2, 0.0)
    return np.maximum(0.0, counts * mean + np.sqrt(counts * var) * rng.standard_normal(len(counts)))


def _segments(
    rng: np.random.Generator, rate: npt.NDArray[np.float64], n: int, length: float, restart: float
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]]:
    """Wall seconds and failures of ``n`` segments of ``length`` per sample."""
    if n == 0:
        return np.zeros(len(rate)), np.zeros(len(rate), dtype=np.int64)
    window = restart + length
    first = rng.binomial(n, -np.expm1(-rate * length))  # segments whose first try fails
    p_ok = np.exp(-rate * window)
    if np.any(p_ok < 1e-12):
        raise FaultError(
            f"the job cannot make progress: with a mean time between failures of "
            f"{1 / rate.min():.3g} s it almost never survives restart + interval + checkpoint "
            f"({window:.3g} s); shorten the interval or the restart, or scale failures down"
        )
    again = np.where(first > 0, rng.negative_binomial(np.maximum(first, 1), p_ok), 0)
    wall = (
        (n - first) * length
        + first * window
        + _trunc_exp_sum(rng, first, rate, length)
        + _trunc_exp_sum(rng, again, rate, window)
    )
    return wall, first + again


def simulate_run(
    solve: float,
    interval: float,
    checkpoint: float,
    restart: float,
    rates_per_s: npt.ArrayLike,
    *,
    seed: int = 0,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]]:
    """Wall-clock seconds and interruptions of one run per failure rate in ``rates_per_s``
    (one sample each): ``solve`` s of work in segments of ``interval`` s, each followed by a
    ``checkpoint`` of δ s; after a failure, ``restart`` s then the segment again."""
    s = _positive("solve", solve, zero=True)
    tau = _positive("interval", interval)
    d = _positive("checkpoint", checkpoint, zero=True)
    r = _positive("restart", restart, zero=True)
    rate = np.asarray(rates_per_s, dtype=np.float64)
    if rate.ndim != 1 or not np.all(np.isfinite(rate) & (rate > 0)):
        raise FaultError("rates_per_s: need a 1-D array of finite failure rates > 0 (per second)")
    rng = np.random.default_rng(seed)
    full = int(s // tau)
    rest = s - full * tau
    wall, fails = _segments(rng, rate, full, tau + d, r)
    if rest > 0:
        w2, f2 = _segments(rng, rate, 1, rest + d, r)
        wall, fails = wall + w2, fails + f2
    return wall, fails


# ---- the study -------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunPlan:
    """A run: ``solve`` seconds of failure-free work (tokens ÷ tokens/s), checkpoint time δ,
    restart time R (detect, reschedule, reload), and the interval (None: Daly's optimum)."""

    solve: float
    checkpoint: float = 60.0
    restart: float = 600.0
    interval: float | None = None

    def __post_init__(self) -> None:
        _positive("solve", self.solve)
        _positive("checkpoint", self.checkpoint, zero=True)
        _positive("restart", self.restart, zero=True)
        if self.interval is not None:
            _positive("interval", self.interval)


@dataclass(frozen=True)
class GoodputResult:
    """Goodput of one run on one job size, with its uncertainty."""

    job: JobSize
    plan: RunPlan
    mtbf_hours: float
    mtbf_hours_ci: tuple[float, float]
    rates_per_hour: dict[str, float]
    interval: float
    young: float
    daly: float
    goodput_expected: float
    """Daly's closed form at the maximum-likelihood rate."""
    goodput: Summary
    wall_days: Summary
    interruptions: Summary
    scaling: list[dict[str, float]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return {
            "gpus": self.job.gpus,
            "hosts": self.job.count("host"),
            "nics": self.job.count("nic"),
            "solve_days": self.plan.solve / 86400,
            "checkpoint_s": self.plan.checkpoint,
            "restart_s": self.plan.restart,
            "interval_s": self.interval,
            "young_interval_s": self.young,
            "daly_interval_s": self.daly,
            "mtbf_hours": self.mtbf_hours,
            "mtbf_hours_ci95": list(self.mtbf_hours_ci),
            "interruptions_per_hour_by_cause": self.rates_per_hour,
            "goodput_expected": self.goodput_expected,
            "goodput": self.goodput.to_dict(),
            "wall_days": self.wall_days.to_dict(),
            "interruptions": self.interruptions.to_dict(),
            "scaling": self.scaling,
        }


def _check_samples(samples: int) -> int:
    if isinstance(samples, bool) or not isinstance(samples, int) or not 2 <= samples <= 1_000_000:
        raise FaultError(f"samples: {samples!r}; allowed: an integer 2..1,000,000")
    return samples


def goodput_study(
    job: JobSize,
    plan: RunPlan,
    *,
    model: FailureModel | None = None,
    samples: int = 1000,
    seed: int = 0,
    scales: Sequence[int] = (),
) -> GoodputResult:
    """Goodput and wall-clock days of ``plan`` on ``job``: closed form at the rates' maximum
    likelihood, Monte Carlo over failures and rate uncertainty, and (``scales``) how the
    expected goodput falls as the job grows, each size at its own Daly interval."""
    fm = model or load_failure_model()
    n = _check_samples(samples)
    rng = np.random.default_rng(seed)
    mtbf = fm.mtbf_hours(job) * _HOUR
    young = young_interval(plan.checkpoint, mtbf) if plan.checkpoint > 0 else math.inf
    daly = daly_interval(plan.checkpoint, mtbf) if plan.checkpoint > 0 else math.inf
    tau = plan.interval or (daly if math.isfinite(daly) else plan.solve)
    tau = min(tau, plan.solve)
    rates = fm.sample_rates(job, rng, n) / _HOUR
    wall, fails = simulate_run(plan.solve, tau, plan.checkpoint, plan.restart, rates, seed=seed + 1)
    lo, hi = np.quantile(1.0 / rates / _HOUR, [0.025, 0.975])
    rows = []
    for size in scales:
        sized = JobSize(int(size), job.gpus_per_host, None if job.nics is None else int(size))
        m = fm.mtbf_hours(sized) * _HOUR
        t = daly_interval(plan.checkpoint, m) if plan.checkpoint > 0 else plan.solve
        t = min(t, plan.solve)
        ew = expected_wall_time(plan.solve, t, plan.checkpoint, plan.restart, m)
        rows.append(
            {
                "gpus": float(size),
                "mtbf_hours": m / _HOUR,
                "interval_s": t,
                "goodput": plan.solve / ew,
            }
        )
    return GoodputResult(
        job=job,
        plan=plan,
        mtbf_hours=mtbf / _HOUR,
        mtbf_hours_ci=(float(lo), float(hi)),
        rates_per_hour=fm.rates_per_hour(job),
        interval=tau,
        young=young,
        daly=daly,
        goodput_expected=plan.solve
        / expected_wall_time(plan.solve, tau, plan.checkpoint, plan.restart, mtbf),
        goodput=summarize(plan.solve / wall, name="goodput"),
        wall_days=summarize(wall / 86400.0, name="wall_days"),
        interruptions=summarize(fails.astype(np.float64), name="interruptions"),
        scaling=rows,
    )
