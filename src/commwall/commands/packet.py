"""``commwall packet PATTERN``: plain traffic packet by packet — credits, pauses, ECN marks, trims
and drops, per fabric.

>>> # commwall packet incast --senders 64 --size 2MB --link 400Gb/s --fabric all
>>> # commwall packet incast --senders 127 --radix 8 --link 100Gb/s --cable 1us --fabric roce
>>> # commwall packet permutation --topology fat-tree --radix 16 --size 2MB --link 100Gb/s --fabric ib
>>> # commwall packet permutation --radix 8 --fabric uec --flow --json
>>> # commwall packet adversarial --a 4 --p 2 --h 2 --size 256KB --fabric all --flow
>>> # commwall packet matrix flows.cm --radix 16 --fabric uec     (CSV or htsim's .cm)

Every pattern runs on any topology ``commwall topology`` builds; an incast picks the smallest
fat tree that holds its senders unless told otherwise, ``adversarial`` (each dragonfly group to
the next) needs a dragonfly or dragonfly+, and ``matrix`` takes your own flows. ``--fabric all`` runs InfiniBand, RoCEv2 with
and without PFC, Ultra Ethernet and lossy Ethernet on the same flows; ``--flow`` also runs the flow
engine on them (the cross-check where the two models meet).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Annotated, Any

import typer

from commwall.console import event_progress, fail, friendly, out
from commwall.transport.fabric import ETHERNET_HEADER

#: Shown under the tables: what the run is and is not.
_MODEL_NOTE = (
    "packet engine: integer-picosecond events, {mtu} B MTU, {cut} switches, one data priority "
    "per port; IB congestion control (FECN/BECN) is not modelled"
)
_SPARK = " ▁▂▃▄▅▆▇█"


def register(app: typer.Typer) -> None:
    """Add ``commwall packet`` (incast, permutation, adversarial, matrix) to ``app``."""
    sub = typer.Typer(
        no_args_is_help=True,
        help="Plain traffic packet by packet on a fabric: credits, PFC pauses, ECN marks, "
        "trims, drops and retransmissions, per fabric (ib, roce, roce-nopfc, uec, lossy).",
    )
    sub.command("incast")(friendly(incast))
    sub.command("permutation")(friendly(permutation))
    sub.command("adversarial")(friendly(adversarial))
    sub.command("matrix")(friendly(matrix))
    app.add_typer(sub, name="packet")


@dataclass(frozen=True)
class _Options:
    """The options every ``commwall packet`` pattern shares, typed (each field is the command
    parameter of that name)."""

    size: str
    link: str
    fabric: str
    tiers: int | None
    oversubscription: str | None
    rails: int
    a: int | None
    p: int | None
    h: int | None
    g: int | None
    l_leaves: int | None
    s_spines: int | None
    routing: str | None
    buffer: str | None
    switch: str | None
    mtu: int
    cable: str | None
    switch_latency: str | None
    store_and_forward: bool
    ber: float | None
    pre_fec_ber: float | None
    fec: str | None
    lane: str | None
    link_retry: bool
    kernel: str
    ecn: str | None
    rto: str | None
    flow: bool
    ports: int
    seed: int
    as_json: bool

    @classmethod
    def of(cls, params: Mapping[str, Any]) -> _Options:
        """The options out of a command's parameters (its ``locals()``), field by field."""
        return cls(**{f.name: params[f.name] for f in fields(cls)})


# ---- shared options ---------------------------------------------------------------------------

