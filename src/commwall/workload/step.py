"""The training step as a schedule: 1F1B pipeline, TP/EP collectives, DDP buckets, ZeRO/FSDP.

:func:`build_step` compiles a resolved :class:`~commwall.workload.job.Job` into a
:class:`~commwall.collectives.schedule.Schedule` for every pipeline stage of one data-parallel
replica (all replicas behave alike on an ideal fabric):

* **Compute** per micro-batch and model chunk: the kernels of the chunk's layers, and of the
  final norm, LM head and loss where the pipeline layout puts them (the last stage by default,
  as Megatron does; :mod:`commwall.workload.pipeline_layout`) and of the embedding where it
  puts that (the first), priced one by one
  (:mod:`commwall.workload.compute`: GEMMs by shape and precision, fused attention,
  memory-bound kernels, recomputation as what is recomputed). With the flat override
  ``compute_efficiency``: the layers' and the LM head's FLOPs at the GPU's dense peak × that
  share, split 1:2 forward:backward (Narayanan et al. SC'21), full recomputation adding the
  layers' forward to their backward; there the embedding's lookup and gradient are not priced.
* **Tensor parallel** (Megatron-LM; Korthikanti et al. 2022 §4.2): per layer two all-gathers and
  two reduce-scatters of ``b·s·h`` half-precision values in forward and again in backward with
  sequence parallelism, or two all-reduces each way without. They block the compute stream.
* **Expert parallel** (MoE): two all-to-alls (dispatch, combine) per MoE layer each way.
* **Pipeline parallel**: non-interleaved 1F1B (PipeDream-Flush; Narayanan et al. SC'21):
  stage ``s`` runs ``pp−s−1`` warm-up forwards, then alternates, and sends ``b·s·h`` activations
  (``/tp`` with sequence parallelism) to its neighbour after each forward and backward, over
  that stage boundary's own two-rank group (cross-domain only where ``tp-dp-pp`` order splits it).
* **Data parallel**: gradients of the last micro-batch's backward are bucketed as
  Megatron-Core's DDP does (reverse registration order; ``max(40M, 1M × DP)`` parameters a
  bucket, :data:`MEGATRON_BUCKET_PARAMS`, or ``job.ddp_bucket``, with PyTorch DDP's 1 MiB first
  bucket as ``job.ddp_first_bucket``; one bucket for each model chunk after the first and
  without ``overlap_grad_reduce``), each bucket's all-reduce (ZeRO-0) or reduce-scatter
  (ZeRO-1/2) starting when its last gradient is ready and overlapping the rest of backward
  (``overlap_grad_reduce``, default ``overlap``). ZeRO-1/2 all-gather updated parameters after
  the optimizer; with ``overlap_param_gather`` (default ``overlap``) under the next step's
  first forward, which waits for each bucket where it first uses it: gathered on demand one
  bucket ahead, Megatron-Core's default, or all dispatched at once with
  ``job.align_param_gather`` (:func:`param_gather_exposure`; the first model chunk's: a later
  chunk's gathers hide under the forwards before it).
  ZeRO-3/FSDP all-gathers each layer before its forward and backward (``fsdp_prefetch`` layers
  ahead, PyTorch FSDP's default 1; on demand without ``overlap_param_gather``) and
  reduce-scatters its gradients every micro-batch (Zhao et al. VLDB 2023); in backward a
  layer's gather never queues behind the previous layer's reduce-scatter, as FSDP1 (unshard and
  post-backward streams), FSDP2 and Megatron-FSDP run the two on separate streams; the stage's
  embedding, final norm and LM head form one more unit treated alike. Gradients are reduced in
  fp32 when the job trains in bf16 or FP8 (``job.grad_reduce_in_fp32``, default as the frameworks:
  Megatron-LM's ``arguments.py`` sets ``accumulate_allreduce_grads_in_fp32`` for bf16 unless
  ``--grad-reduce-in-bf16``; Megatron-Bridge's ``bf16_mixed`` and its FP8 recipes keep
  ``grad_reduce_in_fp32=True``; Composer's ``DEFAULT`` FSDP mixed precision reduces in fp32;
  Llama 3 reduce-scatters gradients in FP32, Dubey et al. 2024), so those reductions move 4
  bytes an element while parameter all-gathers move 2 (1 with ``job.fp8_param_gather``,
  Megatron-Core's FP8 weights); fp16 jobs reduce in fp16, as Megatron-LM's fp16 path does.
* **Optimizer**: Megatron-Core's mixed-precision step on the local shard, memory-bound:
  :data:`OPTIMIZER_BYTES_PER_PARAM` bytes of HBM traffic per parameter at
  :data:`OPTIMIZER_STREAM_SHARE` of the achieved bandwidth of streaming kernels
  (``compute.HBM_SHARE``; the spec bandwidth for the flat model), and the next iteration's
  zeroing of the gradient buffer (ZeRO-0 to 2) at that streaming rate.
* **Compute beside collectives**: every compute phase of the kernel model carries the share of
  its time in GEMMs and attention (``ComputeTask.sm_bound``), so that
  :mod:`commwall.workload.contention` can slow it by the SMs and HBM bandwidth of the
  collectives that run beside it (``job.comm_sm_contention``).
"""

from __future__ import annotations

import collections
import functools
import itertools
import math
import re
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Final, TypeVar

from commwall.cluster import Cluster
from commwall.collectives.ops import Op
from commwall.collectives.schedule import (
    CollectiveTask,
    ComputeTask,
    Group,
    Phase,
    Placement,
    Schedule,
)
from commwall.scenario import UB_GEMMS, UbGemmSpec
from commwall.workload.compute import (
    KERNEL_LAUNCH,
    RING_MERGES,
    Kernel,
    LayerWork,
    layer_work,
    sixteen_bit,
)
from commwall.workload.contention import PAIRED_STREAM, UB_STREAM
from commwall.workload.dispatch import dispatch_share
from commwall.workload.job import Job, recompute_modules, recomputed_layers
from commwall.workload.layout import group_shape, megatron_placement, pipeline_peer_group
from commwall.workload.models import ModelSpec

#: HBM bytes touched per parameter by Megatron-Core's mixed-precision optimizer step
#: (``megatron/core/optimizer/optimizer.py`` ``MixedPrecisionOptimizer.step`` @d98e8a6): the
#: gradient norm for clipping reads the fp32 gradients (``get_grad_norm_fp32``,
#: ``multi_tensor_l2norm``: 4), fused Adam reads the fp32 main parameter, gradient, m and v and
#: writes the parameter, m and v back (16 + 12 = 28), and the updated main parameters are copied
#: to the 16-bit model parameters (``_copy_main_params_to_model_params``: read 4, write 2).
#: Clipping's in-place scale (8 more) runs only when the norm exceeds the limit and is left
#: out. These bytes move at :data:`OPTIMIZER_STREAM_SHARE` of the streaming kernels' rate.
#: The precision-aware optimizer's state moves fewer (:attr:`AdamState.step_bytes
#: <commwall.workload.memory.AdamState.step_bytes>`, which gives these 38 without it).
OPTIMIZER_BYTES_PER_PARAM = 4 + 28 + 6
#: Share of the streaming kernels' achieved HBM bandwidth (``compute.HBM_SHARE``) the
#: optimizer step's kernels reach. Megatron-LM's timers of MIT ORCD's GPT 7B (6.86 B parameters,
#: the optimizer not distributed, so every rank steps all of them; mit-orcd/orcd-benchmarks
#: @bca7147, b200-nodes/output-megatron, iteration 100 of the runs on 1, 8, 16 and 24 B200)
#: read 62.83, 59.31, 60.08 and 59.76 ms for ``optimizer``: 38 bytes a parameter in a median
#: 59.9 ms is 4.35 TB/s, 0.68 of the 6.44 TB/s streaming kernels reach on B200 (0.84 of
#: 7.67 TB/s). Its ``optimizer-inner-step`` (fused Adam, 28 bytes) reads 39.6–43.4 ms, the
#: same share. Measured on B200 only; every GPU takes the share.
OPTIMIZER_STREAM_SHARE: Final = 0.68
#: Transformer Engine's Userbuffers defaults (``initialize_ub`` in
#: ``transformer_engine/pytorch/module/base.py``, TE 2.x): the pipelined and bulk overlaps run
#: their communication kernel on 16 SMs with ``set_sm_margin``, so the GEMM beside it gets the
#: GPU's SMs less 16; ring exchanges use the copy engines (1 SM, no margin); a pipelined
#: reduce-scatter splits its GEMM in 4 and the last split's reduce-scatter is left exposed.
UB_COMM_SMS: Final = 16
UB_PIPELINE_SPLITS: Final = 4
#: Share of the expert-parallel all-to-alls that ``job.moe_a2a_overlap`` hides beside the
#: compute when each MoE layer still synchronises the host on its token counts (Megatron-Core's
#: dropless dispatch; ``job.moe_sync_free`` false). Measured with Nsight on Qwen3-30B-A3B, 16
#: H100, EP 16, HybridEP, PP 1: "Communication time hidden by compute 0.11% → 36.55%", the step
#: 24.71 → 20.99 s (Megatron-Bridge ``skills/nemo-mbridge-perf-moe-comm-overlap/SKILL.md``,
#: added in 7ded17dae, #5094). The same shape with NCCL's all-to-all and no CUDA graphs went
#: 41.25 → 31.31 s (``docs/training/communication-overlap.md`` there): 9.9 s, about the same
#: share of the ~27 s its all-to-alls take beside the ~14.5 s of compute the first A/B implies.
#: The rest stays on the compute stream. An ideal interleaving of the two passes would hide
#: ~97 % at that shape; the share is the measured one.
EP_OVERLAP_SYNCED: Final = 0.3655
_V = TypeVar("_V")

_LAYER = re.compile(r"\blayers\.(\d+)\.|\bh\.(\d+)\.")


@dataclass(frozen=True)
class Groups:
    """Communicator shapes of the job (``pp``: stages 0 → 1; each send uses its own boundary's)."""

    tp: Group
    dp: Group
    ep: Group
    pp: Group
    edp: Group
    cp: Group
    #: context parallelism's all-to-all groups (``cp_a2a`` ranks at stride ``tp``) and the ring
    #: across them (``cp / cp_a2a`` ranks at stride ``tp·cp_a2a``)
    cpa: Group
    cpr: Group
    #: the experts' tensor-parallel group (``expert_tp`` ranks at stride 1; the TP group when
    #: ``expert_tp`` = ``tp``, Megatron-Core's default)
    etp: Group
    #: ``job.dp_replicate``'s groups: ``dp`` is then the shard group (``dp·cp / r``
    #: consecutive data-parallel ranks at stride ``tp``) and this one the ``r`` replicas of a
    #: shard (at stride ``tp·dp·cp / r``) that all-reduce it; one rank without replication
    dpr: Group


@dataclass
class StageMarks:
    """Phase indices the report needs per stage."""

    last_backward_end: int = -1
    optimizer: int = -1
    param_gather: list[int] = field(default_factory=list)
    #: The first model chunk's parameter all-gathers with where the next step's first forward
    #: reaches each (seconds of that forward's compute before the bucket's first tensor is
    #: used): Megatron-Core gathers them on demand one ahead, or all at once with
    #: ``job.align_param_gather`` (:func:`param_gather_exposure`).
    param_chain: list[tuple[int, float]] = field(default_factory=list)


@dataclass
class StepPlan:
    """A step schedule and what to read back from it."""

    schedule: Schedule
    groups: Groups
    marks: list[StageMarks]
    t_forward: float
    t_backward: float
    hide_param_gather: float
    #: ``job.align_param_gather``: the first chunk's gathers dispatched at once.
    param_gather_aligned: bool = False


def job_groups(job: Job, cluster: Cluster) -> Groups:
    """Where TP, CP, DP, EP and PP communicators land (``tp-cp-dp-pp`` rank order).

    Expert parallelism subdivides the ``dp × cp`` ranks (Megatron-Core's expert grid
    ``tp-ep-dp-pp`` over the same GPUs, expert TP = TP): an EP group is ``ep`` consecutive
    ranks at stride ``tp``, and expert parameters are replicated over the expert-data-parallel
    group of ``dp·cp / ep`` ranks, which reduces their gradients instead of the whole DP group.
    """
    return _groups(job, cluster.scale_up_domain)


