"""Schedules: what a collective or a training step does, as data, for any engine to run.

A :class:`Schedule` is a list of :class:`Phase` objects. Each phase holds one task — a collective
call on a communicator (:class:`CollectiveTask`), a point-to-point transfer (a ``sendrecv``
collective on a two-rank group) or local work (:class:`ComputeTask`) — plus the stream it occupies
and the phases it waits for. Phases on one stream run one after another (a CUDA stream); phases on
different streams overlap unless a dependency orders them. ``repeat`` stores identical back-to-back
phases once (DESIGN.md: symmetric phases are stored once with a repeat count).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from commwall.collectives.constants import Proto
from commwall.collectives.errors import CollectiveError
from commwall.collectives.fabric import CommFabric
from commwall.collectives.nccl_env import limit_channels
from commwall.collectives.ops import Op


@dataclass(frozen=True)
class Placement:
    """Which global GPU ranks every concurrent copy of a communicator holds.

    Member ``i`` of the copy based at ``b`` is ``b + (i // per_block)·stride + i % per_block``:
    ``per_block`` consecutive ranks every ``stride`` ranks. A data-parallel group of Megatron's
    ``tp-dp-pp`` order is ``Placement(dp, stride=tp, bases=(0, …, tp−1))``: one copy per TP rank,
    all running the same collective at once (which the flow engine needs to see contention).

    >>> Placement(4, stride=8, bases=(0, 1)).members().tolist()
    [[0, 8, 16, 24], [1, 9, 17, 25]]
    >>> Placement(4, stride=8, per_block=2).members().tolist()  # 2 ranks of each 8-GPU node
    [[0, 1, 8, 9]]
    """

    size: int
    stride: int = 1
    per_block: int = 1
    bases: tuple[int, ...] = (0,)

    def __post_init__(self) -> None:
        if self.size < 1 or self.per_block < 1 or self.size % self.per_block:
            raise CollectiveError(
                f"placement size={self.size}, per_block={self.per_block}: need size >= 1 and a "
                "whole number of blocks"
            )
        if self.stride == 0 or not self.bases:
            raise CollectiveError("placement needs a non-zero stride and at least one base")
        # the lowest member, without building them: the lowest base plus the most negative
        # block offset (a negative stride walks down)
        lowest = min(self.bases) + min(0, (self.size // self.per_block - 1) * self.stride)
        if lowest < 0:
            raise CollectiveError(f"placement {self} reaches a negative rank")

    @property
    def copies(self) -> int:
        """Concurrent copies of the communicator."""
        return len(self.bases)

    def members(self) -> npt.NDArray[np.int64]:
        """``(copies, size)`` global ranks; row ``c`` is copy ``c`` in communicator rank order."""
        i = np.arange(self.size, dtype=np.int64)
        offsets = (i // self.per_block) * self.stride + i % self.per_block
        return np.asarray(self.bases, dtype=np.int64)[:, None] + offsets[None, :]


@dataclass(frozen=True)
class Group:
    """A communicator by shape: ``n_domains`` scale-up domains × ``ranks_per_domain`` ranks.

    ``placement`` (optional) says which GPUs hold it; the analytic engine needs only the shape,
    the flow engine runs every copy of the placement concurrently on the real topology.
    """

    name: str
    n_domains: int
    ranks_per_domain: int
    placement: Placement | None = None
    #: The communicator's own NCCL ``minCTAs`` / ``maxCTAs`` (``ncclConfig_t``; a framework's
    #: per-communicator options, e.g. Megatron-Core's ``--nccl-communicator-config-path``);
    #: ``None``: NCCL's default. They bound its channels (:meth:`limited`).
    min_ctas: int | None = None
    max_ctas: int | None = None

    def __post_init__(self) -> None:
        if self.n_domains < 1 or self.ranks_per_domain < 1:
            raise CollectiveError(f"group {self.name!r} needs positive sizes, got {self}")
        for bound in (self.min_ctas, self.max_ctas):
            if bound is not None and bound < 1:
                raise CollectiveError(f"group {self.name!r}: CTA bounds must be >= 1, got {bound}")

    def limited(self, fabric: CommFabric) -> CommFabric:
        """``fabric`` as this communicator sees it: its channels within its CTA bounds."""
        if self.min_ctas is None and self.max_ctas is None:
            return fabric
        return limit_channels(fabric, self.min_ctas, self.max_ctas)

    @property
    def nranks(self) -> int:
        """Ranks in the communicator."""
        return self.n_domains * self.ranks_per_domain


@dataclass(frozen=True)
class CollectiveTask:
    """One collective call: ``nbytes`` in nccl-tests' size convention for ``op``."""

    op: Op
    nbytes: float
    group: Group
    algo: str | None = None
    proto: Proto | None = None


@dataclass(frozen=True)
class ComputeTask:
    """Local work of known duration (seconds).

    ``sm_bound`` marks a training step's compute that collective kernels beside it slow
    (:mod:`commwall.workload.contention`): the share of ``seconds`` that scales with the SMs
    it gets (GEMMs, attention), the rest being memory-bound. ``None``, the default, is work
    nothing beside it slows.
    """

    seconds: float
    sm_bound: float | None = None

    def __post_init__(self) -> None:
        if self.sm_bound is not None and not 0.0 <= self.sm_bound <= 1.0:
            raise CollectiveError(f"compute task sm_bound={self.sm_bound!r}: need 0 to 1 or None")


Task = CollectiveTask | ComputeTask


@dataclass(frozen=True)
class Phase:
    """One node of the schedule's dependency graph."""

    name: str
    task: Task
    category: str
    stream: str = "compute"
    after: tuple[int, ...] = ()
    repeat: int = 1

    def __post_init__(self) -> None:
        if self.repeat < 0:
            raise CollectiveError(f"phase {self.name!r}: repeat must be >= 0, got {self.repeat}")


@dataclass
class Schedule:
    """An ordered list of phases; a phase may only wait for earlier ones."""

    phases: list[Phase] = field(default_factory=list)

    def add(self, phase: Phase) -> int:
        """Append ``phase`` and return its index (for later ``after=`` references)."""
        for dep in phase.after:
            if not 0 <= dep < len(self.phases):
                raise CollectiveError(
                    f"phase {phase.name!r} waits for phase {dep}, which is not an earlier phase"
                )
        self.phases.append(phase)
        return len(self.phases) - 1

    @classmethod
    def single(cls, task: CollectiveTask, name: str = "collective") -> Schedule:
        """A schedule of one collective call."""
        return cls([Phase(name, task, "collective", stream="comm")])
