"""Tests for commwall.units: exact parse tables, error messages, and round-trip properties."""

from __future__ import annotations

import math
import re
from collections.abc import Callable

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from commwall.units import (
    UnitError,
    format_bandwidth,
    format_energy_per_bit,
    format_length,
    format_power,
    format_size,
    format_time,
    parse_bandwidth,
    parse_energy_per_bit,
    parse_length,
    parse_power,
    parse_size,
    parse_time,
)

Parser = Callable[[str | float | int], float]
Formatter = Callable[[float], str]

# ---------------------------------------------------------------------------------------------
# good inputs

GOOD: list[tuple[Parser, str | float | int, float]] = [
    # bandwidth -> bytes/s
    (parse_bandwidth, "400 Gb/s", 50e9),
    (parse_bandwidth, "400Gbps", 50e9),
    (parse_bandwidth, "400 Gbit/s", 50e9),
    (parse_bandwidth, "400 GBit/s", 50e9),
    (parse_bandwidth, "400 gbps", 50e9),
    (parse_bandwidth, "400 Gb per second", 50e9),
    (parse_bandwidth, "400 Gb / s", 50e9),
    (parse_bandwidth, "50 GB/s", 50e9),
    (parse_bandwidth, "50 GBps", 50e9),
    (parse_bandwidth, "50 GByte/s", 50e9),
    (parse_bandwidth, "50 Gbyte/s", 50e9),
    (parse_bandwidth, "1.8 TB/s", 1.8e12),
    (parse_bandwidth, "25 GiB/s", 25 * 2**30),
    (parse_bandwidth, "100 Mib/s", 100 * 2**20 / 8),
    (parse_bandwidth, "12.5 kB/s", 12_500.0),
    (parse_bandwidth, "12.5 KB/s", 12_500.0),
    (parse_bandwidth, "1 KiB/s", 1024.0),
    (parse_bandwidth, "1 PB/s", 1e15),
    (parse_bandwidth, "8 bps", 1.0),
    (parse_bandwidth, "3 B/s", 3.0),
    (parse_bandwidth, "1e3 Gb/s", 125e9),
    (parse_bandwidth, "1_000 Gb/s", 125e9),
    (parse_bandwidth, "  400 Gb/s  ", 50e9),
    (parse_bandwidth, "0 Gb/s", 0.0),
    (parse_bandwidth, "12345", 12345.0),
    (parse_bandwidth, 50e9, 50e9),
    (parse_bandwidth, 7, 7.0),
    # size -> bytes
    (parse_size, "8B", 8.0),
    (parse_size, "8 B", 8.0),
    (parse_size, "25 MiB", 26_214_400.0),
    (parse_size, "1 MB", 1e6),
    (parse_size, "8 GiB", 8 * 2**30),
    (parse_size, "1 KiB", 1024.0),
    (parse_size, "1 kB", 1000.0),
    (parse_size, "1 KB", 1000.0),
    (parse_size, "1 kbit", 125.0),
    (parse_size, "8 b", 1.0),
    (parse_size, "1 Mib", 131_072.0),
    (parse_size, "2 bytes", 2.0),
    (parse_size, "1.5 TB", 1.5e12),
    (parse_size, ".5 B", 0.5),
    (parse_size, "4096", 4096.0),
    (parse_size, 0, 0.0),
    # time -> seconds (exact where the float arithmetic is exact)
    (parse_time, "3 s", 3.0),
    (parse_time, "3 sec", 3.0),
    (parse_time, "3s", 3.0),
    (parse_time, "2 min", 120.0),
    (parse_time, "1.5 h", 5400.0),
    (parse_time, "1 d", 86_400.0),
    (parse_time, "0.25", 0.25),
    # power -> watts
    (parse_power, "500 mW", 0.5),
    (parse_power, "700 W", 700.0),
    (parse_power, "20 kW", 20_000.0),
    (parse_power, "1.2 MW", 1.2e6),
    (parse_power, "2 GW", 2e9),
    (parse_power, "1_000 W", 1000.0),
    (parse_power, "15", 15.0),
    # length -> metres
    (parse_length, "2 m", 2.0),
    (parse_length, "10 km", 10_000.0),
    (parse_length, "3", 3.0),
]

