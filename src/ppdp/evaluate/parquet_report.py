"""The quality report of tables larger than memory: partitioned releases, Parquet datasets.

:func:`dataset_report` gives :func:`ppdp.evaluate.report.quality_report`'s report when the
release is a partitioned Parquet folder written by ppdp (it must hold ``_SUCCESS``) and
the private table is a Parquet dataset (a folder, a glob) or a Dask DataFrame. Two passes,
partition by partition, never the whole table in memory:

1. the column counts (:func:`ppdp.evaluate.report.column_counts`: histogram bins, declared
   categories, values at the bounds) of every partition, added up, and the partitions'
   sizes: the marginals and bound shares use every row, exactly as in memory;
2. the seeded sample the in-memory report draws above ``MAX_ROWS`` rows (the same global
   row positions, from the same seed), read partition by partition: the association maps
   and the classifiers use it. Below ``MAX_ROWS`` rows the sample is the whole table, and
   the report equals the in-memory one.

Examples
--------
>>> from ppdp.evaluate.parquet_report import dataset_report
>>> report = dataset_report("adult-parquet/", "release/", schema)  # doctest: +SKIP
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ppdp.data import Schema
from ppdp.exceptions import DataValidationError, ParameterError, ParameterTypeError

__all__ = ["dataset_report", "is_dataset", "read_release_folder", "uses_datasets"]


def _is_dask_frame(data: Any) -> bool:
    return not isinstance(data, str | os.PathLike | pd.DataFrame) and hasattr(data, "to_delayed")


def is_dataset(data: Any, scheduler: Any = None) -> bool:
    """A Dask DataFrame, a folder or a glob (a single ``.parquet`` file with ``scheduler``)."""
    if data is None or isinstance(data, pd.DataFrame):
        return False
    if _is_dask_frame(data):
        return True
    from ppdp.data.distributed import is_distributed

    if not is_distributed(data):
        return False
    text = os.fspath(data)
    single = text.lower().endswith((".parquet", ".pq")) and os.path.isfile(text)
    return not single or scheduler is not None


def uses_datasets(release: Any, original: Any, holdout: Any, scheduler: Any = None) -> bool:
    """Whether a table report reads any of its tables partition by partition."""
    return any(is_dataset(t, scheduler) for t in (release, original, holdout))


def read_release_folder(release: Any, schema: Schema) -> Any:
    """A partitioned release as a Dask DataFrame of exactly the schema's columns.

    Raises
    ------
    DataValidationError
        The folder has no ``_SUCCESS`` marker (incomplete, or not written by ppdp), a column
        of the schema is missing from a file, or the release has columns the schema does
        not declare (one line each).
    """
    from ppdp.data.distributed import open_table, read_parquet_dataset
    from ppdp.evaluate.report import unit_column

    if _is_dask_frame(release):
        frame = release
    else:
        folder = Path(os.fspath(release))
        if not folder.is_dir():
            raise ParameterError(
                f"release ({str(folder)!r}): a partitioned release is a folder written by "
                "ppdp (with a _SUCCESS marker)"
            )
        frame = read_parquet_dataset(folder)  # refuses a folder without _SUCCESS
    want = list(schema.column_names)
    extra = [str(c) for c in frame.columns if str(c) not in [*want, unit_column(schema)]]
    if extra:
        raise DataValidationError(
            f"the release's columns do not match the schema: it has undeclared "
            f"{', '.join(map(repr, extra))}"
        )
    if _is_dask_frame(release):
        return open_table(release, schema, param="release")
    return open_table(Path(os.fspath(release)), schema, param="release")


def _as_frame(data: Any, schema: Schema, name: str, read: Any, *, exact: bool) -> Any:
    """A Dask DataFrame of ``data``'s schema columns (a table in memory: one partition)."""
    import dask.dataframe as dd

    from ppdp.data.distributed import open_table
    from ppdp.evaluate.report import _check_table, mask_missing

    if is_dataset(data, scheduler="any"):
        frame = open_table(data, schema, param=name)
        if not schema.missing_values:
            return frame
        return frame.map_partitions(mask_missing, schema, meta=frame._meta)
    table = _check_table(name, _in_memory(data, read), schema, exact=exact)
    return dd.from_pandas(table, npartitions=1, sort=False)


