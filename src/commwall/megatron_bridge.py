"""A Megatron-Bridge training configuration as Megatron-LM's arguments.

Megatron-Bridge (NVIDIA-NeMo/Megatron-Bridge) configures a run with a ``ConfigContainer``
whose sections — ``model`` (the model provider: Megatron-Core's ``TransformerConfig`` fields),
``train``, ``ddp``, ``comm_overlap``, ``mixed_precision``, ``dataset`` and others — it writes
beside every checkpoint as ``run_config.yaml`` (``docs/training/checkpointing.md``) and its
launch scripts take as a YAML of overrides. Dataclasses are written as mappings with a
``_target_`` class path, functions and dtypes as ``{_target_: path, _call_: false}``, enums
as ``{_target_: class, _args_: [value], _name_: name}`` (Megatron-LM's
``megatron/training/config/yaml_utils.py``, which Bridge's ``dump_dataclass_to_yaml`` uses).

The fields carry Megatron-Core's names, and Megatron-LM's argument ``dest`` names are mostly
the same; :func:`bridge_arguments` renames the others as Bridge's own translator does
(``scripts/translate_mlm_to_bridge.py``: ``ARG_MAP`` and its reverse maps, @067f987) — e.g.
``model.num_moe_experts`` → ``num_experts``, ``model.share_embeddings_and_output_weights``
false → ``untie_embeddings_and_output_weights``, ``model.gated_linear_unit`` → ``swiglu``,
``ddp.bucket_size`` → ``ddp_bucket_size``, ``ddp.grad_reduce_in_fp32`` false →
``grad_reduce_in_bf16``, a named ``mixed_precision`` recipe → its precision fields
(``src/megatron/bridge/training/mixed_precision.py``) — and
:func:`commwall.megatron_args.megatron_job` reads the result, every Megatron-LM reading,
default and refusal holding. A section's field is taken from ``mixed_precision`` over
``model`` (Bridge copies the precision config into the model at setup) and from ``ddp``
over ``comm_overlap`` (which Bridge applies to the DDP config at setup, so a saved
``ddp`` holds the values that ran). The vocabulary is padded only with
``model.should_pad_vocab`` (Bridge's ``GPTModelProvider`` default: false). Of the
``optimizer`` section (Megatron-Core's ``OptimizerConfig``) the precision-aware optimizer's
fields are read (``use_precision_aware_optimizer``, the moments' and master weights' dtypes,
``store_param_remainders``); its ``main_grads_dtype`` is not, as Megatron-Core's DDP keeps the
gradients as ``ddp.grad_reduce_in_fp32`` says.

A saved ``run_config.yaml`` holds every field. An override file holds some: the fields it
leaves out take Megatron-LM's defaults here, not the recipe's it overrides, and a note says
so. Fields of the sections read that are neither arguments nor known to leave the step alone
are listed (:attr:`BridgeArguments.unread`) by their Bridge path, unless they sit at
Megatron-Core's default (:data:`DEFAULTS`). The model takes the name of the Hugging Face
model it was built from (``model.hf_model_id``); a ``model.softmax_type`` other than
``vanilla`` (GPT-OSS's attention sinks) is reported as not priced. A
``pipeline_model_parallel_layout`` saved in Megatron-Core's list form (one list of layer names
a virtual stage, as DeepSeek-V3's recipes set it) is written as Megatron's layout string
(:func:`layout_text`).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from commwall import checks
from commwall.megatron_args import (
    ALIASES,
    FLAGS,
    NO_EFFECT,
    REFUSED,
    MegatronArgsError,
    MegatronJob,
    megatron_job,
)

__all__ = [
    "BridgeArguments",
    "bridge_arguments",
    "bridge_job",
    "is_bridge_config",
    "launch_job",
    "layout_text",
]

#: The sections whose fields can change the step.
SECTIONS: Final = ("model", "train", "ddp", "comm_overlap", "mixed_precision", "dataset")

#: Bridge fields whose Megatron-LM ``dest`` is another name (translate_mlm_to_bridge.py).
RENAMED: Final[dict[str, str]] = {
    "model.num_moe_experts": "num_experts",
    "model.num_layers_in_first_pipeline_stage": "decoder_first_pipeline_num_layers",
    "model.num_layers_in_last_pipeline_stage": "decoder_last_pipeline_num_layers",
    "model.fp8_param": "fp8_param_gather",
    "model.layernorm_epsilon": "norm_epsilon",
    "model.seq_len_interpolation_factor": "rotary_seq_len_interpolation_factor",
    "ddp.bucket_size": "ddp_bucket_size",
    "ddp.check_for_nan_in_grad": "check_for_nan_in_loss_and_grad",
    "ddp.use_custom_fsdp": "use_megatron_fsdp",
    "ddp.average_in_collective": "ddp_average_in_collective",
    "comm_overlap.bucket_size": "ddp_bucket_size",
    "mixed_precision.fp8_param": "fp8_param_gather",
}

#: Where Bridge keeps an argument that is not a ``model`` field of the same name (for
#: messages about an argument the configuration left out).
_HOME: Final[dict[str, str]] = {
    **{dest: f"model.{path.split('.', 1)[1]}" for path, dest in RENAMED.items()
       if path.startswith("model.")},
    "untie_embeddings_and_output_weights": "model.share_embeddings_and_output_weights",
    "swiglu": "model.gated_linear_unit", "group_query_attention": "model.num_query_groups",
    "micro_batch_size": "train.micro_batch_size", "global_batch_size": "train.global_batch_size",
    "manual_gc": "train.manual_gc", "ddp_bucket_size": "ddp.bucket_size",
    "grad_reduce_in_bf16": "ddp.grad_reduce_in_fp32",
    "check_for_nan_in_loss_and_grad": "ddp.check_for_nan_in_grad",
    "no_check_for_nan_in_loss_and_grad": "ddp.check_for_nan_in_grad: false",
    **{dest: f"ddp.{dest}" for dest in (
        "use_distributed_optimizer", "overlap_grad_reduce", "overlap_param_gather",
        "align_param_gather", "use_megatron_fsdp", "data_parallel_sharding_strategy")},
    **{dest: f"mixed_precision.{dest}" for dest in (
        "bf16", "fp16", "fp8", "fp8_recipe", "fp4", "fp4_recipe", "fp8_param_gather",
        "fp8_dot_product_attention", "first_last_layers_bf16", "num_layers_at_start_in_bf16",
        "num_layers_at_end_in_bf16")},
    "tp_comm_overlap": "comm_overlap.tp_comm_overlap",
    "tp_comm_overlap_cfg": "comm_overlap.tp_comm_overlap_cfg",
}  # fmt: skip

#: Fields Bridge keeps that no Megatron-LM argument sets and that leave the step alone: the
#: model provider's bookkeeping, initialisation, numerics inside kernels, the loss scaler.
_NO_EFFECT_HERE: Final = re.compile(
    r"(?:model|train|ddp|comm_overlap|mixed_precision|dataset)\.(?:_target_|"
    r"init_method\w*|output_layer_init_method\w*|\w*_init\w*|perform_initialization|"
    r"use_cpu_initialization|params_dtype|pipeline_dtype|autocast_dtype|autocast_enabled|"
    r"fp32|timers|finalize_model_grads_func|grad_scale_func|no_sync_func|grad_sync_func|"
    r"param_sync_func|deallocate_pipeline_outputs|batch_p2p_comm|batch_p2p_sync|"
    r"overlap_p2p_comm|overlap_p2p_comm_warmup_flush|variable_seq_lengths|"
    r"parallel_output|generation_config|hf_model_id|vocab_size_divisible_by_tp|"
    r"bias_activation_fusion|bias_dropout_fusion|masked_softmax_fusion|persist_layer_norm|"
    r"memory_efficient_layer_norm|gradient_accumulation_fusion|apply_rope_fusion|"
    r"fused_single_qkv_rope|apply_query_key_layer_scaling|attention_softmax_in_fp32|"
    r"softmax_scale|softmax_type|layernorm_zero_centered_gamma|rotary_\w+|rope_scaling\w*|"
    r"moe_aux_loss_coeff|moe_z_loss_coeff|moe_router_load_balancing_type|"
    r"moe_router_pre_softmax|moe_router_score_function|moe_router_topk_scaling_factor|"
    r"moe_router_enable_expert_bias|moe_router_bias_update_rate|moe_router_dtype|"
    r"moe_input_jitter_eps|moe_permute_fusion|moe_router_fusion|moe_per_layer_logging|"
    r"moe_token_drop_policy|moe_expert_capacity_factor|moe_router_padding_for_fp8|"
    r"moe_router_padding_for_quantization|mtp_loss_scaling_factor|"
    r"calculate_per_token_loss|fp8_margin|fp8_amax_\w+|fp8_interval|fp8_wgrad|"
    r"fp8_multi_head_attention|fp4_param\w*|reuse_grad_buf_for_mxfp8_param_ag|loss_scale|"
    r"initial_loss_scale|min_loss_scale|loss_scale_window|hysteresis|tp_only_amax_red|"
    r"use_te_rng_tracker|te_rng_tracker|enable_cuda_graph|cuda_graph_scope|"
    r"cuda_graph_warmup_steps|cuda_graph_retain_backward_graph|cuda_graph_use_single_mempool|"
    r"train_iters|train_samples|exit_\w+|eval_\w+|skip_train|manual_gc_interval|"
    r"manual_gc_eval|empty_unused_memory_level|check_weight_hash_\w+|rerun_mode|"
    r"tp_comm_bootstrap_backend|data_parallel_size|defer_embedding_wgrad_compute|"
    r"wgrad_deferral_limit|check_for_large_grads|"
    r"use_distributed_optimizer_instances|keep_fp8_transpose_cache\w*|nccl_ub|"
    r"fsdp_double_buffer|suggested_communication_unit_size|preserve_fp32_weights|"
    r"bucket_size_\w+|pad_buckets_for_high_nccl_busbw|reduce_scatter_with_fp32_accumulation|"
    r"data_sharding|dataloader_type|num_workers|data_path|blend\w*|split|path_to_cache|"
    r"mmap_bin_files|mock|random_seed|reset_\w+|eod_mask_loss|create_attention_mask|"
    r"skip_getting_attention_mask_from_dataset|num_dataset_builder_threads|"
    r"persistent_workers|pin_memory|drop_last\w*|object_storage_cache_path|"
    r"defer_npy_index_mmap|fast_cache_load|sequence_length|tokenizer\w*|"
    r"decoder_seq_length|micro_batch_size_per_gpu|rampup_batch_size|"
    r"decrease_batch_size_if_needed|global_batch_size_per_gpu)"
)

#: Megatron-Core's default of each field Bridge writes that no Megatron-LM argument commwall
#: reads sets and that only changes the step when moved off it (a feature's own settings, or a
#: switch that is on by default): a field at its default is not listed as unread.
#: ``transformer_config.py``, ``model_parallel_config.py`` and
#: ``distributed/distributed_data_parallel_config.py``, NVIDIA/Megatron-LM @d98e8a64.
DEFAULTS: Final[dict[str, object]] = {
    "ddp.fsdp_all_gather_in_start_param_sync": True, "ddp.gradient_reduce_div_fusion": True,
    "ddp.megatron_fsdp_version": 1, "ddp.outer_dp_sharding_strategy": "no_shard",
    "model.activation_offload_fraction": 1.0, "model.barrier_with_L1_time": True,
    "model.batch_invariant_backend": "te_native", "model.clone_scatter_output_in_embedding": True,
    "model.cpu_offloading_activations": True, "model.cpu_offloading_weights": False,
    "model.cuda_graph_modules": "full", "model.dsa_indexer_rotate_activation": True,
    "model.dsa_indexer_scoring_relu": True, "model.dsa_indexer_topk_freq": 1,
    "model.dsa_kernel_backend": "none", "model.expert_gtp_weight_remat_size": 1,
    "model.gdp_num_chunk_states_to_recompute": 2, "model.gdp_num_householder": 3,
    "model.gtp_weight_remat_size": 1, "model.kitchen_attention_backend": "sdpa",
    "model.linear_conv_kernel_dim": 4, "model.linear_key_head_dim": 128,
    "model.linear_num_key_heads": 16, "model.linear_num_value_heads": 32,
    "model.linear_value_head_dim": 128, "model.mhc_num_residual_streams": 4,
    "model.mhc_sinkhorn_iterations": 20, "model.mlp_chunks_for_prefill": 1,
    "model.mlp_chunks_for_training": 1, "model.moe_combine_bwd_dtype": "bf16",
    "model.moe_dispatch_fwd_dtype": "bf16", "model.moe_hybridep_num_sms_preprocessing": 108,
    "model.moe_paged_stash_buffer_size_factor_cuda": 1.1, "model.moe_paged_stash_page_size": 64,
    "model.mup_attn_scale_power": 1.0, "model.mup_embedding_mult": 1.0,
    "model.mup_output_mult": 1.0, "model.mup_width_mult": 1.0, "model.qk_clip_alpha": 0.5,
    "model.qk_clip_threshold": 100, "model.scatter_embedding_sequence_parallel": True,
    "model.softmax_type": "vanilla", "model.tp_comm_bulk_dgrad": True,
    "model.tp_comm_bulk_wgrad": True, "model.tp_comm_overlap_ag": True,
    "model.tp_comm_overlap_rs": True, "model.tp_comm_split_ag": True,
    "model.tp_comm_split_rs": True, "model.use_mamba_mem_eff_path": True,
}  # fmt: skip

#: Bridge's named precision recipes (``mixed_precision.py`` @067f987): the fields that
#: change the step.
RECIPES: Final[dict[str, dict[str, object]]] = {
    "bf16_mixed": {"bf16": True},
    "fp16_mixed": {"fp16": True, "grad_reduce_in_fp32": False},
    "bf16_with_fp8_delayed_scaling_mixed": {
        "bf16": True, "fp8": "hybrid", "fp8_recipe": "delayed", "fp8_param_gather": True,
    },
    "fp16_with_fp8_delayed_scaling_mixed": {
        "fp16": True, "grad_reduce_in_fp32": False, "fp8": "hybrid", "fp8_recipe": "delayed",
        "fp8_param_gather": True,
    },
    "bf16_with_mxfp8_mixed": {
        "bf16": True, "fp8": "e4m3", "fp8_recipe": "mxfp8", "fp8_param_gather": True,
    },
    "fp16_with_mxfp8_mixed": {
        "fp16": True, "grad_reduce_in_fp32": False, "fp8": "e4m3", "fp8_recipe": "mxfp8",
        "fp8_param_gather": True,
    },
    "bf16_with_fp8_current_scaling_mixed": {
        "bf16": True, "fp8": "hybrid", "fp8_recipe": "tensorwise", "fp8_param_gather": True,
        "first_last_layers_bf16": True, "num_layers_at_start_in_bf16": 1,
        "num_layers_at_end_in_bf16": 1,
    },
    "nemotron_h_bf16_with_fp8_current_scaling_mixed": {
        "bf16": True, "fp8": "hybrid", "fp8_recipe": "tensorwise", "fp8_param_gather": True,
        "first_last_layers_bf16": True, "num_layers_at_start_in_bf16": 2,
        "num_layers_at_end_in_bf16": 2,
    },
    "nanov2_bf16_with_fp8_current_scaling_mixed": {
        "bf16": True, "fp8": "hybrid", "fp8_recipe": "blockwise", "fp8_param_gather": True,
        "first_last_layers_bf16": True, "num_layers_at_start_in_bf16": 2,
        "num_layers_at_end_in_bf16": 2,
    },
    "fp16_with_fp8_current_scaling_mixed": {
        "fp16": True, "grad_reduce_in_fp32": False, "fp8": "hybrid",
        "fp8_recipe": "tensorwise", "fp8_param_gather": True, "first_last_layers_bf16": True,
        "num_layers_at_start_in_bf16": 1, "num_layers_at_end_in_bf16": 1,
    },
    "bf16_with_fp8_subchannel_scaling_mixed": {
        "bf16": True, "fp8": "hybrid", "fp8_recipe": "blockwise", "fp8_param_gather": False,
    },
    "fp16_with_fp8_subchannel_scaling_mixed": {
        "fp16": True, "grad_reduce_in_fp32": False, "fp8": "hybrid", "fp8_recipe": "blockwise",
        "fp8_param_gather": False,
    },
    "bf16_with_nvfp4_mixed": {"bf16": True, "fp4": "e2m1", "fp4_recipe": "nvfp4"},
    "nemotron_3_super_bf16_with_nvfp4_mixed": {
        "bf16": True, "fp4": "e2m1", "fp4_recipe": "nvfp4", "first_last_layers_bf16": True,
    },
}  # fmt: skip

#: Megatron-Core's ``AttnBackend`` enum (``megatron/core/transformer/enums.py``) by value.
ATTN_BACKENDS: Final = {1: "flash", 2: "fused", 3: "unfused", 4: "local", 5: "auto"}

#: What a Userbuffers entry of ``comm_overlap.tp_comm_overlap_cfg`` may carry (its
#: ``BulkOverlapCfg`` / ``RingExchangeOverlapCfg`` / ``PipelineOverlapCfg`` fields that
#: commwall's ``job.tp_overlap_cfg`` takes).
_UB_FIELDS: Final = ("method", "num_sm", "num_splits", "set_sm_margin", "aggregate",
                     "cga_size", "atomic_gemm", "fp8_buf")  # fmt: skip


@dataclass(frozen=True)
class BridgeArguments:
    """A Bridge configuration as Megatron-LM arguments (:func:`bridge_arguments`)."""

    #: Megatron-LM argument ``dest`` → value, as :func:`~commwall.megatron_args.megatron_job`
    #: reads a mapping
    arguments: dict[str, object]
    #: ``comm_overlap.tp_comm_overlap_cfg`` as ``job.tp_overlap_cfg`` entries, when a mapping
    tp_overlap_cfg: dict[str, dict[str, object]] | None
    #: pad the vocabulary as Megatron-LM does (``model.should_pad_vocab``)
    pad_vocab: bool
    #: Bridge paths of fields read as nothing the step depends on nor known to leave it alone
    unread: tuple[str, ...]
    #: how fields were read
    notes: tuple[str, ...]
    #: each ``dest`` given → the Bridge path it came from (for messages)
    origin: dict[str, str]
    #: ``optimizer.store_param_remainders`` where given (no Megatron-LM argument sets it)
    store_param_remainders: bool | None = None


def is_bridge_config(data: object) -> bool:
    """Whether a mapping is a Megatron-Bridge ``ConfigContainer`` (saved or an override file):
    a ``model`` mapping beside at least one more of its sections, or a ``_target_`` naming
    Bridge's ``ConfigContainer``."""
    if not isinstance(data, Mapping):
        return False
    target = data.get("_target_")
    if isinstance(target, str) and target.endswith("ConfigContainer"):
        return True
    others = ("train", "ddp", "comm_overlap", "mixed_precision", "dataset", "optimizer")
    return isinstance(data.get("model"), Mapping) and any(k in data for k in others)


