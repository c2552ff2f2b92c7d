"""The transports' rules against their closed forms (reference transport.md §2–3)."""

from __future__ import annotations

import doctest
import math

import pytest

from commwall.transport import (
    FABRICS,
    EcnParams,
    TransportError,
    dcqcn,
    fabric,
    fabric_profile,
    nscc,
    pfc_headroom,
    reno,
)
from commwall.transport.dcqcn import Dcqcn, DcqcnParams
from commwall.transport.nscc import Nscc
from commwall.transport.reno import Reno

LINE = 12.5e9  # 100 Gb/s in bytes/s


# ---- DCQCN (Zhu et al., SIGCOMM 2015) --------------------------------------------------------


def test_dcqcn_cut_follows_alpha() -> None:
    p = DcqcnParams()
    d = Dcqcn(LINE, p)
    d.on_cnp()  # α starts at 1: R_C halves, R_T remembers the old rate
    assert d.rate == pytest.approx(LINE / 2) and d.target == LINE
    assert d.alpha == pytest.approx(1.0)  # (1 − g)·1 + g
    d.on_cnp()
    assert d.rate == pytest.approx(LINE / 4) and d.target == pytest.approx(LINE / 2)


def test_dcqcn_alpha_decays_per_quiet_period() -> None:
    d = Dcqcn(LINE, DcqcnParams())
    d.on_cnp()
    d.on_tick()  # the CNP's own period: no decay yet
    for _ in range(10):
        d.on_tick()
    assert d.alpha == pytest.approx((1 - 1 / 256) ** 10)


def test_dcqcn_fast_recovery_then_additive_then_hyper_increase() -> None:
    p = DcqcnParams(rai_share=0.01, rhai_share=0.1)
    d = Dcqcn(LINE, p)
    d.on_cnp()
    d.on_cnp()  # R_C = L/4, R_T = L/2
    for _ in range(p.fast_recovery):
        d.on_tick()
    # F halvings of the gap to the target
    assert d.rate == pytest.approx(LINE / 2 - (LINE / 4) / 2**p.fast_recovery)
    assert d.target == pytest.approx(LINE / 2)
    d.on_tick()  # i = F + 1, j = 0: additive increase
    assert d.target == pytest.approx(LINE / 2 + 0.01 * LINE)
    # byte counter past F as well: hyper increase by (min(i, j) − F)·R_HAI
    for _ in range(p.fast_recovery + 1):
        d.on_sent(int(p.byte_counter))
    assert d.j == p.fast_recovery + 1
    assert d.target == pytest.approx(min(LINE, LINE / 2 + 0.01 * LINE * 6 + 0.1 * LINE))


def test_dcqcn_never_below_min_rate_nor_above_line() -> None:
    d = Dcqcn(LINE, DcqcnParams())
    for _ in range(200):
        d.on_cnp()
    assert d.rate == pytest.approx(d.p.min_rate)
    for _ in range(10_000):
        d.on_tick()
    assert d.rate <= LINE and d.target <= LINE
    assert not d.limited or d.rate > 0.99 * LINE


# ---- NSCC (Ultra Ethernet; uet-htsim uec.cpp) -------------------------------------------------


def test_nscc_starts_at_one_bdp_and_caps_at_one_and_a_half() -> None:
    n = Nscc(LINE, 12e-6, 4178)
    assert n.cwnd == pytest.approx(LINE * 12e-6)
    assert n.maxwnd == pytest.approx(1.5 * LINE * 12e-6)
    assert n.target == pytest.approx(0.75 * 12e-6)
    for i in range(10_000):  # no congestion: the window grows to its cap and stays
        n.on_ack(i * 1e-6, 4096, delay_s=0.0, ecn=False)
    assert n.cwnd == pytest.approx(n.maxwnd)


def test_nscc_decreases_at_most_once_per_base_rtt() -> None:
    n = Nscc(LINE, 12e-6, 4178)
    start = n.cwnd
    n.on_ack(1e-3, 4096, delay_s=30e-6, ecn=True)
    once = n.cwnd
    assert once < start
    n.on_ack(1e-3 + 1e-6, 4096, delay_s=30e-6, ecn=True)  # same base RTT: no second cut
    assert n.cwnd >= once
    assert once >= 0.5 * start  # a cut is never deeper than half


