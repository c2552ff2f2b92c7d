"""``commwall validate``: the collective model against every bundled public nccl-tests table.

>>> # commwall validate                          # error per size regime, op, scale and role
>>> # commwall validate --op all_gather --rows   # and every point of every all_gather table
>>> # commwall validate --min-size 1GiB --role held_out
>>> # commwall validate --markdown > docs/validation.md
>>> # commwall validate --training               # steps of published training runs
>>> # commwall validate --training --source mlperf --role held_out   # some of them

Each table (``src/commwall/validation/nccl_tests_public.yaml``, with its source and a verbatim
row) is rebuilt from the catalog presets and what the source says of its NICs and NCCL settings,
and every measured size is predicted as ``commwall collective`` would
(:func:`commwall.validation.compare`; summaries in :mod:`commwall.validation.report`).
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer

from commwall.console import fail, friendly, op_option, out

if TYPE_CHECKING:
    from commwall.validation.training import TrainingRun


def register(app: typer.Typer) -> None:
    """Add ``commwall validate`` to ``app``."""
    app.command("validate")(friendly(validate))


def validate(
    min_size: Annotated[
        str, typer.Option(help="Only sizes at least this large, e.g. 1GiB (default: all).")
    ] = "0B",
    max_size: Annotated[
        str | None, typer.Option(help="Only sizes at most this large, e.g. 256MiB.")
    ] = None,
    op: Annotated[
        str | None, typer.Option(help="Only tables of this operation (all_reduce, ...).")
    ] = None,
    role: Annotated[
        str | None,
        typer.Option(help="Only dev (seen while designing the model) or held_out tables."),
    ] = None,
    rows: Annotated[bool, typer.Option("--rows", help="Print every compared point too.")] = False,
    markdown: Annotated[
        bool, typer.Option("--markdown", help="Print a Markdown page (docs/validation.md).")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    training: Annotated[
        bool,
        typer.Option(
            "--training",
            help="Training steps against published measured runs instead (all runs: about 10 "
            "minutes on two cores; --source and --role pick fewer).",
        ),
    ] = False,
    jobs: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="With --training: worker processes, each comparing whole runs (default: the "
            "CPUs, at most 4; 1: in this process).",
        ),
    ] = None,
    source: Annotated[
        str | None,
        typer.Option(
            help="With --training: only runs whose source starts so (mlperf, mlperf50, "
            "mbridge2604, ...; the report's source groups)."
        ),
    ] = None,
) -> None:
    """Predicted vs measured busbw for every bundled public nccl-tests table: median and worst
    error per size regime, operation, scale and role, and the tables not compared with why
    (--training: step times against published measured training runs instead)."""
    from commwall.units import parse_size
    from commwall.validation.report import markdown_page, validation_report

    if training:
        if (min_size, max_size, op, rows) != ("0B", None, None, False):
            fail("--training: compares whole steps; --min-size, --max-size, --op and --rows "
                 "apply to collectives only")  # fmt: skip
        if markdown and (role, source) != (None, None):
            fail("--markdown: the page (docs/validation-training.md) is the whole table; "
                 "--role and --source apply to the terminal and --json")  # fmt: skip
        from commwall.validation.training import default_jobs, select_training_runs

        try:
            runs = select_training_runs(role, source)
        except ValueError as e:
            fail(str(e))
        _training(as_json, markdown, runs, jobs or default_jobs())
        return
    if source is not None:
        fail("--source: picks training runs; it applies with --training only")
    if jobs is not None:
        fail("--jobs: compares training runs in parallel; it applies with --training only")

    try:
        low = parse_size(min_size)
        high = None if max_size is None else parse_size(max_size)
    except ValueError as e:
        fail(f"--min-size/--max-size: {e}")
    if low < 0 or (high is not None and high < low):
        fail(f"--min-size/--max-size: need 0 <= min <= max, got {min_size!r} and {max_size!r}")
    op_name = op_option(op)
    if role not in (None, "dev", "held_out"):
        fail(f"--role: {role!r} is not allowed; allowed: dev, held_out")
    data = validation_report(min_size=low, max_size=high, op=op_name, role=role)
    if as_json:
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
    elif markdown:
        sys.stdout.write(markdown_page(data))
    else:
        _print(data, rows)


def _cell(s: dict[str, Any]) -> str:
    if not s.get("n"):
        return "-"
    return f"{s['median_abs']:.1%} / {s['worst_abs']:.0%} ({s['n']})"


def _print(data: dict[str, Any], rows: bool) -> None:
    from rich.table import Table

    from commwall.units import format_size
    from commwall.validation.report import REGIMES

    s = data["summary"]
    if rows:
        table = Table(show_header=True, header_style="bold", title="Predicted vs measured busbw")
        for col in ("table", "op", "ranks", "size", "measured", "model", "error", "algo"):
            table.add_column(col, justify="left" if col in ("table", "op", "algo") else "right")
        for r in data["rows"]:
            measured = (
                "-" if r["measured_busbw_GBps"] is None else f"{r['measured_busbw_GBps']:.1f}"
            )
            error = "-" if r["error"] is None else f"{r['error']:+.0%}"
            table.add_row(r["id"], r["op"], str(r["ranks"]), format_size(r["size"]), measured,
                          f"{r['predicted_busbw_GBps']:.1f}", error, r["algo"])  # fmt: skip
        out.print(table)
    summary = Table(
        show_header=True, header_style="bold",
        title=f"busbw error: median |e| / worst |e| (points); {s['points']} points, "
        f"{s['measurements']} tables",
    )  # fmt: skip
    summary.add_column("group")
    for name, _, _ in REGIMES:
        summary.add_column(name, justify="right")
    summary.add_row("all", *(_cell(s["regime"][name]) for name, _, _ in REGIMES))
    for section in ("role", "op", "scale", "launch"):
        for key, per in s[section].items():
            summary.add_row(f"{section} {key}", *(_cell(per[name]) for name, _, _ in REGIMES))
    for key, per in s["op_one_gpu_per_process"].items():
        summary.add_row(f"op {key} (-g 1)", *(_cell(per[name]) for name, _, _ in REGIMES))
    out.print(summary)
    out.print("positive error = optimistic; sources and every point: commwall validate --json")
    for x in data["skipped"]:
        out.print(f"not compared: {x['id']} ({x['why']})", markup=False)


def _training(as_json: bool, markdown: bool, runs: tuple[TrainingRun, ...], jobs: int = 1) -> None:
    from rich.table import Table

    from commwall.validation.accuracy import accuracy_table, regime_markdown
    from commwall.validation.training import (
        TRAINING_GROUPS,
        setting_text,
        training_markdown,
        training_report,
        unstated_rows,
    )

    data = training_report(runs, jobs)
    if as_json:
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
        return
    if markdown:
        sys.stdout.write(training_markdown(data, regime_markdown(data)))
        return
    table = Table(show_header=True, header_style="bold", title="Step time: predicted vs measured")
    for col in ("run", "GPUs", "measured", "model", "error", "flat 0.5", "error "):
        table.add_column(col, justify="left" if col == "run" else "right")
    for r in data["runs"]:
        table.add_row(r["id"], f"{r['gpus']:,}", f"{r['measured_s']:.3f} s",
                      f"{r['predicted_s']:.3f} s", f"{r['error']:+.1%}", f"{r['flat_s']:.3f} s",
                      f"{r['flat_error']:+.1%}")  # fmt: skip
    out.print(table)
    summary = Table(show_header=True, header_style="bold",
                    title="median |error| / worst |error| (runs)")  # fmt: skip
    for col in ("group", "model", "flat 0.5"):
        summary.add_column(col, justify="left" if col == "group" else "right")
    summary.add_row("all", _cell(data["overall"]["model"]), _cell(data["overall"]["flat"]))
    for section in TRAINING_GROUPS:
        for key, per in data[section].items():
            summary.add_row(f"{section[3:]} {key}", _cell(per["model"]), _cell(per["flat"]))
    out.print(summary)
    regimes = Table(show_header=True, header_style="bold",
                    title="By regime: what `commwall run` quotes under a step")  # fmt: skip
    for col in ("layers", "GPUs", "scale", "runs", "median", "median |e|", "within 10%", "worst"):
        regimes.add_column(col, justify="left" if col in ("layers", "GPUs", "scale") else "right")
    for c in accuracy_table(data):
        regimes.add_row(c.layers, c.family, c.scale, str(c.runs), f"{c.median:+.1%}",
                        f"{c.median_abs:.1%}", str(c.within_10), f"{c.worst:+.1%}")  # fmt: skip
    out.print(regimes)
    evaluated = [r for r in data["runs"] if r.get("eval_error") is not None]
    if evaluated:
        ev = Table(show_header=True, header_style="bold",
                   title="Forward only: evaluation steps, predicted vs measured")  # fmt: skip
        for col in ("run", "measured", "model", "forward error", "after the forward",
                    "step error"):  # fmt: skip
            ev.add_column(col, justify="left" if col == "run" else "right")
        for r in evaluated:
            ev.add_row(r["id"], f"{r['eval_measured_s']:.4f} s", f"{r['eval_predicted_s']:.4f} s",
                       f"{r['eval_error']:+.1%}", f"{r['rest_error']:+.1%}",
                       f"{r['error']:+.1%}")  # fmt: skip
        ev.add_row("these runs", "", "", _cell(data["evaluation"]["forward"]),
                   _cell(data["evaluation"]["rest"]), _cell(data["evaluation"]["step"]))  # fmt: skip
        out.print(ev)
        out.print("after the forward: the step less its forwards (backward, gradient reduction, "
                  "optimizer), model against measured")  # fmt: skip
    unstated = unstated_rows(data)
    if unstated:
        un = Table(show_header=True, header_style="bold",
                   title="Settings the source leaves unstated: the step at each allowed value")  # fmt: skip
        for col in ("run", "setting", "taken", "error at each value"):
            un.add_column(col, justify="left")
        for rid, name, taken, errors in unstated:
            un.add_row(rid, name, setting_text(taken),
                       ", ".join(f"{setting_text(v)}: {e:+.1%}" for v, e in errors))  # fmt: skip
        out.print(un)
    out.print("negative error = the model is faster than the run; sources: commwall validate "
              "--training --json")  # fmt: skip
    for x in data["not_compared"]:
        out.print(f"not compared: {x['id']} ({x['reason']})", markup=False)
