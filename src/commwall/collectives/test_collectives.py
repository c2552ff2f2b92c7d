"""Closed forms, bounds and NCCL conventions for the collective cost models."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from commwall.collectives import (
    ALGORITHMS,
    CommFabric,
    Gen,
    Hw,
    Op,
    Proto,
    Unsupported,
    busbw_factor,
    choose,
    evaluate,
    parse_algo,
    parse_op,
    parse_proto,
)
from commwall.collectives.constants import BASE_LAT, HW_LAT, tree_correction
from commwall.collectives.halving_doubling import halving_doubling_steps

US = 1e-6
H100_NVLINK = 18 * 20.6e9  # NCCL: 18 links × SM90_NVLINK_BW (topo.h v2.30)


def h100(n_domains: int = 1, g: int = 8, net: float = 47.5e9, **kw: object) -> CommFabric:
    return CommFabric(
        n_domains,
        g,
        H100_NVLINK,
        Hw.NVLINK,
        net,
        Gen.HOPPER,
        channels=32,
        nvls=True,
        **kw,  # type: ignore[arg-type]
    )


def test_busbw_factors_match_nccl_tests() -> None:
    assert busbw_factor(Op.ALL_REDUCE, 8) == pytest.approx(1.75)
    assert busbw_factor(Op.ALL_GATHER, 8) == pytest.approx(0.875)
    assert busbw_factor(Op.ALLTOALL, 4) == pytest.approx(0.75)
    assert busbw_factor(Op.BROADCAST, 64) == 1.0
    assert busbw_factor(Op.ALL_REDUCE, 2) == 1.0  # nccl-tests: with n = 2 busbw = algbw


def test_parse_names() -> None:
    assert parse_op("all_reduce_perf") is Op.ALL_REDUCE
    assert parse_op("AllGather") is Op.ALL_GATHER
    assert parse_algo("NVLSTree") == "nvls_tree"
    assert parse_proto("ll128") is Proto.LL128
    with pytest.raises(ValueError, match="allowed are"):
        parse_op("allsum")
    with pytest.raises(ValueError, match="unknown algorithm 'butterfly'"):
        parse_algo("butterfly")


def test_ring_allreduce_equals_nccl_closed_form_single_node() -> None:
    f = h100()
    s = 2**30
    for proto, eff in ((Proto.SIMPLE, 1.0), (Proto.LL128, 0.92)):
        c = evaluate(Op.ALL_REDUCE, s, f, "ring", proto)
        p = 8
        lat = BASE_LAT["ring"][proto] + 2 * (p - 1) * HW_LAT[Hw.NVLINK]["ring"][proto]
        assert c.latency == pytest.approx(lat)
        assert c.bw_time == pytest.approx(2 * (p - 1) / p * s / (eff * H100_NVLINK))
    # Simple: busbw tends to the link bandwidth (Patarasuk–Yuan bound met).
    big = evaluate(Op.ALL_REDUCE, 2**36, f, "ring", Proto.SIMPLE)
    assert big.busbw == pytest.approx(H100_NVLINK, rel=1e-3)


def test_ring_multinode_latency_counts_network_steps() -> None:
    f = h100(n_domains=4)
    c = evaluate(Op.ALL_REDUCE, 8, f, "ring", Proto.LL)
    p, n = 32, 4
    n_inter = 2 * (n - 1)
    intra = max(HW_LAT[Hw.NVLINK]["ring"][Proto.LL], 1 * US)  # NET overhead floor, Intel = 1 µs
    expected = BASE_LAT["ring"][Proto.LL] + (2 * (p - 1) - n_inter) * intra + n_inter * 2.7 * US
    assert c.latency == pytest.approx(expected)


def test_ring_bandwidth_bound_by_domain_nics() -> None:
    # 8 × 25 GB/s NICs (200 GB/s per node) below NVLink: the ring's busbw is the node's NIC total.
    f = h100(n_domains=4, net=25e9)
    c = evaluate(Op.ALL_REDUCE, 2**36, f, "ring", Proto.SIMPLE)
    assert c.busbw == pytest.approx(8 * 25e9, rel=2e-3)
    assert c.bottleneck == "net"


def test_tree_closed_form_and_correction() -> None:
    f = h100(n_domains=16)
    s = 2**30
    c = evaluate(Op.ALL_REDUCE, s, f, "tree", Proto.SIMPLE)
    lat = BASE_LAT["tree"][Proto.SIMPLE] + 2 * (7 * 4.0 * US + 4 * 14.0 * US)
    assert c.latency == pytest.approx(lat)
    raw = min(H100_NVLINK, 2 * 8 * 47.5e9 / 2)
    assert c.bw_time == pytest.approx(2 * s / (0.92 * raw * tree_correction(Proto.SIMPLE, s)))
    assert tree_correction(Proto.SIMPLE, 64) == 0.9
    assert tree_correction(Proto.SIMPLE, 2**40) == 1.0


def test_tree_protocols_match_tuning_cc_by_hand() -> None:
    # 32 DGX H100 nodes, Intel hosts: busBw = min(NVLink 370.8, node NICs 8·47.5) = 370.8 GB/s;
    # all protocols: min(0.92·busBw, 32 ch × 36.0) = 341.1; LL: /3.8 capped at llMaxBw[Intel
    # row][≥3 nodes] = 20.4; LL128: ×120/128 capped at 32 × 29.0. algBw = busBw/2.
    f = h100(n_domains=32)
    s = 2**30  # beyond the correction table (index 24 ≥ 23): factor 1.0
    base = 0.92 * H100_NVLINK
    expect = {
        Proto.SIMPLE: base,
        Proto.LL: min(base / 3.8, 20.4e9),
        Proto.LL128: min(base * 120 / 128, 32 * 29.0e9),
    }
    for proto, bus in expect.items():
        c = evaluate(Op.ALL_REDUCE, s, f, "tree", proto)
        assert c.bw_time == pytest.approx(2 * s / bus), proto
    amd = h100(n_domains=32, cpu="amd")  # llMaxBw row 1 (AMD) at >= 3 nodes: 19.0 GB/s
    assert evaluate(Op.ALL_REDUCE, s, amd, "tree", Proto.LL).bw_time == pytest.approx(
        2 * s / 19.0e9
    )


def test_ll_cap_uses_gpu_row_in_one_node_cpu_row_across_nodes() -> None:
    one = evaluate(Op.ALL_REDUCE, 2**30, h100(), "ring", Proto.LL)
    assert one.bw_time == pytest.approx(2 * 7 / 8 * 2**30 / 141.0e9)  # Hopper, 1 node
    two = evaluate(Op.ALL_REDUCE, 2**30, h100(n_domains=2), "ring", Proto.LL)
    assert two.bw_time == pytest.approx(2 * 15 / 16 * 2**30 / 39.0e9)  # Intel row, 2 nodes


def test_ll128_needs_gpudirect_across_nodes() -> None:
    with pytest.raises(Unsupported, match="GPUDirect"):
        evaluate(Op.ALL_REDUCE, 2**20, h100(n_domains=4, gdr=False), "ring", Proto.LL128)
    assert evaluate(Op.ALL_REDUCE, 2**20, h100(gdr=False), "ring", Proto.LL128).time > 0


def test_one_rank_is_a_local_copy() -> None:
    f = CommFabric(1, 1, 0.0, Hw.NVLINK, 0.0, Gen.HOPPER, hbm_bw=3.35e12)
    c = choose(Op.ALL_REDUCE, 2**30, f).best
    assert c.algo == "local"
    assert c.time == pytest.approx(2 * 2**30 / 3.35e12)


def test_two_node_tree_crosses_the_network_once() -> None:
    # N = 2: each domain's NICs carry S per direction, so busbw can exceed the NIC total (nccl#812).
    f = h100(n_domains=2, net=12.5e9)  # 100 GB/s per node
    c = evaluate(Op.ALL_REDUCE, 2**34, f, "tree", Proto.SIMPLE)
    assert c.busbw > 8 * 12.5e9 * 1.5


@pytest.mark.parametrize("p", [2, 4, 8, 16, 64])
def test_halving_doubling_power_of_two_closed_form(p: int) -> None:
    # One domain: every step on NVLink → T = base + 2 lg p α + 2(p−1)/p S β.
    f = CommFabric(1, p, 100e9, Hw.NVLINK, 0.0, Gen.HOPPER)
    s = 2**28
    c = evaluate(Op.ALL_REDUCE, s, f, "halving_doubling", Proto.SIMPLE)
    alpha = HW_LAT[Hw.NVLINK]["ring"][Proto.SIMPLE]
    k = int(math.log2(p))
    assert c.latency == pytest.approx(BASE_LAT["ring"][Proto.SIMPLE] + 2 * k * alpha)
    assert c.bw_time == pytest.approx(2 * (p - 1) / p * s / 100e9)


@pytest.mark.parametrize("p", [3, 6, 12, 100])
def test_halving_doubling_non_power_of_two(p: int) -> None:
    # Thakur et al.: (2⌊lg p⌋ + 2) α + (2(p'−1)/p' + 2) S β with p' = 2^⌊lg p⌋.
    f = CommFabric(1, p, 100e9, Hw.NVLINK, 0.0, Gen.HOPPER)
    s = 2**26
    c = evaluate(Op.ALL_REDUCE, s, f, "halving_doubling", Proto.SIMPLE)
    k = p.bit_length() - 1
    pp = 1 << k
    assert c.steps == 2 * k + 2
    assert c.bw_time == pytest.approx((2 * (pp - 1) / pp + 2) * s / 100e9)


def test_halving_doubling_keeps_big_steps_on_nvlink() -> None:
    f = h100(n_domains=4)
    steps = halving_doubling_steps(Op.ALL_REDUCE, 1024.0, f)
    net_bytes = sum(b for b, hw in steps if hw is Hw.NET)
    # Only the last lg N halving steps (S/16, S/32) and their mirror cross the network.
    assert net_bytes == pytest.approx(2 * (1024 / 16 + 1024 / 32))


def test_direct_alltoall_splits_nvlink_and_network() -> None:
    f = h100(n_domains=4)
    s = 2**30
    c = evaluate(Op.ALLTOALL, s, f, "direct", Proto.SIMPLE)
    p = 32
    intra = 7 * s / p / H100_NVLINK
    net = 24 * s / p / 47.5e9
    assert c.bw_time == pytest.approx(max(intra, net))
    assert c.bottleneck == "net"


def test_hierarchical_is_sum_of_three_rings() -> None:
    f = h100(n_domains=8)
    s = 2**30
    c = evaluate(Op.ALL_REDUCE, s, f, "hierarchical", Proto.SIMPLE)
    rs = evaluate(Op.REDUCE_SCATTER, s, f.sub(n_domains=1), "ring", Proto.SIMPLE)
    ar = evaluate(Op.ALL_REDUCE, s / 8, f.sub(ranks_per_domain=1), "ring", Proto.SIMPLE)
    ag = evaluate(Op.ALL_GATHER, s, f.sub(n_domains=1), "ring", Proto.SIMPLE)
    assert c.time == pytest.approx(rs.time + ar.time + ag.time)


def test_nvls_follows_nccls_rank_independent_busbw() -> None:
    from commwall.collectives.in_network import NVLS_GRAPH_FRACTION

    f = h100()
    s = 2**33
    c = evaluate(Op.ALL_REDUCE, s, f, "nvls", Proto.SIMPLE)
    bus = 2 * H100_NVLINK * 0.85 * NVLS_GRAPH_FRACTION  # tuning.cc: 2·bwIntra·nvlsEfficiency
    assert bus == pytest.approx(480e9)  # calibrated on DGX H100 (nccl-tests#212)
    assert c.bw_time == pytest.approx(2 * 7 / 8 * s / bus)  # algBw = busBw·n/(2(n−1))
    assert c.latency == pytest.approx(25 * US)
    big = CommFabric(1, 72, 18 * 40.1e9, Hw.NVLINK, 0.0, Gen.BLACKWELL, nvls=True)
    bus72 = evaluate(Op.ALL_REDUCE, s, big, "nvls", Proto.SIMPLE)
    small = evaluate(Op.ALL_REDUCE, s, big.sub(ranks_per_domain=8), "nvls", Proto.SIMPLE)
    # busbw of the bandwidth term does not depend on the rank count (measured: 840 vs 835 GB/s)
    assert busbw_factor(Op.ALL_REDUCE, 72) * s / bus72.bw_time == pytest.approx(
        busbw_factor(Op.ALL_REDUCE, 8) * s / small.bw_time
    )
    ag = evaluate(Op.ALL_GATHER, s, f, "nvls", Proto.SIMPLE)  # busBw ×(ppn−1)/ppn, algBw ×n/(n−1)
    assert ag.bw_time == pytest.approx(s / (H100_NVLINK * 0.85 * NVLS_GRAPH_FRACTION))
    with pytest.raises(Unsupported, match="Simple"):
        evaluate(Op.ALL_REDUCE, s, f, "nvls", Proto.LL)
    no_nvls = CommFabric(1, 8, 240e9, Hw.NVLINK, 0.0, Gen.AMPERE)
    with pytest.raises(Unsupported, match="NVSwitch3"):
        evaluate(Op.ALL_REDUCE, s, no_nvls, "nvls", Proto.SIMPLE)


def test_nvls_tree_is_bounded_by_nvls_and_the_domain_nics() -> None:
    s = 2**34
    three = evaluate(Op.ALL_REDUCE, s, h100(n_domains=8), "nvls_tree", Proto.SIMPLE)
    assert three.bw_time == pytest.approx(2 * 63 / 64 * s / (8 * 47.5e9))  # NIC-bound
    two = evaluate(Op.ALL_REDUCE, s, h100(n_domains=2), "nvls_tree", Proto.SIMPLE)
    assert two.bw_time == pytest.approx(2 * 15 / 16 * s / 480e9)  # two domains: NVLS-bound


def test_nvls_tree_on_blackwell_x86_takes_the_tree_correction() -> None:
    b200 = dict(intra_bw=18 * 40.1e9, intra_hw=Hw.NVLINK, net_bw_per_rank=47.5e9, nvls=True)
    intel = CommFabric(4, 8, gen=Gen.BLACKWELL, cpu="intel", **b200)  # type: ignore[arg-type]
    grace = CommFabric(4, 8, gen=Gen.BLACKWELL, cpu="other", **b200)  # type: ignore[arg-type]
    s = 2**26  # index log2(2^26 / 64) = 20 → Simple factor 0.8
    a = evaluate(Op.ALL_REDUCE, s, intel, "nvls_tree", Proto.SIMPLE)
    b = evaluate(Op.ALL_REDUCE, s, grace, "nvls_tree", Proto.SIMPLE)
    assert a.bw_time == pytest.approx(b.bw_time / 0.8)


def test_collnet_halves_network_volume() -> None:
    f = h100(n_domains=16, net=25e9, collnet=True)
    s = 2**34
    sharp = evaluate(Op.ALL_REDUCE, s, f, "collnet", Proto.SIMPLE)
    ring_cost = evaluate(Op.ALL_REDUCE, s, f, "ring", Proto.SIMPLE)
    # The ring moves 2(p−1)/p·S through the node NICs, SHARP S/g per rank at 0.9 efficiency.
    assert ring_cost.bw_time / sharp.bw_time == pytest.approx(2 * 127 / 128 * 0.9, rel=1e-6)


def test_pat_only_one_gpu_per_node() -> None:
    f = CommFabric(64, 1, 0.0, Hw.NVLINK, 47.5e9, Gen.HOPPER)
    c = evaluate(Op.ALL_GATHER, 2**20, f, "pat", Proto.SIMPLE)
    # tuning.cc by hand: 8 + log2i(64)·14/3.5 + 2.8·64 µs; S/(0.75·bw), no algBw conversion.
    assert c.latency == pytest.approx((8 + 6 * 14 / 3.5 + 2.8 * 64) * US)
    assert c.bw_time == pytest.approx(2**20 / (0.75 * 47.5e9))
    with pytest.raises(Unsupported, match="one GPU per node"):
        evaluate(Op.ALL_GATHER, 2**20, h100(n_domains=4), "pat", Proto.SIMPLE)


def test_ll128_disabled_over_pcie() -> None:
    f = CommFabric(1, 8, 24e9, Hw.PCI, 0.0, Gen.AMPERE)
    with pytest.raises(Unsupported, match="LL128 needs NVLink"):
        evaluate(Op.ALL_REDUCE, 2**20, f, "ring", Proto.LL128)
    assert choose(Op.ALL_REDUCE, 2**30, f).best.proto is not Proto.LL128


def test_tuner_small_ll_large_simple_single_node_h100() -> None:
    f = h100()
    assert choose(Op.ALL_REDUCE, 8, f).best.proto is Proto.LL
    best_large = choose(Op.ALL_REDUCE, 2**33, f).best
    assert best_large.algo == "nvls" and best_large.proto is Proto.SIMPLE
    forced = choose(Op.ALL_REDUCE, 2**33, f, algo="ring").best
    assert forced.algo == "ring"
    assert "lowest predicted time" in choose(Op.ALL_REDUCE, 2**20, f).explain()


def test_tuner_reports_every_reason_when_nothing_runs() -> None:
    with pytest.raises(Unsupported, match="NVLS runs the Simple protocol only"):
        choose(Op.ALL_REDUCE, 1024, h100(), algo="nvls", proto=Proto.LL)


fabrics = st.builds(
    CommFabric,
    n_domains=st.integers(1, 512),
    ranks_per_domain=st.sampled_from([1, 2, 4, 8, 72]),
    intra_bw=st.floats(10e9, 1000e9),
    intra_hw=st.sampled_from([Hw.NVLINK, Hw.PCI]),
    net_bw_per_rank=st.floats(5e9, 100e9),
    gen=st.sampled_from(list(Gen)),
    channels=st.integers(1, 64),
)
P2P_ALGOS = ("ring", "tree", "halving_doubling", "direct", "hierarchical", "pat")


@settings(max_examples=300, deadline=None)
@given(f=fabrics, log_size=st.integers(3, 36), op=st.sampled_from(list(Op)))
def test_point_to_point_algorithms_respect_bounds(f: CommFabric, log_size: int, op: Op) -> None:
    """No point-to-point algorithm beats the injection limit or the Patarasuk–Yuan bound."""
    s = float(2**log_size)
    p = f.nranks
    for algo in P2P_ALGOS:
        for proto in Proto:
            try:
                c = evaluate(op, s, f, algo, proto)
            except Unsupported:
                continue
            if p == 1:
                assert c.time == 0
                continue
            assert c.time > 0
            if op in (Op.ALL_REDUCE, Op.REDUCE_SCATTER, Op.ALL_GATHER, Op.ALLTOALL):
                assert c.busbw <= f.injection_bw * (1 + 1e-9), (algo, proto)
            if op is Op.ALL_REDUCE:
                # Each rank must send and receive 2(p−1)/p·S (Patarasuk & Yuan 2009).
                bound = 2 * (p - 1) / p * s / f.injection_bw
                assert c.bw_time >= bound * (1 - 1e-9), (algo, proto)


def test_every_algorithm_is_registered() -> None:
    assert set(ALGORITHMS) == {
        "ring", "tree", "nvls", "nvls_tree", "collnet", "pat", "halving_doubling", "direct",
        "hierarchical",
    }  # fmt: skip
