"""How fast commwall builds and measures the biggest fabrics it is meant for.

* ``fat_tree(64)``: a 3-tier k = 64 fat tree, 65,536 hosts, 5,120 switches, 393,216 links.
* ``dragonfly(32, 16, 16)``: a balanced 64-port dragonfly, 513 groups, 262,656 hosts (topology.md §4).
* ``rail_optimized(2048)``: the 64-SU DGX B200 SuperPOD shape, 16,384 NICs, 3 tiers.

For each: build time, peak Python memory while building (tracemalloc), size of the arrays, and the
time of the closed-form metrics (bisection, diameter, average hops, path diversity) plus 10,000
analytic route look-ups. Target: every build under 5 s (the engines need the graph in seconds).

Run: ``python benchmarks/bench_topology.py [--json] [--strict]`` (``--strict``: exit 1 on a miss).
Figures, not tests: nothing here runs under pytest.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np

from commwall.topology import (
    Topology,
    average_hops,
    bisection_bandwidth,
    diameter,
    dragonfly,
    fat_tree,
    path_diversity,
    rail_optimized,
)

BUILD_TARGET_S = 5.0
CASES: dict[str, Callable[[], Topology]] = {
    "fat_tree(k=64)": lambda: fat_tree(64),
    "dragonfly(a=32,p=16,h=16)": lambda: dragonfly(32, 16, 16),
    "rail_optimized(2048 nodes)": lambda: rail_optimized(2048),
}


def _array_bytes(t: Topology) -> int:
    return sum(v.nbytes for v in vars(t).values() if isinstance(v, np.ndarray))


def measure(name: str, build: Callable[[], Topology]) -> dict[str, Any]:
    tracemalloc.start()
    start = time.perf_counter()
    topo = build()
    build_s = time.perf_counter() - start
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    start = time.perf_counter()
    bisection_bandwidth(topo), diameter(topo), average_hops(topo), path_diversity(topo)
    metrics_s = time.perf_counter() - start
    ends = topo.endpoints()
    rng = np.random.default_rng(0)
    pairs = rng.choice(ends, size=(10_000, 2))
    start = time.perf_counter()
    for src, dst in pairs.tolist():
        n = topo.path_count(src, dst)
        if n:
            topo.path_links(src, dst, n - 1)
    routes_s = time.perf_counter() - start
    c = topo.counts()
    return {
        "case": name,
        "endpoints": c.endpoints,
        "switches": c.total_switches,
        "links": topo.n_links,
        "build_s": build_s,
        "peak_mib": peak / 2**20,
        "arrays_mib": _array_bytes(topo) / 2**20,
        "metrics_s": metrics_s,
        "routes_per_s": len(pairs) / routes_s,
        "pass": build_s < BUILD_TARGET_S,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args()
    rows = [measure(name, build) for name, build in CASES.items()]
    ok = all(r["pass"] for r in rows)
    if args.json:
        info = {"python": platform.python_version(), "machine": platform.machine()}
        sys.stdout.write(json.dumps({"machine": info, "rows": rows, "pass": ok}, indent=2) + "\n")
    else:
        print(
            f"{'case':28} {'endpoints':>9} {'switches':>8} {'links':>9} {'build':>7} "
            f"{'peak':>8} {'arrays':>8} {'metrics':>8} {'routes/s':>9}  target"
        )
        for r in rows:
            print(
                f"{r['case']:28} {r['endpoints']:>9,} {r['switches']:>8,} {r['links']:>9,} "
                f"{r['build_s']:>6.2f}s {r['peak_mib']:>5.0f}MiB {r['arrays_mib']:>5.0f}MiB "
                f"{r['metrics_s'] * 1e3:>6.1f}ms {r['routes_per_s']:>9,.0f}  "
                f"build < {BUILD_TARGET_S:g} s {'PASS' if r['pass'] else 'FAIL'}"
            )
        print("PASS" if ok else "FAIL")
    return 1 if args.strict and not ok else 0


if __name__ == "__main__":
    sys.exit(main())