def _part_counts(part: pd.DataFrame, cols: list[Any], name: str) -> tuple[int, Any]:
    from ppdp.evaluate.report import column_counts

    return len(part), column_counts(part, cols, name)


def _take(part: pd.DataFrame, positions: np.ndarray) -> pd.DataFrame:
    return part.iloc[positions]


def _sample_parts(frame: Any, sizes: np.ndarray, rows: np.ndarray) -> list[Any]:
    """Delayed pieces holding the rows at the sorted global positions ``rows``."""
    from dask import delayed

    offsets = np.concatenate([[0], np.cumsum(sizes)])
    pieces = []
    for i, part in enumerate(frame.to_delayed()):
        lo, hi = np.searchsorted(rows, [offsets[i], offsets[i + 1]])
        if hi > lo:
            pieces.append(delayed(_take, pure=True)(part, rows[lo:hi] - offsets[i]))
    return pieces


def _concat(pieces: list[pd.DataFrame], like: Any) -> pd.DataFrame:
    if not pieces:
        return like._meta.copy()
    return pd.concat(pieces, ignore_index=True)


def dataset_report(
    original: Any,
    release: Any,
    schema: Schema,
    *,
    holdout: Any = None,
    target: str | None = None,
    guarantee: Any = None,
    scheduler: Any = None,
    read: Any = None,
    read_release: Any = None,
) -> Any:
    """:func:`~ppdp.evaluate.report.quality_report` on tables read partition by partition.

    Parameters
    ----------
    original : path, dask DataFrame or DataFrame
        The private table: a Parquet dataset (folder, glob), a Dask DataFrame, or a table
        in memory (or a file ``read`` reads).
    release : path, dask DataFrame or DataFrame
        The released table: a folder written by ppdp (``_SUCCESS`` inside; refused in one
        line without it), a Dask DataFrame or a table in memory.
    schema : Schema
    holdout, target, guarantee
        As for ``quality_report``; a holdout may be a Parquet dataset too (a seeded sample
        of at most ``MAX_ROWS`` rows is read).
    scheduler : optional
        See :func:`ppdp.data.distributed.dask_session` (``None``: a ``LocalCluster`` when a
        table is a path).
    read : callable, optional
        Reads a table file into memory (CSV); default :func:`ppdp.data.draft.read_table`.
    read_release : callable, optional
        Reads a release file into memory; default ``read``.

    Returns
    -------
    QualityReport
    """
    import dask

    from ppdp.data.distributed import compute, dask_session
    from ppdp.evaluate import report as rp

    if not isinstance(schema, Schema):
        raise ParameterTypeError(f"schema ({type(schema).__name__}) must be a ppdp.data.Schema")
    if read is None:
        from ppdp.data.draft import read_table

        read = read_table
    if read_release is None:
        read_release = read
    rp._guarantee(guarantee)
    cols, target_col = rp.report_columns(schema, target)
    if holdout is not None and target is None:
        raise ParameterError("a holdout is only used with a target: give target= as well")
    tables = (original, release, holdout)
    local_default = any(isinstance(t, str | os.PathLike) for t in tables)
    # The files' footers (and the tables read into memory) before a cluster is started.
    if is_dataset(release):
        rel = read_release_folder(release, schema)
    else:
        rel = _as_frame(release, schema, "release", read_release, exact=True)
    if not is_dataset(original, scheduler="any"):
        original = _in_memory(original, read)
    orig = _as_frame(original, schema, "original", read, exact=False)
    ids = _unit_ids(original, orig, schema, guarantee)
    frames = [("original", orig), ("release", rel)]
    if holdout is not None:
        frames.append(("holdout", _holdout_frame(holdout, schema, target, read)))
    with dask_session(scheduler, default_local_cluster=local_default) as sched:
        passes = [
            [dask.delayed(_part_counts, pure=True)(p, cols, name) for p in f.to_delayed()]
            for name, f in frames
        ]
        results = compute(*passes, scheduler=sched)
        sizes = [np.array([r[0] for r in res], dtype=np.int64) for res in results]
        counts = []
        for name, res in zip(("original", "release"), results[:2], strict=False):
            total = res[0][1]
            for _, c in res[1:]:
                total = rp.add_counts(total, c)
            if sum(r[0] for r in res) == 0:
                raise DataValidationError(f"{name} has no rows")
            counts.append(total)
        n = [int(s.sum()) for s in sizes]
        rng = np.random.default_rng(rp._SEED)
        picks = [rp._sample(n[0], rng), rp._sample(n[1], rng)]
        if holdout is not None:
            picks.append(rp._sample(n[2], np.random.default_rng(rp._SEED)))
        pieces = [
            _sample_parts(f, s, rows) for (_, f), s, rows in zip(frames, sizes, picks, strict=True)
        ]
        taken = compute(*pieces, scheduler=sched)
        bounding = _bounding(original, ids, schema, guarantee, sched)
    samples = [_concat(list(t), f) for t, (_, f) in zip(taken, frames, strict=True)]
    orig_s, rel_s = samples[0], samples[1]
    test = None
    if holdout is not None:
        test = rp._check_table("holdout", samples[2], schema, exact=False)
    parts = [f.npartitions for _, f in frames[:2]]
    note = (
        f"read partition by partition ({parts[0]:,} partition(s) of the original, "
        f"{parts[1]:,} of the release): the column marginals use every row; any other "
        f"measure uses the seeded sample (seed {rp._SEED}) of at most {rp.MAX_ROWS:,} rows "
        "of each table that the in-memory report draws"
    )
    report = rp._assemble(
        cols,
        (counts[0], counts[1]),
        (n[0], n[1]),
        (orig_s, rel_s),
        (orig_s, rel_s, test),
        target_col,
        guarantee,
        extra_notes=(note,),
    )
    report.bounding = bounding
    return report


