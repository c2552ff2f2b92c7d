"""Numbers as the report prints them (units through :mod:`commwall.units`); ``None`` is "–"."""

from __future__ import annotations

import math
from typing import Any

__all__ = [
    "count",
    "gbps",
    "gbytes",
    "held_bytes",
    "num",
    "pct",
    "seconds",
    "sharding_and_kernel",
    "size",
    "usd",
    "value",
    "watts",
]

_NONE = "–"


def _ok(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def num(x: Any, digits: int = 4) -> str:
    """A plain number with ``digits`` significant digits."""
    return f"{x:.{digits}g}" if _ok(x) else _NONE


def count(x: Any) -> str:
    """A whole count with thousands separators."""
    return f"{round(x):,}" if _ok(x) else _NONE


def pct(x: Any) -> str:
    """A share 0–1 as a percentage."""
    return f"{x:.1%}" if _ok(x) else _NONE


def seconds(x: Any) -> str:
    """A duration (ps … s)."""
    from commwall.units import format_time

    return format_time(float(x), digits=4) if _ok(x) else _NONE


def size(x: Any) -> str:
    """A size in bytes (binary prefixes)."""
    from commwall.units import format_size

    return format_size(float(x), digits=4) if _ok(x) else _NONE


def gbps(x: Any) -> str:
    """A bandwidth in bytes/s as GB/s."""
    return f"{x / 1e9:,.4g} GB/s" if _ok(x) else _NONE


def gbytes(x: Any) -> str:
    """Bytes as GB."""
    return f"{x / 1e9:,.1f} GB" if _ok(x) else _NONE


def watts(x: Any) -> str:
    """A power in watts (mW … MW)."""
    from commwall.units import format_power

    return format_power(float(x), digits=4) if _ok(x) else _NONE


def usd(x: Any) -> str:
    """US dollars, in millions above one million."""
    if not _ok(x):
        return _NONE
    return f"${x / 1e6:,.2f}M" if abs(x) >= 1e6 else f"${x:,.0f}"


def value(x: Any) -> str:
    """Any JSON value as short text (numbers to 4 significant digits)."""
    if x is None:
        return _NONE
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return f"{x:,}"
    if isinstance(x, float):
        return num(x)
    if isinstance(x, list | tuple):
        return ", ".join(value(v) for v in x)
    return str(x)


def mtp_note(job: dict[str, Any]) -> str:
    """ " with 1 MTP module" after a job's parameter count when it trains multi-token
    prediction (``job.mtp_layers``; ``job`` is a result's ``job`` section), " with 2 MTP depths
    of one module" when the depths share it (``job.mtp_shared``), else ""."""
    n = job.get("mtp_layers")
    if not isinstance(n, int) or n < 1:
        return ""
    if job.get("mtp_shared") is True and n > 1:
        return f" with {n} MTP depths of one module"
    return f" with {n} MTP module{'s' if n > 1 else ''}"


def held_bytes(job: dict[str, Any]) -> str:
    """How a job's gradients and weights travel when that is not its training type, for its
    one-line summary: " (gradients reduced in fp32, FP8 weights)", or "" (``job.grad_reduce_in_fp32``,
    ``job.fp8_param_gather``, ``job.bf16_end_layers`` and the precision-aware optimizer's
    state; ``job`` is a result's ``job`` section)."""
    notes = []
    if job.get("grad_reduce_bytes") == 4 and job.get("precision") != "tf32":
        notes.append("gradients reduced in fp32")
    if job.get("param_bytes") == 1:
        notes.append("FP8 weights")
    ends = job.get("bf16_end_layers")
    if isinstance(ends, list) and len(ends) == 2 and any(ends):
        notes.append(f"first {ends[0]} and last {ends[1]} layers in BF16")
    if job.get("precision_aware_optimizer") is True:
        state = job.get("optimizer_state_bytes")
        notes.append(f"precision-aware Adam, {state} B of state a parameter")
    return f" ({', '.join(notes)})" if notes else ""


def sharding_and_kernel(job: dict[str, Any]) -> str:
    """The end of a job's one-line summary: its ZeRO stage (with hybrid sharding's replicas)
    and, on the kernel compute model,
    the attention kernel it is priced with and the sliding window or the chunks it runs over
    where they are shorter than the sequence (``job`` is a result's ``job`` section)."""
    kernel = job.get("attention_kernel")
    if kernel and job.get("fp8_attention"):
        kernel += " in FP8"
    window, seq = job.get("sliding_window"), job.get("seq_len")
    if kernel and isinstance(window, int) and isinstance(seq, int) and window < seq:
        kernel += f" over a {window:,}-token window"
        some = job.get("sliding_window_layers")
        if isinstance(some, int):
            kernel += f" on {some} layers"
    chunk = job.get("attention_chunk")
    if kernel and isinstance(chunk, int) and isinstance(seq, int) and chunk < seq:
        kernel += f" in {chunk:,}-token chunks"
        some = job.get("attention_chunk_layers")
        if isinstance(some, int):
            kernel += f" on {some} layers"
    zero = f", ZeRO-{job.get('zero_stage')}"
    replicas = job.get("dp_replicate")
    if isinstance(replicas, int) and replicas > 1:  # hybrid sharding
        zero += f" in {replicas} replicas (HSDP)"
    return zero + (f", {kernel}" if kernel else "")
