"""Collectives compiled to point-to-point transfers: stages of pipelined chains, for the flow engine.

The analytic models in this package price a collective as ``latency + bw_time``. The flow engine
instead moves bytes over the real links, where other traffic, ECMP collisions and oversubscription
can slow them. :func:`compile_collective` bridges the two: it turns one collective (one
:class:`~commwall.collectives.cost.Cost`, run by every copy of a communicator at once) into a
:class:`TransferPlan` of :class:`Stage` objects holding :class:`Chain` objects.

A **chain** is a set of hops that progresses at one rate and carries ``nbytes`` on every hop: an
NCCL ring channel or tree pipeline, where every chunk crosses every hop, so the channel moves at the
speed of its slowest hop. Its ``rate`` cap is what the analytic model gives that chain alone on the
fabric — protocol, channel and NCCL efficiency limits live in the cap, the network can only make it
slower. A non-pipelined step (halving-doubling, direct, PAT) is a chain with ``independent=True``:
its hops are separate transfers of ``nbytes`` each, bundled so that a 32k-rank exchange is a few
arrays rather than millions of objects; they share the cap and the stage waits for the last one.

**Exactness.** Each stage charges a fixed ``latency`` (its share of ``cost.latency``) and lasts
until its slowest chain has moved ``nbytes`` at ``rate``; along the plan's critical path this
reproduces ``cost.time`` (:meth:`TransferPlan.uncontended_time`, checked on every compile). Where
an algorithm has parts the analytic module times separately (hierarchical's three rings,
halving-doubling's steps, direct's scale-up and network halves), the parts are recomputed with the
module's own calls on the fabric the cost came from (this cluster's, or its non-blocking twin on
which the flow engine prices caps; found by recomputing the cost) and scaled to the cost, so the
split is the module's and the sum is the cost's.

**Where the flow engine cannot agree** — the analytic models' own idealisations, not this
module's: halving-doubling with ``p`` not a power of two (its per-step hardware classes assume
pairs that no folding of the extra ranks realises, so some "NVLink" steps cross the network);
NVLS on two GPUs (NCCL's rank-independent NVLS bus bandwidth asks 2 GPUs for more than their
NVLink). NVLS-tree's network hops carry the volume NCCL's model charges, ``(n−1)/n`` of the
physical one (:func:`_nvls_tree`). Plans are guarded in size: :data:`MAX_DIRECT_HOPS` for direct,
16 times that for the pipelined algorithms.

**Physical conventions** (the flow engine maps hops to links with them): GPU ``g`` is in node
``g // gpus_per_node``, local index ``l = g % gpus_per_node``, its own NIC is rail
``l · nics_per_node // gpus_per_node``, its scale-up domain ``g // scale_up_domain``. Two GPUs in
one domain talk over NVLink/NVSwitch (or PCIe); otherwise over the network via NICs. A hop's
``rail`` is the NIC rail it uses at both ends when it leaves the domain, −1 where the algorithm
does not choose (the engine uses the sender's own NIC, or PXN's choice). :data:`NVSWITCH` and
:data:`NETSWITCH` stand for the switch that reduces (NVLS, SHARP).

**Rank order.** Each copy's ranks are sorted by GPU id, which groups them by domain (domains are
contiguous GPU ranges) the way NCCL's topology search keeps a ring's intra-node part together;
broadcast/reduce roots and send/recv neighbours keep the caller's order (``members[c, 0]`` is
rank 0).

>>> from commwall.cluster import build_cluster
>>> from commwall.collectives import Op, Proto, evaluate
>>> from commwall.scenario import ClusterSpec
>>> cluster = build_cluster(ClusterSpec(preset="dgx-h100", nodes=2))
>>> cost = evaluate(Op.ALL_REDUCE, 2**30, cluster.world(), "ring", Proto.SIMPLE)
>>> plan = compile_collective(Op.ALL_REDUCE, 2**30, np.arange(16)[None, :], cluster, cost)
>>> len(plan.stages[0].chains), plan.hops  # 32 channels, each a 16-hop ring
(32, 512)
>>> abs(plan.uncontended_time() / cost.time - 1) < 1e-12
True
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Final

import numpy as np
import numpy.typing as npt

from commwall.collectives.constants import (
    COLLNET_NET_EFFICIENCY,
    Hw,
    Proto,
)
from commwall.collectives.cost import (
    Cost,
    Unsupported,
    base_latency,
    ring_proto_bw,
    step_latency,
)
from commwall.collectives.fabric import CommFabric
from commwall.collectives.halving_doubling import halving_doubling_steps
from commwall.collectives.in_network import nvls_rate
from commwall.collectives.nccl_env import bounded_channels
from commwall.collectives.ops import Op
from commwall.collectives.ring import ring
from commwall.collectives.schedule import Group
from commwall.collectives.tree import tree_inter_volume
from commwall.collectives.tuner import ALGORITHMS, evaluate
from commwall.engines.base import EngineInputError

if TYPE_CHECKING:
    from commwall.cluster import Cluster

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

#: Hop end meaning "the scale-up switch": GPU → NVSwitch is a multimem reduce, NVSwitch → GPU a
#: multicast store (NVLink SHARP).
NVSWITCH: Final = -1
#: Hop end meaning "the network switch": in-network reduction (InfiniBand SHARP / NCCL CollNet)
#: over the NIC of the GPU at the other end.
NETSWITCH: Final = -2
#: Most hops a direct (all-pairs) plan may hold; beyond it the flow engine would spend seconds
#: on bookkeeping for a pattern the analytic engine prices exactly.
MAX_DIRECT_HOPS: Final = 4_000_000


# ---- plan types --------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Chain:
    """Hops that move at one rate, each carrying ``nbytes``.

    ``src``/``dst`` are global GPU ranks (or :data:`NVSWITCH`/:data:`NETSWITCH`), ``rail`` the NIC
    rail a hop that leaves the scale-up domain uses at both ends (−1: not chosen). ``rate`` is the
    cap in bytes/s, so ``nbytes / rate`` is the chain's uncontended bandwidth time.
    ``independent`` marks a bundle of separate one-hop transfers (a non-pipelined exchange step)
    rather than a pipeline; either way every hop moves ``nbytes`` at up to ``rate``.
    Arrays are read-only; equality is identity (arrays do not compare as values).
    """

    src: IntArray
    dst: IntArray
    rail: IntArray
    nbytes: float
    rate: float
    independent: bool = False

    def __post_init__(self) -> None:
        if not (self.src.shape == self.dst.shape == self.rail.shape) or self.src.ndim != 1:
            raise EngineInputError(
                f"chain arrays must be 1-D of one length, got src {self.src.shape}, "
                f"dst {self.dst.shape}, rail {self.rail.shape}"
            )
        if not self.nbytes >= 0 or not self.rate > 0:
            raise EngineInputError(
                f"chain needs nbytes >= 0 and rate > 0, got {self.nbytes}, {self.rate}"
            )

    @property
    def hops(self) -> int:
        """Number of hops."""
        return int(self.src.shape[0])

    @property
    def time(self) -> float:
        """Uncontended bandwidth time, seconds."""
        return self.nbytes / self.rate


@dataclass(frozen=True)
class Stage:
    """Chains that start together after ``latency`` seconds, once the stages in ``after`` end."""

    name: str
    chains: tuple[Chain, ...]
    latency: float
    after: tuple[int, ...] = ()

    @property
    def bw_time(self) -> float:
        """Uncontended bandwidth time: the slowest chain's ``nbytes / rate``."""
        return max((c.time for c in self.chains), default=0.0)

    @property
    def hops(self) -> int:
        """Hops of every chain."""
        return sum(c.hops for c in self.chains)


