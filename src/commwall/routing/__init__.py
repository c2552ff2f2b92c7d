"""Path choice for the flow engine: which links each flow uses, and with what weight.

:func:`route` turns a batch of endpoint-to-endpoint flows into :class:`Routes`, a sparse
flow × link incidence the max-min fair fluid engine consumes; :func:`route_paths` gives the
concrete sub-paths instead (for a packet engine, or to check them). Routes come from the
topology's ``path_fn`` (equal-cost routes known from the builder's structure); on a folded Clos
(:class:`~commwall.topology.ClosStructure`) everything is computed with numpy from the
structure's integers, elsewhere one oracle call per flow.

Policies (:data:`ROUTINGS`):

* ``ecmp`` — per-hop hashing (RFC 2992 hash-threshold multipath; Al-Fares et al. SIGCOMM 2008
  for the fat-tree's up/down choices). Each switch hashes the flow key (src, dst, flow id, queue
  pair, seed) with its own salt; ``polarized=True`` gives every switch the same hash function, so
  successive tiers' choices correlate and upper-tier uplinks go unused (hash polarization).
  ``qps > 1`` splits a flow evenly over independently hashed queue pairs (NCCL
  NCCL_IB_QPS_PER_CONNECTION; Meta, "RDMA over Ethernet for Distributed AI Training at Meta
  Scale", SIGCOMM 2024). Entropy is what ECMP lacks for AI traffic: m flows hashed onto n paths
  leave n(1 − 1/n)^m idle (balls into bins).
* ``flowlet`` — flowlet switching (CONGA, SIGCOMM 2014; LetFlow, NSDI 2017). *Fluid
  approximation:* a flow of B bytes is cut into ``min(ceil(B / flowlet_bytes), max_flowlets)``
  flowlets, each hashed independently, and the flow puts an equal share of its rate on each
  flowlet's path at once; real flowlets follow each other in time, gaps set by burstiness,
  which a fluid model does not see. Unknown sizes count as long flows (``max_flowlets``).
* ``spray`` — per-packet spraying evenly over all equal-cost routes (UEC entropy values, NIC
  spraying with switch dynamic load balancing). On a Clos the groups a flow sprays over (its
  leaf's uplinks, its pod's spine→core links, the destination pod's core→spine links, the
  destination leaf's downlinks) become *virtual links* of the summed capacity — exact for even
  spraying, since every member of a group then carries the same load. Elsewhere all routes get
  weight 1/count (64 evenly spaced ones above 64 routes). Reordering costs are not modelled.
* ``cells`` — a scheduled cell fabric (Broadcom Jericho/Ramon DNX, DDC): spray routes, link
  capacities times the cell payload share (:data:`CELL_EFFICIENCY`, 256 B of data in a 273 B
  VSC256 cell) and a reassembly latency (:data:`CELL_REASSEMBLY_LATENCY`, an assumption) for
  every flow that leaves its leaf. Credit scheduling is taken as ideal (no fabric congestion).
* ``adaptive`` — InfiniBand-style adaptive routing: flows are taken in a seeded random order
  and each switch on the way picks its least-loaded equal-cost output (load = bytes, or 1 per
  flow, ÷ capacity, of the flows placed so far); elsewhere the least-loaded of
  ``adaptive_candidates`` hashed routes. *Fluid approximation:* one placement per flow instead
  of per-packet decisions on live queues.
* ``valiant`` / ``ugal`` / ``valiant-flow`` — dragonfly and Dragonfly+ only (Valiant, SIAM J.
  Comput. 1982; Kim, Dally, Scott, Abts, ISCA 2008 §4): Valiant detours inter-group traffic
  through intermediate groups — ``valiant`` as per-packet Valiant does in the fluid limit, each
  flow split evenly over every other group; ``valiant-flow`` one random group per flow; UGAL-G
  picks per flow the MIN or a (per-flow) Valiant route by (max load × hops).

Determinism: every choice is a SplitMix64 hash of the flow key and the seed, or a draw from
``numpy.random.default_rng(seed)``; same inputs → identical arrays.

>>> import numpy as np
>>> from commwall.topology import leaf_spine
>>> t = leaf_spine(8)
>>> r = route(t, np.array([0]), np.array([31]), RoutingPolicy("spray"))
>>> r.hops.tolist(), r.n_virtual, r.virtual_capacity.tolist() == [4 * 50e9] * 2
([4], 2, True)
"""

from commwall.routing.api import route, route_paths
from commwall.routing.policy import (
    CELL_EFFICIENCY,
    CELL_REASSEMBLY_LATENCY,
    ROUTINGS,
    RoutingError,
    RoutingPolicy,
)
from commwall.routing.routes import Paths, Routes, link_capacities, link_load

__all__ = [
    "CELL_EFFICIENCY",
    "CELL_REASSEMBLY_LATENCY",
    "ROUTINGS",
    "Paths",
    "Routes",
    "RoutingError",
    "RoutingPolicy",
    "link_capacities",
    "link_load",
    "route",
    "route_paths",
]
