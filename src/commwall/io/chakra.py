"""MLCommons Chakra execution traces (``.et``): the schema, the file framing, one file per rank.

**Schema.** Chakra ``schema/protobuf/et_def.proto`` (mlcommons/chakra, schema v0.0.4;
``package ChakraProtoMsg``, proto3): ``GlobalMetadata`` (field 1 ``version``, 2 ``attr``),
``Node`` (1 ``id`` uint64, 2 ``name``, 3 ``type`` NodeType, 4 ``ctrl_deps`` and 5 ``data_deps``
repeated uint64, 6 ``start_time_micros``, 7 ``duration_micros``, 8 ``inputs`` and 9 ``outputs``
IOInfo, 10 ``attr``), ``IOInfo`` (1 values, 2 shapes, 3 types, 4 strides — dropped in later
schema revisions, still read), ``Tensor`` (1–6), and ``AttributeProto`` (1 ``name``,
2 ``doc_string``, then the ``value`` oneof: for each scalar type of ``double, float, int32, int64,
uint32, uint64, sint32, sint64, fixed32, fixed64, sfixed32, sfixed64, bool, string, bytes`` in that
order a ``<t>_val`` at field 3 + 2k and a ``<T>List`` message (``repeated <t> values = 1``) at
field 4 + 2k). Enums ``NodeType`` (0 INVALID … 7 COMM_COLL_NODE, 8–10 in later revisions) and
``CollectiveCommType`` (0 ALL_REDUCE … 9 BARRIER). The later ``Node.storage`` (field 11) is not
modelled: the parser skips it.

**Why descriptors, not a hand-written codec.** The schema is built in code as a
``FileDescriptorProto`` with those exact numbers and types, and ``google.protobuf`` encodes and
parses it. Chakra's files then carry whatever protobuf itself writes (packed repeated fields,
zig-zag ``sint``, open proto3 enums, unknown fields skipped), so ``et_feeder``/ASTRA-sim read our
files and we read theirs without re-implementing the wire format; the pool is private, so a
user's own ``et_def_pb2`` cannot clash with it. Only the framing is ours, as Chakra's is.

**Framing.** Chakra ``src/third_party/utils/protolib.py`` (``encodeMessage``/``decodeMessage``):
each message is preceded by its byte length as a base-128 varint; ``GlobalMetadata`` comes
first, then one ``Node`` per message. A length of 0 ends the stream for Chakra's readers, so
an empty message cannot be written. Files may be gzip-compressed (``openFileRd`` tries gzip).

**Files.** One file per rank, ``<prefix>.<rank>.et`` (the PyTorch converter's output as fed to
ASTRA-sim; Chakra ``pg_extractor`` reads ``<prefix>.<rank>.et`` for every rank).

Malformed input raises :class:`ChakraError` naming the file, the byte offset and node index of
the message and the reason — never anything else (hypothesis-tested).

>>> trace = Trace(rank=0, version="0.0.4", nodes=(
...     Node(1, "gemm", NodeType.COMP_NODE, duration_micros=120),
...     Node(2, "allreduce", NodeType.COMM_COLL_NODE, data_deps=(1,), attrs=(
...         Attr.int64("comm_type", CommType.ALL_REDUCE), Attr.int64("comm_size", 1 << 20))),
... ))
>>> back = decode_trace(encode_trace(trace), "mem", rank=0)
>>> back == trace, back.nodes[1].value("comm_size")
(True, 1048576)
"""

from __future__ import annotations

import gzip
import re
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from pathlib import Path
from typing import Any, Final

from google.protobuf import (  # type: ignore[import-untyped, unused-ignore]
    descriptor_pb2,
    descriptor_pool,
    message_factory,
)
from google.protobuf.message import (  # type: ignore[import-untyped, unused-ignore]
    DecodeError,
    EncodeError,
)

from commwall.errors import CommwallError

