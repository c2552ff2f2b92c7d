"""The analytic engine: closed-form collective costs scheduled over streams and dependencies.

Each collective phase costs what the NCCL-like tuner (:mod:`commwall.collectives.tuner`) predicts
for its communicator — an uncontended, ideally balanced fabric, as NCCL's own model assumes.
Phases are list-scheduled: a phase starts when its stream is free and every phase it waits for has
ended. Microseconds per answer, so sweeps can call it thousands of times.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

from commwall.collectives.constants import Proto
from commwall.collectives.cost import Cost
from commwall.collectives.fabric import CommFabric
from commwall.collectives.ops import Op
from commwall.collectives.schedule import CollectiveTask, ComputeTask, Schedule
from commwall.collectives.tuner import choose
from commwall.engines.base import InvariantError, PhaseResult, Result, check_order

if TYPE_CHECKING:
    from commwall.cluster import Cluster


class AnalyticEngine:
    """Closed-form engine (``Engine`` protocol)."""

    name = "analytic"

    def __init__(self, policy: str = "nccl") -> None:
        self.policy = policy

    def cost(self, task: CollectiveTask, cluster: Cluster) -> Cost:
        """The tuner's choice for one collective task on ``cluster``."""
        fabric = cluster.comm_fabric(task.group.n_domains, task.group.ranks_per_domain)
        return _cached_choice(task, fabric, self.policy)

    def run(
        self, schedule: Schedule, cluster: Cluster, routing: str | None = None, *, seed: int = 0
    ) -> Result:
        """List-schedule ``schedule``; ``routing`` and ``seed`` do not change a closed form."""
        stream_free: dict[str, float] = {}
        #: id(task) -> (cost, busbw, over the injection check, fabric, the task kept alive)
        seen: dict[int, tuple[Cost, float, bool, CommFabric, CollectiveTask]] = {}
        ends: list[float] = []
        results: list[PhaseResult] = []
        bytes_moved = 0.0
        for index, phase in enumerate(schedule.phases):
            after = phase.after
            if not after:
                ready = 0.0
            elif len(after) == 1:
                ready = ends[after[0]]
            else:
                ready = max(ends[d] for d in after)
            free = stream_free.get(phase.stream, 0.0)
            start = ready if ready > free else free
            if isinstance(phase.task, ComputeTask):
                duration = phase.task.seconds * phase.repeat
                result = PhaseResult(
                    phase.name, phase.category, phase.stream, start, start + duration, phase.repeat
                )
            else:
                task = phase.task
                # a step repeats the same task objects: look each up once per run
                known = seen.get(id(task))
                if known is None:
                    fabric = cluster.comm_fabric(task.group.n_domains, task.group.ranks_per_domain)
                    facts = _facts(task.op, task.nbytes, task.algo, task.proto, fabric, self.policy)
                    known = seen[id(task)] = (*facts, fabric, task)
                cost, busbw, over, fabric, _ = known
                if over:
                    _check_capacity(phase.name, cost, fabric)
                duration = cost.time * phase.repeat
                bytes_moved += phase.task.nbytes * phase.repeat
                result = PhaseResult(
                    phase.name,
                    phase.category,
                    phase.stream,
                    start,
                    start + duration,
                    phase.repeat,
                    op=phase.task.op.value,
                    nbytes=phase.task.nbytes,
                    nranks=phase.task.group.nranks,
                    algo=cost.algo,
                    proto=cost.proto.value,
                    busbw=busbw,
                    bottleneck=cost.bottleneck,
                )
            if duration < 0:
                raise InvariantError(f"phase {index} {phase.name!r} has negative duration")
            ends.append(result.end)
            stream_free[phase.stream] = result.end
            results.append(result)
        check_order(schedule, results)
        makespan = max(ends, default=0.0)
        return Result(
            engine=self.name,
            phases=tuple(results),
            makespan=makespan,
            counters={"phases": float(len(results)), "collective_bytes": bytes_moved},
            invariants=(
                "dependencies respected",
                "streams serialised",
                "durations non-negative",
                "no rank injects above its links (point-to-point algorithms)",
            ),
        )


#: Algorithms whose busbw may legitimately exceed a rank's links: the network reduces for them.
IN_NETWORK = frozenset({"nvls", "nvls_tree", "collnet", "local"})
_BOUNDED_OPS = frozenset({Op.ALL_REDUCE, Op.REDUCE_SCATTER, Op.ALL_GATHER, Op.ALLTOALL})


def _check_capacity(name: str, cost: Cost, fabric: CommFabric) -> None:
    """A point-to-point algorithm's busbw cannot exceed what a rank can inject (DESIGN.md)."""
    if cost.algo in IN_NETWORK or cost.op not in _BOUNDED_OPS or cost.time <= 0:
        return
    if cost.busbw > fabric.injection_bw * (1 + 1e-9):
        raise InvariantError(
            f"phase {name!r}: {cost.algo} busbw {cost.busbw:.4g} B/s exceeds the rank's "
            f"injection bandwidth {fabric.injection_bw:.4g} B/s"
        )


def _cached_choice(task: CollectiveTask, fabric: CommFabric, policy: str) -> Cost:
    """The tuner's choice for ``task``: memoised on what the choice depends on (not on the
    task's placement, whose hash grows with the communicator's copies)."""
    return _choice(task.op, task.nbytes, task.algo, task.proto, fabric, policy)


@lru_cache(maxsize=65536)
def _facts(
    op: Op, nbytes: float, algo: str | None, proto: Proto | None, fabric: CommFabric, policy: str
) -> tuple[Cost, float, bool]:
    """The choice, its busbw and whether it breaks the injection check (computed once per
    distinct call: a step repeats the same calls thousands of times)."""
    cost = _choice(op, nbytes, algo, proto, fabric, policy)
    try:
        _check_capacity("", cost, fabric)
    except InvariantError:
        return cost, cost.busbw, True
    return cost, cost.busbw, False


@lru_cache(maxsize=65536)
def _choice(
    op: Op, nbytes: float, algo: str | None, proto: Proto | None, fabric: CommFabric, policy: str
) -> Cost:
    # Steps repeat the same calls (per layer, per bucket): memoise the tuner.
    return choose(op, nbytes, fabric, algo=algo, proto=proto, policy=policy).best