Topo = Annotated[
    str | None,
    typer.Option(
        help="fat-tree, leaf-spine, rail-optimized, rail-only, dragonfly or dragonfly-plus "
        "(incast default: the smallest fat tree holding the senders; permutation: fat-tree)."
    ),
]
Radix = Annotated[int | None, typer.Option(help="Switch ports (k of a fat tree).")]
Tiers = Annotated[int | None, typer.Option(help="Switch tiers (fat-tree: 3).")]
Over = Annotated[str | None, typer.Option(help="o for o:1 per tier from the leaf up, e.g. 3.")]
Nodes = Annotated[
    int | None, typer.Option(help="Hosts (fat-tree, leaf-spine) or servers (rail kinds).")
]
Rails = Annotated[int, typer.Option(help="NICs per server (rail kinds).")]
DfA = Annotated[int | None, typer.Option("--a", help="Dragonfly: routers per group.")]
DfP = Annotated[int | None, typer.Option("--p", help="Dragonfly: hosts per router.")]
DfH = Annotated[int | None, typer.Option("--h", help="Dragonfly: global links per router.")]
DfG = Annotated[int | None, typer.Option("--g", help="Dragonfly: groups.")]
DfL = Annotated[int | None, typer.Option("--l", help="Dragonfly+: leaves per group.")]
DfS = Annotated[int | None, typer.Option("--s", help="Dragonfly+: spines per group.")]
Size = Annotated[str, typer.Option(help="Payload bytes per flow, e.g. 2MB.")]
Link = Annotated[str, typer.Option("--link", help="Link rate, e.g. 100Gb/s.")]
Fabric = Annotated[str, typer.Option(help="ib, roce, roce-nopfc, uec, lossy or all.")]
Routing = Annotated[
    str | None,
    typer.Option(help="ecmp, spray or adaptive (default: spray for uec, ecmp for the others)."),
]
Buffer = Annotated[
    str | None, typer.Option(help="Shared packet buffer per switch, e.g. 16MiB (default 16 MiB).")
]
Switch = Annotated[
    str | None,
    typer.Option(
        help="A catalog switch (commwall catalog switch): its forwarding latency and, when the "
        "catalog has it, its shared buffer."
    ),
]
Mtu = Annotated[int, typer.Option(help="Payload bytes per packet (256 to 65536).")]
Cable = Annotated[
    str | None, typer.Option(help="Propagation delay of every cable, e.g. 1us (default: lengths).")
]
SwLat = Annotated[
    str | None, typer.Option(help="Per-switch forwarding latency, e.g. 600ns (default builder's).")
]
Saf = Annotated[
    bool, typer.Option("--store-and-forward", help="Switches wait for a packet's tail.")
]
Ber = Annotated[
    float | None, typer.Option(help="Post-FEC bit error rate of every fabric link (random bits).")
]
PreFec = Annotated[
    float | None,
    typer.Option(help="Pre-FEC BER of every fabric link: packet errors and FEC latency from phy."),
]
Fec = Annotated[
    str | None, typer.Option(help="FEC code with --pre-fec-ber (default: the lane's, e.g. kp4).")
]
Lane = Annotated[
    str | None,
    typer.Option(help="SerDes lane with --pre-fec-ber: 25G, 50G, 100G (default), 200G."),
]
Retry = Annotated[
    bool,
    typer.Option(
        "--link-retry",
        help="A packet failing its FCS is replayed by the link (IB LLR) instead of being "
        "dropped and resent end to end.",
    ),
]
Ecn = Annotated[
    str | None,
    typer.Option(
        help="ECN marking KMIN,KMAX,PMAX for roce/uec, e.g. 150KB,1.5MB,0.2 (default: the "
        "fabric's; RoCE's scale with the line rate)."
    ),
]
Rto = Annotated[
    str | None, typer.Option(help="Retransmission timeout, e.g. 1ms (default: the fabric's).")
]
Flow = Annotated[
    bool, typer.Option("--flow", help="Also run the flow engine on the same flows (cross-check).")
]
Ports = Annotated[int, typer.Option(min=0, help="Hottest ports to list per fabric.")]
Seed = Annotated[int, typer.Option(min=0, help="Seed of the pattern, the hashes and marking.")]
Kernel = Annotated[
    str,
    typer.Option(
        help="Event loop: auto (the compiled one for runs of a million events or more, when "
        "numba is installed), python (the reference) or numba (compiled; the same events).",
    ),
]
Json = Annotated[bool, typer.Option("--json", help="Print the results as JSON.")]


