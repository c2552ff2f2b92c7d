"""Inputs for the report tests (and for trying the report by hand): a small scenario, a sweep
directory made with :func:`commwall.sweep.evaluate.evaluate_point`, hostile strings."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

__all__ = ["EXAMPLE", "FAULTS", "HOSTILE", "make_sweep"]

_ROOT = Path(__file__).resolve().parents[3]
#: The small example scenario (64 A100, pure DP; simulates in tens of ms).
EXAMPLE = _ROOT / "examples" / "llama3-8b-ddp-pcie.yaml"
#: The same cluster and job with a ``faults`` section.
FAULTS = Path(__file__).with_name("testdata") / "small-faults.yaml"
#: A name that would run script if a report did not escape it.
HOSTILE = "</script><script>alert(1)</script><img src=x onerror=alert(2)>"


def make_sweep(folder: Path, *, name: str | None = None) -> Path:
    """A sweep of :data:`EXAMPLE` over nodes × oversubscription (4 ok points), one invalid
    point and one error record, stored as ``commwall sweep`` stores them."""
    from commwall.scenario import load_scenario
    from commwall.sweep.evaluate import evaluate_point
    from commwall.sweep.store import write_point

    base = load_scenario(EXAMPLE).model_dump(mode="json")
    if name is not None:
        base["name"] = name
    index = 0
    for nodes in (4, 8):
        for over in (1.0, 3.0):
            config = copy.deepcopy(base)
            config["cluster"]["nodes"] = nodes
            config["cluster"]["topology"]["oversubscription"] = over
            config["job"]["dp"] = config["job"]["global_batch"] = nodes * 8
            axes: dict[str, Any] = {
                "cluster.nodes": nodes,
                "cluster.topology.oversubscription": over,
            }
            write_point(folder, evaluate_point(index, config, axes))
            index += 1
    bad = copy.deepcopy(base)
    bad["job"]["dp"] = 7
    axes = {"cluster.nodes": 8, "cluster.topology.oversubscription": 2.0}
    write_point(folder, evaluate_point(index, bad, axes))
    error = {"point_id": "e" * 16, "index": index + 1, "status": "error",
             "error": f"RuntimeError: boom {HOSTILE}", "seconds": 0.0, **axes}  # fmt: skip
    write_point(folder, error)
    return folder
