"""A training job resolved against a cluster: parallel degrees checked, sizes derived.

:func:`resolve_job` turns a :class:`~commwall.scenario.JobSpec` into a :class:`Job` or raises
:class:`~commwall.scenario.ScenarioError` with one line per problem, each naming the field
(``job.tp``), the value and what is allowed.
"""

from __future__ import annotations

import bisect
import functools
import math
from dataclasses import dataclass, replace

from commwall.catalog import CatalogError
from commwall.cluster import Cluster
from commwall.scenario import (
    NCCL_HYBRID_COMMUNICATORS,
    NCCL_MODELLED_COMMUNICATORS,
    JobSpec,
    ScenarioError,
)
from commwall.workload.compute import ATTENTION_FP8, Device, attention_kernel, device_for
from commwall.workload.hf_config import ModelDefinitionError, resolve_model
from commwall.workload.host import host_wait, paired_pass_waits
from commwall.workload.memory import AdamState, adam_state
from commwall.workload.models import ModelSpec, UnknownModelError
from commwall.workload.pipeline_layout import LayoutError, VirtualStage, even_layout, parse_layout

#: Micro-batches × stages the step schedule will hold (each slot is a few phases).
MAX_PIPELINE_SLOTS = 50_000

#: Bytes per element of activations, parameters and gradients in mixed precision (bf16/fp16).
HALF_BYTES = 2
#: Bytes per communicated element by matmul precision: TF32 training keeps fp32 tensors; FP8
#: and NVFP4 recipes (Transformer Engine) still keep and exchange bf16 activations and gradients.
ELEMENT_BYTES = {"bf16": 2, "fp16": 2, "fp8": 2, "fp4": 2, "tf32": 4}
#: Bytes per element of a sequence-parallel all-gather of a GEMM input that Transformer Engine
#: quantizes before gathering: FP8 data, or NVFP4's E2M1 data (half a byte) and its E4M3 scale
#: per 16 elements (``_all_gather_nvfp4`` gathers the row-wise data and scales:
#: ``transformer_engine/pytorch/distributed.py`` and ``module/linear.py`` @v2.8, the TE of
#: MLPerf Training v5.1's NeMo 25.09 containers).
LOW_PRECISION_GATHER_BYTES = {"fp8": 1.0, "fp4": 0.5 + 1.0 / 16.0}


def cp_a2a_size(spec: JobSpec) -> int:
    """Ranks of each context-parallel all-to-all group ``spec`` asks for: ``cp`` with ``a2a``,
    ``cp_a2a`` with ``a2a+p2p``, 1 with ``p2p`` and ``all_gather`` (no all-to-all)."""
    if spec.cp_comm == "a2a":
        return spec.cp
    return (spec.cp_a2a or 1) if spec.cp_comm == "a2a+p2p" else 1


