"""Collective kernels beside compute: closed forms, what is left alone, the step it changes."""

from __future__ import annotations

from typing import Any

import pytest

from commwall.cluster import Cluster, build_cluster
from commwall.collectives.errors import CollectiveError
from commwall.collectives.ops import Op
from commwall.collectives.schedule import (
    CollectiveTask,
    ComputeTask,
    Group,
    Phase,
    Schedule,
)
from commwall.engines import AnalyticEngine
from commwall.scenario import parse_scenario
from commwall.workload.contention import (
    HBM_PER_LINK_BYTE,
    paired_stretch,
    run_contended,
    stretch,
)
from commwall.workload.simulate import simulate

SMS = 132
HBM = 3.0e12
#: eight GPUs of one NVLink node: NCCL's ring on 24 channels (docs/collective-model.md)
NODE = Group("dp", 1, 8)


@pytest.fixture(scope="module")
def cluster() -> Cluster:
    return build_cluster(parse_scenario({"cluster": {"preset": "dgx-h100", "nodes": 1}}).cluster)


def beside(
    seconds: float,
    beta: float | None,
    nbytes: float,
    *,
    stream: str = "s0.dp",
    category: str = "dp",
) -> Schedule:
    """One compute phase and one all-gather starting with it on another stream."""
    return Schedule(
        [
            Phase("compute", ComputeTask(seconds, sm_bound=beta), "compute", "s0.compute"),
            Phase("gather", CollectiveTask(Op.ALL_GATHER, nbytes, NODE), category, stream),
        ]
    )


def contended(schedule: Schedule, cluster: Cluster) -> Any:
    return run_contended(AnalyticEngine(), schedule, cluster, sms=SMS, hbm=HBM, policy="nccl")


def test_a_gemm_under_a_longer_collective_runs_on_the_sms_left(cluster: Cluster) -> None:
    # a 1 GiB all-gather (~3 ms) covers a 1 ms GEMM: it runs N / (N − c) longer
    result, cont = contended(beside(1e-3, 1.0, 2**30), cluster)
    gather = result.phases[1]
    assert gather.algo == "ring"
    channels = AnalyticEngine().cost(CollectiveTask(Op.ALL_GATHER, 2**30, NODE), cluster).channels
    assert channels == 24
    assert gather.end > result.phases[0].end
    assert result.phases[0].end == pytest.approx(1e-3 * SMS / (SMS - channels), rel=1e-9)
    assert cont.passes >= 1


def test_memory_bound_work_loses_the_collectives_hbm_traffic(cluster: Cluster) -> None:
    result, _ = contended(beside(1e-3, 0.0, 2**30), cluster)
    b = result.phases[1].busbw
    assert result.phases[0].end == pytest.approx(1e-3 * HBM / (HBM - HBM_PER_LINK_BYTE * b))


def test_a_mix_takes_the_weighted_time_per_unit_of_work(cluster: Cluster) -> None:
    beta = 0.7
    result, _ = contended(beside(1e-3, beta, 2**30), cluster)
    b = result.phases[1].busbw
    sigma = beta * SMS / (SMS - 24) + (1 - beta) * HBM / (HBM - HBM_PER_LINK_BYTE * b)
    assert result.phases[0].end == pytest.approx(1e-3 * sigma, rel=1e-9)


def test_a_short_collective_costs_only_its_overlap(cluster: Cluster) -> None:
    # 2 ms of GEMMs beside a 64 MiB all-gather (~0.2 ms): the work missed while it ran, after
    result, cont = contended(beside(2e-3, 1.0, 64 * 2**20), cluster)
    gather = result.phases[1]
    assert gather.end < 0.5e-3
    c = AnalyticEngine().cost(CollectiveTask(Op.ALL_GATHER, 64 * 2**20, NODE), cluster).channels
    b = gather.busbw
    sigma = SMS / (SMS - c)  # GEMMs only: the HBM term weighs nothing
    assert b > 0
    expected = gather.end * (1.0 - 1.0 / sigma)
    assert result.phases[0].end - 2e-3 == pytest.approx(expected, rel=1e-9)
    assert cont.stage_seconds(beside(1.0, 1.0, 1.0), 0) == pytest.approx(expected, rel=1e-9)
    assert cont.stage_seconds(beside(1.0, 1.0, 1.0), 1) == 0.0


def test_a_stretch_below_the_tolerance_costs_no_rerun(cluster: Cluster) -> None:
    # 100 ms of GEMMs beside a 1 MiB all-gather: a few µs, under a 1,000th of the step
    schedule = beside(0.1, 1.0, 2**20)
    assert stretch(
        schedule, AnalyticEngine().run(schedule, cluster), cluster, sms=SMS, hbm=HBM, policy="nccl"
    )
    result, cont = contended(schedule, cluster)
    assert cont.extra == {} and cont.passes == 0
    assert result.phases[0].end == pytest.approx(0.1, rel=1e-12)