def _unit_ids(original: Any, orig: Any, schema: Schema, guarantee: Any) -> Any:
    """The privacy unit's id column of a Parquet/Dask original, as read (before the missing
    values are masked, as the in-memory report reads it); None when there is no bounding
    to report (no unit, an ``auto`` cap no guarantee states, a table in memory)."""
    from ppdp.evaluate.report import bounding_cap

    unit = schema.privacy_unit
    if isinstance(original, pd.DataFrame) or bounding_cap(schema, guarantee) is None:
        return None
    if unit is None or unit.column not in orig.columns:
        return None
    if not schema.missing_values:
        return orig[unit.column]
    from ppdp.data.distributed import open_table

    return open_table(original, schema, param="original")[unit.column]


def _bounding(
    original: Any, ids: Any, schema: Schema, guarantee: Any, scheduler: Any
) -> dict[str, Any] | None:
    """The report's ``bounding`` block (custodian only): what ``max_rows`` dropped, its rows
    per person counted across partitions (:func:`ppdp.data.contribution.dropped_share`)."""
    from ppdp.evaluate.report import bounding_cap, bounding_of

    if isinstance(original, pd.DataFrame):
        return bounding_of(original, schema, guarantee)
    if ids is None:
        return None
    from ppdp.data.contribution import dropped_share

    k = bounding_cap(schema, guarantee)
    unit = schema.privacy_unit
    assert unit is not None and k is not None  # _unit_ids gave ids
    block = dropped_share(ids, unit.column, k, scheduler=scheduler)
    from ppdp.evaluate.group_bounding import group_caps
    from ppdp.evaluate.report import release_guarantee

    g = release_guarantee(guarantee)
    if g is not None and group_caps(g.details) is not None:
        block["note"] = (
            "the group caps (max_groups, max_rows_per_group) are recomputed on an in-memory "
            "original only: max_rows here is counted before them, an upper bound"
        )
    return block


def _in_memory(data: Any, read: Any) -> Any:
    return data if isinstance(data, pd.DataFrame) else read(data)


def _holdout_frame(holdout: Any, schema: Schema, target: str | None, read: Any) -> Any:
    """The holdout as a Dask DataFrame; its target column must be there."""
    import dask.dataframe as dd

    if is_dataset(holdout, "any"):
        from ppdp.data.distributed import open_table

        return open_table(holdout, schema, param="holdout")
    table = _in_memory(holdout, read)
    if target not in [str(c) for c in table.columns]:
        raise DataValidationError(f"the holdout has no column {target!r} (the target)")
    return dd.from_pandas(table, npartitions=1, sort=False)
