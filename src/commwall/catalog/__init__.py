"""Real parts as data: GPUs, NVLink/NVSwitch, PCIe, NICs, switches, optics and cluster presets.

Every number carries its source (``part.source_for(field)``); estimates are flagged
(``part.is_estimate(field)``). Quantities are floats in SI base units (bytes, bytes/s, s, W, m).

>>> from commwall.catalog import load_catalog
>>> cat = load_catalog()
>>> cat.preset("dgx-h100").nics_per_node
8
>>> cat.gpu("h100-sxm").peak_flops("bf16") / 1e12
989.4
"""

from commwall.catalog.loader import (
    KIND_FILES,
    KIND_MODELS,
    Catalog,
    PresetParts,
    load_catalog,
)
from commwall.catalog.models import (
    GPU,
    NIC,
    CatalogError,
    ClusterPreset,
    Fabric,
    NVLinkGen,
    NVSwitch,
    Optic,
    OpticKind,
    Part,
    PCIeGen,
    Precision,
    Switch,
)

__all__ = [
    "GPU",
    "KIND_FILES",
    "KIND_MODELS",
    "NIC",
    "Catalog",
    "CatalogError",
    "ClusterPreset",
    "Fabric",
    "NVLinkGen",
    "NVSwitch",
    "Optic",
    "OpticKind",
    "PCIeGen",
    "Part",
    "Precision",
    "PresetParts",
    "Switch",
    "load_catalog",
]
