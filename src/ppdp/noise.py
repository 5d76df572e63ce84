"""Secure, floating-point-safe, vectorised noise samplers.

Every sampler turns raw 64-bit words from a :class:`~ppdp.random.RandomSource` (the
operating system's CSPRNG unless a ``random_state`` is given) into noise with numpy
array operations. The continuous samplers (:func:`laplace`, :func:`gaussian`,
:func:`gamma_norm_vector`) return values on a power-of-two grid of spacing
``granularity(scale)``; a mechanism releases ``snap(value, Λ) + noise``, whose sum is exact
in floating point, so the released float has no "holes" that reveal the input
(Mironov 2012; Jin et al. 2022). The discrete samplers return integers. The scale of the
Laplace, Gaussian and gamma-norm samplers is multiplied by the source's
:func:`~ppdp.random.noise_factor` (1 for every source but an audit's positive control),
the grid staying the one of the scale asked for.

The privacy argument, the construction of the exponential variate and what is only
approximate (and by how much) are in ``docs/proofs/noise.md``.

Side channels: the samplers are **not constant-time**; the rejection loop of
:func:`discrete_gaussian` and the rare extra words of the exponential construction make the
running time depend (weakly) on the noise drawn.

References
----------
.. [M12] I. Mironov. On significance of the least significant bits for differential
   privacy. CCS 2012.
.. [J22] J. Jin, E. McMurtry, B. Rubinstein, O. Ohrimenko. Are we there yet?
   Timing and floating-point attacks on differential privacy systems. IEEE S&P 2022.
.. [CKS20] C. Canonne, G. Kamath, T. Steinke. The discrete Gaussian for differential
   privacy. NeurIPS 2020.
.. [CMS11] K. Chaudhuri, C. Monteleoni, A. Sarwate. Differentially private empirical
   risk minimization. JMLR 2011.
"""

from __future__ import annotations

import decimal
import functools
import math
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ppdp._validation import check_int, check_positive, check_real
from ppdp.exceptions import DataValidationError, ParameterError, ParameterTypeError
from ppdp.random import RandomSource, RandomState, noise_factor, resolve_random_state

__all__ = [
    "GRID_BITS",
    "MAX_GRID_BITS",
    "bernoulli",
    "discrete_gaussian",
    "discrete_laplace",
    "exponential",
    "gamma_norm_vector",
    "gaussian",
    "granularity",
    "gumbel",
    "laplace",
    "snap",
    "uniform",
]

#: The default noise grid is 2**-GRID_BITS times the scale, rounded up to a power of two.
GRID_BITS = 32
#: The finest grid a sampler accepts: ``granularity >= scale * 2**-MAX_GRID_BITS``. Finer
#: grids are not resolved by float64 noise (some bins would be under- or unpopulated).
MAX_GRID_BITS = 40

Size = int | Sequence[int] | None

# Samples per chunk: the working buffers (a few arrays of this length) stay in cache and
# memory stays bounded however many samples are asked for.
_CHUNK = 1 << 18

# Noise scales outside (2**-991, 2**960]: the grid would be subnormal, or noise could overflow.
_MIN_GRID_EXP = -1022
_MAX_SCALE = 2.0**960
# Discrete samplers compute floor(scale * E) in float64; the relative error of each integer's
# probability is at most about scale * 2**-50, i.e. 2**-10 at this cap.
_MAX_DISCRETE_SCALE = 2.0**40
_MIN_DISCRETE_SIGMA = 2.0**-40

_MASK53 = np.uint64((1 << 53) - 1)
_MASK52 = np.uint64((1 << 52) - 1)
_2_M52 = 2.0**-52
_SIGN_BIT = np.uint64(1 << 63)
_Z_SHIFT = np.uint64(53)
_Z_BITS = 10
_Z_MASK = np.uint64((1 << _Z_BITS) - 1)
_ONE = np.uint64(1)
_LN2 = math.log(2.0)
_NEG_2_M54 = -(2.0**-54)  # V/2 = M * 2**-54 for the 53-bit integer M
_2_M53 = 2.0**-53
_TWO_PI_2_M53 = 2.0 * math.pi * 2.0**-53


def _z_counts() -> NDArray[np.float64]:
    # The number of trailing zero bits of every 10-bit t, as a float; t = 0 is the slow
    # path (10 or more trailing zeros), completed from fresh words.
    table = np.empty(1 << _Z_BITS, dtype=np.float64)
    table[0] = _Z_BITS
    for t in range(1, 1 << _Z_BITS):
        table[t] = (t & -t).bit_length() - 1
    table.setflags(write=False)
    return table


_Z_COUNT = _z_counts()
_Z_TABLE = _Z_COUNT * _LN2  # z·ln2, one correctly rounded product per entry
_Z_TABLE.setflags(write=False)


# --------------------------------------------------------------------------- validation


def _check_scale(name: str, value: Any) -> float:
    v = check_positive(name, value)
    if v > _MAX_SCALE:
        raise ParameterError(f"{name} ({v!r}) overflows: a noise scale must be <= 2**960")
    if _grid_exponent(v) < _MIN_GRID_EXP:
        raise ParameterError(
            f"{name} ({v!r}) underflows: a noise scale must be > 2**-991 "
            "so that its noise grid is a normal float"
        )
    return v


