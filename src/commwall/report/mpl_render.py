"""The report's charts as matplotlib PNGs (``--png DIR``), headless, for papers.

Each :class:`~commwall.report.model.Chart` becomes ``DIR/<chart id>.png``, written atomically
(:func:`commwall.io.atomic.atomic_path`). PNG metadata is pinned (no software/date stamp) so the
same report gives the same files.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from commwall.errors import CommwallError
from commwall.report.model import Bar, Chart, Gantt, Heatmap, Lines, Report, Scatter, TierDiagram
from commwall.report.plotly_render import CATEGORY_COLOURS, PALETTE

__all__ = ["MatplotlibMissing", "write_pngs"]

_HIGHLIGHT = "#d62728"


class MatplotlibMissing(CommwallError, ImportError):
    """matplotlib is not installed."""


def _pyplot() -> Any:
    from commwall.mpl import pyplot

    return pyplot("drawing charts as PNG", MatplotlibMissing)


def write_pngs(report: Report, folder: str | Path, *, dpi: int = 150) -> list[Path]:
    """Draw every chart of ``report`` into ``folder`` (created) and return the files."""
    from commwall.io.atomic import atomic_path

    plt = _pyplot()
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for chart in report.charts():
        fig, ax = plt.subplots(figsize=(10, max(3.0, chart.height / 100)), dpi=dpi)
        try:
            _draw(ax, chart)
            ax.set_title(chart.title, loc="left", fontsize=11)
            fig.tight_layout()
            path = out / f"{chart.id}.png"
            with atomic_path(path) as tmp:
                fig.savefig(tmp, format="png", metadata={"Software": None})
            written.append(path)
        finally:
            plt.close(fig)
    return written


def _draw(ax: Any, chart: Chart) -> None:
    body = chart.body
    if isinstance(body, Bar):
        _bar(ax, body)
    elif isinstance(body, Lines | Scatter):
        _lines(ax, body)
    elif isinstance(body, Gantt):
        _gantt(ax, body)
    elif isinstance(body, Heatmap):
        _heatmap(ax, body)
    else:
        _tiers(ax, body)
    if not isinstance(body, TierDiagram):
        ax.set_xlabel(chart.x_title)
        ax.set_ylabel(chart.y_title)


def _bar(ax: Any, body: Bar) -> None:
    groups = body.groups or ("",) * len(body.labels)
    names = list(dict.fromkeys(groups))
    colours = [CATEGORY_COLOURS.get(g, PALETTE[names.index(g) % len(PALETTE)]) for g in groups]
    y = list(range(len(body.labels)))
    ax.barh(y, body.values, color=colours)
    ax.set_yticks(y, body.labels)
    ax.invert_yaxis()
    if body.text:
        for yi, v, t in zip(y, body.values, body.text, strict=True):
            ax.text(v, yi, f" {t}", va="center", fontsize=8)
    if len(names) > 1:
        from matplotlib.patches import Patch

        handles = [Patch(color=CATEGORY_COLOURS.get(g, PALETTE[i]), label=g)
                   for i, g in enumerate(names)]  # fmt: skip
        ax.legend(handles=handles, fontsize=8, loc="lower right")
    ax.margins(x=0.25)


def _lines(ax: Any, body: Lines | Scatter) -> None:
    categories: dict[str, int] = {}
    for s in body.series:
        for x in s.x:
            if isinstance(x, str):
                categories.setdefault(x, len(categories))
    plain = 0
    for s in body.series:
        xs = [categories[x] if isinstance(x, str) else x for x in s.x]
        if s.highlight:
            colour = "#111111" if s.markers_only else _HIGHLIGHT
        else:
            colour = PALETTE[plain % len(PALETTE)]
            plain += 1
        joined = not s.markers_only and (isinstance(body, Lines) or s.highlight)
        if joined:
            pts = (
                sorted(zip(xs, s.y, strict=True))
                if isinstance(body, Scatter)
                else list(zip(xs, s.y, strict=True))
            )
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", ms=6 if s.highlight else 3,
                    lw=3 if s.highlight else 1.2, color=colour, label=s.name)  # fmt: skip
        else:
            ax.scatter(xs, s.y, s=40 if s.highlight else 14, color=colour, label=s.name,
                       marker="D" if s.highlight else "o", zorder=3)  # fmt: skip
    if categories:
        ax.set_xticks(list(categories.values()), list(categories), rotation=20, ha="right")
    if body.log_x:
        ax.set_xscale("log", base=2 if _binary(body) else 10)
    if body.log_y:
        ax.set_yscale("log")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, ncol=2 if len(body.series) > 6 else 1)


def _binary(body: Lines | Scatter) -> bool:
    xs = [x for s in body.series for x in s.x if isinstance(x, float | int) and x > 0]
    return bool(xs) and all(math.log2(x).is_integer() for x in xs[:8])


def _gantt(ax: Any, body: Gantt) -> None:
    rows = {r: i for i, r in enumerate(body.rows)}
    groups = list(dict.fromkeys(b[3] for b in body.bars))
    for i, g in enumerate(groups):
        bars = [b for b in body.bars if b[3] == g]
        ax.barh([rows[b[0]] for b in bars], [b[2] - b[1] for b in bars],
                left=[b[1] for b in bars], height=0.7, label=g,
                color=CATEGORY_COLOURS.get(g, PALETTE[i % len(PALETTE)]), linewidth=0)  # fmt: skip
    ax.set_yticks(list(rows.values()), list(rows))
    ax.invert_yaxis()
    ax.legend(fontsize=8, loc="upper right", ncol=len(groups))


def _heatmap(ax: Any, body: Heatmap) -> None:
    import numpy as np

    z = np.array(body.z, dtype=float)
    cols = body.columns
    width = (cols[1] - cols[0]) if len(cols) > 1 else 1.0
    extent = (cols[0] - width / 2, cols[-1] + width / 2, len(body.rows) - 0.5, -0.5)
    im = ax.imshow(z, aspect="auto", cmap="viridis", vmin=0.0, vmax=body.zmax, extent=extent,
                   interpolation="nearest")  # fmt: skip
    ax.set_yticks(range(len(body.rows)), body.rows, fontsize=7)
    ax.figure.colorbar(im, ax=ax, label="utilisation")


def _tiers(ax: Any, body: TierDiagram) -> None:
    for i, (name, count) in enumerate(body.tiers):
        ax.text(0.5, i, f"{name}\n{count:,}", ha="center", va="center", fontsize=10,
                bbox={"boxstyle": "round", "facecolor": "#59a14f" if i == 0 else "#4e79a7",
                      "alpha": 0.35})  # fmt: skip
    for i, cables in enumerate(body.cables):
        ax.plot([0.5, 0.5], [i + 0.25, i + 0.75], color="0.45",
                lw=1 + math.log10(max(cables, 1)))  # fmt: skip
        ax.text(0.53, i + 0.5, f"{cables:,} cables", va="center", fontsize=9)
    ax.set_xlim(0, 1)
    ax.set_ylim(-0.6, len(body.tiers) - 0.4)
    ax.axis("off")