def _flatten(data: Mapping[str, Any], prefix: str, out: dict[str, Any]) -> None:
    for key, value in data.items():
        if not isinstance(key, str):
            raise MegatronArgsError(f"{prefix}{key!r}: a field name that is not text")
        path = prefix + key
        if isinstance(value, Mapping) and not _is_object(value) and key != "tp_comm_overlap_cfg":
            _flatten(value, path + ".", out)
        else:
            out[path] = value


def _is_object(value: Mapping[str, Any]) -> bool:
    """A serialized function, dtype or enum (``_call_`` beside ``_target_``), or a Userbuffers
    settings mapping (kept whole)."""
    return "_call_" in value or "_args_" in value


#: The layer names of a list-form pipeline layout (Megatron-Core's ``LayerType`` members, as
#: Megatron-Bridge saves ``pipeline_model_parallel_layout``) and their letters in the string
#: form (``commwall.workload.pipeline_layout``).
LAYOUT_NAMES: Final = {"embedding": "E", "decoder": "t", "mtp": "m", "loss": "L"}
#: The most virtual stages, and layers in one, a list-form layout may hold.
MAX_LAYOUT_ITEMS: Final = 1 << 16


def layout_text(stages: object) -> str:
    """A list-form pipeline layout — one list of layer names per virtual stage, as Megatron-Core's
    ``PipelineParallelLayerLayout`` takes it and Megatron-Bridge saves it
    (``[["embedding", "decoder", ...], ..., ["decoder", "loss"]]``) — in Megatron's string form,
    each run of one name written ``X*n``; :class:`MegatronArgsError` names the stage or the
    name it cannot use (the caller names the field).

    >>> layout_text([["embedding", "decoder", "decoder"], ["decoder", "decoder", "loss"]])
    'Et*2|t*2L'
    >>> layout_text([["embedding"], [], ["decoder", "mtp", "loss"]])
    'E||tmL'
    """
    allowed = ", ".join(LAYOUT_NAMES)
    if not isinstance(stages, list | tuple) or not stages:
        what = "an empty list" if isinstance(stages, list | tuple) else type(stages).__name__
        raise MegatronArgsError(
            f"{what}; allowed: a non-empty list of virtual stages, each a list of layer names "
            f"({allowed}), or a layout string"
        )
    if len(stages) > MAX_LAYOUT_ITEMS:
        raise MegatronArgsError(f"{len(stages):,} virtual stages; at most {MAX_LAYOUT_ITEMS:,}")
    parts = []
    for i, stage in enumerate(stages):
        if not isinstance(stage, list | tuple) or len(stage) > MAX_LAYOUT_ITEMS:
            what = (
                f"{len(stage):,} layers"
                if isinstance(stage, list | tuple)
                else type(stage).__name__
            )
            raise MegatronArgsError(
                f"virtual stage {i}: {what}; allowed: a list of at most {MAX_LAYOUT_ITEMS:,} "
                f"layer names ({allowed})"
            )
        letters = []
        for name in stage:
            letter = LAYOUT_NAMES.get(name) if isinstance(name, str) else None
            if letter is None:
                why = (
                    "an encoder's layers (T5, vision models) are not modelled"
                    if name == "encoder"
                    else f"allowed: {allowed}"
                )
                raise MegatronArgsError(f"virtual stage {i}: layer {str(name)[:40]!r}: {why}")
            letters.append(letter)
        runs = [(x, len(list(group))) for x, group in itertools.groupby(letters)]
        parts.append("".join(f"{x}*{n}" if n > 1 else x for x, n in runs))
    if not any(parts):
        raise MegatronArgsError(
            f"{len(parts)} virtual stages and no layer in any; the first holds embedding and "
            "the last loss"
        )
    return "|".join(parts)