def _grid_exponent(scale: float) -> int:
    mantissa, exp = math.frexp(scale)  # scale = mantissa * 2**exp, mantissa in [0.5, 1)
    ceil_log2 = exp - 1 if mantissa == 0.5 else exp
    return ceil_log2 - GRID_BITS


def _check_granularity(value: Any, *, scale: float | None = None) -> float:
    lam = check_positive("granularity", value)
    mantissa, _ = math.frexp(lam)
    if mantissa != 0.5 or lam < 2.0**_MIN_GRID_EXP or lam > 2.0**900:
        raise ParameterError(
            f"granularity ({lam!r}) must be a power of two in [2**-1022, 2**900] "
            "(use ppdp.noise.granularity(scale))"
        )
    if scale is not None and scale / lam > 2.0**MAX_GRID_BITS:
        raise ParameterError(
            f"granularity ({lam!r}) is too fine for noise scale {scale!r}: it must be "
            f">= scale * 2**-{MAX_GRID_BITS}, since float64 noise cannot resolve a finer grid "
            "(docs/proofs/noise.md)"
        )
    return lam


def _check_size(size: Any) -> tuple[int, ...] | None:
    if size is None:
        return None
    if isinstance(size, numbers.Integral) and not isinstance(size, bool | np.bool_):
        return (check_int("size", size, minimum=0),)
    if isinstance(size, tuple | list):
        return tuple(check_int("size", s, minimum=0) for s in size)
    raise ParameterTypeError(
        f"size ({size!r}) must be None, a non-negative int or a tuple of them, "
        f"not {type(size).__name__}"
    )


def _count(shape: tuple[int, ...] | None) -> int:
    return 1 if shape is None else math.prod(shape)


# --------------------------------------------------------------------------- the grid


def granularity(scale: float) -> float:
    """The power-of-two grid spacing Λ used for noise of the given scale.

    ``Λ = 2 ** (ceil(log2(scale)) - GRID_BITS)``, so ``scale * 2**-32 <= Λ < scale * 2**-31``.

    Parameters
    ----------
    scale : float
        The noise scale (Laplace ``b``, Gaussian ``sigma``); finite, > 0, in
        ``(2**-991, 2**960]``.

    Returns
    -------
    float
        Λ, an exact power of two and a normal float.

    Raises
    ------
    ParameterError
        If ``scale`` is not finite and > 0, or Λ would be subnormal (underflow) or the
        scale too large (overflow).

    Examples
    --------
    >>> granularity(1.0) == 2.0**-32
    True
    >>> granularity(3.0) == 2.0**-30
    True
    """
    s = _check_scale("scale", scale)
    return math.ldexp(1.0, _grid_exponent(s))


def snap(value: ArrayLike, granularity: float, *, name: str = "value") -> Any:
    """Round ``value`` to the nearest multiple of the power of two ``granularity``.

    ``np.rint(value / Λ) * Λ`` (ties to even), which is exact in floating point because Λ
    is a power of two; values of magnitude >= ``2**52 * Λ`` are multiples of Λ already and
    are returned unchanged. ``-0.0`` becomes ``0.0``.

    A mechanism releases ``snap(v, Λ) + noise`` with noise from :func:`laplace` or
    :func:`gaussian` on the same grid. Snapping moves each value by at most Λ/2, so the
    sensitivity used to calibrate the noise must be ``Δ + Λ`` (``Δ + Λ·sqrt(d)`` in L2 for a
    vector of ``d`` coordinates). See ``docs/proofs/noise.md``.

    Parameters
    ----------
    value : float or array_like of float
        The (private) value. Must be finite.
    granularity : float
        Λ, a power of two (from :func:`granularity`).
    name : str, default "value"
        The parameter name used in error messages.

    Returns
    -------
    float or ndarray of float64
        A float for a scalar input, else an array of the same shape.

    Raises
    ------
    DataValidationError
        If ``value`` contains NaN or an infinity (the message never shows the value).
    ParameterTypeError
        If ``value`` is not an int or float scalar or regular array (bools are refused).

    Examples
    --------
    >>> snap(0.3, 0.25)
    0.25
    >>> snap([1.0, -0.4], 0.5).tolist()
    [1.0, -0.5]
    """
    lam = _check_granularity(granularity)
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError):  # ragged nested sequences
        raw = np.asarray(None, dtype=object)
    if raw.dtype.kind not in "iuf":
        raise ParameterTypeError(
            f"{name} must be a real number or a regular array of real numbers "
            f"(integer or float dtype), not {type(value).__name__} of dtype {raw.dtype}"
        )
    arr = raw.astype(np.float64, copy=False)
    if not np.all(np.isfinite(arr)):
        raise DataValidationError(f"{name} contains NaN or infinity; it must be finite")
    with np.errstate(over="ignore"):
        rounded = np.rint(arr / lam) * lam
    out = np.where(np.abs(arr) >= 2.0**52 * lam, arr, rounded) + 0.0
    if out.ndim == 0:
        return float(out)
    return out


