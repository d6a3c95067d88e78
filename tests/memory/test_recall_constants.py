"""Recall arithmetic against hand-computed values."""

from __future__ import annotations

import math

import pytest

from memory import recall_constants as rc


def test_rrf_contribution_and_window() -> None:
    assert rc.rrf_contribution(1) == pytest.approx(1 / 31)
    assert rc.rrf_contribution(10) == pytest.approx(1 / 40)
    assert rc.window_size(5) == 80  # max(80, 40)
    assert rc.window_size(10) == 80
    assert rc.window_size(20) == 160


@pytest.mark.parametrize(
    ("age_days", "expected"),
    [
        (0, 1.0),
        (180, 1.0),  # within the offset: full weight
        (180 + 1825, 0.5),  # one scale past the offset: the decay value
        # 1000 days: exp(-(820²) / (2σ²)), σ² = 1825² / (2 ln 2) = 2,402,538.1 → exp(-0.139935) = 0.869414
        (1000, 0.869414),
        (180 + 2 * 1825, 0.0625),  # gauss: decay^(n²) at n scales
    ],
)
def test_gaussian_decay(age_days: float, expected: float) -> None:
    assert rc.decay_multiplier(age_days) == pytest.approx(expected, abs=1e-6)


def test_use_boost_and_outcome() -> None:
    assert rc.use_boost(0) == 1.0
    assert rc.use_boost(9) == pytest.approx(1.2)  # 1 + 0.2 · log10(10)
    assert rc.use_boost(99) == pytest.approx(1.4)
    assert rc.outcome_score(0, 0) == 0.5
    assert rc.outcome_score(3, 1) == pytest.approx(4 / 6)
    assert rc.outcome_multiplier(0, 0) == 1.0
    assert rc.outcome_multiplier(3, 1) == pytest.approx(4 / 3)
    assert math.isclose(rc.CATALOG_PRIOR, 0.85)