def test_nscc_ecn_without_delay_moves_the_flow() -> None:
    n = Nscc(LINE, 12e-6, 4178)
    assert n.on_ack(0.0, 4096, delay_s=0.0, ecn=True) is True
    assert n.on_ack(0.0, 4096, delay_s=0.0, ecn=False) is False


def test_nscc_quick_adapt_and_timeout() -> None:
    n = Nscc(LINE, 12e-6, 4178)
    n.on_ack(0.0, 4096, delay_s=0.0, ecn=False)
    n.on_trim(1e-3)  # little delivered over the last RTT + target: fall to what was delivered
    assert n.cwnd == pytest.approx(4178)  # at least one MSS
    n.on_timeout(2e-3)
    assert n.cwnd == 4178


# ---- NewReno (RFC 5681 / 6582) ----------------------------------------------------------------


def test_reno_slow_start_avoidance_and_losses() -> None:
    r = Reno(1000)
    assert r.cwnd == 10_000  # IW10 (RFC 6928)
    r.on_ack(1000)
    assert r.cwnd == 11_000  # slow start: +1 MSS per MSS acked
    r.on_dupacks()
    assert r.cwnd == r.ssthresh == 5_500
    r.on_ack(1000)  # congestion avoidance: +MSS²/cwnd
    assert r.cwnd == pytest.approx(5_500 + 1000 * 1000 / 5_500)
    r.on_timeout()
    assert r.cwnd == 1000 and r.ssthresh == pytest.approx((5_500 + 1000 * 1000 / 5_500) / 2)


# ---- fabric profiles --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "fc", "sender", "reliability", "spray", "trim"),
    [
        ("ib", "credit", "none", "gbn", False, False),
        ("roce", "pfc", "dcqcn", "gbn", False, False),
        ("roce-nopfc", "none", "dcqcn", "gbn", False, False),
        ("uec", "none", "nscc", "selective", True, True),
        ("lossy", "none", "reno", "selective", False, False),
    ],
)
def test_profiles(
    name: str, fc: str, sender: str, reliability: str, spray: bool, trim: bool
) -> None:
    p = fabric_profile(name, LINE, 4096)
    assert (p.link_fc, p.sender, p.reliability, p.spray, p.trim) == (
        fc,
        sender,
        reliability,
        spray,
        trim,
    )
    assert p.lossless == (name in ("ib", "roce"))
    assert p.header_bytes == (26 if name == "ib" else 82)
    assert name in FABRICS


def test_roce_marking_scales_with_line_rate() -> None:
    for gbps in (25, 100, 400):
        e = fabric_profile("roce", gbps * 1e9 / 8, 4096).ecn
        assert e is not None
        assert (e.kmin, e.kmax, e.pmax) == (gbps * 4000, gbps * 16000, 0.2)


def test_ecn_probability_is_red_shaped() -> None:
    e = EcnParams(100, 300, 0.2)
    assert [e.probability(q) for q in (0, 100, 200, 300, 301)] == [0.0, 0.0, 0.1, 0.2, 1.0]


def test_pfc_headroom_closed_form() -> None:
    # MTU + 2 × delay × rate + 3,840 B response + MTU (Cisco)
    assert pfc_headroom(50e9, 100e-9, 4178) == 4178 + 10_000 + 3840 + 4178


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: fabric_profile("fddi", LINE, 4096), "fabric='fddi'"),
        (lambda: fabric_profile("ib", math.nan, 4096), "rate=nan"),
        (lambda: fabric_profile("ib", LINE, 4096, rto_s=-1.0), "rto=-1.0"),
        (lambda: EcnParams(300, 100, 0.1), "kmin=300"),
        (lambda: EcnParams(100, 300, 0.0), "pmax=0.0"),
    ],
)
def test_bad_parameters_name_themselves(call: object, message: str) -> None:
    with pytest.raises(TransportError, match=message.replace("(", r"\(")):
        call()  # type: ignore[operator]


@pytest.mark.parametrize("module", [dcqcn, fabric, nscc, reno])
def test_doctests(module: object) -> None:
    assert doctest.testmod(module).failed == 0  # type: ignore[arg-type]
