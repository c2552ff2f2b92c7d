"""Silent killers: stragglers and tail latency, link and switch failures, bit errors that
corrupt gradients, incast bursts, and goodput over a whole run — as distributions with
confidence intervals, not point estimates.

Modules: :mod:`~commwall.faults.stats` (summaries with 95% intervals),
:mod:`~commwall.faults.stragglers`, :mod:`~commwall.faults.failures`,
:mod:`~commwall.faults.bit_errors`, :mod:`~commwall.faults.incast`,
:mod:`~commwall.faults.goodput`.
"""

from commwall.faults.errors import FaultError
from commwall.faults.stats import Summary, poisson_rate_interval, summarize

__all__ = ["FaultError", "Summary", "poisson_rate_interval", "summarize"]
