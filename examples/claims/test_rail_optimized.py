"""rail_optimized: bytes per link class against ring / all-to-all closed forms, hop counts against
leaf boundaries, and the contention-free runs against the analytic engine."""

import pytest
import rail_optimized as claim

from commwall.catalog import load_catalog
from commwall.cluster import wire_efficiency
from commwall.collectives.ops import Op, busbw_factor
from commwall.engines.analytic import AnalyticEngine

CAT = load_catalog()
PRESET = CAT.preset(claim.PRESET)
NIC = CAT.nic(PRESET.nic)
SWITCH = CAT.switch(PRESET.switch)
N = claim.AR_SIZE  # the all-reduce's bytes
N_A2A = claim.SIZE  # the all-to-all's, per GPU
NODES = claim.NODES
G = PRESET.gpus_per_node  # GPUs (and NICs, one per GPU) per node
P = NODES * G  # ranks of the all-reduce
SU = 32  # DGX SuperPOD: 32 nodes per scalable unit, one leaf per rail per SU
FAT_LEAF = SWITCH.ports // 2 // G  # nodes whose 8 NICs fill a leaf's 32 down ports
LEAF_NODES = {"rail-optimized": SU, "fat-tree": FAT_LEAF}


@pytest.fixture(scope="module")
def n() -> claim.Numbers:
    return claim.numbers()


def boundaries(kind: str) -> int:
    """Ring hops (node i -> i + 1, around the ring) whose two nodes sit under different leaves."""
    return NODES // LEAF_NODES[kind]


def test_cluster_shape(n: claim.Numbers) -> None:
    assert n.gpus == P == 512 and n.rails == PRESET.nics_per_node == G
    assert n.nodes_per_leaf == LEAF_NODES == {"rail-optimized": 32, "fat-tree": 4}


@pytest.mark.parametrize("kind", claim.KINDS)
def test_ring_hops_leave_the_leaf_only_at_leaf_boundaries(n: claim.Numbers, kind: str) -> None:
    b = boundaries(kind)  # 2 SU boundaries; 16 fat-tree leaf boundaries
    assert n.leaf_crossings[kind] == b
    # 1 switch on the leaf, 3 (leaf, spine, leaf) at a boundary
    assert n.switches_per_hop[kind] == pytest.approx(1 + 2 * b / NODES)


@pytest.mark.parametrize("kind", claim.KINDS)
def test_ring_bytes_per_link_class(n: claim.Numbers, kind: str) -> None:
    """Every channel moves 2(p-1)/p of its share over each of its 64 node hops; summed over the
    channels that is 2(p-1)/p x N per hop position, counted once up and once down."""
    per_hop = 2 * (P - 1) / P * N
    by = n.ar(kind, "ring").bytes_by_class
    assert by["access (NIC-leaf)"] == pytest.approx(2 * NODES * per_hop)
    assert by["leaf-spine"] == pytest.approx(2 * boundaries(kind) * per_hop)
    assert by["spine-core"] == 0


@pytest.mark.parametrize("kind", claim.KINDS)
def test_hierarchical_bytes_per_link_class(n: claim.Numbers, kind: str) -> None:
    """8 rail rings of 64 nodes, N/8 each: 2(n-1)/n x N per node hop position over the rails."""
    per_hop = 2 * (NODES - 1) / NODES * N
    by = n.ar(kind, "hierarchical").bytes_by_class
    assert by["access (NIC-leaf)"] == pytest.approx(2 * NODES * per_hop)
    assert by["leaf-spine"] == pytest.approx(2 * boundaries(kind) * per_hop)


def test_spine_cut_is_the_ratio_of_leaf_boundaries(n: claim.Numbers) -> None:
    assert n.spine_cut == pytest.approx(boundaries("fat-tree") / boundaries("rail-optimized"))
    assert n.spine_cut == pytest.approx(8)


def test_ring_channels_and_why_the_rail_cannot_collide(n: claim.Numbers) -> None:
    cl = claim.cluster("rail-optimized")
    cost = AnalyticEngine("all").cost(claim.world_task(cl, Op.ALL_REDUCE, "ring"), cl)
    # the channels together move 2(p-1)/p x N in the analytic bandwidth time
    assert n.channels * n.channel_rate * cost.bw_time == pytest.approx(2 * (P - 1) / P * N)
    assert n.uplink == pytest.approx(NIC.rate * wire_efficiency(cl.fabric, cl.mtu))
    per_rail = n.channels // G
    assert n.channels == 2 * G  # two channels per NIC (NCCL)
    assert per_rail * n.channel_rate <= n.uplink  # an SU boundary cannot overfill any uplink
    assert 3 * n.channel_rate > n.uplink  # three fat-tree channels on one uplink do