# --------------------------------------------------------------------------- core transforms


class _Work:
    """Reusable per-call buffers of one chunk's length."""

    def __init__(self, n: int):
        self.u64 = np.empty(n, dtype=np.uint64)
        self.f64 = np.empty(n, dtype=np.float64)

    def get(self, n: int) -> tuple[NDArray[np.uint64], NDArray[np.float64]]:
        return self.u64[:n], self.f64[:n]


def _trailing_zero_bits(src: RandomSource, k: int) -> NDArray[np.int64]:
    """Number of zero bits before the first one in a fresh stream of random bits (k times).

    Geometric(1/2) on {0, 1, ...}: one word each, plus 64 per all-zero word.
    """
    total = np.zeros(k, dtype=np.int64)
    pending = np.arange(k)
    while pending.size:
        w = np.asarray(src.uint64(pending.size), dtype=np.uint64)
        nonzero = w != 0
        lowest = w & (~w + _ONE)  # the lowest set bit, as a power of two (0 for w == 0)
        # frexp of a power of two 2**j is exact: (0.5, j + 1).
        _, exp = np.frexp(lowest.astype(np.float64))
        total[pending[nonzero]] += exp[nonzero].astype(np.int64) - 1
        total[pending[~nonzero]] += 64
        pending = pending[~nonzero]
    return total


def _fill_exponential(
    src: RandomSource, words: NDArray[np.uint64], out: NDArray[np.float64], work: _Work
) -> None:
    """Write an Exp(1) variate per word into ``out``, using bits 0..62 of each word.

    E = z·ln2 + R: z ~ Geometric(1/2) from the trailing zeros of bits 53..62 (continued
    with fresh words when all ten are zero), R = -log1p(-V/2) with V = M·2**-53 from bits
    0..52 has density 2·e**-x on [0, ln2). By memorylessness floor(E/ln2) ~ Geometric(1/2)
    and E mod ln2 is independent of it with that density, so E ~ Exp(1) exactly up to the
    53-bit resolution of V and one rounding per operation.
    """
    n = words.shape[0]
    tmp, v = work.get(n)
    np.bitwise_and(words, _MASK53, out=tmp)
    np.multiply(tmp, _NEG_2_M54, out=v)  # -V/2, exact
    np.log1p(v, out=v)  # log1p(-V/2) = -R, in (-ln2, 0]
    np.right_shift(words, _Z_SHIFT, out=tmp)
    np.bitwise_and(tmp, _Z_MASK, out=tmp)
    np.take(_Z_TABLE, tmp.view(np.int64), out=out, mode="clip")
    np.subtract(out, v, out=out)
    slow = np.flatnonzero(tmp == 0)  # probability 2**-10 per sample
    if slow.size:
        z = _trailing_zero_bits(src, slow.size) + _Z_BITS
        out[slow] = z * _LN2 - v[slow]


_DEC = decimal.Context(prec=80)
_LN2_DEC = _DEC.ln(decimal.Decimal(2))


@functools.lru_cache(maxsize=256)
def _ln2_split(factor: float) -> tuple[float, float]:
    """``factor·ln2`` as ``hi + lo``: hi has 40 significant bits, so ``z·hi`` is exact for
    every integer z < 2**13, and lo carries the next 53 bits."""
    ctx = _DEC
    exact = ctx.multiply(decimal.Decimal(factor), _LN2_DEC)
    mantissa, exp = math.frexp(float(exact))
    hi = math.ldexp(round(math.ldexp(mantissa, 40)), exp - 40)
    lo = float(ctx.subtract(exact, decimal.Decimal(hi)))
    return hi, lo


def _fill_scaled_exponential(
    src: RandomSource,
    words: NDArray[np.uint64],
    out: NDArray[np.float64],
    work: _Work,
    extra: NDArray[np.float64],
    factor: float,
    split: tuple[float, float],
    to_integer: np.ufunc,
) -> None:
    """``out = to_integer(factor · E)`` (``np.rint`` or ``np.floor``) for the E of
    :func:`_fill_exponential`, from bits 0..62 of each word.

    ``factor·E = z·(factor·ln2) + factor·R`` is evaluated as ``z·hi`` (exact) split into
    its nearest integer and fraction (both exact), plus ``z·lo + factor·R``; only this last,
    small sum is rounded, so the absolute error is about ``factor·2**-52`` at every
    magnitude instead of growing with E.
    """
    n = words.shape[0]
    tmp, v = work.get(n)
    zf = extra[:n]
    hi, lo = split
    np.bitwise_and(words, _MASK53, out=tmp)
    np.multiply(tmp, _NEG_2_M54, out=v)  # -V/2, exact
    np.log1p(v, out=v)  # -R
    np.right_shift(words, _Z_SHIFT, out=tmp)
    np.bitwise_and(tmp, _Z_MASK, out=tmp)
    np.take(_Z_COUNT, tmp.view(np.int64), out=zf, mode="clip")
    slow = np.flatnonzero(tmp == 0)
    if slow.size:
        zf[slow] = _trailing_zero_bits(src, slow.size) + _Z_BITS
    np.multiply(v, -factor, out=v)  # factor·R
    np.multiply(zf, lo, out=out)
    np.add(v, out, out=v)  # small part: z·lo + factor·R
    np.multiply(zf, hi, out=zf)  # z·hi, exact
    np.rint(zf, out=out)
    np.subtract(zf, out, out=zf)  # fraction of z·hi, exact
    np.add(v, zf, out=v)
    to_integer(v, out=v)
    np.add(out, v, out=out)