def incast(
    senders: Annotated[int, typer.Option(min=1, help="Senders, all to endpoint 0.")] = 64,
    size: Size = "2MB",
    link: Link = "400Gb/s",
    fabric: Fabric = "all",
    topology: Topo = None,
    radix: Radix = None,
    tiers: Tiers = None,
    oversubscription: Over = None,
    nodes: Nodes = None,
    rails: Rails = 8,
    a: DfA = None,
    p: DfP = None,
    h: DfH = None,
    g: DfG = None,
    l_leaves: DfL = None,
    s_spines: DfS = None,
    routing: Routing = None,
    buffer: Buffer = None,
    switch: Switch = None,
    mtu: Mtu = 4096,
    cable: Cable = None,
    switch_latency: SwLat = None,
    store_and_forward: Saf = False,
    ber: Ber = None,
    pre_fec_ber: PreFec = None,
    fec: Fec = None,
    lane: Lane = None,
    link_retry: Retry = False,
    kernel: Kernel = "auto",
    ecn: Ecn = None,
    rto: Rto = None,
    flow: Flow = False,
    ports: Ports = 3,
    seed: Seed = 0,
    as_json: Json = False,
) -> None:
    """N senders burst into one host at once, packet by packet: completion times, goodput, and
    what each fabric did about it — credits held, pauses sent, packets marked, trimmed, dropped
    and resent — with the buffer's peak and the invariants the run checked."""
    if topology is None and radix is None and nodes is None:
        topology, radix, nodes = "fat-tree", _fat_tree_radix(senders + 1), senders + 1
    _run(
        "incast",
        _Options.of(locals()),
        senders=senders,
        topology=topology or "fat-tree",
        radix=radix,
        nodes=nodes,
    )


def permutation(
    topology: Topo = None,
    radix: Radix = 8,
    tiers: Tiers = None,
    oversubscription: Over = None,
    nodes: Nodes = None,
    rails: Rails = 8,
    a: DfA = None,
    p: DfP = None,
    h: DfH = None,
    g: DfG = None,
    l_leaves: DfL = None,
    s_spines: DfS = None,
    size: Size = "2MB",
    link: Link = "100Gb/s",
    fabric: Fabric = "all",
    routing: Routing = None,
    buffer: Buffer = None,
    switch: Switch = None,
    mtu: Mtu = 4096,
    cable: Cable = None,
    switch_latency: SwLat = None,
    store_and_forward: Saf = False,
    ber: Ber = None,
    pre_fec_ber: PreFec = None,
    fec: Fec = None,
    lane: Lane = None,
    link_retry: Retry = False,
    kernel: Kernel = "auto",
    ecn: Ecn = None,
    rto: Rto = None,
    flow: Flow = False,
    ports: Ports = 3,
    seed: Seed = 0,
    as_json: Json = False,
) -> None:
    """Every host sends to one other and receives from one (a random single cycle), packet by
    packet: completion times against the line-rate ideal, hash collisions under ECMP, and what
    each fabric did about them."""
    opts = _Options.of(locals())
    _run("permutation", opts, senders=None, topology=topology or "fat-tree", radix=radix,
         nodes=nodes)  # fmt: skip


def adversarial(
    topology: Topo = "dragonfly",
    radix: Radix = None,
    tiers: Tiers = None,
    oversubscription: Over = None,
    nodes: Nodes = None,
    rails: Rails = 8,
    a: DfA = None,
    p: DfP = None,
    h: DfH = None,
    g: DfG = None,
    l_leaves: DfL = None,
    s_spines: DfS = None,
    size: Size = "2MB",
    link: Link = "100Gb/s",
    fabric: Fabric = "all",
    routing: Routing = None,
    buffer: Buffer = None,
    switch: Switch = None,
    mtu: Mtu = 4096,
    cable: Cable = None,
    switch_latency: SwLat = None,
    store_and_forward: Saf = False,
    ber: Ber = None,
    pre_fec_ber: PreFec = None,
    fec: Fec = None,
    lane: Lane = None,
    link_retry: Retry = False,
    kernel: Kernel = "auto",
    ecn: Ecn = None,
    rto: Rto = None,
    flow: Flow = False,
    ports: Ports = 3,
    seed: Seed = 0,
    as_json: Json = False,
) -> None:
    """A dragonfly's worst case, packet by packet: every host of group i sends to a host of
    group i+1 (Kim et al., ISCA 2008), so minimal routes pile onto the few global links between
    neighbouring groups; compare ecmp with spray and adaptive."""
    opts = _Options.of(locals())
    _run("adversarial", opts, senders=None, topology=topology or "dragonfly", radix=radix,
         nodes=nodes)  # fmt: skip


