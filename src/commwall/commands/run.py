"""``commwall run SCENARIO``: simulate one training step and print where its time goes."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from commwall.console import (
    check_outputs,
    err,
    event_progress,
    fail,
    friendly,
    out,
    show_gbps,
    show_seconds,
    show_size,
    write_parquet,
)
from commwall.report.fmt import held_bytes, mtp_note, sharding_and_kernel
from commwall.scenario import ENGINES


def register(app: typer.Typer) -> None:
    """Add ``commwall run`` to ``app``."""
    app.command("run")(friendly(run))


def run(
    scenario: Annotated[
        Path | None, typer.Argument(help="Scenario YAML; omit for the built-in default.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the full result as JSON.")] = False,
    engine: Annotated[
        str | None,
        typer.Option(help="analytic or flow (default: the scenario's simulation.engine)."),
    ] = None,
    routing: Annotated[
        str | None,
        typer.Option(
            help="Flow engine load balancing: ecmp, flowlet, spray, cells, adaptive, pxn "
            "(POLICY+pxn combines); default the scenario's cluster.routing."
        ),
    ] = None,
    trace: Annotated[
        Path | None,
        typer.Option(help="Write the step timeline as a Perfetto/Chrome trace JSON here."),
    ] = None,
    parquet: Annotated[
        Path | None,
        typer.Option(help="Write the step timeline (one row per phase) as Parquet here."),
    ] = None,
) -> None:
    """Simulate one training step: where the time goes and how much of it is waiting."""
    from commwall.cluster import build_cluster
    from commwall.defaults import default_scenario
    from commwall.scenario import ScenarioError, load_scenario
    from commwall.workload.simulate import simulate

    check_outputs(("--trace", trace), ("--parquet", parquet))
    sc = load_scenario(scenario) if scenario is not None else default_scenario()
    sc = _override(sc, engine, routing)
    faults = failures = None
    try:
        cluster = build_cluster(sc.cluster)
        if sc.faults is not None:  # imported only when asked for: keeps the plain run fast
            from commwall.faults.analysis import cluster_with_scenario_failures

            cluster, failures = cluster_with_scenario_failures(sc, cluster)
        if sc.simulation.engine == "analytic":  # instant: nothing to show
            report = simulate(sc, cluster)
        else:
            label = f"{sc.name} on the {sc.simulation.engine} engine"
            with event_progress(label, quiet=as_json) as progress:
                report = simulate(sc, cluster, progress=progress)
        if sc.faults is not None:
            from commwall.faults.analysis import analyse_faults

            faults = analyse_faults(sc, report, cluster, failures)
    except ScenarioError as e:  # name the file, not "scenario"
        raise ScenarioError(e.messages, str(scenario or "built-in default scenario")) from None
    if trace is not None:
        write_trace_file(trace, report.result)
    if parquet is not None:
        from commwall.io.parquet import phase_records

        summary = {
            k: v for k, v in report.to_dict().items() if k not in ("collectives", "timeline")
        }
        write_parquet(parquet, phase_records(report.result.phases), summary)
    if as_json:
        data = report.to_dict()
        if faults is not None:
            data["faults"] = faults.to_dict()
        data["known_compute_bias"] = _bias_note(report)
        data["accuracy"] = _accuracy(report)
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
        return
    _print_report(report)
    _print_flow_details(report.result)
    _print_caveats(scenario, sc, report)
    if faults is not None:
        from commwall.commands.faults_variability import print_faults

        print_faults(faults)


def _print_caveats(path: Path | None, sc: Any, report: Any) -> None:
    """Say so when the step ran a job the file did not describe, or one that cannot run."""
    if path is not None and "job" not in sc.model_fields_set:
        j = report.job
        err.print(
            f"note: {escape(str(path))} describes no job, so this is the default job "
            f"({j['model']}, TP {j['tp']} x PP {j['pp']} x DP {j['dp']}); add a job: section "
            "for yours (model, tp, pp, global_batch; docs/compute-model.md)"
        )
    if sc.job.megatron_args is not None:
        _print_megatron_caveats(sc.job.megatron_args, dict(sc.job.megatron_vars or ()))
    if not report.fits_in_memory:
        err.print(
            f"[bold red]warning:[/] the job needs {report.memory.total / 1e9:,.1f} GB per GPU "
            f"and the GPU has {report.hbm_bytes / 1e9:,.0f} GB: it cannot run as described, so "
            "the step time above is not one a cluster would measure; raise job.tp, job.pp or "
            "job.zero_stage, or set job.recompute: full"
        )


def _print_megatron_caveats(source: Any, variables: dict[str, str]) -> None:
    """What the job's Megatron-LM arguments (or Megatron-Bridge configuration) hold that the
    step does not price, or that commwall does not know (``commwall megatron FILE`` prints the
    whole reading)."""
    from commwall.megatron_args import MegatronArgsError
    from commwall.megatron_bridge import is_bridge_config, launch_job
    from commwall.scenario import megatron_source

    args = megatron_source(source)[0]
    try:
        read = launch_job(args, variables)
    except MegatronArgsError:  # the refusals a job lifts: it named its dispatcher, its sequence
        read = launch_job(args, variables, dispatcher_given=True, seq_len_given=True)
    for line in read.not_priced:
        err.print(f"note: not priced: {escape(line)}")
    if read.unread:
        kind = "Megatron-Bridge fields" if is_bridge_config(args) else "Megatron-LM flags"
        err.print(
            f"note: {kind} not read (unknown to commwall; check they change neither the "
            f"model nor the step): {escape(', '.join(read.unread))}"
        )


def _override(sc: Any, engine: str | None, routing: str | None) -> Any:
    """``sc`` with ``--engine``/``--routing`` applied (validated here: model_copy does not)."""
    if engine is not None:
        if engine not in ENGINES:
            fail(f"--engine: {engine!r} is not allowed; allowed: {', '.join(ENGINES)}")
        sim = sc.simulation.model_copy(update={"engine": engine})
        sc = sc.model_copy(update={"simulation": sim})
    if routing is not None:
        from commwall.scenario import cluster_routing

        try:  # the scenario's own rule, so the design round-trips through a saved file
            name = cluster_routing(routing)
        except ValueError as e:
            fail(f"--routing: {e}")
        cluster = sc.cluster.model_copy(update={"routing": name})
        sc = sc.model_copy(update={"cluster": cluster})
    return sc


def write_trace_file(path: Path, result: Any) -> None:
    """Write ``result`` as a Perfetto trace (link utilisation as counters when the engine has it)."""
    from commwall.io.trace import trace_events, write_trace

    counters = result.details.get("link_utilisation") or None
    try:
        write_trace(path, trace_events(result.phases, counters=counters))
    except OSError as e:
        fail(f"--trace: cannot write {str(path)!r}: {e.strerror or e}")
    err.print(f"trace written to {path} (open it in ui.perfetto.dev)")


def _print_flow_details(result: Any) -> None:
    """The flow engine's busiest links, when the result has them."""
    links = result.details.get("busiest_links")
    if not links:
        return
    out.print(
        f"flow engine ({result.details.get('routing')}): "
        f"{result.counters.get('flows', 0):,.0f} flows, {result.counters.get('events', 0):,.0f} "
        f"rate recomputations; busiest links:"
    )
    for row in links:
        out.print(
            f"  {escape(row['name'])} ({row['class']}): mean {row['mean_utilisation']:.0%}, "
            f"peak {row['peak_utilisation']:.0%} of {show_gbps(row['capacity_Bps'])}"
        )