def _fill_uniform(words: NDArray[np.uint64], out: NDArray[np.float64], work: _Work) -> None:
    """U = M·2**-53 in [0, 1) from bits 0..52 of each word (exact)."""
    tmp, _ = work.get(words.shape[0])
    np.bitwise_and(words, _MASK53, out=tmp)
    np.multiply(tmp, _2_M53, out=out)


def _words(src: RandomSource, n: int) -> NDArray[np.uint64]:
    return np.asarray(src.uint64(n), dtype=np.uint64)


def _exponential_array(src: RandomSource, n: int) -> NDArray[np.float64]:
    out = np.empty(n, dtype=np.float64)
    work = _Work(min(n, _CHUNK))
    for start in range(0, n, _CHUNK):
        stop = min(start + _CHUNK, n)
        _fill_exponential(src, _words(src, stop - start), out[start:stop], work)
    return out


def _standard_normal_array(src: RandomSource, n: int) -> NDArray[np.float64]:
    """n standard normals by Box–Muller (two words per pair, both cos and sin), not snapped."""
    npairs = (n + 1) // 2
    out = np.empty(2 * npairs, dtype=np.float64)
    chunk = _CHUNK // 2
    work = _Work(min(npairs, chunk))
    radius = np.empty(min(npairs, chunk), dtype=np.float64)
    for start in range(0, npairs, chunk):
        c = min(start + chunk, npairs) - start
        words = _words(src, 2 * c)
        r = radius[:c]
        _fill_exponential(src, words[:c], r, work)
        np.multiply(r, 2.0, out=r)
        np.sqrt(r, out=r)  # R = sqrt(2E) = sqrt(-2 ln U)
        _, theta = work.get(c)
        tmp, _ = work.get(c)
        np.bitwise_and(words[c:], _MASK53, out=tmp)
        np.multiply(tmp, _TWO_PI_2_M53, out=theta)  # 2πU
        cos_part = out[2 * start : 2 * start + c]
        sin_part = out[2 * start + c : 2 * start + 2 * c]
        np.sin(theta, out=sin_part)
        np.cos(theta, out=cos_part)
        np.multiply(cos_part, r, out=cos_part)
        np.multiply(sin_part, r, out=sin_part)
    return out[:n]


def _round_to_grid(x: NDArray[np.float64], factor: float, lam: float) -> None:
    # round_Λ(scale * x) in place: x·(scale/Λ) equals fl(scale·x)/Λ exactly (Λ a power of two).
    np.multiply(x, factor, out=x)
    np.rint(x, out=x)
    np.multiply(x, lam, out=x)


def _discrete_laplace_array(src: RandomSource, scale: float, n: int) -> NDArray[np.int64]:
    """K = G1 − G2 with G = floor(scale·E) ~ Geometric(1 − e**(−1/scale)) on {0, 1, ...}."""
    out = np.empty(n, dtype=np.int64)
    c_max = min(n, _CHUNK)
    work = _Work(c_max)
    extra = np.empty(c_max, dtype=np.float64)
    g1 = np.empty(c_max, dtype=np.float64)
    g2 = np.empty(c_max, dtype=np.float64)
    split = _ln2_split(scale)
    for start in range(0, n, _CHUNK):
        c = min(start + _CHUNK, n) - start
        words = _words(src, 2 * c)
        a, b = g1[:c], g2[:c]
        _fill_scaled_exponential(src, words[:c], a, work, extra, scale, split, np.floor)
        _fill_scaled_exponential(src, words[c:], b, work, extra, scale, split, np.floor)
        np.subtract(a, b, out=a)  # exact: both are integers < 2**53
        out[start : start + c] = a
    return out


def _uniform_array(src: RandomSource, n: int) -> NDArray[np.float64]:
    out = np.empty(n, dtype=np.float64)
    work = _Work(min(n, _CHUNK))
    for start in range(0, n, _CHUNK):
        stop = min(start + _CHUNK, n)
        _fill_uniform(_words(src, stop - start), out[start:stop], work)
    return out


def _finish(out: NDArray[Any], shape: tuple[int, ...] | None, kind: type) -> Any:
    if shape is None:
        return kind(out[0])
    return out.reshape(shape)


# --------------------------------------------------------------------------- public samplers


