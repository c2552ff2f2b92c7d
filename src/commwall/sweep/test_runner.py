"""Running sweeps: every point stored once, resume after a kill, identical across executors."""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from commwall.sweep.runner import plan, run_sweep
from commwall.sweep.spec import SweepError, parse_sweep
from commwall.sweep.store import done_ids, read_points

ROOT = Path(__file__).parents[3]
SPEC = {
    "name": "pcie nics",
    "base": "examples/llama3-8b-ddp-pcie.yaml",
    "axes": {"cluster.nics_per_node": [1, 2, 4], "cluster.topology.oversubscription": [1, 3]},
    "zip": [{"job.dp": [64, 32], "cluster.nodes": [8, 4]}],
}


def without_seconds(records: list[dict[str, object]]) -> list[dict[str, object]]:
    return [{k: v for k, v in r.items() if k != "seconds"} for r in records]


MANY = {**SPEC, "base": str(ROOT / SPEC["base"]),  # type: ignore[operator]
        "axes": {"cluster.nics_per_node": [1, 2, 4, 8],
                 "cluster.topology.oversubscription": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]}}  # fmt: skip


def _start_sweep(tmp_path: Path, jobs: int) -> tuple[subprocess.Popen[bytes], Path]:
    """``commwall sweep run`` of the 80 designs of :data:`MANY` in its own session; its output
    folder."""
    import yaml

    spec_file = tmp_path / "s.yaml"
    spec_file.write_text(yaml.safe_dump(MANY, sort_keys=False))
    out = tmp_path / "out"
    cmd = [sys.executable, "-c", "from commwall.cli import main; main()", "sweep", "run",
           str(spec_file), "--out", str(out), "--jobs", str(jobs)]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)  # fmt: skip
    return proc, out


def test_every_point_stored_once_and_a_rerun_computes_nothing(tmp_path: Path) -> None:
    spec = parse_sweep(SPEC, root=ROOT)
    first = run_sweep(spec, tmp_path, jobs=1)
    assert first.points == first.computed == 12 and first.ok == 12
    records = read_points(tmp_path)
    assert [r["index"] for r in records] == list(range(12))
    assert len({r["point_id"] for r in records}) == 12
    again = run_sweep(spec, tmp_path, jobs=2)
    assert again.computed == 0 and again.stored_before == 12
    # two NICs instead of one per node can only help the gradient all-reduce
    by = {(r["cluster.nics_per_node"], r["cluster.topology.oversubscription"], r["job.dp"]): r
          for r in records}  # fmt: skip
    assert by[(2, 1, 64)]["step_time_s"] <= by[(1, 1, 64)]["step_time_s"]


def test_pool_and_in_process_runs_store_identical_records(tmp_path: Path) -> None:
    spec = parse_sweep(SPEC, root=ROOT)
    run_sweep(spec, tmp_path / "one", jobs=1)
    run_sweep(spec, tmp_path / "two", jobs=2)
    assert without_seconds(read_points(tmp_path / "one")) == without_seconds(
        read_points(tmp_path / "two")
    )


def test_invalid_points_are_stored_with_the_reason(tmp_path: Path) -> None:
    spec = parse_sweep({**SPEC, "zip": [], "axes": {"job.dp": [64, 63], "cluster.mtu": [4096]},
                        "constraints": []}, root=ROOT)  # fmt: skip
    summary = run_sweep(spec, tmp_path, jobs=1)
    assert (summary.ok, summary.invalid) == (1, 1)
    bad = next(r for r in read_points(tmp_path) if r["status"] == "invalid")
    assert "job.dp" in str(bad["error"]) and bad.get("step_time_s") is None


def test_another_sweep_in_the_same_directory_is_refused(tmp_path: Path) -> None:
    run_sweep(parse_sweep(SPEC, root=ROOT), tmp_path, jobs=1, limit=1)
    other = parse_sweep({**SPEC, "name": "other"}, root=ROOT)
    with pytest.raises(SweepError, match="holds another sweep"):
        run_sweep(other, tmp_path, jobs=1)
    replaced = run_sweep(other, tmp_path, jobs=1, overwrite=True, limit=2)
    assert replaced.stored_before == 0 and len(done_ids(tmp_path)) == 2


