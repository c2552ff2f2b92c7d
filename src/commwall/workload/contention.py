"""Collective kernels beside compute: the SMs and HBM bandwidth they take from it.

**SMs.** NCCL "will launch one CUDA block per communication channel" (NCCL environment
variables, ``NCCL_NTHREADS``), and a block holds its SM until the kernel ends ("NCCL CTAs won't
share an SM with compute kernels", a maintainer's reply as quoted in nccl#689); reducing the
channels "reduces the number of CUDA blocks used for communication, hence the impact on GPU
computing resources" (``NCCL_MAX_NCHANNELS``). A GEMM or attention kernel launched beside it
on another stream gets the SMs left. That is why Transformer Engine's Userbuffers overlap
hands cuBLAS an SM margin (``set_sm_margin``; priced in :mod:`commwall.workload.step`), why
it offers one for every GEMM, ``NVTE_EXT_MARGIN_SM``, which "comes in handy when DP is
overlapped with GEMMs" (``pytorch/csrc/extensions/gemm.cpp`` @3492dd1), and why DeepSeek-V3
wrote all-to-all kernels that hold 20 of the H800's 132 SMs (DeepSeek-AI, *DeepSeek-V3
Technical Report*, 2024, §3.2.2, §3.5.1).

**HBM.** The collective's data also crosses HBM: "300GB/s needs to be multiplied by at least
2x for memory bandwidth … it can be 3x" (sjeaugey, nccl#1428, where a GEMM beside an
all-gather on A100 ran 1.76x longer), so a memory-bound kernel beside a collective moving
``b`` bytes/s per GPU gets ``H − 2b`` of the GPU's achieved HBM bandwidth ``H``.

**The rate.** A GPU has ``N`` SMs; the collectives beside a compute phase hold ``c(t)`` of them
(the channels of every collective running on that pipeline stage at that moment,
:attr:`Cost.channels <commwall.collectives.cost.Cost.channels>`, at most ``N − 1``) and move
``b(t)`` (their busbw, the bytes/s each GPU's links carry). A share ``β`` of the phase's seconds
is SM-bound (GEMMs, attention: :attr:`ComputeTask.sm_bound
<commwall.collectives.schedule.ComputeTask.sm_bound>`) and the rest memory-bound, so a second
of the phase's work takes ``σ = β·N / (N − c) + (1 − β)·H / (H − 2b)`` seconds beside them
(``H − 2b`` at least ``H`` / 10), and the phase ends later by ``∫ (1 − 1/σ) dt`` over its
overlap. On an H100 beside an NVLink all-gather on NCCL's 24 channels a GEMM runs 22 %
longer, near the 18.9 % average slowdown of compute overlapped with communication measured on
A100, H100, MI210 and MI250 (*Characterizing Compute-Communication Overlap in GPU-Accelerated
Distributed Deep Learning: Performance and Power Implications*, arXiv 2507.03114, 2025;
maximum 40 %).

A lower bound, ours: an even share of SMs, and not the tail of a GEMM whose grid was sized for
all ``N`` SMs (a 132-block GEMM beside a 24-block all-gather "nearly doubles" on H100, NVIDIA
developer forum thread 337991). Collectives on the compute stream never overlap it (they block),
and the Userbuffers TP collectives (on a ``.ub`` side stream) already took their margin; NCCL's
TP collectives beside the backward GEMMs (``job.tp_backward_overlap``) slow them at the same
rate, priced on their own GEMM before the run (below).

**Pairs.** NCCL's TP collectives that Megatron and Transformer Engine start beside a backward
GEMM and wait for after it (``job.tp_backward_overlap``) are priced on that GEMM before the
run (:func:`paired_stretch`: the phase does ``C/σ`` of its work while a collective of ``C``
seconds runs, the rest at full speed), as the fixed point below would find for them when
nothing else overlaps: every backward has them, and pricing them there saves a rerun of the
step per design. A step plan is shared by a sweep's designs (``build_step``'s cache), so its
pairs are found once, and the stretch, the stretched schedule and its layout are kept by the
pairs' prices, which only the scale-up side of a cluster sets (:func:`_paired_run`).

**The fixed point.** Given where the collectives ran, each compute phase ends where its work is
done at the rate above (solved exactly, the overlap its own stretch adds included). Stretching
phases moves later phases and what overlaps them, so :func:`run_contended` runs the schedule,
stretches every compute phase, and runs it again until no stretch moves by more than
:data:`TOLERANCE` of the step (at most :data:`MAX_PASSES` runs after the first). A stretch
below that on every stage is not applied and costs no rerun. Every run is the same engine on
the same seed: deterministic.
"""

