"""A quick run of the input fuzzer (``benchmarks/fuzz.py``): a few seeded cases per format, no
traceback and no hang. The full run (10,000 scenario and sweep cases, 1,000 of each other
format) is ``python benchmarks/fuzz.py``."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

FUZZ = Path(__file__).resolve().parents[1] / "benchmarks" / "fuzz.py"


@pytest.fixture(scope="module")
def fuzz() -> ModuleType:
    spec = importlib.util.spec_from_file_location("commwall_fuzz", FUZZ)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("fmt", "cases"),
    [("scenario", 60), ("sweep", 60), ("nccl-tests", 40), ("nccl-xml", 40), ("nvidia-smi", 40),
     ("chakra", 40), ("cli", 12)],
)  # fmt: skip
def test_fuzzed_inputs_are_clean_errors(fuzz: ModuleType, fmt: str, cases: int) -> None:
    report = fuzz.run_format(fmt, cases, seed=1, hang_s=30.0)
    assert report.cases == cases
    assert not report.tracebacks, report.tracebacks[:3]
    assert not report.hangs, report.hangs[:3]
    assert report.ok + report.clean == cases
