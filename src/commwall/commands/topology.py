"""``commwall topology KIND``: build a fabric and print its size, bisection, hops and path diversity.

>>> # commwall topology fat-tree --radix 64
>>> # commwall topology rail-optimized --nodes 127 --rails 8
>>> # commwall topology dragonfly --a 32 --p 16 --h 16 --json
"""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any, Final

import typer

KINDS: Final = ("fat-tree", "leaf-spine", "rail-optimized", "rail-only", "dragonfly")
_TIER_NAMES: Final = {1: "leaf", 2: "spine", 3: "core"}


def register(app: typer.Typer) -> None:
    """Add ``commwall topology`` to ``app``."""
    app.command("topology")(topology)


def _ratios(text: str | None) -> tuple[float, ...] | None:
    if text is None:
        return None
    try:
        values = tuple(float(v) for v in text.replace(":1", "").split(","))
    except ValueError:
        raise ValueError(
            f"--oversubscription: {text!r} is not a ratio; write o (for o:1) or one per tier, "
            "e.g. 3 or 3,1"
        ) from None
    return values


def build(
    kind: str,
    *,
    radix: int | None,
    tiers: int | None,
    oversubscription: str | None,
    nodes: int | None,
    rails: int,
    a: int | None,
    p: int | None,
    h: int | None,
    g: int | None,
    arrangement: str,
    link_rate: str | None,
    switch: str | None,
) -> Any:
    """Build the topology the options describe (raises TopologyError/ValueError on bad input)."""
    from commwall.topology import (
        dragonfly,
        fat_tree,
        leaf_spine,
        rail_only,
        rail_optimized,
    )

    physics: dict[str, Any] = {}
    if switch is not None:
        from commwall.catalog import load_catalog

        part = load_catalog().switch(switch)
        physics = {"link_rate": part.port_rate, "switch_latency": part.latency}
        radix = radix or part.ports
    if link_rate is not None:
        physics["link_rate"] = link_rate
    r = radix or 64
    ratios = _ratios(oversubscription)
    taper: float | tuple[float, ...] | None = (
        ratios[0] if ratios is not None and len(ratios) == 1 else ratios
    )
    if kind == "dragonfly":
        missing = [n for n, v in (("--a", a), ("--p", p), ("--h", h)) if v is None]
        if missing:
            raise ValueError(
                f"dragonfly needs {', '.join(missing)}: routers per group, hosts per router, "
                "global links per router (balanced: a = 2p = 2h, e.g. --a 8 --p 4 --h 4)"
            )
        assert a is not None and p is not None and h is not None
        return dragonfly(a, p, h, g, arrangement, **physics)  # type: ignore[arg-type]
    if kind in ("rail-optimized", "rail-only") and nodes is None:
        raise ValueError(f"{kind} needs --nodes (servers, each with --rails NICs)")
    if kind == "fat-tree":
        t = tiers or 3
        return fat_tree(r, t, 1.0 if taper is None else taper, endpoints=nodes, **physics)
    first = 1.0 if ratios is None else ratios[0]
    if kind == "leaf-spine":
        return leaf_spine(r, nodes, first, **physics)
    assert nodes is not None
    if kind == "rail-optimized":
        return rail_optimized(nodes, rails, r, 1.0 if taper is None else taper, tiers, **physics)
    return rail_only(nodes, rails, r, first, **physics)


def summary(topo: Any) -> dict[str, Any]:
    """Everything the command prints, as plain data."""
    from commwall.topology import (
        average_hops,
        bisection_bandwidth,
        diameter,
        oversubscription_per_tier,
        path_diversity,
    )

    c = topo.counts()
    flat = topo.params["kind"] == "dragonfly"
    names = {1: "router"} if flat else _TIER_NAMES
    params = {k: (list(v) if isinstance(v, tuple) else v) for k, v in topo.params.items()}
    return {
        "name": topo.name,
        "params": params,
        "endpoints": c.endpoints,
        "switches": {names.get(t, str(t)): n for t, n in c.switches.items()},
        "cables": c.by_kind if flat else {names.get(t, str(t)): n for t, n in c.cables.items()},
        "bisection_bandwidth": bisection_bandwidth(topo),
        "diameter": diameter(topo),
        "average_hops": average_hops(topo),
        "path_diversity": path_diversity(topo),
        "oversubscription": {
            names.get(t, str(t)): o for t, o in oversubscription_per_tier(topo).items()
        },
    }


