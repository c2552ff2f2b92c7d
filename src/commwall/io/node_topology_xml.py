"""Read the topology XML NCCL writes with ``NCCL_TOPO_DUMP_FILE`` (since NCCL 2.6).

Shape (NCCL ``src/graph/xml.cc`` writes it, ``topo.cc`` reads it back; ``shared/reference/
nccl-model.md`` §8)::

    <system version="1">
      <cpu numaid="0" affinity="…" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="143">
        <pci busid="0000:16:00.0" class="0x060400" vendor="0x1000" device="0xc030" … link_speed="32.0 GT/s PCIe" link_width="16">
          <pci busid="0000:18:00.0" class="0x030200" …>
            <gpu dev="0" sm="90" rank="0" gdr="1">
              <nvlink target="0000:05:00.0" count="4" tclass="0x068000"/>
            </gpu>
          </pci>
          <pci busid="0000:1a:00.0" class="0x020700" …>
            <nic><net name="mlx5_0" dev="0" speed="400000" port="1" gdr="1" …/></nic>
          </pci>
        </pci>
      </cpu>
    </system>

A ``<pci>`` is a GPU when it holds ``<gpu>``, a NIC when it holds ``<nic>``, else a switch or
bridge (NCCL's ``kvDictPciClass`` maps class 0x0604xx to PCI and so does this reader). NVLink
targets are classified by ``tclass`` (0x068000 NVSwitch, 0x068001 CPU, 0x03xxxx GPU) or, without
it, by whether a GPU of that bus id exists. Elements this reader does not know (``pcilink``,
``gin``, …) are skipped.

The file is parsed with expat, refusing any DOCTYPE or entity declaration (no entity expansion
at all), so each element keeps its line; every problem raises
:class:`~commwall.io.node_topology.NodeTopologyError` naming file, line and reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Final
from xml.parsers import expat

from commwall.io.node_topology_model import (
    C2cLink,
    Cpu,
    Gpu,
    Nic,
    NodeTopology,
    NodeTopologyError,
    NvLink,
    NvSwitch,
    PciSwitch,
    cpu_above,
)

__all__ = ["parse_nccl_xml"]

#: Deepest element nesting accepted (real dumps nest about 8 deep).
MAX_DEPTH: Final = 64
_BUSID: Final = re.compile(r"^[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-9a-f]$")


@dataclass
class _Element:
    tag: str
    attrs: dict[str, str]
    line: int
    children: list[_Element] = field(default_factory=list)


class _Refused(Exception):
    """Raised from an expat handler; turned into NodeTopologyError with the parser's line."""


def _tree(text: str, source: str) -> _Element:
    """Parse ``text`` into elements with their line numbers (expat, no DTD, no entities)."""
    parser = expat.ParserCreate()
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    root: list[_Element] = []
    stack: list[_Element] = []

    def start(tag: str, attrs: dict[str, str]) -> None:
        if len(stack) >= MAX_DEPTH:
            raise _Refused(f"elements nest deeper than {MAX_DEPTH} levels")
        el = _Element(tag, dict(attrs), parser.CurrentLineNumber)
        if stack:
            stack[-1].children.append(el)
        else:
            root.append(el)
        stack.append(el)

    def end(tag: str) -> None:
        stack.pop()

    def doctype(*_: object) -> None:
        raise _Refused("DOCTYPE declarations are not accepted in a topology file")

    def entity(*_: object) -> None:
        raise _Refused("entity declarations are not accepted in a topology file")

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.StartDoctypeDeclHandler = doctype
    parser.EntityDeclHandler = entity
    parser.UnparsedEntityDeclHandler = entity
    try:
        parser.Parse(text, True)
    except _Refused as e:
        raise NodeTopologyError(source, parser.CurrentLineNumber, str(e)) from None
    except expat.ExpatError as e:
        reason = expat.ErrorString(e.code) if e.code else str(e)
        raise NodeTopologyError(source, e.lineno or 1, f"not well-formed XML: {reason}") from None
    except (ValueError, RecursionError) as e:  # expat refuses some inputs outright
        raise NodeTopologyError(source, parser.CurrentLineNumber or 1, f"not XML: {e}") from None
    if not root:
        raise NodeTopologyError(source, 1, "no XML element found")
    return root[0]


