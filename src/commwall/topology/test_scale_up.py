"""Scale-up builders: NVLink link counts and bandwidth vs the catalog, NVSwitch ports, PCIe
trees, NCCL path types, bad input."""

from __future__ import annotations

import doctest
import itertools

import numpy as np
import pytest

from commwall.catalog import load_catalog
from commwall.topology import (
    LinkKind,
    NodeKind,
    NVSwitchStructure,
    PathType,
    Topology,
    TopologyError,
    bisection_bandwidth_maxflow,
    diameter,
    nccl_path_type,
    nvl72,
    nvlink_domain,
    nvlink_node,
    path_diversity,
    pcie_node,
    pcie_tree,
    scale_up,
    scale_up_facts,
)

CAT = load_catalog()


def _links_per_chip(t: Topology, gpu: int) -> list[int]:
    """How many cables join ``gpu`` to each NVSwitch chip, in chip order."""
    chips = np.flatnonzero(t.node_kind == NodeKind.NVSWITCH.code)
    dst = t.link_dst[t.link_src == gpu]
    return [int(np.count_nonzero(dst == c)) for c in chips]


@pytest.mark.parametrize(
    ("gpu", "chips", "split", "chip_part"),
    [
        ("h100-sxm", 4, [5, 5, 4, 4], "nvswitch3"),
        ("h200", 4, [5, 5, 4, 4], "nvswitch3"),
        ("a100-sxm", 6, [2] * 6, "nvswitch2"),
        ("b200", 2, [9, 9], "nvlink-switch-5"),
    ],
)
def test_hgx_nodes_split_links_as_the_real_boards(
    gpu: str, chips: int, split: list[int], chip_part: str
) -> None:
    """hardware.md §2: H100 5+5+4+4 over 4 NVSwitch3, A100 2×6 over NVSwitch2, B200 9+9."""
    t = nvlink_node(gpu)
    part = CAT.gpu(gpu)
    c = t.counts()
    assert c.endpoints == 8 and c.switches == {1: chips}
    assert t.params["nvswitch"] == chip_part
    assert c.by_kind == {"scale_up": 8 * part.nvlink_links}
    for g in range(8):
        assert _links_per_chip(t, g) == split
    assert np.all(t.link_capacity == CAT.nvlink(part.nvlink).per_link_bandwidth)
    assert np.all(t.link_kind == LinkKind.SCALE_UP)
    ports = CAT.nvswitch(chip_part).ports
    used = [8 * n for n in split]
    assert t.params["ports_used_per_chip"] == tuple(used)
    assert t.params["ports_free_per_chip"] == tuple(ports - u for u in used)
    assert t.params["switch_latency"] == CAT.nvlink(part.nvlink).latency


def test_h100_node_bandwidth() -> None:
    """18 links × 25 GB/s = 450 GB/s per direction per GPU; 7.2 TB/s for 8 GPUs (hardware.md §2)."""
    t = nvlink_node("h100-sxm")
    f = scale_up_facts(t)
    assert f.per_gpu_bandwidth == pytest.approx(450e9)
    assert f.per_gpu_bandwidth == pytest.approx(CAT.nvlink_bandwidth(CAT.gpu("h100-sxm")))
    assert f.aggregate_bandwidth == pytest.approx(7.2e12)
    assert f.nvlink_links == 144 and f.switch_chips == 4
    assert f.bisection_bandwidth == pytest.approx(4 * 450e9)
    assert (f.gpu_hops, f.switch_hops) == (2, 1)
    assert t.params["nccl_link_bandwidth"] * 18 == pytest.approx(370.8e9)  # nccl-model.md §1.1


