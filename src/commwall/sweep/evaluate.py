"""One design point: a resolved scenario in, a flat record of figures out.

:meth:`StepReport.metrics <commwall.workload.simulate.StepReport.metrics>` gives the flat
columns a sweep stores and analyses (every name below is a column of the sweep's Parquet
dataset):

* time: ``step_time_s``, ``comm_wait_s``, ``comm_wait_share``, ``breakdown.<part>_s`` for
  every part of the step (compute, host, tp, cp, ep, pp, bubble, imbalance, dp, optimizer), and ``compute_slowed_by_comm_s`` (the part of
  the compute that is the slowdown beside overlapped collectives);
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

__all__ = ["design_id", "evaluate_point", "point_id"]


def point_id(config: dict[str, Any]) -> str:
    """16 hex digits of SHA-256 over ``config`` as canonical JSON (sorted keys, no spaces)."""
    text = json.dumps(config, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def design_id(config: dict[str, Any]) -> str:
    """The id of the design ``config`` describes: :func:`point_id` of the scenario as validated
    (defaults filled in, units read: ``1`` and ``1.0``, ``"400 Gb/s"`` and ``"50 GB/s"`` are one
    design), or of ``config`` itself when it does not validate."""
    from commwall.scenario import ScenarioError, parse_scenario

    try:
        resolved = parse_scenario(config).model_dump(mode="json")
    except ScenarioError:
        resolved = config
    return point_id(resolved)


def evaluate_point(index: int, config: dict[str, Any], axes: dict[str, Any]) -> dict[str, Any]:
    """Simulate one resolved scenario ``config``; never raises: a refused scenario is an
    ``invalid`` record and a failing simulation an ``error`` record, each with its message."""
    from commwall.cluster import build_cluster
    from commwall.scenario import ScenarioError, parse_scenario
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
        record.update(report.metrics())
    record["seconds"] = time.perf_counter() - start
    record.setdefault("config", json.dumps(config, sort_keys=True, default=str))
    return record
