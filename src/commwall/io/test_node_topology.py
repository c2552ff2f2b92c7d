"""Node topology import: DGX H100 / A100 dumps (NCCL XML and nvidia-smi) give the path types
and bandwidths NCCL computes, both readers agree where they overlap, and no input makes a
reader raise anything but NodeTopologyError (hypothesis)."""

from __future__ import annotations

import doctest
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from commwall.io import node_topology, node_topology_paths
from commwall.io.node_topology import (
    SMI_SAMPLE,
    NodeTopologyError,
    PathType,
    parse_node_topology,
    read_node_topology,
    summarize,
)
from commwall.io.node_topology_paths import inter_cpu_bw, nvlink_bw, pci_bw
from commwall.scenario import ClusterSpec

FIXTURES = Path(__file__).parent / "testdata" / "node_topology"
H100_XML = FIXTURES / "dgx_h100_topo.xml"
A100_XML = FIXTURES / "dgx_a100_topo.xml"
H100_SMI = FIXTURES / "dgx_h100_nvidia_smi.txt"
A100_SMI = FIXTURES / "dgx_a100_nvidia_smi.txt"
GPUS = [f"GPU{i}" for i in range(8)]


def _types(path: Path, *, direct: bool = False) -> dict[tuple[str, str], PathType]:
    table = read_node_topology(path).paths()
    return {k: (p.direct_type if direct else p.type) for k, p in table.paths.items()}


# ---- DGX H100 -----------------------------------------------------------------------------------


def test_h100_devices() -> None:
    topo = read_node_topology(H100_XML)
    assert topo.format == "nccl-xml" and topo.version == "1"
    assert [g.name for g in topo.gpus] == GPUS and {g.sm for g in topo.gpus} == {90}
    assert len(topo.nvswitches) == 4 and len(topo.cpus) == 2
    for g in GPUS:
        links = [x for x in topo.nvlinks if x.gpu == g]
        assert sorted(x.count for x in links) == [4, 4, 5, 5]
        assert {x.target for x in links} == {s.name for s in topo.nvswitches}
        assert topo.nvlinks_of(g) == 18
    assert [n.speed_mbps for n in topo.nics[:8]] == [400_000] * 8
    graph = topo.graph()
    assert (
        graph.nodes["GPU0"]["kind"] == "gpu"
        and graph.edges["GPU0", "NVS/0000:06:00.0"]["count"] == 5
    )


def test_h100_paths_and_bandwidths() -> None:
    p = read_node_topology(H100_XML).paths()
    for a in GPUS:
        for b in GPUS:
            if a != b:  # 18 links x SM90_NVLINK_BW 20.6 through the (merged) NVSwitch
                assert (p.get(a, b).type, p.get(a, b).bw_GBps) == (PathType.NVL, 370.8)
    for i, g in enumerate(GPUS):
        own = p.get(g, f"mlx5_{i}")  # behind a second-level switch of the GPU's switch
        assert (own.type, own.bw_GBps, own.gdr) == (PathType.PXB, 48.0, True)
        same = p.get(g, f"mlx5_{i ^ 1}")  # same socket: through the CPU, relayed by PXN
        assert (same.direct_type, same.type, same.via, same.bw_GBps) == (
            PathType.PHB,
            PathType.PXN,
            f"GPU{i ^ 1}",
            48.0,
        )
        far = p.get(g, f"mlx5_{(i + 4) % 8}")  # other socket: SYS at SRP_QPI_BW, PXN instead
        assert (far.direct_type, far.direct_bw_GBps) == (PathType.SYS, 22.0)
        assert (far.type, far.bw_GBps, far.via) == (PathType.PXN, 48.0, f"GPU{(i + 4) % 8}")
        assert far.hops[0] == g and far.hops[-1] == f"mlx5_{(i + 4) % 8}"
    # the storage NIC hangs from socket 0: PHB there, SYS from socket 1, never PXN
    assert p.get("GPU0", "mlx5_8").type == PathType.PHB and p.get("GPU0", "mlx5_8").bw_GBps == 25.0
    assert p.get("GPU5", "mlx5_8").type == PathType.SYS and p.local_gpu["mlx5_0"] == "GPU0"


