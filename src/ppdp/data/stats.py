"""Sufficient statistics: ``n``, class counts, ``Σx`` and ``Σxxᵀ``, pooled and per class.

Every mechanism whose private step is a sum (means, second moments, scatter matrices, class
statistics) gets it from :class:`SufficientStats`. One pass over the rows computes
everything: rows are processed in cache-sized blocks, each block's second moment is one BLAS
``syrk`` call, and labelled blocks are gathered class by class inside the cache (no copy of
the whole array, no second pass). Fixed chunks of blocks run on several threads (numpy's
BLAS calls release the GIL) and are added in order, so the result does not depend on the
thread count. The same kernel runs on each partition of a Dask
collection or Parquet dataset, and partial results are merged in a tree
(:meth:`SufficientStats.compute`, :meth:`SufficientStats.from_parquet`).

Floating-point caveat
---------------------
A float sum is not the real sum. For ``n`` summands of magnitude at most ``m``, any
summation order (sequential, pairwise, blocked BLAS, a Dask tree) returns a value within
``γ_n · n · m`` of the exact sum, with ``γ_n = n·u / (1 - n·u)`` and ``u = 2⁻⁵³``
(Higham 2002, §3.1 and §4.2; one extra rounding covers the products in ``Σxxᵀ``). The
sensitivity of the *computed* sum can therefore exceed the ideal one by up to twice that
bound (Casacuberta et al. 2022). A mechanism adding noise to these sums must add
:func:`float_sum_error_bound` (times two, per entry) to its sensitivity, or argue otherwise.

References
----------
.. [CSVW22] S. Casacuberta, M. Shoemate, S. Vadhan, C. Wagaman. "Widespread Underestimation of
   Sensitivity in Differentially Private Libraries and How to Fix It." ACM CCS 2022.
.. [Hig02] N. J. Higham. *Accuracy and Stability of Numerical Algorithms*, 2nd ed. SIAM, 2002.
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ppdp._validation import check_int
from ppdp.data._dask import compute as compute_graphs
from ppdp.data._dask import import_dask, scheduler_for
from ppdp.data.encoding import EncodeReport, encode, log_report
from ppdp.data.schema import Category, Schema
from ppdp.exceptions import DataValidationError, ParameterError

__all__ = ["SufficientStats", "float_sum_error_bound"]

_UNIT_ROUNDOFF = 2.0**-53
#: Rows per block are chosen so that one block (plus a ones column) fills about this many bytes:
#: small enough to stay in the L2 cache while it is gathered and multiplied.
_BLOCK_BYTES = 1 << 19
#: Above this many classes a block is sorted once instead of scanned once per class.
_SCAN_CLASSES_MAX = 16
#: Blocks per chunk: the unit of work of a thread, and the fixed order of the final sum.
_CHUNK_BLOCKS = 64
#: Threads used by default for in-memory data.
_MAX_THREADS = 8


def float_sum_error_bound(n: int, *, max_term: float = 1.0) -> float:
    """Bound on ``|computed - exact|`` for a float64 sum of ``n`` terms with ``|term| <= max_term``.

    Valid for any summation order, hence for the numpy, BLAS and Dask engines alike:
    ``γ_n · n · max_term`` with ``γ_n = n·u / (1 - n·u)``, ``u = 2⁻⁵³`` (one rounding per
    product in ``Σxxᵀ`` is included). For a replace-one neighbour the computed sums can move
    by the ideal sensitivity plus *twice* this bound per entry; with add/remove use the
    larger ``n``. Examples: ``n = 45,222`` and terms in ``[0, 1]`` give about ``2.3e-7``;
    ``n = 10⁷`` gives about ``1.1e-2``.

    References
    ----------
    Casacuberta, Shoemate, Vadhan & Wagaman (CCS 2022); Higham (2002), §4.2.
    """
    n = check_int("n", n, minimum=0)
    if not (math.isfinite(max_term) and max_term >= 0):
        raise ParameterError(f"max_term ({max_term!r}) must be a finite number >= 0")
    nu = n * _UNIT_ROUNDOFF
    if nu >= 1:
        raise ParameterError(f"n ({n}) is too large for a float64 summation bound")
    return nu / (1.0 - nu) * n * max_term


def _default_block_rows(p: int) -> int:
    return int(min(max(_BLOCK_BYTES // (8 * (p + 1)), 256), 65536))


def _readonly(a: NDArray[Any]) -> NDArray[Any]:
    a = np.array(a, copy=True)
    a.flags.writeable = False
    return a


@dataclass(frozen=True, eq=False)
class SufficientStats:
    """Count, sums and second moments of a matrix, pooled and per declared class. Frozen.

    These are exact-arithmetic functions of the private data, *not* a release: mechanisms add
    noise to them (with sensitivities from the declared schema) before anything leaves.

    Attributes
    ----------
    n : int
        Number of rows.
    sum_x : ndarray, shape (p,)
        ``Σ_i x_i``.
    sum_xx : ndarray, shape (p, p)
        ``Σ_i x_i x_iᵀ`` (symmetric).
    classes : tuple or None
        The declared classes (their labels, or ``0..K-1``); ``None`` without labels.
    class_counts : ndarray of int64, shape (K,), or None
        Rows per declared class; an empty class has a zero, never a missing slot.
    class_sum_x : ndarray, shape (K, p), or None
    class_sum_xx : ndarray, shape (K, p, p), or None
    feature_names : tuple of str or None
        Names of the ``p`` columns, when known.

    Notes
    -----
    Floating-point caveat: the sums are float64 sums, within :func:`float_sum_error_bound`
    of the real sums in every entry (Casacuberta et al. 2022). Arrays are read-only.
    """

    n: int
    sum_x: NDArray[np.float64]
    sum_xx: NDArray[np.float64]
    classes: tuple[Category, ...] | None = None
    class_counts: NDArray[np.int64] | None = None
    class_sum_x: NDArray[np.float64] | None = None
    class_sum_xx: NDArray[np.float64] | None = None
    feature_names: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "n", check_int("n", self.n, minimum=0))
        sx = np.asarray(self.sum_x, dtype=np.float64)
        sxx = np.asarray(self.sum_xx, dtype=np.float64)
        if sx.ndim != 1 or sxx.shape != (sx.shape[0], sx.shape[0]):
            raise DataValidationError(
                f"sum_x must have shape (p,) and sum_xx (p, p); got {sx.shape} and {sxx.shape}"
            )
        p = sx.shape[0]
        object.__setattr__(self, "sum_x", _readonly(sx))
        object.__setattr__(self, "sum_xx", _readonly(sxx))
        per_class = (self.class_counts, self.class_sum_x, self.class_sum_xx)
        if self.classes is None:
            if any(a is not None for a in per_class):
                raise DataValidationError("per-class statistics need the declared classes")
        else:
            k = len(self.classes)
            object.__setattr__(self, "classes", tuple(self.classes))
            if any(a is None for a in per_class):
                raise DataValidationError("classes given without per-class statistics")
            cc = np.asarray(self.class_counts)
            csx = np.asarray(self.class_sum_x, dtype=np.float64)
            csxx = np.asarray(self.class_sum_xx, dtype=np.float64)
            if cc.shape != (k,) or csx.shape != (k, p) or csxx.shape != (k, p, p):
                raise DataValidationError(
                    f"per-class statistics must have shapes ({k},), ({k}, {p}), ({k}, {p}, {p})"
                )
            object.__setattr__(self, "class_counts", _readonly(cc.astype(np.int64)))
            object.__setattr__(self, "class_sum_x", _readonly(csx))
            object.__setattr__(self, "class_sum_xx", _readonly(csxx))
        if self.feature_names is not None:
            names = tuple(self.feature_names)
            if len(names) != p:
                raise DataValidationError(f"feature_names must have {p} names; got {len(names)}")
            object.__setattr__(self, "feature_names", names)

    # ------------------------------------------------------------------ views
    @property
    def n_features(self) -> int:
        """Number of columns ``p``."""
        return int(self.sum_x.shape[0])

    @property
    def n_classes(self) -> int | None:
        """Number of declared classes ``K`` (``None`` without labels)."""
        return None if self.classes is None else len(self.classes)

    def mean(self) -> NDArray[np.float64]:
        """``Σx / n`` (not private: for the custodian's checks and tests)."""
        return self.sum_x / self.n

    def covariance(self) -> NDArray[np.float64]:
        """Empirical covariance ``Σxxᵀ/n - x̄x̄ᵀ`` (not private)."""
        mu = self.mean()
        return self.sum_xx / self.n - np.outer(mu, mu)

    def rounding_error_bound(self, *, max_abs: float = 1.0) -> tuple[float, float]:
        """Per-entry float error bounds of ``(sum_x, sum_xx)`` for entries ``|x| <= max_abs``."""
        return (
            float_sum_error_bound(self.n, max_term=max_abs),
            float_sum_error_bound(self.n, max_term=max_abs * max_abs),
        )

    # ------------------------------------------------------------------ algebra
    @classmethod
    def zeros(
        cls,
        n_features: int,
        *,
        classes: Sequence[Category] | None = None,
        feature_names: Sequence[str] | None = None,
    ) -> SufficientStats:
        """Statistics of an empty table (the neutral element of ``+``)."""
        p = check_int("n_features", n_features, minimum=0)
        per: dict[str, Any] = {}
        if classes is not None:
            k = len(classes)
            per = {
                "classes": tuple(classes),
                "class_counts": np.zeros(k, dtype=np.int64),
                "class_sum_x": np.zeros((k, p)),
                "class_sum_xx": np.zeros((k, p, p)),
            }
        names = tuple(feature_names) if feature_names is not None else None
        return cls(0, np.zeros(p), np.zeros((p, p)), feature_names=names, **per)

    def __add__(self, other: SufficientStats) -> SufficientStats:
        """Statistics of the concatenation of two disjoint tables."""
        if not isinstance(other, SufficientStats):
            return NotImplemented
        if other.n_features != self.n_features or other.classes != self.classes:
            raise DataValidationError(
                "only statistics with the same features and declared classes can be added"
            )
        per: dict[str, Any] = {}
        if self.classes is not None:
            assert self.class_counts is not None and other.class_counts is not None
            per = {
                "classes": self.classes,
                "class_counts": self.class_counts + other.class_counts,
                "class_sum_x": self.class_sum_x + other.class_sum_x,  # type: ignore[operator]
                "class_sum_xx": self.class_sum_xx + other.class_sum_xx,  # type: ignore[operator]
            }
        return SufficientStats(
            self.n + other.n,
            self.sum_x + other.sum_x,
            self.sum_xx + other.sum_xx,
            feature_names=self.feature_names or other.feature_names,
            **per,
        )

    def __repr__(self) -> str:
        k = "" if self.classes is None else f", n_classes={len(self.classes)}"
        return f"SufficientStats(n={self.n}, n_features={self.n_features}{k})"

    # ------------------------------------------------------------------ engines
    @classmethod
    def compute(
        cls,
        X: Any,
        y: Any = None,
        *,
        n_classes: int | None = None,
        classes: Sequence[Category] | None = None,
        scheduler: Any = None,
        split_every: int = 8,
        block_rows: int | None = None,
        n_threads: int | None = None,
        schema: Schema | None = None,
    ) -> SufficientStats:
        """Compute the statistics of ``X`` (and per class of ``y``) in one pass.

        Parameters
        ----------
        X : ndarray, DataFrame, dask Array or dask DataFrame, shape (n, p)
            Numeric features, normally ``schema.encode(df)[0]`` (entries in ``[0, 1]``).
            Numpy and pandas run in memory; a Dask collection runs partition by partition
            (the ``dask`` extra) and partial results are merged in a tree.
        y : array-like, Series, dask Array/Series, or str, optional
            Labels aligned with the rows of ``X``; a string names a column of a DataFrame
            ``X`` (that column is then not a feature). Integer codes ``0..K-1`` with
            ``n_classes``, or label values with ``classes``.
        n_classes : int, optional
            Declared number of classes ``K`` (needed with ``y`` unless ``classes`` is given).
        classes : sequence, optional
            Declared class labels; ``y`` holds values among them.
        schema : Schema, optional
            Take the classes from ``schema.label`` (``y`` holds the codes that
            :meth:`Schema.encode` returns) and name the features after the encoding.
        scheduler : optional
            Dask only. ``None``: Dask's current default; ``"threads"``, ``"sync"``,
            ``"processes"``; ``"local"``: a new ``distributed.LocalCluster``; an address
            (``"tcp://host:8786"``) or a ``distributed.Client``.
        split_every : int, default 8
            Dask only: fan-in of the merge tree.
        block_rows : int, optional
            Rows per block of the in-memory kernel (default: about 512 KiB per block).
        n_threads : int, optional
            Threads of the in-memory kernel (default: the CPU count, at most 8; Dask
            partitions use 1). The result does not depend on it: rows are cut into fixed
            chunks whose sums are added in order.

        Returns
        -------
        SufficientStats
            With one slot per declared class, empty classes included: the output shape is
            fixed by the declaration, never by the data.

        Raises
        ------
        DataValidationError
            Wrong shape, non-numeric or object data, ragged input, ``len(y) != n``, a label
            outside the declared classes, NaN or inf in ``X`` (naming the column).
        ParameterError
            ``y`` without a declared class set, or inconsistent ``n_classes``/``classes``.
        OptionalDependencyError
            A Dask collection or ``scheduler`` without the ``dask`` extra installed.

        Notes
        -----
        See the module docstring for the floating-point caveat of sums [CSVW22]_.
        """
        if block_rows is not None:
            block_rows = check_int("block_rows", block_rows, minimum=1)
        if n_threads is not None:
            n_threads = check_int("n_threads", n_threads, minimum=1)
        split_every = check_int("split_every", split_every, minimum=2)
        if schema is not None:
            if n_classes is not None or classes is not None:
                raise ParameterError(
                    "give the classes through schema or n_classes/classes, not both"
                )
            if y is not None and schema.label is None:
                raise ParameterError("y was given but the schema declares no label")
            declared = schema.classes if y is not None else None
        else:
            declared = _declared_classes(y, n_classes, classes)
        if _is_dask(X) or _is_dask(y):
            return compute_dask(
                X,
                y,
                classes=declared,
                labels_are_codes=classes is None,
                scheduler=scheduler,
                split_every=split_every,
                block_rows=block_rows,
            )
        if scheduler is not None:
            raise ParameterError(
                f"scheduler ({scheduler!r}) applies to Dask collections only; X is in memory"
            )
        arr, yv, names = _in_memory_inputs(X, y)
        if names is None and schema is not None:
            for layout_label in (False, True) if schema.label is not None else (False,):
                layout = schema.layout(include_label=layout_label)
                if layout.n_features == arr.shape[1]:
                    names = layout.feature_names
        codes = None
        if declared is not None:
            codes = label_codes(yv, declared, labels_are_codes=classes is None, n=arr.shape[0])
        stats = compute_block_stats(
            arr, codes, declared, block_rows=block_rows, names=names, n_threads=n_threads
        )
        check_finite_stats(stats)
        return stats

    @classmethod
    def from_parquet(
        cls,
        path: str | os.PathLike[str],
        *,
        schema: Schema,
        include_label: bool = False,
        scheduler: Any = None,
        split_every: int = 8,
        cluster_kwargs: dict[str, Any] | None = None,
        return_report: bool = False,
    ) -> SufficientStats | tuple[SufficientStats, EncodeReport]:
        """Read a Parquet dataset with Dask, encode each partition with ``schema``, reduce.

        Parameters
        ----------
        path : str or path
            A Parquet file or a folder of Parquet files, readable by every worker.
        schema : Schema
            Declared schema; each partition is encoded with :meth:`Schema.encode` (clipping
            counts are merged and go to the custodian's log, never into the result). With a
            label, per-class statistics follow the declared classes.
        include_label : bool, default False
            Put the label's one-hot block into the features too.
        scheduler : optional
            ``None`` (default): start a ``distributed.LocalCluster`` for this call (keyword
            arguments in ``cluster_kwargs``) and shut it down afterwards; an address
            (``"tcp://host:8786"``) or a ``distributed.Client`` for a real cluster;
            ``"threads"``/``"sync"``/``"processes"`` for Dask's local schedulers.
        split_every : int, default 8
            Fan-in of the merge tree.
        return_report : bool, default False
            Also return the merged :class:`~ppdp.data.EncodeReport` (custodian only).

        Raises
        ------
        OptionalDependencyError
            Without the ``dask`` extra (``pip install 'ppdp[dask]'``).
        DataValidationError
            A column of the schema is missing from the dataset, or a partition fails to
            encode (NaN, undeclared category, ...).
        """
        split_every = check_int("split_every", split_every, minimum=2)
        stats, report = stats_from_parquet(
            path,
            schema=schema,
            include_label=include_label,
            scheduler=scheduler,
            split_every=split_every,
            cluster_kwargs=cluster_kwargs,
        )
        return (stats, report) if return_report else stats


# ---------------------------------------------------------------------- helpers
def _is_dask(obj: Any) -> bool:
    return obj is not None and not isinstance(obj, str) and hasattr(obj, "__dask_graph__")


def _declared_classes(
    y: Any, n_classes: int | None, classes: Sequence[Category] | None
) -> tuple[Category, ...] | None:
    if y is None:
        if n_classes is not None or classes is not None:
            raise ParameterError("n_classes/classes were given without y")
        return None
    if classes is not None:
        if isinstance(classes, str | bytes):
            raise ParameterError(f"classes ({classes!r}) must be a sequence of class labels")
        declared = tuple(classes)
        if len(declared) == 0 or len(set(declared)) != len(declared):
            raise ParameterError("classes must be a non-empty sequence without duplicates")
        if n_classes is not None and check_int("n_classes", n_classes, minimum=1) != len(declared):
            raise ParameterError(
                f"n_classes ({n_classes}) must equal the number of classes ({len(declared)})"
            )
        return declared
    if n_classes is None:
        raise ParameterError(
            "n_classes (None) must be declared when y is given: the output shape is fixed by "
            "the declared label set, never by the data"
        )
    return tuple(range(check_int("n_classes", n_classes, minimum=1)))


def _in_memory_inputs(X: Any, y: Any) -> tuple[NDArray[Any], Any, tuple[str, ...] | None]:
    names = None
    if isinstance(X, pd.DataFrame):
        if isinstance(y, str):
            if y not in X.columns:
                raise DataValidationError(f"y ({y!r}) is not a column of X")
            X, y = X.drop(columns=[y]), X[y]
        for c in X.columns:
            dt = X[c].dtype
            if not (pd.api.types.is_numeric_dtype(dt) or pd.api.types.is_bool_dtype(dt)):
                raise DataValidationError(
                    f"X column {c!r} is not numeric (dtype {dt}); encode the table with a Schema"
                )
        names = tuple(str(c) for c in X.columns)
        arr = X.to_numpy(dtype=np.float64, na_value=np.nan)
    else:
        if isinstance(y, str):
            raise DataValidationError("y given as a column name needs X to be a DataFrame")
        try:
            arr = np.asarray(X)
        except ValueError as exc:
            raise DataValidationError("X is ragged: rows must all have the same length") from exc
    if arr.ndim != 2:
        raise DataValidationError(f"X must be 2-D (n, p); got shape {arr.shape}")
    if arr.dtype.kind not in "biuf":
        raise DataValidationError(
            f"X must be a numeric array; got dtype {arr.dtype} "
            "(object and ragged arrays are refused)"
        )
    return arr, y, names


def label_codes(
    y: Any, classes: tuple[Category, ...], *, labels_are_codes: bool, n: int
) -> NDArray[np.intp]:
    """Validate labels against the declared classes and return codes ``0..K-1``."""
    if isinstance(y, pd.Series | pd.Index):
        yv = y.to_numpy()
    else:
        try:
            yv = np.asarray(y)
        except ValueError as exc:
            raise DataValidationError("y must be 1-D") from exc
    if yv.ndim != 1:
        raise DataValidationError(f"y must be 1-D; got shape {yv.shape}")
    if yv.shape[0] != n:
        raise DataValidationError(f"y has {yv.shape[0]} labels but X has {n} rows")
    k = len(classes)
    if labels_are_codes:
        if yv.dtype.kind == "b":
            yv = yv.astype(np.intp)
        if yv.dtype.kind not in "iu":
            raise DataValidationError(
                f"y must hold integer class codes 0..{k - 1} (dtype {yv.dtype}); pass classes= "
                "to use label values"
            )
        codes = yv.astype(np.intp, copy=False)
        if n:
            bad = int(np.count_nonzero((codes < 0) | (codes >= k)))
            if bad:
                raise DataValidationError(
                    f"y: {bad} label(s) outside the declared classes 0..{k - 1}"
                )
        return codes
    codes = pd.Index(list(classes), dtype=object).get_indexer(yv)
    bad = int(np.count_nonzero(codes < 0))
    if bad:
        raise DataValidationError(f"y: {bad} label(s) outside the declared classes")
    return codes.astype(np.intp)


def compute_block_stats(
    X: NDArray[Any],
    codes: NDArray[np.intp] | None,
    classes: tuple[Category, ...] | None,
    *,
    block_rows: int | None = None,
    names: tuple[str, ...] | None = None,
    n_threads: int | None = 1,
) -> SufficientStats:
    """The in-memory kernel: one pass over ``X`` in row blocks (no finiteness check).

    Rows are cut into fixed chunks of ``_CHUNK_BLOCKS`` blocks; chunks may run on several
    threads (numpy's BLAS calls and ``take`` release the GIL), and their results are added
    in chunk order, so the result does not depend on the number of threads.
    """
    n, p = X.shape
    B = block_rows or _default_block_rows(p)
    step = B * _CHUNK_BLOCKS
    ranges = [(lo, min(lo + step, n)) for lo in range(0, n, step)]
    labelled = codes is not None and classes is not None
    k = len(classes) if labelled else 0  # type: ignore[arg-type]

    def work(r: tuple[int, int]) -> tuple[NDArray[Any], ...]:
        if labelled:
            return _chunk_labelled(X, codes, k, B, *r)  # type: ignore[arg-type]
        return _chunk_unlabelled(X, B, *r)

    threads = min(_resolve_threads(n_threads), len(ranges))
    # The blocks are small (a few hundred KB): one BLAS thread per block is faster, and a
    # multi-threaded BLAS on a busy machine can stall for most of a second on them.
    with _one_blas_thread_each():
        if threads > 1:
            with ThreadPoolExecutor(threads) as pool:
                total = _sum_in_order(pool.map(work, ranges))
        else:
            total = _sum_in_order(map(work, ranges))
    if not labelled:
        sum_x, sum_xx = total if total is not None else (np.zeros(p), np.zeros((p, p)))
        return SufficientStats(n, sum_x, sum_xx, feature_names=names)
    if total is None:
        total = (np.zeros(k, dtype=np.int64), np.zeros((k, p)), np.zeros((k, p, p)))
    counts, class_x, class_xx = total
    return SufficientStats(
        n,
        class_x.sum(axis=0),
        class_xx.sum(axis=0),
        classes=classes,
        class_counts=counts,
        class_sum_x=class_x,
        class_sum_xx=class_xx,
        feature_names=names,
    )


def _one_blas_thread_each() -> contextlib.AbstractContextManager[Any]:
    """Keep BLAS single-threaded while the blocks are multiplied (when threadpoolctl is installed).

    OpenBLAS serialises calls that use its thread pool, so small per-block calls from
    several threads run faster with one BLAS thread each. The limit is process-wide for the
    duration of the call; without threadpoolctl the kernel still works, somewhat slower.
    """
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


def _resolve_threads(n_threads: int | None) -> int:
    if n_threads is None:
        return max(1, min(os.cpu_count() or 1, _MAX_THREADS))
    return check_int("n_threads", n_threads, minimum=1)


def _sum_in_order(parts: Iterable[tuple[NDArray[Any], ...]]) -> tuple[NDArray[Any], ...] | None:
    total: list[NDArray[Any]] | None = None
    for part in parts:
        if total is None:
            total = [np.array(a, copy=True) for a in part]
        else:
            for acc, a in zip(total, part, strict=True):
                acc += a
    return None if total is None else tuple(total)


def _as_float_block(b: NDArray[Any]) -> NDArray[np.float64]:
    if b.dtype == np.float64 and b.flags.c_contiguous:
        return b
    return np.ascontiguousarray(b, dtype=np.float64)


def _chunk_unlabelled(
    X: NDArray[Any], B: int, lo: int, hi: int
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    p = X.shape[1]
    sum_xx = np.zeros((p, p))
    sum_x = np.zeros(p)
    ones = np.ones(B)
    for start in range(lo, hi, B):
        b = _as_float_block(X[start : min(start + B, hi)])
        sum_xx += b.T @ b  # numpy dispatches this to BLAS syrk and releases the GIL
        sum_x += ones[: b.shape[0]] @ b
    return sum_x, sum_xx


def _chunk_labelled(
    X: NDArray[Any], codes: NDArray[np.intp], k: int, B: int, lo: int, hi: int
) -> tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.float64]]:
    p = X.shape[1]
    counts = np.zeros(k, dtype=np.int64)
    class_x = np.zeros((k, p))
    class_xx = np.zeros((k, p, p))
    buf = np.empty((B, p))
    ones = np.ones(B)
    convert = X.dtype != np.float64
    for start in range(lo, hi, B):
        stop = min(start + B, hi)
        b = X[start:stop]
        if convert:
            b = b.astype(np.float64)
        yb = codes[start:stop]
        m = stop - start
        if k == 2:
            mk = yb == 1
            c1 = int(np.count_nonzero(mk))
            cnt: Sequence[int] = (m - c1, c1)
            order = np.concatenate((np.flatnonzero(~mk), np.flatnonzero(mk)))
        elif k <= _SCAN_CLASSES_MAX:
            masks = [yb == c for c in range(k)]
            cnt = [int(np.count_nonzero(q)) for q in masks]
            order = np.concatenate([np.flatnonzero(q) for q in masks])
        else:
            cnt = np.bincount(yb, minlength=k).tolist()
            order = np.argsort(yb, kind="stable")
        # Gather the block's rows class by class into a cache-resident buffer (mode="clip"
        # skips take's bounds buffering; the indices are valid by construction).
        np.take(b, order, axis=0, out=buf[:m], mode="clip")
        at = 0
        for c in range(k):
            if cnt[c]:
                part = buf[at : at + cnt[c]]
                class_xx[c] += part.T @ part
                class_x[c] += ones[: cnt[c]] @ part
                counts[c] += cnt[c]
                at += cnt[c]
    return counts, class_x, class_xx


