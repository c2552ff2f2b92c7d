"""``commwall faults stragglers`` and ``commwall faults goodput``: variability within a step and
failures over a run, each as a distribution with 95% confidence intervals.

>>> # commwall faults stragglers --jitter 2% --message-tail 2us --scales 1024,16384,131072
>>> # commwall faults stragglers --scenario examples/llama3-405b-16k-h100.yaml --slow-ranks 1
>>> # commwall faults goodput --gpus 16384 --checkpoint 60s --restart 10min --days 50
>>> # commwall faults goodput --scenario examples/llama3-405b-16k-h100.yaml --tokens 15T
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from commwall.console import fail, friendly, out


def add_commands(app: typer.Typer) -> None:
    """Add ``stragglers`` and ``goodput`` to the ``commwall faults`` sub-app."""
    app.command("stragglers")(friendly(stragglers))
    app.command("goodput")(friendly(goodput))


# ---- parsing ---------------------------------------------------------------------------------


def _fraction(option: str, value: str) -> float:
    """``2%`` or ``0.02``."""
    text = value.strip()
    try:
        return float(text[:-1]) / 100.0 if text.endswith("%") else float(text)
    except ValueError:
        fail(f"{option}: {value!r} is not a fraction; allowed: e.g. 0.02 or 2%")


def _time(option: str, value: str | None) -> float | None:
    from commwall.units import UnitError, parse_time

    if value is None:
        return None
    try:
        return parse_time(value)
    except UnitError as e:
        fail(f"{option}: {e}")


def _scales(value: str | None) -> list[int]:
    if not value:
        return []
    try:
        scales = [int(x.replace("_", "")) for x in value.split(",") if x.strip()]
    except ValueError:
        fail(f"--scales: {value!r}; allowed: comma-separated rank counts, e.g. 1024,16384,131072")
    if any(n < 1 or n > 10_000_000 for n in scales):
        fail(f"--scales: {value!r}; allowed: rank counts 1..10,000,000")
    return scales


def _empirical(path: Path | None) -> tuple[float, ...]:
    if path is None:
        return ()
    try:
        text = path.read_text()
    except OSError as e:
        fail(f"--empirical: cannot read {str(path)!r}: {e.strerror or e}")
    values: list[float] = []
    for n, line in enumerate(text.splitlines(), start=1):
        for cell in line.replace(",", " ").split():
            try:
                values.append(float(cell))
            except ValueError:
                fail(f"--empirical: {path}:{n}: {cell!r} is not a number (seconds per step)")
    return tuple(values)


def _scenario_report(scenario: Path | None) -> Any:
    from commwall.cluster import build_cluster
    from commwall.defaults import default_scenario
    from commwall.scenario import load_scenario
    from commwall.workload.simulate import simulate

    sc = load_scenario(scenario) if scenario is not None else default_scenario()
    cluster = build_cluster(sc.cluster)
    return sc, cluster, simulate(sc, cluster)


# ---- stragglers ------------------------------------------------------------------------------


def stragglers(
    scenario: Annotated[
        Path | None,
        typer.Option(help="Scenario YAML whose step is perturbed (default: the built-in one)."),
    ] = None,
    compute: Annotated[
        str | None,
        typer.Option(help="Instead of a scenario: per-rank compute per step, e.g. 1s."),
    ] = None,
    fixed: Annotated[
        str, typer.Option(help="With --compute: the rest of the step (not jittered), e.g. 0.2s.")
    ] = "0s",
    gpus: Annotated[
        int | None, typer.Option(min=1, help="Ranks that synchronise (default: the scenario's).")
    ] = None,
    jitter: Annotated[
        str, typer.Option(help="Compute coefficient of variation per rank and step: 2% or 0.02.")
    ] = "0",
    distribution: Annotated[
        str, typer.Option(help="normal, lognormal or empirical (with --empirical FILE).")
    ] = "normal",
    empirical: Annotated[
        Path | None,
        typer.Option(help="File of measured per-rank step times (numbers, any separator)."),
    ] = None,
    slow_ranks: Annotated[int, typer.Option(min=0, help="Persistently slow ranks.")] = 0,
    slowdown: Annotated[
        float, typer.Option(help="Compute multiplier of the slow ranks, e.g. 1.2.")
    ] = 1.0,
    os_noise_rate: Annotated[
        float, typer.Option(min=0.0, help="OS-noise interruptions per second per rank.")
    ] = 0.0,
    os_noise_duration: Annotated[
        str, typer.Option(help="Time each OS-noise interruption steals, e.g. 50us.")
    ] = "0s",
    message_tail: Annotated[
        str, typer.Option(help="Mean extra latency per network message (exponential), e.g. 2us.")
    ] = "0s",
    clock_jitter: Annotated[
        str, typer.Option(help="Clock-offset std per message, folded into latency, e.g. 5ns.")
    ] = "0s",
    steps: Annotated[int, typer.Option(min=2, help="Monte Carlo steps.")] = 10_000,
    scales: Annotated[
        str | None,
        typer.Option(help="Also show straggler amplification at these rank counts (1024,16384)."),
    ] = None,
    method: Annotated[str, typer.Option(help="auto, order (order statistics) or direct.")] = "auto",
    seed: Annotated[int, typer.Option(min=0, help="Seed of every draw.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """A synchronous step moves at the speed of its slowest rank and slowest message: the
    step-time distribution (mean, p50, p99 with 95% intervals), what each source of variability
    costs, and how it grows with the job."""
    from commwall.faults.stragglers import (
        StepProfile,
        Variability,
        profile_from_report,
        simulate_stragglers,
        straggler_scaling,
    )

    sc = None
    if compute is not None:
        if scenario is not None:
            fail("--compute and --scenario exclude each other: give one")
        c, f = _time("--compute", compute), _time("--fixed", fixed)
        assert c is not None and f is not None
        profile = StepProfile(compute=c, n_ranks=gpus or 1024, fixed=f)
        label = f"compute {compute} + fixed {fixed} per step"
    else:
        sc, cluster, report = _scenario_report(scenario)
        profile = profile_from_report(report)
        if gpus is not None:
            profile = profile.at_scale(gpus)
        label = sc.name
    v = Variability(
        jitter=_fraction("--jitter", jitter),
        distribution=distribution,
        empirical=_empirical(empirical),
        slow_ranks=slow_ranks,
        slowdown=slowdown,
        os_noise_rate=os_noise_rate,
        os_noise_duration=_time("--os-noise-duration", os_noise_duration) or 0.0,
        message_tail=_time("--message-tail", message_tail) or 0.0,
        clock_jitter=_time("--clock-jitter", clock_jitter) or 0.0,
    )
    result = simulate_stragglers(profile, v, steps=steps, seed=seed, method=method)  # type: ignore[arg-type]
    if not scales:
        scaled = []
    elif sc is None:  # a bare profile: the same per-rank step at every scale
        scaled = straggler_scaling(profile, v, _scales(scales), steps=steps, seed=seed)
    else:  # a scenario: its step rebuilt at every scale
        from commwall.faults.analysis import rebuilt_scaling

        scaled = rebuilt_scaling(
            sc, v, _scales(scales), gpus_per_node=cluster.gpus_per_node, steps=steps, seed=seed
        )
    if as_json:
        data = {"scenario": label, **result.to_dict(), "scaling": [r.to_dict() for r in scaled]}
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
        return
    out.print(f"[bold]stragglers[/]: {escape(label)}; {profile.n_ranks:,} ranks, {steps:,} steps "
              f"({result.method} sampling)")  # fmt: skip
    print_stragglers(result)
    if scaled:
        print_scaling(scaled, rebuilt=sc is not None)


def _ci(interval: tuple[float, float], fmt: Any) -> str:
    lo, hi = interval
    return f"[{fmt(lo)}, {fmt(hi)}]"


def print_stragglers(r: Any) -> None:
    """Step-time distribution and the cost of each source of variability."""
    from commwall.units import format_time

    s = r.step_time
    table = Table(show_header=True, header_style="bold")
    for col in ("", "value", "95% interval"):
        table.add_column(col, justify="right")
    table.add_row("ideal step (no variability)", format_time(r.ideal), "")
    table.add_row("mean step", format_time(s.mean), _ci(s.mean_ci, format_time))
    for q in (0.5, 0.99):
        table.add_row(
            f"p{q * 100:g} step",
            format_time(s.quantile(q)),
            _ci(s.quantile_interval(q), format_time),
        )
    table.add_row("max step seen", format_time(s.maximum), "")
    table.add_row(
        "mean slowdown", f"{r.slowdown.mean:.4f}x", _ci(r.slowdown.mean_ci, "{:.4f}x".format)
    )
    out.print(table)
    out.print(
        f"waiting on stragglers: {r.waiting_share:.1%} of the mean step "
        f"(slowest rank {format_time(r.compute_wait)}, slowest messages "
        f"{format_time(r.network_tail)} per step)"
    )
    if r.contributions:
        parts = ", ".join(f"{k} +{format_time(v)}" for k, v in r.contributions.items())
        out.print(f"each source alone adds per step: {parts}")


def print_scaling(results: list[Any], *, rebuilt: bool = False) -> None:
    """Straggler amplification as the job grows: each scale's own step (``rebuilt``: the
    scenario weak-scaled and simulated there) or the same per-rank step."""
    from commwall.units import format_time

    title = (
        "Straggler amplification (step rebuilt at each scale)"
        if rebuilt
        else "Straggler amplification (same per-rank step)"
    )
    table = Table(title=title, title_justify="left")
    for col in ("ranks", "ideal step", "mean step", "p99 step", "slowdown", "waiting"):
        table.add_column(col, justify="right")
    for r in results:
        table.add_row(
            f"{r.n_ranks:,}",
            format_time(r.ideal),
            format_time(r.step_time.mean),
            format_time(r.step_time.quantile(0.99)),
            f"{r.slowdown.mean:.4f}x",
            f"{r.waiting_share:.1%}",
        )
    out.print(table)
    if rebuilt:
        out.print(
            "each scale: same model parallelism and per-rank batch, data parallelism grown with "
            "the GPUs (analytic engine)"
        )


# ---- goodput ---------------------------------------------------------------------------------


def goodput(
    scenario: Annotated[
        Path | None,
        typer.Option(help="Scenario YAML: its GPUs, hosts, NICs and tokens/s (default: built-in)."),
    ] = None,
    gpus: Annotated[
        int | None, typer.Option(min=1, help="Instead of a scenario: GPUs in the job.")
    ] = None,
    gpus_per_host: Annotated[int, typer.Option(min=1, help="With --gpus: GPUs per host.")] = 8,
    days: Annotated[
        float | None, typer.Option(help="Failure-free training days (default 30, or --tokens).")
    ] = None,
    tokens: Annotated[
        str | None,
        typer.Option(help="Tokens to train on, e.g. 15T (uses the scenario's tokens/s)."),
    ] = None,
    checkpoint: Annotated[str, typer.Option(help="Time to write one checkpoint.")] = "60s",
    restart: Annotated[
        str, typer.Option(help="Failure to training again: detect, reschedule, reload.")
    ] = "10min",
    interval: Annotated[
        str | None, typer.Option(help="Work between checkpoints (default: Daly's optimum).")
    ] = None,
    failure_scale: Annotated[
        float, typer.Option(help="Multiplier on every failure rate (1 = Llama 3's record).")
    ] = 1.0,
    scales: Annotated[
        str | None, typer.Option(help="Also show goodput at these GPU counts, e.g. 1024,16384.")
    ] = "1024,4096,16384,65536,131072",
    samples: Annotated[int, typer.Option(min=2, help="Monte Carlo runs.")] = 1000,
    seed: Annotated[int, typer.Option(min=0, help="Seed of every draw.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Failures interrupt a synchronous job; checkpoints bound what each costs. The job's mean
    time between interruptions (from Meta's Llama 3 record, with its uncertainty), Young's and
    Daly's checkpoint intervals, goodput and wall-clock days as distributions."""
    from commwall.faults.goodput import JobSize, RunPlan, goodput_study, load_failure_model
    from commwall.scenario import parse_count

    if days is not None and tokens is not None:
        fail("--days and --tokens exclude each other: give one")
    if gpus is not None:
        if scenario is not None:
            fail("--gpus and --scenario exclude each other: give one")
        if tokens is not None:
            fail("--tokens needs a scenario (its tokens/s); with --gpus give --days")
        job, label, rate = JobSize(gpus, gpus_per_host), f"{gpus:,} GPUs", None
    else:
        sc, cluster, report = _scenario_report(scenario)
        nics = cluster.n_nodes * cluster.nics_per_node
        job = JobSize(report.n_gpus, cluster.gpus_per_node, nics)
        label, rate = sc.name, report.tokens_per_second
    if tokens is not None:
        try:
            count = parse_count(tokens)
        except ValueError as e:
            fail(f"--tokens: {e}")
        assert rate is not None
        solve = count / rate
    else:
        solve = (days if days is not None else 30.0) * 86400.0
    if not solve > 0:
        fail(f"--days/--tokens: the run must be longer than 0 (got {solve} s)")
    plan = RunPlan(
        solve=solve,
        checkpoint=_time("--checkpoint", checkpoint) or 0.0,
        restart=_time("--restart", restart) or 0.0,
        interval=_time("--interval", interval),
    )
    result = goodput_study(
        job,
        plan,
        model=load_failure_model().with_scale(failure_scale),
        samples=samples,
        seed=seed,
        scales=_scales(scales),
    )
    if as_json:
        sys.stdout.write(json.dumps({"scenario": label, **result.to_dict()}, indent=2) + "\n")
        return
    out.print(f"[bold]goodput[/]: {escape(label)}; {job.gpus:,} GPUs in {job.count('host'):,} "
              f"hosts, {job.count('nic'):,} NICs; {solve / 86400:,.1f} days of failure-free "
              f"training")  # fmt: skip
    print_goodput(result)


