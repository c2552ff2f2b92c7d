"""Tests for FEC codes, uncorrectable-codeword ratio, post-FEC BER, latency and the choice."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from commwall.phy.fec import (
    CODES,
    choose_fec,
    fec_latency,
    log10_post_fec_ber,
    log10_uncorrectable_ratio,
    max_pre_fec_ber,
    parse_fec,
    post_fec_ber,
    symbol_error_probability,
    uncorrectable_ratio,
)
from commwall.phy.signaling import LANES, PhyError


def test_code_parameters() -> None:
    kp4, kr4, ll = CODES["kp4"], CODES["kr4"], CODES["ll"]
    assert (kp4.n, kp4.k, kp4.symbol_bits, kp4.t) == (544, 514, 10, 15)
    assert (kr4.n, kr4.k, kr4.symbol_bits, kr4.t) == (528, 514, 10, 7)
    assert (ll.n, ll.k, ll.t) == (272, 258, 7)
    for code in (kp4, kr4, ll):
        assert code.t == (code.n - code.k) // 2
    assert kp4.overhead == pytest.approx(30 / 514)  # 5.8%
    assert kr4.overhead == pytest.approx(14 / 514)  # 2.7%
    assert CODES["cl74"].overhead == pytest.approx(32 / 2080)  # 1.5%
    assert CODES["kp4+hamming"].code_rate == pytest.approx(514 / 544 * 120 / 128)
    assert kp4.codeword_bits == 5440 and kr4.codeword_bits == 5280


def _exact_p_cw(n: int, t: int, m: int, ber: Fraction) -> float:
    ps = 1 - (1 - ber) ** m
    ok = sum(math.comb(n, i) * ps**i * (1 - ps) ** (n - i) for i in range(t + 1))
    return float(1 - ok)


@pytest.mark.parametrize("key", ["kp4", "kr4", "ll", "cl74"])
@pytest.mark.parametrize(
    "ber", [Fraction(1, 10**2), Fraction(1, 10**3), Fraction(1, 10**4), Fraction(1, 10**5)]
)
def test_uncorrectable_ratio_matches_exact_sum(key: str, ber: Fraction) -> None:
    code = CODES[key]
    exact = _exact_p_cw(code.n, code.t, code.symbol_bits, ber)
    assert uncorrectable_ratio(code, float(ber)) == pytest.approx(exact, rel=1e-9)


def test_symbol_error_probability() -> None:
    p = 1e-4
    assert symbol_error_probability(CODES["kp4"], p) == pytest.approx(1 - (1 - p) ** 10, rel=1e-12)
    assert symbol_error_probability(CODES["kp4"], 1e-30) == pytest.approx(1e-29, rel=1e-12)


def test_post_fec_formula_and_none() -> None:
    kp4 = CODES["kp4"]
    assert post_fec_ber(kp4, 1e-4) == pytest.approx(
        uncorrectable_ratio(kp4, 1e-4) * 16 / 5440, rel=1e-12
    )
    assert post_fec_ber(CODES["none"], 3e-7) == pytest.approx(3e-7, rel=1e-12)


def test_kp4_threshold_near_design_point() -> None:
    # phy.md §5.1: KP4 designed for pre-FEC BER ≈ 2.4e-4 (≈ 2e-4) with 1e-15 post-FEC in mind
    assert 1.5e-4 < max_pre_fec_ber(CODES["kp4"], 1e-15) < 3e-4
    assert post_fec_ber(CODES["kp4"], max_pre_fec_ber(CODES["kp4"], 1e-15)) == pytest.approx(
        1e-15, rel=1e-6
    )


def test_inner_code_helps() -> None:
    assert post_fec_ber(CODES["kp4+hamming"], 1e-3) < post_fec_ber(CODES["kp4"], 1e-3)


def test_latency_numbers_from_phy_md() -> None:
    kp4 = CODES["kp4"]
    logic = fec_latency(kp4, 106.25e9) - 5440 / 106.25e9
    assert logic == pytest.approx(37e-9)  # 3 + 3 + 31 ns
    assert pytest.approx(51.2e-9) == 5440 / 106.25e9
    # 400GbE: 2 codewords over 4 lanes → 25.6 ns accumulation
    acc = fec_latency(kp4, 106.25e9, lanes=4, interleave=2) - logic
    assert acc == pytest.approx(25.6e-9)
    # KR4 over 4 x 25.78125G → 51.2 ns accumulation
    kr4 = CODES["kr4"]
    assert fec_latency(kr4, 25.78125e9, lanes=4) - kr4.decoder_latency == pytest.approx(51.2e-9)
    # LL-FEC ≈ half of KP4
    ratio = fec_latency(CODES["ll"], 106.25e9) / fec_latency(kp4, 106.25e9)
    assert 0.45 < ratio < 0.6
    assert fec_latency(CODES["none"], 106.25e9) == 0.0
    with pytest.raises(PhyError, match="line_rate_bps"):
        fec_latency(kp4, 0.0)
    with pytest.raises(PhyError, match=r"allowed: lanes 1\.\.64"):
        fec_latency(kp4, 106.25e9, lanes=1_000_000_000)


def test_bad_ber_names_parameter() -> None:
    for bad in (0.0, 0.5, -1e-3, math.nan, math.inf):
        with pytest.raises(PhyError, match="pre_fec_ber"):
            post_fec_ber(CODES["kp4"], bad)
    with pytest.raises(PhyError, match="fec: 'bch'"):
        parse_fec("bch")


_BER = st.floats(min_value=-30.0, max_value=math.log10(0.4)).map(lambda x: 10.0**x)


@settings(max_examples=200, deadline=None)
@given(a=_BER, b=_BER, key=st.sampled_from(sorted(CODES)))
def test_post_fec_monotone_and_finite(a: float, b: float, key: str) -> None:
    code = CODES[key]
    lo, hi = min(a, b), max(a, b)
    for fn in (log10_post_fec_ber, log10_uncorrectable_ratio):
        f_lo, f_hi = fn(code, lo), fn(code, hi)
        assert math.isfinite(f_lo) and math.isfinite(f_hi)
        assert f_hi >= f_lo - 1e-9 * max(1.0, abs(f_lo))
    p_lo, p_hi = post_fec_ber(code, lo), post_fec_ber(code, hi)
    assert math.isfinite(p_lo) and math.isfinite(p_hi) and 0.0 <= p_lo <= p_hi * (1 + 1e-9)
    assert 0.0 <= uncorrectable_ratio(code, hi) <= 1.0


@settings(max_examples=100, deadline=None)
@given(
    ber=_BER,
    target=st.floats(min_value=-30.0, max_value=-3.0).map(lambda x: 10.0**x),
    lane=st.sampled_from(sorted(LANES)),
)
def test_choose_fec_meets_target_when_any_does(ber: float, target: float, lane: str) -> None:
    choice = choose_fec(ber, lane, target)
    meeting = [o for o in choice.options if post_fec_ber(o.code, ber) <= target]
    if any(o.log10_post_fec_ber <= math.log10(target) for o in choice.options):
        assert choice.best is not None
        assert choice.best.log10_post_fec_ber <= math.log10(target) + 1e-12
        assert all(choice.best.latency <= o.latency for o in choice.options if o.meets_target)
    else:
        assert choice.best is None and not meeting


def test_choose_fec_examples() -> None:
    assert choose_fec(1e-5, "100G", 1e-15).best.code.key == "ll"  # type: ignore[union-attr]
    strong = choose_fec(1e-3, "200G", 1e-15)
    assert strong.best is not None and strong.best.code.key == "kp4+hamming"
    assert choose_fec(0.2, "100G", 1e-15).best is None
    assert choose_fec(1e-12, "25G", 1e-9).best.code.key == "none"  # type: ignore[union-attr]
    only = choose_fec(1e-5, LANES["100G"], 1e-15, codes=[CODES["kp4"]])
    assert [o.code.key for o in only.options] == ["kp4"]
    assert only.to_dict()["best"] == "kp4"
    with pytest.raises(PhyError, match="codes"):
        choose_fec(1e-5, "100G", 1e-15, codes=[])


def test_post_fec_never_beats_a_failing_code() -> None:
    from commwall.phy.fec import CODES, post_fec_ber, uncorrectable_ratio

    for key in ("kp4", "kr4", "cl74"):
        code = CODES[key]
        for ber in (1e-2, 0.1, 0.27):
            p_cw = uncorrectable_ratio(code, ber)
            assert post_fec_ber(code, ber) >= p_cw * ber * (1 - 1e-12)


def test_400gbe_interleaves_two_kp4_codewords() -> None:
    from commwall.phy.fec import CODES, default_interleave, fec_latency

    kp4 = CODES["kp4"]
    assert default_interleave(kp4, 4) == 2 and default_interleave(kp4, 1) == 1
    # phy.md §7: 10880 bits over 4 × 106.25 Gb/s = 25.6 ns of accumulation, plus 37 ns of decode
    latency = fec_latency(kp4, 106.25e9, lanes=4, interleave=2)
    assert latency == pytest.approx(25.6e-9 + kp4.decoder_latency, rel=1e-3)
