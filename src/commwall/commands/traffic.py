"""``commwall traffic PATTERN``: plain traffic on a fabric as flows — completion times and throughput.

>>> # commwall traffic permutation --topology fat-tree --radix 16 --size 2MB --link 100Gb/s
>>> # commwall traffic permutation --topology fat-tree --radix 16 --routing spray --json
>>> # commwall traffic incast --topology leaf-spine --radix 16 --senders 64
>>> # commwall traffic matrix --matrix flows.csv --topology dragonfly --a 8 --p 4 --h 4
"""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any

import typer

from commwall.console import event_progress, fail, friendly, out


def register(app: typer.Typer) -> None:
    """Add ``commwall traffic`` to ``app``."""
    app.command("traffic")(friendly(traffic))


def traffic(
    pattern: Annotated[
        str,
        typer.Argument(
            help="permutation, incast, alltoall, adversarial (dragonfly: each group to the "
            "next) or matrix"
        ),
    ],
    topology: Annotated[
        str,
        typer.Option(
            help="fat-tree, leaf-spine, rail-optimized, rail-only, dragonfly or dragonfly-plus."
        ),
    ] = "fat-tree",
    radix: Annotated[int | None, typer.Option(help="Switch ports (k of a fat tree).")] = None,
    tiers: Annotated[int | None, typer.Option(help="Switch tiers (fat-tree: 3).")] = None,
    oversubscription: Annotated[
        str | None, typer.Option(help="o for o:1 per tier from the leaf up, e.g. 3 or 3,1.")
    ] = None,
    nodes: Annotated[
        int | None, typer.Option(help="Hosts (fat-tree, leaf-spine) or servers (rail kinds).")
    ] = None,
    rails: Annotated[int, typer.Option(help="NICs per server (rail kinds).")] = 8,
    a: Annotated[int | None, typer.Option("--a", help="Dragonfly: routers per group.")] = None,
    p: Annotated[int | None, typer.Option("--p", help="Dragonfly: hosts per router.")] = None,
    h: Annotated[int | None, typer.Option("--h", help="Dragonfly: global links/router.")] = None,
    g: Annotated[int | None, typer.Option("--g", help="Dragonfly: groups.")] = None,
    l_leaves: Annotated[int | None, typer.Option("--l", help="Dragonfly+: leaves/group.")] = None,
    s_spines: Annotated[int | None, typer.Option("--s", help="Dragonfly+: spines/group.")] = None,
    arrangement: Annotated[
        str, typer.Option(help="Dragonfly global links: consecutive or palm-tree.")
    ] = "consecutive",
    size: Annotated[str, typer.Option(help="Bytes per flow, e.g. 2MB.")] = "2MB",
    link: Annotated[str, typer.Option("--link", help="Link rate, e.g. 100Gb/s.")] = "100Gb/s",
    switch_latency: Annotated[
        str | None, typer.Option(help="Per-switch latency, e.g. 600ns (default the builder's).")
    ] = None,
    routing: Annotated[
        str,
        typer.Option(help="ecmp, flowlet, spray, cells, adaptive, valiant, ugal, valiant-flow."),
    ] = "ecmp",
    qps: Annotated[int, typer.Option(min=1, help="ECMP: queue pairs per connection.")] = 1,
    polarized: Annotated[
        bool, typer.Option(help="ECMP: the same hash at every switch (hash polarization).")
    ] = False,
    senders: Annotated[
        int | None, typer.Option(min=1, help="Incast: senders (default: every other host).")
    ] = None,
    matrix: Annotated[
        str | None,
        typer.Option(
            help="Pattern 'matrix': CSV of src,dst,bytes lines, or an htsim connection matrix."
        ),
    ] = None,
    load: Annotated[
        str | None,
        typer.Option(
            help="Offered loads per host, START:STOP:STEP or a list (e.g. 0.1:1.0:0.1): print "
            "accepted throughput and completion per load (a saturation curve) instead of one run."
        ),
    ] = None,
    seed: Annotated[int, typer.Option(min=0, help="Seed for the pattern and the hashes.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Run a traffic pattern as flows on a fabric: completion-time distribution (min/p50/p99/max),
    aggregate throughput, throughput vs a non-blocking fabric, and the most loaded links."""
    from commwall.commands.topology import build
    from commwall.engines.flow.traffic import (
        group_size,
        parse_loads,
        pattern_flows,
        read_matrix,
        run_traffic,
        saturation,
    )
    from commwall.routing import ROUTINGS, RoutingError, RoutingPolicy
    from commwall.topology import TopologyError
    from commwall.units import UnitError, parse_size

    if routing not in ROUTINGS:
        fail(f"--routing: {routing!r} is not allowed; allowed: {', '.join(ROUTINGS)}")
    try:
        loads = parse_loads(load) if load is not None else None
    except ValueError as e:
        fail(f"--load: {e}")
    if loads is not None and pattern == "matrix":
        fail("--load: offered loads apply to a pattern, not to a matrix (its sizes are given)")
    try:
        nbytes = parse_size(size)
        topo = build(
            topology,
            radix=radix,
            tiers=tiers,
            oversubscription=oversubscription,
            nodes=nodes,
            rails=rails,
            a=a,
            p=p,
            h=h,
            g=g,
            arrangement=arrangement,
            link_rate=link,
            switch=None,
            l_leaves=l_leaves,
            s_spines=s_spines,
        )
        if switch_latency is not None:
            from commwall.units import parse_time

            topo = with_switch_latency(topo, parse_time(switch_latency))
        endpoints = len(topo.endpoints())
        if pattern == "matrix":
            if matrix is None:
                fail("pattern 'matrix' needs --matrix FILE (CSV lines src,dst,bytes)")
            src, dst, sizes = read_matrix(matrix)
            if int(max(src.max(), dst.max())) >= endpoints:
                fail(f"--matrix: endpoint {int(max(src.max(), dst.max()))} is out of range; "
                     f"this fabric has endpoints 0..{endpoints - 1}")  # fmt: skip
            flow_bytes: Any = sizes
        else:
            src, dst = pattern_flows(pattern, endpoints, senders=senders, seed=seed,
                                     group_size=group_size(topo))  # fmt: skip
            flow_bytes = nbytes
        policy = RoutingPolicy(routing, qps=qps, polarized=polarized)
        if loads is not None:
            rows = saturation(topo, src, dst, loads, policy, nbytes=float(nbytes), seed=seed)
            _print_curve(pattern, topo, routing, len(src), float(nbytes), rows, as_json)
            return
        with event_progress(f"{pattern} ({routing})", quiet=as_json) as progress:
            result = run_traffic(topo, src, dst, flow_bytes, policy, seed=seed, progress=progress)
    except (TopologyError, RoutingError, UnitError, ValueError) as e:
        fail(str(e))
    data = {"pattern": pattern, "topology": topo.name, "endpoints": endpoints, **result.to_dict()}
    if as_json:
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
        return
    _print(data, topo)


def _print_curve(
    pattern: str,
    topo: Any,
    routing: str,
    flows: int,
    nbytes: float,
    rows: list[dict[str, float]],
    as_json: bool,
) -> None:
    """The saturation curve of ``--load``: one row per offered load."""
    if as_json:
        data = {"pattern": pattern, "topology": topo.name, "routing": routing, "flows": flows,
                "bytes_per_flow": nbytes, "loads": rows}  # fmt: skip
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
        return
    from rich.table import Table

    from commwall.units import format_size, format_time

    out.print(
        f"[bold]{pattern}[/] on {topo.name}: {flows:,} flows, routing {routing}; accepted "
        "throughput per offered load (every flow active, max-min fair, as a share of what the "
        f"hosts' links carry) and the mean completion of a {format_size(nbytes)} flow"
    )
    table = Table(show_header=True, header_style="bold")
    for col in ("offered", "accepted", "accepted / offered", "completion"):
        table.add_column(col, justify="right")
    for r in rows:
        table.add_row(f"{r['offered']:.2f}", f"{r['accepted']:.3f}",
                      f"{r['accepted_of_offered']:.1%}", format_time(r["completion_s"]))  # fmt: skip
    out.print(table)
    top = max(r["accepted"] for r in rows)
    out.print(f"saturation throughput: {top:.3f} of the hosts' injection bandwidth")


def with_switch_latency(topo: Any, latency: float) -> Any:
    """``topo`` with every switch's forwarding latency set to ``latency`` seconds (the engines
    read ``params["switch_latency"]``; ``commwall traffic`` and ``commwall packet`` share it)."""
    from dataclasses import replace

    return replace(topo, params={**dict(topo.params), "switch_latency": latency})


def _print(d: dict[str, Any], topo: Any) -> None:
    from rich.table import Table

    from commwall.units import format_bandwidth, format_size, format_time

    fct = d["fct_s"]
    out.print(
        f"[bold]{d['pattern']}[/] on {d['topology']}: {d['flows']:,} flows, "
        f"{format_size(d['total_bytes'])} in all, routing {d['routing']}"
    )
    table = Table(show_header=True, header_style="bold")
    for col in ("", "min", "p50", "p99", "max", "mean"):
        table.add_column(col, justify="right")
    table.add_row(
        "completion time",
        *(format_time(fct[k]) for k in ("min", "p50", "p99", "max")),
        format_time(d["fct_mean_s"]),
    )
    out.print(table)
    out.print(
        f"aggregate throughput {format_bandwidth(d['aggregate_throughput_Bps'])} "
        f"(all bytes / last completion)"
    )
    out.print(
        f"throughput with every flow active: {format_bandwidth(d['throughput_at_start_Bps'])} = "
        f"[bold]{d['throughput_ratio']:.1%}[/] of what the hosts' links allow "
        f"({format_bandwidth(d['ideal_throughput_Bps'])})"
    )
    if d["busiest_links"]:
        out.print("most loaded links (switch-to-switch first):")
        for row in d["busiest_links"]:
            out.print(
                f"  {row['name']:<24} busy {row['mean_utilisation']:>4.0%} of the run, "
                f"peak {row['peak_utilisation']:.0%}, {format_size(row['bytes'])}"
            )
