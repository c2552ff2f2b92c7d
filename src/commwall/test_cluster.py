"""build_cluster against closed forms: wire efficiency, per-GPU bandwidths, tiers, domains, shapes."""

from __future__ import annotations

from typing import Any

import pytest

from commwall.catalog import load_catalog
from commwall.cluster import (
    HEADER_BYTES,
    HOST_BOUNCE_LATENCY,
    NET_TRANSPORT_EFFICIENCY,
    REFERENCE_SWITCH,
    Cluster,
    _tiers_needed,
    build_cluster,
    wire_efficiency,
)
from commwall.collectives import Hw, Op, Proto
from commwall.collectives.constants import NET_OVERHEAD
from commwall.collectives.direct import direct, p2p_limits
from commwall.scenario import ClusterSpec, ScenarioError

GB = 1e9


def cluster(**fields: Any) -> Cluster:
    return build_cluster(ClusterSpec.model_validate(fields))


# ---- wire and NIC bandwidth -----------------------------------------------------------------


def test_ib_wire_efficiency_is_mtu_over_mtu_plus_26_header_bytes() -> None:
    assert HEADER_BYTES["ib"] == 8 + 12 + 4 + 2  # LRH + BTH + ICRC + VCRC
    assert wire_efficiency("ib", 4096) == pytest.approx(4096 / (4096 + 26), rel=1e-15)
    assert wire_efficiency("ib", 2048) == pytest.approx(2048 / (2048 + 26), rel=1e-15)


def test_roce_headers_cost_more_than_ib_at_equal_mtu() -> None:
    for mtu in (1024, 2048, 4096):
        assert wire_efficiency("roce", mtu) == pytest.approx(mtu / (mtu + 82), rel=1e-15)
        assert wire_efficiency("roce", mtu) < wire_efficiency("ib", mtu)
    ib = cluster(preset="dgx-h100", nodes=4)
    roce = cluster(preset="dgx-h100-roce", nodes=4)
    assert roce.nic_rate_per_gpu == ib.nic_rate_per_gpu  # same ConnectX-7, 400G per GPU
    assert roce.net_bw_per_gpu < ib.net_bw_per_gpu
    assert roce.net_bw_per_gpu / ib.net_bw_per_gpu == pytest.approx(
        wire_efficiency("roce", 4096) / wire_efficiency("ib", 4096), rel=1e-12
    )


def test_ndr_per_gpu_bandwidth_matches_nvidia_guidance() -> None:
    c = cluster(preset="dgx-h100", nodes=16)
    expected = 400e9 / 8 * 4096 / (4096 + 26) * NET_TRANSPORT_EFFICIENCY
    assert c.nic_rate_per_gpu == pytest.approx(50 * GB)
    assert c.net_bw_per_gpu == pytest.approx(expected, rel=1e-12)
    assert c.net_bw_per_gpu / GB == pytest.approx(47.4, abs=0.05)
    assert 46 * GB <= c.net_bw_per_gpu <= 48 * GB  # NVIDIA: 46-48 GB/s per 400G NIC


def test_hdr_per_gpu_bandwidth_is_about_24_gbps() -> None:
    c = cluster(preset="dgx-a100", nodes=16)
    expected = 200e9 / 8 * 4096 / (4096 + 26) * NET_TRANSPORT_EFFICIENCY
    assert c.net_bw_per_gpu == pytest.approx(expected, rel=1e-12)
    assert c.net_bw_per_gpu / GB == pytest.approx(23.7, abs=0.05)
    assert c.net_bw_per_gpu == pytest.approx(24 * GB, rel=0.02)


def test_fewer_nics_than_gpus_share_the_line_rate() -> None:
    full = cluster(preset="dgx-a100-roce", nodes=4)
    two = cluster(preset="dgx-a100-roce", nodes=4, nics_per_node=2)
    assert two.nic_rate_per_gpu == pytest.approx(2 * 25 * GB / 8)
    assert two.net_bw_per_gpu == pytest.approx(full.net_bw_per_gpu / 4, rel=1e-12)


# ---- oversubscription -----------------------------------------------------------------------