def test_h100_summary_and_cluster_fragment() -> None:
    s = summarize(read_node_topology(H100_XML))
    assert s["cluster"] == {
        "gpus_per_node": 8,
        "scale_up": "nvlink",
        "nics_per_node": 8,
        "gpudirect_rdma": True,
        "pcie": "gen5",
        "cpu": "intel",
    }
    nics = {n["name"]: n for n in s["nics"]}
    assert nics["mlx5_3"]["nearest_gpus"] == ["GPU3"] and nics["mlx5_3"]["compute"]
    assert not nics["mlx5_8"]["compute"] and nics["mlx5_8"]["nearest_gpus"] == GPUS[:4]
    assert [g["nvlinks"] for g in s["gpus"]] == [18] * 8 and len(s["nvswitches"]) == 4
    assert ["GPU0", "mlx5_0"] in s["gpudirect_pairs"] and ["GPU0", "mlx5_8"] not in s[
        "gpudirect_pairs"
    ]
    ClusterSpec(**s["cluster"])  # pastes into a scenario as it is


# ---- DGX A100 -----------------------------------------------------------------------------------


def test_a100_paths() -> None:
    topo = read_node_topology(A100_XML)
    assert [g.name for g in topo.gpus] == GPUS and {g.sm for g in topo.gpus} == {80}
    assert len(topo.nvswitches) == 6 and all(topo.nvlinks_of(g) == 12 for g in GPUS)
    assert sorted(c.numa_id for c in topo.cpus) == [0, 1, 3, 5, 7]
    p = topo.paths()
    assert (p.get("GPU0", "GPU7").type, p.get("GPU0", "GPU7").bw_GBps) == (PathType.NVL, 240.0)
    # both tray NICs are PXB (own bridges, Gen4 x16 = 24 GB/s < HDR 25 GB/s); no PXN: no gain
    for nic in ("mlx5_0", "mlx5_1"):
        assert (p.get("GPU0", nic).type, p.get("GPU0", nic).bw_GBps) == (PathType.PXB, 24.0)
    far = p.get("GPU0", "mlx5_2")  # another NUMA node: SYS at AMD_BW 16, PXN through GPU2
    assert (far.direct_type, far.direct_bw_GBps) == (PathType.SYS, 16.0)
    assert (far.type, far.bw_GBps, far.via) == (PathType.PXN, 24.0, "GPU2")
    assert p.get("GPU0", "mlx5_4").type == PathType.SYS  # storage NIC: nobody is near it
    assert p.local_gpu["mlx5_0"] == "GPU0" and p.local_gpu["mlx5_1"] == "GPU1"
    s = summarize(topo, p)
    assert s["cluster"] == {
        "gpus_per_node": 8,
        "scale_up": "nvlink",
        "nics_per_node": 8,
        "gpudirect_rdma": True,
        "pcie": "gen4",
        "cpu": "amd",
    }
    assert {n["name"]: n["nearest_gpus"] for n in s["nics"]}["mlx5_9"] == ["GPU6", "GPU7"]


# ---- nvidia-smi agrees with the XML -------------------------------------------------------------


@pytest.mark.parametrize(
    ("xml", "smi", "links"), [(H100_XML, H100_SMI, 18), (A100_XML, A100_SMI, 12)]
)
def test_nvidia_smi_matches_xml(xml: Path, smi: Path, links: int) -> None:
    topo = read_node_topology(smi)
    assert topo.format == "nvidia-smi" and [g.name for g in topo.gpus] == GPUS
    assert [n.name for n in topo.nics] == [f"mlx5_{i}" for i in range(10)]
    assert (_types(xml, direct=True), _types(xml)) == (_types(smi, direct=True), _types(smi))
    s, x = summarize(topo), summarize(read_node_topology(xml))
    assert [g["nvlinks"] for g in s["gpus"]] == [links] * 8
    assert {k: v for k, v in x["cluster"].items() if k in s["cluster"]} == s["cluster"]
    assert [(n["name"], n["nearest_gpus"]) for n in s["nics"]] == [
        (n["name"], n["nearest_gpus"]) for n in x["nics"]
    ]
    assert topo.paths().get("GPU0", "GPU1").nvlinks == links


