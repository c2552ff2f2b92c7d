"""Engines: one protocol, several fidelities. ``get_engine(name)`` returns one by name."""

from commwall.engines.analytic import AnalyticEngine
from commwall.engines.base import Engine, PhaseResult, Result, get_engine

__all__ = ["AnalyticEngine", "Engine", "PhaseResult", "Result", "get_engine"]
