"""Run a sweep: enumerate, skip what is infeasible or already stored, evaluate the rest on a
local process pool or on Ray, and store every point the moment it finishes.

The driver writes each finished point itself (:func:`commwall.sweep.store.write_point`, atomic),
so workers need no shared file system (Ray nodes may be other machines) and a sweep killed at
any moment keeps everything it finished: rerunning the same spec into the same directory skips
the stored points (their ids are content hashes of the resolved scenario) and computes only the
rest, and any stored point whose file fails its content check (:mod:`commwall.sweep.store`).
Records are identical whatever the executor or the number of workers, except ``seconds`` (the
wall time a point took).
"""

from __future__ import annotations

import multiprocessing
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass, field
from multiprocessing.context import BaseContext
from pathlib import Path
from typing import Any, Final

import yaml

from commwall.io.atomic import write_text_atomic
from commwall.sweep.evaluate import design_id, evaluate_point
from commwall.sweep.lifeline import die_with_parent
from commwall.sweep.spec import Point, SweepError, SweepSpec, feasible
from commwall.sweep.store import done_ids, write_point

__all__ = ["EXECUTORS", "SweepSummary", "plan", "run_sweep"]

EXECUTORS: Final = ("local", "ray")
#: Points in flight per worker on the local pool (keeps workers busy, bounds memory).
_IN_FLIGHT_PER_WORKER: Final = 4


@dataclass
class SweepSummary:
    """What a run of a sweep did."""

    out: str
    name: str
    executor: str
    workers: int
    points: int = 0
    skipped: int = 0
    duplicates: int = 0
    stored_before: int = 0
    computed: int = 0
    ok: int = 0
    invalid: int = 0
    errors: int = 0
    seconds: float = 0.0
    skipped_examples: list[dict[str, Any]] = field(default_factory=list)
    interrupted: bool = False

    @property
    def points_per_second(self) -> float:
        """Points computed per second of wall time."""
        return self.computed / self.seconds if self.seconds > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return {**self.__dict__, "points_per_second": self.points_per_second}


@dataclass(frozen=True)
class Plan:
    """The points still to compute, and why the others are not."""

    todo: list[Point]
    skipped: list[tuple[Point, str]]
    stored: int
    total: int
    duplicates: int = 0
    """Axis combinations that resolve to a design already in the sweep (computed once)."""


def plan(spec: SweepSpec, out: str | Path, *, stored: set[str] | None = None) -> Plan:
    """Enumerate ``spec``: points failing a constraint, points already stored in ``out`` (or
    the ids ``stored``, when the caller has checked the folder already), and the rest (each
    design once, even if two axis combinations resolve to the same scenario)."""
    if stored is None:
        stored = done_ids(out)
    todo: list[Point] = []
    skipped: list[tuple[Point, str]] = []
    seen: set[str] = set()
    already = total = duplicates = 0
    for point in spec.points():
        total += 1
        failed = feasible(spec, point)
        if failed is not None:
            skipped.append((point, failed))
            continue
        pid = design_id(point.config)
        if pid in seen:
            duplicates += 1
            continue
        seen.add(pid)
        if pid in stored:
            already += 1
        else:
            todo.append(point)
    return Plan(todo, skipped, already, total, duplicates)


