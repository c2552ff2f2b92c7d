"""Plain traffic on a topology: permutation, N:1 incast, all-to-all or a user's matrix, as flows.

Every flow starts at time 0 and shares links max-min fairly (:mod:`commwall.engines.flow.fluid`)
along the routes of the routing policy (:mod:`commwall.routing`). The answer is the distribution
of flow completion times, the aggregate throughput, the throughput at time 0 with every flow
active (the figure Al-Fares et al. 2008 and Hedera, NSDI 2010, report for permutations on a fat
tree) and the busiest links.

A flow's completion time is its fluid transfer time plus the latency of its route: the cables'
propagation plus ``switch_latency`` for every switch it crosses (store-and-forward of one MTU is
left out; at 2 MB per flow it is well below 1%).

>>> from commwall.topology import leaf_spine
>>> t = leaf_spine(4, 8, link_rate=12.5e9)  # 8 hosts at 100 Gb/s, 2 spines
>>> r = run_traffic(t, *pattern_flows("permutation", 8, seed=1), 2e6, "spray")
>>> round(r.throughput_ratio, 3)
1.0
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from commwall.engines.base import EngineInputError
from commwall.engines.flow.aggregate import RouterClasses, router_classes
from commwall.engines.flow.fluid import FlowBatch, FluidTask, simulate
from commwall.engines.flow.maxmin import max_min_rates
from commwall.engines.links import switch_label
from commwall.routing import RoutingPolicy, route
from commwall.routing.routes import Routes, fold_virtual
from commwall.topology.graph import LinkKind, Topology

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

PATTERNS = ("permutation", "incast", "alltoall", "adversarial")
#: Largest number of flows a traffic run accepts (all-to-all on 1,448 endpoints).
MAX_FLOWS = 2_100_000


def pattern_flows(
    pattern: str,
    endpoints: int,
    *,
    senders: int | None = None,
    seed: int = 0,
    group_size: int | None = None,
) -> tuple[IntArray, IntArray]:
    """``(src, dst)`` endpoint arrays of a named pattern.

    ``permutation``: every endpoint sends to one other, every endpoint receives once (a random
    derangement). ``incast``: ``senders`` endpoints (default all others) send to endpoint 0.
    ``alltoall``: every ordered pair. ``adversarial``: the dragonfly's worst case (Kim, Dally,
    Scott, Abts, ISCA 2008, §4: "each node in group i sends to a randomly selected node in
    group i+1"): endpoints come in groups of ``group_size`` (a dragonfly's ``a·p``), and every
    host of group i sends to a host of group i+1 (the last group to the first), each host of
    group i+1 receiving once (a random permutation within the group).
    """
    if endpoints < 2:
        raise EngineInputError(f"endpoints={endpoints}: traffic needs at least 2 endpoints")
    rng = np.random.default_rng(seed)
    if pattern == "adversarial":
        return _adversarial(endpoints, group_size, rng)
    if pattern == "permutation":
        # a random single cycle (Sattolo): every endpoint sends once, receives once, never to itself
        order = rng.permutation(endpoints)
        perm = np.empty(endpoints, dtype=np.int64)
        perm[order] = np.roll(order, -1)
        return np.arange(endpoints, dtype=np.int64), perm.astype(np.int64)
    if pattern == "incast":
        n = endpoints - 1 if senders is None else senders
        if not 1 <= n <= endpoints - 1:
            raise EngineInputError(
                f"senders={n}: an incast to endpoint 0 takes 1 to {endpoints - 1} senders"
            )
        src = np.sort(rng.choice(np.arange(1, endpoints), size=n, replace=False))
        return src.astype(np.int64), np.zeros(n, dtype=np.int64)
    if pattern == "alltoall":
        if endpoints * (endpoints - 1) > MAX_FLOWS:
            raise EngineInputError(
                f"alltoall on {endpoints} endpoints is {endpoints * (endpoints - 1):,} flows; "
                f"the flow engine takes at most {MAX_FLOWS:,}: use fewer endpoints"
            )
        a, b = np.divmod(np.arange(endpoints * endpoints, dtype=np.int64), endpoints)
        keep = a != b
        return a[keep], b[keep]
    raise EngineInputError(
        f"pattern={pattern!r}: unknown; allowed: {', '.join(PATTERNS)}, or a matrix"
    )


def _adversarial(
    endpoints: int, group_size: int | None, rng: np.random.Generator
) -> tuple[IntArray, IntArray]:
    """Group i → group i+1, one receiver per sender (:func:`pattern_flows`)."""
    if (
        group_size is None
        or group_size < 1
        or endpoints % group_size
        or endpoints // group_size < 2
    ):
        raise EngineInputError(
            f"adversarial traffic sends from each group to the next, so it needs a fabric of 2 "
            f"or more equal groups (a dragonfly); got {endpoints} endpoints in groups of "
            f"{group_size}"
        )
    groups = endpoints // group_size
    src = np.arange(endpoints, dtype=np.int64)
    offset = np.concatenate([rng.permutation(group_size) for _ in range(groups)])
    dst = ((src // group_size + 1) % groups) * group_size + offset
    return src, dst.astype(np.int64)


def group_size(topology: Topology) -> int | None:
    """Hosts per group of a dragonfly or dragonfly+ (``a·p``, ``l·p``); None for other fabrics."""
    params = topology.params
    if params.get("kind") == "dragonfly":
        return int(params["a"]) * int(params["p"])
    if params.get("kind") == "dragonfly-plus":
        return int(params["l"]) * int(params["p"])
    return None


def read_matrix(path: str | Path) -> tuple[IntArray, IntArray, FloatArray]:
    """A user traffic matrix: CSV lines ``src,dst,bytes`` (``#`` comments; sizes like ``2MB``),
    or htsim's connection matrix (``Nodes N``, ``Connections C``, then ``SRC->DST id I start 0
    size BYTES`` lines; ``sim/datacenter/connection_matrices/*.cm`` in uet-htsim/csg-htsim)."""
    from commwall.units import UnitError, parse_size

    src: list[int] = []
    dst: list[int] = []
    size: list[float] = []
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise EngineInputError(f"{path}: cannot read the traffic matrix: {e}") from None
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    if first.startswith("Nodes"):
        return _read_htsim(path, text)
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != 3:
            raise EngineInputError(f"{path}:{number}: expected 'src,dst,bytes', got {raw!r}")
        try:
            s, d, b = int(cells[0]), int(cells[1]), parse_size(cells[2])
        except (ValueError, UnitError) as e:
            raise EngineInputError(f"{path}:{number}: {e}") from None
        if s < 0 or d < 0 or b <= 0:
            raise EngineInputError(
                f"{path}:{number}: endpoints must be >= 0 and bytes > 0, got {raw!r}"
            )
        src.append(s)
        dst.append(d)
        size.append(b)
    if not src:
        raise EngineInputError(f"{path}: no flows (lines 'src,dst,bytes')")
    return np.array(src, np.int64), np.array(dst, np.int64), np.array(size, np.float64)


def _read_htsim(path: str | Path, text: str) -> tuple[IntArray, IntArray, FloatArray]:
    """htsim's connection matrix (:func:`read_matrix`): every flow starting at 0, no triggers."""
    src: list[int] = []
    dst: list[int] = []
    size: list[float] = []
    declared: dict[str, int] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        words = raw.split()
        if not words:
            continue
        where = f"{path}:{number}"
        if words[0] in ("Nodes", "Connections", "Triggers", "Failures"):
            if len(words) != 2 or not words[1].isdigit():
                raise EngineInputError(f"{where}: expected '{words[0]} COUNT', got {raw.strip()!r}")
            declared[words[0]] = int(words[1])
            continue
        pair = words[0].split("->")
        fields = dict(zip(words[1::2], words[2::2], strict=False))
        if len(pair) != 2 or len(words) % 2 != 1 or not all(x.isdigit() for x in pair):
            raise EngineInputError(
                f"{where}: expected 'SRC->DST id I start T size B', got {raw.strip()!r}"
            )
        extra = sorted(set(fields) - {"id", "start", "size"})
        if extra:
            raise EngineInputError(
                f"{where}: {', '.join(extra)}: only flows that all start at once are taken "
                "(no triggers, priorities or later starts)"
            )
        if "size" not in fields or not fields["size"].isdigit() or int(fields["size"]) < 1:
            raise EngineInputError(f"{where}: size: a whole number of bytes >= 1 is required")
        if fields.get("start", "0") not in ("0", "0.0"):
            raise EngineInputError(f"{where}: start {fields['start']}: every flow must start at 0")
        src.append(int(pair[0]))
        dst.append(int(pair[1]))
        size.append(float(fields["size"]))
    if not src:
        raise EngineInputError(f"{path}: no connections (lines 'SRC->DST id I start 0 size BYTES')")
    if "Connections" in declared and declared["Connections"] != len(src):
        raise EngineInputError(
            f"{path}: says Connections {declared['Connections']} but lists {len(src)}"
        )
    if "Nodes" in declared and max(max(src), max(dst)) >= declared["Nodes"]:
        raise EngineInputError(f"{path}: a connection names node {max(max(src), max(dst))} of "
                         f"Nodes {declared['Nodes']}")  # fmt: skip
    return np.array(src, np.int64), np.array(dst, np.int64), np.array(size, np.float64)


@dataclass(frozen=True)
class TrafficResult:
    """Completion times and throughput of one traffic run."""

    routing: str
    flows: int
    total_bytes: float
    fct: FloatArray  # seconds, per flow
    makespan: float
    throughput_at_start: float  # Σ max-min rates with every flow active, bytes/s
    ideal_throughput: float  # Σ rates if only access links limited them, bytes/s
    busiest: list[dict[str, Any]]
    events: int

    @property
    def throughput_ratio(self) -> float:
        """Throughput at time 0 over what the hosts' own links would allow (1 = non-blocking)."""
        return self.throughput_at_start / self.ideal_throughput if self.ideal_throughput else 0.0

    @property
    def aggregate_throughput(self) -> float:
        """All bytes over the time the last flow finished, bytes/s."""
        return self.total_bytes / self.makespan if self.makespan > 0 else 0.0

    def percentiles(self) -> dict[str, float]:
        """min / p50 / p99 / max of the completion times, seconds."""
        q = np.percentile(self.fct, [0, 50, 99, 100])
        return dict(zip(("min", "p50", "p99", "max"), (float(v) for v in q), strict=True))

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return {
            "routing": self.routing,
            "flows": self.flows,
            "total_bytes": self.total_bytes,
            "fct_s": self.percentiles(),
            "fct_mean_s": float(self.fct.mean()),
            "makespan_s": self.makespan,
            "aggregate_throughput_Bps": self.aggregate_throughput,
            "throughput_at_start_Bps": self.throughput_at_start,
            "ideal_throughput_Bps": self.ideal_throughput,
            "throughput_ratio": self.throughput_ratio,
            "busiest_links": self.busiest,
            "events": self.events,
        }


def run_traffic(
    topology: Topology,
    src: IntArray,
    dst: IntArray,
    nbytes: float | FloatArray,
    routing: str | RoutingPolicy = "ecmp",
    *,
    seed: int = 0,
    progress: Callable[[int, float, int, int], None] | None = None,
) -> TrafficResult:
    """Run every flow ``src[i] → dst[i]`` of ``nbytes`` from time 0 on ``topology``;
    ``progress`` hears how far the run is (:func:`~commwall.engines.flow.fluid.simulate`)."""
    policy = routing if isinstance(routing, RoutingPolicy) else RoutingPolicy(routing)
    src, dst = _checked_flows(src, dst)
    n = len(src)
    size = np.broadcast_to(np.asarray(nbytes, dtype=np.float64), (n,)).copy()
    classes = router_classes(topology, src, dst, size, policy)
    routes, weight, flow_size = _routes(topology, src, dst, size, policy, seed, classes)
    capacity, tail = _capacity_and_latency(topology, routes)
    batch = FlowBatch(
        nbytes=flow_size,
        cap=np.full(len(flow_size), np.inf),
        entry_flow=routes.flow,
        entry_link=routes.link,
        entry_weight=weight,
        tail_latency=tail,
    )
    fluid = simulate(capacity, [FluidTask("traffic", 0.0, batch)], track=0, progress=progress)
    fct = fluid.flow_finish[0] + tail
    from scipy import sparse  # type: ignore[import-untyped]  # imported on use: ~20 MiB

    incidence = sparse.csr_matrix(
        (weight, (routes.link, routes.flow)), shape=(len(capacity), routes.n_flows)
    )
    start_rates = max_min_rates(incidence, capacity)
    if classes is not None:  # a class's variable is each member's rate
        fct, start_rates = fct[classes.class_of], start_rates[classes.class_of]
    access = _access_rate(topology, src, dst)
    nl = topology.n_links
    link_bytes = fold_virtual(fluid.link_bytes, routes, nl, capacity[:nl])
    peak = np.array(fluid.link_busy_peak[:nl], dtype=np.float64)
    for i, members in enumerate(routes.virtual_members):  # a sprayed group peaks together
        peak[members] = np.maximum(peak[members], fluid.link_busy_peak[nl + i])
    busy = link_bytes / capacity[:nl]
    # the fabric's own links first: the pattern alone fixes what the hosts' access links carry
    fabric = topology.link_kind != LinkKind.ACCESS
    pool = np.flatnonzero(fabric & (busy > 0))
    if not len(pool):
        pool = np.flatnonzero(busy > 0)
    hot = pool[np.argsort(-busy[pool], kind="stable")[:5]]
    makespan = float(fct.max())
    busiest = [
        {
            "link": int(i),
            "name": f"{switch_label(topology, int(topology.link_src[i]))} → "
            f"{switch_label(topology, int(topology.link_dst[i]))}",
            "tier": int(topology.link_tier[i]),
            "bytes": float(link_bytes[i]),
            "mean_utilisation": float(busy[i] / makespan) if makespan > 0 else 0.0,
            "peak_utilisation": float(peak[i]),
        }
        for i in hot
    ]
    return TrafficResult(
        routing=policy.name,
        flows=n,
        total_bytes=float(size.sum()),
        fct=fct,
        makespan=makespan,
        throughput_at_start=float(start_rates.sum()),
        ideal_throughput=access,
        busiest=busiest,
        events=int(fluid.events),
    )


def _routes(
    topology: Topology,
    src: IntArray,
    dst: IntArray,
    size: FloatArray,
    policy: RoutingPolicy,
    seed: int,
    classes: RouterClasses | None,
) -> tuple[Routes, FloatArray, FloatArray]:
    """(routes, incidence weights, bytes per routed flow): the flows themselves, or their router
    classes where solving those is exact (:mod:`commwall.engines.flow.aggregate`)."""
    if classes is None:
        routes = route(topology, src, dst, policy, seed=seed, nbytes=size)
        return routes, routes.weight, size
    routes = classes.routes(topology, policy, seed, float(size[0]))
    return routes, classes.weights(routes), np.full(classes.n_classes, float(size[0]))


def _checked_flows(src: npt.ArrayLike, dst: npt.ArrayLike) -> tuple[IntArray, IntArray]:
    """``src`` and ``dst`` as int arrays: 1 to :data:`MAX_FLOWS` flows, none to itself."""
    s = np.asarray(src, dtype=np.int64)
    d = np.asarray(dst, dtype=np.int64)
    if len(s) == 0 or len(s) > MAX_FLOWS:
        raise EngineInputError(f"flows={len(s)}: a traffic run takes 1 to {MAX_FLOWS:,} flows")
    if np.any(s == d):
        raise EngineInputError(f"flow {int(np.flatnonzero(s == d)[0])} sends to itself")
    return s, d


def _capacity_and_latency(topology: Topology, routes: Routes) -> tuple[FloatArray, FloatArray]:
    """Payload capacity of every link the routes use (real, then virtual), and each flow's
    latency beyond its bytes: propagation, switches and the routing's extra."""
    # a cell fabric's header tax is on switch-to-switch links (NIC ports carry plain packets);
    # virtual (sprayed) links aggregate switch links, so they are scaled too
    scale = np.where(topology.link_kind == LinkKind.ACCESS, 1.0, routes.capacity_scale)
    virtual = routes.virtual_capacity * routes.capacity_scale
    # failed cables (capacity 0) carry no route; the fluid solver needs every link > 0
    capacity = np.concatenate([np.maximum(topology.link_capacity, 1.0) * scale, virtual])
    switch = float(topology.params.get("switch_latency", 0.0))
    # expected propagation: a split flow weighs each path's cables by its share of the bytes; a
    # virtual (sprayed) link stands for its member cables, whose mean latency it takes
    member_latency = np.array(
        [float(topology.link_latency[m].mean()) for m in routes.virtual_members], dtype=np.float64
    )
    link_latency = np.concatenate([topology.link_latency, member_latency])
    prop = np.bincount(
        routes.flow, weights=routes.weight * link_latency[routes.link], minlength=routes.n_flows
    )
    return capacity, prop + np.maximum(routes.hops - 1, 0) * switch + routes.extra_latency


def saturation(
    topology: Topology,
    src: IntArray,
    dst: IntArray,
    loads: FloatArray,
    routing: str | RoutingPolicy = "ecmp",
    *,
    nbytes: float = 2e6,
    seed: int = 0,
) -> list[dict[str, float]]:
    """Accepted against offered throughput of a pattern, one row per offered load.

    Offered load ``λ`` (0 < λ ≤ 1): every host injects ``λ`` × its access link's rate, split
    evenly over the flows it sends; every flow is then capped at its share and the fabric's
    max-min fair rates (:func:`~commwall.engines.flow.maxmin.max_min_rates`) are what it
    accepts, with every flow active — the fluid counterpart of a saturation curve (Kim et al.,
    ISCA 2008, Fig. 6; BookSim's accepted vs offered traffic). Each row: ``offered`` (λ),
    ``accepted`` (Σ rates / what the hosts' links carry at λ = 1), ``accepted_of_offered``,
    and ``completion_s``: the mean time one ``nbytes`` flow takes at its accepted rate plus its
    path's propagation and switch latency (the fluid model has no queues: this is the
    bandwidth part of latency, which grows once a flow's share stops growing with λ).
    """
    policy = routing if isinstance(routing, RoutingPolicy) else RoutingPolicy(routing)
    src, dst = _checked_flows(src, dst)
    n = len(src)
    lam = np.asarray(loads, dtype=np.float64)
    if not len(lam) or not np.all(np.isfinite(lam)) or np.any(lam <= 0) or np.any(lam > 1):
        raise EngineInputError(f"loads={lam.tolist()}: offered loads are fractions in (0, 1]")
    size = np.full(n, float(nbytes))
    classes = router_classes(topology, src, dst, size, policy)
    routes, weight, _ = _routes(topology, src, dst, size, policy, seed, classes)
    capacity, path = _capacity_and_latency(topology, routes)
    from scipy import sparse

    incidence = sparse.csr_matrix(
        (weight, (routes.link, routes.flow)), shape=(len(capacity), routes.n_flows)
    )
    # a host's injection: its access up-link (endpoint e's is link 2e), shared by its flows
    inject = np.maximum(topology.link_capacity[2 * src], 1.0)
    share = inject / np.bincount(src, minlength=int(src.max()) + 1)[src]
    full = _access_rate(topology, src, dst)
    # each flow's routed flow (itself, or its class: whose members share one share)
    routed = np.arange(n) if classes is None else classes.class_of
    routed_share = share if classes is None else share[classes.first]
    rows = []
    for x in lam.tolist():
        rates = max_min_rates(incidence, capacity, x * routed_share)[routed]
        rows.append(
            {
                "offered": x,
                "accepted": float(rates.sum()) / full,
                "accepted_of_offered": float(rates.sum()) / float((x * share).sum()),
                "completion_s": float(np.mean(nbytes / rates + path[routed])),
            }
        )
    return rows


def parse_loads(text: str) -> FloatArray:
    """Offered loads from ``START:STOP:STEP`` (inclusive of STOP) or ``a,b,c``.

    >>> parse_loads("0.25:1:0.25").tolist(), parse_loads("0.5,1").tolist()
    ([0.25, 0.5, 0.75, 1.0], [0.5, 1.0])
    """
    try:
        if ":" in text:
            start, stop, step = (float(v) for v in text.split(":"))
            if not step > 0:
                raise ValueError
            count = int(np.floor((stop - start) / step + 1e-9)) + 1
            values = np.round(start + step * np.arange(max(count, 0)), 12)
        else:
            values = np.array([float(v) for v in text.split(",")], dtype=np.float64)
    except ValueError:
        raise EngineInputError(
            f"{text!r}: give START:STOP:STEP (e.g. 0.1:1.0:0.1) or a list (0.5,0.9,1)"
        ) from None
    if not len(values) or len(values) > 1000:
        raise EngineInputError(f"{text!r}: 1 to 1,000 loads")
    return values


def _access_rate(topology: Topology, src: IntArray, dst: IntArray) -> float:
    """Σ max-min rates when only the endpoints' own links limit the flows."""

    n = len(src)
    links = np.concatenate([2 * src, 2 * dst + 1])
    flows = np.concatenate([np.arange(n), np.arange(n)])
    from scipy import sparse

    incidence = sparse.csr_matrix((np.ones(2 * n), (links, flows)), shape=(topology.n_links, n))
    return float(max_min_rates(incidence, np.maximum(topology.link_capacity, 1.0)).sum())