def _print_power(f: dict[str, Any]) -> None:
    w = f["power_w"]
    out.print(
        f"power    {f['total_power_w'] / 1e3:,.0f} kW: GPUs {w['gpus'] / 1e3:,.0f} kW, network "
        f"{f['network_power_w'] / 1e3:,.1f} kW (switches {w['switches'] / 1e3:,.1f}, "
        f"{f['transceivers']:,} {f['optics'].upper()} transceivers {w['optics'] / 1e3:,.1f}, "
        f"NICs {w['nics'] / 1e3:,.1f}); network ~${f['network_cost_usd_estimate'] / 1e6:,.1f}M "
        f"(estimate)"
    )


def _bias_note(report: Any) -> str | None:
    """What the validation knows of the kernel compute model on this GPU
    (:mod:`commwall.validation.known_bias`), or None."""
    from commwall.validation.known_bias import compute_bias_note

    j = report.job
    return compute_bias_note(
        str(report.cluster.get("gpu")),
        kernel_model=j.get("compute_model") == "kernels",
        compute_scale=float(j.get("compute_scale", 1.0)),
    )


def _accuracy(report: Any) -> dict[str, Any] | None:
    """How close the kernel model came to the published runs of this job's regime
    (:mod:`commwall.validation.accuracy`): the cell quoted and its sentence, or None."""
    from dataclasses import asdict

    from commwall.validation.accuracy import quoted_cell

    j, c = report.job, report.cluster
    cell = quoted_cell(
        str(c.get("gpu")),
        moe=int(j.get("experts") or 1) > 1,
        sync_free=bool(j.get("moe_sync_free")),
        gpus=int(c.get("gpus") or 0),
        kernel_model=j.get("compute_model") == "kernels",
        compute_scale=float(j.get("compute_scale", 1.0)),
        measured_host_wait=bool(j.get("moe_host_wait_set")),
    )
    return None if cell is None else {**asdict(cell), "note": cell.note()}


