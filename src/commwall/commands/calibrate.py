"""``commwall calibrate nccl-tests LOG...``: fit the model's link classes to measured collectives;
``commwall calibrate step SCENARIO --step-time T``: fit its compute (or, ``--fit
moe_host_wait``, a MoE layer's wait on the host) to one measured step.

>>> # commwall calibrate nccl-tests all_reduce_perf.log --cluster dgx-h100 --out my-cluster.yaml
>>> # commwall calibrate step job.yaml --step-time 12.5s --out job-calibrated.yaml
>>> # commwall calibrate nccl-tests gloo.log --out host.yaml       (a `commwall measure` log)

Reads nccl-tests logs (or ``commwall measure`` logs), fits a bandwidth factor and a per-step
latency for every link class the runs exercise (:mod:`commwall.calibration`), prints the
model's error per size before and after, with every ``--holdout``-th size kept out of the fit
and only predicted, and writes a scenario file with the ``cluster.calibration`` section that
``commwall run`` and every other command accept.
"""

from __future__ import annotations

import json
import sys
from datetime import date
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml

from commwall.console import fail, friendly, out, write_parquet


def register(app: typer.Typer) -> None:
    """Add ``commwall calibrate`` (nccl-tests) to ``app``."""
    sub = typer.Typer(
        no_args_is_help=True,
        help="Fit the model to measurements: link classes to collectives (nccl-tests), "
        "compute to a measured step (step).",
    )
    sub.command("nccl-tests")(friendly(calibrate_nccl_tests))
    sub.command("step")(friendly(calibrate_step))
    app.add_typer(sub, name="calibrate")


