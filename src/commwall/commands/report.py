"""``commwall report [SCENARIO|RESULT.json|SWEEP] -o report.html [--png DIR]``: a page to look at.

>>> # commwall report examples/llama3-8b-ddp-pcie.yaml -o report.html
>>> # commwall run my.yaml --json > result.json && commwall report result.json -o result.html
>>> # commwall report sweeps/oversubscription -o sweep.html --png figures/

One self-contained HTML file (plotly.js inline: it opens offline, from an e-mail or a CI
artifact) with the step's breakdown, timeline, collectives, fabric, power, cost, memory and
faults — or, for a sweep directory, the best points, Pareto fronts, sensitivity to each axis and
the points that failed. ``--png DIR`` draws the same charts with matplotlib for papers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from commwall.console import err, fail, friendly


def register(app: typer.Typer) -> None:
    """Add ``commwall report`` to ``app``."""
    app.command("report")(friendly(report))


def report(
    source: Annotated[
        Path | None,
        typer.Argument(
            help="A scenario YAML (simulated now), a `commwall run --json` result, or a sweep "
            "directory; omit (or --default) for the built-in default scenario."
        ),
    ] = None,
    output: Annotated[
        Path, typer.Option("--output", "-o", help="Write the HTML report here.")
    ] = Path("report.html"),
    png: Annotated[
        Path | None,
        typer.Option(help="Also draw every chart as DIR/<chart>.png (matplotlib)."),
    ] = None,
    default: Annotated[
        bool, typer.Option("--default", help="Report the built-in default scenario.")
    ] = False,
    engine: Annotated[
        str | None,
        typer.Option(help="Scenario input: analytic or flow (default: the scenario's)."),
    ] = None,
    metric: Annotated[
        str,
        typer.Option(
            help="Sweep input: the column that ranks points and the sensitivity charts plot."
        ),
    ] = "step_time_s",
    timestamp: Annotated[
        str | None,
        typer.Option(
            help="Text for the footer's 'made on' (none by default: same input, same bytes)."
        ),
    ] = None,
) -> None:
    """Write one self-contained HTML report (offline, interactive) of a result or a sweep."""
    from commwall.report import ReportError, build_report, load_input, write_report
    from commwall.report.mpl_render import MatplotlibMissing
    from commwall.report.page import PlotlyMissing
    from commwall.scenario import ENGINES

    if engine is not None and engine not in ENGINES:
        fail(f"--engine: {engine!r} is not allowed; allowed: {', '.join(ENGINES)}")
    if default and source is not None:
        fail(f"--default: give either a SOURCE ({str(source)!r}) or --default, not both")
    if output.suffix.lower() not in (".html", ".htm"):
        fail(f"--output: {str(output)!r} must end in .html")
    if not output.parent.is_dir():
        fail(f"--output: the folder {str(output.parent)!r} does not exist")
    if png is not None and png.exists() and not png.is_dir():
        fail(f"--png: {str(png)!r} exists and is not a folder")
    try:
        data = load_input(source, engine=engine)
        page = build_report(data, metric=metric, generated=timestamp)
        path, pngs = write_report(page, output, png=png)
    except ReportError as e:  # the library names its parameters; the options carry their names
        message = str(e)
        fail(f"--{message}" if message.startswith(("metric:", "engine:")) else message)
    except PlotlyMissing as e:
        fail(str(e))
    except MatplotlibMissing as e:
        fail(f"--png: {e}")
    except OSError as e:
        where = "--png" if png is not None and e.filename and str(png) in str(e.filename) else "-o"
        fail(f"{where}: cannot write: {e.strerror or e}")
    size = path.stat().st_size
    err.print(
        f"report written to {path} ({size / 1e6:.1f} MB, {len(page.charts())} charts; "
        "open it in a browser)" + (f"; {len(pngs)} PNGs in {png}" if png is not None else "")
    )
