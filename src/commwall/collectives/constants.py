"""NCCL's tuning constants, as data.

Every table here is copied in value (not code) from NCCL ``src/graph/tuning.cc`` at tag
v2.30.7-1 (identical to master 5067397c), as gathered in ``shared/reference/nccl-model.md`` §4–§5.
Units are converted at the edge: NCCL keeps latencies in µs and bandwidths in GB/s (G = 1e9);
here they are seconds and bytes/s.

Index conventions follow NCCL: algorithm × protocol (LL, LL128, Simple) × hardware class
(NVLINK, PCI, NET).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final


class Proto(StrEnum):
    """NCCL wire protocols (``device.h``): LL (8 B lines, 4 B data + 4 B flag), LL128 (128 B lines,
    120 B data), Simple (bulk copies with fences)."""

    LL = "LL"
    LL128 = "LL128"
    SIMPLE = "Simple"


class Hw(StrEnum):
    """The hardware class a step of an algorithm crosses (``nccl_tuner.h``)."""

    NVLINK = "nvlink"
    PCI = "pci"
    NET = "net"


class Gen(StrEnum):
    """GPU generation rows of NCCL's per-channel tables."""

    VOLTA = "volta"
    AMPERE = "ampere"
    HOPPER = "hopper"
    BLACKWELL = "blackwell"


def gen_for_sm(sm: int) -> Gen:
    """NCCL's generation row for compute capability ``sm`` (80 → Ampere, 90 → Hopper, 100 → Blackwell)."""
    if sm >= 100:
        return Gen.BLACKWELL
    if sm >= 90:
        return Gen.HOPPER
    if sm >= 80:
        return Gen.AMPERE
    return Gen.VOLTA


_US: Final = 1e-6
_GBPS: Final = 1e9

# baseLat[alg][proto] µs — tuning.cc v2.28–v2.30 (nccl-model.md §4.1).
BASE_LAT: Final[dict[str, dict[Proto, float]]] = {
    "tree": {Proto.LL: 6.8 * _US, Proto.LL128: 14.0 * _US, Proto.SIMPLE: 8.4 * _US},
    "ring": {Proto.LL: 6.6 * _US, Proto.LL128: 14.0 * _US, Proto.SIMPLE: 8.4 * _US},
    "collnet": {Proto.LL: 0.0, Proto.LL128: 0.0, Proto.SIMPLE: 0.0},
    "nvls": {Proto.LL: 0.0, Proto.LL128: 0.0, Proto.SIMPLE: 0.0},
    "nvls_tree": {Proto.LL: 0.0, Proto.LL128: 0.0, Proto.SIMPLE: 0.0},
    "pat": {Proto.LL: 8.0 * _US, Proto.LL128: 8.0 * _US, Proto.SIMPLE: 8.0 * _US},
}


def _row(ll: float, ll128: float, simple: float) -> dict[Proto, float]:
    return {Proto.LL: ll * _US, Proto.LL128: ll128 * _US, Proto.SIMPLE: simple * _US}


# hwLat[hw][alg][proto] µs per step — tuning.cc v2.28–v2.30 (nccl-model.md §4.2).
HW_LAT: Final[dict[Hw, dict[str, dict[Proto, float]]]] = {
    Hw.NVLINK: {
        "tree": _row(0.6, 1.25, 4.0),
        "ring": _row(0.6, 1.9, 3.4),
        "collnet": _row(0.0, 0.0, 3.7),
        "nvls": _row(0.0, 0.0, 25.0),
        "nvls_tree": _row(0.0, 0.0, 25.0),
        "pat": _row(0.0, 0.0, 4.0),
    },
    Hw.PCI: {
        "tree": _row(1.0, 1.9, 4.0),
        "ring": _row(1.0, 2.5, 5.7),
        "collnet": _row(0.0, 0.0, 3.7),
        "nvls": _row(0.0, 0.0, 0.0),
        "nvls_tree": _row(0.0, 0.0, 0.0),
        "pat": _row(0.0, 0.0, 4.0),
    },
    Hw.NET: {
        "tree": _row(5.0, 8.5, 14.0),
        "ring": _row(2.7, 4.0, 14.0),
        "collnet": _row(0.0, 0.0, 31.0),
        "nvls": _row(0.0, 0.0, 18.0),
        "nvls_tree": _row(0.0, 0.0, 20.9),
        "pat": _row(0.0, 0.0, 14.0),
    },
}

# Per-channel caps, GB/s, columns = nNodes 1 / 2 / >=3 (nccl-model.md §4.3, v2.30).
LL_MAX_BW: Final[dict[Gen, tuple[float, float, float]]] = {
    Gen.VOLTA: (39.0, 39.0, 20.4),
    Gen.AMPERE: (87.7, 22.5, 19.0),
    Gen.HOPPER: (141.0, 45.0, 35.0),
    Gen.BLACKWELL: (282.0, 90.0, 70.0),
}
PER_CH_MAX_RING_LL128_BW: Final[dict[Gen, tuple[float, float, float]]] = {
    Gen.VOLTA: (20.0, 20.0, 20.0),
    Gen.AMPERE: (20.0, 20.0, 20.0),
    Gen.HOPPER: (36.7, 36.7, 36.7),
    Gen.BLACKWELL: (40.0, 40.0, 40.0),
}
PER_CH_MAX_TREE_LL128_BW: Final[dict[Gen, tuple[float, float, float]]] = {
    Gen.VOLTA: (20.0, 20.0, 20.0),
    Gen.AMPERE: (20.0, 20.0, 20.0),
    Gen.HOPPER: (36.7, 36.7, 29.0),
    Gen.BLACKWELL: (55.6, 31.67, 20.0),
}
PER_CH_MAX_TREE_BW: Final[dict[Gen, tuple[float, float, float]]] = {
    Gen.VOLTA: (26.5, 18.5, 10.0),
    Gen.AMPERE: (24.0, 23.6, 17.8),
    Gen.HOPPER: (38.7, 41.4, 36.0),
    Gen.BLACKWELL: (70.0, 42.8, 24.0),
}

