"""Real collectives timed with torch.distributed (gloo on this CPU), checked and read back."""

from __future__ import annotations

import pytest

from commwall.collectives.ops import Op, busbw_factor
from commwall.errors import CommwallError
from commwall.io.nccl_tests import format_nccl_tests, parse_nccl_tests
from commwall.measure import (
    MeasureConfig,
    MeasureConfigError,
    MeasureError,
    measure,
    measurement_sizes,
)
from commwall.measure.bench import _last_error, usable_cpus

#: a CPU this process may use (all ranks pinned to it)
CPU = min(usable_cpus())
needs_torch = pytest.mark.skipif(
    __import__("importlib").util.find_spec("torch") is None, reason="torch not installed"
)


def test_sizes_follow_nccl_tests_rounding() -> None:
    c = MeasureConfig(min_bytes=1000, max_bytes=8000)
    assert measurement_sizes(c, Op.ALL_REDUCE) == [
        (1000, 250),
        (2000, 500),
        (4000, 1000),
        (8000, 2000),
    ]
    # split ops: whole elements for every rank
    a2a = MeasureConfig(nprocs=4, min_bytes=100, max_bytes=100, factor=3)
    assert measurement_sizes(a2a, Op.ALLTOALL) == [(96, 6)]


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [("backend", "mpi", "backend"), ("nprocs", 0, "nprocs"), ("min_bytes", 2, "min"),
     ("max_bytes", 10, "max"), ("factor", 1, "factor"), ("iters", 0, "iters"),
     ("stat", "max", "stat"), ("cpus", (-1,), "cpus"), ("cpus", (4096,), "allowed: this"),
     ("timeout_s", 0, "timeout"), ("ops", (), "op")],
)  # fmt: skip
def test_bad_configs_name_the_field(field: str, value: object, message: str) -> None:
    with pytest.raises(MeasureConfigError, match=message) as info:
        MeasureConfig(**{field: value})  # type: ignore[arg-type]
    assert isinstance(info.value, CommwallError) and isinstance(info.value, ValueError)


def test_sizes_that_round_to_the_same_buffer_are_measured_once() -> None:
    c = MeasureConfig(nprocs=3, min_bytes=4, max_bytes=16)
    assert measurement_sizes(c, Op.ALL_GATHER) == [(12, 1)]


def test_sendrecv_needs_two_ranks() -> None:
    with pytest.raises(MeasureConfigError, match="sendrecv"):
        MeasureConfig(ops=(Op.SENDRECV,), nprocs=1)


def test_a_failed_rank_reports_its_last_error_line(tmp_path: object) -> None:
    from pathlib import Path

    err = Path(str(tmp_path)) / "rank1.err"
    err.write_text("Traceback ...\n  UserWarning: x\nRuntimeError: connection refused\n")
    assert _last_error(err) == "RuntimeError: connection refused"
    assert _last_error(Path(str(tmp_path)) / "missing.err") == "no output"


def _small(*ops: Op, **extra: object) -> MeasureConfig:
    return MeasureConfig(ops=ops, nprocs=2, min_bytes=1024, max_bytes=8192, warmup=1, iters=3,
                         cpus=(CPU,), **extra)  # type: ignore[arg-type]  # fmt: skip


@needs_torch
def test_real_all_reduce_is_timed_checked_and_read_back() -> None:
    (run,) = measure(_small(Op.ALL_REDUCE, stat="mean"))
    assert [r.size for r in run.rows] == [1024, 2048, 4096, 8192]
    assert run.backend == "gloo" and run.ranks == 2 and run.op == "all_reduce"
    for r in run.rows:
        t = r.out_of_place
        assert t.check == 0  # every element of every rank right
        assert t.time_us > 0
        assert t.algbw_GBps == pytest.approx(r.size / (t.time_us * 1e-6) / 1e9)
        assert t.busbw_GBps == pytest.approx(t.algbw_GBps * busbw_factor(Op.ALL_REDUCE, 2))
    text = format_nccl_tests(run, preamble="commwall measure test: backend gloo")
    again = parse_nccl_tests(text).runs[0]
    assert again.backend == "gloo" and again.op == "all_reduce" and again.ranks == 2
    assert [r.size for r in again.rows] == [r.size for r in run.rows]


@needs_torch
def test_every_operation_returns_right_results() -> None:
    ops = [o for o in Op if o is not Op.ALL_REDUCE]
    runs = measure(_small(*ops))
    assert [r.op for r in runs] == [o.value for o in ops]
    for op, run in zip(ops, runs, strict=True):
        assert run.rows and all(r.out_of_place.check == 0 for r in run.rows), op
        assert run.rows[0].redop == ("sum" if op in (Op.REDUCE_SCATTER, Op.REDUCE) else "none")
        assert run.rows[0].root == (0 if op in (Op.BROADCAST, Op.REDUCE) else -1)


@needs_torch
def test_nccl_backend_without_gpus_is_a_clear_error() -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("GPUs present")
    with pytest.raises(MeasureError, match=r"rank \d failed: .*CUDA"):
        measure(_small(Op.ALL_REDUCE, backend="nccl"))
