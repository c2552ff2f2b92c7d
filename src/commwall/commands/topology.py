"""``commwall topology KIND``: build a fabric and print its size, bisection, hops and path diversity.

>>> # commwall topology fat-tree --radix 64
>>> # commwall topology rail-optimized --nodes 127 --rails 8
>>> # commwall topology dragonfly --a 32 --p 16 --h 16 --json
>>> # commwall topology rail-optimized --nodes 127 --optics cpo --gpus-per-node 8 --gpu h100-sxm

Besides the graph figures it prints the bill of materials (:mod:`commwall.topology.bom`): switch
boxes per tier, cables by medium, transceivers, watts by category, order-of-magnitude cost, and
the interconnect power of the same fabric with DSP, LPO and CPO optics.
"""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any, Final

import typer

from commwall.scenario import FABRIC_KINDS, OPTICS

#: Scale-up kinds: a node or rack, summarised by its NVLink/PCIe facts rather than a BOM.
SCALE_UP_KINDS: Final = ("nvlink-node", "nvl72", "pcie-tree")
#: Every kind ``commwall topology`` builds: the scale-out fabrics, then the scale-up ones.
KINDS: Final = (*FABRIC_KINDS, *SCALE_UP_KINDS)
_RAIL_KINDS: Final = ("rail-optimized", "rail-only")
_TIER_NAMES: Final = {1: "leaf", 2: "spine", 3: "core"}


def register(app: typer.Typer) -> None:
    """Add ``commwall topology`` to ``app``."""
    app.command("topology")(topology)


def _ratios(text: str | None) -> tuple[float, ...] | None:
    from commwall.topology import TopologyError

    if text is None:
        return None
    try:
        values = tuple(float(v) for v in text.replace(":1", "").split(","))
    except ValueError:
        raise TopologyError(
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
    l_leaves: int | None = None,
    s_spines: int | None = None,
) -> Any:
    """Build the topology the options describe (raises TopologyError on bad input):
    the options checked here, the fabric by :func:`commwall.topology.kinds.build_fabric`."""
    from commwall.topology import TopologyError
    from commwall.topology.kinds import build_fabric

    physics: dict[str, Any] = {}
    if switch is not None:
        from commwall.catalog import load_catalog

        part = load_catalog().switch(switch)
        physics = {"link_rate": part.port_rate, "switch_latency": part.latency}
        radix = part.ports if radix is None else radix
    if link_rate is not None:
        physics["link_rate"] = link_rate
    ratios = _ratios(oversubscription)
    taper: float | tuple[float, ...] | None = (
        ratios[0] if ratios is not None and len(ratios) == 1 else ratios
    )
    needs = {
        "dragonfly": ((("--a", a), ("--p", p), ("--h", h)), "routers per group, hosts per "
                      "router, global links per router (balanced: a = 2p = 2h, e.g. --a 8 --p 4 "
                      "--h 4)"),
        "dragonfly-plus": ((("--p", p), ("--l", l_leaves), ("--s", s_spines), ("--h", h)),
                           "hosts per leaf, leaves and spines per group, global links per spine "
                           "(e.g. --p 4 --l 4 --s 4 --h 4)"),
    }  # fmt: skip
    if kind in needs:
        options, what = needs[kind]
        missing = [name for name, value in options if value is None]
        if missing:
            raise TopologyError(f"{kind} needs {', '.join(missing)}: {what}")
    if kind in ("rail-optimized", "rail-only") and nodes is None:
        raise TopologyError(f"{kind} needs --nodes (servers, each with --rails NICs)")
    return build_fabric(
        kind, nodes=nodes, rails=rails, radix=64 if radix is None else radix, tiers=tiers,
        oversubscription=taper, a=a, p=p, h=h, g=g, arrangement=arrangement,
        l_leaves=l_leaves, s_spines=s_spines, **physics,
    )  # fmt: skip


def _draw(topo: Any, draw_to: str | None) -> None:
    """Write the drawing when asked (errors exit 2 with the install hint or the path problem)."""
    if draw_to is None:
        return
    from commwall.console import err
    from commwall.console import fail as _fail
    from commwall.topology.draw import DrawError, draw

    try:
        path = draw(topo, draw_to)
    except DrawError as e:
        _fail(f"--draw: {e}")
    err.print(f"drew {path}")


