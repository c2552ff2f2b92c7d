"""Collective algorithms and their cost models; the NCCL-like tuner that picks among them."""

from commwall.collectives.constants import Gen, Hw, Proto, gen_for_sm
from commwall.collectives.cost import Cost, Unsupported
from commwall.collectives.errors import CollectiveError
from commwall.collectives.fabric import CommFabric
from commwall.collectives.ops import Op, algbw, busbw, busbw_factor, parse_op
from commwall.collectives.tuner import (
    ALGORITHMS,
    NCCL_MENU,
    Choice,
    choose,
    evaluate,
    parse_algo,
    parse_proto,
)

__all__ = [
    "ALGORITHMS",
    "NCCL_MENU",
    "Choice",
    "CollectiveError",
    "CommFabric",
    "Cost",
    "Gen",
    "Hw",
    "Op",
    "Proto",
    "Unsupported",
    "algbw",
    "busbw",
    "busbw_factor",
    "choose",
    "evaluate",
    "gen_for_sm",
    "parse_algo",
    "parse_op",
    "parse_proto",
]
