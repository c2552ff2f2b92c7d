"""Closed forms, bounds and NCCL conventions for the collective cost models."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from commwall.collectives import (
    ALGORITHMS,
    CollectiveError,
    CommFabric,
    Cost,
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
from commwall.collectives.schedule import Placement
from commwall.errors import CommwallError

US = 1e-6
H100_NVLINK = 18 * 20.6e9  # NCCL: 18 links × SM90_NVLINK_BW (topo.h v2.30)


def h100(n_domains: int = 1, g: int = 8, net: float = 47.5e9, **kw: object) -> CommFabric:
    kw.setdefault("channels", 32)
    return CommFabric(
        n_domains,
        g,
        H100_NVLINK,
        Hw.NVLINK,
        net,
        Gen.HOPPER,
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
    with pytest.raises(CollectiveError, match="allowed are"):
        parse_op("allsum")
    with pytest.raises(CollectiveError, match="unknown algorithm 'butterfly'"):
        parse_algo("butterfly")


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: parse_proto("ll64"), "unknown protocol 'll64'"),
        (lambda: busbw_factor(Op.ALL_REDUCE, 0), "nranks must be >= 1"),
        (lambda: h100(channels=0), "channels must be >= 1"),
        (lambda: evaluate(Op.ALL_REDUCE, -1, h100(), "ring", Proto.SIMPLE), "nbytes must be"),
        (lambda: choose(Op.ALL_REDUCE, 1e6, h100(), policy="fastest"), "unknown tuner policy"),
        (lambda: Placement(3, per_block=2), "whole number of blocks"),
    ],
)
def test_bad_inputs_raise_collective_error(call: Callable[[], object], match: str) -> None:
    with pytest.raises(CollectiveError, match=match) as info:
        call()
    assert isinstance(info.value, CommwallError) and isinstance(info.value, ValueError)


def tuner(op: Op, s: float, f: CommFabric, algo: str, proto: Proto) -> Cost:
    """NCCL's own estimate (what it picks by)."""
    return evaluate(op, s, f, algo, proto, estimate=True)


def test_ring_tuner_equals_nccl_closed_form_single_node() -> None:
    f = h100()
    s = 2**30
    for proto, eff in ((Proto.SIMPLE, 1.0), (Proto.LL128, 0.92)):
        c = tuner(Op.ALL_REDUCE, s, f, "ring", proto)
        p = 8
        lat = BASE_LAT["ring"][proto] + 2 * (p - 1) * HW_LAT[Hw.NVLINK]["ring"][proto]
        assert c.estimated and c.latency == pytest.approx(lat)
        assert c.bw_time == pytest.approx(2 * (p - 1) / p * s / (eff * H100_NVLINK))
        assert evaluate(Op.ALL_REDUCE, s, f, "ring", proto).tuner_time == pytest.approx(c.time)


def test_ring_time_is_the_pipeline_by_hand() -> None:
    # 64 MiB on 8 H100, Simple, 24 channels: one loop, chunk S/(24·8), two slices; a step takes
    # two slices of (o + slice/b), o = hwLat Simple − LL = 2.8 µs, b = 370.8/24 GB/s.
    f = h100(channels=24)
    s = 64 * 2**20
    c = evaluate(Op.ALL_REDUCE, s, f, "ring", Proto.SIMPLE)
    chunk = s / (24 * 8)
    ts = 2.8e-6 + chunk / 2 / (H100_NVLINK / 24)
    assert c.bw_time == pytest.approx(14 * 2 * ts)
    assert c.latency == pytest.approx(BASE_LAT["ring"][Proto.SIMPLE])
    assert c.channels == 24
    # large: busbw tends to the link, less the per-slice fences (1 MiB slices).
    big = evaluate(Op.ALL_REDUCE, 2**36, f, "ring", Proto.SIMPLE)
    slice_time = 2**20 / (H100_NVLINK / 24)
    assert big.busbw == pytest.approx(H100_NVLINK * slice_time / (slice_time + 2.8e-6), rel=1e-3)


