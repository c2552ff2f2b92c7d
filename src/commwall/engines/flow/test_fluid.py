"""The fluid kernel: closed forms of processor sharing, dependencies, batching, invariants, input."""

from __future__ import annotations

import doctest
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from commwall.engines.base import InvariantError
from commwall.engines.flow import fluid
from commwall.engines.flow.fluid import FlowBatch, FluidResult, FluidTask, _Run, simulate
from commwall.engines.flow.maxmin import FloatArray, max_min_rates

INF = np.inf


def batch(
    nbytes: Sequence[float] | FloatArray,
    routes: Sequence[Sequence[int]],
    *,
    weights: Sequence[Sequence[float]] | None = None,
    cap: Sequence[float] | None = None,
    tail: Sequence[float] | None = None,
) -> FlowBatch:
    """Flow ``i`` carries ``nbytes[i]`` over the links ``routes[i]``."""
    flow = np.repeat(np.arange(len(routes)), [len(r) for r in routes])
    link = np.array([x for r in routes for x in r], dtype=np.int64)
    w = np.ones(len(link)) if weights is None else np.array([x for r in weights for x in r])
    return FlowBatch(
        nbytes=np.asarray(nbytes, dtype=np.float64),
        cap=np.full(len(nbytes), INF) if cap is None else np.asarray(cap, dtype=np.float64),
        entry_flow=flow,
        entry_link=link,
        entry_weight=w,
        tail_latency=None if tail is None else np.asarray(tail, dtype=np.float64),
    )


def run(capacity: Sequence[float], *tasks: FluidTask, **options: Any) -> FluidResult:
    return simulate(np.asarray(capacity, dtype=np.float64), list(tasks), **options)


# ---------------------------------------------------------------- closed forms
@pytest.mark.parametrize(("cap", "rate"), [(INF, 10.0), (4.0, 4.0)])
def test_one_flow_one_link(cap: float, rate: float) -> None:
    flows = batch([100.0], [[0]], cap=[cap], tail=[0.5])
    r = run([10.0], FluidTask("x", delay=1.5, flows=flows))
    assert r.flow_finish[0][0] == pytest.approx(1.5 + 100.0 / rate, rel=1e-12)
    assert r.end[0] == pytest.approx(1.5 + 100.0 / rate + 0.5, rel=1e-12)
    assert r.makespan == r.end[0]
    assert r.start[0] == 0.0
    assert r.events == 1


def test_processor_sharing_two_sizes() -> None:
    s, big, c = 30.0, 110.0, 10.0
    r = run([c], FluidTask("x", flows=batch([s, big], [[0], [0]])))
    np.testing.assert_allclose(r.flow_finish[0], [2 * s / c, (s + big) / c], rtol=1e-12)
    assert r.events == 2


def test_concurrent_tasks_contend() -> None:
    # Same as above, but the two flows belong to two independent tasks.
    r = run(
        [10.0],
        FluidTask("a", flows=batch([30.0], [[0]])),
        FluidTask("b", flows=batch([110.0], [[0]])),
    )
    np.testing.assert_allclose(r.end, [6.0, 14.0], rtol=1e-12)


def test_staggered_arrival_behind_a_timer() -> None:
    # a: 100 B from t=0; timer 2 s; c: 20 B after the timer. Link 10 B/s.
    # a alone to t=2 (80 B left); both at 5 B/s, c done at 2 + 20/5 = 6; a done at (100+20)/10.
    r = run(
        [10.0],
        FluidTask("a", flows=batch([100.0], [[0]])),
        FluidTask("timer", delay=2.0),
        FluidTask("c", flows=batch([20.0], [[0]]), after=(1,)),
    )
    np.testing.assert_allclose(r.start, [0.0, 0.0, 2.0])
    np.testing.assert_allclose(r.end, [12.0, 2.0, 6.0], rtol=1e-12)
    assert r.flow_finish[1].shape == (0,)


def test_weight_two_flow() -> None:
    alone = run([10.0], FluidTask("x", flows=batch([50.0], [[0]], weights=[[2.0]])))
    assert alone.makespan == pytest.approx(2 * 50.0 / 10.0, rel=1e-12)
    # with a w=1 flow of the same size: both at C/3, both done at 3·50/10
    shared = run(
        [10.0], FluidTask("x", flows=batch([50.0, 50.0], [[0], [0]], weights=[[2.0], [1.0]]))
    )
    np.testing.assert_allclose(shared.flow_finish[0], [15.0, 15.0], rtol=1e-12)
    np.testing.assert_allclose(shared.link_bytes, [150.0])


