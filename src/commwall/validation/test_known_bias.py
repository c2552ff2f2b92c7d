"""The known compute bias: what `commwall run` says, and when it says nothing."""

from __future__ import annotations

import pytest

from commwall.validation.known_bias import (
    COMPUTE_BIAS,
    KnownBias,
    bias_of,
    compute_bias_note,
    summarise,
)


def test_blackwell_has_a_note_and_hopper_none() -> None:
    assert bias_of("b200") is bias_of("gb200") is COMPUTE_BIAS[0]
    assert bias_of("b300") is COMPUTE_BIAS[1]
    assert bias_of("h100-sxm") is None and bias_of("gb300") is None
    note = compute_bias_note("b200", kernel_model=True, compute_scale=1.0)
    assert note is not None and "71 of 79" in note and "median -14%" in note
    assert "6%–25% faster" in note
    note = compute_bias_note("b300", kernel_model=True, compute_scale=1.0)
    assert note is not None and "35 of 35 published dense b300 runs" in note
    assert "6%–26% faster" in note


@pytest.mark.parametrize(("kernel_model", "scale"), [(False, 1.0), (True, 1.25)])
def test_no_note_for_the_flat_model_or_a_measured_scale(kernel_model: bool, scale: float) -> None:
    assert compute_bias_note("gb200", kernel_model=kernel_model, compute_scale=scale) is None


def test_summarise_recomputes_the_figures() -> None:
    stored = KnownBias(("x",), ("p",), runs=5, within=4, low=-0.3, high=-0.1, median=-0.2)
    got = summarise([-0.3, -0.2, 0.01, -0.1, -0.25], stored)
    assert (got.runs, got.within) == (5, 4)
    assert (got.low, got.high, got.median) == pytest.approx((-0.3, -0.1, -0.2))
    with pytest.raises(ValueError, match="no runs"):
        summarise([], stored)
