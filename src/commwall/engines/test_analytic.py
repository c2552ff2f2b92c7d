"""The analytic engine: list scheduling over streams and dependencies, tuner costs, invariants."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from commwall.cluster import Cluster, build_cluster
from commwall.collectives import Op, choose
from commwall.collectives.schedule import CollectiveTask, ComputeTask, Group, Phase, Schedule
from commwall.engines import AnalyticEngine, get_engine
from commwall.engines.base import InvariantError, PhaseResult
from commwall.engines.base import check_order as _check_order
from commwall.scenario import ClusterSpec

MIB = 2**20


@pytest.fixture(scope="module")
def cluster() -> Cluster:
    return build_cluster(ClusterSpec(preset="dgx-h100", nodes=2))


def _compute(
    name: str, seconds: float, stream: str = "a", after: tuple[int, ...] = (), repeat: int = 1
) -> Phase:
    return Phase(name, ComputeTask(seconds), "compute", stream, after, repeat)


def _run(cluster: Cluster, *phases: Phase) -> list[PhaseResult]:
    schedule = Schedule()
    for p in phases:
        schedule.add(p)
    return list(AnalyticEngine().run(schedule, cluster).phases)


# ---------------------------------------------------------------- list scheduling
def test_one_stream_serialises(cluster: Cluster) -> None:
    a, b = _run(cluster, _compute("a", 1.0), _compute("b", 2.0))
    assert (a.start, a.end) == (0.0, 1.0)
    assert (b.start, b.end) == (1.0, 3.0)


def test_two_streams_overlap(cluster: Cluster) -> None:
    a, b = _run(cluster, _compute("a", 1.0, "x"), _compute("b", 2.0, "y"))
    assert (a.start, a.end) == (0.0, 1.0)
    assert (b.start, b.end) == (0.0, 2.0)


def test_after_delays_across_streams(cluster: Cluster) -> None:
    a, b, c = _run(
        cluster,
        _compute("a", 1.5, "x"),
        _compute("b", 0.25, "y"),
        _compute("c", 1.0, "y", after=(0,)),
    )
    assert b.start == 0.0
    assert c.start == a.end == 1.5  # waits for a, not just for its stream (free at 0.25)
    assert c.end == 2.5


def test_start_is_latest_of_stream_and_dependencies(cluster: Cluster) -> None:
    # the stream is the later constraint here: c waits for b on its own stream, not only for a
    res = _run(
        cluster,
        _compute("a", 0.5, "x"),
        _compute("b", 3.0, "y"),
        _compute("c", 1.0, "y", after=(0,)),
    )
    assert res[2].start == 3.0 and res[2].end == 4.0


def test_makespan_is_latest_end(cluster: Cluster) -> None:
    s = Schedule([_compute("a", 1.0, "x"), _compute("b", 4.0, "y"), _compute("c", 2.0, "x")])
    assert AnalyticEngine().run(s, cluster).makespan == 4.0
    assert AnalyticEngine().run(Schedule(), cluster).makespan == 0.0


def test_repeat_multiplies_compute(cluster: Cluster) -> None:
    a, b = _run(cluster, _compute("a", 0.5, repeat=3), _compute("b", 1.0, repeat=0))
    assert a.duration == 1.5 and a.repeat == 3
    assert b.duration == 0.0 and b.start == b.end == 1.5


def test_repeat_multiplies_collective_time_and_bytes(cluster: Cluster) -> None:
    task = CollectiveTask(Op.ALL_REDUCE, 64 * MIB, Group("dp", 2, 8))
    one = AnalyticEngine().run(Schedule([Phase("x", task, "dp", "c")]), cluster)
    four = AnalyticEngine().run(Schedule([Phase("x", task, "dp", "c", repeat=4)]), cluster)
    assert four.phases[0].duration == pytest.approx(4 * one.phases[0].duration, rel=1e-12)
    assert four.counters["collective_bytes"] == 4 * 64 * MIB
    assert one.counters["collective_bytes"] == 64 * MIB


def test_tasks_making_the_same_call_share_one_price(cluster: Cluster) -> None:
    """A step makes the same call from many task objects (a pipeline send per micro-batch):
    the engine prices each distinct call once, so equal calls report identical phases, and a
    call differing in what the price depends on (its communicator's CTA bound, its size) is
    priced apart."""
    group = Group("dp", 2, 8)
    same = [CollectiveTask(Op.ALL_REDUCE, 64 * MIB, group) for _ in range(3)]
    bounded = CollectiveTask(Op.ALL_REDUCE, 64 * MIB, Group("dp", 2, 8, max_ctas=2))
    larger = CollectiveTask(Op.ALL_REDUCE, 128 * MIB, group)
    tasks = [*same, bounded, larger]
    run = AnalyticEngine().run(
        Schedule([Phase(f"x{i}", t, "dp", f"c{i}") for i, t in enumerate(tasks)]), cluster
    )
    alone = [AnalyticEngine().run(Schedule([Phase("x", t, "dp", "c")]), cluster) for t in tasks]
    for phase, single in zip(run.phases, alone, strict=True):
        assert phase.duration == single.phases[0].duration  # what each costs alone, exactly
        assert (phase.algo, phase.proto, phase.busbw) == (
            single.phases[0].algo, single.phases[0].proto, single.phases[0].busbw,
        )  # fmt: skip
    first, *_, capped, big = run.phases
    assert capped.duration > first.duration  # 2 CTAs: fewer channels, slower
    assert big.duration > first.duration


# ---------------------------------------------------------------- collective costs
@pytest.mark.parametrize(
    ("op", "nbytes", "group"),
    [
        (Op.ALL_REDUCE, 1 * MIB, Group("g", 1, 8)),
        (Op.ALL_REDUCE, 256 * MIB, Group("g", 2, 8)),
        (Op.ALL_GATHER, 64 * MIB, Group("g", 2, 1)),
        (Op.REDUCE_SCATTER, 4096.0, Group("g", 1, 4)),
        (Op.SENDRECV, 8 * MIB, Group("g", 2, 1)),
    ],
)
def test_single_collective_costs_exactly_the_tuners_best(
    cluster: Cluster, op: Op, nbytes: float, group: Group
) -> None:
    task = CollectiveTask(op, nbytes, group)
    result = AnalyticEngine().run(Schedule.single(task), cluster)
    best = choose(op, nbytes, cluster.comm_fabric(group.n_domains, group.ranks_per_domain)).best
    (phase,) = result.phases
    assert phase.start == 0.0
    assert phase.duration == best.time
    assert result.makespan == best.time
    assert (phase.algo, phase.proto, phase.busbw) == (best.algo, best.proto.value, best.busbw)
    assert (phase.op, phase.nbytes, phase.nranks) == (op.value, nbytes, group.nranks)
    assert AnalyticEngine().cost(task, cluster) == best


def test_policy_all_is_never_slower_than_nccl(cluster: Cluster) -> None:
    for op in (Op.ALL_REDUCE, Op.ALL_GATHER, Op.REDUCE_SCATTER):
        task = CollectiveTask(op, 32 * MIB, Group("g", 2, 8))
        nccl = AnalyticEngine("nccl").cost(task, cluster).time
        assert AnalyticEngine("all").cost(task, cluster).time <= nccl


def test_collective_waits_like_compute(cluster: Cluster) -> None:
    task = CollectiveTask(Op.ALL_GATHER, 16 * MIB, Group("g", 1, 8))
    t = AnalyticEngine().cost(task, cluster).time
    res = _run(
        cluster,
        _compute("fwd", 1e-3, "compute"),
        Phase("ag", task, "dp", "comm", (0,)),
        Phase("ag2", task, "dp", "comm"),
        _compute("next", 1e-3, "compute", after=(2,)),
    )
    assert res[1].start == 1e-3 and res[1].end == pytest.approx(1e-3 + t, rel=1e-12)
    assert res[2].start == res[1].end  # same stream
    assert res[3].start == res[2].end


# ---------------------------------------------------------------- schedule and invariants
def test_schedule_rejects_later_or_own_index() -> None:
    s = Schedule()
    assert s.add(_compute("a", 1.0)) == 0
    with pytest.raises(ValueError, match="not an earlier phase"):
        s.add(_compute("b", 1.0, after=(1,)))  # itself
    with pytest.raises(ValueError, match="not an earlier phase"):
        s.add(_compute("c", 1.0, after=(5,)))
    with pytest.raises(ValueError, match="not an earlier phase"):
        s.add(_compute("d", 1.0, after=(-1,)))
    assert len(s.phases) == 1
    assert s.add(_compute("e", 1.0, after=(0,))) == 1


def test_phase_rejects_negative_repeat() -> None:
    with pytest.raises(ValueError, match="repeat"):
        _compute("a", 1.0, repeat=-1)


def test_negative_duration_raises(cluster: Cluster) -> None:
    with pytest.raises(InvariantError, match="negative duration"):
        AnalyticEngine().run(Schedule([_compute("bad", -1.0)]), cluster)


def test_order_check_catches_broken_results() -> None:
    s = Schedule([_compute("a", 1.0, "x"), _compute("b", 1.0, "y", after=(0,))])
    early = [PhaseResult("a", "compute", "x", 0.0, 1.0), PhaseResult("b", "compute", "y", 0.5, 1.5)]
    with pytest.raises(InvariantError, match="before phase 0 ended"):
        _check_order(s, early)
    s2 = Schedule([_compute("a", 1.0, "x"), _compute("b", 1.0, "x")])
    overlap = [
        PhaseResult("a", "compute", "x", 0.0, 1.0),
        PhaseResult("b", "compute", "x", 0.5, 1.5),
    ]
    with pytest.raises(InvariantError, match="overlaps its stream"):
        _check_order(s2, overlap)


def test_result_names_checked_invariants(cluster: Cluster) -> None:
    result = AnalyticEngine().run(Schedule([_compute("a", 1.0)]), cluster)
    assert result.engine == "analytic"
    assert set(result.invariants) == {
        "dependencies respected",
        "streams serialised",
        "durations non-negative",
        "no rank injects above its links (point-to-point algorithms)",
    }
    assert result.counters == {"phases": 1.0, "collective_bytes": 0.0}
    d = result.to_dict()
    assert d["makespan_s"] == 1.0 and len(d["phases"]) == 1


def test_get_engine() -> None:
    engine = get_engine("analytic", policy="all")
    assert isinstance(engine, AnalyticEngine) and engine.policy == "all"
    with pytest.raises(ValueError, match="is unknown; allowed: analytic, flow, packet"):
        get_engine("packet-x")


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.floats(0.0, 5.0),
            st.sampled_from(["x", "y", "z"]),
            st.lists(st.integers(0, 1000), max_size=3),
            st.integers(0, 3),
        ),
        min_size=1,
        max_size=25,
    )
)
def test_random_dags_respect_streams_and_dependencies(
    spec: list[tuple[float, str, list[int], int]],
) -> None:
    cluster = build_cluster(ClusterSpec(preset="dgx-h100", nodes=1))
    s = Schedule()
    for i, (sec, stream, deps, rep) in enumerate(spec):
        after = tuple(sorted({d % i for d in deps})) if i else ()
        s.add(_compute(f"p{i}", sec, stream, after, rep))
    res = AnalyticEngine().run(s, cluster).phases
    for i, (phase, r) in enumerate(zip(s.phases, res, strict=True)):
        assert r.duration == pytest.approx(spec[i][0] * spec[i][3])
        ready = max((res[d].end for d in phase.after), default=0.0)
        prev = max(
            (res[j].end for j in range(i) if s.phases[j].stream == phase.stream), default=0.0
        )
        assert r.start == max(ready, prev)  # as early as allowed, never earlier


def test_deterministic(cluster: Cluster) -> None:
    task = CollectiveTask(Op.ALL_REDUCE, 48 * MIB, Group("dp", 2, 8))
    s = Schedule([_compute("c", 0.01, "compute"), Phase("ar", task, "dp", "comm", (0,))])
    a = AnalyticEngine().run(s, cluster, seed=1).to_dict()
    b = AnalyticEngine().run(s, cluster, "spray", seed=99).to_dict()
    assert a == b
    assert AnalyticEngine().run(s, cluster).phases == AnalyticEngine().run(s, cluster).phases


def test_capacity_invariant_catches_an_impossible_cost() -> None:
    from commwall.collectives import Cost, Gen, Hw, Op, Proto
    from commwall.collectives.fabric import CommFabric
    from commwall.engines.analytic import _check_capacity
    from commwall.engines.base import InvariantError

    f = CommFabric(4, 1, 0.0, Hw.NVLINK, 50e9, Gen.HOPPER)
    honest = Cost(Op.ALL_REDUCE, "ring", Proto.SIMPLE, 2**30, 4, 0.0, 1.5 * 2**30 / 50e9, 6, "net")
    _check_capacity("ok", honest, f)
    too_fast = Cost(Op.ALL_REDUCE, "ring", Proto.SIMPLE, 2**30, 4, 0.0, 2**30 / 100e9, 6, "net")
    with pytest.raises(InvariantError, match="exceeds the rank's injection bandwidth"):
        _check_capacity("bad", too_fast, f)
    in_network = Cost(
        Op.ALL_REDUCE, "collnet", Proto.SIMPLE, 2**30, 4, 0.0, 2**30 / 100e9, 3, "net"
    )
    _check_capacity("sharp", in_network, f)  # the switch reduces: allowed above the links
