"""Contribution bounding: at most ``max_rows`` rows of each person before any statistic.

A schema with a :class:`~ppdp.data.PrivacyUnit` protects a person's whole set of rows.
Before a publisher computes anything, :func:`bound_table` keeps, for each person (each value
of the unit's column),

- at most ``max_rows_per_group`` rows in each group, when the caller groups rows
  (``group_codes``; GroupByPublisher's L∞ cap);
- rows in at most ``max_groups`` groups (L0 cap);
- at most ``max_rows`` rows in all (the schema's cap).

Each choice is uniformly random, never "the first rows": an order in the file can be chosen
by whoever wrote it. Every row gets a priority, a keyed SipHash-2-4 of (a fingerprint of
the person's id and the row's encoded values, the row's occurrence number among identical
rows of that person) under a key drawn from the release's random source; a person keeps
the rows of smallest priority (and, for the L0 cap, the groups of smallest keyed hash of
(person, group)). The priorities do not depend on the row order nor on how the table is
split into partitions, so the in-memory and the Dask release agree for one seed, and each
person's kept rows depend on that person's rows alone: the bounding is a per-person map,
which is what the person-level sensitivity needs (``docs/proofs/privacy-unit.md``).

The share of rows dropped is data-dependent: it goes to the custodian's log only
(:data:`ppdp.data.CUSTODIAN_LOGGER`), never into a release.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ppdp.data.columns import AutoMaxRows, PrivacyUnit, check_cap
from ppdp.data.encoding import CUSTODIAN_LOGGER, encode
from ppdp.exceptions import DataValidationError, ParameterError, SchemaError

if TYPE_CHECKING:
    from collections.abc import Callable

    from ppdp.data.schema import Schema
    from ppdp.random import RandomSource

__all__ = [
    "BoundingCounts",
    "ContributionBounds",
    "auto_utilities",
    "bound_dask",
    "bound_table",
    "bounding_keys",
    "dropped_share",
    "log_counts",
    "log_dask_counts",
    "person_weights",
    "rows_per_person",
]

_custodian_log = logging.getLogger(CUSTODIAN_LOGGER)


@dataclass(frozen=True)
class ContributionBounds:
    """The caps one release applies to each person (public: from the schema and parameters).

    Attributes
    ----------
    unit : PrivacyUnit
        The identifier column and ``max_rows``.
    max_groups : int or None
        At most this many groups per person (L0), when ``group_fn`` is given.
    max_rows_per_group : int or None
        At most this many rows per person in one group (L∞), when ``group_fn`` is given.
    group_fn : callable or None
        ``(X, y) -> group codes`` of the encoded rows (groups fixed by the schema).
    frame_group_fn : callable or None
        ``(frame, X, y) -> (codes, prints)``, for groups read from the data (private keys):
        ``codes`` tell equal groups apart within the table, ``prints`` are 64-bit
        fingerprints of each group's content, so a person's kept groups depend on that
        person's rows alone (codes numbered over the whole table would not).
    """

    unit: PrivacyUnit
    max_groups: int | None = None
    max_rows_per_group: int | None = None
    group_fn: Callable[[NDArray[np.float64], Any], NDArray[np.int64]] | None = field(
        default=None, compare=False
    )
    frame_group_fn: (
        Callable[
            [pd.DataFrame, NDArray[np.float64], Any],
            tuple[NDArray[np.int64], NDArray[np.uint64]],
        ]
        | None
    ) = field(default=None, compare=False)

    def __post_init__(self) -> None:
        for name in ("max_groups", "max_rows_per_group"):
            value = getattr(self, name)
            if value is not None:
                try:
                    object.__setattr__(self, name, check_cap(name, value))
                except SchemaError as exc:
                    raise ParameterError(str(exc)) from None

    @property
    def max_contribution(self) -> int:
        """The most rows of one person that reach any statistic:
        ``min(max_rows, max_groups · max_rows_per_group)`` (each factor when set)."""
        k = self.unit.max_rows
        if self.max_groups is not None and self.max_rows_per_group is not None:
            k = min(k, self.max_groups * self.max_rows_per_group)
        return k

    @property
    def rows_per_group(self) -> int:
        """The most rows of one person in one group: ``min(max_rows, max_rows_per_group)``."""
        if self.max_rows_per_group is None:
            return self.unit.max_rows
        return min(self.unit.max_rows, self.max_rows_per_group)

    def describe(self) -> str:
        """The caps as a guarantee states them."""
        extra = []
        if self.max_groups is not None:
            extra.append(f"≤ {self.max_groups} group(s)")
        if self.max_rows_per_group is not None:
            extra.append(f"≤ {self.max_rows_per_group} row(s) per group")
        text = self.unit.describe()
        return text if not extra else f"{text[:-1]}, {', '.join(extra)})"

    def ledger_details(self) -> dict[str, Any]:
        """What the ledger records of the unit and the caps."""
        d: dict[str, Any] = self.unit.ledger_dict()
        if self.max_groups is not None:
            d["max_groups"] = self.max_groups
        if self.max_rows_per_group is not None:
            d["max_rows_per_group"] = self.max_rows_per_group
        return d


@dataclass(frozen=True)
class BoundingCounts:
    """What the bounding dropped (custodian only: data-dependent, never released).

    Partition values add with ``+``.
    """

    rows: int = 0
    persons: int = 0
    missing_ids: int = 0
    by_rows_per_group: int = 0
    by_groups: int = 0
    by_rows: int = 0

    def __add__(self, other: BoundingCounts) -> BoundingCounts:
        return BoundingCounts(
            *(getattr(self, f) + getattr(other, f) for f in self.__dataclass_fields__)
        )

    @property
    def kept(self) -> int:
        """Rows kept."""
        return self.rows - self.missing_ids - self.by_rows_per_group - self.by_groups - self.by_rows

    def summary(self, bounds: ContributionBounds) -> str:
        """One line for the custodian's log: rows read, kept, and dropped by each cap."""
        share = 0.0 if self.rows == 0 else 100.0 * (self.rows - self.kept) / self.rows
        parts = []
        if self.missing_ids:
            parts.append(f"{self.missing_ids:,} without an id")
        if self.by_rows_per_group:
            parts.append(
                f"{self.by_rows_per_group:,} by max_rows_per_group={bounds.max_rows_per_group}"
            )
        if self.by_groups:
            parts.append(f"{self.by_groups:,} by max_groups={bounds.max_groups}")
        if self.by_rows:
            parts.append(f"{self.by_rows:,} by max_rows={bounds.unit.max_rows}")
        dropped = "; ".join(parts) if parts else "none dropped"
        return (
            f"privacy unit {bounds.unit.column!r} (custodian only, not released): "
            f"{self.persons:,} person(s), {self.kept:,} of {self.rows:,} row(s) kept, "
            f"{share:.1f}% dropped ({dropped})"
        )


