"""Reports people want to look at: one self-contained, offline HTML page per result or sweep.

>>> # from commwall.report import build_report, load_input, render_html
>>> # report = build_report(load_input("examples/llama3-8b-ddp-pcie.yaml"))
>>> # Path("report.html").write_text(render_html(report))

* :func:`load_input` reads a scenario YAML (simulated, faults included), a ``commwall run
  --json`` result, or a sweep directory (:mod:`commwall.sweep.store`);
* :func:`build_report` turns it into a :class:`~commwall.report.model.Report` — sections of
  charts, tables and notes, as data;
* :func:`render_html` writes the page (plotly.js inline, every string escaped, the same bytes for
  the same input); :func:`write_pngs` draws the same charts with matplotlib;
* :func:`write_report` does all of it, atomically.

plotly (HTML) and matplotlib (PNG) are optional extras; without them the call raises an
:class:`ImportError` subclass whose message is the install hint.
"""

from __future__ import annotations

from pathlib import Path

from commwall.report.inputs import ReportError, ResultInput, SweepInput, load_input
from commwall.report.model import Report

__all__ = [
    "ReportError",
    "ResultInput",
    "SweepInput",
    "build_report",
    "load_input",
    "render_html",
    "write_pngs",
    "write_report",
]


def build_report(
    source: ResultInput | SweepInput, *, metric: str = "step_time_s", generated: str | None = None
) -> Report:
    """The report of ``source``; ``metric`` ranks and plots a sweep's points; ``generated`` is
    an optional timestamp for the footer (none by default, so the output is reproducible)."""
    if isinstance(source, SweepInput):
        from commwall.report.sweep import build_sweep_report

        return build_sweep_report(source, metric=metric, generated=generated)
    from commwall.report.single import build_result_report

    return build_result_report(source, generated=generated)


def render_html(report: Report) -> str:
    """The self-contained HTML page of ``report`` (:mod:`commwall.report.page`)."""
    from commwall.report.page import render_html as render

    return render(report)


def write_pngs(report: Report, folder: str | Path) -> list[Path]:
    """Every chart of ``report`` as ``folder/<chart id>.png`` (:mod:`commwall.report.mpl_render`)."""
    from commwall.report.mpl_render import write_pngs as write

    return write(report, folder)


def write_report(
    report: Report, path: str | Path, *, png: str | Path | None = None
) -> tuple[Path, list[Path]]:
    """Write ``report`` as HTML to ``path`` (atomically) and, with ``png``, its PNGs there."""
    from commwall.io.atomic import write_text_atomic

    text = render_html(report)
    pngs = write_pngs(report, png) if png is not None else []
    write_text_atomic(path, text)
    return Path(path), pngs
