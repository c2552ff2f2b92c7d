"""How long ``commwall run`` takes, end to end and in-process.

* ``commwall run`` (the built-in default scenario) in a subprocess, interpreter start-up and
  imports included: median of 5 runs (one untimed run first, so the file cache is warm).
  Target: < 3 s.
* ``simulate()`` in-process on the default scenario, and on the largest scenario (most GPUs) in
  ``examples/*.yaml`` when there is one: the first call and the median of 5 later calls.

Run: ``python benchmarks/bench_run.py [--runs N] [--json] [--strict]``
(``--strict``: exit 1 when the target is missed). Figures, not tests: nothing here runs under pytest.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RUN_TARGET_S = 3.0


def commwall_command() -> list[str]:
    """The ``commwall`` console script of this interpreter's environment (or a ``-c`` stand-in)."""
    here = Path(sys.executable).parent / ("commwall.exe" if os.name == "nt" else "commwall")
    if here.is_file():
        return [str(here)]
    found = shutil.which("commwall")
    if found:
        return [found]
    return [sys.executable, "-c", "from commwall.cli import main; main()"]


def time_subprocess(args: list[str], runs: int) -> list[float]:
    """Wall times of ``runs`` runs of ``args`` (after one untimed run); raises if one fails."""
    times = []
    for i in range(runs + 1):
        start = time.perf_counter()
        done = subprocess.run(args, capture_output=True, text=True, cwd=ROOT, check=False)
        elapsed = time.perf_counter() - start
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} failed ({done.returncode}):\n{done.stderr}")
        if i:
            times.append(elapsed)
    return times


def largest_example() -> tuple[Path, int] | None:
    """The scenario in examples/*.yaml with the most GPUs, and that count."""
    from commwall.cluster import build_cluster
    from commwall.scenario import ScenarioError, load_scenario

    best: tuple[Path, int] | None = None
    for path in sorted((ROOT / "examples").glob("*.yaml")):
        try:
            gpus = build_cluster(load_scenario(path).cluster).n_gpus
        except (ScenarioError, ValueError):
            continue
        if best is None or gpus > best[1]:
            best = (path, gpus)
    return best


def time_simulate(scenario: Any, runs: int) -> dict[str, float]:
    """First call and median of ``runs`` later calls of ``simulate(scenario)``, seconds."""
    from commwall.workload.simulate import simulate

    start = time.perf_counter()
    report = simulate(scenario)
    first = time.perf_counter() - start
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        simulate(scenario)
        times.append(time.perf_counter() - start)
    return {
        "first_s": first,
        "median_s": statistics.median(times),
        "min_s": min(times),
        "gpus": float(report.n_gpus),
        "phases": float(len(report.result.phases)),
    }


def bench(runs: int) -> dict[str, Any]:
    cmd = commwall_command()
    run_times = time_subprocess([*cmd, "run"], runs)
    result: dict[str, Any] = {
        "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "runs": runs,
        "commwall_run": {
            "command": " ".join([Path(cmd[0]).name, *cmd[1:], "run"]),
            "median_s": statistics.median(run_times),
            "min_s": min(run_times),
            "max_s": max(run_times),
        },
        "target_run_s": RUN_TARGET_S,
    }
    result["pass"] = result["commwall_run"]["median_s"] < RUN_TARGET_S

    start = time.perf_counter()
    from commwall.defaults import default_scenario
    from commwall.workload.simulate import simulate  # noqa: F401  (timed import)

    result["import_s"] = time.perf_counter() - start
    result["simulate_default"] = time_simulate(default_scenario(), runs)
    example = largest_example()
    if example is not None:
        from commwall.scenario import load_scenario

        path, _ = example
        sim = time_simulate(load_scenario(path), runs)
        sub = time_subprocess([*cmd, "run", str(path)], runs)
        result["largest_example"] = {
            "path": str(path.relative_to(ROOT)),
            **sim,
            "commwall_run_median_s": statistics.median(sub),
        }
    else:
        result["largest_example"] = None
    return result


def print_table(r: dict[str, Any]) -> None:
    verdict = "PASS" if r["pass"] else "FAIL"
    run = r["commwall_run"]

    def secs(x: float | None) -> str:
        return "-" if x is None else f"{x:.3f}s"

    rows: list[tuple[str, float | None, float | None, float | None, str]] = [
        (
            "`commwall run` (default), subprocess, end to end",
            None,
            run["median_s"],
            run["min_s"],
            f"< {RUN_TARGET_S:g} s  {verdict}",
        ),
        ("import commwall.workload.simulate", r["import_s"], None, None, "-"),
    ]
    sims = [("simulate(default)", r["simulate_default"])]
    ex = r["largest_example"]
    if ex is not None:
        sims.append((f"simulate({ex['path']})", ex))
    for label, sim in sims:
        label = f"{label}, {int(sim['gpus']):,} GPUs, {int(sim['phases']):,} phases"
        rows.append((label, sim["first_s"], sim["median_s"], sim["min_s"], "-"))
    if ex is not None:
        label = f"`commwall run {ex['path']}`, subprocess"
        rows.append((label, None, ex["commwall_run_median_s"], None, "-"))
    width = max(len(row[0]) for row in rows)
    print(f"commwall run timings ({r['cpus']} CPUs, python {r['python']}, {r['runs']} runs each)")
    print(f"{'what':<{width}} {'first':>8} {'median':>8} {'min':>8}  target")
    for label, first, median, low, target in rows:
        print(f"{label:<{width}} {secs(first):>8} {secs(median):>8} {secs(low):>8}  {target}")
    if ex is None:
        print("(no examples/*.yaml scenario yet: only the default scenario is timed)")
    print()
    print(
        f"commwall run: median {run['median_s']:.3f} s -> {verdict} (target < {RUN_TARGET_S:g} s)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="timed runs per measurement")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--strict", action="store_true", help="exit 1 if the target is missed")
    args = parser.parse_args(argv)
    result = bench(max(1, args.runs))
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_table(result)
    return 1 if args.strict and not result["pass"] else 0


if __name__ == "__main__":
    sys.exit(main())
