"""Tests for M-PAM error rates, penalties, inverses and lane data."""

from __future__ import annotations

import math

import numpy as np
import pytest

from commwall.phy.signaling import (
    LANES,
    PhyError,
    ber_pam,
    log10_ser_pam,
    pam_penalty_db,
    parse_lane,
    parse_modulation,
    ser_pam,
    snr_db_for_ber,
    snr_db_for_ser,
)


def _monte_carlo_ser(m: int, es_n0_db: float, n_symbols: int, rng: np.random.Generator) -> float:
    """ML-sliced M-PAM over AWGN: levels ±1, ±3, …, Es = (M²−1)/3, noise variance N0/2."""
    es = (m * m - 1) / 3.0
    sigma = math.sqrt(es / 10 ** (es_n0_db / 10) / 2.0)
    errors, done, chunk = 0, 0, 2_000_000
    while done < n_symbols:
        size = min(chunk, n_symbols - done)
        idx = rng.integers(0, m, size)
        y = (2 * idx - (m - 1)) + sigma * rng.standard_normal(size)
        decided = np.clip(np.rint((y + (m - 1)) / 2.0), 0, m - 1).astype(np.int64)
        errors += int(np.count_nonzero(decided != idx))
        done += size
    return errors / n_symbols


@pytest.mark.parametrize("m", [2, 4, 8])
@pytest.mark.parametrize("target", [1e-1, 1e-2, 1e-3, 1e-4])
def test_ser_matches_monte_carlo(m: int, target: float) -> None:
    rng = np.random.default_rng(20240 + m)
    snr = snr_db_for_ser(m, target)
    predicted = ser_pam(m, snr)
    assert predicted == pytest.approx(target, rel=1e-6)
    n = max(200_000, math.ceil(5000 / predicted))  # ≥ 5000 errors: 3σ ≈ 4%
    measured = _monte_carlo_ser(m, snr, n, rng)
    assert measured == pytest.approx(predicted, rel=0.05)


def test_pam4_es_n0_closed_form() -> None:
    for snr_db in (5.0, 12.0, 20.0):
        es_n0 = 10 ** (snr_db / 10)
        assert ser_pam(4, snr_db) == pytest.approx(
            0.75 * math.erfc(math.sqrt(0.2 * es_n0)), rel=1e-12
        )


def test_nrz_snr_basis_is_q_of_root_snr() -> None:
    snr = 10 ** (15 / 10)
    assert ser_pam(2, 15.0, basis="snr") == pytest.approx(
        0.5 * math.erfc(math.sqrt(snr) / math.sqrt(2)), rel=1e-12
    )


def test_bases_differ_by_3_db() -> None:
    # 3·SNR = 6·Es/N0 ⇔ SNR(dB) = Es/N0(dB) + 10·log10(2)
    assert ser_pam(4, 20.0, basis="snr") == pytest.approx(
        ser_pam(4, 20.0 - 10 * math.log10(2), basis="es_n0"), rel=1e-9
    )


def test_penalties() -> None:
    assert pam_penalty_db(4) == pytest.approx(9.54, abs=0.005)
    assert pam_penalty_db(4, normalisation="average") == pytest.approx(6.99, abs=0.005)
    assert pam_penalty_db(4, normalisation="eb_n0") == pytest.approx(3.98, abs=0.005)
    assert pam_penalty_db(6) == pytest.approx(13.98, abs=0.005)
    assert pam_penalty_db(8) == pytest.approx(16.9, abs=0.01)
    assert pam_penalty_db(2) == 0.0
    with pytest.raises(PhyError, match="normalisation"):
        pam_penalty_db(4, normalisation="rms")  # type: ignore[arg-type]


def test_average_penalty_is_snr_shift_at_equal_ser() -> None:
    # Same Q-argument ⇔ SNR_PAM4 − SNR_NRZ = 10·log10(5) on the Es/N0 basis (SER prefactor aside)
    shift = pam_penalty_db(4, normalisation="average")
    ratio = ser_pam(4, 10.0 + shift) / ser_pam(2, 10.0)
    assert ratio == pytest.approx(1.5, rel=1e-9)  # 2(1 − 1/4) / 2(1 − 1/2)


@pytest.mark.parametrize("m", [2, 4, 6, 8])
def test_gray_ber_relation(m: int) -> None:
    assert ber_pam(m, 17.0) == pytest.approx(ser_pam(m, 17.0) / math.log2(m), rel=1e-15)


def test_deep_tail_stays_finite() -> None:
    # SER around 1e-300 and below must neither be NaN nor zero in log form
    snr = snr_db_for_ser(4, 1e-300)
    assert ser_pam(4, snr) == pytest.approx(1e-300, rel=1e-6)
    assert math.isfinite(log10_ser_pam(4, 80.0))
    assert log10_ser_pam(4, 80.0) < -300


@pytest.mark.parametrize("m", [2, 4, 6, 8])
@pytest.mark.parametrize("ber", [1e-3, 1e-6, 1e-12, 1e-15])
def test_inverse_round_trip(m: int, ber: float) -> None:
    snr = snr_db_for_ber(m, ber)
    assert ber_pam(m, snr) == pytest.approx(ber, rel=1e-6)


def test_inverse_monotone_in_levels() -> None:
    needed = [snr_db_for_ber(m, 1e-12) for m in (2, 4, 6, 8)]
    assert needed == sorted(needed)


def test_bad_inputs_name_the_parameter() -> None:
    with pytest.raises(PhyError, match=r"m: 3 .*allowed"):
        ser_pam(3, 10.0)
    with pytest.raises(PhyError, match="snr_db"):
        ser_pam(4, math.nan)
    with pytest.raises(PhyError, match="snr_db"):
        ser_pam(4, 500.0)
    with pytest.raises(PhyError, match="basis"):
        ser_pam(4, 10.0, basis="eb")  # type: ignore[arg-type]
    with pytest.raises(PhyError, match="target_ber"):
        snr_db_for_ber(4, 0.7)
    with pytest.raises(PhyError, match="modulation"):
        parse_modulation("qam16")


def test_lanes_as_data() -> None:
    assert set(LANES) == {"25G", "50G", "100G", "200G"}
    for lane in LANES.values():
        assert lane.line_rate_bps == pytest.approx(lane.baud_rate * lane.bits_per_symbol)
    # 106.25 = 100 x 257/256 x 544/514 (phy.md §3)
    assert LANES["100G"].line_rate_bps == pytest.approx(100e9 * 257 / 256 * 544 / 514)
    assert LANES["25G"].line_rate_bps == pytest.approx(25e9 * 257 / 256 * 528 / 514)
    assert LANES["25G"].fec == "kr4" and LANES["200G"].fec == "kp4"
    assert LANES["200G"].baud_rate == 106.25e9


def test_parse_lane_forms() -> None:
    assert parse_lane("100g") is LANES["100G"]
    assert parse_lane("200") is LANES["200G"]
    assert parse_lane("50 Gb/s") is LANES["50G"]
    assert parse_modulation("NRZ") == 2
    with pytest.raises(PhyError, match=r"lane: '400G'.*25G, 50G, 100G, 200G"):
        parse_lane("400G")
