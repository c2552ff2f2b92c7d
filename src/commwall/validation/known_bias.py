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


#: Blackwell (not Blackwell Ultra): MIT ORCD's and MGHPCC's Megatron-LM logs and MIT ORCD's
#: Megatron-LM sweep (GPT 5B and 13B, BF16 and FP8, three recompute settings), NeMo 25.02 and
#: 25.04, Megatron-Bridge 25.09 to 26.04, and the MLPerf Training v5.0 and v5.1 submissions of
#: NVIDIA, CoreWeave and eight partners on B200 and GB200, BF16, FP8 and NVFP4, Megatron-FSDP
#: included. B200's GEMMs run at the rate it sustains at its 1,000 W limit (POWER_BOUND_GEMM);
#: GB200's have no such measurement. Outside the range: MLPerf's Llama 3.1 8B on 512 GB200
#: (-46 %), a ~40 ms step across eight NVL72 racks that the model does not explain yet
#: (docs/compute-model.md); Megatron-Bridge 25.09's MXFP8 Llama 3.1 405B on 128 GB200 (-32 %);
#: and six runs within 4 % (NVIDIA's NVFP4 Llama 3.1 405B on 512 to 5,120 GB200,
#: Megatron-Bridge 25.11's FP8-CS Llama 3 8B on 8 B200 and Llama 3.1 405B on 128 B200, the
#: University of Florida's FP8 Llama 3.1 8B on 8 B200). Each run's attention is cuDNN's
#: measured rate of the release its container ships (job.cudnn).
#: Blackwell Ultra in HGX/DGX B300 (1,100 W): MIT ORCD's Megatron-LM runs (the GPT 7B reference
#: on 1 to 8 GPUs and the 5B/13B sweep) and MLPerf v5.1's dense B300 rows, every one of them
#: 6-26 % fast; GB300 NVL72 runs (1,400 W) are at -2 % on their median and carry no note. H100
#: and H200 runs are at -4 % on their median.
COMPUTE_BIAS: Final = (
    KnownBias(
        gpus=("b200", "gb200"),
        presets=("dgx-b200", "dgx-b200-roce", "gb200-nvl72"),
        runs=79,
        within=71,
        low=-0.246,
        high=-0.058,
        median=-0.144,
    ),
    KnownBias(
        gpus=("b300",),
        presets=("dgx-b300",),
        runs=35,
        within=35,
        low=-0.257,
        high=-0.058,
        median=-0.138,
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
