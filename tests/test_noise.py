"""Fast tests of ppdp.noise: validation, shapes, the grid, the exponential construction and
the exactness of the float pipeline (goodness of fit is in tests/statistical/)."""

from __future__ import annotations

import decimal
import math
import warnings
from fractions import Fraction

import numpy as np
import pytest

from ppdp import noise
from ppdp.exceptions import (
    DataValidationError,
    InsecureRandomnessWarning,
    ParameterError,
    ParameterTypeError,
)
from ppdp.random import SeededRandom

LN2 = math.log(2.0)
MASK53 = (1 << 53) - 1


class Scripted:
    """A RandomSource that returns prepared words, in order (to exercise exact code paths)."""

    is_secure = False

    def __init__(self, *batches):
        self.batches = [np.asarray(b, dtype=np.uint64) for b in batches]

    def uint64(self, n):
        batch = self.batches.pop(0)
        assert batch.shape == (n,), f"asked for {n} words, prepared {batch.shape}"
        return batch.copy()


def word(z: int, m: int, *, negative: bool = False) -> int:
    """The 64-bit word that encodes geometric part z (< 10) and 53-bit mantissa m."""
    assert 0 <= z < 10 and 0 <= m <= MASK53
    return (int(negative) << 63) | ((1 << z) << 53) | m


def on_grid(x, lam) -> bool:
    q = np.asarray(x, dtype=np.float64) / lam
    return bool(np.all(q == np.rint(q)))


CONTINUOUS = {
    "laplace": lambda s, size=None, **kw: noise.laplace(s, size, **kw),
    "gaussian": lambda s, size=None, **kw: noise.gaussian(s, size, **kw),
    "exponential": lambda s, size=None, **kw: noise.exponential(s, size, **kw),
    "discrete_laplace": lambda s, size=None, **kw: noise.discrete_laplace(s, size, **kw),
    "discrete_gaussian": lambda s, size=None, **kw: noise.discrete_gaussian(s, size, **kw),
    "gamma_norm_vector": lambda s, size=None, **kw: noise.gamma_norm_vector(3, s, size, **kw),
}


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize("name", sorted(CONTINUOUS))
@pytest.mark.parametrize("bad", [0, 0.0, -1.0, math.nan, math.inf, -math.inf])
def test_bad_scale_values_are_refused(name, bad):
    with pytest.raises(ParameterError, match=r"\(.*\) must be a finite number > 0"):
        CONTINUOUS[name](bad, 3)


@pytest.mark.parametrize("name", sorted(CONTINUOUS))
@pytest.mark.parametrize("bad", [True, "1.0", None, [1.0], 1 + 0j])
def test_bad_scale_types_are_refused(name, bad):
    with pytest.raises(ParameterTypeError, match="must be a real number"):
        CONTINUOUS[name](bad, 3)


def test_scale_message_names_parameter_and_value():
    with pytest.raises(ParameterError, match=r"^scale \(-1\.0\) must be a finite number > 0$"):
        noise.laplace(-1.0)
    with pytest.raises(ParameterError, match=r"^sigma \(nan\) must be a finite number > 0$"):
        noise.gaussian(math.nan)


@pytest.mark.parametrize("sampler", [noise.laplace, noise.gaussian, noise.granularity])
@pytest.mark.parametrize("scale", [5e-324, 1e-310, 2.0**-991, 1e-300])
def test_subnormal_or_tiny_scale_underflows(sampler, scale):
    with pytest.raises(ParameterError, match="underflows"):
        sampler(scale)


@pytest.mark.parametrize("sampler", [noise.laplace, noise.gaussian, noise.granularity])
def test_huge_scale_overflows(sampler):
    with pytest.raises(ParameterError, match="overflows"):
        sampler(1e300)


def test_smallest_and_largest_accepted_scales():
    assert noise.granularity(2.0**-990) == 2.0**-1022
    assert noise.granularity(2.0**960) == 2.0**928
    assert on_grid(noise.laplace(2.0**-990, 10, random_state=0), 2.0**-1022)
    assert np.all(np.isfinite(noise.gaussian(2.0**960, 10, random_state=0)))


