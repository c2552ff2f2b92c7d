"""Tests for the uncorrectable-codeword consequences: drop, LLR, NVLink replay, escapes."""

from __future__ import annotations

import math

import pytest

from commwall.phy.fec import CODES, uncorrectable_ratio
from commwall.phy.link import (
    codeword_failures_per_packet,
    ethernet_link,
    infiniband_llr_link,
    miscorrection_probability,
    nvlink_link,
)
from commwall.phy.signaling import PhyError

KP4 = CODES["kp4"]
RATE = 100e9


def _q(p_cw: float, unit_bits: float) -> float:
    return 1.0 - (1.0 - p_cw) ** (1.0 + unit_bits / KP4.codeword_bits)


def test_ethernet_selective_closed_form() -> None:
    ber, size, rtt = 1e-3, 4096.0, 10e-6
    r = ethernet_link(KP4, ber, payload_rate_bps=RATE, packet_bytes=size, rtt=rtt)
    p_cw = uncorrectable_ratio(KP4, ber)
    q = _q(p_cw, size * 8)
    assert r.codeword_failure_prob == pytest.approx(p_cw, rel=1e-12)
    assert r.unit_error_prob == pytest.approx(q, rel=1e-9)
    assert r.retransmission_efficiency == pytest.approx(1 - q, rel=1e-12)
    assert r.goodput_fraction == pytest.approx(KP4.code_rate * (1 - q), rel=1e-12)
    assert r.added_latency == pytest.approx(q / (1 - q) * (rtt + size * 8 / RATE), rel=1e-9)
    escape = 2.0**-32 / math.factorial(15)
    assert r.escape_prob == pytest.approx(escape, rel=1e-12)
    assert r.undetected_corruption_rate == pytest.approx(RATE / (size * 8) * q * escape, rel=1e-9)
    assert r.mean_time_between_undetected == pytest.approx(1 / r.undetected_corruption_rate)


def test_ethernet_go_back_n_and_timeout() -> None:
    ber, size, rtt = 1e-3, 4096.0, 10e-6
    gbn = ethernet_link(
        KP4,
        ber,
        payload_rate_bps=RATE,
        packet_bytes=size,
        rtt=rtt,
        recovery="go_back_n",
        timeout=1e-3,
    )
    q = gbn.unit_error_prob
    w = math.ceil(rtt * RATE / (size * 8))
    assert gbn.retransmission_efficiency == pytest.approx((1 - q) / (1 + (w - 1) * q), rel=1e-12)
    assert gbn.added_latency == pytest.approx(q / (1 - q) * (1e-3 + size * 8 / RATE), rel=1e-9)
    with pytest.raises(PhyError, match="recovery"):
        ethernet_link(KP4, ber, payload_rate_bps=RATE, recovery="sack")  # type: ignore[arg-type]


def test_brown_frame_error_ratio() -> None:
    # FER ≈ P_cw·(1 + L/L_cw) for small P_cw (Brown, phy.md §6): KR4 with 512-bit frames
    kr4 = CODES["kr4"]
    p_cw = uncorrectable_ratio(kr4, 1e-5)
    assert codeword_failures_per_packet(kr4, 1e-5, 64) == pytest.approx(
        p_cw * (1 + 512 / 5280), rel=1e-6
    )


def test_no_fec_escape_is_crc_only() -> None:
    assert miscorrection_probability(CODES["none"]) == 1.0
    r = ethernet_link(CODES["none"], 1e-12, payload_rate_bps=RATE, check_bits=(32, 32))
    assert r.escape_prob == pytest.approx(2.0**-64)


def test_llr_replays_cells_locally() -> None:
    ber, size, cell, link_rtt = 1e-3, 4096.0, 256.0, 200e-9
    r = infiniband_llr_link(
        KP4, ber, payload_rate_bps=RATE, packet_bytes=size, cell_bytes=cell, link_rtt=link_rtt
    )
    q = _q(uncorrectable_ratio(KP4, ber), cell * 8)
    units = 16
    w = math.ceil(link_rtt * RATE / (cell * 8))
    assert r.units_per_packet == units
    assert r.unit_error_prob == pytest.approx(q, rel=1e-9)
    assert r.added_latency == pytest.approx(
        units * q / (1 - q) * (link_rtt + cell * 8 / RATE), rel=1e-9
    )
    assert r.retransmission_efficiency == pytest.approx((1 - q) / (1 + (w - 1) * q), rel=1e-12)
    assert r.escape_prob == pytest.approx(2.0 ** -(32 + 16 + 32) / math.factorial(15))
    e2e = ethernet_link(KP4, ber, payload_rate_bps=RATE, packet_bytes=size)
    assert r.added_latency < e2e.added_latency  # local replay beats end-to-end


def test_llr_off_beyond_30_m() -> None:
    r = infiniband_llr_link(KP4, 1e-3, payload_rate_bps=RATE, cable_length=50.0)
    assert "no LLR" in r.recovery and r.fabric == "infiniband"
    assert r.units_per_packet == 1


def test_nvlink_replay() -> None:
    r = nvlink_link(KP4, 1e-3, payload_rate_bps=RATE, packet_bytes=256, flit_bytes=16)
    assert r.units_per_packet == 16 and r.fabric == "nvlink"
    assert r.escape_prob == pytest.approx(2.0**-25 / math.factorial(15))
    d = r.to_dict()
    assert d["fabric"] == "nvlink" and d["added_latency_s"] == pytest.approx(r.added_latency)


def test_tiny_and_huge_error_rates() -> None:
    low = ethernet_link(KP4, 1e-30, payload_rate_bps=RATE)
    assert low.unit_error_prob == 0.0 and low.mean_time_between_undetected == math.inf
    assert low.to_dict()["mean_time_between_undetected_s"] is None
    high = ethernet_link(CODES["none"], 0.4, payload_rate_bps=RATE)
    assert high.unit_error_prob == pytest.approx(1.0)
    assert 0.0 <= high.goodput_fraction < 1e-12


def test_bad_link_inputs() -> None:
    with pytest.raises(PhyError, match="payload_rate_bps"):
        ethernet_link(KP4, 1e-5, payload_rate_bps=0)
    with pytest.raises(PhyError, match=r"cell_bytes|unit_bytes"):
        infiniband_llr_link(KP4, 1e-5, payload_rate_bps=RATE, cell_bytes=-1)
    with pytest.raises(PhyError, match="check_bits"):
        nvlink_link(KP4, 1e-5, payload_rate_bps=RATE, check_bits=(0,))
