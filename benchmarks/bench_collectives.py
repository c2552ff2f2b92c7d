"""How many collective evaluations commwall answers per second.

* ``choose(op, size, fabric)``: the NCCL-like tuner (every algorithm x protocol NCCL offers for the
  op, the fastest picked) over a sweep of every op x sizes 8 B .. 8 GiB (x8 steps) x cluster shapes
  of 1 .. 4,096 DGX H100 nodes. Target: >= 10,000 per second.
* ``evaluate(op, size, fabric, algo, proto)``: one cost model, over every combination of the same
  sweep that can run (the ones that raise ``Unsupported`` are left out of the timing).

Run: ``python benchmarks/bench_collectives.py [--seconds S] [--json] [--strict]``
(``--strict``: exit 1 when a target is missed). Figures, not tests: nothing here runs under pytest.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from collections.abc import Callable
from typing import Any

from commwall.cluster import build_cluster
from commwall.collectives import NCCL_MENU, CommFabric, Op, Proto, Unsupported, choose, evaluate
from commwall.scenario import ClusterSpec

PRESET = "dgx-h100"
NODES = (1, 4, 16, 64, 256, 1024, 4096)
SIZES = tuple(8 * 8**i for i in range(11))  # 8 B .. 8 GiB
CHOOSE_TARGET = 10_000.0  # choose() calls per second


def fabrics() -> dict[int, CommFabric]:
    """The whole-cluster communicator of each shape."""
    return {n: build_cluster(ClusterSpec(preset=PRESET, nodes=n)).world() for n in NODES}


def rate(fn: Callable[[], int], seconds: float) -> tuple[int, float]:
    """Repeat ``fn`` (which returns how many calls it made) for at least ``seconds``."""
    fn()  # warm-up: imports, caches
    calls, start = 0, time.perf_counter()
    while True:
        calls += fn()
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return calls, elapsed


def bench(seconds: float) -> dict[str, Any]:
    shapes = fabrics()
    sweep = [(op, size, f) for f in shapes.values() for op in Op for size in SIZES]

    def choose_sweep() -> int:
        for op, size, f in sweep:
            choose(op, size, f)
        return len(sweep)

    runnable = []
    for op, size, f in sweep:
        for algo in NCCL_MENU[op]:
            for proto in Proto:
                try:
                    evaluate(op, size, f, algo, proto)
                except Unsupported:
                    continue
                runnable.append((op, size, f, algo, proto))

    def evaluate_sweep() -> int:
        for op, size, f, algo, proto in runnable:
            evaluate(op, size, f, algo, proto)
        return len(runnable)

    per_shape = {}
    for nodes, f in shapes.items():
        one = [(op, size) for op in Op for size in SIZES]

        def shape_sweep(f: CommFabric = f, one: list[tuple[Op, int]] = one) -> int:
            for op, size in one:
                choose(op, size, f)
            return len(one)

        calls, elapsed = rate(shape_sweep, seconds / len(shapes))
        per_shape[nodes] = {"ranks": f.nranks, "choose_per_s": calls / elapsed}

    c_calls, c_time = rate(choose_sweep, seconds)
    e_calls, e_time = rate(evaluate_sweep, seconds)
    choose_rate = c_calls / c_time
    return {
        "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
        "python": platform.python_version(),
        "sweep": {
            "ops": len(Op),
            "sizes": len(SIZES),
            "shapes": list(NODES),
            "choose_points": len(sweep),
            "evaluate_points": len(runnable),
        },
        "choose": {"calls": c_calls, "seconds": c_time, "per_s": choose_rate},
        "evaluate": {"calls": e_calls, "seconds": e_time, "per_s": e_calls / e_time},
        "per_shape": per_shape,
        "target_choose_per_s": CHOOSE_TARGET,
        "pass": choose_rate >= CHOOSE_TARGET,
    }


def print_table(r: dict[str, Any]) -> None:
    s = r["sweep"]
    print(
        f"collective evaluations per second ({PRESET}, {s['ops']} ops x {s['sizes']} sizes "
        f"8 B..8 GiB x {len(s['shapes'])} shapes {s['shapes'][0]}..{s['shapes'][-1]} nodes; "
        f"python {r['python']})"
    )
    print(f"{'call':<10} {'points':>7} {'calls':>9} {'seconds':>8} {'per second':>11}  target")
    verdict = "PASS" if r["pass"] else "FAIL"
    for name, points, target in (
        ("choose", s["choose_points"], f">= {CHOOSE_TARGET:,.0f}/s  {verdict}"),
        ("evaluate", s["evaluate_points"], "-"),
    ):
        row = r[name]
        print(
            f"{name:<10} {points:>7,} {row['calls']:>9,} {row['seconds']:>8.2f} "
            f"{row['per_s']:>11,.0f}  {target}"
        )
    print()
    print(f"{'nodes':>6} {'ranks':>7} {'choose/s':>10}")
    for nodes, row in r["per_shape"].items():
        print(f"{nodes:>6} {row['ranks']:>7,} {row['choose_per_s']:>10,.0f}")
    print()
    print(f"choose(): {r['choose']['per_s']:,.0f} per second -> {verdict} (target >= 10,000)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="time per measurement")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--strict", action="store_true", help="exit 1 if a target is missed")
    args = parser.parse_args(argv)
    result = bench(args.seconds)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_table(result)
    return 1 if args.strict and not result["pass"] else 0


if __name__ == "__main__":
    sys.exit(main())
