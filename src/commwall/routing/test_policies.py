"""Policy behaviour: balls into bins, spraying, polarization, adaptive balance, cells, flowlets,
determinism."""

from __future__ import annotations

import numpy as np
import pytest

from commwall.routing import (
    ROUTINGS,
    Routes,
    RoutingPolicy,
    link_capacities,
    link_load,
    route,
)
from commwall.topology import (
    ClosStructure,
    Topology,
    dragonfly,
    fat_tree,
    leaf_spine,
    nvlink_domain,
    rail_optimized,
)


def _clos(t: Topology) -> ClosStructure:
    assert isinstance(t.path_fn, ClosStructure)
    return t.path_fn


def max_min_rates(routes: Routes, capacity: np.ndarray) -> np.ndarray:
    """Reference progressive filling (Bertsekas & Gallager §6.5.2) on a dense matrix: small
    instances only. Every flow must cross a link."""
    a = np.zeros((len(capacity), routes.n_flows))
    np.add.at(a, (routes.link, routes.flow), routes.weight)
    assert (a.sum(axis=0) > 0).all()
    rate = np.zeros(routes.n_flows)
    frozen = np.zeros(routes.n_flows, dtype=bool)
    room = capacity.astype(np.float64).copy()
    while not frozen.all():
        load = a[:, ~frozen].sum(axis=1)
        used = load > 0
        step = np.min(room[used] / load[used])
        rate[~frozen] += step
        room -= load * step
        saturated = used & (room <= 1e-9 * capacity)
        frozen |= (a[saturated] > 0).any(axis=0)
    return rate


# ---- ECMP: balls into bins ---------------------------------------------------------------


