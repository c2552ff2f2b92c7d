"""Typed, validated catalog parts: one frozen pydantic model per kind of hardware.

Quantities are stored as floats in SI base units (bytes, bytes/s, s, W, m); on input they also
accept unit strings, read by :mod:`commwall.units` (``"400 Gb/s"``, ``"700 W"``, ``"130 ns"``).
Every part carries its provenance: ``source`` (one citation for all numbers, or a mapping
field -> citation) and ``estimate`` (fields whose numbers are our estimates). Joins between parts
(a GPU's NVLink bandwidth needs its NVLink generation) live in :mod:`commwall.catalog.loader`.

>>> nic = NIC(name="my-nic", description="example", rate="400 Gb/s", ports=1, pcie="gen5",
...           pcie_lanes=16, fabrics=["ib"], latency="500 ns", power="25 W", source="made up")
>>> nic.rate
50000000000.0
"""

from __future__ import annotations

import difflib
import types
from collections.abc import Callable, Mapping
from typing import Annotated, Any, ClassVar, Final, Literal, Self, Union, get_args, get_origin

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from commwall import units
from commwall.errors import CommwallError
from commwall.scenario import TopologyKind  # one definition: the kinds a cluster is built with

__all__ = [
    "GPU",
    "NIC",
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
    "Switch",
]


class CatalogError(CommwallError, ValueError):
    """A catalog lookup, override or data file is wrong; the message says what and how to fix it."""


def close_matches(word: str, allowed: list[str]) -> str:
    """``" (did you mean 'x'?)"`` for the closest allowed words, or ``""`` when none is close."""
    containing = [a for a in allowed if word and word.lower() in a.lower()]  # 'h100' -> 'h100-sxm'
    similar = difflib.get_close_matches(word, allowed, n=3, cutoff=0.5)
    found = (containing + [m for m in similar if m not in containing])[:3]
    if not found:
        return ""
    return " (did you mean " + " or ".join(f"'{m}'" for m in found) + "?)"


# --------------------------------------------------------------------------------------------
# quantity types: floats in SI base units, unit strings accepted on input


def _unit(parse: Callable[[str | float | int], float]) -> BeforeValidator:
    def convert(value: object) -> object:
        # None (an absent optional value) and non-scalars go on to pydantic's own type check
        if isinstance(value, str | int | float):
            return parse(value)
        return value

    # the JSON schema (for editors) shows what YAML may hold: a number or a unit string
    return BeforeValidator(convert, json_schema_input_type=float | str)


Bandwidth = Annotated[float, _unit(units.parse_bandwidth)]
Size = Annotated[float, _unit(units.parse_size)]
Time = Annotated[float, _unit(units.parse_time)]
Power = Annotated[float, _unit(units.parse_power)]
Length = Annotated[float, _unit(units.parse_length)]

Fabric = Literal["ib", "roce", "ethernet"]
Precision = Literal["fp64", "tf32", "bf16", "fp16", "fp8", "fp6", "fp4", "int8"]
OpticKind = Literal["dsp", "lpo", "lro", "cpo", "dac", "acc", "aec", "aoc"]

_NAME_PATTERN: Final = r"^[a-z0-9][a-z0-9.\-]*$"
_PROVENANCE_FIELDS: Final = frozenset({"name", "description", "source", "estimate"})


def _strip_annotated(tp: Any) -> Any:
    return get_args(tp)[0] if get_origin(tp) is Annotated else tp


