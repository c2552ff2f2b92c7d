"""The packet engine on plain traffic, against closed forms and the flow engine (the issue's
cross-checks): line rate minus headers, fair sharing under every congestion control, the flow
engine on an uncongested permutation, and a 64:1 incast lossless only where the fabric is."""

from __future__ import annotations

import doctest
import itertools
from dataclasses import replace

import numpy as np
import pytest

from commwall.engines.base import InvariantError
from commwall.engines.flow.traffic import pattern_flows, run_traffic
from commwall.engines.packet import PacketConfig, jain, result, run_packet_traffic, traffic
from commwall.engines.packet.network import Network, Task, graph_from_topology, route_maps
from commwall.engines.packet.traffic import topology_routes, with_cable_latency
from commwall.topology import fat_tree, leaf_spine
from commwall.transport import FABRICS, TransportError, fabric_profile

RATE = 12.5e9  # 100 Gb/s
MTU = 4096


def _leaf_spine(cable: float = 1e-6):  # type: ignore[no-untyped-def]
    """8 hosts on 4 leaves (2 each), 2 spines, 100 Gb/s, ``cable`` s per cable."""
    return with_cable_latency(leaf_spine(4, 8, link_rate=RATE), cable)


def _wire(nbytes: int, fabric: str) -> int:
    """Bytes on the wire for ``nbytes`` of payload in MTU packets."""
    return nbytes + -(-nbytes // MTU) * fabric_profile(fabric, RATE, MTU).header_bytes


# ---- one flow: line rate minus header overhead ------------------------------------------------


@pytest.mark.parametrize("fabric", FABRICS)
def test_single_long_flow_reaches_line_rate_minus_headers(fabric: str) -> None:
    size = 8_000_000
    r = run_packet_traffic(_leaf_spine(), [2], [6], size, fabric)
    ideal = _wire(size, fabric) / RATE
    # host → leaf → spine → leaf → host: 4 cables of 1 µs, 3 switches, one packet's serialisation
    latency = 4e-6 + 3 * 150e-9 + (MTU + 82) / RATE
    assert r.fct[0] >= ideal
    slack = 0.02 if fabric == "lossy" else 0.001  # NewReno's slow start from 10 segments
    assert r.fct[0] <= ideal * (1 + slack) + latency
    assert r.counters["drop_packets"] == 0 and r.counters["retransmitted"] == 0


def test_payload_goodput_is_the_header_efficiency() -> None:
    """IB carries 26 B per 4 KiB packet, RoCEv2 82 B: goodput MTU/(MTU + header) of the line."""
    size = 32_000_000
    for fabric, header in (("ib", 26), ("roce", 82)):
        r = run_packet_traffic(_leaf_spine(0.0), [2], [6], size, fabric)
        assert size / r.fct[0] / RATE == pytest.approx(MTU / (MTU + header), rel=2e-3)


# ---- two flows into one port: fair shares ------------------------------------------------------


@pytest.mark.parametrize("fabric", FABRICS)
def test_two_long_flows_share_one_port_fairly(fabric: str) -> None:
    """Two senders on different leaves, one receiver: Jain's index of what each had delivered
    when the first finished > 0.95, under credits, DCQCN, NSCC and NewReno. NewReno gets 4 MiB
    switch buffers (a 512 KiB queue share): it converges one loss cycle at a time, and with the
    default 2 MiB share a cycle outlasts the run. (RoCE without PFC at 4 MiB drops before ECN
    marks and waits out go-back-N timeouts: the next test's business, not fairness.)"""
    lossy = fabric == "lossy"
    size = 32_000_000 if lossy else 8_000_000
    cfg = PacketConfig(buffer=4 * 2**20) if lossy else PacketConfig()
    r = run_packet_traffic(_leaf_spine(), [2, 6], [0, 0], size, fabric, config=cfg)
    assert r.fairness > 0.95
    # together they cannot beat the receiver's link
    assert r.makespan >= 2 * _wire(size, fabric) / RATE


def test_jain_index() -> None:
    assert jain([3, 3]) == 1.0
    assert jain([1, 0]) == 0.5
    assert jain([]) == 1.0


# ---- the flow engine, where the models meet ----------------------------------------------------


def _disjoint_permutation():  # type: ignore[no-untyped-def]
    """16 hosts of a k=8 fat tree sending in one cycle, whose ECMP routes share no link."""
    topo = with_cable_latency(fat_tree(8, link_rate=RATE), 1e-6)
    rng = np.random.default_rng(2)
    hosts = rng.choice(128, size=16, replace=False)
    order = rng.permutation(16)
    return topo, hosts[order], hosts[np.roll(order, -1)]


@pytest.mark.parametrize("fabric", ["ib", "roce", "uec"])
def test_uncongested_permutation_agrees_with_flow_engine(fabric: str) -> None:
    """Both engines route ECMP with the same hash; on a permutation whose routes share no link
    (the flow engine says every flow runs at its hosts' line rate) each flow's completion agrees
    within 5% (the packet engine adds headers: 0.6% on IB, 2% on Ethernet)."""
    topo, src, dst = _disjoint_permutation()
    flow = run_traffic(topo, src, dst, 2e6, "ecmp", seed=0)
    assert flow.throughput_ratio == pytest.approx(1.0)  # the premise: uncongested
    packet = run_packet_traffic(topo, src, dst, 2_000_000, fabric, routing="ecmp", seed=0)
    np.testing.assert_allclose(packet.fct, flow.fct, rtol=0.05)
    assert np.all(packet.fct >= flow.fct)


def test_spraying_at_full_load_queues_where_the_fluid_does_not() -> None:
    """A full permutation sprayed packet by packet over a non-blocking fat tree: the fluid model
    balances perfectly; random per-packet choices at 100% load build queues (each uplink sees a
    binomial share), so the packet engine finishes later, but not by much."""
    topo = with_cable_latency(fat_tree(4, link_rate=RATE), 1e-6)
    src, dst = pattern_flows("permutation", 16, seed=1)
    flow = run_traffic(topo, src, dst, 2e6, "spray", seed=1)
    assert flow.throughput_ratio == pytest.approx(1.0)
    packet = run_packet_traffic(topo, src, dst, 2_000_000, "ib", routing="spray", seed=1)
    ratio = packet.fct / flow.fct
    assert ratio.min() >= 1.0 and ratio.max() < 1.2
    assert packet.counters["discarded"] == 0  # out of order, placed by a selective receiver


# ---- incast: lossless where the fabric is --------------------------------------------------------


@pytest.fixture(scope="module")
def incast_64() -> dict[str, object]:
    """64:1 incast of 256 KB flows on a k=8 fat tree, 4 MiB switch buffers, per fabric."""
    topo = with_cable_latency(fat_tree(8, link_rate=RATE), 1e-6)
    cfg = PacketConfig(buffer=4 * 2**20)
    src = list(range(1, 65))
    return {
        f: run_packet_traffic(topo, src, [0] * 64, 256_000, f, config=cfg, seed=0) for f in FABRICS
    }


def test_incast_lossless_on_credits_and_pfc(incast_64: dict[str, object]) -> None:
    for fabric in ("ib", "roce"):
        r = incast_64[fabric]
        assert r.counters["drop_packets"] == 0  # type: ignore[attr-defined]
        assert "lossless fabric dropped nothing" in r.invariants  # type: ignore[attr-defined]
    assert incast_64["roce"].counters["pause_frames"] > 0  # type: ignore[attr-defined]
    ideal = 64 * _wire(256_000, "ib") / RATE
    assert incast_64["ib"].makespan == pytest.approx(ideal, rel=0.03)  # type: ignore[attr-defined]


def test_incast_drops_without_pfc_and_recovers(incast_64: dict[str, object]) -> None:
    for fabric in ("roce-nopfc", "lossy"):
        r = incast_64[fabric]
        c = r.counters  # type: ignore[attr-defined]
        assert c["drop_packets"] > 0 and c["retransmitted"] > 0
        assert c["delivered"] == 64 * 256_000  # every byte arrives in the end
    uec = incast_64["uec"].counters  # type: ignore[attr-defined]
    assert uec["trim_packets"] > 0 and uec["drop_packets"] == 0


def test_incast_buffers_never_exceed_their_size(incast_64: dict[str, object]) -> None:
    for r in incast_64.values():
        assert r.counters["peak_buffer_bytes"] <= 4 * 2**20  # type: ignore[attr-defined]
        assert "no buffer above its size" in r.invariants  # type: ignore[attr-defined]


# ---- flow control, closed forms ----------------------------------------------------------------


def test_credit_limited_throughput_is_credits_over_the_loop() -> None:
    """IB: a link runs at min(line, credits / credit-loop time) (transport.md §1.1); with 64 KiB
    of credits over 10 µs cables the loop (2 × 10 µs + the 1 µs update period) caps it."""
    topo = _leaf_spine(10e-6)
    credits = 65_536
    r = run_packet_traffic(
        topo, [2], [6], 8_000_000, "ib", config=PacketConfig(credit_bytes=credits)
    )
    loop = 2 * 10e-6 + 1e-6
    assert 8_000_000 / r.fct[0] == pytest.approx(credits / loop, rel=0.1)


def test_store_and_forward_adds_one_serialisation_per_switch() -> None:
    one = MTU  # a single packet: its completion is pure latency
    cut = run_packet_traffic(_leaf_spine(), [2], [6], one, "ib").fct[0]
    saf = run_packet_traffic(
        _leaf_spine(), [2], [6], one, "ib", config=PacketConfig(cut_through=False)
    ).fct[0]
    # three switches each wait for the tail: (wire − 64-byte header) at line rate per switch
    assert saf - cut == pytest.approx(3 * (MTU + 26 - 64) / RATE, rel=1e-3)


def test_bit_errors_are_dropped_at_the_fcs_and_resent() -> None:
    ber = 2e-7
    r = run_packet_traffic(_leaf_spine(), [2], [6], 4_000_000, "roce", config=PacketConfig(ber=ber))
    c = r.counters
    assert c["corrupt_packets"] > 0 and c["retransmitted"] > 0
    assert c["delivered"] == 4_000_000
    # expected corruptions: data packets sent (go-back-N resends included) × 4 fabric links ×
    # P(a 4,178-byte packet has a bit error); ACKs are 64-byte targets (about 1/65 as likely)
    p = 1 - (1 - ber) ** (8 * (MTU + 82))
    packets = c["sent"] / MTU
    expected = packets * 4 * p * (1 + 64 / (MTU + 82))
    assert c["corrupt_packets"] == pytest.approx(expected, rel=0.3)


@pytest.mark.parametrize("fabric", ["ib", "roce"])
def test_link_level_retry_replays_instead_of_resending_end_to_end(fabric: str) -> None:
    """IB LLR / NVLink-style replay: a corrupted packet is resent by the link it failed on, one
    link round trip later, so the transport never notices (no end-to-end retransmission)."""
    cfg = PacketConfig(ber=2e-7, link_retry=True)
    r = run_packet_traffic(_leaf_spine(), [2], [6], 4_000_000, fabric, config=cfg)
    c = r.counters
    assert c["corrupt_packets"] > 0
    assert c["link_replays"] == c["corrupt_packets"]
    assert c["retransmitted"] == 0 and c["corrupted"] == 0 and c["timeouts"] == 0
    assert c["delivered"] == 4_000_000
    end_to_end = run_packet_traffic(_leaf_spine(), [2], [6], 4_000_000, fabric,
                                    config=PacketConfig(ber=2e-7))  # fmt: skip
    assert r.fct[0] < end_to_end.fct[0]  # go-back-N rewinds a window per error


def test_pfc_resumes_a_port_that_drained_while_others_filled_the_buffer() -> None:
    """XON is re-checked on every departure: a paused port whose own bytes have gone resumes
    even when other ports still fill the shared buffer (it used to stay paused for good)."""
    topo = with_cable_latency(fat_tree(4, link_rate=50e9), 100e-9)
    cfg = PacketConfig(buffer=150_000)
    r = run_packet_traffic(topo, list(range(1, 16)), [0] * 15, 256_000, "roce", config=cfg)
    assert r.counters["pause_frames"] > 0 and r.counters["timeouts"] == 0
    assert r.counters["delivered"] == 15 * 256_000
    assert r.makespan < 2 * 15 * _wire(256_000, "roce") / 50e9


@pytest.mark.parametrize(("fabric", "buffer", "message"), [
    ("uec", 17_000, "one packet at the dynamic share"),
    ("roce", 40_000, "PFC headroom plus one packet"),
])  # fmt: skip
def test_buffers_too_small_to_forward_a_packet_are_refused(
    fabric: str, buffer: int, message: str
) -> None:
    with pytest.raises(TransportError, match=message):
        run_packet_traffic(_leaf_spine(), [2], [0], 100_000, fabric,
                           config=PacketConfig(buffer=buffer))  # fmt: skip


def test_a_run_without_progress_stops_with_a_clear_error() -> None:
    """A link too slow for one packet per retransmission timeout: 64 fruitless timeouts in a
    row end the run with a message, not an endless loop."""
    slow = with_cable_latency(leaf_spine(4, 8, link_rate=125.0), 1e-6)  # 1 kb/s
    with pytest.raises(InvariantError, match="made no progress over 64"):
        run_packet_traffic(slow, [2], [6], 100_000, "ib", config=PacketConfig(kernel="python"))
    with pytest.raises(TransportError, match="rto=1e-09"):
        run_packet_traffic(_leaf_spine(), [2], [6], 4096, "lossy", rto_s=1e-9)


def test_pfc_headroom_that_does_not_fit_is_refused() -> None:
    with pytest.raises(TransportError, match="PFC headroom"):
        run_packet_traffic(
            _leaf_spine(), [2], [0], 100_000, "roce", config=PacketConfig(buffer=17_000)
        )


# ---- determinism, invariants, bad input --------------------------------------------------------


def test_same_seed_identical_results_other_seed_other_sprays() -> None:
    topo = with_cable_latency(fat_tree(4, link_rate=RATE), 1e-6)
    src, dst = pattern_flows("permutation", 16, seed=2)
    one = run_packet_traffic(topo, src, dst, 500_000, "uec", seed=5).to_dict()
    two = run_packet_traffic(topo, src, dst, 500_000, "uec", seed=5).to_dict()
    three = run_packet_traffic(topo, src, dst, 500_000, "uec", seed=6).to_dict()
    for d in (one, two, three):
        d.pop("wall_s")
        d.pop("events_per_s")
    assert one == two
    assert one["fct_s"] != three["fct_s"]


def test_invariants_catch_lost_bytes() -> None:
    """The conservation check is real: a run whose books do not balance raises."""
    topo = _leaf_spine()
    prof = fabric_profile("ib", RATE, MTU)
    net = Network(graph_from_topology(topo), prof, PacketConfig(), switch_latency=150e-9,
                  routing="ecmp")  # fmt: skip
    fwd = route_maps(topology_routes(topo, [2], [6], "ecmp", 0)[0], net.ports)
    rev = route_maps(topology_routes(topo, [6], [2], "ecmp", 1)[0], net.ports)
    net.add_task(Task("t", 0, [net.add_flow(2, 6, 100_000, fwd, rev)]))
    net.run()
    assert "every flow delivered and acknowledged" in net.check()
    net.c["dropped"] += 1
    with pytest.raises(InvariantError, match="bytes sent"):
        net.check()
    net.c["dropped"] -= 1
    net.nodes[0].peak = net.nodes[0].buffer + 1
    with pytest.raises(InvariantError, match="buffer peaked"):
        net.check()


def test_lossless_fabric_that_drops_is_an_error() -> None:
    topo = _leaf_spine()
    r = run_packet_traffic(topo, [2], [6], 100_000, "ib")
    assert "lossless fabric dropped nothing" in r.invariants
    prof = replace(fabric_profile("roce-nopfc", RATE, MTU), link_fc="pfc")
    assert prof.lossless


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"fabric": "fddi"}, "fabric='fddi'"),
        ({"routing": "cells"}, "routing='cells'"),
        ({"src": [1, 2], "dst": [0]}, "same number"),
        ({"src": [0], "dst": [0]}, "sends to itself"),
        ({"src": [99], "dst": [0]}, "src=99"),
        ({"nbytes": 0}, "at least 1 byte"),
    ],
)
def test_bad_traffic_is_a_clear_error(kwargs: dict[str, object], message: str) -> None:
    args: dict[str, object] = {"src": [1], "dst": [0], "nbytes": 1000, "fabric": "ib"}
    args.update(kwargs)
    with pytest.raises(TransportError, match=message):
        run_packet_traffic(_leaf_spine(), **args)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"mtu": 100}, "mtu=100"),
        ({"buffer": 1000}, "buffer=1000"),
        ({"ber": 0.5}, "ber=0.5"),
        ({"ack_every": 0}, "ack_every=0"),
        ({"credit_period_s": float("nan")}, "credit_period_s=nan"),
        ({"cut_through": 1}, "cut_through=1"),
    ],
)
def test_bad_config_names_the_field(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(TransportError, match=message):
        PacketConfig(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("module", [traffic, result])
def test_doctests(module: object) -> None:
    assert doctest.testmod(module).failed == 0  # type: ignore[arg-type]


@pytest.mark.parametrize("kernel", ["python", "numba"])
def test_progress_reports_do_not_change_the_run(
    kernel: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 19, row 17: a reporting run runs the same events (in slices) as a silent one."""
    from commwall.engines.packet import network

    if kernel == "numba":
        pytest.importorskip("numba")
    monkeypatch.setattr(network, "PROGRESS_EVENTS", 500)  # many slices on a small run
    topo = _leaf_spine()
    src, dst = pattern_flows("permutation", 8, seed=3)
    cfg = PacketConfig(mtu=MTU, kernel=kernel)
    fabric = "ib" if kernel == "numba" else "uec"  # numba runs IB with ECMP
    routing = "ecmp" if kernel == "numba" else "spray"
    silent = run_packet_traffic(topo, src, dst, 300_000, fabric, routing=routing, config=cfg)
    seen: list[tuple[int, float, int, int]] = []
    heard = run_packet_traffic(topo, src, dst, 300_000, fabric, routing=routing, config=cfg,
                               progress=lambda *a: seen.append(a))  # fmt: skip
    timing = ("wall_s", "events_per_s")
    a = {k: v for k, v in silent.to_dict().items() if k not in timing}
    assert a == {k: v for k, v in heard.to_dict().items() if k not in timing}
    assert seen[-1][0] == heard.events and seen[-1][2] == seen[-1][3] == len(src)
    assert seen[-1][1] >= heard.makespan > 0
    if kernel == "python":
        assert len(seen) > 5 and all(
            x[0] <= y[0] and x[1] <= y[1] for x, y in itertools.pairwise(seen)
        )