def test_tail_latency_ends_the_task_after_the_slowest_sum() -> None:
    flows = batch([10.0, 40.0], [[0], [1]], tail=[5.0, 0.25])
    r = run([10.0, 10.0], FluidTask("x", flows=flows))
    np.testing.assert_allclose(r.flow_finish[0], [1.0, 4.0])
    assert r.end[0] == pytest.approx(6.0)  # max(1 + 5, 4 + 0.25)


def test_capped_flow_without_links() -> None:
    r = run([10.0], FluidTask("x", flows=batch([8.0, 10.0], [[], [0]], cap=[2.0, INF])))
    np.testing.assert_allclose(r.flow_finish[0], [4.0, 1.0])
    np.testing.assert_allclose(r.link_bytes, [10.0])


def test_dependency_ordering_chain_and_fan() -> None:
    r = run(
        [1.0],
        FluidTask("a", delay=1.0),
        FluidTask("b", delay=2.0, after=(0,)),
        FluidTask("c", delay=0.5, after=(0,)),
        FluidTask("d", flows=batch([3.0], [[0]]), after=(1, 2)),
        FluidTask("e", delay=0.0, after=(3, 0, 3)),
    )
    np.testing.assert_allclose(r.start, [0.0, 1.0, 1.0, 3.0, 6.0])
    np.testing.assert_allclose(r.end, [1.0, 3.0, 1.5, 6.0, 6.0])
    assert r.makespan == 6.0


def test_timers_only_and_no_tasks() -> None:
    r = run([1.0], FluidTask("a", delay=2.0), FluidTask("b", delay=3.0))
    assert r.makespan == 3.0 and r.events == 0
    empty = run([1.0])
    assert empty.makespan == 0.0 and empty.start.shape == (0,)
    assert empty.timeline.times.tolist() == [0.0]


def test_empty_batch_is_a_timer() -> None:
    r = run([1.0], FluidTask("a", delay=2.0, flows=batch([], [])))
    assert r.end.tolist() == [2.0]


def test_simultaneous_finishes_batch_into_one_event() -> None:
    n = 10_000
    routes = [[i % 10] for i in range(n)]
    r = run(np.full(10, 1e9).tolist(), FluidTask("x", flows=batch(np.full(n, 1e6), routes)))
    assert r.events == 1
    np.testing.assert_allclose(r.flow_finish[0], 1e6 * 1000 / 1e9, rtol=1e-12)


def test_near_simultaneous_finishes_batch_within_rtol() -> None:
    sizes = 1e6 * (1 + np.array([0.0, 1e-12, 3e-10, 1e-6]))
    r = run([1e9], FluidTask("x", flows=batch(sizes, [[0]] * 4)), rtol=1e-9)
    assert r.events == 2  # the first three together, then the last one alone
    assert len(set(r.flow_finish[0][:3].tolist())) == 1


def test_entries_not_grouped_by_flow() -> None:
    flows = FlowBatch(
        nbytes=np.array([10.0, 20.0]),
        cap=np.full(2, INF),
        entry_flow=np.array([1, 0, 1]),
        entry_link=np.array([1, 0, 0]),
        entry_weight=np.ones(3),
    )
    r = run([10.0, 10.0], FluidTask("x", flows=flows))
    np.testing.assert_allclose(r.link_bytes, [30.0, 20.0])
    np.testing.assert_allclose(r.flow_finish[0], [2.0, 3.0])


def test_repeated_entries_add_up() -> None:
    # A pipelined chain crossing a link twice, given as two entries of weight 1: like w = 2.
    flows = FlowBatch(
        nbytes=np.array([50.0]),
        cap=np.array([INF]),
        entry_flow=np.array([0, 0, 0]),
        entry_link=np.array([0, 1, 0]),
        entry_weight=np.ones(3),
    )
    r = run([10.0, 10.0], FluidTask("x", flows=flows))
    assert r.makespan == pytest.approx(10.0, rel=1e-12)
    np.testing.assert_allclose(r.link_bytes, [100.0, 50.0])
    np.testing.assert_allclose(r.link_busy_peak, [1.0, 0.5])


