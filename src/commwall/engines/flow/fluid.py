"""Event-driven fluid simulation of a DAG of tasks whose flows share links max-min fairly.

The kernel knows links (capacities in bytes/s) and nothing else about networks. A task waits for
the tasks in ``after``, then for its ``delay``; then its flows start. Between events every active
flow — of every task — runs at its max-min fair rate (:func:`max_min_rates`, Bertsekas & Gallager,
*Data Networks*, §6.5.2), so concurrent tasks contend for the links they share. An event is a
set of flows starting or finishing; at each one the rates are recomputed over all active flows
and time jumps to the next event. This is the classic flow-level ("fluid") approximation: each
flow is a rate, not packets, and rates change only at events.

A task ends when each of its flows has finished its bytes and then its ``tail_latency``
(propagation, per-hop latency). A task without flows is a timer of ``delay`` seconds.

Completions that fall within ``rtol`` of each other are one event: a flow whose remaining bytes
are at most ``rtol × nbytes`` when time reaches an event finishes at that event. So thousands of
symmetric flows cost one recomputation, and each flow's finish time is early by at most
``rtol × nbytes / rate``.

>>> import numpy as np
>>> one = FlowBatch(nbytes=np.array([100.0]), cap=np.array([np.inf]),
...                 entry_flow=np.array([0]), entry_link=np.array([0]), entry_weight=np.array([1.0]))
>>> result = simulate(np.array([10.0]), [FluidTask("send", delay=1.0, flows=one)])
>>> float(result.makespan)  # 1 s delay + 100 B at 10 B/s
11.0
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from commwall.engines.base import EngineInputError, InvariantError
from commwall.engines.flow.maxmin import FloatArray, IntArray, distinct, max_min_rates

__all__ = [
    "CHECKED_INVARIANTS",
    "PROGRESS_S",
    "FlowBatch",
    "FluidResult",
    "FluidTask",
    "LinkTimeline",
    "simulate",
]

#: Wall seconds between two progress reports of a run.
PROGRESS_S = 0.25

#: What :func:`simulate` verifies on every run (for ``Result.invariants``).
CHECKED_INVARIANTS = (
    "no link above capacity (1e-9 relative)",
    "every flow delivered its bytes (rtol)",
    "bytes carried per link = Σ weight × bytes of its flows (2·rtol)",
    "tasks start after their dependencies end",
    "durations non-negative",
)

_CAPACITY_RTOL = 1e-9
_ACTIVATE, _END = 0, 1


@dataclass(frozen=True)
class FlowBatch:
    """The flows of one task: entries ``(flow, link, weight)`` as in :func:`max_min_rates`.

    Flows are numbered ``0 .. n-1`` locally. Entries grouped by flow (all of flow 0's, then flow
    1's …) are used as given; otherwise they are sorted once.
    """

    nbytes: FloatArray  # (n,) bytes each flow must carry, > 0
    cap: FloatArray  # (n,) max rate per flow, bytes/s (np.inf = none)
    entry_flow: IntArray  # local flow index of each entry
    entry_link: IntArray  # global link index (< n_links of the simulation)
    entry_weight: FloatArray  # > 0: the flow puts weight × its rate on that link
    tail_latency: FloatArray | None = None  # (n,) s after the flow's bytes are done

    @property
    def n_flows(self) -> int:
        """Number of flows."""
        return len(self.nbytes)


@dataclass(frozen=True)
class FluidTask:
    """A node of the task DAG: wait for ``after``, then ``delay`` seconds, then run ``flows``."""

    name: str
    delay: float = 0.0  # s from the task's start until its flows start (or the timer ends)
    flows: FlowBatch | None = None
    after: tuple[int, ...] = ()  # indices of earlier tasks


@dataclass(frozen=True)
class LinkTimeline:
    """Piecewise-constant utilisation of a few links: ``utilisation[i, j]`` holds on
    ``[times[j], times[j + 1])`` for link ``links[i]``."""

    links: IntArray  # (m,) global link indices, most bytes first
    times: FloatArray  # (k + 1,) s
    utilisation: FloatArray  # (m, k) load / capacity in [0, 1]


@dataclass(frozen=True)
class FluidResult:
    """When every task ran and how busy the links were."""

    start: FloatArray  # (n_tasks,) s: all dependencies ended
    end: FloatArray  # (n_tasks,) s
    flow_finish: tuple[FloatArray, ...]  # per task: when each flow's bytes were done (no tail)
    link_bytes: FloatArray  # (n_links,) Σ weight × bytes of the flows crossing each link
    link_busy_peak: FloatArray  # (n_links,) highest load / capacity seen, in [0, 1]
    timeline: LinkTimeline
    events: int  # max-min recomputations
    makespan: float


def simulate(
    capacity: FloatArray,
    tasks: Sequence[FluidTask],
    *,
    track: int = 16,
    rtol: float = 1e-9,
    progress: Callable[[int, float, int, int], None] | None = None,
) -> FluidResult:
    """Run ``tasks`` on links of ``capacity`` (bytes/s) and return when everything happened.

    ``track``: how many links get a utilisation time series — those that carry the most bytes
    (ties: lower index first; links that carry nothing are never tracked). Every byte is
    delivered, so they are known from the input; the loop records ``track`` loads per event, so
    the timeline costs ``8 × track × events`` bytes, whatever the number of flows.
    ``rtol``: completions this close (relative, in bytes) share one event. ``progress(events,
    simulated seconds, flows done, flows)`` is called at most every :data:`PROGRESS_S` of wall
    time and at the end; it sees the run, it does not change it. Raises ``ValueError``
    for bad input (naming the task and field) and :class:`InvariantError` if the simulation
    catches itself breaking one of :data:`CHECKED_INVARIANTS`.
    """
    if not (1e-14 <= rtol <= 1e-2):
        raise EngineInputError(f"rtol = {rtol!r}: must be in [1e-14, 1e-2]")
    if track < 0:
        raise EngineInputError(f"track = {track!r}: must be >= 0")
    plan = _Plan.build(np.asarray(capacity, dtype=np.float64), tasks)
    run = _Run(plan, rtol, track)
    run.loop(progress)
    return run.result()


# ---------------------------------------------------------------- input, flattened
@dataclass
class _Plan:
    """Validated input as flat arrays; flow ``f`` of task ``t`` is global flow ``first[t] + f``."""

    capacity: FloatArray
    names: list[str]
    delay: list[float]
    after: list[tuple[int, ...]]
    first: IntArray  # (n_tasks + 1,) global flow offsets
    timer: list[bool]
    nbytes: FloatArray  # (N,)
    cap: FloatArray
    tail: FloatArray
    flow_task: IntArray
    flow_ptr: IntArray  # (N + 1,) entry range of each global flow
    entry_link: IntArray  # (E,) grouped by global flow
    entry_weight: FloatArray

    @property
    def link_bytes(self) -> FloatArray:
        """Σ weight × bytes over the flows crossing each link: what it must carry."""
        per_entry = self.entry_weight * np.repeat(self.nbytes, np.diff(self.flow_ptr))
        total = np.bincount(self.entry_link, per_entry, self.n_links)
        return np.asarray(total, dtype=np.float64)

    @property
    def n_links(self) -> int:
        return len(self.capacity)

    @classmethod
    def build(cls, capacity: FloatArray, tasks: Sequence[FluidTask]) -> _Plan:
        _check_capacity(capacity)
        n_links = len(capacity)
        batches = [_check_task(i, t, n_links) for i, t in enumerate(tasks)]
        sizes = [0 if b is None else len(b[0]) for b in batches]
        first = np.concatenate(([0], np.cumsum(sizes, dtype=np.int64)))
        parts = [b for b in batches if b is not None]
        zeros = np.zeros(0)
        nbytes = np.concatenate([p[0] for p in parts]) if parts else zeros
        counts = np.concatenate([p[3] for p in parts]) if parts else np.zeros(0, np.int64)
        return cls(
            capacity=capacity,
            names=[t.name for t in tasks],
            delay=[float(t.delay) for t in tasks],
            after=[tuple(int(d) for d in t.after) for t in tasks],
            first=first,
            timer=[s == 0 for s in sizes],
            nbytes=nbytes,
            cap=np.concatenate([p[1] for p in parts]) if parts else zeros,
            tail=np.concatenate([p[2] for p in parts]) if parts else zeros,
            flow_task=np.repeat(np.arange(len(tasks), dtype=np.int64), sizes),
            flow_ptr=np.concatenate(([0], np.cumsum(counts, dtype=np.int64))),
            # int32 indices when they fit: scipy keeps them as given instead of converting
            entry_link=np.concatenate([p[4] for p in parts]).astype(_index_dtype(n_links))
            if parts
            else np.zeros(0, _index_dtype(n_links)),
            entry_weight=np.concatenate([p[5] for p in parts]) if parts else zeros,
        )


_Flat = tuple[FloatArray, FloatArray, FloatArray, IntArray, IntArray, FloatArray]


def _index_dtype(n: int) -> np.dtype[np.signedinteger[Any]]:
    return np.dtype(np.int32) if n < 2**31 - 1 else np.dtype(np.int64)


def _check_capacity(capacity: FloatArray) -> None:
    if capacity.ndim != 1:
        raise EngineInputError(
            f"capacity must be a 1-D array of bytes/s, got shape {capacity.shape}"
        )
    bad = ~(np.isfinite(capacity) & (capacity > 0))
    if bad.any():
        link = int(np.flatnonzero(bad)[0])
        raise EngineInputError(
            f"capacity[{link}] = {float(capacity[link])!r}: must be finite and > 0"
        )


def _check_task(index: int, task: FluidTask, n_links: int) -> _Flat | None:
    """Validate one task; its flows as (nbytes, cap, tail, entries per flow, links, weights)."""
    label = f"task {index} {task.name!r}"
    if not (math.isfinite(task.delay) and task.delay >= 0):
        raise EngineInputError(
            f"{label}: delay = {task.delay!r}: must be finite and >= 0 (seconds)"
        )
    for dep in task.after:
        if not (0 <= int(dep) < index):
            raise EngineInputError(
                f"{label}: after = {task.after!r} names task {dep}; a task may only wait for "
                f"earlier tasks (0..{index - 1}), which also rules out dependency cycles"
            )
    if task.flows is None or task.flows.n_flows == 0:
        return None
    return _check_batch(label, task.flows, n_links)


def _check_batch(label: str, b: FlowBatch, n_links: int) -> _Flat:
    nbytes = np.asarray(b.nbytes, dtype=np.float64)
    if nbytes.ndim != 1:
        raise EngineInputError(f"{label}: nbytes must be a 1-D array, got shape {nbytes.shape}")
    n = len(nbytes)
    _require(label, "nbytes", nbytes, np.isfinite(nbytes) & (nbytes > 0))
    cap = _vector(label, "cap", b.cap, n)
    _require(label, "cap", cap, ~np.isnan(cap) & (cap > 0), "must be > 0 (np.inf for none)")
    tail = (
        np.zeros(n) if b.tail_latency is None else _vector(label, "tail_latency", b.tail_latency, n)
    )
    _require(label, "tail_latency", tail, np.isfinite(tail) & (tail >= 0), "must be finite, >= 0")
    flow = np.asarray(b.entry_flow, dtype=np.int64)
    link = np.asarray(b.entry_link, dtype=np.int64)
    weight = np.asarray(b.entry_weight, dtype=np.float64)
    if not (flow.ndim == link.ndim == weight.ndim == 1 and len(flow) == len(link) == len(weight)):
        raise EngineInputError(
            f"{label}: entry_flow, entry_link, entry_weight must be 1-D of one length, got "
            f"{flow.shape}, {link.shape}, {weight.shape}"
        )
    _require(label, "entry_flow", flow, (flow >= 0) & (flow < n), f"must be in [0, {n})")
    _require(
        label, "entry_link", link, (link >= 0) & (link < n_links), f"must be in [0, {n_links})"
    )
    _require(label, "entry_weight", weight, np.isfinite(weight) & (weight > 0))
    if len(flow) > 1 and (np.diff(flow) < 0).any():
        order = np.argsort(flow, kind="stable")
        flow, link, weight = flow[order], link[order], weight[order]
    counts = np.bincount(flow, minlength=n)
    unbounded = (counts == 0) & np.isinf(cap)
    if unbounded.any():
        f = int(np.flatnonzero(unbounded)[0])
        raise EngineInputError(
            f"{label}: flow {f} crosses no link and has cap = inf: its rate is unbounded"
        )
    return nbytes, cap, tail, counts.astype(np.int64), link, weight


def _vector(label: str, name: str, values: FloatArray, n: int) -> FloatArray:
    array = np.asarray(values, dtype=np.float64)
    if array.shape != (n,):
        raise EngineInputError(
            f"{label}: {name} has shape {array.shape}, expected ({n},) like nbytes"
        )
    return array


def _require(
    label: str,
    name: str,
    values: npt.NDArray[Any],
    good: npt.NDArray[np.bool_],
    rule: str = "must be finite and > 0",
) -> None:
    if not good.all():
        i = int(np.flatnonzero(~good)[0])
        raise EngineInputError(f"{label}: {name}[{i}] = {values[i].item()!r}: {rule}")


# ---------------------------------------------------------------- the event loop
@dataclass
class _Live:
    """The unfinished flows of a running task and their entries (grouped by flow)."""

    flows: IntArray
    count: IntArray
    links: IntArray
    weights: FloatArray


@dataclass
class _Run:
    plan: _Plan
    rtol: float
    track: int
    now: float = 0.0
    events: int = 0
    heap: list[tuple[float, int, int, int]] = field(default_factory=list)
    running: dict[int, _Live] = field(default_factory=dict)  # insertion order: deterministic
    dirty: set[int] = field(default_factory=set)

    def __post_init__(self) -> None:
        p = self.plan
        n_tasks, n_flows = len(p.names), len(p.nbytes)
        self.start = np.full(n_tasks, np.nan)
        self.end = np.full(n_tasks, np.nan)
        self.waiting = [len(set(a)) for a in p.after]
        self.children: list[list[int]] = [[] for _ in range(n_tasks)]
        for t, deps in enumerate(p.after):
            for d in set(deps):
                self.children[d].append(t)
        self.left = np.diff(p.first)  # unfinished flows per task
        self.tail_end = np.zeros(n_tasks)
        self.finish = np.full(n_flows, np.nan)
        self.delivered = np.zeros(n_flows)
        self.done = np.zeros(n_flows, dtype=bool)
        self.carried = np.zeros(p.n_links)
        self.peak = np.zeros(p.n_links)
        # Every byte is delivered, so the links that will carry the most are known now: only
        # their loads are recorded (``track`` floats per event).
        self.link_bytes = p.link_bytes
        busy = np.flatnonzero(self.link_bytes > 0)
        self.tracked = busy[np.argsort(-self.link_bytes[busy], kind="stable")][: self.track]
        self.track_pos = np.full(p.n_links, -1, dtype=np.int64)
        self.track_pos[self.tracked] = np.arange(len(self.tracked))
        # scratch for distinct(); int32 like the entries, so scipy takes the indices as they are
        self.link_slot = np.zeros(p.n_links, dtype=p.entry_link.dtype)
        self.seq = 0
        # the current rates: active flows, their rates, the links they load
        self.act: IntArray = np.zeros(0, np.int64)
        self.rates: FloatArray = np.zeros(0)
        self.used: IntArray | None = np.zeros(0, np.int64)  # None = all links
        self.load: FloatArray = np.zeros(0)
        self.times: list[float] = [0.0]  # start of each constant-rate segment
        self.loads: list[FloatArray] = [np.zeros(len(self.tracked))]  # tracked links' loads
        for t in range(n_tasks):
            if self.waiting[t] == 0:
                self._ready(t, 0.0)

    def loop(self, progress: Callable[[int, float, int, int], None] | None = None) -> None:
        """Process events until every task has ended, reporting to ``progress`` now and then."""
        changed = self._settle()
        flows = len(self.plan.nbytes)
        due = time.perf_counter() + PROGRESS_S
        while True:
            if changed:
                self._recompute()
            step = self._next_step()
            if step is None:
                break
            changed = self._advance(*step)
            changed = self._settle() or changed
            if progress is not None and time.perf_counter() >= due:
                progress(self.events, self.now, int(self.done.sum()), flows)
                due = time.perf_counter() + PROGRESS_S
        if progress is not None:
            progress(self.events, self.now, int(self.done.sum()), flows)
        if np.isnan(self.end).any():
            t = int(np.flatnonzero(np.isnan(self.end))[0])
            raise InvariantError(f"task {t} {self.plan.names[t]!r} never ended")

    # -- task state ------------------------------------------------------------------------
    def _push(self, time: float, kind: int, task: int) -> None:
        heapq.heappush(self.heap, (time, self.seq, kind, task))
        self.seq += 1

    def _ready(self, task: int, time: float) -> None:
        self.start[task] = time
        fire = time + self.plan.delay[task]
        self._push(fire, _END if self.plan.timer[task] else _ACTIVATE, task)

    def _settle(self) -> bool:
        """Fire every task event due by now; True when the set of active flows changed."""
        changed = False
        while self.heap and self.heap[0][0] <= self.now:
            time, _, kind, task = heapq.heappop(self.heap)
            if kind == _ACTIVATE:
                self._activate(task, time)
                changed = True
                continue
            self.end[task] = time
            for child in self.children[task]:
                self.waiting[child] -= 1
                if self.waiting[child] == 0:
                    self._ready(child, max(float(self.end[d]) for d in self.plan.after[child]))
        return changed

    def _activate(self, task: int, time: float) -> None:
        p = self.plan
        lo, hi = int(p.first[task]), int(p.first[task + 1])
        e_lo, e_hi = int(p.flow_ptr[lo]), int(p.flow_ptr[hi])
        self.tail_end[task] = time
        self.running[task] = _Live(
            flows=np.arange(lo, hi, dtype=np.int64),
            count=np.diff(p.flow_ptr[lo : hi + 1]),
            links=p.entry_link[e_lo:e_hi],
            weights=p.entry_weight[e_lo:e_hi],
        )

    # -- rates -----------------------------------------------------------------------------
    def _recompute(self) -> None:
        """Max-min rates over every active flow of every running task."""
        for task in self.dirty & self.running.keys():
            self.running[task] = _prune(self.running[task], self.done)
        self.dirty.clear()
        lives = list(self.running.values())
        act = _join([x.flows for x in lives], np.int64)
        if len(act) == 0:
            self.act, self.rates, self.used, self.load = act, np.zeros(0), act, np.zeros(0)
            self._record()
            return
        counts = _join([x.count for x in lives], np.int64)
        links = _join([x.links for x in lives], self.plan.entry_link.dtype)
        weights = _join([x.weights for x in lives], np.float64)
        n_links = self.plan.n_links
        if len(links) * 4 >= n_links:  # dense enough: an O(n_links) pass beats renumbering
            used, rows, capacity = None, links, self.plan.capacity
        else:
            used, rows = distinct(links, self.link_slot)
            capacity = self.plan.capacity[used]
        if len(links) >= 2**31 - 1:  # int32 indices only while they fit
            rows = rows.astype(np.int64)
        indptr = np.concatenate(([0], np.cumsum(counts))).astype(rows.dtype, copy=False)
        # Entries are grouped by flow, so the CSC (column = flow) needs no sort.
        from scipy import sparse  # type: ignore[import-untyped]  # imported on use: ~20 MiB

        incidence = sparse.csc_matrix((weights, rows, indptr), shape=(len(capacity), len(act)))
        rates = max_min_rates(incidence, capacity, self.plan.cap[act])
        self.events += 1
        load = incidence @ rates
        over = load > capacity * (1 + _CAPACITY_RTOL)
        if over.any():
            i = int(np.flatnonzero(over)[0])
            link = i if used is None else int(used[i])
            raise InvariantError(
                f"t = {self.now:.9g} s: link {link} carries {load[i]:.6g} B/s, above its "
                f"capacity {capacity[i]:.6g} B/s"
            )
        busy = load / capacity
        if used is None:
            np.maximum(self.peak, busy, out=self.peak)
        else:
            self.peak[used] = np.maximum(self.peak[used], busy)
        self.act, self.rates, self.used, self.load = act, rates, used, load
        self._record()

    def _record(self) -> None:
        """Start a timeline segment: the tracked links' loads from now on."""
        if self.used is None:
            loads = self.load[self.tracked]
        else:
            loads = np.zeros(len(self.tracked))
            pos = self.track_pos[self.used]
            hot = pos >= 0
            loads[pos[hot]] = self.load[hot]
        if self.times[-1] == self.now:
            self.loads[-1] = loads
        else:
            self.times.append(self.now)
            self.loads.append(loads)

    # -- time ------------------------------------------------------------------------------
    def _next_step(self) -> tuple[float, float] | None:
        """``(dt, new_now)`` to the next event, or None when nothing is left."""
        t_heap = self.heap[0][0] if self.heap else math.inf
        dt_flow = math.inf
        if len(self.act):
            remaining = self.plan.nbytes[self.act] - self.delivered[self.act]
            dt_flow = float((remaining / self.rates).min())
        if math.isinf(t_heap) and math.isinf(dt_flow):
            if len(self.act):
                raise InvariantError(f"t = {self.now:.9g} s: flows are active but none can move")
            return None
        if t_heap <= self.now + dt_flow:
            return t_heap - self.now, t_heap
        return dt_flow, self.now + dt_flow

    def _advance(self, dt: float, new_now: float) -> bool:
        """Move the active flows ``dt`` seconds on; finish those that are done. True if any."""
        act, rates = self.act, self.rates
        if len(act):
            self.delivered[act] += rates * dt
            if self.used is None:
                self.carried += self.load * dt
            else:
                self.carried[self.used] += self.load * dt
        self.now = new_now
        if not len(act):
            return False
        nbytes = self.plan.nbytes[act]
        finished = nbytes - self.delivered[act] <= self.rtol * nbytes
        if not finished.any():
            return False
        self._finish(act[finished])
        return True

    def _finish(self, flows: IntArray) -> None:
        p = self.plan
        over = self.delivered[flows] - p.nbytes[flows]
        if (over > self.rtol * p.nbytes[flows]).any():
            f = int(flows[np.argmax(over / p.nbytes[flows])])
            raise InvariantError(
                f"flow {f - int(p.first[p.flow_task[f]])} of task {p.names[p.flow_task[f]]!r} "
                f"delivered {self.delivered[f]:.9g} B of {p.nbytes[f]:.9g} B"
            )
        self.done[flows] = True
        self.finish[flows] = self.now
        tasks = p.flow_task[flows]
        np.maximum.at(self.tail_end, tasks, self.now + p.tail[flows])
        hit, n_done = np.unique(tasks, return_counts=True)
        self.left[hit] -= n_done
        for task in hit[self.left[hit] == 0].tolist():
            del self.running[task]
            self._push(float(self.tail_end[task]), _END, task)
        self.dirty.update(hit.tolist())

    # -- result ----------------------------------------------------------------------------
    def result(self) -> FluidResult:
        p = self.plan
        link_bytes = self.link_bytes
        self._check(link_bytes)
        makespan = float(self.end.max(initial=0.0))
        return FluidResult(
            start=self.start,
            end=self.end,
            flow_finish=tuple(
                self.finish[p.first[t] : p.first[t + 1]].copy() for t in range(len(p.names))
            ),
            link_bytes=link_bytes,
            link_busy_peak=np.minimum(self.peak, 1.0),
            timeline=self._timeline(makespan),
            events=self.events,
            makespan=makespan,
        )

    def _check(self, link_bytes: FloatArray) -> None:
        p = self.plan
        off = np.abs(self.carried - link_bytes) > (2 * self.rtol + 1e-12) * link_bytes
        if off.any():
            link = int(np.flatnonzero(off)[0])
            raise InvariantError(
                f"link {link} carried {self.carried[link]:.9g} B but its flows needed "
                f"{link_bytes[link]:.9g} B"
            )
        for t, deps in enumerate(p.after):
            late = [d for d in deps if self.start[t] < self.end[d]]
            if late:
                raise InvariantError(f"task {t} {p.names[t]!r} started before task {late[0]} ended")
        if (self.end < self.start).any():
            t = int(np.flatnonzero(self.end < self.start)[0])
            raise InvariantError(f"task {t} {p.names[t]!r} has a negative duration")
        flow_start = self.start[p.flow_task] + np.asarray(p.delay)[p.flow_task]
        if (self.finish < flow_start).any() or (self.finish + p.tail > self.end[p.flow_task]).any():
            raise InvariantError("a flow finished before it started or after its task ended")

    def _timeline(self, makespan: float) -> LinkTimeline:
        """The recorded segments up to the makespan, as utilisation."""
        keep = [i for i, t in enumerate(self.times) if t < makespan]
        times = np.array([self.times[i] for i in keep] + [makespan])
        loads = np.array([self.loads[i] for i in keep]).reshape(len(keep), len(self.tracked))
        capacity = self.plan.capacity[self.tracked]
        utilisation = np.minimum(loads.T / capacity[:, None], 1.0)  # checked <= 1 + 1e-9
        return LinkTimeline(self.tracked, times, utilisation)


def _prune(live: _Live, done: npt.NDArray[np.bool_]) -> _Live:
    """``live`` without its finished flows."""
    keep = ~done[live.flows]
    entries = np.repeat(keep, live.count)
    return _Live(live.flows[keep], live.count[keep], live.links[entries], live.weights[entries])


def _join(parts: list[npt.NDArray[Any]], dtype: npt.DTypeLike) -> npt.NDArray[Any]:
    """Concatenate, without copying a single part (the common case: one running task)."""
    if len(parts) == 1:
        return parts[0]
    if not parts:
        return np.zeros(0, dtype)
    return np.concatenate(parts)
