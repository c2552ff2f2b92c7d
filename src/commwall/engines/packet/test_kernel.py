"""The event kernel: time order, deterministic ties, ``until``/``max_events``, lazy timers."""

from __future__ import annotations

import doctest

import pytest

from commwall.engines.packet import kernel
from commwall.engines.packet.kernel import PS_PER_S, SimulationError, Simulator, Timer, ps, seconds


def test_events_run_in_time_order_with_fifo_ties() -> None:
    sim = Simulator()
    seen: list[tuple[int, str]] = []
    for t, name in ((30, "d"), (10, "a"), (20, "b"), (20, "c"), (10, "a2")):
        sim.at(t, lambda n, t=t: seen.append((t, n)), name)
    assert sim.pending() == 5
    assert sim.run() == 5
    assert seen == [(10, "a"), (10, "a2"), (20, "b"), (20, "c"), (30, "d")]
    assert sim.now == 30 and sim.events == 5 and sim.pending() == 0


def test_handlers_schedule_more_events_and_after_is_relative() -> None:
    sim = Simulator()
    seen: list[int] = []

    def tick(left: int) -> None:
        seen.append(sim.now)
        if left:
            sim.after(7, tick, left - 1)

    sim.at(3, tick, 3)
    sim.run()
    assert seen == [3, 10, 17, 24]


def test_event_in_the_past_is_refused() -> None:
    sim = Simulator()
    sim.at(100, lambda _: None)
    sim.run()
    with pytest.raises(SimulationError, match="before now"):
        sim.at(50, lambda _: None)


def test_until_and_max_events_stop_and_resume() -> None:
    sim = Simulator()
    seen: list[int] = []
    for t in (5, 10, 15, 20):
        sim.at(t, seen.append, t)
    assert sim.run(until=12) == 2
    assert seen == [5, 10] and sim.now == 12  # the clock advances to ``until``
    assert sim.run(max_events=1) == 1
    assert seen == [5, 10, 15]
    assert sim.run() == 1 and seen[-1] == 20 and sim.events == 4


def test_timer_rearm_and_cancel_leave_only_the_live_deadline() -> None:
    sim = Simulator()
    fired: list[int] = []
    timer = Timer(sim, lambda: fired.append(sim.now))
    timer.arm(100)
    timer.arm(40)  # earlier re-arm: the 100 entry is stale
    assert timer.armed and timer.deadline == 40
    sim.run()
    assert fired == [40] and not timer.armed
    timer.arm(200)
    timer.cancel()
    sim.run()
    assert fired == [40] and timer.deadline is None


def test_two_simulators_do_not_share_state() -> None:
    one, two = Simulator(), Simulator()
    one.at(5, lambda _: None)
    assert two.pending() == 0
    one.run()
    assert two.now == 0


def test_picosecond_conversions() -> None:
    assert PS_PER_S == 10**12
    assert ps(1e-6) == 1_000_000 and ps(0.5e-12) in (0, 1)
    assert seconds(ps(3.25e-6)) == pytest.approx(3.25e-6, abs=1e-18)


def test_doctests() -> None:
    assert doctest.testmod(kernel).failed == 0
