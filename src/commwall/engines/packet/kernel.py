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
import sys
from collections import deque
from collections.abc import Callable
from typing import Any

from commwall.errors import CommwallError

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


class SimulationError(CommwallError, RuntimeError):
    """The event loop was asked for something impossible (an event in the past)."""


class Simulator:
    """The event loop. ``now`` is the current time in picoseconds."""

    __slots__ = ("counter", "deferred", "events", "heap", "now")

    def __init__(self) -> None:
        self.now = 0
        self.events = 0
        self.deferred = 0  # timer events waiting off the heap behind an earlier one (Timer)
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
        """Events waiting (cancelled timers included until they come due)."""
        return len(self.heap) + self.deferred

    def run(self, until: int | None = None, max_events: int | None = None) -> int:
        """Run events in time order until none are left, the next one is after ``until`` (ps),
        or ``max_events`` ran. Returns the number of events this call ran."""
        heap = self.heap
        pop = heapq.heappop
        limit = sys.maxsize if max_events is None else max_events
        ran = 0
        # the hot loop: locals only (attribute lookups cost more than the heap operation)
        if until is None:
            if limit <= 0:  # as before: ``ran == limit`` never held, so no limit at all
                limit = sys.maxsize
            # ``range`` counts the events and enforces the limit at C speed; an empty heap ends
            # the loop by ``heappop``'s IndexError instead of a ``while heap`` test per event
            try:
                for ran in range(1, limit + 1):  # noqa: B007  (``ran`` is read after the loop)
                    time, _, handler, argument = pop(heap)
                    self.now = time
                    handler(argument)
            except IndexError as exc:
                # raised by ``pop`` in this frame (no deeper traceback) on an empty heap: done;
                # an IndexError from inside a handler is a real error
                if heap or exc.__traceback__ is None or exc.__traceback__.tb_next is not None:
                    raise
                ran -= 1
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
    earlier event stale (it is skipped when it comes due: lazy deletion). Every arming is one
    event, run in the kernel's (time, sequence) order, but a re-arming later than all the
    timer's pending ones waits in the timer's own queue, off the heap, until the one before it
    has run: a retransmission timer re-armed on every ACK keeps one heap entry, not one per ACK
    in flight, so the heap stays the size of the network.

    >>> sim = Simulator(); fired = []
    >>> t = Timer(sim, lambda: fired.append(sim.now))
    >>> t.arm(50); t.arm(80); sim.run()   # the first arming is stale
    2
    >>> fired
    [80]
    """

    __slots__ = (
        "_callback",
        "_counter",
        "_fire_cb",
        "_generation",
        "_heap",
        "_in_heap",
        "_queued",
        "_sim",
        "_tail",
        "deadline",
    )

    def __init__(self, sim: Simulator, callback: Callable[[], None]) -> None:
        self._sim = sim
        self._heap = sim.heap
        self._counter = sim.counter
        self._fire_cb = self._fire  # one bound method for every arming, not one per arming
        self._callback = callback
        self._generation = 0
        self._in_heap = 0  # this timer's events in the kernel's heap
        self._queued: deque[tuple[int, int, Handler, Any]] = deque()  # later ones, in order
        self._tail = -1  # the latest time among this timer's pending events
        self.deadline: int | None = None

    @property
    def armed(self) -> bool:
        """Whether the timer will fire."""
        return self.deadline is not None

    def arm(self, time: int) -> None:
        """Fire at absolute ``time`` (ps), replacing any earlier arming."""
        sim = self._sim
        if time < sim.now:
            raise SimulationError(f"event at {time} ps is before now ({sim.now} ps)")
        generation = self._generation + 1
        self._generation = generation
        self.deadline = time
        # the sequence number is drawn now, as Simulator.at would: the event keeps its place
        event = (time, next(self._counter), self._fire_cb, generation)
        if self._in_heap and time >= self._tail:
            # after every pending event of this timer (same time: a later sequence number), so
            # it cannot come due before the one ahead of it has run and moved it to the heap
            self._queued.append(event)
            sim.deferred += 1
        else:
            heapq.heappush(self._heap, event)
            self._in_heap += 1
        if time > self._tail:
            self._tail = time

    def cancel(self) -> None:
        """Do not fire."""
        self._generation += 1
        self.deadline = None

    def _fire(self, generation: int) -> None:
        queued = self._queued
        if queued:  # the next waiting event joins the heap before anything can pass it
            heapq.heappush(self._heap, queued.popleft())
            self._sim.deferred -= 1
        else:
            self._in_heap -= 1
        if generation != self._generation:
            return  # stale: re-armed or cancelled since
        self.deadline = None
        self._callback()
