"""Charts as plotly.js figures (plain ``{"data", "layout"}`` dicts) for the HTML page.

Text is escaped here, once: every string goes through :func:`esc` (HTML entities, which
plotly.js decodes for display but never parses as tags; ``\\n`` becomes plotly's ``<br>``), and
the figures' JSON is made safe inside ``<script>`` by :func:`script_json`.
"""

from __future__ import annotations

import html
import json
import math
from typing import Any

from commwall.report.model import Bar, Chart, Gantt, Heatmap, Lines, Scatter, TierDiagram

__all__ = ["CATEGORY_COLOURS", "PALETTE", "esc", "figure", "script_json"]

#: Line colours, in order (colour-blind-safe Tableau 10).
PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1",
           "#ff9da7", "#9c755f", "#bab0ac")  # fmt: skip
#: Colours of the step's categories (timeline) and of bar groups.
CATEGORY_COLOURS = {
    "compute": "#4e79a7",
    "host": "#76b7b2",
    "tp": "#f28e2b",
    "cp": "#ff9da7",
    "ep": "#b07aa1",
    "pp": "#59a14f",
    "bubble": "#bab0ac",
    "imbalance": "#edc948",
    "dp": "#e15759",
    "optimizer": "#9c755f",
    "busy": "#4e79a7",
    "waiting on communication": "#e15759",
    "GPUs": "#4e79a7",
    "network": "#f28e2b",
    "state": "#4e79a7",
    "total": "#59a14f",
    "capacity": "#bab0ac",
}
_HIGHLIGHT = "#d62728"
_FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif"


def esc(text: object) -> str:
    """``text`` for plotly: HTML-escaped (``<`` shows as ``<``, never a tag); newlines as
    ``<br>``."""
    return html.escape(str(text), quote=False).replace("\n", "<br>")


def _num(x: float) -> float | None:
    return x if math.isfinite(x) else None  # JSON has no NaN/inf; plotly draws a gap


def _x(values: tuple[float | str, ...]) -> list[Any]:
    return [esc(v) if isinstance(v, str) else _num(float(v)) for v in values]


def _colour(group: str, i: int) -> str:
    return CATEGORY_COLOURS.get(group, PALETTE[i % len(PALETTE)])


def figure(chart: Chart) -> dict[str, Any]:
    """The plotly.js figure of ``chart``."""
    body = chart.body
    layout: dict[str, Any] = {
        "title": {"text": esc(chart.title), "x": 0.01, "xanchor": "left", "font": {"size": 15}},
        "height": chart.height,
        "margin": {"l": 70, "r": 20, "t": 50, "b": 50},
        "font": {"family": _FONT, "size": 12},
        "paper_bgcolor": "white",
        "plot_bgcolor": "#fafafa",
        "hovermode": "closest",
        "legend": {"orientation": "v"},
        "xaxis": {
            "title": {"text": esc(chart.x_title)},
            "automargin": True,
            "gridcolor": "#e5e5e5",
        },
        "yaxis": {
            "title": {"text": esc(chart.y_title)},
            "automargin": True,
            "gridcolor": "#e5e5e5",
        },
    }
    if isinstance(body, Bar):
        data = _bar(body, layout)
    elif isinstance(body, Lines | Scatter):
        data = _lines(body, layout)
    elif isinstance(body, Gantt):
        data = _gantt(body, layout)
    elif isinstance(body, Heatmap):
        data = _heatmap(body, layout)
    else:
        data = _tiers(body, layout)
    return {"data": data, "layout": layout}


def _bar(body: Bar, layout: dict[str, Any]) -> list[dict[str, Any]]:
    groups = body.groups or ("",) * len(body.labels)
    names = list(dict.fromkeys(groups))
    labels = [esc(label) for label in body.labels]
    data = []
    for i, g in enumerate(names):
        idx = [k for k, gk in enumerate(groups) if gk == g]
        data.append(
            {
                "type": "bar",
                "orientation": "h",
                "name": esc(g),
                "showlegend": len(names) > 1,
                "y": [labels[k] for k in idx],
                "x": [_num(body.values[k]) for k in idx],
                "text": [esc(body.text[k]) for k in idx] if body.text else None,
                "textposition": "auto",
                "marker": {"color": _colour(g, i)},
                "hovertemplate": "%{y}: %{text}<extra></extra>" if body.text else None,
            }
        )
    layout["barmode"] = "stack"
    layout["yaxis"].update(
        {"categoryorder": "array", "categoryarray": labels, "autorange": "reversed"}
    )
    return [{k: v for k, v in d.items() if v is not None} for d in data]