def check_finite_stats(stats: SufficientStats) -> None:
    """Raise if ``X`` held NaN or inf, detected for free from the diagonal of ``Σxxᵀ``.

    ``Σ x_j²`` is finite exactly when column ``j`` holds only finite values (barring overflow
    of a square, i.e. ``|x| > 1e154``), so no extra pass over the data is needed.
    """
    diag = np.diagonal(stats.sum_xx)
    bad = np.flatnonzero(~np.isfinite(diag) | ~np.isfinite(stats.sum_x))
    if bad.size:
        j = int(bad[0])
        name = f" ({stats.feature_names[j]!r})" if stats.feature_names is not None else ""
        raise DataValidationError(
            f"X column {j}{name} contains NaN or inf (or values too large to square in "
            "float64); encode the data with a Schema first"
        )


# ---------------------------------------------------------------------------- Dask engine
# Each partition runs the in-memory kernel above; partial statistics (and, for Parquet,
# partial encoding reports) are merged in a tree with fan-in ``split_every``. Only the small
# partial results travel between workers: ``O(K p²)`` floats per partition.


def _tree_reduce(parts: list[Any], merge: Callable[..., Any], split_every: int) -> Any:
    from dask import delayed

    if not parts:
        return None
    while len(parts) > 1:
        parts = [
            delayed(merge, pure=True)(*parts[i : i + split_every])
            for i in range(0, len(parts), split_every)
        ]
    return parts[0]