from __future__ import annotations

import weakref
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Final, NamedTuple

import numpy as np
import numpy.typing as npt

from commwall.collectives.constants import Proto
from commwall.collectives.cost import Unsupported
from commwall.collectives.schedule import CollectiveTask, ComputeTask, Phase, Schedule
from commwall.engines.analytic import AnalyticEngine

if TYPE_CHECKING:
    from commwall.cluster import Cluster
    from commwall.engines.base import Engine, PhaseResult, Result
    from commwall.workload.job import Job

#: The stream suffix of Transformer Engine's Userbuffers TP collectives, whose GEMMs took their
#: SM margin already (:mod:`commwall.workload.step`).
UB_STREAM: Final = ".ub"
#: The stream suffix of NCCL's TP collectives beside the backward GEMMs
#: (``job.tp_backward_overlap``). The step builder adds each right after the GEMM phase it starts
#: beside, so their SMs and HBM are priced on that pair before the run (:func:`paired_stretch`)
#: instead of by reruns; collectives of other streams beside the same GEMMs still are.
PAIRED_STREAM: Final = ".tp"
#: Runs of the schedule at most after the first (module doc).
MAX_PASSES: Final = 4
#: A change of every stretch below this share of the step between two runs: settled.
TOLERANCE: Final = 1e-3


@dataclass(frozen=True)
class Contention:
    """What the collectives beside compute cost it: per phase index, the seconds added to a
    compute phase (all its repeats), and the runs after the first it took to settle (0 and
    nothing added when the largest stage's stretch is below :data:`TOLERANCE` of the step)."""

    extra: dict[int, float]
    passes: int

    def stage_seconds(self, schedule: Schedule, stage: int) -> float:
        """Seconds added to the compute of pipeline stage ``stage``."""
        prefix = f"s{stage}."
        return sum(s for i, s in self.extra.items() if schedule.phases[i].stream.startswith(prefix))


def collective_sms(phase: Phase, res: PhaseResult, cluster: Cluster, policy: str, sms: int) -> int:
    """SMs a collective phase held while it ran: the channels of the plan the engine ran (its
    algorithm and protocol), at most ``sms − 1``."""
    task = phase.task
    assert isinstance(task, CollectiveTask)
    analytic = AnalyticEngine(policy)
    ran = replace(
        task,
        algo=res.algo or task.algo,
        proto=Proto(res.proto) if res.proto else task.proto,
    )
    try:
        cost = analytic.cost(ran, cluster)
    except Unsupported:
        cost = analytic.cost(task, cluster)
    return max(0, min(cost.channels, sms - 1))


#: HBM bytes per byte a collective's links carry (sjeaugey, nccl#1428: "at least 2x").
HBM_PER_LINK_BYTE: Final = 2.0
#: The least share of its HBM bandwidth a memory-bound kernel keeps beside collectives (ours).
MIN_HBM_SHARE: Final = 0.1


@dataclass(frozen=True)
class _Layout:
    """What :func:`stretch` needs of a schedule, found once for all its runs: the compute
    phases collectives can slow and the collectives beside compute, each with its stage."""

    compute: dict[int, list[int]]  # stage → phase indices
    beside: dict[int, list[int]]
    share: dict[int, float]  # phase index → sm_bound
    work: dict[int, float]  # phase index → seconds on the whole GPU, all repeats

    @classmethod
    def of(cls, schedule: Schedule) -> _Layout:
        compute: dict[int, list[int]] = defaultdict(list)
        beside: dict[int, list[int]] = defaultdict(list)
        share: dict[int, float] = {}
        work: dict[int, float] = {}
        stages: dict[str, int] = {}
        for i, phase in enumerate(schedule.phases):
            task = phase.task
            stage = stages.get(phase.stream)
            if stage is None:
                head = phase.stream.split(".", 1)[0]
                stage = stages[phase.stream] = int(head[1:]) if head[1:].isdigit() else -1
            if isinstance(task, ComputeTask):
                if task.sm_bound is not None:
                    compute[stage].append(i)
                    share[i] = task.sm_bound
                    work[i] = task.seconds * phase.repeat
            elif not phase.stream.endswith((".compute", UB_STREAM, PAIRED_STREAM)):
                beside[stage].append(i)
        return cls(dict(compute), dict(beside), share, work)


