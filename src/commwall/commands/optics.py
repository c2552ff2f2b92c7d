"""``commwall optics``: interconnect power, energy per bit, reach and cost per technology.

Three ways in, one at a time:

* ``--transceivers N [--speed 800G]`` — N modules of every technology at one speed;
* ``--cluster PRESET [--nodes N]`` — a catalog preset's links per tier and its interconnect power;
* ``--scenario FILE [--nodes N]`` — the same for a scenario file's cluster.

With none of them, one module of each technology at ``--speed`` (default 800G). Bad input exits
with status 2 and one message naming the option and what is allowed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from commwall.console import fail, friendly, out

if TYPE_CHECKING:
    from commwall.cluster import Cluster
    from commwall.phy.optics import ClusterOptics, InterconnectComparison


def _power(w: float) -> str:
    from commwall.units import format_power

    return format_power(w, digits=3)


def _usd(x: float | None, estimate: bool) -> str:
    if x is None:
        return "–"
    text = f"${x / 1e6:,.2f} M" if x >= 1e6 else f"${x:,.0f}"
    return ("~" if estimate else "") + text


def _saving(s: float | None) -> str:
    return "–" if s is None else f"{s:.0%}"


def _length(m: float) -> str:
    from commwall.units import format_length

    return format_length(m, digits=3)


def _speed(rate: float) -> str:
    from commwall.units import format_bandwidth

    return format_bandwidth(rate, bits=True)


def _parse_lengths(items: list[str]) -> dict[str, str]:
    lengths: dict[str, str] = {}
    for item in items:
        tier, sep, value = item.partition("=")
        if not sep or not tier.strip() or not value.strip():
            fail(f"--length: expected TIER=LENGTH such as 'host-leaf=3m', got {item!r}")
        lengths[tier.strip()] = value.strip()
    return lengths


def _build(scenario: Path | None, preset: str | None, nodes: int | None) -> Cluster:
    from commwall.cluster import cluster_from_option

    if scenario is not None:
        return cluster_from_option(str(scenario), nodes=nodes, option="--scenario")
    assert preset is not None
    return cluster_from_option(preset, nodes=nodes)


def _print_comparison(cmp: InterconnectComparison) -> None:
    n = cmp.n_transceivers
    table = Table(
        title=f"Interconnect at {_speed(cmp.speed)}: {n:,} module{'s' if n != 1 else ''} "
        "(cables: per end)",
        title_justify="left",
    )
    for col in ("technology", "part", "module", "pJ/bit", "latency/end", "reach", "total", "cost"):
        table.add_column(col, justify="left" if col in ("technology", "part") else "right")
    table.add_column("saving vs DSP", justify="right")
    scaled = False
    for r in cmp.rows:
        c = r.choice
        scaled = scaled or c.scaled_from is not None
        table.add_row(
            c.kind.upper(),
            c.part + ("*" if c.scaled_from else ""),
            _power(c.power_w),
            f"{c.energy_per_bit * 1e12:.2f}",
            f"{c.latency_s * 1e9:g} ns",
            _length(c.reach_m),
            _power(r.total_power_w),
            _usd(r.total_cost_usd, r.cost_is_estimate),
            _saving(r.saving_vs_dsp),
        )
    out.print(table)
    notes = ["~ cost is an order-of-magnitude estimate (hardware.md §9)"]
    if scaled:
        notes.append("* no part at this speed: nearest-rate part scaled per bit (--exact to skip)")
    notes += [f"{k.upper()}: {why}" for k, why in cmp.unavailable.items()]
    for line in notes:
        out.print(escape(line))


def _print_cluster(co: ClusterOptics) -> None:
    if not co.tiers:
        out.print(f"cluster  {co.cluster}: 1 node, {co.gpus:,} GPUs")
        out.print(
            "fabric   none: one node, no traffic leaves it — no links, transceivers or optics"
        )
        return
    out.print(
        f"cluster  {co.cluster}: {co.nodes:,} nodes, {co.gpus:,} GPUs, {co.topology} "
        f"{len(co.tiers)}-tier, oversubscription {co.oversubscription:g}:1"
    )
    links = Table(title="Links per tier (estimate)", title_justify="left")
    for col in ("tier", "links", "rate", "length", "medium", "reach", "transceivers"):
        links.add_column(col, justify="left" if col in ("tier", "medium") else "right")
    for t in co.tiers:
        links.add_row(
            t.name,
            f"{t.links:,}",
            _speed(t.rate),
            _length(t.length_m),
            f"{t.medium.name} ({t.medium.family})",
            _length(t.medium.reach_m),
            f"{t.transceivers:,}",
        )
    links.add_row(
        "[bold]total[/]", f"[bold]{co.links:,}[/]", "", "", "", "", f"[bold]{co.transceivers:,}[/]"
    )
    out.print(links)
    out.print(f"transceivers per GPU: {co.transceivers_per_gpu:.2f}")
    tech = Table(title="Interconnect power per optical technology", title_justify="left")
    for col in ("technology", "parts", "optical", "copper", "total", "cost", "saving vs DSP"):
        tech.add_column(col, justify="left" if col in ("technology", "parts") else "right")
    for row in co.technologies:
        tech.add_row(
            row.kind.upper() + ("*" if row.scaled else ""),
            ", ".join(row.parts),
            _power(row.optical_power_w),
            _power(row.copper_power_w),
            _power(row.total_power_w),
            _usd(row.cost_usd, True),
            _saving(row.saving_vs_dsp),
        )
    out.print(tech)
    out.print(
        "~ cost is an order-of-magnitude estimate; * some parts scaled per bit to the link rate"
    )
    for row in co.technologies:
        for w in row.warnings:
            out.print(escape(f"warning ({row.kind}): {w}"))
    out.print("assumptions:")
    for a in co.assumptions:
        out.print(escape(f"  - {a}"))


def optics(
    scenario: Annotated[
        Path | None, typer.Option(help="Scenario YAML whose cluster to count.")
    ] = None,
    cluster: Annotated[
        str | None, typer.Option(help="Cluster preset (`commwall catalog preset`).")
    ] = None,
    nodes: Annotated[
        int | None, typer.Option(min=1, help="Nodes (with --cluster or --scenario).")
    ] = None,
    transceivers: Annotated[
        int | None, typer.Option(min=0, help="Modules to compare at --speed.")
    ] = None,
    speed: Annotated[
        str | None, typer.Option(help="Module speed: 400G, 800G, 1.6T (default 800G).")
    ] = None,
    length: Annotated[
        list[str] | None,
        typer.Option(help="Run length of a tier, TIER=LENGTH (e.g. host-leaf=3m); repeatable."),
    ] = None,
    lanes_per_port: Annotated[
        int, typer.Option(min=1, help="Electrical lanes per port (4 for IB 4X; 8 for 800GbE).")
    ] = 4,
    copper: Annotated[
        bool, typer.Option("--copper/--no-copper", help="Allow copper where it reaches.")
    ] = True,
    exact: Annotated[
        bool, typer.Option(help="Only catalog parts at exactly --speed (no per-bit scaling).")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Optics and cables: power, pJ/bit, latency, reach and cost per technology, or per cluster."""
    _run(scenario, cluster, nodes, transceivers, speed, length or [], lanes_per_port, copper,
         exact, as_json)  # fmt: skip