GOOD_APPROX: list[tuple[Parser, str | float | int, float]] = [
    (parse_time, "130 ns", 130e-9),
    (parse_time, "2 us", 2e-6),
    (parse_time, "2 µs", 2e-6),  # U+00B5 MICRO SIGN
    (parse_time, "2 μs", 2e-6),  # U+03BC GREEK SMALL LETTER MU
    (parse_time, "1.5 ms", 1.5e-3),
    (parse_time, "7 ps", 7e-12),
    (parse_time, "7 fs", 7e-15),
    (parse_time, "2.5E-9 s", 2.5e-9),
    (parse_power, "3 µW", 3e-6),
    (parse_power, "3 uW", 3e-6),
    (parse_length, "850 nm", 850e-9),
    (parse_length, "3 µm", 3e-6),
    (parse_length, "3 um", 3e-6),
    (parse_length, "3 mm", 3e-3),
    (parse_length, "5 cm", 5e-2),
    (parse_energy_per_bit, "5 pJ/bit", 5e-12),
    (parse_energy_per_bit, "5 pJ/b", 5e-12),
    (parse_energy_per_bit, "5pJ/bit", 5e-12),
    (parse_energy_per_bit, "20 fJ/bit", 20e-15),
    (parse_energy_per_bit, "0.5 nJ/bit", 0.5e-9),
    (parse_energy_per_bit, "1 J/bit", 1.0),
    (parse_energy_per_bit, "3e-12", 3e-12),
]


@pytest.mark.parametrize(("parse", "text", "expected"), GOOD)
def test_parse_exact(parse: Parser, text: str | float | int, expected: float) -> None:
    result = parse(text)
    assert isinstance(result, float)
    assert result == expected


@pytest.mark.parametrize(("parse", "text", "expected"), GOOD_APPROX)
def test_parse_approx(parse: Parser, text: str | float | int, expected: float) -> None:
    assert parse(text) == pytest.approx(expected, rel=1e-12)


def test_negative_zero_is_plain_zero() -> None:
    assert math.copysign(1.0, parse_size("-0 B")) == 1.0
    assert math.copysign(1.0, parse_time(-0.0)) == 1.0


# ---------------------------------------------------------------------------------------------
# bad inputs: each must raise UnitError whose message contains the fragment (a regex)

