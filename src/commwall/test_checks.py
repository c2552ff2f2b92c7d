"""The shared number check: its range wording, and that bools, NaN and infinities are refused."""

from __future__ import annotations

import doctest
import math

import pytest

from commwall import checks


def test_doctests() -> None:
    assert doctest.testmod(checks).failed == 0


@pytest.mark.parametrize(
    ("kwargs", "allowed"),
    [
        ({"lo": 0.0, "open_low": True}, "> 0"),
        ({"lo": 0.0}, ">= 0"),
        ({"lo": 1.0, "hi": 3.0}, "1..3"),
    ],
)
def test_the_range_is_said_one_way(kwargs: dict[str, float], allowed: str) -> None:
    with pytest.raises(
        KeyError, match=f"x: -1 is out of range; allowed: a finite number {allowed}"
    ):
        checks.number("x", -1, error=KeyError, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [True, math.nan, math.inf, "1", None])
def test_not_a_finite_number_is_refused(bad: object) -> None:
    with pytest.raises(ValueError, match="is out of range"):
        checks.number("x", bad)