@pytest.mark.parametrize("sampler", [noise.discrete_laplace, noise.discrete_gaussian])
def test_discrete_scale_limits(sampler):
    with pytest.raises(ParameterError, match=r"<= 2\*\*40"):
        sampler(2.0**41)
    assert isinstance(sampler(2.0**40, random_state=0), int)


def test_discrete_gaussian_tiny_sigma():
    with pytest.raises(ParameterError, match=r"sigma \(.*\) must be >= 2\*\*-40"):
        noise.discrete_gaussian(1e-20)
    assert np.all(noise.discrete_gaussian(0.01, 1000, random_state=0) == 0)


@pytest.mark.parametrize("bad", [-1, 1.5, "3", True, (2, -1), (2, 1.0), {3}])
def test_bad_size(bad):
    with pytest.raises((ParameterError, ParameterTypeError), match="size"):
        noise.laplace(1.0, bad)


@pytest.mark.parametrize(
    "bad, kind, match",
    [
        (0.3, ParameterError, "power of two"),
        (3.0, ParameterError, "power of two"),
        (-0.5, ParameterError, "finite number > 0"),
        (math.nan, ParameterError, "finite number > 0"),
        (2.0**-1030, ParameterError, "power of two"),
        (2.0**-50, ParameterError, "too fine"),
        ("0.5", ParameterTypeError, "real number"),
    ],
)
def test_bad_granularity(bad, kind, match):
    with pytest.raises(kind, match=match):
        noise.laplace(1.0, 3, granularity=bad)
    with pytest.raises(kind, match=match):
        noise.gaussian(1.0, 3, granularity=bad)


def test_finest_and_coarse_granularity_accepted():
    fine = 2.0**-noise.MAX_GRID_BITS
    assert on_grid(noise.laplace(1.0, 100, random_state=0, granularity=fine), fine)
    with pytest.raises(ParameterError, match="too fine"):
        noise.laplace(1.0, 1, granularity=fine / 2)
    coarse = 0.25
    x = noise.gaussian(1.0, 1000, random_state=0, granularity=coarse)
    assert on_grid(x, coarse) and len(np.unique(x)) > 10


def test_bernoulli_validation():
    for bad in (-0.1, 1.1, math.nan):
        with pytest.raises(ParameterError, match=r"p \(.*\) must be in \[0, 1\]"):
            noise.bernoulli(bad)
    with pytest.raises(ParameterTypeError):
        noise.bernoulli(True)


@pytest.mark.parametrize("bad", [0, -2, 1.5, True])
def test_gamma_norm_vector_bad_dim(bad):
    with pytest.raises((ParameterError, ParameterTypeError), match="dim"):
        noise.gamma_norm_vector(bad, 1.0)


def test_validation_happens_before_drawing():
    class Forbidden:
        is_secure = True

        def uint64(self, n):
            raise AssertionError("drew randomness before validating")

    with pytest.raises(ParameterError):
        noise.laplace(-1.0, 5, random_state=Forbidden())
    with pytest.raises(ParameterError):
        noise.gaussian(1.0, -5, random_state=Forbidden())


# --------------------------------------------------------------------------- shapes and types


@pytest.mark.parametrize(
    "sampler, kind, dtype",
    [
        (lambda **kw: noise.laplace(2.0, **kw), float, np.float64),
        (lambda **kw: noise.gaussian(2.0, **kw), float, np.float64),
        (lambda **kw: noise.exponential(2.0, **kw), float, np.float64),
        (lambda **kw: noise.uniform(**kw), float, np.float64),
        (lambda **kw: noise.gumbel(**kw), float, np.float64),
        (lambda **kw: noise.bernoulli(0.3, **kw), bool, np.bool_),
        (lambda **kw: noise.discrete_laplace(2.0, **kw), int, np.int64),
        (lambda **kw: noise.discrete_gaussian(2.0, **kw), int, np.int64),
    ],
)
def test_shapes_and_dtypes(sampler, kind, dtype):
    scalar = sampler(random_state=1)
    assert type(scalar) is kind
    for size, shape in [(0, (0,)), (1, (1,)), (7, (7,)), ((2, 3), (2, 3)), ([4], (4,)), ((), ())]:
        out = sampler(size=size, random_state=1)
        assert isinstance(out, np.ndarray) and out.shape == shape and out.dtype == dtype


