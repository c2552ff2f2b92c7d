"""How fast the flow engine runs its targets, and how much memory it takes.

* A ring and a hierarchical all-reduce of 1 GiB on 32,768 H100s (4,096 DGX H100 nodes, 8 x 400G
  NDR rails, rail-optimized 3-tier Quantum-2 fat tree, ECMP). Target: < 30 s and < 8 GiB peak
  each.
* A permutation of one 2 MB flow per host on a 1,024-host k=16 fat tree at 100 Gb/s, with ECMP
  and with packet spraying. Target: < 1 s each.
* ``commwall run`` of the default scenario with ``--engine flow`` (no target; printed).
* Saturation curves on the 1,056-host dragonfly a=8, p=4, h=4 (g=33): MIN (ecmp), Valiant and
  UGAL x uniform (all-to-all, 1.1 M flows: the fluid limit of uniform random traffic),
  permutation and adversarial traffic, offered load 0.1..1.0 in steps of 0.1, each curve's
  saturation throughput (Kim et al. 2008: MIN adversarial 1/(a h) = 0.031, Valiant about 0.5
  under any pattern). Target: < 60 s for the nine curves together.

Every case runs in its own subprocess, so its peak resident memory (``ru_maxrss``) is its own and
imports are included in neither figure (the child times only the work). Run:
``python benchmarks/bench_flow.py [--json] [--strict] [--only NAME]``.
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import sys
import time
from typing import Any

from _child import run_child

CASES: dict[str, tuple[str, float | None, float | None]] = {
    # name: (what, seconds target, GiB target)
    "ring-32k": ("ring all-reduce 1 GiB, 32,768 H100, rail-opt 3-tier, ECMP", 30.0, 8.0),
    "hier-32k": ("hierarchical all-reduce 1 GiB, 32,768 H100, ECMP", 30.0, 8.0),
    "perm-ecmp": ("permutation 2 MB/host, k=16 fat tree (1,024 hosts), 100G, ECMP", 1.0, None),
    "perm-spray": ("permutation 2 MB/host, k=16 fat tree (1,024 hosts), 100G, spray", 1.0, None),
    "step-default": ("simulate(default scenario) on the flow engine (1,024 GPUs)", None, None),
    "dragonfly-curves": ("9 saturation curves x 10 loads, dragonfly 1,056 hosts", 60.0, None),
}


def child(name: str) -> dict[str, Any]:
    """Run one case in this process; return its figures."""
    if name in ("ring-32k", "hier-32k"):
        from commwall.cluster import build_cluster
        from commwall.collectives import Op
        from commwall.collectives.schedule import CollectiveTask, Schedule
        from commwall.engines.communicators import world_group
        from commwall.engines.flow.engine import FlowEngine
        from commwall.scenario import ClusterSpec

        spec = ClusterSpec.model_validate(
            {
                "preset": "dgx-h100",
                "nodes": 4096,
                "topology": {"kind": "rail-optimized", "tiers": 3},
                "routing": "ecmp",
            }
        )
        cl = build_cluster(spec)
        algo = "ring" if name == "ring-32k" else "hierarchical"
        group = world_group(cl, cl.world())
        task = CollectiveTask(Op.ALL_REDUCE, 2.0**30, group, algo)
        engine = FlowEngine("all")
        start = time.perf_counter()
        result = engine.run(Schedule.single(task), cl, "ecmp", seed=0)
        seconds = time.perf_counter() - start
        phase = result.phases[0]
        extra = {
            "busbw_GBps": phase.busbw / 1e9,
            "flows": result.counters["flows"],
            "events": result.counters["events"],
            "slowdown_vs_analytic": result.counters["max_slowdown_vs_analytic"],
        }
    elif name.startswith("perm-"):
        from commwall.engines.flow.traffic import pattern_flows, run_traffic
        from commwall.topology import fat_tree

        topo = fat_tree(16, 3, link_rate="100Gb/s")
        src, dst = pattern_flows("permutation", len(topo.endpoints()), seed=0)
        routing = "ecmp" if name == "perm-ecmp" else "spray"
        start = time.perf_counter()
        r = run_traffic(topo, src, dst, 2e6, routing, seed=0)
        seconds = time.perf_counter() - start
        extra = {
            "throughput_ratio": r.throughput_ratio,
            "fct_p99_us": r.percentiles()["p99"] * 1e6,
            "events": r.events,
        }
    elif name == "dragonfly-curves":
        import numpy as np

        from commwall.engines.flow.traffic import group_size, pattern_flows, saturation
        from commwall.topology import dragonfly

        topo = dragonfly(8, 4, 4)
        loads = np.round(np.arange(1, 11) / 10, 2)
        start = time.perf_counter()
        extra = {}
        for pattern in ("alltoall", "permutation", "adversarial"):
            src, dst = pattern_flows(pattern, topo.counts().endpoints, seed=0,
                                     group_size=group_size(topo))  # fmt: skip
            for routing in ("ecmp", "valiant", "ugal"):
                rows = saturation(topo, src, dst, loads, routing, seed=0)
                extra[f"{pattern}_{routing}"] = max(r["accepted"] for r in rows)
        seconds = time.perf_counter() - start
    else:
        from commwall.defaults import default_scenario
        from commwall.workload.simulate import simulate

        sc = default_scenario()
        sc = sc.model_copy(
            update={"simulation": sc.simulation.model_copy(update={"engine": "flow"})}
        )
        start = time.perf_counter()
        report = simulate(sc)
        seconds = time.perf_counter() - start
        extra = {
            "step_s": report.step_time,
            "phases": len(report.result.phases),
            "events": report.result.counters["events"],
        }
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB
    return {"seconds": seconds, "peak_bytes": peak, **extra}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument("--only", choices=list(CASES), action="append")
    parser.add_argument("--child", choices=list(CASES), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        sys.stdout.write(json.dumps(child(args.child)) + "\n")
        return 0
    rows: dict[str, Any] = {}
    ok = True
    for name in args.only or list(CASES):
        figures = run_child(__file__, name)
        if figures is None:
            rows[name] = {"error": "the case failed (its stderr is above)"}
            ok = False
            continue
        what, t_max, gib_max = CASES[name]
        passed = (t_max is None or figures["seconds"] < t_max) and (
            gib_max is None or figures["peak_bytes"] < gib_max * 2**30
        )
        ok &= passed
        rows[name] = {"what": what, **figures, "pass": passed}
    if args.json:
        sys.stdout.write(
            json.dumps({"machine": platform.machine(), "cases": rows}, indent=2) + "\n"
        )
    else:
        print(f"{'case':<13} {'seconds':>8} {'peak MiB':>9}  target        result  figures")
        for name, r in rows.items():
            if "error" in r:
                print(f"{name:<13} ERROR {r['error']}")
                continue
            _, t_max, gib_max = CASES[name]
            target = (
                " ".join(
                    x
                    for x in (
                        f"<{t_max:g}s" if t_max else "",
                        f"<{gib_max:g}GiB" if gib_max else "",
                    )
                    if x
                )
                or "-"
            )
            figures = ", ".join(
                f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                for k, v in r.items()
                if k not in ("what", "seconds", "peak_bytes", "pass")
            )
            verdict = "PASS" if r["pass"] else "FAIL"
            print(
                f"{name:<13} {r['seconds']:>8.2f} {r['peak_bytes'] / 2**20:>9,.0f}  {target:<13} "
                f"{verdict if target != '-' else '-':<6}  {figures}"
            )
            print(f"{'':<13} {r['what']}")
    return 1 if args.strict and not ok else 0


if __name__ == "__main__":
    raise SystemExit(main())
