"""``commwall catalog [KIND]`` and ``commwall schema``: the parts and models commwall knows, and
the scenario file's JSON schema."""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any

import typer
from rich.table import Table

from commwall.console import fail, friendly, out


def register(app: typer.Typer) -> None:
    """Add ``commwall catalog`` and ``commwall schema`` to ``app``."""
    app.command("catalog")(friendly(catalog))
    app.command("schema")(schema)


def catalog(
    kind: Annotated[
        str | None,
        typer.Argument(help="gpu, nvlink, nvswitch, pcie, nic, switch, optic, preset, model"),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print parts as JSON.")] = False,
) -> None:
    """List the parts, presets and models commwall knows, with their sources."""
    from commwall.catalog import load_catalog
    from commwall.workload.models import get_model, list_models

    cat = load_catalog()
    kinds = [*cat.kinds(), "model"]
    if kind is not None and kind not in kinds:
        fail(f"unknown catalog kind {kind!r}; allowed: {', '.join(kinds)}")
    chosen = [kind] if kind else kinds
    if as_json:
        data: dict[str, Any] = {}
        for k in chosen:
            if k == "model":
                data[k] = {n: vars(get_model(n)) for n in list_models()}
            else:
                data[k] = {p.name: p.model_dump() for p in cat.parts(k)}
        sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")
        return
    for k in chosen:
        table = Table(title=k, title_justify="left")
        table.add_column("name")
        table.add_column("description")
        if k == "model":
            for n in list_models():
                m = get_model(n)
                table.add_row(
                    n,
                    f"{m.total_params() / 1e9:,.1f} B params, {m.n_layers} layers, "
                    f"hidden {m.hidden}"
                    + (f", {m.n_experts} experts top-{m.top_k}" if m.n_experts > 1 else "")
                    + (
                        f" from {m.group_topk} of {m.expert_groups} groups"
                        if m.expert_groups > 1
                        else ""
                    )
                    + (" + a shared expert" if m.is_moe and m.shared_ffn_hidden else "")
                    + (
                        f", {m.n_layers - m.moe_layer_count} of its layers dense"
                        if m.has_dense_layers and not m.is_hybrid
                        else ""
                    )
                    + (
                        ", hybrid: "
                        + ", ".join(f"{n} {k.block}" for k, n in m.layer_kinds)
                        + f" layers (Mamba-2: {m.mamba_heads} heads of {m.mamba_head_dim}, "
                        f"state {m.mamba_state})"
                        if m.is_hybrid
                        else ""
                    )
                    + (f", MLA (latents {m.q_lora_rank}/{m.kv_lora_rank})" if m.mla else "")
                    + (", YaRN rotary (unfused)" if m.yarn_rope else "")
                    + (
                        f", {m.sliding_window}-token window"
                        + (
                            f" on {m.sliding_window_layers} layers"
                            if m.sliding_window_layers
                            else ""
                        )
                        if m.sliding_window
                        else ""
                    )
                    + (
                        f", attention in {m.attention_chunk:,}-token chunks"
                        + (
                            f" on {m.attention_chunk_layers} layers"
                            if m.attention_chunk_layers
                            else ""
                        )
                        if m.attention_chunk
                        else ""
                    ),
                )
        else:
            for p in cat.parts(k):
                table.add_row(p.name, p.description)
        out.print(table)


def schema() -> None:
    """Print the scenario file's JSON schema (for editors)."""
    from commwall.scenario import json_schema

    sys.stdout.write(json.dumps(json_schema(), indent=2) + "\n")
