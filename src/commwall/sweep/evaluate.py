"""One design point: a resolved scenario in, a flat record of figures out.

:func:`metrics` turns a :class:`~commwall.workload.simulate.StepReport` into the flat columns a
sweep stores and analyses (every name below is a column of the sweep's Parquet dataset):

* time: ``step_time_s``, ``comm_wait_s``, ``comm_wait_share``, ``breakdown.<part>_s`` for
  compute, tp, ep, pp, bubble, dp and optimizer;
* throughput: ``tokens_per_s``, ``mfu``; energy: ``kwh_per_million_tokens``, ``usd_per_million_tokens``;
* the machine: ``gpus``, ``nodes``, ``gpu``, ``fabric``, ``topology``, ``tiers``,
  ``oversubscription``, ``routing``, ``net_bw_per_gpu_Bps``, ``scale_up_bw_per_gpu_Bps``;
* the fabric's bill: ``switches``, ``cables``, ``transceivers``, ``bisection_Bps``,
  ``power_w`` (GPUs + network), ``network_power_w``, ``network_cost_usd``;
* memory: ``memory_per_gpu_bytes``, ``fits_in_memory``;
* ``bottleneck`` (a sentence) and ``engine``.
"""

from __future__ import annotations

import hashlib
import json
import time
import traceback
from typing import Any

__all__ = ["design_id", "evaluate_point", "metrics", "point_id"]


def point_id(config: dict[str, Any]) -> str:
    """16 hex digits of SHA-256 over ``config`` as canonical JSON (sorted keys, no spaces)."""
    text = json.dumps(config, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def design_id(config: dict[str, Any]) -> str:
    """The id of the design ``config`` describes: :func:`point_id` of the scenario as validated
    (defaults filled in, units read: ``1`` and ``1.0``, ``"400 Gb/s"`` and ``"50 GB/s"`` are one
    design), or of ``config`` itself when it does not validate."""
    from commwall.io.scenario import ScenarioError, parse_scenario

    try:
        resolved = parse_scenario(config).model_dump(mode="json")
    except ScenarioError:
        resolved = config
    return point_id(resolved)


def metrics(report: Any) -> dict[str, Any]:
    """The flat figures of one simulated step (module docstring)."""
    # read off the report, not report.to_dict(): that serialises every phase of the timeline
    c, f = report.cluster, report.fabric
    out: dict[str, Any] = {
        "step_time_s": report.step_time,
        "comm_wait_s": report.comm_wait,
        "comm_wait_share": report.comm_wait_share,
        "tokens_per_s": report.tokens_per_second,
        "mfu": report.mfu,
        "kwh_per_million_tokens": report.kwh_per_million_tokens,
        "usd_per_million_tokens": report.usd_per_million_tokens,
    }
    out.update({f"breakdown.{k}_s": float(v) for k, v in report.breakdown.items()})
    out.update(
        {
            "gpus": c["gpus"],
            "nodes": c["nodes"],
            "gpu": c["gpu"],
            "fabric": c["fabric"],
            "topology": c["topology"],
            "tiers": c["tiers"],
            "oversubscription": float(c["oversubscription"]),
            "routing": c["routing"],
            "net_bw_per_gpu_Bps": float(c["net_bw_per_gpu"]),
            "scale_up_bw_per_gpu_Bps": float(c["scale_up_bw_per_gpu"]),
            "switches": f["switches"],
            "cables": f["cables"],
            "transceivers": f["transceivers"],
            "bisection_Bps": float(f["bisection_Bps"]),
            "power_w": float(f["total_power_w"]),
            "network_power_w": float(f["network_power_w"]),
            "network_cost_usd": float(f["network_cost_usd_estimate"]),
            "memory_per_gpu_bytes": float(report.memory.total),
            "fits_in_memory": bool(report.fits_in_memory),
            "bottleneck": report.bottleneck(),
            "engine": report.result.engine,
        }
    )
    return out


def evaluate_point(index: int, config: dict[str, Any], axes: dict[str, Any]) -> dict[str, Any]:
    """Simulate one resolved scenario ``config``; never raises: a refused scenario is an
    ``invalid`` record and a failing simulation an ``error`` record, each with its message."""
    from commwall.cluster import build_cluster
    from commwall.io.scenario import ScenarioError, parse_scenario
    from commwall.workload.simulate import simulate

    start = time.perf_counter()
    record: dict[str, Any] = {
        "point_id": point_id(config),  # replaced by the validated scenario's id below
        "index": index,
        "status": "ok",
        "error": None,
        "seconds": 0.0,
        **axes,
    }
    try:
        scenario = parse_scenario(config, f"point {index}")
        resolved = scenario.model_dump(mode="json")  # validated once: its id and its config
        record["point_id"] = point_id(resolved)
        record["config"] = json.dumps(resolved, sort_keys=True)
        report = simulate(scenario, build_cluster(scenario.cluster))
    except ScenarioError as e:
        record.update(status="invalid", error="; ".join(e.messages))
    except (ValueError, ArithmeticError) as e:  # model limits (unsupported shapes, ...)
        record.update(status="invalid", error=f"{type(e).__name__}: {e}")
    except Exception as e:  # a bug: keep the sweep going, keep the evidence
        last = traceback.format_exception(type(e), e, e.__traceback__)[-2:]
        record.update(status="error", error="".join(last).strip())
    else:
        record.update(metrics(report))
    record["seconds"] = time.perf_counter() - start
    record.setdefault("config", json.dumps(config, sort_keys=True, default=str))
    return record
