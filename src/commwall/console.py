"""The terminal every command writes to, and the one way bad input ends a command.

Kept apart from :mod:`commwall.cli` so capability commands (:mod:`commwall.commands`) can use it
without importing the CLI module that registers them.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import wraps
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

#: Standard output: full width on a terminal, 120 columns when piped (stable README output).
out = Console(highlight=False, width=None if sys.stdout.isatty() else 120)
#: Standard error, for messages.
err = Console(stderr=True, highlight=False)

F = TypeVar("F", bound=Callable[..., Any])


def fail(message: str) -> NoReturn:
    """Print ``error: message`` (markup-escaped) on stderr and exit with status 2."""
    err.print(f"[bold red]error:[/] {escape(message)}", markup=True, soft_wrap=True)
    raise typer.Exit(2)


def op_option(value: str | None) -> str | None:
    """The operation an ``--op`` option names, as commwall spells it (None when not given);
    an unknown name ends the command with the allowed ones."""
    if value is None:
        return None
    from commwall.collectives.ops import parse_op

    try:
        return parse_op(value).value
    except ValueError as e:
        fail(f"--op: {e}")


def friendly(func: F) -> F:
    """Turn commwall's errors into one message and exit status 2: a scenario error prints one
    line per problem, each with its origin; every other :class:`~commwall.errors.CommwallError`
    its message. Anything else is a bug and keeps its traceback."""

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from commwall.errors import CommwallError
        from commwall.scenario import ScenarioError

        try:
            return func(*args, **kwargs)
        except ScenarioError as e:
            fail("\n".join(f"{e.origin}: {m}" for m in e.messages))
        except CommwallError as e:
            fail(str(e))

    return wrapper  # type: ignore[return-value]


def write_parquet(
    path: Path, records: list[dict[str, Any]], metadata: dict[str, Any], option: str = "--parquet"
) -> None:
    """Write ``records`` as Parquet (:func:`commwall.io.parquet.write_parquet`) or exit with one
    line naming ``option``."""
    from commwall.io.parquet import ParquetError, flatten
    from commwall.io.parquet import write_parquet as write

    try:
        write(path, [flatten(r) for r in records], metadata=metadata)
    except OSError as e:
        fail(f"{option}: cannot write {str(path)!r}: {e.strerror or e}")
    except ParquetError as e:
        fail(f"{option}: {e}")
    err.print(f"{len(records)} rows written to {path} (Parquet)")


@contextmanager
def event_progress(label: str, *, quiet: bool) -> Iterator[Callable[[int, float, int, int], None]]:
    """A live line on standard error for a long event-driven run: events, events/s, simulated
    time and flows done (``progress(events, simulated s, flows done, flows)``, the packet
    engine's :data:`~commwall.engines.packet.network.Progress`). Nothing is drawn when ``quiet``
    (``--json``) or when standard error is not a terminal; it is cleared when the run ends."""
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from commwall.units import format_time

    show = not quiet and err.is_terminal
    columns = (SpinnerColumn(), TextColumn("[bold]{task.description}"),
               TextColumn("{task.fields[figures]}"), TimeElapsedColumn())  # fmt: skip
    with Progress(*columns, console=err, transient=True, disable=not show) as bar:
        task = bar.add_task(escape(label), total=None, figures="starting")
        start = time.perf_counter()

        def report(events: int, simulated: float, done: int, flows: int) -> None:
            wall = time.perf_counter() - start
            rate = f"{events / wall:,.0f} events/s" if wall > 0 else ""
            figures = (f"{events:,} events ({rate}), {format_time(simulated)} simulated, "
                       f"{done:,} of {flows:,} flows done")  # fmt: skip
            bar.update(task, figures=figures)

        yield report


def show_gbps(x: float) -> str:
    """Bytes/s as ``1,234.5 GB/s`` (tables of ``run`` and ``collective``)."""
    return f"{x / 1e9:,.1f} GB/s"


def show_seconds(x: float) -> str:
    """Seconds with three significant digits and a unit (:func:`commwall.units.format_time`)."""
    from commwall.units import format_time

    return format_time(x, digits=3)


def show_size(x: float) -> str:
    """Bytes with three significant digits and a unit (:func:`commwall.units.format_size`)."""
    from commwall.units import format_size

    return format_size(x, digits=3)


def check_outputs(*options: tuple[str, Path | None]) -> None:
    """Refuse an output path that cannot be written before the work starts (one line, exit 2)."""
    from commwall.io.atomic import output_problem

    for option, path in options:
        if path is not None and (problem := output_problem(path)) is not None:
            fail(f"{option}: cannot write {str(path)!r}: {problem}")
