"""Training workloads: the model zoo, memory, and the training-step timeline."""

from commwall.workload.errors import WorkloadError
from commwall.workload.memory import MemoryBreakdown, memory_per_gpu
from commwall.workload.models import ModelSpec, UnknownModelError, get_model, list_models

__all__ = [
    "MemoryBreakdown",
    "ModelSpec",
    "UnknownModelError",
    "WorkloadError",
    "get_model",
    "list_models",
    "memory_per_gpu",
]
