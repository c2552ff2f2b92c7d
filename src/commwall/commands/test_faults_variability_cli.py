"""``commwall faults stragglers|goodput`` and ``commwall run`` with a ``faults:`` section."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from commwall.cli import app
from commwall.faults.goodput import JobSize, load_failure_model
from commwall.faults.stragglers import expected_max_normal

runner = CliRunner()
EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def invoke(*args: str) -> dict[str, object]:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    data: dict[str, object] = json.loads(result.stdout)
    return data


def test_stragglers_closed_form_profile() -> None:
    d = invoke("faults", "stragglers", "--compute", "1s", "--gpus", "16384", "--jitter", "2%",
               "--steps", "4000", "--json")  # fmt: skip
    step = d["step_time_s"]
    assert isinstance(step, dict)
    assert step["mean"] - 1 == pytest.approx(expected_max_normal(16384, 1, 0.02) - 1, rel=0.05)
    assert step["p99"] > step["p50"] > 1.0
    assert d["method"] == "order" and d["n_ranks"] == 16384


def test_stragglers_on_the_default_scenario_with_scaling() -> None:
    d = invoke("faults", "stragglers", "--jitter", "0.01", "--message-tail", "1us",
               "--scales", "1024,16384", "--steps", "500", "--json")  # fmt: skip
    scaling = d["scaling"]
    assert isinstance(scaling, list) and [r["n_ranks"] for r in scaling] == [1024, 16384]
    assert scaling[1]["step_time_s"]["mean"] > scaling[0]["step_time_s"]["mean"]
    assert set(d["contributions_s"]) == {"compute jitter", "network tail"}  # type: ignore[arg-type]
    # each scale is the scenario rebuilt there: the default's own 1,024 GPUs give its step,
    # 16,384 a step of their own
    ideals = [r["ideal_step_s"] for r in scaling]
    assert ideals[0] == pytest.approx(d["ideal_step_s"]) and ideals[1] > ideals[0]


def test_stragglers_scaling_refuses_a_scale_the_job_cannot_take() -> None:
    result = runner.invoke(app, ["faults", "stragglers", "--scales", "1000", "--steps", "50"])
    assert result.exit_code == 2, result.output
    assert (
        "1,000 GPUs do not split into model-parallel groups of tp x cp x pp = 32" in result.output
    )
    assert "Traceback" not in result.output


def test_stragglers_table() -> None:
    result = runner.invoke(app, ["faults", "stragglers", "--compute", "2s", "--slow-ranks", "1",
                                 "--slowdown", "1.1", "--steps", "100"])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "p99 step" in result.output and "95% interval" in result.output
    assert "2.2 s" in result.output  # one slow rank at 1.1x sets every step


def test_stragglers_empirical_file(tmp_path: Path) -> None:
    f = tmp_path / "times.txt"
    f.write_text("1.0, 1.1\n0.9 1.0\n")
    d = invoke("faults", "stragglers", "--compute", "1s", "--distribution", "empirical",
               "--empirical", str(f), "--steps", "50", "--json")  # fmt: skip
    assert d["step_time_s"]["max"] == pytest.approx(1.1)  # type: ignore[index]
    f.write_text("1.0 fast\n")
    bad = runner.invoke(app, ["faults", "stragglers", "--compute", "1s", "--distribution",
                              "empirical", "--empirical", str(f)])  # fmt: skip
    assert bad.exit_code == 2 and "times.txt:1" in bad.output and "'fast'" in bad.output


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--jitter", "lots"], "--jitter"),
        (["--message-tail", "2 parsecs"], "--message-tail"),
        (["--distribution", "cauchy"], "distribution"),
        (["--scales", "1k,2k"], "--scales"),
        (["--slowdown", "0.5"], "slowdown"),
        (["--method", "order", "--os-noise-rate", "10", "--os-noise-duration", "1ms"], "method"),
    ],
)
def test_stragglers_bad_input(args: list[str], needle: str) -> None:
    result = runner.invoke(app, ["faults", "stragglers", "--compute", "1s", *args])
    assert result.exit_code == 2, result.output
    assert needle in result.output and "Traceback" not in result.output


def test_goodput_by_gpu_count() -> None:
    d = invoke("faults", "goodput", "--gpus", "16384", "--days", "50", "--samples", "300",
               "--json")  # fmt: skip
    assert d["mtbf_hours"] == pytest.approx(1296 / 419)
    assert d["hosts"] == 2048 and d["interval_s"] == pytest.approx(d["daly_interval_s"])
    good = d["goodput"]
    assert isinstance(good, dict) and 0.8 < good["mean"] < 0.9
    rows = d["scaling"]
    assert isinstance(rows, list)
    assert [r["goodput"] for r in rows] == sorted((r["goodput"] for r in rows), reverse=True)


def test_goodput_on_a_scenario_with_tokens() -> None:
    d = invoke("faults", "goodput", "--tokens", "1T", "--samples", "50", "--scales", "",
               "--json")  # fmt: skip
    from commwall.defaults import default_scenario
    from commwall.workload.simulate import simulate

    report = simulate(default_scenario())
    assert d["solve_days"] == pytest.approx(1e12 / report.tokens_per_second / 86400)
    # the default scenario: 1,024 GPUs in 128 hosts with 8 NICs each
    assert d["mtbf_hours"] == pytest.approx(load_failure_model().mtbf_hours(JobSize(1024, 8, 1024)))


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--gpus", "8", "--tokens", "1T"], "--tokens"),
        (["--days", "3", "--tokens", "1T"], "exclude"),
        (["--checkpoint", "soon"], "--checkpoint"),
        (["--tokens", "many"], "--tokens"),
        (["--failure-scale", "0"], "failure_scale"),
        (["--gpus", "8", "--days", "0"], "longer than 0"),
    ],
)
def test_goodput_bad_input(args: list[str], needle: str) -> None:
    result = runner.invoke(app, ["faults", "goodput", "--samples", "10", *args])
    assert result.exit_code == 2, result.output
    assert needle in result.output and "Traceback" not in result.output


def test_run_with_a_faults_section(tmp_path: Path) -> None:
    f = tmp_path / "s.yaml"
    f.write_text(
        "cluster: {preset: dgx-h100, nodes: 4}\n"
        "job: {model: llama3-8b, tp: 8, dp: 4, global_batch: 64}\n"
        "faults:\n"
        "  stragglers: {jitter: 0.02, steps: 200}\n"
        "  goodput: {tokens: 100B, samples: 50}\n"
        "  bit_errors: {pre_fec_ber: 1.0e-4, samples: 5}\n"
    )
    d = invoke("run", str(f), "--json")
    faults = d["faults"]
    assert isinstance(faults, dict)
    assert faults["stragglers"]["step_time_s"]["mean"] > d["step_time_s"]  # type: ignore[operator]
    assert faults["goodput"]["gpus"] == 32
    bits = faults["bit_errors"]
    assert bits["pre_fec_ber_median"] == 1e-4 and bits["step_time_s"] == d["step_time_s"]
    table = runner.invoke(app, ["run", str(f)])
    assert table.exit_code == 0, table.output
    assert "faults: stragglers" in table.output and "faults: goodput" in table.output
    assert "effective throughput after faults" in table.output
    assert "faults: bit errors" in table.output


def test_run_rejects_a_bad_faults_section(tmp_path: Path) -> None:
    f = tmp_path / "s.yaml"
    f.write_text("faults:\n  stragglers: {jitter: -1}\n")
    result = runner.invoke(app, ["run", str(f)])
    assert result.exit_code == 2
    assert "faults.stragglers.jitter" in result.output


def test_the_faults_example_runs() -> None:
    d = invoke("run", str(EXAMPLES / "llama3-405b-16k-h100-faults.yaml"), "--json")
    faults = d["faults"]
    assert isinstance(faults, dict) and faults["goodput"]["gpus"] == 16384
    assert faults["stragglers"]["contributions_s"]["slow ranks"] > 0


def test_run_with_failures_reroutes_on_the_flow_engine(tmp_path: Path) -> None:
    f = tmp_path / "s.yaml"
    f.write_text(
        "cluster: {preset: dgx-h100, nodes: 64}\n"
        "job: {model: llama3-8b, tp: 8, dp: 64, global_batch: 512}\n"
        "faults:\n"
        "  failures: {switches: ['spine:0'], random_cables: {leaf-spine: 4}}\n"
    )
    analytic = invoke("run", str(f), "--json")
    flow = invoke("run", str(f), "--engine", "flow", "--json")
    fa, ff = analytic["faults"], flow["faults"]
    assert isinstance(fa, dict) and isinstance(ff, dict)
    impact = ff["failures"]
    # the spine's own 64 leaf-spine cables plus 4 drawn among the surviving ones
    assert impact["failed_cables"] == {"leaf-spine": 68}
    assert impact["failed_switches"] == ["spine:0"]
    assert impact["bisection_after_Bps"] < impact["bisection_before_Bps"]
    assert impact["runs_as_configured"]
    assert ff["step_sees_failures"] and not fa["step_sees_failures"]
    # the fabric line describes the fabric as built, failures or not
    assert flow["fabric"]["cables"] == analytic["fabric"]["cables"]
    healthy = f.with_name("h.yaml")
    healthy.write_text("\n".join(f.read_text().splitlines()[:2]) + "\n")
    base = invoke("run", str(healthy), "--engine", "flow", "--json")
    assert flow["step_time_s"] >= base["step_time_s"]  # type: ignore[operator]
    assert analytic["step_time_s"] == invoke("run", str(healthy), "--json")["step_time_s"]


def test_run_rejects_a_bad_failure(tmp_path: Path) -> None:
    f = tmp_path / "s.yaml"
    f.write_text("faults:\n  failures: {switches: ['attic:1']}\n")
    result = runner.invoke(app, ["run", str(f)])
    assert result.exit_code == 2, result.output
    assert "attic" in result.output and "Traceback" not in result.output
