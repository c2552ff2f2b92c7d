"""Collectives compiled to transfers: exact against the analytic cost, physically sound, fast."""

from __future__ import annotations

import math
import time
from functools import cache
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from commwall.cluster import Cluster, build_cluster
from commwall.collectives import ALGORITHMS, Cost, Op, Proto, Unsupported, evaluate
from commwall.collectives.constants import Hw
from commwall.collectives.halving_doubling import halving_doubling_steps
from commwall.collectives.ring import ring
from commwall.engines.transfers import (
    MAX_DIRECT_HOPS,
    NETSWITCH,
    NVSWITCH,
    Chain,
    TransferPlan,
    btree_parents,
    compile_collective,
    dtree_parents,
    pat_steps,
)
from commwall.scenario import ClusterSpec

IntArray = npt.NDArray[np.int64]
KIB, MIB, GIB = 2.0**10, 2.0**20, 2.0**30
SIZES = (8.0, 64 * KIB, 16 * MIB, GIB, 8 * GIB)

CLUSTERS: dict[str, tuple[str, int, dict[str, Any]]] = {
    "h100x1": ("dgx-h100", 1, {}),
    "h100x2": ("dgx-h100", 2, {}),
    "h100x16-sharp": ("dgx-h100", 16, {"sharp": True}),
    "a100x2": ("dgx-a100", 2, {}),
    "a100-pcie x2": ("dgx-a100", 2, {"scale_up": "pcie"}),
    "nvl72 x2 racks": ("gb200-nvl72", 36, {}),
}


@cache
def cluster(name: str) -> Cluster:
    preset, nodes, extra = CLUSTERS[name]
    return build_cluster(ClusterSpec.model_validate({"preset": preset, "nodes": nodes, **extra}))


def placements(cl: Cluster) -> dict[str, IntArray]:
    """Concurrent copies as the workload lays them out: the whole cluster; one copy per local
    rank with one GPU per node (data parallel under in-node TP); two half-node blocks per node."""
    gpn, nodes = cl.gpus_per_node, cl.n_nodes
    node = np.arange(nodes, dtype=np.int64)[:, None] * gpn
    out = {"world": np.arange(cl.n_gpus, dtype=np.int64)[None, :]}
    if nodes > 1:
        out["per local rank"] = (np.arange(gpn, dtype=np.int64)[:, None] + node.T).astype(np.int64)
    half = gpn // 2
    out["half nodes"] = np.stack(
        [(node + b + np.arange(half)).reshape(-1) for b in (0, half)]
    ).astype(np.int64)
    return out


