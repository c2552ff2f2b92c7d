"""The ``commwall`` command line: the application, ``--version``, and every command of
:mod:`commwall.commands` (one module per command, each parsing its options and calling a library
function).

Every command validates its input first; a bad value prints one clear message naming the option
or field, the value and what is allowed, and exits with status 2 — never a traceback.
"""

from __future__ import annotations

from typing import Annotated

import typer

from commwall._version import __version__
from commwall.console import out

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Where does a training step's time go, and what would a different network change?",
)


def _version(value: bool) -> None:
    if value:
        out.print(f"commwall {__version__}")
        raise typer.Exit()


@app.callback()
def main_callback(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
) -> None:
    """commwall: model AI-cluster networks from SerDes to NCCL to the training step."""


def _register_commands() -> None:
    from commwall.commands import register_all

    register_all(app)


_register_commands()


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":  # python -m commwall.cli
    main()
