"""Drawings of fabrics: small ones node by node, large ones as tiers with cable counts.

matplotlib is an optional extra (``pip install 'commwall[plot]'``); without it :func:`draw`
raises :class:`DrawError` with the install hint.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from commwall.topology.graph import Topology, TopologyError

#: Above this many nodes a drawing shows tiers, not nodes.
FULL_DRAWING_MAX_NODES = 600

_TIER_NAMES = {-1: "scale-up", 0: "endpoints", 1: "leaf", 2: "spine", 3: "core"}


class DrawError(TopologyError):
    """The drawing cannot be made (matplotlib missing, or a bad path)."""


def _pyplot() -> Any:
    from commwall.mpl import pyplot

    return pyplot("drawing a topology", DrawError)


def _positions(topo: Topology) -> tuple[np.ndarray, np.ndarray]:
    """x in [0, 1] spread within each tier, y = tier."""
    y = topo.node_tier.astype(float)
    x = np.zeros(topo.n_nodes)
    for tier in np.unique(topo.node_tier):
        idx = np.flatnonzero(topo.node_tier == tier)
        x[idx] = (np.arange(idx.size) + 0.5) / idx.size
    return x, y


def draw(topo: Topology, path: str | Path, *, full: bool | None = None) -> Path:
    """Draw ``topo`` to ``path`` (PNG, SVG or PDF by suffix) and return the path.

    ``full`` draws every node and cable (default: when the fabric has at most
    :data:`FULL_DRAWING_MAX_NODES` nodes); otherwise one box per tier with its switch count and
    the cables between tiers.
    """
    plt = _pyplot()
    out = Path(path)
    if out.suffix.lower() not in (".png", ".svg", ".pdf"):
        raise DrawError(f"{str(out)!r}: a drawing must end in .png, .svg or .pdf")
    whole = topo.n_nodes <= FULL_DRAWING_MAX_NODES if full is None else full
    fig, ax = plt.subplots(figsize=(12, 6), dpi=110)
    if whole:
        _draw_nodes(ax, topo)
    else:
        _draw_tiers(ax, topo)
    ax.set_title(topo.name)
    ax.axis("off")
    try:
        fig.savefig(out, bbox_inches="tight")
    except OSError as err:
        raise DrawError(f"cannot write {str(out)!r}: {err.strerror}") from None
    finally:
        plt.close(fig)
    return out


def _draw_nodes(ax: Any, topo: Topology) -> None:
    x, y = _positions(topo)
    up = slice(0, None, 2)  # one directed link per cable
    src, dst = topo.link_src[up], topo.link_dst[up]
    from matplotlib.collections import LineCollection

    segments = np.stack([np.column_stack([x[src], y[src]]), np.column_stack([x[dst], y[dst]])], 1)

    ax.add_collection(LineCollection(list(segments), linewidths=0.4, colors="0.55", alpha=0.6))
    endpoints = topo.node_tier == 0
    ax.scatter(x[endpoints], y[endpoints], s=8, c="tab:green", label="endpoints", zorder=3)
    switches = ~endpoints
    ax.scatter(x[switches], y[switches], s=30, c="tab:blue", marker="s", label="switches", zorder=3)
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(float(y.min()) - 0.5, float(y.max()) + 0.5)
    ax.legend(loc="upper right", fontsize=8)


def _draw_tiers(ax: Any, topo: Topology) -> None:
    from matplotlib.patches import FancyBboxPatch

    counts = topo.counts()
    tiers = sorted({0, *counts.switches})
    for level in tiers:
        n = counts.endpoints if level == 0 else counts.switches[level]
        label = f"{_TIER_NAMES.get(level, f'tier {level}')}\n{n:,}"
        colour = "tab:green" if level == 0 else "tab:blue"
        box = FancyBboxPatch(
            (0.3, level - 0.2), 0.4, 0.4, boxstyle="round,pad=0.02", facecolor=colour, alpha=0.35
        )
        ax.add_patch(box)
        ax.text(0.5, level, label, ha="center", va="center", fontsize=11)
    for level, cables in counts.cables.items():
        ax.annotate(
            "", xy=(0.5, level - 0.2), xytext=(0.5, level - 0.8),
            arrowprops={"arrowstyle": "-", "linewidth": 1 + np.log10(max(cables, 1))},
        )  # fmt: skip
        ax.text(0.52, level - 0.5, f"{cables:,} cables", va="center", fontsize=9)
    ax.set_xlim(0, 1)
    ax.set_ylim(-0.5, max(tiers) + 0.5)
