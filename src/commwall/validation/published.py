"""Public nccl-tests results bundled with commwall, and the model's prediction for each.

``nccl_tests_public.yaml`` holds tables read from public sources (each with its source and one
verbatim row; the file's header documents the fields). :func:`compare` rebuilds each measured
system from the catalog presets and what the source says of its NICs — the same constants for
every system, nothing tuned per system — applies the NCCL settings the run used
(:func:`apply_nccl_env`), and predicts every measured size as ``commwall collective`` would.
"""

from __future__ import annotations

import functools
import importlib.resources
from dataclasses import dataclass, replace
from typing import Any, Final

import yaml

from commwall.cluster import Cluster, build_cluster
from commwall.collectives import (
    Proto,
    Unsupported,
    choose,
    parse_op,
)
from commwall.collectives.nccl import nccl_tests_time
from commwall.collectives.nccl_env import apply_nccl_env
from commwall.scenario import ClusterSpec

DATA_FILE: Final = "nccl_tests_public.yaml"

_PRESETS: Final = {
    ("a100-sxm", "ib"): "dgx-a100",
    ("a100-sxm", "roce"): "dgx-a100-roce",
    ("h100-sxm", "ib"): "dgx-h100",
    ("h100-sxm", "roce"): "dgx-h100-roce",
    ("h200", "ib"): "hgx-h200",
    ("h200", "roce"): "hgx-h200-roce",
    ("b200", "ib"): "dgx-b200",
    ("b200", "roce"): "dgx-b200-roce",
    ("gb200", "ib"): "gb200-nvl72",
    ("gb200", "roce"): "gb200-nvl72-roce",
    ("b300", "ib"): "dgx-b300",
    ("b300", "roce"): "dgx-b300-roce",
    ("gb300", "ib"): "gb300-nvl72",
    ("gb300", "roce"): "gb300-nvl72-roce",
}
#: Catalog NIC for a port speed (Gb/s): ConnectX-6 runs HDR/200GbE (and 100G with the rate
#: overridden), ConnectX-7 NDR/400GbE, ConnectX-8 XDR/800GbE.
_NICS: Final = {100: "connectx-6", 200: "connectx-6", 400: "connectx-7", 800: "connectx-8"}


@dataclass(frozen=True)
class Measurement:
    """One published nccl-tests table (fields as in the data file's header)."""

    id: str
    system: str
    gpu: str
    nodes: int
    gpus_per_node: int
    node_gpus: int | None
    nic_count: int | None
    nic_gbps: float | None
    fabric: str | None
    cpu: str | None
    op: str
    algo: str
    proto: str
    env: dict[str, str]
    gpus_per_process: int
    nccl_version: str | None
    healthy: bool
    role: str
    not_compared: str | None
    points: tuple[dict[str, Any], ...]
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
    #: Why the source's own table shows this point as an outlier (slower than a larger size of
    #: the same run by over 20%), or None; outliers are predicted but not scored.
    outlier: str | None = None

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
    text = importlib.resources.files("commwall.validation").joinpath(DATA_FILE).read_text("utf-8")
    # the C loader where PyYAML has it (5x faster on this 0.8 MB file); both are safe loaders
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    data: dict[str, Any] = yaml.load(text, Loader=loader)
    return data


def _int(value: Any) -> int | None:
    return None if value in (None, "") else int(value)


#: The words of the data file's bandwidth rule (a table whose busbw at 256 MiB and above is
#: below 75 % of NVIDIA's per-NIC guidance, nccl-tests#290 and #119, is not compared).
_GUIDANCE_RULE: Final = "NVIDIA's guidance"


def _run_of(source: str) -> str:
    """The log or page a table was read from: its source address without the section note."""
    return source.split(" (")[0].strip()


def _share_run_verdicts(ms: list[Measurement]) -> list[Measurement]:
    """Tables logged by one run share its all_reduce's bandwidth verdict: the rule checks the
    run's fabric, which its other collectives crossed too. A table read from the same source
    file as an all_reduce that fails the rule is not compared either (rule applied to every
    table; today it takes out three MIT ORCD two-node B200 jobs, whose source finds an
    unexplained per-operation cost in every channel-split collective of the run)."""
    failed: dict[str, str] = {}
    for m in ms:
        run = _run_of(m.source)
        if run and m.op == "all_reduce" and m.not_compared and _GUIDANCE_RULE in m.not_compared:
            failed.setdefault(run, m.id)
    out = []
    for m in ms:
        first = failed.get(_run_of(m.source))
        if first is not None and not m.not_compared:  # the failing all_reduce has its reason
            m = replace(
                m,
                not_compared=f"logged in the same run as {first}, whose all_reduce is below "
                "75% of NVIDIA's bandwidth guidance: the run's fabric fails the check its other "
                "tables share (rule applied to every table)",
            )
        out.append(m)
    return out


