"""Parameter checks shared by the builders: each error names the parameter, the value and the fix."""

from __future__ import annotations

import math
from typing import Final

from commwall import units
from commwall.topology.graph import TopologyError

#: Default cable lengths (m) and media per role. topology.md §7: node -> leaf a few m (DAC/ACC),
#: leaf -> spine up to hundreds of m (SMF DR), spine -> core up to km in big sites. Estimates (ours).
ACCESS_LENGTH_M: Final = 3.0
LEAF_SPINE_LENGTH_M: Final = 50.0
SPINE_CORE_LENGTH_M: Final = 300.0
#: Dragonfly: local links stay inside a group's cabinets (copper), global links are optical
#: (Kim et al. ISCA'08 §3); lengths are estimates (ours).
LOCAL_LENGTH_M: Final = 5.0
GLOBAL_LENGTH_M: Final = 100.0
#: Propagation delay per metre: fibre 4.9 ns/m, copper 4.5 ns/m (topology.md §7).
FIBRE_S_PER_M: Final = 4.9e-9
COPPER_S_PER_M: Final = 4.5e-9
DEFAULT_LINK_RATE: Final = "400 Gb/s"
DEFAULT_SWITCH_LATENCY: Final = "150 ns"  # Quantum-2 QM9700 class (catalog/data/switches.yaml)


def check_ratio(name: str, value: object) -> float:
    """An oversubscription ratio o (for o:1): a finite number >= 1."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise TopologyError(f"{name}={value!r}: must be a number >= 1 (o for an o:1 taper)")
    if value < 1:
        raise TopologyError(
            f"{name}={value}: must be >= 1 (o:1 = downlink / uplink bandwidth; 1 is "
            "non-blocking, 3 means 3:1); more uplinks than downlinks is not modelled"
        )
    return float(value)


def check_rate(name: str, value: str | float) -> float:
    """A link rate in bytes/s (a number) or a unit string such as ``"400 Gb/s"``."""
    try:
        rate = units.parse_bandwidth(value)
    except units.UnitError as e:
        raise TopologyError(f"{name}={value!r}: {e}") from None
    if not rate > 0 or not math.isfinite(rate):
        raise TopologyError(f"{name}={value!r}: must be > 0, e.g. '400 Gb/s'")
    return rate


def check_time(name: str, value: str | float) -> float:
    """A latency in s (a number) or a unit string such as ``"150 ns"``."""
    try:
        t = units.parse_time(value)
    except units.UnitError as e:
        raise TopologyError(f"{name}={value!r}: {e}") from None
    if not t >= 0 or not math.isfinite(t):
        raise TopologyError(f"{name}={value!r}: must be >= 0, e.g. '150 ns'")
    return t


def split_ports(radix: int, ratio: float, name: str = "oversubscription") -> tuple[int, int]:
    """Ports (down, up) of a switch with ``radix`` ports tapered ``ratio``:1.

    A switch with an o:1 taper uses R·o/(o+1) ports down and R/(o+1) up (topology.md §1).
    """
    down = round(radix * ratio / (ratio + 1))
    down = min(down, radix - 1)
    up = radix - down
    if down < 1:
        raise TopologyError(f"{name}={ratio:g} with radix {radix}: leaves no port down")
    return down, up


def smallest_divisor_at_least(n: int, lower: int) -> int:
    """The smallest divisor of ``n`` that is >= ``lower`` (``n`` itself at worst)."""
    for d in range(max(1, lower), n + 1):
        if n % d == 0:
            return d
    return n
