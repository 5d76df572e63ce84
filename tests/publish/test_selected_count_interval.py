"""``selected_count_interval``: the interval of a true count given that its noisy count
passed a threshold, checked by exact enumeration of the released count's conditional law
(no sampling): at every true count near the threshold it covers at least the level, and
the unconditional interval does not."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import ndtr, ndtri

from ppdp.publish.intervals import discrete_laplace_halfwidth, selected_count_interval

LEVEL = 0.95


def _conditional_law(law: str, scale: float, tau: float, c: int) -> tuple[np.ndarray, np.ndarray]:
    """The released counts ``r`` and ``P_c(R = r | N ≥ τ)`` (to a tail below 1e-12)."""
    if law == "dlap":
        q = math.exp(-1.0 / scale)
        r = np.arange(math.ceil(tau), c + 60 * scale + 60).astype(np.float64)
        p = (1 - q) / (1 + q) * q ** np.abs(r - c)
    else:
        r = np.arange(np.rint(tau), c + 12 * scale + 2).astype(np.float64)
        lo = np.maximum(r - 0.5, tau)
        p = np.clip(ndtr((r + 0.5 - c) / scale) - ndtr((lo - c) / scale), 0.0, None)
    return r, p / p.sum()


def _coverage(law, scale, tau, c, threshold) -> float:
    r, p = _conditional_law(law, scale, tau, c)
    lo, hi = selected_count_interval(r, law, scale, np.full(r.shape, threshold), LEVEL, 1.0)
    return float(np.sum(p * ((lo <= c) & (c <= hi))))


@pytest.mark.parametrize(("law", "scale", "tau"), [("dlap", 4.0, 60.0), ("gauss", 9.3, 71.4)])
def test_every_true_count_near_the_threshold_is_covered_at_the_level_given_the_release(
    law, scale, tau
) -> None:
    """Exact: at least 95 % at every true count from τ − 4s to τ + 6s (s the noise scale),
    at most 98.1 %: the excess is the discreteness of the released count, largest where
    the truncated law piles onto a few counts just above τ."""
    for c in range(int(tau - 4 * scale), int(tau + 6 * scale)):
        cover = _coverage(law, scale, tau, c, tau)
        assert LEVEL - 1e-9 <= cover <= 0.985, (c, cover)


@pytest.mark.parametrize(("law", "scale", "tau"), [("dlap", 4.0, 60.0), ("gauss", 9.3, 71.4)])
def test_the_unconditional_interval_under_covers_below_the_threshold(law, scale, tau) -> None:
    """The broken variant: the threshold forgotten (−inf)."""
    c = int(tau - 2 * scale)
    assert _coverage(law, scale, tau, c, -np.inf) < 0.75
    assert _coverage(law, scale, tau, c, tau) >= LEVEL


def test_without_a_threshold_it_is_the_symmetric_interval_of_the_noise() -> None:
    r = np.arange(50.0, 400.0)
    lo, hi = selected_count_interval(r, "dlap", 4.0, -np.inf, LEVEL)
    k = discrete_laplace_halfwidth(4.0, LEVEL)
    np.testing.assert_array_equal(lo, r - k)
    np.testing.assert_array_equal(hi, r + k)
    lo, hi = selected_count_interval(r, "gauss", 9.3, -np.inf, LEVEL)
    h = float(ndtri(0.5 + LEVEL / 2)) * 9.3 + 0.5
    assert np.max(np.abs(lo - np.rint(r - h))) <= 1 and np.max(np.abs(hi - np.rint(r + h))) <= 1


@pytest.mark.parametrize("law", ["dlap", "gauss"])
def test_far_above_the_threshold_it_is_the_unconditional_interval(law) -> None:
    r = np.arange(200.0, 300.0)
    a = selected_count_interval(r, law, 4.0, 100.0, LEVEL, 1.0)
    b = selected_count_interval(r, law, 4.0, -np.inf, LEVEL, 1.0)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])


def test_a_count_just_above_the_threshold_reaches_down_to_the_floor() -> None:
    """Memoryless discrete Laplace: at r = ⌈τ⌉ no true count below τ is excluded."""
    lo, hi = selected_count_interval(np.array([60.0]), "dlap", 4.0, 60.0, LEVEL, 1.0)
    assert lo[0] == 1.0 and hi[0] >= 60.0
