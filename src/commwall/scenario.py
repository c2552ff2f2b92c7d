"""The scenario file: a cluster, a training job and how to simulate them.

A scenario is YAML validated by pydantic models with ``extra="forbid"``; every field says what it
holds, its unit and its bounds (``commwall schema`` prints the JSON schema). Quantities accept unit
strings (``"25 MiB"``, ``"400 Gb/s"``) parsed by :mod:`commwall.units`. Anything wrong becomes a
:class:`ScenarioError` whose lines each name the field path, the bad value and what is allowed.

>>> s = Scenario.model_validate({"cluster": {"preset": "dgx-h100", "nodes": 2},
...                              "job": {"model": "llama3-8b", "tp": 8, "dp": 2}})
>>> s.cluster.nodes, s.job.tp
(2, 8)
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Final, Literal, get_args

import yaml
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    WithJsonSchema,
    model_validator,
)

from commwall.errors import CommwallError
from commwall.megatron_args import MegatronArgsError, padded_vocab
from commwall.megatron_bridge import is_bridge_config, launch_job, layout_text
from commwall.units import UnitError, parse_size, parse_time

# ---- the names every layer uses (defined here once; the CLI, engines and routing import them)

Engine = Literal["analytic", "flow"]
#: Engines a training step runs on: ``simulation.engine`` and ``--engine`` of run, compare,
#: report and chakra.
ENGINES: Final[tuple[str, ...]] = get_args(Engine)
#: Every engine: the step engines and the packet engine (collectives and plain traffic only).
ALL_ENGINES: Final[tuple[str, ...]] = (*ENGINES, "packet")
Fabric = Literal["ib", "roce", "ethernet"]
#: Scale-out fabrics of a cluster (``cluster.fabric``).
FABRICS: Final[tuple[str, ...]] = get_args(Fabric)
TopologyKind = Literal["rail-optimized", "fat-tree", "rail-only"]
#: Scale-out topologies a cluster is built with (``cluster.topology.kind``; the builders are in
#: :mod:`commwall.topology`, ``Cluster.scale_out_topology`` picks one).
TOPOLOGY_KINDS: Final[tuple[str, ...]] = get_args(TopologyKind)
#: Every scale-out fabric kind a builder makes from its name (``commwall topology``, ``traffic``,
#: ``packet``; :func:`commwall.topology.kinds.build_fabric`); a cluster takes
#: :data:`TOPOLOGY_KINDS` of them.
FABRIC_KINDS: Final[tuple[str, ...]] = (
    "fat-tree", "leaf-spine", "rail-optimized", "rail-only", "dragonfly", "dragonfly-plus"
)  # fmt: skip
Optics = Literal["dsp", "lpo", "cpo"]
#: Optical technologies a fabric is built with (``cluster.optics.technology``; the bill of
#: materials, :mod:`commwall.topology.bom`).
OPTICS: Final[tuple[str, ...]] = get_args(Optics)
#: Every load-balancing policy of the flow engine's routing (:mod:`commwall.routing`), in the
#: order the docs present them; ``valiant``, ``ugal`` and ``valiant-flow`` (one intermediate
#: group per flow) route dragonflies only.
ROUTING_POLICIES: Final[tuple[str, ...]] = (
    "ecmp", "flowlet", "spray", "cells", "adaptive", "valiant", "ugal", "valiant-flow"
)  # fmt: skip
#: The policies a cluster (a Clos fabric) takes in ``cluster.routing``.
CLUSTER_POLICIES: Final[tuple[str, ...]] = ROUTING_POLICIES[:5]
#: NCCL's PXN rail-local forwarding: ``pxn`` alone (ECMP with PXN) or ``POLICY+pxn``.
PXN: Final = "pxn"
#: Routings the packet engine runs (per-flow ECMP, per-packet spraying, adaptive routing).
PACKET_ROUTINGS: Final[tuple[str, ...]] = ("ecmp", "spray", "adaptive")


class ScenarioFieldError(CommwallError, ValueError):
    """A scenario field's value is wrong; the message names the value, the problem and what is
    allowed. Raised by the field readers (:func:`parse_routing_name`, :func:`parse_count`, …),
    which pydantic turns into the lines of a :class:`ScenarioError`."""


def parse_routing_name(name: str, policies: tuple[str, ...] = ROUTING_POLICIES) -> tuple[str, bool]:
    """``(policy, pxn)`` of a routing name: ``POLICY``, ``pxn`` (ECMP with PXN) or
    ``POLICY+pxn``, ``POLICY`` one of ``policies``; a ``ValueError`` naming what is allowed.

    >>> parse_routing_name("spray+pxn"), parse_routing_name("pxn"), parse_routing_name("ecmp")
    (('spray', True), ('ecmp', True), ('ecmp', False))
    """
    parts = [p.strip() for p in str(name).strip().lower().split("+")]
    if parts.count(PXN) > 1:
        raise ScenarioFieldError(f"{name!r}: '+pxn' given {parts.count(PXN)} times; give it once")
    rest = [p for p in parts if p != PXN] or ["ecmp"]
    if len(rest) != 1 or rest[0] not in policies:
        raise ScenarioFieldError(
            f"{name!r} is not allowed; allowed: {', '.join((*policies, PXN))} (add '+pxn' to "
            "any, e.g. spray+pxn)"
        )
    return rest[0], PXN in parts


def cluster_routing(name: str) -> str:
    """``name`` as ``cluster.routing`` holds it: a policy of :data:`CLUSTER_POLICIES`, ``pxn``
    or ``POLICY+pxn`` in lower case without spaces, as written otherwise (so a saved scenario
    reads back the same); a ``ValueError`` naming what is allowed."""
    parse_routing_name(name, CLUSTER_POLICIES)
    return "+".join(p.strip() for p in name.strip().lower().split("+"))


def _routing_field(value: object) -> object:
    # not text: pydantic's own "Input should be a valid string"
    return cluster_routing(value) if isinstance(value, str) else value


Routing = Annotated[str, BeforeValidator(_routing_field)]
Precision = Literal["bf16", "fp16", "fp8", "fp4", "tf32"]
Recompute = Literal["none", "selective", "full", "selective_op"]
#: The parts of a layer selective recomputation may re-run (Megatron-Core's
#: ``recompute_modules``, ``transformer_config.py``).
RecomputeModule = Literal[
    "core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp", "moe", "shared_experts"
]


def _layout_field(value: Any) -> Any:
    """A pipeline layout given in Megatron-Core's list form (a list of virtual stages, each a
    list of layer names, as Megatron-Bridge saves it) as the string form; text as given."""
    if isinstance(value, list | tuple):
        try:
            return layout_text(value)
        except MegatronArgsError as err:
            raise ValueError(str(err)) from None
    return value


def _as_tuple(value: Any) -> Any:
    """A YAML list, or text naming the items as Megatron-Core's command line does (spaces or
    commas: ``"mla_up_proj moe_act"``, which a sweep axis can hold), as the tuple a frozen
    (hashable) spec keeps; anything else as given."""
    if isinstance(value, str):
        items = [x for x in value.replace(",", " ").split() if x]
        if not items:
            raise ValueError("names no item; give a list, e.g. [mla_up_proj, moe_act]")
        return tuple(items)
    return tuple(value) if isinstance(value, list) else value


RecomputeModules = Annotated[tuple[RecomputeModule, ...], BeforeValidator(_as_tuple)]
#: Megatron-Core's ``--moe-layer-freq`` as a list: one 1 (MoE) or 0 (dense) per layer.
MoeLayerPattern = Annotated[
    tuple[Annotated[int, Field(ge=0, le=1)], ...],
    BeforeValidator(_as_tuple),
    Field(min_length=1, max_length=100_000),
]
CpuVendor = Literal["intel", "amd", "other"]
ScaleUp = Literal["nvlink", "pcie"]
Policy = Literal["nccl", "all"]


def _quantity(parse: Callable[[str | float | int], float]) -> Callable[[object], object]:
    """A pydantic before-validator reading a unit string (or number) with ``parse``."""

    def read(value: object) -> object:
        if isinstance(value, str | int | float) and not isinstance(value, bool):
            try:
                return parse(value)
            except UnitError as err:
                raise ScenarioFieldError(str(err)) from None
        return value

    return read


#: Bidirectional-text controls (U+202A-U+202E, U+2066-U+2069): they reorder what a terminal or
#: report shows, so a printed name could read as something else.
_BIDI_CONTROLS: Final = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _printable(value: object) -> object:
    """Refuse control characters (terminal escape sequences, carriage returns, bidirectional
    overrides) in free text that reaches terminals and reports; newlines and tabs are allowed."""
    if isinstance(value, str):
        for i, ch in enumerate(value):
            if (ord(ch) < 32 and ch not in "\n\t") or 127 <= ord(ch) < 160 or ch in _BIDI_CONTROLS:
                raise ScenarioFieldError(
                    f"control character {ch!r} at position {i + 1}; allowed: printable text"
                )
    return value


Text = Annotated[str, BeforeValidator(_printable)]

_RELEASE = re.compile(r"(\d{1,3})\.(\d{1,3})(\.\d{1,4})?")


def _release(value: object) -> object:
    """A ``major.minor[.patch]`` library release written as text: YAML reads ``9.10`` as the
    number 9.1, so a number is refused rather than guessed."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        raise ScenarioFieldError(
            f"{value!r} is a number; write the release as text, e.g. '9.13' (YAML reads 9.10 "
            "as 9.1)"
        )
    if isinstance(value, str) and not _RELEASE.fullmatch(value.strip()):
        raise ScenarioFieldError(f"{value!r} is not a release; allowed: major.minor, e.g. '9.13'")
    return value.strip() if isinstance(value, str) else value


Release = Annotated[str, BeforeValidator(_release)]


Bytes = Annotated[float, BeforeValidator(_quantity(parse_size))]
Seconds = Annotated[float, BeforeValidator(_quantity(parse_time))]


def _signed_time(value: str | float | int) -> float:
    """A time that may be negative (``"-1.5 us"``): a correction rather than a duration."""
    if isinstance(value, str) and value.strip().startswith("-"):
        return -parse_time(value.strip()[1:])
    if isinstance(value, str) and value.strip().startswith("+"):
        return parse_time(value.strip()[1:])
    return float(value) if not isinstance(value, str) else parse_time(value)


SignedSeconds = Annotated[float, BeforeValidator(_quantity(_signed_time))]

_COUNT_SUFFIXES = {"K": 1e3, "M": 1e6, "B": 1e9, "G": 1e9, "T": 1e12}


