"""``commwall faults bit-errors`` and ``commwall faults incast``: bit flips that escape every
check, and N:1 bursts into one switch port — as distributions with 95% confidence intervals.

>>> # commwall faults bit-errors --scenario examples/llama3-405b-16k-h100.yaml --pre-fec-ber 1e-5
>>> # commwall faults bit-errors --cluster dgx-h100 --nodes 128 --pre-fec-ber 1e-4 --json
>>> # commwall faults incast --senders 64 --size 2MB --link 400Gb/s --fabric all
"""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any

import typer
from rich.table import Table

from commwall.console import fail, friendly, out


def add_commands(app: typer.Typer) -> None:
    """Add ``bit-errors`` and ``incast`` to the ``commwall faults`` sub-app."""
    app.command("bit-errors")(friendly(bit_errors))
    app.command("incast")(friendly(incast))


# ---- bit errors ------------------------------------------------------------------------------


def bit_errors(
    scenario: Annotated[
        str | None, typer.Option(help="Scenario YAML whose cluster's links are counted.")
    ] = None,
    cluster: Annotated[str, typer.Option(help="Or a cluster preset, e.g. dgx-h100.")] = "dgx-h100",
    nodes: Annotated[int | None, typer.Option(min=1, help="Nodes of the preset.")] = None,
    pre_fec_ber: Annotated[
        float, typer.Option(help="Median pre-FEC bit error rate across links.")
    ] = 1e-5,
    ber_spread: Annotated[
        float, typer.Option(help="σ of log10 BER across links, decades (assumption: 0.5).")
    ] = 0.5,
    fec: Annotated[
        str | None, typer.Option(help="Scale-out FEC code (default: the lane's standard one).")
    ] = None,
    no_nvlink: Annotated[bool, typer.Option("--no-nvlink", help="Leave NVLink out.")] = False,
    utilisation: Annotated[float, typer.Option(help="Payload share each link carries.")] = 0.5,
    step_time: Annotated[str, typer.Option(help="Seconds per training step.")] = "10s",
    run_days: Annotated[float, typer.Option(help="Length of the training run, days.")] = 54.0,
    target: Annotated[float, typer.Option(help="Post-FEC BER a link must meet.")] = 1e-12,
    samples: Annotated[int, typer.Option(min=2, help="Monte Carlo cluster builds.")] = 100,
    seed: Annotated[int, typer.Option(min=0, help="Seed of every draw.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Pre-FEC bit errors on every link of a cluster → goodput lost to retransmission, added
    latency, links that miss the post-FEC target, and silent corruptions that escape every
    check: time between them, per step, per run, P(at least one in the run)."""
    from commwall.cluster import cluster_from_option
    from commwall.faults.bit_errors import cluster_bit_errors
    from commwall.units import UnitError, parse_time

    try:
        step = parse_time(step_time)
    except UnitError as e:
        fail(f"--step-time: {e}")
    source = scenario if scenario is not None else cluster
    option = "--scenario" if scenario is not None else "--cluster"
    cl = cluster_from_option(source, nodes=nodes, option=option)
    r = cluster_bit_errors(
        cl,
        pre_fec_ber=pre_fec_ber,
        seed=seed,
        fec=fec,
        include_nvlink=not no_nvlink,
        ber_spread=ber_spread,
        utilisation=utilisation,
        step_time=step,
        run_days=run_days,
        target_post_fec_ber=target,
        samples=samples,
    )
    if as_json:
        sys.stdout.write(json.dumps({"cluster": cl.name, **r.to_dict()}, indent=2) + "\n")
        return
    _print_bit_errors(cl, r, run_days)


def _print_bit_errors(cl: Any, r: Any, run_days: float) -> None:
    from commwall.units import format_time

    year = 365.25 * 86400
    out.print(
        f"[bold]bit errors[/] on {cl.name}: {r.n_links:,} links (directions), median pre-FEC BER "
        f"{r.pre_fec_ber:.1e}, spread {r.ber_spread:g} decades across links"
    )
    table = Table(show_header=True, header_style="bold")
    for col in ("", "median", "95% interval", "p5", "p95"):
        table.add_column(col, justify="right")

    def row(name: str, s: Any, fmt: Any) -> None:
        lo, hi = s.quantile_interval(0.5)
        table.add_row(
            name,
            fmt(s.quantile(0.5)),
            f"[{fmt(lo)}, {fmt(hi)}]",
            fmt(s.quantile(0.05)),
            fmt(s.quantile(0.95)),
        )

    def years(x: float) -> str:
        return f"{x / year:.3g} y" if x >= year else format_time(x)

    row("time between silent corruptions", r.time_between, years)
    row(f"silent corruptions per {run_days:g}-day run", r.per_run, "{:.3g}".format)
    row("P(at least one in the run)", r.p_any_in_run, "{:.3g}".format)
    row("links missing the post-FEC target", r.flagged["all"], "{:,.0f}".format)
    row("links down (unusable)", r.down, "{:,.0f}".format)
    for kind, s in r.goodput_loss.items():
        row(f"goodput lost to retransmission ({kind})", s, "{:.2e}".format)
    for kind, s in r.worst_added_latency.items():
        row(f"worst link's added latency ({kind})", s, format_time)
    out.print(table)
    drained = r.corruption_rate_flagged_drained.quantile(0.5)
    out.print(
        f"draining the flagged links leaves {drained:.3g} silent corruptions per second "
        f"(one per {years(1 / drained) if drained > 0 else 'never'})"
    )


# ---- incast ----------------------------------------------------------------------------------


def incast(
    senders: Annotated[int, typer.Option(min=1, help="Senders bursting into one port.")] = 64,
    size: Annotated[str, typer.Option(help="Bytes per sender, e.g. 2MB.")] = "2MB",
    link: Annotated[str, typer.Option(help="Line rate of senders and the egress port.")] = (
        "400Gb/s"
    ),
    switch: Annotated[
        str | None, typer.Option(help="Switch part whose buffer is used (commwall catalog switch).")
    ] = "spectrum-4-sn5600",
    buffer: Annotated[str | None, typer.Option(help="Or a shared buffer size, e.g. 16MB.")] = None,
    fabric: Annotated[str, typer.Option(help="lossy, roce (PFC), ib (credits), uec or all.")] = (
        "all"
    ),
    alpha: Annotated[float | None, typer.Option(help="Dynamic-threshold α (default 1/8).")] = None,
    rto: Annotated[str, typer.Option(help="Lossy: retransmission timeout.")] = "200ms",
    jitter: Annotated[str, typer.Option(help="σ of the senders' start times.")] = "1us",
    samples: Annotated[int, typer.Option(min=1, help="Draws of the start times.")] = 100,
    seed: Annotated[int, typer.Option(min=0, help="Seed of every draw.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """N senders burst S bytes each into one switch port: completion time, goodput, peak queue,
    drops, pauses — per fabric (fluid model; the packet engine is a separate issue)."""
    import numpy as np

    from commwall.faults.incast import DEFAULT_ALPHA, FABRICS, IncastConfig
    from commwall.faults.incast import incast as run_incast
    from commwall.units import UnitError, parse_bandwidth, parse_size, parse_time

    if fabric != "all" and fabric not in FABRICS:
        fail(f"--fabric: {fabric!r} is not allowed; allowed: {', '.join(FABRICS)}, all")
    fabrics = FABRICS if fabric == "all" else tuple(f for f in FABRICS if f == fabric)
    try:
        nbytes, rate = parse_size(size), parse_bandwidth(link)
        timeout, sigma = parse_time(rto), parse_time(jitter)
        if buffer is not None:
            buf, where = parse_size(buffer), f"--buffer {buffer}"
        else:
            from commwall.catalog import load_catalog

            part = load_catalog().switch(switch or "")
            if part.buffer is None:
                fail(f"--switch: {switch!r} has no buffer size in the catalog; give --buffer")
            buf, where = float(part.buffer), f"{part.name} buffer"
    except UnitError as e:
        fail(str(e))
    results = []
    for i, fab in enumerate(fabrics):
        cfg = IncastConfig(
            senders=senders,
            size=nbytes,
            sender_rate=rate,
            egress_rate=rate,
            buffer=buf,
            fabric=fab,
            alpha=alpha if alpha is not None else DEFAULT_ALPHA,
            rto=timeout,
            jitter=sigma,
        )
        results.append(run_incast(cfg, samples=samples, rng=np.random.default_rng([seed, i])))
    if as_json:
        data = {"buffer_source": where, "fabrics": [r.to_dict() for r in results]}
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
        return
    _print_incast(results, where)


def _print_incast(results: list[Any], where: str) -> None:
    from commwall.units import format_size, format_time

    c = results[0].config
    out.print(
        f"[bold]incast[/] {c.senders}:1 x {format_size(c.size)} at {c.sender_rate * 8 / 1e9:g} "
        f"Gb/s into one port; {where} {format_size(c.buffer)}, port share "
        f"{format_size(c.share)} (α {c.alpha:g}); ideal completion {format_time(c.ideal)}"
    )
    table = Table(show_header=True, header_style="bold")
    for col in ("fabric", "p50 completion", "p99 completion", "goodput", "dropped", "peak queue",
                "paused (mean)", "pause frames", "P(drop)"):  # fmt: skip
        table.add_column(col, justify="right")
    for r in results:
        table.add_row(
            r.config.fabric,
            format_time(r.completion.quantile(0.5)),
            format_time(r.completion.quantile(0.99)),
            f"{r.goodput.mean:.1%}",
            format_size(r.dropped.mean),
            format_size(r.peak_queue.mean),
            format_time(r.paused_time_mean.mean),
            f"{r.pause_frames.mean:,.0f}",
            f"{r.p_any_drop:.0%}",
        )
    out.print(table)
    out.print("fluid model: queues as piecewise-linear fluid with exact events, not packets")