def test_nvidia_smi_layouts() -> None:
    crlf = SMI_SAMPLE.replace("\n", "\r\n")
    spaced = SMI_SAMPLE.replace("\t", "   ")
    for text in (SMI_SAMPLE, crlf, spaced, "\x1b[1m" + SMI_SAMPLE + "\x1b[0m\n$ exit\n"):
        topo = parse_node_topology(text)
        assert [n.name for n in topo.nics] == ["mlx5_0"] and topo.gpus[0].numa_id == 0
    old = (
        "\tGPU0\tGPU1\tmlx5_0\tCPU Affinity\nGPU0\t X \tSOC\tPHB\t0-9\nGPU1\tSOC\t X \tSOC\t10-19\n"
    )
    topo = parse_node_topology(old)  # device-named NIC column, SOC, no NIC rows, no legend
    assert topo.paths().get("GPU0", "GPU1").type == PathType.SYS and topo.nics[0].name == "mlx5_0"
    bare = "        GPU0    GPU1    CPU Affinity\nGPU0     X      PXB     0-7\nGPU1    PXB      X      0-7\n"
    s = summarize(parse_node_topology(bare))  # no NIC columns at all (older drivers)
    assert s["cluster"] == {"gpus_per_node": 2, "scale_up": "pcie"} and s["nics"] == []


def test_nvb_through_one_gpu() -> None:
    """DGX-1 style direct NVLinks: GPU0-GPU1 and GPU1-GPU2 wired, GPU0-GPU2 not (NVB)."""
    cells = {("0", "1"): "NV2", ("1", "2"): "NV1", ("0", "2"): "SYS"}
    rows = ["\tGPU0\tGPU1\tGPU2"]
    for a in "012":
        row = [" X " if a == b else cells.get((a, b)) or cells[(b, a)] for b in "012"]
        rows.append(f"GPU{a}\t" + "\t".join(row))
    p = parse_node_topology("\n".join(rows) + "\n").paths()
    assert (
        p.get("GPU0", "GPU2").type == PathType.NVB
        and p.get("GPU0", "GPU2").direct_type == PathType.SYS
    )

    xml = _xml_two_gpus_one_nic(gdr="0", nvlink=True)
    t = parse_node_topology(xml, source="x.xml")
    q = t.paths()  # no GDR on the NIC: the GPU's own PIX path goes through the CPU (PHB)
    assert (q.get("GPU0", "mlx5_0").direct_type, q.get("GPU0", "mlx5_0").type) == (
        PathType.PIX,
        PathType.PHB,
    )
    assert q.get("GPU0", "mlx5_0").via == "CPU0" and q.get("GPU0", "GPU1").bw_GBps == 6 * 20.0


def _xml_two_gpus_one_nic(gdr: str = "1", nvlink: bool = False, bcm: bool = False) -> str:
    sw = (
        'class="0x060400" vendor="0x1000" device="0xc010" subsystem_vendor="0x1000" subsystem_device="0xa064"'
        if bcm
        else 'class="0x060400"'
    )
    nv0 = '<nvlink target="0000:02:00.0" count="6" tclass="0x030200"/>' if nvlink else ""
    nv1 = '<nvlink target="0000:01:00.0" count="6" tclass="0x030200"/>' if nvlink else ""
    inner = (
        f'<pci busid="0000:0a:00.0" {sw} link_speed="16.0 GT/s PCIe" link_width="16">'
        '<pci busid="0000:02:00.0" class="0x030000" link_speed="16.0 GT/s PCIe" link_width="16">'
        f'<gpu dev="1" sm="70" rank="1" gdr="1">{nv1}</gpu></pci></pci>'
    )
    return f"""<system version="1">
<cpu numaid="0" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="85">
<pci busid="0000:00:01.0" {sw} link_speed="16.0 GT/s PCIe" link_width="16">
<pci busid="0000:01:00.0" class="0x030000" link_speed="16.0 GT/s PCIe" link_width="16">
<gpu dev="0" sm="70" rank="0" gdr="1">{nv0}</gpu></pci>
{inner}
<pci busid="0000:03:00.0" class="0x020000" link_speed="8.0 GT/s PCIe" link_width="8">
<nic><net name="mlx5_0" dev="0" speed="100000" port="1" gdr="{gdr}"/></nic></pci>
</pci></cpu></system>
"""


