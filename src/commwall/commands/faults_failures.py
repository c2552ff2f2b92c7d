"""``commwall faults failures``: fail cables and switches, then measure bisection, reachability and
the collective slowdown (:mod:`commwall.faults.failures`).

>>> # commwall faults failures --cluster dgx-h100 --nodes 64 --fail-switch spine:0
>>> # commwall faults failures --cluster dgx-h100 --nodes 64 --fail-random-cables 8 --samples 5
>>> # commwall faults failures --topology fat-tree --radix 8 --fail-random-switches 1 --json
"""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any

import typer

from commwall.console import fail, friendly, out


def add_commands(app: typer.Typer) -> None:
    """Add ``failures`` to the ``commwall faults`` sub-app."""
    app.command("failures")(friendly(failures))


def failures(
    scenario: Annotated[
        str | None, typer.Option(help="Scenario file whose cluster's fabric fails.")
    ] = None,
    cluster: Annotated[str | None, typer.Option(help="Cluster preset, e.g. dgx-h100.")] = None,
    nodes: Annotated[
        int | None, typer.Option(min=1, help="Nodes (cluster) or hosts/servers (--topology).")
    ] = None,
    topology: Annotated[
        str | None,
        typer.Option(
            help="A bare fabric instead of a cluster: fat-tree, leaf-spine, "
            "rail-optimized, rail-only, dragonfly, dragonfly-plus."
        ),
    ] = None,
    radix: Annotated[int | None, typer.Option(help="--topology: switch ports.")] = None,
    tiers: Annotated[int | None, typer.Option(help="--topology: switch tiers.")] = None,
    rails: Annotated[int, typer.Option(help="--topology: NICs per server (rail kinds).")] = 8,
    fail_cable: Annotated[
        list[int] | None, typer.Option(help="Cable index to fail (repeatable).")
    ] = None,
    fail_switch: Annotated[
        list[str] | None,
        typer.Option(help="Switch to fail: leaf:3, spine:0, core:1 or a node index (repeatable)."),
    ] = None,
    fail_random_cables: Annotated[
        int, typer.Option(min=0, help="Random cables of --cable-tier to fail.")
    ] = 0,
    cable_tier: Annotated[
        str, typer.Option(help="access, leaf-spine, spine-core, local or global.")
    ] = "leaf-spine",
    fail_random_switches: Annotated[
        int, typer.Option(min=0, help="Random switches of --switch-tier to fail.")
    ] = 0,
    switch_tier: Annotated[str, typer.Option(help="leaf, spine, core or router.")] = "spine",
    routing: Annotated[
        list[str] | None, typer.Option(help="ecmp, adaptive, spray, ... (repeatable; ecmp).")
    ] = None,
    op: Annotated[
        list[str] | None,
        typer.Option(help="Collective on the world (repeatable; all_reduce and alltoall)."),
    ] = None,
    size: Annotated[
        str, typer.Option(help="Collective bytes (or flow bytes), e.g. 1GiB.")
    ] = "1GiB",
    workloads: Annotated[
        bool, typer.Option(help="Run the collectives (or permutation traffic) before and after.")
    ] = True,
    samples: Annotated[int, typer.Option(min=1, help="Random draws (with random failures).")] = 1,
    seed: Annotated[int, typer.Option(min=0, help="Seed of the random draws and hashes.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Fail cables and switches of a fabric: bisection before/after, endpoints cut off, pairs
    with no route, routes surviving per level, and the collective slowdown on the flow engine
    (with several random draws: distributions with 95% intervals)."""
    from commwall.faults import FaultError
    from commwall.faults.failures import FailureSpec, study_failures
    from commwall.topology import TopologyError
    from commwall.units import UnitError, parse_size

    spec = FailureSpec(
        cables=tuple(fail_cable or ()),
        switches=tuple(fail_switch or ()),
        random_cables={cable_tier: fail_random_cables} if fail_random_cables else {},
        random_switches={switch_tier: fail_random_switches} if fail_random_switches else {},
    )
    if not (spec.cables or spec.switches or spec.is_random):
        fail("nothing to fail: give --fail-cable, --fail-switch, --fail-random-cables or "
             "--fail-random-switches")  # fmt: skip
    try:
        nbytes = parse_size(size)
    except UnitError as e:
        fail(f"--size: {e}")
    cl, fabric = _fabric(scenario, cluster, nodes, topology, radix, tiers, rails)
    try:
        study = study_failures(
            fabric,
            spec,
            cluster=cl,
            samples=samples,
            seed=seed,
            ops=tuple(op or ("all_reduce", "alltoall")),
            size=nbytes,
            routings=tuple(routing or ("ecmp",)),
            workloads=workloads,
        )
    except FaultError as e:
        fail(_option_message(str(e)))
    except (TopologyError, ValueError) as e:
        fail(str(e))
    data = study.to_dict()
    if as_json:
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
        return
    _print(data)


#: FailureSpec / study fields as the options that set them (error messages name the option).
_OPTIONS = (
    ("random_cables: class", "--cable-tier: class"),
    ("random_switches: tier", "--switch-tier: tier"),
    ("random_cables[", "--fail-random-cables ["),
    ("random_switches[", "--fail-random-switches ["),
    ("cables:", "--fail-cable:"),
    ("switches:", "--fail-switch:"),
    ("ops:", "--op:"),
    ("routings:", "--routing:"),
)


def _option_message(message: str) -> str:
    for field, option in _OPTIONS:
        if message.startswith(field):
            return option + message[len(field) :]
    return message


def _fabric(
    scenario: str | None,
    cluster: str | None,
    nodes: int | None,
    topology: str | None,
    radix: int | None,
    tiers: int | None,
    rails: int,
) -> tuple[Any, Any]:
    """(cluster or None, scale-out fabric) the options name."""
    from commwall.cluster import cluster_from_option
    from commwall.commands.topology import build
    from commwall.topology import TopologyError

    given = [n for n, v in (("--scenario", scenario), ("--cluster", cluster),
                            ("--topology", topology)) if v is not None]  # fmt: skip
    if len(given) > 1:
        fail(f"{' and '.join(given)}: give one of --scenario, --cluster or --topology")
    if topology is not None:
        try:
            fabric = build(topology, radix=radix, tiers=tiers, oversubscription=None, nodes=nodes,
                           rails=rails, a=None, p=None, h=None, g=None,
                           arrangement="consecutive", link_rate=None, switch=None)  # fmt: skip
        except (TopologyError, ValueError) as e:
            fail(f"--topology: {e}")
        return None, fabric
    source, option = (scenario, "--scenario") if scenario else (cluster or "dgx-h100", "--cluster")
    cl = cluster_from_option(source, nodes=nodes if nodes or scenario else 16, option=option)
    if cl.n_domains <= 1:
        fail(f"{option}: {cl.name} is one scale-up domain; it has no scale-out fabric to fail")
    return cl, cl.scale_out_topology()


def _print(d: dict[str, Any]) -> None:
    from rich.table import Table

    from commwall.units import format_bandwidth, format_time

    first = d["impacts"][0]
    n = d["samples"]
    out.print(f"[bold]failures[/] on {first['topology']}: {n} draw(s), seed {d['seed']}")
    for i, imp in enumerate(d["impacts"][:3]):
        cables = ", ".join(f"{v} {k}" for k, v in imp["failed_cables"].items()) or "none"
        sw = ", ".join(imp["failed_switches"]) or "none"
        out.print(f"draw {i}: cables failed {cables} ({imp['failed_cables_total']}); switches {sw}")
    if n > 3:
        out.print(f"  ... and {n - 3} more draws (--json lists them all)")
    loss = d["summary"]["bisection_loss"]
    out.print(
        f"bisection {format_bandwidth(first['bisection_before_Bps'])} → "
        f"{format_bandwidth(first['bisection_after_Bps'])} ({first['bisection_method']}); loss "
        f"mean [bold]{loss['mean']:.1%}[/] (95% CI {loss['mean_ci95'][0]:.1%}–"
        f"{loss['mean_ci95'][1]:.1%}), p95 {loss['p95']:.1%}"
    )
    cut = first["endpoints_disconnected"]
    out.print(
        f"endpoints cut off {len(cut)}; pairs without a route {first['pairs_without_route']:,} of "
        f"{first['pairs']:,}{' (sampled)' if first['pairs_sampled'] else ''}"
    )
    for level, row in first["route_survival"].items():
        out.print(f"  routes surviving, {level}: mean {row['mean_share']:.1%}, "
                  f"worst pair {row['min_share']:.1%}")  # fmt: skip
    if first["ranks_total"] is not None:
        ok = "yes" if first["runs_as_configured"] else "no: the ring must re-form without them"
        out.print(f"job runs as configured: {ok} ({first['ranks_remaining']:,} of "
                  f"{first['ranks_total']:,} ranks remain)")  # fmt: skip
    _print_workloads(first, d["summary"]["slowdown"], format_time, format_bandwidth, Table)


def _print_workloads(
    first: dict[str, Any], slow: dict[str, Any], ft: Any, fb: Any, table_cls: Any
) -> None:
    if not first["workloads"]:
        return
    table = table_cls(show_header=True, header_style="bold")
    for col in (
        "workload",
        "routing",
        "before",
        "after (draw 0)",
        "slowdown mean",
        "95% CI",
        "p95",
    ):
        table.add_column(col, justify="right")
    for w in first["workloads"]:
        fmt = ft if w["unit"] == "s" else fb
        s = slow.get(f"{w['workload']} {w['routing']}")
        after = fmt(w["after"]) if w["after"] is not None else "cannot run"
        row = (f"{s['mean']:.3f}x", f"{s['mean_ci95'][0]:.3f}–{s['mean_ci95'][1]:.3f}",
               f"{s['p95']:.3f}x") if s else ("–", "–", "–")  # fmt: skip
        table.add_row(w["workload"], w["routing"], fmt(w["before"]), after, *row)
    out.print(table)