def test_gamma_norm_vector_shapes():
    assert noise.gamma_norm_vector(4, 1.0, random_state=0).shape == (4,)
    assert noise.gamma_norm_vector(1, 1.0, random_state=0).shape == (1,)
    assert noise.gamma_norm_vector(4, 1.0, 5, random_state=0).shape == (5, 4)
    assert noise.gamma_norm_vector(4, 1.0, (2, 3), random_state=0).shape == (2, 3, 4)
    assert noise.gamma_norm_vector(4, 1.0, 0, random_state=0).shape == (0, 4)


def test_odd_sizes_and_chunk_boundaries():
    n = noise._CHUNK + 3
    for sampler in (noise.laplace, noise.gaussian, noise.discrete_laplace):
        x = sampler(1.5, n, random_state=4)
        assert x.shape == (n,) and np.all(np.isfinite(x))
        # no chunk repeats another chunk's draws
        assert not np.array_equal(x[:3], x[noise._CHUNK : noise._CHUNK + 3])
    assert noise.gaussian(1.0, 1, random_state=0) is not None
    assert noise.gaussian(1.0, 3, random_state=0).shape == (3,)


# --------------------------------------------------------------------------- the grid


@pytest.mark.parametrize("scale", [1.0, 3.0, 0.1, 1234.5, 2.0**-700, 2.0**500])
def test_granularity_is_the_next_power_of_two_times_2_to_minus_32(scale):
    lam = noise.granularity(scale)
    assert math.frexp(lam)[0] == 0.5
    assert scale * 2.0**-32 <= lam < scale * 2.0**-31
    assert noise.granularity(2.0**5) == 2.0 ** (5 - 32)


@pytest.mark.parametrize("scale", [1.0, 3.0, 0.1, 1234.5, 2.0**-700])
def test_continuous_outputs_lie_on_the_grid(scale, seed):
    lam = noise.granularity(scale)
    assert on_grid(noise.laplace(scale, 10_000, random_state=seed), lam)
    assert on_grid(noise.gaussian(scale, 10_000, random_state=seed), lam)
    assert on_grid(noise.gamma_norm_vector(5, scale, 100, random_state=seed), lam)
    assert on_grid(noise.laplace(scale), lam)  # the secure default too
    assert on_grid(noise.gaussian(scale, 100), lam)


def test_snap_values():
    assert noise.snap(0.3, 0.25) == 0.25
    assert noise.snap(0.375, 0.25) == 0.5  # tie to even multiple
    assert noise.snap(0.125, 0.25) == 0.0
    assert noise.snap(-0.4, 0.5) == -0.5
    assert math.copysign(1.0, noise.snap(-0.1, 1.0)) == 1.0  # no negative zero
    assert isinstance(noise.snap(1, 0.5), float)
    big = 2.0**80 + 2.0**28
    assert noise.snap(big, 2.0**-20) == big  # already a multiple of the grid
    assert noise.snap(1e308, 2.0**-1000) == 1e308  # value / granularity overflows
    arr = noise.snap(np.array([[0.1, 0.2], [0.3, 7.0]]), 2.0**-3)
    assert arr.shape == (2, 2) and on_grid(arr, 2.0**-3)
    assert np.array_equal(noise.snap(np.arange(5), 1.0), np.arange(5.0))


@pytest.mark.parametrize("bad", [math.nan, math.inf, [1.0, -math.inf]])
def test_snap_refuses_non_finite_without_printing_the_value(bad):
    with pytest.raises(DataValidationError) as info:
        noise.snap(bad, 0.5, name="salary")
    assert str(info.value) == "salary contains NaN or infinity; it must be finite"


