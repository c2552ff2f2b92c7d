"""Where the compute model is known to miss published training runs, for a step's reader.

``commwall validate --training`` (docs/validation-training.md) compares the kernel compute model
with published, measured runs. Where one GPU family misses the same way on every source, a
user simulating that GPU should hear it next to the number, with what to do about it:
:data:`COMPUTE_BIAS` holds that finding as data and :func:`compute_bias_note` words it for
``commwall run``. It reports, it never corrects: no prediction uses it (a correction would be a
constant fitted to the validation runs, which the model does not take).

The figures are the dense runs (no experts) on the catalog presets of the GPUs named, from the
bundled data file; a slow test (``test_training.py``) recomputes them with the table and fails
when they drift, so they move with the model.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

__all__ = ["COMPUTE_BIAS", "KnownBias", "bias_of", "compute_bias_note"]


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


#: GB200 (1,200 W in an NVL72 rack): NeMo 25.04, Megatron-Bridge 25.09 to 26.04 and the MLPerf
#: Training v5.0 and v5.1 submissions of NVIDIA and CoreWeave, FP8 (delayed, current and MXFP8
#: scaling) and NVFP4. Every FP8 and BF16 run is fast: its GEMMs run at MAMF × the sustained
#: share, as no sustained rate at GB200's power limit is published (POWER_BOUND_GEMM), where the
#: B200 and B300 runs, whose GEMMs take the rate MIT ORCD measured at their power limits, sit at
#: -5 % and -3 % on their medians and carry no note. Outside the range: MLPerf's Llama 3.1 8B on
#: 512 GB200 (-46 %), a ~40 ms step across eight NVL72 racks that the model does not explain yet
#: (docs/compute-model.md); Megatron-Bridge 25.09's MXFP8 Llama 3.1 405B on 128 GB200 (-32 %);
#: and the four NVFP4 runs (-6 % to +4 %), whose GEMMs are bound by their real-shape share, not
#: by power. Each run's attention is cuDNN's measured rate of the release its container ships
#: (job.cudnn). GB300 NVL72 runs (1,400 W) are at +0 % on their median, H100 and H200 runs at
#: -4 %.
COMPUTE_BIAS: Final = (
    KnownBias(
        gpus=("gb200",),
        presets=("gb200-nvl72",),
        runs=23,
        within=17,
        low=-0.2148,
        high=-0.1142,
        median=-0.154,
    ),
)


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