def bounding_keys(source: RandomSource) -> tuple[str, str]:
    """Two 64-bit SipHash keys from the release's source (the rows', the groups'),
    written as pandas' 16-character hash keys. Drawn once per release, before any noise."""
    words = source.uint64(2)
    return tuple(f"{int(w):016x}" for w in words)  # type: ignore[return-value]


def _keyed(values: NDArray[np.uint64], key: str) -> NDArray[np.uint64]:
    """SipHash-2-4 under ``key`` of each row of ``values`` (n × w uint64) as 8·w bytes."""
    arr = np.ascontiguousarray(values, dtype=np.uint64)
    width = 8 * arr.shape[1]
    raw = arr.view(f"S{width}").reshape(-1)  # fixed width: trailing-zero stripping is 1-1
    return pd.util.hash_array(raw.astype(object), hash_key=key, categorize=False)


def _fingerprints(
    ids: pd.Series, X: NDArray[np.float64], y: Any, texts: pd.DataFrame | None = None
) -> NDArray[np.uint64]:
    """A 64-bit fingerprint of (person id, encoded row, class, open columns' texts) per row:
    the same in any engine, partition or order (ids and open keys as text; encoded values
    are exact functions of the raw values)."""
    frame = pd.DataFrame(np.asarray(X, dtype=np.float64), copy=False)
    frame.columns = [f"x{i}" for i in range(frame.shape[1])]
    frame["_id"] = ids.astype(str).to_numpy(dtype=object)
    if y is not None:
        frame["_y"] = np.asarray(y, dtype=np.int64)
    if texts is not None:  # open columns are not encoded: rows differing there differ
        for i, name in enumerate(texts.columns):
            frame[f"_open{i}"] = texts[name].astype(str).to_numpy(dtype=object)
    return pd.util.hash_pandas_object(frame, index=False, categorize=False).to_numpy(np.uint64)


def _rank_within(
    keys: NDArray[Any] | tuple[NDArray[Any], ...], priority: NDArray[np.uint64]
) -> NDArray[np.int64]:
    """Each row's rank (0, 1, ...) by ``priority`` among the rows with equal ``keys`` (one
    array, or a tuple of arrays compared together)."""
    cols = keys if isinstance(keys, tuple) else (keys,)
    order = np.lexsort((priority, *reversed(cols)))
    starts = np.ones(len(order), dtype=bool)
    if len(order):
        same = np.ones(len(order) - 1, dtype=bool)
        for col in cols:
            c = col[order]
            same &= c[1:] == c[:-1]
        starts[1:] = ~same
    idx = np.arange(len(order))
    first = np.maximum.accumulate(np.where(starts, idx, 0))
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = idx - first
    return rank