def laplace(
    scale: float,
    size: Size = None,
    *,
    random_state: RandomState = None,
    granularity: float | None = None,
) -> float | NDArray[np.float64]:
    """Laplace noise of scale ``b`` on a power-of-two grid: density ∝ exp(−|x|/b).

    Each sample is ``round_Λ(b · S · E)`` with a random sign ``S`` and the exponential
    variate ``E = z·ln2 + R`` of ``docs/proofs/noise.md`` (unbounded support), from one
    64-bit word. ``b·E/Λ`` is evaluated with the integer part of ``z·(b/Λ)·ln2`` split off
    exactly, so its absolute error is about ``(b/Λ)·2**-52`` at every magnitude.

    Guarantee: releasing ``snap(v, Λ) + laplace(b, granularity=Λ)`` is post-processing of
    the ideal Laplace mechanism on the snapped value, hence ε-DP with ``ε = (Δ + Λ) / b``
    for a query of L1 sensitivity Δ, under whichever neighbouring relation Δ was derived
    for, up to the numerical caveat. Numerical caveat: the probability of each grid point
    matches the ideal rounded Laplace law up to a relative error of about
    ``(b/Λ)·2**-52`` (measured: below 2**-19 at the default grid, 2**-11 at the finest
    allowed grid ``b·2**-40``), uniformly over the support; so the float sampler is
    ε′-DP with ε′ ≈ ε + 2·(b/Λ)·2**-52.

    Parameters
    ----------
    scale : float
        The Laplace scale ``b`` (= Δ/ε); finite, > 0.
    size : int or tuple of int, optional
        Output shape; ``None`` returns one Python float.
    random_state : None, int, SeedSequence, Generator or RandomSource, optional
        ``None`` (the default) draws from the OS CSPRNG; anything else is reproducible,
        insecure, and issues an :class:`~ppdp.exceptions.InsecureRandomnessWarning`.
    granularity : float, optional
        The grid Λ: a power of two, at least ``scale * 2**-MAX_GRID_BITS``; default
        ``granularity(scale)``.

    Returns
    -------
    float or ndarray of float64
        Multiples of Λ.

    References
    ----------
    .. [M12] Mironov, CCS 2012 (the snapping mechanism).

    Examples
    --------
    >>> x = laplace(1.0, 1000)
    >>> bool(np.all(x / 2.0**-32 == np.rint(x / 2.0**-32)))
    True
    """
    b = _check_scale("scale", scale)
    lam = _grid_for(b, granularity)
    shape = _check_size(size)
    src = resolve_random_state(random_state)
    b *= noise_factor(src)  # 1 but for an audit's source, on the release's grid
    n = _count(shape)
    factor = b / lam
    split = _ln2_split(factor)
    out = np.empty(n, dtype=np.float64)
    c_max = min(n, _CHUNK)
    work = _Work(c_max)
    extra = np.empty(c_max, dtype=np.float64)
    sign = np.empty(c_max, dtype=np.uint64)
    for start in range(0, n, _CHUNK):
        stop = min(start + _CHUNK, n)
        words = _words(src, stop - start)
        seg = out[start:stop]
        _fill_scaled_exponential(src, words, seg, work, extra, factor, split, np.rint)
        np.multiply(seg, lam, out=seg)
        s = sign[: stop - start]
        np.bitwise_and(words, _SIGN_BIT, out=s)  # bit 63: seg >= 0, so OR-ing it negates
        seg_bits = seg.view(np.uint64)
        np.bitwise_or(seg_bits, s, out=seg_bits)
    return _finish(out, shape, float)


def gaussian(
    sigma: float,
    size: Size = None,
    *,
    random_state: RandomState = None,
    granularity: float | None = None,
) -> float | NDArray[np.float64]:
    """Gaussian noise N(0, σ²) on a power-of-two grid.

    Box–Muller with the exponential variate of ``docs/proofs/noise.md``:
    ``N = sqrt(2E)·cos(2πU)`` and ``sqrt(2E)·sin(2πU)`` (two words give two normals), then
    ``round_Λ(σN)``.

    Guarantee: releasing ``snap(v, Λ) + gaussian(σ, granularity=Λ)`` is post-processing of
    the ideal Gaussian mechanism on the snapped value, whose L2 sensitivity is at most
    ``Δ + Λ`` (``Δ + Λ·sqrt(d)`` for d coordinates); calibrate σ (classic or analytic) for
    that sensitivity to get (ε, δ)-DP or ρ-zCDP. Numerical caveat: bin probabilities match
    the ideal law up to a relative error estimated at 2**-17·max(1, |x|/σ) at the default
    grid (an estimate from an extended-precision comparison, not an exhaustive count; see
    ``docs/proofs/noise.md``).

    Parameters
    ----------
    sigma : float
        Standard deviation; finite, > 0.
    size : int or tuple of int, optional
        Output shape; ``None`` returns one Python float.
    random_state : None, int, SeedSequence, Generator or RandomSource, optional
        ``None`` (the default) uses the OS CSPRNG; anything else is reproducible and warns.
    granularity : float, optional
        The grid Λ: a power of two, at least ``sigma * 2**-MAX_GRID_BITS``; default
        ``granularity(sigma)``.

    Returns
    -------
    float or ndarray of float64
        Multiples of Λ.

    References
    ----------
    .. [J22] Jin et al., S&P 2022 (floating-point attacks on Gaussian samplers).
    """
    s = _check_scale("sigma", sigma)
    lam = _grid_for(s, granularity)
    shape = _check_size(size)
    src = resolve_random_state(random_state)
    s *= noise_factor(src)
    out = _standard_normal_array(src, _count(shape))
    factor = s / lam
    for start in range(0, out.shape[0], _CHUNK):
        _round_to_grid(out[start : start + _CHUNK], factor, lam)
    return _finish(out, shape, float)