def test_ring_steps_are_paced_by_the_slowest_hop() -> None:
    # A tiny LL all-reduce on 4 domains: every one of the 2(p−1) steps waits on the network hop
    # (sjeaugey, nccl-tests#123: 2(n−1) × max_latency), not on the average hop.
    f = h100(n_domains=4)
    c = evaluate(Op.ALL_REDUCE, 8, f, "ring", Proto.LL)
    steps = 2 * 31
    assert c.time == pytest.approx(BASE_LAT["ring"][Proto.LL] + steps * 2.7e-6, rel=1e-3)
    nccl = tuner(Op.ALL_REDUCE, 8, f, "ring", Proto.LL)  # NCCL sums per class instead
    intra = max(HW_LAT[Hw.NVLINK]["ring"][Proto.LL], 1 * US)  # NET overhead floor, Intel = 1 µs
    assert nccl.latency == pytest.approx(BASE_LAT["ring"][Proto.LL] + 56 * intra + 6 * 2.7 * US)


def test_network_steps_are_store_and_forward() -> None:
    # NCCL's proxy sends a step only once the GPU has written all of it (prims_ll128.h postSend,
    # net.cc sendProxyProgress), so across nodes an LL128 ring step waits for the network
    # latency and then the whole step on the wire (flags included), not the latency alone: at
    # 16 MiB on 2 H100 nodes that is what paces each of the 15 all-gather steps.
    f = h100(n_domains=2)
    s = 16 * 2**20
    c = evaluate(Op.ALL_GATHER, s, f, "ring", Proto.LL128)
    nc = c.channels
    step = s / (nc * 16)
    wire = 8 * 47.5e9 / nc * 120 / 128
    latency = HW_LAT[Hw.NET]["ring"][Proto.LL128] + f.net_extra_latency
    period = latency + step / wire
    assert c.time == pytest.approx(BASE_LAT["ring"][Proto.LL128] + 15 * period, rel=1e-6)
    # streaming the step (NCCL's tuner model) would be ~30% faster here
    assert c.time > 1.25 * (BASE_LAT["ring"][Proto.LL128] + 15 * max(latency, step / wire))


def test_network_step_latency_already_holds_the_protocol_overhead() -> None:
    # hwLat[NET][ring]: LL128 − LL = 4.0 − 2.7 = 1.3 µs, the same as NVLink's 1.9 − 0.6: NCCL's
    # network step latency includes the protocol's per-step GPU work, so a tiny two-node
    # ring/LL128 all-gather takes base + 15 network steps, the fence not added on top.
    net = HW_LAT[Hw.NET]["ring"]
    nvl = HW_LAT[Hw.NVLINK]["ring"]
    assert net[Proto.LL128] - net[Proto.LL] == pytest.approx(nvl[Proto.LL128] - nvl[Proto.LL])
    f = h100(n_domains=2)
    c = evaluate(Op.ALL_GATHER, 16 * 1024, f, "ring", Proto.LL128)
    step = net[Proto.LL128] + f.net_extra_latency
    assert c.time == pytest.approx(BASE_LAT["ring"][Proto.LL128] + 15 * step, rel=0.02)
    # the hop's service (what bandwidth it leaves) still pays the fence per slice
    from commwall.collectives.cost import net_hop

    hop = net_hop(f, "ring", Proto.LL128, 5e9, 2, window=8, link_share=6e9)
    assert hop.service(64e3) == pytest.approx(nvl[Proto.LL128] - nvl[Proto.LL] + 64e3 / 5e9)
    assert hop.arrival(64e3) == pytest.approx(step + 64e3 / (6e9 * 120 / 128), rel=1e-3)


def test_chain_fill_subtracts_one_service_only_when_the_slowest_hop_stores_and_forwards() -> None:
    from commwall.collectives.pipeline import Hop, chain_time

    net = Hop(latency=4e-6, overhead=0.0, rate=10e9, window=8, count=2, forward_rate=20e9)
    fast = Hop(latency=1e-6, overhead=0.0, rate=40e9, window=8, count=3, streaming=True)
    s = 100e3
    lat, bw = chain_time(items=10, slice_bytes=s, path=[net, fast], base=0.0)
    fill = 2 * (4e-6 + s / 20e9) + 3 * 1e-6
    assert bw == pytest.approx(10 * s / 10e9)
    assert lat == pytest.approx(fill - s / 10e9)  # the first slice's own service is in bw
    slow_stream = Hop(latency=1e-6, overhead=0.0, rate=5e9, window=8, count=3, streaming=True)
    lat, bw = chain_time(items=10, slice_bytes=s, path=[net, slow_stream], base=0.0)
    assert bw == pytest.approx(10 * s / 5e9)
    assert lat == pytest.approx(2 * (4e-6 + s / 20e9) + 3 * 1e-6)  # streamed: nothing to take back