def _scalar(path: str, value: object) -> object:
    """A field's value as Megatron-LM's argument would hold it: an enum by its name (the
    attention backend by Megatron-Core's value), a function by its name."""
    if isinstance(value, Mapping):
        target = value.get("_target_")
        name = value.get("_name_")
        args = value.get("_args_")
        if path.endswith("attention_backend") and isinstance(args, list) and args:
            first = args[0]
            return (
                ATTN_BACKENDS.get(first, f"AttnBackend {first!r:.20}")
                if isinstance(first, int)
                else f"AttnBackend {first!r:.20}"
            )
        if isinstance(name, str):
            return name
        if isinstance(target, str):
            return target.rsplit(".", 1)[-1]
    if path.endswith(".pipeline_model_parallel_layout") and isinstance(value, list | tuple):
        try:
            return layout_text(value)  # Megatron-Core's list form, as Bridge saves it
        except MegatronArgsError as err:
            raise MegatronArgsError(f"{path}: {err}") from None
    if path.endswith(".window_size") and isinstance(value, list | tuple):
        return "(" + ", ".join(str(v) for v in value) + ")"
    if isinstance(value, tuple):
        return list(value)
    return value


def bridge_arguments(config: Mapping[str, Any]) -> BridgeArguments:
    """The Megatron-LM arguments a Bridge ``ConfigContainer`` mapping is (module docstring)."""
    flat: dict[str, Any] = {}
    for section in SECTIONS:
        part = config.get(section)
        if part is None:
            continue
        if section == "mixed_precision" and isinstance(part, str):
            name = part.replace("-", "_")
            if name not in RECIPES:
                raise MegatronArgsError(
                    f"mixed_precision: {part!r} is not one of Megatron-Bridge's recipes; allowed: "
                    + ", ".join(sorted(RECIPES))
                    + " (or the recipe's fields as a mapping)"
                )
            flat.update({f"mixed_precision.{k}": v for k, v in RECIPES[name].items()})
            continue
        if not isinstance(part, Mapping):
            raise MegatronArgsError(
                f"{section}: {type(part).__name__}; allowed: a mapping of its fields"
            )
        _flatten(part, section + ".", flat)
    notes: list[str] = []
    model_target = flat.get("model._target_")
    if not isinstance(model_target, str):
        notes.append(
            "no model._target_: not a saved run_config.yaml; fields left out take "
            "Megatron-LM's defaults here, not the recipe's"
        )
    # later sources win: model under mixed_precision, comm_overlap under ddp
    order = ("model", "train", "dataset", "comm_overlap", "ddp", "mixed_precision")
    known = set(FLAGS) | set(ALIASES) | set(REFUSED)
    args: dict[str, object] = {}
    origin: dict[str, str] = {}
    unread: list[str] = []
    ub: dict[str, dict[str, object]] | None = None
    gated = activation = None
    for section in order:
        for path, raw in flat.items():
            if not path.startswith(section + "."):
                continue
            field_name = path[len(section) + 1 :]
            if raw is None or "." in field_name:  # unset, or inside a nested object
                continue
            value = _scalar(path, raw)
            if field_name in _BOOLEANS:
                value = checks.flag(path, value, error=MegatronArgsError)
            if field_name == "gated_linear_unit":
                gated = bool(value)
                continue
            if field_name == "activation_func":
                activation = value
                continue
            if field_name == "tp_comm_overlap_cfg":
                ub = _userbuffers(raw)
                if ub is None and isinstance(raw, str):
                    args["tp_comm_overlap_cfg"], origin["tp_comm_overlap_cfg"] = raw, path
                continue
            if field_name == "share_embeddings_and_output_weights":
                dest, value = "untie_embeddings_and_output_weights", not value
            elif field_name == "grad_reduce_in_fp32":
                dest, value = "grad_reduce_in_bf16", not value
            elif field_name == "seq_length" and section == "dataset" and "seq_length" in args:
                continue
            else:
                dest = RENAMED.get(path, field_name)
            if dest in ("should_pad_vocab", "use_transformer_engine_full_layer_spec"):
                continue
            if dest in known or NO_EFFECT.fullmatch(dest):
                args[dest], origin[dest] = value, path
            elif (
                not _NO_EFFECT_HERE.fullmatch(path)
                and value not in (False, 0, "", [], {})
                and DEFAULTS.get(path, _UNSET) != value
            ):
                unread.append(path)
    if gated:
        args["swiglu"], origin["swiglu"] = True, "model.gated_linear_unit"
        if activation not in (None, "silu"):
            notes.append(
                f"model.activation_func {activation} with model.gated_linear_unit: priced as "
                "a gated MLP (its two up-projections), the activation's own cost as SiLU's"
            )
    if args.get("num_query_groups") is not None:
        args["group_query_attention"] = True
    pad = bool(flat.get("model.should_pad_vocab", False))
    remainders = _optimizer_fields(config.get("optimizer"), args, origin)
    return BridgeArguments(
        args, ub, pad, tuple(sorted(set(unread))), tuple(notes), origin, remainders
    )


