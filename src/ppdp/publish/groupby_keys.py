"""Group keys read from the data, for ``GroupByPublisher(keys="private")``.

The exact per-key statistics a private selection reads: the declared keys (the product of
every ``by`` column's declared levels, an open column's known categories included), each
always released, and the *candidate* keys, those the data hold outside the declared ones,
which :class:`~ppdp.publish.partition_selection.PartitionSelection` filters. Nothing here
is released: the candidates' exact counts and sums only reach the selection and the noise.

:class:`KeyedAggregate` holds them per key (counts, integer sums, grid histograms for the
quantiles); aggregates of partitions add with ``+``, so a Parquet dataset or a Dask
DataFrame is read in one pass and gives the in-memory aggregate exactly.
For DP-SIPS under a privacy unit the aggregate also carries :func:`person_key_pairs`, the
distinct (person, key) pairs of the rows outside the declared keys: they add by union, so
a partitioned table gives the in-memory pairs; :func:`sips_inputs` numbers them for the
selection. Without a unit each row is a person of one key, and the per-key counts suffice.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ppdp.data import CUSTODIAN_LOGGER, Schema
from ppdp.exceptions import DataValidationError
from ppdp.publish.group_quantiles import CellCounts

__all__ = [
    "KeyedAggregate",
    "KeyedRows",
    "candidate_index",
    "check_missing_keys",
    "exact_bincount",
    "open_key_texts",
    "open_key_values",
    "person_key_pairs",
    "sips_inputs",
]

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
    #: Each row's person (the id column's text; None without a privacy unit), for DP-SIPS.
    persons: NDArray[Any] | None = None

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


def open_key_texts(
    schema: Schema, df: pd.DataFrame, names: Sequence[str]
) -> tuple[dict[str, NDArray[Any]], dict[str, NDArray[np.bool_]]]:
    """The key texts of the open columns ``names`` and, per column, which rows miss their
    key (``NaN``, ``None`` or a declared missing-value token) after the column's
    ``impute`` under ``nan_policy: impute``. Nothing is refused here."""
    out: dict[str, NDArray[Any]] = {}
    gaps: dict[str, NDArray[np.bool_]] = {}
    for name in names:
        if name not in df.columns:
            raise DataValidationError(f"data has no column {name!r} (an open by column)")
        s = df[name]
        missing = s.isna().to_numpy(dtype=bool, copy=True)
        if schema.missing_values:
            missing |= s.isin(list(schema.missing_values)).to_numpy(dtype=bool)
        keys = key_text(s)
        if missing.any():
            col = schema.open_column(name)
            if schema.nan_policy == "impute" and col.impute is not None:
                keys[missing] = str(col.impute)
                missing[:] = False
        out[name] = keys
        gaps[name] = missing
    return out, gaps


def check_missing_keys(missing: dict[str, int], on_invalid: str) -> None:
    """Refuse missing open keys (one line naming the column and the count), or, under
    ``on_invalid="mask"``, say in the custodian's log how many rows were left out."""
    for name, n_missing in missing.items():
        if not n_missing:
            continue
        if on_invalid == "mask":
            logger.warning("column %r: %d missing key(s) left out (masked)", name, n_missing)
        else:
            raise DataValidationError(
                f"column {name!r}: {n_missing} value(s) are missing; an open column's key "
                "must be present (declare impute with nan_policy: impute, or drop them)"
            )


def open_key_values(
    schema: Schema, df: pd.DataFrame, names: Sequence[str], on_invalid: str
) -> tuple[dict[str, NDArray[Any]], NDArray[np.bool_]]:
    """The key texts of the open columns ``names``, and which rows have them all.

    A missing key (``NaN``, ``None`` or a declared missing-value token) takes the column's
    ``impute`` under ``nan_policy: impute``; otherwise it is refused (one line naming the
    column and a count) or, under ``on_invalid="mask"``, the row is left out of every
    statistic (a per-record map: the sensitivities hold; counted in the custodian's log).
    """
    out, gaps = open_key_texts(schema, df, names)
    check_missing_keys({name: int(m.sum()) for name, m in gaps.items()}, on_invalid)
    keep = np.ones(len(df), dtype=bool)
    for m in gaps.values():
        keep &= ~m
    return out, keep


