"""The one error type of :mod:`commwall.faults`."""

from __future__ import annotations

__all__ = ["FaultError"]


class FaultError(ValueError):
    """A fault-model parameter is wrong; the message names it, its value and what is allowed."""