def test_ring_bandwidth_bound_by_domain_nics() -> None:
    # 8 × 25 GB/s NICs (200 GB/s per node) below NVLink: the ring's busbw is the node's NIC total.
    f = h100(n_domains=4, net=25e9)
    assert tuner(Op.ALL_REDUCE, 2**36, f, "ring", Proto.SIMPLE).busbw == pytest.approx(
        8 * 25e9, rel=2e-3
    )
    c = evaluate(Op.ALL_REDUCE, 2**36, f, "ring", Proto.SIMPLE)
    assert c.bottleneck == "net" and 0.9 * 8 * 25e9 < c.busbw < 8 * 25e9


def test_tree_tuner_closed_form_and_correction() -> None:
    f = h100(n_domains=16)
    s = 2**30
    c = tuner(Op.ALL_REDUCE, s, f, "tree", Proto.SIMPLE)
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
        c = tuner(Op.ALL_REDUCE, s, f, "tree", proto)
        assert c.bw_time == pytest.approx(2 * s / bus), proto
    amd = h100(n_domains=32, cpu="amd")  # llMaxBw row 1 (AMD) at >= 3 nodes: 19.0 GB/s
    assert tuner(Op.ALL_REDUCE, s, amd, "tree", Proto.LL).bw_time == pytest.approx(2 * s / 19.0e9)


def test_tree_across_three_domains_runs_at_one_sms_network_rate() -> None:
    # PR nccl#645 / nccl#1649: a tree channel moves ~12 GB/s of busBw; with 16 channels a tree
    # over 4+ nodes reaches ~190 GB/s busbw (Together AI: 195 on B200), not NCCL's 341.
    f = h100(n_domains=4, channels=16)
    c = evaluate(Op.ALL_REDUCE, 2**34, f, "tree", Proto.SIMPLE)
    # 512 KiB chunks at 6 GB/s per channel, each with the 3.4 µs Simple tree overhead; nccl-tests
    # busbw is 2(n−1)/n·S/T where NCCL's tree busBw is 2S/T
    chunk = 512 * 1024
    per_chunk = (chunk / 6e9) / (chunk / 6e9 + 3.4e-6)
    assert c.busbw == pytest.approx(16 * 12e9 * per_chunk * 31 / 32, rel=0.01)
    two = evaluate(Op.ALL_REDUCE, 2**34, h100(n_domains=2, channels=16), "tree", Proto.SIMPLE)
    assert two.busbw > 280e9  # two domains: each NIC carries S once (nccl-tests#196)


def test_ll_cap_uses_gpu_row_in_one_node_cpu_row_across_nodes() -> None:
    one = tuner(Op.ALL_REDUCE, 2**30, h100(), "ring", Proto.LL)
    assert one.bw_time == pytest.approx(2 * 7 / 8 * 2**30 / 141.0e9)  # Hopper, 1 node
    two = tuner(Op.ALL_REDUCE, 2**30, h100(n_domains=2), "ring", Proto.LL)
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
    c = tuner(Op.ALL_REDUCE, 2**34, f, "tree", Proto.SIMPLE)
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
    c = tuner(Op.ALLTOALL, s, f, "direct", Proto.SIMPLE)
    p = 32
    intra = 7 * s / p / H100_NVLINK
    net = 24 * s / p / 47.5e9
    assert c.bw_time == pytest.approx(max(intra, net))
    assert c.bottleneck == "net"
    # time: a rank's network share through its own NIC bounds it (nccl-tests#267)
    real = evaluate(Op.ALLTOALL, s, f, "direct", Proto.SIMPLE)
    assert real.bw_time >= net and real.bw_time == pytest.approx(net, rel=0.05)


def test_sendrecv_inside_a_node_climbs_with_nccls_p2p_channels() -> None:
    # addP2pToPlan: 4 channels up to 64 MiB, doubling each time a part passes 16 MiB; each p2p
    # channel copies at half NCCL's per-channel Simple cap (38.7 / 2 GB/s on Hopper).
    f = h100(channels=24)
    got = {}
    for mib in (32, 64, 128, 256, 1024):
        c = evaluate(Op.SENDRECV, mib * 2**20, f, "direct", Proto.SIMPLE)
        got[mib] = c.channels
        if mib <= 256:
            assert c.busbw < c.channels * 19.35e9
    assert got == {32: 4, 64: 4, 128: 8, 256: 16, 1024: 32}
    assert evaluate(Op.SENDRECV, 2**30, f, "direct", Proto.SIMPLE).busbw > 300e9
    with pytest.raises(Unsupported, match="LL"):  # 4 KiB: NCCL's p2p runs LL
        evaluate(Op.SENDRECV, 4096, f, "direct", Proto.SIMPLE)


