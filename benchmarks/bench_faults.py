"""How fast the fault models sample.

* Stragglers, direct draws: 10,000 steps x 16,384 ranks, every rank drawn (2% normal jitter) —
  the issue's target: "in seconds" (here: < 10 s); and with OS noise too (Poisson counts per rank,
  which only direct draws can sample).
* Stragglers, order statistics: 10,000 steps at 16,384 and at 131,072 ranks (i.i.d. ranks: the
  slowest one is drawn from its order statistic) and the same with 2 µs message tails on the
  Llama-3-405B step (ring and tree calibrations included).
* Goodput: 10,000 Monte Carlo runs of 50 days on 16,384 GPUs at Daly's interval.

Run: ``python benchmarks/bench_faults.py [--json] [--strict]`` (``--strict``: exit 1 when a target
is missed). Figures, not tests: nothing here runs under pytest.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DIRECT_TARGET_S = 10.0


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t = time.perf_counter()
    value = fn()
    return time.perf_counter() - t, value


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args()

    from commwall.faults.goodput import JobSize, RunPlan, goodput_study
    from commwall.faults.stragglers import (
        StepProfile,
        Variability,
        profile_from_report,
        simulate_stragglers,
    )
    from commwall.scenario import load_scenario
    from commwall.workload.simulate import simulate

    rows: list[dict[str, Any]] = []
    jitter = Variability(jitter=0.02)
    noisy = Variability(jitter=0.02, os_noise_rate=10.0, os_noise_duration=50e-6)
    p16 = StepProfile(1.0, 16384)
    s, r = timed(
        lambda: simulate_stragglers(p16, jitter, steps=10_000, method="direct", contributions=False)
    )
    rows.append({"what": "stragglers direct, 10,000 steps x 16,384 ranks (2% jitter)",
                 "seconds": s, "draws_per_s": 10_000 * 16384 / s,
                 "target": f"< {DIRECT_TARGET_S:g} s", "pass": s < DIRECT_TARGET_S,
                 "mean_step_s": r.step_time.mean})  # fmt: skip
    s, r = timed(lambda: simulate_stragglers(p16, noisy, steps=10_000, contributions=False))
    rows.append({"what": "stragglers direct, 10,000 steps x 16,384 ranks (jitter + OS noise)",
                 "seconds": s, "mean_step_s": r.step_time.mean})  # fmt: skip
    for n in (16384, 131072):
        s, r = timed(
            lambda n=n: simulate_stragglers(
                StepProfile(1.0, n), jitter, steps=10_000, method="order", contributions=False
            )
        )
        rows.append({"what": f"stragglers order statistics, 10,000 steps x {n:,} ranks",
                     "seconds": s, "mean_step_s": r.step_time.mean})  # fmt: skip
    scenario = load_scenario(ROOT / "examples" / "llama3-405b-16k-h100.yaml")
    prof = profile_from_report(simulate(scenario))
    tails = Variability(jitter=0.02, message_tail=2e-6, clock_jitter=5e-9)
    s, r = timed(lambda: simulate_stragglers(prof, tails, steps=10_000, contributions=False))
    rows.append({"what": f"stragglers on the Llama-3-405B step, 10,000 steps, message tails "
                         f"({len(prof.collectives)} collective kinds calibrated)",
                 "seconds": s, "mean_step_s": r.step_time.mean})  # fmt: skip
    plan = RunPlan(solve=50 * 86400.0, checkpoint=60.0, restart=600.0)
    s, g = timed(lambda: goodput_study(JobSize(16384), plan, samples=10_000))
    rows.append({"what": "goodput, 10,000 Monte Carlo runs of 50 days on 16,384 GPUs",
                 "seconds": s, "goodput_mean": g.goodput.mean,
                 "interruptions_mean": g.interruptions.mean})  # fmt: skip

    ok = all(row.get("pass", True) for row in rows)
    if args.json:
        machine = {"python": platform.python_version(), "machine": platform.machine()}
        print(json.dumps({"machine": machine, "rows": rows, "pass": ok}, indent=2))
    else:
        width = max(len(row["what"]) for row in rows)
        print(f"{'what'.ljust(width)}  seconds  target")
        for row in rows:
            mark = (
                "" if "pass" not in row else f"{row['target']}  {'PASS' if row['pass'] else 'FAIL'}"
            )
            print(f"{row['what'].ljust(width)}  {row['seconds']:7.3f}  {mark}")
        direct = rows[0]
        print(f"(direct draws: {direct['draws_per_s'] / 1e6:,.0f} M random numbers per second)")
    return 0 if ok or not args.strict else 1


if __name__ == "__main__":
    sys.exit(main())
