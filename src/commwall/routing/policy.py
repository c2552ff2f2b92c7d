"""Routing policies: the names, their knobs with units and bounds, and the error bad input gets.

Constants carry their sources:

* :data:`CELL_EFFICIENCY` — payload share of a full-size fabric cell on a Broadcom DNX fabric
  (Jericho line card / Ramon fabric element) in the VSC256 cell format: 256 B of data, 16 B of
  cell header and 1 B of CRC, so 256 / 273 ≈ 0.938. Broadcom OpenBCM SDK,
  ``src/soc/dnxf/ramon/ramon_fabric_links.c`` (``SOC_RAMON_FABRIC_LINKS_VSC256_MAX_CELL_SIZE``);
  the Jericho/Arad side states 256 + 11 + 1 (≈ 0.955). Smaller (packed) cells only lower it; the
  fabric speed-up vendors provision to hide it is not modelled.
* :data:`CELL_REASSEMBLY_LATENCY` — assumption (ours), no public figure found: 2 µs added per flow
  for reordering and reassembling sprayed cells in the egress device's buffer, the order of the
  skew between fabric paths of a two-stage cell fabric. For scale, Meta reports ~22 µs of static
  latency through a deep-buffer Jericho3 spine (SIGCOMM 2024, secondary; reference/transport.md §4),
  an upper bound that includes the whole VOQ/credit pipeline.

>>> RoutingPolicy("ecmp", qps=4).qps
4
>>> RoutingPolicy("bogus")
Traceback (most recent call last):
...
commwall.routing.policy.RoutingError: name='bogus': unknown routing policy; allowed: ecmp, flowlet, spray, cells, adaptive, valiant, ugal
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

from commwall.checks import whole
from commwall.errors import CommwallError
from commwall.scenario import ROUTING_POLICIES

__all__ = [
    "CELL_EFFICIENCY",
    "CELL_REASSEMBLY_LATENCY",
    "ROUTINGS",
    "RoutingError",
    "RoutingPolicy",
]

#: Every policy :func:`commwall.routing.route` knows (defined with the scenario's names).
ROUTINGS: Final[tuple[str, ...]] = ROUTING_POLICIES

#: Payload share of a VSC256 fabric cell: 256 / (256 + 16 header + 1 CRC) (Broadcom OpenBCM,
#: Ramon fabric links). See the module doc.
CELL_EFFICIENCY: Final = 256.0 / (256.0 + 16.0 + 1.0)
#: Seconds added per flow for cell reassembly at the egress: an assumption (ours), module doc.
CELL_REASSEMBLY_LATENCY: Final = 2e-6


class RoutingError(CommwallError, ValueError):
    """A routing input is wrong; the message names the field, its value and what is allowed."""


def _number(name: str, value: object, low: float, high: float, *, open_low: bool) -> float:
    ok = not isinstance(value, bool) and isinstance(value, int | float)
    v = float(value) if ok else math.nan  # type: ignore[arg-type]  # checked just above
    if not math.isfinite(v) or v < low or (open_low and v == low) or v > high:
        bound = f"{'>' if open_low else '>='} {low:g}" + (
            f" and <= {high:g}" if high < math.inf else ""
        )
        raise RoutingError(f"{name}={value!r}: must be a number {bound}")
    return v


@dataclass(frozen=True)
class RoutingPolicy:
    """Which routing to apply and its knobs; validated on construction (:class:`RoutingError`).

    * ``name`` — one of :data:`ROUTINGS`.
    * ``qps`` — queue pairs per connection: every flow is split evenly over ``qps`` independently
      hashed sub-flows (NCCL_IB_QPS_PER_CONNECTION; the QP scaling Meta uses against low ECMP
      entropy, "RDMA over Ethernet for Distributed AI Training at Meta Scale", SIGCOMM 2024).
      Applies to every policy that pins sub-flows to routes; spray and cells already use every
      route, so it changes nothing there.
    * ``polarized`` — ECMP (and flowlet) hashing on a Clos: every switch applies the same hash
      function (no per-switch seed), so the choices of successive tiers are correlated and
      upper-tier uplinks go unused (hash polarization, the correlated hash stages Alibaba HPN,
      SIGCOMM 2024, reports; RFC 2992 describes the hash-threshold multipath modelled).
    * ``flowlet_bytes`` (bytes, > 0) and ``max_flowlets`` — flowlet switching: a flow of ``B``
      bytes becomes ``min(ceil(B / flowlet_bytes), max_flowlets)`` flowlets, each hashed to its
      own path (CONGA, SIGCOMM 2014; LetFlow, NSDI 2017); with ``qps > 1`` each queue pair's
      ``B / qps`` bytes are cut so. Unknown sizes count as long flows (``max_flowlets``).
    * ``cell_efficiency`` (0 < x <= 1) and ``cell_reassembly_latency`` (s, >= 0) — cell spraying
      (:data:`CELL_EFFICIENCY`, :data:`CELL_REASSEMBLY_LATENCY`).
    * ``adaptive_candidates`` — adaptive routing on topologies without a Clos structure: the
      least-loaded of this many hashed routes is taken.
    """

    name: str
    qps: int = 1
    polarized: bool = False
    flowlet_bytes: float = 64.0 * 1024.0
    max_flowlets: int = 16
    cell_efficiency: float = CELL_EFFICIENCY
    cell_reassembly_latency: float = CELL_REASSEMBLY_LATENCY
    adaptive_candidates: int = 8

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or self.name not in ROUTINGS:
            raise RoutingError(
                f"name={self.name!r}: unknown routing policy; allowed: {', '.join(ROUTINGS)}"
            )
        whole("qps", self.qps, 1, error=RoutingError)
        if not isinstance(self.polarized, bool):
            raise RoutingError(f"polarized={self.polarized!r}: must be True or False")
        _number("flowlet_bytes", self.flowlet_bytes, 0.0, math.inf, open_low=True)
        whole("max_flowlets", self.max_flowlets, 1, error=RoutingError)
        _number("cell_efficiency", self.cell_efficiency, 0.0, 1.0, open_low=True)
        _number(
            "cell_reassembly_latency", self.cell_reassembly_latency, 0.0, math.inf, open_low=False
        )
        whole("adaptive_candidates", self.adaptive_candidates, 1, error=RoutingError)
