"""Collective operations and the nccl-tests bandwidth conventions.

``nbytes`` everywhere in :mod:`commwall.collectives` is the *size* column nccl-tests prints for
that operation (NVIDIA/nccl-tests ``doc/PERFORMANCE.md``, v2.19.6):

==============  ===============================================  ==================
operation       size S                                           busbw factor
==============  ===============================================  ==================
all_reduce      count x typesize (each rank's buffer)            2(n-1)/n
reduce_scatter  recvcount x typesize x n (the full array)        (n-1)/n
all_gather      sendcount x typesize x n (the full array)        (n-1)/n
alltoall        count x n x typesize                             (n-1)/n
broadcast       count x typesize                                 1
reduce          count x typesize                                 1
sendrecv        count x typesize                                 1
==============  ===============================================  ==================

``algbw = S / t`` and ``busbw = algbw x factor``; with these factors busbw equals the per-rank
link bandwidth an ideal point-to-point algorithm needs, so busbw is comparable across rank counts.

>>> busbw_factor(Op.ALL_REDUCE, 8)
1.75
"""

from __future__ import annotations

from enum import StrEnum

from commwall.collectives.errors import CollectiveError


class Op(StrEnum):
    """A collective operation, named as nccl-tests names its binaries (``all_reduce_perf`` ...)."""

    ALL_REDUCE = "all_reduce"
    REDUCE_SCATTER = "reduce_scatter"
    ALL_GATHER = "all_gather"
    ALLTOALL = "alltoall"
    BROADCAST = "broadcast"
    REDUCE = "reduce"
    SENDRECV = "sendrecv"


#: The operations that combine values (nccl-tests prints ``sum`` as redop for these).
REDUCING_OPS = frozenset({Op.ALL_REDUCE, Op.REDUCE_SCATTER, Op.REDUCE})

_ALIASES = {
    "allreduce": Op.ALL_REDUCE,
    "ar": Op.ALL_REDUCE,
    "reducescatter": Op.REDUCE_SCATTER,
    "rs": Op.REDUCE_SCATTER,
    "allgather": Op.ALL_GATHER,
    "ag": Op.ALL_GATHER,
    "all_to_all": Op.ALLTOALL,
    "a2a": Op.ALLTOALL,
    "bcast": Op.BROADCAST,
    "send_recv": Op.SENDRECV,
    "p2p": Op.SENDRECV,
}


def parse_op(name: str) -> Op:
    """Return the :class:`Op` for ``name`` (nccl-tests names, with or without ``_perf``).

    >>> parse_op("all_reduce_perf")
    <Op.ALL_REDUCE: 'all_reduce'>
    """
    key = name.strip().lower().removesuffix("_perf").replace("-", "_")
    try:
        return Op(key)
    except ValueError:
        pass
    if key in _ALIASES:
        return _ALIASES[key]
    allowed = ", ".join(op.value for op in Op)
    raise CollectiveError(f"unknown collective operation {name!r}: allowed are {allowed}")


def busbw_factor(op: Op, nranks: int) -> float:
    """nccl-tests' factor from algbw to busbw for ``op`` on ``nranks`` ranks (PERFORMANCE.md)."""
    if nranks < 1:
        raise CollectiveError(f"nranks must be >= 1, got {nranks}")
    n = nranks
    if op is Op.ALL_REDUCE:
        return 2.0 * (n - 1) / n
    if op in (Op.REDUCE_SCATTER, Op.ALL_GATHER, Op.ALLTOALL):
        return (n - 1) / n
    return 1.0


def algbw(nbytes: float, seconds: float) -> float:
    """nccl-tests algorithm bandwidth ``S / t`` in bytes/s."""
    if seconds <= 0:
        raise CollectiveError(f"time must be > 0 s, got {seconds}")
    return nbytes / seconds


def busbw(op: Op, nranks: int, nbytes: float, seconds: float) -> float:
    """nccl-tests bus bandwidth ``algbw x factor`` in bytes/s."""
    return algbw(nbytes, seconds) * busbw_factor(op, nranks)


#: Operations whose nccl-tests ``count`` is per rank: ``size / (type size x ranks)``.
PER_RANK_COUNT_OPS = frozenset({Op.ALL_GATHER, Op.REDUCE_SCATTER, Op.ALLTOALL})


def nccl_tests_row(op: Op, nbytes: int, nranks: int, type_size: int = 4) -> tuple[int, int]:
    """The ``(size, count)`` columns nccl-tests prints when asked for ``nbytes`` (``-b``).

    all_gather, reduce_scatter and alltoall split the buffer per rank and align each rank's part
    down to 16 bytes (``(count/nranks) & ~(16/eltSize - 1)``), so their size can come out smaller
    than asked and ``count`` is per rank; the others print ``nbytes / type size`` (nccl-tests
    v2.19.6 ``src/*.cu`` ``GetCollByteCount``, ``src/common.cu`` ``setupArgs``).

    >>> nccl_tests_row(Op.ALL_GATHER, 1048576, 8)
    (1048576, 32768)
    >>> nccl_tests_row(Op.ALL_GATHER, 64, 8)  # 2 floats per rank round down to 0
    (0, 0)
    >>> nccl_tests_row(Op.ALL_REDUCE, 1048576, 8)
    (1048576, 262144)
    """
    if nranks < 1 or type_size < 1:
        raise CollectiveError(f"nranks and type_size must be >= 1, got {nranks}, {type_size}")
    count = int(nbytes) // type_size
    if op not in PER_RANK_COUNT_OPS:
        return count * type_size, count
    align = max(1, 16 // type_size)
    per_rank = (count // nranks) // align * align
    return per_rank * nranks * type_size, per_rank