def parse_count(value: object) -> float:
    """A large count such as ``"15T"`` (tokens), ``"405B"``, ``"1.5e12"`` or a number.

    >>> parse_count("15T"), parse_count("2.5 M"), parse_count("1e9")
    (15000000000000.0, 2500000.0, 1000000000.0)
    """
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, str):
        raise ScenarioFieldError(
            f"{value!r} is not a count; allowed: a number or e.g. '15T', '405B'"
        )
    text = value.strip().replace(",", "").replace("_", "")
    factor = _COUNT_SUFFIXES.get(text[-1:].upper(), 1.0) if text[-1:].isalpha() else 1.0
    number = text[:-1].strip() if factor != 1.0 else text
    try:
        return float(number) * factor
    except ValueError:
        raise ScenarioFieldError(
            f"{value!r} is not a count; allowed: a number with an optional K, M, B/G or T suffix"
        ) from None


def _count(value: object) -> object:
    return parse_count(value) if isinstance(value, str) else value


Count = Annotated[float, BeforeValidator(_count)]


class _Strict(BaseModel):
    # strict: YAML `true` is not a node count and "8" is not an integer.
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class TopologySpec(_Strict):
    """Scale-out topology as the analytic engine sees it (builders arrive with the fabric issue)."""

    kind: TopologyKind = Field(
        default="rail-optimized",
        description="Scale-out topology: rail-optimized (NIC i of every node on leaf plane i), "
        "fat-tree (all NICs of a node on one leaf), rail-only (no spine; cross-rail over NVLink).",
    )
    tiers: int | None = Field(
        default=None,
        ge=1,
        le=3,
        description="Switch tiers (1–3). Default: the fewest that hold the cluster at the switch radix.",
    )
    oversubscription: float = Field(
        default=1.0,
        ge=1.0,
        le=64.0,
        description="Taper above the leaf, down:up bandwidth (1.0 = non-blocking).",
    )


class OpticsSpec(_Strict):
    """How the scale-out fabric's links are built (power and cost; the timing model ignores it)."""

    technology: Optics = Field(
        default="dsp",
        description="Optical transceivers: dsp (retimed pluggables), lpo (linear-drive pluggables) "
        "or cpo (co-packaged optics at the switch).",
    )


class LinkCalibration(_Strict):
    """A fitted correction to one link class of the collective model (``commwall calibrate``)."""

    bandwidth_factor: float = Field(
        default=1.0,
        ge=1e-4,
        le=100.0,
        description="Multiplies the class's modelled per-rank bandwidth (1.0 = the model as is).",
    )
    latency: SignedSeconds = Field(
        default=0.0,
        ge=-1e-3,
        le=1.0,
        description="Added to every step over this class, seconds (may be negative; a step never "
        "costs less than 0).",
    )


class CalibrationSpec(_Strict):
    """Per link class corrections fitted to measurements; absent classes stay as modelled."""

    nvlink: LinkCalibration | None = Field(
        default=None, description="NVLink/NVSwitch steps inside a scale-up domain."
    )
    pcie: LinkCalibration | None = Field(
        default=None, description="PCIe (or host shared-memory) steps inside a PCIe-only node."
    )
    network: LinkCalibration | None = Field(
        default=None, description="Scale-out network steps between domains."
    )
    source: Text = Field(
        default="",
        max_length=100_000,
        description="What the corrections were fitted to (free text, for the record).",
    )


class ClusterSpec(_Strict):
    """The machine: a preset and/or parts, and how many nodes."""

    preset: str | None = Field(
        default="dgx-h100",
        description="Cluster preset from the catalog (`commwall catalog preset`); parts below override it.",
    )
    nodes: int = Field(default=1, ge=1, le=1_000_000, description="Nodes (compute trays), count.")
    gpu: str | None = Field(default=None, description="GPU part name (kind 'gpu').")
    gpus_per_node: int | None = Field(
        default=None,
        ge=1,
        le=1024,
        description=(
            "GPUs per node, count. With a preset whose scale-up domain is its node (DGX/HGX), "
            "a different count also sets that domain and scales the NICs per node (same NICs "
            "per GPU, at least one) unless scale_up_domain / nics_per_node are given."
        ),
    )
    scale_up: ScaleUp = Field(
        default="nvlink",
        description="How GPUs inside a domain talk: nvlink (NVLink/NVSwitch) or pcie (PCIe P2P only).",
    )
    scale_up_domain: int | None = Field(
        default=None,
        ge=1,
        le=1024,
        description="GPUs sharing one NVLink/NVSwitch domain (8 for HGX, 72 for NVL72), count.",
    )
    nvswitch: str | None = Field(default=None, description="NVSwitch part name (kind 'nvswitch').")
    nic: str | None = Field(default=None, description="Compute NIC part name (kind 'nic').")
    nics_per_node: int | None = Field(
        default=None, ge=1, le=64, description="Compute NICs per node."
    )
    fabric: Fabric | None = Field(
        default=None, description="Scale-out fabric: ib, roce or ethernet."
    )
    switch: str | None = Field(
        default=None, description="Scale-out switch part name (kind 'switch')."
    )
    pcie: str | None = Field(default=None, description="PCIe generation of the GPU↔NIC path.")
    gpudirect_rdma: bool | None = Field(
        default=None,
        description="NICs read GPU memory directly (else a bounce through host memory).",
    )
    sharp: bool = Field(
        default=False,
        description="InfiniBand SHARP in-network reduction enabled (NCCL CollNet: "
        "NCCL_COLLNET_ENABLE=1 with the SHARP plugin; off by default as in NCCL).",
    )
    cpu: CpuVendor | None = Field(
        default=None,
        description="Host CPU vendor (NCCL's network overhead: 1 µs Intel, 2 µs AMD; LL cap row). "
        "Default: the preset's, else intel.",
    )
    mtu: int = Field(
        default=4096,
        ge=256,
        le=9216,
        description="Network MTU payload, bytes (IB: 4096; RoCE: 4096).",
    )
    topology: TopologySpec = Field(default_factory=TopologySpec, description="Scale-out topology.")
    optics: OpticsSpec = Field(default_factory=OpticsSpec, description="Optics of the fabric.")
    routing: Routing = Field(
        default="adaptive",
        description="Load balancing. The analytic engine assumes ideal balance; the flow engine uses it.",
    )
    overrides: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="Per-part field overrides, e.g. {gpu: {tdp: '650 W'}, nic: {rate: '200 Gb/s'}}.",
    )
    calibration: CalibrationSpec = Field(
        default_factory=CalibrationSpec,
        description="Corrections fitted to measured collectives (`commwall calibrate nccl-tests`).",
    )


#: A model name a table can print as it is (no markup, no control characters).
MODEL_NAME = r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$"


class ModelDef(_Strict):
    """A model the zoo does not have: its architecture inline, or a Hugging Face
    ``config.json`` read from a local path (``hf_config``; relative to the scenario file).

    Field names and meanings follow :class:`commwall.workload.models.ModelSpec`; the defaults
    are a Llama-style decoder (SwiGLU, RMSNorm, rotary positions, untied head, dense).
    """

    name: str = Field(
        default="custom", pattern=MODEL_NAME, description="Name shown in tables and JSON."
    )
    hf_config: str | None = Field(
        default=None,
        min_length=1,
        description="Path of a Hugging Face config.json (read locally, never downloaded); "
        "the architecture fields below must then be left out.",
    )
    n_layers: int | None = Field(default=None, ge=1, le=100_000, description="Layers.")
    hidden: int | None = Field(default=None, ge=1, le=10_000_000, description="Hidden size.")
    ffn_hidden: int | None = Field(
        default=None, ge=1, le=100_000_000, description="MLP width (intermediate_size)."
    )
    n_heads: int | None = Field(default=None, ge=1, le=100_000, description="Attention heads.")
    n_kv_heads: int | None = Field(
        default=None, ge=1, le=100_000, description="Key/value heads (GQA). Default: n_heads."
    )
    head_dim: int | None = Field(
        default=None, ge=1, le=100_000, description="Head dimension. Default: hidden / n_heads."
    )
    vocab: int | None = Field(default=None, ge=1, le=100_000_000, description="Vocabulary.")
    max_seq_len: int | None = Field(
        default=None, ge=1, le=100_000_000, description="Context length. Default: no limit."
    )
    gated_mlp: bool = Field(default=True, description="SwiGLU-style three-matrix MLP.")
    tied_embeddings: bool = Field(default=False, description="LM head shares the embedding.")
    norm: Literal["rmsnorm", "layernorm"] = Field(default="rmsnorm", description="Norm kind.")
    linear_bias: bool = Field(default=False, description="Biases on every linear layer (GPT).")
    qkv_bias: bool = Field(default=False, description="Biases on q, k, v only (Qwen2).")
    learned_pos_emb: bool = Field(default=False, description="Learned position table (GPT).")
    n_experts: int = Field(default=1, ge=1, le=100_000, description="Routed experts (MoE).")
    top_k: int = Field(default=1, ge=1, le=100_000, description="Experts per token (MoE).")
    expert_groups: int = Field(
        default=1,
        ge=1,
        le=100_000,
        description="Group-limited routing: the experts split into this many equal groups "
        "(DeepSeek-V3: 8, Hugging Face n_group, Megatron-Core --moe-router-num-groups). "
        "Default: 1, no limit.",
    )
    group_topk: int = Field(
        default=1,
        ge=1,
        le=100_000,
        description="Groups each token's experts come from (DeepSeek-V3: 4, topk_group, "
        "--moe-router-group-topk); changes where tokens travel under a deduplicating "
        "moe_dispatcher, not the work. Default: 1.",
    )
    expert_ffn_hidden: int | None = Field(
        default=None, ge=1, le=100_000_000, description="Routed expert MLP width. Default: ffn."
    )
    shared_ffn_hidden: int = Field(
        default=0, ge=0, le=100_000_000, description="Shared expert MLP width (0: none)."
    )
    sliding_window: int | None = Field(
        default=None,
        ge=1,
        le=100_000_000,
        description="Tokens each query attends to (Mistral 7B v0.1: 4096; GPT-OSS: 128). "
        "Default: the whole causal context.",
    )
    sliding_window_layers: int | None = Field(
        default=None,
        ge=1,
        le=100_000,
        description="How many layers attend over sliding_window (GPT-OSS: every other one). "
        "Default: all.",
    )
    qk_norm: Literal["none", "head", "projection"] = Field(
        default="none",
        description="Query and key norms: per head (Qwen3) or over the projections (OLMo 2).",
    )
    sandwich_norm: bool = Field(
        default=False,
        description="Norms after the attention and the MLP too, four a layer (Gemma 2 and 3).",
    )
    yarn_rope: bool = Field(
        default=False,
        description="Rotary positions extended by YaRN (GPT-OSS; Hugging Face rope_scaling "
        "rope_type yarn): Megatron runs its rotary unfused for them.",
    )
    activation_clamp: float | None = Field(
        default=None,
        gt=0,
        allow_inf_nan=False,
        description="Bound on a gated MLP's two halves before the activation (GPT-OSS: 7, "
        "Hugging Face swiglu_limit; Megatron-Core's activation_func_clamp_value): Megatron-Core "
        "clamps outside its fused expert activation, extra passes the step prices unless "
        "job.te_op_fuser fuses them. Default: no clamp.",
    )
    dense_layers: int = Field(
        default=0,
        ge=0,
        le=100_000,
        description="First layers of a MoE model with one dense MLP of ffn_hidden "
        "(DeepSeek-V3: 3, first_k_dense_replace).",
    )
    moe_layer_freq: int | MoeLayerPattern | None = Field(
        default=None,
        description="Which layers of a MoE model hold experts, as Megatron-Core's "
        "--moe-layer-freq: N, every N-th layer from the first (layers 0, N, 2N, ...), or one 1 "
        "(MoE) or 0 (dense MLP of ffn_hidden) per layer (Llama 4 Maverick: [0, 1] repeated). "
        "Default: every layer past dense_layers.",
    )
    attention_chunk: int | None = Field(
        default=None,
        ge=1,
        le=100_000_000,
        description="Chunked attention: each query attends causally within its chunk of this "
        "many tokens (Llama 4: 8192, attention_chunk_size). Default: the whole causal context.",
    )
    attention_chunk_layers: int | None = Field(
        default=None,
        ge=1,
        le=100_000,
        description="How many layers attend in chunks (Llama 4: three of every four). "
        "Default: all.",
    )
    hybrid_pattern: str | None = Field(
        default=None,
        min_length=1,
        max_length=100_000,
        description="A hybrid model's layers, one symbol each as Megatron-Core's "
        "--hybrid-layer-pattern: M a Mamba-2 mixer, * attention, - a dense MLP of ffn_hidden, "
        "E the experts (Nemotron-H, Nemotron 3). Default: a transformer, every layer "
        "attention and an MLP.",
    )
    mtp_pattern: str | None = Field(
        default=None,
        min_length=1,
        max_length=2,
        description="A hybrid model's multi-token-prediction module, as its blocks "
        "(Megatron-Core's MTP pattern: the part of --hybrid-layer-pattern after each /, or "
        "--mtp-hybrid-override-pattern): one block (M, *, - or E), or *- or *E, an attention "
        "and an MLP or the experts (Nemotron 3.5 Lightning: *E). Needed with job.mtp_layers "
        "on a hybrid model. Default: none.",
    )
    mamba_heads: int | None = Field(
        default=None, ge=1, le=1_000_000, description="Mamba-2 heads (mamba_num_heads)."
    )
    mamba_head_dim: int = Field(
        default=64, ge=1, le=100_000, description="Channels per Mamba-2 head (64)."
    )
    mamba_state: int = Field(
        default=128, ge=1, le=100_000, description="Mamba-2 state size (ssm_state_size, 128)."
    )
    mamba_groups: int = Field(
        default=8, ge=1, le=100_000, description="Mamba-2 groups of B and C (n_groups, 8)."
    )
    mamba_conv: int = Field(
        default=4, ge=1, le=1_000, description="Mamba-2 causal convolution taps (conv_kernel)."
    )
    mamba_chunk: int = Field(
        default=128, ge=1, le=1_000_000, description="Mamba-2 scan chunk (chunk_size, 128)."
    )
    rotary: bool = Field(
        default=True,
        description="Rotary positions in the attention (false: none, as Nemotron-H's).",
    )
    q_lora_rank: int | None = Field(
        default=None,
        ge=1,
        le=100_000_000,
        description="MLA query latent width (DeepSeek-V3: 1536). Default: queries from the "
        "hidden state.",
    )
    kv_lora_rank: int | None = Field(
        default=None,
        ge=1,
        le=100_000_000,
        description="MLA key-value latent width (DeepSeek-V3: 512); set: multi-head latent "
        "attention, head_dim the heads' non-rotary query/key width (qk_nope_head_dim).",
    )
    qk_rope_head_dim: int = Field(
        default=0, ge=0, le=100_000, description="MLA rotary query/key width per head (64)."
    )
    v_head_dim: int | None = Field(
        default=None, ge=1, le=100_000, description="MLA value width per head (128)."
    )