__all__ = [
    "ATTR_KINDS",
    "Attr",
    "ChakraError",
    "ChakraWriteError",
    "CommType",
    "IOInfo",
    "Node",
    "NodeType",
    "Trace",
    "decode_trace",
    "encode_trace",
    "find_traces",
    "read_trace",
    "read_traces",
    "trace_path",
    "write_trace",
]

#: The schema version written to ``GlobalMetadata.version``.
SCHEMA_VERSION: Final = "0.0.4"


class NodeType(IntEnum):
    """``NodeType`` of et_def.proto."""

    INVALID_NODE = 0
    METADATA_NODE = 1
    MEM_LOAD_NODE = 2
    MEM_STORE_NODE = 3
    COMP_NODE = 4
    COMM_SEND_NODE = 5
    COMM_RECV_NODE = 6
    COMM_COLL_NODE = 7
    STORAGE_NODE = 8
    BATCH_NODE = 9
    CHECKPOINT_NODE = 10


class CommType(IntEnum):
    """``CollectiveCommType`` of et_def.proto."""

    ALL_REDUCE = 0
    REDUCE = 1
    ALL_GATHER = 2
    GATHER = 3
    SCATTER = 4
    BROADCAST = 5
    ALL_TO_ALL = 6
    REDUCE_SCATTER = 7
    REDUCE_SCATTER_BLOCK = 8
    BARRIER = 9


class ChakraError(CommwallError, ValueError):
    """A trace that cannot be read or mapped: the file, where in it, and why."""

    def __init__(
        self, file: str, reason: str, *, offset: int | None = None, node: int | None = None
    ) -> None:
        self.file, self.reason, self.offset, self.node = file, reason, offset, node
        where = [f"byte {offset}"] if offset is not None else []
        where += [f"node {node}"] if node is not None else []
        super().__init__(f"{file}: {', '.join(where) + ': ' if where else ''}{reason}")


class ChakraWriteError(CommwallError, ValueError):
    """A Chakra trace input that cannot be written; the message names the value, the problem and
    what is allowed."""


# ---- the schema, as descriptors ----------------------------------------------------------------

_F = descriptor_pb2.FieldDescriptorProto
_SCALAR_TYPES: Final = (
    ("double", _F.TYPE_DOUBLE),
    ("float", _F.TYPE_FLOAT),
    ("int32", _F.TYPE_INT32),
    ("int64", _F.TYPE_INT64),
    ("uint32", _F.TYPE_UINT32),
    ("uint64", _F.TYPE_UINT64),
    ("sint32", _F.TYPE_SINT32),
    ("sint64", _F.TYPE_SINT64),
    ("fixed32", _F.TYPE_FIXED32),
    ("fixed64", _F.TYPE_FIXED64),
    ("sfixed32", _F.TYPE_SFIXED32),
    ("sfixed64", _F.TYPE_SFIXED64),
    ("bool", _F.TYPE_BOOL),
    ("string", _F.TYPE_STRING),
    ("bytes", _F.TYPE_BYTES),
)
#: Every member of ``AttributeProto.value``: ``int64_val``, ``int64_list``, ...
ATTR_KINDS: Final = tuple(k for t, _ in _SCALAR_TYPES for k in (f"{t}_val", f"{t}_list"))
_PACKAGE = "ChakraProtoMsg"


def _field(
    msg: Any,
    name: str,
    number: int,
    ftype: int,
    *,
    repeated: bool = False,
    type_name: str = "",
    oneof: int | None = None,
) -> None:
    f = msg.field.add(name=name, number=number, type=ftype)
    f.label = _F.LABEL_REPEATED if repeated else _F.LABEL_OPTIONAL
    if type_name:
        f.type_name = f".{_PACKAGE}.{type_name}"
    if oneof is not None:
        f.oneof_index = oneof


