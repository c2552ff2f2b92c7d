"""Real collectives measured on this machine with ``torch.distributed`` (``commwall measure``).

:func:`measure` launches ``nprocs`` processes, times one collective over a range of sizes the
way nccl-tests does and returns an :class:`~commwall.io.nccl_tests.NcclTestsRun`, which
:func:`~commwall.io.nccl_tests.format_nccl_tests` writes in nccl-tests' layout so that
``commwall nccl-tests`` and ``commwall calibrate nccl-tests`` read it like any other log.
torch is optional (``pip install 'commwall[torch]'``); nothing else in commwall imports it.
"""

from commwall.measure.bench import (
    MeasureConfig,
    MeasureConfigError,
    MeasureError,
    measure,
    measurement_sizes,
    torch_available,
)

__all__ = [
    "MeasureConfig",
    "MeasureConfigError",
    "MeasureError",
    "measure",
    "measurement_sizes",
    "torch_available",
]