def _merge_stats(*parts: SufficientStats) -> SufficientStats:
    out = parts[0]
    for p in parts[1:]:
        out = out + p
    return out


def _merge_pairs(
    *parts: tuple[SufficientStats, EncodeReport],
) -> tuple[SufficientStats, EncodeReport]:
    stats, report = parts[0]
    for s, r in parts[1:]:
        stats, report = stats + s, report + r
    return stats, report


def _partition_stats(
    xpart: Any,
    ypart: Any,
    classes: tuple[Category, ...] | None,
    labels_are_codes: bool,
    block_rows: int | None,
) -> SufficientStats:
    if isinstance(xpart, pd.DataFrame):
        arr = xpart.to_numpy(dtype=np.float64, na_value=np.nan)
        names = tuple(str(c) for c in xpart.columns)
    else:
        arr, names = np.asarray(xpart), None
    if arr.ndim != 2 or arr.dtype.kind not in "biuf":
        raise DataValidationError(f"X partitions must be 2-D numeric; got {arr.shape}, {arr.dtype}")
    codes = None
    if classes is not None:
        codes = label_codes(ypart, classes, labels_are_codes=labels_are_codes, n=arr.shape[0])
    return compute_block_stats(arr, codes, classes, block_rows=block_rows, names=names)


def compute_dask(
    X: Any,
    y: Any,
    *,
    classes: tuple[Category, ...] | None,
    labels_are_codes: bool,
    scheduler: Any,
    split_every: int,
    block_rows: int | None,
) -> SufficientStats:
    """:meth:`SufficientStats.compute` for a Dask Array or DataFrame (and aligned labels)."""
    import_dask()
    import dask.array as da
    import dask.dataframe as dd
    from dask import delayed

    if (y is None) != (classes is None):
        raise ParameterError("y and the declared classes go together")
    if isinstance(X, np.ndarray):  # in-memory X with Dask labels
        X = da.from_array(X, chunks=(y.chunks[0] if isinstance(y, da.Array) else -1, -1))
    if isinstance(X, dd.DataFrame):
        if isinstance(y, str):
            if y not in X.columns:
                raise DataValidationError(f"y ({y!r}) is not a column of X")
            X, y = X.drop(columns=[y]), X[y]
        for c, dt in X.dtypes.items():
            if not (pd.api.types.is_numeric_dtype(dt) or pd.api.types.is_bool_dtype(dt)):
                raise DataValidationError(
                    f"X column {c!r} is not numeric (dtype {dt}); encode the table with a Schema"
                )
        xparts = list(X.to_delayed())
        p = len(X.columns)
        names: tuple[str, ...] | None = tuple(str(c) for c in X.columns)
        if y is None:
            yparts: list[Any] = [None] * len(xparts)
        elif isinstance(y, dd.Series | dd.DataFrame):
            if y.npartitions != X.npartitions:
                raise DataValidationError(
                    f"y has {y.npartitions} partitions but X has {X.npartitions}; align them"
                )
            yparts = list(y.to_delayed())
        else:
            raise DataValidationError(
                "y for a Dask DataFrame must be a Dask Series or a column name"
            )
    elif isinstance(X, da.Array):
        if X.ndim != 2:
            raise DataValidationError(f"X must be 2-D (n, p); got {X.ndim} dimension(s)")
        if X.dtype.kind not in "biuf":
            raise DataValidationError(f"X must be numeric; got dtype {X.dtype}")
        X = X.rechunk({1: -1})
        xparts = list(X.to_delayed().ravel())
        p = int(X.shape[1])
        names = None
        if y is None:
            yparts = [None] * len(xparts)
        else:
            if isinstance(y, str):
                raise DataValidationError("y given as a column name needs X to be a DataFrame")
            yarr = y if isinstance(y, da.Array) else da.from_array(np.asarray(y), chunks=-1)
            if yarr.ndim != 1 or yarr.shape[0] != X.shape[0]:
                raise DataValidationError(
                    f"y must have shape ({X.shape[0]},); got {tuple(yarr.shape)}"
                )
            yparts = list(yarr.rechunk((X.chunks[0],)).to_delayed().ravel())
    else:
        raise DataValidationError(
            f"X ({type(X).__name__}) must be a numpy array, a DataFrame, "
            "or a Dask Array or DataFrame"
        )
    partials = [
        delayed(_partition_stats, pure=True)(xp, yp, classes, labels_are_codes, block_rows)
        for xp, yp in zip(xparts, yparts, strict=True)
    ]
    root = _tree_reduce(partials, _merge_stats, split_every)
    if root is None:
        return SufficientStats.zeros(p, classes=classes, feature_names=names)
    with scheduler_for(scheduler, default_local_cluster=False) as sched:
        (stats,) = compute_graphs(root, scheduler=sched)
    check_finite_stats(stats)
    return stats


