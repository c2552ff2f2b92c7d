"""How long a MoE layer leaves the GPU waiting on the host.

Megatron-Core's dropless token dispatch (``job.moe_sync_free`` false) copies each MoE layer's
token counts to the host and waits for them: the all-to-all's split sizes and the grouped
GEMMs' ``m_splits`` are host lists. The copy drains the GPU's queue, and the GPU idles while
the host sets up the dispatch and launches the experts' GEMMs (under FP8, Transformer Engine
also quantizes each expert's inputs on that path). The step (:mod:`commwall.workload.step`)
puts that idle time on the compute stream once per MoE layer forward.

The wait is not derived from a CPU model: it is measured, twice, in A/B runs of one recipe
(:data:`HOST_SYNC_GAP`), and scaled down for fewer local experts than the measurements had
(:data:`HOST_SYNC_EXPERTS`). ``job.moe_host_wait`` replaces it with the user's own figure,
e.g. from an Nsight profile: the step minus the GPU-active time, over the MoE layer forwards.

Under ``job.moe_a2a_overlap`` a paired pass's partner fills the wait on an x86 host, as the
BF16 measurement shows; on a Grace host it does not (:func:`paired_pass_waits`).
"""

from __future__ import annotations

from typing import Final

#: GPU time lost to the host per host-synchronised MoE layer forward at
#: :data:`HOST_SYNC_EXPERTS` local experts, seconds, by the GEMMs' precision. BF16:
#: Megatron-Bridge's Nsight A/B on Qwen3-30B-A3B, 16 H100, EP 16 (8 local experts), HybridEP,
#: MBS 1, GBS 1024 (``skills/nemo-mbridge-perf-moe-comm-overlap/SKILL.md``, 7ded17dae): the
#: 24.7138 s step against a GPU-active interval union of 22.821 s, 1.8928 s idle over
#: 64 micro-batches × 48 layers = 0.616 ms; with the EP overlap the union (21.221 s) covers the
#: whole 20.99 s step, so a pass the overlap pairs does not wait. FP8 and FP4: Megatron-LM
#: PR #5728's two Qwen3-30B-A3B MXFP8 recipes on 16 GB200, EP 16, MBS 4, GBS 512, which differ
#: in how they meet the host — partial CUDA graphs (attention, router, MoE preprocessing) with
#: the dropless dispatch (480.3 model TFLOP/s/GPU, a 6.2783 s step) against a full-iteration
#: graph with paged stashing, which sizes the expert buffers ahead (598.1, 5.0418 s; the
#: recipes' YAML at 7146484): 1.2365 s over 8 micro-batches × 48 layers = 3.22 ms. The graphed
#: recipe also runs Transformer Engine's fused grouped MLP (``NVTE_CUTEDSL_FUSED_GROUPED_MLP``,
#: the op fuser), whose fused activation and casts the kernel model prices at up to ~0.4 ms a
#: layer, and its capacity factor 1.5 adds GPU work: the wait is 2.8–3.2 ms; the difference as
#: measured is taken.
HOST_SYNC_GAP: Final[dict[str, float]] = {"bf16": 1.8928 / (64 * 48), "low": 1.2365 / (8 * 48)}
#: Local experts in both measurements. Transformer Engine's grouped GEMMs pay their host work
#: per GEMM, so per local expert (``torch.split`` and two ``torch.empty`` calls per GEMM under
#: the FP8 cast: its maintainers' answer in TransformerEngine#1499): fewer local experts pay
#: that share of the gap; more pay the measured gap, not an extrapolation (no measurement
#: above 8).
HOST_SYNC_EXPERTS: Final = 8
#: Precisions whose expert GEMMs take Transformer Engine's low-precision host path.
LOW_PRECISION: Final = ("fp8", "fp4")
#: Catalog GPUs whose host is NVIDIA's Arm Grace CPU: a GB200 or GB300 superchip puts two GPUs
#: beside one Grace (an NVL72 rack: 36 Grace CPUs, 72 GPUs; NVIDIA's GB200 and GB300 NVL72
#: pages), so no other host exists for them.
GRACE_HOSTED: Final = frozenset({"gb200", "gb300"})


def paired_pass_waits(gpu: str) -> bool:
    """Whether a MoE pass that ``job.moe_a2a_overlap`` pairs with another still leaves the GPU
    waiting on the host on catalog GPU ``gpu``: on a Grace host (:data:`GRACE_HOSTED`) it does,
    on an x86 host the partner's compute fills the wait.

    x86: Megatron-Bridge's Nsight A/B of the overlap on 16 H100 (the BF16 measurement of
    :data:`HOST_SYNC_GAP`): with the overlap the GPU-active interval union, 21.221 s, covers the
    whole 20.99 s step. Grace: NVIDIA's DeepSeek-V3-on-GB200 write-up (Megatron-LM eb0783b6d3,
    ``docs/discussions/deepseek-v3-gb200-optimization/deepseek-v3-gb200-optimization.md``) says
    the 1F1B all-to-all overlap "divides the forward and backward into multiple stages for
    scheduling, and there is some synchronization between different stages, which aggravates
    the CPU overhead, so the overall benefit is negative on the GB200" (Megatron-LM PR #2184:
    "EP Overlap brings extra cpu overhead and may cause GPU bubble"); and Megatron-LM's
    Qwen3-235B-A22B recipes on 128 GB200 (``examples/moe_recipes``), both with the overlap on,
    gain 14 % (its README: 1,018 → 1,159.5 TFLOP/s) to 38 % (PR #5728's rerun: 876.2 →
    1,208.3) from partial CUDA graphs to a full-iteration graph with a dispatch that never
    waits — the gap the overlap left.

    >>> paired_pass_waits("gb200"), paired_pass_waits("gb300"), paired_pass_waits("h100-sxm")
    (True, True, False)
    """
    return gpu in GRACE_HOSTED


def host_wait(
    n_experts: int, ep: int, precision: str, *, sync_free: bool, measured: float | None = None
) -> float:
    """Seconds a MoE layer forward leaves the GPU waiting on the host: ``measured`` when the
    job gives one (``job.moe_host_wait``), 0 for a dense model or a dispatch that never waits
    (``sync_free``), else :data:`HOST_SYNC_GAP` by precision times ``min(1, local experts / 8)``.

    >>> round(host_wait(128, 16, "bf16", sync_free=False) * 1e3, 3)  # the BF16 measurement
    0.616
    >>> round(host_wait(128, 16, "fp8", sync_free=False) * 1e3, 3)  # the FP8 one
    3.22
    >>> round(host_wait(8, 8, "bf16", sync_free=False) * 1e6, 1)  # Mixtral on EP 8: an eighth
    77.0
    >>> host_wait(256, 8, "fp8", sync_free=False) == HOST_SYNC_GAP["low"]  # 32 local: capped
    True
    >>> host_wait(128, 16, "bf16", sync_free=True), host_wait(1, 1, "bf16", sync_free=False)
    (0.0, 0.0)
    """
    if n_experts <= 1 or sync_free:
        return 0.0
    if measured is not None:
        return measured
    gap = HOST_SYNC_GAP["low" if precision in LOW_PRECISION else "bf16"]
    return gap * min(1.0, n_experts / ep / HOST_SYNC_EXPERTS)
