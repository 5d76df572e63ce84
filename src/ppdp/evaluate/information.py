"""Entropy of a released table and its KL divergence to the original, attribute by attribute.

Jiang et al. (2013) report the entropy :math:`H(P) = -\\sum_v P(v)\\log P(v)` of a release
and the divergence :math:`D_{KL}(P\\Vert Q) = \\sum_v P(v)\\log(P(v)/Q(v))` of the release
``P`` from the original ``Q`` without saying over which values ``v`` ranges. Our reading
(ALGORITHMS-publishing A.6, [ours]):

* one distribution per attribute (each feature column, and the label unless
  ``include_label=False``), averaged over the attributes with equal weight;
* a categorical attribute ranges over its *declared* categories;
* a numeric attribute ranges over ``bins`` equal-width bins of its *declared* bounds
  ``[lower, upper]`` (values outside are clipped into the end bins). The bins are fixed
  and public: they never depend on the data, so the release and the original are
  compared on the same cells whatever their values;
* KL is computed after additive smoothing of both distributions,
  :math:`P'(v) = (P(v) + s) / (1 + Ks)` with ``K`` cells, so that a cell empty in the
  original cannot make the divergence infinite. Entropy is not smoothed (``0 log 0 = 0``).

Natural logarithms: the values are in nats.

These metrics read the original table (KL) and are for evaluation, not for release.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ppdp._validation import check_int, check_nonnegative
from ppdp.data import Schema
from ppdp.data.schema import NumericColumn
from ppdp.exceptions import DataValidationError, ParameterTypeError

__all__ = ["DEFAULT_BINS", "attribute_distributions", "entropy", "kl_divergence"]

#: Default number of equal-width bins over a numeric attribute's declared bounds.
DEFAULT_BINS = 10


def attribute_distributions(
    df: pd.DataFrame,
    schema: Schema,
    *,
    bins: int = DEFAULT_BINS,
    include_label: bool = True,
) -> dict[str, NDArray[np.float64]]:
    """The empirical distribution of each attribute on its fixed public cells.

    Parameters
    ----------
    df : DataFrame
        A table with the schema's columns (the label too when ``include_label`` and the
        schema has one).
    schema : Schema
        Declared bounds, categories and classes: they alone define the cells.
    bins : int, default 10
        Equal-width bins over ``[lower, upper]`` for every numeric attribute.
    include_label : bool, default True
        Add the label's distribution over the declared classes (if the schema has a label).

    Returns
    -------
    dict of str to ndarray
        Per attribute, in schema order, the share of rows in each cell (sums to 1).

    Examples
    --------
    >>> s = Schema.from_dict({"columns": [
    ...     {"name": "age", "type": "numeric", "lower": 0, "upper": 100},
    ...     {"name": "sex", "type": "categorical", "categories": ["F", "M"]}]})
    >>> df = pd.DataFrame({"age": [5, 15, 95, 100], "sex": ["F", "F", "F", "M"]})
    >>> {k: v.tolist() for k, v in attribute_distributions(df, s, bins=2).items()}
    {'age': [0.5, 0.5], 'sex': [0.75, 0.25]}
    """
    if not isinstance(schema, Schema):
        raise ParameterTypeError(f"schema ({type(schema).__name__}) must be a ppdp.data.Schema")
    if not isinstance(df, pd.DataFrame):
        raise ParameterTypeError(f"df ({type(df).__name__}) must be a pandas DataFrame")
    nbins = check_int("bins", bins, minimum=1)
    if len(df) == 0:
        raise DataValidationError("df has no rows; a distribution needs at least one")
    with_label = bool(include_label) and schema.label is not None
    # The encoding maps numerics to [0, 1] by the declared bounds and validates categories;
    # a declared row-norm bound would rescale rows, which is not what we want to bin.
    plain = dataclasses.replace(schema, row_norm_bound=None)
    if not with_label and plain.label is not None:
        plain = plain.without_label()
    X, y = plain.encode(df)
    out: dict[str, NDArray[np.float64]] = {}
    for col in plain.columns:
        block = plain.blocks[col.name]
        if isinstance(col, NumericColumn):
            cells = np.minimum((X[:, block.start] * nbins).astype(np.int64), nbins - 1)
            counts = np.bincount(cells, minlength=nbins)
        else:
            counts = X[:, block].sum(axis=0)
        out[col.name] = np.asarray(counts, dtype=np.float64) / len(df)
    if with_label:
        assert plain.label is not None and y is not None
        counts = np.bincount(y, minlength=plain.label.n_classes)
        out[plain.label.name] = counts.astype(np.float64) / len(df)
    return out


def _entropy(p: NDArray[np.float64]) -> float:
    nz = p[p > 0]
    return float(-(nz * np.log(nz)).sum())


def entropy(
    df: pd.DataFrame,
    schema: Schema,
    *,
    bins: int = DEFAULT_BINS,
    include_label: bool = True,
) -> float:
    """Mean over attributes of the Shannon entropy (nats) on fixed public cells.

    See the module docstring for the cells; parameters as :func:`attribute_distributions`.
    An attribute with ``K`` cells contributes at most ``log K``.

    Examples
    --------
    >>> s = Schema.from_dict({"columns": [
    ...     {"name": "sex", "type": "categorical", "categories": ["F", "M"]},
    ...     {"name": "x", "type": "categorical", "categories": ["a", "b"]}]})
    >>> df = pd.DataFrame({"sex": ["F", "M"], "x": ["a", "a"]})
    >>> round(entropy(df, s), 6)  # (log 2 + 0) / 2
    0.346574
    """
    dists = attribute_distributions(df, schema, bins=bins, include_label=include_label)
    return float(np.mean([_entropy(p) for p in dists.values()]))


def kl_divergence(
    release_df: pd.DataFrame,
    original_df: pd.DataFrame,
    schema: Schema,
    *,
    bins: int = DEFAULT_BINS,
    smoothing: float = 1e-6,
    include_label: bool = True,
) -> float:
    """Mean over attributes of :math:`D_{KL}(P\\Vert Q)`, release ``P``, original ``Q`` (nats).

    Parameters
    ----------
    release_df, original_df : DataFrame
        The release and the original table (any numbers of rows).
    schema : Schema
        Declared domains; they define the cells.
    bins : int, default 10
        Equal-width bins over each numeric attribute's declared bounds.
    smoothing : float, default 1e-6
        Additive smoothing ``s >= 0`` applied to both distributions before the divergence
        (see the module docstring). With ``s = 0`` a cell empty in the original but not
        in the release gives ``inf``.
    include_label : bool, default True
        Include the label as an attribute.

    Notes
    -----
    Evaluation only: reads the original table.

    Examples
    --------
    >>> s = Schema.from_dict({"columns": [
    ...     {"name": "sex", "type": "categorical", "categories": ["F", "M"]}]})
    >>> p = pd.DataFrame({"sex": ["F", "F", "F", "M"]})
    >>> q = pd.DataFrame({"sex": ["F", "M"]})
    >>> round(kl_divergence(p, q, s, smoothing=0.0), 6)  # .75 log 1.5 + .25 log .5
    0.130812
    """
    s = check_nonnegative("smoothing", smoothing)
    p_all = attribute_distributions(release_df, schema, bins=bins, include_label=include_label)
    q_all = attribute_distributions(original_df, schema, bins=bins, include_label=include_label)
    values = []
    for name, p in p_all.items():
        q = q_all[name]
        k = p.size
        ps = (p + s) / (1.0 + k * s)
        qs = (q + s) / (1.0 + k * s)
        mask = ps > 0
        with np.errstate(divide="ignore"):
            terms = ps[mask] * (np.log(ps[mask]) - np.log(qs[mask]))
        values.append(float(terms.sum()) if np.all(qs[mask] > 0) else math.inf)
    return float(np.mean(values))