@pytest.mark.parametrize("bad", ["3", [1, "a"], True, [[1.0], [1.0, 2.0]], 1 + 2j])
def test_snap_refuses_non_numeric(bad):
    with pytest.raises(ParameterTypeError, match="value must be a real number"):
        noise.snap(bad, 0.5)


@pytest.mark.parametrize("scale", [1.0, 3.0, 1e-3, 5e4])
def test_snap_plus_noise_is_exact_and_on_the_grid(scale, seed):
    lam = noise.granularity(scale)
    rng = np.random.default_rng(seed)
    values = rng.normal(0, 100 * scale, 2000)
    snapped = noise.snap(values, lam)
    assert on_grid(snapped, lam) and np.all(np.abs(snapped - values) <= lam / 2)
    for draw in (noise.laplace, noise.gaussian):
        z = draw(scale, values.size, random_state=seed, granularity=lam)
        released = snapped + z
        assert on_grid(released, lam)
        # the float sum is the exact sum: subtracting either term recovers the other
        assert np.array_equal(released - snapped, z) and np.array_equal(released - z, snapped)
        for a, b, r in zip(snapped[:50], z[:50], released[:50], strict=True):
            assert Fraction(r) == Fraction(a) + Fraction(b)


# --------------------------------------------------------------------------- randomness sources


@pytest.mark.parametrize("name", sorted(CONTINUOUS))
def test_seeded_draws_are_reproducible(name, seed):
    a = CONTINUOUS[name](2.0, 100, random_state=seed)
    b = CONTINUOUS[name](2.0, 100, random_state=seed)
    c = CONTINUOUS[name](2.0, 100, random_state=seed + 1)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


@pytest.mark.parametrize("name", sorted(CONTINUOUS))
def test_secure_default_differs_between_calls(name):
    assert not np.array_equal(CONTINUOUS[name](1000.0, 100), CONTINUOUS[name](1000.0, 100))


def test_seeded_random_state_warns_at_the_callers_line():
    with pytest.warns(InsecureRandomnessWarning) as record:
        noise.laplace(1.0, 3, random_state=0)
    assert record[0].filename == __file__


