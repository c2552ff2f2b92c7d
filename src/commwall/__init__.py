"""commwall: where a distributed training step's time goes, and what a different network would change."""

from __future__ import annotations

from pathlib import Path as _Path
from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any

from commwall._version import __version__ as __version__

if _TYPE_CHECKING:
    from commwall.scenario import Scenario
    from commwall.workload.simulate import StepReport


def simulate(
    scenario: Scenario | str | _Path | dict[str, _Any] | None = None,
    *,
    engine: str | None = None,
) -> StepReport:
    """Simulate one training step: a :class:`~commwall.scenario.Scenario`, a scenario file,
    a mapping of the scenario's fields, or None for the built-in default. ``engine`` overrides
    the scenario's (``analytic`` or ``flow``). The report's ``to_frame()`` and
    ``timeline_frame()`` give pandas DataFrames.

    >>> import commwall
    >>> report = commwall.simulate({"cluster": {"preset": "dgx-h100", "nodes": 2},
    ...                             "job": {"model": "llama3-8b", "tp": 8, "dp": 2}})
    >>> round(report.step_time, 3) > 0, int(report.to_frame().loc[0, "gpus"])
    (True, 16)
    """
    from commwall.workload.simulate import simulate as run

    return run(_scenario(scenario, engine))


def evaluation_step_time(
    scenario: Scenario | str | _Path | dict[str, _Any] | None = None,
    *,
    engine: str | None = None,
) -> float:
    """Seconds of one evaluation step of the scenario (as :func:`simulate` takes it): the
    step's forwards alone, through every pipeline stage with their collectives, and no
    backward, gradient reduction or optimizer — what MLPerf Training logs time as
    ``validation_step_time`` (:func:`commwall.workload.simulate.evaluation_step_time`).

    >>> import commwall
    >>> job = {"cluster": {"preset": "dgx-h100", "nodes": 1}, "job": {"model": "llama3-8b"}}
    >>> 0 < commwall.evaluation_step_time(job) < commwall.simulate(job).step_time / 2
    True
    """
    from commwall.workload.simulate import evaluation_step_time as run

    return run(_scenario(scenario, engine))


def _scenario(
    scenario: Scenario | str | _Path | dict[str, _Any] | None, engine: str | None
) -> Scenario:
    """The scenario ``scenario`` names (None: the built-in default), on ``engine`` if given."""
    from commwall.defaults import default_scenario
    from commwall.scenario import Scenario, load_scenario, parse_scenario

    if scenario is None:
        sc = default_scenario()
    elif isinstance(scenario, Scenario):
        sc = scenario
    elif isinstance(scenario, dict):
        sc = parse_scenario(scenario)
    else:
        sc = load_scenario(scenario)
    if engine is not None:
        sc = parse_scenario({**sc.model_dump(mode="json"), "simulation": {
            **sc.simulation.model_dump(mode="json"), "engine": engine}})  # fmt: skip
    return sc


def run_sweep(
    spec: str | _Path | dict[str, _Any],
    out: str | _Path | None = None,
    *,
    executor: str = "local",
    jobs: int | None = None,
    address: str | None = None,
) -> _Any:
    """Run a sweep spec (a file or a mapping, :mod:`commwall.sweep.spec`) into ``out`` (default:
    a new temporary directory) and return every stored point as a pandas DataFrame, in sweep
    order. Rerunning into the same ``out`` computes only the missing points."""
    import tempfile

    import pandas as pd

    from commwall.sweep.runner import run_sweep as run
    from commwall.sweep.spec import load_sweep, parse_sweep
    from commwall.sweep.store import read_points

    sweep = parse_sweep(spec) if isinstance(spec, dict) else load_sweep(spec)
    target = _Path(out) if out is not None else _Path(tempfile.mkdtemp(prefix="commwall-sweep-"))
    summary = run(sweep, target, executor=executor, jobs=jobs, address=address)
    if summary.interrupted:  # every finished point is stored in `out`: rerun to continue
        raise KeyboardInterrupt(f"sweep interrupted; {summary.computed} points stored in {target}")
    return pd.DataFrame(read_points(target))