PER_CH_MAX_NVLS_TREE_BW: Final[dict[Gen, tuple[float, float, float]]] = {
    Gen.VOLTA: (26.5, 18.5, 10.0),
    Gen.AMPERE: (24.0, 23.6, 17.8),
    Gen.HOPPER: (0.0, 57.7, 45.5),
    Gen.BLACKWELL: (0.0, 96.0, 80.0),
}

#: NVLS efficiency (v2.28+): share of NVLink bandwidth NVLink SHARP achieves (0 = unsupported).
NVLS_EFFICIENCY: Final[dict[Gen, float]] = {
    Gen.VOLTA: 0.0,
    Gen.AMPERE: 0.0,
    Gen.HOPPER: 0.85,
    Gen.BLACKWELL: 0.74,
}

#: treeCorrectionFactor[proto][log2(nBytes/64)], 64 B … 256 MB (nccl-model.md §4.4).
TREE_CORRECTION: Final[dict[Proto, tuple[float, ...]]] = {
    Proto.LL: (1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5,
               .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0),
    Proto.LL128: (1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6,
                  .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0, 1.0),
    Proto.SIMPLE: (.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5,
                   .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9),
}  # fmt: skip

#: Ring LL128 and Tree bandwidth factor (``0.92·busBw``) — tuning.cc.
LL128_RING_EFFICIENCY: Final = 0.92
TREE_SIMPLE_EFFICIENCY: Final = 0.92
#: LL moves 4 B of data per 8 B line: half the link (device.h; tuning.cc ``0.5·busBw``).
LL_EFFICIENCY: Final = 0.5
#: Data bytes per byte on the wire: LL 4 of 8, LL128 120 of 128, Simple all (``device.h``).
WIRE_DATA_SHARE: Final[dict[Proto, float]] = {
    Proto.LL: 0.5,
    Proto.LL128: 120.0 / 128.0,
    Proto.SIMPLE: 1.0,
}
#: LL128 on a tree: 120/128 across nodes, 7/9 inside one node (tuning.cc).
LL128_TREE_EFFICIENCY_MULTINODE: Final = 120.0 / 128.0
LL128_TREE_EFFICIENCY_SINGLENODE: Final = 7.0 / 9.0
#: Tree LL: ``busBw / 3.8`` (tuning.cc).
TREE_LL_DIVISOR: Final = 3.8
#: PAT bandwidth factor (v2.30; 0.85 in v2.23).
PAT_EFFICIENCY: Final = 0.75
#: CollNet uses 0.9 of the inter-node bandwidth (tuning.cc ``0.9·bwInter``).
COLLNET_NET_EFFICIENCY: Final = 0.9
#: CollNetDirect arity serialisation, 0.4 µs per extra local rank (tuning.cc).
COLLNET_ARITY_LAT: Final = 0.4 * _US
#: NCCL_NET_OVERHEAD: 1 µs on Intel x86 and "other", 2 µs on AMD; ×3 for Simple (nccl-model.md §4.5).
NET_OVERHEAD: Final[dict[str, float]] = {"intel": 1.0 * _US, "amd": 2.0 * _US, "other": 1.0 * _US}
#: Multi-node Ring/Simple AllReduce latency "plateau" multiplier (×1.9 if min sm < 80).
RING_SIMPLE_PLATEAU: Final = 1.4
#: Largest channel count (MAXCHANNELS, v2.25+).
MAX_CHANNELS: Final = 64


def per_node_column(n_nodes: int) -> int:
    """Column of NCCL's per-channel tables: ``min(nNodes − 1, 2)``."""
    return min(max(n_nodes, 1) - 1, 2)


def tree_correction(proto: Proto, nbytes: float, limit: int = 23) -> float:
    """NCCL's empirical tree all-reduce correction for ``nbytes``.

    ``tuning.cc`` applies ``treeCorrectionFactor[proto][log2(nBytes >> 6)]`` while that index is
    below ``limit`` — 23 for Tree (64 B up to 512 MiB exclusive), 24 for NVLS-tree on Blackwell
    with x86 hosts (v2.28+) — and 1.0 elsewhere.
    """
    if nbytes < 64:
        return 1.0
    index = int(nbytes // 64).bit_length() - 1
    return TREE_CORRECTION[proto][index] if 0 <= index < limit else 1.0


def gbps(value: float) -> float:
    """NCCL GB/s (1e9) → bytes/s."""
    return value * _GBPS