#: Tags of the model union; error paths leave them out (``job.model.name``, not
#: ``job.model.definition.name``).
_ZOO_NAME, _DEFINITION = "zoo-name", "model-definition"


def _model_form(value: Any) -> str:
    return _DEFINITION if isinstance(value, dict | ModelDef) else _ZOO_NAME


def _options_file(what: str) -> Any:
    """A validator that reads a string as the path of a YAML ``what`` (a framework's own
    configuration file: Megatron-Core's ``--nccl-communicator-config-path``, its
    ``--tp-comm-overlap-cfg``) and gives its mapping; anything else passes through. A path in a
    scenario file is relative to that file (:func:`load_scenario`), else to the working
    directory."""

    def read(value: Any) -> Any:
        if not isinstance(value, str):
            return value
        try:
            data = yaml_document(read_text_file(value, what), value)
        except ScenarioError as err:
            raise ValueError(f"{value}: {'; '.join(err.messages)}") from None
        if not isinstance(data, dict) or not data:
            raise ValueError(
                f"{value}: the {what} holds {type(data).__name__ if data else 'nothing'}; "
                "allowed: a mapping of names to options"
            )
        if expanded_size(data, 10_000) > 10_000:
            raise ValueError(f"{value}: the {what} expands to over 10,000 values")
        return data

    return read


#: Megatron-Core's communicator names whose NCCL options change a collective the step model
#: runs (``parallel_state.py``: ``get_nccl_options(name, ...)``): tensor, context (and its
#: hierarchical a2a+p2p groups), the gradients' data-parallel-with-context group, pipeline,
#: expert, expert-tensor and expert-data parallel.
NCCL_MODELLED_COMMUNICATORS: Final = ("tp", "cp", "hcp", "dp_cp", "pp", "ep", "ep_tp", "ep_dp")
#: With hybrid sharding (``job.dp_replicate`` > 1, Megatron-Core's partial distributed
#: optimizer) the gradients' collectives run on these instead of ``dp_cp``: the shard group's
#: ``intra_dp_cp`` and the replicas' ``inter_ep_dp`` (the inter-instance group Megatron-Core
#: builds with the expert grid's options and shares with the dense gradients,
#: ``get_inter_distributed_optimizer_instance_group``).
NCCL_HYBRID_COMMUNICATORS: Final = ("intra_dp_cp", "inter_ep_dp")


class NcclCommSpec(_Strict):
    """One communicator's NCCL options, as an entry of Megatron-Core's
    ``--nccl-communicator-config-path`` file (``torch.distributed.ProcessGroupNCCL.Options``)."""

    min_ctas: int | None = Field(
        default=None,
        ge=1,
        le=64,
        description="NCCL's minCTAs: the communicator's channels are raised to at least this.",
    )
    max_ctas: int | None = Field(
        default=None,
        ge=1,
        le=64,
        description="NCCL's maxCTAs: the communicator's channels (and p2p channels, its "
        "power of two) are lowered to at most this; fewer channels, less bandwidth, fewer SMs "
        "taken from the compute beside it.",
    )
    cga_cluster_size: int | None = Field(
        default=None,
        ge=0,
        le=8,
        description="NCCL's cgaClusterSize: accepted and reported; not modelled (it groups "
        "a collective's CTAs, no bandwidth effect in the model).",
    )
    is_high_priority_stream: bool | None = Field(
        default=None, description="Accepted and reported; not modelled."
    )
    net_name: Literal["IB", "ib", "Socket", "socket"] | None = Field(
        default=None, description="Accepted and reported; not modelled."
    )

    @model_validator(mode="after")
    def _min_not_above_max(self) -> NcclCommSpec:
        low, high = self.min_ctas, self.max_ctas
        if low is not None and high is not None and low > high:
            raise ValueError(
                f"min_ctas {low} is above max_ctas {high}; allowed: min_ctas <= max_ctas "
                "(NCCL would silently set both to max_ctas)"
            )
        return self


class NcclCommunicators(_Strict):
    """NCCL options per Megatron-Core communicator (its ``--nccl-communicator-config-path``
    file's entries, by the names ``parallel_state.py`` gives ``get_nccl_options``). The step
    model's collectives run on the first eight (with ``job.dp_replicate`` above 1 on
    ``intra_dp_cp`` and ``inter_ep_dp`` instead of ``dp_cp``); the others are accepted and
    reported as not read (no collective of the modelled step runs on them)."""

    tp: NcclCommSpec | None = Field(default=None, description="Tensor parallelism's collectives.")
    cp: NcclCommSpec | None = Field(
        default=None,
        description="The context-parallel exchange (p2p ring, all-gather, all-to-all).",
    )
    hcp: NcclCommSpec | None = Field(
        default=None, description="The two context groups of cp_comm a2a+p2p."
    )
    dp_cp: NcclCommSpec | None = Field(
        default=None,
        description="The gradient reduce-scatters/all-reduces and ZeRO's parameter "
        "all-gathers (with or without context parallelism).",
    )
    pp: NcclCommSpec | None = Field(default=None, description="The pipeline sends.")
    ep: NcclCommSpec | None = Field(default=None, description="The expert all-to-alls.")
    ep_tp: NcclCommSpec | None = Field(
        default=None, description="Expert tensor parallelism's collectives."
    )
    ep_dp: NcclCommSpec | None = Field(
        default=None, description="The expert gradients' collectives."
    )
    dp: NcclCommSpec | None = Field(default=None, description="Not read by the model.")
    mp: NcclCommSpec | None = Field(default=None, description="Not read by the model.")
    embd: NcclCommSpec | None = Field(default=None, description="Not read by the model.")
    pos_embd: NcclCommSpec | None = Field(default=None, description="Not read by the model.")
    tp_dp_cp: NcclCommSpec | None = Field(default=None, description="Not read by the model.")
    tp_dp: NcclCommSpec | None = Field(default=None, description="Not read by the model.")
    tp_cp: NcclCommSpec | None = Field(default=None, description="Not read by the model.")
    tp_exp: NcclCommSpec | None = Field(default=None, description="Not read by the model.")
    tp_ep_mp: NcclCommSpec | None = Field(default=None, description="Not read by the model.")
    tp_ep_pp: NcclCommSpec | None = Field(default=None, description="Not read by the model.")
    intra_dp_cp: NcclCommSpec | None = Field(
        default=None,
        description="With dp_replicate: the shard group's gradient reduce-scatters and ZeRO "
        "all-gathers (read only then).",
    )
    intra_ep_dp: NcclCommSpec | None = Field(default=None, description="Not read by the model.")
    inter_ep_dp: NcclCommSpec | None = Field(
        default=None,
        description="With dp_replicate: the replicas' all-reduce of each shard (read only then).",
    )
    intra_dist_opt_instance: NcclCommSpec | None = Field(
        default=None, description="Not read by the model."
    )
    gtp_remat: NcclCommSpec | None = Field(default=None, description="Not read by the model.")
    gtp_remat_dp: NcclCommSpec | None = Field(default=None, description="Not read by the model.")
    gtp_remat_dp_cp: NcclCommSpec | None = Field(default=None, description="Not read by the model.")
    expt_gtp_remat: NcclCommSpec | None = Field(default=None, description="Not read by the model.")
    tp_ep_gtp_remat_pp: NcclCommSpec | None = Field(
        default=None, description="Not read by the model."
    )
    ep_gtp_remat_dp: NcclCommSpec | None = Field(default=None, description="Not read by the model.")

    def given(self) -> dict[str, NcclCommSpec]:
        """The communicators the job sets options for, by name."""
        return {name: spec for name in type(self).model_fields if (spec := getattr(self, name))}


