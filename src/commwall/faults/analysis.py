"""The scenario's ``faults:`` section, analysed against its simulated step.

:func:`analyse_faults` runs each section present — stragglers on the step's own profile
(:func:`~commwall.faults.stragglers.profile_from_report`), goodput with the job's GPUs, hosts and
NICs and the step's tokens/s — and returns a :class:`FaultsReport` that ``commwall run`` prints
and writes to JSON.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

from commwall.faults.bit_errors import BitErrorResult, cluster_bit_errors
from commwall.faults.errors import FaultError
from commwall.faults.failures import FailureImpact
from commwall.faults.goodput import GoodputResult, JobSize, RunPlan, goodput_study
from commwall.faults.stragglers import StragglerResult, Variability, simulate_stragglers
from commwall.scenario import (
    GoodputSpec,
    Scenario,
    ScenarioError,
    StragglersSpec,
    parse_scenario,
)

__all__ = [
    "DEFAULT_RUN_DAYS",
    "FaultsReport",
    "analyse_faults",
    "cluster_with_scenario_failures",
    "plan_from_spec",
    "rebuilt_scaling",
    "scenario_at_scale",
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
    if scenario.simulation.engine != "analytic" and not impact.runs_as_configured:
        cut = impact.endpoints_disconnected
        what = (
            f"cut {len(cut):,} endpoint(s) off the fabric (first: {', '.join(map(str, cut[:5]))})"
            if cut
            else f"leave {impact.pairs_without_route:,} of {impact.pairs:,} endpoint pairs "
            "without a route"
        )
        raise ScenarioError(
            [
                f"faults.failures: the failed parts {what}, so the step cannot run on the "
                f"{scenario.simulation.engine} engine; `commwall faults failures` reports what "
                "they do to the fabric without a step"
            ],
            scenario.name,
        )
    return cluster_with_failures(cluster, failed), impact


@contextmanager
def _section(name: str, scenario: Scenario) -> Iterator[None]:
    """A fault model's refusal (:class:`FaultError`) inside the block as a :class:`ScenarioError`
    naming the scenario section it came from."""
    try:
        yield
    except FaultError as err:
        raise ScenarioError([f"{name}: {err}"], scenario.name) from None


def analyse_faults(
    scenario: Scenario, report: Any, cluster: Any, failures: FailureImpact | None = None
) -> FaultsReport | None:
    """Analyse ``scenario.faults`` against its simulated ``report`` on ``cluster`` (``failures``:
    what :func:`cluster_with_scenario_failures` found, reported alongside). A fault model's
    refusal (:class:`FaultError`) comes back as :class:`ScenarioError` naming the section."""
    spec = scenario.faults
    if spec is None:
        return None
    seed = scenario.simulation.seed
    strag = None
    if spec.stragglers is not None:
        from commwall.faults.stragglers import profile_from_report

        with _section("faults.stragglers", scenario):
            if spec.stragglers.slow_ranks > report.n_gpus:
                raise FaultError(
                    f"slow_ranks: {spec.stragglers.slow_ranks:,}; allowed: at most the job's "
                    f"{int(report.n_gpus):,} ranks"
                )
            strag = simulate_stragglers(
                profile_from_report(report),
                variability_from_spec(spec.stragglers),
                steps=spec.stragglers.steps,
                seed=seed,
            )
    good = None
    if spec.goodput is not None:
        from commwall.faults.goodput import load_failure_model

        step = report.step_time if strag is None else strag.step_time.mean
        with _section("faults.goodput", scenario):
            job = JobSize(
                int(report.n_gpus),
                gpus_per_host=int(cluster.gpus_per_node),
                nics=int(cluster.n_nodes * cluster.nics_per_node),
            )
            good = goodput_study(
                job,
                plan_from_spec(spec.goodput, report.tokens_per_step / step, step),
                model=load_failure_model().with_scale(spec.goodput.failure_scale),
                samples=spec.goodput.samples,
                seed=seed,
            )
    bits = None
    if spec.bit_errors is not None:
        b = spec.bit_errors
        # over the fabric as built: a failed cable (capacity 0) has no line rate to draw bit
        # errors at, and counting it as live is the conservative side
        with _section("faults.bit_errors", scenario):
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


def scenario_at_scale(scenario: Scenario, gpus_per_node: int, n_gpus: int) -> Scenario:
    """``scenario`` weak-scaled to ``n_gpus``: the model-parallel layout (tp, cp, pp, ep, virtual
    stages) and every rank's batch stay; data parallelism, nodes and the global batch grow or
    shrink with the GPUs (with hybrid sharding the shard group stays and the replicas scale).
    Its ``faults`` section is dropped (the scaled step is its baseline).

    Raises :class:`FaultError` naming the scale when the GPUs do not fill whole nodes and
    model-parallel groups, or the scaled scenario is not valid."""
    job = scenario.job
    group = job.tp * job.cp * job.pp
    if n_gpus < 1 or n_gpus % gpus_per_node:
        raise FaultError(
            f"scales: {n_gpus:,} GPUs do not fill whole {gpus_per_node}-GPU nodes; "
            f"allowed: multiples of {gpus_per_node}"
        )
    if n_gpus % group:
        raise FaultError(
            f"scales: {n_gpus:,} GPUs do not split into model-parallel groups of tp x cp x pp = "
            f"{group}; allowed: multiples of {group}"
        )
    dp = job.dp if job.dp is not None else scenario.cluster.nodes * gpus_per_node // group
    per_replica, rest = divmod(job.global_batch, dp)
    if rest:
        raise FaultError(
            f"scales: the global batch {job.global_batch} does not split evenly over dp = {dp}, "
            "so there is no per-rank batch to keep; allowed: a global batch divisible by dp"
        )
    new_dp = n_gpus // group
    data = scenario.model_dump(mode="json", exclude_none=True)
    data["cluster"]["nodes"] = n_gpus // gpus_per_node
    data["job"]["dp"] = new_dp
    if job.dp_replicate > 1:  # hybrid sharding keeps its shard group; the replicas scale
        shard = dp * job.cp // job.dp_replicate
        replicas, rest = divmod(new_dp * job.cp, shard)
        if rest or replicas < 1:
            raise FaultError(
                f"scales: {n_gpus:,} GPUs give dp x cp = {new_dp * job.cp}, which the shard "
                f"group of {shard} ranks (job.dp_replicate {job.dp_replicate}) does not divide; "
                f"allowed: scales whose dp x cp is a multiple of {shard}"
            )
        data["job"]["dp_replicate"] = replicas
    data["job"]["global_batch"] = per_replica * new_dp
    data.pop("faults", None)
    try:
        return parse_scenario(data, origin=f"{scenario.name} at {n_gpus:,} GPUs")
    except ScenarioError as err:
        raise FaultError(f"scales: {n_gpus:,} GPUs: " + "; ".join(err.messages)) from None


def rebuilt_scaling(
    scenario: Scenario,
    variability: Variability,
    scales: list[int],
    *,
    gpus_per_node: int,
    steps: int = 10_000,
    seed: int = 0,
) -> list[StragglerResult]:
    """Straggler amplification as the job grows, with the step rebuilt at each scale: the
    weak-scaled scenario (:func:`scenario_at_scale`) is simulated with the analytic engine —
    NCCL's algorithm choice at that size, so a data-parallel all-reduce over 16,384 ranks waits
    on the message steps of the tree or ring NCCL would pick there — and its step perturbed by
    ``variability`` like the scenario's own (:func:`~commwall.faults.stragglers.simulate_stragglers`).
    """
    from commwall.faults.stragglers import profile_from_report, steps_at_scale
    from commwall.workload.simulate import simulate

    if not scales:
        raise FaultError("scales: empty; allowed: one or more GPU counts, e.g. 1024,16384,131072")
    out = []
    for n in scales:
        scaled = scenario_at_scale(scenario, gpus_per_node, int(n))
        analytic = scaled.model_copy(
            update={"simulation": scaled.simulation.model_copy(update={"engine": "analytic"})}
        )
        try:
            report = simulate(analytic)
        except ScenarioError as err:
            raise FaultError(f"scales: {n:,} GPUs: " + "; ".join(err.messages)) from None
        k = steps_at_scale(variability, steps, int(n))
        out.append(
            simulate_stragglers(
                profile_from_report(report), variability, steps=k, seed=seed, contributions=False
            )
        )
    return out