@dataclass(frozen=True)
class TransferPlan:
    """One collective, run by ``copies`` communicator copies at once, as stages of chains."""

    op: Op
    algo: str
    proto: Proto
    nbytes: float
    nranks: int
    copies: int
    stages: tuple[Stage, ...]
    cost: Cost = field(repr=False)

    def __post_init__(self) -> None:
        for i, stage in enumerate(self.stages):
            if any(not 0 <= a < i for a in stage.after):
                raise EngineInputError(
                    f"stage {i} ({stage.name!r}) waits for a stage that is not earlier"
                )

    @property
    def hops(self) -> int:
        """Hops of the whole plan."""
        return sum(s.hops for s in self.stages)

    def uncontended_time(self) -> float:
        """Critical path of ``latency + bw_time`` over the stage graph, seconds."""
        finish: list[float] = []
        for stage in self.stages:
            start = max((finish[a] for a in stage.after), default=0.0)
            finish.append(start + stage.latency + stage.bw_time)
        return max(finish, default=0.0)


# ---- entry point -------------------------------------------------------------------------------


def compile_collective(
    op: Op,
    nbytes: float,
    members: IntArray,
    cluster: Cluster,
    cost: Cost,
    *,
    group: Group | None = None,
) -> TransferPlan:
    """Compile ``cost`` (one copy's analytic cost) for every copy in ``members``; ``group``: the
    communicator, whose CTA bounds (:meth:`~commwall.collectives.schedule.Group.limited`) bound
    its channels here as in ``cost``.

    ``members`` is a ``(copies, p)`` array of global GPU ranks; row ``c`` is one communicator copy
    running this same collective concurrently, ``members[c, i]`` its rank ``i`` (a 1-D array is one
    copy). Copies must be disjoint. ``cost.algo``/``cost.proto`` say what to compile. Raises
    :class:`ValueError` for inconsistent input, for an algorithm this module cannot compile, and
    for a direct plan above :data:`MAX_DIRECT_HOPS` hops.
    """
    m = _check_members(np.array(members, dtype=np.int64, copy=True), cluster)
    copies, p = m.shape
    if op is not cost.op:
        raise EngineInputError(f"cost is for {cost.op.value}, not {op.value}")
    if not math.isclose(nbytes, cost.nbytes, rel_tol=1e-12, abs_tol=0.0):
        raise EngineInputError(f"cost is for {cost.nbytes} bytes, not {nbytes}")
    if cost.nranks != p:
        raise EngineInputError(f"cost is for {cost.nranks} ranks but each copy has {p} members")

    def plan(stages: Sequence[Stage]) -> TransferPlan:
        return TransferPlan(op, cost.algo, cost.proto, nbytes, p, copies, tuple(stages), cost)

    if cost.algo == "local" or p == 1 or nbytes == 0:
        return _checked(plan([Stage(cost.algo, (), cost.time)]), cost)
    builder = _BUILDERS.get(cost.algo)
    if builder is None:
        known = ", ".join(sorted(_BUILDERS))
        raise EngineInputError(
            f"cannot compile algorithm {cost.algo!r} to transfers; known: {known}"
        )
    ctx = _Context(op, float(nbytes), m, cluster, cost, group)
    return _checked(plan(builder(ctx)), cost)


def _check_members(m: IntArray, cluster: Cluster) -> IntArray:
    if m.ndim == 1:
        m = m[None, :]
    if m.ndim != 2 or m.shape[0] < 1 or m.shape[1] < 1:
        raise EngineInputError(f"members must be a (copies, ranks) array, got shape {m.shape}")
    if int(m.min()) < 0 or int(m.max()) >= cluster.n_gpus:
        raise EngineInputError(
            f"members must be GPU ranks 0..{cluster.n_gpus - 1}, got {int(m.min())}..{int(m.max())}"
        )
    if len(np.unique(m)) != m.size:
        raise EngineInputError("a GPU appears twice in members: copies must be disjoint groups")
    return m


def _checked(plan: TransferPlan, cost: Cost) -> TransferPlan:
    got = plan.uncontended_time()
    if not math.isclose(got, cost.time, rel_tol=1e-9, abs_tol=1e-15):
        raise RuntimeError(
            f"{cost.algo} plan takes {got:.9g} s uncontended but the analytic cost is "
            f"{cost.time:.9g} s (a bug in commwall.engines.transfers)"
        )
    return plan


# ---- layout: copies, domains, rails ------------------------------------------------------------


