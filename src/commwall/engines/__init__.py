"""Engines: one protocol (:mod:`~commwall.engines.base`), several fidelities; ``get_engine(name)``
(:mod:`~commwall.engines.registry`) returns one by name."""

from commwall.engines.analytic import AnalyticEngine
from commwall.engines.base import Engine, PhaseResult, Result
from commwall.engines.registry import get_engine

__all__ = ["AnalyticEngine", "Engine", "PhaseResult", "Result", "get_engine"]
