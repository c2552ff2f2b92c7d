"""A Megatron-LM launch as a scenario job: ``pretrain_gpt.py``'s arguments → job and model fields.

A Megatron-LM user describes a run by its command line (a launch script's ``--flag value``
words) or, in Megatron-LM's recipes (``examples/moe_recipes/*.yaml``), by an ``ARGS:`` mapping
of the same names. :func:`megatron_job` reads either and gives the scenario fields the run
is, with Megatron-LM's own default for every flag left out — which is not always commwall's:
no recomputation, no sequence parallelism, no distributed optimizer, no DP overlap, attention
dropout 0.1, the all-gather MoE dispatcher, learned absolute positions, LayerNorm, linear
biases and a tied LM head unless the flags say otherwise (``megatron/training/arguments.py``
and the config dataclasses it adds flags from, ``megatron/core/transformer/
transformer_config.py`` and ``model_parallel_config.py``, NVIDIA/Megatron-LM @d98e8a64).

Every flag read is in :data:`FLAGS`. A flag commwall prices becomes a field; a flag that
changes the step but is not priced is reported in :attr:`MegatronJob.not_priced` with why; a
value commwall cannot represent (the all-gather dispatcher across expert ranks, NCCL-EP,
a custom FP8 recipe) and an architecture it does not describe (:data:`REFUSED`) are refused
by name, never approximated; a flag without effect on the step (learning rate, data,
checkpoints, logging) is listed in :attr:`MegatronJob.ignored`, and any other in
:attr:`MegatronJob.unread`, for the user to check.

Shell text is split into words as POSIX ``sh`` would (comments dropped, ``\\``-newlines joined)
after expanding ``$NAME``, ``${NAME}`` and ``${NAME:-default}`` from the variables given (the
launch's environment) and the ``NAME=value`` assignments in the same text; its ``if``/``case``
branches are not evaluated (every branch's flags are read, the last of each winning, and a
note says so); a flag this module reads whose value still holds a ``$`` is refused with the
variable's name. The vocabulary comes from ``--vocab-size`` (Megatron-LM
takes it from the tokenizer, which is not read here), padded as Megatron pads it: up to a
multiple of ``--make-vocab-size-divisible-by`` (128) times the TP degree.
"""

from __future__ import annotations

import ast
import contextlib
import math
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from commwall import checks
from commwall.errors import CommwallError

__all__ = [
    "FLAGS",
    "MegatronArgsError",
    "MegatronJob",
    "megatron_job",
    "padded_vocab",
    "read_args",
]

Kind = Literal["bool", "int", "float", "str", "list"]

#: Flags read, by argparse ``dest`` (dashes as underscores): their kind. ``bool`` flags are
#: ``store_true``; :data:`ALIASES` names the ``store_false`` ones and those whose ``dest``
#: differs, :data:`_ON_BY_DEFAULT` the flags Megatron-LM has on unless turned off.
FLAGS: Final[dict[str, Kind]] = {
    # parallelism and batch
    "tensor_model_parallel_size": "int",
    "pipeline_model_parallel_size": "int",
    "context_parallel_size": "int",
    "cp_comm_type": "list",
    "hierarchical_context_parallel_sizes": "list",
    "expert_model_parallel_size": "int",
    "expert_tensor_parallel_size": "int",
    "num_layers_per_virtual_pipeline_stage": "int",
    "num_virtual_stages_per_pipeline_rank": "int",
    "virtual_pipeline_model_parallel_size": "int",
    "pipeline_model_parallel_layout": "str",
    "decoder_first_pipeline_num_layers": "int",
    "decoder_last_pipeline_num_layers": "int",
    "account_for_embedding_in_pipeline_split": "bool",
    "account_for_loss_in_pipeline_split": "bool",
    "sequence_parallel": "bool",
    "micro_batch_size": "int",
    "global_batch_size": "int",
    "seq_length": "int",
    # precision
    "bf16": "bool",
    "fp16": "bool",
    "fp8": "str",
    "fp8_recipe": "str",
    "fp4": "str",
    "fp4_recipe": "str",
    "fp8_param_gather": "bool",
    "fp8_dot_product_attention": "bool",
    "first_last_layers_bf16": "bool",
    "num_layers_at_start_in_bf16": "int",
    "num_layers_at_end_in_bf16": "int",
    "grad_reduce_in_bf16": "bool",
    "accumulate_allreduce_grads_in_fp32": "bool",
    "use_precision_aware_optimizer": "bool",
    "main_grads_dtype": "str",
    "main_params_dtype": "str",
    "exp_avg_dtype": "str",
    "exp_avg_sq_dtype": "str",
    # data parallelism
    "use_distributed_optimizer": "bool",
    "use_torch_fsdp2": "bool",
    "use_megatron_fsdp": "bool",
    "data_parallel_sharding_strategy": "str",
    "overlap_grad_reduce": "bool",
    "overlap_param_gather": "bool",
    "align_param_gather": "bool",
    "ddp_bucket_size": "int",
    "num_distributed_optimizer_instances": "int",
    "check_for_nan_in_loss_and_grad": "bool",
    # tensor parallelism and NCCL
    "tp_comm_overlap": "bool",
    "tp_comm_overlap_cfg": "str",
    "nccl_communicator_config_path": "str",
    # kernels
    "attention_backend": "str",
    "use_flash_attn": "bool",
    "attention_dropout": "float",
    "hidden_dropout": "float",
    "cross_entropy_loss_fusion": "bool",
    "cross_entropy_fusion_impl": "str",
    "recompute_granularity": "str",
    "recompute_method": "str",
    "recompute_num_layers": "int",
    "recompute_modules": "list",
    "cuda_graph_impl": "str",
    "manual_gc": "bool",
    "delay_wgrad_compute": "bool",
    "use_transformer_engine_op_fuser": "bool",
    "activation_func_clamp_value": "float",
    # MoE
    "num_experts": "int",
    "moe_router_topk": "int",
    "moe_ffn_hidden_size": "int",
    "moe_shared_expert_intermediate_size": "int",
    "moe_layer_freq": "str",
    "moe_router_num_groups": "int",
    "moe_router_group_topk": "int",
    "moe_token_dispatcher_type": "str",
    "moe_flex_dispatcher_backend": "str",
    "moe_enable_deepep": "bool",
    "overlap_moe_expert_parallel_comm": "bool",
    "moe_pad_expert_input_to_capacity": "bool",
    "moe_paged_stash": "bool",
    "moe_grouped_gemm": "bool",
    "moe_router_force_load_balancing": "bool",
    "mtp_num_layers": "int",
    "mtp_use_repeated_layer": "bool",
    "mtp_hybrid_override_pattern": "str",
    # the model
    "num_layers": "int",
    "hidden_size": "int",
    "ffn_hidden_size": "int",
    "num_attention_heads": "int",
    "group_query_attention": "bool",
    "num_query_groups": "int",
    "kv_channels": "int",
    "vocab_size": "int",
    "make_vocab_size_divisible_by": "int",
    "max_position_embeddings": "int",
    "swiglu": "bool",
    "untie_embeddings_and_output_weights": "bool",
    "normalization": "str",
    "add_bias_linear": "bool",
    "add_qkv_bias": "bool",
    "position_embedding_type": "str",
    "qk_layernorm": "bool",
    "multi_latent_attention": "bool",
    "q_lora_rank": "int",
    "kv_lora_rank": "int",
    "qk_head_dim": "int",
    "qk_pos_emb_head_dim": "int",
    "v_head_dim": "int",
    "window_size": "str",
    "window_attn_skip_freq": "str",
    "hybrid_override_pattern": "str",
    "hybrid_layer_pattern": "str",
    "mamba_num_heads": "int",
    "mamba_head_dim": "int",
    "mamba_state_dim": "int",
    "mamba_num_groups": "int",
}

