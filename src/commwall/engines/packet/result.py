"""What a packet run reports: completion times, counters, per-port figures, queue time series,
and the invariants the run checked."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from commwall.engines.packet.kernel import PS_PER_S

if TYPE_CHECKING:
    from commwall.engines.packet.network import Network

__all__ = ["PacketResult", "jain", "summarise"]

FloatArray = npt.NDArray[np.float64]


def jain(values: npt.ArrayLike) -> float:
    """Jain's fairness index (Σx)² / (n·Σx²): 1 when all are equal, 1/n when one has all
    (Jain, Chiu, Hawe, DEC-TR-301, 1984).

    >>> jain([1, 1, 1, 1]), jain([1, 0, 0, 0])
    (1.0, 0.25)
    """
    x = np.asarray(values, dtype=np.float64)
    if not len(x) or not np.any(x):
        return 1.0
    return float(x.sum() ** 2 / (len(x) * np.square(x).sum()))


@dataclass(frozen=True)
class PacketResult:
    """One packet run. Times in seconds, sizes in bytes."""

    fabric: str
    routing: str
    flows: int
    total_bytes: float
    fct: FloatArray
    start: FloatArray
    makespan: float
    counters: dict[str, float]
    fairness: float
    ports: list[dict[str, Any]]
    queue_series: dict[str, tuple[list[float], list[int]]]
    invariants: tuple[str, ...]
    events: int
    wall_s: float
    tasks: list[dict[str, Any]] = field(default_factory=list)
    kernel: str = "python"
    """The event loop that ran: ``"python"`` or ``"numba"`` (``PacketConfig.kernel``)."""

    @property
    def goodput(self) -> float:
        """Payload delivered per second of the run, bytes/s."""
        return self.total_bytes / self.makespan if self.makespan > 0 else 0.0

    def percentiles(self) -> dict[str, float]:
        """min / p50 / p99 / max completion time, seconds (all 0 when no flow ran: a collective
        of a few bytes can leave every rank nothing to send)."""
        if len(self.fct) == 0:
            return dict.fromkeys(("min", "p50", "p99", "max"), 0.0)
        q = np.percentile(self.fct, [0, 50, 99, 100])
        return dict(zip(("min", "p50", "p99", "max"), (float(v) for v in q), strict=True))

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        out = {
            "engine": "packet",
            "fabric": self.fabric,
            "routing": self.routing,
            "flows": self.flows,
            "total_bytes": self.total_bytes,
            "fct_s": self.percentiles(),
            "fct_mean_s": float(self.fct.mean()) if len(self.fct) else 0.0,
            "makespan_s": self.makespan,
            "goodput_Bps": self.goodput,
            "fairness_jain": self.fairness,
            "counters": self.counters,
            "ports": self.ports,
            "queue_series": {k: {"t_s": t, "bytes": q} for k, (t, q) in self.queue_series.items()},
            "invariants_checked": list(self.invariants),
            "events": self.events,
            "wall_s": self.wall_s,
            "events_per_s": self.events / self.wall_s if self.wall_s > 0 else 0.0,
            "tasks": self.tasks,
        }
        out["kernel"] = self.kernel
        return out


def summarise(
    net: Network, *, wall_s: float, invariants: list[str], top: int = 8, kernel: str = "python"
) -> PacketResult:
    """Collect a finished network's figures (``kernel``: the event loop that ran)."""
    flows = net.flows
    start = np.array([f.start for f in flows], dtype=np.float64) / PS_PER_S
    finish = np.array([f.finish for f in flows], dtype=np.float64) / PS_PER_S
    fct = finish - start
    makespan = float(finish.max() - start.min()) if flows else 0.0
    end = max(net.end, 1)  # the last completion, not the last stale timer
    c = dict(net.c)
    ports = net.ports
    counters: dict[str, float] = {k: float(v) for k, v in c.items()}
    counters["ecn_marks"] = float(sum(p.marks for p in ports))
    counters["pause_frames"] = float(sum(p.pause_frames for p in ports))
    counters["paused_s"] = float(sum(p.paused_ps for p in ports)) / PS_PER_S
    counters["ports_paused"] = float(sum(1 for p in ports if p.pause_frames))
    counters["events"] = float(net.sim.events)
    counters["peak_buffer_bytes"] = float(max((n.peak for n in net.nodes), default=0))

    def score(p: Any) -> tuple[float, ...]:
        return (p.drops + p.trims, p.paused_ps, p.q_peak, p.tx_bytes)

    hot = sorted((p for p in ports if p.tx_bytes or p.drops), key=score, reverse=True)[:top]
    port_rows = [
        {
            "port": p.name,
            "tx_bytes": float(p.tx_bytes),
            "utilisation": min(p.busy_ps / end, 1.0),
            "queue_peak_bytes": float(p.q_peak),
            "queue_mean_bytes": p.q_area / end,
            "drops": float(p.drops),
            "trims": float(p.trims),
            "ecn_marks": float(p.marks),
            "pause_frames": float(p.pause_frames),
            "paused_s": p.paused_ps / PS_PER_S,
            "paused_share": min(p.paused_ps / end, 1.0),
        }
        for p in hot
    ]
    series: dict[str, tuple[list[float], list[int]]] = {}
    matrix = net.sample_matrix
    if matrix is None and net.samples:
        matrix = np.asarray(net.samples, dtype=np.int64)
    if matrix is not None and len(matrix):
        times = (np.asarray(net.sample_times, dtype=np.float64) / PS_PER_S).tolist()
        peaks = matrix.max(axis=0)
        for col in np.argsort(-peaks, kind="stable")[:top].tolist():
            if peaks[col] <= 0:
                break
            series[net.sampled_ports[col].name] = (times, matrix[:, col].tolist())
    tasks = [
        {"name": t.name, "start_s": t.start / PS_PER_S, "end_s": t.end / PS_PER_S}
        for t in net.tasks
    ]
    return PacketResult(
        fabric=net.profile.name,
        routing=net.routing,
        flows=len(flows),
        total_bytes=float(sum(f.size for f in flows)),
        fct=fct,
        start=start,
        makespan=makespan,
        counters=counters,
        fairness=net.fairness(),
        ports=port_rows,
        queue_series=series,
        invariants=tuple(invariants),
        events=net.sim.events,
        wall_s=wall_s,
        tasks=tasks,
        kernel=kernel,
    )
