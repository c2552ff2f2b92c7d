"""Public nccl-tests results bundled with commwall, and the model's prediction for each.

``nccl_tests_published.yaml`` holds rows read from public sources (each with its source and a
verbatim quote). :func:`compare` rebuilds each measured system from the catalog presets — the
same constants for every system, nothing tuned per system — and predicts every measured size.
"""

from __future__ import annotations

import functools
import importlib.resources
from dataclasses import dataclass
from typing import Any

import yaml

from commwall.cluster import Cluster, build_cluster
from commwall.collectives import Proto, choose, parse_op
from commwall.io.scenario import ClusterSpec

_PRESETS = {
    ("a100-sxm", "ib"): "dgx-a100",
    ("a100-sxm", "roce"): "dgx-a100-roce",
    ("h100-sxm", "ib"): "dgx-h100",
    ("h100-sxm", "roce"): "dgx-h100-roce",
    ("h200", "ib"): "hgx-h200",
    ("h200", "roce"): "hgx-h200-roce",
    ("b200", "ib"): "dgx-b200",
    ("gb200", "ib"): "gb200-nvl72",
}


@dataclass(frozen=True)
class Measurement:
    """One published nccl-tests run."""

    id: str
    system: str
    gpu: str
    nodes: int
    gpus_per_node: int
    fabric: str | None
    op: str
    algo: str
    points: tuple[dict[str, float], ...]
    source: str
    notes: str


@dataclass(frozen=True)
class Comparison:
    """Predicted vs measured at one size."""

    measurement: str
    size: int
    measured_busbw: float | None
    predicted_busbw: float
    measured_time: float | None
    predicted_time: float
    algo: str
    proto: str

    @property
    def busbw_error(self) -> float | None:
        """(predicted − measured) / measured busbw, or None when not measured."""
        if not self.measured_busbw:
            return None
        return (self.predicted_busbw - self.measured_busbw) / self.measured_busbw

    @property
    def time_error(self) -> float | None:
        """(predicted − measured) / measured time, or None when not measured."""
        if not self.measured_time:
            return None
        return (self.predicted_time - self.measured_time) / self.measured_time


@functools.cache
def _raw() -> dict[str, Any]:
    text = (
        importlib.resources.files("commwall.validation")
        .joinpath("nccl_tests_published.yaml")
        .read_text(encoding="utf-8")
    )
    data: dict[str, Any] = yaml.safe_load(text)
    return data


def load_measurements() -> list[Measurement]:
    """Every bundled measurement."""
    return [
        Measurement(
            id=m["id"],
            system=m["system"],
            gpu=m["gpu"],
            nodes=int(m["nodes"]),
            gpus_per_node=int(m["gpus_per_node"]),
            fabric=m.get("fabric"),
            op=m["op"],
            algo=m.get("algo") or "default",
            points=tuple(m["points"]),
            source=m["source"],
            notes=m.get("notes") or "",
        )
        for m in _raw()["measurements"]
    ]


def reference_statements() -> list[dict[str, Any]]:
    """Maintainers' stated expectations (not rows), with sources."""
    statements: list[dict[str, Any]] = _raw().get("reference_statements", [])
    return statements


def measurement_cluster(m: Measurement, *, sharp: bool = False) -> Cluster | None:
    """The catalog cluster that matches ``m``, or None when the source lacks what we need."""
    scale_out = m.fabric in ("ib", "roce")
    preset = _PRESETS.get((m.gpu, m.fabric if scale_out and m.fabric else "ib"))
    n_gpus = m.nodes * m.gpus_per_node
    if preset is None or m.fabric is None:
        return None  # the source does not say what the system is
    spec: dict[str, Any] = {"preset": preset, "nodes": m.nodes, "sharp": sharp}
    if m.gpu == "gb200" and n_gpus % 72:
        if scale_out:
            return None  # racks of unknown size
        spec["scale_up_domain"] = n_gpus  # one multi-node NVLink domain smaller than a rack
    return build_cluster(ClusterSpec.model_validate(spec))


def compare(m: Measurement, *, sharp: bool = False) -> list[Comparison]:
    """Predict every point of ``m`` (forcing the algorithm when the source forced it)."""
    cluster = measurement_cluster(m, sharp=sharp)
    if cluster is None:
        return []
    fabric = cluster.world(m.gpus_per_node)
    op = parse_op(m.op)
    algo = None if m.algo == "default" else m.algo
    out = []
    for point in m.points:
        size = int(point["size_bytes"])
        best = choose(op, size, fabric, algo=algo).best
        measured_busbw = point.get("busbw_GBps")
        measured_time = point.get("time_us")
        out.append(
            Comparison(
                measurement=m.id,
                size=size,
                measured_busbw=float(measured_busbw) * 1e9 if measured_busbw else None,
                predicted_busbw=best.busbw,
                measured_time=float(measured_time) * 1e-6 if measured_time else None,
                predicted_time=best.time,
                algo=best.algo,
                proto=best.proto.value if isinstance(best.proto, Proto) else str(best.proto),
            )
        )
    return out
