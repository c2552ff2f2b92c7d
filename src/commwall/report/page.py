"""One self-contained HTML page: a small hand-written shell, plotly.js inline, the figures.

The page needs no network: plotly.js is embedded (``plotly.offline.get_plotlyjs``), there are
no fonts, images or links to fetch. Every user-supplied string is escaped — ``html.escape`` in
the shell, :func:`~commwall.report.plotly_render.esc` and
:func:`~commwall.report.plotly_render.script_json` in the figures — so a scenario named
``</script><script>…`` stays text. The same report gives the same bytes: no timestamps unless
``Report.generated`` is set, div ids from the charts' ids.
"""

from __future__ import annotations

import importlib
from html import escape

from commwall.errors import CommwallError
from commwall.report.inputs import ReportError
from commwall.report.model import Chart, Note, Report, Section, Table
from commwall.report.plotly_render import figure, script_json

__all__ = ["PlotlyMissing", "plotly_js", "render_html"]


class PlotlyMissing(CommwallError, ImportError):
    """plotly (the Python package that ships plotly.js) is not installed."""


def plotly_js() -> str:
    """plotly.js, minified, from the installed plotly package."""
    try:  # imported by name: plotly ships no type information, and this is all we use
        offline = importlib.import_module("plotly.offline")
    except ImportError:
        raise PlotlyMissing(
            "the HTML report needs plotly: pip install 'commwall[report]' (or pip install plotly)"
        ) from None
    js = str(offline.get_plotlyjs())
    # an inline script ends at the first "</script": plotly.js has none, keep it that way
    return js.replace("</script", "<\\/script").replace("</SCRIPT", "<\\/SCRIPT")


_CSS = """
:root { --ink: #1f2933; --muted: #52606d; --line: #d9e2ec; --accent: #4e79a7; --bad: #e15759; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
       color: var(--ink); background: #f5f7fa; }
header { background: #102a43; color: #f0f4f8; padding: 24px 32px 16px; }
header h1 { margin: 0 0 6px; font-size: 24px; font-weight: 600; overflow-wrap: anywhere; }
header p { margin: 2px 0; color: #bcccdc; font-size: 14px; overflow-wrap: anywhere; }
.keys { display: flex; flex-wrap: wrap; gap: 10px; margin: 16px 0 0; padding: 0; }
.keys div { background: #243b53; border-radius: 6px; padding: 8px 14px; min-width: 130px; }
.keys dt { font-size: 12px; color: #9fb3c8; text-transform: uppercase; letter-spacing: .04em; }
.keys dd { margin: 0; font-size: 19px; font-weight: 600; color: #fff; }
nav { position: sticky; top: 0; z-index: 5; background: #fff; border-bottom: 1px solid var(--line);
      padding: 8px 32px; font-size: 14px; }
nav a { color: var(--accent); margin-right: 18px; text-decoration: none; }
main { max-width: 1280px; margin: 0 auto; padding: 8px 32px 40px; }
section { background: #fff; border: 1px solid var(--line); border-radius: 8px;
          margin: 20px 0; padding: 8px 20px 16px; }
h2 { font-size: 19px; margin: 10px 0 8px; }
figure { margin: 14px 0; }
figcaption, .caption { color: var(--muted); font-size: 13px; margin-top: 4px; }
.chart { width: 100%; }
table { border-collapse: collapse; margin: 10px 0; font-size: 13px; width: 100%; }
th, td { border-bottom: 1px solid var(--line); padding: 4px 8px; text-align: left;
         vertical-align: top; overflow-wrap: break-word; }
th { background: #f0f4f8; font-weight: 600; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
footer { color: var(--muted); font-size: 12px; text-align: center; padding: 0 0 24px; }
"""

_BOOT = (
    "(function(){var figs=FIGURES;var cfg={responsive:true,displaylogo:false};"
    "for(var i=0;i<figs.length;i++){var f=figs[i];"
    "Plotly.newPlot(f.id,f.figure.data,f.figure.layout,cfg);}})();"
)


def render_html(report: Report) -> str:
    """The whole page of ``report`` (module docstring)."""
    from commwall._version import __version__

    charts = report.charts()
    ids = [c.id for c in charts]
    if len(set(ids)) != len(ids):
        raise ReportError(f"chart ids must be unique, got {ids}")
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f'<meta name="generator" content="commwall {escape(__version__)}">',
        f"<title>{escape(report.title)} · commwall report</title>",
        f"<style>{_CSS}</style>",
        "</head>",
        f'<body class="report-{escape(report.kind)}">',
        _header(report),
        _nav(report.sections),
        "<main>",
        *(_section(s) for s in report.sections),
        "</main>",
        _footer(report, __version__),
        f"<script>{plotly_js()}</script>",
        "<script>var FIGURES="
        + script_json([{"id": f"chart-{c.id}", "figure": figure(c)} for c in charts])
        + ";"
        + _BOOT
        + "</script>",
        "</body>",
        "</html>",
    ]
    return "\n".join(parts) + "\n"


def _header(report: Report) -> str:
    lines = [f"<header><h1>{escape(report.title)}</h1>"]
    lines += [f"<p>{escape(line)}</p>" for line in report.subtitle]
    lines.append('<dl class="keys">')
    lines += [f"<div><dt>{escape(k)}</dt><dd>{escape(v)}</dd></div>" for k, v in report.key_numbers]
    lines.append("</dl></header>")
    return "\n".join(lines)


def _nav(sections: tuple[Section, ...]) -> str:
    links = "".join(f'<a href="#{escape(s.id)}">{escape(s.title)}</a>' for s in sections)
    return f"<nav>{links}</nav>"


def _section(section: Section) -> str:
    out = [f'<section id="{escape(section.id)}"><h2>{escape(section.title)}</h2>']
    for block in section.blocks:
        if isinstance(block, Chart):
            out.append(_chart(block))
        elif isinstance(block, Table):
            out.append(_table(block))
        elif isinstance(block, Note):
            out.append(f"<p>{escape(block.text)}</p>")
    out.append("</section>")
    return "\n".join(out)


def _chart(chart: Chart) -> str:
    caption = f"<figcaption>{escape(chart.caption)}</figcaption>" if chart.caption else ""
    return (
        f'<figure><div id="chart-{escape(chart.id)}" class="chart" '
        f'style="height:{int(chart.height)}px"></div>{caption}</figure>'
    )


def _table(table: Table) -> str:
    def cls(i: int) -> str:
        return ' class="n"' if i in table.numeric else ""

    head = "".join(f"<th{cls(i)}>{escape(h)}</th>" for i, h in enumerate(table.headers))
    rows = "".join(
        "<tr>" + "".join(f"<td{cls(i)}>{escape(c)}</td>" for i, c in enumerate(row)) + "</tr>"
        for row in table.rows
    )
    caption = f'<div class="caption">{escape(table.caption)}</div>' if table.caption else ""
    return f"<div>{caption}<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table></div>"


def _footer(report: Report, version: str) -> str:
    when = f" on {escape(report.generated)}" if report.generated else ""
    return (
        f"<footer>Made by commwall {escape(version)}{when}. Figures are model estimates; "
        "hover a chart for values, drag to zoom, double-click to reset.</footer>"
    )
