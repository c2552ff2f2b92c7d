"""The entry points: :func:`route` (flow × link incidence for the flow engine) and
:func:`route_paths` (concrete sub-paths), with input checks and policy dispatch.

>>> import numpy as np
>>> from commwall.topology import fat_tree
>>> t = fat_tree(4)
>>> r = route(t, np.array([0, 0]), np.array([15, 0]), RoutingPolicy("ecmp"))
>>> r.hops.tolist(), r.flow.tolist()  # across pods: 6 links; to itself: none
([6, 0], [0, 0, 0, 0, 0, 0])
"""

from __future__ import annotations

from dataclasses import replace
from itertools import pairwise

import numpy as np
import numpy.typing as npt

from commwall.routing import clos, dragonfly, oracle
from commwall.routing.hashing import as_u64, flow_keys, pick, splitmix64
from commwall.routing.policy import RoutingError, RoutingPolicy
from commwall.routing.routes import FloatArray, IntArray, Paths, Routes
from commwall.topology.clos import ClosStructure
from commwall.topology.graph import PathOracle, Topology

__all__ = ["CHUNK_SUBFLOWS", "route", "route_paths"]

#: Stateless (hashed) policies route flows in chunks of about this many sub-flows, so the
#: temporaries stay small and reused: page faults on fresh 100 MB arrays cost more than the
#: arithmetic. Results do not depend on it (every choice hashes the flow's own key).
CHUNK_SUBFLOWS = 1 << 17


def _oracle(topology: Topology) -> PathOracle:
    if topology.path_fn is None:
        raise RoutingError(
            f"topology={topology.name!r}: has no analytic routes (path_fn is None); routing "
            "needs a topology from a structured builder (fat_tree, leaf_spine, rail_optimized, "
            "rail_only, dragonfly, dragonfly_plus, nvlink_domain, ...)"
        )
    return topology.path_fn


def _int_array(name: str, values: npt.ArrayLike, n: int | None) -> IntArray:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise RoutingError(f"{name}: must be a 1-D array of integers, got shape {arr.shape}")
    if arr.dtype == np.bool_ or not (np.issubdtype(arr.dtype, np.integer) or arr.size == 0):
        raise RoutingError(f"{name}: must hold integers, got dtype {arr.dtype}")
    if n is not None and len(arr) != n:
        raise RoutingError(f"{name}: has {len(arr)} entries, need {n} (one per flow)")
    return arr.astype(np.int64)


def _endpoints(name: str, arr: IntArray, topology: Topology) -> None:
    ok = (arr >= 0) & (arr < topology.n_nodes)
    ok[ok] = topology.node_tier[arr[ok]] == 0
    bad = np.flatnonzero(~ok)
    if len(bad):
        i = int(bad[0])
        n_end = int(np.count_nonzero(topology.node_tier == 0))
        raise RoutingError(
            f"{name}[{i}]={int(arr[i])}: not an endpoint of {topology.name!r}; endpoints are "
            f"the {n_end} tier-0 nodes (0..{n_end - 1} for the structured builders)"
        )


def _inputs(
    topology: Topology,
    src: npt.ArrayLike,
    dst: npt.ArrayLike,
    nbytes: npt.ArrayLike | None,
    flow_id: npt.ArrayLike | None,
) -> tuple[IntArray, IntArray, FloatArray | None, IntArray]:
    s = _int_array("src", src, None)
    d = _int_array("dst", dst, len(s))
    _endpoints("src", s, topology)
    _endpoints("dst", d, topology)
    fid = (
        np.arange(len(s), dtype=np.int64)
        if flow_id is None
        else _int_array("flow_id", flow_id, len(s))
    )
    if nbytes is None:
        return s, d, None, fid
    b = np.asarray(nbytes)
    if b.ndim != 1 or len(b) != len(s) or not np.issubdtype(b.dtype, np.number):
        raise RoutingError(
            f"nbytes: must be {len(s)} numbers (bytes per flow), got shape {b.shape}, "
            f"dtype {b.dtype}"
        )
    b = b.astype(np.float64)
    bad = np.flatnonzero(~(np.isfinite(b) & (b >= 0)))
    if len(bad):
        raise RoutingError(f"nbytes[{bad[0]}]={b[bad[0]]}: must be a finite number >= 0 (bytes)")
    return s, d, b, fid