def _person_codes(ids: pd.Series) -> NDArray[np.int64]:
    codes, _ = pd.factorize(ids.astype(str), sort=False)
    return codes.astype(np.int64)


def check_ids(ids: pd.Series, unit: PrivacyUnit, on_invalid: str) -> NDArray[np.bool_]:
    """Rows with an id. Missing ids are refused in one line (``"raise"``) or dropped
    (``"mask"``, the accountant's total mode: dropping a row without an id is a per-row
    map, and such a row can belong to no one's bound)."""
    missing = ids.isna().to_numpy()
    if on_invalid == "raise" and missing.any():
        raise _missing_ids(unit, int(missing.sum()))
    return ~missing


def _missing_ids(unit: PrivacyUnit, n: int) -> DataValidationError:
    return DataValidationError(
        f"column {unit.column!r} (the privacy unit) has {n:,} missing id(s); every row must "
        "name its person (fill them in, or drop those rows)"
    )


def _bound_mask(
    ids: pd.Series,
    X: NDArray[np.float64],
    y: Any,
    bounds: ContributionBounds,
    keys: tuple[str, str],
    texts: pd.DataFrame | None = None,
    grouped: tuple[NDArray[np.int64], NDArray[np.uint64]] | None = None,
) -> tuple[NDArray[np.bool_], BoundingCounts]:
    """Which rows (all with an id) each person keeps, and how many each cap dropped.

    ``grouped``: each row's group code and group fingerprint (groups read from the data);
    otherwise ``bounds.group_fn`` gives the codes, which are their own fingerprints."""
    n = len(ids)
    if n == 0:
        return np.zeros(0, dtype=bool), BoundingCounts()
    person = _person_codes(ids)
    content = _fingerprints(ids, X, y, texts)
    # Occurrence number among the same person's identical rows (within the person: no
    # other person's rows enter a person's priorities, even under a fingerprint collision).
    occurrence = _rank_within((person, content), np.zeros(n, dtype=np.uint64))
    priority = _keyed(np.column_stack([content, occurrence.astype(np.uint64)]), keys[0])
    keep = np.ones(n, dtype=bool)
    counts = {"by_rows_per_group": 0, "by_groups": 0}
    if grouped is None and bounds.group_fn is not None:
        codes = np.asarray(bounds.group_fn(X, y), dtype=np.int64)
        grouped = (codes, codes.astype(np.uint64))
    if grouped is not None:
        groups, group_prints = np.asarray(grouped[0], dtype=np.int64), grouped[1]
        pair = person * (int(groups.max()) + 1) + groups
        if bounds.max_rows_per_group is not None:
            over = _rank_within(pair, priority) >= bounds.max_rows_per_group
            counts["by_rows_per_group"] = int(over.sum())
            keep &= ~over
        if bounds.max_groups is not None:
            person_print = pd.util.hash_pandas_object(
                ids.astype(str).reset_index(drop=True), index=False
            ).to_numpy(np.uint64)
            group_priority = _keyed(
                np.column_stack([person_print, np.asarray(group_prints, np.uint64)]), keys[1]
            )
            # Rank each person's groups (those with rows left) by their keyed hash.
            first_row = np.where(keep)[0]
            _, uniq = np.unique(pair[first_row], return_index=True)
            rep = first_row[uniq]
            grank = _rank_within(person[rep], group_priority[rep])
            allowed = set(pair[rep][grank < bounds.max_groups].tolist())
            over = keep & ~np.isin(pair, np.fromiter(allowed, dtype=np.int64, count=len(allowed)))
            counts["by_groups"] = int(over.sum())
            keep &= ~over
    big = np.iinfo(np.uint64).max
    rank = _rank_within(person, np.where(keep, priority, big))
    over = keep & (rank >= bounds.unit.max_rows)
    keep &= ~over
    return keep, BoundingCounts(
        rows=n,
        persons=int(person.max()) + 1,
        by_rows=int(over.sum()),
        **counts,
    )


