"""Predicted versus measured: commwall's models against bundled public measurements."""

from commwall.validation.published import (
    Comparison,
    Measurement,
    compare,
    load_measurements,
    measurement_cluster,
)

__all__ = ["Comparison", "Measurement", "compare", "load_measurements", "measurement_cluster"]