def b200(n_domains: int = 1, g: int = 8) -> CommFabric:
    """DGX B200: 18 NVLink5 links at NCCL's SM100 40.1 GB/s each (topo.h v2.30), 32 channels."""
    return CommFabric(
        n_domains, g, 18 * 40.1e9, Hw.NVLINK, 47.5e9, Gen.BLACKWELL, channels=32,
        p2p_channels=32, nvls=True,
    )  # fmt: skip


def test_a_blackwell_p2p_block_copies_at_hoppers_rate_scaled_by_nccls_ll128_caps() -> None:
    """A p2p block copying over NVLink is bounded by the SM, not the link: Blackwell takes
    Hopper's perChMaxTreeBw (38.7) times NCCL's LL128 ring caps 40.0 / 36.7, not its own
    one-node tree cap (70). Published B200 sendrecv_perf: 84.2 GB/s on 4 channels at 64 MiB,
    329.8 on 16 at 256 MiB (MIT ORCD), 641.6 on 32 at 16 GiB (Together AI)."""
    from commwall.collectives.cost import p2p_block_bw, sm_channel_bw

    f = b200()
    assert p2p_block_bw(f) == pytest.approx(38.7e9 * 40.0 / 36.7)
    assert p2p_block_bw(h100()) == sm_channel_bw(h100(), Proto.SIMPLE) == pytest.approx(38.7e9)
    assert sm_channel_bw(f, Proto.SIMPLE) == pytest.approx(70e9)  # rings and network copies
    half = p2p_block_bw(f) / 2
    for mib, channels, measured in ((64, 4, 84.2e9), (256, 16, 329.8e9), (16384, 32, 641.6e9)):
        c = evaluate(Op.SENDRECV, mib * 2**20, f, "direct", Proto.SIMPLE)
        assert c.channels == channels
        assert c.busbw <= channels * half
        assert c.busbw == pytest.approx(measured, rel=0.06)


def test_an_all_to_alls_parts_beyond_the_p2p_channels_share_their_blocks() -> None:
    """Inside a node a peer's send takes 8 parts from 128 MiB (a part passes 16 MiB at 4):
    7 peers x 8 parts on 32 channels, the rounds meeting on a channel split its warps. The
    node then moves what 32 send halves copy, no more (and no less: 28 of them at 64 MiB)."""
    from commwall.collectives.cost import p2p_block_bw
    from commwall.collectives.direct import _p2p_hops

    f = b200()
    half = p2p_block_bw(f) / 2
    hops, _, _, nc = _p2p_hops(
        f, Proto.SIMPLE, 2**30 / 8, network=False, peers=7, link_bw=f.intra_bw
    )
    assert nc == 8
    assert hops[-1].rate == pytest.approx(half * 32 / 56)
    big = evaluate(Op.ALLTOALL, 2**34, f, "direct", Proto.SIMPLE)
    assert 0.95 * 32 * half < big.busbw <= 32 * half < f.intra_bw
    mid = evaluate(Op.ALLTOALL, 2**26, f, "direct", Proto.SIMPLE)
    assert mid.channels == 28 and mid.busbw <= 28 * half


def test_sends_to_another_node_run_simple_on_shared_network_buffers() -> None:
    """Network p2p connections get no LL buffers (NCCL_ALLOC_P2P_NET_LL_BUFFERS=0): a small
    all-to-all's remote sends pay Simple's network step even when its local ones run LL, and
    the peers one node apart split NCCL_SHARED_STEPS (16) — 2 steps each for 8 peers, the full
    8 for a lone sendrecv peer."""
    from commwall.collectives.cost import net_latency
    from commwall.collectives.direct import _p2p_hops

    f = h100(n_domains=2)
    link = f.net_bw_per_rank
    remote, _, _, _ = _p2p_hops(f, Proto.LL, 4096, network=True, peers=8, link_bw=link)
    wire = remote[-1]
    assert wire.latency == net_latency(f, "ring", Proto.SIMPLE) > net_latency(f, "ring", Proto.LL)
    assert wire.window == 2 and all(h.window == 2 for h in remote)
    lone, _, _, _ = _p2p_hops(f, Proto.LL, 4096, network=True, peers=1, link_bw=link)
    assert lone[-1].window == 8
    small = evaluate(Op.ALLTOALL, 16 * 4096, f, "direct", Proto.LL)
    assert small.time > net_latency(f, "ring", Proto.SIMPLE)


