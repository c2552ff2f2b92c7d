"""``commwall measure``: a real gloo measurement, its log, and bad input."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from commwall.cli import app
from commwall.io.nccl_tests import read_nccl_tests
from commwall.measure.bench import usable_cpus

runner = CliRunner()
#: a CPU this process may use (all ranks pinned to it: see commwall.measure.bench)
CPU = min(usable_cpus())
needs_torch = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None, reason="torch not installed"
)


@needs_torch
def test_two_operations_in_one_launch_written_as_a_log(tmp_path: Path) -> None:
    log = tmp_path / "gloo.log"
    args = ["measure", "--nprocs", "2", "--op", "all_reduce,alltoall", "--min", "1KiB",
            "--max", "4KiB", "--warmup", "1", "--iters", "3", "--cpus", str(CPU), "--out", str(log),
            "--json"]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [r["op"] for r in data["runs"]] == ["all_reduce", "alltoall"]
    assert all(row["wrong"] == 0 for r in data["runs"] for row in r["rows"])
    back = read_nccl_tests([log])
    assert [r.op for r in back.runs] == ["all_reduce", "alltoall"] and not back.problems
    assert all(r.backend == "gloo" and r.ranks == 2 for r in back.runs)
    assert [row.size for row in back.runs[1].rows] == [1024, 2048, 4096]


@pytest.mark.parametrize(
    ("args", "message"),
    [(["--op", "allreduce_v"], "--op"), (["--min", "big"], "--min"),
     (["--cpus", "a,b"], "--cpus"), (["--backend", "mpi"], "backend"),
     (["--min", "1MiB", "--max", "1KiB"], "--max"), (["--nprocs", "0"], "--nprocs"),
     (["--cpus", "4096"], "--cpus: 4096"), (["--out", "/no/such/dir/m.log"], "--out")],
)  # fmt: skip
def test_bad_input_is_one_line(args: list[str], message: str) -> None:
    result = runner.invoke(app, ["measure", *args])
    assert result.exit_code == 2
    assert message in result.output and "Traceback" not in result.output
