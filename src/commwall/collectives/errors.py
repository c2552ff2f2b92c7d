"""The input error of :mod:`commwall.collectives`."""

from __future__ import annotations

from commwall.errors import CommwallError

__all__ = ["CollectiveError"]


class CollectiveError(CommwallError, ValueError):
    """A collective input is wrong; the message names the value, the problem and what is allowed."""