def test_oversubscription_divides_bandwidth_only_across_leaves() -> None:
    flat = cluster(preset="dgx-h100", nodes=128)
    # a 64-port leaf at 3:1 has 48 ports down: 48 nodes of one rail share it
    one_leaf = cluster(preset="dgx-h100", nodes=48, topology={"oversubscription": 3.0})
    many = cluster(preset="dgx-h100", nodes=128, topology={"oversubscription": 3.0})
    assert one_leaf.nodes_per_leaf == 48 and many.nodes_per_leaf == 48
    assert not one_leaf.leaves_crossed
    assert one_leaf.net_bw_per_gpu == pytest.approx(flat.net_bw_per_gpu, rel=1e-15)
    assert many.leaves_crossed
    assert many.net_bw_per_gpu == pytest.approx(flat.net_bw_per_gpu / 3.0, rel=1e-12)


def test_fat_tree_leaf_holds_down_ports_over_nics_per_node() -> None:
    c = cluster(preset="dgx-h100", nodes=64, topology={"kind": "fat-tree"})
    assert c.nodes_per_leaf == 32 // 8  # 1:1 → 32 ports down, 8 NICs per node
    tapered = cluster(
        preset="dgx-h100", nodes=64, topology={"kind": "fat-tree", "oversubscription": 3.0}
    )
    assert tapered.nodes_per_leaf == 48 // 8
    assert tapered.net_bw_per_gpu == pytest.approx(c.net_bw_per_gpu / 3.0, rel=1e-12)


def test_one_tier_fabric_never_oversubscribes() -> None:
    fat = {"kind": "fat-tree"}
    c = cluster(preset="dgx-h100", nodes=8, topology={**fat, "oversubscription": 4.0})
    assert c.tiers == 1 and not c.leaves_crossed
    assert c.switch_hops == 1
    assert c.net_bw_per_gpu == pytest.approx(
        cluster(preset="dgx-h100", nodes=8, topology=fat).net_bw_per_gpu
    )
    # rail-optimized: its spines join the rails, but same-rail traffic stays on one leaf
    rail = cluster(preset="dgx-h100", nodes=8, topology={"oversubscription": 4.0})
    assert rail.tiers == 2 and not rail.leaves_crossed and rail.switch_hops == 1
    assert rail.net_bw_per_gpu == pytest.approx(c.net_bw_per_gpu)


# ---- GPUDirect RDMA -------------------------------------------------------------------------


def test_gpudirect_off_caps_at_half_pcie_x16_and_adds_latency() -> None:
    on = cluster(preset="dgx-h100", nodes=16)
    off = cluster(preset="dgx-h100", nodes=16, gpudirect_rdma=False)
    half_x16 = load_catalog().pcie("gen5").bandwidth(16) / 2  # 63 GB/s / 2
    assert half_x16 == pytest.approx(31.5 * GB)
    assert off.net_bw_per_gpu == pytest.approx(min(on.net_bw_per_gpu, half_x16))
    assert off.net_bw_per_gpu == pytest.approx(31.5 * GB)
    assert off.net_extra_latency == pytest.approx(on.net_extra_latency + HOST_BOUNCE_LATENCY)
    assert not off.world().gdr and on.world().gdr


def test_gpudirect_off_leaves_a_nic_slower_than_the_cap_alone() -> None:
    half_gen4 = load_catalog().pcie("gen4").bandwidth(16) / 2  # 15.75 GB/s
    hdr = cluster(preset="dgx-a100", nodes=16)  # 23.7 GB/s per GPU: capped
    assert cluster(preset="dgx-a100", nodes=16, gpudirect_rdma=False).net_bw_per_gpu == (
        pytest.approx(half_gen4)
    )
    assert hdr.net_bw_per_gpu > half_gen4
    slow = dict(preset="dgx-a100-roce", nodes=16, nics_per_node=2)  # 5.9 GB/s per GPU
    on, off = cluster(**slow), cluster(**slow, gpudirect_rdma=False)
    assert on.net_bw_per_gpu < half_gen4
    assert off.net_bw_per_gpu == pytest.approx(on.net_bw_per_gpu)