def _zero_one(value: Any) -> Any:
    """0 and 1 as false and true (Transformer Engine's ub config files write flags so)."""
    if isinstance(value, int) and not isinstance(value, bool) and value in (0, 1):
        return bool(value)
    return value


Flag = Annotated[bool, BeforeValidator(_zero_one)]
UbMethod = Literal["ring_exchange", "pipeline", "bulk"]


class UbGemmSpec(_Strict):
    """One GEMM's Userbuffers overlap (an entry of Transformer Engine's ``ub_cfgs``,
    ``initialize_ub`` in ``module/base.py``); unset fields take TE's defaults for the method."""

    method: UbMethod | None = Field(
        default=None,
        description="ring_exchange (the GEMM in tp slices, copy-engine sends), pipeline (the "
        "GEMM in num_splits slices, a reduce-scatter kernel beside them) or bulk (the whole "
        "GEMM beside one collective); default TE's for this GEMM. A forward reduce-scatter's "
        "last slice is exposed.",
    )
    num_sm: int | None = Field(
        default=None, ge=1, le=256, description="SMs the communication kernel runs on "
        "(TE's default: 1 for ring_exchange, 16 otherwise)."
    )  # fmt: skip
    num_splits: int | None = Field(
        default=None, ge=1, le=64, description="Slices of a pipelined GEMM (TE's default 4; "
        "a ring exchange always runs tp)."
    )  # fmt: skip
    set_sm_margin: Flag | None = Field(
        default=None, description="Whether the GEMM leaves num_sm SMs to the communication "
        "kernel (TE's default: true except for ring_exchange); 0/1 or false/true."
    )  # fmt: skip
    aggregate: Flag | None = Field(default=None, description="Accepted; not modelled.")
    cga_size: int | None = Field(default=None, ge=0, le=16, description="Accepted; not modelled.")
    atomic_gemm: Flag | None = Field(default=None, description="Accepted; not modelled.")
    fp8_buf: Flag | None = Field(default=None, description="Accepted; not modelled.")
    use_ce: Flag | None = Field(default=None, description="Accepted; not modelled.")


#: Each GEMM Userbuffers may overlap, with the methods the model runs for it and TE's
#: default (``initialize_ub``): the all-gathers' ring exchanges, the forward reduce-scatters
#: (ring exchange or pipelined), the column-parallel backward's bulk overlaps.
UB_GEMMS: Final[dict[str, tuple[tuple[str, ...], str]]] = {
    "qkv_fprop": (("ring_exchange",), "ring_exchange"),
    "fc1_fprop": (("ring_exchange",), "ring_exchange"),
    "proj_fprop": (("ring_exchange", "pipeline"), "pipeline"),
    "fc2_fprop": (("ring_exchange", "pipeline"), "pipeline"),
    "proj_dgrad": (("ring_exchange",), "ring_exchange"),
    "fc2_dgrad": (("ring_exchange",), "ring_exchange"),
    "qkv_dgrad": (("bulk",), "bulk"),
    "qkv_wgrad": (("bulk",), "bulk"),
    "fc1_dgrad": (("bulk",), "bulk"),
    "fc1_wgrad": (("bulk",), "bulk"),
}


class UbConfig(_Strict):
    """Transformer Engine's Userbuffers settings per GEMM (Megatron-Core's
    ``--tp-comm-overlap-cfg`` file; NeMo's and MLPerf's ``tp_overlap`` configs)."""

    qkv_fprop: UbGemmSpec | None = None
    proj_fprop: UbGemmSpec | None = None
    fc1_fprop: UbGemmSpec | None = None
    fc2_fprop: UbGemmSpec | None = None
    proj_dgrad: UbGemmSpec | None = None
    fc2_dgrad: UbGemmSpec | None = None
    qkv_dgrad: UbGemmSpec | None = None
    qkv_wgrad: UbGemmSpec | None = None
    fc1_dgrad: UbGemmSpec | None = None
    fc1_wgrad: UbGemmSpec | None = None

    @model_validator(mode="after")
    def _methods_it_runs(self) -> UbConfig:
        for name, (allowed, _) in UB_GEMMS.items():
            entry = getattr(self, name)
            if entry is not None and entry.method is not None and entry.method not in allowed:
                raise ValueError(
                    f"{name}: method {entry.method} is not modelled for this GEMM; allowed: "
                    f"{', '.join(allowed)}"
                )
        return self

    def given(self) -> dict[str, UbGemmSpec]:
        """The GEMMs the job sets, by name."""
        return {name: spec for name in UB_GEMMS if (spec := getattr(self, name)) is not None}


