"""The shared argument checks: their wording, and that bools, NaN, infinities and wrong types are
refused."""

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


@pytest.mark.parametrize("bad", [True, 2.0, "3", None, -1])
def test_a_whole_number_is_an_int_in_range(bad: object) -> None:
    with pytest.raises(KeyError, match=r"n: .* is not allowed; allowed: a whole number >= 0"):
        checks.whole("n", bad, 0, error=KeyError)
    assert checks.whole("n", 0, 0) == 0


def test_a_whole_number_range_and_reason() -> None:
    assert checks.whole("stage", 3, 0, 3) == 3
    with pytest.raises(
        ValueError, match=r"stage: 4 is not allowed; allowed: a whole number 0\.\.3"
    ):
        checks.whole("stage", 4, 0, 3)
    with pytest.raises(ValueError, match=r">= 4 \(two ports down and two up\)$"):
        checks.whole("k", 2, 4, why="two ports down and two up")


@pytest.mark.parametrize("bad", ["lion", "", None, 1, "ADAM"])
def test_a_choice_lists_what_is_allowed(bad: object) -> None:
    with pytest.raises(KeyError, match=r"opt: .* is not allowed; allowed: adam, sgd"):
        checks.choice("opt", bad, ("adam", "sgd"), error=KeyError)
    assert checks.choice("opt", "sgd", ["adam", "sgd"]) == "sgd"