def _scenario_fabric(path: str, as_json: bool, draw_to: str | None = None) -> None:
    """Summary and bill of materials of a scenario's scale-out fabric, with its own parts."""
    from commwall.cluster import build_cluster
    from commwall.console import fail as _fail
    from commwall.scenario import ScenarioError, load_scenario
    from commwall.topology import TopologyError

    try:
        cluster = build_cluster(load_scenario(path).cluster)
        topo = cluster.scale_out_topology()
        s = summary(
            topo,
            {
                "optics": cluster.optics,
                "switch": cluster.switch.name,
                "nic": cluster.nic.name,
                "gpu": cluster.gpu.name,
                "gpus_per_endpoint": cluster.gpus_per_node / cluster.nics_per_node,
            },
        )
    except ScenarioError as e:
        _fail("\n".join(f"{e.origin}: {m}" for m in e.messages))
    except (TopologyError, ValueError) as e:
        _fail(f"{path}: {e}")
    _draw(topo, draw_to)
    if as_json:
        sys.stdout.write(json.dumps(s, indent=2) + "\n")
        return
    _print(s)


def scale_up_summary(kind: str, *, gpu: str | None, preset: str | None) -> dict[str, Any]:
    """Facts of a scale-up domain: GPUs, switch chips, links, per-GPU and aggregate bandwidth,
    bisection and hops (:func:`commwall.topology.scale_up_facts`)."""
    from dataclasses import asdict

    from commwall.topology import nvl72, nvlink_node, pcie_tree, scale_up_facts

    if kind == "nvl72":
        topo = nvl72(gpu=gpu or "gb200")
    elif kind == "nvlink-node":
        topo = nvlink_node(gpu or "h100-sxm")
    else:
        topo = pcie_tree(preset or "dgx-h100")
    return {"name": topo.name, "kind": kind, **asdict(scale_up_facts(topo))}


def _print_scale_up(facts: dict[str, Any]) -> None:
    from rich.table import Table

    from commwall.console import out
    from commwall.units import format_bandwidth

    table = Table(title=facts["name"], title_justify="left", show_header=False)
    table.add_column("what")
    table.add_column("value")
    table.add_row("GPUs", f"{facts['gpus']:,}")
    table.add_row("switch chips", f"{facts['switch_chips']:,}")
    table.add_row("NVLink links", f"{facts['nvlink_links']:,}")
    table.add_row(
        "per-GPU bandwidth", f"{format_bandwidth(facts['per_gpu_bandwidth'])} per direction"
    )
    table.add_row(
        "aggregate bandwidth", f"{format_bandwidth(facts['aggregate_bandwidth'])} (both directions)"
    )
    table.add_row(
        "bisection bandwidth", f"{format_bandwidth(facts['bisection_bandwidth'])} per direction"
    )
    table.add_row(
        "hops GPU to GPU", f"{facts['gpu_hops']} links, {facts['switch_hops']} switch(es)"
    )
    out.print(table)


def _lengths(values: list[str] | None) -> dict[str, str] | None:
    from commwall.topology import TopologyError

    if not values:
        return None
    out: dict[str, str] = {}
    for v in values:
        seg, sep, length = v.partition("=")
        if not sep or not seg.strip() or not length.strip():
            raise TopologyError(
                f"--length: {v!r} is not SEGMENT=LENGTH; write e.g. access=20 or leaf-spine=100m"
            )
        out[seg.strip()] = length.strip()
    return out


def bom_options(
    kind: str,
    *,
    optics: str,
    switch: str | None,
    nic: str | None,
    gpu: str | None,
    gpus_per_node: int | None,
    rails: int,
    lengths: list[str] | None,
    lanes_per_port: int,
) -> dict[str, Any]:
    """Keyword arguments for :func:`commwall.topology.bom.bill_of_materials` from the options.

    An endpoint is a NIC: for rail kinds a node has ``rails`` of them, so each holds
    gpus_per_node / rails GPUs; for the others an endpoint is a host holding gpus_per_node.
    ``--gpus-per-node`` without ``--gpu`` counts H100 SXM GPUs.
    """
    from commwall.topology import TopologyError

    if optics not in OPTICS:
        raise TopologyError(f"--optics: {optics!r} is not allowed; allowed: {', '.join(OPTICS)}")
    if gpus_per_node is not None and gpus_per_node < 1:
        raise TopologyError(f"--gpus-per-node: must be a whole number >= 1, got {gpus_per_node}")
    if lanes_per_port < 1:
        raise TopologyError(f"--lanes-per-port: must be a whole number >= 1, got {lanes_per_port}")
    per_node = gpus_per_node if gpus_per_node is not None else (rails if kind in _RAIL_KINDS else 1)
    per_endpoint = per_node / rails if kind in _RAIL_KINDS else float(per_node)
    if gpu is None and gpus_per_node is not None:
        gpu = "h100-sxm"
    return {
        "optics": optics,
        "switch": switch,
        "nic": nic,
        "gpu": gpu,
        "gpus_per_endpoint": per_endpoint,
        "lengths": _lengths(lengths),
        "lanes_per_port": lanes_per_port,
    }