def matrix(
    flows: Annotated[
        str,
        typer.Argument(
            help="The flows: CSV lines src,dst,bytes, or an htsim connection matrix "
            "(Nodes/Connections header, 'SRC->DST id I start 0 size B' lines)."
        ),
    ],
    topology: Topo = None,
    radix: Radix = 8,
    tiers: Tiers = None,
    oversubscription: Over = None,
    nodes: Nodes = None,
    rails: Rails = 8,
    a: DfA = None,
    p: DfP = None,
    h: DfH = None,
    g: DfG = None,
    l_leaves: DfL = None,
    s_spines: DfS = None,
    link: Link = "100Gb/s",
    fabric: Fabric = "all",
    routing: Routing = None,
    buffer: Buffer = None,
    switch: Switch = None,
    mtu: Mtu = 4096,
    cable: Cable = None,
    switch_latency: SwLat = None,
    store_and_forward: Saf = False,
    ber: Ber = None,
    pre_fec_ber: PreFec = None,
    fec: Fec = None,
    lane: Lane = None,
    link_retry: Retry = False,
    kernel: Kernel = "auto",
    ecn: Ecn = None,
    rto: Rto = None,
    flow: Flow = False,
    ports: Ports = 3,
    seed: Seed = 0,
    as_json: Json = False,
) -> None:
    """Your own traffic, packet by packet: every flow of a matrix (the CSV `commwall traffic
    matrix` reads, or htsim's connection-matrix files) starting at once, on each fabric."""
    size = "1"  # the matrix gives each flow's bytes
    opts = _Options.of(locals())
    _run("matrix", opts, senders=None, topology=topology or "fat-tree", radix=radix,
         nodes=nodes, matrix=flows)  # fmt: skip


def _fat_tree_radix(hosts: int) -> int:
    """The smallest even k >= 4 whose fat tree has ``hosts`` hosts (k³/4)."""
    k = 4
    while k**3 // 4 < hosts:
        k += 2
    return k


# ---- the run ----------------------------------------------------------------------------------


