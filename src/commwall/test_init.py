"""The package's top-level API: commwall.simulate and commwall.evaluation_step_time."""

from __future__ import annotations

import doctest

import pytest

import commwall
from commwall.scenario import ScenarioError

JOB = {"cluster": {"preset": "dgx-h100", "nodes": 1}, "job": {"model": "llama3-8b"}}


def test_doctests() -> None:
    assert doctest.testmod(commwall).failed == 0


def test_an_evaluation_step_takes_what_simulate_takes() -> None:
    """The default scenario, a mapping and an engine override, as :func:`commwall.simulate`:
    the forwards alone, so shorter than half the step (the backward is twice the forward)."""
    for scenario in (None, JOB):
        step = commwall.simulate(scenario).step_time
        assert 0 < commwall.evaluation_step_time(scenario) < step / 2
    flow = commwall.evaluation_step_time(JOB, engine="flow")
    assert flow == pytest.approx(commwall.evaluation_step_time(JOB), rel=0.05)


def test_a_bad_scenario_is_a_scenario_error() -> None:
    with pytest.raises(ScenarioError, match=r"job\.tp"):
        commwall.evaluation_step_time({**JOB, "job": {"model": "llama3-8b", "tp": 3}})