def _grid_for(scale: float, lam: Any) -> float:
    if lam is None:
        return math.ldexp(1.0, _grid_exponent(scale))
    return _check_granularity(lam, scale=scale)


def discrete_laplace(
    scale: float, size: Size = None, *, random_state: RandomState = None
) -> int | NDArray[np.int64]:
    """Discrete Laplace noise on the integers: P(k) ∝ exp(−|k|/scale).

    ``K = G1 − G2`` with ``G = floor(scale·E) ~ Geometric(1 − q)``, ``q = e**(−1/scale)``.

    Guarantee: adding it to an integer-valued query of L1 sensitivity Δ (an integer) is
    ε-DP with ``ε = Δ / scale``, under the relation Δ was derived for. Numerical caveat:
    each integer's probability matches the ideal pmf up to a relative error of about
    ``scale · 2**-52`` (the 53-bit resolution of the uniform behind E); it is not an
    exact-arithmetic sampler like [CKS20]_'s. No rounding of the output is needed.

    Parameters
    ----------
    scale : float
        ``Δ/ε``; finite, > 0 and at most 2**40.
    size : int or tuple of int, optional
        Output shape; ``None`` returns one Python int.
    random_state : None, int, SeedSequence, Generator or RandomSource, optional
        ``None`` (the default) uses the OS CSPRNG; anything else is reproducible and warns.

    Returns
    -------
    int or ndarray of int64

    References
    ----------
    .. [CKS20] Canonne, Kamath, Steinke, NeurIPS 2020.
    """
    b = _check_discrete_scale("scale", scale)
    shape = _check_size(size)
    src = resolve_random_state(random_state)
    b *= noise_factor(src)
    return _finish(_discrete_laplace_array(src, b, _count(shape)), shape, int)


def _check_discrete_scale(name: str, value: Any) -> float:
    v = check_positive(name, value)
    if v > _MAX_DISCRETE_SCALE:
        raise ParameterError(
            f"{name} ({v!r}) must be <= 2**40 for a discrete sampler "
            "(use the continuous sampler for larger noise)"
        )
    return v


def discrete_gaussian(
    sigma: float, size: Size = None, *, random_state: RandomState = None
) -> int | NDArray[np.int64]:
    """Discrete Gaussian noise on the integers: P(k) ∝ exp(−k²/(2σ²)).

    Algorithm 3 of [CKS20]_: propose ``Y`` from the discrete Laplace with scale
    ``t = floor(σ) + 1`` and accept with probability ``exp(−(|Y| − σ²/t)²/(2σ²))``, realised
    as ``E >= (|Y| − σ²/t)²/(2σ²)`` for a fresh exponential E; vectorised over the entries
    still rejected.

    Guarantee: adding it to an integer-valued query of L2 sensitivity Δ gives
    ``ρ = Δ²/(2σ²)``-zCDP (and the (ε, δ) curve of [CKS20]_) under the relation Δ was
    derived for. Numerical caveats: the proposal has the error of :func:`discrete_laplace`
    and the acceptance threshold is computed in float64 (relative error ~2**-52, so the
    acceptance probability is off by a relative ~x·2**-52 at threshold x), so this is close
    to but not exactly the ideal law; the number of loop rounds (a timing side channel)
    depends on the rejected proposals.

    Parameters
    ----------
    sigma : float
        The scale σ; finite, in [2**-40, 2**40].
    size : int or tuple of int, optional
        Output shape; ``None`` returns one Python int.
    random_state : None, int, SeedSequence, Generator or RandomSource, optional
        ``None`` (the default) uses the OS CSPRNG; anything else is reproducible and warns.

    Returns
    -------
    int or ndarray of int64

    References
    ----------
    .. [CKS20] Canonne, Kamath, Steinke. The discrete Gaussian for differential privacy.
       NeurIPS 2020.
    """
    s = _check_discrete_scale("sigma", sigma)
    if s < _MIN_DISCRETE_SIGMA:
        raise ParameterError(f"sigma ({s!r}) must be >= 2**-40 for the discrete Gaussian")
    shape = _check_size(size)
    src = resolve_random_state(random_state)
    s *= noise_factor(src)
    n = _count(shape)
    t = math.floor(s) + 1
    shift = s * s / t
    two_var = 2.0 * s * s
    out = np.empty(n, dtype=np.int64)
    for start in range(0, n, _CHUNK):
        pending = np.arange(start, min(start + _CHUNK, n))
        while pending.size:
            y = _discrete_laplace_array(src, float(t), pending.size)
            # Bernoulli(exp(−x)) as [E >= x]: precise in relative terms even when exp(−x)
            # is far below 2**-53, unlike U < exp(−x).
            e = _exponential_array(src, pending.size)
            d = np.abs(y) - shift
            accept = e >= (d * d) / two_var
            out[pending[accept]] = y[accept]
            pending = pending[~accept]
    return _finish(out, shape, int)