def test_nccl_plan_docstring_examples() -> None:
    """The worked examples in the launch-plan module (chunks, channels, p2p groups) hold."""
    import doctest

    from commwall.collectives import nccl

    assert doctest.testmod(nccl).failed == 0


def test_peers_of_one_schedule_group_share_a_channel_block_across_nodes() -> None:
    """Across nodes the 8 rounds of a schedule group share one channel base (channel.h
    ncclP2pChannelBaseForRound), so each peer's send gets one warp of the block's twenty
    (sendrecv.h): an all-to-all's copies, not only its NIC, bound it. One node gives every
    round its own channels and the same 32 MiB all-to-all keeps half a block per send."""
    from commwall.collectives.cost import sm_channel_bw
    from commwall.collectives.direct import _p2p_hops
    from commwall.collectives.nccl import p2p_group_size, p2p_side_share

    assert p2p_group_size(8, 2) == 8 and p2p_group_size(8, 1) == 1
    assert p2p_side_share(8) == pytest.approx(1 / 20) and p2p_side_share(1) == 0.5
    a100_net = 23.7e9  # DGX A100: one HDR NIC per GPU, 2 p2p channels per network peer
    f = CommFabric(
        2, 8, 240e9, Hw.NVLINK, a100_net, Gen.AMPERE, channels=16, p2p_channels=16,
        nvlink_links=12, nic_gbps=25.0,
    )  # fmt: skip
    hops, _, _, nc = _p2p_hops(
        f, Proto.SIMPLE, 16 * 2**20, network=True, peers=8, link_bw=a100_net, works=8
    )
    copy = hops[0]
    assert copy.rate == pytest.approx(sm_channel_bw(f, Proto.SIMPLE) / 20)
    # eight peers x nc channels x one warp each fall short of the NIC: the copies bind
    assert 8 * nc * copy.rate < a100_net
    big = evaluate(Op.ALLTOALL, 2**30, f, "direct", Proto.SIMPLE)
    assert big.time > (2**30 / 2) / (8 * nc * copy.rate)  # half of it leaves the node
    # one node: a round per channel base, half a block per send as before
    one = CommFabric(1, 8, 240e9, Hw.NVLINK, a100_net, Gen.AMPERE, channels=16, nvlink_links=12)
    hops1, _, _, _ = _p2p_hops(one, Proto.SIMPLE, 4 * 2**20, network=False, peers=7, link_bw=240e9)
    assert hops1[1].rate == pytest.approx(sm_channel_bw(one, Proto.SIMPLE) / 2)  # copy out


def test_multi_node_p2p_channels_follow_the_communicators_step() -> None:
    """In a communicator that spans nodes every p2p send, NVLink peers included, moves in the
    network step (128 KiB, in parts of at most one step: init.cc computeBuffSizes, enqueue.cc
    addP2pToPlan), not in the 512 KiB NVLink step with parts up to 16 MiB."""
    from commwall.collectives.direct import _p2p_plan

    chunk_multi, nc_multi = _p2p_plan(h100(n_domains=2), 2**19, network=False)
    chunk_single, _ = _p2p_plan(h100(n_domains=1), 2**19, network=False)
    assert (chunk_multi, chunk_single) == (128 * 1024, 512 * 1024)
    assert 2**19 / nc_multi <= 128 * 1024


def test_hierarchical_is_sum_of_three_rings() -> None:
    f = h100(n_domains=8)
    s = 2**30
    c = evaluate(Op.ALL_REDUCE, s, f, "hierarchical", Proto.SIMPLE)
    rs = evaluate(Op.REDUCE_SCATTER, s, f.sub(n_domains=1), "ring", Proto.SIMPLE)
    ar = evaluate(Op.ALL_REDUCE, s / 8, f.sub(ranks_per_domain=1), "ring", Proto.SIMPLE)
    ag = evaluate(Op.ALL_GATHER, s, f.sub(n_domains=1), "ring", Proto.SIMPLE)
    assert c.time == pytest.approx(rs.time + ar.time + ag.time)


