"""Where the compute model is known to miss published training runs, for a step's reader.

``commwall validate --training`` (docs/validation-training.md) compares the kernel compute model
with published, measured runs. Where one GPU family misses the same way on every source, a
user simulating that GPU should hear it next to the number, with what to do about it:
:data:`COMPUTE_BIAS` holds that finding as data and :func:`compute_bias_note` words it for
``commwall run``; :data:`HOST_SYNCED_MOE_BIAS` does the same for a regime of MoE runs. It
reports, it never corrects: no prediction uses it (a correction would be a constant fitted to the
validation runs, which the model does not take).

The figures are the runs of each entry's regime (dense: no experts; host-synced MoE: experts,
``job.moe_sync_free`` not set) on the catalog presets of the GPUs named, from the bundled data
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
    "HOST_SYNCED_MOE_BIAS",
    "KnownBias",
    "bias_of",
    "compute_bias_note",
    "moe_bias_note",
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
    #: the runs it is about: ``"dense"`` (no experts) or ``"host-synced MoE"`` (experts, not
    #: marked sync-free: ``job.moe_sync_free`` not set)
    regime: str = "dense"

    def in_regime(self, moe: bool, sync_free: bool) -> bool:
        """Whether a job with experts (``moe``) or not, marked ``job.moe_sync_free`` or not, is
        of this entry's regime (its GPU aside)."""
        return not moe if self.regime == "dense" else moe and not sync_free

    def note(self, gpu: str) -> str:
        """One sentence for ``commwall run`` (``gpu`` as the cluster names it)."""
        what = (
            f"dense {'/'.join(self.gpus)} runs"
            if self.regime == "dense"
            else f"MoE runs on {'/'.join(self.gpus)} not marked sync-free (job.moe_sync_free "
            "not set: most wait on the host for each layer's token counts)"
        )
        return (
            f"on {gpu} the kernel compute model has been {-self.high:.0%}–{-self.low:.0%} faster "
            f"than {self.within} of {self.runs} published {what} "
            f"(median {self.median:+.0%}; docs/validation-training.md): measure one step and "
            "fit job.compute_scale with `commwall calibrate step`"
        )


#: None at present: every GPU family's dense runs are within 7 % on their median (A100 -6 %,
#: B200 -4 %, B300 -3 %, H100 -3 %, H200 +3 %, GB200 +0 %, GB300 +2 %; two H100 RoCE runs at
#: -27 % are too few to call a family's bias), and a slow test (``test_training.py``) fails when
#: a family of five or more runs with no entry here drifts beyond 10 %. The last entries were
#: B200/GB200 (median -14 %) and B300 (-14 %), removed when their GEMMs took the sustained share
#: of the rate each sustains at its power limit (POWER_BOUND_GEMM; docs/compute-model.md).
COMPUTE_BIAS: Final[tuple[KnownBias, ...]] = ()


#: MoE runs on Blackwell not marked sync-free (``job.moe_sync_free`` not set: most dispatch
#: their tokens through the dropless all-to-all, or DeepEP/HybridEP without a capacity, which
#: waits on the host each layer and keeps full-iteration CUDA graphs out) run slower than the
#: kernel model says: 23 of the 27 in the table are faster in
#: the model, median -10 % (B200 -19 %, B300 -13 %, GB300 -11 %, GB200 -6 % on their own medians),
#: where the 18 sync-free ones (GB200, GB300, B300) sit at a median of +1 %. The host's share —
#: the launches of eager, per-expert kernels and the wait for each layer's token counts — has no
#: published per-kernel figure to price it from (docs/compute-model.md), so it is reported here,
#: not modelled. The slow test (``test_training.py``) recomputes the figures.
HOST_SYNCED_MOE_BIAS: Final[tuple[KnownBias, ...]] = (
    KnownBias(
        ("b200", "b300", "gb200", "gb300"),
        ("dgx-b200", "dgx-b300", "gb200-nvl72", "gb300-nvl72"),
        runs=27,
        within=23,
        low=-0.447,
        high=-0.015,
        median=-0.095,
        regime="host-synced MoE",
    ),
)


def moe_bias_note(
    gpu: str, *, moe: bool, sync_free: bool, kernel_model: bool, compute_scale: float
) -> str | None:
    """What ``commwall run`` says under a MoE step on ``gpu`` not marked sync-free
    (:data:`HOST_SYNCED_MOE_BIAS`), unless the job uses the flat model or a measured
    ``compute_scale``."""
    if not kernel_model or compute_scale != 1.0:
        return None
    bias = next(
        (b for b in HOST_SYNCED_MOE_BIAS if gpu in b.gpus and b.in_regime(moe, sync_free)), None
    )
    return None if bias is None else bias.note(gpu)


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
        regime=bias.regime,
    )