# ---- tiers from radix -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("endpoints", "tiers"),
    [(1, 1), (64, 1), (65, 2), (64 * 64 // 2, 2), (2049, 3), (64**3 // 4, 3), (64**3 // 4 + 1, 0)],
)
def test_tiers_needed_follow_r_r2_over_2_r3_over_4(endpoints: int, tiers: int) -> None:
    assert _tiers_needed(endpoints, 64) == tiers


@pytest.mark.parametrize(
    ("kind", "nodes", "tiers"),
    [("fat-tree", 8, 1), ("fat-tree", 9, 2), ("fat-tree", 256, 2), ("fat-tree", 257, 3),
     ("fat-tree", 8192, 3), ("rail-optimized", 1, 2), ("rail-optimized", 8, 2),
     ("rail-optimized", 256, 2), ("rail-optimized", 257, 3), ("rail-optimized", 8192, 3)],
)  # fmt: skip
def test_build_cluster_picks_the_fewest_tiers(kind: str, nodes: int, tiers: int) -> None:
    c = cluster(preset="dgx-h100", nodes=nodes, topology={"kind": kind})  # 8 NICs/node, radix 64
    assert c.tiers == tiers
    hops = 2 * tiers - 1 if c.leaves_crossed else 1
    assert c.switch_hops == hops


def test_too_many_endpoints_for_three_tiers_is_an_error() -> None:
    with pytest.raises(ScenarioError, match=r"65544 NIC ports exceed a 3-tier fat tree"):
        cluster(preset="dgx-h100", nodes=8193)


def test_radix_of_the_chosen_switch_counts() -> None:
    c = cluster(preset="dgx-a100", nodes=128)  # QM8700: 40 ports, R²/2 = 800 < 1024
    assert c.switch.ports == 40 and c.tiers == 3
    assert cluster(preset="dgx-a100", nodes=100).tiers == 2  # 800 endpoints


def test_switch_latency_beyond_the_reference_is_added_per_hop() -> None:
    cat = load_catalog()
    ib = cluster(preset="dgx-h100", nodes=128)
    assert ib.switch.name == REFERENCE_SWITCH and ib.net_extra_latency == 0.0
    roce = cluster(preset="dgx-h100-roce", nodes=128)
    delta = roce.switch.latency - cat.switch(REFERENCE_SWITCH).latency
    assert roce.switch_hops == 3
    assert roce.net_extra_latency == pytest.approx(3 * delta)


# ---- scale-up domains -----------------------------------------------------------------------


def test_nvl72_preset_gives_72_gpu_domains() -> None:
    c = cluster(preset="gb200-nvl72", nodes=36)
    assert c.gpus_per_node == 4 and c.scale_up_domain == 72
    assert c.n_gpus == 144 and c.n_domains == c.n_gpus // 72 == 2
    assert c.intra_hw is Hw.NVLINK
    assert c.intra_bw == pytest.approx(c.gpu.nvlink_links * c.nvlink.nccl_link_bandwidth)
    w = c.world()
    assert (w.n_domains, w.ranks_per_domain) == (2, 72)


def test_fewer_gpus_per_node_keep_the_domain_the_node_and_a_nic_per_gpu() -> None:
    """4-GPU nodes of a DGX-style preset are 4-GPU NVLink domains with 4 NICs (the preset's
    one NIC per GPU), not an 8-GPU domain spanning two nodes; given values still win."""
    c = cluster(preset="dgx-h100", nodes=2, gpus_per_node=4)
    assert (c.scale_up_domain, c.nics_per_node, c.n_domains) == (4, 4, 2)
    assert c.net_bw_per_gpu == pytest.approx(cluster(preset="dgx-h100").net_bw_per_gpu)
    c = cluster(preset="dgx-h100", nodes=2, gpus_per_node=4, scale_up_domain=8, nics_per_node=2)
    assert (c.scale_up_domain, c.nics_per_node, c.n_domains) == (8, 2, 1)
    assert cluster(preset="dgx-h100", nodes=2, gpus_per_node=1).nics_per_node == 1
    rack = cluster(preset="gb200-nvl72", nodes=36, gpus_per_node=4)  # the preset's own count
    assert rack.scale_up_domain == 72


def test_nvl72_nodes_must_fill_whole_racks() -> None:
    with pytest.raises(ScenarioError, match=r"use a multiple of 18"):
        cluster(preset="gb200-nvl72", nodes=20)


def test_h100_nvlink_bandwidth_is_18_nccl_links() -> None:
    c = cluster(preset="dgx-h100", nodes=1)
    assert c.gpu.nvlink_links == 18
    assert c.intra_bw == pytest.approx(18 * c.nvlink.nccl_link_bandwidth)
    assert c.intra_bw / GB == pytest.approx(370.8, abs=0.05)


def test_pcie_scale_up_uses_nccl_pcie_x16_value() -> None:
    cat = load_catalog()
    gen5 = cluster(preset="dgx-h100", nodes=2, scale_up="pcie")
    assert gen5.intra_hw is Hw.PCI
    assert gen5.intra_bw == pytest.approx(cat.pcie("gen5").nccl_x16_bandwidth)
    assert gen5.intra_bw == pytest.approx(48 * GB)
    gen4 = cluster(preset="dgx-a100", nodes=2, scale_up="pcie")
    assert gen4.intra_bw == pytest.approx(24 * GB)
    assert gen5.scale_up_domain == gen5.gpus_per_node == 8
    assert gen5.channels() == 2 and gen5.channels(2) == 2
    assert not gen5.world().nvls  # no NVSwitch, no NVLink SHARP


def test_pcie_domain_cannot_span_nodes() -> None:
    with pytest.raises(ScenarioError, match=r"a PCIe-only domain cannot span nodes"):
        cluster(preset="dgx-h100", nodes=2, scale_up="pcie", scale_up_domain=16)


# ---- communicators --------------------------------------------------------------------------


def test_world_spans_every_gpu_domain_major() -> None:
    c = cluster(preset="dgx-h100", nodes=16)
    w = c.world()
    assert (w.n_domains, w.ranks_per_domain, w.nranks) == (16, 8, 128)
    assert w.net_bw_per_rank == c.net_bw_per_gpu
    assert w.intra_bw == c.intra_bw and w.intra_hw is Hw.NVLINK
    assert w.node_net_bw == pytest.approx(8 * c.net_bw_per_gpu)
    assert w.net_overhead == NET_OVERHEAD["intel"]
    assert w.nvls  # NVSwitch3 + sm90
    assert not w.collnet


def test_world_selects_ranks_per_node() -> None:
    c = cluster(preset="dgx-h100", nodes=16)
    one = c.world(1)
    assert (one.n_domains, one.ranks_per_domain) == (16, 1)
    assert one.net_bw_per_rank == c.net_bw_per_gpu  # a rank keeps its own NIC share
    for bad in (0, 9):
        with pytest.raises(ScenarioError, match="allowed: 1 to 8"):
            c.world(bad)
    nvl72 = cluster(preset="gb200-nvl72", nodes=36)
    assert (nvl72.world().n_domains, nvl72.world().ranks_per_domain) == (2, 72)
    assert nvl72.world(2).ranks_per_domain == 36


def test_comm_fabric_carries_the_cluster_numbers() -> None:
    c = cluster(preset="dgx-a100", nodes=4, sharp=True, cpu="amd")
    f = c.comm_fabric(2, 4)
    assert (f.n_domains, f.ranks_per_domain, f.nranks) == (2, 4, 8)
    assert f.net_bw_per_rank == c.net_bw_per_gpu and f.intra_bw == c.intra_bw
    assert f.collnet  # SHARP on a Quantum switch
    assert not f.nvls  # A100's NVSwitch2 has no NVLink SHARP
    assert f.net_overhead == NET_OVERHEAD["amd"]
    # Across domains: 200G HDR behind PCIe Gen4 (24 GB/s) keeps two channels per NIC the
    # ranks drive (NCCL doubles no graph below 25 GB/s): 4 of 8 GPUs use 4 of 8 NICs.
    assert c.nic_path_bw == pytest.approx(24 * GB)
    assert f.channels == c.channels(2, 4) == 8
    assert c.channels(2, 8) == 16 and c.channels() == 24  # DGX A100 logs: 24 in one node
    assert cluster(preset="dgx-h100", nodes=1).channels() == 24
    assert cluster(preset="dgx-b200", nodes=1).channels() == 32


def test_channels_across_nodes_follow_nccls_graph_search_and_duplication() -> None:
    """search.cc v2.29.2: one graph channel per NIC at the path's speed, doubled by
    ncclTopoDupChannels unless a post-Ampere path below 50 GB/s has more than four; the
    communicator runs twice the graph (ncclTopoPostset)."""
    h100 = cluster(preset="dgx-h100", nodes=2)
    assert h100.nic_path_bw == pytest.approx(48 * GB)  # PCIe Gen5 x16 under a 400G port
    # 8 NICs: 8 graph channels at 48 GB/s stay 8 (16 in nccl#1538's two-node H100 log) ...
    assert h100.channels(2, 8) == 16
    # ... but at most 4 NICs double: 4 channels per NIC, and one H100 a node runs 4.
    assert [h100.channels(2, g) for g in (1, 2, 4)] == [4, 8, 16]
    one = h100.comm_fabric(2, 1)
    assert one.channels == one.p2p_channels == 4
    # ceil(48 / 14) = 4 p2p channels to the peer; a send starts on 2 (4 x 2 ranks > 4, enqueue.cc)
    # and doubles while a part exceeds a 128 KiB chunk
    assert p2p_limits(one, network=True) == (2, 4)
    # 800G behind PCIe Gen6 (96 GB/s) always doubles: 8 NICs x 2 x 2, capped at 32.
    b300 = cluster(preset="dgx-b300", nodes=2)
    assert b300.nic_path_bw == pytest.approx(96 * GB)
    assert b300.channels(2, 8) == 32 and b300.channels(2, 1) == 4
    # The path is the narrower of the port and the PCIe link before it.
    assert cluster(preset="dgx-h100", nodes=2, pcie="gen4").nic_path_bw == pytest.approx(24 * GB)


def test_one_h100_a_node_sends_at_the_nic_rate_not_two_channels_copy_rate() -> None:
    """MIT ORCD's DGX H100 pairs (one GPU a node, NCCL 2.29) reach 48.7 GB/s sendrecv busbw from
    1 GiB: with four p2p channels the send is bound by the NIC, not by two channels' copies."""
    c = cluster(preset="dgx-h100", nodes=2)
    f = c.comm_fabric(2, 1)
    s = 1 << 30
    busbw = s / direct(Op.SENDRECV, s, f, Proto.SIMPLE).time
    assert busbw == pytest.approx(c.net_bw_per_gpu, rel=0.01)
    assert 0.95 * 48.7 * GB < busbw < 48.7 * GB


def test_summary_reports_the_derived_numbers() -> None:
    c = cluster(preset="dgx-h100", nodes=128)
    s = c.summary()
    assert s["gpus"] == 1024 and s["nodes"] == 128 and s["tiers"] == 2
    assert s["net_bw_per_gpu"] == c.net_bw_per_gpu
    assert s["scale_up_bw_per_gpu"] == c.intra_bw
    assert s["nic"] == "8 x connectx-7"


def test_switch_radix_splits_faster_ports_for_slower_nics() -> None:
    from commwall.cluster import switch_radix

    cat = load_catalog()
    assert switch_radix(cat.switch("quantum-2-qm9700"), 50e9) == 64  # 64 × 400G NDR
    assert switch_radix(cat.switch("spectrum-4-sn5600"), 50e9) == 128  # 64 × 800G as 128 × 400G


def test_scale_out_topology_is_the_superpod_for_the_default() -> None:
    # 128 DGX H100, rail-optimized Quantum-2: 4 SUs → 32 leaves, 16 spines, 1,024 leaf→spine
    # cables (DGX SuperPOD H100 RA Table 4, topology.md §2.1).
    counts = cluster(preset="dgx-h100", nodes=128).scale_out_topology().counts()
    assert counts.switches == {1: 32, 2: 16}
    assert counts.cables == {1: 1024, 2: 1024}
    ft = cluster(preset="dgx-h100", nodes=64, topology={"kind": "fat-tree"}).scale_out_topology()
    assert ft.counts().endpoints == 512