def _schema() -> descriptor_pb2.FileDescriptorProto:
    fd = descriptor_pb2.FileDescriptorProto(
        name="commwall/chakra_et_def.proto", package=_PACKAGE, syntax="proto3"
    )
    attr = fd.message_type.add(name="AttributeProto")
    _field(attr, "name", 1, _F.TYPE_STRING)
    _field(attr, "doc_string", 2, _F.TYPE_STRING)
    attr.oneof_decl.add(name="value")
    for k, (t, ftype) in enumerate(_SCALAR_TYPES):
        list_name = f"{t.capitalize()}List"
        _field(attr, f"{t}_val", 3 + 2 * k, ftype, oneof=0)
        _field(attr, f"{t}_list", 4 + 2 * k, _F.TYPE_MESSAGE, type_name=list_name, oneof=0)
        lst = fd.message_type.add(name=list_name)
        _field(lst, "values", 1, ftype, repeated=True)
    meta = fd.message_type.add(name="GlobalMetadata")
    _field(meta, "version", 1, _F.TYPE_STRING)
    _field(meta, "attr", 2, _F.TYPE_MESSAGE, repeated=True, type_name="AttributeProto")
    for enum_name, enum in (("NodeType", NodeType), ("CollectiveCommType", CommType)):
        e = fd.enum_type.add(name=enum_name)
        for member in enum:
            e.value.add(name=member.name, number=int(member))
    node = fd.message_type.add(name="Node")
    _field(node, "id", 1, _F.TYPE_UINT64)
    _field(node, "name", 2, _F.TYPE_STRING)
    _field(node, "type", 3, _F.TYPE_ENUM, type_name="NodeType")
    _field(node, "ctrl_deps", 4, _F.TYPE_UINT64, repeated=True)
    _field(node, "data_deps", 5, _F.TYPE_UINT64, repeated=True)
    _field(node, "start_time_micros", 6, _F.TYPE_UINT64)
    _field(node, "duration_micros", 7, _F.TYPE_UINT64)
    _field(node, "inputs", 8, _F.TYPE_MESSAGE, type_name="IOInfo")
    _field(node, "outputs", 9, _F.TYPE_MESSAGE, type_name="IOInfo")
    _field(node, "attr", 10, _F.TYPE_MESSAGE, repeated=True, type_name="AttributeProto")
    io = fd.message_type.add(name="IOInfo")
    for number, name in enumerate(("values", "shapes", "types", "strides"), start=1):
        _field(io, name, number, _F.TYPE_STRING)
    tensor = fd.message_type.add(name="Tensor")
    for number, name in enumerate(("tensor_id", "storage_id", "offset", "num_elem", "elem_bytes")):
        _field(tensor, name, number + 1, _F.TYPE_UINT64)
    _field(tensor, "device", 6, _F.TYPE_STRING)
    return fd


_POOL = descriptor_pool.DescriptorPool()
_POOL.Add(_schema())
_MetadataMsg: Any = message_factory.GetMessageClass(
    _POOL.FindMessageTypeByName(f"{_PACKAGE}.GlobalMetadata")
)
_NodeMsg: Any = message_factory.GetMessageClass(_POOL.FindMessageTypeByName(f"{_PACKAGE}.Node"))


# ---- the model --------------------------------------------------------------------------------

AttrValue = float | int | bool | str | bytes | tuple[Any, ...] | None


@dataclass(frozen=True)
class Attr:
    """One ``AttributeProto``: ``kind`` is the ``value`` member set (``int64_val``,
    ``string_list``, …; ``""`` when none is), lists are tuples."""

    name: str
    kind: str
    value: AttrValue
    doc: str = ""

    @classmethod
    def int64(cls, name: str, value: int) -> Attr:
        return cls(name, "int64_val", int(value))

    @classmethod
    def int32(cls, name: str, value: int) -> Attr:
        return cls(name, "int32_val", int(value))

    @classmethod
    def uint64(cls, name: str, value: int) -> Attr:
        return cls(name, "uint64_val", int(value))

    @classmethod
    def double(cls, name: str, value: float) -> Attr:
        return cls(name, "double_val", float(value))

    @classmethod
    def string(cls, name: str, value: str) -> Attr:
        return cls(name, "string_val", value)

    @classmethod
    def boolean(cls, name: str, value: bool) -> Attr:
        return cls(name, "bool_val", bool(value))

    @classmethod
    def int64_list(cls, name: str, values: Iterable[int]) -> Attr:
        return cls(name, "int64_list", tuple(int(v) for v in values))


