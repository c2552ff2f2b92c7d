"""The built-in default scenario that ``commwall run`` simulates with no argument.

1,024 H100 GPUs — 128 DGX H100 nodes (NVLink4 via four NVSwitch3 chips, 8 × ConnectX-7 NDR 400G
per node) on a rail-optimized, non-blocking two-tier Quantum-2 fat tree — training a
Llama-3-70B-class model with TP 8 × PP 4 × DP 32, 8k-token sequences and 1,024 sequences
(8.4 M tokens) per step, ZeRO-1, selective recomputation.
"""

from __future__ import annotations

from typing import Any

from commwall.scenario import Scenario, parse_scenario

DEFAULT_SCENARIO: dict[str, Any] = {
    "name": "default: Llama-3-70B on 1,024 H100 (128 x DGX H100, 8x400G NDR, rail-optimized)",
    "cluster": {
        "preset": "dgx-h100",
        "nodes": 128,
        "topology": {"kind": "rail-optimized", "oversubscription": 1.0},
        "routing": "adaptive",
    },
    "job": {
        "model": "llama3-70b",
        "tp": 8,
        "pp": 4,
        "dp": 32,
        "global_batch": 1024,
        "micro_batch": 1,
        "seq_len": 8192,
        "precision": "bf16",
        "zero_stage": 1,
        "recompute": "selective",
    },
    "simulation": {"engine": "analytic", "seed": 0},
}


def default_scenario() -> Scenario:
    """The validated built-in scenario."""
    return parse_scenario(DEFAULT_SCENARIO, "built-in default scenario")