def bound_table(
    df: pd.DataFrame,
    schema: Schema,
    bounds: ContributionBounds,
    keys: tuple[str, str],
    *,
    on_invalid: str = "raise",
    log: bool = True,
) -> tuple[pd.DataFrame, BoundingCounts]:
    """Keep at most the caps' rows of each person; return the kept rows and the counts.

    Parameters
    ----------
    df : pandas.DataFrame
        The private table, with the schema's columns and the unit's id column.
    schema : Schema
        Declares the privacy unit (its ``max_rows``).
    bounds : ContributionBounds
    keys : (str, str)
        From :func:`bounding_keys` (the release's random source).
    on_invalid : {"raise", "mask"}
        Missing ids: refused (``"raise"``) or dropped (``"mask"``).
    log : bool
        Send the counts' line to the custodian's log.

    Returns
    -------
    (DataFrame, BoundingCounts)
        The kept rows, in their original order (the id column included), and what each
        cap dropped (custodian only).
    """
    unit = bounds.unit
    if not isinstance(df, pd.DataFrame):
        raise DataValidationError(
            f"data ({type(df).__name__}) must be a pandas DataFrame with the privacy unit's "
            f"column {unit.column!r} (an array has no id column)"
        )
    if unit.column not in df.columns:
        raise DataValidationError(
            f"data lacks column {unit.column!r}, the privacy unit's id column declared in "
            "the schema (every row must name its person)"
        )
    has_id = check_ids(df[unit.column], unit, on_invalid)
    valid = df if has_id.all() else df.loc[has_id]
    # The label's class codes (when declared) enter the fingerprint and the groups.
    X, y, _ = encode(schema, valid, include_label=False, log=False, on_invalid="mask")
    opened = [c for c in schema.open_column_names if c in valid.columns]
    texts = valid[opened].reset_index(drop=True) if opened else None
    grouped = None if bounds.frame_group_fn is None else bounds.frame_group_fn(valid, X, y)
    mask, counts = _bound_mask(valid[unit.column], X, y, bounds, keys, texts, grouped)
    counts = BoundingCounts(
        rows=len(df),
        persons=counts.persons,
        missing_ids=int((~has_id).sum()),
        by_rows_per_group=counts.by_rows_per_group,
        by_groups=counts.by_groups,
        by_rows=counts.by_rows,
    )
    if log:
        _custodian_log.info("%s", counts.summary(bounds))
    return valid.loc[mask], counts


def _bound_part(
    part: pd.DataFrame,
    schema: Schema,
    bounds: ContributionBounds,
    keys: tuple[str, str],
    on_invalid: str,
) -> tuple[pd.DataFrame, BoundingCounts]:
    return bound_table(part, schema, bounds, keys, on_invalid=on_invalid, log=False)


def bound_dask(
    frame: Any,
    schema: Schema,
    bounds: ContributionBounds,
    keys: tuple[str, str],
    *,
    on_invalid: str = "raise",
) -> tuple[Any, list[Any]]:
    """:func:`bound_table` on a Dask DataFrame: exact when a person's rows span partitions.

    The rows are first shuffled by the id column, so every person's rows meet in one
    partition; each partition is then bounded as in memory (the priorities do not depend
    on the partitioning). Returns the bounded Dask DataFrame and one delayed
    :class:`BoundingCounts` per partition (sum them for the custodian's line).
    """
    import dask.dataframe as dd
    from dask import delayed

    unit = bounds.unit
    if unit.column not in frame.columns:
        raise DataValidationError(
            f"data lacks column {unit.column!r}, the privacy unit's id column declared in "
            "the schema (every row must name its person)"
        )
    # Shuffle on the ids as text: one person's rows land in one partition whatever the dtype.
    keyed = frame.assign(_ppdp_unit_text=frame[unit.column].astype(str))
    shuffled = keyed.shuffle(on="_ppdp_unit_text").drop(columns=["_ppdp_unit_text"])
    results = [
        delayed(_bound_part, pure=True)(p, schema, bounds, keys, on_invalid)
        for p in shuffled.to_delayed()
    ]
    parts = [delayed(_first, pure=True)(r) for r in results]
    counts = [delayed(_second, pure=True)(r) for r in results]
    meta = frame._meta
    return dd.from_delayed(parts, meta=meta, verify_meta=False), counts


def _first(pair: tuple[Any, Any]) -> Any:
    return pair[0]


def _second(pair: tuple[Any, Any]) -> Any:
    return pair[1]


def log_counts(counts: BoundingCounts, bounds: ContributionBounds) -> None:
    """The custodian's line of a (merged) bounding."""
    _custodian_log.info("%s", counts.summary(bounds))


def log_dask_counts(
    counts: list[Any], bounds: ContributionBounds, *, scheduler: Any
) -> BoundingCounts:
    """Compute the partitions' delayed counts of :func:`bound_dask`, log and return their sum."""
    from ppdp.data._dask import compute

    parts = compute(*counts, scheduler=scheduler)
    merged = sum(parts, BoundingCounts())
    log_counts(merged, bounds)
    return merged