@dataclass(frozen=True)
class IOInfo:
    """``IOInfo``: a node's inputs or outputs as the PyTorch converter prints them."""

    values: str = ""
    shapes: str = ""
    types: str = ""
    strides: str = ""


@dataclass(frozen=True)
class Node:
    """One ``Node`` (``type`` is a :class:`NodeType`, or the raw number of one we do not know)."""

    id: int
    name: str
    type: int
    ctrl_deps: tuple[int, ...] = ()
    data_deps: tuple[int, ...] = ()
    start_time_micros: int = 0
    duration_micros: int = 0
    inputs: IOInfo | None = None
    outputs: IOInfo | None = None
    attrs: tuple[Attr, ...] = ()

    def attr(self, name: str) -> Attr | None:
        """The first attribute called ``name``, or None."""
        return next((a for a in self.attrs if a.name == name), None)

    def value(self, name: str, default: AttrValue = None) -> AttrValue:
        """The value of attribute ``name`` (``default`` when absent or unset)."""
        a = self.attr(name)
        return default if a is None or a.kind == "" else a.value

    @property
    def type_name(self) -> str:
        """``COMP_NODE``, … or ``TYPE_<n>`` for a number the schema does not name."""
        try:
            return NodeType(self.type).name
        except ValueError:
            return f"TYPE_{self.type}"


@dataclass(frozen=True)
class Trace:
    """One rank's execution trace: ``GlobalMetadata`` and its nodes, in file order."""

    rank: int
    version: str = SCHEMA_VERSION
    attrs: tuple[Attr, ...] = ()
    nodes: tuple[Node, ...] = ()
    source: str = field(default="", compare=False)

    def attr(self, name: str) -> Attr | None:
        """The first metadata attribute called ``name``, or None."""
        return next((a for a in self.attrs if a.name == name), None)

    def value(self, name: str, default: AttrValue = None) -> AttrValue:
        """The value of metadata attribute ``name``."""
        a = self.attr(name)
        return default if a is None or a.kind == "" else a.value


# ---- model <-> protobuf ---------------------------------------------------------------------


def _put_attr(msg: Any, a: Attr) -> None:
    msg.name = a.name
    if a.doc:
        msg.doc_string = a.doc
    if not a.kind:
        return
    if a.kind not in ATTR_KINDS:
        raise ChakraWriteError(f"attribute {a.name!r}: unknown kind {a.kind!r}")
    if a.kind.endswith("_list"):
        getattr(msg, a.kind).values.extend(a.value if isinstance(a.value, tuple) else ())
        if not a.value:  # an empty list is still a set oneof member
            getattr(msg, a.kind).SetInParent()
    else:
        setattr(msg, a.kind, a.value)


def _get_attr(msg: Any) -> Attr:
    kind = msg.WhichOneof("value") or ""
    value: AttrValue = None
    if kind.endswith("_list"):
        value = tuple(getattr(msg, kind).values)
    elif kind:
        value = getattr(msg, kind)
    return Attr(msg.name, kind, value, msg.doc_string)