def exponential(
    scale: float = 1.0, size: Size = None, *, random_state: RandomState = None
) -> float | NDArray[np.float64]:
    """Exponential variates ``scale · E`` (density ``e**(−x/scale)/scale`` on [0, ∞)), not snapped.

    ``E = z·ln2 + R`` (``docs/proofs/noise.md``): z is exactly geometric and unbounded, and the
    fractional part R has the same 2**-53 resolution in every ln2-segment, unlike ``−log(U)``
    (which stops at 36.7 and is sparse near the top); the float sum then rounds with
    relative error 2**-53.

    Parameters
    ----------
    scale : float, default 1.0
        Finite, > 0.
    size : int or tuple of int, optional
        Output shape; ``None`` returns one Python float.
    random_state : None, int, SeedSequence, Generator or RandomSource, optional
        ``None`` (the default) uses the OS CSPRNG; anything else is reproducible and warns.

    Returns
    -------
    float or ndarray of float64
    """
    b = _check_scale("scale", scale)
    shape = _check_size(size)
    src = resolve_random_state(random_state)
    out = _exponential_array(src, _count(shape))
    if b != 1.0:
        np.multiply(out, b, out=out)
    return _finish(out, shape, float)


def uniform(size: Size = None, *, random_state: RandomState = None) -> float | NDArray[np.float64]:
    """Uniform variates on the 2**-53 grid of [0, 1): ``M · 2**-53`` for a uniform 53-bit M.

    Parameters
    ----------
    size : int or tuple of int, optional
        Output shape; ``None`` returns one Python float.
    random_state : None, int, SeedSequence, Generator or RandomSource, optional
        ``None`` (the default) uses the OS CSPRNG; anything else is reproducible and warns.

    Returns
    -------
    float or ndarray of float64
    """
    shape = _check_size(size)
    src = resolve_random_state(random_state)
    return _finish(_uniform_array(src, _count(shape)), shape, float)


def bernoulli(
    p: float, size: Size = None, *, random_state: RandomState = None
) -> bool | NDArray[np.bool_]:
    """Bernoulli(p) coins: ``U < p`` with ``U`` from :func:`uniform`.

    The success probability is ``ceil(p · 2**53) / 2**53``: exact when p is a multiple of
    2**-53 (every dyadic p with at most 53 bits), otherwise off by less than 2**-53.

    Parameters
    ----------
    p : float
        Success probability in [0, 1].
    size : int or tuple of int, optional
        Output shape; ``None`` returns one Python bool.
    random_state : None, int, SeedSequence, Generator or RandomSource, optional
        ``None`` (the default) uses the OS CSPRNG; anything else is reproducible and warns.

    Returns
    -------
    bool or ndarray of bool
    """
    prob = check_real("p", p)
    if not (0.0 <= prob <= 1.0):
        raise ParameterError(f"p ({prob!r}) must be in [0, 1]")
    shape = _check_size(size)
    src = resolve_random_state(random_state)
    out = _uniform_array(src, _count(shape)) < prob
    return _finish(out, shape, bool)


def gumbel(size: Size = None, *, random_state: RandomState = None) -> float | NDArray[np.float64]:
    """Standard Gumbel variates ``−ln E`` (location 0, scale 1), for the exponential mechanism.

    ``argmax_i (ε·u_i / (2Δ) + G_i)`` samples ``i`` with probability ∝ ``exp(ε·u_i / (2Δ))``.
    Both tails are unbounded: ``E = z·ln2 + R`` as in :func:`exponential` (large E, the lower
    tail), but R comes from a uniform with full *relative* precision (a random binade
    ``2**-(1+j)``, j geometric, and a 52-bit mantissa), and for ``z = 0`` ``−ln R`` is
    evaluated from the binade and mantissa without forming tiny numbers. So the upper tail
    reaches ~745 before anything underflows (probability below 2**-1000), where a plain
    ``−ln(U)`` with 53-bit U stops at 36.7; a selection whose score gap exceeds the largest
    possible Gumbel would otherwise have probability exactly 0 instead of e**-gap.
    Two 64-bit words per variate.

    Parameters
    ----------
    size : int or tuple of int, optional
        Output shape; ``None`` returns one Python float.
    random_state : None, int, SeedSequence, Generator or RandomSource, optional
        ``None`` (the default) uses the OS CSPRNG; anything else is reproducible and warns.

    Returns
    -------
    float or ndarray of float64
    """
    shape = _check_size(size)
    src = resolve_random_state(random_state)
    n = _count(shape)
    out = np.empty(n, dtype=np.float64)
    for start in range(0, n, _CHUNK):
        stop = min(start + _CHUNK, n)
        _fill_gumbel(src, _words(src, 2 * (stop - start)), out[start:stop])
    return _finish(out, shape, float)


def _trailing_zeros_of(src: RandomSource, words: NDArray[np.uint64]) -> NDArray[np.int64]:
    """Trailing zero bits of each word, continued into fresh words when a word is 0."""
    lowest = words & (~words + _ONE)
    _, exp = np.frexp(lowest.astype(np.float64))
    count = exp.astype(np.int64) - 1
    zero = np.flatnonzero(words == 0)
    if zero.size:
        count[zero] = 64 + _trailing_zero_bits(src, zero.size)
    return count