#: ``optimizer`` (Megatron-Core's ``OptimizerConfig``) fields read: the precision-aware
#: optimizer's. Its ``main_grads_dtype`` is not: Megatron-Core's DDP keeps the gradients as
#: ``ddp.grad_reduce_in_fp32`` says (only Megatron-LM's arguments.py ties the two).
_OPTIMIZER_FIELDS: Final = (
    "use_precision_aware_optimizer", "exp_avg_dtype", "exp_avg_sq_dtype", "main_params_dtype",
)  # fmt: skip
#: A torch dtype as Bridge saves it (``{_target_: torch.bfloat16, _call_: false}``) → the
#: Megatron-LM argument's name for it (``map_dtype`` in arguments.py: fp8 is torch.uint8).
_DTYPE_NAMES: Final = {
    "float32": "fp32", "bfloat16": "bf16", "float16": "fp16", "uint8": "fp8",
    "fp32": "fp32", "bf16": "bf16", "fp16": "fp16", "fp8": "fp8",
}  # fmt: skip


def _optimizer_fields(
    section: object, args: dict[str, object], origin: dict[str, str]
) -> bool | None:
    """The precision-aware optimizer's fields of Bridge's ``optimizer`` section into ``args``
    (:data:`_OPTIMIZER_FIELDS`, dtypes by Megatron-LM's names); returns its
    ``store_param_remainders`` where given (no Megatron-LM argument sets it)."""
    if section is None:
        return None
    if not isinstance(section, Mapping):
        raise MegatronArgsError(
            f"optimizer: {type(section).__name__}; allowed: a mapping of its fields"
        )
    for name in _OPTIMIZER_FIELDS:
        raw = section.get(name)
        if raw is None:
            continue
        path = f"optimizer.{name}"
        value = _scalar(path, raw)
        if name == "use_precision_aware_optimizer":
            value = checks.flag(path, value, error=MegatronArgsError)
        else:
            dtype = _DTYPE_NAMES.get(str(value)) if isinstance(value, str) else None
            if dtype is None:
                raise MegatronArgsError(
                    f"{path}: {str(value)[:40]!r}; allowed: torch.float32, torch.bfloat16, "
                    "torch.float16, torch.uint8 (fp8), or fp32, bf16, fp16, fp8"
                )
            value = dtype
        args[name], origin[name] = value, path
    remainders = section.get("store_param_remainders")
    if remainders is None:
        return None
    return checks.flag("optimizer.store_param_remainders", remainders, error=MegatronArgsError)


