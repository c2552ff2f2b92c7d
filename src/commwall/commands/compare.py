"""``commwall compare A.yaml B.yaml ...``: several scenarios side by side, each against the first.

>>> # commwall compare --default examples/llama3-70b-oversubscribed.yaml
>>> # commwall compare a.yaml b.yaml c.yaml --engine flow --json

Every scenario is simulated as ``commwall run`` does (faults included) and reduced to the flat
figures a sweep stores (:meth:`commwall.workload.simulate.StepReport.metrics`), so a comparison and a sweep
use the same names. Each figure after the first column shows its change against the first
scenario, relative and absolute; the best value of each row is highlighted.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any, Final

import typer
from rich.markup import escape
from rich.table import Table

from commwall.console import fail, friendly, out
from commwall.scenario import ENGINES

#: Relative differences the simulation does not resolve: a row's winner needs more than this
#: (the compute slowed by collectives beside it settles to 0.1 % of the step,
#: commwall.workload.contention.TOLERANCE, so two designs' breakdowns differ by noise below).
RESOLUTION: Final = 1e-4

#: The rows of the table: (metric, better end) — ``None`` for figures with no better end.
ROWS: tuple[tuple[str, str | None], ...] = (
    ("step_time_s", "min"),
    ("breakdown.compute_s", "min"),
    ("breakdown.tp_s", "min"),
    ("breakdown.cp_s", "min"),
    ("breakdown.ep_s", "min"),
    ("breakdown.pp_s", "min"),
    ("breakdown.bubble_s", "min"),
    ("breakdown.imbalance_s", "min"),
    ("breakdown.dp_s", "min"),
    ("breakdown.optimizer_s", "min"),
    ("comm_wait_s", "min"),
    ("comm_wait_share", "min"),
    ("mfu", "max"),
    ("tokens_per_s", "max"),
    ("memory_per_gpu_bytes", "min"),
    ("fits_in_memory", "max"),
    ("power_w", "min"),
    ("network_power_w", "min"),
    ("network_cost_usd", "min"),
    ("switches", "min"),
    ("cables", "min"),
    ("transceivers", "min"),
    ("bisection_Bps", "max"),
    ("gpus", None),
)


def register(app: typer.Typer) -> None:
    """Add ``commwall compare`` to ``app``."""
    app.command("compare")(friendly(compare))


def compare(
    scenarios: Annotated[
        list[Path] | None, typer.Argument(help="Scenario YAML files; the first is the baseline.")
    ] = None,
    default: Annotated[
        bool,
        typer.Option("--default", help="Put the built-in default scenario first (the baseline)."),
    ] = False,
    engine: Annotated[
        str | None,
        typer.Option(help="analytic or flow for every scenario (default: each one's own)."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print everything as JSON.")] = False,
) -> None:
    """Simulate several scenarios and set them side by side, each against the first."""
    if engine is not None and engine not in ENGINES:
        fail(f"--engine: {engine!r} is not allowed; allowed: {', '.join(ENGINES)}")
    files: list[Path | None] = [*([None] if default else []), *(scenarios or [])]
    if len(files) < 2:
        fail("SCENARIOS: give at least two scenario files (or one and --default)")
    results = [_simulate(f, engine) for f in files]
    data = _comparison(results)
    if as_json:
        sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")
        return
    _print(data)


def _simulate(path: Path | None, engine: str | None) -> dict[str, Any]:
    """One scenario's summary and metrics; a bad file exits 2 with one line naming it."""
    from commwall.cluster import build_cluster
    from commwall.defaults import default_scenario
    from commwall.scenario import ScenarioError, load_scenario
    from commwall.workload.simulate import simulate

    origin = str(path) if path is not None else "built-in default scenario"
    sc = load_scenario(path) if path is not None else default_scenario()
    if engine is not None:
        sc = sc.model_copy(
            update={"simulation": sc.simulation.model_copy(update={"engine": engine})}
        )
    try:
        cluster = build_cluster(sc.cluster)
        if sc.faults is not None:  # as ``commwall run``: failed links and switches are gone
            from commwall.faults.analysis import cluster_with_scenario_failures

            cluster, _ = cluster_with_scenario_failures(sc, cluster)
        report = simulate(sc, cluster)
    except ScenarioError as e:
        raise ScenarioError(e.messages, origin) from None
    except (ValueError, ArithmeticError) as e:  # model limits: name the file, no traceback
        fail(f"{origin}: {e}")
    label = path.stem if path is not None else "default"
    return {
        "label": label,
        "file": None if path is None else str(path),
        "name": report.scenario,
        "cluster": report.cluster,
        "job": report.job,
        "metrics": report.metrics(),
    }


