"""The engine protocol every fidelity implements, and the result it returns.

``Engine.run(schedule, cluster, routing, *, seed) -> Result`` (DESIGN.md). Engines must agree
where their models meet; the result says which invariants the engine checked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from commwall.errors import CommwallError

if TYPE_CHECKING:
    from commwall.cluster import Cluster
    from commwall.collectives.schedule import Schedule


@dataclass(slots=True)
class PhaseResult:
    """When one phase ran, and for collectives what was chosen. Read-only by convention: an
    engine makes tens of thousands per step, and a frozen dataclass's ``__init__`` costs six
    times a plain slotted one's (every field set through ``object.__setattr__``)."""

    name: str
    category: str
    stream: str
    start: float
    end: float
    repeat: int = 1
    op: str | None = None
    nbytes: float = 0.0
    nranks: int = 1
    algo: str | None = None
    proto: str | None = None
    busbw: float = 0.0
    bottleneck: str | None = None

    @property
    def duration(self) -> float:
        """Seconds from start to end (all repeats)."""
        return self.end - self.start


@dataclass(frozen=True)
class Result:
    """What an engine computed for a schedule."""

    engine: str
    phases: tuple[PhaseResult, ...]
    makespan: float
    counters: dict[str, float] = field(default_factory=dict)
    invariants: tuple[str, ...] = ()
    details: dict[str, Any] = field(default_factory=dict)
    """Engine-specific extras (flow engine: routing, busiest links, utilisation series)."""

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return {
            "engine": self.engine,
            "makespan_s": self.makespan,
            "counters": dict(self.counters),
            "invariants_checked": list(self.invariants),
            "phases": [
                {
                    "name": p.name,
                    "category": p.category,
                    "stream": p.stream,
                    "start_s": p.start,
                    "end_s": p.end,
                    "repeat": p.repeat,
                    "op": p.op,
                    "nbytes": p.nbytes,
                    "nranks": p.nranks,
                    "algo": p.algo,
                    "proto": p.proto,
                    "busbw_Bps": p.busbw,
                    "bottleneck": p.bottleneck,
                }
                for p in self.phases
            ],
            **self.details,
        }


class Engine(Protocol):
    """A simulator fidelity."""

    name: str

    def run(
        self, schedule: Schedule, cluster: Cluster, routing: str | None = None, *, seed: int = 0
    ) -> Result:
        """Run ``schedule`` on ``cluster`` and return when everything happened."""
        ...


class InvariantError(CommwallError, RuntimeError):
    """An engine caught itself breaking one of its invariants."""


class EngineInputError(CommwallError, ValueError):
    """An engine input is wrong (a traffic matrix, capacities, a plan too large to hold, a group
    that does not fit the cluster); the message names the value, the problem and what is
    allowed."""


def check_order(
    schedule: Schedule, results: Sequence[PhaseResult], *, tolerance: float = 0.0
) -> None:
    """Raise :class:`InvariantError` if a phase started before a phase it waits for ended, or
    overlaps the previous phase of its stream. ``tolerance`` (relative and absolute, seconds)
    absorbs float rounding of engines that integrate over events."""
    last_end: dict[str, float] = {}
    ends = [res.end for res in results]
    keep = 1 - tolerance
    for phase, res in zip(schedule.phases, results, strict=True):
        start = res.start
        for dep in phase.after:
            if start < ends[dep] * keep - tolerance:
                raise InvariantError(f"phase {phase.name!r} started before phase {dep} ended")
        stream = phase.stream
        if start < last_end.get(stream, 0.0) * keep - tolerance:
            raise InvariantError(f"phase {phase.name!r} overlaps its stream {stream!r}")
        last_end[stream] = res.end