class JobSpec(_Strict):
    """The training job: model, parallelism, batch, precision."""

    model: Annotated[
        Annotated[str, Tag(_ZOO_NAME)] | Annotated[ModelDef, Tag(_DEFINITION)],
        Discriminator(_model_form),
    ] = Field(
        default="llama3-70b",
        description="Model from the zoo (`commwall catalog model`), or its definition: "
        "architecture fields inline or `hf_config: path/to/config.json`.",
    )
    tp: int = Field(
        default=1, ge=1, le=1024, description="Tensor-parallel degree (inside a scale-up domain)."
    )
    pp: int = Field(default=1, ge=1, le=1024, description="Pipeline-parallel stages.")
    cp: int = Field(
        default=1,
        ge=1,
        le=1024,
        description="Context-parallel degree: each sequence split over this many ranks "
        "(Megatron-Core / Transformer Engine); how they exchange is `cp_comm`.",
    )
    cp_comm: Literal["p2p", "all_gather", "a2a", "a2a+p2p"] = Field(
        default="p2p",
        description="Context parallelism's exchange (Megatron-Core --cp-comm-type, default p2p): "
        "p2p passes K/V around a ring beside attention; all_gather gathers K/V before attention "
        "and reduce-scatters their gradients after (Llama 3), exposed; a2a (Ulysses) swaps the "
        "sequence split for a head split with all-to-alls of Q/K/V and the output, exposed; "
        "a2a+p2p does a2a inside groups of `cp_a2a` ranks and the ring across them.",
    )
    cp_a2a: int | None = Field(
        default=None,
        ge=1,
        le=1024,
        description="With cp_comm a2a+p2p: ranks of each all-to-all group (the first of "
        "Megatron-Core's --hierarchical-context-parallel-sizes); it divides cp, and cp / cp_a2a "
        "ranks pass K/V in a ring.",
    )
    dp: int | None = Field(
        default=None, ge=1, description="Data-parallel degree. Default: GPUs / (tp × cp × pp)."
    )
    ep: int = Field(
        default=1,
        ge=1,
        le=1024,
        description="Expert-parallel degree (MoE): ep × expert_tp divides tp × cp × dp "
        "(Megatron-Core's MoE parallel folding).",
    )
    expert_tp: int | None = Field(
        default=None,
        ge=1,
        le=1024,
        description="Expert tensor parallelism (Megatron-Core --expert-tensor-parallel-size; "
        "default: tp). 1 with tp > 1 folds the attention's TP ranks into expert parallelism.",
    )
    moe_a2a_overlap: bool = Field(
        default=False,
        description="Megatron-Core's --overlap-moe-expert-parallel-comm (Megatron-Bridge's "
        "moe_a2a_overlap, off by default): in the 1F1B steady state the forward of one "
        "micro-batch and the backward of another run together, and each MoE layer's "
        "dispatch and combine all-to-alls run on a side stream beside the other's compute "
        "instead of blocking; warm-up and cool-down passes keep them blocking. Needs a MoE "
        "model with ep > 1, virtual_stages > 1 when pp > 1, no full recomputation and no "
        "'moe' in recompute_modules (Megatron-Core's asserts). How much hides depends on "
        "moe_sync_free.",
    )
    moe_sync_free: bool = Field(
        default=False,
        description="The MoE dispatch never waits on the host: expert buffers sized ahead "
        "(Megatron-Core's moe_pad_expert_input_to_capacity, or HybridEP's "
        "moe_expert_rank_capacity_factor with paged stashing, which full-iteration CUDA graphs "
        "need): no MoE layer waits on the host, and with moe_a2a_overlap the all-to-alls hide "
        "wholly beside the other micro-batch's compute. false (Megatron-Core's dropless "
        "default: each MoE layer copies its token counts to the host and waits): every MoE "
        "layer forward outside a pass paired by moe_a2a_overlap (on a Grace host, GB200 or "
        "GB300, paired ones too) idles the GPU for the measured host gap "
        "(workload.host.HOST_SYNC_GAP, or moe_host_wait), and the overlap "
        "hides the measured 36.55 % of the all-to-alls (step.EP_OVERLAP_SYNCED). Needs a MoE "
        "model.",
    )
    moe_host_wait: float | None = Field(
        default=None,
        ge=0.0,
        le=1.0,
        description="Seconds each host-synchronised MoE layer forward leaves the GPU waiting on "
        "the host, your own figure (e.g. from an Nsight profile: the step minus the GPU-active "
        "time, over the MoE layer forwards outside the passes moe_a2a_overlap pairs). Default: "
        "the measured 0.616 ms in BF16, 3.22 ms in FP8/FP4 at 8 local experts, that share of it "
        "below 8 (workload.host.HOST_SYNC_GAP). Not with moe_sync_free (no layer waits).",
    )
    moe_dispatcher: Literal["alltoall", "deepep", "hybridep"] = Field(
        default="alltoall",
        description="How MoE tokens travel (Megatron-Core --moe-token-dispatcher-type, with "
        "--moe-flex-dispatcher-backend for flex): alltoall sends a token once per chosen "
        "expert over NCCL's all-to-all; deepep and hybridep (the flex dispatcher) send it once "
        "per rank holding its experts, and across scale-up domains once per domain, forwarded "
        "over NVLink (DeepEP's domain: 8 ranks). Needs a MoE model with ep > 1. Megatron-Core's "
        "own default, allgather, is not modelled.",
    )
    virtual_stages: int = Field(
        default=1,
        ge=1,
        le=64,
        description="Model chunks per pipeline stage (Megatron interleaved 1F1B; 1 = plain 1F1B). "
        "Shrinks the bubble by this factor at the cost of more pipeline sends. Default: 1, or "
        "with a pipeline_layout its virtual stages over pp (as Megatron-LM derives it).",
    )
    pipeline_layout: Annotated[str | None, BeforeValidator(_layout_field)] = Field(
        default=None,
        max_length=65_536,
        description="Which layers each virtual pipeline stage holds, in Megatron-Core's "
        "--pipeline-model-parallel-layout syntax: stages split by '|', E embedding, t decoder "
        "layer, L loss (final norm, LM head, cross-entropy), X*n repeats, e.g. "
        "'Et*7|(t*8|)*14,t*7L'; or in its list form, as Megatron-Bridge saves it: a list of "
        "virtual stages, each a list of embedding, decoder, mtp and loss. Default: layers split "
        "evenly, E on the first stage, L on the last.",
    )
    global_batch: int = Field(default=1024, ge=1, description="Sequences per optimizer step.")
    micro_batch: int = Field(
        default=1, ge=1, le=4096, description="Sequences per micro-batch per GPU."
    )
    seq_len: int = Field(default=8192, ge=1, le=10_000_000, description="Tokens per sequence.")
    precision: Precision = Field(
        default="bf16",
        description="Matmul precision of the transformer layers' GEMMs: bf16, fp16, tf32, fp8 "
        "(Transformer Engine's FP8 recipes, fp8_recipe) or fp4 (NVFP4 on Blackwell: Megatron-Core "
        "--fp4-format e2m1 --fp4-recipe nvfp4, every GEMM of every layer in NVFP4; the LM head, "
        "embedding, norms and attention stay 16-bit).",
    )
    compute_efficiency: float | None = Field(
        default=None,
        ge=1e-3,
        le=1.0,
        description="Flat model: achieved share of the GPU's dense peak on every executed FLOP "
        "(0.001–1], e.g. from a measured step. Default: price each kernel (GEMMs by shape, "
        "attention, memory-bound kernels; docs/compute-model.md).",
    )
    compute_scale: float = Field(
        default=1.0,
        ge=0.01,
        le=100.0,
        description="Multiplies every forward/backward compute time, e.g. measured / predicted "
        "from one measured step (`commwall calibrate step`). 1 = the model as it is.",
    )
    attention: Literal["flash", "flash2", "unfused"] = Field(
        default="flash",
        description="Attention kernel: flash (the GPU's fused causal kernel: FlashAttention-2 "
        "on A100, cuDNN via Transformer Engine on Hopper/Blackwell), flash2 (FlashAttention-2, "
        "e.g. Transformer Engine under NVTE_FUSED_ATTN=0, as NeMo's launcher set it from 24.01 "
        "to 24.07) or unfused (2021 Megatron: s² scores in HBM, softmax and dropout kernels).",
    )
    fp8_recipe: Literal["delayed", "tensorwise", "mxfp8", "blockwise"] = Field(
        default="delayed",
        description="Megatron-Core's --fp8-recipe for precision fp8: delayed (default: scales "
        "from the amax history), tensorwise (current scaling, 'FP8-CS': an amax pass before each "
        "cast), mxfp8 (Blackwell block scaling) or blockwise.",
    )
    cudnn: Release | None = Field(
        default=None,
        description="The cuDNN release the job's container ships, as text (e.g. '9.13' for "
        "NGC PyTorch 25.09): on Blackwell it picks cuDNN's measured fused-attention rate of "
        "the newest measured release at or below it (9.13, 9.17, 9.22; docs/compute-model.md). "
        "Default: the newest measured. A100 and Hopper have one measurement each.",
    )
    te_op_fuser: bool = Field(
        default=False,
        description="Megatron-Core's --use-transformer-engine-op-fuser: a MoE layer's experts "
        "run as Transformer Engine's fused operations (the grouped GEMMs with the activation, "
        "its clamp, the routing probabilities and the biases inside; Megatron-Bridge's MXFP8 "
        "recipes pair it with the CuTeDSL grouped MLP). Off, Megatron-Core's TEGroupedMLP "
        "clamps a clamped GLU (model.activation_clamp) and adds the second GEMM's biases "
        "times the probabilities in eager PyTorch, extra passes the step prices. Off by "
        "default, as in Megatron-Core.",
    )
    bf16_end_layers: Annotated[
        tuple[Annotated[int, Field(ge=0, le=100_000)], Annotated[int, Field(ge=0, le=100_000)]],
        BeforeValidator(_as_tuple),
    ] = Field(
        default=(0, 0),
        description="Under fp8 or fp4, the decoder layers at the start and at the end of the "
        "model kept in BF16, [start, end] (Megatron-Core's --first-last-layers-bf16 with "
        "--num-layers-at-start-in-bf16 and --num-layers-at-end-in-bf16, 1 and 1 when the "
        "flag is on; Megatron-Bridge's bf16_with_fp8_current_scaling_mixed turns it on): their "
        "GEMMs and attention run as in a BF16 job, their collectives as the job's (the "
        "kernel compute model; refused with compute_efficiency). Default [0, 0]: every layer "
        "in the low precision.",
    )
    fp8_output_proj: bool = Field(
        default=False,
        description="Megatron-Core's --fp8-output-proj (from 2026; precision fp8 with "
        "fp8_recipe mxfp8 only, as Megatron-Core requires): the LM head runs as a Transformer "
        "Engine layer in MXFP8, its input and output gradient cast, instead of in 16 bits. "
        "Off by default, as in Megatron-Core.",
    )
    attention_dropout: float = Field(
        default=0.0,
        ge=0.0,
        lt=1.0,
        description="Dropout probability on the attention probabilities (Megatron-Core's "
        "--attention-dropout; its bare default 0.1, which Megatron-LM's GPT runs keep; 0 in "
        "Llama-style recipes: NeMo, Megatron-Bridge, MLPerf). Above 0 the fused kernels run "
        "their dropout variant, slower (docs/compute-model.md). attention unfused always prices "
        "2021 Megatron's dropout pass (0 is refused there).",
    )
    fp8_attention: bool = Field(
        default=False,
        description="Megatron-Core's --fp8-dot-product-attention (precision fp8 or fp4, "
        "attention flash, Blackwell): cuDNN's fused attention computes QKᵀ and P·V in FP8 "
        "(Transformer Engine's current-scaling recipe: Q, K, V and the output gradient cast "
        "first, the output kept 16-bit). Off by default, as in Megatron-Core.",
    )
    cross_entropy: Literal["unfused", "fused", "te"] = Field(
        default="unfused",
        description="The loss's vocabulary-parallel cross-entropy: unfused (Megatron-Core's "
        "default: fp32 copy of the logits and one kernel per step), fused (Megatron's "
        "--cross-entropy-loss-fusion, the default of NeMo 2 and Megatron-Bridge) or te "
        "(--cross-entropy-fusion-impl te: Transformer Engine's single-pass Triton kernels).",
    )
    grad_reduce_in_fp32: bool | None = Field(
        default=None,
        description="Reduce gradients (DP buckets, ZeRO/FSDP reduce-scatters) in fp32, 4 bytes "
        "an element, instead of the 16-bit training type. Default: as the frameworks do for the "
        "precision — true for bf16 and fp8 (Megatron-LM reduces bf16 gradients in fp32 unless "
        "--grad-reduce-in-bf16; Megatron-Bridge's mixed-precision recipes set "
        "grad_reduce_in_fp32, NeMo's performance scripts turn it off; Composer's DEFAULT FSDP "
        "mixed precision and Llama 3 reduce in fp32 too), false for fp16 "
        "(Megatron-LM's fp16 path reduces in fp16); tf32 reduces 4 bytes anyway. Parameter "
        "all-gathers stay in the 16-bit type.",
    )
    precision_aware_optimizer: bool = Field(
        default=False,
        description="Megatron-Core's --use-precision-aware-optimizer (the distributed optimizer "
        "or Megatron-FSDP: zero_stage 1 to 3): Transformer Engine's FusedAdam keeps Adam's "
        "moments in exp_avg_dtype / exp_avg_sq_dtype and, unless an FP8 recipe scales from the "
        "current amax (tensorwise, mxfp8, blockwise, NVFP4) with fp32 main parameters, the "
        "master weights in main_params_dtype (bf16 parameters keep an fp32 master as its 16-bit "
        "remainder, store_param_remainders) and steps on the gradients as they are, with no fp32 "
        "copy. Off by default, as in Megatron-Core.",
    )
    exp_avg_dtype: Literal["fp32", "bf16", "fp16", "fp8"] = Field(
        default="fp32",
        description="Megatron-Core's --exp-avg-dtype: Adam's first moment (4, 2, 2 or 1 bytes a "
        "parameter of optimizer state); other than fp32 needs precision_aware_optimizer.",
    )
    exp_avg_sq_dtype: Literal["fp32", "bf16", "fp16", "fp8"] = Field(
        default="fp32",
        description="Megatron-Core's --exp-avg-sq-dtype: Adam's second moment, as exp_avg_dtype.",
    )
    main_params_dtype: Literal["fp32", "fp16"] = Field(
        default="fp32",
        description="Megatron-Core's --main-params-dtype: the optimizer's master weights; fp16 "
        "needs precision_aware_optimizer.",
    )
    store_param_remainders: bool = Field(
        default=True,
        description="Megatron-Core's OptimizerConfig.store_param_remainders (default true, "
        "Transformer Engine 2.1+): with precision_aware_optimizer, bf16 parameters and fp32 "
        "main parameters, the master weight is kept as the 16 bits fp32 adds to the bf16 "
        "parameter (2 bytes a parameter instead of 4).",
    )
    fp8_param_gather: bool = Field(
        default=False,
        description="Megatron-Core's --fp8-param-gather (precision fp8): the compute weights are "
        "kept in FP8, one byte each, so ZeRO's parameter all-gathers and FSDP's gathers move "
        "1 byte an element and the weights take one byte a parameter. Off by default, as in "
        "Megatron-Core; Megatron-Bridge's FP8 mixed-precision recipes turn it on.",
    )
    ddp_bucket: Bytes | None = Field(
        default=None,
        gt=0,
        description="Gradient bucket cap, bytes of parameters at the training type's element "
        "size (2 in mixed precision); the ZeRO all-gathers use the same buckets, a bucket "
        "reduced in fp32 (grad_reduce_in_fp32) moves twice its cap, one gathered in FP8 "
        "(fp8_param_gather) half. Default: Megatron-Core's, max(40M, 1M x dp) parameters. "
        "NeMo 2 and Megatron-Bridge set 128Mi parameters (256MiB), PyTorch DDP 25MiB (with "
        "ddp_first_bucket 1MiB). As in Megatron-LM and NeMo, the cap applies to the first "
        "model chunk: each later chunk of an interleaved pipeline, and every chunk without "
        "overlap_grad_reduce, reduces in one bucket.",
    )
    ddp_first_bucket: Bytes | None = Field(
        default=None,
        gt=0,
        description="Cap of the first bucket filled, bytes (PyTorch DDP: 1MiB). Default: the "
        "bucket cap (Megatron-Core has no smaller first bucket).",
    )
    zero_stage: int = Field(default=1, ge=0, le=3, description="ZeRO stage (3 = FSDP full shard).")
    dp_replicate: int = Field(
        default=1,
        ge=1,
        le=1 << 20,
        description="Replicas of ZeRO's sharded state: the data-parallel ranks split into this "
        "many groups, each sharding the optimizer state (gradients; parameters under zero_stage "
        "3) over its own ranks, the groups all-reducing the shards after each reduce-scatter "
        "(PyTorch FSDP's hybrid sharding, HSDP: torchtitan's data_parallel_replicate_degree; "
        "Megatron-Core's --num-distributed-optimizer-instances). It divides dp x cp; the shard "
        "group is the dp x cp / dp_replicate consecutive ranks. Default 1: one group of all.",
    )
    recompute: Recompute = Field(
        default="selective",
        description="Activation recomputation: none; selective (Megatron-Core's: the parts "
        "recompute_modules names); full (every layer's forward again, recompute_method); "
        "selective_op (PyTorch's per-op selective checkpointing as torchtitan applies it, "
        "activation_checkpoint mode selective with selective_ac_option 'op': every second "
        "matrix multiply of a layer and its element-wise work re-run; dense models without "
        "linear biases).",
    )
    recompute_method: Literal["uniform", "block"] = Field(
        default="uniform",
        description="With recompute: full, which layers re-run their forward (Megatron-Core's "
        "--recompute-method): uniform, every layer, checkpointing the input of each group of "
        "recompute_num_layers; block, only the first recompute_num_layers layers of each "
        "model chunk, the rest keeping their activations.",
    )
    recompute_num_layers: int | None = Field(
        default=None,
        ge=1,
        le=100_000,
        description="With recompute: full, Megatron-Core's --recompute-num-layers: the group "
        "size (uniform) or the recomputed layers a model chunk (block). Default: each layer "
        "its own group (uniform 1).",
    )
    mtp_layers: int = Field(
        default=0,
        ge=0,
        le=16,
        description="Multi-token-prediction modules after the last layer (Megatron-Core's "
        "--mtp-num-layers; DeepSeek-V3 trains 1): each a layer like the last (a hybrid "
        "model's: the blocks of job.model's mtp_pattern), a 2h -> h projection and the shared "
        "LM head again, on the stage holding the loss.",
    )
    mtp_shared: bool = Field(
        default=False,
        description="With mtp_layers: one multi-token-prediction module's weights applied at "
        "every depth (Megatron-Core's --mtp-use-repeated-layer; Nemotron 3.5 Lightning): the "
        "compute and activations of every depth, the weights, gradients and optimizer state "
        "of one.",
    )
    recompute_modules: RecomputeModules | None = Field(
        default=None,
        min_length=1,
        description="With recompute: selective, what each layer's backward re-runs "
        "(Megatron-Core's recompute_modules): core_attn (the attention core), moe_act (the "
        "experts' activation), layernorm (the two norms), mla_up_proj (MLA's up projections "
        "and rotary), mlp (a dense layer's MLP), moe (the whole MoE block with its "
        "all-to-alls), shared_experts; a list, or text as on Megatron's command line "
        "('mla_up_proj moe_act'). Default: core_attn, as Megatron-Core's.",
    )
    sequence_parallel: bool = Field(
        default=True, description="Megatron sequence parallelism with TP."
    )
    overlap: bool = Field(
        default=True, description="Overlap DP gradient communication with backward compute."
    )
    overlap_grad_reduce: bool | None = Field(
        default=None,
        description="Megatron-Core's overlap_grad_reduce on its own: gradient buckets reduce "
        "while backward runs (default: as `overlap`).",
    )
    overlap_param_gather: bool | None = Field(
        default=None,
        description="Megatron-Core's overlap_param_gather on its own: ZeRO-1/2 parameter "
        "all-gathers run under the next step's first forward, ZeRO-3 gathers run ahead of "
        "the layer that needs them (default: as `overlap`).",
    )
    align_param_gather: bool = Field(
        default=False,
        description="ZeRO-1/2 with overlap_param_gather: true dispatches all of the first "
        "model chunk's parameter all-gathers at once when the step starts (Megatron-Core's "
        "align_param_gather, and overlap_param_gather_with_optimizer_step, which dispatches "
        "them right after the optimizer step; Megatron-Bridge and NeMo 2 turn the first on "
        "with interleaved pipelines); false (Megatron-Core's default) gathers each bucket on "
        "demand, the next one while the current one computes.",
    )
    fsdp_prefetch: int = Field(
        default=1,
        ge=0,
        le=8,
        description="ZeRO-3/FSDP: layers whose parameters are gathered ahead of the one "
        "computing (PyTorch FSDP's default 1; FSDP2 set_modules_to_forward_prefetch raises it; "
        "0 gathers each layer when it is needed).",
    )
    tp_comm_overlap: bool = Field(
        default=False,
        description="Transformer Engine's tensor-parallel communication overlap (Megatron-Core "
        "--tp-comm-overlap, off by default): each layer's TP all-gathers and reduce-scatters "
        "run beside its GEMMs (ring exchange, pipelined in 4 splits, bulk) instead of blocking; "
        "needs tp > 1 and sequence_parallel.",
    )
    tp_overlap_cfg: Annotated[UbConfig, BeforeValidator(_options_file("Userbuffers file"))] = Field(
        default_factory=lambda: UbConfig(),
        description="With tp_comm_overlap, Transformer Engine's Userbuffers settings per GEMM, "
        "as a --tp-comm-overlap-cfg file (TE's ub_cfgs) gives them: qkv_fprop, proj_fprop, "
        "fc1_fprop, fc2_fprop, proj_dgrad, fc2_dgrad, qkv_dgrad, qkv_wgrad, fc1_dgrad, "
        "fc1_wgrad, each with method, num_sm, num_splits, set_sm_margin (modelled) and "
        "aggregate, cga_size, atomic_gemm, fp8_buf, use_ce (accepted, not modelled). Default: TE's "
        "initialize_ub defaults (ring exchanges for the all-gathers, pipelined reduce-scatters "
        "in 4 splits on 16 SMs, bulk overlaps on 16 SMs). Or the path of that file "
        "(relative to the scenario file).",
    )
    tp_backward_overlap: bool = Field(
        default=True,
        description="Without tp_comm_overlap, the backward's column-parallel TP collectives run "
        "on NCCL's stream beside its GEMMs, as Megatron-LM has done by default since 2022 "
        "(--async-tensor-model-parallel-allreduce; LinearWithGradAccumulationAndAsync"
        "Communication) and Transformer Engine's linear layers do: with sequence parallelism "
        "the input's re-gather beside the data-gradient GEMM and the input gradient's "
        "reduce-scatter beside the weight-gradient GEMM, without it the input gradient's "
        "all-reduce beside the weight-gradient GEMM; the output gradient's all-gather before a "
        "row-parallel layer still blocks. false: every backward TP collective blocks (Megatron-"
        "LM before 2022).",
    )
    nccl_communicators: Annotated[
        NcclCommunicators, BeforeValidator(_options_file("NCCL communicator file"))
    ] = Field(
        default_factory=lambda: NcclCommunicators(),
        description="Per-communicator NCCL options, keyed by Megatron-Core's communicator "
        "names, as its --nccl-communicator-config-path file gives them (e.g. NVIDIA's MLPerf "
        "conf/nccl/custom_communicator_cta.yaml: dp_cp: {max_ctas: 8}, cp: {max_ctas: 1}). "
        "min_ctas/max_ctas bound the channels of the collectives on tp, cp, hcp, dp_cp (the "
        "gradient and ZeRO collectives), pp, ep, ep_tp, ep_dp; Megatron-Core's other names are "
        "accepted and reported as not read. Or the path of that file (relative to the "
        "scenario file). Default: NCCL's own channel counts.",
    )

    comm_sm_contention: bool = Field(
        default=True,
        description="Collective kernels running beside compute (DP buckets, FSDP gathers, "
        "pipeline sends, the context-parallel ring) hold one SM per NCCL channel and stream "
        "their bytes through HBM, so the GEMMs and attention beside them run on the SMs left "
        "and memory-bound kernels on the HBM bandwidth left (docs/compute-model.md). false: "
        "overlapped communication costs compute nothing. The flat compute_efficiency model "
        "is never slowed (its share already holds whatever the measured step had).",
    )
    megatron_args: Annotated[
        str | None,
        WithJsonSchema({"anyOf": [{"type": "string"}, {"type": "object"}, {"type": "null"}]}),
    ] = Field(
        default=None,
        description="The job as Megatron-LM ran it: its pretrain_gpt.py arguments, as shell "
        "text holding the --flag value words (inline, or the path of a launch script), or a "
        "mapping of the flag names (a Megatron-LM recipe's ARGS, the MoE model zoo's "
        "MODEL_ARGS; a .yaml/.yml/.json path is read as one; kept as its JSON text); or a "
        "Megatron-Bridge configuration (a checkpoint's run_config.yaml or an override file "
        "with model, train, ddp, comm_overlap and mixed_precision sections), its fields read "
        "as the arguments they are. Every "
        "flag left out takes Megatron-LM's default; the fields and the model given beside it "
        "override what the flags say (`commwall megatron FILE` shows the reading: each flag "
        "used, not priced, unknown or without effect). Relative paths start from the scenario "
        "file.",
    )

    megatron_vars: Annotated[
        tuple[tuple[str, str], ...] | None,
        BeforeValidator(lambda v: megatron_variables(v, True)),
        WithJsonSchema(
            {
                "anyOf": [
                    {
                        "type": "object",
                        "additionalProperties": {"type": ["string", "number", "boolean"]},
                    },
                    {"type": "null"},
                ]
            }
        ),
    ] = Field(
        default=None,
        description="Values of the shell variables megatron_args' flags name (`TP: 8`, "
        "`SEQ_LEN: 4096`), as the launch's environment would set them; they win over the "
        "text's own NAME=value lines.",
    )

    @model_validator(mode="before")
    @classmethod
    def _from_megatron_args(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("megatron_args") is not None:
            data = with_megatron_args(data)
            if isinstance(data["megatron_args"], dict):  # a job is hashable: its JSON text
                data["megatron_args"] = json.dumps(data["megatron_args"], default=str)
        return data


def megatron_variables(value: Any, pairs: bool = False) -> Any:
    """``job.megatron_vars`` as a mapping of names to text (``pairs``: as the sorted
    ``(name, value)`` pairs the job keeps, hashable); a name that is not a shell identifier or a
    value that is not one scalar is refused."""
    if value is None:
        return None
    items = value.items() if isinstance(value, dict) else value
    try:
        found = dict(items)
    except (TypeError, ValueError):
        raise ValueError(
            f"megatron_vars: {type(value).__name__}; allowed: a mapping NAME: value"
        ) from None
    out: dict[str, str] = {}
    for name, v in found.items():
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,63}", name):
            raise ValueError(f"megatron_vars: {name!r} is not a shell variable name")
        if not isinstance(v, str | int | float) or len(str(v)) > 4096:
            raise ValueError(f"megatron_vars.{name}: {v!r}; allowed: one number or word")
        out[name] = str(v).lower() if isinstance(v, bool) else str(v)
    return tuple(sorted(out.items())) if pairs else out


