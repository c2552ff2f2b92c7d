"""What a link does with an uncorrectable codeword: drop, replay, or let corruption through.

Three recoveries (``phy.md`` §8): Ethernet drops the frame (the RS-FEC PCS corrupts the sync
headers, the CRC-32 FCS fails) and the transport retransmits end to end; InfiniBand LLR and
NVLink replay the failed cell/flit over one link round trip. Each model returns a
:class:`LinkReliability` with the goodput fraction, the expected added latency per packet, and the
rate of corruptions that escape every check.

Constants not in ``phy.md`` are marked "(unverified)" with where they come from.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

from commwall.checks import number
from commwall.phy.fec import FecCode, log10_uncorrectable_ratio
from commwall.phy.signaling import PhyError

__all__ = [
    "LLR_MAX_CABLE_LENGTH",
    "LinkReliability",
    "codeword_failures_per_packet",
    "ethernet_link",
    "infiniband_llr_link",
    "miscorrection_probability",
    "nvlink_link",
]

_LN2: Final = math.log(2.0)
_LN10: Final = math.log(10.0)

LLR_MAX_CABLE_LENGTH: Final = 30.0
"""Metres: NVIDIA LLR is not active on cables longer than 30 m (MLNX-OS docs, phy.md §8)."""


@dataclass(frozen=True)
class LinkReliability:
    """Expected behaviour of one link at one post-FEC operating point."""

    fabric: str
    recovery: str
    codeword_failure_prob: float
    """P_cw: probability one FEC codeword is uncorrectable."""
    unit_error_prob: float
    """Probability one recovery unit (packet, cell or flit) hits an uncorrectable codeword."""
    units_per_packet: int
    retransmission_efficiency: float
    """Share of sent units that are delivered the first time and not resent (0..1)."""
    goodput_fraction: float
    """Payload share of the line rate: FEC code rate x retransmission efficiency."""
    added_latency: float
    """Expected extra seconds per packet spent on recovery (``inf`` if nothing gets through)."""
    escape_prob: float
    """Probability a corrupted unit passes every check (decoder flag, CRCs)."""
    undetected_corruption_rate: float
    """Undetected corruptions per second at the given payload rate."""

    @property
    def mean_time_between_undetected(self) -> float:
        """Seconds between undetected corruptions (``inf`` when the rate is 0)."""
        rate = self.undetected_corruption_rate
        return math.inf if rate <= 0.0 else 1.0 / rate

    def to_dict(self) -> dict[str, object]:
        def finite(x: float) -> float | None:
            return x if math.isfinite(x) else None

        return {
            "fabric": self.fabric,
            "recovery": self.recovery,
            "codeword_failure_prob": self.codeword_failure_prob,
            "unit_error_prob": self.unit_error_prob,
            "units_per_packet": self.units_per_packet,
            "retransmission_efficiency": self.retransmission_efficiency,
            "goodput_fraction": self.goodput_fraction,
            "added_latency_s": finite(self.added_latency),
            "escape_prob": self.escape_prob,
            "undetected_corruption_rate_per_s": self.undetected_corruption_rate,
            "mean_time_between_undetected_s": finite(self.mean_time_between_undetected),
        }


def miscorrection_probability(code: FecCode) -> float:
    """Probability an uncorrectable word is *not* flagged by the decoder.

    A bounded-distance RS decoder miscorrects an undecodable word with probability ≤ 1/t!
    (McEliece & Swanson 1986; unverified here, not in phy.md); otherwise it flags the word and
    the Ethernet PCS forces a frame error (phy.md §8). Codes without a flag (none, Clause 74)
    return 1.
    """
    if code.symbol_bits == 1:
        return 1.0
    return 1.0 / math.factorial(code.t)


def _ln_fail(code: FecCode, pre_fec_ber: float, unit_bits: float) -> tuple[float, float]:
    """ln P_cw and ln P(unit fails) with FER ≈ 1 − (1 − P_cw)^(1 + L/L_cw).

    1 + L_frame/L_cw codewords touched per frame (Brown, IEEE 802.3bj brown_3bj_02_0912,
    phy.md §6).
    """
    ln_cw = log10_uncorrectable_ratio(code, pre_fec_ber) * _LN10
    touched = 1.0 + unit_bits / code.codeword_bits
    p_cw = math.exp(ln_cw)
    if p_cw >= 1.0:
        return 0.0, 0.0
    x = touched * math.log1p(-p_cw)
    if x == 0.0:  # P_cw below ~1e-16: 1 − (1 − P_cw)^c = c·P_cw to float precision
        return ln_cw, ln_cw + math.log(touched)
    return ln_cw, math.log(-math.expm1(x))


def codeword_failures_per_packet(code: FecCode, pre_fec_ber: float, packet_bytes: float) -> float:
    """Probability a packet of ``packet_bytes`` hits at least one uncorrectable codeword."""
    return math.exp(
        _ln_fail(code, pre_fec_ber, _check_positive("packet_bytes", packet_bytes) * 8)[1]
    )


def _check_positive(name: str, value: float) -> float:
    return number(name, value, 0.0, open_low=True, error=PhyError)


def _escape(code: FecCode, check_bits: Sequence[int]) -> float:
    for bits in check_bits:
        if not isinstance(bits, int) or bits < 1:
            raise PhyError(f"check_bits: {bits!r}; allowed: positive integers (CRC widths)")
    # A CRC of b bits lets ≈ 2^-b of random corruptions through (Koopman 2002, "32-bit cyclic
    # redundancy codes for Internet applications"; unverified here); checks taken as independent.
    return math.log(miscorrection_probability(code)) - _LN2 * sum(check_bits)


def _gbn_efficiency(q: float, window: int) -> float:
    """Go-back-N efficiency (1 − q)/(1 + (W − 1)·q): each loss resends the W units in flight.

    Bertsekas & Gallager, *Data Networks*, §2.4 (standard; unverified here).
    """
    return (1.0 - q) / (1.0 + (window - 1) * q)


def _result(
    fabric: str,
    recovery: str,
    code: FecCode,
    ln_cw: float,
    ln_q: float,
    units: int,
    window: int,
    per_failure_delay: float,
    unit_rate: float,
    ln_escape: float,
) -> LinkReliability:
    q = math.exp(ln_q)
    efficiency = _gbn_efficiency(q, window)
    # Expected failed attempts per unit: geometric, q/(1 − q); each costs one recovery delay.
    added = math.inf if q >= 1.0 else units * q / (1.0 - q) * per_failure_delay
    return LinkReliability(
        fabric=fabric,
        recovery=recovery,
        codeword_failure_prob=math.exp(ln_cw),
        unit_error_prob=q,
        units_per_packet=units,
        retransmission_efficiency=efficiency,
        goodput_fraction=code.code_rate * efficiency,
        added_latency=added,
        escape_prob=math.exp(ln_escape),
        undetected_corruption_rate=math.exp(math.log(unit_rate) + ln_q + ln_escape),
    )


def ethernet_link(
    code: FecCode,
    pre_fec_ber: float,
    *,
    payload_rate_bps: float,
    packet_bytes: float = 4096.0,
    rtt: float = 10e-6,
    timeout: float | None = None,
    recovery: Literal["selective", "go_back_n"] = "selective",
    check_bits: Sequence[int] = (32,),
) -> LinkReliability:
    """Ethernet with RS-FEC: an uncorrectable codeword drops the frame; recovery is end to end.

    The decoder flags the word, the PCS corrupts the 66b sync headers and the FCS fails, so the
    frame is dropped and RoCE (go-back-N) or TCP (selective) resends it (phy.md §8). Frame loss
    q = 1 − (1 − P_cw)^(1 + L/L_cw) (Brown, phy.md §6). Each loss costs ``rtt`` (NAK / fast
    retransmit) or ``timeout`` when given, plus the packet time; expected added latency per packet
    = q/(1 − q) x that. Goodput: selective repeat 1 − q; go-back-N (1 − q)/(1 + (W − 1)q) with W the
    packets in flight in one RTT. Undetected corruption needs a decoder miscorrection (≤ 1/t!)
    and an escape past every CRC in ``check_bits`` (FCS 32; add 32 for the RoCEv2 ICRC).
    """
    rate = _check_positive("payload_rate_bps", payload_rate_bps)
    bits = _check_positive("packet_bytes", packet_bytes) * 8.0
    rtt = _check_positive("rtt", rtt)
    delay = (rtt if timeout is None else _check_positive("timeout", timeout)) + bits / rate
    if recovery == "selective":
        window = 1
    elif recovery == "go_back_n":
        window = max(1, math.ceil(rtt * rate / bits))
    else:
        raise PhyError(f"recovery: {recovery!r} is not allowed; allowed: 'selective', 'go_back_n'")
    ln_cw, ln_q = _ln_fail(code, pre_fec_ber, bits)
    return _result(
        "ethernet",
        f"frame drop, end-to-end {recovery.replace('_', '-')}",
        code,
        ln_cw,
        ln_q,
        1,
        window,
        delay,
        rate / bits,
        _escape(code, check_bits),
    )


def _link_level(
    fabric: str,
    recovery: str,
    code: FecCode,
    pre_fec_ber: float,
    payload_rate_bps: float,
    packet_bytes: float,
    unit_bytes: float,
    link_rtt: float,
    check_bits: Sequence[int],
) -> LinkReliability:
    """Shared link-level replay: a failed unit costs one link RTT + the unit time (phy.md §8).

    Replay is go-back-N over the units in flight in one link round trip.
    """
    rate = _check_positive("payload_rate_bps", payload_rate_bps)
    unit_bits = _check_positive("unit_bytes", unit_bytes) * 8.0
    packet_bits = _check_positive("packet_bytes", packet_bytes) * 8.0
    link_rtt = _check_positive("link_rtt", link_rtt)
    units = max(1, math.ceil(packet_bits / unit_bits))
    window = max(1, math.ceil(link_rtt * rate / unit_bits))
    ln_cw, ln_q = _ln_fail(code, pre_fec_ber, unit_bits)
    return _result(
        fabric,
        recovery,
        code,
        ln_cw,
        ln_q,
        units,
        window,
        link_rtt + unit_bits / rate,
        rate / unit_bits,
        _escape(code, check_bits),
    )


def infiniband_llr_link(
    code: FecCode,
    pre_fec_ber: float,
    *,
    payload_rate_bps: float,
    packet_bytes: float = 4096.0,
    cell_bytes: float = 256.0,
    link_rtt: float = 200e-9,
    cable_length: float = 3.0,
    rtt: float = 10e-6,
    check_bits: Sequence[int] = (32, 16, 32),
) -> LinkReliability:
    """InfiniBand with NVIDIA link-level retransmission (LLR).

    The transmitter splits the stream into cells with their own CRC; a failed cell is resent by
    the link, hiding the error from transport at the cost of a link RTT (NVIDIA MLNX-OS
    "Unbreakable-Link", phy.md §8). LLR is not active on cables > 30 m: there the packet fails
    ICRC/VCRC and RC transport resends it end to end after ``rtt`` (phy.md §8, unverified).
    Cell size and the cell CRC width are not published: 256 B and 32 bits are our assumptions;
    VCRC 16 + ICRC 32 bits are the IBTA widths (unverified here).
    """
    length = _check_positive("cable_length", cable_length)
    if length > LLR_MAX_CABLE_LENGTH:
        e2e = ethernet_link(
            code,
            pre_fec_ber,
            payload_rate_bps=payload_rate_bps,
            packet_bytes=packet_bytes,
            rtt=rtt,
            recovery="go_back_n",
            check_bits=tuple(check_bits)[1:] or (32,),
        )
        return LinkReliability(
            **{
                **e2e.__dict__,
                "fabric": "infiniband",
                "recovery": "no LLR (cable > 30 m): ICRC/VCRC drop, RC end-to-end go-back-N",
            }
        )
    return _link_level(
        "infiniband",
        "link-level retransmission (LLR) of the failed cell",
        code,
        pre_fec_ber,
        payload_rate_bps,
        packet_bytes,
        cell_bytes,
        link_rtt,
        check_bits,
    )


def nvlink_link(
    code: FecCode,
    pre_fec_ber: float,
    *,
    payload_rate_bps: float,
    packet_bytes: float = 256.0,
    flit_bytes: float = 16.0,
    link_rtt: float = 100e-9,
    check_bits: Sequence[int] = (25,),
) -> LinkReliability:
    """NVLink: per-flit CRC and link-level replay (factryze.ai glossary, phy.md §8).

    Persistent failure escalates to retrain and Xid 74 (not modelled). 16-byte flits and a
    25-bit CRC are from public NVLink 1/2 descriptions (unverified here).
    """
    return _link_level(
        "nvlink",
        "link-level replay of the failed flit",
        code,
        pre_fec_ber,
        payload_rate_bps,
        packet_bytes,
        flit_bytes,
        link_rtt,
        check_bits,
    )
