"""``commwall megatron FILE``: read a Megatron-LM launch or a Megatron-Bridge config as a job.

>>> # commwall megatron train_gpt3_175b_distributed.sh > job.yaml
>>> # commwall megatron examples/moe_recipes/qwen3_30b/h100/bf16_32GPU_TP1PP1EP8.yaml --json
>>> # commwall megatron checkpoints/iter_0000100/run_config.yaml

Prints the ``job:`` section the arguments are (:mod:`commwall.megatron_args`; a Bridge
``ConfigContainer``'s through :mod:`commwall.megatron_bridge`), Megatron-LM's default for
every flag left out, followed by what is not priced, the notes and the flags that do not
change the step, as YAML comments. A scenario can instead name the file itself,
``job: {megatron_args: FILE}``, and override any field beside it.
"""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any

import typer
import yaml

from commwall.console import fail, friendly


def register(app: typer.Typer) -> None:
    """Add ``commwall megatron`` to ``app``."""
    app.command("megatron")(friendly(megatron))


def megatron(
    file: Annotated[
        str,
        typer.Argument(
            help="A launch script (pretrain_gpt.py's --flag value words), a Megatron-LM "
            "recipe / mapping of flags, or a Megatron-Bridge configuration (a checkpoint's "
            "run_config.yaml or an override file) (.yaml, .yml, .json)."
        ),
    ],
    as_json: Annotated[bool, typer.Option("--json", help="Print the reading as JSON.")] = False,
    var: Annotated[
        list[str] | None,
        typer.Option(
            "--var",
            help="NAME=VALUE for a shell variable the flags name (repeat): the launch's "
            "environment, as a scenario's job.megatron_vars.",
        ),
    ] = None,
) -> None:
    """Read a Megatron-LM launch (its pretrain_gpt.py arguments) or a Megatron-Bridge
    configuration as a scenario job: every flag or field used, not priced, unknown or without
    effect."""
    from commwall.megatron_args import MegatronArgsError, padded_vocab
    from commwall.megatron_bridge import is_bridge_config, launch_job
    from commwall.scenario import megatron_source, megatron_variables

    variables: dict[str, str] = {}
    for item in var or []:
        key, eq, value = item.partition("=")
        if not eq or not key:
            fail(f"--var: {item!r}; allowed: NAME=VALUE")
        variables[key] = value
    try:
        source, name, _ = megatron_source(file)
        bridge = is_bridge_config(source)
        read = launch_job(source, megatron_variables(variables))
    except (ValueError, MegatronArgsError) as e:
        fail(str(e).removeprefix("megatron_args: "))
    job: dict[str, Any] = dict(read.job)
    if read.model is not None:
        job["model"] = {"name": name, **read.model}
        if "vocab" in read.model:
            job["model"]["vocab"] = padded_vocab(read.model["vocab"], read.vocab_multiple)
    data: dict[str, Any] = {
        "job": job,
        "source": "megatron-bridge" if bridge else "megatron-lm",
        "vocab_multiple": read.vocab_multiple,
        "not_priced": list(read.not_priced),
        "notes": list(read.notes),
        "ignored": list(read.ignored),
        "unread": list(read.unread),
    }
    if as_json:
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
        return
    text = yaml.safe_dump({"job": data["job"]}, sort_keys=False, default_flow_style=None)
    shown = " ".join(file.split())  # a name with line breaks stays one comment line
    kind = "a Megatron-Bridge configuration" if bridge else "Megatron-LM arguments"
    lines = [f"# {shown} read as {kind} (commwall megatron)", text.rstrip()]
    if read.model is not None and "vocab" not in read.model:
        lines.append(
            "# the vocabulary: Megatron-LM takes it from the tokenizer; add job.model.vocab "
            f"(padded to a multiple of {read.vocab_multiple}, as Megatron pads it)"
        )
    for title, items in (
        ("not priced", read.not_priced),
        ("notes", read.notes),
        ("not read (unknown here: check they change neither the model nor the step)", read.unread),
        ("ignored (no effect on the step)", read.ignored),
    ):
        if items:
            lines.append(f"# {title}:")
            shown_items = (
                items if title.startswith("not") or len(items) <= _SHOWN else items[:_SHOWN]
            )
            lines.extend(f"#   {item}" for item in shown_items)
            if len(shown_items) < len(items):  # a saved Bridge config holds hundreds
                lines.append(f"#   ... and {len(items) - _SHOWN} more (--json lists them all)")
    sys.stdout.write("\n".join(lines) + "\n")


#: The most fields without effect the YAML output lists (``--json`` lists every one).
_SHOWN = 20
