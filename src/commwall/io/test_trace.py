"""Perfetto / Chrome trace export: event fields, JSON round trip, counters, atomic writes."""

from __future__ import annotations

import doctest
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from commwall.engines.base import PhaseResult
from commwall.errors import CommwallError
from commwall.io import trace
from commwall.io.trace import TraceError, trace_events, write_trace


def _phases() -> list[PhaseResult]:
    return [
        PhaseResult("forward", "compute", "compute", 0.0, 1.5e-3),
        PhaseResult(
            "grad allreduce",
            "collective",
            "dp",
            1.0e-3,
            3.0e-3,
            repeat=2,
            op="all_reduce",
            nbytes=64e6,
            nranks=16,
            algo="ring",
            proto="simple",
            busbw=42e9,
            bottleneck="leaf-spine",
        ),
        PhaseResult("backward", "compute", "compute", 1.5e-3, 4.0e-3),
    ]


def _by_ph(events: list[dict[str, Any]], ph: str) -> list[dict[str, Any]]:
    return [e for e in events if e["ph"] == ph]


def test_one_complete_event_per_phase_in_microseconds() -> None:
    slices = _by_ph(trace_events(_phases()), "X")
    assert [s["name"] for s in slices] == ["forward", "grad allreduce", "backward"]
    assert slices[1]["ts"] == pytest.approx(1000.0)
    assert slices[1]["dur"] == pytest.approx(2000.0)
    assert slices[1]["cat"] == "collective"
    assert {s["pid"] for s in slices} == {1}


def test_one_named_track_per_stream() -> None:
    events = trace_events(_phases(), process="job 7")
    names = {e["tid"]: e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert names == {1: "compute", 2: "dp"}
    slices = _by_ph(events, "X")
    assert [s["tid"] for s in slices] == [1, 2, 1]
    process = [e for e in events if e["name"] == "process_name"]
    assert process[0]["args"] == {"name": "job 7"}
    # metadata first, so a streaming reader knows the tracks before their slices
    first_slice = events.index(slices[0])
    assert all(e["ph"] == "M" for e in events[:first_slice])


def test_args_carry_what_the_phase_knows() -> None:
    compute, comm, _ = _by_ph(trace_events(_phases()), "X")
    assert compute["args"] == {"category": "compute"}
    assert comm["args"] == {
        "category": "collective",
        "repeat": 2,
        "op": "all_reduce",
        "bytes": 64e6,
        "nranks": 16,
        "algo": "ring",
        "proto": "simple",
        "busbw_Bps": 42e9,
        "bottleneck": "leaf-spine",
    }


def test_counters_sampled_and_piecewise_constant() -> None:
    events = trace_events(
        [],
        counters={
            "link 3": ([0.0, 1e-3, 2e-3], [0.5, 1.0]),  # segments, closed at 2 ms
            "queue": ([0.0, 1e-6], [3.0, 4.0]),  # samples
        },
    )
    counters = _by_ph(events, "C")
    link = [(c["ts"], c["args"]["value"]) for c in counters if c["name"] == "link 3"]
    assert link == [(0.0, 0.5), (1000.0, 1.0), (2000.0, 0.0)]
    queue = [(c["ts"], c["args"]["value"]) for c in counters if c["name"] == "queue"]
    assert queue == [(0.0, 3.0), (1.0, 4.0)]


def test_counters_take_numpy_arrays() -> None:
    times, values = np.array([0.0, 1.0]), np.array([0.25])
    counters = _by_ph(trace_events([], counters={"l": (times, values)}), "C")
    assert [type(c["args"]["value"]) for c in counters] == [float, float]


@pytest.mark.parametrize(
    ("times", "values", "match"),
    [
        ([0.0], [1.0, 2.0], "1 times for 2 values"),
        ([1.0, 0.0], [1.0, 2.0], "must not decrease"),
        ([0.0, 1.0], [1.0, float("nan")], "finite"),
    ],
)
def test_bad_counters(times: list[float], values: list[float], match: str) -> None:
    with pytest.raises(TraceError, match=match):
        trace_events([], counters={"c": (times, values)})


def test_bad_phase_times() -> None:
    with pytest.raises(TraceError, match="phase 0 'x'") as info:
        trace_events([PhaseResult("x", "compute", "s", 2.0, 1.0)])
    assert isinstance(info.value, CommwallError) and isinstance(info.value, ValueError)


def test_round_trip_through_a_file(tmp_path: Path) -> None:
    events = trace_events(_phases(), counters={"link 0": ([0.0, 1e-3], [1.0])})
    path = tmp_path / "step.json"
    write_trace(path, events)
    document = json.loads(path.read_text(encoding="utf-8"))
    assert document == {"traceEvents": events, "displayTimeUnit": "ns"}
    assert [p.name for p in tmp_path.iterdir()] == ["step.json"]  # no temporary file left


def test_names_are_escaped_by_json(tmp_path: Path) -> None:
    odd = 'all"reduce\\ new\nline \u2192 spine \U0001f680 </script>'
    events = trace_events(
        [PhaseResult(odd, "c", 'stream "x"', 0.0, 1.0)], counters={odd: ([0.0], [1.0])}
    )
    path = tmp_path / "odd.json"
    write_trace(path, events)
    text = path.read_text(encoding="utf-8")
    assert "\n" not in text.strip()  # the newline in the name is escaped, not raw
    back = json.loads(text)["traceEvents"]
    assert [e["name"] for e in back if e["ph"] in "XC"] == [odd, odd]
    assert any(e["args"].get("name") == 'stream "x"' for e in back)


def test_numpy_scalars_are_written_as_numbers(tmp_path: Path) -> None:
    path = tmp_path / "np.json"
    write_trace(
        path,
        [
            {
                "name": "n",
                "ph": "C",
                "ts": np.float64(1.5),
                "pid": np.int64(1),
                "args": {"value": np.float32(2.0)},
            }
        ],
    )
    event = json.loads(path.read_text(encoding="utf-8"))["traceEvents"][0]
    assert event == {"name": "n", "ph": "C", "ts": 1.5, "pid": 1, "args": {"value": 2.0}}


def test_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "trace.json"
    path.write_text("previous", encoding="utf-8")
    many = [{"name": f"e{i}", "ph": "X", "ts": float(i)} for i in range(5000)]
    with pytest.raises(TypeError):  # fails after the first events were already written
        write_trace(path, [*many, {"name": "bad", "args": {"x": object()}}])
    assert path.read_text(encoding="utf-8") == "previous"
    assert [p.name for p in tmp_path.iterdir()] == ["trace.json"]


def test_non_finite_numbers_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "nan.json"
    with pytest.raises(ValueError):
        write_trace(path, [{"name": "n", "ph": "X", "ts": float("nan")}])
    assert not path.exists()
    assert list(tmp_path.iterdir()) == []


def test_doctests() -> None:
    assert doctest.testmod(trace).failed == 0
