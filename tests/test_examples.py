"""Every scenario in examples/ loads, simulates and accounts for its whole step, deterministically."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from commwall.defaults import default_scenario
from commwall.scenario import load_scenario
from commwall.workload.contention import TOLERANCE
from commwall.workload.simulate import simulate

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
FILES = sorted(EXAMPLES.glob("*.yaml"))


def test_the_examples_are_there() -> None:
    names = {f.name for f in FILES}
    assert {
        "llama3-70b-dgx-h100.yaml",
        "llama3-405b-16k-h100.yaml",
        "gpt3-175b-dgx-a100.yaml",
        "mixtral-8x7b-h200-roce.yaml",
        "llama3-70b-gb200-nvl72.yaml",
        "llama3-8b-ddp-pcie.yaml",
        "llama3-70b-oversubscribed.yaml",
    } <= names


@pytest.mark.parametrize("path", FILES, ids=[f.stem for f in FILES])
def test_example_simulates_and_accounts_for_the_step(path: Path) -> None:
    assert path.read_text(encoding="utf-8").startswith("# "), "header comment missing"
    report = simulate(load_scenario(path))
    assert report.step_time > 0
    parts = sum(report.breakdown.values())
    assert abs(parts - report.step_time) <= 1e-9 * report.step_time
    assert all(v >= 0 for v in report.breakdown.values())
    assert 0 <= report.comm_wait_share < 1
    assert 0 < report.mfu < 1
    assert report.fits_in_memory, f"{path.name}: {report.memory.total / 1e9:.1f} GB per GPU"


@pytest.mark.parametrize("path", FILES, ids=[f.stem for f in FILES])
def test_example_is_deterministic(path: Path) -> None:
    first = simulate(load_scenario(path)).to_dict()
    second = simulate(load_scenario(path)).to_dict()
    assert json.dumps(first, sort_keys=True) == json.dumps(second, sort_keys=True)


def test_default_example_is_the_built_in_default() -> None:
    assert load_scenario(EXAMPLES / "llama3-70b-dgx-h100.yaml") == default_scenario()


def test_oversubscription_slows_only_scale_out_communication() -> None:
    base = simulate(load_scenario(EXAMPLES / "llama3-70b-dgx-h100.yaml"))
    tapered = simulate(load_scenario(EXAMPLES / "llama3-70b-oversubscribed.yaml"))
    # the same compute, up to what the collectives beside it settle to (contention.TOLERANCE)
    assert tapered.breakdown["compute"] == pytest.approx(base.breakdown["compute"], rel=TOLERANCE)
    assert tapered.breakdown["tp"] == pytest.approx(base.breakdown["tp"], rel=TOLERANCE)  # NVLink
    assert tapered.breakdown["dp"] > base.breakdown["dp"]
    assert tapered.step_time > base.step_time


def test_pcie_data_parallel_example_hits_the_communication_wall() -> None:
    report = simulate(load_scenario(EXAMPLES / "llama3-8b-ddp-pcie.yaml"))
    assert report.job["tp"] == report.job["pp"] == 1
    assert report.cluster["scale_up"] == "pcie"
    assert report.comm_wait_share > 0.5


def test_flow_engine_example_finds_what_the_taper_really_costs() -> None:
    """On the real 3:1 fabric the DP ring crosses the spine only at scalable-unit boundaries
    (less exposed DP than the analytic engine's divide-by-the-taper), while ECMP collisions slow
    the cross-SU pipeline sends (more than spraying)."""
    flow_ecmp = load_scenario(EXAMPLES / "llama3-70b-oversubscribed-flow.yaml")
    analytic = simulate(load_scenario(EXAMPLES / "llama3-70b-oversubscribed.yaml"))
    ecmp = simulate(flow_ecmp)
    cluster = flow_ecmp.cluster.model_copy(update={"routing": "spray"})
    spray = simulate(flow_ecmp.model_copy(update={"cluster": cluster}))
    assert ecmp.result.engine == "flow"
    assert ecmp.breakdown["compute"] == pytest.approx(analytic.breakdown["compute"], rel=TOLERANCE)
    assert ecmp.breakdown["dp"] < 0.5 * analytic.breakdown["dp"]
    assert ecmp.breakdown["pp"] > 2 * spray.breakdown["pp"]


def test_the_torchtitan_example_is_its_validation_row() -> None:
    """The README quotes the example's error against Trainy's published run: it must be that
    row's job on that row's cluster."""
    from commwall.scenario import parse_scenario
    from commwall.validation.training import load_training_runs

    row = next(
        r for r in load_training_runs() if r.id == "torchtitan2506-h200-fp8-llama31-8b-32gpu-trainy"
    )
    example = simulate(load_scenario(EXAMPLES / "llama3-8b-torchtitan-fsdp2-h200.yaml"))
    assert example.step_time == simulate(parse_scenario(row.scenario())).step_time
    assert example.step_time / row.measured_step() - 1 == pytest.approx(-0.089, abs=0.0005)


def test_the_hsdp_example_says_what_it_costs() -> None:
    """The HSDP example's header quotes its step and memory against full sharding."""
    hsdp = load_scenario(EXAMPLES / "llama3-8b-hsdp-h100.yaml")
    full = hsdp.model_copy(update={"job": hsdp.job.model_copy(update={"dp_replicate": 1})})
    a, b = simulate(hsdp), simulate(full)
    assert (round(a.step_time, 2), round(b.step_time, 2)) == (2.07, 2.03)
    assert (round(a.memory.total / 1e9), round(b.memory.total / 1e9)) == (60, 43)


def test_the_lightning_example_is_its_validation_run() -> None:
    """The Nemotron 3.5 Lightning example is its model card's GB200 run, and its header's
    figures hold: the step within 1 % of the measured one, a fifth longer than without MTP."""
    from commwall.scenario import parse_scenario
    from commwall.validation.training import load_training_runs

    row = next(
        r
        for r in load_training_runs()
        if r.id == "mbcard-gb200-bf16-nemotron3.5-lightning-8gpu-perf"
    )
    scenario = load_scenario(EXAMPLES / "nemotron-3.5-lightning-gb200-nvl72.yaml")
    example = simulate(scenario)
    assert example.step_time == simulate(parse_scenario(row.scenario())).step_time
    assert example.step_time / row.measured_step() - 1 == pytest.approx(0.010, abs=0.0005)
    assert round(example.step_time, 2) == 18.42
    plain = scenario.model_copy(
        update={"job": scenario.job.model_copy(update={"mtp_layers": 0, "mtp_shared": False})}
    )
    assert example.step_time / simulate(plain).step_time == pytest.approx(1.2, abs=0.03)
    # the card's peak allocated memory, 156.850 GiB (the row's measured.peak_memory_gib)
    assert example.memory.total / 2**30 == pytest.approx(152.8, abs=0.05)
    assert example.memory.total / (row.measured["peak_memory_gib"] * 2**30) > 0.97