def calibrate_step(
    scenario: Annotated[Path, typer.Argument(help="The scenario of the measured job (YAML).")],
    step_time: Annotated[str, typer.Option(help="The measured step time, e.g. 12.5s or 850ms.")],
    out_file: Annotated[
        Path | None,
        typer.Option("--out", help="Write the scenario with the fitted field set here."),
    ] = None,
    fit: Annotated[
        str,
        typer.Option(
            help="What to fit: compute_scale (every compute time) or moe_host_wait (the "
            "seconds a host-synchronised MoE layer forward idles the GPU)."
        ),
    ] = "compute_scale",
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Fit one job field so the scenario's step lasts the measured time: job.compute_scale
    multiplies every forward and backward compute time, job.moe_host_wait sets how long each
    host-synchronised MoE layer forward leaves the GPU waiting on the host; everything else
    keeps the model's times."""
    from commwall.scenario import ScenarioError, load_scenario, load_scenario_text
    from commwall.units import parse_time
    from commwall.workload.simulate import StepFitError, fit_compute_scale, fit_host_wait

    fitters = {"compute_scale": fit_compute_scale, "moe_host_wait": fit_host_wait}
    if fit not in fitters:
        fail(f"--fit: {fit!r} is not a field it fits; allowed: {', '.join(fitters)}")
    try:
        measured = parse_time(step_time)
    except ValueError as e:
        fail(f"--step-time: {e}")
    if out_file is not None and not out_file.parent.is_dir():
        fail(f"--out: cannot write {str(out_file)!r}: no such directory")
    try:
        sc = load_scenario(scenario)
        value, before, after = fitters[fit](sc, measured)
    except (ScenarioError, StepFitError) as e:
        fail(str(e))
    data = {"scenario": str(scenario), "measured_s": measured, "predicted_before_s": before,
            fit: value, "predicted_after_s": after}  # fmt: skip
    if out_file is not None:
        from commwall.io.atomic import write_text_atomic

        document = yaml.safe_load(scenario.read_text(encoding="utf-8")) or {}
        document.setdefault("job", {})[fit] = float(f"{value:.6g}")
        text = (
            f"# job.{fit} fitted by commwall calibrate step to a measured "
            f"{measured:.6g} s step ({date.today()}); the model alone gave {before:.6g} s.\n"
            + yaml.safe_dump(document, sort_keys=False)
        )
        load_scenario_text(text, str(out_file))  # a scenario commwall run accepts
        try:
            write_text_atomic(out_file, text)
        except OSError as e:
            fail(f"--out: cannot write {str(out_file)!r}: {e.strerror or e}")
        data["scenario_out"] = str(out_file)
    if as_json:
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
        return
    shown = f"{value:.4f}" if fit == "compute_scale" else f"{value * 1e3:.4g} ms"
    out.print(
        f"model {before:.4g} s, measured {measured:.4g} s ({before / measured - 1:+.1%}): "
        f"job.{fit} [bold]{shown}[/] gives {after:.4g} s"
        + (f"; written to {out_file}" if out_file is not None else ""),
        markup=True,
    )


#: The algorithm gloo runs for each operation (gloo's ring all-reduce, ring all-gather and
#: pairwise all-to-all; ``gloo/allreduce.cc``, ``allgather.cc``, ``alltoall.cc``).
_GLOO_ALGO = "ring"


def calibrate_nccl_tests(
    logs: Annotated[list[str], typer.Argument(help="nccl-tests or `commwall measure` logs.")],
    cluster: Annotated[
        str | None,
        typer.Option(
            help="The measured machine: a preset or scenario file (default for `commwall "
            "measure` logs: this host as one PCIe-class node)."
        ),
    ] = None,
    nodes: Annotated[
        int | None, typer.Option(min=1, help="Nodes of the runs (default: the log's hosts).")
    ] = None,
    gpus_per_node: Annotated[
        int | None,
        typer.Option(min=1, help="Ranks per node (default: the log's ranks / nodes)."),
    ] = None,
    op: Annotated[
        str | None, typer.Option(help="The operation, for logs that do not name it.")
    ] = None,
    algo: Annotated[
        str | None,
        typer.Option(help="Force the model's algorithm, as NCCL_ALGO (default: the tuner's)."),
    ] = None,
    proto: Annotated[
        str | None,
        typer.Option(help="Force the model's protocol, as NCCL_PROTO: ll, ll128, simple."),
    ] = None,
    holdout: Annotated[
        int,
        typer.Option(
            min=0, help="Keep every K-th size out of the fit and only predict it (0: fit all)."
        ),
    ] = 3,
    out_file: Annotated[
        Path | None,
        typer.Option("--out", help="Write the calibrated scenario (YAML) here."),
    ] = None,
    parquet: Annotated[
        Path | None,
        typer.Option(help="Write every measured size with its errors as Parquet here."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Fit per link class bandwidth factors and latencies to measured collectives, print the
    error per size (held-out sizes marked) and write a calibrated scenario."""
    from commwall.calibration import CalibrationError, fit_calibration
    from commwall.collectives import parse_algo, parse_proto
    from commwall.collectives.ops import parse_op
    from commwall.io.nccl_tests import NcclTestsError, read_nccl_tests

    op_name = forced_algo = forced_proto = None
    for option, value in (("--op", op), ("--algo", algo), ("--proto", proto)):
        if value is None:
            continue
        try:
            if option == "--op":
                op_name = parse_op(value).value
            elif option == "--algo":
                forced_algo = parse_algo(value)
            else:
                forced_proto = parse_proto(value)
        except ValueError as e:
            fail(f"{option}: {e}")
    try:
        log = read_nccl_tests(list(logs), op=op_name)
    except NcclTestsError as e:
        fail(str(e))
    runs = [r for r in log.runs if r.rows]
    if not runs:
        fail(f"{', '.join(logs)}: no nccl-tests result rows to fit")
    gloo = [r for r in runs if r.backend == "gloo"]
    if cluster is None and len(gloo) < len(runs):
        fail(
            "--cluster: needed for nccl-tests logs (a preset such as dgx-h100, or a scenario "
            "file); only `commwall measure` logs default to this host"
        )
    if gloo and len(gloo) == len(runs):
        forced_algo = forced_algo or _GLOO_ALGO
        forced_proto = forced_proto or parse_proto("simple")
    points, spec = _points(runs, cluster, nodes, gpus_per_node)
    source = (
        f"commwall calibrate nccl-tests {' '.join(Path(p).name for p in logs)} ({date.today()})"
    )
    try:
        fit = fit_calibration(
            points, holdout=holdout, algo=forced_algo, proto=forced_proto, source=source
        )
    except CalibrationError as e:
        fail(str(e))
    data = fit.to_dict()
    data["problems"] = [str(p) for p in log.problems]
    data["effective"] = _effective(points[0].cluster, fit.calibration)
    if out_file is not None:
        try:
            _write_scenario(out_file, cluster, spec, fit, data["summary"])
        except OSError as e:
            fail(f"--out: cannot write {str(out_file)!r}: {e.strerror or e}")
        data["scenario"] = str(out_file)
    if parquet is not None:
        meta = {k: data[k] for k in ("calibration", "classes", "algo", "proto", "summary")}
        write_parquet(parquet, data["points"], meta)
    if as_json:
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
        return
    _print(data)


def _points(
    runs: list[Any], cluster: str | None, nodes: int | None, per_node: int | None
) -> tuple[list[Any], dict[str, Any]]:
    """Every measured size with the cluster it ran on, and the cluster spec to write."""
    from commwall.calibration import Measured
    from commwall.cluster import build_cluster, cluster_from_option
    from commwall.collectives.ops import parse_op
    from commwall.scenario import ClusterSpec

    points: list[Measured] = []
    built: dict[tuple[int, int], Any] = {}
    spec: dict[str, Any] = {}
    most = 0
    for run in runs:
        where = f"{run.source}:{run.line}"
        if run.op is None:
            fail(f"{where}: the log does not name its operation; give --op")
        n = nodes or run.hosts
        if run.ranks % n:
            fail(f"{where}: {run.ranks} ranks do not split evenly over {n} nodes; give --nodes")
        g = per_node or run.ranks // n
        key = (n, g)
        if key not in built:
            # ranks per node is the communicator's choice, not the hardware's: the written
            # scenario keeps the machine's nodes (the largest run's count) as they are
            if cluster is not None:
                built[key] = cluster_from_option(cluster, nodes=n)
                if n >= most:
                    spec, most = {"preset": cluster, "nodes": n}, n
            else:  # a `commwall measure` log: this host's ranks as one PCIe-class node per host
                host = {"preset": "dgx-h100", "nodes": n, "gpus_per_node": g,
                        "scale_up": "pcie", "scale_up_domain": g}  # fmt: skip
                built[key] = build_cluster(ClusterSpec.model_validate(host))
                if n * g >= most:
                    spec, most = host, n * g
        if g > built[key].gpus_per_node:
            fail(
                f"{where}: {g} ranks per node but the cluster's nodes have "
                f"{built[key].gpus_per_node} GPUs; give --gpus-per-node or another --cluster"
            )
        op = parse_op(run.op)
        seconds = [row.out_of_place.time_us * 1e-6 for row in run.rows]
        points += [
            Measured(where, op, float(row.size), t, built[key], g, dict(run.nccl_env))
            for row, t in zip(run.rows, seconds, strict=True)
        ]
    return points, spec


def _effective(cluster: Any, calibration: Any) -> dict[str, float]:
    """Per-rank bandwidths of the first run's cluster before and after, bytes/s."""
    from dataclasses import replace

    after = replace(cluster, calibration=calibration)
    return {
        "scale_up_bw_before": cluster.intra_bw,
        "scale_up_bw_after": after.intra_bw,
        "net_bw_before": cluster.net_bw_per_gpu,
        "net_bw_after": after.net_bw_per_gpu,
    }


def _write_scenario(
    path: Path, cluster: str | None, spec: dict[str, Any], fit: Any, summary: dict[str, Any]
) -> None:
    """The calibrated scenario: the given scenario file with ``cluster.calibration`` set, or a
    new one around the measured cluster; checked by loading it back before it replaces ``path``."""
    from commwall.io.atomic import write_text_atomic
    from commwall.scenario import load_scenario_text

    calibration = fit.calibration.model_dump(exclude_none=True)
    for name in fit.classes:
        calibration[name] = {
            "bandwidth_factor": round(calibration[name]["bandwidth_factor"], 6),
            "latency": f"{calibration[name]['latency'] * 1e6:+.4g} us",
        }
    if cluster is not None and (cluster.endswith((".yaml", ".yml")) or Path(cluster).is_file()):
        document = yaml.safe_load(Path(cluster).read_text(encoding="utf-8")) or {}
        document.setdefault("cluster", {})["calibration"] = calibration
    else:
        document = {
            "name": f"calibrated {spec.get('preset', 'cluster')}",
            "description": fit.calibration.source,
            "cluster": {**spec, "calibration": calibration},
        }
    fit_max = summary["fit_max_after"]
    held = summary["held_out_median_after"]
    header = [
        f"# Calibrated by {fit.calibration.source}.",
        f"# Largest |error| on the fitted sizes: {fit_max:.1%}"
        + ("" if held is None else f"; median |error| on held-out sizes: {held:.1%}") + ".",
        "# bandwidth_factor multiplies the class's modelled bandwidth; latency is added per step.",
    ]  # fmt: skip
    if "job" not in document:
        header.append(
            "# It describes the machine only: commwall collective --cluster uses it as it is; "
            "add a job: section (model, tp, pp, global_batch) before commwall run, which "
            "otherwise simulates the default job."
        )
    text = "\n".join(header) + "\n" + yaml.safe_dump(document, sort_keys=False)
    load_scenario_text(text, str(path))  # a scenario commwall run accepts, or a clear error
    write_text_atomic(path, text)


def _print(d: dict[str, Any]) -> None:
    from rich.table import Table

    from commwall.units import format_size

    forced = "/".join(x for x in (d["algo"], d["proto"]) if x)
    out.print(
        f"[bold]calibrating[/] {', '.join(d['classes']) or 'nothing'} on "
        f"{len(d['points'])} measured sizes" + (f" (model forced to {forced})" if forced else "")
    )
    table = Table(show_header=True, header_style="bold")
    for col in ("op", "ranks", "size", "measured us", "model us", "error", "calibrated us",
                "error ", "algo", "set"):  # fmt: skip
        table.add_column(col, justify="right")
    for p in d["points"]:
        table.add_row(
            p["op"], str(p["ranks"]), format_size(p["size"]), f"{p['measured_us']:.2f}",
            f"{p['before_us']:.2f}", f"{p['error_before']:+.0%}", f"{p['after_us']:.2f}",
            f"{p['error']:+.1%}", p["algo"], "held out" if p["held_out"] else "fit",
        )  # fmt: skip
    out.print(table)
    cal = d["calibration"]
    for name in d["classes"]:
        c = cal[name]
        out.print(
            f"  {name}: bandwidth x{c['bandwidth_factor']:.4g}, "
            f"latency {c['latency'] * 1e6:+.3g} us per step"
        )
    e = d["effective"]
    out.print(
        f"  per-rank bandwidth now: scale-up {e['scale_up_bw_after'] / 1e9:.3g} GB/s "
        f"(was {e['scale_up_bw_before'] / 1e9:.3g}), network {e['net_bw_after'] / 1e9:.3g} GB/s "
        f"(was {e['net_bw_before'] / 1e9:.3g})"
    )
    s = d["summary"]
    out.print(
        f"fit sizes: median |error| {s['fit_median_before']:.1%} -> {s['fit_median_after']:.1%}; "
        f"largest {s['fit_max_before']:.1%} -> [bold]{s['fit_max_after']:.1%}[/] "
        "(the calibrated model's stated error)"
    )
    if s["held_out_median_after"] is not None:
        out.print(
            f"held-out sizes (predicted, not fitted): median |error| "
            f"{s['held_out_median_after']:.1%}, largest {s['held_out_max_after']:.1%}"
        )
    for note in d["notes"]:
        out.print(f"[yellow]note:[/] {note}")
    if d["problems"]:
        out.print(f"[yellow]{len(d['problems'])} line(s) skipped[/]: {d['problems'][0]}")
    if "scenario" in d:
        out.print(f"wrote {d['scenario']}: commwall run {d['scenario']}")
