"""The commands, one module each: each defines ``register(app)``, parses its options and calls a
library function a Python user can call the same way.

``commwall.cli`` calls :func:`register_all`, so a capability adds its command here without editing
the central CLI module. :data:`FIRST` come first in ``commwall --help``, the rest in name order.
"""

from __future__ import annotations

import importlib
import pkgutil

import typer

#: The main job and the commands most users start with, in this order at the top of ``--help``.
FIRST = ("run", "collective", "catalog")


def register_all(app: typer.Typer) -> None:
    """Register every ``commwall.commands.<name>.register`` on ``app`` (:data:`FIRST` first,
    then in name order)."""
    order = {name: i for i, name in enumerate(FIRST)}
    modules = sorted(
        pkgutil.iter_modules(__path__), key=lambda m: (order.get(m.name, len(order)), m.name)
    )
    for info in modules:
        if info.name.startswith("test_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(app)