@dataclass(frozen=True)
class Job:
    """A job with every degree and size fixed."""

    spec: JobSpec
    model: ModelSpec
    tp: int
    pp: int
    dp: int
    ep: int
    micro_batches: int
    peak_flops: float
    virtual_stages: int = 1
    device: Device | None = None
    cp: int = 1
    etp: int = 0
    """Expert tensor parallelism (``job.expert_tp``; 0: the same as ``tp``)."""
    layout: tuple[VirtualStage, ...] = ()
    """What each virtual stage ``chunk·pp + stage`` holds (:mod:`~commwall.workload.pipeline_layout`);
    empty: Megatron's default (:func:`~commwall.workload.pipeline_layout.even_layout`)."""
    paired_waits: bool = False
    """A MoE pass paired under ``job.moe_a2a_overlap`` still waits on the host: the GPU's host
    is a Grace CPU (:func:`commwall.workload.host.paired_pass_waits`)."""

    @property
    def expert_tp(self) -> int:
        """Ranks that split each expert's GEMMs (Megatron-Core's expert TP; ``tp`` by default)."""
        return self.etp or self.tp

    @property
    def expert_dp(self) -> int:
        """Ranks that hold the same experts: ``tp·cp·dp / (expert_tp·ep)``."""
        return self.tp * self.grad_dp // (self.expert_tp * self.ep)

    @property
    def n_chunks(self) -> int:
        """Model chunks (virtual pipeline stages): ``pp × virtual_stages``."""
        return self.pp * self.virtual_stages

    @functools.cached_property
    def stages(self) -> tuple[VirtualStage, ...]:
        """The layout in force: the job's, or the even split with E first and L last."""
        return self.layout or even_layout(self.model.n_layers, self.n_chunks)

    @functools.cached_property
    def _starts(self) -> tuple[int, ...]:
        starts, total = [], 0
        for vs in self.stages:
            starts.append(total)
            total += vs.layers
        return tuple(starts)

    def virtual_stage(self, stage: int, chunk: int) -> VirtualStage:
        """What model chunk ``chunk`` on ``stage`` holds (virtual stage ``chunk·pp + stage``)."""
        return self.stages[chunk * self.pp + stage]

    def chunk_layers(self, stage: int, chunk: int) -> range:
        """Layers of model chunk ``chunk`` on ``stage`` — virtual stage ``chunk·pp + stage``:
        by default spread as evenly as integers allow (virtual stage ``k`` of ``n`` holds
        ``[⌊k·L/n⌋, ⌊(k+1)·L/n⌋)``), else as ``job.pipeline_layout`` says.
        """
        k = chunk * self.pp + stage
        start = self._starts[k]
        return range(start, start + self.stages[k].layers)

    def layer_owner(self, layer: int) -> tuple[int, int]:
        """(stage, chunk) that holds ``layer`` (the inverse of :meth:`chunk_layers`)."""
        virtual = bisect.bisect_right(self._starts, layer) - 1
        while self.stages[virtual].layers == 0:  # an empty stage shares its start
            virtual -= 1
        return virtual % self.pp, virtual // self.pp

    @property
    def layers_per_stage(self) -> int:
        """Transformer layers on the most loaded pipeline stage (all its chunks)."""
        return max(
            sum(len(self.chunk_layers(s, c)) for c in range(self.virtual_stages))
            for s in range(self.pp)
        )

    @property
    def cp_a2a(self) -> int:
        """Ranks of each context-parallel all-to-all group: ``cp`` with ``a2a``, ``cp_a2a``
        with ``a2a+p2p``, 1 with ``p2p`` and ``all_gather`` (no all-to-all); the other
        ``cp / cp_a2a`` ranks pass K/V in a ring."""
        return cp_a2a_size(self.spec)

    @property
    def n_gpus(self) -> int:
        """GPUs the job uses."""
        return self.tp * self.cp * self.pp * self.dp

    @property
    def grad_dp(self) -> int:
        """Ranks that hold the same parameters and reduce their gradients: ``dp × cp``
        (Megatron-Core's data-parallel group with context parallelism)."""
        return self.dp * self.cp

    @property
    def nccl_communicators_read(self) -> tuple[str, ...]:
        """Megatron-Core communicators whose NCCL options the step's collectives take: with
        hybrid sharding the shard group's and the replicas' instead of ``dp_cp``."""
        if self.spec.dp_replicate == 1:
            return NCCL_MODELLED_COMMUNICATORS
        plain = tuple(n for n in NCCL_MODELLED_COMMUNICATORS if n != "dp_cp")
        return plain + NCCL_HYBRID_COMMUNICATORS

    @property
    def expert_dp_shard(self) -> int:
        """Ranks that shard the experts' ZeRO state: :attr:`expert_dp` over
        ``job.dp_replicate`` (Megatron-Core's intra-instance expert-data-parallel group)."""
        return self.expert_dp // self.spec.dp_replicate

    @property
    def dp_shard(self) -> int:
        """Ranks that shard ZeRO's state among them: :attr:`grad_dp` over
        ``job.dp_replicate`` (all of them by default; hybrid sharding below)."""
        return self.grad_dp // self.spec.dp_replicate

    @property
    def tokens_per_step(self) -> int:
        """Tokens per optimizer step."""
        return self.spec.global_batch * self.spec.seq_len

    @property
    def activation_bytes(self) -> float:
        """One micro-batch's hidden-state tensor on one GPU, ``b·(s/cp)·h``, bytes."""
        tokens = self.spec.micro_batch * self.spec.seq_len / self.cp
        return tokens * self.model.hidden * self.element_bytes

    @property
    def element_bytes(self) -> int:
        """Bytes per activation, parameter and gradient element exchanged (:data:`ELEMENT_BYTES`)."""
        return ELEMENT_BYTES[self.spec.precision]

    @property
    def grad_reduce_bytes(self) -> int:
        """Bytes per gradient element a DP or ZeRO/FSDP reduction moves: 4 when gradients are
        reduced in fp32 (``job.grad_reduce_in_fp32``; by default for bf16 and fp8, as
        Megatron-LM's ``arguments.py`` sets ``accumulate_allreduce_grads_in_fp32`` for bf16
        unless ``--grad-reduce-in-bf16``), else :attr:`element_bytes`."""
        fp32 = self.spec.grad_reduce_in_fp32
        if fp32 is None:
            fp32 = self.spec.precision in ("bf16", "fp8", "fp4")
        return 4 if fp32 else self.element_bytes

    @property
    def cudnn(self) -> tuple[int, int] | None:
        """``job.cudnn`` as (major, minor), or None (the newest measured release)."""
        if self.spec.cudnn is None:
            return None
        major, minor = self.spec.cudnn.split(".")[:2]
        return int(major), int(minor)

    @property
    def tp_gather_bytes(self) -> float:
        """Bytes per element of a sequence-parallel all-gather of a GEMM input
        (:data:`LOW_PRECISION_GATHER_BYTES` under FP8 and NVFP4, else :attr:`element_bytes`)."""
        return LOW_PRECISION_GATHER_BYTES.get(self.spec.precision, float(self.element_bytes))

    @property
    def param_bytes(self) -> int:
        """Bytes per weight element held and all-gathered: 1 with ``job.fp8_param_gather``
        (Megatron-Core ``--fp8-param-gather``: "Keep the compute param in fp8 (do not use any
        other intermediate dtype) and perform the param all-gather in fp8", arguments.py),
        else :attr:`element_bytes`."""
        return 1 if self.spec.fp8_param_gather else self.element_bytes

    @property
    def adam(self) -> AdamState:
        """Adam's bytes a parameter under the job's optimizer settings
        (:func:`~commwall.workload.memory.adam_state`: ``job.precision_aware_optimizer`` and its
        dtypes; the parameters in the training type, FP8 with ``job.fp8_param_gather``)."""
        spec = self.spec
        if spec.precision == "tf32":
            dtype = "fp32"
        elif spec.fp8_param_gather:
            dtype = "fp8"
        else:
            dtype = "fp16" if spec.precision == "fp16" else "bf16"
        scaled = spec.precision == "fp4" or (
            spec.precision == "fp8" and spec.fp8_recipe != "delayed"
        )
        return adam_state(
            precision_aware=spec.precision_aware_optimizer,
            exp_avg_dtype=spec.exp_avg_dtype,
            exp_avg_sq_dtype=spec.exp_avg_sq_dtype,
            main_params_dtype=spec.main_params_dtype,
            store_param_remainders=spec.store_param_remainders,
            param_dtype=dtype,
            scaled_fp8=scaled,
            grad_bytes=self.grad_reduce_bytes,
        )

    @property
    def model_flops_per_step(self) -> float:
        """Model FLOPs of one step (forward + backward, no recomputation) — the MFU numerator."""
        return self.model.training_flops_per_token(self.spec.seq_len) * self.tokens_per_step

    @property
    def host_wait(self) -> float:
        """Seconds each host-synchronised MoE layer forward leaves the GPU waiting on the host
        (:func:`commwall.workload.host.host_wait`: ``job.moe_host_wait``, else the measured
        gap); 0 for a dense model or a sync-free dispatch."""
        spec = self.spec
        return host_wait(
            self.model.n_experts, self.ep, spec.precision,
            sync_free=spec.moe_sync_free, measured=spec.moe_host_wait,
        )  # fmt: skip

    @property
    def summary(self) -> dict[str, object]:
        """A flat description for tables and JSON."""
        return {
            "model": self.model.name,
            "params": self.model.total_params(),
            "tp": self.tp,
            "cp": self.cp,
            "cp_comm": self.spec.cp_comm,
            "cp_a2a": self.cp_a2a,
            "pp": self.pp,
            "virtual_stages": self.virtual_stages,
            "dp": self.dp,
            "dp_replicate": self.spec.dp_replicate,
            "ep": self.ep,
            "experts": self.model.n_experts,
            "expert_tp": self.expert_tp,
            "moe_dispatcher": self.spec.moe_dispatcher if self.ep > 1 else None,
            "moe_a2a_overlap": (
                ("sync-free" if self.spec.moe_sync_free else "host-synchronised")
                if self.spec.moe_a2a_overlap
                else None
            ),
            "moe_sync_free": self.spec.moe_sync_free if self.model.is_moe else None,
            "moe_host_wait": self.host_wait if self.model.is_moe else None,
            "moe_host_wait_set": self.spec.moe_host_wait is not None,
            "global_batch": self.spec.global_batch,
            "micro_batch": self.spec.micro_batch,
            "micro_batches": self.micro_batches,
            "seq_len": self.spec.seq_len,
            "precision": self.spec.precision,
            "bf16_end_layers": list(self.spec.bf16_end_layers),
            "zero_stage": self.spec.zero_stage,
            "compute_efficiency": self.spec.compute_efficiency,
            "compute_model": "flat" if self.device is None else "kernels",
            "compute_scale": self.spec.compute_scale,
            "attention": self.spec.attention,
            "sliding_window": self.model.sliding_window,
            "sliding_window_layers": self.model.sliding_window_layers,
            "attention_chunk": self.model.attention_chunk,
            "attention_chunk_layers": self.model.attention_chunk_layers,
            "yarn_rope": self.model.yarn_rope,
            "mtp_layers": self.model.mtp_layers,
            "mtp_shared": self.model.mtp_shared,
            "recompute": self.spec.recompute,
            "recompute_modules": list(recompute_modules(self.spec)) or None,
            "recompute_method": self.spec.recompute_method
            if self.spec.recompute == "full"
            else None,
            "recompute_num_layers": self.spec.recompute_num_layers,
            "attention_kernel": (
                None
                if self.device is None
                else attention_kernel(self.device.name, self.spec.attention, self.spec.cudnn)
            ),
            "cross_entropy": self.spec.cross_entropy,
            "fp8_recipe": self.spec.fp8_recipe,
            "fp8_attention": self.spec.fp8_attention,
            "attention_dropout": self.spec.attention_dropout,
            "fp8_output_proj": self.spec.fp8_output_proj,
            "te_op_fuser": self.spec.te_op_fuser,
            "tp_overlap_cfg": {
                name: entry.model_dump(exclude_none=True)
                for name, entry in self.spec.tp_overlap_cfg.given().items()
            }
            or None,
            "nccl_communicators": {
                name: options.model_dump(exclude_none=True)
                for name, options in self.spec.nccl_communicators.given().items()
            }
            or None,
            "nccl_communicators_not_read": [
                name
                for name in self.spec.nccl_communicators.given()
                if name not in self.nccl_communicators_read
            ]
            or None,
            "cudnn": self.spec.cudnn,
            "grad_reduce_bytes": self.grad_reduce_bytes,
            "param_bytes": self.param_bytes,
            "optimizer_state_bytes": self.adam.state,
            "precision_aware_optimizer": self.spec.precision_aware_optimizer,
        }


