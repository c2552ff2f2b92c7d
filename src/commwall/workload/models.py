"""Model zoo: decoder-only transformer architectures as data.

A :class:`ModelSpec` holds the hyper-parameters of one published model (the values of its
Hugging Face ``config.json`` or of the paper's architecture table) and derives from them what the
rest of commwall needs: parameter counts, training FLOPs per token and the list of gradient
tensors in module-registration order (which DDP buckets in reverse).

Parameter counting follows the modules of the reference implementations (Hugging Face
``LlamaForCausalLM`` / ``MixtralForCausalLM`` / ``GPT2LMHeadModel``):

- attention: ``q`` (h x a·d), ``k`` and ``v`` (h x kv·d each, grouped-query attention, Ainslie
  et al. 2023), ``o`` (a·d x h), where ``a`` = heads, ``kv`` = key/value heads, ``d`` = head dim;
- MLP: three matrices (gate, up, down: SwiGLU, Shazeer 2020) or two (GELU, Vaswani et al. 2017);
- MoE (Fedus et al. 2022; Jiang et al. 2024): ``n_experts`` MLPs plus a bias-free router h x E;
- norms: RMSNorm (weight only, Zhang & Sennrich 2019) or LayerNorm (weight + bias), two per layer
  and one final norm;
- embeddings: token table V x h, an optional learned position table (GPT-2/3), and a separate
  LM head V x h unless it is tied to the token table.

>>> m = get_model("llama3-8b")
>>> m.total_params()
8030261248
>>> round(m.training_flops_per_token(8192) / 1e9, 1)  # GFLOP per token, forward + backward
57.9
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Final, Literal

from commwall.errors import CommwallError
from commwall.workload.errors import WorkloadError

NormKind = Literal["rmsnorm", "layernorm"]
#: Normalisation of the queries and keys before attention: none, an RMSNorm over each head
#: (Qwen3: ``q_norm``/``k_norm`` of ``head_dim`` weights) or over the whole projection (OLMo 2:
#: ``q_dim`` and ``kv_dim`` weights).
QkNorm = Literal["none", "head", "projection"]
#: Forward FLOPs of a Mamba-2 mixer's scan per token, per ``d_inner · state``: Megatron-LM's
#: count (``mamba_layer_flops`` in ``megatron/training/training.py`` @d98e8a6, "scan":
#: ``7 · tokens · d_in · state_dim``), which its logged model TFLOP/s divide by.
MAMBA_SCAN_FLOPS: Final = 7
#: What one layer of a model holds: a transformer layer (attention and an MLP or experts) or,
#: in a hybrid model (:attr:`ModelSpec.hybrid_pattern`), one block: a Mamba-2 mixer, an
#: attention, a dense MLP or a mixture of experts, each behind its own norm and residual.
Block = Literal["layer", "mamba", "attention", "mlp", "moe"]
#: The symbols of Megatron-Core's hybrid layer pattern (``--hybrid-layer-pattern``, Hugging
#: Face ``hybrid_override_pattern``; ``megatron/core/ssm/mamba_hybrid_layer_allocation.py``
#: ``Symbols`` @d98e8a6: ``M`` Mamba, ``*`` attention, ``-`` MLP, ``E`` MoE), in the order the
#: model's layer kinds take (:attr:`ModelSpec.layer_kinds`).
HYBRID_BLOCKS: Final[dict[str, Block]] = {
    "M": "mamba", "*": "attention", "-": "mlp", "E": "moe"
}  # fmt: skip
#: The multi-token-prediction patterns of a hybrid model commwall prices
#: (:attr:`ModelSpec.mtp_pattern`): one block, or an attention followed by an MLP or the
#: experts — a transformer layer, one unit of the step as a module's layer is.
MTP_PATTERNS: Final = ("M", "*", "-", "E", "*-", "*E")

__all__ = [
    "HYBRID_BLOCKS",
    "MTP_PATTERNS",
    "Block",
    "ModelDefinitionError",
    "ModelSpec",
    "NormKind",
    "QkNorm",
    "UnknownModelError",
    "get_model",
    "list_models",
]


class ModelDefinitionError(CommwallError, ValueError):
    """A model definition or config.json that cannot be used; the message names the field."""


class UnknownModelError(CommwallError, ValueError):
    """A model name that is not in the zoo; the message names close matches and all known names."""

    def __init__(self, name: str, known: list[str]) -> None:
        self.name = name
        self.known = list(known)
        self.close_matches = difflib.get_close_matches(name.lower(), self.known, n=3, cutoff=0.5)
        suggestions = ", ".join(repr(c) for c in self.close_matches)
        hint = f" Did you mean {suggestions}?" if suggestions else ""
        super().__init__(f"unknown model {name!r}.{hint} Known models: {', '.join(self.known)}.")


@dataclass(frozen=True, kw_only=True)
class ModelSpec:
    """Architecture of one decoder-only transformer (dense or mixture-of-experts).

    Fields mirror Hugging Face ``config.json`` keys: ``n_layers`` = ``num_hidden_layers``,
    ``hidden`` = ``hidden_size``, ``ffn_hidden`` = ``intermediate_size``, ``n_heads`` =
    ``num_attention_heads``, ``n_kv_heads`` = ``num_key_value_heads``, ``vocab`` = ``vocab_size``,
    ``max_seq_len`` = ``max_position_embeddings``, ``tied_embeddings`` = ``tie_word_embeddings``,
    ``n_experts`` = ``num_local_experts``, ``top_k`` = ``num_experts_per_tok``,
    ``expert_groups`` = ``n_group``, ``group_topk`` = ``topk_group`` (group-limited routing:
    each token's experts come from ``group_topk`` of ``expert_groups`` equal groups, DeepSeek-V3
    §2.1.2; it changes where tokens travel, :mod:`commwall.workload.dispatch`, not the work).

    The head dimension is ``head_size`` (``head_dim``) when given, else ``hidden // n_heads``.
    ``linear_bias``, ``norm`` and ``learned_pos_emb`` describe GPT-2/3-style models (biases on
    every linear layer, LayerNorm with bias, learned position table); Llama/Mixtral have none;
    ``qkv_bias`` is Qwen2's bias on the q, k and v projections only (``attention_bias``).
    Mixture-of-experts layers hold ``n_experts`` routed MLPs of width ``expert_ffn_hidden``
    (``moe_intermediate_size``; default ``ffn_hidden``, as in Mixtral) and, when
    ``shared_ffn_hidden`` > 0, one always-active shared MLP of that width (DeepSeekMoE's
    ``n_shared_experts × moe_intermediate_size``, Dai et al. 2024; Qwen2-MoE's
    ``shared_expert_intermediate_size``).
    ``sliding_window`` (Mistral 7B v0.1, Phi-3-mini: Hugging Face ``sliding_window``) lets each
    query attend to itself and the ``sliding_window − 1`` tokens before it (Beltagy et al.
    2020, "Longformer", §3.1; Jiang et al. 2023, "Mistral 7B", §2) on ``sliding_window_layers``
    of the layers (``None``: all; GPT-OSS windows every other layer, OpenAI 2025, "gpt-oss-120b
    & gpt-oss-20b Model Card", its architecture section); ``sliding_window`` ``None``: causal
    attention over the whole sequence. It changes the attention core's work, not the
    parameters (:meth:`attended_pairs`).
    ``yarn_rope`` marks rotary positions extended by YaRN (Peng et al. 2023, "YaRN: Efficient
    Context Window Extension of Large Language Models": scaled frequencies, and cos and sin
    scaled by an attention factor; Hugging Face ``rope_scaling`` with ``rope_type`` yarn, as in
    GPT-OSS). It changes no shape and no FLOP, only how the rotary kernel runs: Megatron-Bridge
    turns RoPE fusion off for every ``position_embedding_type`` but ``rope``
    (``validate_rope_fusion_compatibility``, ``src/megatron/bridge/utils/fusions.py`` @v0.2.1
    and @067f987, whose converter maps a yarn ``rope_type`` to ``position_embedding_type`` yarn
    for every model but MLA ones, ``models/conversion/model_bridge.py``), and Megatron-Core
    from 0.16 falls back to its unfused rotary whenever the attention factor is not 1
    (``apply_rotary_pos_emb``, ``models/common/embeddings/rope_utils.py``, 987395813 "Fixes for
    gpt-oss"); :func:`commwall.workload.compute.layer_work` prices that unfused path.
    ``activation_clamp`` bounds a gated MLP's two halves before the activation (GPT-OSS: the
    gate clamped above at 7, the linear half to ±7; Hugging Face ``swiglu_limit``, Megatron-Core's
    ``activation_func_clamp_value``). No shape or FLOP changes; Megatron-Core clamps outside its
    fused expert activation (:data:`commwall.workload.compute.EAGER_CLAMP_BYTES`).
    ``sandwich_norm`` adds a norm after the attention and after the MLP, before each residual
    add, to the two before them (Gemma 2 and 3: "post-norm and pre-norm with RMSNorm", Gemma
    Team 2024, "Gemma 2: Improving Open Language Models at a Practical Size", §2): four norms a
    layer (:attr:`norms_per_layer`).
    ``qk_norm`` normalises the queries and keys before attention (:data:`QkNorm`: Qwen3 per
    head, OLMo 2 over the projections; Dehghani et al. 2023, "Scaling Vision Transformers to 22
    Billion Parameters", its "QK normalization").
    ``dense_layers`` (DeepSeek-V3's ``first_k_dense_replace``) makes the first layers of a
    mixture-of-experts model dense, each with one MLP of width ``ffn_hidden`` (DeepSeek-AI
    2024, "DeepSeek-V3 Technical Report", §4.2: "we substitute all FFNs except for the first
    three layers with MoE layers"); :meth:`layer_kind` gives each layer's model.
    ``moe_layer_pattern`` (Megatron-Core's ``--moe-layer-freq`` as a list: one 1 or 0 per layer)
    makes the layers it marks 0 dense too, wherever they are: Llama 4 Maverick alternates dense
    and MoE layers (Hugging Face ``interleave_moe_layer_step`` 2: layers 1, 3, 5, … are MoE),
    Qwen2-MoE's ``decoder_sparse_step`` and ``mlp_only_layers`` do the same. A layer is MoE when
    it is past the ``dense_layers`` and its pattern entry is 1 (:meth:`is_moe_layer`).
    ``attention_chunk`` (Llama 4's ``attention_chunk_size``) splits the sequence into chunks of
    that many tokens and lets each query attend causally within its own chunk only, on
    ``attention_chunk_layers`` of the layers (``None``: all; Llama 4 chunks its rotary layers and
    attends globally on every fourth, Meta 2025, "The Llama 4 herd", its "iRoPE" architecture);
    like a window it changes the attention core's work, not the parameters (:meth:`attended_pairs`).
    Multi-head latent attention (MLA; DeepSeek-AI 2024, "DeepSeek-V2", §2.1) is on when
    ``kv_lora_rank`` is set: the keys and values come up from one ``kv_lora_rank``-wide latent
    per token (plus a ``qk_rope_head_dim``-wide rotary key shared by the heads), the queries from
    a ``q_lora_rank``-wide one (or straight from the hidden state when ``q_lora_rank`` is None);
    each head's query and key are ``head_size`` (``qk_nope_head_dim``) + ``qk_rope_head_dim``
    wide, its value ``v_head_dim``.
    ``mtp_layers`` multi-token-prediction modules follow the last layer (DeepSeek-V3 §2.2,
    Megatron-Core's ``--mtp-num-layers``): each normalises the last hidden state and the next
    token's embedding, projects the two (``2h → h``), runs one more layer like the last, and
    predicts through the shared LM head (:meth:`mtp_layer_params`). A training choice
    (``job.mtp_layers`` sets it); a published model's count leaves it out. ``mtp_shared``
    gives every depth one module's weights (Megatron-Core's ``mtp_use_repeated_layer``: "only
    1 layer is created and applied mtp_num_layers times"; ``job.mtp_shared``). A hybrid
    model's module runs the blocks of ``mtp_pattern`` in place of a layer (Megatron-Core's MTP
    pattern: the part of ``--hybrid-layer-pattern`` after each ``/``, or the legacy
    ``--mtp-hybrid-override-pattern``; Nemotron 3.5 Lightning's ``*E``, an attention and the
    experts): one block, or an attention followed by an MLP or the experts, which is a
    transformer layer (:meth:`mtp_kind`).
    ``hybrid_pattern`` makes a hybrid model (Megatron-Core's ``HybridModel``; Nemotron-H,
    NVIDIA 2025, "Nemotron-H: A Family of Accurate and Efficient Hybrid Mamba-Transformer
    Models", arXiv 2504.03624; Nemotron 3): one symbol per layer (:data:`HYBRID_BLOCKS`), each
    layer one block behind its own pre-norm and residual — ``M`` a Mamba-2 mixer, ``*`` an
    attention (no rotary positions where ``rotary`` is off, as in Nemotron-H), ``-`` a dense MLP
    of ``ffn_hidden``, ``E`` the experts. The Mamba-2 mixer (Dao and Gu 2024, "Transformers are
    SSMs", arXiv 2405.21060, §7; Megatron-Core's ``MambaMixer``) has ``mamba_heads`` heads of
    ``mamba_head_dim`` channels (``d_inner = heads · head_dim``), ``mamba_groups`` groups of
    ``mamba_state``-wide B and C, a causal convolution of ``mamba_conv`` taps, and runs its
    scan in chunks of ``mamba_chunk`` tokens: an input projection to ``z``, ``x``, ``B``, ``C``
    and ``dt`` (``2·d_inner + 2·groups·state + heads``), the convolution over ``x``, ``B`` and
    ``C``, the SSD scan, a norm gated by ``z`` and an output projection (:meth:`mamba_params_per_layer`).
    ``block`` is what one layer holds: ``layer`` for every transformer, a hybrid model's
    :meth:`layer_kind` gives each of its blocks.
    ``published_params`` is the count the authors published, ``source`` where the numbers come from.
    """

    name: str
    n_layers: int
    hidden: int
    ffn_hidden: int
    n_heads: int
    n_kv_heads: int
    vocab: int
    max_seq_len: int
    gated_mlp: bool
    tied_embeddings: bool
    n_experts: int = 1
    top_k: int = 1
    expert_groups: int = 1
    group_topk: int = 1
    published_params: float
    published_active_params: float | None = None
    source: str
    linear_bias: bool = False
    norm: NormKind = "rmsnorm"
    learned_pos_emb: bool = False
    head_size: int | None = None
    qkv_bias: bool = False
    expert_ffn_hidden: int | None = None
    shared_ffn_hidden: int = 0
    sliding_window: int | None = None
    sliding_window_layers: int | None = None
    qk_norm: QkNorm = "none"
    sandwich_norm: bool = False
    dense_layers: int = 0
    moe_layer_pattern: tuple[int, ...] | None = None
    attention_chunk: int | None = None
    attention_chunk_layers: int | None = None
    q_lora_rank: int | None = None
    kv_lora_rank: int | None = None
    qk_rope_head_dim: int = 0
    v_head_dim: int | None = None
    mtp_layers: int = 0
    yarn_rope: bool = False
    activation_clamp: float | None = None
    hybrid_pattern: str | None = None
    mamba_heads: int = 0
    mamba_head_dim: int = 64
    mamba_state: int = 128
    mamba_groups: int = 8
    mamba_conv: int = 4
    mamba_chunk: int = 128
    rotary: bool = True
    mtp_pattern: str | None = None
    mtp_shared: bool = False
    block: Block = "layer"

    def __post_init__(self) -> None:
        for field_name in (
            "n_layers",
            "hidden",
            "ffn_hidden",
            "n_heads",
            "n_kv_heads",
            "vocab",
            "max_seq_len",
            "n_experts",
            "top_k",
            "expert_groups",
            "group_topk",
            "mamba_head_dim",
            "mamba_state",
            "mamba_groups",
            "mamba_conv",
            "mamba_chunk",
        ):
            value = getattr(self, field_name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ModelDefinitionError(
                    f"{self.name}: {field_name}={value!r} is invalid: must be an integer >= 1"
                )
        for field_name in (
            "head_size",
            "expert_ffn_hidden",
            "sliding_window",
            "sliding_window_layers",
            "attention_chunk",
            "attention_chunk_layers",
            "q_lora_rank",
            "kv_lora_rank",
            "v_head_dim",
        ):
            value = getattr(self, field_name)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 1
            ):
                raise ModelDefinitionError(
                    f"{self.name}: {field_name}={value!r} is invalid: must be an integer >= 1"
                )
        windowed = self.sliding_window_layers
        if windowed is not None and (self.sliding_window is None or windowed > self.n_layers):
            raise ModelDefinitionError(
                f"{self.name}: sliding_window_layers={windowed} is invalid: needs a "
                f"sliding_window and at most n_layers={self.n_layers} layers"
            )
        chunked = self.attention_chunk_layers
        if chunked is not None and (self.attention_chunk is None or chunked > self.n_layers):
            raise ModelDefinitionError(
                f"{self.name}: attention_chunk_layers={chunked} is invalid: needs an "
                f"attention_chunk and at most n_layers={self.n_layers} layers"
            )
        if self.attention_chunk is not None and self.sliding_window is not None:
            raise ModelDefinitionError(
                f"{self.name}: attention_chunk={self.attention_chunk} is invalid with "
                f"sliding_window={self.sliding_window}: a layer's attention is either windowed "
                "or chunked; give one of them"
            )
        for field_name in (
            "shared_ffn_hidden", "dense_layers", "qk_rope_head_dim", "mtp_layers", "mamba_heads"
        ):  # fmt: skip
            value = getattr(self, field_name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ModelDefinitionError(
                    f"{self.name}: {field_name}={value!r} is invalid: must be an integer >= 0"
                )
        if self.dense_layers and not (self.n_experts > 1 and self.dense_layers < self.n_layers):
            raise ModelDefinitionError(
                f"{self.name}: dense_layers={self.dense_layers} is invalid: needs a "
                f"mixture-of-experts model (n_experts > 1) and fewer than n_layers="
                f"{self.n_layers} layers"
            )
        self._check_moe_layer_pattern()
        if self.kv_lora_rank is None:
            for field_name in ("q_lora_rank", "v_head_dim", "qk_rope_head_dim"):
                if getattr(self, field_name):
                    raise ModelDefinitionError(
                        f"{self.name}: {field_name}={getattr(self, field_name)!r} is invalid "
                        "without kv_lora_rank: it describes multi-head latent attention"
                    )
        elif self.n_kv_heads != self.n_heads:
            raise ModelDefinitionError(
                f"{self.name}: n_kv_heads={self.n_kv_heads} is invalid with kv_lora_rank: "
                f"multi-head latent attention gives every head its own key and value "
                f"(n_kv_heads = n_heads = {self.n_heads})"
            )
        elif self.qk_norm != "none":
            raise ModelDefinitionError(
                f"{self.name}: qk_norm={self.qk_norm!r} is invalid with kv_lora_rank: multi-head "
                "latent attention normalises its latents instead"
            )
        if self.head_size is None and self.hidden % self.n_heads:
            raise ModelDefinitionError(
                f"{self.name}: hidden={self.hidden} is invalid: must be divisible by "
                f"n_heads={self.n_heads}"
            )
        if self.n_heads % self.n_kv_heads:
            raise ModelDefinitionError(
                f"{self.name}: n_kv_heads={self.n_kv_heads} is invalid: must divide "
                f"n_heads={self.n_heads}"
            )
        if self.top_k > self.n_experts:
            raise ModelDefinitionError(
                f"{self.name}: top_k={self.top_k} is invalid: must be <= n_experts={self.n_experts}"
            )
        self._check_expert_groups()
        self._check_hybrid()
        if self.qk_norm not in ("none", "head", "projection"):
            raise ModelDefinitionError(
                f"{self.name}: qk_norm={self.qk_norm!r} is invalid: allowed values are "
                "'none', 'head', 'projection'"
            )
        if self.norm not in ("rmsnorm", "layernorm"):
            raise ModelDefinitionError(
                f"{self.name}: norm={self.norm!r} is invalid: allowed values are "
                "'rmsnorm', 'layernorm'"
            )
        if self.activation_clamp is not None and not (
            self.gated_mlp and 0 < self.activation_clamp < math.inf
        ):
            raise ModelDefinitionError(
                f"{self.name}: activation_clamp={self.activation_clamp!r} is invalid: a positive, "
                "finite bound, for a gated MLP (gated_mlp: true) only"
            )
        if self.yarn_rope and (self.learned_pos_emb or self.kv_lora_rank is not None):
            what = "learned_pos_emb" if self.learned_pos_emb else "kv_lora_rank"
            raise ModelDefinitionError(
                f"{self.name}: yarn_rope=True is invalid with {what}: it describes the rotary "
                "embedding of every head's query and key; a learned position table has none, "
                "and multi-head latent attention's rotary is its own fused kernel"
            )

    def _check_expert_groups(self) -> None:
        """Group-limited routing as Megatron-Core asserts it (``group_limited_topk``): equal
        groups of experts, ``group_topk`` of them per token, holding at least ``top_k``."""
        groups, chosen = self.expert_groups, self.group_topk
        if groups == 1 and chosen == 1:
            return
        size = self.n_experts // groups
        if self.n_experts % groups or chosen > groups or chosen * size < self.top_k:
            raise ModelDefinitionError(
                f"{self.name}: expert_groups={groups}, group_topk={chosen} is invalid: the "
                f"groups must split n_experts={self.n_experts} evenly, group_topk be at most "
                f"expert_groups, and the chosen groups hold at least top_k={self.top_k} experts"
            )

    def _check_moe_layer_pattern(self) -> None:
        pattern = self.moe_layer_pattern
        if pattern is None:
            return
        if (
            not isinstance(pattern, tuple)
            or len(pattern) != self.n_layers
            or any(isinstance(v, bool) or v not in (0, 1) for v in pattern)
        ):
            shown = pattern if len(repr(pattern)) <= 80 else f"{repr(pattern)[:77]}..."
            raise ModelDefinitionError(
                f"{self.name}: moe_layer_pattern={shown!r} is invalid: must be one 0 (dense) or "
                f"1 (mixture of experts) per layer, n_layers={self.n_layers} of them"
            )
        if not self.is_moe:
            raise ModelDefinitionError(
                f"{self.name}: moe_layer_pattern is invalid: needs a mixture-of-experts model "
                "(n_experts > 1)"
            )
        if self.moe_layer_count == 0:
            raise ModelDefinitionError(
                f"{self.name}: moe_layer_pattern is invalid: it leaves no mixture-of-experts "
                f"layer past the {self.dense_layers} dense_layers; set n_experts to 1 for a "
                "dense model"
            )

    def _check_hybrid(self) -> None:
        """A hybrid model's pattern and Mamba-2 mixer as Megatron-Core builds them
        (``mamba_hybrid_layer_allocation.py``, ``mamba_mixer.py`` @d98e8a6: the heads split
        into whole groups)."""
        heads = self.mamba_heads
        if self.block not in ("layer", *HYBRID_BLOCKS.values()):
            raise ModelDefinitionError(
                f"{self.name}: block={self.block!r} is invalid: allowed values are 'layer', "
                + ", ".join(repr(b) for b in HYBRID_BLOCKS.values())
            )
        pattern = self.hybrid_pattern
        self._check_mtp()
        mixers = (
            pattern is not None and "M" in pattern + (self.mtp_pattern or "")
        ) or self.block == "mamba"
        if pattern is None:
            if self.block == "layer" and heads:
                raise ModelDefinitionError(
                    f"{self.name}: mamba_heads={heads} is invalid without hybrid_pattern: "
                    "Mamba-2 mixers sit in a hybrid model's M layers"
                )
        else:
            self._check_pattern(pattern)
        if mixers and (heads < 1 or heads % self.mamba_groups):
            raise ModelDefinitionError(
                f"{self.name}: mamba_heads={heads} is invalid: a Mamba-2 mixer needs at least "
                f"one head, in whole groups of mamba_groups={self.mamba_groups} (Megatron-Core "
                "splits the heads by group)"
            )

    def _check_mtp(self) -> None:
        """The multi-token-prediction fields: ``mtp_shared`` needs modules, ``mtp_pattern`` a
        hybrid model, and a hybrid model's modules a pattern of one block or of an attention
        and an MLP or the experts (:meth:`mtp_kind`)."""
        if not isinstance(self.mtp_shared, bool):
            raise ModelDefinitionError(
                f"{self.name}: mtp_shared={self.mtp_shared!r} is invalid: must be true or false"
            )
        if self.mtp_shared and not self.mtp_layers:
            raise ModelDefinitionError(
                f"{self.name}: mtp_shared=True is invalid without mtp_layers: it shares one "
                "multi-token-prediction module's weights among the depths"
            )
        mtp = self.mtp_pattern
        if mtp is None:
            if self.hybrid_pattern is not None and self.mtp_layers:
                raise ModelDefinitionError(
                    f"{self.name}: mtp_layers={self.mtp_layers} is invalid with hybrid_pattern "
                    "without mtp_pattern: a hybrid model's multi-token-prediction module runs "
                    "the blocks mtp_pattern gives (Megatron-Core's MTP pattern, e.g. '*E')"
                )
            return
        shown = repr(mtp) if len(repr(mtp)) <= 40 else f"{repr(mtp)[:37]}..."
        if self.hybrid_pattern is None:
            raise ModelDefinitionError(
                f"{self.name}: mtp_pattern={shown} is invalid without hybrid_pattern: a "
                "transformer's multi-token-prediction module repeats its last layer"
            )
        if not isinstance(mtp, str) or mtp not in MTP_PATTERNS:
            raise ModelDefinitionError(
                f"{self.name}: mtp_pattern={shown} is invalid: allowed: "
                + ", ".join(repr(p) for p in MTP_PATTERNS)
                + " (one block, or an attention and an MLP or the experts; other patterns "
                "are not modelled)"
            )
        if "E" in mtp and not self.is_moe:
            raise ModelDefinitionError(
                f"{self.name}: mtp_pattern={shown} is invalid with n_experts={self.n_experts}: "
                "an E block needs experts"
            )

    def _check_pattern(self, pattern: str) -> None:
        shown = repr(pattern)
        shown = shown if len(shown) <= 80 else f"{shown[:77]}..."
        if (
            not isinstance(pattern, str)
            or len(pattern) != self.n_layers
            or set(pattern) - set(HYBRID_BLOCKS)
        ):
            raise ModelDefinitionError(
                f"{self.name}: hybrid_pattern={shown} is invalid: one of "
                f"{', '.join(HYBRID_BLOCKS)} (Mamba, attention, MLP, MoE) per layer, "
                f"n_layers={self.n_layers} of them"
            )
        if self.block != "layer":
            raise ModelDefinitionError(
                f"{self.name}: block={self.block!r} is invalid with hybrid_pattern: the "
                "pattern gives each layer's block"
            )
        if ("E" in pattern) != self.is_moe:
            raise ModelDefinitionError(
                f"{self.name}: hybrid_pattern={shown} is invalid with n_experts="
                f"{self.n_experts}: E layers need experts (n_experts > 1), and experts need E "
                "layers"
            )
        refused = {
            "dense_layers": self.dense_layers,
            "moe_layer_pattern": self.moe_layer_pattern,
            "kv_lora_rank": self.kv_lora_rank,
            "sandwich_norm": self.sandwich_norm,
            "attention_chunk": self.attention_chunk,
            "sliding_window": self.sliding_window,
            "learned_pos_emb": self.learned_pos_emb,
            "yarn_rope": self.yarn_rope,
        }
        for field_name, value in refused.items():
            if value:
                raise ModelDefinitionError(
                    f"{self.name}: {field_name}={value!r} is invalid with hybrid_pattern: it "
                    "describes a transformer layer; a hybrid model's blocks are its pattern's"
                )

    @property
    def is_hybrid(self) -> bool:
        """True for a hybrid model (:attr:`hybrid_pattern` set)."""
        return self.hybrid_pattern is not None

    @property
    def has_attention(self) -> bool:
        """True when a layer of this kind attends: a transformer layer or an attention block."""
        return self.block in ("layer", "attention")

    @property
    def has_mlp(self) -> bool:
        """True when a layer of this kind has an MLP or experts."""
        return self.block in ("layer", "mlp", "moe")

    @property
    def mamba_inner(self) -> int:
        """Channels of a Mamba-2 mixer, ``d_inner = mamba_heads · mamba_head_dim``."""
        return self.mamba_heads * self.mamba_head_dim

    @property
    def mamba_conv_channels(self) -> int:
        """Channels its causal convolution runs over: ``x``, ``B`` and ``C``,
        ``d_inner + 2·groups·state``."""
        return self.mamba_inner + 2 * self.mamba_groups * self.mamba_state

    @property
    def mamba_in_width(self) -> int:
        """Outputs of its input projection: ``z``, ``x``, ``B``, ``C`` and one ``dt`` per head,
        ``2·d_inner + 2·groups·state + heads`` (``MambaMixer.in_proj``)."""
        return self.mamba_inner + self.mamba_conv_channels + self.mamba_heads

    def mamba_weight_params_per_layer(self) -> int:
        """Matmul weights of one Mamba-2 mixer: the input and output projections."""
        return self.hidden * self.mamba_in_width + self.mamba_inner * self.hidden

    def mamba_params_per_layer(self) -> int:
        """Parameters of one Mamba-2 mixer (``MambaMixer``; Hugging Face ``NemotronHMamba2Mixer``):
        the projections (with biases where ``linear_bias``), the convolution's taps and bias,
        ``A_log``, ``D`` and ``dt_bias`` (one each per head) and the gated norm's ``d_inner``
        weights."""
        conv = self.mamba_conv_channels * (self.mamba_conv + 1)
        bias = self.mamba_in_width + self.hidden if self.linear_bias else 0
        return (
            self.mamba_weight_params_per_layer() + conv + 3 * self.mamba_heads + self.mamba_inner
            + bias
        )  # fmt: skip

    # ---------------------------------------------------------------- derived sizes
    @property
    def head_dim(self) -> int:
        """Per-head dimension: ``head_size`` when given, else ``hidden // n_heads``."""
        return self.head_size if self.head_size is not None else self.hidden // self.n_heads

    @property
    def expert_ffn(self) -> int:
        """Width of one routed expert's MLP (``expert_ffn_hidden``, default ``ffn_hidden``)."""
        return self.expert_ffn_hidden if self.expert_ffn_hidden is not None else self.ffn_hidden

    @property
    def mla(self) -> bool:
        """True for multi-head latent attention (``kv_lora_rank`` set)."""
        return self.kv_lora_rank is not None

    @property
    def qk_head_dim(self) -> int:
        """Width of one head's query and key: ``head_dim``, plus ``qk_rope_head_dim`` (MLA)."""
        return self.head_dim + (self.qk_rope_head_dim if self.mla else 0)

    @property
    def v_head(self) -> int:
        """Width of one head's value: ``v_head_dim`` (MLA), else ``head_dim``."""
        return self.v_head_dim if self.v_head_dim is not None else self.head_dim

    @property
    def q_dim(self) -> int:
        """Width of the queries, ``n_heads * qk_head_dim`` (``n_heads * head_dim`` without MLA)."""
        return self.n_heads * self.qk_head_dim

    @property
    def kv_dim(self) -> int:
        """Width of each of the key and value projections, ``n_kv_heads * head_dim`` (GQA);
        with MLA the keys (:attr:`k_dim`) and values (:attr:`v_dim`) differ in width."""
        return self.n_kv_heads * self.head_dim

    @property
    def k_dim(self) -> int:
        """Width of the keys attention reads, ``n_kv_heads * qk_head_dim``."""
        return self.n_kv_heads * self.qk_head_dim

    @property
    def v_dim(self) -> int:
        """Width of the values attention reads, ``n_kv_heads * v_head``."""
        return self.n_kv_heads * self.v_head

    @property
    def o_dim(self) -> int:
        """Width of the attention output, the output projection's input: ``n_heads * v_head``."""
        return self.n_heads * self.v_head

    @property
    def tp_input_width(self) -> int:
        """Elements per token sequence parallelism gathers for the attention block's
        column-parallel GEMMs: the hidden state, or with MLA the query latent (the hidden state
        without ``q_lora_rank``), the key-value latent and the rotary key, which the down
        projections compute on each rank's own tokens (:meth:`mla_projections`)."""
        if not self.mla:
            return self.hidden
        q = self.q_lora_rank if self.q_lora_rank is not None else self.hidden
        return q + (self.kv_lora_rank or 0) + self.qk_rope_head_dim

    def is_moe_layer(self, layer: int) -> bool:
        """True when layer ``layer`` (0-based) holds experts: a MoE model's layers past the
        ``dense_layers`` that ``moe_layer_pattern`` (when given) marks 1."""
        if self.hybrid_pattern is not None:
            return self.hybrid_pattern[layer] == "E"
        if not self.is_moe or layer < self.dense_layers:
            return False
        return self.moe_layer_pattern is None or self.moe_layer_pattern[layer] == 1

    @cached_property
    def moe_layer_count(self) -> int:
        """Layers that hold experts (:meth:`is_moe_layer`; 0 for a dense model). Computed once
        per spec: :meth:`kind_index` asks for it of every layer a step plan places."""
        return sum(self.is_moe_layer(i) for i in range(self.n_layers))

    @property
    def has_dense_layers(self) -> bool:
        """True for a mixture-of-experts model with dense layers among its layers."""
        return self.is_moe and self.moe_layer_count < self.n_layers

    def layer_kind(self, layer: int) -> ModelSpec:
        """The model whose every layer is like layer ``layer`` of this one: the dense model
        (one MLP of ``ffn_hidden``, no experts) for a layer without experts
        (:meth:`is_moe_layer`: the first ``dense_layers``, the 0s of ``moe_layer_pattern``),
        else this model with every layer a MoE one; neither has multi-token-prediction modules.
        Both keep ``n_layers``, so their per-layer figures are layer ``layer``'s. A hybrid
        model's layer is its block (:attr:`block`; no experts but in an ``E`` one)."""
        if self.hybrid_pattern is not None:
            return self._hybrid_kind(HYBRID_BLOCKS[self.hybrid_pattern[layer]])
        if self.is_moe and not self.is_moe_layer(layer):
            return replace(
                self, n_experts=1, top_k=1, expert_groups=1, group_topk=1,
                expert_ffn_hidden=None, shared_ffn_hidden=0, dense_layers=0,
                moe_layer_pattern=None, published_active_params=None, mtp_layers=0,
            )  # fmt: skip
        if self.dense_layers or self.mtp_layers or self.moe_layer_pattern is not None:
            return replace(self, dense_layers=0, mtp_layers=0, moe_layer_pattern=None)
        return self

    def _hybrid_kind(self, block: Block) -> ModelSpec:
        # a block has no multi-token-prediction modules of its own
        if block == "moe":
            return replace(
                self, hybrid_pattern=None, block="moe", mtp_layers=0, mtp_pattern=None,
                mtp_shared=False,
            )  # fmt: skip
        return replace(
            self, hybrid_pattern=None, block=block, n_experts=1, top_k=1, expert_groups=1,
            group_topk=1, expert_ffn_hidden=None, shared_ffn_hidden=0,
            published_active_params=None, mtp_layers=0, mtp_pattern=None, mtp_shared=False,
        )  # fmt: skip

    def mtp_kind(self) -> ModelSpec:
        """The layer of each multi-token-prediction module: one like the last layer
        (:meth:`layer_kind`), or in a hybrid model the blocks of :attr:`mtp_pattern` — one
        block's kind, or for an attention followed by an MLP (``*-``) or the experts (``*E``)
        the transformer layer those two blocks make (each behind its own norm and residual,
        as a transformer layer's attention and MLP are)."""
        mtp = self.mtp_pattern
        if self.hybrid_pattern is None or mtp is None:
            return self.layer_kind(self.n_layers - 1)
        if len(mtp) == 1:
            return self._hybrid_kind(HYBRID_BLOCKS[mtp])
        return replace(self._hybrid_kind(HYBRID_BLOCKS[mtp[1]]), block="layer", mamba_heads=0)

    @cached_property
    def _hybrid_symbols(self) -> str:
        """The symbols a hybrid model's pattern holds, in :data:`HYBRID_BLOCKS` order."""
        pattern = self.hybrid_pattern or ""
        return "".join(c for c in HYBRID_BLOCKS if c in pattern)

    @property
    def layer_kinds(self) -> tuple[tuple[ModelSpec, int], ...]:
        """(layer model, how many layers) of each kind of layer: the dense layers, then the MoE
        ones (:meth:`layer_kind`); one entry unless a MoE model has dense layers. The
        multi-token-prediction modules' layers are not counted here. A hybrid model's: one
        per block its pattern holds, in :data:`HYBRID_BLOCKS` order (Mamba, attention, MLP,
        MoE)."""
        if self.hybrid_pattern is not None:
            pattern = self.hybrid_pattern
            return tuple(
                (self._hybrid_kind(HYBRID_BLOCKS[c]), pattern.count(c))
                for c in self._hybrid_symbols
            )
        if not self.has_dense_layers:
            return ((self.layer_kind(0), self.n_layers),)
        moe = self.moe_layer_count
        first_moe = next(i for i in range(self.n_layers) if self.is_moe_layer(i))
        first_dense = next(i for i in range(self.n_layers) if not self.is_moe_layer(i))
        return (
            (self.layer_kind(first_dense), self.n_layers - moe),
            (self.layer_kind(first_moe), moe),
        )

    def kind_index(self, layer: int) -> int:
        """Index in :attr:`layer_kinds` of layer ``layer``'s kind."""
        if self.hybrid_pattern is not None:
            return self._hybrid_symbols.index(self.hybrid_pattern[layer])
        return 1 if self.has_dense_layers and self.is_moe_layer(layer) else 0

    def attended_pairs(self, seq_len: int) -> float:
        """(query, key) pairs a layer's causal attention over ``seq_len`` tokens computes, in
        the continuous count FlashAttention's block skipping approaches: ``s²/2`` for a full
        causal mask, and with a window ``w < s`` the integral of ``min(i, w)`` over the
        queries, ``s·w − w²/2`` (each query past the first ``w`` sees ``w`` keys); chunks of
        ``c < s`` tokens hold ``c²/2`` each (and the last, shorter one ``r²/2``). Where only
        ``sliding_window_layers`` (``attention_chunk_layers``) of the layers have the window
        (the chunks), the mean over the layers:
        every layer is priced alike (a pipeline stage holding more windowed layers than its
        share runs faster than this says, by at most half a layer's difference per layer it
        holds over that share).

        >>> from dataclasses import replace
        >>> m = get_model("llama3-8b")
        >>> m.attended_pairs(8192) == 8192**2 / 2
        True
        >>> replace(m, sliding_window=2048).attended_pairs(8192) / m.attended_pairs(8192)
        0.4375
        >>> half = replace(m, sliding_window=2048, sliding_window_layers=16)
        >>> half.attended_pairs(8192) / m.attended_pairs(8192)
        0.71875
        >>> quarter = replace(m, attention_chunk=2048, attention_chunk_layers=24)
        >>> quarter.attended_pairs(8192) / m.attended_pairs(8192)  # 3/4 · 1/4 + 1/4
        0.4375
        """
        s, w = float(seq_len), self.sliding_window
        full = s * s / 2.0
        c = self.attention_chunk
        if c is not None and c < seq_len:
            # causal attention inside each chunk: whole chunks of c, then the rest
            whole, rest = divmod(seq_len, c)
            chunked = whole * c * c / 2.0 + rest * rest / 2.0
            share = (self.attention_chunk_layers or self.n_layers) / self.n_layers
            return share * chunked + (1.0 - share) * full
        if w is None or w >= s:
            return full
        windowed = self.sliding_window_layers or self.n_layers
        share = windowed / self.n_layers
        return share * (s * w - w * w / 2.0) + (1.0 - share) * full

    @property
    def norms_per_layer(self) -> int:
        """Norms in one layer: before the attention and before the MLP, and with
        ``sandwich_norm`` after each as well; a hybrid model's block has one."""
        if self.block != "layer":
            return 1
        return 4 if self.sandwich_norm else 2

    @property
    def is_moe(self) -> bool:
        """True when each layer has more than one expert MLP."""
        return self.n_experts > 1

    # ---------------------------------------------------------------- parameter counts
    def norm_params(self) -> int:
        """Parameters of one norm: ``h`` for RMSNorm, ``2h`` (weight + bias) for LayerNorm."""
        return (2 if self.norm == "layernorm" else 1) * self.hidden

    def attention_weight_params_per_layer(self) -> int:
        """Matmul weights of one attention block: ``q``, ``k``, ``v``, ``o`` (no biases); with
        MLA (:meth:`mla_projections`) its five projections."""
        if self.mla:
            return sum(n_in * n_out for _, n_in, n_out, _ in self.mla_projections())
        h = self.hidden
        return h * self.q_dim + 2 * h * self.kv_dim + self.q_dim * h

    def mla_projections(self) -> tuple[tuple[str, int, int, bool], ...]:
        """(Hugging Face module, inputs, outputs, split over TP) of each MLA projection, in
        ``DeepseekV3Attention``'s order: the query's down projection to ``q_lora_rank`` and its
        up projection (or one ``q_proj`` without ``q_lora_rank``), the key-value down projection
        to the latent and the shared rotary key (``kv_a_proj_with_mqa``), its up projection to
        each head's key (non-rotary part) and value, and the output projection. Megatron-Core
        splits the up projections over TP (column-parallel) and the output (row-parallel), and
        keeps the down projections whole on every TP rank (``parallel_mode="duplicated"``,
        ``multi_latent_attention.py``)."""
        h, n = self.hidden, self.n_heads
        kv_rank = self.kv_lora_rank or 0
        q: tuple[tuple[str, int, int, bool], ...] = (("q_proj", h, self.q_dim, True),)
        if self.q_lora_rank is not None:
            q = (("q_a_proj", h, self.q_lora_rank, False),
                 ("q_b_proj", self.q_lora_rank, self.q_dim, True))  # fmt: skip
        return (
            *q,
            ("kv_a_proj_with_mqa", h, kv_rank + self.qk_rope_head_dim, False),
            ("kv_b_proj", kv_rank, n * (self.head_dim + self.v_head), True),
            ("o_proj", self.o_dim, h, True),
        )

    def qk_norm_params(self) -> int:
        """Weights of one layer's query and key norms (:data:`QkNorm`): ``2·head_dim`` per head
        (shared by the heads), ``q_dim + kv_dim`` over the projections, else 0; with MLA the
        norms of its latents (``q_lora_rank + kv_lora_rank``)."""
        if self.mla:
            return (self.q_lora_rank or 0) + (self.kv_lora_rank or 0)
        if self.qk_norm == "head":
            return 2 * self.head_dim
        return self.q_dim + self.kv_dim if self.qk_norm == "projection" else 0

    def attention_params_per_layer(self) -> int:
        """Parameters of one attention block (q, k, v, o projections, plus biases and query and
        key norms if any)."""
        bias = 0
        if self.mla:  # DeepSeek-V2/V3: attention_bias false
            pass
        elif self.linear_bias:
            bias = self.q_dim + 2 * self.kv_dim + self.hidden
        elif self.qkv_bias:
            bias = self.q_dim + 2 * self.kv_dim
        return self.attention_weight_params_per_layer() + bias + self.qk_norm_params()

    def _mlp_weights(self, width: int) -> int:
        return (3 if self.gated_mlp else 2) * self.hidden * width

    def _mlp_params(self, width: int) -> int:
        if not width:
            return 0
        bias = (2 if self.gated_mlp else 1) * width + self.hidden if self.linear_bias else 0
        return self._mlp_weights(width) + bias

    @property
    def mlp_width(self) -> int:
        """Width of the MLP :meth:`mlp_params_per_layer` counts: an expert's, or the dense one."""
        return self.expert_ffn if self.is_moe else self.ffn_hidden

    def mlp_weight_params_per_layer(self) -> int:
        """Matmul weights of one expert's MLP: ``3·h·f`` (SwiGLU) or ``2·h·f`` (GELU)."""
        return self._mlp_weights(self.mlp_width)

    def mlp_params_per_layer(self) -> int:
        """Parameters of one expert's MLP (for a dense model: the layer's MLP), biases included."""
        return self._mlp_params(self.mlp_width)

    def shared_mlp_params_per_layer(self) -> int:
        """Parameters of the always-active shared expert MLP (0 without one)."""
        return self._mlp_params(self.shared_ffn_hidden) if self.is_moe else 0

    def router_params_per_layer(self) -> int:
        """MoE router ``h x E`` (no bias, Mixtral's ``block_sparse_moe.gate``); 0 if dense."""
        return self.hidden * self.n_experts if self.is_moe else 0

    def layer_params(self) -> int:
        """Parameters of one transformer layer: attention, all experts, router and two norms
        (a MoE layer where the model has dense layers: :meth:`dense_layer_params`); a hybrid
        model's block, its mixer, attention, MLP or experts and one norm (the model: its last
        kind's, :attr:`layer_kinds`)."""
        if self.hybrid_pattern is not None:
            return self.layer_kinds[-1][0].layer_params()
        if self.has_dense_layers:
            return self.layer_kinds[1][0].layer_params()
        norms = self.norms_per_layer * self.norm_params()
        if self.block == "mamba":
            return self.mamba_params_per_layer() + norms
        attention = self.attention_params_per_layer() if self.has_attention else 0
        mlp = (
            self.n_experts * self.mlp_params_per_layer()
            + self.shared_mlp_params_per_layer()
            + self.router_params_per_layer()
            if self.has_mlp
            else 0
        )
        return attention + mlp + norms

    def dense_layer_params(self) -> int:
        """Parameters of one dense layer of a MoE model (0 without them)."""
        return self.layer_kinds[0][0].layer_params() if self.has_dense_layers else 0

    def layers_params(self) -> int:
        """Parameters of all ``n_layers`` layers, the dense ones and the others."""
        return sum(n * kind.layer_params() for kind, n in self.layer_kinds)

    def mtp_layer_params(self) -> int:
        """Parameters of one multi-token-prediction module (0 without them): its layer
        (:meth:`mtp_kind`), the ``2h × h`` projection (``eh_proj``) and three norms (``enorm``,
        ``hnorm`` and the module's final norm; Megatron-Core's ``MultiTokenPredictionLayer``);
        the embedding and LM head are the model's own, shared."""
        if not self.mtp_layers:
            return 0
        layer = self.mtp_kind()
        return layer.layer_params() + 2 * self.hidden * self.hidden + 3 * self.norm_params()

    @property
    def mtp_modules(self) -> int:
        """Multi-token-prediction modules with weights of their own: one shared by every
        depth (:attr:`mtp_shared`), else one a depth (:attr:`mtp_layers`)."""
        return min(1, self.mtp_layers) if self.mtp_shared else self.mtp_layers

    def position_embedding_params(self) -> int:
        """Learned position table ``max_seq_len x h`` (GPT-2/3); 0 for rotary models."""
        return self.max_seq_len * self.hidden if self.learned_pos_emb else 0

    def embedding_params(self) -> int:
        """Token embedding ``V x h`` (+ position table) + LM head ``V x h`` when untied."""
        head = 0 if self.tied_embeddings else self.vocab * self.hidden
        return self.vocab * self.hidden + self.position_embedding_params() + head

    def final_norm_params(self) -> int:
        """The norm after the last layer (``model.norm`` / ``ln_f``)."""
        return self.norm_params()

    def total_params(self) -> int:
        """All trainable parameters: embeddings, ``n_layers`` layers and the final norm."""
        return (
            self.embedding_params()
            + self.layers_params()
            + self.final_norm_params()
            + self.mtp_modules * self.mtp_layer_params()
        )

    def active_params_per_token(self) -> int:
        """Parameters one token touches: as :meth:`total_params` but only ``top_k`` experts.

        Embeddings are included, which is how Mistral AI counts Mixtral-8x7B's 12.9B "active".
        """
        unused = (self.n_experts - self.top_k) * self.mlp_params_per_layer()
        mtp_moe = bool(self.mtp_layers) and self.mtp_kind().is_moe
        moe_layers = self.moe_layer_count + (self.mtp_modules if mtp_moe else 0)
        return self.total_params() - moe_layers * unused

    def matmul_params_per_token(self) -> int:
        """Weights that take part in a matrix multiply for each token (forward pass).

        Per layer: attention q/k/v/o, ``top_k`` experts' MLP matrices, the router; plus the
        LM head ``V x h`` (counted even when tied: the head is a real matmul). Not counted:
        the token/position embedding *lookups* (gathers, no FLOPs), norms and biases
        (element-wise, negligible). Convention of Narayanan et al. SC'21 §5.1 / Kaplan et al.
        2020 Table 1.
        """
        layers = 0
        kinds = list(self.layer_kinds)
        if self.mtp_layers:  # each depth: its layer, its projection, the head
            kinds.append((self.mtp_kind(), self.mtp_layers))
            layers += self.mtp_layers * (2 * self.hidden * self.hidden + self.vocab * self.hidden)
        for kind, n in kinds:
            layers += n * kind._matmul_weights()
        return layers + self.vocab * self.hidden

    def _matmul_weights(self) -> int:
        """Matmul weights one token meets in a layer of this kind (:meth:`matmul_params_per_token`):
        the attention's projections, ``top_k`` experts' MLPs, a shared expert and the router, or a
        Mamba-2 mixer's projections."""
        if self.block == "mamba":
            return self.mamba_weight_params_per_layer()
        attention = self.attention_weight_params_per_layer() if self.has_attention else 0
        if not self.has_mlp:
            return attention
        shared = self._mlp_weights(self.shared_ffn_hidden) if self.is_moe else 0
        return (
            attention
            + self.top_k * self.mlp_weight_params_per_layer()
            + shared
            + self.router_params_per_layer()
        )

    @property
    def attention_layers(self) -> int:
        """Layers that attend: every layer, or a hybrid model's attention blocks."""
        if self.hybrid_pattern is not None:
            return self.hybrid_pattern.count("*")
        return self.n_layers if self.has_attention else 0

    @property
    def mamba_layers(self) -> int:
        """Layers with a Mamba-2 mixer: a hybrid model's ``M`` ones (all of a Mamba kind's)."""
        if self.hybrid_pattern is not None:
            return self.hybrid_pattern.count("M")
        return self.n_layers if self.block == "mamba" else 0

    def training_flops_per_token(self, seq_len: int) -> float:
        """Forward + backward FLOPs per token for a training sequence of ``seq_len`` tokens.

        ``6·N_mm + 12·L·(a·d)·s``, where ``N_mm`` = :meth:`matmul_params_per_token`:

        - ``6·N_mm``: 2 FLOPs per weight per token forward, 4 backward (Kaplan et al. 2020,
          "Scaling Laws for Neural Language Models", §2.1: C ≈ 6N).
        - ``12·L·(a·d)·s``: attention scores ``QKᵀ`` and ``softmax·V``, each ``2·s·(a·d)``
          FLOPs per token forward, x3 for forward + backward. This is the ``s/(6h)`` term of
          Narayanan et al. SC'21 ("Efficient Large-Scale Language Model Training on GPU
          Clusters Using Megatron-LM", §5.1: ``72·B·s·l·h²·(1 + s/(6h) + V/(12·l·h))`` without
          recomputation), and PaLM's ``6N + 12·L·H·Q·T`` (Chowdhery et al. 2022, App. B).
          Kaplan et al. count only ``6·L·s·d`` here; causal masking (FlashAttention skips the
          upper triangle) would halve this term; neither is applied. With MLA the scores
          are ``q_dim`` (``a·(d + d_rope)``) wide and the values ``o_dim`` (``a·d_v``):
          ``6·L·(q_dim + o_dim)·s``, which is ``12·L·(a·d)·s`` otherwise.

        The LM head matmul is counted (``6·V·h``, Narayanan's ``V/(12lh)`` term); the embedding
        lookup is not. Each multi-token-prediction module (``mtp_layers``) adds a layer like the
        last, its ``2h → h`` projection and the LM head once more, as Megatron-LM's
        ``num_floating_point_operations`` counts them (``training.py``: the MTP layers join
        the layer count, the logits are ``1 + mtp_num_layers``). Activation recomputation adds
        work on top (not included here). A
        ``sliding_window`` does not change this count, as it does not change Megatron-LM's
        (``num_floating_point_operations``) or PaLM's; the kernels it skips are priced in
        :mod:`commwall.workload.compute`. A hybrid model's attention term counts its attention
        blocks, and each Mamba-2 mixer adds its scan, ``7·d_inner·state`` FLOPs a token forward
        (:data:`MAMBA_SCAN_FLOPS`), ×3 with the backward.
        """
        if isinstance(seq_len, bool) or not isinstance(seq_len, int) or seq_len < 1:
            raise WorkloadError(f"seq_len={seq_len!r} is invalid: must be an integer >= 1")
        layers = self.attention_layers + self.mtp_layers
        attention = 6.0 * layers * (self.q_dim + self.o_dim) * seq_len
        scan = 3.0 * self.mamba_layers * MAMBA_SCAN_FLOPS * self.mamba_inner * self.mamba_state
        return 6.0 * self.matmul_params_per_token() + attention + scan

    # ---------------------------------------------------------------- gradient tensors
    def gradient_tensors(self) -> list[tuple[str, int]]:
        """``(name, element count)`` of every trainable tensor, in module registration order.

        Names and order follow the Hugging Face modules: ``LlamaForCausalLM`` /
        ``MixtralForCausalLM`` for RMSNorm models (embedding; per layer ``self_attn`` q/k/v/o,
        then ``mlp`` or ``block_sparse_moe`` (router, then experts w1/w2/w3), then
        ``input_layernorm``, ``post_attention_layernorm``; final ``norm``; ``lm_head`` if
        untied) and ``GPT2LMHeadModel`` for LayerNorm models (``wte``, ``wpe``; per layer
        ``ln_1``, fused ``c_attn``, ``c_proj``, ``ln_2``, ``mlp``; ``ln_f``). PyTorch DDP
        buckets gradients in the reverse of this order (``torch/nn/parallel/distributed.py``;
        ``../shared/reference/nccl-model.md`` §9). A tied LM head shares the embedding tensor
        and is not listed twice. Element counts are for the whole model (no TP/PP split);
        they sum to :meth:`total_params`.
        """
        if self.hybrid_pattern is not None:
            return self._hybrid_tensors()
        if self.norm == "layernorm":
            return self._gpt2_tensors()
        return self._llama_tensors()

    def _hybrid_tensors(self) -> list[tuple[str, int]]:
        """A hybrid model's tensors as ``NemotronHForCausalLM`` registers them: the embedding
        (``backbone.embeddings``), each layer's norm then its mixer, the final norm
        (``backbone.norm_f``) and the LM head."""
        h = self.hidden
        out: list[tuple[str, int]] = [("backbone.embeddings.weight", self.vocab * h)]
        for i in range(self.n_layers):
            out += self._hybrid_layer(i)
        out += self._norm_tensors("backbone.norm_f")
        out += self._mtp_tensors("backbone.mtp")
        if not self.tied_embeddings:
            out.append(("lm_head.weight", self.vocab * h))
        return out

    def _hybrid_layer(self, i: int) -> list[tuple[str, int]]:
        """Layer ``i`` of a hybrid model: ``NemotronHBlock``'s norm, then its mixer — a Mamba-2
        mixer (``in_proj``, ``conv1d``, ``dt_bias``, ``A_log``, ``D``, the gated ``norm``,
        ``out_proj``), an attention, an MLP or the experts (the router, each expert's
        ``up_proj`` and ``down_proj``, the shared expert's)."""
        return self._hybrid_block(
            f"backbone.layers.{i}.", HYBRID_BLOCKS[(self.hybrid_pattern or "")[i]]
        )

    def _hybrid_block(self, p: str, block: Block) -> list[tuple[str, int]]:
        """One block's tensors (:meth:`_hybrid_layer`), their names after prefix ``p``."""
        h = self.hidden
        out = self._norm_tensors(f"{p}norm")
        m = f"{p}mixer"
        if block == "mamba":
            channels = self.mamba_conv_channels
            out += self._linear(f"{m}.in_proj", h, self.mamba_in_width)
            out += [(f"{m}.conv1d.weight", channels * self.mamba_conv),
                    (f"{m}.conv1d.bias", channels)]  # fmt: skip
            out += [(f"{m}.{name}", self.mamba_heads) for name in ("dt_bias", "A_log", "D")]
            out.append((f"{m}.norm.weight", self.mamba_inner))
            out += self._linear(f"{m}.out_proj", self.mamba_inner, h)
        elif block == "attention":
            out += self._linear(f"{m}.q_proj", h, self.q_dim)
            out += self._linear(f"{m}.k_proj", h, self.kv_dim)
            out += self._linear(f"{m}.v_proj", h, self.kv_dim)
            out += self._linear(f"{m}.o_proj", self.q_dim, h)
            out += self._qk_norm_tensors(m)
        elif block == "mlp":
            out += self._mlp_tensors(m, "llama", self.ffn_hidden)
        else:
            out.append((f"{m}.gate.weight", self.router_params_per_layer()))
            for e in range(self.n_experts):
                out += self._mlp_tensors(f"{m}.experts.{e}", "llama", self.expert_ffn)
            if self.shared_ffn_hidden:
                out += self._mlp_tensors(f"{m}.shared_expert", "llama", self.shared_ffn_hidden)
        return out

    def _norm_tensors(self, prefix: str) -> list[tuple[str, int]]:
        out = [(f"{prefix}.weight", self.hidden)]
        if self.norm == "layernorm":
            out.append((f"{prefix}.bias", self.hidden))
        return out

    def _qk_norm_tensors(self, prefix: str) -> list[tuple[str, int]]:
        """``q_norm`` then ``k_norm`` (``Qwen3Attention``, ``Olmo2Attention``), if any."""
        if self.qk_norm == "none":
            return []
        head = self.qk_norm == "head"
        return [(f"{prefix}.q_norm.weight", self.head_dim if head else self.q_dim),
                (f"{prefix}.k_norm.weight", self.head_dim if head else self.kv_dim)]  # fmt: skip

    def _mla_tensors(self, prefix: str) -> list[tuple[str, int]]:
        """MLA's projections (:meth:`mla_projections`) with the latents' norms after their down
        projections (``q_a_layernorm``, ``kv_a_layernorm``), as ``DeepseekV3Attention``
        registers them."""
        out: list[tuple[str, int]] = []
        norms = {"q_a_proj": ("q_a_layernorm", self.q_lora_rank or 0),
                 "kv_a_proj_with_mqa": ("kv_a_layernorm", self.kv_lora_rank or 0)}  # fmt: skip
        for name, n_in, n_out, _ in self.mla_projections():
            out += self._linear(f"{prefix}.{name}", n_in, n_out, False)
            if name in norms:
                norm, width = norms[name]
                out.append((f"{prefix}.{norm}.weight", width))
        return out

    def _linear(
        self, prefix: str, n_in: int, n_out: int, bias: bool | None = None
    ) -> list[tuple[str, int]]:
        out = [(f"{prefix}.weight", n_in * n_out)]
        if self.linear_bias if bias is None else bias:
            out.append((f"{prefix}.bias", n_out))
        return out

    def _mlp_tensors(self, prefix: str, style: str, width: int = 0) -> list[tuple[str, int]]:
        """One MLP (one expert) in the registration order of ``style``.

        ``"llama"``: ``gate_proj``, ``up_proj``, ``down_proj`` (``LlamaMLP``); ``"mixtral"``:
        ``w1`` (gate), ``w2`` (down), ``w3`` (up) (``MixtralBlockSparseTop2MLP``); ``"gpt"``:
        ``c_fc`` (+ ``c_gate`` when gated), ``c_proj`` (``GPT2MLP``).
        """
        h, f = self.hidden, width or self.mlp_width
        up = self._linear  # (prefix, n_in, n_out)
        if style == "mixtral" and self.gated_mlp:
            return up(f"{prefix}.w1", h, f) + up(f"{prefix}.w2", f, h) + up(f"{prefix}.w3", h, f)
        if style == "llama" and self.gated_mlp:
            return (
                up(f"{prefix}.gate_proj", h, f)
                + up(f"{prefix}.up_proj", h, f)
                + up(f"{prefix}.down_proj", f, h)
            )
        if style == "llama":
            return up(f"{prefix}.up_proj", h, f) + up(f"{prefix}.down_proj", f, h)
        gated = up(f"{prefix}.c_gate", h, f) if self.gated_mlp else []
        return up(f"{prefix}.c_fc", h, f) + gated + up(f"{prefix}.c_proj", f, h)

    def _llama_tensors(self) -> list[tuple[str, int]]:
        h = self.hidden
        out: list[tuple[str, int]] = [("model.embed_tokens.weight", self.vocab * h)]
        if self.learned_pos_emb:
            out.append(("model.embed_positions.weight", self.position_embedding_params()))
        for i in range(self.n_layers):
            out += self._llama_layer(i)
        out += self._norm_tensors("model.norm")
        out += self._mtp_tensors("model.mtp")
        if not self.tied_embeddings:
            out.append(("lm_head.weight", self.vocab * h))
        return out

    def _layer_tensors(self, i: int) -> list[tuple[str, int]]:
        """Layer ``i``'s tensors, named as :meth:`gradient_tensors` names them."""
        if self.hybrid_pattern is not None:
            return self._hybrid_layer(i)
        return self._gpt2_layer(i) if self.norm == "layernorm" else self._llama_layer(i)

    def _llama_layer(self, i: int) -> list[tuple[str, int]]:
        h = self.hidden
        out: list[tuple[str, int]] = []
        p = f"model.layers.{i}"
        qkv = self.linear_bias or self.qkv_bias
        if self.mla:
            out += self._mla_tensors(f"{p}.self_attn")
        else:
            out += self._linear(f"{p}.self_attn.q_proj", h, self.q_dim, qkv)
            out += self._linear(f"{p}.self_attn.k_proj", h, self.kv_dim, qkv)
            out += self._linear(f"{p}.self_attn.v_proj", h, self.kv_dim, qkv)
            out += self._linear(f"{p}.self_attn.o_proj", self.q_dim, h)
            out += self._qk_norm_tensors(f"{p}.self_attn")
        if self.is_moe_layer(i):
            out.append((f"{p}.block_sparse_moe.gate.weight", self.router_params_per_layer()))
            for e in range(self.n_experts):
                out += self._mlp_tensors(f"{p}.block_sparse_moe.experts.{e}", "mixtral")
            if self.shared_ffn_hidden:
                shared = f"{p}.block_sparse_moe.shared_expert"
                out += self._mlp_tensors(shared, "llama", self.shared_ffn_hidden)
        else:
            out += self._mlp_tensors(f"{p}.mlp", "llama", self.ffn_hidden)
        out += self._norm_tensors(f"{p}.input_layernorm")
        out += self._norm_tensors(f"{p}.post_attention_layernorm")
        if self.sandwich_norm:  # Gemma 2/3's norms before and after the MLP
            out += self._norm_tensors(f"{p}.pre_feedforward_layernorm")
            out += self._norm_tensors(f"{p}.post_feedforward_layernorm")
        return out

    def _mtp_tensors(self, prefix: str) -> list[tuple[str, int]]:
        """Each multi-token-prediction module's tensors (:meth:`mtp_layer_params`; one module
        when the depths share it, :attr:`mtp_shared`): its norms and projection, then its
        layer's, named as the last layer's (a hybrid model's: its pattern's blocks, as
        ``blocks.j``) under ``prefix.i``."""
        if not self.mtp_layers:
            return []
        if self.hybrid_pattern is not None and self.mtp_pattern is not None:
            layer = [  # a hybrid model's: each block of the pattern, as its layers name theirs
                (f"blocks.{j}.{name}", n)
                for j, symbol in enumerate(self.mtp_pattern)
                for name, n in self._hybrid_block("", HYBRID_BLOCKS[symbol])
            ]
        else:
            last = self.layer_kind(self.n_layers - 1)
            tensors = last._layer_tensors(self.n_layers - 1)
            layer = [(name.split(".", 3)[3], n) for name, n in tensors]
        out: list[tuple[str, int]] = []
        for i in range(self.mtp_modules):
            p = f"{prefix}.{i}"
            out += self._norm_tensors(f"{p}.enorm") + self._norm_tensors(f"{p}.hnorm")
            out += self._linear(f"{p}.eh_proj", 2 * self.hidden, self.hidden, False)
            out += [(f"{p}.{name}", n) for name, n in layer]
            out += self._norm_tensors(f"{p}.final_layernorm")
        return out

    def _gpt2_tensors(self) -> list[tuple[str, int]]:
        h = self.hidden
        out: list[tuple[str, int]] = [("transformer.wte.weight", self.vocab * h)]
        if self.learned_pos_emb:
            out.append(("transformer.wpe.weight", self.position_embedding_params()))
        for i in range(self.n_layers):
            out += self._gpt2_layer(i)
        out += self._norm_tensors("transformer.ln_f")
        out += self._mtp_tensors("transformer.mtp")
        if not self.tied_embeddings:
            out.append(("lm_head.weight", self.vocab * h))
        return out

    def _gpt2_layer(self, i: int) -> list[tuple[str, int]]:
        h = self.hidden
        p = f"transformer.h.{i}"
        out = self._norm_tensors(f"{p}.ln_1")
        if self.mla:
            out += self._mla_tensors(f"{p}.attn")
        else:
            out += self._linear(f"{p}.attn.c_attn", h, self.q_dim + 2 * self.kv_dim)
            out += self._linear(f"{p}.attn.c_proj", self.q_dim, h)
            out += self._qk_norm_tensors(f"{p}.attn")
        out += self._norm_tensors(f"{p}.ln_2")
        if self.sandwich_norm:  # a norm after the attention and after the MLP
            out += self._norm_tensors(f"{p}.ln_attn_out") + self._norm_tensors(f"{p}.ln_mlp_out")
        if self.is_moe_layer(i):
            out.append((f"{p}.mlp.router.weight", self.router_params_per_layer()))
            for e in range(self.n_experts):
                out += self._mlp_tensors(f"{p}.mlp.experts.{e}", "gpt")
            if self.shared_ffn_hidden:
                out += self._mlp_tensors(f"{p}.mlp.shared_expert", "gpt", self.shared_ffn_hidden)
        else:
            out += self._mlp_tensors(f"{p}.mlp", "gpt", self.ffn_hidden)
        return out


# -------------------------------------------------------------------- the zoo
_LLAMA31_SOURCE = (
    "Dubey et al. 2024, 'The Llama 3 Herd of Models' (arXiv 2407.21783) Table 3; "
    "Hugging Face meta-llama/Llama-3.1-{size} config.json (vocab_size 128256, "
    "tie_word_embeddings false, max_position_embeddings 131072; pre-trained at 8192)"
)

_ZOO: dict[str, ModelSpec] = {
    m.name: m
    for m in (
        ModelSpec(
            name="gpt3-175b",
            n_layers=96,
            hidden=12288,
            ffn_hidden=4 * 12288,
            n_heads=96,
            n_kv_heads=96,
            vocab=50257,
            max_seq_len=2048,
            gated_mlp=False,
            tied_embeddings=True,
            published_params=175.0e9,
            source=(
                "Brown et al. 2020, 'Language Models are Few-Shot Learners' (arXiv 2005.14165) "
                "Table 2.1: 175.0B params, 96 layers, d_model 12288, 96 heads of 128, n_ctx 2048; "
                "GPT-2 architecture and 50257-token BPE vocabulary (Radford et al. 2019), "
                "d_ff = 4·d_model, learned positions, LayerNorm and biases, tied head"
            ),
            linear_bias=True,
            norm="layernorm",
            learned_pos_emb=True,
        ),
        *(
            ModelSpec(
                name=f"gpt3-{size}",
                n_layers=layers,
                hidden=d_model,
                ffn_hidden=4 * d_model,
                n_heads=heads,
                n_kv_heads=heads,
                vocab=50257,
                max_seq_len=2048,
                gated_mlp=False,
                tied_embeddings=True,
                published_params=published,
                source=(
                    "Brown et al. 2020 (arXiv 2005.14165) Table 2.1: "
                    f"GPT-3 {size.upper()}: n_layers {layers}, d_model {d_model}, n_heads {heads}, "
                    "d_head 128, n_ctx 2048; GPT-2 architecture, 50257-token vocabulary, d_ff = "
                    "4·d_model"
                ),
                linear_bias=True,
                norm="layernorm",
                learned_pos_emb=True,
                head_size=128,
            )
            for size, layers, d_model, heads, published in (
                ("6.7b", 32, 4096, 32, 6.7e9),
                ("13b", 40, 5140, 40, 13.0e9),
            )
        ),
        ModelSpec(
            name="llama2-7b",
            n_layers=32,
            hidden=4096,
            ffn_hidden=11008,
            n_heads=32,
            n_kv_heads=32,
            vocab=32000,
            max_seq_len=4096,
            gated_mlp=True,
            tied_embeddings=False,
            published_params=6.74e9,
            source=(
                "Touvron et al. 2023, 'Llama 2' (arXiv 2307.09288), 7B; Hugging Face "
                "meta-llama/Llama-2-7b-hf config.json (hidden 4096, intermediate 11008, 32 layers, "
                "32 heads, vocab 32000, untied); 6.74B = 6,738,415,616 in the safetensors index"
            ),
        ),
        ModelSpec(
            name="llama2-13b",
            n_layers=40,
            hidden=5120,
            ffn_hidden=13824,
            n_heads=40,
            n_kv_heads=40,
            vocab=32000,
            max_seq_len=4096,
            gated_mlp=True,
            tied_embeddings=False,
            published_params=13.0e9,
            source=(
                "Touvron et al. 2023, 'Llama 2' (arXiv 2307.09288), 13B; Hugging Face "
                "meta-llama/Llama-2-13b-hf config.json (hidden 5120, intermediate 13824, 40 layers, "
                "40 heads, vocab 32000, untied)"
            ),
        ),
        ModelSpec(
            name="llama2-70b",
            n_layers=80,
            hidden=8192,
            ffn_hidden=28672,
            n_heads=64,
            n_kv_heads=8,
            vocab=32000,
            max_seq_len=4096,
            gated_mlp=True,
            tied_embeddings=False,
            published_params=69.0e9,
            source=(
                "Touvron et al. 2023, 'Llama 2' (arXiv 2307.09288), 70B with grouped-query "
                "attention (8 KV heads); Hugging Face meta-llama/Llama-2-70b-hf config.json "
                "(hidden 8192, intermediate 28672, 80 layers, 64 heads, vocab 32000, untied)"
            ),
        ),
        ModelSpec(
            name="llama3-8b",
            n_layers=32,
            hidden=4096,
            ffn_hidden=14336,
            n_heads=32,
            n_kv_heads=8,
            vocab=128256,
            max_seq_len=131072,
            gated_mlp=True,
            tied_embeddings=False,
            published_params=8.03e9,
            source=_LLAMA31_SOURCE.format(size="8B") + "; 8.03B on the model card",
        ),
        ModelSpec(
            name="llama3-70b",
            n_layers=80,
            hidden=8192,
            ffn_hidden=28672,
            n_heads=64,
            n_kv_heads=8,
            vocab=128256,
            max_seq_len=131072,
            gated_mlp=True,
            tied_embeddings=False,
            published_params=70.6e9,
            source=_LLAMA31_SOURCE.format(size="70B") + "; 70.6B on the model card",
        ),
        ModelSpec(
            name="llama3-405b",
            n_layers=126,
            hidden=16384,
            ffn_hidden=53248,
            n_heads=128,
            n_kv_heads=8,
            vocab=128256,
            max_seq_len=131072,
            gated_mlp=True,
            tied_embeddings=False,
            published_params=405e9,
            source=_LLAMA31_SOURCE.format(size="405B") + "; 405B as named in the paper",
        ),
        ModelSpec(
            name="mixtral-8x7b",
            n_layers=32,
            hidden=4096,
            ffn_hidden=14336,
            n_heads=32,
            n_kv_heads=8,
            vocab=32000,
            max_seq_len=32768,
            gated_mlp=True,
            tied_embeddings=False,
            n_experts=8,
            top_k=2,
            published_params=46.7e9,
            published_active_params=12.9e9,
            source=(
                "Jiang et al. 2024, 'Mixtral of Experts' (arXiv 2401.04088) Table 1: dim 4096, "
                "32 layers, head_dim 128, hidden_dim 14336, 32 heads, 8 kv heads, context 32768, "
                "vocab 32000, 8 experts, top-2; Mistral AI 'Mixtral of experts' (Dec 2023): "
                "46.7B total, 12.9B active per token; HF mistralai/Mixtral-8x7B-v0.1 config.json"
            ),
        ),
        ModelSpec(
            name="mixtral-8x22b",
            n_layers=56,
            hidden=6144,
            ffn_hidden=16384,
            n_heads=48,
            n_kv_heads=8,
            vocab=32000,
            max_seq_len=65536,
            gated_mlp=True,
            tied_embeddings=False,
            n_experts=8,
            top_k=2,
            published_params=141e9,
            published_active_params=39e9,
            source=(
                "Mistral AI, 'Cheaper, Better, Faster, Stronger' (Apr 2024): 141B parameters, 39B "
                "active; Hugging Face mistralai/Mixtral-8x22B-v0.1 config.json (hidden 6144, "
                "intermediate 16384, 56 layers, 48 heads, 8 KV heads, vocab 32000, 8 experts, "
                "top-2, 65536 positions)"
            ),
        ),
        *(
            ModelSpec(
                name=f"qwen2.5-{size}",
                n_layers=layers,
                hidden=hidden,
                ffn_hidden=ffn,
                n_heads=heads,
                n_kv_heads=kv,
                vocab=152064,
                max_seq_len=131072,
                gated_mlp=True,
                tied_embeddings=False,
                qkv_bias=True,
                published_params=published,
                source=(
                    f"Qwen Team 2024, 'Qwen2.5 Technical Report' (arXiv 2412.15115) Table 1; "
                    f"Hugging Face Qwen/Qwen2.5-{size.upper()} config.json (hidden {hidden}, "
                    f"intermediate {ffn}, {layers} layers, {heads} heads, {kv} KV heads, vocab "
                    f"152064, untied, biases on q/k/v); {published / 1e9:.2f}B on the model card"
                ),
            )
            for size, layers, hidden, ffn, heads, kv, published in (
                ("7b", 28, 3584, 18944, 28, 4, 7.61e9),
                ("72b", 80, 8192, 29568, 64, 8, 72.7e9),
            )
        ),
        ModelSpec(
            name="mistral-7b",
            n_layers=32,
            hidden=4096,
            ffn_hidden=14336,
            n_heads=32,
            n_kv_heads=8,
            vocab=32000,
            max_seq_len=32768,
            gated_mlp=True,
            tied_embeddings=False,
            sliding_window=4096,
            published_params=7.24e9,
            source=(
                "Jiang et al. 2023, 'Mistral 7B' (arXiv 2310.06825) Table 1: dim 4096, 32 layers, "
                "head_dim 128, hidden_dim 14336, 32 heads, 8 kv heads, window 4096, context "
                "8192, vocab 32000; Hugging Face mistralai/Mistral-7B-v0.1 config.json "
                "(max_position_embeddings 32768, sliding_window 4096, untied); 7.24B in its "
                "safetensors index"
            ),
        ),
        *(
            ModelSpec(
                name=f"qwen3-{size}",
                n_layers=layers,
                hidden=hidden,
                ffn_hidden=ffn,
                n_heads=heads,
                n_kv_heads=kv,
                head_size=128,
                vocab=151936,
                max_seq_len=40960,
                gated_mlp=True,
                tied_embeddings=False,
                qk_norm="head",
                n_experts=experts,
                top_k=8 if experts > 1 else 1,
                expert_ffn_hidden=expert_ffn,
                published_params=published,
                published_active_params=active,
                source=(
                    f"Qwen Team 2025, 'Qwen3 Technical Report' (arXiv 2505.09388) Tables 1-2; "
                    f"Hugging Face Qwen/Qwen3-{size.upper()} config.json "
                    f"(hidden {hidden}, {layers} layers, {heads} heads, {kv} KV heads, head_dim "
                    f"128, vocab 151936, untied"
                    + (
                        f", {experts} experts of width {expert_ffn}, top-8, every layer MoE"
                        if experts > 1
                        else f", intermediate {ffn}"
                    )
                    + f"); {published / 1e9:g}B on the model card"
                    + (f", {active / 1e9:g}B activated" if active else "")
                    + "; per-head q/k norms"
                ),
            )
            for size, layers, hidden, ffn, heads, kv, experts, expert_ffn, published, active in (
                ("8b", 36, 4096, 12288, 32, 8, 1, None, 8.2e9, None),
                ("30b-a3b", 48, 2048, 6144, 32, 4, 128, 768, 30.5e9, 3.3e9),
                ("235b-a22b", 94, 4096, 12288, 64, 4, 128, 1536, 235e9, 22e9),
            )
        ),
        ModelSpec(
            name="qwen2-57b-a14b",
            n_layers=28,
            hidden=3584,
            ffn_hidden=18944,
            n_heads=28,
            n_kv_heads=4,
            vocab=151936,
            max_seq_len=131072,
            gated_mlp=True,
            tied_embeddings=False,
            qkv_bias=True,
            n_experts=64,
            top_k=8,
            expert_ffn_hidden=2560,
            shared_ffn_hidden=20480,
            published_params=57.41e9,
            published_active_params=14e9,
            source=(
                "Yang et al. 2024, 'Qwen2 Technical Report' (arXiv 2407.10671) Table 1: a "
                "DeepSeekMoE-style layer (Dai et al. 2024), 64 fine-grained routed experts of "
                "width 2560, top-8, and a shared expert of width 20480 on every layer; Hugging "
                "Face Qwen/Qwen2-57B-A14B config.json (hidden 3584, 28 layers, 28 heads, 4 KV "
                "heads, vocab 151936, untied, biases on q/k/v); 57.41B total, 14B activated "
                "(model card); the shared expert's 3584-weight gate is not counted"
            ),
        ),
        *(
            ModelSpec(
                name=f"gpt-oss-{size}",
                n_layers=layers,
                hidden=2880,
                ffn_hidden=2880,
                n_heads=64,
                n_kv_heads=8,
                head_size=64,
                vocab=201088,
                max_seq_len=131072,
                gated_mlp=True,
                tied_embeddings=False,
                linear_bias=True,
                n_experts=experts,
                top_k=4,
                sliding_window=128,
                sliding_window_layers=layers // 2,
                yarn_rope=True,
                activation_clamp=7.0,
                published_params=published,
                source=(
                    f"OpenAI 2025, 'gpt-oss-120b & gpt-oss-20b Model Card' Table 1 and its architecture section: "
                    f"{layers} layers, {experts} experts of width 2880, top-4, biases on the "
                    f"attention and the experts, a 128-token window on every other layer, YaRN "
                    f"rotary positions (rope_scaling factor 32); Hugging Face "
                    f"openai/gpt-oss-{size} config.json (hidden 2880, 64 heads of "
                    f"64, 8 KV heads, vocab 201088, swiglu_limit 7, untied); {published / 1e9:g}B total; the "
                    f"attention sinks and router biases are not counted"
                ),
            )
            for size, layers, experts, published in (
                ("120b", 36, 128, 116.83e9),
                ("20b", 24, 32, 20.91e9),
            )
        ),
        ModelSpec(
            name="deepseek-v3",
            n_layers=61,
            hidden=7168,
            ffn_hidden=18432,
            n_heads=128,
            n_kv_heads=128,
            head_size=128,
            vocab=129280,
            max_seq_len=163840,
            gated_mlp=True,
            tied_embeddings=False,
            n_experts=256,
            top_k=8,
            expert_groups=8,
            group_topk=4,
            expert_ffn_hidden=2048,
            shared_ffn_hidden=2048,
            dense_layers=3,
            q_lora_rank=1536,
            kv_lora_rank=512,
            qk_rope_head_dim=64,
            v_head_dim=128,
            published_params=671e9,
            published_active_params=37e9,
            source=(
                "DeepSeek-AI 2024, 'DeepSeek-V3 Technical Report' (arXiv 2412.19437) §4.2: 61 "
                "layers, hidden 7168, 128 heads of 128 (+64 rotary), MLA with a 1536-wide query "
                "and a 512-wide key-value latent, the first 3 layers dense, then 1 shared and 256 "
                "routed experts of width 2048, top-8, from at most 4 of 8 groups (§2.1.2, "
                "node-limited routing); 671B total, 37B activated; Hugging Face "
                "deepseek-ai/DeepSeek-V3 config.json (intermediate_size 18432, vocab 129280, "
                "untied, n_group 8, topk_group 4); the multi-token-prediction module "
                "(num_nextn_predict_layers 1) is not counted"
            ),
        ),
        ModelSpec(
            name="llama4-maverick",
            n_layers=48,
            hidden=5120,
            ffn_hidden=16384,
            n_heads=40,
            n_kv_heads=8,
            head_size=128,
            vocab=202048,
            max_seq_len=1048576,
            gated_mlp=True,
            tied_embeddings=False,
            n_experts=128,
            top_k=1,
            expert_ffn_hidden=8192,
            shared_ffn_hidden=8192,
            moe_layer_pattern=tuple(i % 2 for i in range(48)),
            attention_chunk=8192,
            attention_chunk_layers=36,
            published_params=400e9,
            published_active_params=17e9,
            source=(
                "Meta 2025, 'The Llama 4 herd' and the meta-llama/Llama-4-Maverick-17B-128E "
                "model card: 17B active of 400B total (the card's count includes the ~0.9B "
                "vision encoder, not counted here), 128 routed experts, top-1, and a shared "
                "expert; the config.json's text_config (as NVIDIA TensorRT-LLM's Llama 4 test "
                "copies it): 48 layers, hidden 5120, 40 heads of 128 with 8 KV heads, experts "
                "and the shared expert of width 8192 on every other layer "
                "(interleave_moe_layer_step 2: layers 1, 3, ...), a dense MLP of 16384 "
                "(intermediate_size_mlp) on the others, vocab 202048, untied, "
                "use_qk_norm false; chunked attention (attention_chunk_size 8192) on the "
                "rotary layers, all but every fourth (transformers' no_rope_layer_interval 4)"
            ),
        ),
        ModelSpec(
            name="glm-4.5",
            n_layers=92,
            hidden=5120,
            ffn_hidden=12288,
            n_heads=96,
            n_kv_heads=8,
            head_size=128,
            vocab=151552,
            max_seq_len=131072,
            gated_mlp=True,
            tied_embeddings=False,
            qkv_bias=True,
            qk_norm="head",
            n_experts=160,
            top_k=8,
            expert_ffn_hidden=1536,
            shared_ffn_hidden=1536,
            dense_layers=3,
            published_params=355e9,
            source=(
                "GLM-4.5 Team 2025, 'GLM-4.5: Agentic, Reasoning, and Coding (ARC) Foundation "
                "Models' (arXiv 2508.06471) Table 1: 89 MoE layers after 3 dense ones, hidden "
                "5120, 96 heads of 128 with 8 KV heads and q/k norms, 160 routed experts of width "
                "1536 and one shared, top-8; Hugging Face zai-org/GLM-4.5 config.json "
                "(intermediate_size 12288, vocab 151552, attention_bias true, untied); 355B "
                "total, which counts the multi-token-prediction layer (not counted here); the "
                "card's 32B activated leaves out the embeddings"
            ),
        ),
        ModelSpec(
            name="nemotron-3-nano-30b-a3b",
            n_layers=52,
            hidden=2688,
            ffn_hidden=1856,
            n_heads=32,
            n_kv_heads=2,
            head_size=128,
            vocab=131072,
            max_seq_len=262144,
            gated_mlp=False,
            tied_embeddings=False,
            n_experts=128,
            top_k=6,
            expert_ffn_hidden=1856,
            shared_ffn_hidden=3712,
            hybrid_pattern="MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME",
            mamba_heads=64,
            mamba_head_dim=64,
            mamba_state=128,
            mamba_groups=8,
            mamba_conv=4,
            mamba_chunk=128,
            rotary=False,
            published_params=31.6e9,
            published_active_params=3.6e9,
            source=(
                "Megatron-Bridge nemotron_3_nano recipe (src/megatron/bridge/recipes/nemotronh/"
                "h100/nemotron_3_nano.py @067f987: hybrid_layer_pattern of 23 Mamba-2, 6 "
                "attention and 23 MoE layers, hidden 2688, 64 Mamba heads of 64, state 128, 8 "
                "groups, 32 heads of 128 with 2 query groups, 128 experts of 1856 routed top-6 "
                "and a shared one of 3712, squared ReLU) and the Hugging Face config of "
                "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16 (NemotronHForCausalLM: vocab 131072, "
                "262,144 positions, no rotary, untied, chunk 128, 4 conv taps); 31.6B total and "
                "about 3.6B active with the embeddings (NVIDIA 2025, the Nemotron 3 Nano "
                "technical report)"
            ),
        ),
    )
}


def list_models() -> list[str]:
    """Names of all models in the zoo, sorted."""
    return sorted(_ZOO)


def get_model(name: str) -> ModelSpec:
    """The zoo entry called ``name`` (case and surrounding spaces ignored).

    Raises :class:`UnknownModelError` (a ``ValueError``) naming close matches and all names.
    """
    key = name.strip().lower()
    try:
        return _ZOO[key]
    except KeyError:
        raise UnknownModelError(name, list_models()) from None