#: The suffixes of a Megatron-LM arguments file read as a YAML/JSON mapping (a recipe's ARGS).
_MAPPING_SUFFIXES: Final = (".yaml", ".yml", ".json")


def megatron_source(value: object) -> tuple[str | dict[str, Any], str, Path | None]:
    """What ``job.megatron_args`` holds: (the arguments as text or a mapping, a name for the
    model, the directory their relative paths start from). A string without ``--`` is a path."""
    if isinstance(value, dict):
        return _recipe_flags(value, "the mapping"), "megatron-args", None
    if not isinstance(value, str):
        raise ValueError(
            f"megatron_args: {type(value).__name__}; allowed: arguments text, a path, or a mapping"
        )
    if value.lstrip().startswith("{"):  # a mapping kept as its JSON text
        try:
            return megatron_source(json.loads(value))
        except json.JSONDecodeError as err:
            raise ValueError(f"megatron_args: not a JSON mapping: {err}") from None
    if "--" in value:
        return value, "megatron-args", None
    path = Path(value)
    try:
        text = read_text_file(path, "Megatron-LM launch", "shell text or a YAML/JSON recipe")
        if path.suffix.lower() not in _MAPPING_SUFFIXES:
            return text, path.stem, path.parent
        data = yaml_document(text, value)
    except ScenarioError as err:
        raise ValueError(f"megatron_args: {value}: {'; '.join(err.messages)}") from None
    return _recipe_flags(data, value), path.stem, path.parent