def test_resolved_source_is_reused_without_warning():
    src = SeededRandom(3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a = noise.laplace(1.0, 5, random_state=src)
        b = noise.laplace(1.0, 5, random_state=src)
    assert not np.array_equal(a, b)  # the stream advanced
    with pytest.warns(InsecureRandomnessWarning):
        assert np.array_equal(a, noise.laplace(1.0, 5, random_state=3))


# --------------------------------------------------------------------------- the construction


@pytest.mark.parametrize("z", range(10))
def test_trailing_zeros_of_the_ten_bit_field_give_z(z):
    words = [word(z, 0), word(z, MASK53), word(z, 1 << 52)]
    e = noise.exponential(1.0, 3, random_state=Scripted(words))
    assert e[0] == pytest.approx(z * LN2, abs=1e-15)  # V = 0: R = 0
    assert z * LN2 < e[1] <= (z + 1) * LN2  # V -> 1: R -> ln2
    assert e[2] == pytest.approx(z * LN2 - math.log1p(-0.25), rel=1e-15)  # V = 1/2


def test_slow_path_continues_with_fresh_words():
    # Ten zero bits: z = 10 + trailing zeros of fresh words (64 per all-zero word).
    first = [0, 0, 0, 1 << 63]  # z field 0; last has the sign bit (ignored by E)
    fresh = [1, 1 << 17, 0, 1 << 5]
    again = [1 << 2]  # for the all-zero fresh word: 64 + 2
    e = noise.exponential(1.0, 4, random_state=Scripted(first, fresh, again))
    expected_z = [10, 27, 10 + 64 + 2, 15]
    np.testing.assert_allclose(e, np.array(expected_z) * LN2, rtol=1e-15)


def test_laplace_sign_comes_from_bit_63():
    words = [word(1, 12345), word(1, 12345, negative=True)]
    x = noise.laplace(1.0, 2, random_state=Scripted(words))
    assert x[0] > 0 and x[1] == -x[0]
    assert x[0] == pytest.approx(LN2 - math.log1p(-12345 * 2.0**-54), abs=2.0**-32)


def test_laplace_slow_path():
    x = noise.laplace(1.0, 2, random_state=Scripted([0, 1 << 63], [1 << 3, 1 << 40]))
    np.testing.assert_allclose(x, [13 * LN2, -50 * LN2], atol=2.0**-32)


def test_gaussian_uses_cos_and_sin_of_one_angle():
    e_word = word(1, 0)  # E = ln2, radius sqrt(2 ln2)
    angle = 1 << 50  # U = 1/8: angle pi/4
    x = noise.gaussian(1.0, 2, random_state=Scripted([e_word, angle]))
    r = math.sqrt(2 * LN2)
    np.testing.assert_allclose(
        x, [r * math.cos(math.pi / 4), r * math.sin(math.pi / 4)], atol=2.0**-32
    )


def test_uniform_and_bernoulli_bit_patterns():
    u = noise.uniform(3, random_state=Scripted([0, MASK53, (7 << 53) | (1 << 52)]))
    assert u.tolist() == [0.0, 1.0 - 2.0**-53, 0.5]
    b = noise.bernoulli(0.5, 2, random_state=Scripted([(1 << 52) - 1, 1 << 52]))
    assert b.tolist() == [True, False]
    assert not noise.bernoulli(0.0, 100, random_state=0).any()
    assert noise.bernoulli(1.0, 100, random_state=0).all()


def test_gumbel_construction_and_unbounded_upper_tail():
    # word 1: z field and a 52-bit mantissa f; word 2: the binade j of V (trailing zeros).
    first = [word(1, 0), word(0, 1 << 51), word(0, 0), word(0, 0)]
    second = [1, 1, 0, 0]  # j = 0, 0, then fresh words
    # The two zero second words continue together: [0, 1<<10] gives the fourth j = 64 + 10;
    # the third keeps drawing: [0], [0], [1<<3], so j = 64 + 64 + 64 + 64 + 3.
    fresh = [[0, 1 << 10], [0], [0], [1 << 3]]
    src = Scripted(first + second, *fresh)
    g = noise.gumbel(4, random_state=src)
    # z = 1, V = 1/2: G = −ln(ln2 + R), R = −log1p(−1/4)
    assert g[0] == pytest.approx(-math.log(LN2 - math.log1p(-0.25)), rel=1e-15)
    # z = 0, V = 0.75: G = −ln R with R = −log1p(−0.375)
    assert g[1] == pytest.approx(-math.log(-math.log1p(-0.375)), rel=1e-15)
    # z = 0 and V = 2**-(1+j): G ≈ (2+j)·ln2, far beyond the 36.7 cap of −ln(53-bit uniform)
    assert g[2] == pytest.approx((2 + 4 * 64 + 3) * LN2, rel=1e-15)
    assert g[3] == pytest.approx((2 + 64 + 10) * LN2, rel=1e-15)


def test_gumbel_far_tail_does_not_underflow():
    src = Scripted([word(0, 0), 0], *([[0]] * 17), [1])  # j = 18·64: V/2 underflows to 0
    g = noise.gumbel(1, random_state=src)
    assert g[0] == pytest.approx((2 + 18 * 64) * LN2, rel=1e-15)


def test_discrete_laplace_is_difference_of_floors():
    # G = floor(scale * E): E = 3 ln2 -> floor(2.0794...) = 2; E = 0 -> 0.
    src = Scripted([word(3, 0), word(0, 0), word(0, 0), word(3, 0)])
    assert noise.discrete_laplace(1.0, 2, random_state=src).tolist() == [2, -2]


def test_gamma_norm_vector_norm_and_direction():
    v = noise.gamma_norm_vector(3, 2.0, 2000, random_state=0)
    norms = np.linalg.norm(v, axis=1)
    assert norms.mean() == pytest.approx(6.0, rel=0.05)
    unit = v / norms[:, None]
    assert np.abs(unit.mean(axis=0)).max() < 0.1


# ------------------------------------------------------------------ exact bin probabilities

_DEC = decimal.Context(prec=60)
_LN2_DEC = _DEC.ln(decimal.Decimal(2))


def _bin_index(sampler, z: int, m: np.ndarray) -> np.ndarray:
    """What ``sampler(words)`` returns for geometric part z and mantissas m (sign +)."""
    m = m.astype(np.uint64)
    if z < 10:
        return sampler(Scripted((np.uint64(1 << z) << np.uint64(53)) | m), m.size, fresh=None)
    fresh = np.full(m.size, np.uint64(1) << np.uint64(z - 10))
    return sampler(Scripted(m), m.size, fresh=fresh)


def _first_mantissa_reaching(sampler, z: int, targets: np.ndarray) -> np.ndarray:
    """The smallest 53-bit m whose output index is >= target, for every target (bisection)."""
    lo = np.zeros(targets.size, dtype=np.int64)
    hi = np.full(targets.size, 1 << 53, dtype=np.int64)
    while np.any(lo < hi):
        mid = (lo + hi) // 2
        reached = _bin_index(sampler, z, np.minimum(mid, MASK53)) >= targets
        lo, hi = np.where(reached, lo, mid + 1), np.where(reached, mid, hi)
    return lo


def _ideal_u(factor: float, z: int, y) -> decimal.Decimal:
    # U at which factor·(z·ln2 + R(U)) = y, with R(U) = -ln(1 - U/2).
    r = _DEC.subtract(_DEC.divide(decimal.Decimal(y), decimal.Decimal(factor)), z * _LN2_DEC)
    return 2 * (1 - _DEC.exp(-r))


def _max_relative_bin_error(sampler, factor: float, z: int, offset: float, n_bins: int) -> float:
    """Max over random bins inside the z segment of |#mantissas / (2**53 · ideal mass) − 1|."""
    rng = np.random.default_rng(z)
    lo_y = math.ceil(factor * z * LN2) + 2
    hi_y = math.floor(factor * (z + 1) * LN2) - 2
    ks = np.unique(rng.integers(lo_y, hi_y, n_bins))
    start = _first_mantissa_reaching(sampler, z, ks)
    stop = _first_mantissa_reaching(sampler, z, ks + 1)
    # the map m -> index is monotone around the thresholds
    assert np.all(_bin_index(sampler, z, np.maximum(start - 1, 0)) < ks)
    assert np.all(_bin_index(sampler, z, stop - 1) == ks)
    worst = 0.0
    for k, count in zip(ks.tolist(), (stop - start).tolist(), strict=True):
        lower = _ideal_u(factor, z, decimal.Decimal(k) - decimal.Decimal(offset))
        upper = _ideal_u(factor, z, decimal.Decimal(k + 1) - decimal.Decimal(offset))
        ideal = (upper - lower) * 2**53
        worst = max(worst, abs(float(decimal.Decimal(count) / ideal - 1)))
    return worst


def _laplace_index(scale: float, lam: float):
    def run(src, n, fresh):
        if fresh is not None:
            src.batches.append(fresh)
        return np.rint(noise.laplace(scale, n, random_state=src, granularity=lam) / lam)

    return run


def _discrete_laplace_index(scale: float):
    def run(src, n, fresh):
        first = src.batches.pop(0)
        zero = np.full(n, (np.uint64(1) << np.uint64(53)), dtype=np.uint64)  # E = 0: G2 = 0
        src.batches.insert(0, np.concatenate([first, zero]))
        if fresh is not None:
            src.batches.append(fresh)
        return noise.discrete_laplace(scale, n, random_state=src)

    return run


@pytest.mark.parametrize("z", [0, 4, 9, 10, 23, 70])
@pytest.mark.parametrize(
    "scale, grid_bits, bound",
    [(1.0, 32, 2.0**-19), (3.0, 32, 2.0**-19), (1.0, noise.MAX_GRID_BITS, 2.0**-10)],
)
def test_laplace_bin_probabilities_match_the_ideal_law(z, scale, grid_bits, bound):
    """Counts every 53-bit mantissa that lands in each of 40 random grid bins (exactly, by
    bisection) and compares with the ideal Laplace mass of that bin (60-digit decimals).

    Bins of the default grid hold ~2**21 mantissas; the measured error is ±1 mantissa per
    bin edge, about 2**-20, at every magnitude (z up to 70, i.e. |x| ≈ 49 b).
    """
    lam = math.ldexp(noise.granularity(scale), 32 - grid_bits)
    err = _max_relative_bin_error(_laplace_index(scale, lam), scale / lam, z, 0.5, 40)
    assert err <= bound


@pytest.mark.parametrize("z", [0, 9, 10, 50])
@pytest.mark.parametrize("scale", [37.5, 1000.0, 2.0**30])
def test_discrete_laplace_probabilities_match_the_ideal_law(z, scale):
    """The same exact count for floor(scale·E): each integer's probability is within
    about scale·2**-51 of the ideal geometric law (relative)."""
    err = _max_relative_bin_error(_discrete_laplace_index(scale), scale, z, 0.0, 20)
    assert err <= max(scale * 2.0**-50, 2.0**-40)


def test_discrete_laplace_small_scale_exact_tail():
    # scale 0.7: P(G >= 1) = P(E >= 1/0.7). With z = 2 (E in [1.386, 2.079)) the threshold
    # R = 1/0.7 - 2 ln2 has exactly one first mantissa; below it G = 0, from it on G = 1.
    scale = 0.7
    sampler = _discrete_laplace_index(scale)
    m_star = _first_mantissa_reaching(sampler, 2, np.array([1]))[0]
    ideal = _ideal_u(scale, 2, 1) * 2**53
    assert abs(decimal.Decimal(int(m_star)) - ideal) <= 2


@pytest.mark.skipif(
    np.finfo(np.longdouble).nmant < 63, reason="needs 80-bit long double as the reference"
)
@pytest.mark.parametrize("scale", [1.0, 3.0])
def test_float_pipeline_agrees_with_extended_precision(scale):
    """The grid index of 2**18 Laplace and Gaussian draws, recomputed from the same words
    in 64-bit-mantissa arithmetic, differs for at most 2 draws (expected: ~2**-21 each)."""
    ld = np.longdouble
    lam = noise.granularity(scale)
    factor = ld(scale / lam)
    n = 1 << 16  # below one chunk, so the words come in one batch

    class Recording(SeededRandom):
        def uint64(self, k):
            w = super().uint64(k)
            self.log.append(w.copy())
            return w

    def exp_ref(w):
        m = (w & np.uint64(MASK53)).astype(ld) * ld(2) ** -53
        t = ((w >> np.uint64(53)) & np.uint64(1023)).astype(np.int64)
        z = np.full(w.size, -1)
        for j in range(9, -1, -1):
            z = np.where((t >> j) & 1 == 1, j, z)
        return z.astype(ld) * np.log(ld(2)) - np.log1p(-m / 2), z >= 0

    src = Recording(int(scale * 10))
    src.log = []
    x = noise.laplace(scale, n, random_state=src)
    e, ok = exp_ref(src.log[0])
    assert ok.sum() > n * 0.99
    assert np.sum((np.rint(np.abs(x) / lam) != np.rint(e * factor))[ok]) <= 2

    src = Recording(int(scale * 10))
    src.log = []
    x = noise.gaussian(scale, n, random_state=src)
    w = src.log[0]
    e, ok = exp_ref(w[: n // 2])
    theta = (w[n // 2 :] & np.uint64(MASK53)).astype(ld) * (2 * np.arccos(ld(-1))) * ld(2) ** -53
    radius = np.sqrt(2 * np.where(ok, e, 0))
    ref = np.concatenate(
        [np.rint(radius * np.cos(theta) * factor), np.rint(radius * np.sin(theta) * factor)]
    )
    mask = np.concatenate([ok, ok])
    assert np.sum((np.rint(x / lam) != ref)[mask]) <= 2