#: Flags whose name differs from the ``dest`` they set: name → (dest, value stored).
ALIASES: Final[dict[str, tuple[str, object]]] = {
    "fp8_format": ("fp8", None),
    "fp4_format": ("fp4", None),
    "disable_bias_linear": ("add_bias_linear", False),
    "no_align_param_gather": ("align_param_gather", False),
    "no_check_for_nan_in_loss_and_grad": ("check_for_nan_in_loss_and_grad", False),
    "recompute_activations": ("recompute_granularity", "selective"),
}

#: Flags that change the model beyond what commwall describes: refused, with why.
REFUSED: Final[dict[str, str]] = {
    "experimental_attention_variant": "an experimental attention (sparse, compressed) is not "
    "priced",
    "enable_hyper_connections": "hyper-connections' residual streams are not priced",
    "heterogeneous_layers_config_path": "per-layer architectures are not read",
    "moe_latent_size": "latent MoE (experts on a projected hidden state) is not priced",
    "spec": "a custom layer spec is not read",
    "yaml_cfg": "a YAML config of arguments: pass the file itself to megatron_args",
}

#: Flags that do not change the step's time (optimisation hyperparameters, data, tokenizer,
#: checkpoints, logging, evaluation, the launcher, numerics inside a kernel) or that name
#: fusions commwall always prices fused (the permutation, the router, gradient accumulation).
NO_EFFECT: Final = re.compile(
    r"(?:lr|min_lr|lr_\w+|\w+_lr|weight_decay\w*|start_weight_decay|end_weight_decay|adam_\w+|"
    r"sgd_\w+|clip_grad|optimizer|init_method_\w+|seed|data_\w+|split|mock_data|vocab_file|"
    r"merge_file|tokenizer_\w+|tiktoken_\w+|load|save|save_\w+|no_save_\w+|no_load_\w+|"
    r"\w*ckpt\w*|finetune|pretrained_\w+|log_\w+|logging_level|tensorboard_\w+|wandb_\w+|"
    r"timing_log_\w+|eval_\w+|train_iters|train_samples|exit_\w+|skip_train|profile|"
    r"profile_\w+|nproc_per_node|nnodes|node_rank|master_addr|master_port|rdzv_\w+|"
    r"distributed_backend|distributed_timeout_minutes|num_workers|no_mmap_bin_files|"
    r"no_create_attention_mask_in_dataloader|use_mcore_models|transformer_impl|"
    r"enable_experimental|norm_epsilon|rotary_base|rotary_percent|rotary_interleaved|"
    r"rotary_scaling_factor|rotary_seq_len_interpolation_factor|mscale|mscale_all_dim|"
    r"original_max_position_embeddings|moe_aux_loss_coeff|moe_z_loss_coeff|"
    r"moe_router_load_balancing_type|moe_router_pre_softmax|moe_router_score_function|"
    r"moe_router_topk_scaling_factor|moe_router_enable_expert_bias|"
    r"moe_router_bias_update_rate|moe_router_dtype|moe_input_jitter_eps|"
    r"mtp_loss_scaling_factor|calculate_per_token_loss|apply_layernorm_1p|fp8_amax_\w+|"
    r"fp8_margin|fp8_interval|manual_gc_interval|manual_gc_eval|empty_unused_memory_level|"
    r"moe_permute_fusion|moe_router_fusion|no_gradient_accumulation_fusion|"
    r"no_bias_swiglu_fusion|no_bias_dropout_fusion|no_masked_softmax_fusion|"
    r"no_rope_fusion|apply_rope_fusion|bias_swiglu_fusion|test_\w+|"
    r"ddp_average_in_collective|"
    r"overlap_param_gather_with_optimizer_step|use_te_rng_tracker|te_rng_tracker|"
    r"moe_hybridep_num_sms|cuda_graph_scope|cuda_graph_warmup_steps|tp_comm_bootstrap_backend|"
    r"dist_ckpt_strictness|auto_detect_ckpt_format|use_dist_ckpt|async_save|"
    r"check_weight_hash_across_dp_replicas_interval|rerun_mode|fake_process_group|"
    r"inference_\w+|microbatch_group_size_per_vp_stage|use_cpu_initialization|"
    r"no_persist_layer_norm|persist_layer_norm|attention_softmax_in_fp32|"
    r"untie_embeddings_and_output_weights_\w+|hidden_size_\w+|kv_channels_\w+)"
)

#: Megatron-LM's default of each bool flag that is on unless turned off.
_ON_BY_DEFAULT: Final = frozenset(
    {"align_param_gather", "check_for_nan_in_loss_and_grad", "add_bias_linear"}
)

#: Shell words that end a flag's run of values (array brackets, pipes, separators).
_SHELL_WORDS: Final = frozenset({"(", ")", "|", "||", "&&", ";", "&", "\\"})

#: The most layers a ``--moe-layer-freq`` list may spell out.
_MAX_LAYERS: Final = 100_000
#: The longest text read (a launch script is a few KB).
MAX_CHARS: Final = 1_000_000


class MegatronArgsError(CommwallError, ValueError):
    """Megatron-LM arguments that cannot become a job; the message names the flag."""


