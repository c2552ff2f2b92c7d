"""Parse and format physical quantities: the one place where commwall reads and writes units.

Internal conventions (every other module works in these SI base units, as plain floats):

=================  ======================  =====================================
quantity           internal unit           example inputs
=================  ======================  =====================================
bandwidth          bytes per second        ``"400 Gb/s"``, ``"50 GB/s"``, ``"25 GiB/s"``
size               bytes                   ``"8 B"``, ``"25 MiB"``, ``"1 kbit"``
time               seconds                 ``"130 ns"``, ``"2 µs"``, ``"1.5 ms"``
power              watts                   ``"500 mW"``, ``"700 W"``, ``"1.2 MW"``
length             metres                  ``"850 nm"``, ``"3 mm"``, ``"10 km"``
energy per bit     joules per bit          ``"5 pJ/bit"``, ``"5 pJ/b"``
=================  ======================  =====================================

Reading rules:

* A bare number (``int``/``float``, or a string that is only a number) is already in the
  internal unit above.  ``bool`` is rejected; so are NaN, infinities and negative values.
  Zero is allowed.
* Whitespace between the number and the unit is optional.  Scientific notation (``"1e3 Gb/s"``,
  ``"2.5E-9 s"``) and ``_`` thousands separators (``"1_000 W"``) are accepted; commas are not
  (they are ambiguous between a thousands separator and a decimal point).
* Bits versus bytes is decided by case: ``b``/``bit`` means bits, ``B``/``byte`` means bytes.
  A data unit with no ``b``/``B`` at all (``"400G"``, ``"400 G/s"``) is rejected as ambiguous.
* Data prefixes: ``k``/``K``, ``M``, ``G``, ``T``, ``P`` are decimal (powers of 1000; note that
  ``KB`` therefore means 1000 bytes, not 1024); ``Ki``, ``Mi``, ``Gi``, ``Ti``, ``Pi`` are binary
  (powers of 1024).  Lower-case ``g`` and ``t`` are accepted as giga/tera; lower-case ``m`` and
  ``p`` are rejected because they mean milli and pico.
* A bandwidth needs a rate suffix (``/s``, ``ps`` or ``per second``); a size must not have one.
* Other units are case-sensitive (``mW`` is milliwatts, ``MW`` megawatts); a wrongly cased unit
  is rejected with a suggestion.

Every failure raises :class:`UnitError` (a :class:`ValueError`) whose message names the
offending text, the quantity kind, the reason, and the accepted forms.

Formatting picks the prefix that puts the mantissa in ``[1, 1000)`` (``[1, 1024)`` for binary
prefixes), rounds to ``digits`` significant digits and strips trailing zeros.  Values below the
smallest prefix keep that prefix (``"0.5 B"``); values above the largest keep the largest
(``"3600 s"``).  Zero formats as ``"0 <unit>"``, negative values get a leading ``-`` and
non-finite values format as ``"inf <unit>"`` / ``"nan <unit>"``.  With ``digits=12`` the
output parses back to within a relative error of about 1e-12.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Final

from commwall.errors import CommwallError

__all__ = [
    "UnitError",
    "format_bandwidth",
    "format_energy_per_bit",
    "format_length",
    "format_power",
    "format_size",
    "format_time",
    "parse_bandwidth",
    "parse_energy_per_bit",
    "parse_length",
    "parse_power",
    "parse_size",
    "parse_time",
]


class UnitError(CommwallError, ValueError):
    """A quantity could not be read.

    The message names the offending text, the kind of quantity expected, why it was rejected,
    and the accepted forms, e.g.::

        cannot read '400G' as a bandwidth: say whether G means bits or bytes — accepted forms:
        '400 Gb/s', '50 GB/s', '25 GiB/s', or a plain number in bytes/s
    """


# --------------------------------------------------------------------------------------------
# error messages

_KIND_ARTICLE: Final[Mapping[str, str]] = {
    "bandwidth": "a bandwidth",
    "size": "a size",
    "time": "a time",
    "power": "a power",
    "length": "a length",
    "energy per bit": "an energy per bit",
}

_ACCEPTED: Final[Mapping[str, str]] = {
    "bandwidth": "'400 Gb/s', '50 GB/s', '25 GiB/s', or a plain number in bytes/s",
    "size": "'8 B', '25 MiB', '1 GB', '1 kbit', or a plain number in bytes",
    "time": "'130 ns', '2 µs', '1.5 ms', '3 s', '2 min', '1.5 h', or a plain number in seconds",
    "power": "'500 mW', '700 W', '20 kW', '1.2 MW', or a plain number in watts",
    "length": "'850 nm', '3 mm', '2 m', '10 km', or a plain number in metres",
    "energy per bit": "'5 pJ/bit', '5 pJ/b', or a plain number in J/bit",
}


def _error(value: object, kind: str, reason: str) -> UnitError:
    text = value if isinstance(value, str) else repr(value)
    return UnitError(
        f"cannot read '{text}' as {_KIND_ARTICLE[kind]}: {reason} — accepted forms: "
        f"{_ACCEPTED[kind]}"
    )


# --------------------------------------------------------------------------------------------
# number + unit splitting

_NUMBER: Final = r"[+-]?(?:\d+(?:_\d+)*(?:\.(?:\d+(?:_\d+)*)?)?|\.\d+(?:_\d+)*)(?:[eE][+-]?\d+)?"
_QUANTITY_RE: Final = re.compile(rf"\s*(?P<num>{_NUMBER})\s*(?P<unit>.*?)\s*", re.DOTALL)


def _check_number(number: float, value: object, kind: str) -> float:
    if not math.isfinite(number):
        raise _error(value, kind, "the number must be finite (no NaN or infinity)")
    if number < 0:
        raise _error(value, kind, "negative values are not allowed")
    return number + 0.0  # turns -0.0 into 0.0


def _split(value: str | float | int, kind: str) -> tuple[float, str]:
    """Return ``(number, unit)``; ``unit`` is ``""`` for a bare number, whitespace-normalised."""
    if isinstance(value, bool):
        raise _error(value, kind, "a boolean is not a quantity")
    if not isinstance(value, str):
        try:
            number = float(value)
        except (TypeError, ValueError, OverflowError):
            raise _error(
                value, kind, f"expected a string or a number, got {type(value).__name__}"
            ) from None
        return _check_number(number, value, kind), ""
    if not value.strip():
        raise _error(value, kind, "the text is empty")
    if "," in value:
        raise _error(
            value,
            kind,
            "commas are not accepted (neither as thousands separators nor as decimal points); "
            "write 1000, 1_000 or 1.5",
        )
    match = _QUANTITY_RE.fullmatch(value)
    if match is None:
        bare = value.strip().lstrip("+-").lower()
        if bare.startswith(("nan", "inf")):
            raise _error(value, kind, "the number must be finite (no NaN or infinity)")
        raise _error(value, kind, "it does not start with a number")
    unit = " ".join(match["unit"].split())
    if unit[:1] in ("_", ".") or unit[:1].isdigit():
        raise _error(value, kind, "the number is malformed")
    try:
        number = float(match["num"].replace("_", ""))
    except (ValueError, OverflowError):  # pragma: no cover - the regex only admits floats
        raise _error(value, kind, "the number is malformed") from None
    return _check_number(number, value, kind), unit


def _scaled(number: float, factor: float, value: object, kind: str) -> float:
    result = number * factor
    if not math.isfinite(result):
        raise _error(value, kind, "the value is too large")
    return result


def _case_hint(unit: str, table: Mapping[str, float]) -> str:
    """Reason text for a unit not in ``table``, suggesting correctly cased spellings."""
    candidates = sorted({k for k in table if k.lower() == unit.lower()})
    if candidates:
        options = " or ".join(f"'{c}'" for c in candidates)
        return f"units are case-sensitive; did you mean {options}?"
    return f"unknown unit '{unit}'"


# --------------------------------------------------------------------------------------------
# data units (bandwidth and size)

_DECIMAL_PREFIX: Final[Mapping[str, float]] = {
    "": 1.0,
    "k": 1e3,
    "K": 1e3,
    "M": 1e6,
    "G": 1e9,
    "g": 1e9,
    "T": 1e12,
    "t": 1e12,
    "P": 1e15,
}
_BINARY_PREFIX: Final[Mapping[str, float]] = {
    "k": 2.0**10,
    "K": 2.0**10,
    "M": 2.0**20,
    "G": 2.0**30,
    "g": 2.0**30,
    "T": 2.0**40,
    "t": 2.0**40,
    "P": 2.0**50,
}
_MISLEADING_PREFIX: Final[Mapping[str, str]] = {
    "m": "'m' means milli; write 'M' for mega",
    "p": "'p' means pico; write 'P' for peta",
}

_RATE_SUFFIX_RE: Final = re.compile(r"(?:\s*/\s*s(?:ec(?:ond)?)?|ps|\s*per\s+s(?:ec(?:ond)?)?)$")
_DATA_RE: Final = re.compile(
    r"(?:(?P<prefix>[A-Za-z])(?P<binary>i)?)??(?P<base>bits?|Bits?|bytes?|Bytes?|b|B)?"
)


class _DataUnit:
    __slots__ = ("base", "factor", "is_rate", "prefix", "text")

    def __init__(self, text: str, prefix: str, factor: float, base: str, is_rate: bool) -> None:
        self.text = text
        self.prefix = prefix
        self.factor = factor  # multiplier to bits or bytes, see ``base``
        self.base = base  # "bit", "byte" or "" (not stated)
        self.is_rate = is_rate


def _read_data_unit(unit: str, value: object, kind: str) -> _DataUnit:
    rate = _RATE_SUFFIX_RE.search(unit)
    body = unit[: rate.start()] if rate else unit
    match = _DATA_RE.fullmatch(body)
    if match is None:
        raise _error(value, kind, f"unknown unit '{unit}'")
    prefix = match["prefix"] or ""
    binary = match["binary"] is not None
    if prefix in _MISLEADING_PREFIX:
        raise _error(value, kind, _MISLEADING_PREFIX[prefix])
    table = _BINARY_PREFIX if binary else _DECIMAL_PREFIX
    if prefix not in table:
        raise _error(value, kind, f"unknown unit '{unit}'")
    raw_base = match["base"] or ""
    if raw_base.lower().startswith("bit") or raw_base == "b":
        base = "bit"
    elif raw_base:
        base = "byte"
    else:
        base = ""
    shown = prefix + ("i" if binary else "")
    return _DataUnit(unit, shown, table[prefix], base, rate is not None)


# --------------------------------------------------------------------------------------------
# parsers


def parse_bandwidth(value: str | float | int) -> float:
    """Read a bandwidth and return it in bytes per second.

    ``b``/``bit`` are bits and ``B``/``byte`` are bytes; decimal prefixes ``k``/``K``, ``M``,
    ``G``, ``T``, ``P`` are powers of 1000 and binary ``Ki`` ... ``Pi`` powers of 1024.  The
    rate suffix may be ``/s``, ``ps`` or ``per second``.  A plain number is bytes/s.

    >>> parse_bandwidth("400 Gb/s")
    50000000000.0
    >>> parse_bandwidth("50GBps")
    50000000000.0
    >>> parse_bandwidth("25 GiB/s") == 25 * 2**30
    True
    """
    kind = "bandwidth"
    number, unit = _split(value, kind)
    if not unit:
        return number
    data = _read_data_unit(unit, value, kind)
    if not data.base:
        if data.prefix:
            reason = (
                f"say whether {data.prefix} means bits or bytes "
                f"('{data.prefix}b/s' for bits, '{data.prefix}B/s' for bytes)"
            )
        else:
            reason = "say whether the rate is in bits ('b/s') or bytes ('B/s')"
        raise _error(value, kind, reason)
    if not data.is_rate:
        raise _error(
            value,
            kind,
            f"'{unit}' is a size, not a rate: a rate needs '/s' (e.g. '{unit}/s')",
        )
    factor = data.factor / 8.0 if data.base == "bit" else data.factor
    return _scaled(number, factor, value, kind)


def parse_size(value: str | float | int) -> float:
    """Read a size (an amount of data) and return it in bytes.

    ``B``/``byte`` are bytes and ``b``/``bit`` bits (``"8 b"`` is one byte).  Decimal prefixes
    ``k``/``K``, ``M``, ``G``, ``T``, ``P`` are powers of 1000 — so ``"1 KB"`` is 1000 bytes, the
    same as ``"1 kB"`` — and binary ``Ki`` ... ``Pi`` powers of 1024.  A plain number is bytes.

    >>> parse_size("25 MiB")
    26214400.0
    >>> parse_size("1 KB")
    1000.0
    >>> parse_size("1 Mib")
    131072.0
    """
    kind = "size"
    number, unit = _split(value, kind)
    if not unit:
        return number
    data = _read_data_unit(unit, value, kind)
    if data.is_rate:
        raise _error(
            value,
            kind,
            "that is a rate, not a size: drop the per-second suffix",
        )
    if not data.base:
        raise _error(
            value,
            kind,
            f"say whether {data.prefix} means bits or bytes "
            f"('{data.prefix}b' for bits, '{data.prefix}B' for bytes)",
        )
    factor = data.factor / 8.0 if data.base == "bit" else data.factor
    return _scaled(number, factor, value, kind)


_TIME_UNITS: Final[Mapping[str, float]] = {
    "fs": 1e-15,
    "ps": 1e-12,
    "ns": 1e-9,
    "nsec": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,  # U+00B5 MICRO SIGN
    "μs": 1e-6,  # U+03BC GREEK SMALL LETTER MU
    "usec": 1e-6,
    "ms": 1e-3,
    "msec": 1e-3,
    "s": 1.0,
    "sec": 1.0,
    "secs": 1.0,
    "second": 1.0,
    "seconds": 1.0,
    "min": 60.0,
    "mins": 60.0,
    "minute": 60.0,
    "minutes": 60.0,
    "h": 3600.0,
    "hr": 3600.0,
    "hrs": 3600.0,
    "hour": 3600.0,
    "hours": 3600.0,
    "d": 86400.0,
    "day": 86400.0,
    "days": 86400.0,
}


def parse_time(value: str | float | int) -> float:
    """Read a duration and return it in seconds.

    Units: ``fs``, ``ps``, ``ns``, ``us``/``µs``/``μs`` (either micro sign), ``ms``, ``s``/``sec``,
    ``min``, ``h``, ``d``.  A plain number is seconds.

    >>> parse_time("130 ns")
    1.3e-07
    >>> parse_time("2 µs")
    2e-06
    >>> parse_time("1.5 h")
    5400.0
    """
    kind = "time"
    number, unit = _split(value, kind)
    if not unit:
        return number
    factor = _TIME_UNITS.get(unit)
    if factor is None:
        if unit == "m":
            reason = "'m' is ambiguous; write 'min' for minutes or 'ms' for milliseconds"
        else:
            reason = _case_hint(unit, _TIME_UNITS)
        raise _error(value, kind, reason)
    return _scaled(number, factor, value, kind)


_POWER_UNITS: Final[Mapping[str, float]] = {
    "pW": 1e-12,
    "nW": 1e-9,
    "uW": 1e-6,
    "µW": 1e-6,
    "μW": 1e-6,
    "mW": 1e-3,
    "W": 1.0,
    "watt": 1.0,
    "watts": 1.0,
    "kW": 1e3,
    "KW": 1e3,
    "MW": 1e6,
    "GW": 1e9,
    "TW": 1e12,
}


def parse_power(value: str | float | int) -> float:
    """Read a power and return it in watts.

    Units: ``pW``, ``nW``, ``uW``/``µW``, ``mW``, ``W``, ``kW`` (or ``KW``), ``MW``, ``GW``,
    ``TW``.  Case matters: ``mW`` is milliwatts and ``MW`` megawatts, so ``mw``/``Mw`` are
    rejected.  A plain number is watts.

    >>> parse_power("1.2 MW")
    1200000.0
    >>> parse_power("500mW")
    0.5
    """
    kind = "power"
    number, unit = _split(value, kind)
    if not unit:
        return number
    factor = _POWER_UNITS.get(unit)
    if factor is None:
        if unit.lower() == "mw":
            reason = "ambiguous casing; write 'mW' for milliwatts or 'MW' for megawatts"
        else:
            reason = _case_hint(unit, _POWER_UNITS)
        raise _error(value, kind, reason)
    return _scaled(number, factor, value, kind)


_LENGTH_UNITS: Final[Mapping[str, float]] = {
    "nm": 1e-9,
    "um": 1e-6,
    "µm": 1e-6,
    "μm": 1e-6,
    "mm": 1e-3,
    "cm": 1e-2,
    "m": 1.0,
    "metre": 1.0,
    "metres": 1.0,
    "meter": 1.0,
    "meters": 1.0,
    "km": 1e3,
}
_NON_SI_LENGTHS: Final = frozenset({"ft", "feet", "foot", "in", "inch", "inches", "mi", "yd"})


def parse_length(value: str | float | int) -> float:
    """Read a length and return it in metres.

    SI units only: ``nm``, ``um``/``µm``, ``mm``, ``cm``, ``m``, ``km``.  A plain number is
    metres.

    >>> parse_length("3 mm")
    0.003
    >>> parse_length("10km")
    10000.0
    """
    kind = "length"
    number, unit = _split(value, kind)
    if not unit:
        return number
    factor = _LENGTH_UNITS.get(unit)
    if factor is None:
        if unit.lower() in _NON_SI_LENGTHS:
            reason = f"'{unit}' is not an SI unit; only nm, µm, mm, cm, m and km are accepted"
        else:
            reason = _case_hint(unit, _LENGTH_UNITS)
        raise _error(value, kind, reason)
    return _scaled(number, factor, value, kind)


_ENERGY_PREFIX: Final[Mapping[str, float]] = {
    "f": 1e-15,
    "p": 1e-12,
    "n": 1e-9,
    "u": 1e-6,
    "µ": 1e-6,
    "μ": 1e-6,
    "m": 1e-3,
    "": 1.0,
}
_ENERGY_RE: Final = re.compile(r"(?P<prefix>[A-Za-zµμ]?)(?P<joule>[Jj])(?:\s*/\s*(?P<per>\w+))?")


def parse_energy_per_bit(value: str | float | int) -> float:
    """Read an energy per bit and return it in joules per bit.

    Forms: ``"5 pJ/bit"`` or ``"5 pJ/b"``, with prefixes ``f``, ``p``, ``n``, ``u``/``µ``, ``m``
    or none.  A plain number is J/bit.

    >>> parse_energy_per_bit("5 pJ/bit")
    5e-12
    >>> parse_energy_per_bit("0.5nJ/b")
    5e-10
    """
    kind = "energy per bit"
    number, unit = _split(value, kind)
    if not unit:
        return number
    match = _ENERGY_RE.fullmatch(unit)
    if match is None:
        raise _error(value, kind, f"unknown unit '{unit}'")
    prefix, per = match["prefix"], match["per"]
    if match["joule"] == "j":
        raise _error(value, kind, "write the joule as 'J'")
    if prefix not in _ENERGY_PREFIX:
        raise _error(value, kind, f"unknown prefix '{prefix}' on J")
    if per is None:
        raise _error(value, kind, "an energy per bit needs '/bit' (e.g. '5 pJ/bit')")
    if per in ("B", "byte", "Byte", "bytes"):
        raise _error(value, kind, "that is per byte; give the energy per bit (divide by 8)")
    if per not in ("bit", "b"):
        raise _error(value, kind, f"unknown unit '{unit}'")
    return _scaled(number, _ENERGY_PREFIX[prefix], value, kind)


# --------------------------------------------------------------------------------------------
# formatting

_Prefixes = Sequence[tuple[float, str]]

_DECIMAL_DATA: Final[_Prefixes] = [
    (1.0, ""),
    (1e3, "k"),
    (1e6, "M"),
    (1e9, "G"),
    (1e12, "T"),
    (1e15, "P"),
]
_BINARY_DATA: Final[_Prefixes] = [
    (1.0, ""),
    (2.0**10, "Ki"),
    (2.0**20, "Mi"),
    (2.0**30, "Gi"),
    (2.0**40, "Ti"),
    (2.0**50, "Pi"),
]
_TIME_PREFIXES: Final[_Prefixes] = [
    (1e-15, "fs"),  # clock jitter and rounding residues are femtoseconds
    (1e-12, "ps"),
    (1e-9, "ns"),
    (1e-6, "µs"),
    (1e-3, "ms"),
    (1.0, "s"),
]
_POWER_PREFIXES: Final[_Prefixes] = [
    (1e-12, "pW"),
    (1e-9, "nW"),
    (1e-6, "µW"),
    (1e-3, "mW"),
    (1.0, "W"),
    (1e3, "kW"),
    (1e6, "MW"),
    (1e9, "GW"),
    (1e12, "TW"),
]
_LENGTH_PREFIXES: Final[_Prefixes] = [
    (1e-9, "nm"),
    (1e-6, "µm"),
    (1e-3, "mm"),
    (1.0, "m"),
    (1e3, "km"),
]
_ENERGY_PREFIXES: Final[_Prefixes] = [
    (1e-15, "fJ/bit"),
    (1e-12, "pJ/bit"),
    (1e-9, "nJ/bit"),
    (1e-6, "µJ/bit"),
    (1e-3, "mJ/bit"),
    (1.0, "J/bit"),
]


def _round_sig(x: float, digits: int) -> float:
    return float(f"{x:.{digits - 1}e}")


def _number_text(x: float, digits: int) -> str:
    """``x`` (already rounded, > 0) with ``digits`` significant digits, trailing zeros stripped."""
    exponent = math.floor(math.log10(x))
    if -5 <= exponent < 16:
        text = f"{x:.{max(0, digits - 1 - exponent)}f}"
        return text.rstrip("0").rstrip(".") if "." in text else text
    mantissa, exp = f"{x:.{digits - 1}e}".split("e")
    if "." in mantissa:
        mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa}e{int(exp)}"


def _format(value: float, prefixes: _Prefixes, suffix: str, digits: int) -> str:
    if digits < 1:
        raise UnitError(f"digits must be at least 1, got {digits}")
    value = float(value)
    zero_unit = next(name for factor, name in prefixes if factor == 1.0) + suffix
    if not math.isfinite(value):
        return f"{value} {zero_unit}"
    if value == 0:
        return f"0 {zero_unit}"
    if value < 0:
        return "-" + _format(-value, prefixes, suffix, digits)
    index = 0
    for i, (factor, _) in enumerate(prefixes):
        if factor <= value:
            index = i
    mantissa = _round_sig(value / prefixes[index][0], digits)
    # rounding can carry the mantissa up to the next prefix (999.96 -> 1000 -> 1 k)
    while index + 1 < len(prefixes) and mantissa * prefixes[index][0] >= prefixes[index + 1][0]:
        index += 1
        mantissa = _round_sig(value / prefixes[index][0], digits)
    return f"{_number_text(mantissa, digits)} {prefixes[index][1]}{suffix}"


def format_bandwidth(
    bytes_per_s: float, *, bits: bool = False, binary: bool = False, digits: int = 4
) -> str:
    """Format a bandwidth given in bytes per second.

    ``bits=True`` shows bits per second (``b/s``); ``binary=True`` uses ``Ki``...``Pi``.

    >>> format_bandwidth(50e9)
    '50 GB/s'
    >>> format_bandwidth(50e9, bits=True)
    '400 Gb/s'
    >>> format_bandwidth(25 * 2**30, binary=True)
    '25 GiB/s'
    """
    value = float(bytes_per_s) * 8.0 if bits else float(bytes_per_s)
    prefixes = _BINARY_DATA if binary else _DECIMAL_DATA
    return _format(value, prefixes, "b/s" if bits else "B/s", digits)


def format_size(nbytes: float, *, binary: bool = True, digits: int = 4) -> str:
    """Format a size given in bytes (binary prefixes by default).

    >>> format_size(26214400)
    '25 MiB'
    >>> format_size(1000, binary=False)
    '1 kB'
    >>> format_size(0.5)
    '0.5 B'
    """
    prefixes = _BINARY_DATA if binary else _DECIMAL_DATA
    return _format(nbytes, prefixes, "B", digits)


def format_time(seconds: float, *, digits: int = 4) -> str:
    """Format a duration given in seconds, using ps, ns, µs, ms or s (never min/h).

    >>> format_time(1.3e-7)
    '130 ns'
    >>> format_time(2.5e-6)
    '2.5 µs'
    >>> format_time(3600)
    '3600 s'
    >>> format_time(8e-15)
    '8 fs'
    """
    return _format(seconds, _TIME_PREFIXES, "", digits)


def format_power(watts: float, *, digits: int = 4) -> str:
    """Format a power given in watts.

    >>> format_power(1.2e6)
    '1.2 MW'
    >>> format_power(0.25)
    '250 mW'
    """
    return _format(watts, _POWER_PREFIXES, "", digits)


def format_length(metres: float, *, digits: int = 4) -> str:
    """Format a length given in metres, using nm, µm, mm, m or km.

    >>> format_length(850e-9)
    '850 nm'
    >>> format_length(2)
    '2 m'
    """
    return _format(metres, _LENGTH_PREFIXES, "", digits)


def format_energy_per_bit(joules_per_bit: float, *, digits: int = 4) -> str:
    """Format an energy per bit given in joules per bit.

    >>> format_energy_per_bit(5e-12)
    '5 pJ/bit'
    """
    return _format(joules_per_bit, _ENERGY_PREFIXES, "", digits)