BAD: list[tuple[Parser, object, str]] = [
    (parse_bandwidth, "400G", r"say whether G means bits or bytes"),
    (parse_bandwidth, "400 G", r"say whether G means bits or bytes"),
    (parse_bandwidth, "400G/s", r"say whether G means bits or bytes"),
    (parse_bandwidth, "400 Gps", r"say whether G means bits or bytes"),
    (parse_bandwidth, "400 /s", r"bits \('b/s'\) or bytes"),
    (parse_bandwidth, "400 GB", r"is a size, not a rate: a rate needs '/s'"),
    (parse_bandwidth, "400 Gbit", r"a rate needs '/s'"),
    (parse_bandwidth, "400 mb/s", r"'m' means milli"),
    (parse_bandwidth, "4 pB/s", r"'p' means pico"),
    (parse_bandwidth, "400 Xb/s", r"unknown unit 'Xb/s'"),
    (parse_bandwidth, "400 Gb/h", r"unknown unit"),
    (parse_bandwidth, "1,000 Gb/s", r"commas are not accepted"),
    (parse_bandwidth, "", r"the text is empty"),
    (parse_bandwidth, "   ", r"the text is empty"),
    (parse_bandwidth, "Gb/s", r"does not start with a number"),
    (parse_bandwidth, "-400 Gb/s", r"negative values are not allowed"),
    (parse_bandwidth, -1.0, r"negative values are not allowed"),
    (parse_bandwidth, math.nan, r"must be finite"),
    (parse_bandwidth, "nan", r"must be finite"),
    (parse_bandwidth, "inf Gb/s", r"must be finite"),
    (parse_bandwidth, "1e999 Gb/s", r"must be finite"),
    (parse_bandwidth, "1e300 PB/s", r"too large"),
    (parse_bandwidth, True, r"a boolean is not a quantity"),
    (parse_bandwidth, None, r"expected a string or a number, got NoneType"),
    (parse_size, "50 GB/s", r"that is a rate, not a size"),
    (parse_size, "50 GBps", r"that is a rate, not a size"),
    (parse_size, "8 G", r"say whether G means bits or bytes"),
    (parse_size, "1.5.2 B", r"the number is malformed"),
    (parse_size, "1__000 B", r"the number is malformed"),
    (parse_size, "1,5 MB", r"commas are not accepted"),
    (parse_size, False, r"a boolean is not a quantity"),
    (parse_size, "-inf", r"must be finite"),
    (parse_time, "3 S", r"case-sensitive; did you mean 's'\?"),
    (parse_time, "3 MS", r"did you mean 'ms'\?"),
    (parse_time, "3 m", r"'m' is ambiguous"),
    (parse_time, "3 fortnights", r"unknown unit 'fortnights'"),
    (parse_time, "3 Gb/s", r"unknown unit"),
    (parse_power, "5 mw", r"write 'mW' for milliwatts or 'MW' for megawatts"),
    (parse_power, "5 Mw", r"write 'mW' for milliwatts or 'MW' for megawatts"),
    (parse_power, "5 w", r"did you mean 'W'\?"),
    (parse_power, "5 kw", r"did you mean 'KW' or 'kW'\?"),
    (parse_power, "5 hp", r"unknown unit 'hp'"),
    (parse_length, "3 ft", r"not an SI unit"),
    (parse_length, "3 KM", r"did you mean 'km'\?"),
    (parse_length, "3 Mm", r"did you mean 'mm'\?"),
    (parse_energy_per_bit, "5 pJ", r"needs '/bit'"),
    (parse_energy_per_bit, "5 pJ/B", r"per byte"),
    (parse_energy_per_bit, "5 pj/bit", r"write the joule as 'J'"),
    (parse_energy_per_bit, "5 xJ/bit", r"unknown prefix 'x'"),
    (parse_energy_per_bit, "5 pJ/s", r"unknown unit"),
    (parse_energy_per_bit, "5 pW", r"unknown unit"),
]


@pytest.mark.parametrize(("parse", "text", "fragment"), BAD)
def test_parse_rejects(parse: Parser, text: object, fragment: str) -> None:
    with pytest.raises(UnitError, match=fragment):
        parse(text)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("parse", "kind", "accepted"),
    [
        (parse_bandwidth, "a bandwidth", "'400 Gb/s', '50 GB/s', '25 GiB/s'"),
        (parse_size, "a size", "'25 MiB'"),
        (parse_time, "a time", "'130 ns'"),
        (parse_power, "a power", "'1.2 MW'"),
        (parse_length, "a length", "'850 nm'"),
        (parse_energy_per_bit, "an energy per bit", "'5 pJ/bit'"),
    ],
)
def test_error_message_shape(parse: Parser, kind: str, accepted: str) -> None:
    with pytest.raises(UnitError) as info:
        parse("12 zorks")
    message = str(info.value)
    assert message.startswith(f"cannot read '12 zorks' as {kind}: ")
    assert " — accepted forms: " in message
    assert accepted in message
    assert "plain number" in message
    assert isinstance(info.value, ValueError)


def test_error_message_example_from_spec() -> None:
    with pytest.raises(UnitError) as info:
        parse_bandwidth("400G")
    message = str(info.value)
    assert message.startswith(
        "cannot read '400G' as a bandwidth: say whether G means bits or bytes"
    )
    assert message.endswith(
        "— accepted forms: '400 Gb/s', '50 GB/s', '25 GiB/s', or a plain number in bytes/s"
    )


# ---------------------------------------------------------------------------------------------
# formatting examples

