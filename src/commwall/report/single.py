"""The report of one simulated training step (:class:`~commwall.report.inputs.ResultInput`).

Sections: where the step goes (the breakdown of
:func:`commwall.workload.simulate.account`), the step timeline per stream, the collectives with
busbw against size, the fabric (tiers, cables, link utilisation when the flow engine ran), power
and cost, memory per GPU, and the ``faults`` section's distributions when the scenario has one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from commwall.report import fmt
from commwall.report.busbw import CommCurves
from commwall.report.inputs import ResultInput
from commwall.report.model import (
    Bar,
    Block,
    Chart,
    Gantt,
    Heatmap,
    Lines,
    Note,
    Report,
    Section,
    Series,
    Table,
    TierDiagram,
)

__all__ = ["MAX_TIMELINE_BARS", "build_result_report", "timeline_bars", "utilisation_grid"]

#: Most bars the timeline draws; finer detail is merged (keeps the page small and fast).
MAX_TIMELINE_BARS = 800
#: Time bins and links of the link-utilisation heat map.
HEATMAP_BINS = 200
HEATMAP_LINKS = 32

_CATEGORY_LABELS = {
    "compute": "compute",
    "host": "waiting on the host",
    "tp": "tensor-parallel comm",
    "cp": "context-parallel exchange",
    "ep": "expert-parallel all-to-all",
    "pp": "pipeline sends",
    "bubble": "pipeline bubble",
    "imbalance": "waiting on slower stages",
    "dp": "exposed data-parallel comm",
    "optimizer": "optimizer step",
}
_COMM = ("tp", "ep", "pp", "dp")
_TIER_NAMES = {"1": "leaf", "2": "spine", "3": "core"}


def build_result_report(source: ResultInput, *, generated: str | None = None) -> Report:
    """The :class:`Report` of one step (module docstring)."""
    d = source.data
    sections = [
        _breakdown(d),
        _timeline(d),
        _collectives(d, source.curves),
        _fabric(d),
        _power(d),
        _memory(d),
    ]
    if d.get("faults"):
        sections.append(_faults(d["faults"]))
    return Report(
        title=str(d.get("scenario", "result")),
        subtitle=_subtitle(d, source),
        key_numbers=_key_numbers(d),
        sections=tuple(sections),
        kind="result",
        generated=generated,
    )


# ---- header -----------------------------------------------------------------------------


def _subtitle(d: dict[str, Any], source: ResultInput) -> tuple[str, ...]:
    c, j = d["cluster"], d["job"]
    lines = []
    if source.description:
        lines.append(source.description)
    lines.append(
        f"{fmt.count(c.get('gpus'))} x {c.get('gpu')} in {fmt.count(c.get('nodes'))} nodes "
        f"({c.get('name')}); scale-up {c.get('scale_up')} domain of {c.get('scale_up_domain')}; "
        f"scale-out {c.get('nic')} {c.get('fabric')}, {c.get('topology')} "
        f"{c.get('tiers')}-tier, oversubscription {fmt.num(c.get('oversubscription'))}:1, "
        f"routing {c.get('routing')}"
    )
    lines.append(
        f"{j.get('model')} ({fmt.num((j.get('params') or 0) / 1e9)} B params{fmt.mtp_note(j)}): "
        f"TP {j.get('tp')} "
        f"x PP {j.get('pp')} x DP {j.get('dp')}"
        + (f" x EP {j['ep']}" if (j.get("ep") or 1) > 1 else "")
        + f"; {j.get('global_batch')} x {j.get('seq_len')} tokens per step, {j.get('precision')}"
        + fmt.held_bytes(j)
        + fmt.sharding_and_kernel(j)
    )
    engine = d["timeline"].get("engine", "?")
    lines.append(f"engine {engine}; input {source.origin}")
    return tuple(lines)


def _key_numbers(d: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    f, mem = d["fabric"], d["memory_bytes"]
    numbers = [
        ("step time", fmt.seconds(d["step_time_s"])),
        ("waiting on communication", fmt.pct(d["comm_wait_share"])),
        ("MFU", fmt.pct(d.get("mfu"))),
        ("tokens/s", fmt.count(d.get("tokens_per_s"))),
        ("power", fmt.watts(f.get("total_power_w"))),
        ("network power", fmt.watts(f.get("network_power_w"))),
        ("network cost (estimate)", fmt.usd(f.get("network_cost_usd_estimate"))),
        (
            "memory per GPU",
            f"{fmt.gbytes(mem.get('total'))} of {fmt.gbytes(mem.get('hbm'))}"
            + ("" if mem.get("fits", True) else " (does not fit)"),
        ),
    ]
    return tuple(numbers)


# ---- breakdown and timeline --------------------------------------------------------------


def _breakdown(d: dict[str, Any]) -> Section:
    parts = [(k, float(v)) for k, v in d["breakdown_s"].items() if float(v) > 0]
    step = float(d["step_time_s"])
    chart = Chart(
        id="breakdown",
        title="Where the step goes (critical pipeline stage)",
        body=Bar(
            labels=tuple(_CATEGORY_LABELS.get(k, k) for k, _ in parts),
            values=tuple(v for _, v in parts),
            groups=tuple("waiting on communication" if k in _COMM else "busy" for k, _ in parts),
            text=tuple(f"{fmt.seconds(v)} ({v / step:.1%})" for _, v in parts),
        ),
        x_title="seconds",
        height=320,
    )
    blocks: list[Block] = [chart]
    if d.get("bottleneck"):
        blocks.insert(0, Note(str(d["bottleneck"])))
    return Section("breakdown", "Where the step goes", tuple(blocks))


def timeline_bars(
    phases: list[dict[str, Any]], max_bars: int = MAX_TIMELINE_BARS
) -> tuple[tuple[str, ...], tuple[tuple[str, float, float, str, str], ...], float]:
    """Phases as ``(stream, start, end, category, hover)`` bars, at most about ``max_bars``.

    Back-to-back phases of one category on one stream become one bar (a layer loop's repeats);
    if that is still too many, each stream's phases are merged into time slots of a fixed width
    (doubled until the bars fit), each bar coloured by the category that was busy longest in it.
    Returns the streams, the bars and the slot width used (0 when nothing was merged by time).
    """
    streams = sorted({str(p["stream"]) for p in phases}, key=_stream_order)
    per_stream: dict[str, list[tuple[float, float, str, str, int]]] = {s: [] for s in streams}
    for p in sorted(phases, key=lambda p: (float(p["start_s"]), float(p["end_s"]))):
        per_stream[str(p["stream"])].append(
            (
                float(p["start_s"]),
                float(p["end_s"]),
                str(p["category"]),
                str(p["name"]),
                int(p.get("repeat") or 1),
            )
        )
    makespan = max((float(p["end_s"]) for p in phases), default=0.0)
    slot = 0.0
    while True:
        bars = [b for s in streams for b in _merge(s, per_stream[s], slot, makespan)]
        if len(bars) <= max_bars or makespan <= 0 or slot >= makespan:
            return tuple(streams), tuple(bars), slot
        slot = slot * 2 if slot else makespan * len(streams) / max_bars


def _stream_order(stream: str) -> tuple[int, str]:
    head, _, rest = stream.partition(".")
    return (int(head[1:]), rest) if head[1:].isdigit() else (1 << 30, stream)


def _merge(
    stream: str, items: list[tuple[float, float, str, str, int]], slot: float, makespan: float
) -> list[tuple[str, float, float, str, str]]:
    """One stream's bars: same-category neighbours joined; with ``slot`` > 0, every run of
    phases that fits in ``slot`` seconds joined too."""
    eps = 1e-9 * max(makespan, 1e-30)
    out: list[tuple[str, float, float, str, str]] = []
    group: list[tuple[float, float, str, str, int]] = []

    def flush() -> None:
        if not group:
            return
        start, end = group[0][0], max(g[1] for g in group)
        busy: dict[str, float] = {}
        for g in group:
            busy[g[2]] = busy.get(g[2], 0.0) + (g[1] - g[0])
        category = max(busy, key=lambda k: (busy[k], k))
        calls = sum(g[4] for g in group)
        if len(group) == 1:
            hover = f"{group[0][3]}\n{fmt.seconds(end - start)}"
        else:
            mix = ", ".join(
                f"{_CATEGORY_LABELS.get(k, k)} {v / max(end - start, 1e-30):.0%}"
                for k, v in sorted(busy.items(), key=lambda kv: -kv[1])
            )
            hover = f"{group[0][3]} … {group[-1][3]}\n{len(group)} phases ({calls} calls): {mix}"
        hover += f"\n{fmt.seconds(start)} → {fmt.seconds(end)}"
        out.append((stream, start, end, category, hover))
        group.clear()

    for item in items:
        if group:
            joined = (
                item[2] == group[-1][2] and item[0] - max(g[1] for g in group) <= eps
                if slot <= 0
                else item[1] - group[0][0] <= slot
            )
            if not joined:
                flush()
        group.append(item)
    flush()
    return out


def _timeline(d: dict[str, Any]) -> Section:
    phases = list(d["timeline"].get("phases") or [])
    if not phases:
        return Section("timeline", "Step timeline", (Note("The result has no phases."),))
    streams, bars, slot = timeline_bars(phases)
    caption = (
        f"{len(phases):,} phases drawn as {len(bars):,} bars; back-to-back phases of one kind "
        "are joined"
        + (f", and phases within {fmt.seconds(slot)} of each other merged" if slot else "")
        + ". Hover for names; drag to zoom."
    )
    chart = Chart(
        id="timeline",
        title="Step timeline per stream (stage.stream)",
        body=Gantt(rows=streams, bars=bars),
        x_title="time (s)",
        caption=caption,
        height=max(300, 40 + 28 * len(streams)),
    )
    return Section("timeline", "Step timeline", (chart,))


# ---- collectives ------------------------------------------------------------------------


def _collectives(d: dict[str, Any], curves: tuple[CommCurves, ...]) -> Section:
    rows = tuple(
        (
            str(c["name"]),
            _CATEGORY_LABELS.get(str(c["category"]), str(c["category"])),
            fmt.size(c["bytes"]),
            fmt.count(c["ranks"]),
            fmt.count(c["calls"]),
            fmt.seconds(c["time_each_s"]),
            fmt.seconds(c["total_s"]),
            f"{c['algo']}/{c['proto']}",
            fmt.gbps(c["busbw_Bps"]),
        )
        for c in d.get("collectives") or []
    )
    table = Table(
        headers=(
            "collective",
            "kind",
            "size",
            "ranks",
            "calls",
            "each",
            "total",
            "algo/proto",
            "busbw",
        ),
        rows=rows,
        numeric=(2, 3, 4, 5, 6, 8),
        caption="Collectives of the critical stage, costliest first (sizes averaged over calls).",
    )
    blocks: list[Block] = [table]
    for c in curves:
        blocks.append(_curve_chart(c))
    if not curves and rows:
        blocks.append(_calls_chart(d))
        blocks.append(
            Note(
                "busbw-versus-size curves for every algorithm need the cluster: make the report "
                "from the scenario YAML instead of its result JSON."
            )
        )
    return Section("collectives", "Collectives", tuple(blocks))


def _curve_chart(c: CommCurves) -> Chart:
    sizes = tuple(float(s) for s in c.sizes)
    series = []
    for name, values in sorted(c.curves.items()):
        pts = [(s, v / 1e9) for s, v in zip(sizes, values, strict=True) if v is not None]
        series.append(Series(name, tuple(p[0] for p in pts), tuple(p[1] for p in pts)))
    chosen = [(s, t) for s, t in zip(sizes, c.tuner, strict=True) if t[0]]
    series.append(
        Series(
            "tuner's choice",
            tuple(s for s, _ in chosen),
            tuple(t[1] / 1e9 for _, t in chosen),
            text=tuple(t[0] for _, t in chosen),
            highlight=True,
        )
    )
    if c.calls:
        series.append(
            Series(
                "this step's calls",
                tuple(b for b, _ in c.calls),
                tuple(v / 1e9 for _, v in c.calls),
                highlight=True,
                markers_only=True,
            )
        )
    return Chart(
        id=f"busbw-{c.category}",
        title=f"{c.title}: {c.op} busbw over {c.nranks} ranks "
        f"({c.n_domains} domains x {c.ranks_per_domain})",
        body=Lines(series=tuple(series), log_x=True),
        x_title="message size (bytes)",
        y_title="busbw (GB/s)",
        caption="Every algorithm x protocol that can run on this communicator (analytic model).",
    )


def _calls_chart(d: dict[str, Any]) -> Chart:
    groups: dict[str, list[dict[str, Any]]] = {}
    for c in d["collectives"]:
        groups.setdefault(f"{c['op']} over {c['ranks']} ranks", []).append(c)
    series = tuple(
        Series(
            name,
            tuple(float(c["bytes"]) for c in cs),
            tuple(float(c["busbw_Bps"]) / 1e9 for c in cs),
            text=tuple(f"{c['name']} ({c['algo']}/{c['proto']})" for c in cs),
            markers_only=True,
        )
        for name, cs in sorted(groups.items())
    )
    return Chart(
        id="busbw-calls",
        title="busbw of the step's collectives",
        body=Lines(series=series, log_x=True),
        x_title="message size (bytes)",
        y_title="busbw (GB/s)",
    )


# ---- fabric -------------------------------------------------------------------------------


def _fabric(d: dict[str, Any]) -> Section:
    f, c = d["fabric"], d["cluster"]
    sw = f.get("switches_per_tier") or {}
    cb = f.get("cables_per_tier") or {}
    rows = [
        ("topology", str(f.get("topology"))),
        ("endpoints (NICs)", fmt.count(f.get("endpoints"))),
        ("switches", ", ".join(f"{fmt.count(n)} {_tier(t)}" for t, n in sorted(sw.items()))),
        ("cables", ", ".join(f"{fmt.count(n)} to {_tier(t)}" for t, n in sorted(cb.items()))),
        ("bisection per direction", fmt.gbps(f.get("bisection_Bps"))),
        ("diameter", f"{f.get('diameter_links')} links"),
        (
            "optics",
            f"{fmt.count(f.get('transceivers'))} {str(f.get('optics', '')).upper()} transceivers",
        ),
        ("switch", str(c.get("switch"))),
        (
            "NICs",
            f"{c.get('nic')} ({fmt.gbps(c.get('nic_rate_per_gpu'))} line rate per GPU, "
            f"{fmt.gbps(c.get('net_bw_per_gpu'))} achievable)",
        ),
        (
            "scale-up",
            f"{c.get('scale_up')} x{c.get('scale_up_domain')}, "
            f"{fmt.gbps(c.get('scale_up_bw_per_gpu'))} per GPU",
        ),
        ("routing", str(d["timeline"].get("routing") or c.get("routing"))),
    ]
    if f.get("bom_error"):
        rows.append(("bill of materials", f"not computed: {f['bom_error']}"))
    blocks: list[Block] = [Table(("property", "value"), tuple(rows))]
    tiers = [("endpoints", int(f.get("endpoints") or 0))]
    cables = []
    for t, n in sorted(sw.items(), key=lambda kv: int(kv[0])):
        tiers.append((_tier(t), int(n)))
        cables.append(int(cb.get(t, 0)))
    blocks.append(
        Chart(
            id="topology",
            title=f"Scale-out fabric: {f.get('topology')}",
            body=TierDiagram(tiers=tuple(tiers), cables=tuple(cables)),
            height=140 + 90 * len(tiers),
        )
    )
    blocks += _link_blocks(d["timeline"])
    return Section("fabric", "Fabric", tuple(blocks))


def _tier(t: Any) -> str:
    return f"tier {t} ({_TIER_NAMES.get(str(t), 'switches')})"


def utilisation_grid(
    series: dict[str, Any], bins: int = HEATMAP_BINS, links: int = HEATMAP_LINKS
) -> tuple[tuple[str, ...], tuple[float, ...], tuple[tuple[float, ...], ...]]:
    """Time-weighted mean utilisation of each tracked link in ``bins`` equal time bins.

    ``series`` maps a link name to ``(times, utilisation)``: utilisation ``u[k]`` holds from
    ``times[k]`` to ``times[k+1]`` (the flow engine's piecewise-constant rates). The integral of
    a step function is piecewise linear, so interpolating its running sum gives exact bin means.
    """
    names = list(series)[:links]
    end = max((float(series[n][0][-1]) for n in names if len(series[n][0])), default=0.0)
    if not names or end <= 0:
        return (), (), ()
    edges = np.linspace(0.0, end, bins + 1)
    rows = []
    for n in names:
        t = np.asarray(series[n][0], dtype=float)
        u = np.asarray(series[n][1], dtype=float)[: max(t.size - 1, 0)]
        integral = np.concatenate([[0.0], np.cumsum(u * np.diff(t)[: u.size])])
        at = np.interp(edges, t[: integral.size], integral)
        rows.append(tuple(float(x) for x in np.round(np.diff(at) / np.diff(edges), 4)))
    centres = tuple(float(x) for x in np.round((edges[:-1] + edges[1:]) / 2, 9))
    return tuple(names), centres, tuple(rows)


def _link_blocks(t: dict[str, Any]) -> list[Block]:
    blocks: list[Block] = []
    series = t.get("link_utilisation") or {}
    if series:
        names, centres, z = utilisation_grid(series)
        if names:
            blocks.append(
                Chart(
                    id="link-utilisation",
                    title=f"Link utilisation over the step ({t.get('engine')} engine, "
                    f"{t.get('routing')} routing)",
                    body=Heatmap(rows=names, columns=centres, z=z, zmax=1.0),
                    x_title="time (s)",
                    caption=f"The {len(names)} links the engine tracked; each cell is the mean "
                    f"utilisation over 1/{HEATMAP_BINS} of the step.",
                    height=max(320, 80 + 18 * len(names)),
                )
            )
    busiest = t.get("busiest_links") or []
    if busiest:
        blocks.append(
            Table(
                headers=("link", "class", "capacity", "bytes", "mean", "peak"),
                rows=tuple(
                    (
                        str(b["name"]),
                        str(b["class"]),
                        fmt.gbps(b["capacity_Bps"]),
                        fmt.size(b["bytes"]),
                        fmt.pct(b["mean_utilisation"]),
                        fmt.pct(b["peak_utilisation"]),
                    )
                    for b in busiest
                ),
                numeric=(2, 3, 4, 5),
                caption="Busiest links (flow engine).",
            )
        )
    return blocks


# ---- power, cost, memory -----------------------------------------------------------------


def _power(d: dict[str, Any]) -> Section:
    f = d["fabric"]
    cost_by_part = {k: float(v) for k, v in (f.get("network_cost_usd_by_part") or {}).items()}
    blocks: list[Block] = []
    power = {k: float(v) for k, v in (f.get("power_w") or {}).items()}
    if power:
        blocks.append(
            _bar_chart(
                "power",
                f"Power by part: {fmt.watts(f.get('total_power_w'))} in all",
                power,
                fmt.watts,
                "kW",
                300,
                per=1e3,
                groups=tuple("GPUs" if k == "gpus" else "network" for k in power),
            )
        )
    if cost_by_part:
        blocks.append(
            _bar_chart(
                "cost",
                "Network cost by part (estimate)",
                cost_by_part,
                fmt.usd,
                "million USD",
                260,
                per=1e6,
            )
        )
    elif f.get("network_cost_usd_estimate") is not None:
        blocks.append(
            Note(
                f"Network cost (switches, optics, cables; estimate): "
                f"{fmt.usd(f['network_cost_usd_estimate'])} (a result saved before the split "
                "by part was recorded)."
            )
        )
    if not blocks:
        blocks.append(Note(f"Power and cost not computed: {f.get('bom_error', 'no data')}"))
    return Section("power", "Power and cost", tuple(blocks))


def _memory(d: dict[str, Any]) -> Section:
    m = d["memory_bytes"]
    parts = [k for k in ("weights", "gradients", "optimizer", "activations") if k in m]
    hbm = float(m.get("hbm") or 0.0)
    labels = (*parts, "total", "HBM")
    values = (*(float(m[k]) / 1e9 for k in parts), float(m["total"]) / 1e9, hbm / 1e9)
    chart = Chart(
        id="memory",
        title="Memory per GPU (worst stage)"
        + ("" if m.get("fits", True) else ": DOES NOT FIT (10% reserve)"),
        body=Bar(
            labels=labels,
            values=values,
            groups=(*("state" for _ in parts), "total", "capacity"),
            text=tuple(fmt.gbytes(v * 1e9) for v in values),
        ),
        x_title="GB",
        height=300,
    )
    return Section("memory", "Memory", (chart,))


# ---- faults -------------------------------------------------------------------------------

_QUANTILES = ("min", "p1", "p5", "p50", "p95", "p99", "max")


def _quantile_series(name: str, stats: dict[str, Any], scale: float = 1.0) -> Series:
    keys = [k for k in _QUANTILES if k in stats]
    return Series(name, tuple(keys), tuple(float(stats[k]) * scale for k in keys))


def _faults(f: dict[str, Any]) -> Section:
    blocks: list[Block] = []
    s = f.get("stragglers")
    if s:
        st = s["step_time_s"]
        blocks.append(
            Chart(
                id="faults-step-time",
                title=f"Step time with stragglers over {fmt.count(s.get('steps'))} steps "
                f"and {fmt.count(s.get('n_ranks'))} ranks",
                body=Lines(
                    series=(
                        _quantile_series("step time", st),
                        Series("ideal step", ("min", "max"), (float(s["ideal_step_s"]),) * 2),
                    )
                ),
                x_title="quantile",
                y_title="seconds",
                caption=f"mean {fmt.seconds(st['mean'])} (std {fmt.seconds(st['std'])}) against "
                f"an ideal {fmt.seconds(s['ideal_step_s'])}; waiting share "
                f"{fmt.pct(s.get('waiting_share'))}.",
                height=320,
            )
        )
        contrib = s.get("contributions_s") or {}
        if contrib:
            blocks.append(
                _bar_chart(
                    "faults-contributions",
                    "What each source of variability adds to the mean step",
                    contrib,
                    fmt.seconds,
                    "seconds",
                    260,
                )
            )
    g = f.get("goodput")
    if g:
        causes = g.get("interruptions_per_hour_by_cause") or {}
        if causes:
            blocks.append(
                _bar_chart(
                    "faults-interruptions",
                    f"Interruptions per hour by cause (MTBF {fmt.num(g.get('mtbf_hours'))} h)",
                    causes,
                    fmt.num,
                    "interruptions per hour",
                    300,
                )
            )
        if isinstance(g.get("goodput"), dict):
            blocks.append(
                Chart(
                    id="faults-goodput",
                    title="Goodput over sampled runs",
                    body=Lines(series=(_quantile_series("goodput (%)", g["goodput"], 100.0),)),
                    x_title="quantile",
                    y_title="% of wall time doing useful work",
                    height=300,
                )
            )
    for name in ("stragglers", "goodput", "failures", "bit_errors"):
        if f.get(name):
            blocks.append(_scalar_table(name.replace("_", " "), f[name]))
    bits = f.get("bit_errors") or {}
    if bits.get("groups"):
        keys = sorted({k for grp in bits["groups"] for k in grp})
        blocks.append(
            Table(
                headers=tuple(keys),
                rows=tuple(tuple(fmt.value(grp.get(k)) for k in keys) for grp in bits["groups"]),
                caption="Link groups of the bit-error study.",
            )
        )
    if not blocks:
        blocks.append(Note("The faults section is empty."))
    return Section("faults", "Faults", tuple(blocks))


def _scalar_table(title: str, data: dict[str, Any]) -> Table:
    rows = []
    for k, v in data.items():
        if isinstance(v, dict) and "mean" in v:
            rows.append(
                (
                    k,
                    f"mean {fmt.value(v['mean'])}, p5 {fmt.value(v.get('p5'))}, "
                    f"p95 {fmt.value(v.get('p95'))}",
                )
            )
        elif isinstance(v, dict | list):
            continue
        else:
            rows.append((k, fmt.value(v)))
    return Table(("figure", "value"), tuple(rows), caption=title)


def _bar_chart(
    chart_id: str,
    title: str,
    values: dict[str, Any],
    text: Callable[[Any], str],
    x_title: str,
    height: int,
    *,
    per: float = 1.0,
    groups: tuple[str, ...] = (),
) -> Chart:
    """A bar per entry of ``values`` (drawn in units of ``per``), labelled ``text(value)``."""
    return Chart(
        id=chart_id,
        title=title,
        body=Bar(
            labels=tuple(values),
            values=tuple(float(v) / per for v in values.values()),
            groups=groups,
            text=tuple(text(v) for v in values.values()),
        ),
        x_title=x_title,
        height=height,
    )
