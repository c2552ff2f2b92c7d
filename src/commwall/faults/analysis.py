"""The scenario's ``faults:`` section, analysed against its simulated step.

:func:`analyse_faults` runs each section present — stragglers on the step's own profile
(:func:`~commwall.faults.stragglers.profile_from_report`), goodput with the job's GPUs, hosts and
NICs and the step's tokens/s — and returns a :class:`FaultsReport` that ``commwall run`` prints
and writes to JSON.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from commwall.faults.bit_errors import BitErrorResult, cluster_bit_errors
from commwall.faults.failures import FailureImpact
from commwall.faults.goodput import GoodputResult, JobSize, RunPlan, goodput_study
from commwall.faults.stragglers import StragglerResult, Variability, simulate_stragglers
from commwall.io.scenario import GoodputSpec, Scenario, StragglersSpec

__all__ = [
    "DEFAULT_RUN_DAYS",
    "FaultsReport",
    "analyse_faults",
    "cluster_with_scenario_failures",
    "plan_from_spec",
    "variability_from_spec",
]

#: Failure-free training time when a goodput section names no token count (days).
DEFAULT_RUN_DAYS = 30.0


def variability_from_spec(spec: StragglersSpec) -> Variability:
    """The :class:`Variability` a ``faults.stragglers`` section describes."""
    return Variability(
        jitter=spec.jitter,
        distribution=spec.distribution,
        empirical=tuple(spec.empirical),
        slow_ranks=spec.slow_ranks,
        slowdown=spec.slowdown,
        os_noise_rate=spec.os_noise_rate,
        os_noise_duration=spec.os_noise_duration,
        message_tail=spec.message_tail,
        clock_jitter=spec.clock_jitter,
    )


def plan_from_spec(spec: GoodputSpec, tokens_per_s: float, step_time: float) -> RunPlan:
    """The :class:`RunPlan` of a ``faults.goodput`` section: ``tokens`` ÷ ``tokens_per_s`` of
    work (default :data:`DEFAULT_RUN_DAYS`), the interval never shorter than one step."""
    solve = spec.tokens / tokens_per_s if spec.tokens else DEFAULT_RUN_DAYS * 86400.0
    interval = None if spec.interval is None else max(spec.interval, step_time)
    return RunPlan(solve=solve, checkpoint=spec.checkpoint, restart=spec.restart, interval=interval)


@dataclass(frozen=True)
class FaultsReport:
    """What each analysed section found (None where the scenario has no such section)."""

    stragglers: StragglerResult | None = None
    goodput: GoodputResult | None = None
    failures: FailureImpact | None = None
    bit_errors: BitErrorResult | None = None
    tokens_per_s: float = 0.0
    engine: str = "analytic"

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return {
            "stragglers": None if self.stragglers is None else self.stragglers.to_dict(),
            "goodput": None if self.goodput is None else self.goodput.to_dict(),
            "failures": None if self.failures is None else self.failures.to_dict(),
            "bit_errors": None if self.bit_errors is None else self.bit_errors.to_dict(),
            "step_sees_failures": self.failures is not None and self.engine == "flow",
        }

    @property
    def effective_tokens_per_s(self) -> float:
        """Tokens/s after stragglers (mean step) and failures (mean goodput)."""
        rate = self.tokens_per_s
        if self.stragglers is not None:
            rate *= self.stragglers.ideal / self.stragglers.step_time.mean
        if self.goodput is not None:
            rate *= self.goodput.goodput.mean
        return rate


def cluster_with_scenario_failures(
    scenario: Scenario, cluster: Any
) -> tuple[Any, FailureImpact | None]:
    """``cluster`` with the fabric failures of ``scenario.faults.failures`` applied (random parts
    drawn with ``simulation.seed``), and their impact on the fabric (bisection, disconnected
    endpoints, surviving routes; no workloads: the step itself is the workload)."""
    spec = scenario.faults.failures if scenario.faults is not None else None
    if spec is None:
        return cluster, None
    import numpy as np

    from commwall.faults.failures import (
        FailureSpec,
        cluster_with_failures,
        fail_parts,
        failure_impact,
    )

    fabric = cluster.scale_out_topology()
    wanted = FailureSpec(
        cables=tuple(spec.cables),
        switches=tuple(int(s) if s.isdigit() else s for s in spec.switches),
        random_cables=dict(spec.random_cables),
        random_switches=dict(spec.random_switches),
    )
    failed = fail_parts(fabric, wanted, np.random.default_rng(scenario.simulation.seed))
    impact = failure_impact(
        fabric, failed, cluster=cluster, baseline={}, seed=scenario.simulation.seed
    )
    return cluster_with_failures(cluster, failed), impact


def analyse_faults(
    scenario: Scenario, report: Any, cluster: Any, failures: FailureImpact | None = None
) -> FaultsReport | None:
    """Analyse ``scenario.faults`` against its simulated ``report`` on ``cluster`` (``failures``:
    what :func:`cluster_with_scenario_failures` found, reported alongside)."""
    spec = scenario.faults
    if spec is None:
        return None
    seed = scenario.simulation.seed
    strag = None
    if spec.stragglers is not None:
        from commwall.faults.stragglers import profile_from_report

        strag = simulate_stragglers(
            profile_from_report(report),
            variability_from_spec(spec.stragglers),
            steps=spec.stragglers.steps,
            seed=seed,
        )
    good = None
    if spec.goodput is not None:
        step = report.step_time if strag is None else strag.step_time.mean
        tokens_per_s = report.tokens_per_step / step
        job = JobSize(
            int(report.n_gpus),
            gpus_per_host=int(cluster.gpus_per_node),
            nics=int(cluster.n_nodes * cluster.nics_per_node),
        )
        from commwall.faults.goodput import load_failure_model

        good = goodput_study(
            job,
            plan_from_spec(spec.goodput, tokens_per_s, step),
            model=load_failure_model().with_scale(spec.goodput.failure_scale),
            samples=spec.goodput.samples,
            seed=seed,
        )
    bits = None
    if spec.bit_errors is not None:
        b = spec.bit_errors
        # over the fabric as built: a failed cable (capacity 0) has no line rate to draw bit
        # errors at, and counting it as live is the conservative side
        bits = cluster_bit_errors(
            replace(cluster, scale_out=None),
            pre_fec_ber=b.pre_fec_ber,
            seed=seed,
            fec=b.fec,
            ber_spread=b.ber_spread,
            utilisation=b.utilisation,
            step_time=report.step_time,
            run_days=b.run_days,
            samples=b.samples,
        )
    return FaultsReport(
        stragglers=strag,
        goodput=good,
        failures=failures,
        bit_errors=bits,
        tokens_per_s=report.tokens_per_step / report.step_time,
        engine=scenario.simulation.engine,
    )