def test_nvls_tuner_uses_the_search_graph() -> None:
    # NCCL chooses NVLS by 2·nCh·bwIntra·eff·(nCh−1)/nCh: 8 heads at the search speed 40 GB/s
    # on DGX H100 ("NVLS P5 nCh 8 bw 40", nccl#1197) → 476 GB/s, rank-independent.
    f = h100()
    s = 2**33
    c = tuner(Op.ALL_REDUCE, s, f, "nvls", Proto.SIMPLE)
    bus = 2 * 8 * 40e9 * 0.85 * 7 / 8
    assert c.bw_time == pytest.approx(2 * 7 / 8 * s / bus)
    assert c.latency == pytest.approx(25 * US)
    with pytest.raises(Unsupported, match="Simple"):
        evaluate(Op.ALL_REDUCE, s, f, "nvls", Proto.LL)
    no_nvls = CommFabric(1, 8, 240e9, Hw.NVLINK, 0.0, Gen.AMPERE)
    with pytest.raises(Unsupported, match="NVSwitch3"):
        evaluate(Op.ALL_REDUCE, s, no_nvls, "nvls", Proto.SIMPLE)


def test_nvls_time_follows_the_bytes_up_to_the_tuners_busbw() -> None:
    # All-reduce moves S(1 + 1/n) through each GPU's NVLink at nvlsEfficiency (sjeaugey,
    # nccl#1083): 280 GB/s algbw on 8 H100, 252 on 4; NCCL's rank-independent busbw caps it:
    # 2 · 8 heads · 40 GB/s · 0.85 · 7/8 = 476 GB/s (nccl-tests#212: ~480 peak) = 272 GB/s algbw;
    # on 4 GPUs 2 · 4 · 60 · 0.85 · 3/4 = 306 GB/s busbw = 204 GB/s algbw.
    s = 2**36
    for g, tuner_algbw in ((8, 476e9 / 1.75), (4, 306e9 / 1.5)):
        c = evaluate(Op.ALL_REDUCE, s, h100(g=g), "nvls", Proto.SIMPLE)
        volume = 0.85 * H100_NVLINK / (1 + 1 / g)
        assert s / c.bw_time == pytest.approx(min(volume, tuner_algbw), rel=1e-6)
        assert c.channels == 16  # NVLS_NCHANNELS_SM90
    # 8 vs 72 GB200 (0.74 efficiency): the volume would let 72 GPUs reach 1.2x the busbw of 8;
    # the tuner's cap holds them to 1.1x (918 vs 831 GB/s; measured: 835 vs 840, flat)
    gb200 = dict(intra_bw=18 * 40.1e9, intra_hw=Hw.NVLINK, net_bw_per_rank=0.0, nvls=True)
    busbw = []
    for g in (8, 72):
        f = CommFabric(1, g, gen=Gen.BLACKWELL, **gb200)  # type: ignore[arg-type]
        c = evaluate(Op.ALL_REDUCE, s, f, "nvls", Proto.SIMPLE)
        busbw.append(2 * (g - 1) / g * s / c.bw_time)
    assert busbw[1] == pytest.approx(917.6e9) and busbw[0] < busbw[1] < 1.11 * busbw[0]
    # 16 MiB: 32 KiB chunks, loops of 16 ch × 8 heads, two loops of pipeline fill
    mid = evaluate(Op.ALL_REDUCE, 16 * 2**20, h100(), "nvls", Proto.SIMPLE)
    loop = 16 * 8 * 32768 / (476e9 / 1.75)
    assert mid.latency == pytest.approx(25 * US + 2 * loop)


def test_nvls_tree_is_bounded_by_nvls_and_the_domain_nics() -> None:
    s = 2**34
    three = evaluate(Op.ALL_REDUCE, s, h100(n_domains=8), "nvls_tree", Proto.SIMPLE)
    # every rank's S/8 shard crosses its NIC twice per direction (interior in one tree)
    assert s / three.bw_time == pytest.approx(8 * 47.5e9 / 2, rel=1e-3)
    two = evaluate(Op.ALL_REDUCE, s, h100(n_domains=2), "nvls_tree", Proto.SIMPLE)
    assert s / two.bw_time == pytest.approx(476e9 / 1.75, rel=1e-3)  # NVLS in the node binds
    assert tuner(Op.ALL_REDUCE, s, h100(n_domains=8), "nvls_tree", Proto.SIMPLE).bw_time == (
        pytest.approx(2 * 63 / 64 * s / (8 * 47.5e9))
    )


