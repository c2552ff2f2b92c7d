"""Time real collectives like nccl-tests, with torch.distributed processes on this machine.

What is measured follows nccl-tests (``src/common.cu``, ``doc/PERFORMANCE.md``):

* sizes from ``min_bytes`` to ``max_bytes``, multiplied by ``factor`` each time (``-b -e -f``),
  rounded down to whole elements for every rank (all-gather, reduce-scatter and all-to-all
  split the buffer in ``nprocs`` parts, as nccl-tests' ``*GetCollByteCount`` do);
* ``warmup`` untimed calls, then ``iters`` timed calls. ``stat="mean"`` is nccl-tests' own
  measure: the calls run back to back and the time is the elapsed time over ``iters``.
  ``stat="median"`` (the default) times every call on its own and keeps the median, which a
  shared CPU's scheduling tail cannot move (on a 2-vCPU VM gloo's 1 KiB all-reduce has a
  p50 of ~0.6 ms and a p90 of ~4 ms: the mean would measure the scheduler). Either is then
  averaged over the ranks (nccl-tests' default ``-a 1``);
* ``algbw = size / time`` and ``busbw = algbw × factor(op, n)``
  (:func:`commwall.collectives.ops.busbw_factor`);
* one more call on known data checks the result; ``#wrong`` counts wrong elements over all ranks.

``size`` is the whole buffer, as nccl-tests prints it: an all-gather of ``size`` bytes gathers
``size / n`` from each rank. torch's ``all_reduce``, ``broadcast`` and ``reduce`` work in place;
the others write a separate output buffer. Ranks are separate Python processes
(``python -m commwall.measure.bench``) with one intra-op thread each, meeting through a file
store in a temporary directory.
"""

from __future__ import annotations

import importlib.util
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final

from commwall.collectives.ops import Op, busbw_factor
from commwall.errors import CommwallError
from commwall.io.nccl_tests import NcclTestsRow, NcclTestsRun, Timing

#: Bytes per element of the measured data type (float32, nccl-tests' default ``-d float``).
TYPE_SIZE: Final = 4
BACKENDS: Final = ("gloo", "nccl")
#: How a size's time is summarised over its iterations.
STATS: Final = ("median", "mean")
#: Operations whose buffer splits into one part per rank.
_SPLIT: Final = (Op.ALL_GATHER, Op.REDUCE_SCATTER, Op.ALLTOALL)


class MeasureError(CommwallError, RuntimeError):
    """A measurement could not run (no torch, a worker failed or hung); the message says why."""


class MeasureConfigError(CommwallError, ValueError):
    """A measurement input is wrong; the message names the value, the problem and what is allowed."""


@dataclass(frozen=True)
class MeasureConfig:
    """What to measure (defaults: nccl-tests' ``-w 5 -n 20 -f 2``)."""

    backend: str = "gloo"
    nprocs: int = 4
    ops: tuple[Op, ...] = (Op.ALL_REDUCE,)
    min_bytes: int = 1024
    max_bytes: int = 64 << 20
    factor: int = 2
    warmup: int = 5
    iters: int = 20
    check: bool = True
    timeout_s: float = 600.0
    stat: str = "median"
    cpus: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        problems = []
        if self.backend not in BACKENDS:
            problems.append(f"backend: {self.backend!r}; allowed: {', '.join(BACKENDS)}")
        if not 1 <= self.nprocs <= 256:
            problems.append(f"nprocs: {self.nprocs}; allowed: 1 to 256")
        if not self.ops:
            problems.append("op: none given; allowed: one or more of " + ", ".join(Op))
        if Op.SENDRECV in self.ops and self.nprocs < 2:
            problems.append("nprocs: sendrecv needs at least 2 processes")
        if self.min_bytes < TYPE_SIZE:
            problems.append(f"min: {self.min_bytes} B; allowed: at least {TYPE_SIZE} B")
        if self.max_bytes < self.min_bytes:
            problems.append(f"max: {self.max_bytes} B is below min {self.min_bytes} B")
        if self.max_bytes > 16 << 30:
            problems.append(f"max: {self.max_bytes} B; allowed: at most 16 GiB")
        if self.factor < 2:
            problems.append(f"factor: {self.factor}; allowed: 2 or more")
        if self.warmup < 0 or self.iters < 1:
            problems.append(f"warmup {self.warmup} / iters {self.iters}: need >= 0 and >= 1")
        if self.stat not in STATS:
            problems.append(f"stat: {self.stat!r}; allowed: {', '.join(STATS)}")
        allowed = usable_cpus()
        if any(c not in allowed for c in self.cpus):
            problems.append(
                f"cpus: {','.join(map(str, self.cpus))}; allowed: this process's CPUs "
                f"{','.join(map(str, sorted(allowed)))}"
            )
        if self.timeout_s <= 0:
            problems.append(f"timeout: {self.timeout_s} s; allowed: > 0")
        if problems:
            raise MeasureConfigError("; ".join(problems))


