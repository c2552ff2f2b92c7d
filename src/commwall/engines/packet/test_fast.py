"""The compiled kernel (fast.py) against the pure-Python reference: bit-identical results."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from commwall.engines.base import InvariantError
from commwall.engines.packet import fast, run_packet_traffic
from commwall.engines.packet.config import PacketConfig
from commwall.engines.packet.test_golden import CASES
from commwall.engines.packet.traffic import with_cable_latency
from commwall.topology import fat_tree, leaf_spine
from commwall.transport import TransportError

pytest.importorskip("numba")

KIB = 1024
#: Golden cases the compiled kernel covers (InfiniBand, lossy Ethernet and UEC, any routing, no
#: bit errors).
GOLDEN = sorted(
    name
    for name, kw in CASES.items()
    if kw["fabric"] in ("ib", "lossy", "uec") and (kw["config"] is None or kw["config"].ber == 0)
)


def _fat_tree(k: int) -> Any:
    return with_cable_latency(fat_tree(k, link_rate=12.5e9), 1e-6)


def _leaf_spine() -> Any:
    return with_cable_latency(leaf_spine(8, 32, link_rate=12.5e9), 1e-6)


def _permutation(n: int, seed: int) -> tuple[list[int], list[int]]:
    order = np.random.default_rng(seed).permutation(n)
    dst = np.empty(n, dtype=np.int64)
    dst[order] = np.roll(order, -1)
    return list(range(n)), [int(x) for x in dst]


def _both(topology: Any, config: PacketConfig | None = None, fabric: str = "ib", **kw: Any) -> None:
    """Run with both kernels; every figure but the wall-clock ones must match exactly."""
    base = config or PacketConfig()
    out = {}
    for kernel in ("python", "numba"):
        cfg = PacketConfig(**{**base.__dict__, "kernel": kernel})
        result = run_packet_traffic(topology, config=cfg, fabric=fabric, **kw)
        assert result.kernel == kernel
        d = result.to_dict()
        assert d.pop("kernel", "python") == kernel
        for key in ("wall_s", "events_per_s"):
            d.pop(key)
        d["fct"] = result.fct.tolist()
        d["start"] = result.start.tolist()
        out[kernel] = d
    assert out["numba"] == out["python"]


@pytest.mark.parametrize("name", GOLDEN)
def test_golden_cases(name: str) -> None:
    kw = dict(CASES[name])
    _both(kw.pop("topology")(), **kw)


def test_incast15_fat_tree4() -> None:
    _both(_fat_tree(4), src=list(range(1, 16)), dst=[0] * 15, nbytes=256 * KIB, seed=3)


def test_permutation_fat_tree4() -> None:
    src, dst = _permutation(16, 5)
    _both(_fat_tree(4), src=src, dst=dst, nbytes=300_000, seed=5)


def test_permutation_leaf_spine() -> None:
    src, dst = _permutation(32, 9)
    _both(_leaf_spine(), src=src, dst=dst, nbytes=200 * KIB, seed=9)


def test_incast127_fat_tree8_odd_config() -> None:
    odd = PacketConfig(cut_through=False, credit_period_s=0.3e-6, ack_every=4)
    _both(_fat_tree(8), odd, src=list(range(1, 128)), dst=[0] * 127, nbytes=64 * KIB, seed=1)


def test_window_and_uneven_sizes() -> None:
    """A window (max_inflight), sizes not a multiple of the MTU, a coarse sample interval."""
    cfg = PacketConfig(max_inflight=20 * KIB, mtu=1024, sample_s=3e-6, ack_every=3)
    sizes = [1, 4097, 70_001, 123_457]
    _both(_fat_tree(4), cfg, src=[1, 2, 3, 4], dst=[0, 0, 9, 9], nbytes=sizes, seed=2)


def test_timeouts_fire() -> None:
    """A tiny RTO: timers fire, go-back-N resends, duplicates and discards, NACKs."""
    kw: dict[str, Any] = dict(src=list(range(1, 8)), dst=[0] * 7, nbytes=64 * KIB, seed=4)
    _both(_fat_tree(4), rto_s=2e-6, **kw)
    numba = PacketConfig(kernel="numba")
    r = run_packet_traffic(_fat_tree(4), fabric="ib", rto_s=2e-6, config=numba, **kw)
    assert r.kernel == "numba"
    assert r.counters["timeouts"] > 0 and r.counters["retransmitted"] > 0


def test_a_run_without_progress_stops_as_in_python() -> None:
    """A link too slow for one packet per retransmission timeout: the compiled loop stops after
    64 fruitless timeouts in a row with the Python loop's error."""
    slow = with_cable_latency(leaf_spine(4, 8, link_rate=125.0), 1e-6)  # 1 kb/s
    for routing in ("ecmp", "spray"):
        with pytest.raises(InvariantError, match="made no progress over 64"):
            run_packet_traffic(
                slow, [2], [6], 100_000, "ib", routing=routing, config=PacketConfig(kernel="numba")
            )


