"""Routes on any :class:`PathOracle` (dragonfly, Dragonfly+, NVSwitch domains, ...), one Python
call per flow: fine for the oracles' small route counts and for up to ~10⁵ flows.

The oracle numbers a pair's equal-cost routes ``0..count-1``; ECMP takes ``hash mod count``
(RFC 2992 hash-threshold), spraying spreads evenly over all of them (or over 64 evenly spaced
ones when there are more), adaptive takes the least-loaded of a few hashed ones.

>>> from commwall.topology import dragonfly
>>> o = dragonfly(a=2, p=2, h=1).path_fn
>>> pad_rows([o.links(2, 6, 0), o.links(0, 1, 0)]).tolist()  # other group; same router
[[4, 25, 30, 26, 13], [0, 3, -1, -1, -1]]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from commwall.routing.clos import no_route_error
from commwall.routing.hashing import U64Array, pick, splitmix64
from commwall.routing.routes import FloatArray, IntArray, Routes, aggregate
from commwall.topology.graph import PathOracle, Topology

__all__ = [
    "SPRAY_MAX_ROUTES",
    "adaptive_paths",
    "counts",
    "indexed_paths",
    "pad_rows",
    "spray_routes",
]

#: Spraying over more routes than this samples this many evenly spaced route indices.
SPRAY_MAX_ROUTES = 64


def pad_rows(rows: Sequence[IntArray], width: int = 0) -> IntArray:
    """Ragged link lists as one ``(len(rows), max(len, width))`` array padded with -1."""
    lengths = np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
    out = np.full((len(rows), max(int(lengths.max(initial=0)), width)), -1, dtype=np.int64)
    if len(rows) and lengths.sum():
        col = np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        out[np.repeat(np.arange(len(rows)), lengths), col] = np.concatenate(rows)
    return out


def counts(oracle: PathOracle, src: IntArray, dst: IntArray) -> IntArray:
    """Route count of every pair; raises naming the first pair with none (``src != dst``).
    An oracle with a vectorised ``counts_many(src, dst)`` answers in one call."""
    many = getattr(oracle, "counts_many", None)
    if many is not None:
        n = np.asarray(many(src, dst), dtype=np.int64)
    else:
        n = np.fromiter(
            (oracle.count(a, b) for a, b in zip(src.tolist(), dst.tolist(), strict=True)),
            dtype=np.int64,
            count=len(src),
        )
    bad = np.flatnonzero((n == 0) & (src != dst))
    if len(bad):
        i = int(bad[0])
        raise no_route_error(int(src[i]), int(dst[i]), i)
    return np.maximum(n, 1)


def indexed_paths(oracle: PathOracle, src: IntArray, dst: IntArray, index: IntArray) -> IntArray:
    """Padded rows of route ``index[i]`` from ``src[i]`` to ``dst[i]`` (empty when equal). An
    oracle with a vectorised ``links_many(src, dst, index)`` answers in one call."""
    many = getattr(oracle, "links_many", None)
    if many is not None:
        return np.asarray(many(src, dst, index), dtype=np.int64)
    empty = np.empty(0, dtype=np.int64)
    rows = [
        oracle.links(a, b, k) if a != b else empty
        for a, b, k in zip(src.tolist(), dst.tolist(), index.tolist(), strict=True)
    ]
    return pad_rows(rows)


def spray_routes(oracle: PathOracle, topology: Topology, src: IntArray, dst: IntArray) -> Routes:
    """Even spraying over all routes of each pair, weight 1/count each (weights of routes sharing
    a link add up). Above :data:`SPRAY_MAX_ROUTES` routes, the evenly spaced indices
    ``⌊k·count/64⌋`` stand in for all of them: an approximation of even spraying that is exact
    when the routes' links repeat with the index's digits (as in every builder here)."""
    total = counts(oracle, src, dst)
    k = np.minimum(total, SPRAY_MAX_ROUTES)
    sub_flow = np.repeat(np.arange(len(src), dtype=np.int64), k)
    t = np.arange(int(k.sum()), dtype=np.int64) - np.repeat(np.cumsum(k) - k, k)
    index = t * total[sub_flow] // k[sub_flow]
    rows = indexed_paths(oracle, src[sub_flow], dst[sub_flow], index)
    weight = 1.0 / k[sub_flow]
    flow, link, w = aggregate(sub_flow, rows, weight, topology.n_links)
    hops = np.zeros(len(src), dtype=np.int64)
    np.maximum.at(hops, sub_flow, np.count_nonzero(rows >= 0, axis=1))
    return Routes(
        flow=flow,
        link=link,
        weight=w,
        n_flows=len(src),
        extra_latency=np.zeros(len(src)),
        hops=hops,
    )


def adaptive_paths(
    oracle: PathOracle,
    topology: Topology,
    src: IntArray,
    dst: IntArray,
    key: U64Array,
    load: FloatArray,
    order: IntArray,
    candidates: int,
) -> IntArray:
    """Adaptive routing without a Clos structure: each flow, in ``order``, takes the route with
    the least maximum link utilisation (bytes ÷ capacity, its own ``load`` included) among its
    pair's routes — all when there are at most ``candidates``, else ``candidates`` hashed ones —
    ties to fewer hops, then to the first candidate (the ECMP choice)."""
    total = counts(oracle, src, dst)
    inv_cap = (1.0 / np.maximum(topology.link_capacity, 1e-300)).tolist()  # failed links: 0
    util = [0.0] * topology.n_links
    salts = np.arange(candidates, dtype=np.uint64)
    hashed = splitmix64(key[:, None] ^ splitmix64(salts)[None, :])
    cand = (hashed % total[:, None].astype(np.uint64)).astype(np.int64)
    cand[:, 0] = pick(key, 0, total)  # first candidate: the ECMP route
    chosen: list[IntArray] = [np.empty(0, dtype=np.int64)] * len(src)
    src_l, dst_l, tot_l, ld = src.tolist(), dst.tolist(), total.tolist(), load.tolist()
    for i in order.tolist():
        a, b = src_l[i], dst_l[i]
        if a == b:
            continue
        first, count = int(cand[i, 0]), tot_l[i]
        options = (
            [(first + t) % count for t in range(count)]
            if count <= candidates
            else dict.fromkeys(cand[i].tolist())
        )
        best: tuple[float, int] | None = None
        best_links: list[int] = []
        for k in options:
            links = oracle.links(a, b, k).tolist()
            score = (max(util[x] + ld[i] * inv_cap[x] for x in links), len(links))
            if best is None or score < best:
                best, best_links = score, links
        for x in best_links:
            util[x] += ld[i] * inv_cap[x]
        chosen[i] = np.asarray(best_links, dtype=np.int64)
    return pad_rows(chosen)