def _divisors(n: int) -> str:
    return ", ".join(str(d) for d in range(1, n + 1) if n % d == 0)


def recompute_modules(spec: JobSpec) -> tuple[str, ...]:
    """What each layer's backward re-runs under ``recompute: selective`` (``job.recompute_modules``;
    Megatron-Core's default ``core_attn`` when not given); none for other recompute settings."""
    if spec.recompute != "selective":
        return ()
    return tuple(spec.recompute_modules or ("core_attn",))


def recomputed_layers(spec: JobSpec) -> int | None:
    """How many layers of each model chunk a full recomputation re-runs: ``recompute_num_layers``
    with ``recompute_method: block`` (Megatron-Core's ``--recompute-method block``); None for
    every layer (``uniform``, and every other recompute setting)."""
    if spec.recompute == "full" and spec.recompute_method == "block":
        return spec.recompute_num_layers
    return None


def _recompute_module_errors(spec: JobSpec, model: ModelSpec) -> list[str]:
    """``job.recompute_modules`` (and ``recompute_method``/``recompute_num_layers``) that the
    recompute setting or the model cannot use."""
    errors = []
    if spec.recompute != "full" and (
        spec.recompute_num_layers is not None or spec.recompute_method != "uniform"
    ):
        errors.append(
            f"job.recompute_method: {spec.recompute_method} with recompute_num_layers "
            f"{spec.recompute_num_layers} given with recompute {spec.recompute}; they choose "
            "which layers a full recomputation re-runs: set recompute: full or leave them out"
        )
    elif spec.recompute_method == "block" and spec.recompute_num_layers is None:
        errors.append(
            "job.recompute_num_layers: missing; recompute_method block recomputes that many "
            "layers of each model chunk (Megatron-Core's --recompute-num-layers)"
        )
    if spec.recompute == "selective_op" and not _plain_dense(model):
        errors.append(
            f"job.recompute: selective_op is modelled for dense transformer layers (attention "
            f"and an MLP in each, no multi-head latent attention, no linear biases: a biased "
            f"linear layer runs aten.addmm, which torchtitan's policy does not count), which "
            f"{model.name} does not have; allowed here: none, selective or full"
        )
    per_rank = max(1, model.n_layers // spec.pp)
    if spec.recompute_num_layers is not None and spec.recompute_num_layers > per_rank:
        errors.append(
            f"job.recompute_num_layers: {spec.recompute_num_layers} exceeds the {per_rank} "
            f"layers of a pipeline stage ({model.name}'s {model.n_layers} over pp {spec.pp}); "
            f"allowed: 1 to {per_rank}, as Megatron-Core checks"
        )
    return errors + _module_errors(spec, model)


def _replicate_errors(spec: JobSpec, model: ModelSpec, grad_dp: int) -> list[str]:
    """What ``job.dp_replicate`` cannot run with: a count that does not divide the ranks
    reducing gradients (and, with experts, the expert-data-parallel ranks, as Megatron-Core
    asserts), a shard group of one rank, or no ZeRO sharding to replicate."""
    r = spec.dp_replicate
    errors = []
    etp = spec.expert_tp or spec.tp
    expert_dp = spec.tp * grad_dp // max(1, spec.ep * etp)
    if model.is_moe and (expert_dp % r or expert_dp == r):
        errors.append(
            f"job.dp_replicate: {r} does not split the {expert_dp} expert-data-parallel ranks "
            f"(tp x cp x dp / (ep x expert_tp)) into shard groups of two or more, which "
            f"Megatron-Core makes of the same instances; allowed: a divisor of {expert_dp} "
            "below it"
        )
    if grad_dp % r:
        errors.append(
            f"job.dp_replicate: {r} does not divide the {grad_dp} data-parallel ranks "
            f"(dp x cp); allowed: a divisor of {grad_dp}"
        )
    elif r == grad_dp:
        errors.append(
            f"job.dp_replicate: {r} leaves one rank in each shard group of the {grad_dp} "
            "data-parallel ranks: that is plain data parallelism (zero_stage 0, dp_replicate "
            f"1); allowed: a divisor of {grad_dp} below it"
        )
    if spec.zero_stage == 0:
        errors.append(
            f"job.dp_replicate: {r} replicates ZeRO's sharded state, and zero_stage is 0 (every "
            "rank holds it all); set zero_stage 1, 2 or 3"
        )
    return errors


def _plain_dense(model: ModelSpec) -> bool:
    """A model whose every layer is a transformer layer with attention and a dense MLP whose
    linear layers have no biases: what ``recompute: selective_op`` counts the matrix
    multiplies of (:func:`~commwall.workload.compute._per_op_recomputed`)."""
    hybrid = model.hybrid_pattern is not None
    biased = model.linear_bias or model.qkv_bias
    return not (model.is_moe or model.mla or hybrid or biased or model.block != "layer")


def _module_errors(spec: JobSpec, model: ModelSpec) -> list[str]:
    """``job.recompute_modules`` that selective recomputation or the model cannot use."""
    modules = spec.recompute_modules
    if modules is None:
        return []
    if spec.recompute != "selective":
        return [
            f"job.recompute_modules: {', '.join(modules)} given with recompute "
            f"{spec.recompute}; they choose what selective recomputation re-runs: set "
            "recompute: selective or leave them out"
        ]
    has = {
        "mla_up_proj": (model.mla, "multi-head latent attention (model.kv_lora_rank)"),
        "moe_act": (model.is_moe, "mixture-of-experts layers"),
        "moe": (model.is_moe, "mixture-of-experts layers"),
        "shared_experts": (model.shared_ffn_hidden > 0 and model.is_moe, "shared experts"),
        "mlp": (not model.is_moe or model.has_dense_layers, "dense layers"),
    }
    return [
        f"job.recompute_modules: {name} needs {what}, which {model.name} does not have"
        for name, (present, what) in has.items()
        if name in modules and not present
    ]


def _a2a_overlap_errors(spec: JobSpec, model: ModelSpec) -> list[str]:
    """What ``job.moe_a2a_overlap`` cannot run with: Megatron-Core's checks of
    ``overlap_moe_expert_parallel_comm`` (``transformer_config.py`` @d98e8a6: expert
    parallelism, an interleaved schedule when pipelined, no full recomputation and no ``moe``
    recompute module, at most one multi-token-prediction layer), and ZeRO-3, whose
    layer-by-layer passes commwall does not pair."""
    errors = []
    if not model.is_moe or spec.ep == 1:
        what = f"{model.name} is dense" if not model.is_moe else "ep is 1"
        errors.append(
            f"job.moe_a2a_overlap: overlaps the expert-parallel all-to-alls, so it needs a "
            f"mixture-of-experts model with ep > 1 ({what})"
        )
    if spec.pp > 1 and spec.virtual_stages == 1:
        errors.append(
            f"job.moe_a2a_overlap: with pp {spec.pp} needs an interleaved schedule "
            "(virtual_stages > 1), as Megatron-Core asserts"
        )
    if spec.recompute == "full" or "moe" in recompute_modules(spec):
        given = "recompute full" if spec.recompute == "full" else "recompute_modules with moe"
        errors.append(
            f"job.moe_a2a_overlap: cannot run with {given} (Megatron-Core asserts); allowed: "
            "recompute none, or selective without the moe module"
        )
    if spec.mtp_layers > 1:
        errors.append(
            f"job.moe_a2a_overlap: allows at most one multi-token-prediction layer "
            f"(Megatron-Core asserts); mtp_layers is {spec.mtp_layers}"
        )
    if spec.zero_stage == 3:
        errors.append(
            "job.moe_a2a_overlap: with zero_stage 3 is not modelled (commwall builds ZeRO-3 "
            "passes layer by layer); allowed: zero_stage 0, 1 or 2"
        )
    return errors


def _chunks_from_layout(spec: JobSpec, n_layers: int) -> JobSpec:
    """``spec`` with ``virtual_stages`` its ``pipeline_layout``'s stages over PP where the job
    leaves it out, as Megatron-LM derives its virtual pipeline size from
    ``--pipeline-model-parallel-layout``; unchanged otherwise (a layout that does not parse or
    divide is refused by name below)."""
    if spec.pipeline_layout is None or "virtual_stages" in spec.model_fields_set:
        return spec
    try:
        stages = parse_layout(
            spec.pipeline_layout, pp=spec.pp, n_layers=n_layers, mtp_layers=spec.mtp_layers
        )
    except LayoutError:
        return spec
    return spec.model_copy(update={"virtual_stages": len(stages) // spec.pp})


def _optimizer_errors(spec: JobSpec) -> list[str]:
    """The precision-aware optimizer's settings Megatron-Core refuses (optimizer_config.py and
    optimizer/__init__.py @HEAD of NVIDIA/Megatron-LM), each naming its field."""
    errors = []
    lowered = [
        (name, value)
        for name, value in (
            ("exp_avg_dtype", spec.exp_avg_dtype),
            ("exp_avg_sq_dtype", spec.exp_avg_sq_dtype),
            ("main_params_dtype", spec.main_params_dtype),
        )
        if value != "fp32"
    ]
    if lowered and not spec.precision_aware_optimizer:
        name, value = lowered[0]
        given = ", ".join(f"{n} {v}" for n, v in lowered)
        errors.append(
            f"job.{name}: {value} needs precision_aware_optimizer: true (Megatron-Core keeps "
            f"the optimizer's tensors in fp32 without it; given: {given})"
        )
    if spec.precision_aware_optimizer and spec.zero_stage == 0:
        errors.append(
            "job.precision_aware_optimizer: true needs the distributed optimizer or FSDP "
            "(zero_stage 1 to 3, as Megatron-Core requires); zero_stage is 0"
        )
    return errors


def resolve_job(spec: JobSpec, cluster: Cluster) -> Job:
    """Check ``spec`` against ``cluster`` and derive the step's sizes."""
    errors: list[str] = []
    if spec.mtp_shared and not spec.mtp_layers:
        raise ScenarioError(
            ["job.mtp_shared: true needs job.mtp_layers >= 1 (it shares one multi-token-"
             "prediction module's weights among the depths)"]
        )  # fmt: skip
    try:
        model = resolve_model(spec.model)
        if spec.mtp_layers:  # a training choice (Megatron's --mtp-num-layers)
            model = replace(model, mtp_layers=spec.mtp_layers, mtp_shared=spec.mtp_shared)
    except UnknownModelError as err:
        raise ScenarioError([f"job.model: {err}"]) from None
    except ModelDefinitionError as err:
        message = str(err)
        line = message if message.startswith("job.") else f"job.model: {message}"
        raise ScenarioError([line]) from None
    spec = _chunks_from_layout(spec, model.n_layers)
    n_gpus = cluster.n_gpus
    domain = cluster.scale_up_domain
    if spec.tp > domain or domain % spec.tp:
        errors.append(
            f"job.tp: {spec.tp} does not fit the scale-up domain of {domain} GPUs — tensor "
            f"parallelism must stay inside NVLink; allowed: {_divisors(domain)}"
        )
    if model.n_heads % spec.tp:
        errors.append(
            f"job.tp: {spec.tp} does not divide {model.name}'s {model.n_heads} attention heads; "
            f"allowed here: {_divisors(math.gcd(model.n_heads, domain))}"
        )
    if model.mamba_layers and (model.mamba_heads % spec.tp or model.mamba_groups % spec.tp):
        errors.append(
            f"job.tp: {spec.tp} does not divide {model.name}'s Mamba-2 mixers "
            f"({model.mamba_heads} heads in {model.mamba_groups} groups: Megatron-Core splits "
            f"whole groups over TP); allowed here: "
            f"{_divisors(math.gcd(model.mamba_groups, model.mamba_heads, domain))}"
        )
    if model.mamba_layers and spec.cp > 1:
        errors.append(
            f"job.cp: {spec.cp} with {model.name}'s Mamba-2 mixers; context parallelism is "
            "modelled for attention only (a Mamba layer's scan over a split sequence is not); "
            "allowed: 1"
        )
    if spec.pp > model.n_layers:
        errors.append(
            f"job.pp: {spec.pp} stages exceed {model.name}'s {model.n_layers} layers; "
            f"allowed: 1 to {model.n_layers}"
        )
    v = spec.virtual_stages
    if v > 1 and spec.pp == 1:
        errors.append(f"job.virtual_stages: {v} needs pipeline parallelism (pp > 1); use 1")
    elif spec.pp * v > model.n_layers and spec.pipeline_layout is None:  # a layout may hold E, L
        errors.append(
            f"job.virtual_stages: pp × virtual_stages = {spec.pp * v} model chunks exceed "
            f"{model.name}'s {model.n_layers} layers; allowed: 1 to {max(1, model.n_layers // spec.pp)}"
        )
    dp = spec.dp
    model_parallel = spec.tp * spec.cp * spec.pp
    if dp is None:
        if n_gpus % model_parallel:
            errors.append(
                f"job.tp × job.cp × job.pp = {model_parallel} does not divide the cluster's "
                f"{n_gpus} GPUs"
            )
        dp = max(1, n_gpus // model_parallel)
    elif model_parallel * dp != n_gpus:
        errors.append(
            f"job.dp: tp × cp × pp × dp = {spec.tp} × {spec.cp} × {spec.pp} × {dp} = "
            f"{model_parallel * dp} but the cluster has {n_gpus} GPUs; the degrees must multiply "
            "to the GPU count"
        )
    if spec.cp > 1:
        if spec.seq_len % (2 * spec.cp):
            errors.append(
                f"job.cp: {spec.cp} needs seq_len divisible by 2 × cp = {2 * spec.cp} (each rank "
                f"holds two of the 2·cp chunks, balancing the causal mask); seq_len is {spec.seq_len}"
            )
        if spec.attention == "unfused":
            errors.append("job.cp: context parallelism needs a fused attention kernel (flash)")
        a2a = cp_a2a_size(spec)
        if spec.cp_comm == "a2a+p2p" and (spec.cp_a2a is None or spec.cp % spec.cp_a2a):
            given = "not set" if spec.cp_a2a is None else str(spec.cp_a2a)
            errors.append(
                f"job.cp_a2a: {given} with cp_comm a2a+p2p; allowed: a divisor of "
                f"cp = {spec.cp} (the ranks of each all-to-all group)"
            )
        elif a2a > 1:
            # Transformer Engine's all-to-all (flash_attn_a2a_communicate) asserts
            # num_heads % a2a_size == 0 for Q, K and V: each rank takes whole heads
            heads = (model.n_heads // spec.tp, max(1, model.n_kv_heads // spec.tp))
            if heads[0] % a2a or heads[1] % a2a:
                errors.append(
                    f"job.cp_comm: {spec.cp_comm} needs the attention heads of each TP rank "
                    f"divisible by its all-to-all group of {a2a} (query heads {heads[0]}, "
                    f"key/value heads {heads[1]} on each of tp = {spec.tp}); allowed: p2p, "
                    "all_gather"
                )
    if spec.cp_a2a is not None and spec.cp_comm != "a2a+p2p":
        errors.append(
            f"job.cp_a2a: {spec.cp_a2a} is only read with cp_comm a2a+p2p (cp_comm is "
            f"{spec.cp_comm}); remove it or set cp_comm: a2a+p2p"
        )
    if spec.fp8_param_gather and spec.precision != "fp8":
        errors.append(
            f"job.fp8_param_gather: keeps the weights in FP8, so it needs precision fp8 "
            f"(precision is {spec.precision}; under fp4 Megatron-Core gathers 16-bit weights)"
        )
    start, end = spec.bf16_end_layers
    if (start or end) and spec.precision not in ("fp8", "fp4"):
        errors.append(
            f"job.bf16_end_layers: {[start, end]} keeps layers in BF16 out of an fp8 or fp4 "
            f"step; with precision {spec.precision} every layer already runs in 16 or more bits "
            "(allowed: [0, 0], or precision fp8 / fp4)"
        )
    elif (start or end) and spec.compute_efficiency is not None:
        errors.append(
            f"job.bf16_end_layers: {[start, end]} with compute_efficiency "
            f"{spec.compute_efficiency}: the flat model prices every layer at one share of one "
            "peak (allowed: [0, 0] with compute_efficiency, or leave compute_efficiency out for "
            "the kernel model)"
        )
    elif start + end > model.n_layers:
        errors.append(
            f"job.bf16_end_layers: {[start, end]} is more than the model's {model.n_layers} "
            "layers; allowed: start + end up to the layers"
        )
    if spec.fp8_output_proj and (spec.precision != "fp8" or spec.fp8_recipe != "mxfp8"):
        errors.append(
            f"job.fp8_output_proj: runs the LM head in MXFP8, so it needs precision fp8 with "
            f"fp8_recipe mxfp8, as Megatron-Core requires (precision is {spec.precision}, "
            f"fp8_recipe {spec.fp8_recipe})"
        )
    if (
        spec.attention == "unfused"
        and spec.attention_dropout == 0
        and ("attention_dropout" in spec.model_fields_set)
    ):
        errors.append(
            "job.attention_dropout: 0 with attention unfused; the unfused kind is 2021 "
            "Megatron's attention, softmax-and-dropout kernels included, so it prices a "
            "dropout > 0 (leave attention_dropout out, or set it above 0)"
        )
    if spec.fp8_attention:
        if spec.precision not in ("fp8", "fp4"):
            errors.append(
                f"job.fp8_attention: runs inside Transformer Engine's FP8 or NVFP4 autocast, so "
                f"it needs precision fp8 or fp4 (precision is {spec.precision})"
            )
        if spec.attention != "flash":
            errors.append(
                f"job.fp8_attention: is cuDNN's fused FP8 attention, so it needs attention "
                f"flash (attention is {spec.attention})"
            )
    if spec.tp_comm_overlap and (spec.tp == 1 or not spec.sequence_parallel):
        errors.append(
            f"job.tp_comm_overlap: needs tensor parallelism with sequence parallelism (as "
            f"Megatron-Core asserts); tp is {spec.tp}, sequence_parallel is "
            f"{str(spec.sequence_parallel).lower()}"
        )
    if spec.tp_overlap_cfg.given() and not spec.tp_comm_overlap:
        errors.append(
            "job.tp_overlap_cfg: sets Transformer Engine's TP overlap per GEMM, so it needs "
            "tp_comm_overlap true (it is false); leave it out"
        )
    if spec.moe_a2a_overlap:
        errors += _a2a_overlap_errors(spec, model)
    if spec.moe_sync_free and not model.is_moe:
        errors.append(
            f"job.moe_sync_free: says a MoE layer's dispatch never waits on the host, so it "
            f"needs a mixture-of-experts model ({model.name} is dense); leave it out"
        )
    if spec.moe_host_wait is not None and not model.is_moe:
        errors.append(
            f"job.moe_host_wait: is how long a MoE layer waits on the host, so it needs a "
            f"mixture-of-experts model ({model.name} is dense); leave it out"
        )
    elif spec.moe_host_wait is not None and spec.moe_sync_free:
        errors.append(
            f"job.moe_host_wait: {spec.moe_host_wait} s with moe_sync_free true, which says no "
            "MoE layer waits on the host; set one or the other"
        )
    if spec.moe_dispatcher != "alltoall" and (spec.ep == 1 or model.n_experts <= 1):
        errors.append(
            f"job.moe_dispatcher: {spec.moe_dispatcher} moves tokens between expert-parallel "
            f"ranks, so it needs a mixture-of-experts model with ep > 1 (ep is {spec.ep}, "
            f"{model.name} has {model.n_experts} expert{'s' if model.n_experts > 1 else ''}); "
            "leave it out"
        )
    etp = spec.expert_tp or spec.tp
    if spec.ep > 1:
        if model.n_experts <= 1:
            errors.append(
                f"job.ep: {spec.ep} needs a mixture-of-experts model; {model.name} is dense"
            )
        elif model.n_experts % spec.ep or (spec.tp * dp * spec.cp) % (spec.ep * etp):
            # Megatron-Core's MoE parallel folding: tp·cp·dp = etp·ep·edp
            errors.append(
                f"job.ep: {spec.ep} must divide the {model.n_experts} experts, and ep × "
                f"expert_tp = {spec.ep} × {etp} must divide tp × cp × dp = "
                f"{spec.tp} × {spec.cp} × {dp}"
            )
    if spec.expert_tp is not None:
        if model.n_experts <= 1:
            errors.append(
                f"job.expert_tp: {spec.expert_tp} needs a mixture-of-experts model; "
                f"{model.name} is dense"
            )
        elif model.expert_ffn % spec.expert_tp:
            errors.append(
                f"job.expert_tp: {spec.expert_tp} must divide {model.name}'s expert FFN width "
                f"{model.expert_ffn}"
            )
    if spec.global_batch % (dp * spec.micro_batch):
        errors.append(
            f"job.global_batch: {spec.global_batch} is not a multiple of dp × micro_batch = "
            f"{dp} × {spec.micro_batch} = {dp * spec.micro_batch}"
        )
    micro_batches = spec.global_batch // max(1, dp * spec.micro_batch)
    if micro_batches * spec.pp > MAX_PIPELINE_SLOTS:
        errors.append(
            f"job.global_batch: {micro_batches} micro-batches × {spec.pp} stages = "
            f"{micro_batches * spec.pp:,} pipeline slots; the step model simulates every slot and "
            f"allows at most {MAX_PIPELINE_SLOTS:,} — raise micro_batch or dp"
        )
    if v > 1 and micro_batches % spec.pp:
        errors.append(
            f"job.virtual_stages: the interleaved schedule needs micro-batches ({micro_batches}) "
            f"to be a multiple of pp ({spec.pp}) (Megatron-LM's requirement)"
        )
    layout: tuple[VirtualStage, ...] = ()
    if spec.pipeline_layout is not None:
        try:
            layout = parse_layout(
                spec.pipeline_layout, pp=spec.pp, n_layers=model.n_layers,
                mtp_layers=spec.mtp_layers,
            )  # fmt: skip
        except LayoutError as e:
            errors.append(f"job.pipeline_layout: {e}")
        else:
            if len(layout) != spec.pp * v:
                errors.append(
                    f"job.pipeline_layout: {len(layout)} virtual stages, but pp × virtual_stages "
                    f"= {spec.pp} × {v} = {spec.pp * v}; set virtual_stages to "
                    f"{len(layout) // spec.pp} or give {spec.pp * v} stages"
                )
                layout = ()
    if spec.dp_replicate > 1:
        errors += _replicate_errors(spec, model, dp * spec.cp)
    if spec.fp8_recipe != "delayed" and spec.precision != "fp8":
        errors.append(
            f"job.fp8_recipe: {spec.fp8_recipe} scales FP8 operands, but precision is "
            f"{spec.precision}; set precision: fp8 or leave fp8_recipe at delayed"
        )
    if spec.fp8_recipe == "mxfp8" and cluster.gpu.sm < 100:
        errors.append(
            f"job.fp8_recipe: mxfp8 needs Blackwell (sm 100+); {cluster.gpu.name} is sm "
            f"{cluster.gpu.sm}; allowed there: delayed, tensorwise, blockwise"
        )
    errors += _recompute_module_errors(spec, model)
    errors += _optimizer_errors(spec)
    if spec.seq_len > model.max_seq_len:
        errors.append(
            f"job.seq_len: {spec.seq_len} exceeds {model.name}'s context of {model.max_seq_len} tokens"
        )
    try:
        peak = cluster.gpu.peak_flops(spec.precision)
    except CatalogError:
        errors.append(
            f"job.precision: {cluster.gpu.name} has no {spec.precision} peak; allowed: "
            f"{', '.join(cluster.gpu.precisions)}"
        )
        peak = 0.0
    device = None
    if spec.compute_efficiency is None and peak > 0:
        gpu = cluster.gpu
        try:
            device = device_for(
                gpu.name, peak, gpu.peak_flops("bf16"), gpu.hbm_bandwidth, spec.precision
            )
        except (ValueError, CatalogError) as e:
            errors.append(f"job.compute_efficiency: not set, and {e}")
        if spec.fp8_attention and gpu.name not in ATTENTION_FP8:
            errors.append(
                f"job.fp8_attention: no measured FP8 attention rate for {gpu.name} (measured: "
                f"{', '.join(sorted(ATTENTION_FP8))}); leave it off or set "
                "job.compute_efficiency to use the flat model"
            )
    if errors:
        raise ScenarioError(errors)
    return Job(
        spec=spec,
        model=model,
        tp=spec.tp,
        pp=spec.pp,
        dp=dp,
        ep=spec.ep,
        etp=spec.expert_tp or 0,
        micro_batches=spec.global_batch // (dp * spec.micro_batch),
        peak_flops=peak,
        virtual_stages=spec.virtual_stages,
        device=device,
        cp=spec.cp,
        layout=layout,
        paired_waits=paired_pass_waits(cluster.gpu.name),
    )
