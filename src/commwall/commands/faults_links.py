"""Placeholder: filled in by the faults issue."""

from __future__ import annotations

import typer


def add_commands(app: typer.Typer) -> None:
    """Add this module's ``commwall faults`` sub-commands to ``app``."""
