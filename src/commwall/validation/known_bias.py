"""Where the compute model is known to miss published training runs, for a step's reader.

``commwall validate --training`` (docs/validation-training.md) compares the kernel compute model
with published, measured runs. Where one GPU family misses the same way on every source, a
user simulating that GPU should hear it next to the number, with what to do about it:
:data:`COMPUTE_BIAS` holds that finding as data and :func:`compute_bias_note` words it for
``commwall run``. It reports, it never corrects: no prediction uses it (a correction would be a
constant fitted to the validation runs, which the model does not take). Every run's regime, not
only a family that misses, is quoted beside a step by :mod:`commwall.validation.accuracy`, which
took over the note this module once held for MoE runs on Blackwell not marked sync-free.

The figures are the dense runs on the catalog presets of the GPUs named, from the bundled data
file; a slow test (``test_training.py``) recomputes them with the table and fails when they
drift, so they move with the model.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

__all__ = [
    "COMPUTE_BIAS",
    "KnownBias",
    "bias_of",
    "compute_bias_note",
]


@dataclass(frozen=True)
class KnownBias:
    """A GPU family's step-time error against published dense runs (predicted / measured − 1)."""

    gpus: tuple[str, ...]  #: catalog GPU names the finding is about
    presets: tuple[str, ...]  #: the validation runs' cluster presets it was measured on
    runs: int  #: dense runs compared
    within: int  #: runs whose error lies in [low, high]
    low: float  #: most negative error of those runs
    high: float  #: least negative (or most positive) error of those runs
    median: float  #: median error of all ``runs``

    def note(self, gpu: str) -> str:
        """One sentence for ``commwall run`` (``gpu`` as the cluster names it)."""
        return (
            f"on {gpu} the kernel compute model has been {-self.high:.0%}–{-self.low:.0%} faster "
            f"than {self.within} of {self.runs} published dense {'/'.join(self.gpus)} runs "
            f"(median {self.median:+.0%}; docs/validation-training.md): measure one step and "
            "fit job.compute_scale with `commwall calibrate step`"
        )


#: None at present: every GPU family's dense runs are within 7 % on their median (A100 -6 %,
#: B200 -1 %, B300 +2 %, H100 -4 %, H200 -1 %, GB200 -2 %, GB300 +2 % in the table of stop 54;
#: two H100 RoCE runs at -25 % are too few to call a family's bias), and a slow test
#: (``test_training.py``) fails when a family of five or more runs with no entry here drifts
#: beyond 10 %. The last entries were
#: B200/GB200 (median -14 %) and B300 (-14 %), removed when their GEMMs took the sustained share
#: of the rate each sustains at its power limit (POWER_BOUND_GEMM; docs/compute-model.md).
COMPUTE_BIAS: Final[tuple[KnownBias, ...]] = ()


def bias_of(gpu: str) -> KnownBias | None:
    """The known compute bias of catalog GPU ``gpu``, or None."""
    return next((b for b in COMPUTE_BIAS if gpu in b.gpus), None)


def compute_bias_note(gpu: str, *, kernel_model: bool, compute_scale: float) -> str | None:
    """What ``commwall run`` says under a step on ``gpu``: the known bias, unless the job
    does not use the kernel model or already carries a measured ``compute_scale``."""
    bias = bias_of(gpu)
    if bias is None or not kernel_model or compute_scale != 1.0:
        return None
    return bias.note(gpu)


def summarise(errors: Iterable[float], bias: KnownBias) -> KnownBias:
    """``bias`` recomputed from ``errors`` (the dense runs on its presets): the slow test
    compares it with the stored one."""
    values = sorted(errors)
    if not values:
        raise ValueError("no runs to summarise")
    n = len(values)
    median = statistics.median(values)
    inside = [e for e in values if bias.low - 0.005 <= e <= bias.high + 0.005]
    return KnownBias(
        bias.gpus,
        bias.presets,
        runs=n,
        within=len(inside),
        low=min(inside, default=0.0),
        high=max(inside, default=0.0),
        median=median,
    )