def _lines(body: Lines | Scatter, layout: dict[str, Any]) -> list[dict[str, Any]]:
    data = []
    plain = 0
    for s in body.series:
        if s.highlight:
            colour = _HIGHLIGHT if not s.markers_only else "#111111"
        else:
            colour = PALETTE[plain % len(PALETTE)]
            plain += 1
        if isinstance(body, Scatter):
            mode = "markers" if s.markers_only or not s.highlight else "lines+markers"
        else:
            mode = "markers" if s.markers_only else "lines+markers"
        trace: dict[str, Any] = {
            "type": "scatter",
            "mode": mode,
            "name": esc(s.name),
            "x": _x(s.x),
            "y": [_num(float(v)) for v in s.y],
            "marker": {
                "color": colour,
                "size": 10 if s.highlight else 6,
                "symbol": "diamond" if s.highlight and s.markers_only else "circle",
            },
            "line": {"color": colour, "width": 4 if s.highlight else 1.5},
        }
        if s.text:
            trace["text"] = [esc(t) for t in s.text]
            trace["hovertemplate"] = "%{text}<br>%{x}, %{y}<extra>%{fullData.name}</extra>"
        data.append(trace)
    if body.log_x:
        layout["xaxis"]["type"] = "log"
    if body.log_y:
        layout["yaxis"]["type"] = "log"
    return data


def _gantt(body: Gantt, layout: dict[str, Any]) -> list[dict[str, Any]]:
    groups = list(dict.fromkeys(b[3] for b in body.bars))
    data = []
    for i, g in enumerate(groups):
        bars = [b for b in body.bars if b[3] == g]
        data.append(
            {
                "type": "bar",
                "orientation": "h",
                "name": esc(g),
                "y": [esc(b[0]) for b in bars],
                "base": [round(b[1], 9) for b in bars],
                "x": [max(round(b[2] - b[1], 9), 0.0) for b in bars],
                "hovertext": [esc(b[4]) for b in bars],
                "hoverinfo": "text",
                "marker": {"color": _colour(g, i), "line": {"width": 0}},
            }
        )
    layout["barmode"] = "overlay"
    layout["bargap"] = 0.25
    rows = [esc(r) for r in body.rows]
    layout["yaxis"].update(
        {"categoryorder": "array", "categoryarray": rows, "autorange": "reversed"}
    )
    return data


def _heatmap(body: Heatmap, layout: dict[str, Any]) -> list[dict[str, Any]]:
    layout["yaxis"].update({"autorange": "reversed"})
    return [
        {
            "type": "heatmap",
            "x": [_num(c) for c in body.columns],
            "y": [esc(r) for r in body.rows],
            "z": [[_num(v) for v in row] for row in body.z],
            "zmin": 0.0,
            "zmax": body.zmax,
            "colorscale": "Viridis",
            "colorbar": {"title": {"text": "utilisation"}},
            "hovertemplate": "%{y}<br>t=%{x:.4g} s: %{z:.0%}<extra></extra>",
        }
    ]


def _tiers(body: TierDiagram, layout: dict[str, Any]) -> list[dict[str, Any]]:
    n = len(body.tiers)
    layout["xaxis"] = {"visible": False, "range": [0, 1]}
    layout["yaxis"] = {"visible": False, "range": [-0.6, n - 0.4]}
    layout["showlegend"] = False
    data: list[dict[str, Any]] = []
    for i, cables in enumerate(body.cables):
        width = 1 + math.log10(max(cables, 1))
        data.append(
            {
                "type": "scatter",
                "mode": "lines+text",
                "x": [0.5, 0.5, 0.5],
                "y": [i + 0.2, i + 0.5, i + 0.8],
                "text": ["", f"  {cables:,} cables", ""],
                "textposition": "middle right",
                "line": {"color": "#777777", "width": width},
                "hoverinfo": "skip",
            }
        )
    data.append(
        {
            "type": "scatter",
            "mode": "markers+text",
            "x": [0.5] * n,
            "y": list(range(n)),
            "text": [f"{esc(name)}: {count:,}" for name, count in body.tiers],
            "textposition": "middle left",
            "marker": {
                "symbol": "square",
                "size": [22 if i else 18 for i in range(n)],
                "color": ["#59a14f" if i == 0 else "#4e79a7" for i in range(n)],
            },
            "hoverinfo": "text",
        }
    )
    return data


def script_json(value: Any) -> str:
    """``value`` as JSON that cannot end or open markup inside ``<script>``: ``<``, ``>``, ``&``
    and the JavaScript line separators are written as ``\\u`` escapes (valid JSON, same data)."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    for char, code in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                       ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):  # fmt: skip
        text = text.replace(char, code)
    return text
