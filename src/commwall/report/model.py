"""What a report holds, as plain data: sections of charts, tables and notes.

Builders (:mod:`commwall.report.single`, :mod:`commwall.report.sweep`) describe *what* to show
with these types; the renderers decide *how*: :mod:`commwall.report.plotly_render` (interactive
figures for the HTML page) and :mod:`commwall.report.mpl_render` (PNGs for papers). Keeping the
description neutral is what lets ``--png`` draw the same charts as the page.

Strings here are raw (unescaped); every renderer escapes what it emits.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "Bar",
    "Block",
    "Chart",
    "Gantt",
    "Heatmap",
    "Lines",
    "Note",
    "Report",
    "Scatter",
    "Section",
    "Series",
    "Table",
    "TierDiagram",
]


@dataclass(frozen=True)
class Series:
    """One named line or point set; ``text`` is hover text per point (optional)."""

    name: str
    x: tuple[float | str, ...]
    y: tuple[float, ...]
    text: tuple[str, ...] = ()
    highlight: bool = False  # drawn bold / on top (the tuner's choice, a Pareto front)
    markers_only: bool = False


@dataclass(frozen=True)
class Bar:
    """Horizontal bars: ``labels`` against ``values`` (``groups`` colours bars by kind)."""

    labels: tuple[str, ...]
    values: tuple[float, ...]
    groups: tuple[str, ...] = ()
    text: tuple[str, ...] = ()  # a label at the end of each bar


@dataclass(frozen=True)
class Lines:
    """Lines (or points) over a shared x axis."""

    series: tuple[Series, ...]
    log_x: bool = False
    log_y: bool = False


@dataclass(frozen=True)
class Scatter:
    """Points; highlighted series are drawn on top and joined (a Pareto front)."""

    series: tuple[Series, ...]
    log_x: bool = False
    log_y: bool = False


@dataclass(frozen=True)
class Gantt:
    """Intervals per row (``rows``): ``(row, start, end, group, hover)`` each."""

    rows: tuple[str, ...]
    bars: tuple[tuple[str, float, float, str, str], ...]


@dataclass(frozen=True)
class Heatmap:
    """``z[row][column]`` over ``rows`` × ``columns`` (numeric column centres)."""

    rows: tuple[str, ...]
    columns: tuple[float, ...]
    z: tuple[tuple[float, ...], ...]
    zmax: float = 1.0


@dataclass(frozen=True)
class TierDiagram:
    """A fabric as stacked tiers: ``(name, count)`` bottom-up, and the cables between them."""

    tiers: tuple[tuple[str, int], ...]
    cables: tuple[int, ...]  # cables[i] joins tiers[i] and tiers[i + 1]


ChartBody = Bar | Lines | Scatter | Gantt | Heatmap | TierDiagram


@dataclass(frozen=True)
class Chart:
    """A titled figure with a stable ``id`` (the HTML div id and the PNG file name)."""

    id: str
    title: str
    body: ChartBody
    x_title: str = ""
    y_title: str = ""
    caption: str = ""
    height: int = 420


@dataclass(frozen=True)
class Table:
    """A table of text cells; ``numeric`` columns are right-aligned."""

    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    numeric: tuple[int, ...] = ()
    caption: str = ""


@dataclass(frozen=True)
class Note:
    """A paragraph of text."""

    text: str


Block = Chart | Table | Note


@dataclass(frozen=True)
class Section:
    """A titled part of the page (``id`` is its anchor)."""

    id: str
    title: str
    blocks: tuple[Block, ...]


@dataclass(frozen=True)
class Report:
    """A whole report: what was simulated, its key numbers, and the sections."""

    title: str
    subtitle: tuple[str, ...]
    key_numbers: tuple[tuple[str, str], ...]
    sections: tuple[Section, ...]
    kind: str = "result"  # result | sweep
    generated: str | None = None  # a timestamp only when the caller passes one

    def charts(self) -> list[Chart]:
        """Every chart, in page order."""
        return [b for s in self.sections for b in s.blocks if isinstance(b, Chart)]