def _encode_partition(
    part: pd.DataFrame, schema: Schema, include_label: bool, block_rows: int | None
) -> tuple[SufficientStats, EncodeReport]:
    X, y, report = encode(schema, part, include_label=include_label, log=False, order="F")
    classes = schema.label.classes if schema.label is not None else None
    names = schema.layout(include_label=include_label).feature_names
    stats = compute_block_stats(X, y, classes, block_rows=block_rows, names=names)
    return stats, report


def stats_from_parquet(
    path: str | os.PathLike[str],
    *,
    schema: Schema,
    include_label: bool,
    scheduler: Any,
    split_every: int,
    cluster_kwargs: dict[str, Any] | None,
    block_rows: int | None = None,
) -> tuple[SufficientStats, EncodeReport]:
    """:meth:`SufficientStats.from_parquet`: read, encode per partition, reduce, log counts."""
    import_dask()
    from dask import delayed

    if not isinstance(schema, Schema):
        raise ParameterError(f"schema ({type(schema).__name__}) must be a ppdp.data.Schema")
    if include_label and schema.label is None:
        raise ParameterError("include_label=True needs a schema with a label")
    src = os.fspath(path)
    if "://" not in src and not os.path.exists(src):
        raise FileNotFoundError(f"path ({src!r}) does not exist")
    from ppdp.data.distributed import open_table

    # Footer checks (a column missing in one file, mixed types) and pyarrow reads with a
    # fresh index per partition, whatever the writer stored.
    ddf = open_table(src, schema, param="path")
    layout = schema.layout(include_label=include_label)
    partials = [
        delayed(_encode_partition, pure=True)(part, schema, include_label, block_rows)
        for part in ddf.to_delayed()
    ]
    root = _tree_reduce(partials, _merge_pairs, split_every)
    if root is None:
        classes = schema.label.classes if schema.label is not None else None
        stats = SufficientStats.zeros(
            layout.n_features, classes=classes, feature_names=layout.feature_names
        )
        return stats, EncodeReport(n_rows=0)
    with scheduler_for(
        scheduler, default_local_cluster=True, cluster_kwargs=cluster_kwargs
    ) as sched:
        ((stats, report),) = compute_graphs(root, scheduler=sched)
    log_report(report)
    check_finite_stats(stats)
    return stats, report