# -- max_rows: auto (docs/proofs/privacy-unit.md §5) -------------------------------------


def rows_per_person(
    ids: Any, unit: PrivacyUnit, *, on_invalid: str = "raise", scheduler: Any = None
) -> NDArray[np.int64]:
    """Each person's number of rows (one value per person; ids as text), from a pandas
    Series or a Dask Series (a person's rows may span partitions: counted exactly).

    Missing ids are refused or dropped as in :func:`bound_table` (``on_invalid``).
    """
    if hasattr(ids, "to_delayed"):  # Dask: value counts reduce across partitions
        from ppdp.data._dask import compute

        (missing,) = compute(ids.isna().sum(), scheduler=scheduler)
        if on_invalid == "raise" and int(missing):
            raise _missing_ids(unit, int(missing))
        (counts,) = compute(ids.dropna().astype(str).value_counts(), scheduler=scheduler)
        return np.asarray(counts, dtype=np.int64)
    has_id = check_ids(ids, unit, on_invalid)
    valid = ids if has_id.all() else ids[has_id]
    return valid.astype(str).value_counts(sort=False).to_numpy(dtype=np.int64)


def auto_utilities(sizes: NDArray[np.int64], spec: AutoMaxRows) -> NDArray[np.float64]:
    """The utility of each candidate ``k = 1..upper`` for the ``quantile`` of ``sizes``.

    ``u(k) = −max(q·P − L(k), L(k − 1) − q·P, 0)`` with ``L(k) = #{persons with ≤ k rows}``
    and ``P`` persons: 0 exactly at the ``q``-quantile (the least ``k`` with ``L(k) ≥ q·P``),
    falling by one per person of rank on either side, so that ties prefer the smaller cap.
    One person added, removed or replaced moves each ``L`` by at most 1 and ``q·P`` by at
    most ``q`` in the same direction: sensitivity 1.
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    hist = np.bincount(np.minimum(sizes, spec.upper + 1), minlength=spec.upper + 2)
    at_most = np.cumsum(hist).astype(np.float64)  # at_most[k] = L(k), k = 0..upper+1
    target = spec.quantile * float(len(sizes))
    k = np.arange(1, spec.upper + 1)
    below = target - at_most[k]
    above = at_most[k - 1] - target
    return -np.maximum(np.maximum(below, above), 0.0)


def dropped_share(ids: Any, column: str, max_rows: int, *, scheduler: Any = None) -> dict[str, Any]:
    """What ``max_rows`` drops of a table's rows (custodian only: data-dependent, never
    released): per cap, as the report shows it.

    The rows ``max_rows`` drops are ``Σ_p max(rows_p − max_rows, 0)`` whichever rows the
    bounding keeps, so the count is the release's exactly (the group caps ``max_groups``
    and ``max_rows_per_group`` of a group-statistics release are not reported here).
    ``ids`` is a pandas Series, or a Dask Series (the rows per person are counted across
    partitions on ``scheduler``: the same numbers however the rows are split).
    """
    if hasattr(ids, "to_delayed"):
        from ppdp.data._dask import compute

        missing_, counts = compute(
            ids.isna().sum(), ids.dropna().astype(str).value_counts(), scheduler=scheduler
        )
        missing = int(missing_)
        sizes = np.asarray(counts, dtype=np.int64)
    else:
        missing = int(ids.isna().sum())
        sizes = ids.dropna().astype(str).value_counts(sort=False).to_numpy(dtype=np.int64)
    rows = int(sizes.sum()) + missing
    over = np.maximum(sizes - int(max_rows), 0)
    by_rows = int(over.sum())
    dropped = by_rows + missing
    return {
        "column": column,
        "max_rows": int(max_rows),
        "persons": int(sizes.size),
        "rows": rows,
        "kept": rows - dropped,
        "dropped": dropped,
        "share_dropped": 0.0 if rows == 0 else dropped / rows,
        "persons_over_max_rows": int((over > 0).sum()),
        "by_cap": {"max_rows": by_rows, "missing_ids": missing},
    }


def person_weights(ids: pd.Series) -> tuple[NDArray[np.float64], int]:
    """Each row's weight ``1/rows_p`` (its person's rows share one unit of weight) and the
    number of persons: the weights of an objective whose terms are per-person averages."""
    codes = _person_codes(ids.reset_index(drop=True))
    sizes = np.bincount(codes)
    return 1.0 / sizes[codes].astype(np.float64), int(sizes.size)
