"""Stragglers and tail latency: a synchronous step moves at the speed of its slowest rank.

Model (one training step, vectorised Monte Carlo over many steps):

* **Compute** of rank ``i`` in step ``s`` is ``T_c · X_is``: ``X`` has mean 1 and coefficient of
  variation ``jitter`` (normal, lognormal, or resampled from measured step times), persistently
  slow ranks multiply it by ``slowdown`` every step (a throttled GPU), and OS noise adds
  ``duration × Poisson(rate · T_c)`` per rank (Petrini et al., SC'03, "The case of the missing
  supercomputer performance": noise that is harmless on one node costs a whole step at scale).
* **Synchronisation**: the step's collectives wait for the last rank, so the step pays
  ``max_i`` of the per-rank compute (the data-parallel barrier of bulk-synchronous training).
* **Network tails**: every message of a collective gets extra latency, exponential with mean
  ``message_tail`` (a memoryless tail) plus clock jitter ``N(0, clock_jitter²)``. Clock jitter is
  folded in here, as latency jitter, rather than into timeouts or credit timing: a few ns of
  offset matters only against a µs message time. How much of it a call pays depends on who waits
  for whom (:func:`sync_pattern`): a *ring* step waits only for its neighbour, so a call costs the
  longest path through the ranks × steps lattice (``T[i,k] = max(T[i,k−1], T[i−1,k−1]) + w``,
  a max-plus recursion whose cost per step stays bounded as the ring grows); a *tree* call is a
  reduce up and a broadcast down a binary tree (longest leaf–root path); a *global* step
  (in-network reduction, direct all-to-all) waits for the slowest of all its messages. Each
  pattern's per-call mean and variance come from exact simulation of that dependency graph
  (rings above 512 ranks: the per-step growth rate of a 512-rank ring, extrapolated); a group's
  sum over its calls is taken as a gamma with those moments (exact for a single exponential
  message, normal in the limit of many calls), and the step waits for the slowest of the
  ``N/p`` groups that run the same collective side by side.
* The rest of the step (exposed communication, bubble, optimizer) is fixed.

Maxima of i.i.d. ranks are sampled exactly from their order statistic — the max of ``n`` draws
with CDF ``F`` is ``F⁻¹(U^{1/n})`` (David & Nagaraja, *Order Statistics*, 3rd ed., §2.1) — so 100k
GPUs cost no more than one; ``method="direct"`` draws every rank instead (the reference the tests
hold the shortcut to). Maxima of compute and of network tails are added: an upper bound, exact
when one dominates.

For i.i.d. normal jitter the mean of the max follows the extreme-value approximation
``μ + σ·(b_N + γ·a_N)`` with ``a_N = 1/√(2 ln N)`` and
``b_N = √(2 ln N) − (ln ln N + ln 4π)/(2√(2 ln N))`` (Cramér 1946; David & Nagaraja §10.5):
:func:`expected_max_normal`.

>>> v = Variability(jitter=0.02)
>>> r = simulate_stragglers(StepProfile(compute=1.0, n_ranks=16384), v, steps=2000, seed=0)
>>> round(r.step_time.mean, 3), round(expected_max_normal(16384, 1.0, 0.02), 3)
(1.08, 1.08)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import cache, lru_cache
from typing import Any, Final, Literal

import numpy as np
import numpy.typing as npt
from scipy import integrate, special  # type: ignore[import-untyped]  # no stubs in the venv

from commwall.checks import choice, number
from commwall.faults.errors import FaultError
from commwall.faults.stats import Summary, summarize

__all__ = [
    "DISTRIBUTIONS",
    "CollectiveLoad",
    "StepProfile",
    "StragglerResult",
    "Variability",
    "expected_max_normal",
    "profile_from_report",
    "simulate_stragglers",
    "steps_at_scale",
    "straggler_scaling",
    "sync_pattern",
    "sync_steps",
]

DISTRIBUTIONS = ("normal", "lognormal", "empirical")
Method = Literal["auto", "order", "direct"]
_EULER_GAMMA = 0.5772156649015329
_DIRECT_CELLS = 1 << 22  # rank × step draws per chunk of the direct method (~32 MB of float64)


# ---- inputs ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class CollectiveLoad:
    """One kind of collective in the step: ``calls`` calls over groups of ``ranks``, each call
    ``steps_per_call`` sequential message steps (:func:`sync_steps`)."""

    name: str
    ranks: int
    calls: int
    steps_per_call: int
    pattern: str = "global"
    """Who waits for whom: ring, tree or global (:func:`sync_pattern`)."""

    @property
    def sync_steps(self) -> int:
        """Sequential message steps per training step."""
        return self.calls * self.steps_per_call


@dataclass(frozen=True)
class StepProfile:
    """What one step does, as the variability model needs it.

    ``compute``: seconds of per-rank work each rank does between barriers (subject to jitter);
    ``fixed``: the rest of the step (exposed communication, bubble, optimizer), seconds;
    ``n_ranks``: ranks that synchronise; ``collectives``: the latency-bound message steps.
    """

    compute: float
    n_ranks: int
    fixed: float = 0.0
    collectives: tuple[CollectiveLoad, ...] = ()

    @property
    def ideal(self) -> float:
        """Step time with no variability."""
        return self.compute + self.fixed

    def at_scale(self, n_ranks: int) -> StepProfile:
        """The same per-rank work on ``n_ranks`` ranks (weak scaling: groups keep their size,
        data-parallel-wide collectives grow with the job)."""
        old = self.n_ranks
        loads = tuple(
            replace(c, ranks=n_ranks, steps_per_call=_rescaled_steps(c, old, n_ranks))
            if c.ranks == old
            else c
            for c in self.collectives
        )
        return replace(self, n_ranks=n_ranks, collectives=loads)


def _rescaled_steps(c: CollectiveLoad, old: int, new: int) -> int:
    if c.steps_per_call == 2 * (old - 1) and old > 1:
        return 2 * (new - 1)
    if c.steps_per_call == old - 1 and old > 1:
        return new - 1
    ratio = math.log2(max(new, 2)) / math.log2(max(old, 2))
    return max(1, round(c.steps_per_call * ratio))


@dataclass(frozen=True)
class Variability:
    """Sources of variability, each 0 (off) by default. Times in seconds."""

    jitter: float = 0.0
    """Coefficient of variation of a rank's compute time per step (σ/μ, e.g. 0.02)."""
    distribution: str = "normal"
    """normal, lognormal (same mean and CV) or empirical (resample ``empirical``)."""
    empirical: tuple[float, ...] = ()
    """Measured per-rank step (or compute) times; rescaled to mean 1 before use."""
    slow_ranks: int = 0
    """Ranks that are persistently slow (throttled GPU, flaky link)."""
    slowdown: float = 1.0
    """Compute-time multiplier of the slow ranks (1.2 = 20% slower)."""
    os_noise_rate: float = 0.0
    """OS-noise interruptions per second per rank (Poisson)."""
    os_noise_duration: float = 0.0
    """Seconds each interruption steals."""
    message_tail: float = 0.0
    """Mean extra latency per network message, exponential tail (s)."""
    clock_jitter: float = 0.0
    """Standard deviation of clock offset per message (s), folded into message latency."""

    def __post_init__(self) -> None:
        _check(self)

    @property
    def has_noise(self) -> bool:
        """Whether OS noise is on (its maximum has no closed-form inverse: needs direct draws)."""
        return self.os_noise_rate > 0 and self.os_noise_duration > 0

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON (``empirical`` as its sample count)."""
        return {
            "jitter": self.jitter,
            "distribution": self.distribution,
            "empirical_samples": len(self.empirical),
            "slow_ranks": self.slow_ranks,
            "slowdown": self.slowdown,
            "os_noise_rate_per_s": self.os_noise_rate,
            "os_noise_duration_s": self.os_noise_duration,
            "message_tail_s": self.message_tail,
            "clock_jitter_s": self.clock_jitter,
        }


def _check_number(name: str, value: object, lo: float, hi: float = math.inf) -> None:
    number(name, value, lo, hi, error=FaultError)


def _check(v: Variability) -> None:
    _check_number("jitter", v.jitter, 0.0, 10.0)
    choice("distribution", v.distribution, DISTRIBUTIONS, error=FaultError)
    if v.distribution == "empirical":
        x = np.asarray(v.empirical, dtype=np.float64)
        if x.size < 2 or not np.all(np.isfinite(x)) or np.any(x <= 0):
            raise FaultError(
                f"empirical: {x.size} sample(s); allowed: at least 2 finite times > 0 "
                "(measured per-rank step or compute times)"
            )
    if isinstance(v.slow_ranks, bool) or not isinstance(v.slow_ranks, int) or v.slow_ranks < 0:
        raise FaultError(f"slow_ranks: {v.slow_ranks!r}; allowed: an integer >= 0")
    _check_number("slowdown", v.slowdown, 1.0, 1000.0)
    _check_number("os_noise_rate", v.os_noise_rate, 0.0, 1e6)
    _check_number("os_noise_duration", v.os_noise_duration, 0.0, 10.0)
    _check_number("message_tail", v.message_tail, 0.0, 10.0)
    _check_number("clock_jitter", v.clock_jitter, 0.0, 1.0)


# ---- closed forms ----------------------------------------------------------------------------


def expected_max_normal(n: int, mean: float, std: float) -> float:
    """Extreme-value approximation of E[max of ``n`` i.i.d. N(mean, std²)]: μ + σ(b_n + γ a_n)."""
    if n < 2:
        return mean
    s = math.sqrt(2.0 * math.log(n))
    b = s - (math.log(math.log(n)) + math.log(4.0 * math.pi)) / (2.0 * s)
    return mean + std * (b + _EULER_GAMMA / s)


@cache
def _max_normal_moments(m: int) -> tuple[float, float]:
    """Exact mean and variance of the max of ``m`` standard normals (numerical integration of
    the density m·φ(x)·Φ(x)^(m−1))."""
    if m == 1:
        return 0.0, 1.0

    def density(x: float) -> float:
        return float(
            m * np.exp(-0.5 * x * x - 0.5 * math.log(2 * math.pi)) * special.ndtr(x) ** (m - 1)
        )

    lo, hi = -8.0, 9.0
    e1 = integrate.quad(lambda x: x * density(x), lo, hi, limit=200)[0]
    e2 = integrate.quad(lambda x: x * x * density(x), lo, hi, limit=200)[0]
    return float(e1), float(e2 - e1 * e1)


def _message_delays(
    v: Variability, rng: np.random.Generator, shape: tuple[int, ...]
) -> npt.NDArray[np.float64]:
    """Extra latency of messages: exponential tail plus normal clock offset (seconds)."""
    w = v.message_tail * rng.standard_exponential(shape) if v.message_tail > 0 else np.zeros(shape)
    if v.clock_jitter > 0:
        w += v.clock_jitter * rng.standard_normal(shape)
    return w


def _ring_call(
    v: Variability, rng: np.random.Generator, ranks: int, steps: int, n: int
) -> npt.NDArray[np.float64]:
    """Extra seconds of ``n`` ring calls: longest path of T[i,k] = max(T[i,k−1], T[i−1,k−1]) + w."""
    t = np.zeros((n, ranks))
    for _ in range(steps):
        t = np.maximum(t, np.roll(t, 1, axis=1)) + _message_delays(v, rng, (n, ranks))
    out: npt.NDArray[np.float64] = t.max(axis=1)
    return out


def _tree_call(
    v: Variability, rng: np.random.Generator, ranks: int, both: bool, n: int
) -> npt.NDArray[np.float64]:
    """Extra seconds of ``n`` binary-tree calls: reduce up (a node waits for both children),
    then, for all-reduce, broadcast down (the call ends with the last leaf)."""
    leaves = 1 << max(1, math.ceil(math.log2(ranks)))
    t = _message_delays(v, rng, (n, leaves))
    while t.shape[1] > 1:
        t = np.maximum(t[:, 0::2], t[:, 1::2]) + _message_delays(v, rng, (n, t.shape[1] // 2))
    if both:
        while t.shape[1] < leaves:
            t = np.repeat(t, 2, axis=1) + _message_delays(v, rng, (n, 2 * t.shape[1]))
    out: npt.NDArray[np.float64] = t.max(axis=1)
    return out


def _global_call(
    v: Variability, rng: np.random.Generator, ranks: int, steps: int, n: int
) -> npt.NDArray[np.float64]:
    """Extra seconds of ``n`` calls whose every step waits for the slowest of ``ranks`` messages."""
    total = np.zeros(n)
    for _ in range(steps):
        total += _message_delays(v, rng, (n, ranks)).max(axis=1)
    return total


_RING_SIM_RANKS = 512  # rings above this: the per-step growth rate of a 512-rank ring
_CALL_WORK = 20_000_000  # message draws per collective kind's calibration (a fraction of a second)


def _exponential_max_moments(theta: float, m: int) -> tuple[float, float]:
    """Mean θ·H_m and variance θ²·Σ1/i² of the max of ``m`` exponentials (Rényi 1953)."""
    i = np.arange(1, m + 1, dtype=np.float64)
    return theta * float(np.sum(1.0 / i)), theta**2 * float(np.sum(1.0 / i**2))


@lru_cache(maxsize=256)  # a ring calibration costs ~1 s; sweeps and contributions reuse it
def _call_moments(v: Variability, c: CollectiveLoad, seed: int) -> tuple[float, float]:
    """Mean and variance of the extra seconds of one call of ``c``: closed form for an all-wait
    call without clock jitter, else exact simulation of its dependency graph with as many
    samples as ~2·10⁷ draws allow (256 to 4,096; a fixed sub-seed, so a result does not depend
    on the order calls are evaluated in)."""
    p, s = max(c.ranks, 1), c.steps_per_call
    if c.pattern == "global" and v.clock_jitter == 0:
        mean, var = _exponential_max_moments(v.message_tail, p)
        return s * mean, s * var
    rng = np.random.default_rng([seed, c.ranks, c.steps_per_call, len(c.pattern)])
    if c.pattern == "ring":
        sim_p = min(p, _RING_SIM_RANKS)
        sim_s = max(1, min(s, 2 * (sim_p - 1)) if sim_p > 1 else s)
        n = int(np.clip(_CALL_WORK // (sim_p * sim_s), 256, 4096))
        x = _ring_call(v, rng, sim_p, sim_s, n) * (s / sim_s)
    elif c.pattern == "tree":
        levels = max(1, math.ceil(math.log2(p)))
        n = int(np.clip(_CALL_WORK // (4 * p), 256, 4096))
        x = _tree_call(v, rng, p, s > levels, n)
    else:
        n = int(np.clip(_CALL_WORK // (p * max(s, 1)), 256, 4096))
        x = _global_call(v, rng, p, s, n)
    return float(x.mean()), float(x.var(ddof=1))


def sync_pattern(algo: str) -> str:
    """Who a message step waits for: ``ring`` (its neighbour: ring, hierarchical), ``tree``
    (its children or parent: tree, NVLS-tree, PAT, halving-doubling) or ``global`` (every rank of
    the group: NVLS, CollNet in-network reduction, direct all-to-all and send/recv)."""
    if algo in ("ring", "hierarchical"):
        return "ring"
    if algo in ("tree", "pat", "halving_doubling", "nvls_tree"):
        return "tree"
    return "global"


def sync_steps(op: str, algo: str, ranks: int) -> int:
    """Sequential message steps of one call whose every step waits for its slowest message.

    Ring: 2(p−1) for all-reduce, p−1 for the others (Patarasuk & Yuan 2009); tree, PAT and
    halving-doubling: ⌈log₂p⌉ per direction (Thakur, Rabenseifner & Gropp 2005); NVLS/CollNet
    (in-network): 2; direct all-to-all/send-recv: 1; hierarchical taken as a ring (an
    approximation).
    """
    p = max(int(ranks), 1)
    if p == 1 or algo == "local":
        return 0
    both = 2 if op == "all_reduce" else 1
    if algo in ("ring", "hierarchical"):
        return both * (p - 1)
    if algo in ("tree", "pat", "halving_doubling", "nvls_tree"):
        return both * max(1, math.ceil(math.log2(p)))
    if algo.startswith("nvls") or algo.startswith("collnet"):
        return 2
    return 1


def profile_from_report(report: Any) -> StepProfile:
    """A :class:`StepProfile` from a :class:`commwall.workload.simulate.StepReport`.

    Compute is the critical stage's forward/backward math; everything else stays fixed. Every
    collective of the critical stage adds its message steps; data-parallel ones only in the share
    of their time that is exposed (the rest hides under compute).
    """
    compute = float(report.breakdown["compute"])
    dp_total = sum(c.total for c in report.collectives if c.category == "dp")
    dp_exposed = float(report.breakdown.get("dp", 0.0))
    dp_share = min(1.0, dp_exposed / dp_total) if dp_total > 0 else 0.0
    loads = []
    for c in report.collectives:
        calls = c.calls if c.category != "dp" else round(c.calls * dp_share)
        steps = sync_steps(c.op, c.algo, c.nranks)
        if calls > 0 and steps > 0:
            loads.append(CollectiveLoad(c.name, c.nranks, calls, steps, sync_pattern(c.algo)))
    return StepProfile(
        compute=compute,
        n_ranks=int(report.n_gpus),
        fixed=float(report.step_time) - compute,
        collectives=tuple(loads),
    )


# ---- sampling --------------------------------------------------------------------------------


def _multiplier_quantile(
    v: Variability, q_upper: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    """Compute multiplier X (mean 1) at upper-tail probability ``q_upper`` = P(X > x)."""
    if v.jitter == 0 and v.distribution != "empirical":
        return np.ones_like(q_upper)
    if v.distribution == "normal":
        return 1.0 + v.jitter * special.ndtri(1.0 - q_upper)  # type: ignore[no-any-return]
    if v.distribution == "lognormal":
        s = math.sqrt(math.log1p(v.jitter**2))
        return np.exp(-0.5 * s * s + s * special.ndtri(1.0 - q_upper))  # type: ignore[no-any-return]
    x = _empirical(v)
    return np.quantile(x, 1.0 - q_upper, method="inverted_cdf")  # the resampled distribution


def _empirical(v: Variability) -> npt.NDArray[np.float64]:
    x = np.asarray(v.empirical, dtype=np.float64)
    out: npt.NDArray[np.float64] = x / x.mean()
    return out


def _draw_multiplier(
    v: Variability, rng: np.random.Generator, shape: tuple[int, ...]
) -> npt.NDArray[np.float64]:
    if v.distribution == "empirical":
        return rng.choice(_empirical(v), size=shape)
    if v.jitter == 0:
        return np.ones(shape)
    if v.distribution == "normal":
        return 1.0 + v.jitter * rng.standard_normal(shape)
    s = math.sqrt(math.log1p(v.jitter**2))
    return np.exp(-0.5 * s * s + s * rng.standard_normal(shape))


def _max_upper_tail(rng: np.random.Generator, n: int, steps: int) -> npt.NDArray[np.float64]:
    """Upper-tail probability of the max of ``n`` i.i.d. draws: 1 − U^{1/n}, computed as
    −expm1(ln U / n) so it keeps its precision when it is tiny (n = 10⁵)."""
    u = rng.random(steps)
    return -np.expm1(np.log1p(-u) / n)  # 1 − U is uniform too; log1p keeps u = 0 finite


def _compute_max_order(
    profile: StepProfile, v: Variability, rng: np.random.Generator, steps: int
) -> npt.NDArray[np.float64]:
    """max over ranks of T_c·X per step, from the order statistics of the two rank groups."""
    slow = min(v.slow_ranks, profile.n_ranks)
    fast = profile.n_ranks - slow
    best = np.full(steps, -np.inf)
    if fast:
        best = np.maximum(best, _multiplier_quantile(v, _max_upper_tail(rng, fast, steps)))
    if slow:
        best = np.maximum(
            best, v.slowdown * _multiplier_quantile(v, _max_upper_tail(rng, slow, steps))
        )
    return profile.compute * best


def _poisson(
    rng: np.random.Generator, mean: float, shape: tuple[int, ...]
) -> npt.NDArray[np.float64]:
    """Poisson counts by inverting the CDF on uniforms: ~2.5x faster than ``rng.poisson`` for
    the small means OS noise has (the draws dominate the direct method's time)."""
    top = int(mean + 12.0 * math.sqrt(mean) + 20.0)
    cdf = special.pdtr(np.arange(top + 1), mean)
    counts: npt.NDArray[np.float64] = np.searchsorted(cdf, rng.random(shape)).astype(np.float64)
    return counts


def _compute_max_direct(
    profile: StepProfile, v: Variability, rng: np.random.Generator, steps: int
) -> npt.NDArray[np.float64]:
    """max over ranks of the per-rank compute, drawing every rank (chunks of steps)."""
    n = profile.n_ranks
    slow = min(v.slow_ranks, n)
    factor = np.ones(n)
    factor[:slow] = v.slowdown
    out = np.empty(steps)
    chunk = max(1, _DIRECT_CELLS // n)
    noise_mean = v.os_noise_rate * profile.compute if v.has_noise else 0.0
    for a in range(0, steps, chunk):
        z = min(steps, a + chunk)
        t = profile.compute * factor * _draw_multiplier(v, rng, (z - a, n))
        if noise_mean > 0:
            t += v.os_noise_duration * _poisson(rng, noise_mean, (z - a, n))
        out[a:z] = t.max(axis=1)
    return out


def _network_tails(
    profile: StepProfile, v: Variability, rng: np.random.Generator, steps: int, seed: int
) -> npt.NDArray[np.float64]:
    """Seconds the slowest messages add per step, summed over the step's collectives."""
    total = np.zeros(steps)
    if v.message_tail == 0 and v.clock_jitter == 0:
        return total
    for c in profile.collectives:
        if c.sync_steps == 0 or c.calls == 0:
            continue
        mean, var = _call_moments(v, c, seed)
        groups = max(1, profile.n_ranks // max(c.ranks, 1))
        q = _max_upper_tail(rng, groups, steps)  # the slowest group
        if var <= 0 or mean <= 0:
            total += c.calls * mean
            continue
        # a group's sum over its calls as a gamma of matched moments: positive, and exact for
        # one exponential message; its shape grows with the calls (central limit theorem)
        shape, scale = c.calls * mean * mean / var, var / mean
        total += scale * special.gammainccinv(shape, q)
    return total


# ---- results ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class StragglerResult:
    """Step-time distribution under variability, and where the extra time comes from."""

    n_ranks: int
    steps: int
    method: str
    ideal: float
    step_time: Summary
    slowdown: Summary
    compute_wait: float
    """Mean seconds per step the ranks spend waiting for the slowest one (E[max] − E[mean])."""
    network_tail: float
    """Mean seconds per step added by the slowest messages."""
    variability: Variability
    contributions: dict[str, float] = field(default_factory=dict)
    """Mean extra seconds per step with each source alone."""

    @property
    def waiting_share(self) -> float:
        """Share of the mean step spent waiting on stragglers (slow ranks or slow messages)."""
        return (self.compute_wait + self.network_tail) / self.step_time.mean

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return {
            "n_ranks": self.n_ranks,
            "steps": self.steps,
            "method": self.method,
            "ideal_step_s": self.ideal,
            "step_time_s": self.step_time.to_dict(),
            "slowdown": self.slowdown.to_dict(),
            "compute_wait_s": self.compute_wait,
            "network_tail_s": self.network_tail,
            "waiting_share": self.waiting_share,
            "contributions_s": self.contributions,
            "variability": self.variability.to_dict(),
        }


def _resolve_method(method: str, v: Variability) -> str:
    choice("method", method, ("auto", "order", "direct"), error=FaultError)
    if method == "order" and v.has_noise:
        raise FaultError(
            "method: 'order' cannot sample OS noise (a compound Poisson has no closed-form "
            "quantile); use method 'direct' or 'auto'"
        )
    if method == "auto":
        return "direct" if v.has_noise else "order"
    return method


def _check_profile(profile: StepProfile, steps: int) -> None:
    _check_number("compute", profile.compute, 0.0)
    _check_number("fixed", profile.fixed, 0.0)
    if (
        isinstance(profile.n_ranks, bool)
        or not isinstance(profile.n_ranks, int)
        or not 1 <= profile.n_ranks <= 10_000_000
    ):
        raise FaultError(f"n_ranks: {profile.n_ranks!r}; allowed: an integer 1..10,000,000")
    if isinstance(steps, bool) or not isinstance(steps, int) or not 2 <= steps <= MAX_STEPS:
        raise FaultError(f"steps: {steps!r}; allowed: an integer 2..{MAX_STEPS:,}")


#: Most Monte Carlo steps (one million take ~5 s and ~100 MB on one core).
MAX_STEPS: Final = 1_000_000
#: Most per-rank draws of a ``direct`` run (OS noise draws every rank of every step): 2·10⁸
#: take ~20 s; :func:`steps_at_scale` keeps a scaling table's scales to the same budget.
MAX_DIRECT_DRAWS: Final = 200_000_000


def _check_draws(profile: StepProfile, how: str, steps: int) -> None:
    """A ``direct`` run draws every rank of every step: refuse one past the budget, with the
    steps that fit."""
    draws = steps * profile.n_ranks
    if how == "direct" and draws > MAX_DIRECT_DRAWS:
        fit = max(2, MAX_DIRECT_DRAWS // profile.n_ranks)
        raise FaultError(
            f"steps: {steps:,} x {profile.n_ranks:,} ranks = {draws:.3g} per-rank draws with OS "
            f"noise; allowed: at most {MAX_DIRECT_DRAWS:.0e} (about 20 s), i.e. {fit:,} steps "
            "at this scale"
        )


def _sample(
    profile: StepProfile,
    v: Variability,
    method: str,
    rng: np.random.Generator,
    steps: int,
    seed: int,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    draw = _compute_max_direct if method == "direct" else _compute_max_order
    return draw(profile, v, rng, steps), _network_tails(profile, v, rng, steps, seed)


def _mean_rank_compute(profile: StepProfile, v: Variability) -> float:
    slow = min(v.slow_ranks, profile.n_ranks)
    mean_x = profile.n_ranks - slow + slow * v.slowdown
    noise = v.os_noise_rate * profile.compute * v.os_noise_duration if v.has_noise else 0.0
    return profile.compute * mean_x / profile.n_ranks + noise


def _alone(v: Variability) -> dict[str, Variability]:
    base = Variability(distribution=v.distribution, empirical=v.empirical)
    parts: dict[str, Variability] = {}
    if v.jitter > 0 or v.distribution == "empirical":
        parts["compute jitter"] = replace(base, jitter=v.jitter)
    if v.slow_ranks > 0 and v.slowdown > 1:
        parts["slow ranks"] = replace(Variability(), slow_ranks=v.slow_ranks, slowdown=v.slowdown)
    if v.has_noise:
        parts["OS noise"] = replace(
            Variability(), os_noise_rate=v.os_noise_rate, os_noise_duration=v.os_noise_duration
        )
    if v.message_tail > 0 or v.clock_jitter > 0:
        parts["network tail"] = replace(
            Variability(), message_tail=v.message_tail, clock_jitter=v.clock_jitter
        )
    return parts


def simulate_stragglers(
    profile: StepProfile,
    variability: Variability,
    *,
    steps: int = 10_000,
    seed: int = 0,
    method: Method = "auto",
    contributions: bool = True,
) -> StragglerResult:
    """Monte Carlo of ``steps`` training steps of ``profile`` under ``variability``.

    ``method``: ``order`` samples each step's slowest rank from its order statistic (exact for
    i.i.d. ranks, O(steps)); ``direct`` draws every rank (O(steps × ranks), needed for OS noise);
    ``auto`` picks ``order`` unless OS noise is on. Same inputs and seed → identical result.
    """
    _check_profile(profile, steps)
    how = _resolve_method(method, variability)
    _check_draws(profile, how, steps)
    rng = np.random.default_rng(seed)
    comp, net = _sample(profile, variability, how, rng, steps, seed)
    step = comp + net + profile.fixed
    ideal = profile.ideal
    parts: dict[str, float] = {}
    if contributions:
        for name, alone in _alone(variability).items():
            sub = np.random.default_rng([seed, len(parts) + 1])
            c, n = _sample(
                profile, alone, _resolve_method("auto", alone), sub, min(steps, 4000), seed
            )
            parts[name] = float(np.mean(c + n)) - profile.compute
    return StragglerResult(
        n_ranks=profile.n_ranks,
        steps=steps,
        method=how,
        ideal=ideal,
        step_time=summarize(step, name="step_time"),
        slowdown=summarize(step / ideal if ideal > 0 else np.ones(steps), name="slowdown"),
        # the slowest rank never beats the mean one; rounding can leave a few attoseconds below
        compute_wait=max(0.0, float(np.mean(comp)) - _mean_rank_compute(profile, variability)),
        network_tail=float(np.mean(net)),
        variability=variability,
        contributions=parts,
    )


def steps_at_scale(variability: Variability, steps: int, n_ranks: int) -> int:
    """Monte Carlo steps for one scale of a scaling table: direct draws (OS noise) cost
    steps × ranks, so each scale keeps to :data:`MAX_DIRECT_DRAWS` (200 steps at a million
    ranks, never fewer than 2)."""
    if not variability.has_noise:
        return steps
    return max(2, min(steps, MAX_DIRECT_DRAWS // n_ranks))


def straggler_scaling(
    profile: StepProfile,
    variability: Variability,
    scales: Sequence[int] = (1024, 16384, 131072),
    *,
    steps: int = 10_000,
    seed: int = 0,
) -> list[StragglerResult]:
    """Straggler amplification as the job grows: the same per-rank step on each of ``scales``
    ranks (weak scaling, :meth:`StepProfile.at_scale`); persistently slow ranks keep their count.
    Uses the order-statistic method unless OS noise forces direct draws."""
    if not scales:
        raise FaultError("scales: empty; allowed: one or more rank counts, e.g. 1024,16384,131072")
    out = []
    for n in scales:
        out.append(
            simulate_stragglers(
                profile.at_scale(int(n)),
                variability,
                steps=steps_at_scale(variability, steps, int(n)),
                seed=seed,
                contributions=False,
            )
        )
    return out