def summary(topo: Any, bom: dict[str, Any] | None = None) -> dict[str, Any]:
    """Everything the command prints, as plain data (``bom``: bill-of-materials keywords)."""
    from commwall.topology import (
        average_hops,
        bisection_bandwidth,
        diameter,
        oversubscription_per_tier,
        path_diversity,
    )
    from commwall.topology.bom import bill_of_materials, compare_optics

    c = topo.counts()
    flat = topo.params["kind"] == "dragonfly"
    names = {1: "router"} if flat else _TIER_NAMES
    params = {k: (list(v) if isinstance(v, tuple) else v) for k, v in topo.params.items()}
    kw = dict(bom or {})
    optics = kw.pop("optics", "dsp")
    bill = bill_of_materials(topo, optics=optics, **kw)
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
        "bom": bill.to_dict(),
        "optics_comparison": compare_optics(topo, **kw).to_dict(),
    }


def _print(s: dict[str, Any]) -> None:
    from rich.table import Table

    from commwall.console import out
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
    _bom_rows(table, s["bom"], s["optics_comparison"])
    out.print(table)


def _usd(x: float) -> str:
    for div, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= div:
            return f"~${x / div:.3g}{suffix}"
    return f"~${x:.3g}"


def _bom_rows(table: Any, b: dict[str, Any], compare: dict[str, Any]) -> None:
    """Bill of materials, power and cost rows (from ``BillOfMaterials.to_dict``)."""
    from commwall.units import format_length, format_power

    t = b["totals"]
    sw = b["switches"]
    if sw:
        each = sw[0]
        table.add_row(
            "switch boxes",
            " + ".join(f"{s['count']:,} {s['tier']}" for s in sw)
            + f" × {each['part']} ({format_power(each['power_w'])}, {_usd(each['cost_usd'] or 0)} "
            f"each; ≤ {max(s['ports_used'] for s in sw)} of {each['ports_available']} ports used)",
        )
    table.add_row(
        "cables by medium",
        ", ".join(
            f"{c['segment']} {c['count']:,} {c['medium'].upper()} ({format_length(c['length_m'])})"
            for c in b["cables"]
        )
        + f" (total {t['cables']:,})",
    )
    techs = b["transceivers_by_technology"]
    kinds = " + ".join(
        f"{n:,} {k}" + (" co-packaged" if k == "cpo" else " pluggable") for k, n in techs.items()
    )
    table.add_row(
        "transceivers",
        (f"{t['transceivers']:,} ({kinds}), " if techs else "none (all copper), ")
        + f"{t['transceivers_per_gpu']:.2f} per {'GPU' if b['gpus']['count'] else 'endpoint'}",
    )
    w = t["watts"]
    labels = (("switches", "switches"), ("optics", "optics"), ("cables", "cables"))
    parts = [f"{label} {format_power(w[k])}" for k, label in labels]
    parts.append(
        f"NICs {format_power(w['nics'])}"
        + (f" ({b['nics']['count']:,} × {b['nics']['part']})" if b["nics"]["part"] else "")
    )
    if b["gpus"]["part"]:
        parts.append(
            f"GPUs {format_power(w['gpus'])} ({b['gpus']['count']:,} × {b['gpus']['part']})"
        )
    table.add_row("power", ", ".join(parts) + f"; total {format_power(t['total_power_w'])}")
    rows = []
    for r in compare["rows"]:
        mark = "*" if r["optics"] == b["optics"] else ""
        saving = r["saving_vs_dsp"]
        rows.append(
            f"{r['optics']}{mark} {format_power(r['interconnect_w'])}"
            + (f" ({-saving:+.0%})" if saving and r["optics"] != "dsp" else "")
        )
    table.add_row("optics+cables power dsp/lpo/cpo", ", ".join(rows) + " (* = --optics)")
    c = t["cost_usd"]
    table.add_row(
        "network cost (~estimate)",
        f"{_usd(t['total_cost_usd'])}: switches {_usd(c['switches'])}, optics "
        f"{_usd(c['optics'])}, cables {_usd(c['cables'])} (order of magnitude; NICs, GPUs "
        "not priced)",
    )
    for warning in b["warnings"]:
        table.add_row("warning", warning)


