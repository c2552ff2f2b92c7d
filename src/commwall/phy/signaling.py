"""M-PAM signaling: symbol and bit error rates over AWGN, SNR penalties, lane generations.

Everything is computed in log space (``scipy.special.log_ndtr``) so error rates stay finite and
meaningful down to 1e-300; the ``log10_*`` functions go further still, without underflow.

Sources are cited per function; the gathered facts are in ``shared/reference/phy.md`` §1–§3.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final, Literal

from scipy.special import log_ndtr  # type: ignore[import-untyped]  # no stubs in the venv

from commwall.errors import CommwallError

__all__ = [
    "LANES",
    "MODULATIONS",
    "SNR_DB_RANGE",
    "LaneGeneration",
    "PhyError",
    "SnrBasis",
    "ber_pam",
    "bisect_increasing",
    "log10_ser_pam",
    "pam_penalty_db",
    "parse_lane",
    "parse_modulation",
    "ser_pam",
    "snr_db_for_ber",
    "snr_db_for_ser",
]

_LN10: Final = math.log(10.0)

SnrBasis = Literal["es_n0", "snr"]
"""``"es_n0"``: SNR is Es/N0 (noise PSD N0/2 per dimension); ``"snr"``: SNR is Es/σ²."""

SNR_DB_RANGE: Final = (-20.0, 80.0)
"""Accepted SNR range in dB; outside it the question is not a physical-layer one."""

MODULATIONS: Final[Mapping[str, int]] = {
    "nrz": 2,
    "pam2": 2,
    "pam4": 4,
    "pam6": 6,
    "pam8": 8,
}
"""Modulation names and their number of levels M."""


class PhyError(CommwallError, ValueError):
    """A physical-layer parameter is out of range; the message names it and what is allowed."""


def _check_levels(m: int) -> int:
    allowed = sorted(set(MODULATIONS.values()))
    if isinstance(m, bool) or not isinstance(m, int) or m not in allowed:
        raise PhyError(f"m: {m!r} is not a supported number of PAM levels; allowed: {allowed}")
    return m


def _check_basis(basis: str) -> SnrBasis:
    if basis == "es_n0":
        return "es_n0"
    if basis == "snr":
        return "snr"
    raise PhyError(f"basis: {basis!r} is not allowed; allowed: 'es_n0', 'snr'")


def _check_snr_db(snr_db: float) -> float:
    lo, hi = SNR_DB_RANGE
    if not isinstance(snr_db, int | float) or not math.isfinite(snr_db) or not lo <= snr_db <= hi:
        raise PhyError(f"snr_db: {snr_db!r} is out of range; allowed: {lo:g} to {hi:g} dB")
    return float(snr_db)


def _check_probability(name: str, p: float, hi: float = 1.0) -> float:
    if not isinstance(p, int | float) or not math.isfinite(p) or not 0.0 < p < hi:
        raise PhyError(f"{name}: {p!r} is out of range; allowed: 0 < {name} < {hi:g}")
    return float(p)


def parse_modulation(name: str) -> int:
    """Number of levels for a modulation name (``nrz``, ``pam2``, ``pam4``, ``pam6``, ``pam8``).

    >>> parse_modulation("PAM4")
    4
    """
    key = name.strip().lower().replace("-", "")
    if key not in MODULATIONS:
        raise PhyError(f"modulation: {name!r} is not known; allowed: {', '.join(MODULATIONS)}")
    return MODULATIONS[key]


# ---- error rates --------------------------------------------------------------------------


def _ln_ser(m: int, snr_db: float, basis: SnrBasis) -> float:
    """Natural log of the M-PAM SER; see :func:`ser_pam` for the formula and its source."""
    snr = 10.0 ** (snr_db / 10.0)
    scale = 6.0 if basis == "es_n0" else 3.0
    arg = math.sqrt(scale * snr / (m * m - 1))
    # log Q(x) = log Φ(−x): log_ndtr keeps full relative precision far into the tail.
    return math.log(2.0 * (1.0 - 1.0 / m)) + float(log_ndtr(-arg))


def log10_ser_pam(m: int, snr_db: float, *, basis: SnrBasis = "es_n0") -> float:
    """log10 of :func:`ser_pam`; finite for every SNR in :data:`SNR_DB_RANGE` (no underflow)."""
    return _ln_ser(_check_levels(m), _check_snr_db(snr_db), _check_basis(basis)) / _LN10


def ser_pam(m: int, snr_db: float, *, basis: SnrBasis = "es_n0") -> float:
    """Symbol error rate of M-PAM with an ML slicer over AWGN.

    Levels ±d/2, ±3d/2, …, ±(M−1)d/2; Q(x) = ½·erfc(x/√2)::

        basis="es_n0":  SER = 2(1 − 1/M) · Q( √(6·Es/N0 / (M²−1)) )   (raymaps.com)
        basis="snr":    SER = 2(1 − 1/M) · Q( √(3·SNR  / (M²−1)) )    SNR = Es/σ²
                                                                  (ai6g.org eqs 5.6–5.11)

    NRZ (M = 2, ``basis="snr"``) reduces to Q(√SNR). Source: ``phy.md`` §2. Values below
    ~1e-308 underflow to 0.0; use :func:`log10_ser_pam` there.

    >>> f"{ser_pam(4, 20.0):.3e}"  # PAM4 at Es/N0 = 20 dB: 0.75·erfc(√20)
    '1.905e-10'
    """
    return math.exp(_ln_ser(_check_levels(m), _check_snr_db(snr_db), _check_basis(basis)))


def ber_pam(m: int, snr_db: float, *, basis: SnrBasis = "es_n0") -> float:
    """Bit error rate of Gray-coded M-PAM: BER ≈ SER / log2 M.

    Adjacent levels differ in one bit, so at high SNR each symbol error costs one bit (EDN,
    "Clearing the confusion on PAM4 SER, BER"; ``phy.md`` §2). For PAM6, log2 6 ≈ 2.58 bits per
    symbol is the information rate; real PAM6 links map 5 bits onto 2 symbols.
    """
    return ser_pam(m, snr_db, basis=basis) / math.log2(m)


def pam_penalty_db(m: int, *, normalisation: Literal["peak", "average", "eb_n0"] = "peak") -> float:
    """SNR penalty of M-PAM relative to NRZ, in dB.

    ``"peak"`` (fixed peak-to-peak swing, what a SerDes sees): 20·log10(M − 1) — PAM4 9.54 dB
    (Signal Integrity Journal; Anritsu). ``"average"`` (average-power normalised, Es/N0 basis):
    10·log10((M² − 1)/3) — PAM4 6.99 dB. ``"eb_n0"`` (per bit): 10·log10((M² − 1)/(3·log2 M)) —
    PAM4 3.98 dB. Source: ``phy.md`` §1 (the last two derived from §2).

    >>> round(pam_penalty_db(4), 2), round(pam_penalty_db(4, normalisation="average"), 2)
    (9.54, 6.99)
    """
    _check_levels(m)
    if normalisation == "peak":
        return 20.0 * math.log10(m - 1)
    if normalisation == "average":
        return 10.0 * math.log10((m * m - 1) / 3.0)
    if normalisation == "eb_n0":
        return 10.0 * math.log10((m * m - 1) / (3.0 * math.log2(m)))
    raise PhyError(
        f"normalisation: {normalisation!r} is not allowed; allowed: 'peak', 'average', 'eb_n0'"
    )


# ---- inverses -------------------------------------------------------------------------------


def bisect_increasing(
    f: Callable[[float], float], target: float, lo: float, hi: float, *, tol: float = 1e-9
) -> float:
    """Smallest x in [lo, hi] with f(x) ≥ target, for f non-decreasing, by bisection.

    Returns ``hi`` if even f(hi) < target and ``lo`` if f(lo) ≥ target; 200 halvings at most.
    """
    if f(lo) >= target:
        return lo
    if f(hi) < target:
        return hi
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if f(mid) >= target:
            hi = mid
        else:
            lo = mid
        if hi - lo <= tol * max(1.0, abs(hi)):
            break
    return hi


def snr_db_for_ser(m: int, target_ser: float, *, basis: SnrBasis = "es_n0") -> float:
    """SNR in dB at which :func:`ser_pam` equals ``target_ser`` (bisection on log SER).

    SER falls monotonically with SNR, so −log SER is increasing and bisection converges; the
    answer is accurate to ~1e-9 dB. Raises if the target lies outside :data:`SNR_DB_RANGE`.
    """
    m, basis = _check_levels(m), _check_basis(basis)
    _check_probability("target_ser", target_ser, 2.0 * (1.0 - 1.0 / m))
    goal = -math.log(target_ser)
    lo, hi = SNR_DB_RANGE
    if _ln_ser(m, hi, basis) > -goal or _ln_ser(m, lo, basis) < -goal:
        raise PhyError(
            f"target_ser: {target_ser:g} needs an SNR outside {lo:g} to {hi:g} dB for PAM{m}"
        )
    return bisect_increasing(lambda s: -_ln_ser(m, s, basis), goal, lo, hi, tol=1e-12)


def snr_db_for_ber(m: int, target_ber: float, *, basis: SnrBasis = "es_n0") -> float:
    """SNR in dB at which Gray-coded M-PAM reaches ``target_ber`` (BER = SER/log2 M)."""
    _check_probability("target_ber", target_ber, 0.5)
    return snr_db_for_ser(m, target_ber * math.log2(_check_levels(m)), basis=basis)


# ---- lane generations -----------------------------------------------------------------------


@dataclass(frozen=True)
class LaneGeneration:
    """One electrical lane generation: signaling, rates and its standard FEC (``phy.md`` §3)."""

    name: str
    modulation: str
    levels: int
    baud_rate: float
    """Symbols per second (Bd)."""
    line_rate_bps: float
    """Bits per second on the wire, after transcoding and FEC parity."""
    payload_rate_bps: float
    """MAC data rate in bits per second."""
    fec: str
    """Key of the standard FEC in :data:`commwall.phy.fec.CODES`."""
    standard: str
    used_by: str
    source: str

    @property
    def bits_per_symbol(self) -> float:
        return math.log2(self.levels)


LANES: Final[Mapping[str, LaneGeneration]] = {
    "25G": LaneGeneration(
        "25G",
        "nrz",
        2,
        25.78125e9,
        25.78125e9,
        25e9,
        "kr4",
        "802.3by/bj (100GBASE-KR4/CR4)",
        "EDR InfiniBand (4 x 25G)",
        "Intel AN846 100GBASE-KR4 (phy.md §3)",
    ),
    "50G": LaneGeneration(
        "50G",
        "pam4",
        4,
        26.5625e9,
        53.125e9,
        50e9,
        "kp4",
        "802.3cd/bs",
        "HDR InfiniBand (4 x 50G); 400GBASE-CR8",
        "Intel AN846 KP4 mapping; Intel PAM4 page (phy.md §3)",
    ),
    "100G": LaneGeneration(
        "100G",
        "pam4",
        4,
        53.125e9,
        106.25e9,
        100e9,
        "kp4",
        "802.3ck/df (112G SerDes)",
        "NDR InfiniBand (4 x 100G); NVLink4 (2 lanes per link)",
        "LPO MSA 100G-DR-LPO; NVIDIA DAC spec; NVIDIA SuperPOD cabling guide (phy.md §3)",
    ),
    "200G": LaneGeneration(
        "200G",
        "pam4",
        4,
        106.25e9,
        212.5e9,
        200e9,
        "kp4",
        "802.3dj (224G SerDes)",
        "XDR InfiniBand (800G per port)",
        "allpcb P802.3dj summary; DesignCon 2024; SIJ 200G FEC (phy.md §3)",
    ),
}
"""Lane generations by name; the line rates obey 106.25 = 100 x 257/256 x 544/514 (phy.md §3)."""


def parse_lane(text: str) -> LaneGeneration:
    """Look up a lane generation: ``"100G"``, ``"100g"``, ``"100"`` or a rate like ``"100 Gb/s"``.

    A rate string is read with :func:`commwall.units.parse_bandwidth` and matched against each
    generation's payload rate.

    >>> parse_lane("100 Gb/s").line_rate_bps
    106250000000.0
    """
    from commwall.units import UnitError, parse_bandwidth

    allowed = ", ".join(LANES)
    key = text.strip().upper().removesuffix("/LANE").replace(" ", "")
    if key.isdigit():
        key += "G"
    if key in LANES:
        return LANES[key]
    try:
        bits_per_s = parse_bandwidth(text) * 8.0
    except UnitError:
        bits_per_s = math.nan
    for lane in LANES.values():
        if math.isclose(bits_per_s, lane.payload_rate_bps, rel_tol=1e-9):
            return lane
    raise PhyError(f"lane: {text!r} is not a known lane generation; allowed: {allowed}")
