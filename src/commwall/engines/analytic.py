"""The analytic engine: closed-form collective costs scheduled over streams and dependencies.

Each collective phase costs what the NCCL-like tuner (:mod:`commwall.collectives.tuner`) predicts
for its communicator — an uncontended, ideally balanced fabric, as NCCL's own model assumes.
Phases are list-scheduled: a phase starts when its stream is free and every phase it waits for has
ended. Microseconds per answer, so sweeps can call it thousands of times.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, NamedTuple

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
        fabric = task.group.limited(
            cluster.comm_fabric(task.group.n_domains, task.group.ranks_per_domain)
        )
        return _cached_choice(task, fabric, self.policy)

    def _price(self, task: CollectiveTask, cluster: Cluster) -> _Priced:
        """The tuner's choice for ``task`` and what its phases report."""
        fabric = task.group.limited(
            cluster.comm_fabric(task.group.n_domains, task.group.ranks_per_domain)
        )
        cost, busbw, over = _facts(task.op, task.nbytes, task.algo, task.proto, fabric, self.policy)
        return _Priced(
            cost,
            fabric,
            over,
            cost.time,
            task.op.value,
            task.nbytes,
            task.group.nranks,
            cost.algo,
            cost.proto.value,
            busbw,
            cost.bottleneck,
        )

    def run(
        self, schedule: Schedule, cluster: Cluster, routing: str | None = None, *, seed: int = 0
    ) -> Result:
        """List-schedule ``schedule``; ``routing`` and ``seed`` do not change a closed form."""
        stream_free: dict[str, float] = {}
        #: id(task) -> what a collective phase of that task reports (the schedule holds every
        #: task for the run, so no id is reused): a step repeats the same task objects
        seen: dict[int, _Priced] = {}
        #: ... and by what the price depends on: a step's tasks repeat the same calls (a
        #: pipeline send per micro-batch), so each distinct call is priced once
        calls: dict[tuple[object, ...], _Priced] = {}
        ends: list[float] = []
        results: list[PhaseResult] = []
        bytes_moved = 0.0
        # locals, not attribute lookups, in the loop: a step has tens of thousands of phases
        free_of, set_free = stream_free.get, stream_free.__setitem__
        priced_of, price = seen.get, self._price
        add_end, add_result = ends.append, results.append
        for index, phase in enumerate(schedule.phases):
            ready = 0.0
            for d in phase.after:
                end = ends[d]
                if end > ready:
                    ready = end
            stream = phase.stream
            free = free_of(stream, 0.0)
            start = ready if ready > free else free
            task = phase.task
            if isinstance(task, ComputeTask):
                duration = task.seconds * phase.repeat
                result = PhaseResult(
                    phase.name, phase.category, stream, start, start + duration, phase.repeat
                )
            else:
                priced = priced_of(id(task))
                if priced is None:
                    group = task.group
                    call = (task.op, task.nbytes, task.algo, task.proto, group.n_domains,
                            group.ranks_per_domain, group.min_ctas, group.max_ctas)  # fmt: skip
                    priced = calls.get(call)
                    if priced is None:
                        priced = calls[call] = price(task, cluster)
                    seen[id(task)] = priced
                if priced.over:
                    _check_capacity(phase.name, priced.cost, priced.fabric)
                duration = priced.time * phase.repeat
                bytes_moved += priced.nbytes * phase.repeat
                result = PhaseResult(
                    phase.name,
                    phase.category,
                    stream,
                    start,
                    start + duration,
                    phase.repeat,
                    priced.op,
                    priced.nbytes,
                    priced.nranks,
                    priced.algo,
                    priced.proto,
                    priced.busbw,
                    priced.bottleneck,
                )
            if duration < 0:
                raise InvariantError(f"phase {index} {phase.name!r} has negative duration")
            end = result.end
            add_end(end)
            set_free(stream, end)
            add_result(result)
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


class _Priced(NamedTuple):
    """One collective call as its phases report it (computed once per distinct call and run)."""

    cost: Cost
    fabric: CommFabric
    over: bool  #: breaks the injection check (raised for each phase, with its name)
    time: float
    op: str
    nbytes: float
    nranks: int
    algo: str
    proto: str
    busbw: float
    bottleneck: str


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
