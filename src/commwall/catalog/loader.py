"""Load the parts catalog from its YAML files, look parts up, join them, and override them.

>>> cat = load_catalog()
>>> cat.kinds()
['gpu', 'nvlink', 'nvswitch', 'pcie', 'nic', 'switch', 'optic', 'preset']
>>> cat.nvlink_bandwidth(cat.gpu("h100-sxm"))  # bytes/s per direction
450000000000.0
>>> cat.with_overrides(cat.gpu("h100-sxm"), {"tdp": "800 W"}).tdp
800.0
"""

from __future__ import annotations

import functools
import importlib.resources
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final, TypeVar

import yaml
from pydantic import ValidationError

from commwall.catalog.models import (
    GPU,
    NIC,
    CatalogError,
    ClusterPreset,
    NVLinkGen,
    NVSwitch,
    Optic,
    Part,
    PCIeGen,
    Switch,
    close_matches,
)

__all__ = ["KIND_FILES", "KIND_MODELS", "Catalog", "CatalogError", "PresetParts", "load_catalog"]

#: kind -> YAML file under catalog/data, in the order kinds() lists them
KIND_FILES: Final[Mapping[str, str]] = MappingProxyType(
    {
        "gpu": "gpus.yaml",
        "nvlink": "nvlink.yaml",
        "nvswitch": "nvswitch.yaml",
        "pcie": "pcie.yaml",
        "nic": "nics.yaml",
        "switch": "switches.yaml",
        "optic": "optics.yaml",
        "preset": "presets.yaml",
    }
)
KIND_MODELS: Final[Mapping[str, type[Part]]] = MappingProxyType(
    {
        "gpu": GPU,
        "nvlink": NVLinkGen,
        "nvswitch": NVSwitch,
        "pcie": PCIeGen,
        "nic": NIC,
        "switch": Switch,
        "optic": Optic,
        "preset": ClusterPreset,
    }
)

_OVERRIDE_SOURCE: Final = "user override"
_FABRIC_SWITCH: Final[Mapping[str, str]] = {"ib": "ib", "roce": "ethernet", "ethernet": "ethernet"}

P = TypeVar("P", bound=Part)


def _validation_message(err: ValidationError) -> str:
    """One line per problem: ``field: message`` (no pydantic URLs, no traceback)."""
    lines = []
    for e in err.errors(include_url=False):
        loc = ".".join(str(x) for x in e["loc"]) or "(entry)"
        msg = str(e["msg"]).removeprefix("Value error, ")
        lines.append(f"{loc}: {msg}")
    return "; ".join(lines)


@dataclass(frozen=True)
class PresetParts:
    """A preset with every part it names resolved."""

    preset: ClusterPreset
    gpu: GPU
    nvlink: NVLinkGen
    nvswitch: NVSwitch
    nic: NIC
    switch: Switch
    pcie: PCIeGen