def _fill_gumbel(src: RandomSource, words: NDArray[np.uint64], out: NDArray[np.float64]) -> None:
    c = out.shape[0]
    first, second = words[:c], words[c:]
    t = (first >> _Z_SHIFT) & _Z_MASK
    z = np.take(_Z_COUNT, t.view(np.int64), mode="clip")
    slow = np.flatnonzero(t == 0)
    if slow.size:
        z[slow] = _trailing_zero_bits(src, slow.size) + _Z_BITS
    # V = (1 + f)·2**-(1+j) is uniform on [0, 1) with full relative precision; R = −log1p(−V/2).
    f = (first & _MASK52) * _2_M52
    j = _trailing_zeros_of(src, second)
    half_v = np.ldexp(1.0 + f, -(2 + j))  # V/2; may underflow when j > ~1020
    r = -np.log1p(-half_v)
    big = z > 0
    out[big] = -np.log(z[big] * _LN2 + r[big])
    small = ~big
    # z = 0: −ln R = (2+j)·ln2 − log1p(f) − ln(R/(V/2)), and R/(V/2) = 1 to float precision
    # once V/2 < 2**-1000.
    hv, rs = half_v[small], r[small]
    ratio = np.ones_like(hv)
    normal = hv >= 2.0**-1000
    ratio[normal] = rs[normal] / hv[normal]
    out[small] = (2 + j[small]) * _LN2 - np.log1p(f[small]) - np.log(ratio)


def gamma_norm_vector(
    dim: int,
    scale: float,
    size: Size = None,
    *,
    random_state: RandomState = None,
    granularity: float | None = None,
    rounded: bool = True,
) -> NDArray[np.float64]:
    """Vectors with density ∝ exp(−‖b‖₂ / scale) on R^dim, on a power-of-two grid.

    The norm is Gamma(shape=dim, scale=scale) (a sum of ``dim`` exponentials from
    :func:`exponential`) and the direction is uniform on the sphere (a normalised vector of
    standard normals); each coordinate is then rounded to the grid Λ. This is the noise of
    objective and output perturbation [CMS11]_.

    Guarantee: for output perturbation of a vector with L2 sensitivity Δ, releasing
    ``snap(v, Λ) + b`` with ``scale = (Δ + Λ·sqrt(dim)) / ε`` is ε-DP (post-processing of
    the ideal mechanism on the snapped vector). Numerical caveat as for :func:`gaussian`
    (the direction is Box–Muller normals), times about sqrt(dim).

    Parameters
    ----------
    dim : int
        Dimension, >= 1.
    scale : float
        ``Δ/ε`` (finite, > 0); the expected norm is ``dim · scale``.
    size : int or tuple of int, optional
        Number of vectors; ``None`` returns one vector of shape ``(dim,)``, otherwise the
        shape is ``(*size, dim)``.
    random_state : None, int, SeedSequence, Generator or RandomSource, optional
        ``None`` (the default) uses the OS CSPRNG; anything else is reproducible and warns.
    granularity : float, optional
        The grid Λ: a power of two, at least ``scale * 2**-MAX_GRID_BITS``; default
        ``granularity(scale)``.
    rounded : bool, default True
        ``False`` skips the rounding and returns the continuous law at float64 resolution.
        Only for *implicit* uses whose proof covers it: objective perturbation, where the
        noise enters an optimisation and the released value is then snapped and noised
        again (``docs/proofs/erm.md``). Never add an un-rounded vector to a value and
        release the sum: a grid-rounded noise vector that can be solved for from the
        output identifies the input (issue 11), and an un-rounded one leaks through its
        float pattern.

    Returns
    -------
    ndarray of float64

    References
    ----------
    .. [CMS11] Chaudhuri, Monteleoni, Sarwate. Differentially private empirical risk
       minimization. JMLR 2011.
    """
    d = check_int("dim", dim, minimum=1)
    b = _check_scale("scale", scale)
    lam = _grid_for(b, granularity)
    shape = _check_size(size)
    src = resolve_random_state(random_state)
    b *= noise_factor(src)
    m = _count(shape)
    norms = _exponential_array(src, m * d).reshape(m, d).sum(axis=1)
    norms *= b
    direction = _standard_normal_array(src, m * d).reshape(m, d)
    lengths = np.sqrt(np.einsum("ij,ij->i", direction, direction))
    bad = np.flatnonzero(lengths == 0.0)
    while bad.size:  # a zero vector has probability < 2**-54; redraw its direction
        direction[bad] = _standard_normal_array(src, bad.size * d).reshape(bad.size, d)
        lengths[bad] = np.sqrt(np.einsum("ij,ij->i", direction[bad], direction[bad]))
        bad = bad[lengths[bad] == 0.0]
    direction *= (norms / lengths)[:, None]
    if rounded:
        _round_to_grid(direction.reshape(-1), 1.0 / lam, lam)
    if shape is None:
        return direction[0]
    return direction.reshape((*shape, d))
