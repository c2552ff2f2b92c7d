"""Memory per GPU of a training job: weights, gradients, optimizer state and activations.

Model states follow ZeRO (Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training
Trillion Parameter Models", SC'20, §3 and Fig. 1): with mixed-precision Adam every parameter
costs ``2Ψ`` (fp16/bf16 weights) + ``2Ψ`` (gradients) + ``KΨ`` with ``K = 12`` (fp32 master
copy, momentum and variance). ZeRO-1 (``P_os``) shards the ``KΨ`` over the ``N_d`` data-parallel
ranks, ZeRO-2 (``P_os+g``) also the gradients, ZeRO-3 (``P_os+g+p``, PyTorch FSDP ``FULL_SHARD``)
also the weights::

    stage 0: (2 + 2 + K)·Ψ          stage 2: 2Ψ + (2 + K)·Ψ/N_d
    stage 1: 4Ψ + K·Ψ/N_d           stage 3: (2 + 2 + K)·Ψ/N_d

(Ψ = 7.5e9, N_d = 64: 120 GB, 31.4 GB, 16.6 GB, 1.9 GB, the paper's Fig. 1.) A training step
passes the bytes its job really holds: fp32 main gradients for bf16 and FP8 runs (4Ψ; Megatron's
distributed optimizer takes ``6 + 12/d`` bytes a parameter with bf16 weights, Megatron-LM
``docs/user-guide/features/dist_optimizer.md``) and one-byte weights with ``fp8_param_gather``.
With 16-bit gradients (fp16) the optimizer also steps on an fp32 copy of them (``K = 16``: the
same table's 20 bytes, ``4 + 16/d`` sharded); fp32 weights need no master copy (``K = 8``).

Activations follow Korthikanti et al., "Reducing Activation Recomputation in Large Transformer
Models" (arXiv 2205.05198, MLSys 2023), Table 2 and §4.2.3–4.3; see
:func:`activation_bytes_per_layer`.

>>> from commwall.workload.models import get_model
>>> m = memory_per_gpu(
...     get_model("llama3-70b"), tp=8, pp=4, dp=32, micro_batch=1, seq_len=8192, grad_bytes=4
... )
>>> round(m.total / 1e9, 1), m.fits(80e9)
(63.4, True)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from commwall.checks import choice, number, whole
from commwall.errors import CommwallError
from commwall.workload.models import ModelSpec

__all__ = [
    "MAIN_GRAD_BYTES",
    "MASTER_WEIGHT_BYTES",
    "OPTIMIZER_DTYPE_BYTES",
    "OPTIMIZER_STATE_BYTES",
    "RECOMPUTE_CHOICES",
    "AdamState",
    "LayerShape",
    "MemoryBreakdown",
    "MemoryModelError",
    "activation_bytes_per_layer",
    "adam_state",
    "memory_per_gpu",
    "model_state_bytes",
    "optimizer_bytes_per_param",
    "params_per_gpu",
]

OPTIMIZER_STATE_BYTES: dict[str, int] = {"adam": 8, "adamw": 8, "sgd": 4}
"""fp32 optimizer state per parameter, master copy excluded: Adam(W) m + v = 8, SGD momentum = 4."""

MASTER_WEIGHT_BYTES = 4
"""fp32 master copy of each parameter in mixed-precision training (Micikevicius et al. 2018)."""

MAIN_GRAD_BYTES = 4
"""fp32 copy of each gradient the mixed-precision optimizer steps on when the gradients are held
in 16 bits: Megatron-LM's ``docs/user-guide/features/dist_optimizer.md`` counts 20 bytes a
parameter for fp16 parameters with fp16 gradients (4 + 16/d with the distributed optimizer)
against 18 (6 + 12/d) for bf16 parameters with fp32 gradients."""

RECOMPUTE_CHOICES: tuple[str, ...] = ("none", "selective", "full", "selective_op")

OPTIMIZER_DTYPE_BYTES: dict[str, int] = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1}
"""Bytes an element of each dtype the precision-aware optimizer may keep a tensor in
(Megatron-LM ``--main-params-dtype``, ``--exp-avg-dtype``, ``--exp-avg-sq-dtype``; FP8's
per-tensor scale is not counted)."""


@dataclass(frozen=True)
class AdamState:
    """Adam's bytes a parameter in Megatron-Core's distributed optimizer (before sharding).

    ``master``: the master weight (4 fp32; 2 as fp16, or as the 16 bits an fp32 master adds to a
    bf16 parameter under ``store_param_remainders``; 0 for fp32 parameters, their own master);
    ``exp_avg``/``exp_avg_sq``: the moments; ``grad_copy``: the fp32 copy of 16-bit gradients
    the step makes (Megatron-Core's ``shard_main_param.grad = shard_model_grad.float()``), 0 where
    Transformer Engine's FusedAdam reads the gradients as they are (``decoupled_grad``);
    ``te_master``: FusedAdam keeps the master weights and writes the model's parameters itself;
    ``remainders``: it keeps them as the bf16 parameters' 16-bit remainders; ``grads``: bytes of
    each gradient the step reads (4: an fp32 gradient or its fp32 copy; the reduced gradient's own
    where FusedAdam reads it as it is).
    """

    master: int
    exp_avg: int
    exp_avg_sq: int
    grad_copy: int
    te_master: bool
    remainders: bool = False
    grads: int = 4

    @property
    def state(self) -> int:
        """Optimizer state bytes a parameter: master + both moments (ZeRO's ``K``)."""
        return self.master + self.exp_avg + self.exp_avg_sq

    @property
    def step_bytes(self) -> int:
        """HBM bytes a parameter the optimizer step moves: the gradient norm reads the
        gradients, Adam reads master, gradient and moments and writes master and moments back,
        and the new weight reaches the 16-bit parameter — Megatron-Core reads its fp32 master and
        writes 2 bytes, FusedAdam writes them in its kernel (and reads the bf16 half of a
        remainder-stored master); fp32 parameters are their own master, stepped in place.
        Megatron-Core's fp32 path: 4 + 16 + 12 + 6 = 38
        (``commwall.workload.step.OPTIMIZER_BYTES_PER_PARAM``).

        >>> AdamState(4, 4, 4, 0, False).step_bytes, AdamState(0, 4, 4, 0, False).step_bytes
        (38, 32)
        """
        grads = self.grads
        moments = self.exp_avg + self.exp_avg_sq
        master = self.master or 4  # an fp32 parameter is read and written as its own master
        adam = (master + grads + moments) + (master + moments)
        if not self.master:
            weight = 0
        elif self.te_master:
            weight = 2 + (2 if self.remainders else 0)
        else:
            weight = self.master + 2
        return grads + adam + weight


def adam_state(
    *,
    precision_aware: bool = False,
    exp_avg_dtype: str = "fp32",
    exp_avg_sq_dtype: str = "fp32",
    main_params_dtype: str = "fp32",
    store_param_remainders: bool = True,
    param_dtype: str = "bf16",
    scaled_fp8: bool = False,
    grad_bytes: int = 4,
) -> AdamState:
    """Adam's state a parameter under Megatron-Core's optimizer settings.

    Without ``precision_aware`` (``--use-precision-aware-optimizer``): an fp32 master for 16-bit
    parameters, fp32 moments, and an fp32 copy of 16-bit gradients at the step. With it,
    Transformer Engine's FusedAdam keeps the moments in ``exp_avg_dtype``/``exp_avg_sq_dtype``
    and, where Megatron-Core hands it the master weights (``OptimizerConfig``'s
    ``use_precision_aware_optimizer_no_fp8_or_ds_fp8``: ``main_params_dtype`` other than fp32,
    or no FP8 recipe that scales from the current amax — ``scaled_fp8`` false), keeps the
    master in ``main_params_dtype`` — as the 16-bit remainder of an fp32 master for bf16
    parameters with ``store_param_remainders`` (Megatron-Core's default, TE's FusedAdam:
    "requires bf16 param and fp32 master_weight_dtype") — and steps on the gradients as they
    are (``decoupled_grad``: no fp32 copy). Otherwise Megatron-Core keeps an fp32 master and
    copies the gradients to fp32 as without it (megatron/core/optimizer/__init__.py,
    distrib_optimizer.py, optimizer_config.py @HEAD of NVIDIA/Megatron-LM).

    ``param_dtype``: the model parameters' dtype (fp32, bf16, fp16 or fp8 with
    ``--fp8-param-gather``). ``MemoryModelError`` names a bad argument.

    >>> adam_state().state, adam_state().grad_copy  # bf16 weights, fp32 gradients
    (12, 0)
    >>> a = adam_state(precision_aware=True, exp_avg_dtype="bf16", exp_avg_sq_dtype="bf16",
    ...                grad_bytes=2)
    >>> a.master, a.state, a.grad_copy, a.step_bytes  # remainders, bf16 moments
    (2, 6, 0, 20)
    >>> adam_state(precision_aware=True, exp_avg_dtype="bf16", scaled_fp8=True, grad_bytes=2).master
    4
    """
    for name, value in (("exp_avg_dtype", exp_avg_dtype), ("exp_avg_sq_dtype", exp_avg_sq_dtype)):
        choice(name, value, tuple(OPTIMIZER_DTYPE_BYTES), error=MemoryModelError)
    choice("main_params_dtype", main_params_dtype, ("fp32", "fp16"), error=MemoryModelError)
    choice("param_dtype", param_dtype, ("fp32", "bf16", "fp16", "fp8"), error=MemoryModelError)
    whole("grad_bytes", grad_bytes, 1, error=MemoryModelError)
    mixed = param_dtype != "fp32"
    if not precision_aware:
        if (exp_avg_dtype, exp_avg_sq_dtype, main_params_dtype) != ("fp32",) * 3:
            raise MemoryModelError(
                "exp_avg_dtype, exp_avg_sq_dtype and main_params_dtype other than fp32 need "
                "precision_aware (Megatron-Core asserts the same)"
            )
        return AdamState(
            MASTER_WEIGHT_BYTES if mixed else 0, 4, 4, _fp32_copy(mixed, grad_bytes), False
        )
    moments = OPTIMIZER_DTYPE_BYTES[exp_avg_dtype], OPTIMIZER_DTYPE_BYTES[exp_avg_sq_dtype]
    te_master = main_params_dtype != "fp32" or not scaled_fp8
    if not mixed:
        master = 0
    elif not te_master:
        master = MASTER_WEIGHT_BYTES
    elif main_params_dtype == "fp32" and store_param_remainders and param_dtype == "bf16":
        return AdamState(2, *moments, 0, True, remainders=True, grads=grad_bytes)
    else:
        master = OPTIMIZER_DTYPE_BYTES[main_params_dtype]
    if te_master:  # FusedAdam steps on the gradients as they are (decoupled_grad)
        return AdamState(master, *moments, 0, True, grads=grad_bytes)
    return AdamState(master, *moments, _fp32_copy(mixed, grad_bytes), False)


def _fp32_copy(mixed: bool, grad_bytes: int) -> int:
    """Bytes a parameter of the fp32 gradient copy Megatron-Core's optimizer steps on: 16-bit
    gradients of 16-bit (or 8-bit) weights, :data:`MAIN_GRAD_BYTES`; none otherwise."""
    return MAIN_GRAD_BYTES if mixed and grad_bytes < 4 else 0


class MemoryModelError(CommwallError, ValueError):
    """A memory-model argument is wrong; the message names it, its value and what is allowed."""


@dataclass(frozen=True)
class MemoryBreakdown:
    """Bytes per GPU on the most loaded pipeline stage."""

    weights: float
    gradients: float
    optimizer: float
    activations: float
    total: float

    def fits(self, hbm_bytes: float, reserve_fraction: float = 0.1) -> bool:
        """True when ``total`` fits in ``hbm_bytes`` after keeping ``reserve_fraction`` free.

        The reserve stands for what this model leaves out: CUDA context, NCCL buffers,
        allocator fragmentation and transient tensors.
        """
        if not hbm_bytes > 0:
            raise MemoryModelError(f"hbm_bytes: {hbm_bytes!r} is not allowed; allowed: > 0")
        if not 0.0 <= reserve_fraction < 1.0:
            raise MemoryModelError(
                f"reserve_fraction: {reserve_fraction!r} is not allowed; allowed: 0 <= x < 1"
            )
        return self.total <= hbm_bytes * (1.0 - reserve_fraction)


# -------------------------------------------------------------------- model states
def optimizer_bytes_per_param(optimizer: str = "adam", master_weights: bool = True) -> int:
    """Optimizer bytes per parameter: ZeRO's ``K`` (12 for mixed-precision Adam).

    Adam/AdamW keep fp32 momentum and variance (8 B) and, in mixed precision, an fp32 master
    copy (4 B): ``K = 12`` (Rajbhandari et al. SC'20 §3.1). SGD with momentum: 4 B (+4 master).
    """
    choice("optimizer", optimizer, tuple(OPTIMIZER_STATE_BYTES), error=MemoryModelError)
    return OPTIMIZER_STATE_BYTES[optimizer] + (MASTER_WEIGHT_BYTES if master_weights else 0)


def model_state_bytes(
    n_params: float,
    *,
    dp: int,
    zero_stage: int = 0,
    param_bytes: int = 2,
    grad_bytes: int = 2,
    optimizer_bytes: int = 12,
) -> tuple[float, float, float]:
    """``(weights, gradients, optimizer)`` bytes per GPU for ``n_params`` replicated over ``dp``.

    ZeRO stage 1 divides the optimizer state by ``dp``, stage 2 also the gradients, stage 3
    also the weights (Rajbhandari et al. SC'20 §5, Fig. 1). The stage-3 figure is the resident
    shard; the one layer/unit gathered at a time during forward and backward is not counted.

    >>> w, g, o = model_state_bytes(7.5e9, dp=64, zero_stage=1)
    >>> round((w + g + o) / 1e9, 1)
    31.4
    """
    number("n_params", n_params, 0, error=MemoryModelError)
    whole("dp", dp, 1, error=MemoryModelError)
    stage = whole("zero_stage", zero_stage, 0, 3, error=MemoryModelError)
    whole("param_bytes", param_bytes, 1, error=MemoryModelError)
    whole("grad_bytes", grad_bytes, 1, error=MemoryModelError)
    whole("optimizer_bytes", optimizer_bytes, 0, error=MemoryModelError)
    weights = param_bytes * n_params / (dp if stage >= 3 else 1)
    grads = grad_bytes * n_params / (dp if stage >= 2 else 1)
    optim = optimizer_bytes * n_params / (dp if stage >= 1 else 1)
    return weights, grads, optim


@dataclass(frozen=True)
class _StageParams:
    dense: float  # parameters replicated over the whole data-parallel group
    expert: float  # MoE expert parameters, replicated over the expert-DP ranks only
    linear: float = 0.0  # the decoder layers' GEMM weights (dense and expert), a subset


def _stage_params(
    model: ModelSpec, *, tp: int, pp: int, ep: int, first: bool, etp: int | None = None
) -> _StageParams:
    """Parameters held by one GPU of the first (``first``) or last pipeline stage.

    Megatron-LM layout (Shoeybi et al. 2019; Narayanan et al. SC'21): linear layers and the
    vocabulary-parallel embedding / LM head are split over ``tp``; norms, the MoE router and a
    learned position table are replicated. K/V projections are split over ``min(tp, n_kv_heads)``
    (replicated beyond that). A stage holds ``ceil(L / pp)`` layers (the worst stage when ``pp``
    does not divide ``L``): the first stage the first layers, the last stage the last ones, so a
    model's :attr:`~ModelSpec.dense_layers` fall on the first, and each stage counts the dense
    and MoE layers its span holds (:meth:`~ModelSpec.is_moe_layer`). The first stage holds the
    token (and position) embedding, the last the final norm and LM head; with a tied head and
    ``pp > 1`` the last stage keeps its own copy of the table (Megatron
    ``share_embeddings_and_output_weights``).
    """
    h = model.hidden
    dense_params = expert_params = linear = 0.0
    for kind, n in _stage_layer_kinds(model, pp=pp, first=first, weights=True):
        dense_layer, expert_layer, replicated = _layer_split(kind, tp=tp, ep=ep, etp=etp)
        dense_params += n * dense_layer
        expert_params += n * expert_layer
        linear += n * (dense_layer - replicated + expert_layer)
    table = model.vocab * h / tp
    input_side = table + model.position_embedding_params()
    output_side = table + model.final_norm_params()
    if pp == 1:
        extra = (model.embedding_params() - model.position_embedding_params()) / tp + (
            model.position_embedding_params() + model.final_norm_params()
        )
    else:
        extra = input_side if first else output_side
    if pp == 1 or not first:  # the multi-token-prediction modules' projections and norms
        projection = 2 * h * h / tp
        extra += model.mtp_modules * (projection + 3 * model.norm_params())
        linear += model.mtp_modules * projection
    return _StageParams(dense=dense_params + extra, expert=expert_params, linear=linear)


def _stage_layer_kinds(
    model: ModelSpec, *, pp: int, first: bool, weights: bool = False
) -> list[tuple[ModelSpec, int]]:
    """(layer model, layers) of each kind of layer on the first or last of ``pp`` stages of
    ``ceil(L / pp)`` layers (:attr:`ModelSpec.layer_kinds`); the last stage also holds the
    multi-token-prediction modules' layers (:meth:`ModelSpec.mtp_kind`), one a depth, or with
    ``weights`` one a module with weights of its own (:attr:`ModelSpec.mtp_modules`)."""
    n_layers = model.n_layers
    layers = math.ceil(n_layers / pp)
    span = (
        range(n_layers)
        if pp == 1
        else range(layers)
        if first
        else range(n_layers - layers, n_layers)
    )
    kinds = model.layer_kinds
    mtp = (model.mtp_modules if weights else model.mtp_layers) if pp == 1 or not first else 0
    own = model.hybrid_pattern is not None and model.mtp_pattern is not None
    if len(kinds) == 1 and not own:
        return [(kinds[0][0], len(span) + mtp)]
    counts = [0] * len(kinds)
    for i in span:
        counts[model.kind_index(i)] += 1
    if not own:
        counts[model.kind_index(n_layers - 1)] += mtp  # the modules' layers are like the last
    out = [(kind, n) for (kind, _), n in zip(kinds, counts, strict=True)]
    # a hybrid model's modules run their pattern's blocks: a kind of their own
    return [*out, (model.mtp_kind(), mtp)] if own and mtp else out


def _layer_split(
    model: ModelSpec, *, tp: int, ep: int, etp: int | None
) -> tuple[float, float, float]:
    """(parameters replicated over DP, expert parameters, the replicated norms and router) of
    one GPU's share of one layer of ``model`` (a single kind of layer). MLA's down projections
    and its latents' norms are whole on every TP rank (:meth:`ModelSpec.mla_projections`). A
    hybrid model's block holds its norm and what its kind has: a Mamba-2 mixer (every tensor
    split over TP with its heads and groups, ``MambaMixer``), an attention, an MLP, experts."""
    h = model.hidden
    replicated = model.norms_per_layer * model.norm_params() + model.router_params_per_layer()
    if model.block == "mamba":  # the mixer's heads and groups, its projections and norm split
        return replicated + model.mamba_params_per_layer() / tp, 0.0, replicated
    if model.mla:
        whole = model.qk_norm_params() + sum(
            n_in * n_out for _, n_in, n_out, split in model.mla_projections() if not split
        )
        attn = (model.attention_params_per_layer() - whole) / tp + whole
    else:
        kv_split = min(tp, model.n_kv_heads)
        kv_bias = model.linear_bias or model.qkv_bias
        kv = 2 * h * model.kv_dim + (2 * model.kv_dim if kv_bias else 0)
        attn = (model.attention_params_per_layer() - kv) / tp + kv / kv_split
    if not model.has_attention:
        attn = 0.0
    if not model.has_mlp:
        return attn + replicated, 0.0, replicated
    if model.is_moe:
        dense_layer = attn + replicated + model.shared_mlp_params_per_layer() / tp
        # experts over ep, each expert's GEMMs over the expert TP (tp unless folded)
        expert_layer = (model.n_experts // ep) * model.mlp_params_per_layer() / (etp or tp)
    else:
        dense_layer = attn + replicated + model.mlp_params_per_layer() / tp
        expert_layer = 0.0
    return dense_layer, expert_layer, replicated


def params_per_gpu(model: ModelSpec, *, tp: int = 1, pp: int = 1, ep: int = 1) -> float:
    """Parameters held by one GPU of the most loaded pipeline stage (before any ZeRO sharding).

    With ``tp = pp = ep = 1`` this is ``model.total_params()``.
    """
    _validate_split(model, tp=tp, pp=pp, ep=ep)
    stages = [_stage_params(model, tp=tp, pp=pp, ep=ep, first=f) for f in (True, False)]
    return max(s.dense + s.expert for s in stages)


# -------------------------------------------------------------------- activations
def activation_bytes_per_layer(
    *,
    seq_len: int,
    micro_batch: int,
    hidden: int,
    n_heads: int,
    tp: int = 1,
    sequence_parallel: bool = True,
    recompute: str = "selective",
    flash_attention: bool = False,
    layer: LayerShape | None = None,
    fp8: bool = False,
    recompute_modules: tuple[str, ...] = ("core_attn",),
) -> float:
    """Activation bytes one transformer layer keeps for backward, per micro-batch, per GPU.

    Korthikanti et al. 2022 (arXiv 2205.05198), Table 2, with ``s`` = ``seq_len``, ``b`` =
    ``micro_batch``, ``h`` = ``hidden``, ``a`` = ``n_heads``, ``t`` = ``tp``, 16-bit activations:

    =========================================  ==============================
    no recompute, TP only                      ``s·b·h·(10 + 24/t + 5·a·s/(h·t))``
    no recompute, TP + sequence parallel       ``s·b·h/t·(34 + 5·a·s/h)``
    selective recompute, TP only               ``s·b·h·(10 + 24/t)``
    selective recompute, TP + SP               ``34·s·b·h/t``
    full recompute (layer input only)          ``2·s·b·h``
    =========================================  ==============================

    With ``t = 1`` the TP-only and TP+SP rows coincide (``sbh(34 + 5as/h)``).

    Assumptions and omissions, stated so they can be checked:

    - The 34 and ``5as/h`` factors were derived for a GPT layer with multi-head attention,
      a 4h GELU MLP and dropout. GQA (smaller K/V), SwiGLU (3 matrices, ``ffn_hidden ≠ 4h``)
      and the absence of dropout in Llama-style layers change them; that adjustment is
      ignored here.
    - ``5as/h`` is the materialised attention-score matrix; with FlashAttention
      (``flash_attention``) it is never stored — the kernel keeps only the softmax statistics,
      one fp32 value per query and head, ``4·b·s·a/t`` bytes (Dao et al. 2022, Algorithm 1's
      ``ℓ`` and ``m``) — and ``recompute="none"`` then keeps ``34·sbh/t`` plus those.
    - Full recompute: the paper stores ``2sbh`` and notes ``2sbh/t`` is possible; we follow
      the paper. The one layer re-materialised at a time during backward is not counted.

    With ``layer`` (:class:`LayerShape`) the same accounting is done tensor by tensor for the
    model's own layer instead of the GPT constants (bytes per token, 16-bit): not split by TP
    without sequence parallelism — the two norm inputs ``4h`` (four, ``8h``, with Gemma's norms
    after the attention and the MLP too), the QKV and MLP inputs ``2h`` each and, with dropout
    (GPT-style layers), two residual masks ``2h``; split by TP — Q and K
    ``2q + 2kv``, V ``2kv``, the attention output ``2q``, the MLP activation's input
    ``2·(2 if gated else 1)·f`` and the second MLP GEMM's input ``2f``; attention scores
    ``5as`` unfused with dropout, ``2as`` without. A MoE layer keeps its routed tokens' copies
    ``k·2h`` and each routed and shared expert's MLP tensors. GPT (``q = kv = h``, ``f = 4h``,
    dropout) gives the table's ``10 + 24/t`` and ``34``. With ``fp8`` Transformer Engine saves
    every GEMM input for backward in FP8 (``_Linear`` and ``LayerNormMLP`` keep the quantized
    input; the attention output stays 16-bit for the attention backward and gains an FP8 copy):
    ``−h`` (QKV input), ``−h`` (MLP input), ``−f`` (second MLP input) and ``+q``.

    ``recompute="selective"`` re-runs the parts ``recompute_modules`` names (Megatron-Core's
    ``recompute_modules``; the table's row is the default, ``core_attn``, which drops the
    attention scores — with FlashAttention, their softmax statistics); with ``layer`` the
    others drop what :meth:`LayerShape.per_hidden` lists for them. ``recompute="selective_op"``
    (PyTorch's per-op policy as torchtitan applies it) keeps what :func:`_per_op_kept` lists.
    """
    whole("seq_len", seq_len, 1, error=MemoryModelError)
    whole("micro_batch", micro_batch, 1, error=MemoryModelError)
    whole("hidden", hidden, 1, error=MemoryModelError)
    whole("n_heads", n_heads, 1, error=MemoryModelError)
    whole("tp", tp, 1, error=MemoryModelError)
    choice("recompute", recompute, RECOMPUTE_CHOICES, error=MemoryModelError)
    sbh = float(seq_len) * micro_batch * hidden
    t = float(tp)
    if recompute == "full":
        return 2.0 * sbh
    if recompute == "selective_op":
        shape = layer or LayerShape(hidden, hidden, 4 * hidden, gated_mlp=False, dropout=True)
        per_token = _per_op_kept(shape, hidden, n_heads, tp, sequence_parallel)
        return float(seq_len) * micro_batch * per_token
    dropout = layer.dropout if layer is not None else True
    modules = recompute_modules if recompute == "selective" else ()
    if "core_attn" in modules or (layer is not None and not layer.attention):
        attention_scores = 0.0
    elif flash_attention:
        attention_scores = 4.0 * n_heads / (hidden * t)  # softmax statistics, per sbh
    else:
        attention_scores = (5.0 if dropout else 2.0) * n_heads * seq_len / (hidden * t)
    unsplit, split = (
        (10.0, 24.0) if layer is None else layer.per_hidden(hidden, fp8=fp8, discarded=modules)
    )
    if sequence_parallel:
        return sbh * ((unsplit + split) / t + attention_scores)
    return sbh * (unsplit + split / t + attention_scores)


def _per_op_kept(
    layer: LayerShape, hidden: int, n_heads: int, tp: int, sequence_parallel: bool
) -> float:
    """Bytes per token a dense layer keeps under per-op selective activation checkpointing
    (``recompute: selective_op``; the policy: :func:`commwall.workload.compute._per_op_recomputed`),
    16-bit elements: the layer's input (the checkpoint's), the outputs of the matrix multiplies
    it keeps — the query and value projections, the MLP's first (gated: ``w1``; else the up
    projection) and, gated, its last (``w2``: the row-parallel partial sums, ``h`` wide on every
    TP rank) — the attention core's output with its softmax statistics (fp32, one per query
    and head) and, with TP and sequence parallelism, the two reduce-scatters' outputs (in the
    save list); the key, the output projection's product and every element-wise output are
    recomputed. With sequence parallelism the layer input and the reduce-scatter outputs are
    ``1/t`` of the tokens."""
    if (
        layer.mamba
        or layer.expert_ffn_hidden
        or layer.latent
        or not (layer.attention and layer.mlp)
    ):
        raise MemoryModelError(
            "recompute: selective_op is modelled for dense layers with attention and an MLP "
            "(no Mamba mixer, experts or multi-head latent attention); allowed for this "
            "layer: none, selective or full"
        )
    h, t = float(hidden), float(tp)
    sp = t if sequence_parallel else 1.0
    scatters = 2.0 if tp > 1 and sequence_parallel else 0.0  # after wo and after the MLP
    kept = 2.0 * h / sp + 2.0 * scatters * h / sp
    kept += 2.0 * (layer.q_dim + layer.kv_dim + (layer.o_dim or layer.q_dim)) / t
    kept += 4.0 * n_heads / t + 2.0 * layer.ffn_hidden / t
    if layer.gated_mlp:
        kept += 2.0 * h  # w2's product, before its reduction
    return kept


@dataclass(frozen=True)
class LayerShape:
    """What a layer's saved tensors depend on (:func:`activation_bytes_per_layer`)."""

    q_dim: int
    kv_dim: int
    ffn_hidden: int
    gated_mlp: bool
    dropout: bool
    top_k: int = 1  #: routed experts per token (1 for a dense layer)
    expert_ffn_hidden: int = 0  #: routed experts' MLP width (0 for a dense layer)
    shared_ffn_hidden: int = 0
    #: query and key norms (Qwen3, OLMo 2): their inputs are saved for the backward too
    qk_norm: bool = False
    #: norms after the attention and the MLP too (Gemma 2/3): two more norm inputs saved
    sandwich_norm: bool = False
    #: MLA (:attr:`ModelSpec.mla`): the widths of the keys, values and attention output when
    #: they differ from ``kv_dim``, ``kv_dim`` and ``q_dim`` (0: as those), and the latents
    #: every TP rank saves whole: each down projection's output (the latent norm's input) and
    #: its norm's output (the up projection's input), and the rotary key
    k_dim: int = 0
    v_dim: int = 0
    o_dim: int = 0
    latent: int = 0
    #: a clamped GLU clamped in eager PyTorch before the experts' activation (Megatron-Core's
    #: TEGroupedMLP, compute.EAGER_CLAMP_BYTES): the clamps keep the unclamped first GEMM
    #: output for their backward beside the clamped copy the activation keeps
    eager_clamp: bool = False
    #: a hybrid model's block (:attr:`ModelSpec.block`): which of the attention and the MLP it
    #: holds, and a Mamba-2 mixer's saved tensors split by TP, 16-bit elements per token: its
    #: input projection's output (``zxBCdt``, which ``mamba_split_conv1d_scan_combined`` keeps
    #: and re-runs the convolution from), the scan's output (the norm's input) and the norm's
    #: output (the output projection's input), ``in_width + 2·d_inner``
    attention: bool = True
    mlp: bool = True
    mamba: int = 0
    mamba_inner: int = 0

    @classmethod
    def of(cls, model: ModelSpec, *, eager_experts: bool = True) -> LayerShape:
        """The shape of ``model``'s layers; GPT-style layers (biases, LayerNorm) have dropout;
        ``eager_experts``: the experts run as Megatron-Core's TEGroupedMLP (not Transformer
        Engine's fused operations), which clamps a clamped GLU eagerly."""
        moe = model.is_moe
        return cls(
            q_dim=model.q_dim,
            kv_dim=model.kv_dim,
            ffn_hidden=0 if moe else model.ffn_hidden,
            gated_mlp=model.gated_mlp,
            dropout=model.linear_bias,
            top_k=model.top_k if moe else 1,
            expert_ffn_hidden=model.expert_ffn if moe else 0,
            shared_ffn_hidden=model.shared_ffn_hidden,
            qk_norm=model.qk_norm != "none",
            sandwich_norm=model.sandwich_norm,
            k_dim=model.k_dim if model.mla else 0,
            v_dim=model.v_dim if model.mla else 0,
            o_dim=model.o_dim if model.mla else 0,
            latent=(
                2 * ((model.q_lora_rank or 0) + (model.kv_lora_rank or 0)) + model.qk_rope_head_dim
                if model.mla
                else 0
            ),
            eager_clamp=moe and eager_experts and model.activation_clamp is not None,
            attention=model.has_attention,
            mlp=model.has_mlp,
            mamba=model.mamba_in_width + 2 * model.mamba_inner if model.block == "mamba" else 0,
            mamba_inner=model.mamba_inner if model.block == "mamba" else 0,
        )

    def per_hidden(
        self, hidden: int, *, fp8: bool = False, discarded: tuple[str, ...] = ()
    ) -> tuple[float, float]:
        """(bytes not split by TP, bytes split by TP) per token, in units of ``hidden``.

        ``discarded``: the selective-recompute modules (Megatron-Core's ``recompute_modules``)
        whose tensors the backward recomputes instead of keeping: ``mla_up_proj`` MLA's Q, K
        and V; ``layernorm`` the two norms' outputs (the QKV and MLP inputs); ``moe_act`` the
        routed experts' activation outputs (their second GEMM's inputs) and, with an eager
        clamp, the unclamped first GEMM output its clamps keep; ``mlp`` a dense
        layer's MLP tensors; ``shared_experts`` the shared expert's; ``moe`` the routed copies
        of each token and every expert's MLP tensors. Each block keeps its input."""
        h, act = float(hidden), 2.0 * (2.0 if self.gated_mlp else 1.0) + 2.0
        if self.mamba:  # a Mamba-2 block: the norm's and the input projection's inputs
            unsplit, split = 4 * h, 2.0 * self.mamba
            if fp8:  # the projections' inputs kept in FP8
                unsplit -= h
                split -= self.mamba_inner
            if "layernorm" in discarded:
                unsplit -= (1.0 if fp8 else 2.0) * h
            return unsplit / h, split / h
        if not (self.attention and self.mlp):  # a hybrid model's attention, MLP or MoE block
            return self._block(h, act, fp8, discarded)
        unsplit = 4 * h + 2 * h + 2 * h + (2 * h if self.dropout else 0.0) + 2.0 * self.latent
        if self.sandwich_norm:
            unsplit += 4 * h  # the inputs of the norms after the attention and the MLP
        k, v = self.k_dim or self.kv_dim, self.v_dim or self.kv_dim
        split = 2.0 * self.q_dim + 2 * k + 2 * v + 2 * (self.o_dim or self.q_dim)
        split += act * (self.ffn_hidden + self.shared_ffn_hidden)
        if self.qk_norm:
            split += 2.0 * (self.q_dim + self.kv_dim)  # the norms' inputs, 16-bit
        if self.expert_ffn_hidden:
            unsplit += self.top_k * 2 * h  # the routed copies of each token
            split += self.top_k * act * self.expert_ffn_hidden
            if self.eager_clamp:  # the unclamped first GEMM output, 16-bit, both halves
                split += self.top_k * 4.0 * self.expert_ffn_hidden
        if fp8:
            unsplit -= 2 * h  # the QKV and MLP inputs: one byte an element instead of two
            split += (self.o_dim or self.q_dim) - (self.ffn_hidden + self.shared_ffn_hidden)
            split -= self.top_k * self.expert_ffn_hidden
            unsplit -= self.top_k * h if self.expert_ffn_hidden else 0.0
        if discarded:
            unsplit, split = self._discard(h, fp8, discarded, unsplit, split)
        return unsplit / h, split / h

    def _block(
        self, h: float, act: float, fp8: bool, discarded: tuple[str, ...]
    ) -> tuple[float, float]:
        """:meth:`per_hidden` of a hybrid model's attention, MLP or MoE block: its norm's
        input, the GEMM input after the norm (one byte an element in FP8), and the attention's
        or the MLP's and experts' tensors as a transformer layer keeps them."""
        one = 1.0 if fp8 else 2.0
        unsplit, split = 2 * h + one * h, 0.0
        if self.attention:
            k, v = self.k_dim or self.kv_dim, self.v_dim or self.kv_dim
            out = self.o_dim or self.q_dim
            split = 2.0 * self.q_dim + 2 * k + 2 * v + 2 * out + (out if fp8 else 0.0)
            if self.qk_norm:
                split += 2.0 * (self.q_dim + self.kv_dim)
        else:
            widths = self.ffn_hidden + self.shared_ffn_hidden
            split = act * widths - (widths if fp8 else 0.0)
            if self.expert_ffn_hidden:
                unsplit += self.top_k * one * h  # the routed copies of each token
                routed = self.top_k * self.expert_ffn_hidden
                split += act * routed - (routed if fp8 else 0.0)
                if self.eager_clamp:
                    split += 4.0 * routed
        if "layernorm" in discarded:
            unsplit -= one * h
        rest = tuple(m for m in discarded if m != "layernorm")
        if rest:
            unsplit, split = self._discard(h, fp8, rest, unsplit, split)
        return unsplit / h, split / h

    def _discard(
        self, h: float, fp8: bool, modules: tuple[str, ...], unsplit: float, split: float
    ) -> tuple[float, float]:
        """``unsplit`` and ``split`` less what ``modules`` recompute (:meth:`per_hidden`)."""
        one = 1.0 if fp8 else 2.0  # bytes of a saved GEMM input
        mlp = 2.0 * (2.0 if self.gated_mlp else 1.0) + one  # an MLP's tensors per width
        routed = self.top_k * self.expert_ffn_hidden
        if "mla_up_proj" in modules and self.k_dim:
            split -= 2.0 * (self.q_dim + self.k_dim + self.v_dim)
        if "layernorm" in modules:
            unsplit -= 2 * one * h
        if "mlp" in modules:
            split -= mlp * self.ffn_hidden
        clamp = 4.0 * routed if self.eager_clamp else 0.0  # re-run with the activation
        if "moe" in modules and routed:
            unsplit -= self.top_k * one * h
            split -= mlp * (routed + self.shared_ffn_hidden) + clamp
            return unsplit, split
        if "moe_act" in modules:
            split -= one * routed + clamp
        if "shared_experts" in modules:
            split -= mlp * self.shared_ffn_hidden
        return unsplit, split


def _stage_activation_bytes(
    model: ModelSpec,
    *,
    tp: int,
    pp: int,
    micro_batch: int,
    seq_len: int,
    sequence_parallel: bool,
    recompute: str,
    inflight: float,
    first: bool,
    flash_attention: bool = False,
    fp8: bool = False,
    recompute_modules: tuple[str, ...] = ("core_attn",),
    recompute_num_layers: int | None = None,
    recompute_method: str = "uniform",
    chunks: int = 1,
    eager_experts: bool = True,
) -> float:
    """Activations of the first or last pipeline stage (Korthikanti et al. §4.2.3, §4.3).

    1F1B: the first stage keeps ``inflight`` micro-batches (default ``pp``), i.e. ``L`` layers'
    worth in total; the last stage keeps one. Outside the layers: the embedding dropout mask
    ``s·b·h/t`` per in-flight micro-batch (first stage) and, on the last stage, the final norm
    and LM-head inputs ``2·s·b·h/t`` each plus fp32 logits ``4·s·b·V/t`` (§4.3; the paper counts
    the latter only for ``p = 1`` because it studies the first stage; we give the last stage its
    share so that large vocabularies are not missed); each multi-token-prediction module on the
    last stage (``model.mtp_layers``) keeps a layer's worth, its projection's ``2h`` input and
    those output-layer tensors again. Without sequence parallelism the
    ``s·b·h`` terms are not divided by ``t``.

    A full recomputation (Megatron-Core's ``--recompute-method``, ``--recompute-num-layers``)
    keeps one layer input a group of ``recompute_num_layers`` layers (``uniform``; default one
    a layer), or recomputes only the first ``recompute_num_layers`` layers of each of the
    stage's ``chunks`` model chunks (``block``; the first chunk's first layers are a MoE
    model's dense ones) while the others keep everything.
    """

    def per_layer(kind: ModelSpec, how: str) -> float:
        return activation_bytes_per_layer(
            seq_len=seq_len,
            micro_batch=micro_batch,
            hidden=model.hidden,
            n_heads=model.n_heads,
            tp=tp,
            sequence_parallel=sequence_parallel,
            recompute=how,
            flash_attention=flash_attention,
            layer=LayerShape.of(kind, eager_experts=eager_experts),
            fp8=fp8,
            recompute_modules=recompute_modules,
        )

    stage_layers = 0.0  # one micro-batch's activations of the stage's layers
    kinds = _stage_layer_kinds(model, pp=pp, first=first)
    block = recompute_num_layers if recompute == "full" and recompute_method == "block" else None
    if block is None:
        group = (recompute_num_layers or 1) if recompute == "full" else 1
        for kind, n in kinds:
            stage_layers += n * per_layer(kind, recompute) / group
    else:  # the first layers of each chunk recompute, the dense ones first
        left = min(sum(n for _, n in kinds), block * chunks)
        for kind, n in kinds:
            redo = min(n, left)
            left -= redo
            stage_layers += redo * per_layer(kind, "full") + (n - redo) * per_layer(kind, "none")
    sbh = float(seq_len) * micro_batch * model.hidden
    t_sp = tp if sequence_parallel else 1
    embedding = sbh / t_sp
    output = 4.0 * sbh / t_sp + 4.0 * seq_len * micro_batch * model.vocab / tp
    # each multi-token-prediction module (its layer is counted above): its own final-norm and
    # LM-head inputs and fp32 logits, as the output's, and its projection's 2h input
    output *= 1 + model.mtp_layers
    output += model.mtp_layers * 4.0 * sbh / t_sp
    if pp == 1:
        return inflight * (stage_layers + embedding) + output
    if first:
        return inflight * (stage_layers + embedding)
    return stage_layers + output


# -------------------------------------------------------------------- the whole GPU
def _validate_split(model: ModelSpec, *, tp: int, pp: int, ep: int) -> None:
    whole("tp", tp, 1, error=MemoryModelError)
    whole("pp", pp, 1, error=MemoryModelError)
    whole("ep", ep, 1, error=MemoryModelError)
    if model.n_heads % tp:
        raise MemoryModelError(
            f"tp={tp} is invalid for {model.name}: must divide n_heads={model.n_heads}"
        )
    if pp > model.n_layers:
        raise MemoryModelError(
            f"pp={pp} is invalid for {model.name}: must be <= n_layers={model.n_layers}"
        )
    if model.n_experts % ep:
        raise MemoryModelError(
            f"ep={ep} is invalid for {model.name}: must divide n_experts={model.n_experts}"
        )


def _validate_parallelism(
    model: ModelSpec, *, tp: int, pp: int, dp: int, ep: int, etp: int | None = None
) -> None:
    _validate_split(model, tp=tp, pp=pp, ep=ep)
    whole("dp", dp, 1, error=MemoryModelError)
    e = etp or tp
    if (tp * dp) % (ep * e):
        raise MemoryModelError(
            f"ep={ep} is invalid: ep x expert_tp = {ep} x {e} must divide tp x dp = {tp} x {dp} "
            f"(the expert grid folds over the same ranks)"
        )


def memory_per_gpu(
    model: ModelSpec,
    *,
    tp: int,
    pp: int,
    dp: int,
    ep: int = 1,
    zero_stage: int = 0,
    micro_batch: int,
    seq_len: int,
    param_bytes: int = 2,
    grad_bytes: int = 2,
    optimizer: str = "adam",
    master_weights: bool = True,
    sequence_parallel: bool = True,
    recompute: str = "selective",
    inflight_microbatches: float | None = None,
    flash_attention: bool = False,
    fp8: bool = False,
    expert_tp: int | None = None,
    quantized_weight_bytes: float = 0.0,
    recompute_modules: tuple[str, ...] = ("core_attn",),
    recompute_num_layers: int | None = None,
    recompute_method: str = "uniform",
    virtual_stages: int = 1,
    eager_experts: bool = True,
    adam: AdamState | None = None,
) -> MemoryBreakdown:
    """Bytes per GPU on the most loaded pipeline stage of a TP x PP x DP (x EP) job.

    - Weights: ``ceil(L/pp)`` layers split over ``tp`` (MoE experts also over ``ep``), plus the
      embedding on the first stage and LM head on the last (see :func:`params_per_gpu`). When
      ``pp`` does not divide ``n_layers`` the stage holds ``ceil(L/pp)`` layers (worst stage).
    - With ``quantized_weight_bytes``, the FP8/NVFP4 copies of every decoder-layer GEMM weight
      Transformer Engine keeps through the step, in bytes a parameter
      (``commwall.workload.compute.cached_weight_bytes``), counted with the weights (not with
      ZeRO-3, which gathers a layer's weight, and so its copy, only while it runs).
    - Gradients ``grad_bytes``/param and optimizer :func:`optimizer_bytes_per_param`/param
      (the master copy only for 16- or 8-bit weights, plus :data:`MAIN_GRAD_BYTES` when the
      gradients are 16-bit: Megatron's 20, 18 and 16 bytes a parameter for fp16/fp16,
      bf16/fp32 and fp32/fp32; that fp32 copy lives from the optimizer step to the next step's
      ``zero_grad``, apart from the activations, so the peak holds the larger of the two),
      sharded by ZeRO ``zero_stage`` (:func:`model_state_bytes`) over ``dp`` for dense
      parameters and over ``tp·dp / (ep·expert_tp)`` (the expert-data-parallel group of
      Megatron-Core's expert grid; ``dp // ep`` when ``expert_tp`` is ``tp``, the default) for
      expert parameters, whose GEMMs split over ``expert_tp``; ``dp`` is the group that shards
      ZeRO's state: the ranks that reduce gradients (``dp × cp`` with context parallelism), or
      with hybrid sharding one shard group of them (``job.dp_replicate``).
    - Activations: :func:`activation_bytes_per_layer` for the model's own layer
      (:class:`LayerShape`; saved GEMM inputs in FP8 with ``fp8``) x layers x in-flight micro-batches
      (1F1B: ``inflight_microbatches`` defaults to ``pp`` on the first stage), plus embedding
      and output-layer terms (Korthikanti et al. §4.3); ``recompute_modules``: what a selective
      recomputation re-runs; ``recompute_method`` and ``recompute_num_layers``: which layers a
      full one re-runs, over ``virtual_stages`` model chunks a stage; ``eager_experts``: a
      MoE layer's experts run as Megatron-Core's TEGroupedMLP, whose eager clamp of a clamped
      GLU keeps the unclamped first GEMM output too (:class:`LayerShape`).
    - ``adam``: Adam's state under the job's optimizer settings (:func:`adam_state`: the
      precision-aware optimizer's dtypes) in place of the fp32 one above.

    The reported stage is whichever of the first and last stages needs more in total.
    ``MemoryModelError`` names the bad argument, its value and what is allowed.
    """
    _validate_parallelism(model, tp=tp, pp=pp, dp=dp, ep=ep, etp=expert_tp)
    stage = whole("zero_stage", zero_stage, 0, 3, error=MemoryModelError)
    whole("micro_batch", micro_batch, 1, error=MemoryModelError)
    whole("seq_len", seq_len, 1, error=MemoryModelError)
    whole("param_bytes", param_bytes, 1, error=MemoryModelError)
    whole("grad_bytes", grad_bytes, 1, error=MemoryModelError)
    number("quantized_weight_bytes", quantized_weight_bytes, 0, error=MemoryModelError)
    choice("recompute", recompute, RECOMPUTE_CHOICES, error=MemoryModelError)
    choice("recompute_method", recompute_method, ("uniform", "block"), error=MemoryModelError)
    if recompute_num_layers is not None:
        whole("recompute_num_layers", recompute_num_layers, 1, error=MemoryModelError)
    whole("virtual_stages", virtual_stages, 1, error=MemoryModelError)
    # Mixed precision keeps fp32 master weights, and an fp32 copy of 16-bit gradients to step
    # on (:data:`MAIN_GRAD_BYTES`); fp32 weights are their own master (Megatron's 16 = 8 + 8/d).
    mixed = master_weights and param_bytes < 4
    copy = _fp32_copy(mixed, grad_bytes)
    # Megatron's optimizers make that copy as they step (``shard_main_param.grad =
    # shard_model_grad.float()`` in DistributedOptimizer._copy_model_grads_to_main_grads
    # @d98e8a6, Float16OptimizerWithFloat16Params alike) and drop it in the next step's
    # zero_grad (set_to_none), before the forward: it never meets the activations. (FSDP2
    # casts each reduced shard to its fp32 parameter's dtype in the backward instead: up to
    # 4/d bytes a parameter more there, not counted.)
    k = optimizer_bytes_per_param(optimizer, mixed)
    if adam is not None:
        if optimizer not in ("adam", "adamw"):
            raise MemoryModelError(
                f"adam: given with optimizer {optimizer!r}; allowed: adam, adamw"
            )
        k, copy = adam.state, adam.grad_copy
    inflight = pp if inflight_microbatches is None else inflight_microbatches
    number("inflight_microbatches", inflight, 1, error=MemoryModelError)

    expert_dp = tp * dp // (ep * (expert_tp or tp))  # the expert grid's data-parallel ranks
    best: MemoryBreakdown | None = None
    for first in (True, False):
        params = _stage_params(model, tp=tp, pp=pp, ep=ep, first=first, etp=expert_tp)
        states = [
            model_state_bytes(
                n,
                dp=group,
                zero_stage=stage,
                param_bytes=param_bytes,
                grad_bytes=grad_bytes,
                optimizer_bytes=k,
            )
            for n, group in (
                (params.dense, dp),
                (params.expert, expert_dp),
            )
        ]
        weights, grads, optim = (sum(s[i] for s in states) for i in range(3))
        main_grads = (
            sum(  # the optimizer step's fp32 copy of 16-bit gradients
                model_state_bytes(n, dp=group, zero_stage=stage, optimizer_bytes=copy)[2]
                for n, group in ((params.dense, dp), (params.expert, expert_dp))
            )
            if copy
            else 0.0
        )
        if stage < 3:  # ZeRO-3 gathers each layer's weight, and its copy, only to use it
            weights += params.linear * quantized_weight_bytes
        acts = _stage_activation_bytes(
            model,
            tp=tp,
            pp=pp,
            micro_batch=micro_batch,
            seq_len=seq_len,
            sequence_parallel=sequence_parallel,
            recompute=recompute,
            inflight=inflight,
            first=first,
            flash_attention=flash_attention,
            fp8=fp8,
            recompute_modules=recompute_modules,
            recompute_num_layers=recompute_num_layers,
            recompute_method=recompute_method,
            chunks=virtual_stages,
            eager_experts=eager_experts,
        )
        # the optimizer step's fp32 gradient copy, where it outweighs the freed activations
        optim += max(0.0, main_grads - acts)
        total = weights + grads + optim + acts
        candidate = MemoryBreakdown(weights, grads, optim, acts, total)
        if best is None or candidate.total > best.total:
            best = candidate
    assert best is not None
    return best