@dataclass(frozen=True)
class MegatronJob:
    """What a Megatron-LM launch is as scenario fields."""

    job: dict[str, Any]  #: JobSpec fields (no ``model``)
    model: dict[str, Any] | None  #: ModelDef fields, when the flags define the architecture
    #: Megatron pads the vocabulary to a multiple of this (:func:`padded_vocab`)
    vocab_multiple: int = 128
    not_priced: tuple[str, ...] = ()  #: flags that change the step and are not priced, with why
    ignored: tuple[str, ...] = ()  #: flags that do not change the step (sorted)
    #: flags neither read nor known to leave the step alone: check them (sorted)
    unread: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default=())  #: defaults taken and how values were read


def padded_vocab(vocab: int, multiple: int) -> int:
    """The vocabulary Megatron-LM builds its embedding and LM head for: ``vocab`` rounded up to
    a multiple of ``--make-vocab-size-divisible-by`` × TP (``megatron/training/vocab_utils.py``,
    ``megatron/core/tokenizers/utils/build_tokenizer.py``).

    >>> padded_vocab(128256, 128), padded_vocab(151936, 1187), padded_vocab(50257, 128 * 8)
    (128256, 151936, 51200)
    """
    return -(-vocab // multiple) * multiple


# ---- reading the words ----------------------------------------------------------------------

_INT = re.compile(r"[+-]?[0-9]{1,30}")
_ARRAY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\+?=\(")
_ASSIGN = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$")
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?[-=]([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)")


def _expand(text: str, env: Mapping[str, str]) -> str:
    def one(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(3)
        if name in env:
            return env[name]
        if m.group(1) and m.group(2) is not None:
            return m.group(2)
        return m.group(0)

    return _VAR.sub(one, text)


def _assignments(text: str, given: Mapping[str, str]) -> dict[str, str]:
    """The variables ``given`` (as the launch's environment, which wins) and the text's
    ``NAME=value`` lines (with or without ``export``), in order, each expanded with the ones
    before it; a value that is not one shell word (an array, a command) is skipped."""
    env: dict[str, str] = dict(given)
    for line in text.splitlines():
        m = _ASSIGN.match(line)
        if not m or m.group(2).startswith("(") or m.group(1) in given:
            continue
        try:
            words = shlex.split(_expand(m.group(2), env), comments=True)
        except ValueError:
            continue
        if len(words) <= 1:
            env[m.group(1)] = words[0] if words else ""
    return env


def _words(text: str, given: Mapping[str, str]) -> list[str]:
    if len(text) > MAX_CHARS:
        raise MegatronArgsError(
            f"the arguments run to {len(text):,} characters; a launch is a few KB"
        )
    if "\x00" in text:
        raise MegatronArgsError("the arguments hold a NUL byte: a binary file, not a launch script")
    joined = re.sub(r"\\\r?\n", " ", text)
    expanded = _expand(joined, _assignments(joined, given))
    try:
        words = shlex.split(expanded, comments=True)
    except ValueError as err:
        raise MegatronArgsError(f"the arguments cannot be split as shell words: {err}") from None
    out: list[str] = []
    for word in words:
        opened = _ARRAY.match(word)  # ARGS=(--flag or ARGS+=("--flag value"
        if opened:
            word = word[opened.end() :]
        closed = word.endswith(")") and "(" not in word  # the array's last element
        word = word.removesuffix(")") if closed else word
        # a quoted "--flag value" (a bash array's element) is a flag and its value
        out.extend(word.split() if word.startswith("--") else [word] if word else [])
        if closed:
            out.append(")")
    return out


def has_conditionals(text: str) -> bool:
    """Whether shell text branches (``if``/``case``): its flags are read from every branch."""
    return re.search(r"(?m)^\s*(?:if|elif|case)\b", text) is not None


def _dest(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")


def read_args(
    source: str | Mapping[str, Any], variables: Mapping[str, str] | None = None
) -> dict[str, object]:
    """The flags ``source`` gives, by ``dest``, the last of each winning (as argparse does):
    shell text (``--flag value`` words anywhere in it) or a mapping of flag names (dashes or
    underscores, with or without ``--``) to values (Megatron-LM's recipe ``ARGS``, the MoE
    model zoo's ``MODEL_ARGS``). Bool flags read true when present, and a mapping's false
    leaves one out. ``variables`` expand ``$NAME`` and ``${NAME}`` in either form, as the
    launch's environment would (winning over the text's own ``NAME=value`` lines)."""
    given = dict(variables or {})
    out: dict[str, object] = {}
    if isinstance(source, Mapping):
        for key, value in source.items():
            if not isinstance(key, str):
                raise MegatronArgsError(f"argument name {key!r} is not text")
            _store(out, _dest(key), _expand(value, given) if isinstance(value, str) else value)
        return out
    words = _words(source, given)
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if not word.startswith("--") or word == "--":
            continue
        name, eq, inline = word[2:].partition("=")
        dest = _dest(name)
        target, fixed = ALIASES.get(dest, (dest, None))
        kind = FLAGS.get(target)
        if eq:
            _store(out, dest, inline)
        elif kind == "bool" or fixed is not None:
            _store(out, dest, True)
        else:
            values: list[str] = []
            while i < len(words) and not words[i].startswith("--"):
                if words[i] in _SHELL_WORDS:
                    break
                values.append(words[i])
                i += 1
                if kind != "list":
                    break
            _store(out, dest, values if kind == "list" else values[0] if values else True)
    return out


def _store(out: dict[str, object], dest: str, value: object) -> None:
    if dest in ALIASES:
        target, fixed = ALIASES[dest]
        if fixed is not None:
            if value is False:
                return
            value = fixed
        dest = target
    elif FLAGS.get(dest) == "bool" and value is False and dest not in _ON_BY_DEFAULT:
        out.pop(dest, None)
        return
    out[dest] = value


# ---- typed access ---------------------------------------------------------------------------


def _flag(dest: str) -> str:
    return f"--{dest.replace('_', '-')}"


class _Args:
    def __init__(self, raw: dict[str, object]) -> None:
        self.raw = raw
        self.used: set[str] = set()

    def has(self, dest: str) -> bool:
        return dest in self.raw

    def _value(self, dest: str) -> object:
        self.used.add(dest)
        value = self.raw[dest]
        if isinstance(value, str) and "$" in value:
            var = _VAR.search(value)
            raise MegatronArgsError(
                f"{_flag(dest)}: {value!r} holds the shell variable "
                f"{var.group(0) if var else '$'}, which no NAME=value line in the arguments sets; "
                "give its value (a scenario's job.megatron_vars, commwall megatron --var NAME=V)"
            )
        return value

    def flag(self, dest: str) -> bool:
        if dest not in self.raw:
            self.used.add(dest)
            return dest in _ON_BY_DEFAULT
        return checks.flag(_flag(dest), self._value(dest), error=MegatronArgsError)

    def whole(self, dest: str, default: int | None = None, *, least: int = 1) -> int | None:
        if dest not in self.raw:
            return default
        value = self._value(dest)
        if isinstance(value, str) and _INT.fullmatch(value.strip()):
            value = int(value)
        return checks.whole(_flag(dest), value, least, 10**9, error=MegatronArgsError)

    def share(self, dest: str, default: float, *, top: float = 1.0) -> float:
        if dest not in self.raw:
            return default
        value = self._value(dest)
        if isinstance(value, str) and re.fullmatch(r"[0-9.eE+-]+", value.strip()):
            with contextlib.suppress(ValueError):
                value = float(value)
        return checks.number(_flag(dest), value, 0.0, top, error=MegatronArgsError)

    def text(self, dest: str, default: str | None = None) -> str | None:
        if dest not in self.raw:
            return default
        value = self._value(dest)
        if isinstance(value, list) and len(value) == 1:
            value = value[0]
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            raise MegatronArgsError(f"{_flag(dest)}: {value!r} is not one value")
        return str(value)

    def choice(self, dest: str, default: str, allowed: tuple[str, ...]) -> str:
        value = self.text(dest, default)
        return checks.choice(_flag(dest), value, allowed, error=MegatronArgsError)

    def words(self, dest: str) -> list[str] | None:
        if dest not in self.raw:
            return None
        value = self._value(dest)
        items = value if isinstance(value, list) else str(value).replace(",", " ").split()
        return [str(v) for v in items]


# ---- the job --------------------------------------------------------------------------------


def megatron_job(
    source: str | Mapping[str, Any],
    variables: Mapping[str, str] | None = None,
    *,
    dispatcher_given: bool = False,
    seq_len_given: bool = False,
) -> MegatronJob:
    """The scenario fields a Megatron-LM launch is (module docstring): ``source`` is shell
    text or a mapping of arguments (a recipe's ``ARGS``); ``variables`` are the launch's
    environment (``TP: 8``), expanded where the flags name them (:func:`read_args`);
    ``dispatcher_given``: the job names its MoE dispatcher itself, so the flags' is not read
    (a launcher may add it: the MoE model zoo's ``DISPATCHER=``); ``seq_len_given``: the job
    gives its sequence length itself, so the flags need not (a Megatron-Bridge override file
    leaves it to its recipe)."""
    args = _Args(read_args(source, variables))
    for dest, why in REFUSED.items():
        value = args.raw.get(dest)
        if value is not None and value is not False and value != "false":
            raise MegatronArgsError(f"{_flag(dest)}: {why}")
    notes: list[str] = []
    if isinstance(source, str) and has_conditionals(source):
        notes.append(
            "the text branches (if/case), which is not evaluated: every branch's flags are "
            "read, the last of each winning; check the reading"
        )
    not_priced: list[str] = []
    model = _model(args, notes)
    job: dict[str, Any] = {}
    tp = args.whole("tensor_model_parallel_size", 1)
    pp = args.whole("pipeline_model_parallel_size", 1)
    assert tp is not None and pp is not None
    job["tp"], job["pp"] = tp, pp
    job["cp"] = args.whole("context_parallel_size", 1)
    job["ep"] = args.whole("expert_model_parallel_size", 1)
    if args.has("expert_tensor_parallel_size"):
        job["expert_tp"] = args.whole("expert_tensor_parallel_size")
    _context(args, job)
    vp = _virtual_stages(args, job, model)
    _layout(args, job, model, vp, notes)
    job["sequence_parallel"] = args.flag("sequence_parallel") and tp > 1
    if args.flag("sequence_parallel") and tp == 1:
        notes.append("--sequence-parallel with TP 1: Megatron-LM turns it off")
    job["micro_batch"] = args.whole("micro_batch_size", 1)
    if args.has("global_batch_size"):  # else micro-batch × DP: the scenario asks for it
        job["global_batch"] = args.whole("global_batch_size")
    if args.has("seq_length"):
        job["seq_len"] = args.whole("seq_length")
    elif not seq_len_given:
        raise MegatronArgsError(
            "--seq-length is not given (Megatron-LM requires it); give it, or job.seq_len"
        )
    _precision(args, job, not_priced, notes)
    _data_parallel(args, job, vp, not_priced)
    _kernels(args, job, not_priced, notes)
    if args.has("num_experts"):
        _moe(args, job, not_priced, notes, dispatcher_given)
    depths = _mtp_depths(args, notes)
    if depths is not None:
        job["mtp_layers"] = depths
    elif args.has("mtp_num_layers"):
        job["mtp_layers"] = _mtp(args)
    if args.flag("mtp_use_repeated_layer") and job.get("mtp_layers"):
        job["mtp_shared"] = True
    if args.flag("use_transformer_engine_op_fuser"):
        job["te_op_fuser"] = True
    for dest in ("tp_comm_overlap_cfg", "nccl_communicator_config_path"):
        if args.has(dest):
            key = "tp_overlap_cfg" if dest == "tp_comm_overlap_cfg" else "nccl_communicators"
            job[key] = args.text(dest)
    job["tp_comm_overlap"] = args.flag("tp_comm_overlap")
    multiple = (args.whole("make_vocab_size_divisible_by", 128) or 128) * tp
    rest = sorted(d for d in args.raw if d not in args.used)
    ignored = tuple(_flag(d) for d in rest if NO_EFFECT.fullmatch(d))
    unread = tuple(_flag(d) for d in rest if not NO_EFFECT.fullmatch(d))
    return MegatronJob(
        job,
        model,
        vocab_multiple=multiple,
        not_priced=tuple(not_priced),
        ignored=ignored,
        unread=unread,
        notes=tuple(notes),
    )


def _model(args: _Args, notes: list[str]) -> dict[str, Any] | None:
    pattern, mtp_pattern, _ = _hybrid_parts(args)
    core = ("num_layers", "hidden_size", "num_attention_heads")
    if not any(args.has(d) for d in core) and pattern is None:
        return None
    missing = [d for d in core if not args.has(d) and not (d == "num_layers" and pattern)]
    if missing:
        raise MegatronArgsError(
            "the arguments define part of a model: give "
            + ", ".join(_flag(d) for d in missing)
            + " too, or none of the architecture flags and name the model in job.model"
        )
    hidden = args.whole("hidden_size")
    heads = args.whole("num_attention_heads")
    assert hidden is not None and heads is not None
    gated = args.flag("swiglu")
    ffn = args.whole("ffn_hidden_size")
    if ffn is None:
        ffn = int((4 * hidden * 2 / 3) / 64) * 64 if gated else 4 * hidden
        notes.append(f"no --ffn-hidden-size: Megatron-LM's default, {ffn}")
    kv = heads
    if args.flag("group_query_attention"):
        kv = args.whole("num_query_groups", 1) or 1
    m: dict[str, Any] = {
        "hidden": hidden,
        "n_heads": heads,
        "n_kv_heads": kv,
        "ffn_hidden": ffn,
        "gated_mlp": gated,
        "tied_embeddings": not args.flag("untie_embeddings_and_output_weights"),
        "linear_bias": args.flag("add_bias_linear"),
        "qkv_bias": args.flag("add_qkv_bias"),
    }
    if pattern is not None:
        m["hybrid_pattern"] = pattern
        if mtp_pattern is not None:
            m["mtp_pattern"] = mtp_pattern
        for dest, key in (
            ("mamba_num_heads", "mamba_heads"),
            ("mamba_head_dim", "mamba_head_dim"),
            ("mamba_state_dim", "mamba_state"),
            ("mamba_num_groups", "mamba_groups"),
        ):
            if args.has(dest):
                m[key] = args.whole(dest)
    if args.has("num_layers"):
        m["n_layers"] = args.whole("num_layers")
    elif pattern is not None:  # Megatron-LM derives --num-layers from the pattern
        m["n_layers"] = len(pattern)
    if args.has("kv_channels"):
        m["head_dim"] = args.whole("kv_channels")
    m["norm"] = args.choice("normalization", "LayerNorm", ("LayerNorm", "RMSNorm")).lower()
    position = args.choice(
        "position_embedding_type", "learned_absolute", ("learned_absolute", "rope", "yarn", "none")
    )
    m["learned_pos_emb"] = position == "learned_absolute"
    m["yarn_rope"] = position == "yarn"
    if position == "none":
        m["rotary"] = False
    if args.flag("qk_layernorm") and not args.flag("multi_latent_attention"):
        m["qk_norm"] = "head"  # with MLA the flag norms the latents, which MLA always has
    if args.has("activation_func_clamp_value"):
        m["activation_clamp"] = args.share("activation_func_clamp_value", 0.0, top=math.inf)
    if args.has("vocab_size"):
        m["vocab"] = args.whole("vocab_size")
    if args.has("max_position_embeddings"):
        m["max_seq_len"] = args.whole("max_position_embeddings")
    if args.flag("multi_latent_attention"):
        m["kv_lora_rank"] = args.whole("kv_lora_rank", 32)
        if args.has("q_lora_rank"):
            m["q_lora_rank"] = args.whole("q_lora_rank")
        m["head_dim"] = args.whole("qk_head_dim", 128)
        m["qk_rope_head_dim"] = args.whole("qk_pos_emb_head_dim", 64)
        m["v_head_dim"] = args.whole("v_head_dim", 128)
    if args.has("window_size"):
        m["sliding_window"] = _window(args.text("window_size") or "")
        windowed = _windowed_layers(args, m.get("n_layers"))
        if windowed is not None:
            m["sliding_window_layers"] = windowed
    elif args.has("window_attn_skip_freq"):
        _freq(args, "window_attn_skip_freq")  # read; without a window it changes nothing
    if args.has("num_experts"):
        m["n_experts"] = args.whole("num_experts")
        m["top_k"] = args.whole("moe_router_topk", 2)
        m["expert_ffn_hidden"] = args.whole("moe_ffn_hidden_size", ffn)
        if args.has("moe_shared_expert_intermediate_size"):
            m["shared_ffn_hidden"] = args.whole("moe_shared_expert_intermediate_size")
        if args.has("moe_router_num_groups"):
            m["expert_groups"] = args.whole("moe_router_num_groups")
            m["group_topk"] = args.whole("moe_router_group_topk", 1)
        freq = _layer_freq(args)
        if freq is not None:
            m["moe_layer_freq"] = freq
    return m


def _window(text: str) -> int:
    numbers = re.findall(r"-?\d+", text)
    if not numbers or int(numbers[0]) < 1 or any(int(n) > 0 for n in numbers[1:]):
        raise MegatronArgsError(
            f"--window-size: {text!r}; allowed: a left window and no right one, e.g. (4096, 0)"
        )
    return int(numbers[0])


def _layer_freq(args: _Args) -> int | list[int] | None:
    """``--moe-layer-freq`` (:func:`_freq`); 1, every layer, is the default."""
    freq = _freq(args, "moe_layer_freq")
    return None if freq == 1 else freq


def _windowed_layers(args: _Args, n_layers: object) -> int | None:
    """How many layers attend over ``--window-size``'s window: all without
    ``--window-attn-skip-freq``; with an integer N every layer but each N-th (1-based layer
    numbers, ``layer_number % N != 0``); with a list those marked 1
    (``is_layer_window_attention``, ``megatron/core/transformer/utils.py`` @d98e8a64).
    ``None``: all of them (the model's default)."""
    freq = _freq(args, "window_attn_skip_freq")
    if freq is None:
        return None
    if not isinstance(n_layers, int):
        raise MegatronArgsError(
            "--window-attn-skip-freq: which layers attend over the window needs --num-layers"
        )
    if isinstance(freq, int):
        return n_layers - n_layers // freq
    if len(freq) != n_layers:
        raise MegatronArgsError(
            f"--window-attn-skip-freq: a list of {len(freq)} layers for --num-layers {n_layers}"
        )
    return sum(freq)


def _freq(args: _Args, dest: str) -> int | list[int] | None:
    """A per-layer frequency flag (``--moe-layer-freq``, ``--window-attn-skip-freq``): an
    integer of at least 1, or a Python list expression Megatron-LM evaluates
    (``([0]*3+[1]*58)``), read here without evaluating code: list literals of 0 and 1 joined
    by ``+`` and repeated by ``*``."""
    raw = args.raw.get(dest)
    if isinstance(raw, list) and len(raw) > 1:  # a list already (a YAML mapping's)
        args.used.add(dest)
        if not all(type(v) is int and v in (0, 1) for v in raw) or len(raw) > _MAX_LAYERS:
            raise MegatronArgsError(
                f"{_flag(dest)}: {raw!r:.80}; allowed: an integer or a list of 0 and 1"
            )
        return list(raw)
    text = args.text(dest)
    if text is None:
        return None
    if _INT.fullmatch(text.strip()):
        return checks.whole(_flag(dest), int(text), 1, 10**9, error=MegatronArgsError)

    def ev(node: ast.expr) -> list[int]:
        if isinstance(node, ast.List) and all(
            isinstance(e, ast.Constant) and type(e.value) is int and e.value in (0, 1)
            for e in node.elts
        ):
            return [1 if e.value == 1 else 0 for e in node.elts if isinstance(e, ast.Constant)]
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            joined = ev(node.left) + ev(node.right)
            if len(joined) > _MAX_LAYERS:
                raise ValueError("too long")
            return joined
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
            count = node.right if isinstance(node.right, ast.Constant) else node.left
            seq = node.left if count is node.right else node.right
            if isinstance(count, ast.Constant) and type(count.value) is int:
                part = ev(seq)
                if not 0 <= count.value * len(part) <= _MAX_LAYERS:
                    raise ValueError("too long")
                return part * count.value
        raise ValueError("form")

    try:
        return ev(ast.parse(text.strip(), mode="eval").body)
    except (SyntaxError, ValueError, RecursionError):
        raise MegatronArgsError(
            f"{_flag(dest)}: {text!r}; allowed: an integer or a list of 0 and 1 such as "
            "([0]*3+[1]*58)"
        ) from None


def _context(args: _Args, job: dict[str, Any]) -> None:
    kinds = args.words("cp_comm_type")
    if kinds:
        if len(set(kinds)) > 1:
            raise MegatronArgsError(
                f"--cp-comm-type: {' '.join(kinds)} differs by layer; commwall runs one kind "
                "for every layer (p2p, all_gather, a2a, a2a+p2p)"
            )
        if kinds[0] not in ("p2p", "all_gather", "a2a", "a2a+p2p"):
            raise MegatronArgsError(
                f"--cp-comm-type: {kinds[0]!r}; allowed: p2p, all_gather, a2a, a2a+p2p"
            )
        job["cp_comm"] = kinds[0]
    sizes = args.words("hierarchical_context_parallel_sizes")
    if sizes:
        if not _INT.fullmatch(sizes[0]) or int(sizes[0]) < 1:
            raise MegatronArgsError(
                f"--hierarchical-context-parallel-sizes: {sizes[0]!r} is not a whole number"
            )
        job["cp_a2a"] = int(sizes[0])


def _virtual_stages(args: _Args, job: dict[str, Any], model: dict[str, Any] | None) -> int:
    """Model chunks per pipeline rank as Megatron-LM derives them: the number
    ``--num-virtual-stages-per-pipeline-rank`` gives, or the layers per stage (the embedding and
    the loss counted as layers when accounted for in the split) over
    ``--num-layers-per-virtual-pipeline-stage``; 0, and left out of the job, with a
    ``--pipeline-model-parallel-layout``, whose stages over PP the job resolves with the model
    (:func:`commwall.workload.job.resolve_job`)."""
    pp: int = job["pp"]
    if args.has("pipeline_model_parallel_layout"):
        return 0  # the layout's stages over PP (resolved with the model: workload.job)
    per = args.whole("num_layers_per_virtual_pipeline_stage")
    vp = args.whole("num_virtual_stages_per_pipeline_rank") or args.whole(
        "virtual_pipeline_model_parallel_size"
    )
    if per is not None and vp is None:
        layers = (model or {}).get("n_layers")
        if layers is None:
            raise MegatronArgsError(
                "--num-layers-per-virtual-pipeline-stage needs --num-layers; or give "
                "--num-virtual-stages-per-pipeline-rank"
            )
        slots = layers + args.flag("account_for_embedding_in_pipeline_split")
        slots += args.flag("account_for_loss_in_pipeline_split")
        if slots % pp or (slots // pp) % per:
            raise MegatronArgsError(
                f"--num-layers-per-virtual-pipeline-stage: {per} does not divide the {slots} "
                f"layers (embedding and loss counted where accounted for) of each of {pp} stages"
            )
        vp = slots // pp // per
    vp = vp or 1
    job["virtual_stages"] = vp
    return vp


def _mtp(args: _Args) -> int:
    return args.whole("mtp_num_layers", 0, least=0) or 0


def _hybrid_parts(args: _Args) -> tuple[str | None, str | None, int]:
    """A hybrid pattern's main part, its multi-token-prediction pattern and depth count:
    Megatron-Core's unified ``--hybrid-layer-pattern`` puts each depth's pattern after a ``/``
    (``M*M*/MM/MM``: two depths of ``MM``; every depth alike, ``parse_hybrid_pattern`` in
    ``megatron/core/models/hybrid/hybrid_layer_allocation.py`` @d98e8a6); without one, the
    legacy ``--mtp-hybrid-override-pattern`` gives the pattern and ``--mtp-num-layers`` the
    depths (0 here)."""
    pattern = args.text("hybrid_override_pattern") or args.text("hybrid_layer_pattern")
    if pattern is None or "/" not in pattern:
        return pattern, args.text("mtp_hybrid_override_pattern"), 0
    main, *depths = pattern.split("/")
    if not main:
        raise MegatronArgsError(
            f"--hybrid-layer-pattern: {pattern!r}; the model's layers come before the first / "
            "(a pattern of multi-token-prediction depths alone is not a model)"
        )
    if not any(depths):  # separators with nothing after them: no depths
        return main, None, 0
    if any(d != depths[0] for d in depths):
        raise MegatronArgsError(
            f"--hybrid-layer-pattern: {pattern!r}; every multi-token-prediction depth after a "
            "/ must have the same pattern (Megatron-Core asserts)"
        )
    return main, depths[0], len(depths)


def _mtp_depths(args: _Args, notes: list[str]) -> int | None:
    """The multi-token-prediction depths a unified hybrid pattern gives (None without any):
    they win over ``--mtp-num-layers``, as Megatron-LM's ``validate_args`` makes them."""
    _, _, depths = _hybrid_parts(args)
    if not depths:
        return None
    if args.has("mtp_num_layers") and _mtp(args) != depths:
        notes.append(
            f"--mtp-num-layers {_mtp(args)} against {depths} depths in --hybrid-layer-pattern: "
            "Megatron-LM uses the pattern's"
        )
    return depths


def _layout(
    args: _Args, job: dict[str, Any], model: dict[str, Any] | None, vp: int, notes: list[str]
) -> None:
    """``--pipeline-model-parallel-layout`` as given; ``--decoder-first/last-pipeline-num-layers``
    and ``--account-for-embedding/loss-in-pipeline-split`` written as the layout Megatron-Core
    builds from them (the remaining layers split evenly over the other stages)."""
    given = args.text("pipeline_model_parallel_layout")
    if given is not None:
        job["pipeline_layout"] = given
        return
    if job["pp"] * max(vp, 1) == 1:
        return
    first = args.whole("decoder_first_pipeline_num_layers")
    last = args.whole("decoder_last_pipeline_num_layers")
    embed = args.flag("account_for_embedding_in_pipeline_split")
    loss = args.flag("account_for_loss_in_pipeline_split")
    if first is None and last is None and not embed and not loss:
        return
    layers = (model or {}).get("n_layers")
    pp = job["pp"]
    if layers is None:
        raise MegatronArgsError(
            "an uneven pipeline split (--decoder-first/last-pipeline-num-layers, "
            "--account-for-embedding/loss-in-pipeline-split) needs --num-layers"
        )
    chunks = pp * vp
    if first is not None or last is not None:
        if vp > 1 or embed or loss:
            raise MegatronArgsError(
                "--decoder-first/last-pipeline-num-layers with virtual stages or the "
                "embedding/loss split: give --pipeline-model-parallel-layout instead"
            )
        middle = pp - (first is not None) - (last is not None)
        rest = layers - (first or 0) - (last or 0)
        if middle < 1 or rest % middle or rest < 0:
            raise MegatronArgsError(
                f"--decoder-first/last-pipeline-num-layers: the other {rest} layers do not split "
                f"evenly over {middle} stages"
            )
        counts = [rest // middle] * pp
        if first is not None:
            counts[0] = first
        if last is not None:
            counts[-1] = last
    else:
        slots = layers + embed + loss
        if slots % chunks:
            raise MegatronArgsError(
                f"--account-for-embedding/loss-in-pipeline-split: {layers} layers + "
                f"{int(embed) + int(loss)} do not split evenly over {chunks} model chunks"
            )
        counts = [slots // chunks] * chunks
        counts[0] -= embed
        counts[-1] -= loss
    parts = [f"t*{n}" if n else "" for n in counts]
    parts[0] = "E" + parts[0]
    parts[-1] = parts[-1] + "L"
    job["pipeline_layout"] = "|".join(parts)
    notes.append(f"pipeline layout {job['pipeline_layout']!r} from the uneven split")


def _precision(args: _Args, job: dict[str, Any], not_priced: list[str], notes: list[str]) -> None:
    fp8 = args.text("fp8")
    fp4 = args.text("fp4")
    if fp4 is not None:
        args.choice("fp4_recipe", "nvfp4", ("nvfp4",))  # the one FP4 recipe commwall prices
        job["precision"] = "fp4"
    elif fp8 is not None:
        if fp8 not in ("e4m3", "hybrid"):
            raise MegatronArgsError(f"--fp8-format: {fp8!r}; allowed: e4m3, hybrid")
        job["precision"] = "fp8"
        job["fp8_recipe"] = args.choice(
            "fp8_recipe", "delayed", ("delayed", "tensorwise", "mxfp8", "blockwise")
        )
    elif args.flag("bf16"):
        job["precision"] = "bf16"
    elif args.flag("fp16"):
        job["precision"] = "fp16"
    else:
        job["precision"] = "tf32"
        notes.append("neither --bf16 nor --fp16: Megatron-LM trains in fp32, priced as TF32")
    if fp8 is not None or fp4 is not None:
        job["fp8_param_gather"] = args.flag("fp8_param_gather")
        job["fp8_attention"] = args.flag("fp8_dot_product_attention")
        start = args.whole("num_layers_at_start_in_bf16", 1, least=0)
        end = args.whole("num_layers_at_end_in_bf16", 1, least=0)
        if args.flag("first_last_layers_bf16"):
            job["bf16_end_layers"] = [start, end]
    else:  # the flags keep layers out of an FP8 or FP4 autocast there is not: no effect
        args.used.update(
            ("first_last_layers_bf16", "num_layers_at_start_in_bf16", "num_layers_at_end_in_bf16")
        )
    main_grads = _optimizer_dtypes(args, job)
    # Megatron-LM's arguments.py: bf16 accumulates and reduces gradients in fp32 unless
    # --grad-reduce-in-bf16 or --main-grads-dtype bf16 (which forbids the fp32 accumulation)
    sixteen = args.flag("bf16") and not args.flag("grad_reduce_in_bf16") and main_grads == "fp32"
    job["grad_reduce_in_fp32"] = sixteen or args.flag("accumulate_allreduce_grads_in_fp32")
    if job["precision"] == "tf32":
        job["grad_reduce_in_fp32"] = True


def _optimizer_dtypes(args: _Args, job: dict[str, Any]) -> str:
    """The precision-aware optimizer's flags into the job (``--use-precision-aware-optimizer``,
    ``--exp-avg-dtype``, ``--exp-avg-sq-dtype``, ``--main-params-dtype``); returns
    ``--main-grads-dtype``, refused where Megatron-LM refuses it."""
    aware = args.flag("use_precision_aware_optimizer")
    moments = ("fp32", "fp16", "bf16", "fp8")
    dtypes = {
        "exp_avg_dtype": args.choice("exp_avg_dtype", "fp32", moments),
        "exp_avg_sq_dtype": args.choice("exp_avg_sq_dtype", "fp32", moments),
        "main_params_dtype": args.choice("main_params_dtype", "fp32", ("fp32", "fp16")),
    }
    main_grads = args.choice("main_grads_dtype", "fp32", ("fp32", "bf16"))
    lowered = [name for name, value in dtypes.items() if value != "fp32"]
    if main_grads != "fp32":
        lowered.append("main_grads_dtype")
    if lowered and not aware:
        raise MegatronArgsError(
            f"{_flag(lowered[0])}: other than fp32 needs --use-precision-aware-optimizer "
            "(Megatron-Core asserts it)"
        )
    if main_grads == "bf16" and args.flag("accumulate_allreduce_grads_in_fp32"):
        raise MegatronArgsError(
            "--main-grads-dtype: bf16 with --accumulate-allreduce-grads-in-fp32; Megatron-LM "
            "allows fp32 only there"
        )
    if aware:
        job["precision_aware_optimizer"] = True
        job.update({name: value for name, value in dtypes.items() if value != "fp32"})
    return main_grads


def _data_parallel(args: _Args, job: dict[str, Any], vp: int, not_priced: list[str]) -> None:
    if args.flag("use_torch_fsdp2") or (
        args.flag("use_megatron_fsdp")
        and args.text("data_parallel_sharding_strategy", "no_shard") == "optim_grads_params"
    ):
        job["zero_stage"] = 3
    elif args.flag("use_megatron_fsdp"):
        strategy = args.text("data_parallel_sharding_strategy", "no_shard")
        job["zero_stage"] = {"no_shard": 0, "optim": 1, "optim_grads": 2}.get(strategy or "", 0)
    else:
        job["zero_stage"] = 1 if args.flag("use_distributed_optimizer") else 0
    job["overlap_grad_reduce"] = args.flag("overlap_grad_reduce")
    job["overlap_param_gather"] = args.flag("overlap_param_gather")
    job["overlap"] = job["overlap_grad_reduce"]
    # Megatron-LM aligns the gathers only with virtual stages; a layout's are counted later
    job["align_param_gather"] = args.flag("align_param_gather") and vp != 1
    size = args.whole("ddp_bucket_size")
    if size is not None:
        job["ddp_bucket"] = size * (4 if job["precision"] == "tf32" else 2)
    instances = args.whole("num_distributed_optimizer_instances")
    if instances is not None and instances > 1:
        # partial sharding: the distributed optimizer over 1/instances of the data-parallel
        # ranks, its shards all-reduced across the instances (DistributedDataParallelConfig)
        job["dp_replicate"] = instances
        if args.flag("use_megatron_fsdp") and job["zero_stage"] >= 2:
            not_priced.append(
                f"--num-distributed-optimizer-instances {instances} with Megatron-FSDP: its "
                "hybrid sharding all-reduces the replicas on the last micro-batch only "
                "(megatron_fsdp.py), priced on every micro-batch as FSDP2 does"
            )
    if args.flag("check_for_nan_in_loss_and_grad"):
        not_priced.append(
            "--check-for-nan-in-loss-and-grad (Megatron-LM's default; "
            "--no-check-for-nan-in-loss-and-grad turns it off): each gradient bucket's norm and "
            "two host synchronisations before its reduce-scatter"
        )


def _kernels(args: _Args, job: dict[str, Any], not_priced: list[str], notes: list[str]) -> None:
    backend = args.choice(
        "attention_backend", "auto", ("auto", "fused", "flash", "unfused", "local")
    )
    job["attention"] = {"flash": "flash2", "unfused": "unfused", "local": "unfused"}.get(
        backend, "flash"
    )
    args.flag("use_flash_attn")  # read: with Transformer Engine, TE picks the kernel (auto)
    job["attention_dropout"] = args.share("attention_dropout", 0.1)
    if args.share("hidden_dropout", 0.1) > 0:
        not_priced.append(
            "--hidden-dropout (Megatron-LM's default 0.1): the dropout masks fused into the "
            "bias-dropout-add kernels"
        )
    if args.flag("cross_entropy_loss_fusion"):
        impl = args.choice("cross_entropy_fusion_impl", "native", ("native", "te"))
        job["cross_entropy"] = "te" if impl == "te" else "fused"
    else:
        job["cross_entropy"] = "unfused"
    job["recompute"] = args.choice("recompute_granularity", "none", ("none", "full", "selective"))
    if args.has("recompute_method"):
        job["recompute_method"] = args.choice("recompute_method", "uniform", ("uniform", "block"))
    if args.has("recompute_num_layers"):
        job["recompute_num_layers"] = args.whole("recompute_num_layers")
    modules = args.words("recompute_modules")
    if modules:
        job["recompute_modules"] = modules
    graphs = args.text("cuda_graph_impl", "none")
    if graphs != "none":
        not_priced.append(
            f"--cuda-graph-impl {graphs}: CUDA graphs' saved launch time (a MoE dispatch that "
            "never waits is moe_sync_free)"
        )
    if args.flag("manual_gc"):
        notes.append("--manual-gc: Python's collector runs at the interval, not in the step")
    if args.flag("delay_wgrad_compute"):
        not_priced.append("--delay-wgrad-compute: weight gradients deferred behind the all-to-all")


def _moe(
    args: _Args, job: dict[str, Any], not_priced: list[str], notes: list[str], given: bool
) -> None:
    _dispatcher(args, job, notes, given)
    job["moe_a2a_overlap"] = args.flag("overlap_moe_expert_parallel_comm")
    job["moe_sync_free"] = args.flag("moe_pad_expert_input_to_capacity") or args.flag(
        "moe_paged_stash"
    )
    if not args.flag("moe_grouped_gemm"):
        not_priced.append(
            "no --moe-grouped-gemm: Megatron-Core's SequentialMLP runs one expert after "
            "another (priced as the grouped GEMMs)"
        )
    if not args.flag("moe_router_force_load_balancing"):
        notes.append("experts priced evenly loaded (as --moe-router-force-load-balancing runs)")


def _dispatcher(args: _Args, job: dict[str, Any], notes: list[str], given: bool) -> None:
    """``--moe-token-dispatcher-type`` (Megatron-LM's default ``allgather``, refused across
    expert ranks), ``flex`` with its backend, or the older ``--moe-enable-deepep``; nothing
    when the job names its dispatcher."""
    if given:
        args.used.update(("moe_token_dispatcher_type", "moe_flex_dispatcher_backend"))
        args.used.add("moe_enable_deepep")
        return
    kind = args.choice("moe_token_dispatcher_type", "allgather", ("allgather", "alltoall", "flex"))
    if args.flag("moe_enable_deepep"):
        kind, backend = "flex", "deepep"
    else:
        backend = args.choice("moe_flex_dispatcher_backend", "deepep", ("deepep", "hybridep"))
    if kind == "allgather":
        if job["ep"] > 1:
            raise MegatronArgsError(
                "--moe-token-dispatcher-type allgather (Megatron-LM's default) across "
                f"{job['ep']} expert ranks is not modelled; allowed: alltoall, or flex with "
                "--moe-flex-dispatcher-backend deepep or hybridep (or job.moe_dispatcher beside "
                "megatron_args, where a launcher adds the flag)"
            )
        notes.append("the all-gather dispatcher with EP 1: no token moves between GPUs")
        job["moe_dispatcher"] = "alltoall"
    else:
        job["moe_dispatcher"] = "alltoall" if kind == "alltoall" else backend