def _run(
    pattern: str,
    opts: _Options,
    *,
    senders: int | None,
    topology: str,
    radix: int | None,
    nodes: int | None,
    matrix: str | None = None,
) -> None:
    import numpy as np

    from commwall.commands.topology import KINDS, SCALE_UP_KINDS, build
    from commwall.commands.traffic import with_switch_latency
    from commwall.engines.base import InvariantError
    from commwall.engines.flow.traffic import group_size, pattern_flows, read_matrix
    from commwall.engines.packet import PACKET_ROUTINGS, PacketConfig, run_packet_traffic
    from commwall.engines.packet.traffic import with_cable_latency
    from commwall.phy import PhyError
    from commwall.topology import TopologyError
    from commwall.transport import FABRICS, TransportError, fabric_profile
    from commwall.units import UnitError, parse_size, parse_time

    fabric, routing = opts.fabric, opts.routing
    if fabric != "all" and fabric not in FABRICS:
        fail(f"--fabric: {fabric!r} is not allowed; allowed: {', '.join(FABRICS)}, all")
    if routing is not None and routing not in PACKET_ROUTINGS:
        fail(f"--routing: {routing!r} is not allowed; allowed: {', '.join(PACKET_ROUTINGS)}")
    fabrics = FABRICS if fabric == "all" else (fabric,)
    kinds = [k for k in KINDS if k not in SCALE_UP_KINDS]
    if topology not in kinds:
        fail(f"--topology: {topology!r} is not allowed; allowed: {', '.join(kinds)}")
    try:
        nbytes = parse_size(opts.size)
        if nbytes < 1 or nbytes != int(nbytes):
            fail(f"--size: {opts.size!r} must be a whole number of bytes >= 1")
        topo = build(
            topology,
            radix=radix,
            tiers=opts.tiers,
            oversubscription=opts.oversubscription,
            nodes=nodes,
            rails=opts.rails,
            a=opts.a,
            p=opts.p,
            h=opts.h,
            g=opts.g,
            arrangement="consecutive",
            link_rate=opts.link,
            switch=None,
            l_leaves=opts.l_leaves,
            s_spines=opts.s_spines,
        )
        buffer_bytes, latency = _switch_physics(opts)
        if latency is not None:
            topo = with_switch_latency(topo, latency)
        if opts.cable is not None:
            topo = with_cable_latency(topo, parse_time(opts.cable))
        endpoints = len(topo.endpoints())
        if matrix is not None:
            src, dst, sizes = read_matrix(matrix)
            _check_matrix(src, dst, sizes, endpoints, opts.mtu)
            flow_bytes: Any = sizes.astype(np.int64)
        else:
            _check_size(pattern, endpoints, senders, int(nbytes), opts.mtu)
            src, dst = pattern_flows(pattern, endpoints, senders=senders, seed=opts.seed,
                                     group_size=group_size(topo))  # fmt: skip
            flow_bytes = int(nbytes)
        rate = float(topo.link_capacity.max())
        ber, fec_latency, physics = _link_errors(opts, rate)
        config = PacketConfig(
            mtu=opts.mtu,
            buffer=buffer_bytes,
            cut_through=not opts.store_and_forward,
            ber=ber,
            fec_latency_s=fec_latency,
            link_retry=opts.link_retry,
            kernel=opts.kernel,
        )
        marking = _ecn(opts.ecn)
        timeout = parse_time(opts.rto) if opts.rto is not None else None
        results = []
        for fab in fabrics:
            with event_progress(f"{pattern} on {fab}", quiet=opts.as_json) as progress:
                results.append(
                    run_packet_traffic(
                        topo,
                        src,
                        dst,
                        flow_bytes,
                        fab,
                        routing=routing,
                        config=config,
                        seed=opts.seed,
                        ecn=marking,
                        rto_s=timeout,
                        progress=progress,
                    )
                )
        flow_rows = _flow_check(topo, src, dst, flow_bytes, results, opts.seed) if opts.flow else []
    except (TopologyError, TransportError, UnitError, InvariantError, PhyError, ValueError) as e:
        fail(str(e))
    if matrix is None:
        ideal = _ideal(pattern, len(src), int(nbytes), rate, config.mtu, ETHERNET_HEADER)
    else:
        ideal = _ideal_matrix(src, dst, flow_bytes, rate, config.mtu, ETHERNET_HEADER)
    fabric_rows = []
    for r in results:
        header = fabric_profile(r.fabric, rate, config.mtu).header_bytes
        if matrix is None:
            own = _ideal(pattern, len(src), int(nbytes), rate, config.mtu, header)
        else:
            own = _ideal_matrix(src, dst, flow_bytes, rate, config.mtu, header)
        fabric_rows.append({**r.to_dict(), "ideal_completion_s": own})
    data: dict[str, Any] = {
        "pattern": pattern,
        "topology": topo.name,
        "endpoints": endpoints,
        "flows": len(src),
        "bytes_per_flow": int(nbytes) if matrix is None else None,
        "total_bytes": int(np.sum(flow_bytes)) if matrix is not None else int(nbytes) * len(src),
        "link_Bps": rate,
        "mtu": config.mtu,
        "buffer_bytes": config.buffer,
        "ideal_completion_s": ideal,
        "link_errors": physics,
        "fabrics": fabric_rows,
    }
    if flow_rows:
        data["flow_engine"] = flow_rows
    if opts.as_json:
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
        return
    _print(data, results, flow_rows, opts.ports, config)


def _switch_physics(opts: _Options) -> tuple[int, float | None]:
    """(buffer bytes, switch latency or None for the builder's) from ``--buffer``,
    ``--switch-latency`` and ``--switch``; explicit options win over the part's figures."""
    from commwall.engines.packet.config import DEFAULT_BUFFER
    from commwall.units import parse_size, parse_time

    buffer = None if opts.buffer is None else int(parse_size(opts.buffer))
    latency = None if opts.switch_latency is None else parse_time(opts.switch_latency)
    if opts.switch is not None:
        from commwall.catalog import load_catalog

        part = load_catalog().switch(opts.switch)
        if buffer is None and part.buffer is not None:
            buffer = int(part.buffer)
        if latency is None:
            latency = float(part.latency)
    return (DEFAULT_BUFFER if buffer is None else buffer), latency