def test_collectives_running_together_add_their_sms(cluster: Cluster) -> None:
    # two 1 GiB all-gathers on two side streams cover a 1 ms GEMM phase together
    one = AnalyticEngine().cost(CollectiveTask(Op.ALL_GATHER, 2**30, NODE), cluster).channels
    schedule = beside(1e-3, 1.0, 2**30)
    schedule.add(Phase("gather2", CollectiveTask(Op.ALL_GATHER, 2**30, NODE), "dp", "s0.pp"))
    result, _ = contended(schedule, cluster)
    assert result.phases[0].end == pytest.approx(1e-3 * SMS / (SMS - 2 * one), rel=1e-9)


@pytest.mark.parametrize(
    ("stream", "category", "beta"),
    [
        ("s0.compute", "dp", 1.0),  # on the compute stream: it blocks, never beside
        ("s0.ub", "tp", 1.0),  # Userbuffers TP overlap: its GEMMs took the SM margin already
        ("s1.dp", "dp", 1.0),  # another pipeline stage's GPU
        ("s0.dp", "dp", None),  # work nothing slows (the optimizer, traced compute)
    ],
)
def test_what_is_left_alone(
    cluster: Cluster, stream: str, category: str, beta: float | None
) -> None:
    schedule = beside(1e-3, beta, 2**30, stream=stream, category=category)
    plain = AnalyticEngine().run(schedule, cluster)
    result, cont = contended(schedule, cluster)
    assert result.phases == plain.phases
    assert stretch(schedule, plain, cluster, sms=SMS, hbm=HBM, policy="nccl") == {}
    assert cont.extra == {}


def test_nccl_tp_collectives_beside_the_backward_take_their_channels(cluster: Cluster) -> None:
    """job.tp_backward_overlap: NCCL's TP collectives on the stage's .tp stream hold SMs as a
    DP bucket does; only the Userbuffers ones (.ub) took a margin already."""
    one = AnalyticEngine().cost(CollectiveTask(Op.ALL_GATHER, 2**30, NODE), cluster).channels
    result, cont = contended(beside(1e-3, 1.0, 2**30, stream="s0.tp", category="tp"), cluster)
    assert cont.extra and result.phases[0].end == pytest.approx(1e-3 * SMS / (SMS - one), rel=1e-9)


def test_a_gemm_beside_its_tp_chain_is_priced_before_the_run(cluster: Cluster) -> None:
    """contention.paired_stretch: a GEMM phase with two .tp collectives right after it (the
    re-gather, then the reduce-scatter) does C/σ of its work while each runs and the rest at
    full speed after; the dynamic pass then finds nothing more to add for it."""
    small = 2**24  # 16 MiB: shorter than the GEMM, so the GEMM outlasts the chain
    gather = CollectiveTask(Op.ALL_GATHER, small, NODE)
    scatter = CollectiveTask(Op.REDUCE_SCATTER, small, NODE)
    schedule = Schedule(
        [
            Phase("gemm", ComputeTask(2e-3, sm_bound=1.0), "compute", "s0.compute"),
            Phase("gather", gather, "tp", "s0.tp", (), 2),
            Phase("scatter", scatter, "tp", "s0.tp"),
        ]
    )
    analytic = AnalyticEngine()
    done, elapsed, left = 0.0, 0.0, 2e-3
    for task, calls in ((gather, 2), (scatter, 1)):
        cost = analytic.cost(task, cluster)
        sigma = SMS / (SMS - cost.channels)
        used = min(cost.time * calls, left * sigma)
        elapsed, left = elapsed + used, left - used / sigma
        done += cost.time * calls
    assert done < 2e-3  # the chain ends inside the GEMM
    extra = paired_stretch(schedule, cluster, sms=SMS, hbm=HBM, policy="nccl")
    assert extra == {0: pytest.approx(elapsed + left - 2e-3, rel=1e-12)}
    result, cont = contended(schedule, cluster)
    assert cont.extra == extra and cont.passes == 0  # priced first: no rerun
    assert result.phases[0].end == pytest.approx(elapsed + left, rel=1e-12)