def _recipe_flags(data: object, where: str) -> dict[str, Any]:
    """The flags of a mapping: its ``ARGS`` (Megatron-LM's recipes) or ``MODEL_ARGS`` (the MoE
    model zoo's) where it holds one, else the mapping itself; anything else is refused."""
    if isinstance(data, dict):
        data = next(
            (data[k] for k in ("ARGS", "MODEL_ARGS") if isinstance(data.get(k), dict)), data
        )
    if not isinstance(data, dict) or not data:
        raise ValueError(
            f"megatron_args: {where} holds {type(data).__name__ if data else 'nothing'}; "
            "allowed: a mapping of flags (or a recipe with an ARGS mapping)"
        )
    return data


def _relative_to(job: dict[str, Any], base: Path, keys: tuple[str, ...]) -> None:
    """Each of ``job``'s ``keys`` that names a relative path, made relative to ``base`` (the
    scenario file's directory, or a launch script's); inline arguments (``--``) stay."""
    for key in keys:
        where = job.get(key)
        if isinstance(where, str) and "--" not in where and not Path(where).is_absolute():
            job[key] = str(base / where)


def with_megatron_args(data: dict[str, Any]) -> dict[str, Any]:
    """A job mapping with the fields its ``megatron_args`` give filled in under the ones it
    gives itself (:mod:`commwall.megatron_args`), the model the flags define merged under
    a ``model`` mapping beside them (a zoo name or an ``hf_config`` replaces it), and the
    vocabulary padded as Megatron-LM pads it."""
    source, name, base = megatron_source(data["megatron_args"])
    try:
        read = launch_job(
            source,
            megatron_variables(data.get("megatron_vars")),
            dispatcher_given="moe_dispatcher" in data,
            seq_len_given="seq_len" in data,
        )
    except MegatronArgsError as err:
        raise ValueError(f"megatron_args: {err}") from None
    job: dict[str, Any] = dict(read.job)
    if base is not None:
        _relative_to(job, base, _OPTION_FILES)
    given = data.get("model")
    model: Any = given
    if read.model is not None and (given is None or isinstance(given, dict)):
        mine = given or {}
        model = mine if "hf_config" in mine else {"name": name, **read.model, **mine}
        if "hf_config" not in model:
            vocab = model.get("vocab")
            if vocab is None:
                flag = "model.vocab_size" if is_bridge_config(source) else "--vocab-size"
                raise ValueError(
                    "megatron_args: the vocabulary is not in the arguments (Megatron-LM takes it "
                    f"from the tokenizer, which commwall does not read); give {flag} or "
                    "job.model: {vocab: N}"
                )
            if isinstance(vocab, int) and not isinstance(vocab, bool) and vocab > 0:
                model["vocab"] = padded_vocab(vocab, read.vocab_multiple)
    elif read.model is None and given is None:
        raise ValueError(
            "megatron_args: the arguments define no model (--num-layers, --hidden-size, "
            "--num-attention-heads) and the job names none in job.model"
        )
    out = {**job, **data}
    if "global_batch" not in out:
        raise ValueError(
            "megatron_args: no --global-batch-size, so Megatron-LM runs micro-batch × DP "
            "sequences a step; give it, or job.global_batch"
        )
    if model is not None:
        out["model"] = model
    return out


class SimulationSpec(_Strict):
    """How to compute the answer."""

    engine: Engine = Field(
        default="analytic",
        description="Engine fidelity: analytic (closed form, ideal fabric) or flow (collectives as "
        "max-min fair flows on the real topology with cluster.routing).",
    )
    seed: int = Field(default=0, ge=0, description="Seed for every random choice.")
    policy: Policy = Field(
        default="nccl",
        description="Collective choice: nccl (NCCL's own algorithms) or all (add halving-doubling, "
        "direct, hierarchical).",
    )


class StragglersSpec(_Strict):
    """Per-rank and per-message variability (``commwall faults stragglers``); all off by default."""

    jitter: float = Field(
        default=0.0,
        ge=0.0,
        le=10.0,
        description="Compute-time coefficient of variation per rank and step (σ/μ, e.g. 0.02).",
    )
    distribution: Literal["normal", "lognormal", "empirical"] = Field(
        default="normal",
        description="Shape of the compute jitter (empirical: resample `empirical`).",
    )
    empirical: list[float] = Field(
        default_factory=list, description="Measured per-rank step or compute times (s), resampled."
    )

    @model_validator(mode="after")
    def _empirical_needs_its_distribution(self) -> StragglersSpec:
        if self.empirical and self.distribution != "empirical":
            raise ValueError(
                f"empirical: {len(self.empirical)} measured time(s) given with distribution "
                f"{self.distribution!r}, which does not read them; set distribution: empirical "
                "or drop them"
            )
        return self

    slow_ranks: int = Field(default=0, ge=0, description="Persistently slow ranks, count.")
    slowdown: float = Field(
        default=1.0, ge=1.0, le=1000.0, description="Compute-time multiplier of the slow ranks."
    )
    os_noise_rate: float = Field(
        default=0.0, ge=0.0, le=1e6, description="OS-noise interruptions per second per rank."
    )
    os_noise_duration: Seconds = Field(
        default=0.0, ge=0.0, le=10.0, description="Seconds each OS-noise interruption steals."
    )
    message_tail: Seconds = Field(
        default=0.0,
        ge=0.0,
        le=10.0,
        description="Mean extra latency per network message (exponential tail), seconds.",
    )
    clock_jitter: Seconds = Field(
        default=0.0,
        ge=0.0,
        le=1.0,
        description="Clock-offset standard deviation per message "
        "(folded into message latency), seconds.",
    )
    steps: int = Field(
        default=2000,
        ge=2,
        le=1_000_000,
        description="Monte Carlo steps (with OS noise every rank of every step is drawn: "
        "at most 2e8 draws, steps x ranks).",
    )


class GoodputSpec(_Strict):
    """Failures over a whole run and checkpointing (``commwall faults goodput``)."""

    checkpoint: Seconds = Field(
        default=60.0,
        ge=0.0,
        description="Seconds the job stops to write one checkpoint (assumption: 60 s).",
    )
    restart: Seconds = Field(
        default=600.0,
        ge=0.0,
        description="Seconds from a failure to training again: detect, "
        "reschedule, reload (assumption: 10 min).",
    )
    interval: Seconds | None = Field(
        default=None,
        gt=0.0,
        description="Seconds of work between checkpoints (default: Daly's optimum).",
    )
    tokens: Count | None = Field(
        default=None,
        gt=0.0,
        description="Tokens the run trains on (with the step's tokens/s "
        "this sets the failure-free time); default 30 days of training.",
    )
    failure_scale: float = Field(
        default=1.0,
        gt=0.0,
        le=1000.0,
        description="Multiplier on every failure rate of the "
        "Llama 3 405B record (1 = as measured).",
    )
    samples: int = Field(default=1000, ge=2, le=1_000_000, description="Monte Carlo runs.")


class FailuresSpec(_Strict):
    """Failed cables and switches of the scale-out fabric (``commwall faults failures``).

    The step then runs on the failed fabric: the flow engine re-routes around the failures
    (ECMP rehash over the surviving routes, adaptive and spraying among them); the analytic
    engine does not see the fabric's links, so use ``simulation.engine: flow``.
    """

    cables: list[int] = Field(default_factory=list, description="Cable indices to fail.")
    switches: list[str] = Field(
        default_factory=list,
        description="Switches to fail: 'leaf:3', 'spine:0', 'core:1' or a node index.",
    )
    random_cables: dict[str, int] = Field(
        default_factory=dict,
        description="Random cables to fail per class (access, leaf-spine, "
        "spine-core, local, global), drawn with simulation.seed.",
    )
    random_switches: dict[str, int] = Field(
        default_factory=dict,
        description="Random switches to fail per tier (leaf, spine, core, "
        "router), drawn with simulation.seed.",
    )