def test_nvl72() -> None:
    """72 × 18 = 1,296 links, one from every GPU to every chip; 1.8 TB/s per GPU bidirectional,
    72 × 1.8 = 129.6 ≈ 130 TB/s (hardware.md §2)."""
    t = nvl72()
    c = t.counts()
    assert c.endpoints == 72 and c.switches == {1: 18} and t.n_cables == 1296
    for g in (0, 35, 71):
        assert _links_per_chip(t, g) == [1] * 18
    f = scale_up_facts(t)
    assert f.nvlink_links == 1296
    assert 2 * f.per_gpu_bandwidth == pytest.approx(1.8e12)
    assert f.aggregate_bandwidth == pytest.approx(129.6e12)
    assert t.params["ports_used_per_chip"] == (72,) * 18  # every port of every chip
    assert t.params["ports_free_per_chip"] == (0,) * 18
    trays = t.node_group[:72]
    assert trays.tolist() == [g // 4 for g in range(72)]
    assert set(t.node_group[72:].tolist()) == set(range(18, 27))  # 9 switch trays


@pytest.mark.parametrize(
    "build",
    [
        lambda: nvlink_node("h100-sxm"),
        lambda: nvlink_node("a100-sxm"),
        lambda: nvl72(),
        lambda: nvlink_domain(6, 3, 7, nvlink="nvlink4", nvswitch="nvswitch3"),
        lambda: nvl72(9),
    ],
)
def test_closed_forms_match_the_graph(build: object) -> None:
    """Bisection closed form = max-flow; 2 hops; routes are walks GPU -> chip -> GPU, and their
    number is the BFS shortest-path count (parallel links distinct)."""
    t = build()  # type: ignore[operator]
    f = scale_up_facts(t)
    assert f.bisection_bandwidth == pytest.approx(bisection_bandwidth_maxflow(t), rel=1e-9)
    assert f.gpu_hops == diameter(t) == 2
    s = t.path_fn
    assert isinstance(s, NVSwitchStructure)
    n = min(f.gpus, 6)
    for src, dst in itertools.permutations(range(n), 2):
        routes = {tuple(t.path_links(src, dst, i).tolist()) for i in range(t.path_count(src, dst))}
        assert len(routes) == t.path_count(src, dst)
        for r in routes:
            assert t.link_src[r[0]] == src and t.link_dst[r[1]] == dst
            assert t.link_dst[r[0]] == t.link_src[r[1]]
    if f.gpus <= 16:
        counts = path_diversity(t)
        assert counts["min"] == counts["max"] == t.path_count(0, 1)


def test_nvlink_domain_generic() -> None:
    t = nvlink_domain(16, 4, 8, nvlink="nvlink4", nvswitch="nvswitch3")
    assert t.params["links_per_chip"] == (2, 2, 2, 2)
    assert t.n_cables == 128
    uneven = nvlink_domain(4, 4, 6)
    assert uneven.params["links_per_chip"] == (2, 2, 1, 1)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: nvlink_node(nvswitches=1), r"nvswitches=1: .*64 ports; use at least 3 chips"),
        (lambda: nvlink_node(gpus=16, nvswitches=2), r"at least 5 chips, or at most 7 GPUs"),
        (lambda: nvlink_node(nvswitches=20), r"nvswitches=20 > 18 links per GPU"),
        (lambda: nvlink_node("h100"), r"gpu='h100': .*did you mean 'h100-sxm'"),
        (lambda: nvlink_node("gb200"), r"gpu='gb200': .*use nvl72\(\)"),
        (lambda: nvlink_node(gpus=0), r"gpus: 0 is not allowed; allowed: a whole number >= 1"),
        (lambda: nvlink_node(links=0), r"links: 0 is not allowed; allowed: a whole number >= 1"),
        (lambda: nvl72(144), r"at most 72 GPUs .*second NVSwitch tier"),
        (lambda: nvl72(switch_chips=9), r"switch_chips=9: .*use at least 18 chips"),
        (lambda: nvl72(switch_chips=19), r"switch_chips=19: .*at most 18 chips"),
        (lambda: nvlink_domain(8, 0, 4), r"chips: 0 is not allowed; allowed: a whole number >= 1"),
        (
            lambda: nvlink_domain(8, 2, 4, nvlink="nvlink4"),
            r"nvswitch='nvlink-switch-5' has nvlink5 ports but nvlink='nvlink4'",
        ),
        (lambda: nvlink_domain(8, 2, 4, nvlink="nvlink9"), r"nvlink='nvlink9': unknown nvlink"),
    ],
)
def test_bad_nvlink_parameters(call: object, message: str) -> None:
    with pytest.raises(TopologyError, match=message):
        call()  # type: ignore[operator]


# ---- PCIe ----------------------------------------------------------------------------------


def test_dgx_h100_pcie_tree_pairs_gpu_and_nic() -> None:
    """DGX H100: 8 ConnectX-7, one per GPU; GPU i and NIC i under the same switch; 4 pairs per
    CPU socket (NUMA node); Gen5 x16 links (hardware.md §1, §3, §4)."""
    t = pcie_tree("dgx-h100")
    kinds = [NodeKind.from_code(int(k)) for k in t.node_kind]
    gpus = [i for i, k in enumerate(kinds) if k is NodeKind.GPU]
    nics = [i for i, k in enumerate(kinds) if k is NodeKind.NIC]
    assert len(gpus) == len(nics) == 8
    assert kinds.count(NodeKind.CPU) == 2 and kinds.count(NodeKind.PCIE_SWITCH) == 8
    for i, (g, n) in enumerate(zip(gpus, nics, strict=True)):
        sw = t.params["gpu_switch"][i]
        assert t.params["nic_switch"][i] == sw
        assert kinds[sw] is NodeKind.PCIE_SWITCH
        assert sw in t.link_dst[t.link_src == g] and sw in t.link_dst[t.link_src == n]
        assert t.node_group[g] == t.node_group[n] == t.node_group[sw] == i // 4  # NUMA
    gen5 = CAT.pcie("gen5")
    assert t.params["gpu_pcie_bandwidth"] == gen5.bandwidth(16) == 63e9
    assert t.params["nic_pcie_bandwidth"] == CAT.nic_host_bandwidth(CAT.nic("connectx-7"), "gen5")
    assert t.params["nccl_x16_bandwidth"] == 48e9
    assert t.counts().endpoints == 8  # GPUs are the endpoints