def _ecn(text: str | None) -> Any:
    """``--ecn KMIN,KMAX,PMAX`` as marking parameters (sizes with units, PMAX in (0, 1]).

    >>> _ecn("150KB,1.5MB,0.2")
    EcnParams(kmin=150000, kmax=1500000, pmax=0.2)
    """
    from commwall.transport import EcnParams
    from commwall.units import parse_size

    if text is None:
        return None
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 3:
        fail(f"--ecn: {text!r}; give KMIN,KMAX,PMAX, e.g. 150KB,1.5MB,0.2")
    try:
        pmax = float(parts[2])
    except ValueError:
        fail(f"--ecn: PMAX {parts[2]!r} is not a number in (0, 1]")
    return EcnParams(int(parse_size(parts[0])), int(parse_size(parts[1])), pmax)


def _link_errors(opts: _Options, rate: float) -> tuple[float, float, dict[str, Any]]:
    """(post-FEC BER, FEC latency, what to report) from ``--ber`` or ``--pre-fec-ber``."""
    from commwall.engines.packet.config import phy_errors

    if opts.pre_fec_ber is None:
        for name, value in (("--fec", opts.fec), ("--lane", opts.lane)):
            if value is not None:
                fail(f"{name} needs --pre-fec-ber (the FEC's input error rate)")
        ber = float(opts.ber or 0.0)
        if opts.link_retry and not ber:
            fail("--link-retry needs --ber or --pre-fec-ber (links without errors replay nothing)")
        return ber, 0.0, {"ber": ber}
    if opts.ber is not None:
        fail("--ber and --pre-fec-ber: give one (the post-FEC BER, or the pre-FEC BER and --fec)")
    wire = int(opts.mtu) + ETHERNET_HEADER
    e = phy_errors(float(opts.pre_fec_ber), rate, wire, fec=opts.fec, lane=opts.lane or "100G")
    if e.ber >= 1e-3:
        fail(
            f"--pre-fec-ber {opts.pre_fec_ber:g} with FEC {e.fec}: {e.packet_error:.0%} of "
            "packets would fail their FCS; the link would be taken down (use a stronger --fec)"
        )
    report = {"pre_fec_ber": opts.pre_fec_ber, "fec": e.fec, "lanes": e.lanes,
              "packet_error": e.packet_error, "ber": e.ber, "fec_latency_s": e.fec_latency_s}  # fmt: skip
    return e.ber, e.fec_latency_s, report


