"""Grid-membership audits of the additive local randomizers (issue 11: the float pattern attack).

The attack: an adversary holding a report ``w`` and a candidate input ``c`` solves for the
noise, ``w − c``, and checks whether it has the float pattern of the noise sampler (is it a
multiple of the sampler's grid?). The statistic here is the 2-adic valuation of ``w − c``: the
largest ``k`` with ``w − c`` a multiple of ``2**k``. The audit's thresholds then test every
event "``w − c`` is (not) a multiple of ``2**k``" at once, and keep the one that separates the
two inputs best. ``c`` is the domain's lower end, one of the two inputs, so ``w − c`` is
computed exactly.

Each audit is ``ppdp.audit.audit`` (``docs/audit.md``): a randomizer that really satisfies its
claim fails it with probability at most α = 1e-6, so the false-positive rate of this module is
at most 4e-6 per seed (four audits of true claims: uniform at its δ and at the statistic's
δ = 1e-9, Laplace, Gaussian). Each comes
with the construction without snapping, which the audit must catch; for the uniform law that
is the construction this package shipped before issue 11 (``x + w·(U − ½)`` with
``U = M·2**-53``), kept here as the deliberately broken variant. Seeded (CI: seed 0).
"""

from __future__ import annotations

import numpy as np
import pytest

from ppdp import noise
from ppdp.audit import audit
from ppdp.local import AdditiveRandomizer

pytestmark = pytest.mark.statistical

N_SELECT, N_MEASURE = 50_000, 400_000
#: The valuation given to an exact zero (every power of two divides it).
_ZERO_VALUATION = 2_000.0


def two_adic_valuation(v: np.ndarray) -> np.ndarray:
    """The largest k with ``v`` a multiple of ``2**k`` (exact, for finite floats)."""
    v = np.asarray(v, dtype=np.float64)
    mantissa, exponent = np.frexp(v)  # v = mantissa·2**exponent, |mantissa| in [0.5, 1)
    m = np.abs(np.ldexp(mantissa, 53)).astype(np.int64)  # an integer < 2**53, exact
    lowest = m & -m  # its lowest set bit, a power of two
    _, bit = np.frexp(lowest.astype(np.float64))  # lowest = 2**(bit − 1)
    out = (exponent - 53 + bit - 1).astype(np.float64)
    return np.where(v == 0.0, _ZERO_VALUATION, out)


def test_two_adic_valuation_known_values() -> None:
    v = np.array([1.0, 2.0**-51, 3.0 * 2.0**-51, 0.75, -6.0, 0.1, 0.0, 2.0**-1074])
    expected = [0, -51, -51, -2, 1, -55, _ZERO_VALUATION, -1074]
    assert two_adic_valuation(v).tolist() == expected


def _fixed(r: AdditiveRandomizer, x: float, candidate: float):
    def sample(n, src):
        return two_adic_valuation(r.randomise(np.full(n, x), random_state=src) - candidate)

    return sample


def _unsnapped_uniform(r: AdditiveRandomizer, x: float, candidate: float):
    """BROKEN (the pre-issue-11 construction): ``x + w·(U − ½)``, ``U`` on the 2**-53 grid."""

    def sample(n, src):
        u = np.asarray(noise.uniform(n, random_state=src), dtype=np.float64)
        return two_adic_valuation(x + r.scale * (u - 0.5) - candidate)

    return sample


def _unsnapped(r: AdditiveRandomizer, x: float, candidate: float):
    """BROKEN: the grid noise added to the raw ``x`` (no snapping of the input)."""

    def sample(n, src):
        if r.noise == "laplace":
            y = noise.laplace(r.scale, n, random_state=src, granularity=r.grid)
        else:
            y = noise.gaussian(r.scale, n, random_state=src, granularity=r.grid)
        return two_adic_valuation(x + np.asarray(y, dtype=np.float64) - candidate)

    return sample


def _audit(d, d_prime, *, epsilon: float, delta: float, seed: int):
    return audit(
        d,
        d_prime,
        claimed_epsilon=epsilon,
        delta=delta,
        n_select=N_SELECT,
        n_measure=N_MEASURE,
        random_state=seed,
    )


