"""Valiant and UGAL routing on a dragonfly or Dragonfly+ (Kim, Dally, Scott, Abts,
"Technology-Driven, Highly-Scalable Dragonfly Topology", ISCA 2008, §4).

* **Valiant** (Valiant, "A Scheme for Fast Parallel Communication", SIAM J. Comput. 1982; Kim et
  al. §4.1 VAL): inter-group traffic goes minimally to a random intermediate group, then minimally
  to its destination — two global hops, load spread over all global links whatever the pattern.
  Built from the MIN oracle: a host ``mid`` in the intermediate group, and the route is
  ``links(src, mid)`` without its last link (mid's access down-link) followed by
  ``links(mid, dst)`` without its first (mid's access up-link), which passes through mid's router
  (dragonfly) or leaf (Dragonfly+). Intra-group flows route minimally. Per-packet Valiant draws
  the group for every packet, so ``valiant`` takes its fluid limit: each inter-group flow split
  in ``g − 2`` equal parts, one through every other group (:func:`valiant_spread`), ``mid`` on
  the dragonfly router that holds the global link onwards (:func:`_exit_host`), which reaches
  about half the injection bandwidth under adversarial and uniform traffic as the paper finds.
  ``valiant-flow`` draws one group (and a random ``mid``) per flow: the per-flow variant, whose
  choices collide (about a quarter on a = 8, p = h = 4 adversarial). A uniform all-to-all on a
  1,056-host dragonfly is 1.1 M flows × 31 parts; the flow engine's traffic runs solve such
  router-symmetric patterns as one flow per router pair, exactly
  (:mod:`commwall.engines.flow.aggregate`), and the dragonfly's routes are built vectorised
  (:meth:`~commwall.topology.dragonfly.DragonflyStructure.links_many`).
* **UGAL-G** (Kim et al. §4.1): per flow, compare the MIN route and one Valiant route by
  (largest link utilisation on the route, the flow's own bytes included) × hop count, take the
  smaller (ties to MIN), and add the flow to the loads; flows are taken in a seeded random order.
  This is the global-information variant (ideal knowledge of every queue), which the paper shows
  acts like MIN on uniform traffic and like VAL on adversarial traffic. *Fluid approximation:*
  load placed so far stands in for queue length, one decision per flow. Under adversarial
  traffic the greedy settles where the two costs meet, so the Valiant share grows with hosts per
  group over the global links joining two groups: about half on a small balanced dragonfly
  (a = 4, p = h = 2), about three quarters at a = 8, p = h = 4.

All draws are hashes of the flow key, so a flow keeps its intermediate group when re-routed.

>>> from commwall.topology import dragonfly
>>> t = dragonfly(a=2, p=1, h=1)
>>> rows = valiant_paths(t.path_fn, np.array([0]), np.array([2]), np.array([7], dtype=np.uint64))
>>> int(np.isin(rows[0], np.flatnonzero(t.link_kind == 3)).sum())  # two global links
2
"""

from __future__ import annotations

import numpy as np

from commwall.routing.hashing import U64Array, pick
from commwall.routing.oracle import counts, indexed_paths
from commwall.routing.policy import RoutingError
from commwall.routing.routes import FloatArray, IntArray
from commwall.topology.dragonfly import DragonflyPlusStructure, DragonflyStructure
from commwall.topology.graph import PathOracle, Topology

__all__ = ["group_size", "minimal_paths", "ugal_paths", "valiant_paths", "valiant_spread"]

# salts of the hashed draws (any distinct constants)
_SALT_INDEX, _SALT_GROUP, _SALT_HOST, _SALT_LEG1, _SALT_LEG2 = 0, 11, 12, 13, 14


def group_size(oracle: PathOracle | None, policy: str) -> tuple[int, int]:
    """(hosts per group, groups) of a dragonfly-family oracle; RoutingError otherwise."""
    if isinstance(oracle, DragonflyStructure):
        return oracle.a * oracle.p, oracle.g
    if isinstance(oracle, DragonflyPlusStructure):
        return oracle.l * oracle.p, oracle.g
    raise RoutingError(
        f"name={policy!r}: Valiant and UGAL routing need a dragonfly or dragonfly+ topology "
        f"(Kim et al. ISCA 2008); this topology's routes come from {type(oracle).__name__}; "
        "use ecmp, flowlet, spray, cells or adaptive"
    )


def minimal_paths(oracle: PathOracle, src: IntArray, dst: IntArray, key: U64Array) -> IntArray:
    """The hashed MIN route of each flow (ECMP over the oracle's routes)."""
    index = pick(key, _SALT_INDEX, counts(oracle, src, dst))
    return indexed_paths(oracle, src, dst, index)


