"""The one error type of :mod:`commwall.faults`."""

from __future__ import annotations

from commwall.errors import CommwallError

__all__ = ["FaultError"]


class FaultError(CommwallError, ValueError):
    """A fault-model parameter is wrong; the message names it, its value and what is allowed."""