def usable_cpus() -> set[int]:
    """The CPUs this process may run on (its affinity mask; every CPU where there is none)."""
    if hasattr(os, "sched_getaffinity"):
        return set(os.sched_getaffinity(0))
    return set(range(os.cpu_count() or 1))


def torch_available() -> bool:
    """Whether ``torch.distributed`` can be imported (the optional ``commwall[torch]`` extra)."""
    return importlib.util.find_spec("torch") is not None


def measurement_sizes(config: MeasureConfig, op: Op) -> list[tuple[int, int]]:
    """``(size in bytes, elements per rank)`` for every measured size of ``op`` (module doc).

    >>> measurement_sizes(MeasureConfig(nprocs=3, min_bytes=1000, max_bytes=4000), Op.ALL_GATHER)
    [(996, 83), (1992, 166), (3984, 332)]
    """
    parts = config.nprocs if op in _SPLIT else 1
    out: list[tuple[int, int]] = []
    size = config.min_bytes
    while size <= config.max_bytes:
        count = max(1, size // (TYPE_SIZE * parts))
        if not out or out[-1][1] != count:  # small sizes may round to the same buffer
            out.append((count * TYPE_SIZE * parts, count))
        size *= config.factor
    return out


def measure(config: MeasureConfig) -> list[NcclTestsRun]:
    """Run ``config`` on this machine: one nccl-tests run per operation (module docstring).
    The ranks start once and measure the operations one after the other."""
    if not torch_available():
        raise MeasureError(
            "torch is not installed; install the optional extra: pip install 'commwall[torch]'"
        )
    with tempfile.TemporaryDirectory(prefix="commwall-measure-") as tmp:
        work = Path(tmp)
        (work / "config.json").write_text(json.dumps(asdict(config)))
        env = {**os.environ, "OMP_NUM_THREADS": "1"}
        procs = []
        for rank in range(config.nprocs):
            log = (work / f"rank{rank}.err").open("wb")
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-m", "commwall.measure.bench", str(work), str(rank)],
                    stdout=subprocess.DEVNULL,
                    stderr=log,
                    env=env,
                )
            )
            log.close()
        try:
            _wait(config, procs, work)
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                p.wait()
        payload: dict[str, Any] = json.loads((work / "rank0.json").read_text())
    return [_run_from(config, op, payload) for op in config.ops]


def _wait(config: MeasureConfig, procs: list[subprocess.Popen[bytes]], work: Path) -> None:
    """Wait for every rank; the first failure (its last error line) or a timeout is raised."""
    deadline = time.monotonic() + config.timeout_s
    while True:
        codes = [p.poll() for p in procs]
        failed = [i for i, c in enumerate(codes) if c not in (None, 0)]
        if failed:
            rank = failed[0]
            raise MeasureError(f"rank {rank} failed: {_last_error(work / f'rank{rank}.err')}")
        if all(c == 0 for c in codes):
            return
        if time.monotonic() > deadline:
            raise MeasureError(
                f"the measurement did not finish within {config.timeout_s:g} s; "
                "raise --timeout or lower --max"
            )
        time.sleep(0.05)