#: What :func:`_derived` computed from a schedule, by ``(id(schedule), what)``: the schedule
#: (held weakly, its entries dropped with it) and its phase count when computed.
_DERIVED: dict[tuple[int, str], tuple[weakref.ref[Schedule], int, Any]] = {}


def _derived(schedule: Schedule, what: str, compute: Callable[[Schedule], Any]) -> Any:
    """``compute(schedule)``, kept while ``schedule`` lives and has as many phases: a step plan
    is built once per job and run for every cluster of a sweep (``build_step``'s cache), so
    what depends on the schedule alone is found once. Schedules only grow (``Schedule.add``;
    a plan is shared read-only, and :func:`stretched` copies), so a grown one is found again."""
    key = (id(schedule), what)
    kept = _DERIVED.get(key)
    if kept is not None and kept[0]() is schedule and kept[1] == len(schedule.phases):
        return kept[2]
    value = compute(schedule)

    def forget(_: weakref.ref[Schedule]) -> None:
        _DERIVED.pop(key, None)

    _DERIVED[key] = (weakref.ref(schedule, forget), len(schedule.phases), value)
    return value


def _layout_after(base: Schedule, schedule: Schedule, changed: dict[int, float]) -> _Layout:
    """:meth:`_Layout.of` ``schedule``, which is ``base`` with the compute phases ``changed``
    longer (:func:`stretched`): ``base``'s layout (kept, :func:`_derived`) with their work."""
    layout: _Layout = _derived(base, "layout", _Layout.of)
    if not changed:
        return layout
    work = dict(layout.work)
    phases = schedule.phases
    for i in changed:
        if i in work:
            work[i] = phases[i].task.seconds * phases[i].repeat  # type: ignore[union-attr]
    return _Layout(layout.compute, layout.beside, layout.share, work)