def print_goodput(r: Any) -> None:
    """Interruption rate, checkpoint intervals, goodput and days, and goodput vs job size."""
    from commwall.units import format_time

    lo, hi = r.mtbf_hours_ci
    causes = sorted(r.rates_per_hour.items(), key=lambda kv: -kv[1])
    total = sum(r.rates_per_hour.values())
    top = ", ".join(f"{k} {v / total:.0%}" for k, v in causes[:3])
    out.print(
        f"interruptions: one every {r.mtbf_hours:.2f} h (95% interval {lo:.2f}–{hi:.2f} h); "
        f"causes: {top} (Llama 3 405B record, estimate)"
    )
    out.print(
        f"checkpoint {format_time(r.plan.checkpoint)}, restart {format_time(r.plan.restart)}; "
        f"interval {format_time(r.interval)} (Young {format_time(r.young)}, Daly "
        f"{format_time(r.daly)})"
    )
    table = Table(show_header=True, header_style="bold")
    for col in ("", "mean", "95% interval of mean", "p5", "p95"):
        table.add_column(col, justify="right")
    for name, s, fmt in (
        ("goodput", r.goodput, "{:.1%}".format),
        ("wall-clock days", r.wall_days, "{:,.2f}".format),
        ("interruptions", r.interruptions, "{:,.0f}".format),
    ):
        table.add_row(
            name, fmt(s.mean), _ci(s.mean_ci, fmt), fmt(s.quantile(0.05)), fmt(s.quantile(0.95))
        )
    out.print(table)
    out.print(f"expected goodput (Daly's closed form): {r.goodput_expected:.1%}")
    if r.scaling:
        t = Table(
            title="Goodput as the job grows (each at its Daly interval)", title_justify="left"
        )
        for col in ("GPUs", "MTBF", "interval", "goodput"):
            t.add_column(col, justify="right")
        for row in r.scaling:
            t.add_row(
                f"{row['gpus']:,.0f}",
                f"{row['mtbf_hours']:.2f} h",
                format_time(row["interval_s"]),
                f"{row['goodput']:.1%}",
            )
        out.print(t)