# ---------------------------------------------------------------- links
def test_link_bytes_busy_peak_and_timeline() -> None:
    # Link 0 (10 B/s): a 20 B flow from 0 to 2 s. Link 1 (10 B/s): a flow capped at 5 B/s from
    # 0 to 4 s, then a timer-delayed 10 B flow 5..6 s at full rate.
    r = run(
        [10.0, 10.0, 10.0],
        FluidTask("a", flows=batch([20.0, 20.0], [[0], [1]], cap=[INF, 5.0])),
        FluidTask("t", delay=5.0),
        FluidTask("b", flows=batch([10.0], [[1]]), after=(1,)),
        track=4,
    )
    np.testing.assert_allclose(r.link_bytes, [20.0, 30.0, 0.0])
    np.testing.assert_allclose(r.link_busy_peak, [1.0, 1.0, 0.0])
    tl = r.timeline
    assert tl.links.tolist() == [1, 0]  # most bytes first; unused links are not tracked
    np.testing.assert_allclose(tl.times, [0.0, 2.0, 4.0, 5.0, 6.0])
    np.testing.assert_allclose(tl.utilisation, [[0.5, 0.5, 0.0, 1.0], [1.0, 0.0, 0.0, 0.0]])
    # the time series integrates to the bytes each link carried
    integral = tl.utilisation @ np.diff(tl.times) * 10.0
    np.testing.assert_allclose(integral, r.link_bytes[tl.links])


def test_track_zero_and_track_limit() -> None:
    flows = batch([1.0, 2.0, 3.0], [[0], [1], [2]])
    assert run([1.0] * 3, FluidTask("x", flows=flows), track=0).timeline.links.shape == (0,)
    assert run([1.0] * 3, FluidTask("x", flows=flows), track=2).timeline.links.tolist() == [2, 1]


@st.composite
def dags(draw: st.DrawFn) -> tuple[list[float], list[FluidTask]]:
    n_links = draw(st.integers(1, 5))
    capacity = draw(st.lists(st.sampled_from([1.0, 2.0, 5.0]), min_size=n_links, max_size=n_links))
    tasks: list[FluidTask] = []
    for i in range(draw(st.integers(1, 8))):
        after = tuple(draw(st.sets(st.integers(0, i - 1), max_size=2))) if i else ()
        delay = draw(st.sampled_from([0.0, 0.5, 1.0]))
        n = draw(st.integers(0, 4))
        routes = [sorted(draw(st.sets(st.integers(0, n_links - 1), min_size=1))) for _ in range(n)]
        weights = [[draw(st.sampled_from([0.5, 1.0, 2.0])) for _ in r] for r in routes]
        sizes = [draw(st.sampled_from([1.0, 2.0, 3.0, 10.0])) for _ in range(n)]
        tails = [draw(st.sampled_from([0.0, 0.0, 0.25])) for _ in range(n)]
        flows = batch(sizes, routes, weights=weights, tail=tails)
        tasks.append(FluidTask(f"t{i}", delay, flows, after))
    return capacity, tasks


@given(dags())
@settings(max_examples=60, deadline=None)
def test_random_dags_keep_the_invariants(problem: tuple[list[float], list[FluidTask]]) -> None:
    capacity, tasks = problem
    r = run(capacity, *tasks, track=8)
    # no link can move its bytes faster than its capacity allows
    assert (r.link_bytes / np.asarray(capacity) <= r.makespan * (1 + 1e-9)).all()
    for i, t in enumerate(tasks):
        assert r.start[i] == max((r.end[d] for d in t.after), default=0.0)
        assert r.end[i] >= r.start[i] + t.delay
    tl = r.timeline
    assert (tl.utilisation >= 0).all() and (tl.utilisation <= 1).all()
    np.testing.assert_allclose(
        tl.utilisation @ np.diff(tl.times) * np.asarray(capacity)[tl.links],
        r.link_bytes[tl.links],
        rtol=1e-7,
    )


def _naive_rates(dense: FloatArray, capacity: FloatArray, cap: FloatArray) -> FloatArray:
    """Textbook progressive filling on a dense (links × flows) matrix, one level at a time."""
    rates, frozen = np.zeros(dense.shape[1]), np.zeros(dense.shape[1], dtype=bool)
    while not frozen.all():
        rising = dense[:, ~frozen].sum(axis=1)
        spare = capacity - dense[:, frozen] @ rates[frozen]
        levels = [spare[i] / rising[i] for i in range(len(capacity)) if rising[i] > 0]
        level = min([*levels, *cap[~frozen]])
        full = [
            i
            for i in range(len(capacity))
            if rising[i] > 0 and spare[i] / rising[i] <= level * (1 + 1e-12)
        ]
        hit = ~frozen & ((dense[full] > 0).any(axis=0) | (cap <= level * (1 + 1e-12)))
        rates[hit], frozen = np.minimum(level, cap[hit]), frozen | hit
    return rates