FORMATS: list[tuple[str, str]] = [
    (format_bandwidth(50e9), "50 GB/s"),
    (format_bandwidth(50e9, bits=True), "400 Gb/s"),
    (format_bandwidth(25 * 2**30, binary=True), "25 GiB/s"),
    (format_bandwidth(0), "0 B/s"),
    (format_bandwidth(0, bits=True), "0 b/s"),
    (format_bandwidth(0.5), "0.5 B/s"),
    (format_bandwidth(1.8e12), "1.8 TB/s"),
    (format_bandwidth(123_456_789), "123.5 MB/s"),
    (format_bandwidth(999.96), "1 kB/s"),
    (format_bandwidth(5e18), "5000 PB/s"),
    (format_size(26_214_400), "25 MiB"),
    (format_size(1000, binary=False), "1 kB"),
    (format_size(1000), "1000 B"),
    (format_size(1024), "1 KiB"),
    (format_size(0), "0 B"),
    (format_size(0.5), "0.5 B"),
    (format_size(8 * 2**30), "8 GiB"),
    (format_size(1023.99), "1 KiB"),
    (format_time(1.3e-7), "130 ns"),
    (format_time(2.5e-6), "2.5 µs"),
    (format_time(0), "0 s"),
    (format_time(3600), "3600 s"),
    (format_time(1.5e-3), "1.5 ms"),
    (format_time(7e-12), "7 ps"),
    (format_time(5e-13), "500 fs"),
    (format_time(8e-15), "8 fs"),
    (format_time(1.23456789, digits=3), "1.23 s"),
    (format_power(1.2e6), "1.2 MW"),
    (format_power(0.25), "250 mW"),
    (format_power(0), "0 W"),
    (format_power(700), "700 W"),
    (format_length(0), "0 m"),
    (format_length(850e-9), "850 nm"),
    (format_length(10_000), "10 km"),
    (format_length(0.003), "3 mm"),
    (format_energy_per_bit(5e-12), "5 pJ/bit"),
    (format_energy_per_bit(0), "0 J/bit"),
    (format_power(-1.5e3), "-1.5 kW"),
    (format_time(math.inf), "inf s"),
]


@pytest.mark.parametrize(("got", "expected"), FORMATS)
def test_format_examples(got: str, expected: str) -> None:
    assert got == expected


def test_format_rejects_bad_digits() -> None:
    with pytest.raises(UnitError, match="digits"):
        format_time(1.0, digits=0)


# ---------------------------------------------------------------------------------------------
# properties

# (parse, format) pairs covering every kind and every bandwidth/size variant
VARIANTS: dict[str, tuple[Parser, Callable[[float, int], str]]] = {
    "bandwidth-bytes-si": (parse_bandwidth, lambda x, d: format_bandwidth(x, digits=d)),
    "bandwidth-bits-si": (parse_bandwidth, lambda x, d: format_bandwidth(x, bits=True, digits=d)),
    "bandwidth-bytes-binary": (
        parse_bandwidth,
        lambda x, d: format_bandwidth(x, binary=True, digits=d),
    ),
    "bandwidth-bits-binary": (
        parse_bandwidth,
        lambda x, d: format_bandwidth(x, bits=True, binary=True, digits=d),
    ),
    "size-binary": (parse_size, lambda x, d: format_size(x, digits=d)),
    "size-si": (parse_size, lambda x, d: format_size(x, binary=False, digits=d)),
    "time": (parse_time, lambda x, d: format_time(x, digits=d)),
    "power": (parse_power, lambda x, d: format_power(x, digits=d)),
    "length": (parse_length, lambda x, d: format_length(x, digits=d)),
    "energy-per-bit": (parse_energy_per_bit, lambda x, d: format_energy_per_bit(x, digits=d)),
}

magnitudes = st.floats(min_value=1e-30, max_value=1e30, allow_nan=False, allow_infinity=False)


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@given(x=magnitudes | st.just(0.0))
def test_round_trip(variant: str, x: float) -> None:
    parse, fmt = VARIANTS[variant]
    back = parse(fmt(x, 12))
    if x == 0:
        assert back == 0
    else:
        assert abs(back - x) / x < 1e-9


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@given(x=magnitudes, digits=st.integers(min_value=1, max_value=8))
def test_round_trip_any_digits(variant: str, x: float, digits: int) -> None:
    parse, fmt = VARIANTS[variant]
    back = parse(fmt(x, digits))
    assert abs(back - x) / x <= 0.5 * 10 ** (1 - digits) * (1 + 1e-9)


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@given(x=magnitudes, y=magnitudes)
def test_ordering_preserved(variant: str, x: float, y: float) -> None:
    x, y = min(x, y), max(x, y)
    assume(y / x > 1 + 1e-6)
    parse, fmt = VARIANTS[variant]
    assert parse(fmt(x, 12)) < parse(fmt(y, 12))