def _strip_optional(tp: Any) -> Any:
    if get_origin(tp) in (Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return _strip_annotated(args[0])
    return _strip_annotated(tp)


def _is_number_type(tp: Any) -> bool:
    return tp in (int, float)


# --------------------------------------------------------------------------------------------
# base


class Part(BaseModel):
    """Fields every catalog part has: its name, what it is, and where its numbers come from."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    part_kind: ClassVar[str] = "part"
    #: field -> kind of the part it names (checked by the loader)
    references: ClassVar[Mapping[str, str]] = {}

    name: str = Field(
        description="Catalog key: lower case letters, digits, '-' and '.', e.g. 'h100-sxm'.",
        pattern=_NAME_PATTERN,
    )
    description: str = Field(description="What the part is, in one or two lines.", min_length=1)
    source: str | dict[str, str] = Field(
        description=(
            "Where the numbers come from: one citation covering every number, or a mapping from "
            "field name (or 'field.key' for one entry of a mapping field, or 'default' for every "
            "field not named) to a citation. Tags follow shared/reference (e.g. 'hardware.md §5')."
        ),
    )
    estimate: tuple[str, ...] = Field(
        default=(),
        description="Fields (or 'field.key') holding our estimates rather than published values.",
    )

    @classmethod
    def numeric_fields(cls) -> tuple[str, ...]:
        """Names of the fields holding numbers (or mappings of numbers); booleans excluded."""
        names = []
        for name, info in cls.model_fields.items():
            tp = _strip_optional(info.annotation)
            is_mapping = get_origin(tp) is dict
            if _is_number_type(_strip_annotated(get_args(tp)[1]) if is_mapping else tp):
                names.append(name)
        return tuple(names)

    @classmethod
    def _mapping_fields(cls) -> frozenset[str]:
        return frozenset(
            n for n in cls.numeric_fields() if get_origin(cls.model_fields[n].annotation) is dict
        )

    def source_for(self, field: str) -> str:
        """The citation for ``field`` (``'field.key'`` for one entry of a mapping field)."""
        if isinstance(self.source, str):
            return self.source
        base = field.split(".", 1)[0]
        for key in (field, base, "default"):
            if key in self.source:
                return self.source[key]
        raise CatalogError(f"{self.part_kind} '{self.name}': no source given for '{field}'")

    def is_estimate(self, field: str) -> bool:
        """Whether ``field`` (or ``'field.key'``) is marked as an estimate."""
        return field in self.estimate or field.split(".", 1)[0] in self.estimate

    def _check_field_ref(self, ref: str, what: str) -> None:
        fields = sorted(set(type(self).model_fields) - _PROVENANCE_FIELDS)
        base, _, key = ref.partition(".")
        if base not in fields:
            raise CatalogError(
                f"{what} names unknown field '{base}'{close_matches(base, fields)}; "
                f"fields: {', '.join(fields)}"
            )
        if key:
            value = getattr(self, base)
            if base not in self._mapping_fields() or key not in value:
                keys = ", ".join(value) if isinstance(value, dict) else "none"
                raise CatalogError(
                    f"{what} names '{ref}', but {base} has no entry '{key}' ({keys})"
                )

    @model_validator(mode="after")
    def _check_provenance(self) -> Self:
        if isinstance(self.source, dict):
            for key in self.source:
                if key != "default":
                    self._check_field_ref(key, "source")
        for ref in self.estimate:
            self._check_field_ref(ref, "estimate")
        missing = self.unsourced_fields()
        if missing:
            raise CatalogError(
                f"no source for {', '.join(missing)}: add them to 'source' (or a 'default' entry)"
            )
        return self

    def unsourced_fields(self) -> list[str]:
        """Numeric fields with a value but no citation (empty for a valid part)."""
        if isinstance(self.source, str) or "default" in self.source:
            return []
        missing = []
        for name in self.numeric_fields():
            value = getattr(self, name)
            if value is None or name in self.source:
                continue
            if isinstance(value, dict):
                missing += [f"{name}.{k}" for k in value if f"{name}.{k}" not in self.source]
            else:
                missing.append(name)
        return missing


# --------------------------------------------------------------------------------------------
# parts

_PRECISION_HELP: Final = "fp64, tf32, bf16, fp16, fp8, fp6, fp4, int8"


class GPU(Part):
    """An accelerator: dense peak compute per precision, HBM, power, and its links."""

    part_kind: ClassVar[str] = "gpu"
    references: ClassVar[Mapping[str, str]] = {"nvlink": "nvlink", "pcie": "pcie"}

    sm: int = Field(
        description="CUDA compute capability as an integer, major*10 + minor (80 A100, 90 H100).",
        ge=10,
        le=999,
    )
    peak_tflops: dict[Precision, Annotated[float, Field(gt=0)]] = Field(
        description=(
            f"Dense (no 2:4 sparsity) tensor-core peak per precision, in TFLOPS (1e12 FLOP/s); "
            f"keys among {_PRECISION_HELP}."
        ),
        min_length=1,
    )
    hbm: Size = Field(description="HBM capacity usable per GPU, bytes (GB = 1e9 bytes).", gt=0)
    hbm_bandwidth: Bandwidth = Field(description="HBM bandwidth, bytes/s.", gt=0)
    tdp: Power = Field(description="Thermal design power (board max), W.", gt=0)
    nvlink: str = Field(description="Name of the NVLink generation part (kind 'nvlink').")
    nvlink_links: int = Field(description="NVLink links per GPU (count).", ge=0, le=1024)
    pcie: str = Field(description="Name of the GPU's PCIe generation part (kind 'pcie').")

    def peak_flops(self, precision: str) -> float:
        """Dense peak compute at ``precision`` in FLOP/s.

        >>> from commwall.catalog import load_catalog
        >>> load_catalog().gpu("h100-sxm").peak_flops("bf16")
        989400000000000.0
        """
        for key, tflops in self.peak_tflops.items():
            if key == precision:
                return tflops * 1e12
        known = self.precisions
        raise CatalogError(
            f"gpu '{self.name}' has no peak rate for precision '{precision}'"
            f"{close_matches(precision, known)}; known for this gpu: {', '.join(known)}"
        )

    @property
    def precisions(self) -> list[str]:
        """Precisions this GPU has a peak rate for."""
        return sorted(self.peak_tflops)


class NVLinkGen(Part):
    """A scale-up link generation (NVLink 3/4/5): per-link rates, lane structure, hop latency."""

    part_kind: ClassVar[str] = "nvlink"

    per_link_bandwidth: Bandwidth = Field(
        description="Payload bandwidth of one link, per direction, bytes/s.", gt=0
    )
    nccl_link_bandwidth: Bandwidth = Field(
        description=(
            "NCCL's effective per-link bandwidth constant (topo.h SMxx_NVLINK_BW), bytes/s per "
            "link per direction; NCCL multiplies it by the link count."
        ),
        gt=0,
    )
    lanes_per_link: int = Field(description="Differential lanes per link per direction.", ge=1)
    lane_rate: Bandwidth = Field(description="Payload rate of one lane, bytes/s.", gt=0)
    latency: Time = Field(description="One-way latency added per hop through an NVSwitch, s.", ge=0)

    @property
    def signalling_bandwidth(self) -> float:
        """lanes_per_link × lane_rate, bytes/s per direction (should match per_link_bandwidth)."""
        return self.lanes_per_link * self.lane_rate


class NVSwitch(Part):
    """An NVSwitch chip: port count, aggregate bandwidth, in-switch reduction (NVLS)."""

    part_kind: ClassVar[str] = "nvswitch"
    references: ClassVar[Mapping[str, str]] = {"nvlink": "nvlink"}

    nvlink: str = Field(description="Name of the NVLink generation of its ports (kind 'nvlink').")
    ports: int = Field(description="NVLink ports per chip (count).", ge=1)
    bandwidth: Bandwidth = Field(
        description=(
            "Aggregate bidirectional switching bandwidth as vendors quote it "
            "(ports × per-link bidirectional), bytes/s; per direction it is half."
        ),
        gt=0,
    )
    nvls: bool = Field(description="Supports NVLink SHARP (in-switch reduction, NCCL NVLS).")

    @property
    def per_direction_bandwidth(self) -> float:
        """Aggregate switching bandwidth per direction, bytes/s."""
        return self.bandwidth / 2


_PCIE_WIDTHS: Final = (1, 2, 4, 8, 16, 32)


class PCIeGen(Part):
    """A PCIe generation: transfer rate, encoding, x16 bandwidth and NCCL's model of it."""

    part_kind: ClassVar[str] = "pcie"

    transfer_rate_gt_s: float = Field(description="Transfer rate per lane, GT/s.", gt=0)
    encoding: str = Field(description="Line encoding, e.g. '128b/130b NRZ'.", min_length=1)
    x16_bandwidth: Bandwidth = Field(
        description="x16 link bandwidth per direction after line encoding, bytes/s.", gt=0
    )
    nccl_x16_bandwidth: Bandwidth = Field(
        description="NCCL's x16 PCIe link bandwidth (width × speed / 80 GB/s, topo.cc), bytes/s.",
        gt=0,
    )

    def bandwidth(self, lanes: int = 16) -> float:
        """Per-direction bandwidth of a link ``lanes`` wide, bytes/s."""
        return self.x16_bandwidth * self._width(lanes) / 16

    def nccl_bandwidth(self, lanes: int = 16) -> float:
        """NCCL's bandwidth for a link ``lanes`` wide, bytes/s."""
        return self.nccl_x16_bandwidth * self._width(lanes) / 16

    def _width(self, lanes: int) -> int:
        if lanes not in _PCIE_WIDTHS:
            raise CatalogError(
                f"PCIe link width must be one of {', '.join(map(str, _PCIE_WIDTHS))}, got {lanes}"
            )
        return lanes


class NIC(Part):
    """A network adapter (NIC, SuperNIC or DPU): ports, host link, fabrics, latency, power."""

    part_kind: ClassVar[str] = "nic"
    references: ClassVar[Mapping[str, str]] = {"pcie": "pcie"}

    rate: Bandwidth = Field(description="Line rate of one network port, bytes/s.", gt=0)
    ports: int = Field(description="Network ports on the adapter (count).", ge=1)
    pcie: str = Field(description="Name of the host PCIe generation (kind 'pcie').")
    pcie_lanes: int = Field(
        description="Width of the PCIe data path toward host/GPU, lanes (1–32).", ge=1, le=32
    )
    fabrics: tuple[Fabric, ...] = Field(
        description="Fabrics it speaks: any of ib, roce, ethernet.", min_length=1
    )
    latency: Time = Field(
        description="One-way latency the NIC adds (pipeline + DMA), s, per traversal.", ge=0
    )
    power: Power = Field(description="Adapter power without optics, W.", gt=0)

    @property
    def aggregate_rate(self) -> float:
        """ports × rate, bytes/s per direction."""
        return self.ports * self.rate


class Switch(Part):
    """A scale-out switch (box, or a generic 1-ASIC box for merchant silicon)."""

    part_kind: ClassVar[str] = "switch"

    fabric: Literal["ib", "ethernet"] = Field(description="Switch family: ib or ethernet.")
    capacity: Bandwidth = Field(
        description=(
            "Switching capacity per direction (= ports × port_rate), bytes/s. Vendors quote "
            "InfiniBand boxes bidirectionally (see bidirectional_capacity)."
        ),
        gt=0,
    )
    ports: int = Field(description="Ports at port_rate (count): the radix.", ge=1)
    port_rate: Bandwidth = Field(description="Rate of one port, bytes/s.", gt=0)
    latency: Time = Field(description="Port-to-port latency (cut-through, unloaded), s.", ge=0)
    buffer: Size | None = Field(
        default=None, description="Packet buffer, bytes; None where unknown.", gt=0
    )
    power: Power | None = Field(
        default=None,
        description="Switch power without pluggable optics, W; None where unknown.",
        gt=0,
    )
    cost_usd: float | None = Field(
        default=None, description="Order-of-magnitude price, US dollars; None where unknown.", ge=0
    )
    sharp: bool = Field(default=False, description="In-network reduction (SHARP).")
    cell_fabric: bool = Field(
        default=False, description="Cell-sprayed, credit-scheduled fabric (Jericho/Ramon style)."
    )

    @property
    def bidirectional_capacity(self) -> float:
        """2 × capacity, bytes/s: how InfiniBand vendors quote switch capacity."""
        return 2 * self.capacity


class Optic(Part):
    """A transceiver or cable: class, rate, power per end, reach, latency per end, cost."""

    part_kind: ClassVar[str] = "optic"

    kind: OpticKind = Field(
        description=(
            "dsp (retimed pluggable), lpo (linear pluggable), lro (linear receive), "
            "cpo (co-packaged), dac (passive copper), acc (active copper, redriver), "
            "aec (active electrical, retimed), aoc (active optical cable)."
        )
    )
    rate: Bandwidth = Field(description="Aggregate rate of the module or cable, bytes/s.", gt=0)
    power: Power = Field(
        description="Power per module (transceivers) or per end (cables), W.", ge=0
    )
    reach: Length = Field(description="Maximum supported length, m.", gt=0)
    latency: Time = Field(
        description="Latency added per end, s (propagation and FEC are modelled elsewhere).", ge=0
    )
    cost_usd: float | None = Field(
        default=None,
        description="Order-of-magnitude price per module or cable end, US dollars.",
        ge=0,
    )

    @property
    def energy_per_bit(self) -> float:
        """power / rate, J/bit."""
        return self.power / (self.rate * 8)


class ClusterPreset(Part):
    """A cluster recipe: the node (GPU, NVLink domain, NICs, PCIe) and its scale-out fabric."""

    part_kind: ClassVar[str] = "preset"
    references: ClassVar[Mapping[str, str]] = {
        "gpu": "gpu",
        "nvswitch": "nvswitch",
        "nic": "nic",
        "switch": "switch",
        "pcie": "pcie",
    }

    gpu: str = Field(description="Name of the GPU part (kind 'gpu').")
    gpus_per_node: int = Field(description="GPUs per node or compute tray (count).", ge=1)
    scale_up_domain: int = Field(
        description="GPUs sharing one NVLink/NVSwitch domain (8 for HGX, 72 for NVL72).", ge=1
    )
    nvswitch: str = Field(description="Name of the NVSwitch chip (kind 'nvswitch').")
    nvswitch_count: int = Field(description="NVSwitch chips per scale-up domain (count).", ge=1)
    nics_per_node: int = Field(description="Compute-fabric NICs per node (count).", ge=1)
    nic: str = Field(description="Name of the compute NIC (kind 'nic').")
    fabric: Fabric = Field(description="Scale-out fabric: ib, roce or ethernet.")
    switch: str = Field(description="Name of the scale-out switch (kind 'switch').")
    pcie: str = Field(description="PCIe generation of the GPU↔NIC path (kind 'pcie').")
    gpudirect_rdma: bool = Field(
        description="NICs read/write GPU memory directly (GPUDirect RDMA)."
    )
    cpu: Literal["intel", "amd", "other"] = Field(
        default="intel",
        description="Host CPU vendor (NCCL's network overhead and LL cap row depend on it).",
    )
    topology: TopologyKind = Field(description="Default scale-out topology kind.")

    @model_validator(mode="after")
    def _check_shape(self) -> Self:
        if self.scale_up_domain % self.gpus_per_node:
            raise CatalogError(
                f"scale_up_domain ({self.scale_up_domain}) must be a whole number of nodes of "
                f"gpus_per_node ({self.gpus_per_node}) GPUs"
            )
        return self

    @property
    def nodes_per_scale_up_domain(self) -> int:
        """Nodes (trays) in one NVLink domain."""
        return self.scale_up_domain // self.gpus_per_node

    @property
    def nics_per_gpu(self) -> float:
        """Compute NICs per GPU."""
        return self.nics_per_node / self.gpus_per_node
