"""The argument checks every package shares: a number in a range, said one way everywhere.

A failing check raises the caller's error class (each package keeps its own, all rooted in
:class:`~commwall.errors.CommwallError`) with ``NAME: VALUE is out of range; allowed: a finite
number RANGE``.

>>> number("jitter", 0.05, 0.0, 10.0)
0.05
>>> number("mtbf", 0, 0.0, open_low=True)
Traceback (most recent call last):
...
ValueError: mtbf: 0 is out of range; allowed: a finite number > 0
"""

from __future__ import annotations

import math

__all__ = ["number"]


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