def run_sweep(
    spec: SweepSpec,
    out: str | Path,
    *,
    executor: str = "local",
    jobs: int | None = None,
    address: str | None = None,
    limit: int | None = None,
    overwrite: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> SweepSummary:
    """Run ``spec`` into the directory ``out`` (module docstring).

    ``jobs`` workers (default: the CPUs; 1 runs in this process); ``limit`` computes at most
    that many new points; ``progress(done, todo)`` is called after each stored point.
    """
    if executor not in EXECUTORS:
        raise SweepError([f"executor: {executor!r}; allowed: {', '.join(EXECUTORS)}"])
    workers = jobs or os.cpu_count() or 1
    if workers < 1:
        raise SweepError([f"jobs: {jobs}; allowed: 1 or more"])
    folder = Path(out)
    with _locked(folder):
        _claim(folder, spec, overwrite)
        return _run(spec, folder, executor, jobs, workers, address, limit, progress)


def _run(
    spec: SweepSpec,
    folder: Path,
    executor: str,
    jobs: int | None,
    workers: int,
    address: str | None,
    limit: int | None,
    progress: Callable[[int, int], None] | None,
) -> SweepSummary:
    start = time.perf_counter()
    todo_plan = plan(spec, folder)
    todo = todo_plan.todo[:limit] if limit is not None else todo_plan.todo
    summary = SweepSummary(
        str(folder), spec.name, executor, workers, points=todo_plan.total,
        skipped=len(todo_plan.skipped), duplicates=todo_plan.duplicates,
        stored_before=todo_plan.stored,
        skipped_examples=[{"axes": p.axes, "constraint": c} for p, c in todo_plan.skipped[:5]],
    )  # fmt: skip
    results: Iterable[dict[str, Any]]
    if executor == "ray":
        results = _ray(todo, workers if jobs else None, address)
    elif workers == 1 or len(todo) <= 1:
        results = (evaluate_point(p.index, p.config, p.axes) for p in todo)
    else:
        results = _pool(todo, workers)
    try:
        for record in results:
            write_point(folder, record)
            summary.computed += 1
            status = record["status"]
            summary.ok += status == "ok"
            summary.invalid += status == "invalid"
            summary.errors += status == "error"
            if progress is not None:
                progress(summary.computed, len(todo))
    except KeyboardInterrupt:
        summary.interrupted = True
    except BrokenProcessPool:
        raise SweepError(
            [
                f"a worker died (out of memory?) after {summary.computed:,} points; every "
                "finished point is stored: rerun to continue, with fewer --jobs"
            ]
        ) from None
    finally:
        close = getattr(results, "close", None)
        if close is not None:
            close()
    summary.seconds = time.perf_counter() - start
    return summary


@contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """Hold ``SWEEP/.lock`` exclusively for the run: one driver writes a sweep at a time."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handle = (folder / ".lock").open("a+")
    except OSError as e:
        raise SweepError([f"out: cannot use {str(folder)!r}: {e.strerror or e}"]) from None
    with handle:
        try:
            import fcntl
        except ImportError:  # no flock (Windows): one writer is the user's to ensure
            yield
            return
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            raise SweepError(
                [f"out: {folder} is being written by {holder}; wait for it or write elsewhere"]
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"commwall sweep run (pid {os.getpid()})")
        handle.flush()
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _claim(folder: Path, spec: SweepSpec, overwrite: bool) -> None:
    """Make ``folder`` this sweep's: a new directory, or one holding the same spec (resume).
    Temporary files a killed run left behind (``points/.*.tmp``) are removed: one driver
    writes a sweep directory at a time."""
    marker = folder / "sweep.yaml"
    for stale in (folder / "points").glob(".*.tmp"):
        stale.unlink(missing_ok=True)
    text = yaml.safe_dump(spec.source, sort_keys=False)  # axes keep their order
    if marker.exists() and not overwrite:
        # the same spec: equal as data, and its axes in the same order (the order decides the
        # points' indices and, sampled, which points are drawn)
        stored = yaml.safe_load(marker.read_text(encoding="utf-8"))
        if stored != yaml.safe_load(text) or _axis_order(stored) != _axis_order(spec.source):
            raise SweepError(
                [
                    f"{folder} holds another sweep (its sweep.yaml differs); give another --out, "
                    "or --overwrite to replace its results"
                ]
            )
        return
    try:
        if overwrite:
            for old in (folder / "points").glob("*.parquet"):
                old.unlink()
        write_text_atomic(marker, text)
    except OSError as e:
        raise SweepError([f"out: cannot write {str(folder)!r}: {e.strerror or e}"]) from None


def _axis_order(source: Any) -> list[Any]:
    """The axes' names in order, and the zip groups in order (a group's own key order does
    not move any point)."""
    if not isinstance(source, dict):
        return []
    axes = source.get("axes")
    zips = source.get("zip") or []
    return [list(axes or {}) if isinstance(axes, dict) else axes,
            [sorted(g) if isinstance(g, dict) else g for g in zips]]  # fmt: skip


def _evaluate(args: tuple[int, dict[str, Any], dict[str, Any]]) -> dict[str, Any]:
    return evaluate_point(*args)


def pool_context(preload: Sequence[str]) -> BaseContext:
    """The start method of a local process pool whose workers call into ``preload``'s modules:
    forkserver, not fork (the driver runs threads — a progress bar — and forking a threaded
    process can copy a held lock into the child), its server importing ``preload`` once so each
    worker starts warm and dying with this driver (:mod:`commwall.sweep.lifeline`); spawn where
    forkserver is missing. Pair it with ``initializer=die_with_parent``."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    server = multiprocessing.get_context("forkserver")
    server.set_forkserver_preload(["commwall.sweep._forkserver_lifeline", *preload])
    return server


def _pool(todo: list[Point], workers: int) -> Iterator[dict[str, Any]]:
    """Evaluate on a local process pool, yielding records as they finish."""
    context = pool_context(["commwall.sweep.evaluate", "commwall.workload.simulate"])
    pending: set[Future[dict[str, Any]]] = set()
    queue = iter(todo)
    with ProcessPoolExecutor(
        max_workers=workers, mp_context=context, initializer=die_with_parent
    ) as pool:
        try:
            while True:
                while len(pending) < workers * _IN_FLIGHT_PER_WORKER:
                    point = next(queue, None)
                    if point is None:
                        break
                    pending.add(pool.submit(_evaluate, (point.index, point.config, point.axes)))
                if not pending:
                    return
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in sorted(done, key=lambda f: f.result()["index"]):
                    yield future.result()
        finally:
            for future in pending:
                future.cancel()


def _ray(todo: list[Point], workers: int | None, address: str | None) -> Iterator[dict[str, Any]]:
    """Evaluate on Ray (a local instance, or the cluster at ``address``)."""
    try:
        import ray
    except ImportError:
        raise SweepError(["executor: ray is not installed; pip install 'commwall[ray]'"]) from None
    started = not ray.is_initialized()
    if started:
        options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False,
                                   "configure_logging": False}  # fmt: skip
        if address:
            options["address"] = address
        elif workers:
            options["num_cpus"] = workers
        try:
            ray.init(**options)
        except (ConnectionError, RuntimeError, ValueError) as e:
            raise SweepError([f"address {address or '(local)'}: Ray did not start: {e}"]) from None
    remote = ray.remote(num_cpus=1)(evaluate_point)
    try:
        pending = [remote.remote(p.index, p.config, p.axes) for p in todo]
        while pending:
            done, pending = ray.wait(pending, num_returns=min(len(pending), 16), timeout=0.5)
            yield from sorted(ray.get(done), key=lambda r: r["index"])
    finally:
        if started:
            ray.shutdown()
