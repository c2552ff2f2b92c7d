"""A small 4-rank Chakra trace set shaped like the PyTorch converter's output, for tests and docs.

Written from scratch (no Chakra file copied), following what ``chakra_converter PyTorch``
produces (Chakra ``src/converter/pytorch_converter.py``): a ``GlobalMetadata`` with the host
trace's ``schema``/``pid``/``time``/``start_ts``/``finish_ts``; a ``## process_group:init ##``
``METADATA_NODE`` whose ``inputs.values`` is the Python ``str()`` of a list holding PyTorch's
``pg_config_info`` JSON; host operators as ``COMP_NODE`` with ``is_cpu_op = true``; GPU kernels
as ``COMP_NODE``/``COMM_COLL_NODE``/``COMM_SEND_NODE``/``COMM_RECV_NODE`` with
``is_cpu_op = false``, the CUDA ``stream``, ``duration_micros``, ``comm_type``, ``comm_size`` and
``pg_name`` (no ``comm_src``/``comm_dst``: the converter writes none), each GPU node waiting for
its launching host operator and, as the converter's sync dependencies do, the kernel before it.

The job: 2 pipeline stages × tensor parallel 2 (ranks 0, 1 | 2, 3). Stage 0 runs a GEMM, a TP
all-reduce and sends activations to stage 1, which receives, runs its GEMM and TP all-reduce;
then all four ranks all-reduce gradients over the world group. Regenerate the committed files
with ``python -m commwall.io.chakra_sample src/commwall/io/testdata/chakra/pytorch``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from commwall.io.chakra import (
    Attr,
    CommType,
    IOInfo,
    Node,
    NodeType,
    Trace,
    trace_path,
    write_trace,
)

#: PyTorch process groups of the sample (``pg_config_info``; empty ``ranks``: every rank).
PG_CONFIG = [
    {"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cuda:nccl", "ranks": [],
     "group_size": 4, "group_count": 5},
    {"pg_name": "1", "pg_desc": "tp", "backend_config": "cuda:nccl", "ranks": [0, 1],
     "group_size": 2, "group_count": 5},
    {"pg_name": "2", "pg_desc": "tp", "backend_config": "cuda:nccl", "ranks": [2, 3],
     "group_size": 2, "group_count": 5},
    {"pg_name": "3", "pg_desc": "pp", "backend_config": "cuda:nccl", "ranks": [0, 2],
     "group_size": 2, "group_count": 5},
    {"pg_name": "4", "pg_desc": "pp", "backend_config": "cuda:nccl", "ranks": [1, 3],
     "group_size": 2, "group_count": 5},
]  # fmt: skip
MiB = 1 << 20


class _Builder:
    def __init__(self, rank: int) -> None:
        self.rank, self.nodes, self.next_id = rank, list[Node](), 2
        self.cpu_last = 2  # the thread root
        self.gpu_last: int | None = None

    def _common(self, name: str, cpu: bool, stream: int | None) -> list[Attr]:
        attrs = [Attr.int64("rf_id", self.next_id), Attr.int64("fw_parent", 0),
                 Attr.int64("seq_id", -1), Attr.int64("scope", 0), Attr.int64("tid", 1),
                 Attr.int64("fw_tid", 0), Attr.string("op_schema", ""),
                 Attr.boolean("is_cpu_op", cpu)]  # fmt: skip
        if stream is not None:
            attrs.append(Attr.int64("stream", stream))
        return attrs

    def cpu(self, name: str, micros: int) -> int:
        self.next_id += 1
        self.nodes.append(Node(self.next_id, name, NodeType.COMP_NODE, ctrl_deps=(2,),
                               data_deps=(self.cpu_last,), duration_micros=micros,
                               inputs=IOInfo("[]", "[]", "[]"), outputs=IOInfo("[]", "[]", "[]"),
                               attrs=tuple(self._common(name, True, None))))  # fmt: skip
        self.cpu_last = self.next_id
        return self.next_id

    def gpu(self, name: str, kind: NodeType, micros: int, stream: int, *extra: Attr) -> int:
        launcher = self.cpu(f"launch {name.split('(')[0]}", 5)
        self.next_id += 1
        deps = (launcher,) if self.gpu_last is None else (launcher, self.gpu_last)
        attrs = (*self._common(name, False, stream), *extra)
        self.nodes.append(Node(self.next_id, name, kind, ctrl_deps=(launcher,), data_deps=deps,
                               duration_micros=micros, attrs=attrs))  # fmt: skip
        self.gpu_last = self.next_id
        return self.next_id

    def coll(self, kernel: str, comm: CommType, size: int, pg: str, micros: int) -> int:
        return self.gpu(kernel, NodeType.COMM_COLL_NODE, micros, 20, Attr.int64("comm_type", comm),
                        Attr.int64("comm_size", size), Attr.string("pg_name", pg))  # fmt: skip

    def p2p(self, kind: NodeType, size: int, pg: str) -> int:
        return self.gpu("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", kind, 400, 24,
                        Attr.int64("comm_size", size), Attr.string("pg_name", pg))  # fmt: skip


def pytorch_sample() -> list[Trace]:
    """The four ranks' traces (see the module docstring)."""
    traces = []
    for rank in range(4):
        b = _Builder(rank)
        stage, tp_pg, pp_pg = rank // 2, str(1 + rank // 2), str(3 + rank % 2)
        init = Node(1, "## process_group:init ##", NodeType.METADATA_NODE,
                    inputs=IOInfo(str([json.dumps(PG_CONFIG)]), "[[]]", "['String']"),
                    outputs=IOInfo("[]", "[]", "[]"),
                    attrs=tuple(b._common("init", True, None)))  # fmt: skip
        root = Node(2, "[pytorch|profiler|execution_trace|thread]", NodeType.COMP_NODE,
                    attrs=tuple(b._common("thread", True, None)))  # fmt: skip
        b.nodes += [init, root]
        if stage == 1:
            b.p2p(NodeType.COMM_RECV_NODE, 4 * MiB, pp_pg)
        b.gpu("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", NodeType.COMP_NODE,
              1500 + 300 * stage, 7)  # fmt: skip
        b.coll("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
               CommType.ALL_REDUCE, 8 * MiB, tp_pg, 120)  # fmt: skip
        if stage == 0:
            b.p2p(NodeType.COMM_SEND_NODE, 4 * MiB, pp_pg)
        b.gpu("elementwise_kernel", NodeType.COMP_NODE, 250, 7)
        b.coll("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
               CommType.ALL_REDUCE, 64 * MiB, "0", 900)  # fmt: skip
        meta = (Attr.string("schema", "1.1.0-chakra.0.0.4"), Attr.uint64("pid", 4242 + rank),
                Attr.string("time", "2024-05-01 10:00:00"), Attr.uint64("start_ts", 1000),
                Attr.uint64("finish_ts", 9000))  # fmt: skip
        traces.append(Trace(rank, "", meta, tuple(b.nodes)))
    return traces


def write_sample(prefix: str | Path) -> list[Path]:
    """Write the sample as ``<prefix>.<rank>.et``."""
    paths = []
    for t in pytorch_sample():
        path = trace_path(prefix, t.rank)
        write_trace(path, t)
        paths.append(path)
    return paths


if __name__ == "__main__":  # pragma: no cover
    for p in write_sample(sys.argv[1] if len(sys.argv) > 1 else "pytorch"):
        print(p)