def _print_report(report: Any) -> None:
    from commwall.workload.simulate import CATEGORIES, CATEGORY_LABELS, COMM_CATEGORIES

    c, j = report.cluster, report.job
    out.print(f"[bold]{escape(report.scenario)}[/]")
    out.print(
        f"cluster  {c['gpus']:,} x {c['gpu']} in {c['nodes']:,} nodes; scale-up {c['scale_up']} "
        f"domain of {c['scale_up_domain']} at {show_gbps(c['scale_up_bw_per_gpu'])}/GPU; "
        f"scale-out {c['nic']} ({c['fabric']}, {show_gbps(c['net_bw_per_gpu'])}/GPU achievable), "
        + (
            f"{c['topology']} {c['tiers']}-tier {c['switch']}, oversubscription "
            f"{c['oversubscription']:g}:1"
            if report.fabric.get("needed", True)
            else "no switches (one node)"
        )
    )
    if c.get("calibration"):
        fitted = ", ".join(
            f"{k} bandwidth x{v['bandwidth_factor']:.3g} latency {v['latency'] * 1e6:+.3g} us/step"
            for k, v in c["calibration"].items()
            if isinstance(v, dict)
        )
        out.print(f"         calibrated: {fitted}")
    out.print(
        f"job      {j['model']} ({j['params'] / 1e9:,.1f} B params{mtp_note(j)}), TP {j['tp']}"
        + (f" x CP {j['cp']} ({_cp_comm(j)})" if j.get("cp", 1) > 1 else "")
        + f" x PP {j['pp']} x DP {j['dp']}"
        + (f" x EP {j['ep']} ({j['moe_dispatcher']})" if j["ep"] > 1 else "")
        + f"; {j['global_batch']} x {j['seq_len']} tokens per step, micro-batch "
        f"{j['micro_batch']} ({j['micro_batches']} per step), {j['precision']}"
        + held_bytes(j)
        + sharding_and_kernel(j)
    )
    f = report.fabric
    tiers = ", ".join(f"{n:,} tier-{t}" for t, n in sorted(f["switches_per_tier"].items()))
    out.print(
        f"fabric   {f['switches']:,} switches ({tiers}), {f['cables']:,} cables, bisection "
        f"{f['bisection_Bps'] / 1e12:,.1f} TB/s per direction, diameter {f['diameter_links']} links"
        if f.get("needed", True)
        else "fabric   none: one node, no traffic leaves it"
    )
    if "bom_error" in f:
        out.print(f"power    not computed: {escape(f['bom_error'])}")
    else:
        _print_power(f)
    table = Table(title="Step breakdown (critical pipeline stage)", title_justify="left")
    table.add_column("part")
    table.add_column("time", justify="right")
    table.add_column("share", justify="right")
    for cat in CATEGORIES:
        v = report.breakdown[cat]
        if v <= 0:
            continue
        mark = " (waiting on comm)" if cat in COMM_CATEGORIES else ""
        table.add_row(CATEGORY_LABELS[cat] + mark, show_seconds(v), f"{v / report.step_time:.1%}")
    table.add_row("[bold]step[/]", f"[bold]{show_seconds(report.step_time)}[/]", "100%")
    out.print(table)
    if report.compute_slowed_by_comm > 0:
        out.print(
            f"compute  {show_seconds(report.compute_slowed_by_comm)} of it is the slowdown of "
            "compute beside overlapped collectives (their SMs and HBM traffic; "
            "job.comm_sm_contention)"
        )
    out.print(
        f"waiting on communication: [bold]{report.comm_wait_share:.1%}[/] of the step   "
        f"MFU {report.mfu:.1%}   {report.tokens_per_second:,.0f} tokens/s   "
        f"memory {report.memory.total / 1e9:,.1f} of {report.hbm_bytes / 1e9:,.0f} GB per GPU"
        + ("" if report.fits_in_memory else "  [bold red]DOES NOT FIT[/]")
    )
    kwh, usd = report.kwh_per_million_tokens, report.usd_per_million_tokens
    if kwh is None or usd is None:
        out.print("energy   not computed: the fabric has no power figure (see power above)")
    else:
        out.print(
            f"energy   {kwh:,.3g} kWh and ${usd:,.3g} of electricity per million tokens "
            f"(PUE {report.pue:g}, ${report.electricity_price:g}/kWh; scenario economics section)"
        )
    bias = _bias_note(report)
    if bias:
        out.print(f"note     {escape(bias)}")
    accuracy = _accuracy(report)
    if accuracy:
        out.print(f"accuracy {escape(accuracy['note'])}")
    top = Table(title="Top collectives", title_justify="left")
    for col in ("collective", "size", "ranks", "calls", "each", "total", "algo/proto", "busbw"):
        top.add_column(col, justify="left" if col in ("collective", "algo/proto") else "right")
    for s in report.collectives[:6]:
        top.add_row(
            s.name,
            show_size(s.nbytes),
            str(s.nranks),
            f"{s.calls:,}",
            show_seconds(s.time_each),
            show_seconds(s.total),
            f"{s.algo}/{s.proto}",
            show_gbps(s.busbw),
        )
    out.print(top)
    out.print(report.bottleneck())


def _cp_comm(job: dict[str, Any]) -> str:
    """How the context-parallel ranks exchange, for the job line: ``a2a+p2p`` with its groups."""
    comm = str(job["cp_comm"])
    if comm == "a2a+p2p":
        return f"a2a in groups of {job['cp_a2a']}, p2p across"
    return comm
