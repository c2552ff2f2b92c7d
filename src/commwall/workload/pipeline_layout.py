"""Which layers each pipeline stage holds: Megatron-Core's pipeline layout.

A layout lists the ``pp × v`` virtual pipeline stages in layer order — virtual stage
``k = chunk·pp + stage`` (Megatron's interleaved order, ``PipelineParallelLayerLayout``) — and
what each holds: decoder layers, the embedding (``E``) and the loss unit (``L``: final norm,
LM head and cross-entropy). Megatron places the embedding on the first stage and the output
layer on the last one by default, splitting the decoder layers evenly, and offers
``--pipeline-model-parallel-layout`` (e.g. ``"Et*7|(t*8|)*14,t*7L"``) and
``--decoder-first/last-pipeline-num-layers`` to rebalance when the LM head or the embedding
make the end stages slower (Megatron-LM ``megatron/training/arguments.py``,
``megatron/core/transformer/pipeline_parallel_layer_layout.py``). Llama 3 405B trained with one
layer fewer on the first and the last stage for this reason (Llama Team, "The Llama 3 Herd of
Models", 2024, §3.3.2).

The string form read here is Megatron's: ``|`` separates virtual stages, ``E``/``t``/``L`` are
the embedding, a decoder layer and the loss, ``X*n`` repeats a token or a parenthesised group
``n`` times, commas and spaces are cosmetic. Multi-token-prediction layers (``m``) go where
Megatron-Core requires them, in the last virtual stage with the loss, one per module
(``job.mtp_layers``); a job without them refuses ``m``.
"""

from __future__ import annotations

from dataclasses import dataclass

from commwall.errors import CommwallError

__all__ = ["LayoutError", "VirtualStage", "even_layout", "parse_layout"]

#: The longest layout string read (a 1,024-layer model over 1,024 stages is ~4 KB expanded).
MAX_LAYOUT_CHARS = 65_536
#: Tokens a layout may expand to (repetition cannot blow up memory).
MAX_EXPANDED_TOKENS = 1 << 20


class LayoutError(CommwallError, ValueError):
    """A pipeline layout that cannot be used; the message says what and what is allowed."""


@dataclass(frozen=True)
class VirtualStage:
    """What one virtual pipeline stage holds."""

    layers: int
    embedding: bool = False
    loss: bool = False


def even_layout(n_layers: int, n_chunks: int) -> tuple[VirtualStage, ...]:
    """Megatron's default: decoder layers as even as integers allow (virtual stage ``k`` of
    ``n`` holds ``[⌊k·L/n⌋, ⌊(k+1)·L/n⌋)``), the embedding on the first, the loss on the last."""
    return tuple(
        VirtualStage(
            (k + 1) * n_layers // n_chunks - k * n_layers // n_chunks,
            embedding=k == 0,
            loss=k == n_chunks - 1,
        )
        for k in range(n_chunks)
    )


def _expand(text: str) -> str:
    """Tokens of ``text`` with every ``X*n`` and ``(…)*n`` written out."""
    out, pos = _sequence(text, 0, depth=0)
    if pos != len(text):
        raise LayoutError(f"unexpected {text[pos]!r} at character {pos + 1}")
    return out


def _sequence(text: str, pos: int, *, depth: int) -> tuple[str, int]:
    parts: list[str] = []
    size = 0
    while pos < len(text) and text[pos] != ")":
        ch = text[pos]
        if ch == "(":
            if depth >= 32:
                raise LayoutError("parentheses nested deeper than 32")
            inner, pos = _sequence(text, pos + 1, depth=depth + 1)
            if pos >= len(text) or text[pos] != ")":
                raise LayoutError("a '(' is not closed")
            pos += 1
            item = inner
        elif ch in "EtLm|":
            item, pos = ch, pos + 1
        elif ch == "*":
            raise LayoutError(f"'*' at character {pos + 1} repeats nothing")
        else:
            raise LayoutError(
                f"unexpected {ch!r} at character {pos + 1}; allowed: E, t, L, |, (, ), *n"
            )
        if pos < len(text) and text[pos] == "*":
            end = pos + 1
            while end < len(text) and text[end].isdigit():
                end += 1
            if end == pos + 1:
                raise LayoutError(f"'*' at character {pos + 1} needs a count")
            count = int(text[pos + 1 : end][:9])
            if len(item) * count > MAX_EXPANDED_TOKENS:
                raise LayoutError(f"expands past {MAX_EXPANDED_TOKENS:,} tokens")
            item, pos = item * count, end
        size += len(item)
        if size > MAX_EXPANDED_TOKENS:
            raise LayoutError(f"expands past {MAX_EXPANDED_TOKENS:,} tokens")
        parts.append(item)
    return "".join(parts), pos


def parse_layout(
    text: str, *, pp: int, n_layers: int, mtp_layers: int = 0
) -> tuple[VirtualStage, ...]:
    """The virtual stages of a Megatron layout string for ``pp`` stages of ``n_layers`` decoder
    layers and ``mtp_layers`` multi-token-prediction modules; :class:`LayoutError` says what is
    wrong (the caller names the field)."""
    if len(text) > MAX_LAYOUT_CHARS:
        raise LayoutError(f"{len(text):,} characters; at most {MAX_LAYOUT_CHARS:,}")
    compact = "".join(ch for ch in text if not ch.isspace() and ch != ",")
    if not compact:
        raise LayoutError("empty; give virtual stages separated by '|', e.g. 'Et*4|t*4L'")
    tokens = _expand(compact)
    stages = tokens.split("|")
    if tokens.count("m") != mtp_layers or (mtp_layers and "m" * mtp_layers + "L" not in stages[-1]):
        raise LayoutError(
            f"holds {tokens.count('m')} multi-token-prediction layers (m); the job has "
            f"{mtp_layers} (job.mtp_layers), which go just before the loss L in the last "
            "virtual stage"
        )
    if len(stages) % pp:
        raise LayoutError(
            f"{len(stages)} virtual stages do not divide over pp = {pp}; allowed: a multiple of "
            f"{pp} (pp x virtual stages)"
        )
    if tokens.count("E") != 1 or tokens.count("L") != 1:
        raise LayoutError("needs exactly one E (embedding) and one L (loss)")
    if not stages[0].startswith("E"):
        raise LayoutError("the embedding E must open the first virtual stage")
    if not stages[-1].endswith("L"):
        raise LayoutError("the loss L must close the last virtual stage")
    layers = tokens.count("t")
    if layers != n_layers:
        raise LayoutError(f"holds {layers} decoder layers (t); the model has {n_layers}")
    return tuple(VirtualStage(s.count("t"), embedding="E" in s, loss="L" in s) for s in stages)