def stretch(
    schedule: Schedule,
    result: Result,
    cluster: Cluster,
    *,
    sms: int,
    hbm: float,
    policy: str,
    layout: _Layout | None = None,
) -> dict[int, float]:
    """Seconds each compute phase of ``schedule`` ends later because of the collectives
    beside it in ``result`` (module doc); phases that lose nothing are left out."""
    layout = layout or _Layout.of(schedule)
    phases = result.phases
    held: dict[tuple[object, ...], int] = {}  # steps repeat the same calls
    extra: dict[int, float] = {}
    for stage, indices in layout.compute.items():
        intervals: list[tuple[float, float, int, float]] = []
        for j in layout.beside.get(stage, ()):
            res = phases[j]
            if res.end <= res.start:
                continue
            task = schedule.phases[j].task
            assert isinstance(task, CollectiveTask)
            g = task.group
            key = (task.op, task.nbytes, g.n_domains, g.ranks_per_domain, res.algo, res.proto)
            c = held.get(key)
            if c is None:
                c = held[key] = collective_sms(schedule.phases[j], res, cluster, policy, sms)
            intervals.append((res.start, res.end, c, max(0.0, res.busbw)))
        if not intervals:
            continue
        # c(t) SMs held and b(t) bytes/s moved by the stage's collectives: piecewise constant
        times = np.array([t for s, e, _, _ in intervals for t in (s, e)], dtype=np.float64)
        order = np.argsort(times, kind="stable")
        times = times[order]
        dc = np.array([d for _, _, c, _ in intervals for d in (c, -c)], dtype=np.float64)
        db = np.array([d for _, _, _, b in intervals for d in (b, -b)], dtype=np.float64)
        taken = np.clip(np.cumsum(dc[order])[:-1], 0.0, sms - 1.0)
        moved = np.maximum(np.cumsum(db[order])[:-1], 0.0)
        sm_slow, hbm_slow = _slowdowns(taken, moved, sms, hbm)
        widths = np.diff(times)
        lo, hi = times[0], times[-1]
        by_share: dict[float, list[int]] = defaultdict(list)
        for i in indices:
            res = phases[i]
            if res.end > lo and res.start < hi and res.end > res.start:
                by_share[layout.share[i]].append(i)
        for beta, members in by_share.items():
            # G(t) = t − ∫ (1 − 1/σ): the work a phase has done by t, less its start's; it
            # rises at 1/σ beside collectives and at 1 elsewhere, so each phase ends where G
            # has risen by its work (the overlap found at the end, not guessed from before)
            sigma = beta * sm_slow + (1.0 - beta) * hbm_slow
            lost = np.concatenate(([0.0], np.cumsum((1.0 - 1.0 / sigma) * widths)))
            starts = np.array([phases[i].start for i in members])
            work = np.array([layout.work[i] for i in members])
            # G rises at slope 1 outside the collectives: one knot far out on each side
            pad = 1.0 + (hi - lo) + float(work.max()) + max(0.0, lo - float(starts.min()))
            knots = np.concatenate(([lo - pad], times, [hi + pad]))
            done = np.concatenate(([lo - pad], times - lost, [hi - lost[-1] + pad]))
            ends = np.interp(np.interp(starts, knots, done) + work, done, knots)
            for i, seconds in zip(members, (ends - starts - work).tolist(), strict=True):
                if seconds > 1e-15:
                    extra[i] = seconds
    return extra


