"""The table nccl-tests would print for one operation on a cluster: every size from ``lo`` to
``hi`` (× ``factor``), its time, algorithm and bus bandwidth, priced by the analytic model or
replayed on the flow or packet engine (``commwall collective``, and the same from Python).

Sizes follow nccl-tests: each is rounded to what the test really runs per rank
(:func:`commwall.collectives.ops.nccl_tests_row`), times are nccl-tests' (launch overhead per
GPU driven by one process, :func:`commwall.collectives.nccl.nccl_tests_time`), and busbw is
algbw × the op's bus factor (nccl-tests ``PERFORMANCE.md``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from commwall.collectives import choose
from commwall.collectives.constants import Proto
from commwall.collectives.nccl import nccl_tests_time
from commwall.collectives.ops import REDUCING_OPS, Op, busbw_factor, nccl_tests_row
from commwall.collectives.schedule import CollectiveTask, Group, Schedule

if TYPE_CHECKING:
    from commwall.cluster import Cluster
    from commwall.collectives.fabric import CommFabric
    from commwall.engines.base import Engine, Result

__all__ = ["PACKET_COUNTERS", "NcclTable", "nccl_tests_table", "packet_counters"]


@dataclass
class NcclTable:
    """One row per size (nccl-tests' columns and the model's choice), what an engine ran other
    than NCCL's choice and why, and the last size's engine result (for a trace)."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    last: Result | None = None


def nccl_tests_table(
    op: Op,
    lo: float,
    hi: float,
    factor: float,
    cluster: Cluster,
    fabric: CommFabric,
    *,
    engine: Engine | None = None,
    group: Group | None = None,
    routing: str | None = None,
    seed: int = 0,
    algo: str | None = None,
    proto: Proto | None = None,
    policy: str = "nccl",
    gpus_per_process: int = 1,
    explain: bool = False,
) -> NcclTable:
    """The table for ``op`` on ``fabric`` (a communicator of ``cluster``): the analytic model's
    times, or, with ``engine`` and its ``group``, the engine's (module docstring)."""
    table = NcclTable()
    size = lo
    while size <= hi:
        asked = size
        size, count = nccl_tests_row(op, int(asked), fabric.nranks)
        choice = choose(op, size, fabric, algo=algo, proto=proto, policy=policy)
        best = choice.best
        extra: dict[str, Any] = {}
        seconds = nccl_tests_time(best.time, gpus_per_process)
        if engine is not None and group is not None:
            task = CollectiveTask(op, size, group, algo, proto)
            result = engine.run(Schedule.single(task), cluster, routing, seed=seed)
            table.last = result
            seconds = nccl_tests_time(result.makespan, gpus_per_process)
            extra = {
                "analytic_time_us": best.time * 1e6,
                "slowdown_vs_analytic": result.makespan / best.time if best.time > 0 else 1.0,
            }
            if engine.name == "packet":
                ran = result.phases[0]
                extra.update(packet_counters(result))
                best = replace(best, algo=ran.algo or best.algo, proto=Proto(ran.proto or "Simple"))
                for note in result.details.get("substitutions", []):
                    if note not in table.notes:
                        table.notes.append(note)
        algbw = size / seconds if seconds > 0 else 0.0
        table.rows.append(
            {
                "size": int(size),
                "count": count,
                "type": "float",
                "redop": "sum" if op in REDUCING_OPS else "none",
                "root": 0 if op in (Op.BROADCAST, Op.REDUCE) else -1,
                "time_us": seconds * 1e6,
                "algbw_GBps": algbw / 1e9,
                "busbw_GBps": algbw * busbw_factor(op, fabric.nranks) / 1e9,
                "algo": best.algo,
                "proto": best.proto.value,
                "why": choice.explain() if explain else None,
                **extra,
            }
        )
        size = asked * factor
    return table


#: The packet engine's counters a table row carries (drops, retransmissions, marks, pauses).
PACKET_COUNTERS = ("drop_packets", "retransmitted", "timeouts", "trim_packets", "ecn_marks",
                   "cnps_sent", "pause_frames", "paused_s", "peak_buffer_bytes", "events")  # fmt: skip


def packet_counters(result: Result) -> dict[str, Any]:
    """A packet run's counters for its table row, and the fabric it ran."""
    c = result.counters
    return {
        "packet": {k: c.get(k, 0.0) for k in PACKET_COUNTERS},
        "fabric": result.details.get("packet", {}).get("fabric"),
    }