#: Fields read as a flag here before a rename turns them over (the rest go through
#: ``megatron_job``, which checks its own flags).
_BOOLEANS: Final = frozenset(
    {"gated_linear_unit", "share_embeddings_and_output_weights", "grad_reduce_in_fp32"}
)
#: A value no field holds.
_UNSET: Final = object()


def _userbuffers(raw: object) -> dict[str, dict[str, object]] | None:
    """``comm_overlap.tp_comm_overlap_cfg`` as ``job.tp_overlap_cfg`` entries: a
    ``TransformerLayerTPOverlapCfg`` mapping's GEMMs, each with the fields commwall takes
    (``fp8_buf`` only where it is one flag: Bridge's ``PipelineOverlapCfg`` defaults it to a
    one-element tuple). ``None`` for anything else (a path is passed on as the flag)."""
    if not isinstance(raw, Mapping):
        return None
    out: dict[str, dict[str, object]] = {}
    for gemm, entry in raw.items():
        if gemm == "_target_" or entry is None:
            continue
        if not isinstance(entry, Mapping):
            raise MegatronArgsError(
                f"comm_overlap.tp_comm_overlap_cfg.{gemm}: {entry!r}; allowed: a mapping of "
                "its Userbuffers settings"
            )
        kept = {k: v for k, v in entry.items() if k in _UB_FIELDS}
        if not isinstance(kept.get("fp8_buf", False), bool):
            kept.pop("fp8_buf")
        out[str(gemm)] = kept
    return out


