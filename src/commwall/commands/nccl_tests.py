"""``commwall nccl-tests LOG...``: read nccl-tests output and set the model beside it.

>>> # commwall nccl-tests all_reduce_perf.log
>>> # commwall nccl-tests run1.log run2.log --cluster dgx-h100 --nodes 2 --json
>>> # commwall nccl-tests job.out --op all_gather --cluster my-cluster.yaml

Every run in the files is listed with its devices, NCCL version and each size's measured
out-of-place time, algbw and busbw; with ``--cluster`` the analytic model predicts the same sizes
on that cluster (the NCCL-like tuner's choice) and the error per size is printed. Lines that look
like results but do not parse are reported with their file and line.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Annotated, Any, Final

import typer

from commwall.console import fail, friendly, op_option, out, write_parquet

#: Sizes at or above this many bytes count towards the summary error (bandwidth-bound rows).
LARGE = 1 << 20


def register(app: typer.Typer) -> None:
    """Add ``commwall nccl-tests`` to ``app``."""
    app.command("nccl-tests")(friendly(nccl_tests))


def nccl_tests(
    logs: Annotated[list[str], typer.Argument(help="nccl-tests output files.")],
    op: Annotated[
        str | None,
        typer.Option(
            help="The operation, for logs that do not name their binary (all_reduce, ...)."
        ),
    ] = None,
    cluster: Annotated[
        str | None,
        typer.Option(help="A preset or scenario file: predict every measured size on it."),
    ] = None,
    nodes: Annotated[int | None, typer.Option(min=1, help="Nodes of --cluster.")] = None,
    gpus_per_node: Annotated[
        int | None, typer.Option(min=1, help="Ranks per node (default: every GPU).")
    ] = None,
    parquet: Annotated[
        Path | None,
        typer.Option(help="Write every row (one per run and size) as Parquet here."),
    ] = None,
    env: Annotated[
        list[str] | None,
        typer.Option(
            help="An NCCL setting the runs used, NCCL_NAME=VALUE (repeatable), over the ones "
            "the log reports (NCCL_DEBUG=INFO prints 'NCCL_X set by environment to V')."
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Read nccl-tests logs (every layout since 2017, several runs per file) and, with --cluster,
    print measured against predicted busbw per size."""
    from commwall.collectives.nccl_env import parse_env_assignments
    from commwall.io.nccl_tests import NcclTestsError, read_nccl_tests

    op_name = op_option(op)
    try:
        settings = parse_env_assignments(env or [])
    except ValueError as e:
        fail(str(e))
    try:
        log = read_nccl_tests(list(logs), op=op_name)
    except NcclTestsError as e:
        fail(str(e))
    if not log.runs:
        where = "; ".join(str(p) for p in log.problems[:3])
        fail(
            f"{', '.join(logs)}: no nccl-tests result rows found" + (f" ({where})" if where else "")
        )
    fabrics: list[Any] = [None] * len(log.runs)
    summary = None
    if cluster is not None:
        from commwall.cluster import cluster_from_option

        cl = cluster_from_option(cluster, nodes=nodes)
        summary = cl.summary()
        shaped: dict[tuple[int, int], Any] = {}
        fabrics = [_fabric_for(r, cluster, cl, nodes, gpus_per_node, shaped) for r in log.runs]
    runs = [_run(r, f, settings) for r, f in zip(log.runs, fabrics, strict=True)]
    data = {
        "cluster": summary,
        "runs": runs,
        "problems": [str(p) for p in log.problems],
    }
    if parquet is not None:
        records = [
            {"source": r["source"], "op": r["op"], "ranks": r["ranks"], "hosts": r["hosts"],
             "nccl_version": r["nccl_version"], **row}
            for r in runs
            for row in r["rows"]
        ]  # fmt: skip
        write_parquet(parquet, records, {"cluster": data["cluster"], "logs": list(logs)})
    if as_json:
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
        return
    _print(data)


#: Catalog GPUs by what a device name in nccl-tests' ``# Using devices`` list contains, most
#: specific first ("NVIDIA GB200" also contains "B200").
_DEVICE_GPUS: Final = (
    ("gb300", "gb300"), ("b300", "b300"), ("gb200", "gb200"), ("b200", "b200"),
    ("h200", "h200"), ("h100", "h100-sxm"), ("h800", "h100-sxm"), ("a100", "a100-sxm"),
    ("a800", "a100-sxm"),
)  # fmt: skip


