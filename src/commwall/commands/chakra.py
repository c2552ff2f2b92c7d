"""``commwall chakra show|replay|export``: MLCommons Chakra execution traces in and out.

>>> # commwall chakra show run/chakra                 (a prefix: run/chakra.<rank>.et)
>>> # commwall chakra replay run/ --cluster dgx-h100 --nodes 2 --engine flow --json
>>> # commwall chakra export --default --out traces/ --ranks stages

``replay`` answers "what would a different network change" for a recorded PyTorch step: the
traces become one step schedule (:mod:`commwall.workload.chakra_step`) that any simulated cluster
runs; the step time, the busiest GPU stream's compute, the rest of the step as exposed
communication and waiting, and the costliest collectives are printed.
"""

from __future__ import annotations

import json
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from commwall.console import fail, friendly, out
from commwall.scenario import ENGINES


def register(app: typer.Typer) -> None:
    """Add ``commwall chakra show|replay|export`` to ``app``."""
    chakra = typer.Typer(
        no_args_is_help=True, help="Read, replay and write MLCommons Chakra execution traces."
    )
    chakra.command("show")(friendly(show))
    chakra.command("replay")(friendly(replay))
    chakra.command("export")(friendly(export))
    app.add_typer(chakra, name="chakra")


def _load(traces: list[str]) -> list[Any]:
    from commwall.io.chakra import ChakraError, read_traces

    try:
        return read_traces(traces)
    except ChakraError as e:
        fail(str(e))


# ---- show ---------------------------------------------------------------------------------------


def summarize(traces: list[Any]) -> dict[str, Any]:
    """Ranks, node counts by type, GPU compute time and collectives by op/size/group."""
    from commwall.io.chakra import CommType, NodeType
    from commwall.workload.chakra_step import check_graph, pg_table

    members, desc = pg_table(traces)
    ranks = []
    calls: dict[tuple[str, int, str], dict[str, Any]] = {}
    for t in traces:
        check_graph(t)
        types = Counter(n.type_name for n in t.nodes)
        compute = sum(
            n.duration_micros
            for n in t.nodes
            if n.type == NodeType.COMP_NODE and n.value("is_cpu_op") is not True
        )
        ranks.append({"rank": t.rank, "file": t.source, "nodes": len(t.nodes),
                      "by_type": dict(sorted(types.items())), "compute_us": compute})  # fmt: skip
        for n in t.nodes:
            if n.type not in (NodeType.COMM_COLL_NODE, NodeType.COMM_SEND_NODE,
                              NodeType.COMM_RECV_NODE):  # fmt: skip
                continue
            if n.type == NodeType.COMM_COLL_NODE:
                code = n.value("comm_type")
                try:
                    op = CommType(code).name.lower() if isinstance(code, int) else "?"
                except ValueError:
                    op = f"comm_type {code}"
            else:
                op = "send" if n.type == NodeType.COMM_SEND_NODE else "recv"
            pg = n.value("pg_name")
            pg = pg if isinstance(pg, str) else ""
            label = desc.get(pg) or (n.value("pg_desc") if isinstance(n.value("pg_desc"), str)
                                     else "") or (f"pg {pg}" if pg else "-")  # fmt: skip
            if pg in members:
                label += f" ({len(members[pg])} ranks)"
            size = n.value("comm_size")
            key = (op, size if isinstance(size, int) else 0, str(label))
            row = calls.setdefault(key, {"op": op, "bytes": key[1], "group": label,
                                         "calls": 0, "ranks": set()})  # fmt: skip
            row["calls"] += 1
            row["ranks"].add(t.rank)
    rows = sorted(calls.values(), key=lambda r: (-r["calls"] * r["bytes"], r["op"]))
    for r in rows:
        r["ranks"] = len(r["ranks"])
    return {"ranks": ranks, "collectives": rows}