def _last_error(path: Path) -> str:
    """The last non-warning line a failed rank wrote to stderr."""
    try:
        lines = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return "no output"
    useful = [ln for ln in lines if ln.strip() and "Warning" not in ln and "warn(" not in ln]
    return useful[-1].strip() if useful else "no output (exit without a message)"


def _run_from(config: MeasureConfig, op: Op, payload: dict[str, Any]) -> NcclTestsRun:
    """Rank 0's timings of ``op`` as an nccl-tests run."""
    n = config.nprocs
    run = NcclTestsRun("commwall measure", 0, op.value, 1, 1)
    run.backend = config.backend
    run.nccl_version = payload.get("nccl_version")
    run.devices = [(r, payload["host"], payload["device"]) for r in range(n)]
    redop = "sum" if op in (Op.ALL_REDUCE, Op.REDUCE_SCATTER, Op.REDUCE) else "none"
    root = 0 if op in (Op.BROADCAST, Op.REDUCE) else -1
    busbws = []
    for size, count, seconds, wrong in payload["rows"][op.value]:
        alg = size / seconds / 1e9
        bus = alg * busbw_factor(op, n)
        busbws.append(bus)
        timing = Timing(seconds * 1e6, alg, bus, None if wrong is None else float(wrong))
        run.rows.append(NcclTestsRow(0, size, count, "float", redop, root, timing, None))
    run.avg_busbw_GBps = sum(busbws) / len(busbws) if busbws else None
    return run