def test_a_killed_sweep_resumes_without_losing_or_recomputing_points(tmp_path: Path) -> None:
    """Kill the CLI mid-sweep (SIGKILL: no clean-up), then rerun: the stored points are kept,
    none is half-written, and only the rest is computed."""
    proc, out = _start_sweep(tmp_path, jobs=1)
    deadline = time.monotonic() + 120
    while len(done_ids(out)) < 3 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.01)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    kept = done_ids(out)
    assert 3 <= len(kept) < 80, "the kill should land mid-sweep"
    assert all(len(r) > 5 for r in read_points(out))  # every stored file reads whole
    spec = parse_sweep(MANY)
    assert len(plan(spec, out).todo) == 80 - len(kept)
    resumed = run_sweep(spec, out, jobs=2)
    assert resumed.stored_before == len(kept) and resumed.computed == 80 - len(kept)
    assert len(done_ids(out)) == 80
    assert not [p for p in (out / "points").iterdir() if p.name.startswith(".")]


def _children(pid: int) -> set[int]:
    """Every live descendant of ``pid`` (from /proc)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            parents[int(entry.name)] = int(fields[1])
    found, frontier = set(), {pid}
    while frontier:
        frontier = {c for c, p in parents.items() if p in frontier} - found
        found |= frontier
    return found


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has exited


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_no_pool_process_outlives_a_killed_driver(tmp_path: Path, sig: signal.Signals) -> None:
    """Kill only the driver (not its process group): the forkserver and the workers follow it."""
    proc, out = _start_sweep(tmp_path, jobs=2)
    deadline = time.monotonic() + 120
    pool: set[int] = set()
    while time.monotonic() < deadline and proc.poll() is None:
        pool = _children(proc.pid)
        if len(pool) >= 3 and done_ids(out):  # forkserver + 2 workers, and work under way
            break
        time.sleep(0.05)
    assert len(pool) >= 3 and proc.poll() is None, "the pool should be running"
    os.kill(proc.pid, sig)
    proc.wait()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and any(_alive(p) for p in pool):
        time.sleep(0.1)
    survivors = [p for p in pool if _alive(p)]
    for p in survivors:  # do not leave them behind whatever the outcome
        os.kill(p, signal.SIGKILL)
    assert not survivors, f"{len(survivors)} pool process(es) outlived the driver"


@pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="ray not installed")
def test_ray_executor_gives_the_same_records(tmp_path: Path) -> None:
    small = {**SPEC, "zip": [], "axes": {"cluster.nics_per_node": [1, 2],
                                         "cluster.topology.oversubscription": [1, 2]}}  # fmt: skip
    spec = parse_sweep(small, root=ROOT)
    summary = run_sweep(spec, tmp_path / "ray", executor="ray", jobs=2)
    assert summary.computed == 4 and summary.executor == "ray"
    run_sweep(spec, tmp_path / "local", jobs=1)
    assert without_seconds(read_points(tmp_path / "ray")) == without_seconds(
        read_points(tmp_path / "local")
    )


def test_one_design_reached_twice_is_computed_once_and_counted(tmp_path: Path) -> None:
    """Oversubscription 1 and 1.0 (and a repeated value) are one design: one id, one point."""
    same = {**SPEC, "zip": [], "axes": {"cluster.topology.oversubscription": [1, 1.0, 2, 2]}}
    summary = run_sweep(parse_sweep(same, root=ROOT), tmp_path, jobs=1)
    assert (summary.points, summary.duplicates, summary.computed) == (4, 2, 2)


def test_a_sweep_directory_has_one_writer_at_a_time(tmp_path: Path) -> None:
    import fcntl

    spec = parse_sweep(SPEC, root=ROOT)
    tmp_path.mkdir(exist_ok=True)
    with (tmp_path / ".lock").open("a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(SweepError, match="is being written by"):
            run_sweep(spec, tmp_path, jobs=1)
    assert run_sweep(spec, tmp_path, jobs=1, limit=1).computed == 1


def test_reordered_axes_are_another_sweep(tmp_path: Path) -> None:
    spec = parse_sweep(SPEC, root=ROOT)
    run_sweep(spec, tmp_path, jobs=1, limit=1)
    axes = dict(reversed(list(SPEC["axes"].items())))  # type: ignore[attr-defined]
    with pytest.raises(SweepError, match="holds another sweep"):
        run_sweep(parse_sweep({**SPEC, "axes": axes}, root=ROOT), tmp_path, jobs=1)


def test_constraints_that_cannot_be_evaluated_are_one_clear_error(tmp_path: Path) -> None:
    bad = parse_sweep({**SPEC, "constraints": ["`cluster.nodes` / 0 > 1"]}, root=ROOT)
    with pytest.raises(SweepError, match=r"constraints\[0\].*division by zero"):
        run_sweep(bad, tmp_path, jobs=1)
