"""The root of commwall's errors.

Every error the library raises on input it cannot use, or on a model it cannot build, derives
from :class:`CommwallError` (and, where it did before, from ``ValueError``, ``RuntimeError`` or
``ImportError``, so existing ``except`` clauses still hold). Each message names the value, what
is wrong with it and what is allowed, in the library's own terms (fields and parameters, not
command-line flags). The command line catches the root once (:func:`commwall.console.friendly`)
and prints the message; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

__all__ = ["CommwallError"]


class CommwallError(Exception):
    """An input commwall cannot use, or a model it cannot build; the message says which and why."""