class _Reader:
    """Walks the element tree once, collecting devices into a NodeTopology."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.topo = NodeTopology(source=source, format="nccl-xml")
        self.names: set[str] = set()
        self.busids: dict[str, int] = {}
        self.pending_nvlinks: list[tuple[str, _Element]] = []  # (gpu name, element)

    # ---- attributes -------------------------------------------------------------------------

    def fail(self, el: _Element, reason: str) -> NodeTopologyError:
        return NodeTopologyError(self.source, el.line, f"<{el.tag}>: {reason}")

    def text(self, el: _Element, key: str, *, required: bool = False) -> str | None:
        value = el.attrs.get(key)
        if value is None and required:
            raise self.fail(el, f"attribute {key!r} is missing")
        return None if value is None else value.strip()

    def integer(
        self, el: _Element, key: str, *, required: bool = False, low: int | None = None
    ) -> int | None:
        value = self.text(el, key, required=required)
        if value is None or (value == "" and not required):
            return None
        try:
            number = int(value, 0) if value.lower().startswith("0x") else int(value)
        except ValueError:
            raise self.fail(el, f"{key}={value!r} is not an integer") from None
        if low is not None and number < low:
            raise self.fail(el, f"{key}={value!r} is below {low}")
        return number

    def flag(self, el: _Element, key: str) -> bool | None:
        value = self.integer(el, key)
        return None if value is None else value != 0

    def busid(self, el: _Element) -> str:
        value = (self.text(el, "busid", required=True) or "").lower()
        if not _BUSID.match(value):
            raise self.fail(el, f"busid={value!r} is not a PCI address like 0000:18:00.0")
        if value in self.busids:
            raise self.fail(el, f"busid {value} appears twice (first on line {self.busids[value]})")
        self.busids[value] = el.line
        return value

    def unique(self, el: _Element, name: str) -> str:
        if name in self.names:
            raise self.fail(el, f"{name} appears twice")
        self.names.add(name)
        return name

    # ---- elements ---------------------------------------------------------------------------

    def system(self, root: _Element) -> NodeTopology:
        if root.tag != "system":
            raise self.fail(root, "the root element must be <system> (an NCCL topology dump)")
        self.topo.version = self.text(root, "version")
        for el in root.children:
            if el.tag == "cpu":
                self.cpu(el)
        if not self.topo.gpus:
            raise NodeTopologyError(self.source, root.line, "<system>: no <gpu> in the file")
        self.resolve_nvlinks()
        self.topo.gpus.sort(key=lambda g: g.dev)
        self.topo.nics.sort(key=lambda n: (n.dev if n.dev is not None else 1 << 30, n.name))
        return self.topo

    def cpu(self, el: _Element) -> None:
        numa = self.integer(el, "numaid", low=-1)
        numa = len(self.topo.cpus) if numa is None or numa < 0 else numa
        name = self.unique(el, f"CPU{numa}")
        self.topo.cpus.append(
            Cpu(
                name=name,
                numa_id=numa,
                arch=self.text(el, "arch"),
                vendor=self.text(el, "vendor"),
                family_id=self.integer(el, "familyid"),
                model_id=self.integer(el, "modelid"),
                affinity=self.text(el, "affinity"),
                line=el.line,
            )
        )
        for child in el.children:
            self.child(child, name)

    def child(self, el: _Element, parent: str) -> None:
        if el.tag == "pci":
            self.pci(el, parent)
        elif el.tag == "nic":
            self.nic(el, parent, None)

    def pci(self, el: _Element, parent: str) -> None:
        busid = self.busid(el)
        width = self.integer(el, "link_width", low=0)
        speed = self.text(el, "link_speed")
        gpus = [c for c in el.children if c.tag == "gpu"]
        nics = [c for c in el.children if c.tag == "nic"]
        if len(gpus) > 1:
            raise self.fail(gpus[1], f"a second <gpu> under pci {busid}")
        if gpus:
            self.gpu(gpus[0], busid, parent, speed, width)
            return
        if nics:
            for nic in nics:
                self.nic(nic, parent, (busid, speed, width))
            return
        name = self.unique(el, f"PCI/{busid}")
        self.topo.switches.append(
            PciSwitch(
                name=name,
                busid=busid,
                parent=parent,
                vendor=self.text(el, "vendor"),
                device=self.text(el, "device"),
                subsystem_vendor=self.text(el, "subsystem_vendor"),
                subsystem_device=self.text(el, "subsystem_device"),
                link_speed=speed,
                link_width=width,
                line=el.line,
            )
        )
        for child in el.children:
            self.child(child, name)

    def gpu(
        self, el: _Element, busid: str, parent: str, speed: str | None, width: int | None
    ) -> None:
        dev = self.integer(el, "dev", required=True, low=0)
        assert dev is not None
        name = self.unique(el, f"GPU{dev}")
        self.topo.gpus.append(
            Gpu(
                name=name,
                dev=dev,
                busid=busid,
                parent=parent,
                sm=self.integer(el, "sm", low=0),
                rank=self.integer(el, "rank"),
                gdr=self.flag(el, "gdr"),
                link_speed=speed,
                link_width=width,
                line=el.line,
            )
        )
        for child in el.children:
            if child.tag == "nvlink":
                self.pending_nvlinks.append((name, child))
            elif child.tag == "c2c":
                bw = self.integer(child, "bw", required=True, low=1)
                count = self.integer(child, "count", required=True, low=1)
                assert bw is not None and count is not None
                self.topo.c2c.append(C2cLink(name, float(bw), count, child.line))

    def nic(
        self, el: _Element, parent: str, pci: tuple[str, str | None, int | None] | None
    ) -> None:
        busid, speed, width = pci if pci is not None else (None, None, None)
        nets = [c for c in el.children if c.tag == "net"]
        for net in nets:
            name = self.unique(el, self.text(net, "name", required=True) or "")
            if not name or any(c.isspace() for c in name):
                raise self.fail(net, f"name={name!r} is not a device name")
            self.topo.nics.append(
                Nic(
                    name=name,
                    busid=busid,
                    parent=parent,
                    dev=self.integer(net, "dev", low=-1),
                    speed_mbps=self.integer(net, "speed"),
                    port=self.integer(net, "port"),
                    gdr=self.flag(net, "gdr"),
                    guid=self.text(net, "guid"),
                    maxconn=self.integer(net, "maxconn"),
                    link_speed=speed,
                    link_width=width,
                    line=net.line,
                )
            )

    def resolve_nvlinks(self) -> None:
        """Turn each ``<nvlink target count tclass>`` into an NvLink to a GPU, NVSwitch or CPU."""
        gpu_by_bus = {g.busid: g.name for g in self.topo.gpus}
        nvswitches: dict[str, str] = {}
        for gpu, el in self.pending_nvlinks:
            target = (self.text(el, "target", required=True) or "").lower()
            if not _BUSID.match(target):
                raise self.fail(el, f"target={target!r} is not a PCI address like 0000:05:00.0")
            count = self.integer(el, "count", required=True, low=1)
            assert count is not None
            tclass = (self.text(el, "tclass") or "").lower()
            if tclass == "0x068001":  # NVLink to the CPU (POWER9): kvDictPciClass → CPU
                cpu = _cpu_of(self.topo, gpu)
                if cpu is None:
                    raise self.fail(el, "NVLink to a CPU, but the GPU has no CPU above it")
                self.topo.nvlinks.append(NvLink(gpu, cpu, count, el.line))
                continue
            if target in gpu_by_bus and not tclass.startswith("0x0680"):
                if gpu_by_bus[target] == gpu:
                    raise self.fail(el, f"target {target} is the GPU itself")
                self.topo.nvlinks.append(NvLink(gpu, gpu_by_bus[target], count, el.line))
                continue
            if tclass.startswith("0x03"):
                raise self.fail(el, f"target {target} is a GPU (tclass {tclass}) not in the file")
            if target not in nvswitches:
                nvswitches[target] = f"NVS/{target}"
                self.topo.nvswitches.append(NvSwitch(nvswitches[target], target))
            self.topo.nvlinks.append(NvLink(gpu, nvswitches[target], count, el.line))


def _cpu_of(topo: NodeTopology, gpu: str) -> str | None:
    return cpu_above(topo, gpu)


def parse_nccl_xml(text: str, *, source: str = "<topology.xml>") -> NodeTopology:
    """Read an NCCL topology dump (module doc); raises NodeTopologyError on any problem."""
    return _Reader(source).system(_tree(text, source))