def _cpu_name() -> str:
    """The host CPU's model name (``/proc/cpuinfo``), else the platform's."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "cpu"


def _worker(work: Path, rank: int) -> None:
    """One rank: join the group, time every size; rank 0 writes the rows to ``rank0.json``."""
    config = json.loads((work / "config.json").read_text())
    config["ops"] = tuple(Op(o) for o in config["ops"])
    config["cpus"] = tuple(config["cpus"])
    payload = _measure_rank(rank, MeasureConfig(**config), str(work / "store"))
    if payload is not None:
        tmp = work / "rank0.json.tmp"
        tmp.write_text(json.dumps(payload))
        tmp.replace(work / "rank0.json")


def _measure_rank(rank: int, config: MeasureConfig, store: str) -> dict[str, Any] | None:
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    if config.cpus and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {config.cpus[rank % len(config.cpus)]})
    n = config.nprocs
    cuda = config.backend == "nccl"
    if cuda:
        if not torch.cuda.is_available():
            raise MeasureError("backend nccl needs CUDA GPUs; none are visible (use gloo)")
        torch.cuda.set_device(rank % torch.cuda.device_count())
    device = torch.device("cuda") if cuda else torch.device("cpu")
    dist.init_process_group(config.backend, init_method=f"file://{store}", rank=rank, world_size=n)
    try:
        rows: dict[str, list[tuple[int, int, float, int | None]]] = {}
        for op, size, count in _plan(config):
            call, check = _collective(op, count, n, rank, device)
            sync: Callable[[], None] = torch.cuda.synchronize if cuda else (lambda: None)
            for _ in range(config.warmup):
                call()
            sync()
            dist.barrier()
            if config.stat == "mean":
                start = time.perf_counter()
                for _ in range(config.iters):
                    call()
                sync()
                elapsed = (time.perf_counter() - start) / config.iters
            else:
                times = []
                for _ in range(config.iters):
                    start = time.perf_counter()
                    call()
                    sync()
                    times.append(time.perf_counter() - start)
                elapsed = statistics.median(times)
            stats = torch.tensor(
                [elapsed, check() if config.check else 0.0], dtype=torch.float64, device=device
            )
            dist.all_reduce(stats)
            wrong = int(stats[1].item()) if config.check else None
            rows.setdefault(op.value, []).append((size, count, float(stats[0].item()) / n, wrong))
        if rank != 0:
            return None
        name = torch.cuda.get_device_name() if cuda else _cpu_name()
        version = None
        if cuda:
            v = torch.cuda.nccl.version()  # type: ignore[no-untyped-call]
            version = ".".join(str(x) for x in v) if isinstance(v, tuple) else str(v)
        return {"rows": rows, "host": socket.gethostname(), "device": name,
                "nccl_version": version}  # fmt: skip
    finally:
        dist.destroy_process_group()


def _plan(config: MeasureConfig) -> list[tuple[Op, int, int]]:
    """Every (operation, size, elements per rank) to measure, in order."""
    return [(op, size, count) for op in config.ops for size, count in measurement_sizes(config, op)]


def _collective(
    op: Op, count: int, n: int, rank: int, device: Any
) -> tuple[Callable[[], object], Callable[[], float]]:
    """The timed call for ``op`` and a check that counts wrong elements after one call on known
    data (each rank contributes ``rank + 1``)."""
    import torch
    import torch.distributed as dist

    def full(c: int, value: float) -> Any:
        return torch.full((c,), float(value), dtype=torch.float32, device=device)

    def wrong(got: Any, expect: Any) -> float:
        return float((got != expect).sum().item())

    total = n * (n + 1) / 2
    if op is Op.ALL_REDUCE:
        x = full(count, 0.0)  # in place: zeros stay zeros however many calls run

        def check() -> float:
            y = full(count, rank + 1)
            dist.all_reduce(y)
            return wrong(y, total)

        return (lambda: dist.all_reduce(x)), check
    if op is Op.ALL_GATHER:
        src, dst = full(count, 1.0), full(count * n, 0.0)

        def check() -> float:
            out = full(count * n, 0.0)
            dist.all_gather_into_tensor(out, full(count, rank + 1))
            expect = torch.arange(1, n + 1, device=device, dtype=torch.float32)
            return wrong(out, expect.repeat_interleave(count))

        return (lambda: dist.all_gather_into_tensor(dst, src)), check
    if op is Op.REDUCE_SCATTER:
        rs = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor
        src, dst = full(count * n, 1.0), full(count, 0.0)

        def check() -> float:
            out = full(count, 0.0)
            rs(out, full(count * n, rank + 1))
            return wrong(out, total)

        return (lambda: rs(dst, src)), check
    if op is Op.ALLTOALL:
        src, dst = full(count * n, 1.0), full(count * n, 0.0)

        def check() -> float:
            blocks = torch.arange(n, device=device, dtype=torch.float32) + rank * n
            out = full(count * n, 0.0)
            dist.all_to_all_single(out, blocks.repeat_interleave(count))
            expect = torch.arange(n, device=device, dtype=torch.float32) * n + rank
            return wrong(out, expect.repeat_interleave(count))

        return (lambda: dist.all_to_all_single(dst, src)), check
    if op is Op.BROADCAST:
        x = full(count, 1.0)

        def check() -> float:
            y = full(count, 7.0 if rank == 0 else 0.0)
            dist.broadcast(y, 0)
            return wrong(y, 7.0)

        return (lambda: dist.broadcast(x, 0)), check
    if op is Op.REDUCE:
        x = full(count, 0.0)

        def check() -> float:
            y = full(count, rank + 1)
            dist.reduce(y, 0)
            return wrong(y, total) if rank == 0 else 0.0

        return (lambda: dist.reduce(x, 0)), check
    # sendrecv: every rank sends to the next and receives from the previous (sendrecv_perf)
    nxt, prev = (rank + 1) % n, (rank - 1) % n
    src, dst = full(count, 1.0), full(count, 0.0)

    def exchange(send: Any, recv: Any) -> None:
        ops = [dist.P2POp(dist.isend, send, nxt), dist.P2POp(dist.irecv, recv, prev)]
        for req in dist.batch_isend_irecv(ops):
            req.wait()

    def check_exchange() -> float:
        out = full(count, 0.0)
        exchange(full(count, rank + 1), out)
        return wrong(out, prev + 1)

    return (lambda: exchange(src, dst)), check_exchange


def default_nprocs() -> int:
    """Processes for a default run: 4, or fewer on a machine with fewer cores."""
    return max(2, min(4, os.cpu_count() or 2))


if __name__ == "__main__":  # a rank launched by measure()
    _worker(Path(sys.argv[1]), int(sys.argv[2]))
