"""A minimal discrete-event kernel: integer picoseconds, a heap, a deterministic tie-break.

Shaped after SimPy's core loop, minus processes: an event is plain data — ``(time, seq,
handler, argument)`` — and running it calls ``handler(argument)``. ``seq`` is a counter, so
events at the same picosecond run in the order they were scheduled, on every machine, every
run. The kernel knows nothing about networks and holds no global state, so many simulations
run side by side. Components keep at most one pending event each while busy (htsim's rule:
a link is a serialising queue followed by a propagation pipe), so the heap stays the size of
the network, not of the traffic.

>>> sim = Simulator()
>>> seen = []
>>> _ = sim.at(20, seen.append, "b")
>>> _ = sim.at(10, seen.append, "a")
>>> _ = sim.at(20, seen.append, "c")   # same time as "b": scheduled later, runs later
>>> sim.run()
3
>>> seen, sim.now
(['a', 'b', 'c'], 20)
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from typing import Any

__all__ = ["PS_PER_S", "SimulationError", "Simulator", "Timer", "ps", "seconds"]

#: Picoseconds per second: the kernel's clock is an integer count of picoseconds.
PS_PER_S = 1_000_000_000_000

Handler = Callable[[Any], None]


def ps(seconds_: float) -> int:
    """``seconds_`` as whole picoseconds (rounded to nearest).

    >>> ps(1.5e-6)
    1500000
    """
    return round(seconds_ * PS_PER_S)


def seconds(picoseconds: int) -> float:
    """``picoseconds`` as seconds.

    >>> seconds(2_000_000)
    2e-06
    """
    return picoseconds / PS_PER_S


class SimulationError(RuntimeError):
    """The event loop was asked for something impossible (an event in the past)."""


class Simulator:
    """The event loop. ``now`` is the current time in picoseconds."""

    __slots__ = ("counter", "events", "heap", "now")

    def __init__(self) -> None:
        self.now = 0
        self.events = 0
        # hot components push ``(time, next(counter), handler, argument)`` onto ``heap``
        # themselves (a C-level counter and no method call: the loop's largest fixed cost)
        self.counter = itertools.count(1)
        self.heap: list[tuple[int, int, Handler, Any]] = []

    def at(self, time: int, handler: Handler, argument: Any = None) -> int:
        """Run ``handler(argument)`` at absolute ``time`` (ps); returns the event's sequence
        number (its tie-break)."""
        if time < self.now:
            raise SimulationError(f"event at {time} ps is before now ({self.now} ps)")
        seq = next(self.counter)
        heapq.heappush(self.heap, (time, seq, handler, argument))
        return seq

    def after(self, delay: int, handler: Handler, argument: Any = None) -> int:
        """Run ``handler(argument)`` ``delay`` ps from now."""
        return self.at(self.now + delay, handler, argument)

    def pending(self) -> int:
        """Events waiting in the heap (cancelled timers included until they come due)."""
        return len(self.heap)

    def run(self, until: int | None = None, max_events: int | None = None) -> int:
        """Run events in time order until none are left, the next one is after ``until`` (ps),
        or ``max_events`` ran. Returns the number of events this call ran."""
        heap = self.heap
        pop = heapq.heappop
        limit = -1 if max_events is None else max_events
        ran = 0
        # the hot loop: locals only (attribute lookups cost more than the heap operation)
        if until is None:
            while heap:
                time, _, handler, argument = pop(heap)
                self.now = time
                handler(argument)
                ran += 1
                if ran == limit:
                    break
        else:
            while heap and ran != limit and heap[0][0] <= until:
                time, _, handler, argument = pop(heap)
                self.now = time
                handler(argument)
                ran += 1
        self.events += ran
        if until is not None and until > self.now and (not heap or heap[0][0] > until):
            self.now = until
        return ran


class Timer:
    """A cancellable, re-armable one-shot timer that costs no heap surgery.

    ``arm(t)`` schedules ``callback()`` at ``t``; arming again or ``cancel()`` makes the
    earlier heap entry stale (it is skipped when it comes due: lazy deletion), so a
    retransmission timer re-armed on every ACK keeps at most a few entries in the heap.

    >>> sim = Simulator(); fired = []
    >>> t = Timer(sim, lambda: fired.append(sim.now))
    >>> t.arm(50); t.arm(80); sim.run()   # the first arming is stale
    2
    >>> fired
    [80]
    """

    __slots__ = ("_callback", "_generation", "_sim", "deadline")

    def __init__(self, sim: Simulator, callback: Callable[[], None]) -> None:
        self._sim = sim
        self._callback = callback
        self._generation = 0
        self.deadline: int | None = None

    @property
    def armed(self) -> bool:
        """Whether the timer will fire."""
        return self.deadline is not None

    def arm(self, time: int) -> None:
        """Fire at absolute ``time`` (ps), replacing any earlier arming."""
        self._generation += 1
        self.deadline = time
        self._sim.at(time, self._fire, self._generation)

    def cancel(self) -> None:
        """Do not fire."""
        self._generation += 1
        self.deadline = None

    def _fire(self, generation: int) -> None:
        if generation != self._generation:
            return  # stale: re-armed or cancelled since
        self.deadline = None
        self._callback()