def _groups(job: Job, d: int) -> Groups:
    # rank order tp-cp-dp-pp (Megatron-Core): the cp and dp digits are adjacent, so the ranks
    # that reduce gradients together (dp × cp) form one group at stride tp
    def bounded(group: Group) -> Group:
        return with_nccl_options(group, job)

    shard = job.dp_shard
    return Groups(
        tp=bounded(group_shape("tp", job.tp, 1, d)),
        # hybrid sharding (job.dp_replicate): ZeRO's collectives over the shard group, the
        # shards all-reduced over the replicas (FSDP2's (replicate, shard) device mesh, the
        # shard dimension innermost; Megatron-Core's intra- and inter-instance groups)
        dp=bounded(group_shape("dp", shard, job.tp, d)),
        dpr=bounded(group_shape("dpr", job.spec.dp_replicate, job.tp * shard, d)),
        # the expert grid (Megatron-Core's MoE parallel folding, order etp-ep-edp over the
        # same tp·cp·dp ranks): EP at stride expert_tp, expert-DP at stride expert_tp·ep
        ep=bounded(group_shape("ep", job.ep, job.expert_tp, d)),
        pp=bounded(pipeline_peer_group(job.tp, job.grad_dp, d)),
        # with hybrid sharding the expert-DP ranks split into the same instances (Megatron-Core's
        # intra-partial expert-data-parallel groups); the replicas' group is shared
        edp=bounded(group_shape("edp", job.expert_dp_shard, job.expert_tp * job.ep, d)),
        cp=bounded(group_shape("cp", job.cp, job.tp, d)),
        cpa=bounded(group_shape("cpa", job.cp_a2a, job.tp, d)),
        cpr=bounded(group_shape("cpr", job.cp // job.cp_a2a, job.tp * job.cp_a2a, d)),
        etp=bounded(group_shape("etp", job.expert_tp, 1, d)),
    )


#: The Megatron-Core communicator each of the step's groups is (``parallel_state.py``): the
#: gradients and ZeRO's gathers run on ``dp_cp`` (DistributedDataParallel's ``dp_cp_group``,
#: with or without context parallelism), a2a+p2p's two context groups on ``hcp``.
MEGATRON_COMMUNICATOR: Final = {
    "tp": "tp", "dp": "dp_cp", "ep": "ep", "pp": "pp", "edp": "ep_dp", "cp": "cp",
    "cpa": "hcp", "cpr": "hcp", "etp": "ep_tp", "dpr": "dp_cp",
}  # fmt: skip


#: The communicators of the data-parallel groups under hybrid sharding (``job.dp_replicate``
#: > 1; ``scenario.NCCL_HYBRID_COMMUNICATORS``): the shard group's and the replicas'.
HYBRID_COMMUNICATOR: Final = {"dp": "intra_dp_cp", "dpr": "inter_ep_dp"}


def with_nccl_options(group: Group, job: Job) -> Group:
    """``group`` with the CTA bounds ``job.nccl_communicators`` gives its Megatron-Core
    communicator (:data:`MEGATRON_COMMUNICATOR`; with hybrid sharding the data-parallel groups'
    :data:`HYBRID_COMMUNICATOR`); unchanged without any."""
    name = MEGATRON_COMMUNICATOR[group.name]
    if job.spec.dp_replicate > 1:
        name = HYBRID_COMMUNICATOR.get(group.name, name)
    options = getattr(job.spec.nccl_communicators, name)
    if options is None:
        return group
    return replace(group, min_ctas=options.min_ctas, max_ctas=options.max_ctas)


@dataclass(frozen=True)
class UnitTimes:
    """Compute seconds of one micro-batch on one GPU: one decoder layer, and the loss unit
    (final norm, LM head, cross-entropy), forward and backward."""

    layer_forward: float
    layer_backward: float
    head_forward: float
    head_backward: float
    #: With ``tp_comm_overlap``: seconds per layer of the GEMM beside each TP collective, in
    #: the order all-gather, reduce-scatter (attention block), then the MLP block's pair —
    #: forward QKV, attention out, MLP up, MLP down; backward the row-parallel dgrads and
    #: column-parallel wgrads (half of each GEMM's dgrad+wgrad). A MoE layer: attention only.
    #: With ``tp_backward_overlap`` instead (NCCL beside the backward): the column-parallel
    #: dgrad and wgrad of each block (QKV, then MLP up), forward empty.
    beside_forward: tuple[float, ...] = ()
    beside_backward: tuple[float, ...] = ()
    #: The embedding's lookup and gradient (kernel model only; the flat model prices FLOPs).
    embed_forward: float = 0.0
    embed_backward: float = 0.0
    #: Share of the compute seconds in GEMMs and attention, the kernels that slow when
    #: collective kernels beside them hold SMs (kernel model only; None for the flat model,
    #: whose measured share already holds whatever overlap cost the run it came from).
    sm_bound: float | None = None
    #: One multi-token-prediction module's compute outside its layer (its projection and
    #: norms, the LM head and loss again; ``job.mtp_layers``), forward and backward.
    mtp_forward: float = 0.0
    mtp_backward: float = 0.0
    #: Seconds per layer of the kernels the context-parallel K/V ring runs beside (the
    #: attention kernels and the merges of their partial results; backward with those a
    #: recomputation re-runs): Transformer Engine's ``AttnFuncWithCPAndKVP2P`` starts each
    #: step's exchange with the previous step's attention, inside the attention function.
    #: ``None`` (the flat model, which prices no attention apart): the whole layer.
    ring_window_forward: float | None = None
    ring_window_backward: float | None = None


def _ring_window(kernels: Iterable[Kernel]) -> float:
    """Seconds of the attention kernels and their ring merges among ``kernels``."""
    return sum(
        k.seconds for k in kernels if k.kind == "attention" or k.name.startswith(RING_MERGES)
    )


def unit_times(job: Job) -> UnitTimes:
    """:class:`UnitTimes` of ``job``, priced kernel by kernel (:mod:`commwall.workload.compute`),
    or with the flat ``compute_efficiency`` when the job sets one; all times ``compute_scale``.
    A MoE model with dense layers among its layers: its MoE layers' (:func:`layer_units` has
    both kinds)."""
    return layer_units(job)[-1]


def layer_units(job: Job) -> tuple[UnitTimes, ...]:
    """:class:`UnitTimes` of each kind of layer of ``job``'s model, in the order of
    :attr:`~commwall.workload.models.ModelSpec.layer_kinds` (one kind unless the model has
    dense layers among its MoE ones). The loss unit and the embedding are the same in each; the
    SM-bound share is the whole micro-batch's, over every layer of every kind."""
    return _unit_times(job, job.model.layer_kinds)


def _unit_times(job: Job, kinds: tuple[tuple[ModelSpec, int], ...]) -> tuple[UnitTimes, ...]:
    scale = job.spec.compute_scale
    mtp = job.model.mtp_layers
    if job.device is None:
        flat = [_flat_times(replace(job, model=m)) for m, _ in kinds]
        if mtp:  # the projection and the LM head again, 2 FLOPs a weight forward, 4 backward
            spec, m = job.spec, job.model
            weights = 2 * m.hidden * m.hidden + m.vocab * m.hidden
            tokens = spec.micro_batch * spec.seq_len / (job.tp * job.cp)
            assert spec.compute_efficiency is not None
            module = 2.0 * weights * tokens / (job.peak_flops * spec.compute_efficiency)
            flat = [replace(u, mtp_forward=module, mtp_backward=2 * module) for u in flat]
        return tuple(_scaled(u, scale) for u in flat)
    works = [(n, _layer_work(job, m)) for m, n in kinds]
    sm_bound = _sm_bound_share(works)
    mtp_forward = mtp_backward = 0.0
    if mtp:  # a module's projection, norms and LM head (its layer is the last kind's)
        last = _layer_work(job, replace(kinds[-1][0], mtp_layers=mtp))
        mtp_forward, mtp_backward = last.seconds(last.mtp_forward), last.seconds(last.mtp_backward)
    out = []
    for (kind, _), (_, work) in zip(kinds, works, strict=True):
        times = UnitTimes(
            work.layer_forward(),
            work.layer_backward(),
            work.seconds(work.head_forward),
            work.seconds(work.head_backward),
            embed_forward=work.seconds(work.embed_forward),
            embed_backward=work.seconds(work.embed_backward),
            sm_bound=sm_bound,
            mtp_forward=mtp_forward,
            mtp_backward=mtp_backward,
            ring_window_forward=_ring_window(work.forward),
            ring_window_backward=_ring_window((*work.backward, *work.recompute)),
        )
        seconds = {k.name: k.seconds for k in (*work.forward, *work.backward)}
        if kind.mla:  # the column-parallel GEMMs over the gathered latents play QKV's part
            ups = ("q up" if kind.q_lora_rank is not None else "q", "kv up")
            for suffix in ("", " dgrad+wgrad"):
                seconds["qkv" + suffix] = sum(seconds[name + suffix] for name in ups)
        kind_job = replace(job, model=kind)
        if job.spec.tp_comm_overlap:
            times = _beside_tp(kind_job, times, seconds, job.device.sms)
        elif backward_tp_overlap(job):
            times = _beside_backward(kind_job, times, seconds)
        out.append(_scaled(times, scale))
    return tuple(out)


def _layer_work(job: Job, model: ModelSpec) -> LayerWork:
    """The kernels of one micro-batch through a layer of ``model`` (one of ``job.model``'s
    kinds) and the loss unit, as ``job`` runs them."""
    spec, device = job.spec, job.device
    assert device is not None  # the kernel model
    return layer_work(
        model,
        device,
        micro_batch=spec.micro_batch,
        seq_len=spec.seq_len,
        tp=job.tp,
        ep=job.ep,
        sequence_parallel=spec.sequence_parallel,
        recompute=spec.recompute,
        recompute_modules=recompute_modules(spec),
        attention=spec.attention,
        elem_bytes=job.element_bytes,
        context_parallel=job.cp,
        context_a2a=job.cp_a2a,
        context_ring=spec.cp_comm in ("p2p", "a2a+p2p"),
        cross_entropy=spec.cross_entropy,
        fp8_recipe=spec.fp8_recipe,
        expert_tp=job.expert_tp,
        fp8_attention=spec.fp8_attention,
        cudnn=job.cudnn,
        attention_dropout=spec.attention_dropout > 0,
        fp8_output_proj=spec.fp8_output_proj,
        eager_experts=not spec.te_op_fuser,
    )


@dataclass(frozen=True)
class UbGemm:
    """How Transformer Engine's Userbuffers runs one GEMM's overlap (:func:`ub_gemms`)."""

    method: str
    #: SMs the communication kernel holds from the GEMM while it runs (its ``num_sm``; a ring
    #: exchange's only with ``set_sm_margin``)
    held_sms: int
    #: share of a forward reduce-scatter left after the GEMM (its last slice's)
    exposed: float
    #: thread blocks its communication kernel runs on (``num_sm``; a ring exchange's copies
    #: run on the copy engines)
    num_sm: int = UB_COMM_SMS


def ub_gemms(job: Job) -> dict[str, UbGemm]:
    """Each Userbuffers GEMM of ``job`` (:data:`~commwall.scenario.UB_GEMMS`) as
    ``job.tp_overlap_cfg`` sets it over Transformer Engine's defaults (``initialize_ub``,
    ``module/base.py``, TE 2.x): a ring exchange holds 1 SM without margin, a pipelined
    reduce-scatter and a bulk overlap 16 SMs with margin. A pipelined or bulk kernel holds its
    ``num_sm`` SMs while it runs with or without ``set_sm_margin`` (the margin only sizes the
    GEMM's grid to the SMs left; without it the GEMM's blocks wait for the SMs the kernel
    holds), so both are priced as the margin; a ring exchange's sends run on the copy engines
    and hold SMs only with the margin. A forward reduce-scatter leaves its
    last slice's share exposed (``comm_gemm_overlap.cpp``: ``split_overlap_rs`` and
    ``split_overlap_rs_p2p`` reduce the last chunk after the last GEMM) — ``1/num_splits``
    pipelined (4), ``1/tp`` ring-exchanged. The slices themselves are priced as the whole GEMM:
    TE launches them on up to three compute streams, which hide one another's launch and tail
    (``num_max_streams``)."""
    t, out = job.tp, {}
    for name, (_, default) in UB_GEMMS.items():
        entry = getattr(job.spec.tp_overlap_cfg, name) or UbGemmSpec()
        method = entry.method or default
        ring = method == "ring_exchange"
        num_sm = entry.num_sm if entry.num_sm is not None else (1 if ring else UB_COMM_SMS)
        margin = entry.set_sm_margin if entry.set_sm_margin is not None else not ring
        slices = t if ring else (entry.num_splits or UB_PIPELINE_SPLITS)
        exposed = 1.0 / slices if name in ("proj_fprop", "fc2_fprop") else 0.0
        out[name] = UbGemm(method, num_sm if margin or not ring else 0, exposed, num_sm)
    return out


def _sm_bound_share(works: list[tuple[int, LayerWork]]) -> float:
    """Share of a micro-batch's compute seconds (all layers, the loss unit, the embedding) in
    GEMMs and attention, the kernels whose speed follows the SMs they get; the memory-bound
    rest follows the HBM bandwidth left to it (ours: a first-order split, by the kernel
    model's own kinds). ``works``: (layers, their kernels) of each kind of layer."""
    work = works[0][1]
    groups = (
        *((n, (*w.forward, *w.backward, *w.recompute)) for n, w in works),
        (1, (*work.head_forward, *work.head_backward, *work.embed_forward, *work.embed_backward)),
    )
    total = sum(n * k.seconds for n, kernels in groups for k in kernels)
    bound = sum(
        n * k.seconds for n, kernels in groups for k in kernels if k.kind in ("gemm", "attention")
    )
    return bound / total if total > 0 else 0.0


def _scaled(u: UnitTimes, scale: float) -> UnitTimes:
    return replace(
        u,
        layer_forward=u.layer_forward * scale,
        layer_backward=u.layer_backward * scale,
        head_forward=u.head_forward * scale,
        head_backward=u.head_backward * scale,
        beside_forward=tuple(x * scale for x in u.beside_forward),
        beside_backward=tuple(x * scale for x in u.beside_backward),
        embed_forward=u.embed_forward * scale,
        embed_backward=u.embed_backward * scale,
        mtp_forward=u.mtp_forward * scale,
        mtp_backward=u.mtp_backward * scale,
        ring_window_forward=None
        if u.ring_window_forward is None
        else u.ring_window_forward * scale,
        ring_window_backward=(
            None if u.ring_window_backward is None else u.ring_window_backward * scale
        ),
    )


def _beside_tp(job: Job, u: UnitTimes, seconds: dict[str, float], sms: int | None) -> UnitTimes:
    """``u`` with the GEMMs beside the TP collectives (:attr:`UnitTimes.beside_forward`), each
    slower where the collective beside it holds SMs (:attr:`UbGemm.held_sms`: Transformer
    Engine's ``set_sm_margin``, the GPU's ``sms`` over the SMs left) — by TE's defaults the
    row-parallel forward GEMMs (pipelined reduce-scatters) and both halves of the
    column-parallel backward GEMMs (the bulk input all-gather beside dgrad, the bulk
    reduce-scatter beside wgrad). ``seconds`` holds each GEMM's forward (``"qkv"``) and
    backward (``"qkv dgrad+wgrad"``) time, as :func:`~commwall.workload.compute.layer_work`
    names them; a ring-exchanged forward reduce-scatter adds its slices' sum to the forward.
    ``sms`` None (the flat model, whose efficiency holds any such cost): none slower, no sum."""
    ub = ub_gemms(job)

    def slow(name: str) -> float:
        return 1.0 if sms is None else sms / max(1, sms - ub[name].held_sms)

    def reduce(name: str) -> float:
        # a ring-exchanged reduce-scatter ends with a kernel that sums the tp slices it
        # received into the rank's shard (``reduce_bf16`` after ``split_overlap_rs_p2p``,
        # comm_gemm_overlap.cpp): it reads the GEMM's whole 16-bit output and writes 1/tp of it
        if sms is None or ub[name].method != "ring_exchange" or job.device is None:
            return 0.0
        tokens = job.spec.micro_batch * job.spec.seq_len / job.cp
        nbytes = 2.0 * tokens * job.model.hidden * (1.0 + 1.0 / job.tp)
        return nbytes / job.device.hbm + KERNEL_LAUNCH

    blocks = tp_blocks(job.model)
    ahead: list[float] = []
    behind: list[float] = []
    extra_f = extra_b = 0.0
    for column, row, col_ub, row_ub in blocks:
        col_f, row_f = slow(f"{col_ub}_fprop"), slow(f"{row_ub}_fprop")
        ahead += [seconds[column] * col_f, seconds[row] * row_f]
        extra_f += seconds[column] * (col_f - 1.0) + seconds[row] * (row_f - 1.0)
        extra_f += reduce(f"{row_ub}_fprop")
        col_grads, row_grads = seconds[f"{column} dgrad+wgrad"], seconds[f"{row} dgrad+wgrad"]
        row_d, col_d, col_w = (
            slow(f"{row_ub}_dgrad"),
            slow(f"{col_ub}_dgrad"),
            slow(f"{col_ub}_wgrad"),
        )
        behind += [row_grads / 2.0 * row_d, col_grads / 2.0 * col_w]
        extra_b += row_grads / 2.0 * (row_d - 1.0) + col_grads / 2.0 * (col_d + col_w - 2.0)
    return replace(
        u,
        layer_forward=u.layer_forward + extra_f,
        layer_backward=u.layer_backward + extra_b,
        beside_forward=tuple(ahead),
        beside_backward=tuple(behind),
    )


def tp_blocks(model: ModelSpec) -> tuple[tuple[str, str, str, str], ...]:
    """The TP blocks of a layer of ``model`` (one kind): (column-parallel GEMM, row-parallel
    GEMM, their Userbuffers names) of the attention and of a dense MLP; a MoE layer's experts
    are not one (their pair runs over the expert-TP group). A hybrid model's block holds one:
    its attention, its MLP, or its Mamba-2 mixer's input and output projections, which
    Megatron-Core builds with Userbuffers' ``fc1`` and ``fc2`` names (``MambaMixer``,
    ``megatron/core/ssm/mamba_mixer.py`` @d98e8a6)."""
    attention = ("qkv", "attention out", "qkv", "proj")
    mlp = ("mlp up", "mlp down", "fc1", "fc2")
    if model.block == "mamba":
        return (("mamba in", "mamba out", "fc1", "fc2"),)
    out: tuple[tuple[str, str, str, str], ...] = (attention,) if model.has_attention else ()
    if model.has_mlp and not model.is_moe:
        out += (mlp,)
    return out


def backward_tp_overlap(job: Job) -> bool:
    """Whether the backward's column-parallel TP collectives run on NCCL's stream beside its
    GEMMs (``job.tp_backward_overlap`` without Userbuffers; :meth:`_Builder.backward_beside`)."""
    spec = job.spec
    return job.tp > 1 and spec.tp_backward_overlap and not spec.tp_comm_overlap


def _beside_backward(job: Job, u: UnitTimes, seconds: dict[str, float]) -> UnitTimes:
    """``u`` with the column-parallel backward GEMMs apart (:attr:`UnitTimes.beside_backward`):
    each column-parallel layer's data gradient (beside its input's re-gather with sequence
    parallelism) and weight gradient (beside the input gradient's reduce-scatter, or its
    all-reduce without) — half of its ``"… dgrad+wgrad"`` seconds each, as Megatron-LM's
    ``LinearWithGradAccumulationAndAsyncCommunication`` and Transformer Engine's ``Linear``
    backward run them. No SM margin: NCCL's channels are priced beside them
    (:mod:`commwall.workload.contention`)."""
    columns = tuple(column for column, *_ in tp_blocks(job.model))
    behind: list[float] = []
    for column in columns:
        half = seconds[f"{column} dgrad+wgrad"] / 2.0
        behind += [half, half]
    return replace(u, beside_backward=tuple(behind))


@dataclass(frozen=True)
class LayerPlan:
    """Each kind of layer a job runs and which kind each layer is.

    A kind is a layer model (:attr:`~commwall.workload.models.ModelSpec.layer_kinds`: the dense
    layers of a MoE model, the rest) under one recompute setting: with ``recompute_method:
    block`` the first ``recompute_num_layers`` layers of each model chunk recompute fully and
    the others not at all (Megatron-Core's ``--recompute-method block``), so each layer model
    comes twice, recomputed then not."""

    units: tuple[UnitTimes, ...]
    moe: tuple[bool, ...]
    #: the attention block's gathered input over a hidden state (below 1 for MLA's latents)
    latent_share: tuple[float, ...]
    #: whether the kind's backward first re-runs its whole forward (full recomputation)
    redo: tuple[bool, ...]
    #: the kind of each layer, then of each multi-token-prediction module's layer
    index: tuple[int, ...]
    #: the kind's TP blocks (:func:`tp_blocks`) and whether it has a dense MLP
    tp_blocks: tuple[int, ...] = ()
    dense_mlp: tuple[bool, ...] = ()
    #: the layer model of each kind
    models: tuple[ModelSpec, ...] = ()


def layer_plan(job: Job) -> LayerPlan:
    """:class:`LayerPlan` of ``job``."""
    model, spec = job.model, job.spec
    kinds = model.layer_kinds
    variants = [job]
    block = recomputed_layers(spec)
    if block is not None:  # the layers past the block keep their activations
        plain = spec.model_copy(
            update={
                "recompute": "none",
                "recompute_method": "uniform",
                "recompute_num_layers": None,
            }
        )
        variants.append(replace(job, spec=plain))
    start, end = spec.bf16_end_layers
    sixteen = bool(start or end)  # the kernel model's (resolve_job refuses the flat one)
    if sixteen:  # the end layers' kinds again, in BF16 (after the low-precision ones)
        variants += [_in_bf16(v) for v in variants]
    units: list[UnitTimes] = []
    for variant in variants:
        units += layer_units(variant)
    models = [m for _ in variants for m, _ in kinds]
    redo = [v.spec.recompute == "full" for v in variants for _ in kinds]
    n = len(kinds)
    mtp_index = model.kind_index(model.n_layers - 1)  # the modules' layers are like the last
    own = bool(model.mtp_layers) and model.hybrid_pattern is not None
    if own:
        # a hybrid model's modules run their pattern's blocks (ModelSpec.mtp_kind): a kind of
        # their own in each variant, after the variants' kinds, with the variant's SM share
        mtp_index = len(units)
        for v, variant in enumerate(variants):
            (u,) = _unit_times(variant, ((model.mtp_kind(), model.mtp_layers),))
            units.append(replace(u, sm_bound=units[v * n].sm_bound))
            models.append(model.mtp_kind())
            redo.append(variant.spec.recompute == "full")
    index = []
    for layer in range(model.n_layers):
        k = model.kind_index(layer)
        if block is not None:
            stage, chunk = job.layer_owner(layer)
            if layer - job.chunk_layers(stage, chunk).start >= block:
                k += n
        if sixteen and (layer < start or layer >= model.n_layers - end):
            k += n * (len(variants) // 2)
        index.append(k)
    # Megatron-Core recomputes MTP layers uniformly, and skips them under block (its
    # MultiTokenPredictionBlock: "recompute_method == 'block' is not supported for MTP yet")
    # under block, the variant that keeps its activations: the next of the modules' own kinds
    index += [mtp_index + ((1 if own else n) if block is not None else 0)] * model.mtp_layers
    return LayerPlan(
        units=tuple(units),
        moe=tuple(m.is_moe for m in models),
        latent_share=tuple(m.tp_input_width / m.hidden for m in models),
        redo=tuple(redo),
        index=tuple(index),
        tp_blocks=tuple(len(tp_blocks(m)) for m in models),
        dense_mlp=tuple(m.has_mlp and not m.is_moe for m in models),
        models=tuple(models),
    )


def _in_bf16(job: Job) -> Job:
    """``job`` with its decoder layers in BF16: Megatron-Core runs a layer of
    ``is_first_last_bf16_layer`` outside the FP8 (or NVFP4) autocast (``fp8_utils.py``
    @d98e8a64), so its GEMMs run at the BF16 peak and ceiling without the low-precision casts
    and its attention in 16 bits (:func:`~commwall.workload.compute.layer_work` on a BF16
    :class:`~commwall.workload.compute.Device`). The job's collectives, weights and memory stay
    as the job's: a first-order price of the layers' compute alone."""
    assert job.device is not None
    spec = job.spec.model_copy(update={"precision": "bf16", "fp8_attention": False})
    return replace(job, spec=spec, device=replace(sixteen_bit(job.device), precision="bf16"))


def micro_batch_times(job: Job) -> tuple[float, float]:
    """Forward and backward compute seconds of one micro-batch on one stage, the stages'
    average: all layers and the loss unit over ``pp`` stages (:func:`layer_plan`)."""
    return _stage_average(job, layer_plan(job))


def _stage_average(job: Job, plan: LayerPlan) -> tuple[float, float]:
    n_layers, mtp = job.model.n_layers, job.model.mtp_layers
    counts = collections.Counter(plan.index[:n_layers])  # layers of each kind
    forward = sum(n * plan.units[k].layer_forward for k, n in sorted(counts.items()))
    backward = sum(n * plan.units[k].layer_backward for k, n in sorted(counts.items()))
    u = plan.units[len(job.model.layer_kinds) - 1]
    m = plan.units[plan.index[-1]] if mtp else u  # the MTP modules' layers
    forward += u.head_forward + u.embed_forward + mtp * (m.layer_forward + u.mtp_forward)
    backward += u.head_backward + u.embed_backward + mtp * (m.layer_backward + u.mtp_backward)
    return forward / job.pp, backward / job.pp


def _flat_times(job: Job) -> UnitTimes:
    """The flat model: executed FLOPs at ``compute_efficiency`` × peak, 1:2 forward:backward;
    the LM head's ``6·V·h`` FLOPs per token (counted in ``training_flops_per_token``) apart.
    With ``tp_comm_overlap`` the GEMMs beside TP collectives take their FLOPs' share."""
    spec, m = job.spec, job.model
    assert spec.compute_efficiency is not None  # resolve_job gives a device otherwise
    tokens = spec.micro_batch * spec.seq_len / (job.tp * job.cp)
    rate = job.peak_flops * spec.compute_efficiency
    head = 6.0 * m.vocab * m.hidden * tokens
    layer = (m.training_flops_per_token(spec.seq_len) * tokens - head) / m.n_layers
    forward, backward = layer / 3.0 / rate, 2.0 * layer / 3.0 / rate
    if spec.recompute == "full":
        backward += forward
    elif spec.recompute in ("selective", "selective_op"):
        backward += _flat_recompute(job) * tokens / rate
    times = UnitTimes(forward, backward, head / 3.0 / rate, 2.0 * head / 3.0 / rate)
    if not spec.tp_comm_overlap and not backward_tp_overlap(job):
        return times
    # each GEMM's forward at the flat rate (its dgrad and wgrad take as long each); the flat
    # efficiency is a whole-layer figure, so no SM margin on top
    h, mlp_in = m.hidden, 2 if m.gated_mlp else 1
    qkv = m.attention_weight_params_per_layer() - m.o_dim * h  # MLA: its four projections
    flops = {
        "qkv": qkv, "attention out": m.o_dim * h,
        "mlp up": h * mlp_in * m.ffn_hidden, "mlp down": m.ffn_hidden * h,
        "mamba in": h * m.mamba_in_width, "mamba out": m.mamba_inner * h,
    }  # fmt: skip
    gemms = {name for block in tp_blocks(m) for name in block[:2]}
    flops = {name: f for name, f in flops.items() if name in gemms}
    seconds = {name: 2.0 * f * tokens / rate for name, f in flops.items()}
    seconds |= {f"{name} dgrad+wgrad": 2.0 * t for name, t in seconds.items()}
    if not spec.tp_comm_overlap:
        return _beside_backward(job, times, seconds)
    return _beside_tp(job, times, seconds, None)


def _flat_recompute(job: Job) -> float:
    """Forward FLOPs per token (of the GPU's share) a selective recomputation re-runs in one
    layer of ``job``'s model (one kind of layer); per-op (``selective_op``) the key and output
    projections and a gated MLP's up projection (:func:`~commwall.workload.compute._per_op_recomputed`);
    for ``core_attn`` the attention core (QKᵀ and
    AV over the full square, ``2·s·(q_dim + o_dim)``: Korthikanti et al. 2022 §5's ``4·s·h``),
    and each recomputed block's GEMM weights twice
    (:func:`~commwall.workload.compute._recomputed`); element-wise work is not in FLOPs."""
    m, s = job.model, job.spec.seq_len
    if job.spec.recompute == "selective_op":  # the key, output and (gated) up projections
        up = m.ffn_hidden if m.gated_mlp else 0
        return 2.0 * (m.kv_dim + m.o_dim + up) * m.hidden / job.tp
    modules = recompute_modules(job.spec)
    flops = 2.0 * (m.q_dim + m.o_dim) * s if "core_attn" in modules and m.has_attention else 0.0
    mlp_in = 2 if m.gated_mlp else 1
    weights = {
        "mla_up_proj": sum(i * o for _, i, o, split in m.mla_projections() if split)
        - m.o_dim * m.hidden
        if m.mla
        else 0,
        "mlp": m.mlp_weight_params_per_layer() if m.has_mlp and not m.is_moe else 0,
        "moe": (
            m.top_k * m.mlp_weight_params_per_layer()
            + m.router_params_per_layer()
            + (mlp_in + 1) * m.hidden * m.shared_ffn_hidden
            if m.is_moe
            else 0
        ),
        "shared_experts": (mlp_in + 1) * m.hidden * m.shared_ffn_hidden
        if m.is_moe and "moe" not in modules
        else 0,
    }
    return flops + sum(2.0 * w / job.tp for name, w in weights.items() if name in modules)


def _stage_tensors(job: Job, stage: int, chunk: int | None = None) -> list[tuple[str, int, float]]:
    """(name, layer index, bytes per GPU) of a stage's (or one chunk's) gradient tensors.

    Registration order is kept. The embedding lives with the first layers (stage 0, chunk 0),
    the final norm and LM head with the last (stage pp−1, chunk v−1).
    """
    v = job.virtual_stages
    first = stage == 0 and chunk in (None, 0)
    last = stage == job.pp - 1 and chunk in (None, v - 1)
    out: list[tuple[str, int, float]] = []
    owners: dict[int, tuple[int, int]] = {}
    for name, count, layer, replicated, expert in _parsed_tensors(job.model):
        if 0 <= layer < job.model.n_layers:
            owner, owner_chunk = owners.get(layer) or owners.setdefault(
                layer, job.layer_owner(layer)
            )
            if owner != stage or chunk not in (None, owner_chunk):
                continue
        elif layer < 0:  # embeddings
            if not first:
                continue
        elif not last:  # final norm, LM head
            continue
        split = 1 if replicated else job.tp
        if expert:  # the expert grid splits experts over ep and their GEMMs over expert_tp
            split = job.expert_tp * job.ep
        out.append((name, layer, count / split * job.element_bytes))
    return out


@functools.lru_cache(maxsize=64)
def _parsed_tensors(model: ModelSpec) -> tuple[tuple[str, int, int, bool, bool], ...]:
    """``model``'s gradient tensors, parsed once: (name, count, layer, replicated, expert) with
    layer −1 for embeddings and ``n_layers`` for the final norm and LM head."""
    parsed = []
    for name, count in model.gradient_tensors():
        match = _LAYER.search(name)
        if match:
            layer = int(match.group(1) or match.group(2))
        elif "embed" in name or "wte" in name or "wpe" in name:
            layer = -1
        else:
            layer = model.n_layers
        # norms, and MLA's down projections, which every TP rank holds whole (not a Mamba-2
        # mixer's gated norm, over the rank's own channels)
        norm = ("norm" in name and ".mixer.norm." not in name) or "ln_" in name
        replicated = norm or "_a_proj" in name
        parsed.append((name, count, layer, replicated, "experts" in name))
    return tuple(parsed)


def stage_gradient_bytes(job: Job, stage: int, chunk: int | None = None) -> list[tuple[int, float]]:
    """(layer index, bytes per GPU) of a stage's gradient tensors in *registration* order.

    Embedding tensors get layer ``-1`` (ready last), final norm and LM head ``layers`` (ready first).
    Tensors are split over ``tp`` except norms (replicated); experts also over ``ep``.
    ``chunk`` restricts to one model chunk of an interleaved pipeline.
    """
    return [(layer, nbytes) for _, layer, nbytes in _stage_tensors(job, stage, chunk)]


def split_expert_gradients(
    job: Job, stage: int, chunk: int | None = None
) -> tuple[list[tuple[int, float]], list[tuple[int, float]]]:
    """A stage's gradients as (dense, expert) lists; experts only count as such when ep > 1."""
    tensors = _stage_tensors(job, stage, chunk)
    return _split_experts(job, tensors, [(layer, nbytes) for _, layer, nbytes in tensors])


def _split_experts(
    job: Job, tensors: list[tuple[str, int, float]], values: list[_V]
) -> tuple[list[_V], list[_V]]:
    """``values``, one for each of ``tensors``, as (dense, expert): experts only count as such
    when ep > 1."""
    dense: list[_V] = []
    expert: list[_V] = []
    for (name, _, _), value in zip(tensors, values, strict=True):
        (expert if job.ep > 1 and "experts" in name else dense).append(value)
    return dense, expert


#: Megatron-Core's default DDP bucket, in parameters: ``max(40_000_000, 1_000_000 × DP)``, DP
#: counted without context parallelism ("If using very large dp_sizes, make buckets larger to
#: ensure that chunks used in NCCL ring-reduce implementations are large enough to remain
#: bandwidth-bound rather than latency-bound": ``megatron/core/distributed/
#: distributed_data_parallel.py``, the same rule from core_v0.8.0 to Megatron-LM @d98e8a6, 2026).
MEGATRON_BUCKET_PARAMS: Final = 40_000_000
MEGATRON_BUCKET_PARAMS_PER_DP_RANK: Final = 1_000_000


def ddp_buckets(
    grads: list[tuple[int, float]], cap: float, first_cap: float
) -> list[tuple[float, int]]:
    """DDP buckets over ``grads`` taken in reverse: (bytes, layer whose backward fills it).

    A bucket closes once it reaches its cap (``first_cap`` for the first, then ``cap``; an
    infinite cap makes one bucket), as PyTorch's ``reducer.cpp`` and Megatron-Core's
    ``ParamAndGradBuffer`` assign whole tensors in reverse registration order.
    """
    return [_bucket(grads, members) for members in ddp_bucket_members(grads, cap, first_cap)]


def _bucket(grads: list[tuple[int, float]], members: list[int]) -> tuple[float, int]:
    """(bytes, layer whose backward fills it) of the bucket of ``grads[members]``."""
    return sum(grads[i][1] for i in members), grads[members[-1]][0]


def ddp_bucket_members(
    grads: list[tuple[int, float]], cap: float, first_cap: float
) -> list[list[int]]:
    """The tensors (indices into ``grads``, in the order they join) of each bucket of
    :func:`ddp_buckets`."""
    buckets: list[list[int]] = []
    members: list[int] = []
    size, limit = 0.0, first_cap
    for i in reversed(range(len(grads))):
        size += grads[i][1]
        members.append(i)
        if size >= limit:
            buckets.append(members)
            members, size, limit = [], 0.0, cap
    if members and size > 0:
        buckets.append(members)
    return buckets


def param_gather_exposure(chain: list[tuple[float, float]], *, aligned: bool = False) -> float:
    """Seconds a ZeRO-1/2 step's first forward waits for its parameter all-gathers, ``chain``
    holding each bucket's (all-gather seconds, forward compute seconds before the bucket is
    first used), in any order.

    Megatron-Core's on-demand gather (``overlap_param_gather`` without
    ``align_param_gather`` or ``overlap_param_gather_with_optimizer_step``, its default):
    the first module's forward pre-hook finds the first bucket's all-gather not dispatched,
    dispatches it and waits; every wait then dispatches the next bucket's
    (``_ParamAndGradBucketGroup.finish_param_sync``, ``param_and_grad_buffer.py``;
    ``_make_forward_pre_hook``, ``distributed_data_parallel.py``, core_v0.12.0). So bucket
    ``k+1`` gathers while bucket ``k``'s modules compute: the forward waits
    ``g₀ + Σ max(0, g_{k+1} − c_k)``, ``c_k`` the compute between the two buckets' first use.

    ``aligned``: every bucket's all-gather is dispatched at once (``align_param_gather``:
    ``param_sync_func`` in ``schedules.py`` calls the chunk's ``start_param_sync``, which
    dispatches all its bucket groups; ``overlap_param_gather_with_optimizer_step`` does the
    same after the optimizer step, ``optimizer.py``), and the pre-hooks dispatch none. They run
    back to back, so the forward waits ``max_k (G_k − C_k)``: ``G_k`` the gathers up to and
    including bucket ``k``, ``C_k`` the compute before its first use.

    >>> param_gather_exposure([(1.0, 0.0), (2.0, 5.0), (4.0, 6.0)])  # 1 + 0 + max(0, 4 - 1)
    4.0
    >>> param_gather_exposure([(1.0, 0.0), (2.0, 5.0), (4.0, 6.0)], aligned=True)  # 7 - 6
    1.0
    """
    ordered = sorted(chain, key=lambda gc: gc[1])
    if not ordered:
        return 0.0
    if aligned:
        gathered = waited = 0.0
        for gather, at in ordered:
            gathered += gather
            waited = max(waited, gathered - at)
        return waited
    waited = ordered[0][0]
    for (_, at), (gather, nxt) in itertools.pairwise(ordered):
        waited += max(0.0, gather - (nxt - at))
    return waited


def ops_1f1b(stage: int, pp: int, m: int, v: int = 1) -> list[tuple[str, int, int]]:
    """(kind, chunk, micro-batch) in the order stage ``stage`` runs them.

    ``v = 1``: PipeDream-Flush 1F1B, ``pp − stage − 1`` warm-up forwards. ``v > 1``: Megatron-LM's
    interleaved schedule (Narayanan et al. SC'21 §2.2): warm-up ``2·(pp − stage − 1) + (v − 1)·pp``
    forwards; the k-th forward runs chunk ``(k // pp) mod v`` and backwards run chunks in reverse;
    micro-batches advance in groups of ``pp``.
    """
    if v == 1:
        warmup = min(pp - stage - 1, m)
        order = [("F", 0, j) for j in range(warmup)]
        for i in range(m - warmup):
            order += [("F", 0, warmup + i), ("B", 0, i)]
        return order + [("B", 0, j) for j in range(m - warmup, m)]
    total = m * v

    def step(k: int, forward: bool) -> tuple[int, int]:
        chunk = (k // pp) % v
        return (chunk if forward else v - 1 - chunk), (k // (pp * v)) * pp + k % pp

    warmup = min(2 * (pp - stage - 1) + (v - 1) * pp, total)
    order = [("F", *step(k, True)) for k in range(warmup)]
    for i in range(total - warmup):
        order += [("F", *step(warmup + i, True)), ("B", *step(i, False))]
    return order + [("B", *step(k, False)) for k in range(total - warmup, total)]


def paired_passes(order: list[tuple[str, int, int]]) -> frozenset[tuple[str, int, int]]:
    """The passes of one stage's ``order`` (:func:`ops_1f1b`) that Megatron-Core's
    ``combined_1f1b`` runs two at a time (``job.moe_a2a_overlap``): each backward of the steady
    state with the forward right after it. A forward after a forward (the warm-up's, and the
    first of the steady state: the combined schedule's one extra warm-up forward) and a
    backward before a backward (the cool-down's, and the last of the steady state) run alone.
    With one stage the first forward and the last backward run alone (``schedules.py``
    @d98e8a6, ``combined_1f1b_schedule_for_no_pipelining`` and the interleaved one).

    >>> sorted(paired_passes(ops_1f1b(0, 1, 3)))
    [('B', 0, 0), ('B', 0, 1), ('F', 0, 1), ('F', 0, 2)]
    """
    paired: set[tuple[str, int, int]] = set()
    for before, after in itertools.pairwise(order):
        if before[0] == "B" and after[0] == "F":
            paired.update((before, after))
    return frozenset(paired)


#: A collective on the compute stream: (kind, label, task, category, calls per chunk).
_Blocking = tuple[str, str, CollectiveTask, str, int]


class _Builder:
    def __init__(self, job: Job, scale_up_domain: int, hbm_bandwidth: float) -> None:
        self.job = job
        self.spec = job.spec
        self.v = job.virtual_stages
        self.groups = _groups(job, scale_up_domain)
        self.schedule = Schedule()
        # Per micro-batch: a chunk costs its layers, plus the loss unit where the layout puts it.
        # Each kind of layer (the dense ones of a MoE model, the rest: ModelSpec.layer_kinds)
        # has its own times and collectives, indexed by kind (kind_of); the loss unit and the
        # embedding are alike in each.
        plan = self.plan = layer_plan(job)
        self.units = plan.units[len(job.model.layer_kinds) - 1]
        self.t_f, self.t_b = _stage_average(job, plan)
        # the compute collective kernels beside it slow (workload.contention)
        self.sm_bound = self.units.sm_bound if self.spec.comm_sm_contention else None
        self.blocking: dict[int, tuple[int, ...]] = {}  # buckets the next compute must wait for
        # each stage's context-parallel rings not yet waited for: the next chunk's compute, or
        # the next layer's where a pass runs layer by layer, waits for them
        self.rings: dict[int, tuple[int, ...]] = {}
        self.forward_only = False  # an evaluation step's forwards alone (build)
        self.ub = ub_gemms(job)  # how Userbuffers overlaps each GEMM (job.tp_overlap_cfg)
        self._ub_groups: dict[tuple[bool, int], tuple[Group, ...]] = {}  # ub_groups, found once
        self.sp = self.spec.sequence_parallel and job.tp > 1
        self.nccl_beside = backward_tp_overlap(job)  # job.tp_backward_overlap in effect
        self.modules = recompute_modules(self.spec)  # what a selective recomputation re-runs
        self._blocking_memo: dict[tuple[bool, int, int], tuple[_Blocking, ...]] = {}
        # the last phase on each stage's compute stream; whether the pass being built runs
        # its all-to-alls beside the compute (job.moe_a2a_overlap, a steady-state pass)
        self.compute_tail: dict[int, int] = {}
        self.ep_beside = 0.0
        self.paired: list[frozenset[tuple[str, int, int]]] = [frozenset()] * job.pp
        self.ep_share = 0.0
        self.host_gap = job.host_wait  # per host-synchronised MoE layer forward
        act = job.activation_bytes
        self.tp_bytes = act
        self.p2p_bytes = act / job.tp if self.sp else act
        # tokens routed per rank: each context-parallel rank holds s/cp of the sequence
        moe_tokens = self.spec.micro_batch * self.spec.seq_len * job.model.top_k / job.cp
        # one copy per chosen expert (alltoall), or per rank or domain reached (DeepEP,
        # HybridEP: workload.dispatch)
        m = job.model
        self.a2a_bytes = (
            moe_tokens * m.hidden * job.element_bytes / (job.tp if self.sp else 1)
        ) * dispatch_share(
            self.spec.moe_dispatcher,
            n_experts=m.n_experts,
            top_k=m.top_k,
            ranks=job.ep,
            per_domain=self.groups.ep.ranks_per_domain,
            groups=m.expert_groups,
            group_topk=m.group_topk,
        )
        self.marks = [StageMarks() for _ in range(job.pp)]
        # bytes a reduction and a gather move per 16-bit byte of parameters (fp32 gradients,
        # FP8 weights: job.grad_reduce_bytes, job.param_bytes)
        self.grad_wire = job.grad_reduce_bytes / job.element_bytes
        self.weight_wire = job.param_bytes / job.element_bytes
        # the optimizer streams at the achieved bandwidth of the kernel model (compute.HBM_SHARE)
        self.hbm_bandwidth = job.device.hbm if job.device is not None else hbm_bandwidth
        self.domain = scale_up_domain
        self.sent: dict[tuple[str, int, int, int], int] = {}
        # the same call on the same stream is placed once (steps repeat it per layer/micro-batch)
        self.placed_tasks: dict[tuple[CollectiveTask, str], CollectiveTask] = {}
        # compute tasks with the SM-bound share they carry (the same seconds recur, too)
        self.marked_tasks: dict[ComputeTask, ComputeTask] = {}
        spec = self.spec
        self.grad_overlap = (
            spec.overlap if spec.overlap_grad_reduce is None else spec.overlap_grad_reduce
        )
        self.gather_overlap = (
            spec.overlap if spec.overlap_param_gather is None else spec.overlap_param_gather
        )

    # ---- phases --------------------------------------------------------------------------

    def add(
        self,
        name: str,
        task: CollectiveTask | ComputeTask,
        category: str,
        stream: str,
        after: tuple[int, ...] = (),
        repeat: int = 1,
    ) -> int:
        if isinstance(task, ComputeTask) and category == "compute" and task.seconds > 0:
            marked = self.marked_tasks.get(task)  # None: nothing beside it slows it
            if marked is None:
                marked = self.marked_tasks[task] = replace(task, sm_bound=self.sm_bound)
            task = marked
        if isinstance(task, CollectiveTask) and task.group.placement is None:
            key = (task, stream)
            placed = self.placed_tasks.get(key)
            if placed is None:
                stage = int(stream[1:].split(".")[0])
                placed = self.placed_tasks[key] = replace(
                    task, group=self.placed(task.group, stage)
                )
            task = placed
        index = self.schedule.add(Phase(name, task, category, stream, after, repeat))
        if stream.endswith(".compute"):
            self.compute_tail[int(stream[1:].split(".")[0])] = index
        return index

    def placed(self, group: Group, stage: int) -> Group:
        """``group`` with the GPUs of every copy on pipeline stage ``stage`` (``tp-cp-dp-pp``
        order)."""
        job = self.job
        span = job.tp * job.grad_dp
        size, stride = {
            "tp": (job.tp, 1),
            "cp": (job.cp, job.tp),
            "cpa": (job.cp_a2a, job.tp),
            "cpr": (job.cp // job.cp_a2a, job.tp * job.cp_a2a),
            "dp": (job.dp_shard, job.tp),
            "dpr": (job.spec.dp_replicate, job.tp * job.dp_shard),
            "ep": (job.ep, job.expert_tp),
            "edp": (job.expert_dp_shard, job.expert_tp * job.ep),
            "etp": (job.expert_tp, 1),
        }[group.name]
        return replace(group, placement=megatron_placement(size, stride, span, stage * span))

    def tag(self, kind: str, chunk: int, j: int) -> str:
        return f"{kind}{j}" if self.v == 1 else f"{kind}{j}c{chunk}"

    def kind_of(self, layer: int) -> int:
        """Index of layer ``layer``'s kind in ``plan.units`` (:class:`LayerPlan`; from
        ``n_layers`` on, the multi-token-prediction modules' layers)."""
        return self.plan.index[layer]

    def chunk_order(self, stage: int, chunk: int, backward: bool) -> list[int]:
        """The layers of a chunk in the order a forward (``backward`` False) or a backward
        runs them; on the chunk holding the loss, the multi-token-prediction modules' layers
        after the model's (``job.mtp_layers``; indices from ``n_layers`` on, of the last
        layer's kind)."""
        job = self.job
        order = list(job.chunk_layers(stage, chunk))
        mtp = job.model.mtp_layers
        if mtp and job.virtual_stage(stage, chunk).loss:
            order += range(job.model.n_layers, job.model.n_layers + mtp)
        return order[::-1] if backward else order

    def runs(self, layers: list[int]) -> list[tuple[int, int]]:
        """(kind, layers) of each run of same-kind layers among ``layers``, in their order."""
        out: list[tuple[int, int]] = []
        for layer in layers:
            k = self.kind_of(layer)
            if out and out[-1][0] == k:
                out[-1] = (k, out[-1][1] + 1)
            else:
                out.append((k, 1))
        return out

    def blocking_comm(
        self, stage: int, tag: str, layers: int, after: tuple[int, ...], k: int
    ) -> int:
        """TP (and EP) collectives of ``layers`` layers of kind ``k`` on the compute stream;
        last index.

        Per layer and TP block (attention; a dense MLP) — with sequence parallelism, Megatron-
        LM's and Transformer Engine's layers: forward the column-parallel input's all-gather
        and the row-parallel output's reduce-scatter; backward the output gradient's all-gather
        before the row-parallel layer, the column-parallel input's re-gather for its weight
        gradient (its forward saves the local shard) and the input gradient's reduce-scatter.
        Without sequence parallelism an all-reduce each way. With ``tp_backward_overlap`` the
        backward's column-parallel ones run beside its GEMMs (:meth:`backward_beside`), with
        ``tp_comm_overlap`` every block's collectives beside their GEMMs
        (:meth:`overlapped_tp`): neither is here. For a MoE layer, the experts' pair over the
        expert-TP group (none with ``expert_tp`` 1), then, with expert parallelism, the
        dispatch and combine all-to-alls. A backward under full recomputation first re-runs
        the layer's forward, its collectives included (blocking here, also with Userbuffers:
        an upper bound there)."""
        stream, last = f"s{stage}.compute", -1
        backward = tag.startswith("B")
        for kind, label, task, category, calls in self.blocking_calls(backward, layers, k):
            if kind == "EP" and self.ep_beside:  # partly or wholly beside (compute_with_tp)
                calls -= self.ep_calls_beside(calls)
                if not calls:
                    continue
            last = self.add(f"s{stage} {tag} {kind} {label}", task, category, stream, after, calls)
            after = ()
        return last

    def blocking_calls(self, backward: bool, layers: int, k: int) -> tuple[_Blocking, ...]:
        """The collectives :meth:`blocking_comm` adds for ``layers`` layers of kind ``k`` one
        way: (kind, label, task, category, calls), the same for every micro-batch (kept once)."""
        key = (backward, layers, k)
        known = self._blocking_memo.get(key)
        if known is None:
            known = self._blocking_memo[key] = self._blocking_calls(backward, layers, k)
        return known

    def _blocking_calls(self, backward: bool, layers: int, k: int) -> tuple[_Blocking, ...]:
        job = self.job
        moe = self.plan.moe[k]
        blocks = self.plan.tp_blocks[k]
        ub = self.spec.tp_comm_overlap
        redo = layers if backward and self.plan.redo[k] else 0
        # selective recomputation of a whole block re-runs its collectives too: a dense MLP's
        # pair (mlp), a MoE block's experts' pair and all-to-alls (moe)
        modules = self.modules if backward else ()
        mlp_redo = layers if self.plan.dense_mlp[k] and "mlp" in modules else 0
        # per-op checkpointing keeps reduce-scatter outputs but no all-gather's or
        # all-reduce's. With sequence parallelism the re-run forward's gather of each block's
        # input is the one its weight gradient takes anyway (counted above); without it the
        # re-run output projection's product is all-reduced again (the residual stream after
        # it feeds the re-run MLP norm)
        op_redo = backward and self.spec.recompute == "selective_op" and not self.sp
        op_reduces = layers if op_redo and job.tp > 1 else 0
        moe_redo = self.moe_forwards_again(backward, layers, k)  # its all-to-alls and experts
        if self.sp:
            if not backward:
                gathers = scatters = 0 if ub else blocks
            elif ub:
                gathers = scatters = 0
            elif self.nccl_beside:
                gathers, scatters = blocks, 0  # the output gradients' all-gathers
            else:
                gathers, scatters = 2 * blocks, blocks
            tp_ops = [
                (Op.ALL_GATHER, "all-gather", gathers * layers + blocks * redo + mlp_redo),
                (Op.REDUCE_SCATTER, "reduce-scatter", scatters * layers + blocks * redo + mlp_redo),
            ]
        else:
            reduces = 0 if backward and self.nccl_beside else blocks
            tp_ops = [
                (
                    Op.ALL_REDUCE,
                    "all-reduce",
                    reduces * layers + blocks * redo + mlp_redo + op_reduces,
                )
            ]
        # MLA's up projections re-gather their latents when recomputed (mla_up_proj)
        up_redo = layers if self.sp and "mla_up_proj" in modules else 0
        latent_ops = self.latent_calls(backward, layers, redo + up_redo, k)
        for op, _, calls in latent_ops:  # those calls move the latents instead
            moved = calls - (up_redo if op is Op.ALL_GATHER else 0)  # (up_redo: added calls)
            tp_ops = [(o, label, n - moved if o is op else n) for o, label, n in tp_ops]
        # the experts' pair: forward gather and scatter, backward their transposes
        expert_ops = [
            (op, label, (layers + moe_redo) if moe else 0)
            for op, label in (
                ((Op.ALL_GATHER, "all-gather"), (Op.REDUCE_SCATTER, "reduce-scatter"))
                if self.sp
                else ((Op.ALL_REDUCE, "all-reduce"),)
            )
        ]
        groups = [(job.tp, tp_ops, self.groups.tp, "TP")]
        if moe and job.expert_tp == job.tp:  # the experts' pair runs over the TP group itself
            tp_ops = [
                (op, label, n + e[2]) for (op, label, n), e in zip(tp_ops, expert_ops, strict=True)
            ]
            groups = [(job.tp, tp_ops, self.groups.tp, "TP")]
        else:
            groups.append((job.expert_tp, expert_ops, self.groups.etp, "expert TP"))
        # Transformer Engine casts a GEMM input (and an output gradient) to FP8 or NVFP4 before
        # it all-gathers it (Job.tp_gather_bytes); reductions move the 16-bit GEMM outputs. A
        # MoE layer's TP group also gathers the experts' 16-bit tokens: kept 16-bit there.
        low = self.tp_bytes * (1.0 if moe else job.tp_gather_bytes / job.element_bytes)
        out: list[_Blocking] = []
        for size, ops, group, kind in groups:
            for op, label, calls in ops if size > 1 else ():
                if calls:
                    nbytes = low if op is Op.ALL_GATHER and kind == "TP" else self.tp_bytes
                    out.append((kind, label, CollectiveTask(op, nbytes, group), "tp", calls))
        share = self.plan.latent_share[k]
        for op, label, calls in latent_ops if job.tp > 1 else ():
            nbytes = share * (low if op is Op.ALL_GATHER else self.tp_bytes)
            task = CollectiveTask(op, nbytes, self.groups.tp)
            out.append(("TP", f"{label} (latents)", task, "tp", calls))
        if job.ep > 1 and moe:
            task = CollectiveTask(Op.ALLTOALL, self.a2a_bytes, self.groups.ep)
            out.append(("EP", "all-to-all", task, "ep", 2 * (layers + moe_redo)))
        return tuple(out)

    def latent_calls(
        self, backward: bool, layers: int, redo: int, k: int
    ) -> list[tuple[Op, str, int]]:
        """The TP collectives of ``layers`` MLA layers of kind ``k`` (one way; ``redo``: layers
        whose forward a full recompute re-runs) that move the attention's gathered inputs —
        its latents and rotary key (:attr:`~commwall.workload.models.ModelSpec.tp_input_width`,
        :attr:`latent_share` of a hidden state) — rather than a hidden state: with sequence
        parallelism the up projections' input all-gathers and, in a backward, its re-gather
        and the input gradient's reduce-scatter; without it the input gradient's all-reduce.
        The output projection's collectives move hidden states, as elsewhere. None for other
        attention, or where the calls run beside their GEMMs (:meth:`backward_beside`,
        :meth:`overlapped_tp`). Megatron-Core's ``MLASelfAttention`` gathers the two latents
        and the rotary key in three calls: counted as one of their summed size."""
        if self.plan.latent_share[k] == 1.0:
            return []
        ub, beside = self.spec.tp_comm_overlap, backward and self.nccl_beside
        if not self.sp:
            return [(Op.ALL_REDUCE, "all-reduce", layers)] if backward and not beside else []
        inline = 0 if ub or beside else layers
        gathers = inline + redo
        scatters = inline if backward else 0
        return [c for c in ((Op.ALL_GATHER, "all-gather", gathers),
                            (Op.REDUCE_SCATTER, "reduce-scatter", scatters)) if c[2]]  # fmt: skip

    def compute_with_tp(
        self,
        stage: int,
        tag: str,
        seconds: float,
        layers: int,
        after: tuple[int, ...],
        context: bool,
        k: int,
    ) -> tuple[int, int]:
        """``seconds`` of compute for ``layers`` layers of kind ``k`` and their TP (and EP)
        collectives, with the context-parallel ring beside them when ``context``: the index of
        the phase that ends the compute and of the last phase on the compute stream."""
        compute = f"s{stage}.compute"
        beside = self.nccl_beside and tag.startswith("B") and layers > 0
        # where this compute starts (after ``after`` and the stream's last phase): the context
        # ring and the overlapped all-to-alls start there too
        tail = self.compute_tail.get(stage)
        start = (*after, tail) if tail is not None else after
        # the attention the context-parallel ring runs beside, apart at the chunk's end
        window = self.ring_window(tag, layers, k) if context else 0.0
        body = seconds - window
        if self.spec.tp_comm_overlap and layers:
            done, last = self.overlapped_tp(stage, tag, body, layers, after, k)
        elif beside:
            done, last = self.backward_beside(stage, tag, body, layers, after, k)
        else:
            done = last = self.add(
                f"s{stage} {tag} compute", ComputeTask(body), "compute", compute, after
            )
        if not layers:
            return done, last
        syncs = self.host_syncs(tag, layers, k)
        if syncs:
            last = self.add(
                f"s{stage} {tag} host", ComputeTask(self.host_gap * syncs), "host", compute
            )
        if context:
            ring_from = None
            if window > 0:
                ring_from = last
                name = f"s{stage} {tag} attention beside the CP ring"
                done = last = self.add(name, ComputeTask(window), "compute", compute)
            last = self.context_exchange(stage, tag, layers, start, last, k, ring_from)
        if self.ep_beside and self.plan.moe[k]:
            self.all_to_alls_beside(stage, tag, layers, start, k)
        if not self.spec.tp_comm_overlap and not beside and (self.job.tp > 1 or self.job.ep > 1):
            blocked = self.blocking_comm(stage, tag, layers, (), k)  # none: a dense layer, TP 1
            last = blocked if blocked >= 0 else last
        return done, last

    def ring_window(self, tag: str, layers: int, k: int) -> float:
        """Seconds of ``layers`` layers' attention kernels (and their merges) the context-
        parallel ring runs beside in this pass (:attr:`UnitTimes.ring_window_forward`,
        ``…_backward``); 0 without a ring beside the compute (``cp_comm`` all_gather or a2a,
        a2a+p2p with one ring rank) or a kernel breakdown (the flat model)."""
        job = self.job
        if job.spec.cp_comm not in ("p2p", "a2a+p2p") or job.cp // job.cp_a2a < 2:
            return 0.0
        u = self.plan.units[k]
        window = u.ring_window_backward if tag.startswith("B") else u.ring_window_forward
        return 0.0 if window is None else layers * window

    def host_syncs(self, tag: str, layers: int, k: int) -> int:
        """How many of ``layers`` MoE layers of kind ``k`` wait on the host in this pass
        (:attr:`Job.host_wait <commwall.workload.job.Job.host_wait>` each): every forward, and
        in a backward each forward a recomputation re-runs (full, or the ``moe`` module); none
        sync-free, or on an x86 host in a pass paired under ``job.moe_a2a_overlap``, whose
        partner's compute fills the wait (Megatron-Bridge's Nsight A/B: with the overlap the
        GPU-active union, 21.221 s, covers the 20.99 s step); on a Grace host a paired pass
        waits as one alone does (:func:`commwall.workload.host.paired_pass_waits`)."""
        if not self.host_gap or not self.plan.moe[k]:
            return 0
        if self.ep_beside and not self.job.paired_waits:
            return 0
        backward = tag.startswith("B")
        return self.moe_forwards_again(backward, layers, k) if backward else layers

    def moe_forwards_again(self, backward: bool, layers: int, k: int) -> int:
        """MoE layer forwards a backward over ``layers`` layers of kind ``k`` re-runs: each
        layer once under full recomputation, once more with the ``moe`` recompute module;
        none for a forward or a dense kind."""
        if not backward or not self.plan.moe[k]:
            return 0
        return layers * (int(self.plan.redo[k]) + int("moe" in self.modules))

    def all_to_alls_beside(
        self, stage: int, tag: str, layers: int, start: tuple[int, ...], k: int
    ) -> None:
        """The dispatch and combine all-to-alls of ``layers`` MoE layers on the stage's
        ``.ep`` side stream from the start of their compute, the stage's next pass waiting for
        them (``job.moe_a2a_overlap``: Megatron-Core's ``combined_1f1b`` runs one micro-batch's
        forward and another's backward together, each layer's all-to-alls on a communication
        stream beside the other's attention and experts, ``model_chunk_schedule_plan.py``
        @d98e8a6). Priced beside the pass's own compute: a pass ends when the longer of its
        compute and its all-to-alls does, which the two passes' interleaving reaches within a
        few percent (per layer the dispatch waits for the router and the experts for the
        dispatch, docs/compute-model.md); their SMs slow the compute beside them
        (:mod:`commwall.workload.contention`)."""
        side: tuple[int, ...] = ()
        backward = tag.startswith("B")
        for kind, label, task, category, calls in self.blocking_calls(backward, layers, k):
            calls = self.ep_calls_beside(calls) if kind == "EP" else 0
            if not calls:
                continue
            side = (
                self.add(
                    f"s{stage} {tag} EP {label} (overlapped)", task, category,
                    f"s{stage}.ep", side or start, calls,
                ),
            )  # fmt: skip
        if side:
            self.blocking[stage] = (*self.blocking.get(stage, ()), *side)

    def ep_calls_beside(self, calls: int) -> int:
        """How many of a pass's ``calls`` all-to-alls run beside its compute: all of them
        sync-free, else the measured share (:data:`EP_OVERLAP_SYNCED`), rounded; whole calls,
        so that each keeps its own size and price."""
        return calls if self.ep_beside >= 1.0 else round(calls * self.ep_beside)

    def backward_beside(
        self, stage: int, tag: str, seconds: float, layers: int, after: tuple[int, ...], k: int
    ) -> tuple[int, int]:
        """A backward with the column-parallel TP collectives on NCCL's stream beside its
        GEMMs (``job.tp_backward_overlap``): Megatron-LM's
        ``LinearWithGradAccumulationAndAsyncCommunication`` (2022-) and Transformer Engine's
        ``Linear``/``LayerNormLinear`` backward start them with ``async_op=True`` and wait
        after the GEMM beside them. With sequence parallelism the input's re-gather (one byte
        an element under FP8, as TE gathers the quantized shard) runs beside the data-gradient
        GEMM, and the input gradient's reduce-scatter beside the weight-gradient GEMM; without
        it the input gradient's all-reduce beside the weight-gradient GEMM. The layers' other
        kernels run first, then the collectives that block (:meth:`blocking_comm`: the output
        gradients' all-gathers, the recomputed forward's, the experts' and the all-to-alls);
        a collective shows only where it outlasts its GEMM. NCCL's channels slow the GEMM
        beside them (:mod:`commwall.workload.contention`)."""
        compute, side = f"s{stage}.compute", f"s{stage}{PAIRED_STREAM}"
        pairs = self.plan.units[k].beside_backward  # (dgrad, wgrad), each column-parallel GEMM
        blocks = list(zip(pairs[::2], pairs[1::2], strict=True))
        rest = max(0.0, seconds - layers * sum(pairs))
        if not self.sp:  # nothing to gather: the data gradients run with the rest
            rest += layers * sum(dgrad for dgrad, _ in blocks)
        done = last = self.add(
            f"s{stage} {tag} compute", ComputeTask(rest), "compute", compute, after
        )
        blocked = self.blocking_comm(stage, tag, layers, (), k)
        last = blocked if blocked >= 0 else last
        gather = self.tp_bytes * self.job.tp_gather_bytes / self.job.element_bytes
        calls: tuple[tuple[Op, str, float], ...] = (
            (
                (Op.ALL_GATHER, "all-gather beside dgrad", gather),
                (Op.REDUCE_SCATTER, "reduce-scatter beside wgrad", self.tp_bytes),
            )
            if self.sp
            else ((Op.ALL_REDUCE, "all-reduce beside wgrad", self.tp_bytes),)
        )
        share = self.plan.latent_share[k]  # the attention block's column input: MLA's latents
        # Each layer's GEMMs (its dgrad and wgrad with sequence parallelism, else its wgrad) in
        # one phase, its collectives one after the other on the side stream from the phase's
        # start: with equal all-gather and reduce-scatter bytes what shows is the same as for
        # each beside its own GEMM (under FP8 the gather is half: the sum may hide a little
        # more). The next layer's GEMMs wait for them (Megatron's handle.wait()); so does the
        # stream after the last. contention.paired_stretch prices their SMs on this phase.
        waited: tuple[int, ...] = ()
        for block, (dgrad, wgrad) in enumerate(blocks):
            work = ComputeTask(layers * ((dgrad + wgrad) if self.sp else wgrad))
            done = self.add(f"s{stage} {tag} compute beside TP", work, "compute", compute, waited)
            start = (last, *waited)
            for op, label, nbytes in calls:
                width = share if block == 0 else 1.0
                task = CollectiveTask(op, nbytes * width, self.groups.tp)
                waited = (self.add(f"s{stage} {tag} TP {label}", task, "tp", side, start, layers),)
                start = ()
            last = done
        last = self.add(f"s{stage} {tag} TP wait", ComputeTask(0.0), "tp", compute, waited)
        return done, last

    def overlapped_tp(
        self, stage: int, tag: str, seconds: float, layers: int, after: tuple[int, ...], k: int
    ) -> tuple[int, int]:
        """Compute with Transformer Engine's Userbuffers TP overlap (:data:`UB_COMM_SMS`).

        Each TP collective runs on a side stream beside the GEMM it feeds or drains, and the
        compute stream waits for it after that GEMM: a collective shows only where it outlasts
        its own GEMM. Forward: each all-gather is a ring exchange under the column-parallel
        GEMM (QKV, MLP up), each reduce-scatter is pipelined (or ring-exchanged) in slices
        under the row-parallel GEMM (attention out, MLP down) with the last slice's
        reduce-scatter exposed after it (:func:`ub_gemms`). Backward: the output-gradient
        all-gather rides a ring exchange under the row-parallel dgrad, the input-gradient
        reduce-scatter a bulk overlap under the column-parallel wgrad. The layers' other
        kernels run first, in one phase.
        """
        compute, side = f"s{stage}.compute", f"s{stage}{UB_STREAM}"
        forward = tag.startswith("F")
        units = self.plan.units[k]
        pairs = units.beside_forward if forward else units.beside_backward
        rest = max(0.0, seconds - layers * sum(pairs))
        done = last = self.add(
            f"s{stage} {tag} compute", ComputeTask(rest), "compute", compute, after
        )
        # the forward reduce-scatters' last slices, exposed after their GEMMs (attention out,
        # then MLP down)
        ub = self.ub
        tails = (ub["proj_fprop"].exposed, ub["fc2_fprop"].exposed) if forward else (0.0, 0.0)
        # FP8: Userbuffers all-gathers the GEMM's FP8 input, one byte an element (TE's default
        # ``fp8_buf`` for every all-gather overlap; NVFP4 taken the same way, its gathered data
        # and scales, though TE v2.8 has no Userbuffers NVFP4 path); reduce-scatters move the
        # GEMM's output
        gather_bytes = self.job.tp_gather_bytes / self.job.element_bytes
        # the attention block's column-parallel collective (forward the input's all-gather,
        # backward its gradient's reduce-scatter) moves MLA's latents
        column = 0 if forward else 1
        groups = self.ub_groups(forward, k)
        for i, gemm in enumerate(pairs):
            op, label = (
                (Op.ALL_GATHER, "all-gather")
                if i % 2 == 0
                else (Op.REDUCE_SCATTER, "reduce-scatter")
            )
            exposed = tails[i // 2] if i % 2 else 0.0
            nbytes = self.tp_bytes * (gather_bytes if op is Op.ALL_GATHER else 1.0)
            if i == column:
                nbytes *= self.plan.latent_share[k]
            if self.forward_only and op is Op.ALL_GATHER:
                # no gradient kept (an evaluation step): Transformer Engine's LayerNormLinear
                # turns its Userbuffers all-gather off (``ub_overlap_ag_fprop and
                # is_grad_enabled``, every TE release since 1.x) and gathers the input with
                # NCCL before the GEMM, on the compute stream
                gather = CollectiveTask(op, nbytes, self.groups.tp)
                self.add(f"s{stage} {tag} TP {label}", gather, "tp", compute, (), layers)
                done = last = self.add(
                    f"s{stage} {tag} compute", ComputeTask(layers * gemm), "compute", compute
                )
                continue
            done = self.add(
                f"s{stage} {tag} compute beside TP {label}",
                ComputeTask(layers * gemm),
                "compute",
                compute,
            )
            task = CollectiveTask(op, nbytes * (1.0 - exposed), groups[i])
            beside = self.add(
                f"s{stage} {tag} TP {label} (overlapped)", task, "tp", side, (last,), layers
            )
            if exposed:
                split = CollectiveTask(op, nbytes * exposed, groups[i])
                self.add(
                    f"s{stage} {tag} TP {label} (last split)", split, "tp", compute, (), layers
                )
            last = self.add(f"s{stage} {tag} TP wait", ComputeTask(0.0), "tp", compute, (beside,))
        redo = not forward and (self.plan.redo[k] or {"mlp", "mla_up_proj"} & set(self.modules))
        if self.plan.moe[k] or redo:  # the experts' pair, all-to-alls, recomputed forward
            blocked = self.blocking_comm(stage, tag, layers, (), k)
            last = blocked if blocked >= 0 else last
        return done, last

    def ub_groups(self, forward: bool, k: int) -> tuple[Group, ...]:
        """The TP communicator each Userbuffers collective of a layer of kind ``k`` runs on, in
        :attr:`UnitTimes.beside_forward` (``forward``) or ``beside_backward`` order: the TP
        ranks without NCCL's per-communicator CTA bounds (Userbuffers is not NCCL), a
        pipelined or bulk kernel bounded to its ``num_sm`` thread blocks (Transformer Engine
        launches ``reducescatter2_userbuff*`` and ``allgather2_userbuff*`` with a grid of
        ``num_sm`` blocks, ``userbuffers.cu``), each moving at most what one NCCL channel's
        block copies (:func:`~commwall.collectives.cost.sm_channel_bw`, NCCL's per-block
        cap); a ring exchange's sends run on the copy engines, unbounded."""
        found = self._ub_groups.get((forward, k))
        if found is not None:
            return found
        free = replace(self.groups.tp, min_ctas=None, max_ctas=None)
        names = []
        for _, _, col_ub, row_ub in tp_blocks(self.kind_model(k)):
            names += (
                [f"{col_ub}_fprop", f"{row_ub}_fprop"]
                if forward
                else [f"{row_ub}_dgrad", f"{col_ub}_wgrad"]
            )
        out = []
        for name in names:
            gemm = self.ub[name]
            sms = gemm.num_sm if gemm.method != "ring_exchange" else None
            out.append(replace(free, max_ctas=sms))
        found = self._ub_groups[forward, k] = tuple(out)
        return found

    def layer_seconds(self, kind: str, k: int) -> float:
        """Forward (``F``) or backward (``B``) seconds of one layer of kind ``k`` of one
        micro-batch."""
        u = self.plan.units[k]
        return u.layer_forward if kind == "F" else u.layer_backward

    def outer_seconds(self, kind: str, stage: int, chunk: int) -> float:
        """Seconds of the units outside the layers in this chunk, where the pipeline layout
        puts them: the loss unit (final norm, LM head, cross-entropy) and the embedding (its
        lookup and gradient; its gradient buckets still wait for the end of the backward)."""
        where = self.job.virtual_stage(stage, chunk)
        u = self.units
        seconds = 0.0
        if where.loss:  # and each multi-token-prediction module's projection and LM head
            seconds += u.head_forward if kind == "F" else u.head_backward
            mtp = self.job.model.mtp_layers
            seconds += mtp * (u.mtp_forward if kind == "F" else u.mtp_backward)
        if where.embedding:
            seconds += u.embed_forward if kind == "F" else u.embed_backward
        return seconds

    def ready(self, stage: int, after: tuple[int, ...]) -> tuple[int, ...]:
        """``after`` plus any gradient buckets the stage must finish first (no overlap), and
        its context-parallel rings (:meth:`ring_ready`)."""
        return (*after, *self.blocking.pop(stage, ()), *self.ring_ready(stage))

    def ring_ready(self, stage: int) -> tuple[int, ...]:
        """The stage's context-parallel rings its next compute waits for: Transformer Engine's
        attention returns once its ring has (:meth:`context_exchange`)."""
        return self.rings.pop(stage, ())

    def chunk_work(
        self, stage: int, chunk: int, tag: str, kind: str, after: tuple[int, ...]
    ) -> int:
        """One chunk's compute then its blocking collectives, lumped, for each run of
        same-kind layers in the order the pass runs them (one run unless the chunk holds dense
        and MoE layers; the units outside the layers ride with the first); the last phase
        index."""
        after = self.ready(stage, after)
        outer = self.outer_seconds(kind, stage, chunk)
        runs = self.runs(self.chunk_order(stage, chunk, kind == "B")) or [(0, 0)]
        last = -1
        for i, (k, layers) in enumerate(runs):
            # layers == 0: the embedding or the loss unit alone, no layer collectives
            seconds = layers * self.layer_seconds(kind, k) + (outer if i == 0 else 0.0)
            dep = after if i == 0 else ()
            last = self.compute_with_tp(stage, tag, seconds, layers, dep, self.job.cp > 1, k)[1]
        return last

    def context_exchange(
        self,
        stage: int,
        tag: str,
        layers: int,
        after: tuple[int, ...],
        last: int,
        k: int,
        ring_from: int | None = None,
    ) -> int:
        """Context parallelism's exchange for ``layers`` layers (``job.cp_comm``, Megatron-Core's
        ``--cp-comm-type``, Transformer Engine's ``context_parallel.py`` @d0067d0): the index of
        the last phase on the compute stream (``last`` when the exchange runs beside it).

        * ``p2p`` (``AttnFuncWithCPAndKVP2P``; Liu et al. 2023, Ring Attention): each layer's
          forward passes every rank's K and V chunks around the ring (an all-gather of
          ``2·b·s·kv_dim/t`` elements over the cp group); backward passes them again and
          returns their gradients (a reduce-scatter of the same size). On its own stream,
          overlapped with the chunk's attention kernels (:attr:`UnitTimes.ring_window_forward`,
          their phase ``ring_from`` ends before; without it the chunk's compute from its
          start): TE runs each step's exchange beside the previous step's attention, inside
          the attention function, so a ring slower than the attention shows; the stage's
          next compute waits for it (:meth:`ring_ready`).
        * ``all_gather`` (``AttnFuncWithCPAndKVAllGather``; Llama 3, Dubey et al. 2024 §3.3.2:
          "the all-gather communication latency is exposed in the critical path"): the same
          all-gather of K and V before attention, forward and again backward, and the
          reduce-scatter of their gradients after it — on the compute stream.
        * ``a2a`` (``AttnFuncWithCPAndQKVOA2A``; Jacobs et al. 2023, DeepSpeed-Ulysses): an
          all-to-all of Q, K and V (``b·(s/cp)·(q_dim + 2·kv_dim)/t`` elements per rank) trades
          the sequence split for a head split before attention and one of the output
          (``b·(s/cp)·q_dim/t``) trades it back; backward the output gradient's, then Q, K and
          V's gradients' — on the compute stream.
        * ``a2a+p2p`` (``AttnFuncWithCPAndKVP2P`` with ``cp_group = [a2a, p2p]``): the same
          all-to-alls inside groups of ``cp_a2a`` ranks, exposed, and the ring of ``p2p`` across
          the ``cp / cp_a2a`` groups, beside the compute, on K and V of ``1/cp_a2a`` of the heads
          (``2·b·s·kv_dim/(t·cp_a2a)`` elements).

        With recomputation (``selective`` with ``core_attn`` checkpoints the attention core,
        ``full`` the layer: every layer, or under ``recompute_method: block`` the first of each
        chunk) the backward first re-runs the forward, its exchange included.
        """
        job = self.job
        spec = job.spec
        b, s, e, t, a = spec.micro_batch, spec.seq_len, job.element_bytes, job.tp, job.cp_a2a
        # (op, bytes, label, exposed): exposed calls block the compute stream, the ring runs
        # beside it on the stage's cp stream
        Call = tuple[Op, float, str, bool]
        forward: list[Call] = []
        backward: list[Call] = []
        if a > 1:  # Ulysses' all-to-alls (a = cp), or the inner ones of a2a+p2p
            local = b * s / job.cp * e / t
            qkv = local * (job.model.q_dim + 2 * job.model.kv_dim)
            out = local * job.model.q_dim
            forward = [(Op.ALLTOALL, qkv, "Q/K/V all-to-all", True)]
            backward = [(Op.ALLTOALL, out, "output-gradient all-to-all", True)]
        if a < job.cp:  # K and V over the ring (or all-gathered) across the a2a groups
            kv = 2.0 * b * s * job.model.kv_dim / (t * a) * e
            exposed = spec.cp_comm == "all_gather"
            forward.append((Op.ALL_GATHER, kv, "K/V all-gather", exposed))
            backward += [
                (Op.ALL_GATHER, kv, "K/V all-gather", exposed),
                (Op.REDUCE_SCATTER, kv, "dK/dV reduce-scatter", exposed),
            ]
        if a > 1:
            forward.append((Op.ALLTOALL, out, "output all-to-all", True))
            backward.append((Op.ALLTOALL, qkv, "dQ/dK/dV all-to-all", True))
        calls = forward
        if tag.startswith("B"):
            redo = [(op, n, f"{label} (recompute)", x) for op, n, label, x in forward]
            again = self.plan.redo[k] or "core_attn" in self.modules
            calls = (redo if again else []) + backward
        group = {"a2a": self.groups.cp, "a2a+p2p": self.groups.cpa}.get(spec.cp_comm)
        ring = self.groups.cpr if spec.cp_comm == "a2a+p2p" else self.groups.cp
        side: tuple[int, ...] = ()
        for op, nbytes, label, exposed in calls:
            task = CollectiveTask(op, nbytes, group if op is Op.ALLTOALL and group else ring)
            if exposed:  # after the chunk's compute (and what ran before), on its stream
                last = self.add(
                    f"s{stage} {tag} CP {label}", task, "cp", f"s{stage}.compute", (), layers
                )
            else:  # the ring, beside the chunk's attention (then stream order)
                dep = () if side else ((ring_from,) if ring_from is not None else after)
                done = self.add(
                    f"s{stage} {tag} CP {label}", task, "cp", f"s{stage}.cp", dep, layers
                )
                side = (done,)
        if side:
            self.rings[stage] = (*self.rings.get(stage, ()), *side)
        return last

    def fsdp_layers(
        self, stage: int, chunk: int, tag: str, kind: str, after: tuple[int, ...]
    ) -> int:
        """ZeRO-3: per-layer gather → compute (→ reduce-scatter), ``fsdp_prefetch`` layers ahead.

        The chunk's parameters outside its layers (embedding, final norm, LM head) form one
        more unit, gathered before the first layer and reduce-scattered after the last. With
        parameter-gather overlap the DP stream carries, in backward, each layer's gather before
        the previous layer's reduce-scatter (the frameworks' separate gather and reduce-scatter
        streams, kept here as one stream so that the two still share the links in turn).
        Without it each gather waits for the previous layer and its reduce-scatter.
        With context parallelism the parameters are sharded over ``dp × cp`` ranks (the DP
        group: Megatron-Core's data-parallel group with CP; torchtitan's ``dp_shard_cp`` mesh)
        and each layer runs its context exchange (:meth:`context_exchange`), the rings in order
        on the stage's cp stream; the next layer waits for its layer's ring (:meth:`ring_ready`).
        """
        job = self.job
        after = self.ready(stage, after)
        order = self.chunk_order(stage, chunk, kind == "B")
        layers = len(order)
        head = self.outer_seconds(kind, stage, chunk)
        compute_stream, dp_stream = f"s{stage}.compute", f"s{stage}.dp"
        sharded = self.groups.dp.nranks > 1  # a one-rank DP group has nothing to gather
        root = self.root_param_bytes(stage, chunk) if sharded else 0.0
        if root > 0:
            root_task = CollectiveTask(Op.ALL_GATHER, root * self.weight_wire, self.groups.dp)
            gather = self.add(
                f"s{stage} {tag} FSDP root all-gather", root_task, "dp", dp_stream, after
            )
            after = (*after, gather)
        gathers: list[int] = []
        computes: list[int] = []
        last = -1
        blocking: tuple[int, ...] = ()
        if kind == "B" and (head > 0 or layers == 0):
            # the loss unit's backward runs first (the compute stream orders the layers after)
            last = self.add(
                f"s{stage} {tag} head compute", ComputeTask(head), "compute", compute_stream, after
            )
        context = job.cp > 1
        pending: tuple[int, ...] = ()  # a layer's gradients, waiting for their reduce-scatter
        pending_rs: CollectiveTask | None = None  # and that layer's reduce-scatter
        for i, layer in enumerate(order):
            k = self.kind_of(layer)
            seconds, grads = self.layer_seconds(kind, k), self.layer_param_bytes(k)
            rs_task = CollectiveTask(Op.REDUCE_SCATTER, grads * self.grad_wire, self.groups.dp)
            if not sharded:
                dep = after if i == 0 else self.ring_ready(stage)
                done, last = self.compute_with_tp(stage, tag, seconds, 1, dep, context, k)
                computes.append(done)
                continue
            ahead = self.spec.fsdp_prefetch
            if self.gather_overlap:  # gathered ``ahead`` layers early (FSDP's default: 1)
                gate = (computes[i - 1 - ahead],) if i >= 1 + ahead else after
            else:  # gather on demand, after the previous layer and its reduce-scatter
                gate = (last, *blocking) if i >= 1 else after
            gathers.append(
                self.add(
                    f"s{stage} {tag} FSDP all-gather",
                    CollectiveTask(Op.ALL_GATHER, grads * self.weight_wire, self.groups.dp),
                    "dp",
                    dp_stream,
                    gate,
                )
            )
            if pending and pending_rs is not None:
                # BACKWARD_PRE (FSDP's default; FSDP2 and Megatron-FSDP use separate streams):
                # the next layer's gather is issued before the previous layer's reduce-scatter
                blocking = self.reduce_scatter(
                    stage, f"s{stage} {tag} FSDP reduce-scatter", pending_rs, pending
                )
                pending = ()
            dep = (gathers[i],) + (after if i == 0 else self.ring_ready(stage))
            done, last = self.compute_with_tp(stage, tag, seconds, 1, dep, context, k)
            computes.append(done)
            if kind == "B":
                if self.gather_overlap:
                    pending, pending_rs = (last,), rs_task
                else:
                    blocking = self.reduce_scatter(
                        stage, f"s{stage} {tag} FSDP reduce-scatter", rs_task, (last,)
                    )
        if pending and pending_rs is not None:
            self.reduce_scatter(stage, f"s{stage} {tag} FSDP reduce-scatter", pending_rs, pending)
        if kind == "F" and (head > 0 or layers == 0):
            last = self.add(
                f"s{stage} {tag} head compute",
                ComputeTask(head),
                "compute",
                compute_stream,
                after if layers == 0 else (),
            )
        if kind == "B" and root > 0:
            root_task = CollectiveTask(Op.REDUCE_SCATTER, root * self.grad_wire, self.groups.dp)
            self.reduce_scatter(
                stage, f"s{stage} {tag} FSDP root reduce-scatter", root_task, (last,)
            )
        return last

    def kind_model(self, k: int) -> ModelSpec:
        """The layer model of the plan's kind ``k`` (:attr:`LayerPlan.models`: a variant's kinds,
        recomputation stopped short or BF16 end layers, repeat the model's own, in order)."""
        return self.plan.models[k]

    def layer_param_bytes(self, k: int) -> float:
        """16-bit bytes per GPU of one layer of kind ``k`` (split over TP)."""
        return self.kind_model(k).layer_params() / self.job.tp * self.job.element_bytes

    def root_param_bytes(self, stage: int, chunk: int | None = None) -> float:
        """Bytes per GPU of the stage's (chunk's) tensors outside its transformer layers and
        its multi-token-prediction modules (which ZeRO-3 gathers as layers,
        :meth:`chunk_order`)."""
        n = self.job.model.n_layers
        tensors = _stage_tensors(self.job, stage, chunk)
        return sum(b for name, layer, b in tensors if not 0 <= layer < n and ".mtp." not in name)

    # ---- pipeline sends ------------------------------------------------------------------

    def peers(self, src: int, dst: int) -> Group:
        """Two-rank group between stages ``src`` and ``dst`` (adjacent, or the chunk wrap); its
        placement pairs every rank of stage ``src`` with the same position in stage ``dst``."""
        job = self.job
        k = job.tp * job.grad_dp
        if dst == src + 1:
            group = pipeline_peer_group(job.tp, job.grad_dp, self.domain, src)
        elif dst == src - 1:
            group = pipeline_peer_group(job.tp, job.grad_dp, self.domain, dst)
        else:
            # interleaving wraps from the last stage to the first (or back): far apart
            same = k * job.pp <= self.domain
            group = Group("pp", 1, 2) if same else Group("pp", 2, 1)
        placement = Placement(2, (dst - src) * k, 1, tuple(range(src * k, (src + 1) * k)))
        return replace(with_nccl_options(group, job), placement=placement)

    def p2p(self, kind: str, stage: int, chunk: int, j: int, after: int) -> None:
        pp, v = self.job.pp, self.v
        if kind == "F":
            if stage == pp - 1 and chunk == v - 1:
                return  # the model's output: nothing to send
            dst = (stage + 1) % pp
        else:
            if stage == 0 and chunk == 0:
                return
            dst = (stage - 1) % pp
        task = CollectiveTask(Op.SENDRECV, self.p2p_bytes, self.peers(stage, dst))
        name = f"s{stage} PP send {'activations' if kind == 'F' else 'gradients'}"
        self.sent[(kind, stage, chunk, j)] = self.add(name, task, "pp", f"s{stage}.pp", (after,))

    def waits_for(
        self, kind: str, stage: int, chunk: int, j: int
    ) -> tuple[str, int, int, int] | None:
        """The send an operation needs before it can start, or None."""
        pp, v = self.job.pp, self.v
        if kind == "F":
            if stage > 0:
                return ("F", stage - 1, chunk, j)
            return ("F", pp - 1, chunk - 1, j) if chunk > 0 else None
        if stage < pp - 1:
            return ("B", stage + 1, chunk, j)
        return ("B", 0, chunk + 1, j) if chunk < v - 1 else None

    # ---- one forward or backward of one chunk --------------------------------------------

    def forward(self, stage: int, chunk: int, j: int) -> None:
        need = self.waits_for("F", stage, chunk, j)
        after = (self.sent[need],) if need else ()
        tag = self.tag("F", chunk, j)
        if self.spec.zero_stage == 3:
            last = self.fsdp_layers(stage, chunk, tag, "F", after)
        else:
            self.ep_beside = self.ep_share if ("F", chunk, j) in self.paired[stage] else 0.0
            last = self.chunk_work(stage, chunk, tag, "F", after)
            self.ep_beside = 0.0
        self.p2p("F", stage, chunk, j, last)

    def backward(self, stage: int, chunk: int, j: int) -> None:
        need = self.waits_for("B", stage, chunk, j)
        after = (self.sent[need],) if need else ()
        tag = self.tag("B", chunk, j)
        final = j == self.job.micro_batches - 1
        self.ep_beside = self.ep_share if ("B", chunk, j) in self.paired[stage] else 0.0
        if self.spec.zero_stage == 3:
            last = self.fsdp_layers(stage, chunk, tag, "B", after)
        elif final:
            last = self.last_backward(stage, chunk, after)
        else:
            last = self.chunk_work(stage, chunk, tag, "B", after)
            if self.spec.zero_stage == 2:
                # Gradients are sharded: every micro-batch reduce-scatters into the shard
                # (ZeRO-2; Rajbhandari et al. SC'20 §5.2), under the next micro-batch — or,
                # without overlap, before it.
                buckets = self.dp_buckets(stage, chunk, {-1: last}, f"{tag} ")
                if not self.grad_overlap:  # (beside what else the next pass waits for)
                    self.blocking[stage] = (*self.blocking.get(stage, ()), *buckets)
        self.ep_beside = 0.0
        if final and chunk == 0:
            self.marks[stage].last_backward_end = last
        self.p2p("B", stage, chunk, j, last)

    def last_backward(self, stage: int, chunk: int, after: tuple[int, ...]) -> int:
        """Layer-by-layer backward of a chunk's last micro-batch, DP buckets overlapping it."""
        job = self.job
        n_layers = job.model.n_layers
        after = self.ready(stage, after)
        done_after: dict[int, int] = {}
        last = -1
        head_done = -1
        head = self.outer_seconds("B", stage, chunk)
        if head > 0:  # the non-layer units' backward comes first (the loss unit's gradients
            # are ready after it; the embedding's buckets wait for the end, done_after[-1])
            name = f"s{stage} B-last head compute"
            last = head_done = self.add(
                name, ComputeTask(head), "compute", f"s{stage}.compute", after
            )
            after = ()
        for layer in self.chunk_order(stage, chunk, backward=True):
            k = self.kind_of(layer)
            last = self.compute_with_tp(
                stage, f"B-last layer {layer}", self.layer_seconds("B", k), 1, after,
                self.job.cp > 1, k,
            )[1]  # fmt: skip
            after = self.ring_ready(stage)
            if layer >= n_layers:  # a multi-token-prediction module: with the loss unit's
                head_done = last
                continue
            done_after[layer] = last
            if head_done < 0:
                head_done = last
        if last < 0:  # nothing to compute (an embedding-only chunk): anchor the buckets
            last = self.add(
                f"s{stage} B-last compute", ComputeTask(0.0), "compute", f"s{stage}.compute", after
            )
            head_done = last
        done_after[n_layers] = head_done
        done_after[-1] = last
        self.dp_buckets(stage, chunk, done_after)
        return last

    def bucket_caps(self, chunk: int) -> tuple[float, float]:
        """(cap, first cap) of a model chunk's gradient buckets, in 16-bit parameter bytes.

        Megatron-Core's rule: ``max(40M, 1M × DP)`` parameters a bucket
        (:data:`MEGATRON_BUCKET_PARAMS`) unless ``job.ddp_bucket`` sets the cap (with
        ``job.ddp_first_bucket`` for the first bucket: PyTorch DDP's 25 MiB and 1 MiB), for the
        first model chunk only: each later chunk of an interleaved pipeline reduces in one bucket
        (``disable_bucketing=(model_chunk_idx > 0)`` in Megatron-LM's ``get_model`` and NeMo 2's
        ``MegatronParallel``: "communication for these model chunks is overlapped with compute
        anyway"), and so does every chunk without ``overlap_grad_reduce`` (``bucket_size`` set to
        None).
        """
        spec, job = self.spec, self.job
        if chunk > 0 or not self.grad_overlap:
            return math.inf, math.inf
        if spec.ddp_bucket is not None:
            cap = float(spec.ddp_bucket)
        else:
            cap = float(
                max(MEGATRON_BUCKET_PARAMS, MEGATRON_BUCKET_PARAMS_PER_DP_RANK * job.dp)
                * job.element_bytes
            )
        first = spec.ddp_first_bucket
        return cap, (cap if first is None else float(first))

    def dp_buckets(
        self, stage: int, chunk: int, done_after: dict[int, int], tag: str = ""
    ) -> tuple[int, ...]:
        """Gradient buckets of one chunk's backward: dense over DP, expert over expert-DP.

        ``done_after`` maps a layer to the phase after which its gradients are ready (``-1``: the
        end of the backward). Without overlap every bucket waits for the whole backward. Each
        model chunk has its own buckets, as Megatron-LM keeps one DDP buffer per chunk.
        Buckets are cut from the parameters' 16-bit bytes (the cap counts those, so the
        ZeRO all-gathers get the same buckets, as Megatron-Core's buckets hold parameters); each
        reduces :attr:`~commwall.workload.job.Job.grad_reduce_bytes` an element, fp32 by default
        for bf16 and fp8.
        """
        op = Op.ALL_REDUCE if self.spec.zero_stage == 0 else Op.REDUCE_SCATTER
        label = "all-reduce" if op is Op.ALL_REDUCE else "reduce-scatter"
        added: list[int] = []
        for size, layer, group, kind in self.chunk_buckets(stage, chunk, ("DP", "expert-DP")):
            dep = done_after.get(layer, done_after[-1]) if self.grad_overlap else done_after[-1]
            task = CollectiveTask(op, size * self.grad_wire, group)
            added += self.reduce_scatter(
                stage, f"s{stage} {tag}{kind} bucket {label}", task, (dep,)
            )
        return tuple(added)

    def reduce_scatter(
        self, stage: int, name: str, task: CollectiveTask, after: tuple[int, ...]
    ) -> tuple[int, ...]:
        """A gradient reduction ``task`` on the stage's DP stream after ``after``, and with
        hybrid sharding (``job.dp_replicate``) a reduce-scatter's shard — ``1/n`` of its bytes
        for its ``n``-rank shard group, dense or expert — then all-reduced over the replicas
        (FSDP2 HSDP's all-reduce of the reduce-scattered gradient; Megatron-Core's
        inter-instance all-reduce after the intra-instance reduce-scatter,
        ``param_and_grad_buffer.py``, one group for the dense and the expert gradients,
        ``get_inter_distributed_optimizer_instance_group``): the phases added."""
        index = self.add(name, task, "dp", f"s{stage}.dp", after)
        if self.groups.dpr.nranks == 1 or task.op is not Op.REDUCE_SCATTER:
            return (index,)
        shard = CollectiveTask(Op.ALL_REDUCE, task.nbytes / task.group.nranks, self.groups.dpr)
        replicas = name.replace(" reduce-scatter", " replica all-reduce")
        return index, self.add(replicas, shard, "dp", f"s{stage}.dp", (index,))

    def chunk_buckets(
        self, stage: int, chunk: int, kinds: tuple[str, str]
    ) -> Iterator[tuple[float, int, Group, str]]:
        """(16-bit bytes, layer that fills it, group, kind) of each bucket of one chunk: dense
        gradients over DP, expert ones over expert-DP, named by ``kinds``."""
        for size, layer, _, group, expert in self.chunk_bucket_members(stage, chunk):
            yield size, layer, group, kinds[expert]

    def chunk_bucket_members(
        self, stage: int, chunk: int
    ) -> Iterator[tuple[float, int, list[int], Group, int]]:
        """:meth:`chunk_buckets` with each bucket's tensors (indices into the chunk's dense or
        expert gradients, :func:`split_expert_gradients`) and 0 for dense, 1 for expert."""
        grads = split_expert_gradients(self.job, stage, chunk)
        for expert, group in enumerate((self.groups.dp, self.groups.edp)):
            if not grads[expert] or group.nranks == 1:
                continue
            for members in ddp_bucket_members(grads[expert], *self.bucket_caps(chunk)):
                yield (*_bucket(grads[expert], members), members, group, expert)

    # ---- the whole step -------------------------------------------------------------------

    def build(self, forward_only: bool = False) -> StepPlan:
        """The step's schedule; ``forward_only``: the forwards alone, in the order the
        schedule runs them (Megatron-Core's ``forward_only`` pass, an evaluation step: every
        forward is a warm-up one), with no backward, gradient reduction, optimizer or
        parameter gather."""
        job = self.job
        m, pp = job.micro_batches, job.pp
        self.forward_only = forward_only
        queues = [ops_1f1b(s, pp, m, self.v) for s in range(pp)]
        if forward_only:
            queues = [[op for op in q if op[0] == "F"] for q in queues]
        if self.spec.moe_a2a_overlap:
            self.paired = [paired_passes(q) for q in queues]
            self.ep_share = 1.0 if self.spec.moe_sync_free else EP_OVERLAP_SYNCED
        cursor = [0] * pp
        remaining = sum(len(q) for q in queues)
        while remaining:
            progressed = False
            for s in range(pp):
                while cursor[s] < len(queues[s]):
                    kind, chunk, j = queues[s][cursor[s]]
                    need = self.waits_for(kind, s, chunk, j)
                    if need is not None and need not in self.sent:
                        break
                    (self.forward if kind == "F" else self.backward)(s, chunk, j)
                    cursor[s] += 1
                    remaining -= 1
                    progressed = True
            if not progressed:
                raise RuntimeError("pipeline schedule deadlocked (a bug in commwall)")
        if forward_only:
            return StepPlan(self.schedule, self.groups, self.marks, self.t_f, self.t_b, 0.0)
        self.optimizer()
        # ZeRO-1/2 parameter gathers of a later model chunk hide under the next step's forwards
        # before it; the first chunk's are waited for where used (StageMarks.param_chain).
        hide = self.t_f if self.gather_overlap else 0.0
        return StepPlan(
            self.schedule,
            self.groups,
            self.marks,
            self.t_f,
            self.t_b,
            hide,
            self.spec.align_param_gather,
        )

    def optimizer(self) -> None:
        job, spec = self.job, self.spec
        dp_streams: dict[str, list[int]] = {}
        for i, p in enumerate(self.schedule.phases):
            if p.stream.endswith(".dp"):
                dp_streams.setdefault(p.stream, []).append(i)
        step_bytes = job.adam.step_bytes  # a parameter's, the optimizer's settings
        for s in range(job.pp):
            dense, expert = split_expert_gradients(job, s)
            dense_params = sum(b for _, b in dense) / job.element_bytes
            expert_params = sum(b for _, b in expert) / job.element_bytes
            # Megatron-Core zeroes the whole gradient buffer (fp32 for fp32 reduction) when the
            # next iteration starts (DistributedDataParallel.zero_grad_buffer: grad_data.zero_(),
            # called by train_step before the forward): a write stream, ZeRO-1/2 unsharded
            # (MIT ORCD's one-B200 GPT 7B: 27.4 GB, 4.3 ms of the 5.7 ms its log's iteration
            # time leaves beside forward-backward and optimizer). ZeRO-3 shards its gradients.
            zeroed = 0.0
            if spec.zero_stage < 3:
                zeroed = (dense_params + expert_params) * job.grad_reduce_bytes
            if spec.zero_stage >= 1:
                dense_params /= self.groups.dp.nranks
                expert_params /= self.groups.edp.nranks
            step = (dense_params + expert_params) * step_bytes
            seconds = (step / OPTIMIZER_STREAM_SHARE + zeroed) / self.hbm_bandwidth
            dp_phases = tuple(dp_streams.get(f"s{s}.dp", ()))
            after = (*dp_phases, self.marks[s].last_backward_end)
            self.marks[s].optimizer = self.add(
                f"s{s} optimizer step", ComputeTask(seconds), "optimizer", f"s{s}.compute", after
            )
            if spec.zero_stage not in (1, 2):
                continue
            # the gathers follow the gradient buckets, chunk by chunk (one buffer each)
            for chunk in range(self.v):
                self.param_gathers(s, chunk)

    def param_gathers(self, stage: int, chunk: int) -> None:
        """ZeRO-1/2 parameter all-gathers of one chunk's buckets, after the optimizer step;
        the first chunk's with where the next step's first forward first uses each bucket
        (:attr:`StageMarks.param_chain`)."""
        marks = self.marks[stage]
        first_use = self.tensor_first_use(stage, chunk) if chunk == 0 else None
        for size, _, members, group, expert in self.chunk_bucket_members(stage, chunk):
            index = self.add(
                f"s{stage} {('ZeRO', 'expert ZeRO')[expert]} parameter all-gather",
                CollectiveTask(Op.ALL_GATHER, size * self.weight_wire, group),
                "dp",
                f"s{stage}.dp",
                (marks.optimizer,),
            )
            marks.param_gather.append(index)
            if first_use is not None:  # the bucket is first used with its first-used tensor
                marks.param_chain.append((index, min(first_use[expert][i] for i in members)))

    def tensor_first_use(self, stage: int, chunk: int) -> tuple[list[float], list[float]]:
        """For each of the chunk's gradient tensors, split as :func:`split_expert_gradients`
        splits them, the seconds of the chunk's forward compute before it is used: tensors are
        used in the model's tensor order (:meth:`ModelSpec.gradient_tensors`: the embedding,
        each layer's, the final norm and LM head), each layer's forward split over its tensors
        by their bytes, the embedding's and the loss unit's over theirs. A first order: a layer's GEMMs
        do FLOPs in proportion to their weights, but its attention core has none, and its
        norms, which that order lists after the layer's weights, come first in the forward
        (Transformer Engine fuses each with the GEMM it feeds); they weigh a few kilobytes."""
        job = self.job
        tensors = _stage_tensors(job, stage, chunk)
        layer_bytes: dict[int, float] = {}
        for _, layer, nbytes in tensors:
            layer_bytes[layer] = layer_bytes.get(layer, 0.0) + nbytes
        u = self.units
        where = job.virtual_stage(stage, chunk)
        mtp = job.model.mtp_layers * (u.layer_forward + u.mtp_forward)  # its modules' tensors
        outer = {-1: u.embed_forward if where.embedding else 0.0,
                 job.model.n_layers: u.head_forward + mtp if where.loss else 0.0}  # fmt: skip
        starts: list[float] = []
        clock = 0.0
        for _, layer, nbytes in tensors:
            starts.append(clock)
            whole = outer.get(layer)
            if whole is None:
                whole = self.plan.units[self.kind_of(layer)].layer_forward
            if layer_bytes[layer] > 0:
                clock += whole * nbytes / layer_bytes[layer]
        return _split_experts(job, tensors, starts)


def build_step(job: Job, cluster: Cluster, *, forward_only: bool = False) -> StepPlan:
    """Compile ``job`` on ``cluster`` into a step schedule (``forward_only``: an evaluation
    step's forwards alone, :meth:`_Builder.build`).

    The schedule depends on the cluster only through its scale-up domain size and the GPU's
    memory bandwidth, so designs that differ elsewhere (the fabric, its taper, the switches: a
    sweep's usual axes) share one plan, built once and kept in a cache bounded by
    :data:`PLAN_CACHE_PHASES`. The plan returned is shared: treat it as read-only.
    """
    key = (job, cluster.scale_up_domain, cluster.gpu.hbm_bandwidth, forward_only)
    plan = _PLANS.pop(key, None)
    if plan is None:
        plan = _Builder(job, cluster.scale_up_domain, cluster.gpu.hbm_bandwidth).build(forward_only)
    _PLANS[key] = plan  # most recently used last
    while (
        len(_PLANS) > 1 and sum(len(p.schedule.phases) for p in _PLANS.values()) > PLAN_CACHE_PHASES
    ):
        _PLANS.pop(next(iter(_PLANS)))
    return plan


#: Phases the plan cache may hold in all (~0.5 KB each: ~200 MB at most).
PLAN_CACHE_PHASES: Final = 400_000
_PLANS: OrderedDict[tuple[Job, int, float, bool], StepPlan] = OrderedDict()
