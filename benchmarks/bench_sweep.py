"""How fast sweeps run, on the local pool and on Ray, and that a killed sweep loses nothing.

* The 1,000-point analytic sweep ``benchmarks/specs/fabric_1000.yaml`` (Llama-3-70B on H100:
  IB or RoCE, rail-optimized or fat tree, five tapers, five cluster sizes, five TP x PP layouts,
  two batch sizes) on the local process pool with ``--jobs`` workers (default 2): wall time and
  points per second. Target: < 60 s.
* The same spec's first ``--ray-points`` points (default 100) on the local pool and on a local
  Ray instance, side by side (Ray's start-up is timed separately).
* Reading the 1,000 stored points back with every content hash checked (what ``sweep status``,
  ``best``, ``report``, ``query`` and a resume do first).
* Resume: ``commwall sweep run`` killed (SIGKILL) after ``--kill-after`` stored points, then rerun:
  no stored point lost or recomputed, none half-written, the rest computed.

Run: ``python benchmarks/bench_sweep.py [--jobs 2] [--ray-points 100] [--no-ray] [--json]
[--strict]`` (``--strict``: exit 1 when the target is missed). Figures, not tests.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "benchmarks" / "specs" / "fabric_1000.yaml"
TARGET_S = 60.0


def full_sweep(jobs: int) -> dict[str, Any]:
    from commwall.sweep.runner import run_sweep
    from commwall.sweep.spec import load_sweep
    from commwall.sweep.store import read_points

    spec = load_sweep(SPEC)
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        summary = run_sweep(spec, tmp, jobs=jobs)
        wall = time.perf_counter() - start
        start = time.perf_counter()
        seconds = [p["seconds"] for p in read_points(tmp)]  # every point's content hash checked
        check = time.perf_counter() - start
    return {
        "points": summary.computed,
        "ok": summary.ok,
        "jobs": jobs,
        "wall_s": wall,
        "points_per_s": summary.computed / wall,
        "point_s_median": statistics.median(seconds),
        "point_s_max": max(seconds),
        "read_check_s": check,
        "pass": wall < TARGET_S,
    }


def side_by_side(n: int, jobs: int) -> dict[str, Any]:
    import ray

    from commwall.sweep.runner import run_sweep
    from commwall.sweep.spec import load_sweep

    spec = load_sweep(SPEC)
    out: dict[str, Any] = {"points": n}
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        run_sweep(spec, Path(tmp) / "local", jobs=jobs, limit=n)
        out["local_s"] = time.perf_counter() - start
        start = time.perf_counter()
        ray.init(num_cpus=jobs, include_dashboard=False, log_to_driver=False)
        out["ray_start_s"] = time.perf_counter() - start
        start = time.perf_counter()
        run_sweep(spec, Path(tmp) / "ray", executor="ray", jobs=jobs, limit=n)
        out["ray_s"] = time.perf_counter() - start
        ray.shutdown()
    out["local_points_per_s"] = n / out["local_s"]
    out["ray_points_per_s"] = n / out["ray_s"]
    return out


def resume(kill_after: int) -> dict[str, Any]:
    from commwall.sweep.runner import plan, run_sweep
    from commwall.sweep.spec import load_sweep
    from commwall.sweep.store import done_ids, read_points

    spec = load_sweep(SPEC)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        cmd = [sys.executable, "-c", "from commwall.cli import main; main()", "sweep", "run",
               str(SPEC), "--out", str(out), "--jobs", "2"]  # fmt: skip
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)  # fmt: skip
        while len(done_ids(out)) < kill_after and proc.poll() is None:
            time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        kept = done_ids(out)
        readable = len(read_points(out))
        todo = len(plan(spec, out).todo)
        start = time.perf_counter()
        summary = run_sweep(spec, out, jobs=2, limit=50)  # the next 50 prove it continues
        return {
            "stored_at_kill": len(kept),
            "readable_after_kill": readable,
            "todo_after_kill": todo,
            "recomputed": summary.stored_before != len(kept),
            "resumed_points": summary.computed,
            "resume_s": time.perf_counter() - start,
            "temporary_files_left": len(
                [p for p in (out / "points").iterdir() if p.name.startswith(".")]
            ),
            "pass": readable == len(kept) and todo == 1000 - len(kept),
        }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--ray-points", type=int, default=100)
    parser.add_argument("--no-ray", action="store_true")
    parser.add_argument("--kill-after", type=int, default=40)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--strict", action="store_true")
    args = parser.parse_args()
    figures: dict[str, Any] = {
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
        "full": full_sweep(args.jobs),
    }
    if not args.no_ray:
        try:
            figures["ray"] = side_by_side(args.ray_points, args.jobs)
        except ImportError:
            figures["ray"] = "ray not installed (pip install 'commwall[ray]')"
    figures["resume"] = resume(args.kill_after)
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        f = figures["full"]
        print(figures["machine"])
        print(f"1,000-point analytic sweep, local pool x{f['jobs']}: {f['wall_s']:.1f} s "
              f"({f['points_per_s']:.1f} points/s; a point takes {f['point_s_median']:.2f} s "
              f"median, {f['point_s_max']:.2f} s max) — target < {TARGET_S:.0f} s: "
              f"{'PASS' if f['pass'] else 'FAIL'}")  # fmt: skip
        print(f"reading the {f['points']:,} stored points back, each checked against its content "
              f"hash: {f['read_check_s']:.2f} s")  # fmt: skip
        r = figures.get("ray")
        if isinstance(r, dict):
            print(f"first {r['points']} points: local pool {r['local_points_per_s']:.1f} points/s, "
                  f"Ray {r['ray_points_per_s']:.1f} points/s (Ray start-up {r['ray_start_s']:.1f} s "
                  "not counted)")  # fmt: skip
        elif r:
            print(r)
        s = figures["resume"]
        print(f"resume: killed with {s['stored_at_kill']} points stored, all {s['readable_after_kill']} "
              f"readable, {s['todo_after_kill']} left to compute, recomputed: {s['recomputed']}, "
              f"temporary files left: {s['temporary_files_left']} — "
              f"{'PASS' if s['pass'] else 'FAIL'}")  # fmt: skip
    ok = figures["full"]["pass"] and figures["resume"]["pass"]
    return 1 if args.strict and not ok else 0


if __name__ == "__main__":
    sys.exit(main())
