"""The ``commwall`` command line.

Every command validates its input first; a bad value prints one clear message naming the option
or field, the value and what is allowed, and exits with status 2 — never a traceback.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from commwall._version import __version__
from commwall.console import err, event_progress, fail, friendly, out, write_parquet
from commwall.scenario import ALL_ENGINES, ENGINES

#: Largest message the packet engine simulates from ``commwall collective`` (bytes).
PACKET_MAX_BYTES = 256 * 2**20

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Where does a training step's time go, and what would a different network change?",
)


def _version(value: bool) -> None:
    if value:
        out.print(f"commwall {__version__}")
        raise typer.Exit()


@app.callback()
def main_callback(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
) -> None:
    """commwall: model AI-cluster networks from SerDes to NCCL to the training step."""


# ---- helpers ----------------------------------------------------------------------------------


def _gb(x: float) -> str:
    return f"{x / 1e9:,.1f} GB/s"


def _secs(x: float) -> str:
    from commwall.units import format_time

    return format_time(x, digits=3)


def _size(x: float) -> str:
    from commwall.units import format_size

    return format_size(x, digits=3)


# ---- run ------------------------------------------------------------------------------------


@app.command()
@friendly
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

    _check_outputs(("--trace", trace), ("--parquet", parquet))
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
    except ScenarioError as e:  # name the file, not "scenario"
        raise ScenarioError(e.messages, str(scenario or "built-in default scenario")) from None
    if sc.faults is not None:
        from commwall.faults.analysis import analyse_faults

        faults = analyse_faults(sc, report, cluster, failures)
    if trace is not None:
        _write_trace(trace, report.result)
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
    if not report.fits_in_memory:
        err.print(
            f"[bold red]warning:[/] the job needs {report.memory.total / 1e9:,.1f} GB per GPU "
            f"and the GPU has {report.hbm_bytes / 1e9:,.0f} GB: it cannot run as described, so "
            "the step time above is not one a cluster would measure; raise job.tp, job.pp or "
            "job.zero_stage, or set job.recompute: full"
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


def _check_outputs(*options: tuple[str, Path | None]) -> None:
    """Refuse an output path that cannot be written before the work starts (one line, exit 2)."""
    from commwall.io.atomic import output_problem

    for option, path in options:
        if path is not None and (problem := output_problem(path)) is not None:
            fail(f"{option}: cannot write {str(path)!r}: {problem}")


def _write_trace(path: Path, result: Any) -> None:
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
            f"peak {row['peak_utilisation']:.0%} of {_gb(row['capacity_Bps'])}"
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


def _print_report(report: Any) -> None:
    from commwall.workload.simulate import CATEGORIES, CATEGORY_LABELS, COMM_CATEGORIES

    c, j = report.cluster, report.job
    out.print(f"[bold]{escape(report.scenario)}[/]")
    out.print(
        f"cluster  {c['gpus']:,} x {c['gpu']} in {c['nodes']:,} nodes; scale-up {c['scale_up']} "
        f"domain of {c['scale_up_domain']} at {_gb(c['scale_up_bw_per_gpu'])}/GPU; "
        f"scale-out {c['nic']} ({c['fabric']}, {_gb(c['net_bw_per_gpu'])}/GPU achievable), "
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
        f"job      {j['model']} ({j['params'] / 1e9:,.1f} B params), TP {j['tp']} x PP {j['pp']} "
        f"x DP {j['dp']}"
        + (f" x EP {j['ep']}" if j["ep"] > 1 else "")
        + f"; {j['global_batch']} x {j['seq_len']} tokens per step, micro-batch "
        f"{j['micro_batch']} ({j['micro_batches']} per step), {j['precision']}, ZeRO-"
        f"{j['zero_stage']}"
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
        table.add_row(CATEGORY_LABELS[cat] + mark, _secs(v), f"{v / report.step_time:.1%}")
    table.add_row("[bold]step[/]", f"[bold]{_secs(report.step_time)}[/]", "100%")
    out.print(table)
    out.print(
        f"waiting on communication: [bold]{report.comm_wait_share:.1%}[/] of the step   "
        f"MFU {report.mfu:.1%}   {report.tokens_per_second:,.0f} tokens/s   "
        f"memory {report.memory.total / 1e9:,.1f} of {report.hbm_bytes / 1e9:,.0f} GB per GPU"
        + ("" if report.fits_in_memory else "  [bold red]DOES NOT FIT[/]")
    )
    out.print(
        f"energy   {report.kwh_per_million_tokens:,.3g} kWh and "
        f"${report.usd_per_million_tokens:,.3g} of electricity per million tokens "
        f"(PUE {report.pue:g}, ${report.electricity_price:g}/kWh; scenario economics section)"
    )
    top = Table(title="Top collectives", title_justify="left")
    for col in ("collective", "size", "ranks", "calls", "each", "total", "algo/proto", "busbw"):
        top.add_column(col, justify="left" if col in ("collective", "algo/proto") else "right")
    for s in report.collectives[:6]:
        top.add_row(
            s.name,
            _size(s.nbytes),
            str(s.nranks),
            f"{s.calls:,}",
            _secs(s.time_each),
            _secs(s.total),
            f"{s.algo}/{s.proto}",
            _gb(s.busbw),
        )
    out.print(top)
    out.print(report.bottleneck())


# ---- collective ------------------------------------------------------------------------------


@app.command()
@friendly
def collective(
    op: Annotated[
        str,
        typer.Argument(
            help="all_reduce, all_gather, reduce_scatter, alltoall, broadcast, reduce, sendrecv"
        ),
    ],
    cluster: Annotated[str, typer.Option(help="Cluster preset or scenario YAML.")] = "dgx-h100",
    nodes: Annotated[
        int | None, typer.Option(min=1, help="Nodes (default: the preset's or 1).")
    ] = None,
    gpus_per_node: Annotated[
        int | None, typer.Option(min=1, help="GPUs of each node taking part (default: all).")
    ] = None,
    min_size: Annotated[str, typer.Option("--min", help="Smallest size, e.g. 8B.")] = "8B",
    max_size: Annotated[
        str | None,
        typer.Option("--max", help="Largest size, e.g. 8GiB (default 8GiB; packet engine 16MiB)."),
    ] = None,
    factor: Annotated[
        int, typer.Option(min=2, help="Size multiplier between rows (nccl-tests -f).")
    ] = 2,
    algo: Annotated[str | None, typer.Option(help="Force an algorithm (like NCCL_ALGO).")] = None,
    proto: Annotated[str | None, typer.Option(help="Force a protocol: LL, LL128, Simple.")] = None,
    policy: Annotated[str, typer.Option(help="nccl (NCCL's algorithms) or all.")] = "nccl",
    sharp: Annotated[
        bool | None, typer.Option("--sharp/--no-sharp", help="IB SHARP in-network reduction.")
    ] = None,
    gdr: Annotated[
        bool | None,
        typer.Option("--gdr/--no-gdr", help="GPUDirect RDMA (else bounce through host memory)."),
    ] = None,
    explain: Annotated[bool, typer.Option(help="Say why each row's algorithm won.")] = False,
    gpus_per_process: Annotated[
        int,
        typer.Option(
            min=1,
            help="GPUs one nccl-tests process drives (nccl-tests -g): its serial kernel "
            "launches bound small sizes from below.",
        ),
    ] = 1,
    engine: Annotated[
        str,
        typer.Option(
            help="analytic (ideal fabric), flow (flows on the real topology) or packet "
            "(packet by packet: credits, PFC, ECN, trims; small clusters)."
        ),
    ] = "analytic",
    packet_fabric: Annotated[
        str | None,
        typer.Option(
            "--fabric",
            help="Packet engine: ib, roce, roce-nopfc, uec or lossy (default: the cluster's).",
        ),
    ] = None,
    routing: Annotated[
        str | None,
        typer.Option(
            help="Flow engine: ecmp, flowlet, spray, cells, adaptive or pxn (POLICY+pxn "
            "combines). Default: the cluster's."
        ),
    ] = None,
    seed: Annotated[int, typer.Option(min=0, help="Flow/packet engine: seed of the hashes.")] = 0,
    trace: Annotated[
        Path | None,
        typer.Option(help="Flow engine: write the largest size's run as a Perfetto trace here."),
    ] = None,
    parquet: Annotated[
        Path | None, typer.Option(help="Write the rows (one per size) as Parquet here.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print rows as JSON.")] = False,
) -> None:
    """Predict the table nccl-tests would print for OP on a cluster you have not built yet."""
    from commwall.collectives import parse_algo, parse_op, parse_proto
    from commwall.engines.nccl_table import nccl_tests_table
    from commwall.scenario import ScenarioError
    from commwall.units import parse_size

    try:
        operation = parse_op(op)
        algo_name = parse_algo(algo) if algo else None
        proto_value = parse_proto(proto) if proto else None
    except ValueError as e:
        fail(str(e))
    if policy not in ("nccl", "all"):
        fail(f"--policy: {policy!r} is not allowed; allowed: nccl, all")
    default_max = "16MiB" if engine == "packet" else "8GiB"
    lo, hi = parse_size(min_size), parse_size(max_size or default_max)
    if lo < 4 or hi < lo or hi > 2**40:
        fail(
            f"--min/--max: need 4 B (one float) <= min <= max <= 1 TiB, got {min_size!r} and "
            f"{max_size!r}"
        )
    from commwall.cluster import cluster_from_option

    cl = cluster_from_option(cluster, nodes=nodes, sharp=sharp, gdr=gdr)
    try:
        fabric = cl.world(gpus_per_node)
    except ScenarioError as e:
        raise ScenarioError(e.messages, "--gpus-per-node") from None
    if engine not in ALL_ENGINES:  # the packet engine too (small clusters)
        fail(f"--engine: {engine!r} is not allowed; allowed: {', '.join(ALL_ENGINES)}")
    if engine == "analytic" and (routing is not None or trace is not None):
        fail("--routing and --trace need --engine flow (the analytic engine assumes ideal balance)")
    if packet_fabric is not None and engine != "packet":
        fail("--fabric needs --engine packet")
    _check_outputs(("--trace", trace), ("--parquet", parquet))
    flow: Any = None
    group: Any = None
    if engine == "packet":
        flow, group = _packet_engine(cl, fabric, packet_fabric, routing, hi, policy)
    if engine == "flow":
        from commwall.engines.communicators import world_group
        from commwall.engines.flow.engine import FlowEngine, parse_routing

        try:
            parse_routing(routing, cl.routing)
        except ValueError as e:
            fail(f"--routing: {e}")
        flow = FlowEngine(policy)
        group = world_group(cl, fabric)
    table = nccl_tests_table(
        operation, lo, hi, factor, cl, fabric, engine=flow, group=group, routing=routing,
        seed=seed, algo=algo_name, proto=proto_value, policy=policy,
        gpus_per_process=gpus_per_process, explain=explain,
    )  # fmt: skip
    rows, notes, result = table.rows, table.notes, table.last
    if trace is not None and result is not None:
        _write_trace(trace, result)
    header: dict[str, Any] = {
        "op": operation.value,
        "cluster": cl.summary(),
        "ranks": fabric.nranks,
        "domains": fabric.n_domains,
        "ranks_per_domain": fabric.ranks_per_domain,
        "engine": engine,
        "gpus_per_process": gpus_per_process,
        "notes": notes,
    }
    if result is not None:
        header["routing"] = result.details.get("routing")
        header["busiest_links"] = result.details.get("busiest_links")
        if engine == "packet":
            header["fabric"] = result.details["packet"]["fabric"]
    if parquet is not None:
        write_parquet(parquet, rows, header)
    if as_json:
        sys.stdout.write(json.dumps({**header, "rows": rows}, indent=2) + "\n")
        return
    _print_nccl_table(header, rows, explain)
    if engine == "packet":
        _print_packet_rows(header, rows)


def _print_packet_rows(header: dict[str, Any], rows: list[dict[str, Any]]) -> None:
    """What the packets did at each size (``collective --engine packet``)."""
    print(f"# packet engine: fabric {header.get('fabric')}, routing {header.get('routing')}")
    print("#       size   drops  retx(B)  timeouts  trims  ECN marks  CNPs  pauses  events")
    for row in rows:
        p = row["packet"]
        print(
            f"# {row['size']:>10} {p['drop_packets']:>7.0f} {p['retransmitted']:>8.0f} "
            f"{p['timeouts']:>9.0f} {p['trim_packets']:>6.0f} {p['ecn_marks']:>10.0f} "
            f"{p['cnps_sent']:>5.0f} {p['pause_frames']:>7.0f} {p['events']:>7.0f}"
        )


def _packet_engine(
    cl: Any, fabric: Any, packet_fabric: str | None, routing: str | None, hi: float, policy: str
) -> tuple[Any, Any]:
    """The packet engine for ``commwall collective``, its inputs checked."""
    from commwall.engines.communicators import world_group
    from commwall.engines.packet.engine import MAX_PACKET_GPUS, PacketEngine
    from commwall.engines.packet.traffic import PACKET_ROUTINGS
    from commwall.transport import FABRICS

    if packet_fabric is not None and packet_fabric not in FABRICS:
        fail(f"--fabric: {packet_fabric!r} is not allowed; allowed: {', '.join(FABRICS)}")
    if routing is not None and routing not in PACKET_ROUTINGS:
        fail(f"--routing: {routing!r}; the packet engine takes {', '.join(PACKET_ROUTINGS)}")
    if hi > PACKET_MAX_BYTES:
        fail(
            f"--max: {hi:.0f} bytes is too many packets for the packet engine (at most "
            f"{PACKET_MAX_BYTES // 2**20} MiB); use --engine flow for larger messages"
        )
    if cl.n_gpus > MAX_PACKET_GPUS:
        fail(
            f"--nodes: {cl.n_gpus} GPUs; the packet engine takes at most {MAX_PACKET_GPUS} "
            "(use --engine flow)"
        )
    return PacketEngine(packet_fabric, policy=policy), world_group(cl, fabric)


def _cell(value: float, width: int) -> str:
    for digits in (2, 1, 0):
        text = f"{value:.{digits}f}"
        if len(text) <= width:
            return text.rjust(width)
    return f"{value:.{width - 6}e}".rjust(width)


def _print_nccl_table(header: dict[str, Any], rows: list[dict[str, Any]], explain: bool) -> None:
    c = header["cluster"]
    print(
        f"# commwall {__version__} prediction: {header['op']}_perf on {c['name']}: "
        f"{header['ranks']} ranks = {header['domains']} domains x {header['ranks_per_domain']} "
        f"({c['gpu']}, {c['scale_up']}, {c['nic']}, {c['fabric']})"
    )
    print("#")
    print(
        "#       size         count      type   redop    root     time   algbw   busbw  "
        "#wrong  algo/proto"
    )
    print("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)")
    for r in rows:
        print(
            f"{r['size']:>12d}  {r['count']:>12d}  {r['type']:>8}  {r['redop']:>6}  "
            f"{r['root']:>6d}  {_cell(r['time_us'], 7)}  {_cell(r['algbw_GBps'], 6)}  "
            f"{_cell(r['busbw_GBps'], 6)}  {'N/A':>6}  {r['algo']}/{r['proto']}"
        )
        if explain and r["why"]:
            for line in r["why"].splitlines():
                print(f"#   {line}")
    avg = sum(r["busbw_GBps"] for r in rows) / len(rows)
    print(f"# Avg bus bandwidth    : {avg:g}")
    for note in header.get("notes", []):
        print(f"# note: {note}")


# ---- catalog and schema --------------------------------------------------------------------------


@app.command()
@friendly
def catalog(
    kind: Annotated[
        str | None,
        typer.Argument(help="gpu, nvlink, nvswitch, pcie, nic, switch, optic, preset, model"),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print parts as JSON.")] = False,
) -> None:
    """List the parts, presets and models commwall knows, with their sources."""
    from commwall.catalog import load_catalog
    from commwall.workload.models import get_model, list_models

    cat = load_catalog()
    kinds = [*cat.kinds(), "model"]
    if kind is not None and kind not in kinds:
        fail(f"unknown catalog kind {kind!r}; allowed: {', '.join(kinds)}")
    chosen = [kind] if kind else kinds
    if as_json:
        data: dict[str, Any] = {}
        for k in chosen:
            if k == "model":
                data[k] = {n: vars(get_model(n)) for n in list_models()}
            else:
                data[k] = {p.name: p.model_dump() for p in cat.parts(k)}
        sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")
        return
    for k in chosen:
        table = Table(title=k, title_justify="left")
        table.add_column("name")
        table.add_column("description")
        if k == "model":
            for n in list_models():
                m = get_model(n)
                table.add_row(
                    n,
                    f"{m.total_params() / 1e9:,.1f} B params, {m.n_layers} layers, "
                    f"hidden {m.hidden}"
                    + (f", {m.n_experts} experts top-{m.top_k}" if m.n_experts > 1 else ""),
                )
        else:
            for p in cat.parts(k):
                table.add_row(p.name, p.description)
        out.print(table)


@app.command()
def schema() -> None:
    """Print the scenario file's JSON schema (for editors)."""
    from commwall.scenario import json_schema

    sys.stdout.write(json.dumps(json_schema(), indent=2) + "\n")


def _register_capability_commands() -> None:
    from commwall.commands import register_all

    register_all(app)


_register_capability_commands()


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":  # python -m commwall.cli
    main()