class Catalog:
    """All parts, by kind and name. Build with :func:`load_catalog` or the ``from_*`` methods."""

    def __init__(self, parts: Mapping[str, Mapping[str, Part]]) -> None:
        for kind, by_name in parts.items():
            if kind not in KIND_MODELS:
                raise CatalogError(f"unknown part kind '{kind}'; known: {', '.join(KIND_FILES)}")
            for name, part in by_name.items():
                if not isinstance(part, KIND_MODELS[kind]) or part.name != name:
                    raise CatalogError(
                        f"{kind} '{name}': expected a {KIND_MODELS[kind].__name__} "
                        f"named '{name}', got {type(part).__name__} '{part.name}'"
                    )
        self._parts: Mapping[str, Mapping[str, Part]] = MappingProxyType(
            {kind: MappingProxyType(dict(parts.get(kind, {}))) for kind in KIND_FILES}
        )
        for kind, by_name in self._parts.items():
            for part in by_name.values():
                self._check_part(part, f"{KIND_FILES[kind]}: entry '{part.name}'")

    # ---- construction ---------------------------------------------------------------------

    @classmethod
    def from_yaml_texts(cls, texts: Mapping[str, str]) -> Catalog:
        """Build from YAML text per file name (``{"gpus.yaml": "...", ...}``; missing = empty)."""
        unknown = sorted(set(texts) - set(KIND_FILES.values()))
        if unknown:
            raise CatalogError(
                f"unknown catalog file(s) {', '.join(unknown)}; "
                f"expected: {', '.join(KIND_FILES.values())}"
            )
        parts = {
            kind: _parse_file(filename, texts.get(filename, ""), KIND_MODELS[kind])
            for kind, filename in KIND_FILES.items()
        }
        return cls(parts)

    @classmethod
    def from_directory(cls, path: str | Path) -> Catalog:
        """Build from a directory holding (some of) the catalog's YAML files."""
        root = Path(path)
        texts = {
            name: (root / name).read_text(encoding="utf-8")
            for name in KIND_FILES.values()
            if (root / name).is_file()
        }
        return cls.from_yaml_texts(texts)

    # ---- lookup ---------------------------------------------------------------------------

    def kinds(self) -> list[str]:
        """The part kinds: gpu, nvlink, nvswitch, pcie, nic, switch, optic, preset."""
        return list(KIND_FILES)

    def names(self, kind: str) -> list[str]:
        """Sorted names of the parts of ``kind``."""
        return sorted(self._kind(kind))

    def parts(self, kind: str) -> list[Part]:
        """The parts of ``kind``, sorted by name."""
        by_name = self._kind(kind)
        return [by_name[n].model_copy(deep=True) for n in sorted(by_name)]

    def get(self, kind: str, name: str) -> Part:
        """The part ``name`` of ``kind``; CatalogError naming close matches if there is none."""
        by_name = self._kind(kind)
        part = by_name.get(name)
        if part is None:
            known = sorted(by_name)
            raise CatalogError(
                f"unknown {kind} '{name}'{close_matches(name, known)}; "
                f"known {kind} names: {', '.join(known)}"
            )
        # The catalog is cached process-wide; a deep copy keeps a caller's edit of a nested
        # mapping (peak_tflops, source) from leaking into every later lookup.
        return part.model_copy(deep=True)

    def gpu(self, name: str) -> GPU:
        return self._typed("gpu", name, GPU)

    def nvlink(self, name: str) -> NVLinkGen:
        return self._typed("nvlink", name, NVLinkGen)

    def nvswitch(self, name: str) -> NVSwitch:
        return self._typed("nvswitch", name, NVSwitch)

    def pcie(self, name: str) -> PCIeGen:
        return self._typed("pcie", name, PCIeGen)

    def nic(self, name: str) -> NIC:
        return self._typed("nic", name, NIC)

    def switch(self, name: str) -> Switch:
        return self._typed("switch", name, Switch)

    def optic(self, name: str) -> Optic:
        return self._typed("optic", name, Optic)

    def preset(self, name: str) -> ClusterPreset:
        return self._typed("preset", name, ClusterPreset)

    # ---- joins ----------------------------------------------------------------------------

    def nvlink_bandwidth(self, gpu: GPU) -> float:
        """A GPU's total NVLink bandwidth per direction: links × per-link bandwidth, bytes/s."""
        return gpu.nvlink_links * self.nvlink(gpu.nvlink).per_link_bandwidth

    def nccl_nvlink_bandwidth(self, gpu: GPU) -> float:
        """NCCL's GPU↔NVSwitch bandwidth: links × SMxx_NVLINK_BW (topo.cc), bytes/s."""
        return gpu.nvlink_links * self.nvlink(gpu.nvlink).nccl_link_bandwidth

    def nic_host_bandwidth(self, nic: NIC, pcie: str | None = None) -> float:
        """Per-direction bandwidth of a NIC's PCIe data path, bytes/s.

        ``pcie`` names the generation of the slot; the link trains at the older of slot and NIC.
        """
        gens = [self.pcie(nic.pcie)] + ([self.pcie(pcie)] if pcie else [])
        return min(g.bandwidth(nic.pcie_lanes) for g in gens)

    def resolve(self, preset: ClusterPreset | str) -> PresetParts:
        """Every part a preset names, typed."""
        p = self.preset(preset) if isinstance(preset, str) else preset
        gpu = self.gpu(p.gpu)
        return PresetParts(
            preset=p,
            gpu=gpu,
            nvlink=self.nvlink(gpu.nvlink),
            nvswitch=self.nvswitch(p.nvswitch),
            nic=self.nic(p.nic),
            switch=self.switch(p.switch),
            pcie=self.pcie(p.pcie),
        )

    # ---- overrides ------------------------------------------------------------------------

    def with_overrides(self, part: P, overrides: Mapping[str, object]) -> P:
        """A new, validated copy of ``part`` with ``overrides`` applied (unit strings accepted).

        Overridden fields are cited as 'user override' and no longer marked as estimates, unless
        ``overrides`` sets ``source``/``estimate`` itself. Unknown fields, bad values and broken
        references raise CatalogError.
        """
        cls = type(part)
        where = f"{part.part_kind} '{part.name}' override"
        fields = sorted(cls.model_fields)
        for key in overrides:
            if key not in cls.model_fields:
                raise CatalogError(
                    f"{where}: unknown field '{key}'{close_matches(key, fields)}; "
                    f"valid fields: {', '.join(fields)}"
                )
        data: dict[str, Any] = part.model_dump()
        data.update(overrides)
        changed = set(overrides) - {"name", "description", "source", "estimate"}
        if "source" not in overrides:
            data["source"] = _override_source(part.source, changed)
        if "estimate" not in overrides:
            data["estimate"] = tuple(e for e in part.estimate if e.split(".", 1)[0] not in changed)
        try:
            new = cls.model_validate(data)
        except ValidationError as err:
            raise CatalogError(f"{where}: {_validation_message(err)}") from None
        self._check_part(new, where)
        return new

    # ---- internals ------------------------------------------------------------------------

    def _kind(self, kind: str) -> Mapping[str, Part]:
        if kind not in self._parts:
            known = list(KIND_FILES)
            raise CatalogError(
                f"unknown part kind '{kind}'{close_matches(kind, known)}; "
                f"known kinds: {', '.join(known)}"
            )
        return self._parts[kind]

    def _typed(self, kind: str, name: str, cls: type[P]) -> P:
        part = self.get(kind, name)
        assert isinstance(part, cls)  # the loader builds each kind with its own model
        return part

    def _ref(self, part: Part, field: str, where: str) -> Part:
        kind = type(part).references[field]
        name = getattr(part, field)
        try:
            return self.get(kind, name)
        except CatalogError as err:
            raise CatalogError(f"{where}: field '{field}': {err}") from None

    def _check_part(self, part: Part, where: str) -> None:
        """Cross-references exist and the parts they join fit together."""
        refs = {field: self._ref(part, field, where) for field in type(part).references}
        if isinstance(part, ClusterPreset):
            _check_preset(part, refs, where)


