"""Link and switch failures: exact bisection losses, routes around failures, reachability, and the
flow engine's slowdown."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from commwall.cluster import build_cluster
from commwall.engines.flow.traffic import pattern_flows
from commwall.faults import FaultError
from commwall.faults.failures import (
    FailedParts,
    FailureSpec,
    SurvivingRoutes,
    apply_failures,
    choose_failures,
    fail_parts,
    failure_impact,
    measure_workloads,
    study_failures,
)
from commwall.routing import route, route_paths
from commwall.scenario import ClusterSpec
from commwall.topology import TopologyError, dragonfly, fat_tree, leaf_spine
from commwall.topology.metrics import bisection_bandwidth, bisection_bandwidth_maxflow

RATE = 50e9  # builders' default link rate, bytes/s
NONE = FailedParts(np.empty(0, np.int64), np.empty(0, np.int64))


def leaf_uplinks(topo: object, leaf: int, spines: list[int]) -> tuple[int, ...]:
    """Cable ids of ``leaf``'s cables to ``spines`` (leaf_parallel 1; ClosStructure numbering)."""
    s = topo.path_fn  # type: ignore[attr-defined]
    return tuple(s.n_endpoints + leaf * s.spines_per_pod + j for j in spines)


@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_failing_uplinks_of_a_side_a_leaf_cuts_bisection_by_their_capacity(k: int) -> None:
    t = leaf_spine(8)  # 8 leaves of 4 hosts, 4 spines: non-blocking, bisection 16 x rate
    failed = fail_parts(t, FailureSpec(cables=leaf_uplinks(t, 0, list(range(k)))))
    impact = failure_impact(t, failed, baseline={})
    assert impact.bisection_before == bisection_bandwidth(t) == 16 * RATE
    # leaf 0 (side A) keeps 4 - k uplinks for its 4 hosts: exactly k x rate leaves the cut
    assert impact.bisection_after == bisection_bandwidth_maxflow(failed, np.arange(32) < 16)
    assert impact.bisection_after == (16 - k) * RATE
    assert impact.bisection_method == "max-flow"
    assert impact.failed_cables == {"leaf-spine": k}
    assert impact.pairs_without_route == (0 if k < 4 else 2 * 4 * 28)


def test_a_failed_core_of_a_k4_fat_tree() -> None:
    t = fat_tree(4)  # 16 hosts, 4 cores each with one cable per pod: bisection 8 x rate
    failed = fail_parts(t, FailureSpec(switches=("core:0",)))
    impact = failure_impact(t, failed, baseline={})
    # side A (pods 0, 1) reaches side B through 3 cores, each 2 cables in and 2 out
    assert (impact.bisection_before, impact.bisection_after) == (8 * RATE, 6 * RATE)
    assert impact.failed_switches == ("core:0",) and impact.failed_cables == {"spine-core": 4}
    assert impact.route_survival["different pods"]["mean_share"] == pytest.approx(0.75)
    assert impact.route_survival["same pod"]["mean_share"] == 1.0
    assert impact.runs_as_configured


def all_pairs(n: int) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.divmod(np.arange(n * n), n)
    return a[a != b], b[a != b]