def valiant_spread(oracle: object, src: IntArray, dst: IntArray) -> IntArray:
    """How many ways ``valiant`` splits each flow: every group but the source's and the
    destination's (``g − 2``) for an inter-group flow of a fabric with 3 or more groups, else 1.

    Per-packet Valiant draws an intermediate group for every packet (Kim et al. §4.1), so a
    long flow's bytes spread evenly over all of them; the fluid limit of that is the flow
    split in ``g − 2`` equal parts, one through each (``valiant-flow`` keeps one per flow)."""
    per_group, groups = group_size(oracle, "valiant")  # type: ignore[arg-type]
    inter = (src // per_group != dst // per_group) & (groups >= 3)
    return np.where(inter, max(groups - 2, 1), 1).astype(np.int64)


def _intermediate(
    src: IntArray,
    dst: IntArray,
    key: U64Array,
    per_group: int,
    groups: int,
    which: IntArray | None = None,
) -> IntArray:
    """A host in a group other than the source's and the destination's: the ``which``-th such
    group (0 .. g − 3), or a hashed one; the host within it hashed."""
    gs, gd = src // per_group, dst // per_group
    lo, hi = np.minimum(gs, gd), np.maximum(gs, gd)
    gm = pick(key, _SALT_GROUP, max(groups - 2, 1)) if which is None else which.astype(np.int64)
    gm = gm + (gm >= lo)
    gm = gm + (gm >= hi)
    return gm * per_group + pick(key, _SALT_HOST, per_group)


def _exit_host(
    t: DragonflyStructure, gm: IntArray, gd: IntArray, copy: IntArray, key: U64Array
) -> IntArray:
    """A host on the router of group ``gm`` that holds global link ``copy`` towards group
    ``gd``: routing through it crosses the intermediate group in one local hop (in at the
    router the source's global link lands on, out at this one), as Valiant's "minimally to the
    intermediate group, then minimally to the destination" does (Kim et al. §4.1), instead of
    detouring through a random router of the group."""
    router = t.ports_many(gm, gd, copy) // t.h
    return (gm * t.a + router) * t.p + pick(key, _SALT_HOST, t.p)


def valiant_paths(
    oracle: PathOracle,
    src: IntArray,
    dst: IntArray,
    key: U64Array,
    which: IntArray | None = None,
) -> IntArray:
    """Padded Valiant route of each flow (MIN inside a group, or with fewer than 3 groups):
    through the ``which``-th intermediate group of each, or a hashed one."""
    per_group, groups = group_size(oracle, "valiant")
    inter = (src // per_group != dst // per_group) & (groups >= 3)
    rows = minimal_paths(oracle, src, dst, key)
    if not inter.any():
        return rows
    idx = np.flatnonzero(inter)
    s, d, k = src[idx], dst[idx], key[idx]
    mid = _intermediate(s, d, k, per_group, groups, None if which is None else which[idx])
    i1 = pick(k, _SALT_LEG1, counts(oracle, s, mid))
    i2 = pick(k, _SALT_LEG2, counts(oracle, mid, d))
    if which is not None and isinstance(oracle, DragonflyStructure):
        mid = _exit_host(oracle, mid // per_group, d // per_group, i2, k)
    val = _join(indexed_paths(oracle, s, mid, i1), indexed_paths(oracle, mid, d, i2))
    width = max(rows.shape[1], val.shape[1])
    out = np.full((len(src), width), -1, dtype=np.int64)
    out[:, : rows.shape[1]] = rows
    out[idx, : val.shape[1]] = val
    return out


def _join(first: IntArray, second: IntArray) -> IntArray:
    """Rows ``first`` without their last link followed by ``second`` without its first (the
    intermediate host's access links), both padded with −1, as one padded array."""
    keep1 = np.maximum((first >= 0).sum(axis=1) - 1, 0)
    keep2 = np.maximum((second >= 0).sum(axis=1) - 1, 0)
    out = np.full((len(first), int((keep1 + keep2).max(initial=0))), -1, dtype=np.int64)
    r, c = np.nonzero(np.arange(first.shape[1])[None, :] < keep1[:, None])
    out[r, c] = first[r, c]
    r, c = np.nonzero(np.arange(max(second.shape[1] - 1, 0))[None, :] < keep2[:, None])
    out[r, keep1[r] + c] = second[r, c + 1]
    return out


def ugal_paths(
    oracle: PathOracle,
    topology: Topology,
    src: IntArray,
    dst: IntArray,
    key: U64Array,
    load: FloatArray,
    order: IntArray,
) -> IntArray:
    """Padded UGAL-G route of each flow (module doc): MIN or Valiant, whichever has the smaller
    (max utilisation × hops) when the flow's turn comes in ``order``."""
    minimal = minimal_paths(oracle, src, dst, key)
    valiant = valiant_paths(oracle, src, dst, key)
    inv_cap = (1.0 / topology.link_capacity).tolist()
    util = [0.0] * topology.n_links
    ld = load.tolist()
    take_valiant = np.zeros(len(src), dtype=bool)
    for i in order.tolist():
        a = [x for x in minimal[i].tolist() if x >= 0]
        b = [x for x in valiant[i].tolist() if x >= 0]
        add = ld[i]
        cost_a = max((util[x] + add * inv_cap[x] for x in a), default=0.0) * len(a)
        if a != b:
            cost_b = max((util[x] + add * inv_cap[x] for x in b), default=0.0) * len(b)
            if cost_b < cost_a:
                a = b
                take_valiant[i] = True
        for x in a:
            util[x] += add * inv_cap[x]
    width = max(minimal.shape[1], valiant.shape[1])
    out = np.full((len(src), width), -1, dtype=np.int64)
    out[:, : minimal.shape[1]] = minimal
    chosen = np.flatnonzero(take_valiant)
    out[chosen, : valiant.shape[1]] = valiant[chosen]
    out[chosen, valiant.shape[1] :] = -1
    return out
