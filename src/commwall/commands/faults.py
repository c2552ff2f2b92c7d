"""``commwall faults KIND``: the silent killers, each as a distribution with confidence intervals.

>>> # commwall faults stragglers --scenario examples/llama3-405b-16k-h100.yaml --jitter 2%
>>> # commwall faults failures --scenario examples/llama3-70b-dgx-h100.yaml --fail-random 4
>>> # commwall faults bit-errors --pre-fec-ber 1e-5 --scenario examples/llama3-405b-16k-h100.yaml
>>> # commwall faults goodput --gpus 16384 --checkpoint 60s --restart 10min
>>> # commwall faults incast --senders 64 --size 2MB --link 400Gb/s

Each kind's options and output live in its own module (``faults_*.py`` here); this one only
gathers them under ``commwall faults``.
"""

from __future__ import annotations

import typer

from commwall.commands import faults_failures, faults_physical, faults_variability


def register(app: typer.Typer) -> None:
    """Add ``commwall faults`` (stragglers, failures, bit-errors, goodput, incast) to ``app``."""
    sub = typer.Typer(
        no_args_is_help=True,
        help="Silent killers: stragglers, failures, bit errors, goodput and incast, as "
        "distributions with 95% confidence intervals.",
    )
    faults_variability.add_commands(sub)
    faults_failures.add_commands(sub)
    faults_physical.add_commands(sub)
    app.add_typer(sub, name="faults")