def _node_message(node: Node) -> Any:
    msg = _NodeMsg(
        id=node.id,
        name=node.name,
        type=int(node.type),
        ctrl_deps=node.ctrl_deps,
        data_deps=node.data_deps,
        start_time_micros=node.start_time_micros,
        duration_micros=node.duration_micros,
    )
    for io, target in ((node.inputs, msg.inputs), (node.outputs, msg.outputs)):
        if io is not None:
            target.SetInParent()
            target.values, target.shapes, target.types = io.values, io.shapes, io.types
            target.strides = io.strides
    for a in node.attrs:
        _put_attr(msg.attr.add(), a)
    return msg


def _io(msg: Any, present: bool) -> IOInfo | None:
    if not present:
        return None
    return IOInfo(msg.values, msg.shapes, msg.types, msg.strides)


def _node(msg: Any) -> Node:
    return Node(
        id=msg.id,
        name=msg.name,
        type=msg.type,
        ctrl_deps=tuple(msg.ctrl_deps),
        data_deps=tuple(msg.data_deps),
        start_time_micros=msg.start_time_micros,
        duration_micros=msg.duration_micros,
        inputs=_io(msg.inputs, msg.HasField("inputs")),
        outputs=_io(msg.outputs, msg.HasField("outputs")),
        attrs=tuple(_get_attr(a) for a in msg.attr),
    )


# ---- framing ----------------------------------------------------------------------------------


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        bits = value & 0x7F
        value >>= 7
        if value:
            out.append(0x80 | bits)
        else:
            out.append(bits)
            return bytes(out)


def _frame(payload: bytes, what: str) -> bytes:
    if not payload:
        raise ChakraWriteError(
            f"{what} encodes to zero bytes, which Chakra readers take as end of file"
        )
    return _varint(len(payload)) + payload


def encode_node(node: Node) -> bytes:
    """One node, length-prefixed (for writers that cache nodes shared by many ranks)."""
    try:
        payload = _node_message(node).SerializeToString()
    except (EncodeError, TypeError, ValueError) as e:
        raise ChakraWriteError(f"node {node.id} {node.name!r}: cannot encode: {e}") from None
    return _frame(payload, f"node {node.id}")


def encode_metadata(trace: Trace) -> bytes:
    """The ``GlobalMetadata`` message of ``trace``, length-prefixed."""
    meta = _MetadataMsg(version=trace.version)
    for a in trace.attrs:
        _put_attr(meta.attr.add(), a)
    return _frame(meta.SerializeToString(), "GlobalMetadata")


def encode_trace(trace: Trace) -> bytes:
    """``trace`` as the bytes of a ``.et`` file."""
    return encode_metadata(trace) + b"".join(encode_node(n) for n in trace.nodes)


def decode_trace(data: bytes, source: str, rank: int = 0) -> Trace:
    """Parse the bytes of a ``.et`` file (gzip or plain); errors name ``source``."""
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as e:
            raise ChakraError(source, f"not a readable gzip file ({e})", offset=0) from None
    if not data:
        raise ChakraError(source, "empty file: a Chakra trace starts with GlobalMetadata")
    pos, index = 0, -1
    metadata: Any = None
    nodes: list[Node] = []
    while pos < len(data):
        start = pos
        size, pos = _read_varint(data, pos, source, index)
        if size == 0:  # protolib's end of stream
            if pos < len(data):
                raise ChakraError(
                    source,
                    f"zero-length message followed by {len(data) - pos} more bytes "
                    "(Chakra readers stop at a zero length)",
                    offset=start,
                    node=None if index < 0 else index,
                )
            break
        if pos + size > len(data):
            what = "GlobalMetadata" if index < 0 else "node"
            raise ChakraError(
                source,
                f"truncated: the {what} message needs {size} bytes, {len(data) - pos} remain",
                offset=start,
                node=None if index < 0 else index,
            )
        payload = data[pos : pos + size]
        pos += size
        try:
            if index < 0:
                metadata = _MetadataMsg.FromString(payload)
            else:
                nodes.append(_node(_NodeMsg.FromString(payload)))
        except (DecodeError, RuntimeError, ValueError, UnicodeDecodeError) as e:
            what = "GlobalMetadata" if index < 0 else "Node"
            raise ChakraError(
                source,
                f"not a valid {what} message ({e or 'protobuf decode error'})",
                offset=start,
                node=None if index < 0 else index,
            ) from None
        index += 1
    if metadata is None:
        raise ChakraError(source, "no GlobalMetadata message", offset=0)
    return Trace(
        rank=rank,
        version=metadata.version,
        attrs=tuple(_get_attr(a) for a in metadata.attr),
        nodes=tuple(nodes),
        source=source,
    )


