"""``commwall nccl-tests``: a log read back, set beside the model, and bad input."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from commwall.cli import app
from commwall.io.nccl_tests import SAMPLE

runner = CliRunner()


def _log(tmp_path: Path, text: str = SAMPLE, name: str = "run.log") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_log_beside_the_model(tmp_path: Path) -> None:
    args = ["nccl-tests", _log(tmp_path), "--cluster", "dgx-h100", "--nodes", "2",
            "--gpus-per-node", "1", "--json"]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    run = json.loads(result.stdout)["runs"][0]
    assert run["op"] == "all_reduce" and run["ranks"] == run["model_ranks"] == 2
    row = run["rows"][1]
    assert row["busbw_GBps"] == 12.5
    # error = predicted / measured - 1, from the model's own busbw
    assert row["error"] == row["predicted_busbw_GBps"] / 12.5 - 1
    assert run["median_abs_error_large"] is not None


def test_table_without_a_cluster_and_skipped_lines(tmp_path: Path) -> None:
    text = SAMPLE + "     4194304       1048576     float\n"
    result = runner.invoke(app, ["nccl-tests", _log(tmp_path, text)])
    assert result.exit_code == 0, result.output
    assert "all_reduce on 2 ranks" in result.output and "busbw GB/s" in result.output
    assert "1 line(s) skipped" in result.output and "run.log:" in result.output


def test_bad_input(tmp_path: Path) -> None:
    for args, message in (
        (["nccl-tests", str(tmp_path / "missing.log")], "cannot read it"),
        (["nccl-tests", _log(tmp_path, "hello\n", "empty.log")], "no nccl-tests result rows"),
        (["nccl-tests", _log(tmp_path), "--op", "gossip"], "--op"),
        (["nccl-tests", _log(tmp_path), "--cluster", "nope"], "nope"),
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == 2, result.output
        assert message in result.output and "Traceback" not in result.output


def test_an_unnamed_tagged_log_says_how_its_operation_was_read(tmp_path: Path) -> None:
    # mpirun --tag-output prefixes every line; the binary's name is nowhere in the log.
    body = "\n".join(
        line for line in SAMPLE.splitlines() if "all_reduce" not in line and "starting" not in line
    )
    text = "".join(f"[1,0]<stdout>:{line}\n" for line in body.splitlines())
    result = runner.invoke(app, ["nccl-tests", _log(tmp_path, text, "job.out")])
    assert result.exit_code == 0, result.output
    assert "all_reduce on 2 ranks" in result.output
    assert "does not name its binary" in result.output and "all_reduce" in result.output
    data = json.loads(runner.invoke(app, ["nccl-tests", _log(tmp_path, text, "job.out"),
                                          "--json"]).stdout)  # fmt: skip
    assert data["runs"][0]["op_inferred"] and data["runs"][0]["gpus_per_process"] == 1


def test_the_logs_nccl_channels_are_set_beside_the_models(tmp_path: Path) -> None:
    """A user's NCCL_DEBUG=INFO line is held against the communicator the model builds: one
    H100 a node runs 4 coll and 4 p2p channels per peer (NCCL's doubled graph search), so a
    log that reads 2 is named as different."""
    version = "node1:1001:1001 [0] NCCL INFO NCCL version 2.18.3+cuda12.2\n"
    info = (
        "node1:1001:1010 [0] NCCL INFO {0} coll channels, {0} collnet channels, 0 nvls channels, "
        "{0} p2p channels, {0} p2p channels per peer\n"
    )
    args = ["nccl-tests", "--cluster", "dgx-h100", "--nodes", "2", "--gpus-per-node", "1"]
    same = _log(tmp_path, SAMPLE.replace(version, version + info.format(4)), "same.log")
    result = runner.invoke(app, [*args, same, "--json"])
    assert result.exit_code == 0, result.output
    run = json.loads(result.stdout)["runs"][0]
    assert run["nccl_channels"] == run["model_nccl_channels"]
    assert run["model_nccl_channels"] == {
        "coll": 4, "collnet": 4, "nvls": 0, "p2p": 4, "p2p_per_peer": 4,
    }  # fmt: skip
    result = runner.invoke(app, [*args, same])
    assert "NCCL channels (log): 4 coll" in result.output and "note:" not in result.output
    other = _log(tmp_path, SAMPLE.replace(version, version + info.format(2)), "other.log")
    result = runner.invoke(app, [*args, other])
    assert result.exit_code == 0, result.output
    out = " ".join(result.output.split())
    assert "NCCL channels (model): 4 coll" in out
    assert "coll 2 vs 4; p2p 2 vs 4; p2p per peer 2 vs 4" in out


def test_the_logs_nccl_settings_drive_the_model_and_env_overrides_them(tmp_path: Path) -> None:
    version = "node1:1001:1001 [0] NCCL INFO NCCL version 2.18.3+cuda12.2\n"
    note = "node1:1001:1010 [0] NCCL INFO {} set by environment to {}\n"
    text = SAMPLE.replace(
        version,
        version + note.format("NCCL_PROTO", "LL") + note.format("NCCL_IB_HCA", "mlx5_0"),
    )
    args = ["nccl-tests", _log(tmp_path, text), "--cluster", "dgx-h100", "--nodes", "2",
            "--gpus-per-node", "1"]  # fmt: skip
    run = json.loads(runner.invoke(app, [*args, "--json"]).stdout)["runs"][0]
    assert run["nccl_env"] == {"NCCL_PROTO": "LL", "NCCL_IB_HCA": "mlx5_0"}
    assert run["nccl_env_seen"]["not_read"] == ["NCCL_IB_HCA"]
    assert {r["algo"].split("/")[1] for r in run["rows"]} == {"LL"}
    result = runner.invoke(app, [*args, "--env", "NCCL_PROTO=Simple", "--json"])
    assert result.exit_code == 0, result.output
    run = json.loads(result.stdout)["runs"][0]
    assert {r["algo"].split("/")[1] for r in run["rows"]} == {"Simple"}
    shown = runner.invoke(app, args).output
    assert "NCCL settings applied to the model: NCCL_PROTO=LL" in shown
    assert "does not read: NCCL_IB_HCA" in shown
    bad = runner.invoke(app, [*args, "--env", "PROTO=LL"])
    assert bad.exit_code == 2 and "--env: 'PROTO=LL' is not a setting" in bad.output


def test_each_run_is_priced_on_its_own_hosts_and_ranks(tmp_path: Path) -> None:
    """Without --nodes / --gpus-per-node the model takes the log's shape (SAMPLE: two hosts, one
    rank each); a GPU other than the cluster's is named; given options win over the log."""
    args = ["nccl-tests", _log(tmp_path), "--json"]
    run = json.loads(runner.invoke(app, [*args, "--cluster", "dgx-h100"]).stdout)["runs"][0]
    assert run["model_ranks"] == run["ranks"] == 2 and run["log_gpu"] == "h100-sxm"
    assert run["model_shape"] == {"domains": 2, "ranks_per_domain": 1}
    forced = runner.invoke(app, [*args, "--cluster", "dgx-h100", "--nodes", "1"])
    assert json.loads(forced.stdout)["runs"][0]["model_ranks"] == 8
    other = runner.invoke(app, [*args[:2], "--cluster", "dgx-b200"])
    assert "the log's GPUs are h100-sxm, the model's b200" in " ".join(other.output.split())


def test_doctests() -> None:
    import doctest

    from commwall.commands import nccl_tests

    assert doctest.testmod(nccl_tests).failed == 0
