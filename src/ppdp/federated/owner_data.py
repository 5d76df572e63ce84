"""A data owner's local statistics from its table: in memory, a Parquet dataset or Dask.

A Mul-LDA-DP owner sends (masked, noisy) shares of two statistics of its own records: the
per-class sums ``Σ_{i: y_i = c} x_i`` and the second moment ``Σ_i x_i x_iᵀ`` of its rows
scaled to the unit ball (``x / R`` with ``R`` a *declared* bound). Both are sums over rows,
so a table beyond one machine's memory is reduced partition by partition
(:func:`ppdp.data.distributed.scan_table`): no noise is drawn there; the owner adds its noise
and masks to the reduced statistics, once, in :class:`~ppdp.federated.roles.DataOwner`.

:func:`load_owner_statistics` reads a CSV file, a pandas DataFrame, a Parquet dataset or a
Dask DataFrame with the owner's schema and returns :class:`OwnerStatistics`; pass it to
``DataOwner(..., statistics=...)`` (``release="direction"`` rounds: the projections need the
rows themselves). Validation runs before any round starts, so a bad table spends nothing.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ppdp.data import Schema
from ppdp.exceptions import DataValidationError, ParameterError, ParameterTypeError

__all__ = ["OwnerStatistics", "load_owner_statistics", "owner_statistics"]

#: Rows whose scaled norm exceeds 1 by more than this are refused (float rounding allowed).
NORM_TOLERANCE = 1e-9


@dataclass(frozen=True)
class OwnerStatistics:
    """The sums an owner's shares are computed from (exact sums of its scaled rows).

    Attributes
    ----------
    n : int
        Rows.
    class_counts : ndarray of int64 (K,)
        Rows per class code (the schema's class order).
    class_sums : ndarray (K, d)
        ``Σ x`` over the rows of each class, rows scaled to ``‖x‖₂ ≤ 1``.
    second_moment : ndarray (d, d)
        ``Σ x xᵀ`` over all rows.
    n_over_norm : int
        Rows whose scaled norm exceeded ``1 + 1e-9`` (refused by :meth:`check`).
    """

    n: int
    class_counts: NDArray[np.int64]
    class_sums: NDArray[np.float64]
    second_moment: NDArray[np.float64]
    n_over_norm: int = 0

    def __add__(self, other: OwnerStatistics) -> OwnerStatistics:
        if not isinstance(other, OwnerStatistics):
            return NotImplemented
        return OwnerStatistics(
            self.n + other.n,
            self.class_counts + other.class_counts,
            self.class_sums + other.class_sums,
            self.second_moment + other.second_moment,
            self.n_over_norm + other.n_over_norm,
        )

    @property
    def n_features(self) -> int:
        return int(self.class_sums.shape[1])

    def check(self) -> OwnerStatistics:
        """Refuse rows beyond the unit ball with the in-memory message (a count, no value)."""
        if self.n_over_norm:
            raise DataValidationError(
                f"X has {self.n_over_norm} record(s) of L2 norm > 1: scale records by a "
                "declared bound (never the data's maximum) before the round"
            )
        return self


def owner_statistics(
    X: NDArray[np.float64], y: NDArray[np.int64], *, n_classes: int, bound: float = 1.0
) -> OwnerStatistics:
    """The statistics of encoded rows ``X`` with class codes ``y`` (one partition, or all).

    Rows are divided by ``bound``; a row whose norm is then above 1 but within float
    rounding (``≤ 1 + 1e-9``) is pulled just inside the ball, as ``DataOwner`` does with its
    rows; rows further out are counted in ``n_over_norm``.
    """
    Xs = np.asarray(X, dtype=np.float64) / float(bound)
    d = Xs.shape[1]
    norms = np.linalg.norm(Xs, axis=1) if Xs.size else np.zeros(Xs.shape[0])
    n_over = int(np.count_nonzero(norms > 1.0 + NORM_TOLERANCE))
    over = norms > 1.0
    if np.any(over):
        Xs[over] *= ((1.0 - 1e-12) / norms[over])[:, None]
    codes = np.asarray(y, dtype=np.int64)
    sums = np.zeros((n_classes, d))
    for c in range(n_classes):
        rows = Xs[codes == c]
        if rows.shape[0]:
            sums[c] = rows.sum(axis=0)
    counts = np.bincount(codes[(codes >= 0) & (codes < n_classes)], minlength=n_classes)
    return OwnerStatistics(int(Xs.shape[0]), counts.astype(np.int64), sums, Xs.T @ Xs, n_over)


@dataclass(frozen=True)
class _PartitionStatistics:
    """``owner_statistics`` of one encoded partition (picklable, for the workers)."""

    n_classes: int
    bound: float

    def __call__(self, X: NDArray[np.float64], y: NDArray[np.int64] | None) -> OwnerStatistics:
        assert y is not None  # the schema declares a label (checked before the scan)
        return owner_statistics(X, y, n_classes=self.n_classes, bound=self.bound)


def load_owner_statistics(
    data: Any,
    schema: Schema,
    *,
    norm_bound: float | None = None,
    scheduler: Any = None,
) -> OwnerStatistics:
    """Read, encode and reduce an owner's table to :class:`OwnerStatistics`.

    Parameters
    ----------
    data : pandas DataFrame, path to a CSV file, path to a Parquet dataset, or Dask DataFrame
        The owner's records with the schema's columns and its label. A Parquet dataset or a
        Dask DataFrame is scanned partition by partition (``dask`` extra).
    schema : Schema
        Declares the columns, their bounds and the classes.
    norm_bound : float, optional
        The declared bound ``R`` on an encoded row's L2 norm (rows are divided by it);
        default: the schema's own bound (``row_norm_bound``, or ``sqrt(p1 + p2)``). Never
        read from the data.
    scheduler : optional
        Distributed input only: see :func:`ppdp.data.distributed.dask_session` (a path
        defaults to a ``LocalCluster``; a Dask DataFrame to Dask's current scheduler).

    Returns
    -------
    OwnerStatistics
        Class codes follow the schema's class order (``0 … K−1``), as ``schema.encode``'s.

    Raises
    ------
    ParameterError
        No label declared; a non-positive ``norm_bound``; ``scheduler`` with in-memory data.
    DataValidationError
        As ``schema.encode`` on the whole table (undeclared categories or classes, missing
        values; counts over the whole table), or rows beyond the declared norm bound.
    """
    if not isinstance(schema, Schema):
        raise ParameterTypeError(
            f"schema ({type(schema).__name__}) must be a ppdp.data.Schema; "
            "load one with Schema.from_file(path)"
        )
    schema.check_reviewed()  # a draft's bounds are the data's own
    schema.check_row_level("a federated LDA owner")
    if schema.label is None:
        raise ParameterError("schema declares no label; an LDA owner needs classes")
    bound = schema.max_row_l2_norm if norm_bound is None else norm_bound
    if isinstance(bound, bool) or not isinstance(bound, int | float) or not bound > 0:
        raise ParameterError(f"norm_bound ({norm_bound!r}) must be a number > 0")
    stats_fn = _PartitionStatistics(schema.label.n_classes, float(bound))
    from ppdp.data.distributed import is_distributed

    if is_distributed(data):
        from ppdp.data.distributed import dask_session, open_table, scan_table

        local_default = not hasattr(data, "to_delayed")
        with dask_session(scheduler, default_local_cluster=local_default) as sched:
            frame = open_table(data, schema)
            scan = scan_table(
                frame,
                schema,
                include_label=False,
                partition_fn=stats_fn,
                scheduler=sched,
            )
        stats: OwnerStatistics = scan.value
        return stats.check()
    if scheduler is not None:
        raise ParameterError(
            f"scheduler ({scheduler!r}) is for a Dask DataFrame or a Parquet dataset; "
            f"data is a {type(data).__name__}, processed in memory"
        )
    if isinstance(data, str | os.PathLike):
        from ppdp.data.draft import read_table

        data = read_table(data)  # one-line errors: encoding, separator, missing file
    X, y = schema.encode(data, include_label=False)
    assert y is not None
    return stats_fn(X, y).check()