def _leaf0_uplink_load(t: Topology, routes: Routes) -> np.ndarray:
    """Sum of weights on each uplink of leaf 0 (one cable per spine in leaf_spine(64))."""
    s = _clos(t)
    first = 2 * s.n_endpoints  # leaf 0's uplink cables come first among leaf-spine cables
    up = first + 2 * np.arange(s.spines_per_pod * s.leaf_parallel)
    m = np.isin(routes.link, up)
    return np.bincount((routes.link[m] - first) // 2, weights=routes.weight[m], minlength=len(up))


def _leaf0_flows(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The 32 endpoints of leaf 0 of leaf_spine(64) each send to a random endpoint elsewhere."""
    rng = np.random.default_rng(seed)
    return np.arange(32), rng.integers(32, 2048, 32)


def test_ecmp_balls_into_bins() -> None:
    """n flows hashed onto n uplinks use 1 − (1 − 1/n)ⁿ of them on average (n = 32: 0.638)."""
    t = leaf_spine(64)
    n = 32
    used = []
    for seed in range(300):
        src, dst = _leaf0_flows(seed)
        load = _leaf0_uplink_load(t, route(t, src, dst, "ecmp", seed=seed))
        assert load.sum() == pytest.approx(n)
        used.append(np.count_nonzero(load) / n)
    expected = 1 - (1 - 1 / n) ** n
    assert np.mean(used) == pytest.approx(expected, rel=0.03)


def test_qps_spread_the_load() -> None:
    """8 queue pairs per connection (Meta's QP scaling): the most loaded uplink drops toward the
    mean (1 flow per uplink)."""
    t = leaf_spine(64)
    worst = {1: [], 8: []}
    for seed in range(60):
        src, dst = _leaf0_flows(seed)
        for qps in worst:
            load = _leaf0_uplink_load(t, route(t, src, dst, RoutingPolicy("ecmp", qps=qps)))
            assert load.sum() == pytest.approx(32)
            worst[qps].append(load.max())
    assert np.mean(worst[1]) > 2.8
    assert np.mean(worst[8]) < 2.0
    assert np.mean(worst[8]) < np.mean(worst[1]) - 1.0


# ---- adaptive ----------------------------------------------------------------------------


def test_adaptive_balances_a_leaf() -> None:
    """32 flows onto 32 uplinks: adaptive puts exactly one per uplink; ECMP collides."""
    t = leaf_spine(64)
    ecmp_worst = []
    for seed in range(20):
        src, dst = _leaf0_flows(seed)
        ada = _leaf0_uplink_load(t, route(t, src, dst, "adaptive", seed=seed))
        assert np.array_equal(ada, np.ones(32))
        ecmp_worst.append(_leaf0_uplink_load(t, route(t, src, dst, "ecmp", seed=seed)).max())
    assert min(ecmp_worst) >= 2


def test_adaptive_weighs_bytes() -> None:
    """With nbytes, adaptive balances bytes: one elephant and many mice on 2 uplinks."""
    t = leaf_spine(8)  # 4 endpoints per leaf, 4 uplinks
    src = np.array([0, 1, 2, 3, 0, 1, 2, 3])
    dst = np.array([4, 5, 6, 7, 8, 9, 10, 11])
    nbytes = np.array([100.0, 1, 1, 1, 1, 1, 1, 1])
    r = route(t, src, dst, "adaptive", nbytes=nbytes, seed=3)
    up = (r.link >= 2 * 32) & (r.link < 2 * 32 + 2 * 16) & (r.link % 2 == 0)
    elephant = set(r.link[up & (r.flow == 0)].tolist())
    others = set(r.link[up & (r.flow > 0) & (src[r.flow] == 0)].tolist())
    assert not elephant & others  # nobody from leaf 0 joins the elephant's uplink


def test_adaptive_without_clos_structure() -> None:
    """On an NVSwitch domain (oracle routes), adaptive spreads flows over the chips' links."""
    t = nvlink_domain(gpus=8, chips=2, links_per_gpu=2)
    src, dst = np.zeros(4, dtype=np.int64), np.array([1, 2, 3, 4])
    r = route(t, src, dst, RoutingPolicy("adaptive", adaptive_candidates=4))
    out_of_0 = r.link[t.link_src[r.link] == 0]
    assert len(np.unique(out_of_0)) == 2  # both of GPU 0's links carry 2 flows each
    assert np.array_equal(np.bincount(out_of_0)[np.unique(out_of_0)], [2, 2])


# ---- spraying and cells ------------------------------------------------------------------


@pytest.mark.parametrize(
    "make",
    [
        lambda: fat_tree(8, endpoints=70),
        lambda: rail_optimized(64, rails=8, radix=16, tiers=3),
        lambda: leaf_spine(16, endpoints=40),
    ],
)
def test_spray_virtual_links(make: object) -> None:
    """Virtual capacity = sum of members; loads distributed back are equal on every member; the
    total load is conserved (each hop of each flow carries its rate once)."""
    t = make()  # type: ignore[operator]
    s = _clos(t)
    rng = np.random.default_rng(0)
    src, dst = rng.integers(0, s.n_endpoints, 300), rng.integers(0, s.n_endpoints, 300)
    r = route(t, src, dst, "spray")
    assert r.n_virtual == len(r.virtual_members) > 0
    for cap, members in zip(r.virtual_capacity, r.virtual_members, strict=True):
        assert cap == pytest.approx(t.link_capacity[members].sum())
        assert len(np.unique(members)) == len(members)
    assert np.array_equal(link_capacities(t, r)[t.n_links :], r.virtual_capacity)
    rates = rng.uniform(1.0, 2.0, r.n_flows)
    load = link_load(r, rates, t.n_links)
    for members in r.virtual_members:
        direct = np.isin(r.link, members)
        assert not direct.any()  # members only ever appear through their virtual link
    by_virtual = np.bincount(r.link, weights=r.weight * rates[r.flow])[t.n_links :]
    for total, members in zip(by_virtual, r.virtual_members, strict=True):
        assert np.allclose(load[members], total / len(members))
    assert load.sum() == pytest.approx((rates * r.hops).sum())
    assert np.all(r.weight == 1.0)


def test_spray_levels() -> None:
    """Same leaf: access links only; same pod: V_up1 + V_down1; other pod: + V_up2 + V_down2."""
    t = fat_tree(4)
    r = route(t, np.array([0, 0, 0]), np.array([1, 2, 15]), "spray")
    virtual = r.link >= t.n_links
    assert np.bincount(r.flow[virtual], minlength=3).tolist() == [0, 2, 4]
    assert r.hops.tolist() == [2, 4, 6]
    # flows 1 and 2 leave the same leaf: they share V_up1
    assert r.link[virtual & (r.flow == 1)][0] == r.link[virtual & (r.flow == 2)][0]


def test_spray_is_non_blocking_on_a_permutation() -> None:
    """Perfect spraying gives every flow of a permutation full rate on a non-blocking fat tree."""
    t = fat_tree(8)
    e = _clos(t).n_endpoints
    src = np.arange(e)
    dst = (src + 16) % e  # every host to the same position in the next pod
    r = route(t, src, dst, "spray")
    rates = max_min_rates(r, link_capacities(t, r))
    assert np.allclose(rates, t.params["link_rate"])


def test_spray_without_clos_structure() -> None:
    """Oracle spraying: weight 1/count per route (sampled above 64 routes), weights per flow on
    the access link add up to 1."""
    t = dragonfly(a=4, p=2, h=4, g=5)  # 4 parallel global links per group pair
    r = route(t, np.array([0, 0]), np.array([1, 71 % 40]), "spray")
    assert r.n_virtual == 0
    on_access = r.link == 0
    assert np.allclose(r.weight[on_access], 1.0)
    glob = t.link_kind[r.link] == 3
    assert np.allclose(r.weight[glob & (r.flow == 1)], 0.25)
    big = nvlink_domain(gpus=4, chips=2, links_per_gpu=12)  # 72 routes per pair > 64
    rb = route(big, np.array([0]), np.array([1]), "spray")
    up = rb.link[big.link_src[rb.link] == 0]
    assert len(up) == 12
    assert rb.weight[big.link_src[rb.link] == 0].sum() == pytest.approx(1.0)


def test_cells() -> None:
    """Cells = spray routes + capacity scale + reassembly latency for flows leaving the leaf."""
    t = fat_tree(4)
    src, dst = np.array([0, 0, 0]), np.array([0, 1, 15])
    pol = RoutingPolicy("cells", cell_efficiency=0.9, cell_reassembly_latency=3e-6)
    c = route(t, src, dst, pol)
    s = route(t, src, dst, "spray")
    assert np.array_equal(c.link, s.link) and np.array_equal(c.weight, s.weight)
    assert c.capacity_scale == 0.9
    assert c.extra_latency.tolist() == [0.0, 0.0, 3e-6]
    assert np.allclose(link_capacities(t, c), 0.9 * link_capacities(t, s))
    default = route(t, src, dst, "cells")
    assert default.capacity_scale == pytest.approx(256 / 273)


# ---- flowlets ----------------------------------------------------------------------------


def test_flowlets() -> None:
    """ceil(B / flowlet_bytes) flowlets up to max_flowlets, weight 1/n each; a one-flowlet flow
    takes its ECMP route."""
    t = fat_tree(8)
    src, dst = np.array([0, 1, 2]), np.array([100, 101, 102])
    nbytes = np.array([10e3, 200e3, 10e9])
    pol = RoutingPolicy("flowlet", flowlet_bytes=64e3, max_flowlets=8)
    r = route(t, src, dst, pol, nbytes=nbytes, seed=1)
    access_up = r.link % 2 == 0
    assert np.allclose(r.weight[access_up & (r.link < 2 * 128)], 1.0)
    smallest = r.weight[r.flow == 1].min(), r.weight[r.flow == 2].min()
    assert smallest[0] >= 1 / 4 - 1e-12 and smallest[1] >= 1 / 8 - 1e-12
    e = route(t, src, dst, "ecmp", seed=1)
    assert r.link[r.flow == 0].tolist() == e.link[e.flow == 0].tolist()
    # without sizes every flow is long: max_flowlets of them
    assert len(np.unique(route(t, src, dst, pol, seed=1).weight)) > 1


# ---- polarization ------------------------------------------------------------------------


def test_hash_polarization() -> None:
    """One hash function at every switch (polarized) leaves spine uplinks idle: fewer distinct
    spine→core links carry traffic and the max-min fair throughput drops."""
    t = fat_tree(8)
    s = _clos(t)
    e = s.n_endpoints
    first_sc = 2 * (e + s.leaf_spine_cables)
    rng = np.random.default_rng(0)
    src = np.arange(e)
    dst = (src + 16 * rng.integers(1, 8, e)) % e  # another pod
    used, mean_rate = {}, {}
    for polarized in (False, True):
        links, rates = [], []
        for seed in range(4):
            r = route(t, src, dst, RoutingPolicy("ecmp", polarized=polarized), seed=seed)
            up2 = r.link[(r.link >= first_sc) & (r.link % 2 == 0)]
            links.append(len(np.unique(up2)))
            rates.append(max_min_rates(r, link_capacities(t, r)).mean())
        used[polarized], mean_rate[polarized] = np.mean(links), np.mean(rates)
    assert used[True] <= s.n_spines  # a spine uses (at most) one uplink of its 4
    assert used[False] > 2 * used[True]
    assert mean_rate[True] < 0.8 * mean_rate[False]


# ---- determinism -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "policy", [p for p in ROUTINGS if p not in ("valiant", "ugal", "valiant-flow")]
)
def test_same_seed_same_arrays(policy: str) -> None:
    t = fat_tree(8, endpoints=70)
    rng = np.random.default_rng(4)
    src, dst = rng.integers(0, 70, 200), rng.integers(0, 70, 200)
    nbytes = rng.uniform(1e3, 1e6, 200)
    a = route(t, src, dst, RoutingPolicy(policy, qps=2), seed=11, nbytes=nbytes)
    b = route(t, src.copy(), dst.copy(), RoutingPolicy(policy, qps=2), seed=11, nbytes=nbytes)
    for field in ("flow", "link", "weight", "hops", "extra_latency", "virtual_capacity"):
        assert np.array_equal(getattr(a, field), getattr(b, field)), field


def test_different_seed_different_ecmp() -> None:
    t = fat_tree(8)
    src, dst = np.arange(64), np.arange(64) + 64
    a = route(t, src, dst, "ecmp", seed=1)
    b = route(t, src, dst, "ecmp", seed=2)
    assert not np.array_equal(a.link, b.link)


def test_flow_id_keeps_the_path_across_batches() -> None:
    """A flow routed again in another batch (other position, other neighbours) keeps its path."""
    t = rail_optimized(64, rails=8, radix=16, tiers=3)
    rng = np.random.default_rng(5)
    src, dst = rng.integers(0, 512, 50), rng.integers(0, 512, 50)
    ids = np.arange(1000, 1050)
    a = route(t, src, dst, "ecmp", flow_id=ids, seed=3)
    b = route(t, src[::-1], dst[::-1], "ecmp", flow_id=ids[::-1], seed=3)
    for k in range(50):
        assert a.link[a.flow == k].tolist() == b.link[b.flow == 49 - k].tolist()
