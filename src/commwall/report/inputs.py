"""What a report is made from: a scenario (simulated here), a result JSON, or a sweep directory.

A single result is always handled as the plain data of ``commwall run --json``
(:meth:`~commwall.workload.simulate.StepReport.to_dict`, plus ``faults`` when the scenario has
that section), so a report of a scenario and a report of its saved JSON show the same figures.
A scenario adds what only the live cluster can give: busbw-versus-size curves of the job's
communicators and the network cost by part.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from commwall.checks import choice
from commwall.errors import CommwallError
from commwall.report.busbw import CommCurves
from commwall.scenario import ENGINES

__all__ = [
    "ENGINES",
    "RESULT_KEYS",
    "ReportError",
    "ResultInput",
    "SweepInput",
    "load_input",
    "load_result_json",
    "load_sweep",
    "simulate_scenario",
]

#: Keys a result JSON must have (``commwall run --json``).
RESULT_KEYS = (
    "scenario",
    "cluster",
    "job",
    "step_time_s",
    "breakdown_s",
    "comm_wait_share",
    "fabric",
    "memory_bytes",
    "timeline",
)


class ReportError(CommwallError, ValueError):
    """An input a report cannot be made from; the message is one line naming it."""


@dataclass(frozen=True)
class ResultInput:
    """One simulated step as plain data, and what the live cluster adds (scenario input only)."""

    data: dict[str, Any]
    origin: str
    description: str = ""
    curves: tuple[CommCurves, ...] = ()


@dataclass(frozen=True)
class SweepInput:
    """A sweep directory's point records (:func:`commwall.sweep.store.read_points`)."""

    path: Path
    records: tuple[dict[str, Any], ...]


def load_input(path: str | Path | None, *, engine: str | None = None) -> ResultInput | SweepInput:
    """Read ``path`` by what it is: a directory is a sweep, ``*.json`` a result, anything else a
    scenario YAML; ``None`` simulates the built-in default scenario. Raises :class:`ReportError`
    (or :class:`~commwall.scenario.ScenarioError` for a bad scenario)."""
    if engine is not None:
        choice("engine", engine, ENGINES, error=ReportError)
    if path is None:
        from commwall.defaults import default_scenario

        return simulate_scenario(default_scenario(), "built-in default scenario", engine=engine)
    p = Path(path)
    if not p.exists():
        raise ReportError(f"{p}: no such file or directory")
    if p.is_dir():
        if engine is not None:
            raise ReportError("engine: applies to a scenario, not to a sweep directory")
        return load_sweep(p)
    if p.suffix.lower() == ".json":
        if engine is not None:
            raise ReportError("engine: applies to a scenario, not to a result JSON")
        return load_result_json(p)
    from commwall.scenario import load_scenario

    return simulate_scenario(load_scenario(p), str(p), engine=engine)


def load_result_json(path: str | Path) -> ResultInput:
    """A ``commwall run --json`` file, checked for the keys a report reads."""
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except OSError as e:
        raise ReportError(f"{p}: cannot read the file: {e.strerror or e}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ReportError(f"{p}: not JSON ({e})") from None
    missing = [k for k in RESULT_KEYS if not isinstance(data, dict) or k not in data]
    if (not missing and not isinstance(data["timeline"], dict)) or (
        not missing and not isinstance(data["timeline"].get("phases"), list)
    ):
        missing = ["timeline.phases"]
    if missing:
        raise ReportError(
            f"{p}: not a commwall result (missing {', '.join(missing)}); make one with "
            "`commwall run SCENARIO --json > result.json`"
        )
    return ResultInput(data=data, origin=str(p))


def load_sweep(path: str | Path) -> SweepInput:
    """A sweep directory's points; an empty or unreadable one is a :class:`ReportError`."""
    from commwall.sweep.store import POINTS, DamagedPoints, read_points

    p = Path(path)
    try:
        records = read_points(p)
    except DamagedPoints as e:
        raise ReportError(str(e)) from None
    except OSError as e:
        raise ReportError(f"{p}: cannot read the sweep's points: {e}") from None
    if not records:
        raise ReportError(
            f"{p}: no sweep points (expected {POINTS}/<id>.parquet files from `commwall sweep`)"
        )
    return SweepInput(path=p, records=tuple(records))


def simulate_scenario(scenario: Any, origin: str, *, engine: str | None = None) -> ResultInput:
    """Simulate ``scenario`` as ``commwall run`` does (faults included) and keep the cluster's
    extras: communicator curves and network cost by part."""
    from commwall.cluster import build_cluster
    from commwall.report.busbw import communicator_curves
    from commwall.scenario import ScenarioError
    from commwall.workload.simulate import simulate

    if engine is not None:
        sim = scenario.simulation.model_copy(update={"engine": engine})
        scenario = scenario.model_copy(update={"simulation": sim})
    failures = None
    try:
        cluster = build_cluster(scenario.cluster)
        if scenario.faults is not None:
            from commwall.faults.analysis import cluster_with_scenario_failures

            cluster, failures = cluster_with_scenario_failures(scenario, cluster)
        report = simulate(scenario, cluster)
        faults = None
        if scenario.faults is not None:
            from commwall.faults.analysis import analyse_faults

            faults = analyse_faults(scenario, report, cluster, failures)
    except ScenarioError as e:  # name the file, not "scenario"
        raise ScenarioError(e.messages, origin) from None
    data = report.to_dict()
    if faults is not None:
        data["faults"] = faults.to_dict()
    # JSON round trip: the same plain data (tuples as lists, int keys as strings) a saved
    # result gives, so both inputs draw identical figures
    data = json.loads(json.dumps(data))
    return ResultInput(
        data=data,
        origin=origin,
        description=scenario.description,
        curves=communicator_curves(scenario, cluster, report),
    )
