"""The general input error of :mod:`commwall.workload` (the pipeline layout, the memory model and
model definitions keep their own: :class:`~commwall.workload.pipeline_layout.LayoutError`,
:class:`~commwall.workload.memory.MemoryModelError`,
:class:`~commwall.workload.models.ModelDefinitionError`)."""

from __future__ import annotations

from commwall.errors import CommwallError

__all__ = ["WorkloadError"]


class WorkloadError(CommwallError, ValueError):
    """A workload input is wrong; the message names the value, the problem and what is allowed."""
