"""Chrome / Perfetto trace export: phases as slices on one track per stream, counters as lines.

The output is the JSON object form of the Trace Event Format (Google, "Trace Event Format",
https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU; mirrored in
the Catapult repository as ``docs/trace-event-format.md``), which https://ui.perfetto.dev and
``chrome://tracing`` open directly:

* ``{"traceEvents": [...], "displayTimeUnit": "ns"}``; every ``ts`` and ``dur`` is in
  microseconds (fractions allowed, so nanosecond phases keep their length).
* a phase is a *complete* event, ``"ph": "X"`` with ``ts`` and ``dur``, on thread ``tid`` of
  process ``pid``; each stream gets its own ``tid``, named by a ``"ph": "M"`` ``thread_name``
  metadata event (``thread_sort_index`` keeps the streams in order of first use), and the process
  by ``process_name``.
* a counter is a series of ``"ph": "C"`` events with the same ``name``; each key of ``args`` is
  one line of the counter track (here a single ``value``).

>>> from commwall.engines.base import PhaseResult
>>> events = trace_events([PhaseResult("fwd", "compute", "compute", 0.0, 2e-6)])
>>> [(e["ph"], e["name"]) for e in events]
[('M', 'process_name'), ('M', 'thread_name'), ('M', 'thread_sort_index'), ('X', 'fwd')]
>>> events[-1]["ts"], events[-1]["dur"]
(0.0, 2.0)
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from itertools import pairwise
from pathlib import Path
from typing import Any

from commwall.engines.base import PhaseResult
from commwall.errors import CommwallError
from commwall.io.atomic import write_atomic

__all__ = ["TraceError", "trace_events", "write_trace"]

_US = 1e6  # trace timestamps are microseconds
_PID = 1


class TraceError(CommwallError, ValueError):
    """A trace input is wrong; the message names the value, the problem and what is allowed."""


def trace_events(
    phases: Sequence[PhaseResult],
    *,
    counters: Mapping[str, tuple[Iterable[float], Iterable[float]]] | None = None,
    process: str = "commwall",
) -> list[dict[str, Any]]:
    """Trace events for ``phases`` (one slice each, one track per stream) and ``counters``.

    ``counters`` maps a track name (``"leaf 3 → spine 1"``) to ``(times, values)`` (sequences or
    numpy arrays), times in seconds and values in any unit (utilisation 0..1, bytes/s …): one sample per time, or — with one more time than
    values — a piecewise-constant series whose last time closes it at 0 (the shape of
    ``LinkTimeline``: ``values[j]`` holds on ``[times[j], times[j + 1])``).
    """
    events: list[dict[str, Any]] = [_meta("process_name", 0, {"name": process})]
    tids: dict[str, int] = {}
    slices: list[dict[str, Any]] = []
    for index, phase in enumerate(phases):
        start, end = float(phase.start), float(phase.end)
        if not (math.isfinite(start) and math.isfinite(end) and end >= start):
            raise TraceError(
                f"phase {index} {phase.name!r}: start = {start!r}, end = {end!r}; "
                "need finite times with end >= start"
            )
        if phase.stream not in tids:
            tid = tids[phase.stream] = len(tids) + 1
            events.append(_meta("thread_name", tid, {"name": phase.stream}))
            events.append(_meta("thread_sort_index", tid, {"sort_index": tid}))
        slices.append(
            {
                "name": phase.name,
                "cat": phase.category,
                "ph": "X",
                "ts": start * _US,
                "dur": (end - start) * _US,
                "pid": _PID,
                "tid": tids[phase.stream],
                "args": _phase_args(phase),
            }
        )
    events += slices
    for name, (times, values) in (counters or {}).items():
        events += _counter(name, times, values)
    return events


def write_trace(path: str | Path, events: list[dict[str, Any]]) -> None:
    """Write ``events`` as a trace file at ``path``, atomically.

    (:func:`commwall.io.atomic.write_atomic`: a reader never sees half a trace and a failed write
    leaves any previous file as it was). Non-finite numbers are refused (``ValueError``): JSON has none.
    """
    document = {"traceEvents": events, "displayTimeUnit": "ns"}
    write_atomic(
        path,
        lambda handle: json.dump(
            document, handle, ensure_ascii=False, allow_nan=False, default=_plain
        ),
    )


def _meta(name: str, tid: int, args: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "ph": "M", "pid": _PID, "tid": tid, "args": args}


def _phase_args(phase: PhaseResult) -> dict[str, Any]:
    """What a click on the slice shows: the phase's category and, where known, what it moved."""
    args: dict[str, Any] = {"category": phase.category}
    if phase.repeat != 1:
        args["repeat"] = int(phase.repeat)
    if phase.op is not None:
        args["op"] = phase.op
    if phase.nbytes:
        args["bytes"] = float(phase.nbytes)
    if phase.nranks != 1:
        args["nranks"] = int(phase.nranks)
    if phase.algo is not None:
        args["algo"] = phase.algo
    if phase.proto is not None:
        args["proto"] = phase.proto
    if phase.busbw:
        args["busbw_Bps"] = float(phase.busbw)
    if phase.bottleneck is not None:
        args["bottleneck"] = phase.bottleneck
    return args


def _counter(name: str, times: Iterable[float], values: Iterable[float]) -> list[dict[str, Any]]:
    t = [float(x) for x in times]
    v = [float(x) for x in values]
    n_values = len(v)
    if len(t) == n_values + 1:
        v.append(0.0)  # the closing time: the series drops back to idle
    if len(t) != len(v):
        raise TraceError(
            f"counter {name!r}: {len(t)} times for {n_values} values; "
            "need one time per value, or one more to close the series"
        )
    if any(not (math.isfinite(x) and math.isfinite(y)) for x, y in zip(t, v, strict=True)):
        raise TraceError(f"counter {name!r}: times and values must be finite")
    if any(b < a for a, b in pairwise(t)):
        raise TraceError(f"counter {name!r}: times must not decrease")
    return [
        {"name": name, "ph": "C", "ts": ts * _US, "pid": _PID, "args": {"value": value}}
        for ts, value in zip(t, v, strict=True)
    ]


def _plain(value: object) -> Any:
    """numpy scalars and arrays as plain JSON numbers and lists."""
    convert = getattr(value, "tolist", None)
    if callable(convert):
        return convert()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")
