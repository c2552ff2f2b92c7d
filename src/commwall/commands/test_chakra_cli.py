"""``commwall chakra``: show, replay (+ --json), export, and bad input as one line with exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from commwall.cli import app
from commwall.io.chakra import read_traces
from commwall.io.chakra_sample import write_sample
from commwall.workload.chakra_step import traces_to_schedule
from commwall.workload.contention import as_measured, run_contended

runner = CliRunner()
FIXTURE = Path(__file__).resolve().parents[1] / "io" / "testdata" / "chakra" / "pytorch"


def test_show_the_committed_pytorch_sample() -> None:
    result = runner.invoke(app, ["chakra", "show", str(FIXTURE)])
    assert result.exit_code == 0, result.output
    assert "4 rank(s)" in result.output and "default_pg (4 ranks)" in result.output
    data = json.loads(runner.invoke(app, ["chakra", "show", str(FIXTURE), "--json"]).stdout)
    assert [r["by_type"]["COMM_COLL_NODE"] for r in data["ranks"]] == [2, 2, 2, 2]
    assert data["ranks"][2]["compute_us"] == 1800 + 250
    assert {(c["op"], c["bytes"], c["calls"]) for c in data["collectives"]} >= {
        ("all_reduce", 64 << 20, 4), ("send", 4 << 20, 2), ("recv", 4 << 20, 2)}  # fmt: skip


def test_replay_on_a_preset_table_and_json() -> None:
    args = ["chakra", "replay", str(FIXTURE.parent), "--cluster", "dgx-h100", "--nodes", "1"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "step time" in result.output and "exposed comm" in result.output
    data = json.loads(runner.invoke(app, [*args, "--json", "--engine", "flow"]).stdout)
    assert data["engine"] == "flow" and data["ranks"] == 4
    assert data["compute_s"] == pytest.approx(2.05e-3, rel=1e-12)  # sums of end - start
    assert data["step_time_s"] >= data["compute_s"]
    assert data["exposed_s"] == data["step_time_s"] - data["compute_s"]
    assert data["top_collectives"][0]["bytes"] == 64 << 20


def test_export_then_replay_gives_the_simulated_step(tmp_path: Path) -> None:
    scenario = Path(__file__).resolve().parents[3] / "examples" / "llama3-8b-ddp-pcie.yaml"
    result = runner.invoke(app, ["chakra", "export", "--scenario", str(scenario), "--out",
                                 str(tmp_path), "--ranks", "0,3"])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["step.0.et", "step.3.et"]
    from commwall.cluster import build_cluster
    from commwall.engines import get_engine
    from commwall.scenario import load_scenario
    from commwall.workload.job import resolve_job
    from commwall.workload.step import build_step

    sc = load_scenario(scenario)
    cl = build_cluster(sc.cluster)
    job = resolve_job(sc.job, cl)
    assert job.device is not None
    built = build_step(job, cl).schedule
    ran, contention = run_contended(get_engine("analytic"), built, cl, sms=job.device.sms,
                                    hbm=job.device.hbm, policy="nccl", routing=cl.routing)  # fmt: skip
    # the traces hold the compute as the run measures it, beside its overlapped collectives
    schedule = as_measured(built, contention.extra)
    assert traces_to_schedule(read_traces([str(tmp_path)]), scale_up_domain=cl.scale_up_domain,
                              n_gpus=cl.n_gpus) == schedule  # fmt: skip
    replayed = runner.invoke(app, ["chakra", "replay", str(tmp_path / "step"), "--cluster",
                                   str(scenario), "--json"])  # fmt: skip
    assert replayed.exit_code == 0, replayed.output
    expected = get_engine("analytic").run(schedule, cl, cl.routing).makespan
    assert json.loads(replayed.stdout)["step_time_s"] == expected
    assert expected == pytest.approx(ran.makespan, rel=1e-12)  # replay = the simulated step


def test_export_default_by_stage(tmp_path: Path) -> None:
    result = runner.invoke(app, ["chakra", "export", "--default", "--out", str(tmp_path),
                                 "--ranks", "stages", "--prefix", "llama"])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"llama.{r}.et" for r in
                                                          (0, 256, 512, 768)]  # fmt: skip


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    garbage = tmp_path / "junk.0.et"
    garbage.write_bytes(b"\x05abc")
    paths = write_sample(tmp_path / "ok")
    truncated = tmp_path / "cut.0.et"
    truncated.write_bytes(paths[0].read_bytes()[:500])
    cases = [
        (["chakra", "show", str(garbage)], "junk.0.et: byte 0: truncated"),
        (["chakra", "show", str(truncated)], "cut.0.et: byte"),
        (["chakra", "show", str(tmp_path / "nothing")], "no such file"),
        (["chakra", "replay", str(tmp_path / "ok"), "--cluster", "dgx-h100", "--nodes", "1",
          "--engine", "packet"], "--engine"),
        (["chakra", "replay", str(paths[0]), str(paths[1]), str(paths[2]), str(paths[3]),
          "--cluster", "nope"], "nope"),
        (["chakra", "export", "--out", str(tmp_path)], "exactly one of"),
        (["chakra", "export", "--default", "--out", str(tmp_path), "--ranks", "x"], "--ranks"),
        (["chakra", "export", "--default", "--out", str(tmp_path), "--ranks", "5000"], "--ranks"),
    ]  # fmt: skip
    for args, message in cases:
        result = runner.invoke(app, args)
        assert result.exit_code == 2, (args, result.output)
        assert message in result.output and "Traceback" not in result.output, result.output
        assert len(result.output.strip().splitlines()) == 1, result.output


def test_more_ranks_than_the_cluster(tmp_path: Path) -> None:
    write_sample(tmp_path / "run")
    result = runner.invoke(app, ["chakra", "replay", str(tmp_path / "run"), "--cluster",
                                 "dgx-h100", "--nodes", "1"])  # fmt: skip
    assert result.exit_code == 0
    small = tmp_path / "small.yaml"
    small.write_text("cluster:\n  preset: dgx-h100\n  nodes: 1\n  gpus_per_node: 2\n")
    result = runner.invoke(
        app, ["chakra", "replay", str(tmp_path / "run"), "--cluster", str(small)]
    )
    assert result.exit_code == 2 and "only 2 GPUs" in result.output, result.output