def contention_free_busbw(kind: str, algo: str) -> float:
    cl = claim.cluster(kind)
    cost = AnalyticEngine("all").cost(claim.world_task(cl, Op.ALL_REDUCE, algo), cl)
    return busbw_factor(Op.ALL_REDUCE, P) * N / cost.time


@pytest.mark.parametrize("algo", claim.ALGOS)
def test_rail_optimized_never_slowed(n: claim.Numbers, algo: str) -> None:
    r = n.ar("rail-optimized", algo)
    free = contention_free_busbw("rail-optimized", algo)
    assert all(b == pytest.approx(free, rel=1e-6) for b in r.busbw)
    assert r.spray_busbw == pytest.approx(free, rel=1e-6)
    assert r.slowed_seeds == 0


def test_fat_tree_ring_loses_to_ecmp_collisions_only(n: claim.Numbers) -> None:
    r = n.ar("fat-tree", "ring")
    free = contention_free_busbw("fat-tree", "ring")
    assert r.spray_busbw == pytest.approx(free, rel=1e-6)  # spraying: nothing collides
    assert r.slowed_seeds >= len(claim.SEEDS) // 2
    assert max(r.busbw) <= free * (1 + 1e-9)
    assert r.busbw_mean < n.ar("rail-optimized", "ring").busbw_mean
    # the hierarchical rail rings (two channels per NIC) collide on the fat tree's uplinks too,
    # never on the rail layout (test_rail_optimized_never_slowed)
    h = n.ar("fat-tree", "hierarchical")
    assert h.busbw_mean <= contention_free_busbw("fat-tree", "hierarchical") * (1 + 1e-9)
    assert h.busbw_mean < n.ar("rail-optimized", "hierarchical").busbw_mean


class TestExpertParallelAllToAll:
    """EP_COPIES groups of EP_NODES nodes; every rank sends N/q to each of the q ranks of its
    group, so a group puts (EP_NODES - 1) x G x N on the network."""

    groups = claim.EP_COPIES
    nodes = claim.EP_NODES
    q = nodes * G

    def net(self) -> float:
        return self.groups * (self.nodes - 1) * G * N_A2A  # one direction

    def test_groups_fit_in_a_scalable_unit(self) -> None:
        assert SU % self.nodes == 0 and self.groups * self.nodes <= NODES

    @pytest.mark.parametrize("kind", claim.KINDS)
    @pytest.mark.parametrize("routing", claim.A2A_ROUTINGS)
    def test_access_bytes(self, n: claim.Numbers, kind: str, routing: str) -> None:
        assert n.a2a(kind, routing).bytes_by_class["access (NIC-leaf)"] == pytest.approx(
            2 * self.net()
        )

    def test_rail_without_pxn_crosses_for_every_other_rail(self, n: claim.Numbers) -> None:
        # GPU i's own NIC to GPU j's NIC: only j == i (1 of G rails) stays on the rail leaf
        r = n.a2a("rail-optimized", "ecmp")
        assert r.spine_share == pytest.approx((G - 1) / G)
        assert r.bytes_by_class["leaf-spine"] == pytest.approx(2 * self.net() * (G - 1) / G)
        assert r.slowdown > claim.SLOWED

    def test_rail_with_pxn_stays_on_the_rail(self, n: claim.Numbers) -> None:
        r = n.a2a("rail-optimized", "ecmp+pxn")
        assert r.bytes_by_class["leaf-spine"] == 0
        assert r.slowdown <= claim.SLOWED
        # NVLink: the G-1 node-local peers, plus one NVLink hop at the sender for every remote
        # peer on another rail, each crossing a GPU's out and in port
        local = 2 * self.groups * (G - 1) * N_A2A
        pxn = 2 * self.groups * (self.nodes - 1) * (G - 1) * N_A2A
        assert n.a2a("rail-optimized", "ecmp").bytes_by_class["scale-up"] == pytest.approx(local)
        assert r.bytes_by_class["scale-up"] == pytest.approx(local + pxn)

    @pytest.mark.parametrize("routing", claim.A2A_ROUTINGS)
    def test_fat_tree_crosses_for_every_node_off_the_leaf(
        self, n: claim.Numbers, routing: str
    ) -> None:
        share = (self.nodes - FAT_LEAF) / (self.nodes - 1)  # 12 of 15 peer nodes
        assert n.a2a("fat-tree", routing).spine_share == pytest.approx(share)


def test_verdict(n: claim.Numbers) -> None:
    assert n.spine_cut >= claim.SPINE_CUT_AT_LEAST
    assert n.holds


def test_main_prints_the_verdict(capsys: pytest.CaptureFixture[str]) -> None:
    claim.main()
    out = capsys.readouterr().out
    assert "verdict:  HOLDS" in out
    assert "87.5%" in out and "SU boundaries" in out
