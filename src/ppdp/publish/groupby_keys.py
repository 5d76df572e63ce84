"""Group keys read from the data, for ``GroupByPublisher(keys="private")``.

The exact per-key statistics a private selection reads: the declared keys (the product of
every ``by`` column's declared levels, an open column's known categories included), each
always released, and the *candidate* keys, those the data hold outside the declared ones,
which :class:`~ppdp.publish.partition_selection.PartitionSelection` filters. Nothing here
is released: the candidates' exact counts and sums only reach the selection and the noise.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ppdp.data import CUSTODIAN_LOGGER, Schema
from ppdp.exceptions import DataValidationError

__all__ = ["KeyedRows", "candidate_index", "candidate_statistics", "open_key_values"]

_Ints = NDArray[np.int64]

logger = logging.getLogger(CUSTODIAN_LOGGER)


@dataclass(frozen=True)
class KeyedRows:
    """Encoded rows with the keys of the open ``by`` columns (texts), for the release.

    ``keep`` marks the rows whose open keys are present (every row unless missing keys
    were masked under ``on_invalid="mask"``)."""

    X: NDArray[np.float64]
    open_keys: dict[str, NDArray[Any]]
    keep: NDArray[np.bool_]
    #: Each row's person (codes; the row itself without a privacy unit), for DP-SIPS.
    persons: NDArray[np.int64] | None = None

    @property
    def shape(self) -> tuple[int, ...]:
        """The encoded rows' shape (the release run counts the rows scanned by it)."""
        return self.X.shape


def key_text(values: pd.Series) -> NDArray[Any]:
    """Each value as its key text: an integral number as an integer (``401``, not
    ``401.0``: a CSV column of codes may be read as floats), anything else as ``str``."""
    if pd.api.types.is_float_dtype(values.dtype):
        v = values.to_numpy(dtype=np.float64)
        whole = np.isfinite(v) & (v == np.round(v))
        out = values.astype(str).to_numpy(dtype=object)
        out[whole] = [str(int(x)) for x in v[whole]]
        return out
    return values.astype(str).to_numpy(dtype=object)


def open_key_values(
    schema: Schema, df: pd.DataFrame, names: Sequence[str], on_invalid: str
) -> tuple[dict[str, NDArray[Any]], NDArray[np.bool_]]:
    """The key texts of the open columns ``names``, and which rows have them all.

    A missing key (``NaN``, ``None`` or a declared missing-value token) takes the column's
    ``impute`` under ``nan_policy: impute``; otherwise it is refused (one line naming the
    column and a count) or, under ``on_invalid="mask"``, the row is left out of every
    statistic (a per-record map: the sensitivities hold; counted in the custodian's log).
    """
    keep = np.ones(len(df), dtype=bool)
    out: dict[str, NDArray[Any]] = {}
    for name in names:
        if name not in df.columns:
            raise DataValidationError(f"data has no column {name!r} (an open by column)")
        s = df[name]
        missing = s.isna().to_numpy(dtype=bool, copy=True)
        if schema.missing_values:
            missing |= s.isin(list(schema.missing_values)).to_numpy(dtype=bool)
        keys = key_text(s)
        n_missing = int(missing.sum())
        if n_missing:
            col = schema.open_column(name)
            if schema.nan_policy == "impute" and col.impute is not None:
                keys[missing] = str(col.impute)
            elif on_invalid == "mask":
                keep &= ~missing
                logger.warning("column %r: %d missing key(s) left out (masked)", name, n_missing)
            else:
                raise DataValidationError(
                    f"column {name!r}: {n_missing} value(s) are missing; an open column's key "
                    "must be present (declare impute with nan_policy: impute, or drop them)"
                )
        out[name] = keys
    return out, keep


def candidate_statistics(
    by: Sequence[str],
    levels: Sequence[Sequence[Any]],
    labels: dict[str, NDArray[Any]],
    sums: NDArray[np.int64],
) -> tuple[_Ints, _Ints, pd.DataFrame, _Ints, _Ints]:
    """Exact statistics of the declared keys and of the candidate keys.

    Parameters
    ----------
    by : sequence of str
    levels : sequence of sequences
        The declared levels of each ``by`` column (an open column's known keys, as texts).
    labels : dict of str to ndarray
        Each row's level (declared columns) or key text (open columns), per ``by`` column.
    sums : ndarray of int64, shape (k, n)
        Each row's centred integer value per ``means`` column.

    Returns
    -------
    declared_counts (G,), declared_sums (k, G), candidates (a frame of the ``by`` columns,
    sorted by their texts: the order depends on the key set only), candidate_counts (C,),
    candidate_sums (k, C).
    """
    k = sums.shape[0]
    frame = pd.DataFrame({f"k{j}": labels[name] for j, name in enumerate(by)})
    frame["n"] = np.ones(len(frame), dtype=np.int64)
    for j in range(k):
        frame[f"s{j}"] = sums[j]
    cols = [f"k{j}" for j in range(len(by))]
    agg = frame.groupby(cols, sort=False, dropna=False).sum()
    agg.index = pd.MultiIndex.from_tuples(
        [t if isinstance(t, tuple) else (t,) for t in agg.index], names=cols
    )
    stat_cols = ["n", *(f"s{j}" for j in range(k))]
    if all(len(lv) for lv in levels):
        declared_index = pd.MultiIndex.from_product([list(lv) for lv in levels], names=cols)
    else:
        declared_index = pd.MultiIndex.from_tuples([], names=cols)
    declared = agg.reindex(declared_index, fill_value=0)[stat_cols].to_numpy(dtype=np.int64)
    cand = agg[~agg.index.isin(declared_index)]
    order = sorted(range(len(cand)), key=lambda i: tuple(map(str, cand.index[i])))
    cand = cand.iloc[order]
    cand_values = cand[stat_cols].to_numpy(dtype=np.int64)
    keys = cand.index.to_frame(index=False)
    keys.columns = list(by)
    return (
        declared[:, 0].copy(),
        np.ascontiguousarray(declared[:, 1:].T).reshape(k, len(declared)),
        keys,
        cand_values[:, 0].copy(),
        np.ascontiguousarray(cand_values[:, 1:].T).reshape(k, len(cand_values)),
    )


def candidate_index(
    by: Sequence[str], labels: dict[str, NDArray[Any]], candidates: pd.DataFrame
) -> NDArray[np.int64]:
    """Each row's position among ``candidates`` (the frame :func:`candidate_statistics`
    returns), or −1 for a row of a declared key."""
    rows = pd.MultiIndex.from_arrays([np.asarray(labels[name], dtype=object) for name in by])
    cand = pd.MultiIndex.from_frame(candidates[list(by)].astype(object))
    return np.asarray(cand.get_indexer(rows), dtype=np.int64)