def _reference(capacity: list[float], tasks: list[FluidTask]) -> tuple[list[float], list[float]]:
    """Start and end of every task by a deliberately plain event loop (slow, obviously right)."""
    c = np.asarray(capacity)
    start: list[float | None] = [None] * len(tasks)
    end: list[float | None] = [None] * len(tasks)
    flows: list[dict[str, Any]] = []  # task, bytes left, dense weights, cap, tail, finish
    now = 0.0
    while any(e is None for e in end):
        changed = True
        while changed:  # fire everything due by now
            changed = False
            for i, t in enumerate(tasks):
                deps = [end[d] for d in t.after]
                if start[i] is None and all(e is not None and e <= now for e in deps):
                    start[i] = max([e for e in deps if e is not None], default=0.0)
                    changed = True
                s0 = start[i]
                if s0 is None or end[i] is not None or s0 + t.delay > now:
                    continue
                mine = [f for f in flows if f["task"] == i]
                if t.flows is None or t.flows.n_flows == 0:
                    end[i], changed = s0 + t.delay, True
                elif not mine:
                    b = t.flows
                    for k in range(b.n_flows):
                        w = np.zeros(len(c))
                        np.add.at(
                            w, b.entry_link[b.entry_flow == k], b.entry_weight[b.entry_flow == k]
                        )
                        tail = 0.0 if b.tail_latency is None else float(b.tail_latency[k])
                        flows.append(
                            {
                                "task": i,
                                "left": float(b.nbytes[k]),
                                "w": w,
                                "cap": float(b.cap[k]),
                                "tail": tail,
                                "finish": None,
                            }
                        )
                    changed = True
                elif all(f["finish"] is not None for f in mine):
                    done = max(f["finish"] + f["tail"] for f in mine)
                    if done <= now:
                        end[i], changed = done, True
        active = [f for f in flows if f["finish"] is None]
        rates = (
            _naive_rates(
                np.array([f["w"] for f in active]).T, c, np.array([f["cap"] for f in active])
            )
            if active
            else np.zeros(0)
        )
        pending = [
            s + t.delay
            for s, t, e in zip(start, tasks, end, strict=True)
            if s is not None and e is None and s + t.delay > now
        ]
        pending += [
            max(f["finish"] + f["tail"] for f in flows if f["task"] == i)
            for i in range(len(tasks))
            if end[i] is None
            and any(f["task"] == i for f in flows)
            and all(f["finish"] is not None for f in flows if f["task"] == i)
        ]
        pending += [now + f["left"] / r for f, r in zip(active, rates, strict=True)]
        if not pending:
            break
        step = min(pending) - now
        now = min(pending)
        for f, r in zip(active, rates, strict=True):
            f["left"] -= r * step
            if f["left"] <= 1e-9 * r * step + 1e-12:
                f["finish"] = now
    return [float(x) for x in start if x is not None], [float(x) for x in end if x is not None]


@given(dags())
@settings(max_examples=60, deadline=None)
def test_random_dags_match_a_plain_reference(problem: tuple[list[float], list[FluidTask]]) -> None:
    capacity, tasks = problem
    r = run(capacity, *tasks)
    start, end = _reference(capacity, tasks)
    np.testing.assert_allclose(r.start, start, rtol=1e-7, atol=1e-12)
    np.testing.assert_allclose(r.end, end, rtol=1e-7, atol=1e-12)


# ---------------------------------------------------------------- invariants
def test_capacity_invariant_catches_bad_rates(monkeypatch: pytest.MonkeyPatch) -> None:
    real = max_min_rates
    monkeypatch.setattr(fluid, "max_min_rates", lambda a, c, cap: 2 * real(a, c, cap))
    with pytest.raises(InvariantError, match="above its capacity"):
        run([10.0], FluidTask("x", flows=batch([10.0], [[0]])))


def test_delivery_invariant_catches_overshoot(monkeypatch: pytest.MonkeyPatch) -> None:
    real = _Run._next_step

    def overshoot(self: _Run) -> tuple[float, float] | None:
        step = real(self)
        return None if step is None else (step[0] * 1.5, self.now + step[0] * 1.5)

    monkeypatch.setattr(_Run, "_next_step", overshoot)
    with pytest.raises(InvariantError, match="delivered"):
        run([10.0], FluidTask("x", flows=batch([10.0], [[0]])))


def test_conservation_invariant_catches_lost_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    real = _Run._advance

    def leaky(self: _Run, dt: float, new_now: float) -> bool:
        changed = real(self, dt, new_now)
        self.carried *= 0.5
        return changed

    monkeypatch.setattr(_Run, "_advance", leaky)
    with pytest.raises(InvariantError, match="carried"):
        run([10.0], FluidTask("x", flows=batch([10.0], [[0]])))


