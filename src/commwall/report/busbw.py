"""Bus bandwidth against message size for the job's communicators, every algorithm × protocol.

For each communicator the step uses (TP, DP, EP, PP) the collective that costs the step most is
priced at sizes 1 KiB … 4 GiB with every algorithm and protocol that can run on its shape
(:func:`commwall.collectives.evaluate`), beside the tuner's pick
(:func:`commwall.collectives.choose`). busbw is nccl-tests' convention: algbw × the operation's
bus factor, e.g. 2(n−1)/n for all-reduce (nccl-tests ``doc/PERFORMANCE.md``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["SIZES", "CommCurves", "communicator_curves", "curves_for"]

#: Message sizes of the curves: 1 KiB to 4 GiB by factors of 2 (bytes).
SIZES: tuple[int, ...] = tuple(2**k for k in range(10, 33))

_CATEGORY_NAMES = {"tp": "tensor parallel", "dp": "data parallel", "ep": "expert parallel",
                   "pp": "pipeline"}  # fmt: skip


@dataclass(frozen=True)
class CommCurves:
    """busbw (bytes/s) per size for one communicator and operation.

    ``curves`` maps ``"algo/proto"`` to one value per :data:`SIZES` entry (``None`` where that
    pair cannot run at that size); ``tuner`` is the tuner's choice per size; ``calls`` are the
    step's own calls as ``(bytes, busbw)``.
    """

    category: str
    title: str
    op: str
    nranks: int
    n_domains: int
    ranks_per_domain: int
    sizes: tuple[int, ...]
    curves: dict[str, tuple[float | None, ...]]
    tuner: tuple[tuple[str, float], ...]
    calls: tuple[tuple[float, float], ...]


def curves_for(
    op_name: str,
    fabric: Any,
    *,
    category: str = "",
    title: str = "",
    policy: str = "nccl",
    calls: tuple[tuple[float, float], ...] = (),
    sizes: tuple[int, ...] = SIZES,
) -> CommCurves:
    """Every algorithm × protocol's busbw for ``op_name`` on ``fabric``
    (a :class:`~commwall.collectives.CommFabric`) at ``sizes``."""
    from commwall.collectives import ALGORITHMS, Proto, Unsupported, choose, evaluate, parse_op

    op = parse_op(op_name)
    curves: dict[str, tuple[float | None, ...]] = {}
    for algo in ALGORITHMS:
        for proto in Proto:
            values: list[float | None] = []
            for size in sizes:
                try:
                    values.append(evaluate(op, float(size), fabric, algo, proto).busbw)
                except (Unsupported, ValueError):
                    values.append(None)
            if any(v is not None for v in values):
                curves[f"{algo}/{proto.value}"] = tuple(values)
    tuner: list[tuple[str, float]] = []
    for size in sizes:
        try:
            best = choose(op, float(size), fabric, policy=policy).best
        except (Unsupported, ValueError):
            tuner.append(("", 0.0))
            continue
        tuner.append((f"{best.algo}/{best.proto.value}", best.busbw))
    return CommCurves(
        category=category,
        title=title or op.value,
        op=op.value,
        nranks=fabric.nranks,
        n_domains=fabric.n_domains,
        ranks_per_domain=fabric.ranks_per_domain,
        sizes=sizes,
        curves=curves,
        tuner=tuple(tuner),
        calls=calls,
    )


def communicator_curves(scenario: Any, cluster: Any, report: Any) -> tuple[CommCurves, ...]:
    """Curves for the costliest collective of each communicator the step of ``report`` uses."""
    from commwall.workload.job import resolve_job
    from commwall.workload.step import job_groups

    groups = job_groups(resolve_job(scenario.job, cluster), cluster)
    out: list[CommCurves] = []
    for category in ("tp", "dp", "ep", "pp"):
        stats = [c for c in report.collectives if c.category == category and c.nranks > 1]
        if not stats:
            continue
        main = max(stats, key=lambda c: c.total)
        shape = next(
            (g for g in _candidates(groups, category, main.name) if g.nranks == main.nranks),
            None,
        )
        if shape is None:  # a communicator whose shape the layout does not name
            continue
        fabric = shape.limited(cluster.comm_fabric(shape.n_domains, shape.ranks_per_domain))
        calls = tuple(
            (float(c.nbytes), float(c.busbw))
            for c in stats
            if c.op == main.op and c.nranks == main.nranks
        )
        out.append(
            curves_for(
                main.op,
                fabric,
                category=category,
                title=f"{_CATEGORY_NAMES[category]}: {main.name}",
                policy=scenario.simulation.policy,
                calls=calls,
            )
        )
    return tuple(out)


def _candidates(groups: Any, category: str, name: str = "") -> tuple[Any, ...]:
    """The groups a collective of ``category`` named ``name`` may run on: a data-parallel
    one on the DP (the shard group with hybrid sharding) or expert-DP group, a replica
    all-reduce of hybrid sharding on the replicas' (``job.dp_replicate``)."""
    if category == "dp":
        return (groups.dpr,) if "replica" in name else (groups.dp, groups.edp)
    return (getattr(groups, category),)