def shape(cl: Cluster, members: IntArray) -> tuple[int, int]:
    """(domains, ranks per domain) of one copy."""
    n_dom = len(np.unique(members[0] // cl.scale_up_domain))
    return n_dom, members.shape[1] // n_dom


def plans(cl: Cluster, members: IntArray, sizes: tuple[float, ...] = SIZES) -> list[TransferPlan]:
    """Every algorithm × op × protocol × size the models can run on this placement."""
    fabric = cl.comm_fabric(*shape(cl, members))
    out = []
    for algo in ALGORITHMS:
        for op in Op:
            for proto in Proto:
                for size in sizes:
                    try:
                        cost = evaluate(op, size, fabric, algo, proto)
                    except Unsupported:
                        continue
                    out.append(compile_collective(op, size, members, cl, cost))
    return out


def hop_arrays(
    chains: tuple[Chain, ...] | list[Chain],
) -> tuple[IntArray, IntArray, IntArray, IntArray]:
    """(src, dst, rail, chain index) of every hop."""
    if not chains:
        e = np.empty(0, dtype=np.int64)
        return e, e, e, e
    lengths = [c.hops for c in chains]
    owner = np.repeat(np.arange(len(chains)), lengths)
    return (
        np.concatenate([c.src for c in chains]),
        np.concatenate([c.dst for c in chains]),
        np.concatenate([c.rail for c in chains]),
        owner,
    )


def own_rail(cl: Cluster, gpu: IntArray) -> IntArray:
    return (gpu % cl.gpus_per_node) * cl.nics_per_node // cl.gpus_per_node


def bytes_per_gpu(plan: TransferPlan, cl: Cluster) -> tuple[np.ndarray, np.ndarray]:
    """Bytes each GPU sends and receives over the whole plan (switch hops included)."""
    sent, got = np.zeros(cl.n_gpus), np.zeros(cl.n_gpus)
    for stage in plan.stages:
        for c in stage.chains:
            np.add.at(sent, c.src[c.src >= 0], c.nbytes)
            np.add.at(got, c.dst[c.dst >= 0], c.nbytes)
    return sent, got


def check_structure(plan: TransferPlan, members: IntArray, cl: Cluster) -> None:
    """Hops join members of one copy (or a switch), never a rank to itself; rails are valid."""
    copy_of = np.full(cl.n_gpus, -1, dtype=np.int64)
    copy_of[members] = np.arange(members.shape[0])[:, None]
    for stage in plan.stages:
        src, dst, rail, owner = hop_arrays(stage.chains)
        if not len(src):
            continue
        assert np.all(src != dst)
        sentinel = (NVSWITCH, NETSWITCH)
        assert np.all((src >= 0) | np.isin(src, sentinel)) and np.all(
            (dst >= 0) | np.isin(dst, sentinel)
        )
        assert np.all((src >= 0) | (dst >= 0)), "a hop between two switches"
        assert np.all((rail >= -1) & (rail < cl.nics_per_node))
        for end in (src, dst):
            real = end >= 0
            assert np.all(copy_of[end[real]] >= 0), "a hop reaches a GPU outside every copy"
        a = np.where(src >= 0, copy_of[np.maximum(src, 0)], copy_of[np.maximum(dst, 0)])
        b = np.where(dst >= 0, copy_of[np.maximum(dst, 0)], a)
        assert np.all(a == b), "a hop joins two copies"
        first = np.zeros(len(stage.chains), dtype=np.int64)
        first[owner[::-1]] = a[::-1]  # copy of each chain's first hop
        assert np.all(a == first[owner]), "a chain touches another copy's ranks"


def link_loads(plan: TransferPlan, cl: Cluster) -> tuple[float, float]:
    """Highest load / capacity of a GPU's scale-up port and of a NIC when every chain runs at
    its cap (``NCCL's`` per-GPU NVLink bandwidth, the per-NIC share of ``net_bw_per_gpu``),
    mapping hops as the flow engine does: rail −1 = own NIC at each end; another rail first
    crosses NVLink to the GPU that owns that NIC (PXN)."""
    gpn, nics, sud = cl.gpus_per_node, cl.nics_per_node, cl.scale_up_domain
    nic_cap = cl.net_bw_per_gpu * gpn / nics
    worst_nv = worst_nic = 0.0
    for stage in plan.stages:
        chains = [c for c in stage.chains if math.isfinite(c.rate)]
        src, dst, rail, owner = hop_arrays(chains)
        if not len(src):
            continue
        rate = np.array([c.rate for c in chains])[owner]
        nv = np.zeros((cl.n_gpus, 2))
        nic = np.zeros((cl.n_nodes * nics, 2))
        s, d = np.maximum(src, 0), np.maximum(dst, 0)
        np.add.at(nv, (s[dst == NVSWITCH], 0), rate[dst == NVSWITCH])
        np.add.at(nv, (d[src == NVSWITCH], 1), rate[src == NVSWITCH])
        both = (src >= 0) & (dst >= 0)
        same = both & (s // sud == d // sud)
        np.add.at(nv, (s[same], 0), rate[same])
        np.add.at(nv, (d[same], 1), rate[same])
        up, down = (dst == NETSWITCH), (src == NETSWITCH)
        net = both & ~same
        gpu_s = np.where(src >= 0, s, d)
        gpu_d = np.where(dst >= 0, d, s)
        r_s = np.where(rail >= 0, rail, own_rail(cl, gpu_s))
        r_d = np.where(rail >= 0, rail, own_rail(cl, gpu_d))
        out_mask, in_mask = net | up, net | down
        np.add.at(nic, ((gpu_s // gpn * nics + r_s)[out_mask], 0), rate[out_mask])
        np.add.at(nic, ((gpu_d // gpn * nics + r_d)[in_mask], 1), rate[in_mask])
        proxy_s = gpu_s // gpn * gpn + (r_s * gpn + nics - 1) // nics
        proxy_d = gpu_d // gpn * gpn + (r_d * gpn + nics - 1) // nics
        leg_s, leg_d = out_mask & (proxy_s != gpu_s), in_mask & (proxy_d != gpu_d)
        np.add.at(nv, (gpu_s[leg_s], 0), rate[leg_s])
        np.add.at(nv, (proxy_s[leg_s], 1), rate[leg_s])
        np.add.at(nv, (proxy_d[leg_d], 0), rate[leg_d])
        np.add.at(nv, (gpu_d[leg_d], 1), rate[leg_d])
        worst_nv = max(worst_nv, float(nv.max()) / cl.intra_bw)
        worst_nic = max(worst_nic, float(nic.max()) / nic_cap)
    return worst_nv, worst_nic


def one(
    name: str,
    op: Op,
    algo: str,
    proto: Proto = Proto.SIMPLE,
    size: float = GIB,
    members: IntArray | None = None,
) -> tuple[Cluster, IntArray, Cost, TransferPlan]:
    """Cluster, members, cost and plan of one collective (default: the whole cluster)."""
    cl = cluster(name)
    m = placements(cl)["world"] if members is None else members
    cost = evaluate(op, size, cl.comm_fabric(*shape(cl, m)), algo, proto)
    return cl, m, cost, compile_collective(op, size, m, cl, cost)


# ---- exactness and structure ---------------------------------------------------------------------


@pytest.mark.parametrize("name", list(CLUSTERS))
def test_every_plan_reproduces_the_analytic_cost(name: str) -> None:
    """Every algorithm × op × protocol × size (8 B … 8 GiB) on every placement: the plan's
    uncontended critical path is the analytic cost; hops stay inside their copy."""
    cl = cluster(name)
    checked = set()
    for where, members in placements(cl).items():
        # every size on the whole cluster; the copies' shapes at both ends and in the middle
        sizes = SIZES if where == "world" else (8.0, GIB, 8 * GIB)
        for plan in plans(cl, members, sizes):
            got = plan.uncontended_time()
            assert got == pytest.approx(plan.cost.time, rel=1e-9, abs=0), (
                where,
                plan.algo,
                plan.op,
            )
            assert plan.copies == members.shape[0] and plan.nranks == members.shape[1]
            if plan.nbytes == GIB:
                check_structure(plan, members, cl)
            checked.add(plan.algo)
    expected = {"ring", "direct", "halving_doubling"}
    if cl.n_domains > 1:
        expected |= {"hierarchical", "tree"}
    assert expected <= checked


def test_every_algorithm_of_the_tuner_compiles_somewhere() -> None:
    seen = set()
    for name in ("h100x1", "h100x16-sharp"):
        cl = cluster(name)
        for members in placements(cl).values():
            seen |= {p.algo for p in plans(cl, members, (GIB,))}
    assert set(ALGORITHMS) <= seen


def test_unknown_algorithm_is_named() -> None:
    cl, m, cost, _ = one("h100x2", Op.ALL_REDUCE, "ring")
    fake = Cost(cost.op, "magic", cost.proto, cost.nbytes, cost.nranks, 1e-6, 1e-6, 1, "net")
    with pytest.raises(ValueError, match="magic"):
        compile_collective(Op.ALL_REDUCE, GIB, m, cl, fake)


@pytest.mark.parametrize(
    ("bad", "match"),
    [
        ({"op": Op.ALL_GATHER}, "all_reduce"),
        ({"nbytes": 2 * GIB}, "bytes"),
        ({"members": np.arange(8)[None, :]}, "ranks"),
        ({"members": np.array([[0] * 16])}, "twice"),
        ({"members": np.arange(16, 32)[None, :] + 1000}, "GPU ranks"),
    ],
)
def test_inconsistent_input_is_refused(bad: dict[str, Any], match: str) -> None:
    cl, m, cost, _ = one("h100x2", Op.ALL_REDUCE, "ring")
    args: dict[str, Any] = {"op": Op.ALL_REDUCE, "nbytes": GIB, "members": m}
    args.update(bad)
    with pytest.raises(ValueError, match=match):
        compile_collective(args["op"], args["nbytes"], args["members"], cl, cost)


def test_trivial_plans_are_one_latency_stage() -> None:
    cl = cluster("h100x2")
    for members, size in ((np.array([[3]]), GIB), (np.arange(16)[None, :], 0.0)):
        fabric = cl.comm_fabric(*shape(cl, members))
        cost = evaluate(Op.ALL_REDUCE, size, fabric, "ring", Proto.SIMPLE)
        plan = compile_collective(Op.ALL_REDUCE, size, members, cl, cost)
        assert len(plan.stages) == 1 and plan.stages[0].chains == ()
        assert plan.stages[0].latency == cost.time == plan.uncontended_time()


def test_one_dimensional_members_and_read_only_chains() -> None:
    cl, _, cost, _ = one("h100x2", Op.ALL_REDUCE, "ring")
    members = np.arange(16)
    plan = compile_collective(Op.ALL_REDUCE, GIB, members, cl, cost)
    chain = plan.stages[0].chains[0]
    members[0] = 99  # the caller's array is copied
    assert 99 not in chain.src
    with pytest.raises(ValueError):
        chain.src[0] = 5


# ---- bytes -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["world", "per local rank"])
def test_ring_bytes_are_the_patarasuk_yuan_volume(where: str) -> None:
    cl = cluster("h100x16-sharp")
    m = placements(cl)[where]
    p = m.shape[1]
    volumes = {Op.ALL_REDUCE: 2 * (p - 1) / p, Op.REDUCE_SCATTER: (p - 1) / p}
    for op, factor in {**volumes, Op.ALL_GATHER: (p - 1) / p}.items():
        _, _, _, plan = one("h100x16-sharp", op, "ring", members=m)
        sent, got = bytes_per_gpu(plan, cl)
        assert sent[m.ravel()] == pytest.approx(factor * GIB, rel=1e-12)
        assert got[m.ravel()] == pytest.approx(factor * GIB, rel=1e-12)
        n_domains = len({int(g) // cl.scale_up_domain for g in m[0]})
        g = p // n_domains
        assert len(plan.stages[0].chains) == cl.channels(n_domains, g) * m.shape[0]
        assert all(c.hops == p for c in plan.stages[0].chains)


def test_ring_inside_one_domain_is_one_chain_per_copy() -> None:
    cl = cluster("h100x16-sharp")
    tp = np.arange(cl.n_gpus).reshape(cl.n_nodes, 8)
    _, _, _, plan = one("h100x16-sharp", Op.ALL_REDUCE, "ring", members=tp)
    assert len(plan.stages[0].chains) == cl.n_nodes
    assert all(np.all(c.rail == -1) for c in plan.stages[0].chains)


@pytest.mark.parametrize("op", [Op.BROADCAST, Op.REDUCE])
def test_ring_broadcast_and_reduce_are_pipelines_through_the_root(op: Op) -> None:
    cl = cluster("h100x2")
    m = np.roll(np.arange(16), -5)[None, :]  # rank 0 is GPU 5
    _, _, _, plan = one("h100x2", op, "ring", members=m)
    sent, got = bytes_per_gpu(plan, cl)
    for c in plan.stages[0].chains:
        assert c.hops == 15 and len(set(c.src.tolist()) | set(c.dst.tolist())) == 16
        assert (c.src[0] == 5) if op is Op.BROADCAST else (c.dst[-1] == 5)
        assert np.array_equal(c.src[1:], c.dst[:-1])  # a path
    root_bytes = sent[5] if op is Op.BROADCAST else got[5]
    assert root_bytes == pytest.approx(GIB)
    assert (got if op is Op.BROADCAST else sent)[5] == 0


def test_direct_bytes_follow_nccl_tests_sizes() -> None:
    cl = cluster("h100x2")
    m = placements(cl)["world"]
    p = 16
    cases = [(Op.ALLTOALL, (p - 1) / p, 1), (Op.ALL_REDUCE, 2 * (p - 1) / p, 2)]
    for op, factor, stages in [*cases, (Op.ALL_GATHER, (p - 1) / p, 1)]:
        _, _, _, plan = one("h100x2", op, "direct", members=m)
        sent, got = bytes_per_gpu(plan, cl)
        assert sent[m.ravel()] == pytest.approx(factor * GIB)
        assert got[m.ravel()] == pytest.approx(factor * GIB)
        assert len(plan.stages) == stages and plan.hops == stages * p * (p - 1)
        assert all(c.independent for s in plan.stages for c in s.chains)
    _, _, _, plan = one("h100x2", Op.SENDRECV, "direct", members=m)
    (chain,) = plan.stages[0].chains
    assert np.array_equal(chain.dst, np.roll(chain.src, -1))


def test_direct_plan_above_the_hop_limit_points_to_the_analytic_engine() -> None:
    cl = build_cluster(ClusterSpec(preset="dgx-h100", nodes=256))
    m = np.arange(cl.n_gpus)[None, :]
    assert MAX_DIRECT_HOPS < 2048 * 2047
    cost = evaluate(Op.ALLTOALL, 64 * MIB, cl.world(), "direct", Proto.SIMPLE)
    with pytest.raises(ValueError, match="use the analytic engine"):
        compile_collective(Op.ALLTOALL, 64 * MIB, m, cl, cost)
    # the same ranks as 2 copies of 1024: 2 × 1024 × 1023 hops, under the limit
    halves = m.reshape(2, 1024)
    cost = evaluate(Op.ALLTOALL, 64 * MIB, cl.comm_fabric(128, 8), "direct", Proto.SIMPLE)
    assert compile_collective(Op.ALLTOALL, 64 * MIB, halves, cl, cost).hops == 2 * 1024 * 1023


def test_halving_doubling_power_of_two_pairs_sit_where_the_model_says() -> None:
    """p = 16 over 2 domains: steps the module calls NVLink pair ranks of one domain, network
    steps pair ranks of different domains, and each rank sends 2(p−1)/p·S."""
    cl, _, _, plan = one("h100x2", Op.ALL_REDUCE, "halving_doubling")
    steps = halving_doubling_steps(Op.ALL_REDUCE, GIB, cl.comm_fabric(2, 8))
    assert len(plan.stages) == len(steps) == 8
    for i, (stage, (size, hw)) in enumerate(zip(plan.stages, steps, strict=True)):
        (chain,) = stage.chains
        assert chain.nbytes == size and stage.after == ((i - 1,) if i else ())
        crosses = chain.src // 8 != chain.dst // 8
        assert np.all(crosses) if hw is Hw.NET else not np.any(crosses)
        assert sorted(chain.src.tolist()) == list(range(16))
    sent, _ = bytes_per_gpu(plan, cl)
    assert sent[:16] == pytest.approx(2 * 15 / 16 * GIB)


def test_halving_doubling_non_power_of_two_folds_extra_ranks() -> None:
    cl = cluster("h100x2")
    # 12 = 8 + 4 ranks (6 per node): copy ranks 0, 2, 4, 6 fold into 1, 3, 5, 7 (MPICH)
    m = np.concatenate([np.arange(6), np.arange(8, 14)])[None, :]
    cost = evaluate(Op.ALL_REDUCE, GIB, cl.comm_fabric(2, 6), "halving_doubling", Proto.SIMPLE)
    plan = compile_collective(Op.ALL_REDUCE, GIB, m, cl, cost)
    first, last = plan.stages[0].chains[0], plan.stages[-1].chains[0]
    assert first.src.tolist() == [0, 2, 4, 8] and first.dst.tolist() == [1, 3, 5, 9]
    assert first.nbytes == last.nbytes == GIB
    assert np.array_equal(last.src, first.dst) and np.array_equal(last.dst, first.src)
    assert plan.uncontended_time() == pytest.approx(cost.time, rel=1e-12)


def test_tree_chains_hold_every_edge_of_both_trees() -> None:
    cl, _, _, plan = one("h100x16-sharp", Op.ALL_REDUCE, "tree")
    (stage,) = plan.stages
    per_tree = cl.channels(16, 8) // 2
    assert len(stage.chains) == 2 * per_tree
    p, n_dom = 128, 16
    for c in stage.chains:
        cross = c.src // 8 != c.dst // 8
        assert c.hops == 2 * (p - 1) and int(cross.sum()) == 2 * (n_dom - 1)
        assert c.nbytes == pytest.approx(GIB / (2 * per_tree))
        assert np.all(own_rail(cl, c.src[cross]) == c.rail[cross])  # heads on their own NIC
        assert np.all(own_rail(cl, c.dst[cross]) == c.rail[cross])
    # a domain's NICs carry at most 2S per direction (interior in one tree, leaf in the other)
    out = np.zeros(n_dom)
    for c in stage.chains:
        cross = c.src // 8 != c.dst // 8
        np.add.at(out, c.src[cross] // 8, c.nbytes)
    assert out.max() == pytest.approx(2 * GIB)
    sent, _ = bytes_per_gpu(plan, cl)
    assert sent.sum() == pytest.approx(2 * (p - 1) * GIB)


def test_hierarchical_is_three_dependent_ring_stages_on_own_rails() -> None:
    cl, _, _, plan = one("h100x16-sharp", Op.ALL_REDUCE, "hierarchical")
    assert [s.after for s in plan.stages] == [(), (0,), (1,)]
    intra_rs, inter, intra_ag = plan.stages
    assert len(intra_rs.chains) == len(intra_ag.chains) == 16
    assert len(inter.chains) == 8 * cl.channels(16, 1)  # one ring per local rank, its rail
    src, dst, rail, _ = hop_arrays(inter.chains)
    assert np.all(src // 8 != dst // 8)
    assert np.all(own_rail(cl, src) == rail) and np.all(own_rail(cl, dst) == rail)
    sent, _ = bytes_per_gpu(plan, cl)
    assert sent[:128] == pytest.approx(2 * 7 / 8 * GIB + 2 * 15 / 16 * GIB / 8)


def test_in_network_plans_use_the_switches() -> None:
    _, _, _, plan = one("h100x1", Op.ALL_REDUCE, "nvls")
    (chain,) = plan.stages[0].chains
    assert sorted(chain.src[chain.dst == NVSWITCH].tolist()) == list(range(8))
    assert sorted(chain.dst[chain.src == NVSWITCH].tolist()) == list(range(8))
    assert chain.nbytes == GIB
    _, _, _, rs = one("h100x1", Op.REDUCE_SCATTER, "nvls")
    assert [c.nbytes for c in rs.stages[0].chains] == [GIB, GIB / 8]
    cl, _, _, plan = one("h100x16-sharp", Op.ALL_REDUCE, "collnet")
    sharp = [c for c in plan.stages[0].chains if np.any(c.dst == NETSWITCH)]
    assert len(sharp) == 8  # one SHARP group per rail
    for c in sharp:
        gpus = c.src[c.src >= 0]
        assert c.nbytes == GIB / 8 and len(gpus) == 16
        assert np.all(own_rail(cl, gpus) == c.rail[c.src >= 0])
    _, _, _, nt = one("h100x16-sharp", Op.ALL_REDUCE, "nvls_tree")
    nvls_chains = [c for c in nt.stages[0].chains if np.any(c.dst == NVSWITCH)]
    assert len(nvls_chains) == 16


def test_pat_sends_each_shard_once_along_binomial_trees() -> None:
    for n in range(2, 70):
        for op in (Op.ALL_GATHER, Op.REDUCE_SCATTER):
            steps = pat_steps(n, op)
            assert sum(c for _, c in steps) == n - 1
            assert len(steps) == max(1, math.ceil(math.log2(n)))
    cl = cluster("h100x16-sharp")
    m = placements(cl)["per local rank"][:1]
    _, _, _, plan = one("h100x16-sharp", Op.ALL_GATHER, "pat", members=m)
    sent, got = bytes_per_gpu(plan, cl)
    assert sent[m.ravel()] == pytest.approx(15 / 16 * GIB)
    assert got[m.ravel()] == pytest.approx(15 / 16 * GIB)
    assert [s.name for s in plan.stages] == ["distance 8", "distance 4", "distance 2", "distance 1"]


# ---- trees -----------------------------------------------------------------------------------------


def _is_tree(parent: IntArray, root: int) -> bool:
    n = len(parent)
    if n == 0 or parent[root] != -1 or int((parent < 0).sum()) != 1:
        return False
    for r in range(n):  # every rank reaches the root without a cycle
        seen, x = 0, r
        while x != root and seen <= n:
            x, seen = int(parent[x]), seen + 1
        if x != root:
            return False
    return True


@pytest.mark.parametrize("n", [*range(1, 40), 64, 127, 128])
def test_double_binary_tree_shape(n: int) -> None:
    first, second = dtree_parents(n)
    assert _is_tree(first, 0)
    assert _is_tree(second, n - 1 if n % 2 == 0 else (1 if n > 1 else 0))
    kids = [np.bincount(t[t >= 0], minlength=n) for t in (first, second)]
    assert max(k.max(initial=0) for k in kids) <= 2
    if n > 1:
        assert kids[0][0] == 1  # NCCL's root has one child
    if n % 2 == 0:  # every rank interior in at most one tree
        assert not np.any((kids[0] > 0) & (kids[1] > 0))
    # a rank sends at most 4 messages per direction over both trees (one up, two down + one up)
    out = kids[0] + kids[1] + (first >= 0) + (second >= 0)
    assert out.max(initial=0) <= 4
    assert btree_parents(n).tolist() == first.tolist()


# ---- rails and feasibility -------------------------------------------------------------------------


def test_ring_channels_are_rail_aligned_round_robin() -> None:
    cl = cluster("h100x16-sharp")
    _, _, _, plan = one("h100x16-sharp", Op.ALL_REDUCE, "ring")
    for k, c in enumerate(plan.stages[0].chains):
        cross = c.src // 8 != c.dst // 8
        assert int(cross.sum()) == 16
        assert np.all(c.rail[cross] == k % 8) and np.all(c.rail[~cross] == -1)
        assert np.all(own_rail(cl, c.dst[cross]) == k % 8)  # enters at the rail's GPU
        assert np.all(c.src[cross] // 8 == (c.dst[cross] // 8 - 1) % 16)  # node to next node
    dp = placements(cl)["per local rank"]
    _, _, _, plan = one("h100x16-sharp", Op.ALL_REDUCE, "ring", members=dp)
    src, dst, rail, _ = hop_arrays(plan.stages[0].chains)
    assert np.all(own_rail(cl, src) == rail) and np.all(own_rail(cl, dst) == rail)


def test_nvl72_ring_channels_spread_over_the_racks_nics() -> None:
    cl, _, _, plan = one("nvl72 x2 racks", Op.ALL_REDUCE, "ring")
    ports = set()
    for c in plan.stages[0].chains:
        cross = c.src // 72 != c.dst // 72
        assert np.all(own_rail(cl, c.dst[cross]) == c.rail[cross])
        for rack in (0, 1):  # the GPU leaving a rack sits on the entry GPU's tray (PXN to it)
            (entry,) = c.dst[cross & (c.dst // 72 == rack)]
            (exit_,) = c.src[cross & (c.src // 72 == rack)]
            assert entry // 4 == exit_ // 4
        ports |= {(int(d) // 4, int(r)) for d, r in zip(c.dst[cross], c.rail[cross], strict=True)}
    assert len(ports) == 2 * cl.channels(2, 72)  # every channel enters each rack on its own NIC


@pytest.mark.parametrize(
    "name", ["h100x2", "h100x16-sharp", "a100x2", "a100-pcie x2", "nvl72 x2 racks"]
)
def test_caps_fit_the_hardware_on_a_non_blocking_fabric(name: str) -> None:
    """With every chain at its cap, no GPU port or NIC carries more than NCCL's model of it, so
    a flow engine on a non-blocking fabric reproduces the analytic times. Exceptions are the
    analytic models' own: halving-doubling when p is not a power of two (its step classes assume
    pairs no folding realises) and NVLS on 2 GPUs (rank-independent busbw)."""
    cl = cluster(name)
    for where, members in placements(cl).items():
        p = members.shape[1]
        for plan in plans(cl, members, (GIB,)):
            if plan.algo == "halving_doubling" and p & (p - 1):
                continue
            nv, nic = link_loads(plan, cl)
            assert nv <= 1 + 1e-9 and nic <= 1 + 1e-9, (
                where,
                plan.algo,
                plan.op,
                plan.proto,
                nv,
                nic,
            )


# ---- scale -----------------------------------------------------------------------------------------


def test_32k_rank_ring_compiles_quickly() -> None:
    """4,096 DGX H100 nodes, one copy: channels × p hops (time printed, not asserted)."""
    cl = build_cluster(ClusterSpec(preset="dgx-h100", nodes=4096))
    m = np.arange(cl.n_gpus, dtype=np.int64)[None, :]
    for algo in ("ring", "hierarchical"):
        cost = evaluate(Op.ALL_REDUCE, GIB, cl.world(), algo, Proto.SIMPLE)
        t0 = time.perf_counter()
        plan = compile_collective(Op.ALL_REDUCE, GIB, m, cl, cost)
        elapsed = time.perf_counter() - t0
        print(f"{algo} all-reduce on {cl.n_gpus} ranks: {elapsed * 1e3:.0f} ms, {plan.hops:,} hops")
        assert plan.uncontended_time() == pytest.approx(cost.time, rel=1e-9)
        if algo == "ring":
            assert plan.hops == cl.channels(cl.n_nodes, 8) * cl.n_gpus


def test_split_follows_the_fabric_the_cost_was_computed_on() -> None:
    """The flow engine prices caps on the non-blocking twin of an oversubscribed cluster; the
    plan's stages must then split that cost as hierarchical.py does on that twin."""
    spec = {"preset": "dgx-h100", "nodes": 64}
    tapered = build_cluster(
        ClusterSpec.model_validate({**spec, "topology": {"oversubscription": 3}})
    )
    flat = build_cluster(ClusterSpec.model_validate(spec))
    assert tapered.net_bw_per_gpu < flat.net_bw_per_gpu
    m = np.arange(tapered.n_gpus)[None, :]
    for fabric in (flat.world(), tapered.world()):
        cost = evaluate(Op.ALL_REDUCE, GIB, fabric, "hierarchical", Proto.SIMPLE)
        plan = compile_collective(Op.ALL_REDUCE, GIB, m, tapered, cost)
        local, rail = fabric.sub(n_domains=1), fabric.sub(ranks_per_domain=1)
        parts = [
            ring(Op.REDUCE_SCATTER, GIB, local, Proto.SIMPLE),
            ring(Op.ALL_REDUCE, GIB / 8, rail, Proto.SIMPLE),
            ring(Op.ALL_GATHER, GIB, local, Proto.SIMPLE),
        ]
        for stage, part in zip(plan.stages, parts, strict=True):
            assert stage.latency == pytest.approx(part.latency, rel=1e-12)
            assert stage.bw_time == pytest.approx(part.bw_time, rel=1e-12)