@friendly
def _run(
    scenario: Path | None,
    preset: str | None,
    nodes: int | None,
    transceivers: int | None,
    speed: str | None,
    length: list[str],
    lanes_per_port: int,
    copper: bool,
    exact: bool,
    as_json: bool,
) -> None:
    from commwall.phy.optics import cluster_optics, compare_interconnect

    if scenario is not None and preset is not None:
        fail("--scenario and --cluster: give one of them, not both")
    cluster_mode = scenario is not None or preset is not None
    if cluster_mode:
        if transceivers is not None or speed is not None:
            fail(
                "--transceivers/--speed: compare modules without --scenario/--cluster; "
                "a cluster's link speeds come from its NIC and switch"
            )
        if exact:
            fail("--exact: applies to --transceivers comparisons only")
        lengths = _parse_lengths(length)
        cl = _build(scenario, preset, nodes)
        co = cluster_optics(cl, lengths=lengths, lanes_per_port=lanes_per_port, allow_copper=copper)
        if as_json:
            sys.stdout.write(json.dumps(co.to_dict(), indent=2) + "\n")
            return
        _print_cluster(co)
        return
    if nodes is not None:
        fail("--nodes: needs --cluster or --scenario")
    if length or lanes_per_port != 4 or not copper:
        fail("--length/--lanes-per-port/--no-copper: need --cluster or --scenario")
    cmp = compare_interconnect(
        1 if transceivers is None else transceivers, speed or "800G", scale=not exact
    )
    if as_json:
        sys.stdout.write(json.dumps(cmp.to_dict(), indent=2) + "\n")
        return
    _print_comparison(cmp)


def register(app: typer.Typer) -> None:
    """Add ``commwall optics`` to ``app``."""
    app.command(name="optics")(optics)
