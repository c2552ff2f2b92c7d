"""An NCCL-like tuner: evaluate every algorithm × protocol that can run, pick the fastest, say why.

NCCL (``ncclTopoGetAlgoTime``, ``tuning.cc``) predicts ``T = lat + S/algBw`` for every algorithm and
protocol enabled for the collective and picks the minimum unless ``NCCL_ALGO``/``NCCL_PROTO`` force
one. :func:`choose` does the same over commwall's cost models. ``policy="nccl"`` considers the
algorithms NCCL itself has for the operation; ``policy="all"`` adds halving-doubling, direct and
hierarchical, which NCCL does not implement, to show what they would change.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Final

from commwall.collectives.constants import Proto
from commwall.collectives.cost import Cost, Unsupported
from commwall.collectives.direct import direct
from commwall.collectives.fabric import CommFabric
from commwall.collectives.halving_doubling import halving_doubling
from commwall.collectives.hierarchical import hierarchical
from commwall.collectives.in_network import collnet, nvls, nvls_tree
from commwall.collectives.ops import Op
from commwall.collectives.pat import pat
from commwall.collectives.ring import ring
from commwall.collectives.tree import tree

AlgorithmFn = Callable[[Op, float, CommFabric, Proto], Cost]

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
        raise ValueError(f"unknown algorithm {name!r}: allowed are {', '.join(ALGORITHMS)}")
    return key


def parse_proto(name: str) -> Proto:
    """The :class:`Proto` for ``name`` (case-insensitive: ll, ll128, simple)."""
    for proto in Proto:
        if proto.value.lower() == name.strip().lower():
            return proto
    raise ValueError(f"unknown protocol {name!r}: allowed are {', '.join(p.value for p in Proto)}")


@dataclass(frozen=True)
class Choice:
    """The chosen cost and everything that was weighed."""

    best: Cost
    considered: tuple[Cost, ...]
    rejected: tuple[tuple[str, Proto, str], ...] = field(default=())

    def explain(self) -> str:
        """Human-readable reasons: the ranking and why the others could not run."""
        lines = [
            f"chose {self.best.algo}/{self.best.proto.value}: lowest predicted time "
            f"{self.best.time * 1e6:.2f} us (latency {self.best.latency * 1e6:.2f} us + "
            f"bandwidth {self.best.bw_time * 1e6:.2f} us, bound by {self.best.bottleneck})"
        ]
        for cost in sorted(self.considered, key=lambda c: c.time):
            if cost is self.best:
                continue
            lines.append(
                f"  {cost.algo}/{cost.proto.value}: {cost.time * 1e6:.2f} us "
                f"({cost.time / self.best.time:.2f}x)"
            )
        lines.extend(f"  {a}/{p.value}: not possible — {why}" for a, p, why in self.rejected)
        return "\n".join(lines)


def evaluate(op: Op, nbytes: float, fabric: CommFabric, algo: str, proto: Proto) -> Cost:
    """Cost of one algorithm × protocol; raises :class:`Unsupported` when it cannot run."""
    if nbytes < 0:
        raise ValueError(f"nbytes must be >= 0, got {nbytes}")
    return ALGORITHMS[algo](op, nbytes, fabric, proto)


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
        raise ValueError(f"unknown tuner policy {policy!r}: allowed are {', '.join(POLICIES)}")
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
    for name in algos:
        for pr in protos:
            try:
                considered.append(evaluate(op, nbytes, fabric, name, pr))
            except Unsupported as why:
                rejected.append((name, pr, str(why)))
    if not considered:
        reasons = "; ".join(f"{a}/{p.value}: {w}" for a, p, w in rejected)
        raise Unsupported(f"no algorithm can run {op.value} here — {reasons}")
    best = min(considered, key=lambda c: (c.time, c.algo, c.proto.value))
    return Choice(best, tuple(considered), tuple(rejected))
