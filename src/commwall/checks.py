"""The argument checks every package shares: a number in a range, a whole number, one of a set
of names — each said one way everywhere.

A failing check raises the caller's error class (each package keeps its own, all rooted in
:class:`~commwall.errors.CommwallError`) naming the parameter, the value and what is allowed:
``NAME: VALUE is out of range; allowed: a finite number RANGE`` for numbers,
``NAME: VALUE is not allowed; allowed: …`` for whole numbers and names,
``NAME: VALUE is not true or false`` for flags.

>>> number("jitter", 0.05, 0.0, 10.0)
0.05
>>> number("mtbf", 0, 0.0, open_low=True)
Traceback (most recent call last):
...
ValueError: mtbf: 0 is out of range; allowed: a finite number > 0
>>> whole("radix", 2.5, 2)
Traceback (most recent call last):
...
ValueError: radix: 2.5 is not allowed; allowed: a whole number >= 2
>>> choice("optimizer", "lion", ("adam", "sgd"))
Traceback (most recent call last):
...
ValueError: optimizer: 'lion' is not allowed; allowed: adam, sgd
"""

from __future__ import annotations

import math
from collections.abc import Iterable

__all__ = ["choice", "flag", "number", "whole"]


def number(
    name: str,
    value: object,
    lo: float = -math.inf,
    hi: float = math.inf,
    *,
    open_low: bool = False,
    error: type[Exception] = ValueError,
) -> float:
    """``value`` as a float if it is a finite number (not a bool) in ``[lo, hi]`` (``(lo, hi]``
    with ``open_low``), else ``error`` naming ``name``, the value and the range."""
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    x = float(value) if ok else math.nan  # type: ignore[arg-type]
    if not math.isfinite(x) or x < lo or x > hi or (open_low and x == lo):
        if open_low:
            allowed = f"> {lo:g}"
        elif hi == math.inf:
            allowed = f">= {lo:g}"
        else:
            allowed = f"{lo:g}..{hi:g}"
        raise error(f"{name}: {value!r} is out of range; allowed: a finite number {allowed}")
    return x


def whole(
    name: str,
    value: object,
    minimum: int = 0,
    maximum: int | None = None,
    *,
    why: str = "",
    error: type[Exception] = ValueError,
) -> int:
    """``value`` if it is an int (not a bool) in ``[minimum, maximum]``, else ``error`` naming
    ``name``, the value and the range (and ``why``, where the bound has a reason)."""
    if (
        isinstance(value, int)
        and not isinstance(value, bool)
        and minimum <= value
        and (maximum is None or value <= maximum)
    ):
        return value
    allowed = f">= {minimum}" if maximum is None else f"{minimum}..{maximum}"
    reason = f" ({why})" if why else ""
    raise error(f"{name}: {value!r} is not allowed; allowed: a whole number {allowed}{reason}")


def choice(
    name: str, value: object, allowed: Iterable[str], *, error: type[Exception] = ValueError
) -> str:
    """``value`` if it is one of the names ``allowed``, else ``error`` listing them."""
    names = tuple(allowed)
    if isinstance(value, str) and value in names:
        return value
    raise error(f"{name}: {value!r} is not allowed; allowed: {', '.join(names)}")


def flag(name: str, value: object, *, error: type[Exception] = ValueError) -> bool:
    """``value`` as a flag: a bool, or the text ``true`` / ``false`` (any case, as a launch
    script or a YAML string spells it), else ``error`` naming ``name`` and the value."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise error(f"{name}: {value!r:.60} is not true or false")