def print_failures(impact: Any, engine: str) -> None:
    """What the scenario's failed cables and switches do to its fabric and step."""
    d = impact.to_dict()
    cables = ", ".join(f"{n} {k}" for k, n in d["failed_cables"].items()) or "none"
    switches = ", ".join(d["failed_switches"]) or "none"
    out.print(f"[bold]faults: failures[/] cables {cables}; switches {escape(switches)}")
    out.print(
        f"bisection {d['bisection_before_Bps'] / 1e12:,.2f} → {d['bisection_after_Bps'] / 1e12:,.2f}"
        f" TB/s ({d['bisection_loss']:.1%} lost, {d['bisection_method']}); endpoints cut off "
        f"{len(d['endpoints_disconnected'])}; pairs without a route {d['pairs_without_route']:,}"
    )
    if not d["runs_as_configured"]:
        out.print(
            f"the job cannot run as configured: {d['ranks_remaining']:,} of {d['ranks_total']:,} "
            "ranks remain reachable; rings must re-form without the cut-off nodes"
        )
    elif engine == "flow":
        out.print("the step above ran on the failed fabric (flow engine, re-routed)")
    else:
        out.print(
            "the step above is the analytic engine's, which does not see the fabric's links: "
            "run with --engine flow to re-route the step around the failures"
        )


def print_faults(report: Any) -> None:
    """The ``faults:`` block of ``commwall run``."""
    if report.failures is not None:
        print_failures(report.failures, report.engine)
    if report.stragglers is not None:
        r = report.stragglers
        out.print(f"[bold]faults: stragglers[/] ({r.steps:,} steps)")
        print_stragglers(r)
    if report.goodput is not None:
        out.print("[bold]faults: goodput[/]")
        print_goodput(report.goodput)
    if report.bit_errors is not None:
        r = report.bit_errors
        year = 365.25 * 86400
        lo, hi = r.time_between.quantile_interval(0.5)
        out.print(
            f"[bold]faults: bit errors[/] {r.n_links:,} links at median pre-FEC BER "
            f"{r.pre_fec_ber:.1e}: a silent corruption every {r.time_between.quantile(0.5) / year:.3g}"
            f" years (95% interval {lo / year:.3g}–{hi / year:.3g}); P(one in the run) "
            f"{r.p_any_in_run.mean:.2g}; {r.flagged['all'].mean:,.0f} links miss the post-FEC target"
        )
    out.print(
        f"effective throughput after faults: {report.effective_tokens_per_s:,.0f} tokens/s "
        f"(ideal {report.tokens_per_s:,.0f})"
    )