def test_what_a_schedule_alone_decides_is_found_once_and_dropped_with_it(
    cluster: Cluster,
) -> None:
    """A plan is run on many clusters (a sweep): its GEMM/TP pairs are kept while the
    schedule lives, found again when it grows, and forgotten when it is freed; the paired run
    (stretch, stretched schedule, layout) is kept by the calls' prices, and each caller gets
    its own copy of the stretch."""
    import gc

    from commwall.workload import contention

    gather = CollectiveTask(Op.ALL_GATHER, 2**24, NODE)
    schedule = Schedule(
        [
            Phase("gemm", ComputeTask(2e-3, sm_bound=1.0), "compute", "s0.compute"),
            Phase("gather", gather, "tp", "s0.tp"),
        ]
    )
    first = contention._derived(schedule, "pairs", contention._pairs)
    assert contention._derived(schedule, "pairs", contention._pairs) is first
    assert [(i, chain) for i, _, _, chain in first.gemms] == [(0, ((0, 1),))]
    assert first.calls == ((gather, 1.0),)
    schedule.add(Phase("gemm 2", ComputeTask(1e-3, sm_bound=0.5), "compute", "s0.compute"))
    schedule.add(Phase("gather 2", gather, "tp", "s0.tp", (), 3))
    grown = contention._derived(schedule, "pairs", contention._pairs)
    assert [(i, chain) for i, _, _, chain in grown.gemms] == [(0, ((0, 1),)), (2, ((1, 3),))]
    assert grown.calls == ((gather, 1.0), (gather, 0.5))  # a share of its own: priced apart
    extra = paired_stretch(schedule, cluster, sms=SMS, hbm=HBM, policy="nccl")
    assert extra.keys() == {0, 2}
    kept, run, layout = contention._paired_run(schedule, cluster, sms=SMS, hbm=HBM, policy="nccl")
    assert (
        kept == extra and run is not schedule and layout.work[0] == pytest.approx(2e-3 + extra[0])
    )
    again = contention._paired_run(schedule, cluster, sms=SMS, hbm=HBM, policy="nccl")
    assert again[1] is run  # the same prices: the same stretched schedule
    _, cont = contended(schedule, cluster)
    cont.extra[0] = -1.0  # the caller's copy
    assert contention._paired_run(schedule, cluster, sms=SMS, hbm=HBM, policy="nccl")[0] == extra
    key = (id(schedule), "pairs")
    assert key in contention._DERIVED
    del schedule
    gc.collect()
    assert key not in contention._DERIVED
    # nothing kept holds a schedule alive, with or without a paired stretch (a sweep or
    # `commwall validate --training` runs hundreds of plans in one process)
    alone = Schedule([Phase("gemm", ComputeTask(2e-3, sm_bound=1.0), "compute", "s0.compute")])
    contended(alone, cluster)
    assert contention._paired_run(alone, cluster, sms=SMS, hbm=HBM, policy="nccl")[1] is alone
    keys = {k for k in contention._DERIVED if k[0] == id(alone)}
    assert keys == {(id(alone), "pairs"), (id(alone), "paired runs"), (id(alone), "layout")}
    del alone
    gc.collect()
    assert not keys & contention._DERIVED.keys()


def test_sm_bound_share_is_checked() -> None:
    with pytest.raises(CollectiveError, match="sm_bound"):
        ComputeTask(1.0, sm_bound=1.5)


def test_a_published_average_slowdown_is_in_reach(cluster: Cluster) -> None:
    """arXiv 2507.03114 (2025): compute overlapped with communication slows 18.9 % on
    average, 40 % at most, on A100/H100/MI210/MI250. A layer's compute mix (80 % GEMMs and
    attention) beside an 8-GPU all-gather on H100 lands between the two."""
    result, _ = contended(beside(1e-3, 0.8, 2**30), cluster)
    slowdown = result.phases[0].end / 1e-3 - 1.0
    assert 0.15 < slowdown < 0.40


# ---------------------------------------------------------------- the step
def fsdp(contention: bool, engine: str = "analytic") -> Any:
    return parse_scenario(
        {
            "cluster": {"preset": "dgx-h100", "nodes": 1},
            "job": {
                "model": "llama3-8b",
                "seq_len": 2048,
                "tp": 1,
                "pp": 1,
                "zero_stage": 3,
                "global_batch": 16,
                "micro_batch": 2,
                "comm_sm_contention": contention,
            },
            "simulation": {"engine": engine},
        }
    )


def test_fsdp_gathers_slow_the_layers_beside_them() -> None:
    on, off = simulate(fsdp(True)), simulate(fsdp(False))
    assert off.compute_slowed_by_comm == 0.0
    assert on.compute_slowed_by_comm > 0.0
    assert on.step_time > off.step_time
    # the slowed compute is compute: the breakdown still sums to the step
    assert on.breakdown["compute"] == pytest.approx(
        off.breakdown["compute"] + on.compute_slowed_by_comm, rel=0.02
    )
    assert sum(on.breakdown.values()) == pytest.approx(on.step_time, rel=1e-12)
    assert on.to_dict()["compute_slowed_by_comm_s"] == on.compute_slowed_by_comm
    assert on.metrics()["compute_slowed_by_comm_s"] == on.compute_slowed_by_comm  # sweeps


def test_the_flat_model_is_never_slowed() -> None:
    s = fsdp(True)
    flat = s.model_copy(update={"job": s.job.model_copy(update={"compute_efficiency": 0.5})})
    assert simulate(flat).compute_slowed_by_comm == 0.0


def test_deterministic() -> None:
    a, b = simulate(fsdp(True)), simulate(fsdp(True))
    assert a.step_time == b.step_time
    assert a.result.phases == b.result.phases


@pytest.mark.slow
def test_the_flow_engine_slows_the_same_compute() -> None:
    analytic, flow = simulate(fsdp(True)), simulate(fsdp(True, "flow"))
    assert flow.compute_slowed_by_comm == pytest.approx(analytic.compute_slowed_by_comm, rel=0.05)
    assert flow.step_time == pytest.approx(analytic.step_time, rel=0.05)