def test_uniform_grid_audit_catches_the_unsnapped_construction_and_passes_the_fix(
    seed: int,
) -> None:
    """Issue 11's setting: width 4 on [0, 0.1], claimed (ε = 0, δ ≈ 0.025), inputs 0 vs 0.1.

    The old construction's ``w − 0`` is a multiple of 2**-51 always for x = 0 and about half
    the time for x = 0.1: the audit's lower bound is far above the claimed ε = 0. The snapped
    randomizer's reports are multiples of Λ = 2**-30 for both inputs, and the lower bound is
    0, at the claimed δ and even at δ = 1e-9: for the fixed randomizer ``w/Λ`` is uniform on
    ``2m + 1`` consecutive integers whatever the input, and among ``N`` consecutive integers
    the multiples of ``2**k`` number ``⌊N/2**k⌋`` or ``⌈N/2**k⌉``, so every event of this
    statistic has probabilities within ``1/(2m + 1) ≈ 2.3e-10`` of each other under the two
    inputs: (ε = 0, δ = 1e-9) is a true claim *for this statistic*, audited at the same α.
    """
    r = AdditiveRandomizer(noise="uniform", scale=4.0, domain=(0.0, 0.1))
    g = r.guarantee(r.delta_floor())
    assert g.epsilon == 0.0 and 0.0249 < g.delta <= 0.025
    assert 1.0 / (2 * r.uniform_half_points + 1) < 1e-9
    lo, hi = r.domain
    broken = _audit(
        _unsnapped_uniform(r, lo, lo),
        _unsnapped_uniform(r, hi, lo),
        epsilon=g.epsilon,
        delta=g.delta,
        seed=seed,
    )
    assert not broken.passed, f"the grid audit missed the unsnapped uniform randomizer: {broken}"
    assert broken.epsilon_lower_bound > 5.0, str(broken)
    fixed_d, fixed_d_prime = _fixed(r, lo, lo), _fixed(r, hi, lo)
    fixed = _audit(fixed_d, fixed_d_prime, epsilon=g.epsilon, delta=g.delta, seed=seed)
    assert fixed.passed, str(fixed)
    assert fixed.epsilon_lower_bound == 0.0, str(fixed)
    sharp = _audit(fixed_d, fixed_d_prime, epsilon=0.0, delta=1e-9, seed=seed)
    assert sharp.passed, f"the snapped uniform randomizer shows a grid pattern: {sharp}"


def test_laplace_grid_audit(seed: int) -> None:
    """Laplace b = 0.1 on [0, 0.1] (pure ε = 1 + 10Λ), inputs 0 vs 0.1 (0.1 is off the grid)."""
    r = AdditiveRandomizer(noise="laplace", scale=0.1, domain=(0.0, 0.1))
    eps = r.guarantee().epsilon
    lo, hi = r.domain
    fixed = _audit(_fixed(r, lo, lo), _fixed(r, hi, lo), epsilon=eps, delta=0.0, seed=seed)
    assert fixed.passed, str(fixed)
    broken = _audit(_unsnapped(r, lo, lo), _unsnapped(r, hi, lo), epsilon=eps, delta=0.0, seed=seed)
    assert not broken.passed, f"the grid audit missed the unsnapped Laplace randomizer: {broken}"


def test_gaussian_grid_audit(seed: int) -> None:
    """Gaussian σ = 0.1 on [0, 0.1] at the profile point (ε′ = 0.25, δ(ε′)), inputs 0 vs 0.1."""
    r = AdditiveRandomizer(noise="gaussian", scale=0.1, domain=(0.0, 0.1))
    eps = 0.25
    delta = r.delta_at(eps)
    assert 0.05 < delta < 0.5
    lo, hi = r.domain
    fixed = _audit(_fixed(r, lo, lo), _fixed(r, hi, lo), epsilon=eps, delta=delta, seed=seed)
    assert fixed.passed, str(fixed)
    broken = _audit(
        _unsnapped(r, lo, lo), _unsnapped(r, hi, lo), epsilon=eps, delta=delta, seed=seed
    )
    assert not broken.passed, f"the grid audit missed the unsnapped Gaussian randomizer: {broken}"
