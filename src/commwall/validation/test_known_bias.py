"""The known compute bias: what `commwall run` says, and when it says nothing."""

from __future__ import annotations

import pytest

from commwall.validation import known_bias
from commwall.validation.known_bias import (
    COMPUTE_BIAS,
    KnownBias,
    bias_of,
    compute_bias_note,
    summarise,
)


def test_no_catalog_gpu_carries_a_note_now() -> None:
    """Every GPU family's dense runs are within 7 % on their median (known_bias.COMPUTE_BIAS)."""
    assert COMPUTE_BIAS == ()
    for gpu in ("a100-sxm", "h100-sxm", "h200", "b200", "b300", "gb200", "gb300"):
        assert bias_of(gpu) is None, gpu
        assert compute_bias_note(gpu, kernel_model=True, compute_scale=1.0) is None


GB200_BIAS = KnownBias(
    ("gb200",), ("gb200-nvl72",), runs=23, within=17, low=-0.2148, high=-0.1142, median=-0.154
)


def test_a_known_bias_is_worded_for_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """The note as GB200's entry read before its power bound was measured."""
    monkeypatch.setattr(known_bias, "COMPUTE_BIAS", (GB200_BIAS,))
    assert bias_of("gb200") is GB200_BIAS and bias_of("b200") is None
    note = compute_bias_note("gb200", kernel_model=True, compute_scale=1.0)
    assert note is not None and "17 of 23 published dense gb200 runs" in note
    assert "11%–21% faster" in note and "median -15%" in note


@pytest.mark.parametrize(("kernel_model", "scale"), [(False, 1.0), (True, 1.25)])
def test_no_note_for_the_flat_model_or_a_measured_scale(
    kernel_model: bool, scale: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(known_bias, "COMPUTE_BIAS", (GB200_BIAS,))
    assert compute_bias_note("gb200", kernel_model=kernel_model, compute_scale=scale) is None


def test_summarise_recomputes_the_figures() -> None:
    stored = KnownBias(("x",), ("p",), runs=5, within=4, low=-0.3, high=-0.1, median=-0.2)
    got = summarise([-0.3, -0.2, 0.01, -0.1, -0.25], stored)
    assert (got.runs, got.within) == (5, 4)
    assert (got.low, got.high, got.median) == pytest.approx((-0.3, -0.1, -0.2))
    with pytest.raises(ValueError, match="no runs"):
        summarise([], stored)
