"""Fuzz commwall's inputs: every bad input must be a clean error, never a traceback or a hang.

Formats and what each case runs:

* ``scenario`` — a built-in example scenario (``examples/*.yaml``) with 1–4 random mutations
  (a leaf replaced by a hostile value, a key deleted, an unknown key added, a section replaced),
  or random text/bytes; read with ``load_scenario_text``, then ``build_cluster`` and
  ``resolve_job``, then ``simulate`` (analytic) when the cluster has at most 1,024 GPUs.
* ``sweep`` — a sweep spec over the PCIe example with the same mutations; ``parse_sweep``.
* ``nccl-tests`` — a predicted nccl-tests log (``commwall collective`` output) with lines
  deleted, duplicated, cut, prefixed like launchers or with cells replaced; ``parse_nccl_tests``.
* ``nccl-xml``, ``nvidia-smi`` — the DGX H100/A100 fixtures with lines or attribute values
  mutated; ``parse_node_topology``, ``compute_paths``, ``summarize``.
* ``chakra`` — a PyTorch-shaped Chakra trace with bytes flipped, cut or inserted; ``decode_trace``.
* ``cli`` — ``commwall collective`` and ``commwall topology`` with hostile option values through
  the CLI (typer's runner): the exit status must be 0 or 2 and no traceback printed.

A *clean error* is one of the exceptions the CLI turns into one line (``console.friendly``) or the
format's own error type; anything else is a *traceback*. A case running past ``--hang`` seconds
(default 10) is a *hang*. Peak memory is the process's high-water mark (``ru_maxrss``) and the case
that raised it most.

Run: ``python benchmarks/fuzz.py [--cases N] [--seed S] [--only FORMAT] [--json]``; the default
runs 10,000 scenario and sweep cases and 1,000 of each other format (a few minutes). A quick run
with a few cases per format is part of the test suite (``tests/test_fuzz.py``).
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import random
import resource
import signal
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
TESTDATA = ROOT / "src" / "commwall" / "io" / "testdata"

HOSTILE: list[Any] = [
    0, -1, 1, 3, 7, 2**31, 2**63, 10**30, -(10**30), 0.5, -0.0, 1e-300, 1e308, math.inf,
    -math.inf, math.nan, True, False, None, "", " ", "0", "-1", "nan", "1e309", "8 GiB",
    "400 Gb/s", "-5 ns", "2 parsecs", "[/]", "[bold]x[/bold]", "\x1b[31mred", "a\rb",
    "x" * 5000, "../../../../etc/passwd", "'; drop table points; --", "<script>1</script>",
    "ecmp", "spray+pxn+pxn", "llama3-8b", "dgx-h100", "fat-tree", [], [1, 2, 3], {}, {"a": 1},
    {"hf_config": "/etc/passwd"}, "E|t|L", "\u202e", "é",
]  # fmt: skip


class Hang(Exception):
    """A case ran past the time limit."""


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    def stop(signum: int, frame: Any) -> None:
        raise Hang(f"ran past {seconds:g} s")

    old = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def clean_errors() -> tuple[type[BaseException], ...]:
    from commwall.catalog import CatalogError
    from commwall.collectives import Unsupported
    from commwall.faults import FaultError
    from commwall.io.chakra import ChakraError
    from commwall.io.nccl_tests import NcclTestsError
    from commwall.io.node_topology import NodeTopologyError
    from commwall.phy import PhyError
    from commwall.phy.optics import OpticsError
    from commwall.routing import RoutingError
    from commwall.scenario import ScenarioError
    from commwall.sweep.spec import SweepError
    from commwall.topology import TopologyError
    from commwall.units import UnitError

    return (ScenarioError, SweepError, UnitError, CatalogError, Unsupported, TopologyError,
            PhyError, OpticsError, RoutingError, FaultError, NcclTestsError, NodeTopologyError,
            ChakraError)  # fmt: skip


# ---- mutations -------------------------------------------------------------------------------


def _paths(data: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(data, dict):
        for k, v in data.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            out += _paths(v, (*prefix, i))
    return out


def _parent(data: Any, path: tuple[Any, ...]) -> Any:
    for key in path[:-1]:
        data = data[key]
    return data


def nudge(data: Any, rng: random.Random) -> Any:
    """``data`` with one plausible change: a number scaled, a flag flipped, a name swapped — so
    that many cases stay valid and reach the model."""
    data = copy.deepcopy(data)
    leaves = [p for p in _paths(data) if not isinstance(_parent(data, p)[p[-1]], dict | list)]
    if not leaves:
        return data
    path = rng.choice(leaves)
    parent, key = _parent(data, path), path[-1]
    value = parent[key]
    if isinstance(value, bool):
        parent[key] = not value
    elif isinstance(value, int | float):
        parent[key] = type(value)(value * rng.choice([0, 2, 4, 0.5, 0.25, -1, 1000]))
    elif isinstance(value, str):
        parent[key] = rng.choice(["llama3-8b", "dgx-a100", "dgx-b200", "roce", "fat-tree",
                                  "rail-only", "spray", "fp8", "full", "flow", value[::-1]])  # fmt: skip
    return data


def mutate_tree(data: Any, rng: random.Random) -> Any:
    """``data`` with one plausible change (a third of the time) or 1–4 hostile mutations."""
    if rng.random() < 0.35:
        return nudge(data, rng)
    data = copy.deepcopy(data)
    for _ in range(rng.randint(1, 4)):
        paths = _paths(data)
        if not paths or not isinstance(data, dict):
            return rng.choice(HOSTILE)
        path = rng.choice(paths)
        parent, key = _parent(data, path), path[-1]
        roll = rng.random()
        if roll < 0.6:
            parent[key] = copy.deepcopy(rng.choice(HOSTILE))
        elif roll < 0.75 and isinstance(parent, dict):
            del parent[key]
        elif roll < 0.9 and isinstance(parent, dict):
            parent[rng.choice(["extra", "Name", "job ", "tp", "__class__", "<<"])] = rng.choice(
                HOSTILE
            )
        else:
            data[rng.choice(list(data) or ["x"])] = copy.deepcopy(rng.choice(HOSTILE))
    return data


def random_text(rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.3:
        return "".join(chr(rng.randint(0, 0x2FF)) for _ in range(rng.randint(0, 200)))
    if kind < 0.6:
        return rng.choice(["", "# nothing\n", "---\n", "[1, 2", "{a: b", "a: &x [*x]\n",
                           "!!python/object:os.system ls", "key: value\nkey: again\n",
                           "- 1\n- 2\n", "42", "null", "? complex\n: key\n"])  # fmt: skip
    return "\n".join(
        f"{rng.choice(['cluster', 'job', 'name', 'simulation', 'faults', 'x'])}: "
        f"{json.dumps(rng.choice(HOSTILE), default=str)}"
        for _ in range(rng.randint(1, 5))
    )


def mutate_lines(text: str, rng: random.Random) -> str:
    lines = text.splitlines()
    for _ in range(rng.randint(1, 6)):
        if not lines:
            lines = [random_text(rng)]
        i = rng.randrange(len(lines))
        roll = rng.random()
        if roll < 0.2:
            del lines[i]
        elif roll < 0.35:
            lines.insert(i, lines[i])
        elif roll < 0.5:
            lines[i] = lines[i][: rng.randrange(len(lines[i]) + 1)]
        elif roll < 0.6:
            lines[i] = (
                rng.choice(["[1,0]<stdout>:", "(head, rank=0, pid=1) ", "0: ", "\x00"]) + lines[i]
            )
        else:
            words = lines[i].split(" ")
            j = rng.randrange(len(words))
            words[j] = str(rng.choice(HOSTILE))[:40]
            lines[i] = " ".join(words)
    return "\n".join(lines) + rng.choice(["", "\n"])


def mutate_bytes(data: bytes, rng: random.Random) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        roll = rng.random()
        if not b or roll < 0.2:
            b += bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
        elif roll < 0.5:
            b[rng.randrange(len(b))] = rng.randrange(256)
        elif roll < 0.7:
            del b[rng.randrange(len(b)) :]
        else:
            i = rng.randrange(len(b))
            b[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
    return bytes(b)


# ---- formats ---------------------------------------------------------------------------------


def _scenario_bases() -> list[dict[str, Any]]:
    out = []
    for p in sorted((ROOT / "examples").glob("*.yaml")):
        data = yaml.safe_load(p.read_text(encoding="utf-8"))
        if isinstance(data, dict) and ("cluster" in data or "job" in data):
            out.append(data)
    return out


def scenario_cases(rng: random.Random) -> Iterator[tuple[str, Callable[[], Any]]]:
    from commwall.cluster import build_cluster
    from commwall.scenario import load_scenario_text
    from commwall.workload.job import resolve_job
    from commwall.workload.simulate import simulate

    bases = _scenario_bases()

    def run(text: str) -> None:
        sc = load_scenario_text(text, "fuzz")
        cluster = build_cluster(sc.cluster)
        resolve_job(sc.job, cluster)
        if cluster.n_gpus <= 1024 and sc.simulation.engine == "analytic":
            simulate(sc, cluster)

    while True:
        if rng.random() < 0.15:
            text = random_text(rng)
        else:
            text = yaml.safe_dump(mutate_tree(rng.choice(bases), rng), allow_unicode=True)
        yield text, lambda text=text: run(text)


def sweep_cases(rng: random.Random) -> Iterator[tuple[str, Callable[[], Any]]]:
    from commwall.sweep.spec import parse_sweep

    base = {"name": "fuzz", "base": "examples/llama3-8b-ddp-pcie.yaml",
            "axes": {"cluster.nics_per_node": [1, 2], "job.dp": [64, 32]},
            "zip": [{"cluster.topology.oversubscription": [1, 3],
                     "cluster.mtu": [4096, 2048]}],
            "set": {"job.global_batch": 128}, "seeds": [0, 1],
            "constraints": ["job.dp >= 32"]}  # fmt: skip
    while True:
        data = mutate_tree(base, rng)
        yield json.dumps(data, default=str)[:300], lambda data=data: parse_sweep(data, root=ROOT)


def _predicted_log() -> str:
    from typer.testing import CliRunner

    from commwall.cli import app

    result = CliRunner().invoke(app, ["collective", "all_reduce", "--nodes", "2", "--factor", "4"])
    return "# nccl-tests all_reduce_perf\n" + result.stdout


def nccl_tests_cases(rng: random.Random) -> Iterator[tuple[str, Callable[[], Any]]]:
    from commwall.io.nccl_tests import parse_nccl_tests

    base = _predicted_log()
    while True:
        text = mutate_lines(base, rng) if rng.random() < 0.9 else random_text(rng)
        yield text[:300], lambda text=text: parse_nccl_tests(text, source="fuzz")


def _topology_cases(
    rng: random.Random, files: list[str]
) -> Iterator[tuple[str, Callable[[], Any]]]:
    from commwall.io.node_topology import parse_node_topology, summarize
    from commwall.io.node_topology_paths import compute_paths

    bases = [(TESTDATA / "node_topology" / f).read_text(encoding="utf-8") for f in files]

    def run(text: str) -> None:
        topo = parse_node_topology(text, source="fuzz")
        summarize(topo, compute_paths(topo))

    while True:
        text = mutate_lines(rng.choice(bases), rng)
        yield text[:300], lambda text=text: run(text)


def xml_cases(rng: random.Random) -> Iterator[tuple[str, Callable[[], Any]]]:
    return _topology_cases(rng, ["dgx_h100_topo.xml", "dgx_a100_topo.xml"])


def smi_cases(rng: random.Random) -> Iterator[tuple[str, Callable[[], Any]]]:
    return _topology_cases(rng, ["dgx_h100_nvidia_smi.txt", "dgx_a100_nvidia_smi.txt"])


def chakra_cases(rng: random.Random) -> Iterator[tuple[str, Callable[[], Any]]]:
    from commwall.io.chakra import decode_trace

    bases = [p.read_bytes() for p in sorted((TESTDATA / "chakra").glob("*.et"))]
    while True:
        data = mutate_bytes(rng.choice(bases), rng)
        yield data[:60].hex(), lambda data=data: decode_trace(data, "fuzz")


class CliFailure(Exception):
    """The CLI exited with a status other than 0 or 2, or printed a traceback."""


def cli_cases(rng: random.Random) -> Iterator[tuple[str, Callable[[], Any]]]:
    from typer.testing import CliRunner

    from commwall.cli import app

    runner = CliRunner()
    commands: list[tuple[list[str], list[str]]] = [
        (["collective", "all_reduce", "--max", "1MiB"],
         ["--nodes", "--min", "--factor", "--gpus-per-node", "--algo", "--proto", "--engine",
          "--cluster", "--gpus-per-process"]),
        (["topology", "fat-tree"], ["--radix", "--tiers", "--oversubscription", "--nodes"]),
        (["phy"], ["--lane", "--snr-db", "--pre-fec-ber", "--modulation", "--target-ber"]),
    ]  # fmt: skip

    def run(args: list[str]) -> None:
        result = runner.invoke(app, args)
        if result.exit_code not in (0, 2) or "Traceback" in result.output:
            raise CliFailure(f"exit {result.exit_code}: {result.output[-300:]}")

    while True:
        head, options = rng.choice(commands)
        args = list(head)
        for option in rng.sample(options, rng.randint(1, min(3, len(options)))):
            args += [option, str(rng.choice(HOSTILE))[:60]]
        yield " ".join(args), lambda args=args: run(args)


FORMATS: dict[str, Callable[[random.Random], Iterator[tuple[str, Callable[[], Any]]]]] = {
    "scenario": scenario_cases,
    "sweep": sweep_cases,
    "nccl-tests": nccl_tests_cases,
    "nccl-xml": xml_cases,
    "nvidia-smi": smi_cases,
    "chakra": chakra_cases,
    "cli": cli_cases,
}
DEFAULT_CASES = {"scenario": 10_000, "sweep": 10_000}


# ---- running ---------------------------------------------------------------------------------


@dataclass
class Report:
    """What one format's cases did."""

    format: str
    cases: int = 0
    ok: int = 0
    clean: int = 0
    tracebacks: list[dict[str, str]] = field(default_factory=list)
    hangs: list[dict[str, str]] = field(default_factory=list)
    seconds: float = 0.0
    slowest_s: float = 0.0
    peak_rss_mb: float = 0.0
    biggest_rise_mb: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "tracebacks": self.tracebacks[:20], "hangs": self.hangs[:20]}


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def run_format(name: str, cases: int, seed: int = 0, hang_s: float = 10.0) -> Report:
    """Run ``cases`` cases of format ``name``."""
    clean = clean_errors()
    rng = random.Random(f"{name}:{seed}")
    report = Report(name)
    start = time.perf_counter()
    for _, (label, case) in zip(range(cases), FORMATS[name](rng), strict=False):
        before = _rss_mb()
        t0 = time.perf_counter()
        try:
            with time_limit(hang_s):
                case()
            report.ok += 1
        except clean:
            report.clean += 1
        except Hang as e:
            report.hangs.append({"input": label, "error": str(e)})
        except Exception as e:  # the finding: anything the CLI would show as a traceback
            tb = traceback.format_exception(type(e), e, e.__traceback__)[-3:]
            report.tracebacks.append({"input": label, "error": f"{type(e).__name__}: {e}"[:300],
                                      "where": "".join(tb)[-600:]})  # fmt: skip
        report.cases += 1
        report.slowest_s = max(report.slowest_s, time.perf_counter() - t0)
        report.biggest_rise_mb = max(report.biggest_rise_mb, _rss_mb() - before)
    report.seconds = time.perf_counter() - start
    report.peak_rss_mb = _rss_mb()
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=None, help="cases per format")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", choices=sorted(FORMATS), action="append")
    parser.add_argument("--hang", type=float, default=10.0, help="seconds that count as a hang")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    reports = []
    for name in args.only or list(FORMATS):
        n = args.cases if args.cases is not None else DEFAULT_CASES.get(name, 1000)
        reports.append(run_format(name, n, args.seed, args.hang))
        if not args.json:
            r = reports[-1]
            print(f"{r.format:11s} {r.cases:6,} cases  ok {r.ok:6,}  clean errors {r.clean:6,}  "
                  f"tracebacks {len(r.tracebacks):4}  hangs {len(r.hangs):3}  "
                  f"{r.seconds:7.1f} s (slowest case {r.slowest_s:.2f} s)  "
                  f"peak RSS {r.peak_rss_mb:,.0f} MB (largest rise {r.biggest_rise_mb:,.0f} MB)",
                  flush=True)  # fmt: skip
            for t in r.tracebacks[:5] + r.hangs[:5]:
                print(f"    {t['error']}\n      input: {t['input'][:200]!r}")
    if args.json:
        print(json.dumps([r.to_dict() for r in reports], indent=2, default=str))
    bad = sum(len(r.tracebacks) + len(r.hangs) for r in reports)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