def test_pcie_only_node_and_bcm_flattening() -> None:
    p = parse_node_topology(_xml_two_gpus_one_nic()).paths()
    assert p.get("GPU0", "GPU1").type == PathType.PXB  # two switches, no CPU
    assert (p.get("GPU0", "mlx5_0").type, p.get("GPU0", "mlx5_0").bw_GBps) == (PathType.PIX, 6.0)
    s = summarize(parse_node_topology(_xml_two_gpus_one_nic()))
    assert s["cluster"]["scale_up"] == "pcie" and s["cluster"]["cpu"] == "intel"
    flat = parse_node_topology(_xml_two_gpus_one_nic(bcm=True))
    assert flat.paths().get("GPU0", "GPU1").type == PathType.PIX  # Gen4 PEX: one switch to NCCL
    assert flat.paths(flatten_bcm=False).get("GPU0", "GPU1").type == PathType.PXB


def test_constants() -> None:
    assert nvlink_bw(90) * 18 == pytest.approx(370.8) and nvlink_bw(80) * 12 == 240.0
    assert pci_bw("32.0 GT/s PCIe", 16) == 48.0 and pci_bw("16 GT/s", 8) == 12.0
    assert pci_bw("weird", None) == 12.0  # NCCL's fallback: 60 x 16 / 80
    assert inter_cpu_bw("x86_64", "GenuineIntel", 6, 0xCF) == 40.0
    assert inter_cpu_bw("x86_64", "GenuineIntel", 6, 0x4F) == 6.0
    assert inter_cpu_bw("ppc64", None, None, None) == 32.0
    assert inter_cpu_bw("arm64", None, None, None) == 6.0


# ---- errors -------------------------------------------------------------------------------------

GOOD = _xml_two_gpus_one_nic()


@pytest.mark.parametrize(
    ("text", "line", "reason"),
    [
        ("", 1, "neither an NCCL topology XML"),
        ("hello\nworld\n", 1, "neither"),
        ("<system>\n<cpu>\n</system>", 3, "not well-formed XML"),
        ('<!DOCTYPE x [<!ENTITY a "b">]>\n<system/>', 1, "DOCTYPE"),
        ("<graphs/>", 1, "root element must be <system>"),
        ('<system version="1"><cpu numaid="0"/></system>', 1, "no <gpu>"),
        (GOOD.replace('dev="0" sm="70"', 'sm="70"'), 5, "attribute 'dev' is missing"),
        (
            GOOD.replace('sm="70" rank="0"', 'sm="seventy" rank="0"'),
            5,
            "sm='seventy' is not an integer",
        ),
        (GOOD.replace("0000:03:00.0", "0000:01:00.0"), 7, "appears twice"),
        (GOOD.replace("0000:03:00.0", "pci-3"), 7, "not a PCI address"),
        (GOOD.replace('name="mlx5_0" ', ""), 8, "attribute 'name' is missing"),
        (
            _xml_two_gpus_one_nic(nvlink=True).replace('count="6"', 'count="0"', 1),
            5,
            "count='0' is below 1",
        ),
        (
            _xml_two_gpus_one_nic(nvlink=True).replace(
                '0000:02:00.0" count', '0000:09:00.0" count'
            ),
            5,
            "not in the file",
        ),
        (
            "\tGPU0\tGPU1\nGPU0\t X \tNV4\nGPU1\tNV4\t X \tbad\nGPU2\t X\n",
            4,
            "row 'GPU2' is not a column",
        ),
        ("\tGPU0\tGPU1\nGPU0\t X \tQPI\nGPU1\tSYS\t X\n", 2, "'QPI' is not a topology code"),
        ("\tGPU0\tGPU1\nGPU0\t X \nGPU1\tSYS\t X\n", 2, "has 1 cells"),
        ("\tGPU0\tGPU1\nGPU0\t X \tSYS\n", 1, "no row for GPU1"),
        ("\tGPU0\tGPU1\nGPU0\tSYS\tSYS\nGPU1\tSYS\t X\n", 2, "the diagonal must be X"),
        ("\tGPU0\tNIC0\nGPU0\t X \tNV2\nNIC0\tNV2\t X\n", 2, "NVLink to a NIC"),
        ("\tGPU0\tGPU1\nGPU0\t X \tSYS\nGPU0\t X \tSYS\n", 3, "a second row for GPU0"),
    ],
)
def test_malformed_input(text: str, line: int, reason: str) -> None:
    with pytest.raises(NodeTopologyError) as info:
        parse_node_topology(text, source="node.txt")
    assert info.value.source == "node.txt" and info.value.line == line, str(info.value)
    assert reason in info.value.reason and str(info.value).startswith(f"node.txt:{line}: ")