def _print(s: dict[str, Any]) -> None:
    from rich.table import Table

    from commwall.cli import out
    from commwall.units import format_bandwidth

    p = s["params"]
    rate = p["link_rate"]
    table = Table(title=s["name"], title_justify="left", show_header=False)
    table.add_column("what")
    table.add_column("value")
    table.add_row("endpoints", f"{s['endpoints']:,}" + (" NICs" if "rails" in p else ""))
    sw = s["switches"]
    table.add_row(
        "switches",
        ", ".join(f"{n:,} {t}" for t, n in sw.items()) + f" (total {sum(sw.values()):,})",
    )
    cables = s["cables"]
    label = "cables by kind" if p["kind"] == "dragonfly" else "cables to tier"
    table.add_row(
        label,
        ", ".join(f"{n:,} {t}" for t, n in cables.items()) + f" (total {sum(cables.values()):,})",
    )
    table.add_row("link rate", f"{format_bandwidth(rate, bits=True)} ({format_bandwidth(rate)})")
    bis = s["bisection_bandwidth"]
    table.add_row(
        "bisection bandwidth",
        f"{format_bandwidth(bis)} per direction (= {bis / rate:,.0f} links; "
        f"{bis / rate / max(s['endpoints'] // 2, 1):.0%} of the half's host links)",
    )
    routed = " (MIN routes)" if p["kind"] == "dragonfly" else ""
    table.add_row("diameter", f"{s['diameter']} links{routed}")
    table.add_row("average hops", f"{s['average_hops']:.3f} links{routed}")
    table.add_row(
        "path diversity",
        ", ".join(f"{k} {v:,}" for k, v in s["path_diversity"].items()) + " route(s)",
    )
    over = s["oversubscription"]
    table.add_row(
        "oversubscription",
        ", ".join(f"{t} {o:.3g}:1" for t, o in over.items()) if over else "- (flat)",
    )
    if p["kind"] == "dragonfly":
        table.add_row(
            "dragonfly",
            f"a={p['a']} p={p['p']} h={p['h']} g={p['g']} ({p['global_arrangement']}), router "
            f"radix {p['router_radix']}, {p['global_links_per_group_pair']} global link(s) per "
            f"group pair, {'balanced (a = 2p = 2h)' if p['balanced'] else 'not balanced'}",
        )
    if p["kind"] == "rail-only":
        table.add_row("cross-rail", "forwarded over NVLink inside the node (not in this fabric)")
    out.print(table)


def topology(
    kind: Annotated[str, typer.Argument(help=", ".join(KINDS))],
    radix: Annotated[
        int | None, typer.Option(help="Switch ports (k for a fat tree). Default 64.")
    ] = None,
    tiers: Annotated[
        int | None, typer.Option(help="Switch tiers: 2 or 3 (rail-optimized: automatic).")
    ] = None,
    oversubscription: Annotated[
        str | None,
        typer.Option(help="o for o:1 per tier from the leaf up, e.g. 3 or 3,1. Default 1."),
    ] = None,
    nodes: Annotated[
        int | None,
        typer.Option(help="Servers (rail kinds) or hosts (fat-tree, leaf-spine; default: full)."),
    ] = None,
    rails: Annotated[int, typer.Option(help="NICs (rails) per server.")] = 8,
    a: Annotated[int | None, typer.Option("--a", help="Dragonfly: routers per group.")] = None,
    p: Annotated[int | None, typer.Option("--p", help="Dragonfly: hosts per router.")] = None,
    h: Annotated[int | None, typer.Option("--h", help="Dragonfly: global links/router.")] = None,
    g: Annotated[int | None, typer.Option("--g", help="Dragonfly: groups (default a·h+1).")] = None,
    arrangement: Annotated[
        str, typer.Option(help="Dragonfly global links: consecutive or palm-tree.")
    ] = "consecutive",
    link_rate: Annotated[
        str | None, typer.Option(help="Per-link rate, e.g. 400Gb/s (default 400 Gb/s).")
    ] = None,
    switch: Annotated[
        str | None,
        typer.Option(help="Catalog switch (radix, port rate, latency), e.g. quantum-2-qm9700."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the figures as JSON.")] = False,
) -> None:
    """Build a fabric and print its switches, cables, bisection, hops and path diversity."""
    from commwall.catalog import CatalogError
    from commwall.cli import _fail
    from commwall.topology import TopologyError
    from commwall.units import UnitError

    if kind not in KINDS:
        _fail(f"KIND {kind!r} is not allowed; allowed: {', '.join(KINDS)}")
    try:
        topo = build(
            kind,
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
            link_rate=link_rate,
            switch=switch,
        )
        s = summary(topo)
    except (TopologyError, CatalogError, UnitError, ValueError) as e:
        _fail(str(e))
    if as_json:
        sys.stdout.write(json.dumps(s, indent=2) + "\n")
        return
    _print(s)