_UNIT_RE = re.compile(r"^-?[0-9.e+-]+ (?P<unit>\S+)$")


def _unit_of(text: str) -> str:
    match = _UNIT_RE.match(text)
    assert match is not None, text
    return match["unit"]


UNIT_ORDER: dict[str, list[str]] = {
    "bandwidth-bytes-si": ["B/s", "kB/s", "MB/s", "GB/s", "TB/s", "PB/s"],
    "bandwidth-bits-si": ["b/s", "kb/s", "Mb/s", "Gb/s", "Tb/s", "Pb/s"],
    "bandwidth-bytes-binary": ["B/s", "KiB/s", "MiB/s", "GiB/s", "TiB/s", "PiB/s"],
    "bandwidth-bits-binary": ["b/s", "Kib/s", "Mib/s", "Gib/s", "Tib/s", "Pib/s"],
    "size-binary": ["B", "KiB", "MiB", "GiB", "TiB", "PiB"],
    "size-si": ["B", "kB", "MB", "GB", "TB", "PB"],
    "time": ["fs", "ps", "ns", "µs", "ms", "s"],
    "power": ["pW", "nW", "µW", "mW", "W", "kW", "MW", "GW", "TW"],
    "length": ["nm", "µm", "mm", "m", "km"],
    "energy-per-bit": ["fJ/bit", "pJ/bit", "nJ/bit", "µJ/bit", "mJ/bit", "J/bit"],
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@given(x=magnitudes, y=magnitudes, digits=st.integers(min_value=1, max_value=12))
def test_prefix_choice_monotone(variant: str, x: float, y: float, digits: int) -> None:
    x, y = min(x, y), max(x, y)
    _, fmt = VARIANTS[variant]
    order = UNIT_ORDER[variant]
    assert order.index(_unit_of(fmt(x, digits))) <= order.index(_unit_of(fmt(y, digits)))


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@given(x=magnitudes, digits=st.integers(min_value=1, max_value=12))
def test_mantissa_in_range(variant: str, x: float, digits: int) -> None:
    _, fmt = VARIANTS[variant]
    text = fmt(x, digits)
    order = UNIT_ORDER[variant]
    unit = _unit_of(text)
    mantissa = float(text.split(" ")[0])
    step = 1024 if "binary" in variant else 1000
    if unit != order[-1]:
        assert mantissa < step, text
    if unit != order[0]:
        assert mantissa >= 1, text


@given(x=magnitudes)
def test_bits_are_eight_times_bytes(x: float) -> None:
    assert parse_bandwidth(format_bandwidth(x, bits=True, digits=12)) == pytest.approx(x, rel=1e-9)
    assert parse_size(f"{x * 8!r} b") == pytest.approx(x, rel=1e-12)


@given(
    number=st.floats(min_value=0, max_value=1e6, allow_nan=False),
    space=st.sampled_from(["", " ", "  ", "\t"]),
)
def test_whitespace_optional(number: float, space: str) -> None:
    assert parse_time(f"{number!r}{space}ms") == pytest.approx(number * 1e-3, rel=1e-12)
    assert parse_bandwidth(f"{number!r}{space}Gb/s") == pytest.approx(number * 1e9 / 8)


@pytest.mark.parametrize(
    "parse", [parse_bandwidth, parse_size, parse_time, parse_power, parse_length]
)
@given(x=st.floats(min_value=0, max_value=1e300, allow_nan=False))
def test_plain_numbers_are_base_units(parse: Parser, x: float) -> None:
    assert parse(x) == x
    assert parse(repr(x)) == x
