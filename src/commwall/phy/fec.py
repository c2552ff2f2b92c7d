"""Forward error correction: codes as data, uncorrectable-codeword ratio, post-FEC BER, latency.

Every probability is computed in natural-log space (``log1p``/``expm1`` for the symbol error
probability, ``gammaln`` + ``logsumexp`` for the binomial tail), so results stay finite and
monotone for pre-FEC BER from 0.5 down to 1e-30 and beyond. The ``log10_*`` functions return
values far below float underflow (1e-1000 is common for KP4 at low BER); the plain functions
return those as 0.0. Formulas and numbers: ``shared/reference/phy.md`` §5–§7.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
from scipy.special import gammaln, logsumexp  # type: ignore[import-untyped]  # no stubs in the venv

from commwall.phy.signaling import LaneGeneration, PhyError, bisect_increasing, parse_lane

__all__ = [
    "CODES",
    "FecChoice",
    "FecCode",
    "FecOption",
    "InnerCode",
    "choose_fec",
    "evaluate_fec",
    "fec_latency",
    "log10_post_fec_ber",
    "log10_uncorrectable_ratio",
    "max_pre_fec_ber",
    "parse_fec",
    "post_fec_ber",
    "symbol_error_probability",
    "uncorrectable_ratio",
]

_LN10: Final = math.log(10.0)
_NEG_INF: Final = -math.inf


@dataclass(frozen=True)
class InnerCode:
    """A binary inner code corrects up to ``t`` bit errors in each ``n``-bit block."""

    name: str
    n: int
    k: int
    t: int
    decoder_latency: float
    """Seconds of decode logic; phy.md gives none, so only block accumulation counts (0.0)."""
    source: str


@dataclass(frozen=True)
class FecCode:
    """A block code decoded up to ``t`` symbol errors per ``n``-symbol codeword (phy.md §5).

    ``symbol_bits`` is m (10 for the 802.3 Reed–Solomon codes, 1 for binary codes). The
    decode-logic latency is added to codeword accumulation by :func:`fec_latency`.
    """

    key: str
    label: str
    n: int
    k: int
    symbol_bits: int
    t: int
    decoder_latency: float
    """Seconds from the last bit in to the first corrected bit out (encode + decode logic)."""
    used_by: str
    source: str
    latency_source: str
    inner: InnerCode | None = None

    @property
    def codeword_bits(self) -> int:
        return self.n * self.symbol_bits

    @property
    def code_rate(self) -> float:
        """Payload bits per coded bit (k/n, times the inner code's rate when there is one)."""
        rate = self.k / self.n
        if self.inner is not None:
            rate *= self.inner.k / self.inner.n
        return rate

    @property
    def overhead(self) -> float:
        """Parity bits per payload bit: (n − k)/k, e.g. KP4 30/514 = 5.8% (phy.md §5)."""
        return 1.0 / self.code_rate - 1.0


# 802.3dj decode-logic model at a 1 GHz core: encoder 3 ns + decoder misc 3 ns + correction 31 ns
# for KP4 (phy.md §7, indicative). Ours: correction time scales with codeword length n, which
# reproduces "LL-FEC ≈ ½ of KP4 latency" (convergedigest, phy.md §7).
_ENC_MISC: Final = 6e-9
_KP4_CORRECTION: Final = 31e-9


#: Most lanes one codeword is striped over (IEEE 802.3 ports use 1 to 16).
MAX_LANES: Final = 64


def _rs_logic(n: int) -> float:
    return _ENC_MISC + _KP4_CORRECTION * n / 544


_RS_LATENCY_SOURCE: Final = (
    "802.3dj decode model (3 ns enc + 3 ns misc + 31 ns correction for KP4, phy.md §7); "
    "correction scaled by n (ours)"
)

HAMMING_128_120: Final = InnerCode(
    "Hamming(128,120)",
    128,
    120,
    1,
    0.0,
    "SIJ 200G FEC analysis (phy.md §5): 802.3dj inner code on 200G/lane IM-DD optics",
)

CODES: Final[Mapping[str, FecCode]] = {
    "none": FecCode(
        "none",
        "no FEC",
        1,
        1,
        1,
        0,
        0.0,
        "NRZ links up to 25G without RS-FEC",
        "-",
        "no decoder",
    ),
    "cl74": FecCode(
        "cl74",
        "Clause 74 BASE-R (2112,2080)",
        2112,
        2080,
        1,
        1,
        0.0,
        "10G/25G KR",
        "Intel V-series guide (phy.md §5); corrects one burst <= 11 bits, modelled under "
        "random errors as 1 bit per block",
        "block accumulation only; phy.md gives no decoder figure",
    ),
    "kr4": FecCode(
        "kr4",
        "RS(528,514) KR4",
        528,
        514,
        10,
        7,
        _rs_logic(528),
        "100GBASE-KR4/CR4/SR4, 25G (802.3by)",
        "Intel AN846 (phy.md §5)",
        _RS_LATENCY_SOURCE,
    ),
    "ll": FecCode(
        "ll",
        "RS(272,258) LL-FEC",
        272,
        258,
        10,
        7,
        _rs_logic(272),
        "optional for 50/100/200GbE (25G/50G Ethernet Consortium)",
        "convergedigest; cablinginstall 2019 (phy.md §5)",
        _RS_LATENCY_SOURCE,
    ),
    "kp4": FecCode(
        "kp4",
        "RS(544,514) KP4",
        544,
        514,
        10,
        15,
        _rs_logic(544),
        "50/100/200G-per-lane PAM4 Ethernet; NDR/XDR InfiniBand",
        "Intel AN846 (phy.md §5)",
        _RS_LATENCY_SOURCE,
    ),
    "kp4+hamming": FecCode(
        "kp4+hamming",
        "KP4 + inner Hamming(128,120)",
        544,
        514,
        10,
        15,
        _rs_logic(544),
        "802.3dj 200G/lane IM-DD optics",
        "SIJ 200G FEC analysis (phy.md §5)",
        _RS_LATENCY_SOURCE + "; inner block accumulation only",
        HAMMING_128_120,
    ),
}
"""The FEC codes of phy.md §5 by key (PCIe 6 FLIT FEC is left out: it is not a lane option)."""


def parse_fec(key: str) -> FecCode:
    """Look up a code in :data:`CODES` by key, case-insensitively."""
    code = CODES.get(key.strip().lower())
    if code is None:
        raise PhyError(f"fec: {key!r} is not a known code; allowed: {', '.join(CODES)}")
    return code


def _check_ber(name: str, ber: float) -> float:
    if not isinstance(ber, int | float) or not math.isfinite(ber) or not 0.0 < ber < 0.5:
        raise PhyError(f"{name}: {ber!r} is out of range; allowed: 0 < {name} < 0.5")
    return float(ber)


# ---- log-space probability kernels ---------------------------------------------------------


def _ln_one_minus_q(ln_p_ok_bit: float, bits: int) -> float:
    """ln(1 − (1 − p)^bits) given ln(1 − p): −expm1 keeps precision when p·bits ≪ 1."""
    return math.log(-math.expm1(bits * ln_p_ok_bit))


def _ln_binomial_tail(n: int, t: int, ln_q: float, ln_1mq: float) -> float:
    """ln P(X > t) for X ~ Binomial(n, q), from ln q and ln(1 − q).

    Sums ln C(n,i) + i·ln q + (n−i)·ln(1−q) for i = t+1..n with logsumexp (LNTwww exercise
    2.15Z's block-error sum, evaluated with log-gamma as phy.md §6 advises).
    """
    if t >= n:
        return _NEG_INF
    i = np.arange(t + 1, n + 1, dtype=np.float64)
    ln_comb = gammaln(n + 1.0) - gammaln(i + 1.0) - gammaln(n - i + 1.0)
    terms = ln_comb + i * ln_q + (n - i) * ln_1mq
    return min(float(logsumexp(terms)), 0.0)


def _ln_channel(code: FecCode, ber: float) -> tuple[float, float]:
    """ln BER and ln(1 − BER) seen by the outer code, after the inner code if there is one.

    Inner code (ours, bounded-distance, errors of a failed block passed through uncorrected):
    BER' = BER · P(at least t_in other errors among the block's n_in − 1 bits); for
    Hamming(128,120) with t_in = 1, BER' = BER·(1 − (1 − BER)^127) ≈ 127·BER². Residual errors
    are treated as independent bits at the outer decoder (symbol interleaving, phy.md §5).
    """
    ln_p, ln_1mp = math.log(ber), math.log1p(-ber)
    inner = code.inner
    if inner is None:
        return ln_p, ln_1mp
    ln_tail = _ln_binomial_tail(inner.n - 1, inner.t - 1, ln_p, ln_1mp)
    ln_p_out = ln_p + ln_tail
    return ln_p_out, math.log1p(-math.exp(ln_p_out))


def _ln_symbol_error(code: FecCode, ber: float) -> tuple[float, float]:
    """ln Ps and ln(1 − Ps) with Ps = 1 − (1 − BER)^m (phy.md §6)."""
    ln_p, ln_1mp = _ln_channel(code, ber)
    m = code.symbol_bits
    if m == 1:
        return ln_p, ln_1mp
    if ln_p < -40.0:
        # Ps = m·p·(1 − O(m·p)): exact to float precision here, and log(1 − p) may have
        # rounded to 0 for an inner-decoded BER far below 1e-300.
        return math.log(m) + ln_p, m * ln_1mp
    return _ln_one_minus_q(ln_1mp, m), m * ln_1mp


def symbol_error_probability(code: FecCode, pre_fec_ber: float) -> float:
    """Ps = 1 − (1 − BER)^m for independent bit errors, via −expm1(m·log1p(−BER)) (phy.md §6).

    >>> round(symbol_error_probability(CODES["kp4"], 1e-4), 10)
    0.0009995501
    """
    return math.exp(_ln_symbol_error(code, _check_ber("pre_fec_ber", pre_fec_ber))[0])


def _ln_uncorrectable(code: FecCode, ber: float) -> float:
    ln_ps, ln_1mps = _ln_symbol_error(code, ber)
    return _ln_binomial_tail(code.n, code.t, ln_ps, ln_1mps)


def log10_uncorrectable_ratio(code: FecCode, pre_fec_ber: float) -> float:
    """log10 of :func:`uncorrectable_ratio`, finite far below float underflow."""
    return _ln_uncorrectable(code, _check_ber("pre_fec_ber", pre_fec_ber)) / _LN10


def uncorrectable_ratio(code: FecCode, pre_fec_ber: float) -> float:
    """Probability a codeword is uncorrectable: P_cw = Σ_{i=t+1}^{n} C(n,i)·Ps^i·(1 − Ps)^(n−i).

    Bounded-distance decoder, independent symbol errors (phy.md §6; LNTwww exercise 2.15Z).
    For ``"none"`` this is the BER itself (one-bit "codewords", t = 0).
    """
    return math.exp(_ln_uncorrectable(code, _check_ber("pre_fec_ber", pre_fec_ber)))


def _ln_post_fec_ber(code: FecCode, ber: float) -> float:
    # BER_post ≈ P_cw · (t+1) / (m·n) (phy.md §6); a failed codeword passes its errors through,
    # so once nearly every word fails the output cannot be better than P_cw · BER_pre.
    ln_cw = _ln_uncorrectable(code, ber)
    low_ber = ln_cw + math.log((code.t + 1) / code.codeword_bits)
    return max(low_ber, ln_cw + math.log(ber))


def log10_post_fec_ber(code: FecCode, pre_fec_ber: float) -> float:
    """log10 of :func:`post_fec_ber`, finite far below float underflow."""
    return _ln_post_fec_ber(code, _check_ber("pre_fec_ber", pre_fec_ber)) / _LN10


def post_fec_ber(code: FecCode, pre_fec_ber: float) -> float:
    """Post-FEC BER ≈ P_cw · (t+1) / (m·n).

    A failed word carries ≈ t+1 one-bit symbol errors and the decoder passes it through
    (phy.md §6, after the IEEE 802.3 100GNGOPTX thread, Anslow/Petrilla 2012). That is the
    low-BER regime FEC is built for; when most codewords fail the errors pass through, so the
    result is at least ``P_cw · BER_pre`` (ours) and never better than the input.
    """
    return math.exp(_ln_post_fec_ber(code, _check_ber("pre_fec_ber", pre_fec_ber)))


def max_pre_fec_ber(code: FecCode, target_ber: float) -> float:
    """Largest pre-FEC BER for which :func:`post_fec_ber` ≤ ``target_ber`` (the FEC threshold).

    Bisection on log10 BER over [1e-30, 0.4]: the post-FEC BER is monotone in the pre-FEC BER.
    """
    target = _check_ber("target_ber", target_ber)
    goal = math.log(target)
    ber: float = 10.0 ** bisect_increasing(
        lambda x: _ln_post_fec_ber(code, 10.0**x), goal, -30.0, math.log10(0.4), tol=1e-12
    )
    return float(min(ber, 0.4))


# ---- latency ----------------------------------------------------------------------------------


def fec_latency(
    code: FecCode, line_rate_bps: float, *, lanes: int = 1, interleave: int = 1
) -> float:
    """FEC latency in seconds: codeword accumulation plus decode logic.

    Accumulation = interleave · codeword bits / (lanes · lane line rate): KP4 on one 100G lane
    5440 / 106.25 Gb/s = 51.2 ns; 400GbE (2 codewords over 4 x 106.25G) 10880 / 425 Gb/s = 25.6 ns
    (phy.md §7, derived). Decode logic: the 802.3dj 1 GHz model, 3 ns encode + 3 ns misc + 31 ns
    correction for KP4 (phy.md §7, indicative), the correction scaled with n for other RS codes
    (ours). An inner code adds its block accumulation at its expanded line rate.

    >>> round(fec_latency(CODES["kp4"], 106.25e9) * 1e9, 1)
    88.2
    """
    if not math.isfinite(line_rate_bps) or line_rate_bps <= 0:
        raise PhyError(f"line_rate_bps: {line_rate_bps!r} is out of range; allowed: > 0")
    if not 1 <= lanes <= MAX_LANES or interleave < 1:
        raise PhyError(
            f"lanes/interleave: {lanes}/{interleave}; allowed: lanes 1..{MAX_LANES}, interleave >= 1"
        )
    if code.key == "none":
        return 0.0
    latency = interleave * code.codeword_bits / (lanes * line_rate_bps) + code.decoder_latency
    if code.inner is not None:
        optical_rate = line_rate_bps * code.inner.n / code.inner.k
        latency += code.inner.n / optical_rate + code.inner.decoder_latency
    return latency


# ---- the "Goldilocks" choice ------------------------------------------------------------------


@dataclass(frozen=True)
class FecOption:
    """One code evaluated at one operating point."""

    code: FecCode
    pre_fec_ber: float
    uncorrectable_ratio: float
    log10_uncorrectable_ratio: float
    post_fec_ber: float
    log10_post_fec_ber: float
    latency: float
    """Seconds (accumulation + decode logic; see :func:`fec_latency`)."""
    code_rate: float
    """Payload share of the coded bits (goodput fraction before any retransmission)."""
    overhead: float
    meets_target: bool
    standard_for_lane: bool

    def to_dict(self) -> dict[str, object]:
        return {
            "fec": self.code.key,
            "label": self.code.label,
            "n": self.code.n,
            "k": self.code.k,
            "symbol_bits": self.code.symbol_bits,
            "t": self.code.t,
            "uncorrectable_ratio": self.uncorrectable_ratio,
            "log10_uncorrectable_ratio": self.log10_uncorrectable_ratio,
            "post_fec_ber": self.post_fec_ber,
            "log10_post_fec_ber": self.log10_post_fec_ber,
            "latency_ns": self.latency * 1e9,
            "code_rate": self.code_rate,
            "overhead": self.overhead,
            "meets_target": self.meets_target,
            "standard_for_lane": self.standard_for_lane,
        }


@dataclass(frozen=True)
class FecChoice:
    """Every option at one operating point and the least-latency one that meets the target."""

    lane: LaneGeneration
    pre_fec_ber: float
    target_ber: float
    options: tuple[FecOption, ...]
    best: FecOption | None
    """None when no code meets the target."""

    def to_dict(self) -> dict[str, object]:
        return {
            "lane": self.lane.name,
            "pre_fec_ber": self.pre_fec_ber,
            "target_ber": self.target_ber,
            "best": None if self.best is None else self.best.code.key,
            "options": [o.to_dict() for o in self.options],
        }


def default_interleave(code: FecCode, lanes: int) -> int:
    """Codewords interleaved across a port: 802.3bs 200/400GbE (4+ lanes) interleaves two KP4
    codewords (phy.md §5 notes; §7's 25.6 ns example), otherwise one."""
    return 2 if code.n == 544 and lanes >= 4 else 1


def evaluate_fec(
    code: FecCode,
    pre_fec_ber: float,
    lane: LaneGeneration,
    target_ber: float,
    *,
    lanes: int = 1,
) -> FecOption:
    """Evaluate one code on one lane at a pre-FEC BER against a post-FEC target."""
    ber = _check_ber("pre_fec_ber", pre_fec_ber)
    target = _check_ber("target_ber", target_ber)
    ln_post = _ln_post_fec_ber(code, ber)
    ln_cw = _ln_uncorrectable(code, ber)
    return FecOption(
        code=code,
        pre_fec_ber=ber,
        uncorrectable_ratio=math.exp(ln_cw),
        log10_uncorrectable_ratio=ln_cw / _LN10,
        post_fec_ber=math.exp(ln_post),
        log10_post_fec_ber=ln_post / _LN10,
        latency=fec_latency(
            code, lane.line_rate_bps, lanes=lanes, interleave=default_interleave(code, lanes)
        ),
        code_rate=code.code_rate,
        overhead=code.overhead,
        meets_target=ln_post <= math.log(target),
        standard_for_lane=code.key == lane.fec,
    )


def choose_fec(
    pre_fec_ber: float,
    lane: LaneGeneration | str,
    target_ber: float = 1e-15,
    *,
    codes: Sequence[FecCode] | None = None,
    lanes: int = 1,
) -> FecChoice:
    """The "Goldilocks" FEC: the least-latency code whose post-FEC BER meets ``target_ber``.

    Ties on latency go to the higher code rate. All of :data:`CODES` are considered unless
    ``codes`` narrows them; the result keeps every option for display.

    >>> choose_fec(1e-5, "100G", 1e-15).best.code.key
    'll'
    """
    lane_gen = parse_lane(lane) if isinstance(lane, str) else lane
    chosen = list(CODES.values()) if codes is None else list(codes)
    if not chosen:
        raise PhyError("codes: empty; allowed: one or more of " + ", ".join(CODES))
    options = tuple(evaluate_fec(c, pre_fec_ber, lane_gen, target_ber, lanes=lanes) for c in chosen)
    meeting = [o for o in options if o.meets_target]
    best = min(meeting, key=lambda o: (o.latency, -o.code_rate)) if meeting else None
    return FecChoice(lane_gen, float(pre_fec_ber), float(target_ber), options, best)