class _Context:
    """Everything a builder needs: the op, the sorted copies and their domain segments."""

    def __init__(
        self,
        op: Op,
        nbytes: float,
        members: IntArray,
        cluster: Cluster,
        cost: Cost,
        group: Group | None = None,
    ) -> None:
        self.op = op
        self.group = group
        self.nbytes = nbytes
        self.members = members
        self.cluster = cluster
        self.cost = cost
        self.copies, self.p = members.shape
        self.gpn = cluster.gpus_per_node
        self.nics = cluster.nics_per_node
        self.sud = cluster.scale_up_domain
        # Sorting by GPU id sorts by (domain, rank): domains are contiguous id ranges.
        self.sorted = np.sort(members, axis=1)
        flat = self.sorted.reshape(-1)
        self.flat = flat
        n = flat.shape[0]
        dom = flat // self.sud
        copy_of = np.repeat(np.arange(self.copies, dtype=np.int64), self.p)
        new_seg = np.ones(n, dtype=np.bool_)
        new_seg[1:] = (dom[1:] != dom[:-1]) | (copy_of[1:] != copy_of[:-1])
        self.new_seg = new_seg
        self.seg_of = np.cumsum(new_seg, dtype=np.int64) - 1
        self.seg_start = np.flatnonzero(new_seg).astype(np.int64)
        self.seg_len = np.diff(np.append(self.seg_start, n)).astype(np.int64)
        self.local = np.arange(n, dtype=np.int64) - self.seg_start[self.seg_of]
        counts = np.bincount(copy_of[self.seg_start], minlength=self.copies)
        self.n_domains = int(counts[0])
        self.uniform = bool(np.all(counts == counts[0])) and bool(
            np.all(self.seg_len == self.seg_len[0])
        )
        self.g = self.p // self.n_domains

    # ---- hardware of ranks ---------------------------------------------------------------

    def own_rail(self, gpu: IntArray) -> IntArray:
        """Rail of each GPU's own NIC (:meth:`~commwall.cluster.Cluster.own_rail`)."""
        return self.cluster.own_rail(gpu)

    def domain(self, gpu: IntArray) -> IntArray:
        """Scale-up domain of each GPU."""
        return gpu // self.sud

    def rails(self, src: IntArray, dst: IntArray) -> IntArray:
        """Rail of each hop chosen as the receiver's own NIC where the hop leaves the domain."""
        cross = self.domain(src) != self.domain(dst)
        return np.where(cross, self.own_rail(dst), -1).astype(np.int64)

    def fabric(self) -> CommFabric:
        """The fabric ``cost`` was computed on: this cluster's, or its non-blocking twin (which
        the flow engine derives caps from), identified by recomputing the cost."""
        self.require_uniform()
        cl = self.cluster
        candidates = [self.limited(cl.comm_fabric(self.n_domains, self.g))]
        if cl.topology.oversubscription != 1.0:
            flat = replace(cl, topology=cl.topology.model_copy(update={"oversubscription": 1.0}))
            candidates.append(self.limited(flat.comm_fabric(self.n_domains, self.g)))
        c = self.cost
        for f in candidates:
            try:
                again = evaluate(c.op, c.nbytes, f, c.algo, c.proto)
            except Unsupported:
                continue
            if math.isclose(again.time, c.time, rel_tol=1e-9):
                return f
        return candidates[0]

    def limited(self, fabric: CommFabric) -> CommFabric:
        """``fabric`` within the communicator's CTA bounds (none without a group)."""
        return fabric if self.group is None else self.group.limited(fabric)

    def channels(self, n_domains: int, ranks_per_domain: int) -> int:
        """NCCL's coll channels of a ``n_domains × ranks_per_domain`` part of this communicator
        (:meth:`~commwall.cluster.Cluster.channels`), within its CTA bounds."""
        n = self.cluster.channels(n_domains, ranks_per_domain)
        group = self.group
        return n if group is None else bounded_channels(n, group.min_ctas, group.max_ctas)

    def require_uniform(self) -> None:
        """Refuse copies of unequal shape (the algorithm indexes ranks by domain position)."""
        if not self.uniform:
            raise EngineInputError(
                f"{self.cost.algo} needs every copy to span the same number of domains with the "
                "same number of ranks in each"
            )

    def require_pipelines(self, n_channels: int) -> None:
        """Refuse a pipelined plan of absurd size (a guard on memory, not a modelling limit)."""
        if n_channels * self.copies * self.p > 16 * MAX_DIRECT_HOPS:
            raise EngineInputError(
                f"{self.cost.algo} on {self.copies} x {self.p} ranks would hold more than "
                f"{16 * MAX_DIRECT_HOPS:,} hops; use the analytic engine"
            )

    # ---- ring orders ---------------------------------------------------------------------

    def entry_offsets(self, n_chains: int) -> IntArray:
        """``(n_chains, segments)``: where chain ``k`` enters each domain segment.

        The entry is the first member of the segment on a NIC port (node, rail); chain ``k``
        takes the ``k``-th port in the order rail 0..R−1 of the first node, then of the next
        node… so chain ``k`` uses rail ``k % nics_per_node`` on full nodes (NCCL keeps a ring
        channel on one NIC for send and receive, ``search.cc``) and channels spread over every
        NIC of a multi-node domain (NVL72).
        """
        port = (self.flat // self.gpn) * self.nics + self.own_rail(self.flat)
        first = self.new_seg.copy()
        first[1:] |= port[1:] != port[:-1]
        cand = np.flatnonzero(first).astype(np.int64)
        seg = self.seg_of[cand]
        rail = self.own_rail(self.flat[cand])
        # j: how many earlier candidates of the same segment share this rail (the node's index
        # among the segment's nodes on that rail)
        order = np.lexsort((cand, rail, seg))
        key = seg[order] * self.nics + rail[order]
        idx = np.arange(len(order), dtype=np.int64)
        group_first = np.ones(len(order), dtype=np.bool_)
        group_first[1:] = key[1:] != key[:-1]
        within = idx - np.maximum.accumulate(np.where(group_first, idx, 0))
        j = np.empty_like(within)
        j[order] = within
        ranked = cand[np.lexsort((rail, j, seg))]
        n_seg = len(self.seg_start)
        n_cand = np.bincount(seg, minlength=n_seg).astype(np.int64)
        first_cand = np.cumsum(n_cand) - n_cand
        k = np.arange(n_chains, dtype=np.int64)[:, None]
        pick = first_cand[None, :] + k % n_cand[None, :]
        offsets: IntArray = ranked[pick] - self.seg_start[None, :]
        return offsets

    def rotated(self, n_chains: int) -> IntArray:
        """``(n_chains, copies, p)``: each copy's ranks, every domain segment ordered for chain
        ``k``: its entry member (:meth:`entry_offsets`) first, then the segment rotated from
        there, with the entry's own node moved to the end. The segment's last member (the one
        that sends out of the domain) then shares the entry's node, so a PXN relay to the rail's
        NIC lands on the entry GPU, whose NVLink input the ring does not use (NVL72 racks)."""
        off = self.entry_offsets(n_chains)
        seg = self.seg_of
        idx = self.seg_start[seg][None, :] + (
            (self.local[None, :] + off[:, seg]) % self.seg_len[seg][None, :]
        )
        node = self.flat[idx] // self.gpn
        home = node[:, self.seg_start][:, seg]  # the entry's node, per position
        is_entry = self.new_seg[None, :]  # after rotation the entry sits at the segment start
        key = 3 * seg[None, :] + np.where(is_entry, 0, np.where(node == home, 2, 1))
        idx = np.take_along_axis(idx, np.argsort(key, axis=1, kind="stable"), axis=1)
        out: IntArray = self.flat[idx].reshape(n_chains, self.copies, self.p)
        return out

    def chains(
        self,
        src: IntArray,
        dst: IntArray,
        nbytes: float,
        rate: float,
        *,
        rail: IntArray | None = None,
        independent: bool = False,
    ) -> list[Chain]:
        """One chain per leading index of ``(..., h)`` hop arrays (read-only views)."""
        if rail is None:
            rail = self.rails(src, dst)
        h = src.shape[-1]
        arrays = []
        for a in (src, dst, rail):
            a = np.ascontiguousarray(a, dtype=np.int64).reshape(-1, h)
            a.flags.writeable = False
            arrays.append(a)
        s, d, r = arrays
        # iterating a 2-D array yields its row views (cheaper than indexing row by row)
        return [Chain(a, b, c, nbytes, rate, independent) for a, b, c in zip(s, d, r, strict=True)]


def _channels(ctx: _Context) -> int:
    """Ring channels: NCCL's count once the ring leaves the domain; one inside a domain, where
    the GPU's NVLink bandwidth (not a channel count) is what binds."""
    return ctx.channels(ctx.n_domains, ctx.g) if ctx.n_domains > 1 else 1


def _rate(nbytes: float, seconds: float) -> float:
    """Cap that moves ``nbytes`` in ``seconds`` (infinite for an instantaneous part)."""
    return nbytes / seconds if seconds > 0 else math.inf


def _scale(
    parts: Sequence[float], total: float, combine: Callable[[Sequence[float]], float]
) -> list[float]:
    """``parts`` scaled so that ``combine(parts) == total`` (the module's split, the cost's sum)."""
    whole = combine(parts)
    if whole <= 0:
        return [total / len(parts)] * len(parts) if combine is _sum else [total] * len(parts)
    return [x * total / whole for x in parts]


def _sum(xs: Sequence[float]) -> float:
    return math.fsum(xs)


def _max(xs: Sequence[float]) -> float:
    return max(xs)


# ---- ring ----------------------------------------------------------------------------------------


def _ring(ctx: _Context) -> list[Stage]:
    """NCCL ring (Patarasuk & Yuan, JPDC 69(2) 2009; NCCL ``prims``/``ring`` kernels).

    ``C`` channels (:func:`_channels`), each a cycle through every rank of its copy carrying
    ``volume / C`` per hop, ``volume = nsteps/p · S`` as :func:`commwall.collectives.ring.ring`
    charges (``2(p−1)/p·S`` for all-reduce). Broadcast/reduce: the cycle cut at the root, a
    ``p − 1``-hop pipeline carrying ``S / C``. Cap: ``(bytes per hop) / cost.bw_time``.
    """
    op, p, cost = ctx.op, ctx.p, ctx.cost
    n_ch = _channels(ctx)
    ctx.require_pipelines(n_ch)
    orders = ctx.rotated(n_ch)
    if op in (Op.BROADCAST, Op.REDUCE):
        root = ctx.members[:, 0]
        pos = np.argmax(orders == root[None, :, None], axis=2)  # (n_ch, copies)
        start = pos if op is Op.BROADCAST else pos + 1  # reduce: the chain ends at the root
        idx = (start[:, :, None] + np.arange(p, dtype=np.int64)) % p
        path = np.take_along_axis(orders, idx, axis=2)
        src, dst = path[:, :, :-1], path[:, :, 1:]
        per_hop = ctx.nbytes / n_ch
    else:
        src, dst = orders, np.roll(orders, -1, axis=2)
        steps = 2 * (p - 1) if op is Op.ALL_REDUCE else p - 1
        per_hop = steps / p * ctx.nbytes / n_ch
    chains = ctx.chains(src, dst, per_hop, _rate(per_hop, cost.bw_time))
    return [Stage("ring", tuple(chains), cost.latency)]


# ---- tree ----------------------------------------------------------------------------------------


def btree_parents(n: int) -> IntArray:
    """Parent of every rank in NCCL's in-order binary tree over ``n`` ranks; −1 at the root 0.

    Rank ``r > 0`` with lowest set bit ``b`` hangs under ``r ± b`` (whichever has lowest bit
    ``2b``), or under ``r − b`` when ``r + b`` is past the end; rank 0 has one child, the largest
    power of two below ``n`` (NCCL ``trees.cc``; Sanders, Speck & Träff 2009 §3).

    >>> btree_parents(8).tolist()
    [-1, 2, 4, 2, 0, 6, 4, 6]
    """
    parent = np.full(n, -1, dtype=np.int64)
    if n > 1:
        r = np.arange(1, n, dtype=np.int64)
        low = r & -r
        up = (r ^ low) | (low << 1)
        parent[1:] = np.where(up < n, up, r ^ low)
    return parent


def dtree_parents(n: int) -> tuple[IntArray, IntArray]:
    """NCCL's double binary tree: tree 1 = :func:`btree_parents`; tree 2 its mirror
    (``r → n−1−r``) for even ``n``, or tree 1 shifted by one rank for odd ``n``, so each rank is
    interior in at most one tree (for odd ``n`` rank 0 has one child in each) and sends at most
    four messages per direction over both (Sanders, Speck & Träff, Parallel Computing 35(12)
    2009; NCCL ``trees.cc`` ``ncclGetDtree``).

    >>> dtree_parents(4)[1].tolist()
    [1, 3, 1, -1]
    """
    first = btree_parents(n)
    r = np.arange(n, dtype=np.int64)
    if n % 2 == 0:
        role = n - 1 - r
        second = np.where(first[role] < 0, -1, n - 1 - first[role])
    else:
        role = (r - 1) % n
        second = np.where(first[role] < 0, -1, (first[role] + 1) % n)
    return first, second.astype(np.int64)


def _tree_edges(heads: IntArray, parent: IntArray) -> tuple[IntArray, IntArray]:
    """``(up_src, up_dst)`` of a tree over the last axis of ``heads`` (child → parent)."""
    child = np.flatnonzero(parent >= 0)
    return heads[..., child], heads[..., parent[child]]


def _tree(ctx: _Context) -> list[Stage]:
    """NCCL tree all-reduce: a chain inside each domain, a double binary tree across domains
    (Sanders, Speck & Träff 2009; nccl#530 on NCCL's hierarchical tree; ``trees.cc``).

    ``C'`` channels per tree (NCCL splits its channels over the two trees: ``channels/2`` across
    domains, 1 inside one domain); each (tree, channel) is one pipelined chain holding every up
    edge (reduce) and down edge (broadcast) — intra-domain chain from the head outwards, tree
    edges between domain heads on the head's rail — and carries ``S/(2C')`` per hop, so each rank
    moves ``2S`` along its domain chain and a domain's NICs ``2S`` (``S`` for two domains) per
    direction, as :func:`commwall.collectives.tree.tree` charges. Heads spread over NIC ports as
    ring entries do. Cap: ``S/(2C') / cost.bw_time``.
    """
    ctx.require_uniform()
    n_dom = ctx.n_domains
    per_tree = max(1, ctx.channels(n_dom, ctx.g) // 2) if n_dom > 1 else 1
    ctx.require_pipelines(4 * per_tree)
    orders = ctx.rotated(2 * per_tree)  # (K, copies, p), head first in every segment
    g = ctx.g
    segs = orders.reshape(2 * per_tree, ctx.copies, n_dom, g)
    heads = segs[..., 0]  # (K, copies, N)
    intra_src = segs[..., 1:].reshape(2 * per_tree, ctx.copies, -1)
    intra_dst = segs[..., :-1].reshape(2 * per_tree, ctx.copies, -1)
    per_hop = ctx.nbytes / (2 * per_tree)
    rate = _rate(per_hop, ctx.cost.bw_time)
    chains: list[Chain] = []
    for t, parent in enumerate(dtree_parents(n_dom)):
        k = slice(t * per_tree, (t + 1) * per_tree)
        up_src, up_dst = _tree_edges(heads[k], parent)
        src = np.concatenate([intra_src[k], up_src, up_dst, intra_dst[k]], axis=2)
        dst = np.concatenate([intra_dst[k], up_dst, up_src, intra_src[k]], axis=2)
        chains += ctx.chains(src, dst, per_hop, rate)
    return [Stage("tree", tuple(chains), ctx.cost.latency)]


# ---- halving-doubling --------------------------------------------------------------------------


def _hd_pairs(ctx: _Context) -> list[tuple[str, IntArray, IntArray]]:
    """(name, src index, dst index) of every step, in copy-rank (sorted) index space, in the order
    of :func:`commwall.collectives.halving_doubling.halving_doubling_steps`."""
    op, p = ctx.op, ctx.p
    k = p.bit_length() - 1
    extra = p - (1 << k)
    ex = 2 * np.arange(extra, dtype=np.int64)  # folded ranks (MPICH's even ranks below 2r)
    partner = ex + 1
    q_to_i = np.concatenate([partner, np.arange(2 * extra, p, dtype=np.int64)])
    q = np.arange(1 << k, dtype=np.int64)
    halving = [(f"halving (distance {1 << j})", q_to_i[q], q_to_i[q ^ (1 << j)]) for j in range(k)]
    doubling = [(n.replace("halving", "doubling"), s, d) for n, s, d in reversed(halving)]
    steps: list[tuple[str, IntArray, IntArray]] = []
    if extra and op is not Op.ALL_GATHER:
        steps.append(("fold extra ranks", ex, partner))
    if op is not Op.ALL_GATHER:
        steps.extend(halving)
    if op is not Op.REDUCE_SCATTER:
        steps.extend(doubling)
    if extra and op is not Op.REDUCE_SCATTER:
        steps.append(("result to extra ranks", partner, ex))
    if extra and op is Op.REDUCE_SCATTER:
        steps.append(("shard to extra ranks", partner, ex))
    if extra and op is Op.ALL_GATHER:
        steps.insert(0, ("shard from extra ranks", ex, partner))
    return steps


def _halving_doubling(ctx: _Context) -> list[Stage]:
    """Recursive halving reduce-scatter then recursive doubling all-gather (Thakur, Rabenseifner &
    Gropp, IJHPCA 19(1) 2005), as :mod:`commwall.collectives.halving_doubling` prices it.

    One stage per step, each after the previous; a step is a bundle of one-hop exchanges
    ``q ↔ q XOR d`` (distance 1, 2, 4… for the halving, largest halves nearest; mirrored for the
    doubling). For ``p`` not a power of two, ranks ``2j`` (``j < p − 2^⌊lg p⌋``) fold into
    ``2j+1`` first and get the result back last (MPICH's pre/post step). Broadcast and reduce use
    the all-reduce pattern, as the module prices them. Stage latency = the module's per-step
    latency (launch latency on the first); cap = the module's per-step bandwidth.
    """
    f = ctx.fabric()
    cost = ctx.cost
    steps = halving_doubling_steps(ctx.op, ctx.nbytes, f)
    pairs = _hd_pairs(ctx)
    if len(steps) != len(pairs):  # pragma: no cover - the two lists are built alike
        raise RuntimeError("halving-doubling step lists disagree")
    bw = {
        f.intra_hw: ring_proto_bw(f, cost.proto, f.intra_bw) if f.ranks_per_domain > 1 else 0.0,
        Hw.NET: ring_proto_bw(f, cost.proto, f.net_bw_per_rank) if f.n_domains > 1 else 0.0,
    }
    lat = [step_latency(f, hw, "ring", cost.proto) for _, hw in steps]
    lat[0] += base_latency("ring", cost.proto)
    lat = _scale(lat, cost.latency, _sum)
    times = _scale([size / bw[hw] for size, hw in steps], cost.bw_time, _sum)
    stages: list[Stage] = []
    for i, ((size, _), (name, s, d)) in enumerate(zip(steps, pairs, strict=True)):
        src, dst = ctx.sorted[:, s], ctx.sorted[:, d]
        chains = ctx.chains(
            src, dst, size, _rate(size, times[i]), rail=_no_rail(src), independent=True
        )
        stages.append(Stage(name, tuple(chains), lat[i], (i - 1,) if i else ()))
    return stages


def _no_rail(src: IntArray) -> IntArray:
    return np.full(src.shape, -1, dtype=np.int64)


# ---- direct ----------------------------------------------------------------------------------------


def _direct(ctx: _Context) -> list[Stage]:
    """Direct algorithms (NCCL's all-to-all and grouped send/recv, ``enqueue.cc`` p2p; the
    "one-shot" all-reduce), as :mod:`commwall.collectives.direct` prices them.

    All-to-all, all-gather, reduce-scatter: one stage where every ordered pair exchanges ``S/p``
    (all-reduce: two such stages, reduce-scatter then all-gather). Broadcast/reduce: the root
    and every peer exchange ``S``. Send/recv: rank ``i`` sends ``S`` to ``i+1`` (nccl-tests).
    Scale-up and network pairs are separate bundles capped at the module's two halves
    (``(g−1)·c/B_intra`` and ``(p−g)·c/B_net``; the stage ends with the slower, as in the module).
    """
    op, p, copies, cost = ctx.op, ctx.p, ctx.copies, ctx.cost
    if op is Op.SENDRECV:
        m = ctx.members
        src, dst = m, np.roll(m, -1, axis=1)
        p2p = ctx.chains(
            src,
            dst,
            ctx.nbytes,
            _rate(ctx.nbytes, cost.bw_time),
            rail=_no_rail(src),
            independent=True,
        )
        return [Stage("sendrecv", tuple(p2p), cost.latency)]
    hops = copies * (p - 1) * (1 if op in (Op.BROADCAST, Op.REDUCE) else p)
    n_stages = 2 if op is Op.ALL_REDUCE else 1
    if hops * n_stages > MAX_DIRECT_HOPS:
        raise EngineInputError(
            f"direct {op.value} on {copies} x {p} ranks is {hops * n_stages:,} point-to-point "
            f"transfers; the flow engine compiles at most {MAX_DIRECT_HOPS:,}: use "
            "the analytic engine for this collective"
        )
    f = ctx.fabric()
    g = f.ranks_per_domain
    if op in (Op.BROADCAST, Op.REDUCE):
        root = ctx.members[:, 0]
        peers = ctx.sorted[ctx.sorted != root[:, None]].reshape(copies, p - 1)
        away = ctx.domain(peers) != ctx.domain(root)[:, None]
        peers = np.take_along_axis(peers, np.argsort(away, axis=1, kind="stable"), axis=1)
        roots = np.broadcast_to(root[:, None], peers.shape)
        src, dst = (roots, peers) if op is Op.BROADCAST else (peers, roots)
        same = np.arange(p - 1) < g - 1  # the root's own domain first
        chunk = ctx.nbytes
    else:
        a, b = np.divmod(np.arange(p * p, dtype=np.int64), p)
        keep = a != b
        src, dst = ctx.sorted[:, a[keep]], ctx.sorted[:, b[keep]]
        same = (a[keep] // g) == (b[keep] // g)  # sorted copies: domain = index // g
        chunk = ctx.nbytes / p
    intra_t = (g - 1) * chunk / ring_proto_bw(f, cost.proto, f.intra_bw) if g > 1 else 0.0
    net_t = (p - g) * chunk / ring_proto_bw(f, cost.proto, f.net_bw_per_rank) if p > g else 0.0
    intra_t, net_t = _scale([intra_t, net_t], cost.bw_time / n_stages, _max)
    hw = Hw.NET if f.n_domains > 1 else f.intra_hw
    step = step_latency(f, hw, "ring", cost.proto)
    lat = [base_latency("ring", cost.proto) + step] + [step] * (n_stages - 1)
    lat = _scale(lat, cost.latency, _sum)
    names = ("reduce-scatter", "all-gather") if n_stages == 2 else (op.value,)
    stages: list[Stage] = []
    for i, name in enumerate(names):
        chains: list[Chain] = []
        for mask, t in ((same, intra_t), (~same, net_t)):
            if mask.any():
                s, d = src[:, mask], dst[:, mask]
                chains += ctx.chains(
                    s, d, chunk, _rate(chunk, t), rail=_no_rail(s), independent=True
                )
        stages.append(Stage(name, tuple(chains), lat[i], (i - 1,) if i else ()))
    return stages


# ---- hierarchical --------------------------------------------------------------------------------


def _hierarchical(ctx: _Context) -> list[Stage]:
    """2-D collective (``shared/reference/nccl-model.md`` §6; Mikami et al. 2018): ring
    reduce-scatter inside each domain → ring all-reduce of ``S/g`` across domains, one ring per
    local rank on that rank's own rail → ring all-gather inside each domain (RS and AG drop the
    last or first stage). Each stage waits for the previous; its latency and bandwidth time are
    the ring costs :func:`commwall.collectives.hierarchical.hierarchical` sums, recomputed with
    the same calls. Intra-domain rings are one chain per domain; each rail ring has ``channels``
    chains (:func:`_ring`'s rule).
    """
    f = ctx.fabric()
    op, s, g, cost = ctx.op, ctx.nbytes, ctx.g, ctx.cost
    local, rail = f.sub(n_domains=1), f.sub(ranks_per_domain=1)
    rs_in = ("intra-domain reduce-scatter", Op.REDUCE_SCATTER, s, local)
    ag_in = ("intra-domain all-gather", Op.ALL_GATHER, s, local)
    parts: list[tuple[str, Op, float, CommFabric]]
    if op is Op.ALL_REDUCE:
        parts = [rs_in, ("inter-domain all-reduce", Op.ALL_REDUCE, s / g, rail), ag_in]
    elif op is Op.REDUCE_SCATTER:
        parts = [rs_in, ("inter-domain reduce-scatter", Op.REDUCE_SCATTER, s / g, rail)]
    else:
        parts = [("inter-domain all-gather", Op.ALL_GATHER, s / g, rail), ag_in]
    costs = [ring(part_op, size, fab, cost.proto) for _, part_op, size, fab in parts]
    lat = _scale([c.latency for c in costs], cost.latency, _sum)
    times = _scale([c.bw_time for c in costs], cost.bw_time, _sum)
    n_dom = ctx.n_domains
    grid = ctx.sorted.reshape(ctx.copies, n_dom, g)
    n_ch = ctx.channels(ctx.n_domains, 1)
    ctx.require_pipelines(n_ch)
    stages: list[Stage] = []
    for i, ((name, part_op, size, fab), t) in enumerate(zip(parts, times, strict=True)):
        n = fab.nranks
        steps = 2 * (n - 1) if part_op is Op.ALL_REDUCE else n - 1
        if fab is local:  # one ring per (copy, domain)
            per_hop = steps / n * size
            src = grid.reshape(-1, g)
            chains = ctx.chains(src, np.roll(src, -1, axis=1), per_hop, _rate(per_hop, t))
        else:  # one ring per (copy, local rank), channels chains each, on that rank's rail
            per_hop = steps / n * size / n_ch
            ring_ranks = np.swapaxes(grid, 1, 2)  # (copies, g, N)
            src = np.broadcast_to(ring_ranks[:, :, None, :], (ctx.copies, g, n_ch, n_dom))
            dst = np.roll(src, -1, axis=3)
            chains = ctx.chains(src, dst, per_hop, _rate(per_hop, t))
        stages.append(Stage(name, tuple(chains), lat[i], (i - 1,) if i else ()))
    return stages


# ---- in-network ----------------------------------------------------------------------------------


def _nvls(ctx: _Context) -> list[Stage]:
    """NVLink SHARP inside one domain (NVIDIA NVLS: ``multimem.ld_reduce`` then
    ``multimem.st`` multicast; sjeaugey, nccl#1083, nccl#1506), as
    :func:`commwall.collectives.in_network.nvls` prices it.

    One copy's reduction in the switch needs every GPU's contribution, so a copy is one pipelined
    chain: all-reduce = ``[g → NVSWITCH, NVSWITCH → g]`` for every GPU, ``S`` each way.
    Reduce-scatter sends ``S`` up and receives ``S/p``, all-gather sends ``S/p`` and receives ``S``
    (nccl#1083's volumes): an up chain and a down chain, both lasting ``cost.bw_time``.
    """
    m, s, p, t = ctx.members, ctx.nbytes, ctx.p, ctx.cost.bw_time
    sw = np.full(m.shape, NVSWITCH, dtype=np.int64)
    no = _no_rail(m)
    if ctx.op is Op.ALL_REDUCE:
        src, dst = np.concatenate([m, sw], axis=1), np.concatenate([sw, m], axis=1)
        chains = ctx.chains(src, dst, s, _rate(s, t), rail=np.concatenate([no, no], axis=1))
    else:
        up = s if ctx.op is Op.REDUCE_SCATTER else s / p
        down = s / p if ctx.op is Op.REDUCE_SCATTER else s
        chains = ctx.chains(m, sw, up, _rate(up, t), rail=no)
        chains += ctx.chains(sw, m, down, _rate(down, t), rail=no)
    return [Stage("nvls", tuple(chains), ctx.cost.latency)]


def _nvls_tree(ctx: _Context) -> list[Stage]:
    """NVLS inside each domain pipelined with a double binary tree across domains (NCCL
    NVLSTree), as :func:`commwall.collectives.in_network.nvls_tree` prices it: one stage.

    Per domain, an NVLS chain ``[g → NVSWITCH, NVSWITCH → g]`` of ``S`` each way. Across domains
    each local rank ``l`` heads the slice ``S/g`` on its own rail, split over the two trees of
    :func:`dtree_parents`: a chain per (copy, l, tree) of up and down edges between the rank-``l``
    GPUs of every domain, each edge carrying half the slice — a rank's NIC moves ``S/g`` per
    direction with two domains and ``2S/g`` from three on, the volumes the time model charges.
    Caps: each part's own time (the NVLS rate, :func:`~commwall.collectives.in_network.nvls_rate`;
    the shard over the NIC), the slower part = ``cost.bw_time``.
    """
    f = ctx.fabric()
    op, s, g, n_dom = ctx.op, ctx.nbytes, ctx.g, ctx.n_domains
    t_nvls = s / nvls_rate(op, f)
    t_net = s / g * tree_inter_volume(n_dom) / f.net_bw_per_rank
    t_nvls, t_net = _scale([t_nvls, t_net], ctx.cost.bw_time, _max)
    grid = ctx.sorted.reshape(ctx.copies, n_dom, g)
    dom = grid.reshape(-1, g)
    sw = np.full(dom.shape, NVSWITCH, dtype=np.int64)
    no = _no_rail(dom)
    chains = ctx.chains(
        np.concatenate([dom, sw], axis=1),
        np.concatenate([sw, dom], axis=1),
        s,
        _rate(s, t_nvls),
        rail=np.concatenate([no, no], axis=1),
    )
    per_hop = s / (2 * g)
    heads = np.swapaxes(grid, 1, 2)  # (copies, g, N): the rank-l GPU of every domain
    for parent in dtree_parents(n_dom):
        up_src, up_dst = _tree_edges(heads, parent)
        src = np.concatenate([up_src, up_dst], axis=2)
        dst = np.concatenate([up_dst, up_src], axis=2)
        chains += ctx.chains(src, dst, per_hop, _rate(per_hop, t_net))
    return [Stage("nvls_tree", tuple(chains), ctx.cost.latency)]


def _collnet(ctx: _Context) -> list[Stage]:
    """InfiniBand SHARP all-reduce (NCCL CollNetDirect; NVIDIA SHARP docs), as
    :func:`commwall.collectives.in_network.collnet` prices it: one pipelined stage.

    Inside each domain a ring chain moves the reduce-scatter + all-gather volume
    ``2(g−1)/g·S`` over NVLink; across domains the rank-``l`` GPUs of every domain form one SHARP
    group on rail ``l``: a chain ``[g → NETSWITCH, NETSWITCH → g]`` of ``S/g`` over each GPU's own
    NIC. The switches' aggregation tree is treated as reserved, non-blocking capacity (SHARP trees
    are set up by the aggregation manager), so only NIC access links are shared. Caps: each
    part's own time (``2(g−1)/g·S / B_intra`` and ``S/g / (0.9·B_net)``), the slower = the cost's.
    """
    f = ctx.fabric()
    s, g, n_dom = ctx.nbytes, ctx.g, ctx.n_domains
    t_intra = 2.0 * (g - 1) / g * s / f.intra_bw if g > 1 else 0.0
    t_net = s / g / (COLLNET_NET_EFFICIENCY * f.net_bw_per_rank)
    t_intra, t_net = _scale([t_intra, t_net], ctx.cost.bw_time, _max)
    grid = ctx.sorted.reshape(ctx.copies, n_dom, g)
    chains: list[Chain] = []
    if g > 1:
        dom = grid.reshape(-1, g)
        intra = 2.0 * (g - 1) / g * s
        chains += ctx.chains(dom, np.roll(dom, -1, axis=1), intra, _rate(intra, t_intra))
    groups = np.swapaxes(grid, 1, 2)  # (copies, g, N)
    sw = np.full(groups.shape, NETSWITCH, dtype=np.int64)
    rail = ctx.own_rail(groups)
    chains += ctx.chains(
        np.concatenate([groups, sw], axis=2),
        np.concatenate([sw, groups], axis=2),
        s / g,
        _rate(s / g, t_net),
        rail=np.concatenate([rail, rail], axis=2),
    )
    return [Stage("collnet", tuple(chains), ctx.cost.latency)]


# ---- PAT -----------------------------------------------------------------------------------------


def pat_steps(n: int, op: Op) -> list[tuple[int, int]]:
    """(distance, shards each rank sends) of PAT's steps on ``n`` ranks.

    Every rank's shard spreads along a binomial tree rooted at that rank, farthest hop first
    (distance ``2^(k−1)`` … 1), the trees of all ranks aggregated into one message per step: at
    distance ``d`` each rank forwards the ``⌈(n−d)/2d⌉`` shards whose tree has an edge there, so
    far hops carry little (Jeaugey, "PAT", arXiv:2506.20252; NCCL 2.23). Reduce-scatter runs the
    same trees towards the roots, nearest first.

    >>> pat_steps(8, Op.ALL_GATHER)
    [(4, 1), (2, 2), (1, 4)]
    """
    k = max(1, (n - 1).bit_length())
    steps = [(1 << j, -(-(n - (1 << j)) // (2 << j))) for j in reversed(range(k))]
    return steps if op is Op.ALL_GATHER else steps[::-1]


def _pat(ctx: _Context) -> list[Stage]:
    """PAT all-gather / reduce-scatter (:func:`pat_steps`), as
    :func:`commwall.collectives.pat.pat` prices it: one stage per step, each after the previous, a
    bundle of one-hop sends ``i → i ± d``. NCCL's PAT latency is one closed form, so it is split
    evenly over the steps; the bandwidth time is split in proportion to the bytes a rank sends
    in each step (the same cap in every step).
    """
    n, s, cost = ctx.p, ctx.nbytes, ctx.cost
    steps = pat_steps(n, ctx.op)
    shard = s / n
    sent = [c * shard for _, c in steps]
    times = _scale(sent, cost.bw_time, _sum)
    lat = cost.latency / len(steps)
    idx = np.arange(n, dtype=np.int64)
    sign = 1 if ctx.op is Op.ALL_GATHER else -1
    stages: list[Stage] = []
    for i, ((d, _), size, t) in enumerate(zip(steps, sent, times, strict=True)):
        src = ctx.sorted
        dst = ctx.sorted[:, (idx + sign * d) % n]
        chains = ctx.chains(src, dst, size, _rate(size, t), rail=_no_rail(src), independent=True)
        stages.append(Stage(f"distance {d}", tuple(chains), lat, (i - 1,) if i else ()))
    return stages


_BUILDERS: Final[dict[str, Callable[[_Context], list[Stage]]]] = {
    "ring": _ring,
    "tree": _tree,
    "halving_doubling": _halving_doubling,
    "direct": _direct,
    "hierarchical": _hierarchical,
    "nvls": _nvls,
    "nvls_tree": _nvls_tree,
    "collnet": _collnet,
    "pat": _pat,
}
assert set(_BUILDERS) == set(ALGORITHMS), "every tuner algorithm needs a transfer builder"