def test_pcie_tree_variants() -> None:
    a100 = pcie_tree("dgx-a100", pairs_per_switch=2)
    assert a100.params["pcie_switches"] == 4 and a100.params["gpu_pcie_bandwidth"] == 31.5e9
    assert a100.params["cpu_link_bandwidth"] == 16e9  # NCCL AMD_BW
    b200 = pcie_tree("dgx-b200")
    assert b200.params["gpu_pcie_bandwidth"] == 63e9  # Gen6 GPU in a Gen5 tree trains at Gen5


def test_nccl_path_types_dgx_h100() -> None:
    """With the NVSwitch board: GPU↔GPU NVL, GPU↔own NIC PIX, NIC on the same socket PHB,
    other socket SYS; without it GPU↔GPU falls back to PCIe (nccl-model.md §2)."""
    t = pcie_tree("dgx-h100", nvlink=True)
    nic = {i: 8 + i for i in range(8)}
    assert nccl_path_type(t, 0, 0) is PathType.LOC
    assert nccl_path_type(t, 0, 7) is PathType.NVL
    assert nccl_path_type(t, 0, nic[0]) is PathType.PIX
    assert nccl_path_type(t, 5, nic[5]) is PathType.PIX
    assert nccl_path_type(t, 0, nic[1]) is PathType.PHB
    assert nccl_path_type(t, 0, nic[4]) is PathType.SYS
    assert nccl_path_type(t, nic[0], nic[7]) is PathType.SYS
    assert t.params["links_per_chip"] == (5, 5, 4, 4)
    assert scale_up_facts(t).nvlink_links == 144
    plain = pcie_tree("dgx-h100")
    assert [nccl_path_type(plain, 0, g).name for g in range(8)] == ["LOC"] + ["PHB"] * 3 + [
        "SYS"
    ] * 4


def test_nccl_path_types_pcie_node() -> None:
    """Two GPUs under one switch PIX, under sibling switches of one upper switch PXB."""
    t = pcie_node(8, gpus_per_switch=2, leaf_switches_per_upper=2, nics_per_switch=1)
    assert [nccl_path_type(t, 0, g).name for g in range(8)] == (
        ["LOC", "PIX", "PXB", "PXB"] + ["SYS"] * 4
    )
    assert nccl_path_type(t, 0, 8).name == "PIX"  # NIC under GPU 0's switch
    flat = pcie_node(4, gpus_per_switch=1, cpus=1)
    assert nccl_path_type(flat, 0, 3) is PathType.PHB
    f = scale_up_facts(flat)
    assert f.nvlink_links == 0 and f.per_gpu_bandwidth == CAT.pcie("gen4").bandwidth(16)
    assert (f.gpu_hops, f.switch_hops) == (4, 3)  # GPU, switch, CPU, switch, GPU


def test_nvb_and_disconnected() -> None:
    """NVLink relayed through a third GPU is NVB; no route at all is DIS."""
    t = Topology.from_cables(
        "chain",
        node_kind=[NodeKind.GPU] * 4,
        node_tier=0,
        cable_a=[0, 1],
        cable_b=[1, 2],
        capacity=25e9,
        kind=LinkKind.SCALE_UP,
    )
    assert nccl_path_type(t, 0, 1) is PathType.NVL
    assert nccl_path_type(t, 0, 2) is PathType.NVB
    assert nccl_path_type(t, 0, 3) is PathType.DIS
    with pytest.raises(TopologyError, match="b=9: not a node"):
        nccl_path_type(t, 0, 9)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: pcie_node(7), r"gpus=7 is not a multiple of gpus_per_switch=2"),
        (lambda: pcie_node(8, cpus=3), r"cpus=3: 4 PCIe switches .* do not split evenly"),
        (lambda: pcie_node(8, leaf_switches_per_upper=3), r"leaf_switches_per_upper=3"),
        (lambda: pcie_node(8, pcie="gen9"), r"pcie='gen9': unknown pcie"),
        (lambda: pcie_node(8, gpu_lanes=12), r"gpu_lanes=12: PCIe link width must be one of"),
        (lambda: pcie_node(8, cpu_link=-1.0), r"cpu_link=-1.0: .*negative"),
        (lambda: pcie_tree("gb200-nvl72"), r"preset='gb200-nvl72': .*C2C"),
        (lambda: pcie_tree("dgx-h101"), r"preset='dgx-h101': .*did you mean"),
        (lambda: pcie_tree(pairs_per_switch=3), r"pairs_per_switch=3 does not divide 8"),
    ],
)
def test_bad_pcie_parameters(call: object, message: str) -> None:
    with pytest.raises(TopologyError, match=message):
        call()  # type: ignore[operator]


def test_doctests() -> None:
    assert doctest.testmod(scale_up).failed == 0