def load_measurements() -> list[Measurement]:
    """Every bundled measurement (:func:`_share_run_verdicts` applied)."""
    out = []
    for m in _raw()["measurements"]:
        env = {str(k): str(v) for k, v in (m.get("env") or {}).items()}
        out.append(
            Measurement(
                id=m["id"],
                system=m.get("system") or "",
                gpu=m["gpu"],
                nodes=int(m["nodes"]),
                gpus_per_node=int(m["gpus_per_node"]),
                node_gpus=_int(m.get("node_gpus")),
                nic_count=_int(m.get("nic_count")),
                nic_gbps=None if m.get("nic_gbps") is None else float(m["nic_gbps"]),
                fabric=m.get("fabric"),
                cpu=m.get("cpu"),
                op=m["op"],
                algo=str(m.get("algo") or "default"),
                proto=str(m.get("proto") or "default"),
                env=env,
                gpus_per_process=int(m.get("gpus_per_process") or 1),
                nccl_version=None if m.get("nccl_version") is None else str(m["nccl_version"]),
                healthy=bool(m.get("healthy", True)),
                role=str(m.get("role") or "dev"),
                not_compared=m.get("not_compared"),
                points=tuple(m["points"]),
                source=m.get("source") or "",
                notes=m.get("notes") or "",
            )
        )
    return _share_run_verdicts(out)


def reference_statements() -> list[dict[str, Any]]:
    """Maintainers' and users' stated expectations (not rows), with sources."""
    statements: list[dict[str, Any]] = _raw().get("statements", [])
    return statements


def measurement_cluster(m: Measurement, *, sharp: bool = False) -> Cluster | None:
    """The catalog cluster that matches ``m``, or None when it cannot be rebuilt
    (``m.not_compared`` says why)."""
    if m.not_compared:
        return None
    multi = m.nodes > 1 and m.fabric in ("ib", "roce")
    preset = _PRESETS.get((m.gpu, m.fabric if multi and m.fabric else "ib"))
    if preset is None:
        return None
    spec: dict[str, Any] = {"preset": preset, "nodes": m.nodes, "sharp": sharp}
    if multi and m.nic_count:
        spec["nics_per_node"] = m.nic_count
    if multi and m.nic_gbps:
        speed = int(m.nic_gbps)
        if speed not in _NICS:
            return None
        spec["nic"] = _NICS[speed]
        if speed == 100:
            spec["overrides"] = {"nic": {"rate": "100 Gb/s"}}
    if m.cpu in ("intel", "amd"):
        spec["cpu"] = m.cpu
    elif m.cpu == "arm":
        spec["cpu"] = "other"
    n_gpus = m.nodes * (m.node_gpus or m.gpus_per_node)
    if m.gpu in ("gb200", "gb300") and n_gpus % 72:
        if multi:
            return None  # racks of unknown size
        spec["scale_up_domain"] = n_gpus  # one multi-node NVLink domain smaller than a rack
    return build_cluster(ClusterSpec.model_validate(spec))


def compare(m: Measurement, *, sharp: bool = False) -> list[Comparison]:
    """Predict every point of ``m`` (with the algorithm and settings the source used); sizes
    the model cannot run that way (an algorithm it does not implement for the operation) are
    left out."""
    cluster = measurement_cluster(m, sharp=sharp or m.algo.lower().startswith("collnet"))
    if cluster is None:
        return []
    fabric = cluster.world(min(m.gpus_per_node, cluster.gpus_per_node))
    fabric, algo, proto = apply_nccl_env(fabric, m.env, m.algo, m.proto)
    op = parse_op(m.op)
    out = []
    for point in m.points:
        size = int(point["size_bytes"])
        if size <= 0:
            continue
        try:
            best = choose(op, size, fabric, algo=algo, proto=proto).best
        except Unsupported:
            continue
        seconds = nccl_tests_time(best.time, m.gpus_per_process)
        measured_busbw = point.get("busbw_GBps")
        measured_time = point.get("time_us")
        out.append(
            Comparison(
                measurement=m.id,
                size=size,
                measured_busbw=float(measured_busbw) * 1e9 if measured_busbw else None,
                predicted_busbw=best.busbw * best.time / seconds if seconds > 0 else 0.0,
                measured_time=float(measured_time) * 1e-6 if measured_time else None,
                predicted_time=seconds,
                algo=best.algo,
                proto=best.proto.value if isinstance(best.proto, Proto) else str(best.proto),
                outlier=point.get("outlier"),
            )
        )
    return out