def bridge_job(
    config: Mapping[str, Any],
    variables: Mapping[str, str] | None = None,
    *,
    dispatcher_given: bool = False,
    seq_len_given: bool = False,
) -> MegatronJob:
    """The scenario fields a Megatron-Bridge ``ConfigContainer`` mapping is: its Megatron-LM
    arguments (:func:`bridge_arguments`) read by
    :func:`~commwall.megatron_args.megatron_job`, with its Userbuffers settings, its
    vocabulary padding, and every flag a message names given by its Bridge path
    (``model.num_moe_experts``, not ``--num-experts``)."""
    read = bridge_arguments(config)

    def field_of(dest: str) -> str:
        """The Bridge path of an argument: where it came from, else where Bridge keeps it."""
        if dest in read.origin:
            return read.origin[dest]
        if dest in _HOME:
            return _HOME[dest]
        return f"model.{dest}" if dest in FLAGS else f"--{dest.replace('_', '-')}"

    def path(text: str) -> str:
        return re.sub(
            r"--([a-z0-9][a-z0-9-]*)", lambda m: field_of(m.group(1).replace("-", "_")), text
        )

    try:
        job = megatron_job(
            read.arguments,
            variables,
            dispatcher_given=dispatcher_given,
            seq_len_given=seq_len_given,
        )
    except MegatronArgsError as err:
        raise MegatronArgsError(path(str(err))) from None
    fields = dict(job.job)
    model = job.model
    hf = config.get("model", {}).get("hf_model_id")
    if (
        model is not None
        and isinstance(hf, str)
        and re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,63}", tail := hf.rsplit("/", 1)[-1])
    ):
        model = {"name": tail.lower(), **model}  # the Hugging Face model it was built from
    if read.tp_overlap_cfg is not None:
        fields["tp_overlap_cfg"] = read.tp_overlap_cfg
    if read.store_param_remainders is False:
        fields["store_param_remainders"] = False
    # a saved config holds every field: one Megatron-LM reads only beside another (a MoE
    # flag of a dense model, an FP8 recipe in BF16) leaves this step alone
    irrelevant = [t for t in job.unread if t[2:].replace("-", "_") in FLAGS]
    not_priced = [path(t) for t in job.not_priced]
    softmax = _scalar("model.softmax_type", config.get("model", {}).get("softmax_type"))
    if softmax not in (None, "vanilla"):
        not_priced.append(
            f"model.softmax_type {softmax}: the attention's learnable or off-by-one softmax "
            "offsets (sinks), priced as the plain softmax"
        )
    return MegatronJob(
        fields,
        model,
        vocab_multiple=job.vocab_multiple if read.pad_vocab else 1,
        not_priced=tuple(not_priced),
        ignored=tuple(sorted(path(t) for t in (*job.ignored, *irrelevant))),
        unread=tuple(sorted({*(path(t) for t in job.unread if t not in irrelevant), *read.unread})),
        notes=tuple(path(t) for t in (*read.notes, *job.notes)),
    )


def launch_job(
    source: str | Mapping[str, Any],
    variables: Mapping[str, str] | None = None,
    *,
    dispatcher_given: bool = False,
    seq_len_given: bool = False,
) -> MegatronJob:
    """A launch's scenario fields, whichever way it is written: a Megatron-Bridge
    ``ConfigContainer`` (:func:`is_bridge_config`: :func:`bridge_job`), else Megatron-LM's
    arguments as shell text or a mapping (:func:`~commwall.megatron_args.megatron_job`)."""
    if not isinstance(source, str) and is_bridge_config(source):
        return bridge_job(
            source, variables, dispatcher_given=dispatcher_given, seq_len_given=seq_len_given
        )
    return megatron_job(
        source, variables, dispatcher_given=dispatcher_given, seq_len_given=seq_len_given
    )
