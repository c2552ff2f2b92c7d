"""An NCCL-like tuner: evaluate every algorithm × protocol that can run, pick one, say why.

NCCL (``ncclTopoGetAlgoTime``, ``tuning.cc``) predicts ``T = lat + S/algBw`` for every algorithm and
protocol enabled for the collective and picks the minimum unless ``NCCL_ALGO``/``NCCL_PROTO`` force
one. :func:`choose` does the same over commwall's cost models: ``policy="nccl"`` considers the
algorithms NCCL itself has for the operation and ranks them by NCCL's own estimate
(:attr:`~commwall.collectives.cost.Cost.tuner_time`) — what NCCL would run — then reports the
time that choice really takes (:attr:`~commwall.collectives.cost.Cost.time`). ``policy="all"``
adds halving-doubling, direct and hierarchical, which NCCL does not implement, and ranks
everything by the time it takes, to show what a better choice would change.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Final, Protocol

from commwall.collectives.constants import Proto
from commwall.collectives.cost import Cost, Unsupported
from commwall.collectives.direct import direct
from commwall.collectives.errors import CollectiveError
from commwall.collectives.fabric import CommFabric
from commwall.collectives.halving_doubling import halving_doubling
from commwall.collectives.hierarchical import hierarchical
from commwall.collectives.in_network import collnet, nvls, nvls_tree
from commwall.collectives.ops import Op
from commwall.collectives.pat import pat
from commwall.collectives.ring import ring
from commwall.collectives.tree import tree


class AlgorithmFn(Protocol):
    """A cost model: ``(op, nbytes, fabric, proto) -> Cost``; ``estimate=True`` returns NCCL's
    tuner estimate only (cheaper; :func:`choose` ranks candidates with it)."""

    def __call__(
        self, op: Op, nbytes: float, f: CommFabric, proto: Proto, *, estimate: bool = False
    ) -> Cost: ...


#: Every algorithm commwall models, by name.
ALGORITHMS: Final[dict[str, AlgorithmFn]] = {
    "ring": ring,
    "tree": tree,
    "nvls": nvls,
    "nvls_tree": nvls_tree,
    "collnet": collnet,
    "pat": pat,
    "halving_doubling": halving_doubling,
    "direct": direct,
    "hierarchical": hierarchical,
}

#: The algorithms NCCL offers per operation (``nccl-model.md`` §4.5).
NCCL_MENU: Final[dict[Op, tuple[str, ...]]] = {
    Op.ALL_REDUCE: ("ring", "tree", "nvls", "nvls_tree", "collnet"),
    Op.REDUCE_SCATTER: ("ring", "nvls", "pat"),
    Op.ALL_GATHER: ("ring", "nvls", "pat"),
    Op.BROADCAST: ("ring",),
    Op.REDUCE: ("ring",),
    Op.ALLTOALL: ("direct",),
    Op.SENDRECV: ("direct",),
}

POLICIES: Final = ("nccl", "all")

_ALGO_ALIASES: Final = {
    "nvlstree": "nvls_tree",
    "nvls-tree": "nvls_tree",
    "sharp": "collnet",
    "collnet_direct": "collnet",
    "collnetdirect": "collnet",
    "rabenseifner": "halving_doubling",
    "halving-doubling": "halving_doubling",
    "hd": "halving_doubling",
    "dbt": "tree",
    "2d": "hierarchical",
}


def parse_algo(name: str) -> str:
    """Canonical algorithm name for ``name`` (NCCL_ALGO spellings accepted)."""
    key = name.strip().lower()
    key = _ALGO_ALIASES.get(key, key)
    if key not in ALGORITHMS:
        raise CollectiveError(f"unknown algorithm {name!r}: allowed are {', '.join(ALGORITHMS)}")
    return key


def parse_proto(name: str) -> Proto:
    """The :class:`Proto` for ``name`` (case-insensitive: ll, ll128, simple)."""
    for proto in Proto:
        if proto.value.lower() == name.strip().lower():
            return proto
    raise CollectiveError(
        f"unknown protocol {name!r}: allowed are {', '.join(p.value for p in Proto)}"
    )


@dataclass(frozen=True)
class Choice:
    """The chosen cost and everything that was weighed."""

    best: Cost
    considered: tuple[Cost, ...]
    rejected: tuple[tuple[str, Proto, str], ...] = field(default=())
    policy: str = "nccl"
    fabric: CommFabric | None = field(default=None, compare=False, repr=False)

    def timed(self) -> tuple[Cost, ...]:
        """Every considered candidate with the time it would take (the NCCL policy ranks by
        estimates only; this prices each one's launch plan)."""
        if self.fabric is None:
            return self.considered
        return tuple(
            evaluate(c.op, c.nbytes, self.fabric, c.algo, c.proto) if c.estimated else c
            for c in self.considered
        )

    def _key(self, cost: Cost) -> float:
        return cost.selection_time if self.policy == "nccl" else cost.time

    def explain(self) -> str:
        """Human-readable reasons: the ranking and why the others could not run."""
        best = self.best
        by = "NCCL's estimate" if self.policy == "nccl" else "time"
        lines = [
            f"chose {best.algo}/{best.proto.value}: lowest {by} "
            f"({self._key(best) * 1e6:.2f} us); it takes {best.time * 1e6:.2f} us (latency "
            f"{best.latency * 1e6:.2f} us + bandwidth {best.bw_time * 1e6:.2f} us, bound by "
            f"{best.bottleneck}, {best.channels} channel(s))"
        ]
        for cost in sorted(self.timed(), key=self._key):
            if cost.algo == best.algo and cost.proto is best.proto:
                continue
            lines.append(
                f"  {cost.algo}/{cost.proto.value}: {by} {self._key(cost) * 1e6:.2f} us, "
                f"takes {cost.time * 1e6:.2f} us ({cost.time / best.time:.2f}x)"
                if best.time > 0
                else f"  {cost.algo}/{cost.proto.value}: takes {cost.time * 1e6:.2f} us"
            )
        lines.extend(f"  {a}/{p.value}: not possible — {why}" for a, p, why in self.rejected)
        return "\n".join(lines)


def evaluate(
    op: Op, nbytes: float, fabric: CommFabric, algo: str, proto: Proto, *, estimate: bool = False
) -> Cost:
    """Cost of one algorithm × protocol; raises :class:`Unsupported` when it cannot run.
    ``estimate=True``: NCCL's tuner estimate only (:attr:`Cost.estimated`)."""
    if nbytes < 0:
        raise CollectiveError(f"nbytes must be >= 0, got {nbytes}")
    if nbytes == 0 and not estimate and fabric.nranks > 1:
        # NCCL discards an empty collective before launching anything ("Empty collectives can
        # be discarded", enqueue.cc taskAppend); empty sends and receives still meet their peer.
        est = ALGORITHMS[algo](op, 0.0, fabric, proto, estimate=True)
        latency = est.latency if op in (Op.ALLTOALL, Op.SENDRECV) else 0.0
        return replace(est, latency=latency, bw_time=0.0, estimated=False)
    return ALGORITHMS[algo](op, nbytes, fabric, proto, estimate=estimate)


def choose(
    op: Op,
    nbytes: float,
    fabric: CommFabric,
    *,
    algo: str | None = None,
    proto: Proto | None = None,
    policy: str = "nccl",
) -> Choice:
    """Pick the fastest algorithm × protocol for ``op`` of ``nbytes`` on ``fabric``.

    ``algo``/``proto`` restrict the choice as ``NCCL_ALGO``/``NCCL_PROTO`` do. Raises
    :class:`Unsupported` (listing every reason) when nothing can run.
    """
    if policy not in POLICIES:
        raise CollectiveError(f"unknown tuner policy {policy!r}: allowed are {', '.join(POLICIES)}")
    algos: Iterable[str]
    if algo is not None:
        algos = (algo,)
    elif policy == "nccl":
        algos = NCCL_MENU[op]
    else:
        algos = ALGORITHMS
    protos = (proto,) if proto is not None else tuple(Proto)
    considered: list[Cost] = []
    rejected: list[tuple[str, Proto, str]] = []
    estimate = policy == "nccl"  # NCCL ranks by its estimate: price only the winner's plan
    for name in algos:
        for pr in protos:
            try:
                considered.append(evaluate(op, nbytes, fabric, name, pr, estimate=estimate))
            except Unsupported as why:
                rejected.append((name, pr, str(why)))
    if not considered:
        reasons = "; ".join(f"{a}/{p.value}: {w}" for a, p, w in rejected)
        raise Unsupported(f"no algorithm can run {op.value} here — {reasons}")
    if policy == "nccl":
        pick = min(considered, key=lambda c: (c.selection_time, c.algo, c.proto.value))
        best = evaluate(op, nbytes, fabric, pick.algo, pick.proto) if pick.estimated else pick
        considered = [best if c is pick else c for c in considered]
    else:
        best = min(considered, key=lambda c: (c.time, c.algo, c.proto.value))
    return Choice(best, tuple(considered), tuple(rejected), policy, fabric)