def test_auto_falls_back_to_python(monkeypatch: pytest.MonkeyPatch) -> None:
    topo = _fat_tree(4)
    kw: dict[str, Any] = dict(src=[1, 2], dst=[0, 0], nbytes=64 * KIB)
    # small runs stay in Python (importing numba costs more than they take) ...
    assert run_packet_traffic(topo, fabric="ib", **kw).kernel == "python"
    # ... large ones in the subset compile
    monkeypatch.setattr(fast, "AUTO_MIN_EVENTS", 0)
    assert run_packet_traffic(topo, fabric="ib", **kw).kernel == "numba"
    assert run_packet_traffic(topo, fabric="roce", **kw).kernel == "python"
    assert run_packet_traffic(topo, fabric="ib", routing="spray", **kw).kernel == "numba"
    assert run_packet_traffic(topo, fabric="uec", routing="spray", **kw).kernel == "numba"
    assert run_packet_traffic(topo, fabric="roce-nopfc", **kw).kernel == "python"
    ber = PacketConfig(ber=1e-7)
    assert run_packet_traffic(topo, fabric="ib", config=ber, **kw).kernel == "python"


def test_numba_outside_the_subset_raises() -> None:
    with pytest.raises(TransportError, match=r"kernel='numba'.*fabric 'roce'"):
        run_packet_traffic(
            _fat_tree(4), [1], [0], 4096, "roce", config=PacketConfig(kernel="numba")
        )


@pytest.mark.parametrize("routing", ["spray", "adaptive"])
def test_per_packet_routing_matches_python(routing: str) -> None:
    """Spraying and adaptive routing on the compiled loop: every switch's choice, every
    out-of-order arrival at the selective receivers, event for event."""
    src, dst = _permutation(32, 11)
    _both(_leaf_spine(), src=src, dst=dst, nbytes=200_000, seed=11, routing=routing)
    _both(_fat_tree(4), src=list(range(1, 16)), dst=[0] * 15, nbytes=128 * KIB, seed=2,
          routing=routing)  # fmt: skip


@pytest.mark.parametrize("routing", ["ecmp", "spray"])
def test_lossy_drops_and_newreno_match_python(routing: str) -> None:
    """Lossy Ethernet on the compiled loop: switches drop what α × the free buffer refuses,
    NewReno halves on three duplicate ACKs and restarts on timeouts — event for event."""
    small = PacketConfig(buffer=256 * KIB)
    kw: dict[str, Any] = dict(src=list(range(1, 16)), dst=[0] * 15, nbytes=256 * KIB, seed=6)
    _both(_fat_tree(4), config=small, fabric="lossy", routing=routing, **kw)
    numba = PacketConfig(buffer=256 * KIB, kernel="numba")
    r = run_packet_traffic(_fat_tree(4), fabric="lossy", routing=routing, config=numba, **kw)
    assert r.kernel == "numba"
    assert r.counters["drop_packets"] > 0 and r.counters["retransmitted"] > 0


def test_uec_trims_marks_and_nscc_match_python() -> None:
    """UEC on the compiled loop: trimmed headers as control and their NACKs, ECN marks drawn
    from the network's own Mersenne Twister (handed back afterwards), NSCC — event for event."""
    kw: dict[str, Any] = dict(src=list(range(1, 16)), dst=[0] * 15, nbytes=256 * KIB, seed=8)
    _both(_fat_tree(4), fabric="uec", **kw)
    _both(_fat_tree(4), config=PacketConfig(buffer=192 * KIB), fabric="uec", **kw)
    src, dst = _permutation(32, 12)
    _both(_leaf_spine(), fabric="uec", src=src, dst=dst, nbytes=300_000, seed=12)
    r = run_packet_traffic(_fat_tree(4), fabric="uec", config=PacketConfig(kernel="numba"), **kw)
    assert r.kernel == "numba"
    assert r.counters["trim_packets"] > 0 and r.counters["ecn_marks"] > 0
    assert r.counters["repaths"] > 0


def test_selective_timeouts_resend_only_what_is_missing() -> None:
    """A tiny RTO under spraying: the selective sender queues only unacknowledged packets for
    retransmission (Sender._resend), as the Python loop does."""
    kw: dict[str, Any] = dict(src=list(range(1, 8)), dst=[0] * 7, nbytes=64 * KIB, seed=4)
    _both(_fat_tree(4), rto_s=2e-6, routing="spray", **kw)
    numba = PacketConfig(kernel="numba")
    r = run_packet_traffic(
        _fat_tree(4), fabric="ib", rto_s=2e-6, routing="spray", config=numba, **kw
    )
    assert r.kernel == "numba"
    assert r.counters["timeouts"] > 0 and r.counters["retransmitted"] > 0


def test_kernel_is_validated() -> None:
    with pytest.raises(TransportError, match=r"kernel='cuda'.*'auto', 'python', 'numba'"):
        PacketConfig(kernel="cuda")