def _check_size(pattern: str, endpoints: int, senders: int | None, nbytes: int, mtu: int) -> None:
    """Refuse runs whose packet count would take hours: a clear message instead."""
    flows = endpoints if pattern in ("permutation", "adversarial") else (senders or endpoints - 1)
    packets = flows * -(-nbytes // mtu)
    if packets > MAX_PACKETS:
        fail(
            f"--size/--senders: {flows:,} flows of {nbytes:,} B are {packets:,} packets; the packet "
            f"engine takes at most {MAX_PACKETS:,} per run (use fewer or smaller flows, or "
            "commwall traffic for the flow engine)"
        )


#: Most data packets one ``commwall packet`` run sends (about 30 events each, a few minutes).
MAX_PACKETS = 4_000_000


def _ideal(pattern: str, flows: int, nbytes: int, rate: float, mtu: int, header: int) -> float:
    """The completion an ideal fabric allows (``header`` bytes per packet, no latency): an
    incast's bytes at the receiver's line rate, a permutation's one flow at line rate.

    >>> _ideal("incast", 2, 4096, 100.0, 4096, 82)   # 2 x (4096 + 82) bytes at 100 B/s
    83.56
    """
    wire = nbytes + -(-nbytes // mtu) * header
    return (flows if pattern == "incast" else 1) * wire / rate


def _ideal_matrix(src: Any, dst: Any, sizes: Any, rate: float, mtu: int, header: int) -> float:
    """The ideal completion of any set of flows: the busiest host's wire bytes (sent or
    received) at line rate (``header`` bytes per packet, no latency)."""
    import numpy as np

    wire = sizes + -(-sizes // mtu) * header
    n = int(max(src.max(), dst.max())) + 1
    load = np.maximum(np.bincount(src, wire, n), np.bincount(dst, wire, n))
    return float(load.max()) / rate


def _check_matrix(src: Any, dst: Any, sizes: Any, endpoints: int, mtu: int) -> None:
    """A matrix's flows fit the fabric and the packet budget, or one line naming ``FLOWS``."""
    import numpy as np

    top = int(max(src.max(), dst.max()))
    if top >= endpoints:
        fail(f"FLOWS: endpoint {top} is out of range; this fabric has endpoints "
             f"0..{endpoints - 1}")  # fmt: skip
    if (src == dst).any():
        fail(f"FLOWS: endpoint {int(src[src == dst][0])} sends to itself")
    packets = int(np.sum(-(-sizes // mtu)))
    if packets > MAX_PACKETS:
        fail(f"FLOWS: {len(src):,} flows are {packets:,} packets; the packet engine takes at "
             f"most {MAX_PACKETS:,} per run (commwall traffic matrix runs it as flows)")  # fmt: skip


def _flow_check(
    topo: Any, src: Any, dst: Any, nbytes: Any, results: list[Any], seed: int
) -> list[dict[str, Any]]:
    """The flow engine on the same flows, once per routing the packet runs used."""
    from commwall.engines.flow.traffic import run_traffic

    rows = []
    for routing in dict.fromkeys(r.routing for r in results):
        res = run_traffic(topo, src, dst, nbytes, routing, seed=seed)
        rows.append({"routing": routing, "fct_s": res.percentiles(), "makespan_s": res.makespan})
    return rows


# ---- printing ---------------------------------------------------------------------------------


def _print(
    d: dict[str, Any], results: list[Any], flow_rows: list[dict[str, Any]], top: int, cfg: Any
) -> None:
    from rich.table import Table

    from commwall.units import format_bandwidth, format_size, format_time

    ratio = f"{d['flows']}:1 " if d["pattern"] == "incast" else ""
    each = (
        f"{d['flows']:,} flows x {format_size(d['bytes_per_flow'])}"
        if d["bytes_per_flow"] is not None
        else f"{d['flows']:,} flows, {format_size(d['total_bytes'])} in all"
    )
    out.print(
        f"[bold]{d['pattern']}[/] {ratio}on {d['topology']}: {each} at "
        f"{d['link_Bps'] * 8 / 1e9:g} Gb/s, MTU "
        f"{d['mtu']} B, switch buffer {format_size(d['buffer_bytes'])}; ideal completion "
        f"{format_time(d['ideal_completion_s'])} (RoCE headers at line rate; 'vs ideal' uses each "
        "fabric's own headers)"
    )
    times = Table(show_header=True, header_style="bold", title="Completion")
    for col in ("fabric", "routing", "p50", "p99", "max", "vs ideal", "goodput", "fairness"):
        times.add_column(col, justify="right", no_wrap=True)
    for r, row in zip(results, d["fabrics"], strict=True):
        fct = r.percentiles()
        times.add_row(
            r.fabric,
            r.routing,
            format_time(fct["p50"]),
            format_time(fct["p99"]),
            format_time(fct["max"]),
            f"{fct['max'] / row['ideal_completion_s']:.2f}x",
            format_bandwidth(r.goodput),
            f"{r.fairness:.3f}",
        )
    for row in flow_rows:
        fct = row["fct_s"]
        times.add_row(
            "flow engine",
            row["routing"],
            format_time(fct["p50"]),
            format_time(fct["p99"]),
            format_time(fct["max"]),
            f"{fct['max'] / d['ideal_completion_s']:.2f}x",
            "",
            "",
        )
    out.print(times)
    errors = d["link_errors"]
    if "fec" in errors:
        out.print(
            f"links: pre-FEC BER {errors['pre_fec_ber']:g}, FEC {errors['fec']} over "
            f"{errors['lanes']} lane(s): P(packet fails FCS) {errors['packet_error']:.2e}, FEC "
            f"latency {format_time(errors['fec_latency_s'])} per hop"
        )
    elif errors["ber"]:
        out.print(f"links: post-FEC BER {errors['ber']:g} (independent bit errors)")
    out.print(_activity_table(results))
    if top:
        for r in results:
            _print_ports(r, top)
    events = sum(r.events for r in results)
    wall = sum(r.wall_s for r in results)
    every = [c for c in results[0].invariants if all(c in r.invariants for r in results)]
    extra = sorted({c for r in results for c in r.invariants} - set(every))
    note = "".join(
        f"; {c} ({', '.join(r.fabric for r in results if c in r.invariants)})" for c in extra
    )
    out.print(f"invariants checked: {'; '.join(every)}{note}")
    from commwall.engines.packet import fast

    kind = fast.compiled_kind()
    compiled = "compiled" + {"aot": " (ahead-of-time)", "jit": " (numba JIT)"}.get(kind or "", "")
    loops = sorted({compiled if r.kernel == "numba" else "Python" for r in results})
    out.print(
        f"{events:,} events in {wall:.2f} s ({events / max(wall, 1e-9):,.0f} events/s, "
        f"{' and '.join(loops)} event loop); "
        + _MODEL_NOTE.format(
            mtu=cfg.mtu, cut="cut-through" if cfg.cut_through else "store-and-forward"
        )
    )


#: Columns of "What the packets did": header, counter it reads (shown only when some fabric has
#: it non-zero, except the first four), how it is written.
_ACTIVITY: tuple[tuple[str, str, str], ...] = (
    ("dropped", "drop_packets", "count"),
    ("resent", "retransmitted", "size"),
    ("RTOs", "timeouts", "count"),
    ("peak buf", "peak_buffer_bytes", "size"),
    ("bad FCS", "corrupt_packets", "count"),
    ("replays", "link_replays", "count"),
    ("pauses", "pause_frames", "count"),
    ("ports paused", "ports_paused", "count"),
    ("paused", "paused_s", "time"),
    ("ECN marks", "ecn_marks", "count"),
    ("CNPs", "cnps_sent", "count"),
    ("trims", "trim_packets", "count"),
)


def _activity_table(results: list[Any]) -> Any:
    """Drops, resends, pauses, marks and trims per fabric (columns nobody used are left out)."""
    from rich.table import Table

    from commwall.units import format_size, format_time

    shown = [col for i, col in enumerate(_ACTIVITY)
             if i < 4 or any(r.counters[col[1]] for r in results)]  # fmt: skip
    table = Table(show_header=True, header_style="bold", title="What the packets did")
    table.add_column("fabric", justify="right", no_wrap=True)
    for header, _, _ in shown:
        table.add_column(header, justify="right", no_wrap=True)
    write = {"count": lambda v: f"{v:,.0f}", "size": format_size, "time": format_time}
    for r in results:
        table.add_row(r.fabric, *(write[kind](r.counters[key]) for _, key, kind in shown))
    return table


def _print_ports(r: Any, top: int) -> None:
    from commwall.units import format_size, format_time

    rows = r.ports[:top]
    if not rows:
        return
    out.print(f"[bold]{r.fabric}[/] hottest ports:")
    for row in rows:
        series = r.queue_series.get(row["port"])
        what = [
            f"busy {row['utilisation']:.0%}",
            f"queue peak {format_size(row['queue_peak_bytes'])}",
            f"mean {format_size(row['queue_mean_bytes'])}",
        ]
        labels = {"drops": "drops", "trims": "trims", "ecn_marks": "ECN marks"}
        what += [f"{label} {row[k]:,.0f}" for k, label in labels.items() if row[k]]
        if row["paused_s"]:
            what.append(f"paused {format_time(row['paused_s'])}")
        out.print(f"  {row['port']:<24} {', '.join(what)}")
        if series:
            out.print(f"  {'':<24} queue over time |{_sparkline(series[1], 48)}|")


def _sparkline(values: list[int], width: int = 24) -> str:
    """``values`` as a row of block characters, ``width`` wide (max of each bucket).

    >>> _sparkline([0, 1, 2, 4, 8, 4, 0], width=7)
    ' ▁▂▄█▄ '
    """
    if not values:
        return ""
    n = len(values)
    buckets = [max(values[i * n // width : max((i + 1) * n // width, i * n // width + 1)])
               for i in range(min(width, n))]  # fmt: skip
    peak = max(buckets) or 1
    return "".join(_SPARK[min(8, round(8 * v / peak))] for v in buckets)