class BitErrorsSpec(_Strict):
    """Pre-FEC bit errors on every link (``commwall faults bit-errors``)."""

    pre_fec_ber: float = Field(
        default=1e-5, gt=0.0, lt=0.5, description="Median pre-FEC bit error rate across links."
    )
    ber_spread: float = Field(
        default=0.5,
        ge=0.0,
        le=5.0,
        description="σ of log10 BER across links, decades (assumption: 0.5).",
    )
    fec: str | None = Field(
        default=None, description="Scale-out FEC code (default: the lane's standard one)."
    )
    utilisation: float = Field(
        default=0.5, gt=0.0, le=1.0, description="Payload share each link carries."
    )
    run_days: float = Field(default=54.0, gt=0.0, description="Length of the training run, days.")
    samples: int = Field(default=50, ge=2, le=100_000, description="Monte Carlo cluster builds.")


class FaultsSpec(_Strict):
    """The silent killers ``commwall run`` includes: each section present is analysed."""

    stragglers: StragglersSpec | None = Field(
        default=None, description="Stragglers and tail latency."
    )
    goodput: GoodputSpec | None = Field(default=None, description="Failures and checkpoints.")
    failures: FailuresSpec | None = Field(
        default=None, description="Failed cables and switches the step runs with."
    )
    bit_errors: BitErrorsSpec | None = Field(
        default=None, description="Bit errors on every link and the corruptions that escape."
    )


class EconomicsSpec(_Strict):
    """Prices that turn the step's power and time into energy and money per token."""

    electricity_price: float = Field(
        default=0.0806,
        ge=0.0,
        le=100.0,
        description="Electricity, $ per kWh (default: the 2023 US average for industrial "
        "customers, 8.06 ¢/kWh, EIA Electric Power Annual via Statista).",
    )
    pue: float = Field(
        default=1.56,
        ge=1.0,
        le=10.0,
        description="Power usage effectiveness: facility power / IT power (default: 1.56, "
        "the average operators reported in Uptime Institute's 2024 Global Data Center Survey).",
    )


class Scenario(_Strict):
    """A whole scenario: cluster, job and simulation settings."""

    name: Text = Field(default="scenario", max_length=1000, description="A label for reports.")
    description: Text = Field(default="", max_length=100_000, description="Free text.")
    cluster: ClusterSpec = Field(default_factory=ClusterSpec, description="The machine.")
    job: JobSpec = Field(default_factory=JobSpec, description="The training job.")
    simulation: SimulationSpec = Field(
        default_factory=SimulationSpec, description="Engine and seed."
    )
    faults: FaultsSpec | None = Field(
        default=None, description="Stragglers, failures, bit errors and goodput to include."
    )
    economics: EconomicsSpec = Field(
        default_factory=EconomicsSpec,
        description="Electricity price and PUE for energy and money per token.",
    )


class ScenarioError(CommwallError, ValueError):
    """A scenario that cannot be used; ``messages`` holds one line per problem."""

    def __init__(self, messages: list[str], origin: str = "scenario") -> None:
        self.messages = messages
        self.origin = origin
        super().__init__("\n".join(f"{origin}: {m}" for m in messages))


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def validation_messages(err: ValidationError) -> list[str]:
    """One line per pydantic error: ``path: message (got value)``."""
    lines = []
    for e in err.errors(include_url=False):
        loc = [x for x in e["loc"] if x not in (_ZOO_NAME, _DEFINITION)]
        path = ".".join(str(x) for x in loc) or "(top level)"
        msg = str(e["msg"]).removeprefix("Value error, ")
        if e["type"] == "extra_forbidden":
            msg = "unknown key"
        elif e["type"] == "literal_error":
            msg = msg.replace("Input should be", "allowed values are")
        got = "" if e["type"] == "missing" else f" (got {_short(e.get('input'))})"
        lines.append(f"{path}: {msg}{got}")
    return lines


def parse_scenario(data: object, origin: str = "scenario") -> Scenario:
    """Validate a mapping (parsed YAML) into a :class:`Scenario` or raise :class:`ScenarioError`."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        # the type only: the text of a file that is not a scenario is not echoed back
        raise ScenarioError(
            [
                f"the top level must be a mapping of sections (cluster:, job:, ...), got "
                f"{type(data).__name__}"
            ],
            origin,
        )
    try:
        return Scenario.model_validate(data)
    except ValidationError as err:
        raise ScenarioError(validation_messages(err), origin) from None


_YAML11_TAGS: Final = (
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
)
#: YAML 1.2 core-schema scalars instead of PyYAML's YAML 1.1 ones, which read ``1:30`` as the
#: sexagesimal 90, ``010`` as octal 8 and ``yes``/``on`` as true: a scenario field given
#: those gets them as text, which its check then refuses by name. Floats keep PyYAML's form (a
#: dot; ``1e9`` stays text, which count and unit fields read).
_YAML12_SCALARS: Final = (
    ("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    ("tag:yaml.org,2002:int", r"^(?:[-+]?(?:0|[1-9][0-9_]*)|0x[0-9a-fA-F_]+)$", "-+0123456789"),
    (
        "tag:yaml.org,2002:float",
        r"^(?:[-+]?(?:[0-9][0-9_]*\.[0-9_]*|\.[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
        "-+0123456789.",
    ),
)


class _UniqueKeyLoader(yaml.SafeLoader):
    """A safe loader that refuses a key given twice in one mapping (PyYAML keeps the last) and
    reads booleans and integers as YAML 1.2 does (:data:`_YAML12_SCALARS`)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[object] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # '<<: *anchor' merges; keys given beside it override, as YAML allows
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, str | int | float | bool):
                continue  # an unhashable key fails later with PyYAML's own message
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"duplicate key {key!r} (each key may appear once)",
                    key_node.start_mark,
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


# a resolver table of its own: SafeLoader's, less its YAML 1.1 scalar rules
_UniqueKeyLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag not in _YAML11_TAGS]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
for _tag, _pattern, _first in _YAML12_SCALARS:
    _UniqueKeyLoader.add_implicit_resolver(_tag, re.compile(_pattern), list(_first))


#: Largest scenario or spec file read (a scenario is a few KB; /dev/zero is endless).
MAX_FILE_BYTES = 16 * 2**20
#: Most values a parsed document may expand to through YAML aliases (a 478-byte "billion laughs"
#: expands to hundreds of millions and would take minutes and gigabytes to validate).
MAX_EXPANDED_VALUES = 1_000_000


def expanded_size(data: object, limit: int = MAX_EXPANDED_VALUES) -> int:
    """Values ``data`` holds once every alias is written out (shared subtrees counted each time
    they are used), computed once per shared object and stopped past ``limit``."""
    sizes: dict[int, int] = {}

    def size(x: object, depth: int) -> int:
        if depth > 200:  # deeper than any scenario; refuse before Python's own limit
            return limit + 1
        if not isinstance(x, dict | list):
            return 1
        key = id(x)
        if key not in sizes:
            sizes[key] = limit + 1  # a cycle (a recursive alias) is too big
            items = [*x.keys(), *x.values()] if isinstance(x, dict) else x
            total = 1
            for item in items:
                total += size(item, depth + 1)
                if total > limit:
                    break
            sizes[key] = total
        return sizes[key]

    return size(data, 0)


def read_text_file(path: str | Path, what: str = "file", kind: str = "YAML text") -> str:
    """The UTF-8 text of a small file (at most :data:`MAX_FILE_BYTES`), or :class:`ScenarioError`
    saying why not: unreadable, too large, not UTF-8 text (a ``what`` being ``kind``)."""
    p = Path(path)
    try:
        with p.open("rb") as f:
            raw = f.read(MAX_FILE_BYTES + 1)
    except OSError as err:
        raise ScenarioError([f"cannot read the file: {err.strerror}"], str(p)) from None
    if len(raw) > MAX_FILE_BYTES:
        raise ScenarioError(
            [f"the {what} is larger than {MAX_FILE_BYTES // 2**20} MiB; a {what} is {kind}"],
            str(p),
        )
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ScenarioError(
            [
                f"not UTF-8 text (byte 0x{raw[err.start]:02x} at offset {err.start}); a {what} is "
                f"{kind}"
            ],
            str(p),
        ) from None


def yaml_document(text: str, origin: str, loader: type[yaml.SafeLoader] | None = None) -> Any:
    """The one YAML document in ``text`` (a SafeLoader: no arbitrary objects), or
    :class:`ScenarioError` saying what the parser could not read: a syntax error with its
    place, nesting deeper than the parser recurses, an integer longer than Python reads."""
    try:
        return yaml.load(text, Loader=loader or _UniqueKeyLoader)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        problem = getattr(err, "problem", None) or str(err)
        raise ScenarioError([f"YAML syntax error at {where}{problem}"], origin) from None
    except RecursionError:
        raise ScenarioError(
            ["nests too deeply for the YAML parser (a scenario nests a few levels)"], origin
        ) from None
    except ValueError as err:  # PyYAML's int(): Python reads at most 4,300 digits
        what = (
            "an integer with more digits than Python reads (4,300)"
            if "digits" in str(err)
            else f"a value the YAML parser cannot convert ({err})"
        )
        raise ScenarioError([what], origin) from None


#: The job fields that may name a framework's configuration file instead of holding it.
_OPTION_FILES: Final = ("nccl_communicators", "tp_overlap_cfg")


def load_scenario_text(text: str, origin: str = "scenario", base: Path | None = None) -> Scenario:
    """Parse YAML text into a :class:`Scenario`; an empty document is an error (run without a
    file for the built-in default). ``base``: the directory relative file paths in it
    (``job.nccl_communicators``, ``job.tp_overlap_cfg``) start from."""
    data = yaml_document(text, origin)
    if data is None:
        raise ScenarioError(
            [
                "empty (or only comments): give at least a cluster or a job section; `commwall run` "
                "without a file runs the built-in default"
            ],
            origin,
        )
    if expanded_size(data) > MAX_EXPANDED_VALUES:
        raise ScenarioError(
            [
                f"expands to more than {MAX_EXPANDED_VALUES:,} values through YAML aliases (or nests "
                "deeper than 200 levels); a scenario is a few hundred"
            ],
            origin,
        )
    job = data.get("job") if isinstance(data, dict) else None
    if base is not None and isinstance(job, dict):
        _relative_to(job, base, (*_OPTION_FILES, "megatron_args"))
    return parse_scenario(data, origin)


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario file."""
    p = Path(path)
    scenario = load_scenario_text(read_text_file(p, "scenario"), str(p), p.parent)
    model = scenario.job.model
    if isinstance(model, ModelDef) and model.hf_config and not Path(model.hf_config).is_absolute():
        # a config.json next to the scenario file is found from any working directory
        where = str(p.parent / model.hf_config)
        job = scenario.job.model_copy(
            update={"model": model.model_copy(update={"hf_config": where})}
        )
        scenario = scenario.model_copy(update={"job": job})
    return scenario


def json_schema() -> dict[str, Any]:
    """The scenario's JSON schema, for editors."""
    return Scenario.model_json_schema()