def exact_bincount(codes: _Ints, weights: _Ints, size: int) -> _Ints:
    """``Σ weights`` per code in ``[0, size)``, exact in int64: float ``bincount``s over
    chunks small enough that every partial sum stays below 2⁵³."""
    w = np.asarray(weights, dtype=np.int64)
    out = np.zeros(size, dtype=np.int64)
    if not w.size:
        return out
    top = int(np.abs(w).max()) or 1
    step = max(1, (2**53 - 1) // top)
    for start in range(0, w.size, step):
        part = slice(start, start + step)
        out += np.rint(np.bincount(codes[part], weights=w[part], minlength=size)).astype(np.int64)
    return out


def _factorize(columns: Sequence[NDArray[Any]]) -> tuple[_Ints, _Ints]:
    """Codes of the rows' key tuples (one array per column) and each code's first row."""
    n = len(columns[0]) if columns else 0
    code = np.zeros(n, dtype=np.int64)
    for j, col in enumerate(columns):
        c, uniq = pd.factorize(col)
        if j == 0:
            code = c.astype(np.int64)
        else:  # re-coded: stays below n
            code = pd.factorize(code * len(uniq) + c)[0].astype(np.int64)
    # factorize numbers keys in order of first appearance: a row is its key's first
    # exactly where its code exceeds every code before it.
    seen = np.maximum.accumulate(np.concatenate([[-1], code[:-1]])) if n else code
    return code, np.flatnonzero(code > seen).astype(np.int64)


@dataclass(frozen=True)
class KeyedAggregate:
    """Exact per-key statistics of rows keyed by the ``by`` columns' values (declared
    levels and open key texts), as one pass over a table or a partition computes them.
    Partition values add with ``+``; nothing here is released.

    Attributes
    ----------
    keys : DataFrame
        One row per distinct key, a column per ``by`` column.
    stats : ndarray of int64, shape (s, K)
        Per key: the row count, then each statistic's exact integer sum.
    cells : tuple of CellCounts
        Per quantile column, the grid histogram of each key (groups are rows of ``keys``).
    missing : dict of str to int
        Rows left out for a missing open key, per open column (refused after the pass,
        with the whole table's count, unless masked).
    pairs : DataFrame, optional
        DP-SIPS under a privacy unit: :func:`person_key_pairs` of the rows (partitions'
        pairs add by union).
    """

    keys: pd.DataFrame
    stats: _Ints
    cells: tuple[CellCounts, ...] = ()
    missing: dict[str, int] = field(default_factory=dict)
    pairs: pd.DataFrame | None = None

    @classmethod
    def of_rows(
        cls,
        labels: dict[str, NDArray[Any]],
        sums: _Ints,
        cells: Sequence[_Ints] = (),
        missing: dict[str, int] | None = None,
    ) -> KeyedAggregate:
        """The aggregate of rows: each row's key (``labels``, per ``by`` column), its
        integer statistics ``sums`` (s − 1, n) and its grid cell per quantile column."""
        names = list(labels)
        code, first = _factorize([labels[n] for n in names])
        size = len(first)
        stats = np.zeros((1 + sums.shape[0], size), dtype=np.int64)
        stats[0] = np.bincount(code, minlength=size)
        for j in range(sums.shape[0]):
            stats[1 + j] = exact_bincount(code, sums[j], size)
        # Object columns throughout (a key's value as read), whatever pandas would infer.
        keys = pd.DataFrame({n: pd.Series(labels[n][first], dtype=object) for n in names})
        hists = tuple(CellCounts.of(code, c) for c in cells)
        return cls(keys, stats, hists, dict(missing or {}))

    def __add__(self, other: KeyedAggregate) -> KeyedAggregate:
        names = list(self.keys.columns)
        both = pd.concat([self.keys, other.keys], ignore_index=True)
        code, first = _factorize([both[n].to_numpy(dtype=object) for n in names])
        size = len(first)
        joined = np.concatenate([self.stats, other.stats], axis=1)
        # Every code occurs: sums over the sorted codes are one per code, exact in int64
        # (float bincounts would need chunks of a few entries for sums near 2⁵²).
        order = np.argsort(code, kind="stable")
        starts = np.flatnonzero(np.r_[True, np.diff(code[order]) != 0])
        stats = np.add.reduceat(joined[:, order], starts, axis=1) if size else joined[:, :0]
        mine, theirs = code[: len(self.keys)], code[len(self.keys) :]
        cells = tuple(
            CellCounts.joined([(a, mine), (b, theirs)])
            for a, b in zip(self.cells, other.cells, strict=True)
        )
        missing = {
            k: self.missing.get(k, 0) + other.missing.get(k, 0)
            for k in {**self.missing, **other.missing}
        }
        pairs = None
        if self.pairs is not None and other.pairs is not None:
            pairs = pd.concat([self.pairs, other.pairs], ignore_index=True).drop_duplicates(
                ignore_index=True
            )
        return KeyedAggregate(both.iloc[first].reset_index(drop=True), stats, cells, missing, pairs)

    def split(self, levels: Sequence[Sequence[Any]]) -> tuple[_Ints, _Ints]:
        """Where each key goes: its declared group (row-major over ``levels``, the
        product of every ``by`` column's declared levels) or -1, and the candidate keys
        (not declared) sorted by their texts, so their order depends on the key set only."""
        names = list(self.keys.columns)
        declared = np.ones(len(self.keys), dtype=bool)
        pos = []
        for name, lv in zip(names, levels, strict=True):
            at = pd.Index(list(lv), dtype=object).get_indexer(
                self.keys[name].to_numpy(dtype=object)
            )
            declared &= at >= 0
            pos.append(np.maximum(at, 0))
        sizes = tuple(len(lv) for lv in levels)
        group = np.full(len(self.keys), -1, dtype=np.int64)
        if declared.any():
            group[declared] = np.ravel_multi_index(tuple(p[declared] for p in pos), sizes).astype(
                np.int64
            )
        cand = np.flatnonzero(~declared)
        texts = pd.DataFrame({n: self.keys[n].iloc[cand].astype(str).to_numpy() for n in names})
        order = texts.sort_values(names, kind="mergesort").index.to_numpy()
        return group, cand[order].astype(np.int64)


def candidate_index(
    by: Sequence[str], labels: dict[str, NDArray[Any]], candidates: pd.DataFrame
) -> NDArray[np.int64]:
    """Each row's position among ``candidates`` (the candidate keys' frame, as
    :meth:`KeyedAggregate.split` orders them), or −1 for a row of a declared key."""
    rows = pd.MultiIndex.from_arrays([np.asarray(labels[name], dtype=object) for name in by])
    cand = pd.MultiIndex.from_frame(candidates[list(by)].astype(object))
    return np.asarray(cand.get_indexer(rows), dtype=np.int64)


#: The column of a person's id in :func:`person_key_pairs` (no ``by`` column is named so).
PERSON = "\x00person"


def person_key_pairs(
    persons: NDArray[Any], labels: dict[str, NDArray[Any]], levels: Sequence[Sequence[Any]]
) -> pd.DataFrame:
    """The distinct (person, key) pairs of rows whose key is not declared, for DP-SIPS.

    ``persons`` holds each row's person (the id column's text), ``labels`` each row's key
    per ``by`` column (as :meth:`KeyedAggregate.of_rows` reads them) and ``levels`` the
    declared levels per ``by`` column (a key is declared when every value is). One row
    per pair, a column :data:`PERSON` then one per ``by`` column (object values)."""
    declared = np.ones(len(persons), dtype=bool)
    for name, lv in zip(labels, levels, strict=True):
        at = pd.Index(list(lv), dtype=object).get_indexer(np.asarray(labels[name], dtype=object))
        declared &= at >= 0
    cols = {PERSON: np.asarray(persons, dtype=object)[~declared]}
    cols |= {name: np.asarray(labels[name], dtype=object)[~declared] for name in labels}
    return pd.DataFrame(cols).drop_duplicates(ignore_index=True)


def sips_inputs(
    pairs: pd.DataFrame, by: Sequence[str], candidates: pd.DataFrame
) -> tuple[_Ints, _Ints]:
    """The pairs of :func:`person_key_pairs` as (person code, position among
    ``candidates``), the candidate keys as :meth:`KeyedAggregate.split` orders them."""
    persons = pd.factorize(pairs[PERSON])[0].astype(np.int64)
    index = candidate_index(by, {name: pairs[name].to_numpy() for name in by}, candidates)
    at = index >= 0
    return persons[at], index[at]