def _comparison(results: list[dict[str, Any]]) -> dict[str, Any]:
    """The results with each metric's change against the first and the best per row."""
    labels = [r["label"] for r in results]
    for i, r in enumerate(results):  # same file names in different folders: number them
        if labels.count(r["label"]) > 1:
            r["label"] = f"{i + 1}:{r['label']}"
    base = results[0]["metrics"]
    for r in results:
        delta: dict[str, Any] = {}
        for name, _ in ROWS:
            a, b = base.get(name), r["metrics"].get(name)
            if _num(a) and _num(b):
                if abs(float(b) - float(a)) <= 1e-9 * max(abs(float(a)), abs(float(b))):
                    b = a  # float noise of an identical design is no change
                delta[name] = {
                    "abs": float(b) - float(a),
                    "rel": (float(b) / float(a) - 1.0) if a else None,
                }
        r["delta_vs_first"] = delta
    best: dict[str, list[str]] = {}
    for name, goal in ROWS:
        values = [(r["metrics"].get(name), r["label"]) for r in results]
        nums = [(float(v), lab) for v, lab in values if _num(v)]
        if goal is None or not nums:
            continue
        target = min(v for v, _ in nums) if goal == "min" else max(v for v, _ in nums)

        def same(v: float, t: float = target) -> bool:  # below the model's resolution
            return abs(v - t) <= RESOLUTION * max(abs(v), abs(t))

        if not all(same(v) for v, _ in nums):  # all equal: no winner to highlight
            best[name] = [lab for v, lab in nums if same(v)]
    return {
        "baseline": results[0]["label"],
        "rows": [{"metric": n, "better": g} for n, g in ROWS],
        "best": best,
        "scenarios": results,
    }


def _num(x: Any) -> bool:
    return isinstance(x, int | float)


def _cluster_line(c: dict[str, Any]) -> str:
    return (
        f"{c['gpus']:,} x {c['gpu']}, {c['nodes']:,} nodes, {c['fabric']} {c['topology']} "
        f"{c['tiers']}-tier {c['oversubscription']:g}:1, {c['routing']}"
    )


def _job_line(j: dict[str, Any]) -> str:
    ep = f" EP{j['ep']}" if j.get("ep", 1) > 1 else ""
    replicas = j.get("dp_replicate") or 1
    hsdp = f" in {replicas} replicas" if replicas > 1 else ""
    return (
        f"{j['model']} TP{j['tp']} PP{j['pp']} DP{j['dp']}{ep}, batch {j['global_batch']} x "
        f"{j['seq_len']}, {j['precision']}, ZeRO-{j['zero_stage']}{hsdp}"
    )


def _delta(name: str, d: dict[str, Any] | None) -> str:
    from commwall.commands.sweep_analysis import format_value

    if d is None or d["abs"] == 0:
        return ""
    sign = "+" if d["abs"] > 0 else "-"
    rel = f"{d['rel']:+.1%}, " if d["rel"] is not None else ""
    if name in ("comm_wait_share", "mfu"):  # a change of a share: percentage points
        return f" ({rel}{sign}{abs(d['abs']) * 100:.1f} pp)"
    return f" ({rel}{sign}{format_value(name, abs(d['abs']))})"


def _print(data: dict[str, Any]) -> None:
    from commwall.commands.sweep_analysis import format_value

    results = data["scenarios"]
    for r in results:
        where = f" ({r['file']})" if r["file"] else ""
        # the built-in default's name already starts with its label ("default: Llama-3-70B …")
        name = str(r["name"]).removeprefix(f"{r['label']}: ")
        out.print(f"[bold]{escape(r['label'])}[/]{escape(where)}: {escape(name)}")
        out.print(f"  cluster  {escape(_cluster_line(r['cluster']))}")
        out.print(f"  job      {escape(_job_line(r['job']))}")
    table = Table(
        title=f"Compared with {data['baseline']} (best of each row in bold green)",
        title_justify="left",
    )
    table.add_column("metric")
    for r in results:
        table.add_column(escape(r["label"]), justify="right", overflow="fold")
    for row in data["rows"]:
        name = row["metric"]
        values = [r["metrics"].get(name) for r in results]
        if name.startswith("breakdown.") and not any(values):
            continue  # a part no scenario has
        winners = data["best"].get(name, [])
        cells = []
        for i, (r, v) in enumerate(zip(results, values, strict=True)):
            text = format_value(name, v)
            if i > 0 and not isinstance(v, bool):
                text += _delta(name, r["delta_vs_first"].get(name))
            text = escape(text)
            cells.append(f"[bold green]{text}[/]" if r["label"] in winners else text)
        table.add_row(escape(name), *cells)
    out.print(table)