def _read_varint(data: bytes, pos: int, source: str, index: int) -> tuple[int, int]:
    start, result, shift = pos, 0, 0
    while True:
        if pos >= len(data):
            raise ChakraError(
                source,
                "truncated: the file ends inside a message length",
                offset=start,
                node=None if index < 0 else index,
            )
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift >= 64:
            raise ChakraError(
                source,
                "a message length longer than 10 bytes",
                offset=start,
                node=None if index < 0 else index,
            )


# ---- files ------------------------------------------------------------------------------------

_RANK_FILE = re.compile(r"^(?P<prefix>.+)\.(?P<rank>\d+)\.et(?:\.gz)?$")


def trace_path(prefix: str | Path, rank: int) -> Path:
    """``<prefix>.<rank>.et``."""
    return Path(f"{prefix}.{rank}.et")


def write_trace(path: str | Path, trace: Trace) -> None:
    """Write ``trace`` to ``path``."""
    Path(path).write_bytes(encode_trace(trace))


def read_trace(path: str | Path, rank: int = 0) -> Trace:
    """Read one ``.et`` file."""
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise ChakraError(str(path), f"cannot read it ({e.strerror or e})") from None
    return decode_trace(data, str(path), rank)


def find_traces(items: Sequence[str | Path]) -> dict[int, Path]:
    """Rank → file for a prefix (``run/chakra`` finds ``run/chakra.<rank>.et``), a directory
    (every ``*.<rank>.et`` in it, one prefix) or files. Files named ``<prefix>.<rank>.et`` get
    that rank; others are numbered in the order given. Raises :class:`ChakraError`."""
    found: dict[int, Path] = {}
    loose: list[Path] = []
    for item in items:
        path = Path(item)
        if path.is_dir():
            files = sorted(p for p in path.iterdir() if _RANK_FILE.match(p.name))
            prefixes = {_RANK_FILE.match(p.name).group("prefix") for p in files}  # type: ignore[union-attr]
            if not files:
                raise ChakraError(str(path), "no <prefix>.<rank>.et files in this directory")
            if len(prefixes) > 1:
                raise ChakraError(
                    str(path),
                    f"traces of {len(prefixes)} runs here ({', '.join(sorted(prefixes))}): "
                    "give one prefix",
                )
        elif path.is_file():
            files = [path]
        else:
            files = sorted(path.parent.glob(f"{path.name}.*.et")) + sorted(
                path.parent.glob(f"{path.name}.*.et.gz")
            )
            files = [p for p in files if _RANK_FILE.match(p.name)]
            if not files:
                raise ChakraError(str(path), "no such file, directory or <prefix>.<rank>.et files")
        for p in files:
            m = _RANK_FILE.match(p.name)
            if m is None:
                loose.append(p)
                continue
            rank = int(m.group("rank"))
            if rank in found and found[rank] != p:
                raise ChakraError(str(p), f"rank {rank} is also given as {found[rank]}")
            found[rank] = p
    for p in loose:
        rank = next(r for r in range(len(found) + len(loose) + 1) if r not in found)
        found[rank] = p
    return dict(sorted(found.items()))


def read_traces(items: Sequence[str | Path]) -> list[Trace]:
    """Every rank's trace of :func:`find_traces`, in rank order."""
    return [read_trace(path, rank) for rank, path in find_traces(items).items()]
