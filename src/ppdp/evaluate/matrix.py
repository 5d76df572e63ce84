"""Reconstruction error of a row-aligned release in the encoded space.

These metrics read the original data, so they are for evaluating a method (on public
benchmark data, or inside the custodian's walls), never part of a release.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ppdp.exceptions import DataValidationError

__all__ = ["frobenius_error", "mse"]


def _pair(original: ArrayLike, released: ArrayLike) -> tuple[NDArray[np.float64], ...]:
    a = np.asarray(original, dtype=np.float64)
    b = np.asarray(released, dtype=np.float64)
    if a.ndim != 2 or b.ndim != 2:
        raise DataValidationError(
            f"original_encoded and released_encoded must be 2-D; got shapes {a.shape} and {b.shape}"
        )
    if a.shape != b.shape:
        raise DataValidationError(
            f"released_encoded {b.shape} must have the shape of original_encoded {a.shape}: "
            "the F-norm needs one released row per original row, in the same order"
        )
    if a.size == 0:
        raise DataValidationError(f"original_encoded {a.shape} must not be empty")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise DataValidationError("original_encoded and released_encoded must be finite")
    return a, b


def frobenius_error(original_encoded: ArrayLike, released_encoded: ArrayLike) -> float:
    r"""Squared Frobenius distance :math:`\lVert X - \bar X\rVert_F^2` of a row-aligned release.

    Jiang et al.'s (2013) "F-norm" utility: both tables in the encoded ``[0, 1]`` +
    one-hot space (:meth:`ppdp.data.Schema.encode`), row ``i`` of the release standing
    for row ``i`` of the original.

    Parameters
    ----------
    original_encoded : array-like, shape (n, p)
        The original table, encoded.
    released_encoded : array-like, shape (n, p)
        The release in the same space (``Release.encoded``).

    Returns
    -------
    float
        :math:`\sum_{ij} (X_{ij} - \bar X_{ij})^2`.

    Notes
    -----
    Evaluation only: the value is computed from the original data and is not private.

    References
    ----------
    X. Jiang et al. Differential-private data publishing through component analysis.
    *Transactions on Data Privacy* 6(1):19-34, 2013.

    Examples
    --------
    >>> frobenius_error([[0.0, 1.0], [1.0, 0.0]], [[0.5, 1.0], [1.0, 2.0]])
    4.25
    """
    a, b = _pair(original_encoded, released_encoded)
    d = a - b
    return float(np.einsum("ij,ij->", d, d))


def mse(original_encoded: ArrayLike, released_encoded: ArrayLike) -> float:
    r"""Mean squared error per cell, :math:`\lVert X - \bar X\rVert_F^2 / (np)`.

    Same inputs and caveat as :func:`frobenius_error` (evaluation only, not private).

    Examples
    --------
    >>> mse([[0.0, 1.0], [1.0, 0.0]], [[0.5, 1.0], [1.0, 2.0]])
    1.0625
    """
    a, b = _pair(original_encoded, released_encoded)
    return frobenius_error(a, b) / a.size