def show(
    traces: Annotated[
        list[str],
        typer.Argument(
            help="A prefix (run/chakra → run/chakra.<rank>.et), a directory or .et files."
        ),
    ],
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Ranks, node counts by type, compute time and the collectives of Chakra traces."""
    from rich.table import Table

    from commwall.io.chakra import ChakraError
    from commwall.units import format_size, format_time

    loaded = _load(traces)
    try:
        data = summarize(loaded)
    except ChakraError as e:
        fail(str(e))
    if as_json:
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
        return
    table = Table(show_header=True, header_style="bold")
    for col in ("rank", "nodes", "by type", "GPU compute"):
        table.add_column(col, justify="left" if col == "by type" else "right")
    for r in data["ranks"]:
        kinds = ", ".join(f"{k.removesuffix('_NODE').lower()} {v}" for k, v in r["by_type"].items())
        table.add_row(str(r["rank"]), f"{r['nodes']:,}", kinds, format_time(r["compute_us"] * 1e-6))
    out.print(f"[bold]{len(data['ranks'])} rank(s)[/]")
    out.print(table)
    coll = Table(show_header=True, header_style="bold")
    for col in ("op", "size", "group", "calls", "ranks"):
        coll.add_column(col, justify="left" if col in ("op", "group") else "right")
    for c in data["collectives"]:
        coll.add_row(c["op"], format_size(c["bytes"]), str(c["group"]), f"{c['calls']:,}",
                     str(c["ranks"]))  # fmt: skip
    if data["collectives"]:
        out.print(coll)
    else:
        out.print("no communication nodes")


# ---- replay -------------------------------------------------------------------------------------


def replay_summary(result: Any, top: int = 10) -> dict[str, Any]:
    """Step time, the busiest compute stream, exposed communication and the top collectives."""
    busy: dict[str, float] = defaultdict(float)
    comm_total = 0.0
    table: dict[tuple[str, str, float, int], list[Any]] = defaultdict(list)
    for p in result.phases:
        if p.op is None:
            busy[p.stream] += p.duration
        else:
            comm_total += p.duration
            table[(p.name, p.op, p.nbytes, p.nranks)].append(p)
    stream, compute = max(busy.items(), key=lambda kv: kv[1], default=("-", 0.0))
    step = result.makespan
    rows = []
    for (name, op, nbytes, nranks), ps in table.items():
        calls = sum(p.repeat for p in ps)
        total = sum(p.duration for p in ps)
        main = max(ps, key=lambda p: p.duration)
        rows.append({"name": name, "op": op, "bytes": nbytes, "ranks": nranks, "calls": calls,
                     "total_s": total, "time_each_s": total / calls if calls else 0.0,
                     "algo": main.algo, "proto": main.proto, "busbw_Bps": main.busbw})  # fmt: skip
    rows.sort(key=lambda r: -r["total_s"])
    return {
        "engine": result.engine,
        "step_time_s": step,
        "compute_s": compute,
        "compute_stream": stream,
        "exposed_s": max(0.0, step - compute),
        "exposed_share": (step - compute) / step if step > 0 else 0.0,
        "communication_s": comm_total,
        "phases": len(result.phases),
        "top_collectives": rows[:top],
    }


def replay(
    traces: Annotated[list[str], typer.Argument(help="A prefix, a directory or .et files.")],
    cluster: Annotated[
        str, typer.Option(help="A preset or scenario file: the cluster to replay on.")
    ],
    nodes: Annotated[int | None, typer.Option(min=1, help="Nodes of --cluster.")] = None,
    engine: Annotated[str, typer.Option(help="analytic or flow.")] = "analytic",
    top: Annotated[int, typer.Option(min=1, help="Collectives to list.")] = 10,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Replay a recorded step on a simulated cluster: step time, compute, exposed communication."""
    from commwall.cluster import cluster_from_option
    from commwall.engines import get_engine
    from commwall.io.chakra import ChakraError
    from commwall.workload.chakra_step import traces_to_schedule

    if engine not in ENGINES:
        fail(f"--engine: {engine!r} is not allowed; allowed: {', '.join(ENGINES)}")
    loaded = _load(traces)
    cl = cluster_from_option(cluster, nodes=nodes)
    try:
        schedule = traces_to_schedule(loaded, scale_up_domain=cl.scale_up_domain, n_gpus=cl.n_gpus)
    except ChakraError as e:
        fail(str(e))
    try:
        result = get_engine(engine).run(schedule, cl, cl.routing)
    except ValueError as e:  # a group the engine cannot place on this cluster
        fail(f"--cluster {cluster}: {e}")
    data = {"cluster": cl.summary(), "ranks": len(loaded), **replay_summary(result, top)}
    if as_json:
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
        return
    _print_replay(data)


def _print_replay(d: dict[str, Any]) -> None:
    from rich.table import Table

    from commwall.units import format_size, format_time

    c = d["cluster"]
    out.print(f"[bold]{d['ranks']} rank(s) replayed on {c['name']}[/]: {c['gpus']:,} x "
              f"{c['gpu']}, {c['nic']} ({c['fabric']}), {d['engine']} engine")  # fmt: skip
    step = d["step_time_s"]
    out.print(f"step time      {format_time(step)}")
    out.print(
        f"compute        {format_time(d['compute_s'])} (busiest stream {d['compute_stream']})"
    )
    out.print(f"exposed comm   {format_time(d['exposed_s'])} ({d['exposed_share']:.0%} of the step "
              "not computing: communication and waiting)")  # fmt: skip
    out.print(f"communication  {format_time(d['communication_s'])} in all (overlapped or not)")
    if not d["top_collectives"]:
        return
    table = Table(show_header=True, header_style="bold")
    for col in ("collective", "op", "size", "ranks", "calls", "each", "total", "busbw", "algo"):
        table.add_column(col, justify="left" if col in ("collective", "op", "algo") else "right")
    for r in d["top_collectives"]:
        table.add_row(r["name"][:40], r["op"], format_size(r["bytes"]), str(r["ranks"]),
                      f"{r['calls']:,}", format_time(r["time_each_s"]), format_time(r["total_s"]),
                      f"{r['busbw_Bps'] / 1e9:,.1f} GB/s", f"{r['algo']}/{r['proto']}")  # fmt: skip
    out.print(table)


# ---- export -------------------------------------------------------------------------------------


def _ranks(text: str, world: int, per_stage: int, stages: int) -> list[int] | None:
    text = text.strip().lower()
    if text == "all":
        return None
    if text == "stages":
        return [s * per_stage for s in range(stages)]
    try:
        ranks = sorted({int(x) for x in text.split(",") if x.strip()})
    except ValueError:
        fail(f"--ranks: {text!r} is not allowed; allowed: all, stages or a list such as 0,1,8")
    bad = [r for r in ranks if not 0 <= r < world]
    if not ranks or bad:
        fail(f"--ranks: {bad or text!r} outside the job's ranks 0..{world - 1}")
    return ranks


def export(
    out_dir: Annotated[Path, typer.Option("--out", help="Directory to write the traces to.")],
    scenario: Annotated[
        Path | None, typer.Option(help="Scenario YAML whose training step to export.")
    ] = None,
    default: Annotated[
        bool, typer.Option("--default", help="Export the built-in default scenario's step.")
    ] = False,
    ranks: Annotated[
        str,
        typer.Option(
            help="all, stages (one rank per pipeline stage: enough for commwall "
            "to replay the step) or a list such as 0,1,8."
        ),
    ] = "all",
    prefix: Annotated[str, typer.Option(help="File name prefix: <prefix>.<rank>.et.")] = "step",
) -> None:
    """Write commwall's own training step (as ``commwall run`` builds it) as Chakra traces,
    the compute at the length it takes beside overlapped collectives (what a trace of the
    run would record)."""
    from commwall.cluster import build_cluster
    from commwall.defaults import default_scenario
    from commwall.engines import get_engine
    from commwall.scenario import ScenarioError, load_scenario
    from commwall.workload.chakra_step import write_schedule
    from commwall.workload.contention import as_measured, run_job
    from commwall.workload.job import resolve_job
    from commwall.workload.step import build_step

    if (scenario is None) == (not default):
        fail("give exactly one of --scenario FILE and --default")
    if not prefix or "/" in prefix or prefix.startswith("."):
        fail(f"--prefix: {prefix!r}; allowed: a file name (no '/', not empty, no leading '.')")
    sc = load_scenario(scenario) if scenario is not None else default_scenario()
    try:
        cl = build_cluster(sc.cluster)
        job = resolve_job(sc.job, cl)
    except ScenarioError as e:
        raise ScenarioError(e.messages, str(scenario or "built-in default scenario")) from None
    plan = build_step(job, cl)
    # the compute as the run would measure it: slowed beside overlapped collectives
    engine = get_engine("analytic", policy=sc.simulation.policy)
    _, contention = run_job(engine, plan.schedule, cl, job, policy=sc.simulation.policy)
    schedule = as_measured(plan.schedule, contention.extra)
    chosen = _ranks(ranks, job.n_gpus, job.tp * job.grad_dp, job.pp)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        paths = write_schedule(str(out_dir / prefix), schedule, world=job.n_gpus,
                               ranks=chosen, scale_up_domain=cl.scale_up_domain)  # fmt: skip
    except OSError as e:
        fail(f"--out: cannot write {str(out_dir)!r}: {e.strerror or e}")
    out.print(f"{len(paths):,} trace(s) of {escape(sc.name)} ({len(schedule.phases):,} "
              f"phases, {job.n_gpus:,} ranks) written to {escape(f'{out_dir}/{prefix}')}.<rank>.et")  # fmt: skip