def topology(
    kind: Annotated[
        str | None, typer.Argument(help=", ".join(KINDS) + " (or --scenario FILE)")
    ] = None,
    scenario: Annotated[
        str | None,
        typer.Option(help="Scenario YAML: its cluster's scale-out fabric, parts and optics."),
    ] = None,
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
    l_leaves: Annotated[
        int | None, typer.Option("--l", help="Dragonfly+: leaves per group.")
    ] = None,
    s_spines: Annotated[
        int | None, typer.Option("--s", help="Dragonfly+: spines per group.")
    ] = None,
    preset: Annotated[
        str | None, typer.Option(help="pcie-tree: the node preset, e.g. dgx-h100.")
    ] = None,
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
    optics: Annotated[
        str, typer.Option(help="Optical ends: dsp, lpo or cpo (co-packaged on the switch side).")
    ] = "dsp",
    gpus_per_node: Annotated[
        int | None,
        typer.Option(help="GPUs per server, for GPU power (rail kinds: default --rails)."),
    ] = None,
    gpu: Annotated[
        str | None,
        typer.Option(
            help="Catalog GPU for GPU power, e.g. h100-sxm (default with --gpus-per-node)."
        ),
    ] = None,
    nic: Annotated[
        str | None, typer.Option(help="Catalog NIC (default: lowest-power one at the link rate).")
    ] = None,
    length: Annotated[
        list[str] | None,
        typer.Option(
            help="Run length of a cable segment, SEGMENT=LENGTH (access, leaf-spine, spine-core, "
            "local, global), e.g. access=20 or leaf-spine=100m. Repeatable."
        ),
    ] = None,
    lanes_per_port: Annotated[
        int, typer.Option(help="Electrical lanes per port (4 for IB 4X; 8 for 800GbE on 100G).")
    ] = 4,
    as_json: Annotated[bool, typer.Option("--json", help="Print the figures as JSON.")] = False,
    draw_to: Annotated[
        str | None,
        typer.Option(
            "--draw", help="Also draw the fabric to this .png/.svg/.pdf (large ones by tier)."
        ),
    ] = None,
) -> None:
    """Build a fabric and print its switches, cables, bisection, hops and path diversity, and its
    bill of materials: switch boxes, cables by medium, transceivers, power and cost (~estimate)."""
    from commwall.catalog import CatalogError
    from commwall.console import fail as _fail
    from commwall.topology import TopologyError
    from commwall.units import UnitError

    if scenario is not None:
        if kind is not None:
            _fail("give either KIND or --scenario, not both")
        _scenario_fabric(scenario, as_json, draw_to)
        return
    if kind is None:
        _fail(f"KIND is required (allowed: {', '.join(KINDS)}) unless --scenario FILE is given")
    if kind not in KINDS:
        _fail(f"KIND {kind!r} is not allowed; allowed: {', '.join(KINDS)}")
    if kind in SCALE_UP_KINDS:
        try:
            facts = scale_up_summary(kind, gpu=gpu, preset=preset)
        except (TopologyError, CatalogError, UnitError, ValueError) as e:
            _fail(str(e))
        if as_json:
            sys.stdout.write(json.dumps(facts, indent=2) + "\n")
        else:
            _print_scale_up(facts)
        return
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
            l_leaves=l_leaves,
            s_spines=s_spines,
        )
        options = bom_options(
            kind,
            optics=optics,
            switch=switch,
            nic=nic,
            gpu=gpu,
            gpus_per_node=gpus_per_node,
            rails=rails,
            lengths=length,
            lanes_per_port=lanes_per_port,
        )
        s = summary(topo, options)
    except (TopologyError, CatalogError, UnitError, ValueError) as e:
        _fail(str(e))
    _draw(topo, draw_to)
    if as_json:
        sys.stdout.write(json.dumps(s, indent=2) + "\n")
        return
    _print(s)