# ---------------------------------------------------------------- bad input
def _flows(**changes: Any) -> FlowBatch:
    base: dict[str, Any] = {
        "nbytes": np.array([1.0, 2.0]),
        "cap": np.array([INF, INF]),
        "entry_flow": np.array([0, 1]),
        "entry_link": np.array([0, 1]),
        "entry_weight": np.array([1.0, 1.0]),
    }
    base.update(changes)
    return FlowBatch(**base)


@pytest.mark.parametrize(
    ("task", "match"),
    [
        (FluidTask("late", after=(1,)), r"task 0 'late': after = \(1,\) names task 1"),
        (FluidTask("self", after=(0,)), r"task 0 'self'.*earlier tasks"),
        (FluidTask("neg", delay=-1.0), r"task 0 'neg': delay = -1.0"),
        (FluidTask("nan", delay=float("nan")), r"delay = nan"),
        (FluidTask("b", flows=_flows(nbytes=np.array([1.0, 0.0]))), r"'b': nbytes\[1\] = 0.0"),
        (FluidTask("b", flows=_flows(nbytes=np.array([1.0, -3.0]))), r"nbytes\[1\] = -3.0"),
        (FluidTask("b", flows=_flows(nbytes=np.ones((2, 1)))), r"nbytes must be a 1-D"),
        (
            FluidTask("b", flows=_flows(entry_link=np.array([0, 2]))),
            r"entry_link\[1\] = 2: must be in \[0, 2\)",
        ),
        (FluidTask("b", flows=_flows(entry_link=np.array([-1, 0]))), r"entry_link\[0\] = -1"),
        (FluidTask("b", flows=_flows(entry_flow=np.array([0, 2]))), r"entry_flow\[1\] = 2"),
        (
            FluidTask("b", flows=_flows(entry_weight=np.array([1.0, 0.0]))),
            r"entry_weight\[1\] = 0.0",
        ),
        (FluidTask("b", flows=_flows(entry_weight=np.array([1.0]))), r"one length"),
        (FluidTask("b", flows=_flows(cap=np.array([1.0, 0.0]))), r"cap\[1\] = 0.0"),
        (FluidTask("b", flows=_flows(cap=np.array([1.0]))), r"cap has shape \(1,\)"),
        (
            FluidTask("b", flows=_flows(tail_latency=np.array([0.0, -1.0]))),
            r"tail_latency\[1\] = -1.0",
        ),
        (
            FluidTask("b", flows=_flows(entry_flow=np.array([0, 0]))),
            r"'b': flow 1 crosses no link and has cap = inf",
        ),
    ],
)
def test_bad_task_is_named(task: FluidTask, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        run([1.0, 1.0], task)


def test_forward_reference_names_the_task() -> None:
    with pytest.raises(ValueError, match=r"task 1 'second': after = \(0, 2\) names task 2"):
        run([1.0], FluidTask("first"), FluidTask("second", after=(0, 2)), FluidTask("third"))


@pytest.mark.parametrize(
    ("capacity", "match"),
    [([1.0, 0.0], r"capacity\[1\] = 0.0"), ([-2.0], r"capacity\[0\] = -2.0"), ([INF], "inf")],
)
def test_bad_capacity(capacity: list[float], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        run(capacity, FluidTask("x"))


def test_bad_options() -> None:
    with pytest.raises(ValueError, match="rtol"):
        run([1.0], rtol=0.0)
    with pytest.raises(ValueError, match="track"):
        run([1.0], track=-1)


def test_doctests() -> None:
    assert doctest.testmod(fluid).failed == 0


def test_progress_sees_the_run_without_changing_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 19, row 17: reports every PROGRESS_S of wall time and once at the end."""
    from commwall.engines.flow import fluid

    monkeypatch.setattr(fluid, "PROGRESS_S", 0.0)  # report after every event
    cap = np.array([10.0, 10.0])
    tasks = [fluid.FluidTask("t", 0.0, batch([10.0, 20.0, 30.0], [[0], [0, 1], [1]]))]
    silent = fluid.simulate(cap, tasks)
    seen: list[tuple[int, float, int, int]] = []
    heard = fluid.simulate(cap, tasks, progress=lambda *a: seen.append(a))
    assert np.array_equal(silent.end, heard.end) and silent.events == heard.events
    assert seen[-1] == (heard.events, heard.makespan, 3, 3)
    assert [s[2] for s in seen] == sorted(s[2] for s in seen) and len(seen) >= 3