def _check_preset(p: ClusterPreset, refs: Mapping[str, Part], where: str) -> None:
    gpu, nvswitch, nic, switch = refs["gpu"], refs["nvswitch"], refs["nic"], refs["switch"]
    assert isinstance(gpu, GPU) and isinstance(nvswitch, NVSwitch)
    assert isinstance(nic, NIC) and isinstance(switch, Switch)
    problems = []
    if nvswitch.nvlink != gpu.nvlink:
        problems.append(
            f"nvswitch '{nvswitch.name}' has {nvswitch.nvlink} ports but gpu '{gpu.name}' uses "
            f"{gpu.nvlink}"
        )
    needed = p.scale_up_domain * gpu.nvlink_links
    available = p.nvswitch_count * nvswitch.ports
    if needed > available:
        problems.append(
            f"{p.scale_up_domain} GPUs × {gpu.nvlink_links} NVLinks = {needed} links, but "
            f"{p.nvswitch_count} × {nvswitch.name} have only {available} ports"
        )
    if p.fabric not in nic.fabrics:
        problems.append(
            f"fabric '{p.fabric}' is not spoken by nic '{nic.name}' ({', '.join(nic.fabrics)})"
        )
    if _FABRIC_SWITCH[p.fabric] != switch.fabric:
        problems.append(
            f"fabric '{p.fabric}' needs an {_FABRIC_SWITCH[p.fabric]} switch, "
            f"but '{switch.name}' is {switch.fabric}"
        )
    if problems:
        raise CatalogError(f"{where}: " + "; ".join(problems))


def _override_source(source: str | dict[str, str], changed: set[str]) -> dict[str, str] | str:
    if not changed:
        return source
    cited = {"default": source} if isinstance(source, str) else dict(source)
    cited = {k: v for k, v in cited.items() if k.split(".", 1)[0] not in changed}
    cited.update({field: _OVERRIDE_SOURCE for field in changed})
    return cited


def _parse_file(filename: str, text: str, model: type[Part]) -> dict[str, Part]:
    try:
        entries = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise CatalogError(f"{filename}: not valid YAML: {err}") from None
    if entries is None:
        return {}
    if not isinstance(entries, list):
        raise CatalogError(f"{filename}: expected a list of entries, got {type(entries).__name__}")
    parts: dict[str, Part] = {}
    for index, entry in enumerate(entries, start=1):
        label = f"entry #{index}"
        if isinstance(entry, dict) and isinstance(entry.get("name"), str):
            label += f" '{entry['name']}'"
        if not isinstance(entry, dict):
            raise CatalogError(f"{filename}: {label}: expected a mapping of fields")
        try:
            part = model.model_validate(entry)
        except ValidationError as err:
            raise CatalogError(f"{filename}: {label}: {_validation_message(err)}") from None
        if part.name in parts:
            raise CatalogError(f"{filename}: {label}: duplicate name '{part.name}'")
        parts[part.name] = part
    return parts


def _data_texts() -> dict[str, str]:
    root = importlib.resources.files("commwall.catalog").joinpath("data")
    return {name: root.joinpath(name).read_text(encoding="utf-8") for name in KIND_FILES.values()}


@functools.cache
def load_catalog() -> Catalog:
    """The catalog shipped with commwall (read once, then cached; parts are immutable)."""
    return Catalog.from_yaml_texts(_data_texts())
