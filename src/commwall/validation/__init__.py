"""Predicted versus measured: commwall's models against bundled public measurements."""

from commwall.validation.published import (
    Comparison,
    Measurement,
    compare,
    load_measurements,
    measurement_cluster,
)
from commwall.validation.training import ValidationDataError

__all__ = [
    "Comparison",
    "Measurement",
    "ValidationDataError",
    "compare",
    "load_measurements",
    "measurement_cluster",
]