def test_nvls_tree_on_blackwell_x86_takes_the_tree_correction() -> None:
    b200 = dict(intra_bw=18 * 40.1e9, intra_hw=Hw.NVLINK, net_bw_per_rank=47.5e9, nvls=True)
    intel = CommFabric(4, 8, gen=Gen.BLACKWELL, cpu="intel", **b200)  # type: ignore[arg-type]
    grace = CommFabric(4, 8, gen=Gen.BLACKWELL, cpu="other", **b200)  # type: ignore[arg-type]
    s = 2**26  # index log2(2^26 / 64) = 20 → Simple factor 0.8
    a = tuner(Op.ALL_REDUCE, s, intel, "nvls_tree", Proto.SIMPLE)
    b = tuner(Op.ALL_REDUCE, s, grace, "nvls_tree", Proto.SIMPLE)
    assert a.bw_time == pytest.approx(b.bw_time / 0.8)


def test_collnet_halves_network_volume() -> None:
    f = h100(n_domains=16, net=25e9, collnet=True)
    s = 2**34
    sharp = evaluate(Op.ALL_REDUCE, s, f, "collnet", Proto.SIMPLE)
    ring_cost = tuner(Op.ALL_REDUCE, s, f, "ring", Proto.SIMPLE)
    # The ring moves 2(p−1)/p·S through the node NICs, SHARP S/g per rank at 0.9 efficiency.
    assert ring_cost.bw_time / sharp.bw_time == pytest.approx(2 * 127 / 128 * 0.9, rel=1e-6)


def test_pat_only_one_gpu_per_node() -> None:
    f = CommFabric(64, 1, 0.0, Hw.NVLINK, 47.5e9, Gen.HOPPER)
    c = evaluate(Op.ALL_GATHER, 2**20, f, "pat", Proto.SIMPLE)
    # tuning.cc by hand: 8 + log2i(64)·14/3.5 + 2.8·64 µs; S/(0.75·bw), no algBw conversion.
    assert c.latency == pytest.approx((8 + 6 * 14 / 3.5 + 2.8 * 64) * US)
    assert c.tuner_time == pytest.approx(c.latency + 2**20 / (0.75 * 47.5e9))
    assert c.bw_time == pytest.approx(63 / 64 * 2**20 / 47.5e9)  # the bytes each rank sends
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
    assert not best_large.estimated and best_large.tuner_time is not None
    forced = choose(Op.ALL_REDUCE, 2**33, f, algo="ring").best
    assert forced.algo == "ring"
    why = choose(Op.ALL_REDUCE, 2**20, f).explain()
    assert "lowest NCCL's estimate" in why and "takes" in why


def test_nccl_picks_by_its_estimate_policy_all_by_time() -> None:
    # 2 nodes: NCCL's model rates NVLS-tree above the ring at 64 MiB; policy "all" ranks by the
    # time each takes, which is what a better tuner would pick.
    f = h100(n_domains=2, channels=16)
    nccl = choose(Op.ALL_REDUCE, 64 * 2**20, f)
    assert nccl.best.selection_time == min(c.selection_time for c in nccl.considered)
    every = choose(Op.ALL_REDUCE, 64 * 2**20, f, policy="all")
    assert every.best.time == min(c.time for c in every.considered)
    assert every.best.time <= nccl.best.time


def test_nccl_tests_single_process_launch_floor() -> None:
    from commwall.collectives.nccl import nccl_tests_time

    assert nccl_tests_time(50e-6, 8) == 50e-6
    assert nccl_tests_time(5e-6, 1) == 5e-6
    assert nccl_tests_time(5e-6, 8) == pytest.approx(33.7e-6)  # nccl-tests#123, -g 8


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


@pytest.mark.parametrize("op", list(Op))
def test_an_empty_collective_costs_nothing_and_empty_sends_still_meet(op: Op) -> None:
    # NCCL discards empty collectives before launching (enqueue.cc taskAppend); p2p still pairs.
    f = h100(n_domains=2)
    c = choose(op, 0.0, f).best
    assert c.bw_time == 0.0 and not c.estimated
    if op in (Op.ALLTOALL, Op.SENDRECV):
        assert 0 < c.time < 20 * US
        assert c.time <= choose(op, 512.0, f).best.time
    else:
        assert c.time == 0.0
