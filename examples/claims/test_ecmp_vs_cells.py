"""ecmp_vs_cells: link occupancy against balls into bins, throughput against an independent
progressive-filling max-min computation, completion times against line-rate closed forms."""

from math import comb

import ecmp_vs_cells as claim
import numpy as np
import pytest

from commwall.catalog import load_catalog
from commwall.engines.flow.traffic import pattern_flows, run_traffic
from commwall.routing import CELL_EFFICIENCY, CELL_REASSEMBLY_LATENCY, RoutingPolicy, route

SW = load_catalog().switch(claim.SWITCH)
R = SW.port_rate  # bytes/s per cable
HOSTS = SW.ports**2 // 2  # non-blocking 2-tier leaf-spine: R^2 / 2 hosts
PER_LEAF = SW.ports // 2  # hosts per leaf = uplinks per leaf


@pytest.fixture(scope="module")
def n() -> claim.Numbers:
    return claim.numbers()


@pytest.fixture(scope="module")
def perms() -> list[tuple[np.ndarray, np.ndarray]]:
    return [pattern_flows("permutation", HOSTS, seed=s) for s in claim.SEEDS]


def off_leaf_per_leaf(src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Flows leaving each leaf and entering each leaf."""
    cross = src // PER_LEAF != dst // PER_LEAF
    leaves = HOSTS // PER_LEAF
    out = np.bincount(src[cross] // PER_LEAF, minlength=leaves)
    into = np.bincount(dst[cross] // PER_LEAF, minlength=leaves)
    return out, into


def binom_share(n_bins: int, m: np.ndarray, k: int) -> np.ndarray:
    """P(a given bin holds exactly k of m uniform balls)."""
    p = 1 / n_bins
    return np.array([comb(int(x), k) * p**k * (1 - p) ** (int(x) - k) for x in m])


def progressive_filling(
    flow: np.ndarray, link: np.ndarray, weight: np.ndarray, cap: np.ndarray, n_flows: int
) -> np.ndarray:
    """Max-min fair rates by raising every unfrozen flow's rate together until a link fills
    (Bertsekas & Gallager, Data Networks, 6.5.2); written here, independent of commwall's."""
    rate = np.zeros(n_flows)
    frozen = np.zeros(n_flows, dtype=bool)
    used = np.zeros(len(cap))
    while not frozen.all():
        live = ~frozen[flow]
        demand = np.bincount(link[live], weights=weight[live], minlength=len(cap))
        busy = demand > 0
        step = np.min((cap[busy] - used[busy]) / demand[busy])
        rate[~frozen] += step
        used += step * demand
        full = busy & (used >= cap * (1 - 1e-12))
        frozen[np.unique(flow[full[link]])] = True
    return rate


def test_fabric_is_the_non_blocking_radix_64_leaf_spine(n: claim.Numbers) -> None:
    assert n.hosts == HOSTS == 2048
    assert n.leaves == SW.ports == 64
    assert n.uplinks_per_leaf == PER_LEAF == 32
    assert n.link_rate == R == 50e9  # 400 Gb/s


def test_balls_into_bins_closed_forms(n: claim.Numbers) -> None:
    m = np.array([32])
    p0, p1 = binom_share(32, m, 0)[0], binom_share(32, m, 1)[0]
    assert n.closed_empty == pytest.approx(p0) == pytest.approx((31 / 32) ** 32)
    assert n.closed_empty == pytest.approx(0.362, abs=5e-4)
    assert n.closed_two_or_more == pytest.approx(1 - p0 - p1)
    assert n.closed_two_or_more == pytest.approx(0.264, abs=5e-4)


def test_ecmp_uplinks_fill_like_balls_into_bins(n: claim.Numbers, perms) -> None:
    """Expected shares given each leaf's actual off-leaf flow count, against the measured ones
    (5 seeds x 2,048 uplinks: 0.03 is > 5 standard deviations)."""
    empty, two = [], []
    for src, dst in perms:
        out, _ = off_leaf_per_leaf(src, dst)
        p0, p1 = binom_share(PER_LEAF, out, 0), binom_share(PER_LEAF, out, 1)
        empty.append(p0.mean())
        two.append((1 - p0 - p1).mean())
    e = n.ecmp_up
    assert e.empty == pytest.approx(np.mean(empty), abs=0.03)
    assert e.two_or_more == pytest.approx(np.mean(two), abs=0.03)
    assert e.empty + e.one + e.two_or_more == pytest.approx(1)
    assert 4 <= e.mean_max <= 8 and e.worst >= 5  # max load of 32 balls in 32 bins, 64 leaves
    # downlinks: each spine's choice for a destination leaf is just as random
    assert n.ecmp_down.empty == pytest.approx(np.mean(empty), abs=0.03)
    assert n.cross_leaf_flows == pytest.approx(
        np.mean([off_leaf_per_leaf(s, d)[0].mean() for s, d in perms])
    )


def test_adaptive_balances_uplinks_but_not_downlinks(n: claim.Numbers) -> None:
    # at most 32 off-leaf flows per leaf on 32 uplinks: least-loaded placement never doubles
    assert n.adaptive_up.worst == 1
    assert n.adaptive_up.two_or_more == 0
    assert n.adaptive_down.two_or_more == pytest.approx(n.closed_two_or_more, abs=0.03)


@pytest.mark.parametrize("name", ["ecmp", "adaptive"])
def test_pinned_routing_throughput_is_max_min_of_its_routes(n: claim.Numbers, perms, name) -> None:
    t = claim.fabric()
    ratios = []
    for seed, (src, dst) in zip(claim.SEEDS, perms, strict=True):
        r = route(t, src, dst, RoutingPolicy(name), seed=seed)
        assert r.n_virtual == 0 and np.all(r.weight == 1)  # one pinned path per flow
        rates = progressive_filling(r.flow, r.link, r.weight, t.link_capacity, len(src))
        ratios.append(rates.sum() / (HOSTS * R))  # a permutation: the hosts allow R per flow
    assert n.row(name).throughput_ratio == pytest.approx(np.mean(ratios), rel=1e-6)
    assert n.row(name).throughput_ratio_min == pytest.approx(np.min(ratios), rel=1e-6)


def test_spray_and_cells_throughput(n: claim.Numbers, perms) -> None:
    # spraying: every leaf's <= 32 off-leaf flows share 32 uplinks' worth, so nothing but the
    # hosts' own links binds
    assert n.row("spray").throughput_ratio == pytest.approx(1.0)
    # cells: off-leaf flows share 32 x R x 256/273 out of their leaf and into the destination
    # leaf; on-leaf flows only their host links (the cell tax is on switch links only)
    ratios = []
    leaves = HOSTS // PER_LEAF
    group = PER_LEAF * R * CELL_EFFICIENCY
    for src, dst in perms:
        k = len(src)
        cross = np.flatnonzero(src // PER_LEAF != dst // PER_LEAF)
        # link ids: host uplinks, host downlinks, leaf uplink groups, leaf downlink groups
        host_up, host_down = src, HOSTS + dst
        group_up = 2 * HOSTS + src[cross] // PER_LEAF
        group_down = 2 * HOSTS + leaves + dst[cross] // PER_LEAF
        flow = np.concatenate([np.arange(k), np.arange(k), cross, cross])
        link = np.concatenate([host_up, host_down, group_up, group_down])
        cap = np.concatenate([np.full(2 * HOSTS, R), np.full(2 * leaves, group)])
        rates = progressive_filling(flow, link, np.ones(len(flow)), cap, k)
        ratios.append(rates.sum() / (HOSTS * R))
    assert n.row("cells").throughput_ratio == pytest.approx(np.mean(ratios), rel=1e-6)
    assert CELL_EFFICIENCY < n.row("cells").throughput_ratio < 1


def test_cells_pay_exactly_the_header_tax_when_every_flow_leaves_its_leaf() -> None:
    t = claim.fabric()
    src = np.arange(HOSTS)
    dst = (src + PER_LEAF) % HOSTS  # every host to the same slot of the next leaf
    assert run_traffic(t, src, dst, claim.FLOW_BYTES, "cells").throughput_ratio == pytest.approx(
        CELL_EFFICIENCY
    )
    assert run_traffic(t, src, dst, claim.FLOW_BYTES, "spray").throughput_ratio == pytest.approx(1)


def test_completion_times(n: claim.Numbers) -> None:
    alone = claim.FLOW_BYTES / R
    assert n.ideal_fct == pytest.approx(alone) == pytest.approx(40e-6)
    # spray: every flow at line rate, plus under a microsecond of switches and cables
    assert alone < n.row("spray").p99 < alone + 1e-6
    # cells: the most loaded leaves run at 256/273 of line rate, plus reassembly
    cells = claim.FLOW_BYTES / (R * CELL_EFFICIENCY) + CELL_REASSEMBLY_LATENCY
    assert cells < n.row("cells").p99 < cells + 1e-6
    # ECMP: the p99 flow shares a cable with 3 or more others
    assert n.row("ecmp").p99 >= 4 * alone
    assert n.row("adaptive").p99 <= n.row("ecmp").p99 * (1 + 1e-9)


def test_verdict(n: claim.Numbers) -> None:
    assert n.ecmp_up.empty >= claim.EMPTY_AT_LEAST
    assert n.ecmp_up.two_or_more >= claim.DOUBLED_AT_LEAST
    assert n.row("ecmp").throughput_ratio <= claim.ECMP_AT_MOST
    assert min(n.row("spray").throughput_ratio, n.row("cells").throughput_ratio) >= 0.9
    assert n.holds


def test_main_prints_the_verdict(capsys: pytest.CaptureFixture[str]) -> None:
    claim.main()
    out = capsys.readouterr().out
    assert "verdict:  HOLDS" in out
    assert "balls into bins" in out and "cell fabric" in out
