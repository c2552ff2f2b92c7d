"""commwall: where a distributed training step's time goes, and what a different network would change."""

__version__ = "0.1.0"
