"""Sub-commands that live beside their capability: each module defines ``register(app)``.

``commwall.cli`` calls :func:`register_all`, so a capability adds its command here without editing
the central CLI module.
"""

from __future__ import annotations

import importlib
import pkgutil

import typer


def register_all(app: typer.Typer) -> None:
    """Register every ``commwall.commands.<name>.register`` on ``app``, in name order."""
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("test_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(app)
