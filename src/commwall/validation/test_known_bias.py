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


def test_gb200_has_a_note_and_b200_b300_and_hopper_none() -> None:
    assert bias_of("gb200") is COMPUTE_BIAS[0]
    for gpu in ("b200", "b300", "gb300", "h100-sxm"):
        assert bias_of(gpu) is None, gpu
    note = compute_bias_note("gb200", kernel_model=True, compute_scale=1.0)
    assert note is not None and "17 of 23 published dense gb200 runs" in note
    assert "11%–21% faster" in note and "median -15%" in note
    assert compute_bias_note("b200", kernel_model=True, compute_scale=1.0) is None


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
