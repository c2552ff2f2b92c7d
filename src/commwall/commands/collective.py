"""``commwall collective OP``: the table nccl-tests would print for OP on a cluster you have not
built yet (:func:`commwall.engines.nccl_table.nccl_tests_table`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from commwall._version import __version__
from commwall.commands.run import write_trace_file
from commwall.console import check_outputs, fail, friendly, write_parquet
from commwall.scenario import ALL_ENGINES

#: Largest message the packet engine simulates from ``commwall collective`` (bytes).
PACKET_MAX_BYTES = 256 * 2**20


def register(app: typer.Typer) -> None:
    """Add ``commwall collective`` to ``app``."""
    app.command("collective")(friendly(collective))


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
    env: Annotated[
        list[str] | None,
        typer.Option(
            help="An NCCL setting the run uses, NCCL_NAME=VALUE (repeatable; analytic engine): "
            "NCCL_ALGO, NCCL_PROTO, NCCL_NVLS_ENABLE, NCCL_MIN/MAX_NCHANNELS, NCCL_MIN/MAX_CTAS, "
            "NCCL_NCHANNELS_PER_NET_PEER are read, others are listed as not read."
        ),
    ] = None,
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
    from commwall.collectives.direct import nccl_init_channels
    from commwall.collectives.nccl_env import apply_nccl_env, env_lines, parse_env_assignments
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
    settings: dict[str, str] = {}
    if env:
        if engine != "analytic":
            fail(
                "--env needs --engine analytic (the flow and packet engines build NCCL's defaults)"
            )
        try:
            settings = parse_env_assignments(env)
        except ValueError as e:
            fail(str(e))
        fabric, env_algo, env_proto = apply_nccl_env(
            fabric, settings, algo_name or "default", proto_value.value if proto_value else ""
        )
        algo_name, proto_value = env_algo, env_proto
    if engine == "analytic" and (routing is not None or trace is not None):
        fail("--routing and --trace need --engine flow (the analytic engine assumes ideal balance)")
    if packet_fabric is not None and engine != "packet":
        fail("--fabric needs --engine packet")
    check_outputs(("--trace", trace), ("--parquet", parquet))
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
        write_trace_file(trace, result)
    header: dict[str, Any] = {
        "op": operation.value,
        "cluster": cl.summary(),
        "ranks": fabric.nranks,
        "domains": fabric.n_domains,
        "ranks_per_domain": fabric.ranks_per_domain,
        "engine": engine,
        "gpus_per_process": gpus_per_process,
        "nccl_channels": nccl_init_channels(fabric),
        "nccl_env": settings,
        "notes": [*notes, *env_lines(settings)],
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
    n = header["nccl_channels"]
    print(
        f"# NCCL init as modelled: {n['coll']} coll channels, {n['collnet']} collnet channels, "
        f"{n['nvls']} nvls channels, {n['p2p']} p2p channels, {n['p2p_per_peer']} p2p channels "
        "per peer"
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