def log_gpu(devices: list[str]) -> str | None:
    """The catalog GPU a run's devices name (None: none or several kinds, or one not in the
    catalog).

    >>> log_gpu(["NVIDIA H100 80GB HBM3"]), log_gpu(["NVIDIA GB200"]), log_gpu(["Tesla V100"])
    ('h100-sxm', 'gb200', None)
    """
    kinds = {next((gpu for key, gpu in _DEVICE_GPUS if key in d.lower()), None) for d in devices}
    return kinds.pop() if len(kinds) == 1 else None


def _fabric_for(
    run: Any,
    source: str,
    base: Any,
    nodes: int | None,
    per_node: int | None,
    shaped: dict[tuple[int, int], Any],
) -> Any:
    """The communicator to price ``run`` on: the log's own shape (its hosts, and ranks per host)
    on ``source``'s kind of node unless ``--nodes`` or ``--gpus-per-node`` say otherwise
    (``shaped`` keeps the ones built, by shape)."""
    from commwall.cluster import cluster_from_option
    from commwall.scenario import ScenarioError

    hosts, ranks = run.hosts, run.ranks
    if nodes is None and per_node is None and run.devices and ranks % hosts == 0:
        key = (hosts, ranks // hosts)
        if key not in shaped:
            try:
                shaped[key] = cluster_from_option(source, nodes=hosts).world(key[1])
            except ScenarioError:
                shaped[key] = None  # more ranks per host than its nodes hold: said below
        if shaped[key] is not None:
            return shaped[key]
    return base.world(per_node)


def _run(run: Any, fabric: Any, settings: dict[str, str]) -> dict[str, Any]:
    """One run as data, with predictions when ``fabric`` is given: under the NCCL settings the
    log reports, ``settings`` (``--env``) over them."""
    from commwall.collectives import Unsupported, choose
    from commwall.collectives.direct import nccl_init_channels
    from commwall.collectives.nccl import nccl_tests_time
    from commwall.collectives.nccl_env import apply_nccl_env, describe_env
    from commwall.collectives.ops import parse_op

    rows = []
    op = parse_op(run.op) if run.op else None
    used = {**run.nccl_env, **settings}
    algo = proto = None
    if fabric is not None:
        fabric, algo, proto = apply_nccl_env(fabric, used, "default", "default")
    for row in run.rows:
        t = row.out_of_place
        item: dict[str, Any] = {
            "size": row.size,
            "time_us": t.time_us,
            "algbw_GBps": t.algbw_GBps,
            "busbw_GBps": t.busbw_GBps,
            "in_place_busbw_GBps": None if row.in_place is None else row.in_place.busbw_GBps,
        }
        if fabric is not None and op is not None and row.size > 0:
            try:
                best = choose(op, float(row.size), fabric, algo=algo, proto=proto).best
            except Unsupported as e:
                item["prediction_error"] = str(e)
            else:
                # nccl-tests -g N: one thread launches N GPUs' kernels in turn (a floor).
                seconds = nccl_tests_time(best.time, run.gpus_per_thread)
                busbw = best.busbw * best.time / seconds if seconds > 0 else 0.0
                item["predicted_busbw_GBps"] = busbw / 1e9
                item["predicted_time_us"] = seconds * 1e6
                item["algo"] = f"{best.algo}/{best.proto.value}"
                if t.busbw_GBps > 0:
                    item["error"] = busbw / 1e9 / t.busbw_GBps - 1.0
        rows.append(item)
    large = [abs(r["error"]) for r in rows if "error" in r and r["size"] >= LARGE]
    devices = sorted({d for _, _, d in run.devices})
    return {
        "source": f"{run.source}:{run.line}",
        "op": run.op,
        "op_inferred": run.op_inferred,
        "gpus_per_process": run.gpus_per_thread,
        "ranks": run.ranks,
        "hosts": run.hosts,
        "devices": devices,
        "nccl_version": run.nccl_version,
        "avg_busbw_GBps": run.avg_busbw_GBps,
        "model_ranks": None if fabric is None else fabric.nranks,
        "model_shape": None
        if fabric is None
        else {"domains": fabric.n_domains, "ranks_per_domain": fabric.ranks_per_domain},
        "log_gpu": log_gpu(devices),
        "nccl_env": used,
        "nccl_env_seen": describe_env(used),
        "nccl_channels": run.nccl_channels,
        "model_nccl_channels": None if fabric is None else nccl_init_channels(fabric),
        "median_abs_error_large": statistics.median(large) if large else None,
        "rows": rows,
    }


def _print(d: dict[str, Any]) -> None:
    from rich.table import Table

    from commwall.collectives.nccl_env import env_lines
    from commwall.units import format_size

    c = d["cluster"]
    if c:
        out.print(
            f"model: {c['name']} nodes of {c['gpus_per_node']} {c['gpu']}, "
            f"{c['nic']} ({c['fabric']}), {c['topology']}; each run on its log's hosts and "
            "ranks per host unless --nodes / --gpus-per-node say otherwise"
        )
    for run in d["runs"]:
        devices = ", ".join(run["devices"]) or "devices not listed"
        out.print(
            f"[bold]{run['op'] or 'unknown op (give --op)'}[/] on {run['ranks']} ranks, "
            f"{run['hosts']} host(s): {devices}; NCCL {run['nccl_version'] or '?'} "
            f"({run['source']})"
        )
        if run["op_inferred"]:
            out.print(f"  note: the log does not name its binary; {run['op_inferred']}")
        shape = run["model_shape"]
        if shape is not None:
            out.print(
                f"  model communicator: {shape['domains']} domain(s) x "
                f"{shape['ranks_per_domain']} rank(s)"
            )
        if c and run["log_gpu"] and run["log_gpu"] != c["gpu"]:
            out.print(
                f"  note: the log's GPUs are {run['log_gpu']}, the model's {c['gpu']} "
                "(give a --cluster of that GPU)"
            )
        if run["model_ranks"] is not None and run["model_ranks"] != run["ranks"]:
            out.print(
                f"  note: the model's communicator has {run['model_ranks']} ranks, the log "
                f"{run['ranks']} (give --nodes / --gpus-per-node to match)"
            )
        if run["nccl_env"] and c:
            for line in env_lines(run["nccl_env"]):
                out.print(f"  {line}")
        for line in _channel_lines(run["nccl_channels"], run["model_nccl_channels"]):
            out.print(line)
        table = Table(show_header=True, header_style="bold")
        cols = ["size", "time (us)", "algbw GB/s", "busbw GB/s"]
        predicted = any("predicted_busbw_GBps" in r for r in run["rows"])
        if predicted:
            cols += ["model busbw", "error", "model algo"]
        for col in cols:
            table.add_column(col, justify="right")
        for r in run["rows"]:
            cells = [format_size(r["size"]), f"{r['time_us']:.2f}", f"{r['algbw_GBps']:.2f}",
                     f"{r['busbw_GBps']:.2f}"]  # fmt: skip
            if predicted:
                if "predicted_busbw_GBps" in r:
                    err = f"{r['error']:+.0%}" if "error" in r else "-"
                    cells += [f"{r['predicted_busbw_GBps']:.2f}", err, r["algo"]]
                else:
                    cells += ["-", "-", r.get("prediction_error", "-")[:30]]
            table.add_row(*cells)
        out.print(table)
        if run["median_abs_error_large"] is not None:
            avg = run["avg_busbw_GBps"]
            tail = "" if avg is None else f"; the log's avg bus bandwidth {avg:g} GB/s"
            out.print(f"median |error| at >= 1 MiB: {run['median_abs_error_large']:.1%}{tail}")
    if d["problems"]:
        out.print(f"[yellow]{len(d['problems'])} line(s) skipped:[/]")
        for p in d["problems"][:10]:
            out.print(f"  {p}")


#: NCCL's names for the channel counts of its init line, in its order.
_CHANNEL_NAMES = {
    "coll": "coll",
    "collnet": "collnet",
    "nvls": "nvls",
    "p2p": "p2p",
    "p2p_per_peer": "p2p per peer",
}


def _channel_lines(log: dict[str, int] | None, model: dict[str, int] | None) -> list[str]:
    """The log's NCCL channel counts, the model's beside them, and which ones differ."""
    if log is None:
        return []

    def fmt(counts: dict[str, int], keys: list[str]) -> str:
        return ", ".join(f"{counts[k]} {_CHANNEL_NAMES[k]}" for k in keys)

    keys = [k for k in _CHANNEL_NAMES if k in log]
    lines = [f"  NCCL channels (log): {fmt(log, keys)}"]
    if model is not None:
        lines.append(f"  NCCL channels (model): {fmt(model, keys)}")
        # NCCL prints the coll channels twice (as collnet too): compare them once
        differ = [
            f"{_CHANNEL_NAMES[k]} {log[k]} vs {model[k]}"
            for k in keys
            if k != "collnet" and log[k] != model[k]
        ]
        if differ:
            lines.append(
                "  note: the model builds a different communicator than the log's NCCL ("
                + "; ".join(differ)
                + "): per-channel rates and how a message is cut differ with it"
            )
    return lines
