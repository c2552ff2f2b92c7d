"""Drawings render and are not blank (small fabrics in full, large ones by tier)."""

from __future__ import annotations

from pathlib import Path

import pytest

from commwall.topology import fat_tree, leaf_spine
from commwall.topology.draw import DrawError, draw

pytest.importorskip("matplotlib")


def _not_blank(path: Path) -> bool:
    import matplotlib.image as mpimg

    pixels = mpimg.imread(path)
    return bool(pixels.std() > 0.01)


def test_small_fabric_is_drawn_in_full(tmp_path: Path) -> None:
    out = draw(leaf_spine(8), tmp_path / "small.png")
    assert out.stat().st_size > 5_000 and _not_blank(out)


def test_large_fabric_is_drawn_by_tier(tmp_path: Path) -> None:
    out = draw(fat_tree(64), tmp_path / "large.png")
    assert out.stat().st_size > 5_000 and _not_blank(out)


def test_bad_suffix_is_refused(tmp_path: Path) -> None:
    with pytest.raises(DrawError, match=r"must end in \.png, \.svg or \.pdf"):
        draw(leaf_spine(8), tmp_path / "x.jpg")