def _seed(seed: object) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise RoutingError(f"seed={seed!r}: must be an integer")
    return int(seed)


def _as_policy(policy: RoutingPolicy | str) -> RoutingPolicy:
    if isinstance(policy, RoutingPolicy):
        return policy
    if isinstance(policy, str):
        return RoutingPolicy(policy)
    raise RoutingError(f"policy={policy!r}: must be a RoutingPolicy or a policy name")


def _sub_counts(
    policy: RoutingPolicy,
    src: IntArray,
    dst: IntArray,
    nbytes: FloatArray | None,
    the_oracle: object = None,
) -> IntArray:
    """Sub-flows per flow: ``qps`` queue pairs, each cut into flowlets for ``flowlet``, or, for
    ``valiant``, spread over every intermediate group (:func:`dragonfly.valiant_spread`)."""
    n = np.full(len(src), policy.qps, dtype=np.int64)
    if policy.name == "valiant":
        n = n * dragonfly.valiant_spread(the_oracle, src, dst)
    if policy.name == "flowlet":
        if nbytes is None:  # size unknown: a long flow, as many flowlets as allowed
            per_qp = np.full(len(src), float(policy.max_flowlets))
        else:
            per_qp = np.ceil(nbytes / policy.qps / policy.flowlet_bytes)
        n = n * np.clip(per_qp, 1, policy.max_flowlets).astype(np.int64)
    n[src == dst] = 1
    return n


def _paths(
    topology: Topology,
    src: IntArray,
    dst: IntArray,
    policy: RoutingPolicy,
    seed: int,
    nbytes: FloatArray | None,
    flow_id: IntArray,
) -> Paths:
    the_oracle = _oracle(topology)
    n_sub = _sub_counts(policy, src, dst, nbytes, the_oracle)
    sub_flow = np.repeat(np.arange(len(src), dtype=np.int64), n_sub)
    sub = np.arange(len(sub_flow), dtype=np.int64) - np.repeat(np.cumsum(n_sub) - n_sub, n_sub)
    weight = 1.0 / n_sub[sub_flow]
    s, d = src[sub_flow], dst[sub_flow]
    key = splitmix64(flow_keys(seed, src, dst, flow_id)[sub_flow] ^ as_u64(sub))
    load = weight if nbytes is None else nbytes[sub_flow] * weight
    name = policy.name
    if name in ("valiant", "ugal", "valiant-flow"):
        dragonfly.group_size(the_oracle, name)  # raises on other topologies
    if isinstance(the_oracle, ClosStructure):
        g = clos.geometry(the_oracle, src, dst)
        g = g if len(s) == len(src) else g.take(sub_flow)
        if name == "adaptive":
            order = np.random.default_rng(seed).permutation(len(s))
            digits = clos.adaptive_digits(the_oracle, topology, g, key, load, order)
        else:
            digits = clos.ecmp_digits(the_oracle, g, key, policy.polarized)
        rows = clos.links_from_digits(the_oracle, g, digits)
    elif name == "adaptive":
        order = np.random.default_rng(seed).permutation(len(s))
        rows = oracle.adaptive_paths(
            the_oracle, topology, s, d, key, load, order, policy.adaptive_candidates
        )
    elif name == "valiant":  # sub-flow j of a flow through its j-th intermediate group
        spread = dragonfly.valiant_spread(the_oracle, src, dst)[sub_flow]
        rows = dragonfly.valiant_paths(the_oracle, s, d, key, sub % spread)
    elif name == "valiant-flow":
        rows = dragonfly.valiant_paths(the_oracle, s, d, key)
    elif name == "ugal":
        order = np.random.default_rng(seed).permutation(len(s))
        rows = dragonfly.ugal_paths(the_oracle, topology, s, d, key, load, order)
    else:  # ecmp, flowlet
        idx = oracle.counts(the_oracle, s, d)
        rows = oracle.indexed_paths(the_oracle, s, d, pick(key, 0, idx))
    return Paths(sub_flow=sub_flow, links=rows, weight=weight, n_flows=len(src))


