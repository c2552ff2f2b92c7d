"""matplotlib for files only (the Agg backend: no display on servers or in CI), imported on
demand so that commwall itself never needs it."""

from __future__ import annotations

from typing import Any


def pyplot(need: str, error: type[Exception]) -> Any:
    """``matplotlib.pyplot`` on the Agg backend, or ``error`` saying that ``need`` (what the
    caller draws, say "drawing charts as PNG") needs matplotlib and how to install it."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise error(
            f"{need} needs matplotlib: pip install 'commwall[plot]' (or pip install matplotlib)"
        ) from None
    return plt
