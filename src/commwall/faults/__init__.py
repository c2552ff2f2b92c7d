"""Silent killers: stragglers and tail latency, link and switch failures, bit errors that
corrupt gradients, incast bursts, and goodput over a whole run — as distributions with
confidence intervals, not point estimates.

Modules: :mod:`~commwall.faults.stats` (summaries with 95% intervals),
:mod:`~commwall.faults.stragglers`, :mod:`~commwall.faults.failures`,
:mod:`~commwall.faults.bit_errors`, :mod:`~commwall.faults.incast`,
:mod:`~commwall.faults.goodput`.
"""

from commwall.faults.errors import FaultError

# Only the error type here: every CLI command imports it (console.friendly), so the models and
# scipy load when a fault command runs, not on every ``commwall`` call.
__all__ = ["FaultError"]