def route_paths(
    topology: Topology,
    src: npt.ArrayLike,
    dst: npt.ArrayLike,
    policy: RoutingPolicy | str,
    *,
    seed: int = 0,
    nbytes: npt.ArrayLike | None = None,
    flow_id: npt.ArrayLike | None = None,
) -> Paths:
    """Concrete sub-paths (one per queue pair / flowlet) of flows ``src[i] -> dst[i]``, for
    policies that pin each sub-flow to one route (all but ``spray`` and ``cells``, which spread
    every packet over all routes: use :func:`route`). Arguments as for :func:`route`."""
    pol = _as_policy(policy)
    if pol.name in ("spray", "cells"):
        raise RoutingError(
            f"name={pol.name!r}: spraying has no per-flow path (every packet takes its own); "
            "use route(), which gives the exact fluid load with aggregate links"
        )
    s, d, b, fid = _inputs(topology, src, dst, nbytes, flow_id)
    return _paths(topology, s, d, pol, _seed(seed), b, fid)


def route(
    topology: Topology,
    src: npt.ArrayLike,
    dst: npt.ArrayLike,
    policy: RoutingPolicy | str,
    *,
    seed: int = 0,
    nbytes: npt.ArrayLike | None = None,
    flow_id: npt.ArrayLike | None = None,
) -> Routes:
    """Routes for flows ``src[i] -> dst[i]`` (endpoint indices of ``topology``) under ``policy``.

    ``src == dst`` uses no link. ``flow_id`` (default ``arange``) is the flow's identity for
    hashing, so a flow keeps its path when re-routed in a later batch; ``nbytes`` weighs flows'
    load for adaptive/UGAL (1 per flow when omitted) and sets the flowlet count; ``seed`` salts
    every hash and orders adaptive/UGAL decisions. Same inputs → identical arrays.

    Raises :class:`RoutingError` for a topology without ``path_fn``, a pair with no route (rail-only
    fabrics across rails: forward over NVLink first, PXN), ``valiant``/``ugal`` off a dragonfly,
    and malformed inputs.
    """
    pol = _as_policy(policy)
    sd = _seed(seed)
    s, d, b, fid = _inputs(topology, src, dst, nbytes, flow_id)
    the_oracle = _oracle(topology)
    if pol.name in ("spray", "cells"):
        sprays_itself = getattr(the_oracle, "spray_routes", None)  # e.g. around failed links
        if isinstance(the_oracle, ClosStructure):
            routes = clos.spray_routes(the_oracle, topology, clos.geometry(the_oracle, s, d))
        elif sprays_itself is not None:
            routes = sprays_itself(topology, s, d)
        else:
            routes = oracle.spray_routes(the_oracle, topology, s, d)
        if pol.name == "spray":
            return routes
        leaves_leaf = routes.hops > 2  # crosses a fabric link, not just its own leaf
        return replace(
            routes,
            capacity_scale=pol.cell_efficiency,
            extra_latency=np.where(leaves_leaf, pol.cell_reassembly_latency, 0.0),
        )
    if pol.name not in ("ecmp", "flowlet", "valiant", "valiant-flow") or len(s) == 0:
        return _paths(topology, s, d, pol, sd, b, fid).to_routes(topology.n_links)
    cum = np.cumsum(_sub_counts(pol, s, d, b, the_oracle))
    cuts = np.searchsorted(cum, np.arange(CHUNK_SUBFLOWS, int(cum[-1]), CHUNK_SUBFLOWS), "right")
    edges = np.unique(np.concatenate([[0], cuts, [len(s)]])).tolist()
    parts = []
    for a, z in pairwise(edges):
        nb = None if b is None else b[a:z]
        parts.append(
            _paths(topology, s[a:z], d[a:z], pol, sd, nb, fid[a:z]).to_routes(topology.n_links)
        )
    return Routes(
        flow=np.concatenate([r.flow + a for r, a in zip(parts, edges, strict=False)]),
        link=np.concatenate([r.link for r in parts]),
        weight=np.concatenate([r.weight for r in parts]),
        n_flows=len(s),
        extra_latency=np.zeros(len(s)),
        hops=np.concatenate([r.hops for r in parts]),
    )