@pytest.mark.parametrize(
    "topo",
    [fat_tree(4), leaf_spine(8), dragonfly(a=4, p=2, h=2)],
    ids=["fat-tree", "leaf-spine", "dragonfly"],
)
def test_no_route_crosses_a_failed_link(topo: object) -> None:
    t = topo
    classes = {"global": 2, "local": 1} if "dragonfly" in t.name else {"leaf-spine": 3}  # type: ignore[attr-defined]
    failed = fail_parts(t, FailureSpec(random_cables=classes), np.random.default_rng(3))  # type: ignore[arg-type]
    dead = set(failed.params["failed_cables"])
    oracle = failed.path_fn
    assert isinstance(oracle, SurvivingRoutes)
    for a, b in zip(*all_pairs(len(t.endpoints())), strict=True):  # type: ignore[attr-defined]
        a, b = int(a), int(b)
        base = [oracle.base.links(a, b, i) for i in range(oracle.base.count(a, b))]
        alive = [r for r in base if not dead & set((r // 2).tolist())]
        assert oracle.count(a, b) == len(alive)
        for i in range(oracle.count(a, b)):
            assert np.array_equal(oracle.links(a, b, i), alive[i])


def test_ecmp_rehashes_over_exactly_the_survivors() -> None:
    t = fat_tree(8)  # 16 routes across pods
    failed = fail_parts(t, FailureSpec(switches=("spine:0",), cables=(128 + 16,)))
    n = failed.path_count(0, 127)
    assert 0 < n < t.path_count(0, 127)
    flows = 2000
    paths = route_paths(failed, np.zeros(flows, int), np.full(flows, 127), "ecmp",
                        flow_id=np.arange(flows))  # fmt: skip
    used = {tuple(row[row >= 0].tolist()) for row in paths.links}
    assert len(used) == n
    dead = np.asarray(failed.params["failed_cables"])
    assert not np.isin(paths.links[paths.links >= 0] // 2, dead).any()


def test_spray_over_survivors_matches_the_clos_spray_when_nothing_failed() -> None:
    t = fat_tree(4)
    healthy = apply_failures(t, NONE)
    a, b = all_pairs(16)
    load = [np.bincount(r.link, r.weight, minlength=t.n_links)[: t.n_links]
            for r in (route(t, a, b, "spray"), route(healthy, a, b, "spray"))]  # fmt: skip
    # the Clos spray aggregates spines into virtual links; spread back they load links alike
    assert load[1].sum() == pytest.approx(float(route(t, a, b, "spray").hops.sum()))
    failed = fail_parts(t, FailureSpec(switches=("spine:0",)))
    r = route(failed, a, b, "spray")
    assert not np.isin(r.link // 2, failed.params["failed_cables"]).any()
    assert np.bincount(r.flow, r.weight).round(9).max() <= 6  # <= 6 links' worth per flow


def test_a_failed_access_cable_disconnects_its_endpoint() -> None:
    t = leaf_spine(8)
    impact = failure_impact(t, fail_parts(t, FailureSpec(cables=(5,))), baseline={})
    assert impact.endpoints_disconnected == (5,)
    assert impact.pairs_without_route == 2 * 31
    assert not impact.runs_as_configured
    leaf = failure_impact(t, fail_parts(t, FailureSpec(switches=("leaf:1",))), baseline={})
    assert leaf.endpoints_disconnected == (4, 5, 6, 7)


def test_failed_cables_validate_only_when_declared() -> None:
    t = leaf_spine(8)
    failed = fail_parts(t, FailureSpec(cables=(40,)))
    assert failed.link_capacity[80] == failed.link_capacity[81] == 0
    assert failed.validate() is failed
    with pytest.raises(TopologyError, match=r"capacity 0\.0"):
        replace(failed, params={}).validate()


def test_bad_input_names_the_field_and_the_range() -> None:
    t = leaf_spine(8)
    with pytest.raises(FaultError, match=r"cables: 64 .*0\.\.63"):
        choose_failures(t, FailureSpec(cables=(64,)))
    with pytest.raises(FaultError, match=r"spine:0\.\.spine:3"):
        choose_failures(t, FailureSpec(switches=("spine:4",)))
    with pytest.raises(FaultError, match="allowed: 0 to 4"):
        choose_failures(t, FailureSpec(random_switches={"spine": 5}), np.random.default_rng(0))
    with pytest.raises(FaultError, match="random_cables: class 'uplink'"):
        choose_failures(t, FailureSpec(random_cables={"uplink": 1}), np.random.default_rng(0))
    with pytest.raises(FaultError, match="rng"):
        choose_failures(t, FailureSpec(random_cables={"leaf-spine": 1}))


def test_same_seed_same_failures_and_results() -> None:
    t = fat_tree(8)
    spec = FailureSpec(random_cables={"leaf-spine": 4}, random_switches={"core": 1})
    one = study_failures(t, spec, samples=3, seed=7, routings=("ecmp",)).to_dict()
    two = study_failures(t, spec, samples=3, seed=7, routings=("ecmp",)).to_dict()
    assert one == two
    cables = [tuple(s["failed_cables"].items()) for s in one["impacts"]]
    other = study_failures(t, spec, samples=3, seed=8, workloads=False).to_dict()
    assert [i["bisection_after_Bps"] for i in one["impacts"]] != [
        i["bisection_after_Bps"] for i in other["impacts"]
    ] or cables != [tuple(s["failed_cables"].items()) for s in other["impacts"]]
    assert one["summary"]["bisection_loss"]["n"] == 3


def test_permutation_throughput_falls_when_half_a_leafs_uplinks_fail() -> None:
    t = leaf_spine(8)  # 4 hosts per leaf, 4 uplinks
    failed = fail_parts(t, FailureSpec(cables=leaf_uplinks(t, 0, [0, 1])))
    before = measure_workloads(apply_failures(t, NONE), None, ops=(), size=1e6, routings=("spray",))
    after = measure_workloads(failed, None, ops=(), size=1e6, routings=("spray",))
    src, dst = pattern_flows("permutation", 32, seed=0)
    leaf = t.path_fn.endpoint_leaf  # type: ignore[union-attr]
    out = int(np.sum((leaf[src] == 0) & (leaf[dst] != 0)))  # leave leaf 0 over its 2 uplinks
    into = int(np.sum((leaf[src] != 0) & (leaf[dst] == 0)))  # enter it over its 2 downlinks
    bound = (32 - out - into + min(out, 2) + min(into, 2)) * RATE
    assert before[("permutation", "spray")] == pytest.approx(32 * RATE)
    assert out + into > 4  # this permutation crosses leaf 0 more than its links carry
    assert after[("permutation", "spray")] <= bound * (1 + 1e-9)
    assert after[("permutation", "spray")] < before[("permutation", "spray")]


def test_flow_engine_slowdown_is_one_without_failures_and_at_least_one_with() -> None:
    cl = build_cluster(ClusterSpec(preset="dgx-h100", nodes=40, routing="ecmp"))
    fabric = cl.scale_out_topology()
    ops = ("all_reduce", "alltoall")
    nothing = failure_impact(fabric, apply_failures(fabric, NONE), cluster=cl, ops=ops, size=2**28)
    assert [w.slowdown for w in nothing.workloads] == [1.0, 1.0]
    spine = fail_parts(fabric, FailureSpec(switches=("spine:0", "spine:1")))
    hit = failure_impact(fabric, spine, cluster=cl, ops=ops, size=2**28, routings=("ecmp", "spray"))
    assert hit.runs_as_configured and hit.ranks_remaining == hit.ranks_total == 320
    slow = {(w.name, w.routing): w.slowdown for w in hit.workloads}
    assert all(s is not None and s >= 1.0 - 1e-12 for s in slow.values())
    assert slow[("alltoall 256 MiB", "spray")] > 1.0  # the spine tier lost a quarter or more
    cut = failure_impact(fabric, fail_parts(fabric, FailureSpec(cables=(9,))), cluster=cl, ops=ops,
                         size=2**28)  # fmt: skip
    assert not cut.runs_as_configured and cut.ranks_remaining == 312  # node 1 drops out
    assert all(w.after is None and w.error for w in cut.workloads)
