"""The engines by name: :func:`get_engine` (kept apart from the protocol in
:mod:`commwall.engines.base`, which imports no implementation). The names are the scenario's
(:data:`commwall.scenario.ALL_ENGINES`)."""

from __future__ import annotations

from typing import Any

from commwall.engines.base import Engine, EngineInputError
from commwall.scenario import ALL_ENGINES

__all__ = ["get_engine"]


def get_engine(name: str, **options: Any) -> Engine:
    """The engine called ``name`` (``analytic``, ``flow`` or ``packet``); ``options`` go to its
    constructor. The flow and packet engines load on demand (numpy/scipy heavy)."""
    if name == "analytic":
        from commwall.engines.analytic import AnalyticEngine

        return AnalyticEngine(**options)
    if name == "flow":
        from commwall.engines.flow.engine import FlowEngine

        return FlowEngine(**options)
    if name == "packet":
        from commwall.engines.packet.engine import PacketEngine

        return PacketEngine(**options)
    raise EngineInputError(f"engine: {name!r} is unknown; allowed: {', '.join(ALL_ENGINES)}")