def _slowdowns(
    taken: npt.NDArray[np.float64], moved: npt.NDArray[np.float64], sms: int, hbm: float
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Seconds per second of SM-bound and of memory-bound work (module doc's ``N/(N − c)`` and
    ``H/(H − 2b)``) while collectives hold ``taken`` SMs and move ``moved`` bytes/s."""
    sm_slow = sms / (sms - taken)
    if hbm <= 0:
        return sm_slow, np.ones_like(taken)
    return sm_slow, hbm / np.maximum(hbm - HBM_PER_LINK_BYTE * moved, MIN_HBM_SHARE * hbm)


class _Pairs(NamedTuple):
    """The GEMM phases of a schedule with the :data:`PAIRED_STREAM` TP collectives right after
    them (:func:`paired_stretch`), found once per schedule (:func:`_derived`)."""

    #: (GEMM phase index, its task, its work in all repeats, ((call, repeats), ...) in stream
    #: order), ``call`` an index into ``calls``
    gemms: tuple[tuple[int, ComputeTask, float, tuple[tuple[int, int], ...]], ...]
    #: each distinct (collective, the GEMM's SM-bound share) the GEMMs meet
    calls: tuple[tuple[CollectiveTask, float], ...]


def _pairs(schedule: Schedule) -> _Pairs:
    """:class:`_Pairs` of ``schedule``."""
    gemms: list[tuple[int, ComputeTask, float, tuple[tuple[int, int], ...]]] = []
    calls: dict[tuple[CollectiveTask, float], int] = {}
    phases = schedule.phases
    n = len(phases)
    for i, gemm in enumerate(phases):
        work = gemm.task
        if not isinstance(work, ComputeTask) or work.sm_bound is None:
            continue
        chain: list[tuple[int, int]] = []
        j = i + 1
        while j < n and phases[j].category == "tp" and phases[j].stream.endswith(PAIRED_STREAM):
            task = phases[j].task
            assert isinstance(task, CollectiveTask)
            chain.append((calls.setdefault((task, work.sm_bound), len(calls)), phases[j].repeat))
            j += 1
        if chain:
            gemms.append((i, work, work.seconds * gemm.repeat, tuple(chain)))
    return _Pairs(tuple(gemms), tuple(calls))


def _pair_prices(
    calls: tuple[tuple[CollectiveTask, float], ...],
    cluster: Cluster,
    *,
    sms: int,
    hbm: float,
    policy: str,
) -> tuple[tuple[float, float], ...]:
    """For each (collective, SM-bound share ``β``) of ``calls``: the collective's seconds as
    the analytic engine prices it, and ``σ`` (module doc) beside its channels and busbw."""
    analytic = AnalyticEngine(policy)
    out: list[tuple[float, float]] = []
    for task, beta in calls:
        cost = analytic.cost(task, cluster)
        taken = np.array([max(0, min(cost.channels, sms - 1))], dtype=np.float64)
        moved = np.array([max(0.0, cost.busbw)], dtype=np.float64)
        sm_slow, hbm_slow = _slowdowns(taken, moved, sms, hbm)
        out.append((cost.time, float(beta * sm_slow[0] + (1.0 - beta) * hbm_slow[0])))
    return tuple(out)


def _paired_extra(pairs: _Pairs, prices: tuple[tuple[float, float], ...]) -> dict[int, float]:
    """:func:`paired_stretch` of the schedule ``pairs`` came from, its calls at ``prices``."""
    extra: dict[int, float] = {}
    for i, _, total, chain in pairs.gemms:
        left = total
        elapsed = 0.0
        for call, times in chain:
            seconds, sigma = prices[call]
            overlap = seconds * times
            if left > 0:
                used = min(overlap, left * sigma)
                elapsed += used
                left -= used / sigma
        if elapsed + left > total + 1e-15:
            extra[i] = elapsed + left - total
    return extra


def paired_stretch(
    schedule: Schedule, cluster: Cluster, *, sms: int, hbm: float, policy: str
) -> dict[int, float]:
    """Seconds each GEMM phase ends later beside the ``.tp`` collectives that start with it
    (:data:`PAIRED_STREAM`: the phases right after the GEMM's, run back to back on their
    stream). Each runs NCCL's plan for it (its channels ``c``, busbw ``b`` and time ``C``, as
    the analytic engine prices it), so the phase does ``C/σ`` of its work while one runs (``σ``
    of the module doc, with the phase's own share ``β``) and the rest at full speed after —
    what :func:`stretch` finds for such a pair when nothing else overlaps it."""
    pairs: _Pairs = _derived(schedule, "pairs", _pairs)
    prices = _pair_prices(pairs.calls, cluster, sms=sms, hbm=hbm, policy=policy)
    return _paired_extra(pairs, prices)


#: Paired runs kept per schedule, by their calls' prices (:func:`_paired_run`): each holds a copy of
#: the schedule and its layout, and a sweep's designs rarely differ on the scale-up side.
_PAIRED_RUNS_KEPT: Final = 2


def _paired_run(
    schedule: Schedule, cluster: Cluster, *, sms: int, hbm: float, policy: str
) -> tuple[dict[int, float], Schedule, _Layout]:
    """:func:`paired_stretch` of ``schedule``, the schedule it stretches and that schedule's
    layout: kept per schedule by the paired calls' prices, which only the scale-up side of a
    cluster sets (a sweep's designs that differ in the fabric share them)."""
    pairs: _Pairs = _derived(schedule, "pairs", _pairs)
    prices = _pair_prices(pairs.calls, cluster, sms=sms, hbm=hbm, policy=policy)
    # None for no stretch: what _DERIVED keeps must not hold ``schedule`` itself, or it would
    # never be freed (nor its entries dropped)
    runs: dict[tuple[tuple[float, float], ...], tuple[dict[int, float], Schedule | None, _Layout]]
    runs = _derived(schedule, "paired runs", lambda _: {})
    kept = runs.pop(prices, None)
    if kept is None:
        extra = _paired_extra(pairs, prices)
        run = stretched(schedule, extra) if extra else None
        kept = (extra, run, _layout_after(schedule, run or schedule, extra))
    runs[prices] = kept  # most recently used last
    while len(runs) > _PAIRED_RUNS_KEPT:
        runs.pop(next(iter(runs)))
    extra, run, layout = kept
    return extra, run or schedule, layout


def as_measured(schedule: Schedule, extra: dict[int, float]) -> Schedule:
    """``schedule`` as a trace of the run would record it: every compute phase at the length
    the collectives beside it gave it (``extra``), and marked as nothing left to slow
    (``sm_bound`` None), so replaying it adds no second slowdown."""
    phases = stretched(schedule, extra).phases
    return Schedule(
        [
            replace(p, task=replace(p.task, sm_bound=None))
            if isinstance(p.task, ComputeTask) and p.task.sm_bound is not None
            else p
            for p in phases
        ]
    )


def stretched(schedule: Schedule, extra: dict[int, float]) -> Schedule:
    """``schedule`` with each compute phase ``i`` longer by ``extra[i]`` seconds in all."""
    phases = list(schedule.phases)
    longer: dict[tuple[ComputeTask, float], ComputeTask] = {}  # steps repeat the same stretch
    for i, seconds in extra.items():
        phase = phases[i]
        task = phase.task
        assert isinstance(task, ComputeTask)
        per = seconds / max(1, phase.repeat)
        new = longer.get((task, per))
        if new is None:
            new = longer[task, per] = ComputeTask(task.seconds + per, task.sm_bound)
        phases[i] = Phase(phase.name, new, phase.category, phase.stream, phase.after, phase.repeat)
    return Schedule(phases)


def run_contended(
    engine: Engine,
    schedule: Schedule,
    cluster: Cluster,
    *,
    sms: int,
    hbm: float,
    policy: str,
    routing: str | None = None,
    seed: int = 0,
) -> tuple[Result, Contention]:
    """Run ``schedule`` with the compute beside collectives slowed (module doc): the last run
    and what the contention added. ``sms`` and ``hbm`` (achieved bytes/s) are one GPU's. The
    GEMMs beside their own TP collectives are priced first (:func:`paired_stretch`)."""
    kept, schedule, layout = _paired_run(schedule, cluster, sms=sms, hbm=hbm, policy=policy)
    paired = dict(kept)  # the caller's own: the kept one serves later runs
    result = engine.run(schedule, cluster, routing, seed=seed)
    if not layout.compute or not layout.beside:
        return result, Contention(paired, 0)
    extra: dict[int, float] = {}
    passes = 0
    for passes in range(1, MAX_PASSES + 1):
        found = stretch(schedule, result, cluster, sms=sms, hbm=hbm, policy=policy, layout=layout)
        settled = TOLERANCE * max(result.makespan, 1e-12)
        if passes == 1 and _largest_stage(found, layout) <= settled:
            # below a 1,000th of the step: not worth a rerun
            return result, Contention(paired, 0)
        moved = max(
            (abs(found.get(i, 0.0) - extra.get(i, 0.0)) for i in found.keys() | extra.keys()),
            default=0.0,
        )
        if passes > 1 and moved <= settled:
            # the last run holds these stretches
            return result, Contention(_added(paired, extra), passes - 1)
        extra = found
        result = engine.run(stretched(schedule, extra), cluster, routing, seed=seed)
    return result, Contention(_added(paired, extra), passes)


def _added(a: dict[int, float], b: dict[int, float]) -> dict[int, float]:
    """Two phases-to-seconds maps summed."""
    return {i: a.get(i, 0.0) + b.get(i, 0.0) for i in a.keys() | b.keys()}


def run_job(
    engine: Engine,
    schedule: Schedule,
    cluster: Cluster,
    job: Job,
    *,
    policy: str,
    seed: int = 0,
) -> tuple[Result, Contention]:
    """:func:`run_contended` on ``cluster``'s routing with the SMs and achieved HBM bandwidth
    of ``job``'s GPU (none to slow for the flat compute model, which has no device)."""
    dev = job.device
    return run_contended(
        engine,
        schedule,
        cluster,
        sms=dev.sms if dev is not None else 1,
        hbm=dev.hbm if dev is not None else 0.0,
        policy=policy,
        routing=cluster.routing,
        seed=seed,
    )


def _largest_stage(extra: dict[int, float], layout: _Layout) -> float:
    """The most seconds ``extra`` adds to one stage's compute."""
    return max(
        (sum(extra.get(i, 0.0) for i in indices) for indices in layout.compute.values()),
        default=0.0,
    )