def test_read_errors(tmp_path: Path) -> None:
    with pytest.raises(NodeTopologyError, match="cannot read it"):
        read_node_topology(tmp_path / "missing.xml")
    with pytest.raises(NodeTopologyError, match="format 'json' is not known"):
        parse_node_topology(GOOD, fmt="json")
    with pytest.raises(NodeTopologyError, match="no `nvidia-smi topo -m` header"):
        parse_node_topology(GOOD, fmt="nvidia-smi")
    deep = "<system>" + "<pci>" * 80 + "</pci>" * 80 + "</system>"
    with pytest.raises(NodeTopologyError, match="nest deeper"):
        parse_node_topology(deep)


# ---- fuzz: parse or NodeTopologyError, nothing else ---------------------------------------------


def _parse_or_error(text: str) -> None:
    try:
        topo = parse_node_topology(text, source="fuzz")
    except NodeTopologyError as e:
        assert e.source == "fuzz" and e.line >= 0
        return
    summarize(topo)  # whatever parses also computes paths and a summary


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_no_text_crashes_the_readers(text: str) -> None:
    _parse_or_error(text)
    _parse_or_error("<system>" + text)
    _parse_or_error("\tGPU0\tGPU1\n" + text)


_SEEDS = [H100_XML.read_text(), A100_SMI.read_text(), SMI_SAMPLE, GOOD]


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(range(len(_SEEDS))),
    st.lists(st.tuples(st.integers(0, 10_000), st.text(max_size=8)), max_size=6),
)
def test_garbled_dumps_never_crash(seed: int, edits: list[tuple[int, str]]) -> None:
    text = _SEEDS[seed]
    for at, junk in edits:
        at %= len(text)
        text = text[:at] + junk + text[at + len(junk) :]
    _parse_or_error(text)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                ' busid="0000:99:00.0"',
                ' dev="1"',
                ' count="-3"',
                ' tclass="0x068001"',
                ' speed="-1"',
                ' link_width="0"',
                ' numaid="-1"',
                ' sm="abc"',
                ' gdr="0"',
            ]
        ),
        max_size=4,
    ),
    st.integers(0, 10_000),
)
def test_garbled_attributes_never_crash(attrs: list[str], at: int) -> None:
    text = GOOD
    for attr in attrs:
        spots = [i for i, c in enumerate(text) if c == ">" and text[i - 1] != "/"]
        i = spots[at % len(spots)]
        text = text[:i] + attr + text[i:]
    _parse_or_error(text)


def test_doctests() -> None:
    for module in (node_topology, node_topology_paths):
        assert doctest.testmod(module).failed == 0
