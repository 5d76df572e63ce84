"""Private counts, sums and means by group: :class:`GroupByPublisher`.

The everyday query "count the rows and average age and income per region and sex", with
one ε. Groups are every combination of the declared categories of the ``by`` columns
(empty groups included: the keys never come from the data). Per group, ``fit`` releases a
discrete-Laplace count and, for each ``means`` column, a discrete-Laplace *centred* sum
computed exactly in integers; means and sums are post-processing of those. The privacy
argument is in ``docs/proofs/groupby.md``; the user page is ``docs/groupby.md``.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy.special import ndtri

from ppdp._params import Rule, epsilon_rules
from ppdp._validation import check_real
from ppdp.accounting.events import EpsilonDelta, Exponential
from ppdp.budget import Guarantee, Neighbouring
from ppdp.data import Schema
from ppdp.data.columns import CategoricalColumn, Category, NumericColumn, OpenCategoricalColumn
from ppdp.data.names import near_names
from ppdp.exceptions import DataValidationError, ParameterError, ParameterTypeError
from ppdp.mechanisms import DiscreteLaplaceMechanism
from ppdp.publish._base import Charge, Publisher, Release, new_folder
from ppdp.publish.group_quantiles import CellCounts, grid_cells, histogram_quantiles
from ppdp.publish.groupby_keys import (
    KeyedAggregate,
    KeyedRows,
    check_missing_keys,
    open_key_texts,
    open_key_values,
    person_key_pairs,
    sips_inputs,
)
from ppdp.publish.intervals import (
    discrete_laplace_halfwidth,
    laplace_mix_halfwidth,
    round_to_noise,
    selected_count_interval,
)
from ppdp.publish.partition_selection import METHODS, PartitionSelection
from ppdp.publish.quantile_tree import BRANCH, LEVELS, NODES, TreeNoise, tree_quantiles
from ppdp.random import RandomSource, RandomState

__all__ = ["GroupByPublisher", "GroupPlan", "GroupStatistics"]

_NAME = "GroupByPublisher"
#: Each numeric value is mapped exactly to an integer in ``[0, UNIT]`` (its position in the
#: declared range, rounded to ``2⁻²⁴`` of the range), then centred: ``[−UNIT/2, UNIT/2]``.
QUANT_BITS = 24
UNIT = 2**QUANT_BITS
HALF_UNIT = UNIT // 2
#: The integer centred sums are clamped to ``±SUM_LIMIT`` (1-Lipschitz: no sensitivity
#: change); reached only by a group of more than 2²⁹ rows all at one bound.
SUM_LIMIT = 2**52
#: Squares use a coarser grid: ``[−SQ_HALF, SQ_HALF]`` in steps of ``2⁻¹²`` of the range,
#: so a square is at most ``2²²`` and a group's sum of squares stays exact below 2³⁰ rows.
SQ_BITS = 12
SQ_UNIT = 2**SQ_BITS
SQ_HALF = SQ_UNIT // 2
#: Selections that release keys only (the counts are drawn afterwards, their own share).
_KEYS_ONLY = ("truncated-geometric", "dp-sips")
#: The most groups (cells of the declared domain of ``by``).
MAX_GROUPS = 2**22
#: Rows per exact chunk of the float ``bincount`` (partial sums stay below 2⁵³).
_CHUNK_ROWS = 2**28
#: The quantile method giving each quantile by the exponential mechanism and its interval
#: from a noisy tree (the default), and every method.
HYBRID = "exponential+tree"
QUANTILE_METHODS = (HYBRID, "tree", "exponential")
#: The hybrid's share of each (column, p) part for the exponential mechanism, the rest for
#: the column's tree (measured: ``benchmarks/groupby_quantiles.md``).
POINT_SHARE = 0.8


@dataclass(frozen=True)
class GroupPlan:
    """What one ``fit`` releases, from the schema and the parameters alone (public).

    Attributes
    ----------
    by : tuple of str
        The grouping columns (categorical columns or the label), in the order given.
    levels : tuple of tuple
        The declared categories (classes for the label) of each ``by`` column.
    means : tuple of str
        The numeric columns whose centred sums are released.
    relation : Neighbouring
    epsilon_count, epsilon_mean : float
        ε of the count vector and of each column's centred-sum vector (basic composition:
        ``epsilon_count + len(means) · epsilon_mean <= ε``).
    """

    by: tuple[str, ...]
    levels: tuple[tuple[Category, ...], ...]
    means: tuple[str, ...]
    relation: Neighbouring
    epsilon_count: float
    epsilon_mean: float
    #: The most rows of one person in the statistics (1 without a privacy unit):
    #: ``min(max_rows, max_groups · max_rows_per_group)`` (docs/proofs/privacy-unit.md).
    contribution: int = 1
    #: ``"declared"`` (the declared domain only) or ``"private"`` (declared keys, then keys of
    #: the open ``by`` columns chosen by ``selection``).
    key_mode: str = "declared"
    #: The ``by`` columns declared open (their undeclared keys come from the data).
    open_by: tuple[str, ...] = ()
    #: keys="private": the selection; its ε is ``epsilon_count`` for the thresholding
    #: methods (the counts are its noisy counts), or ``epsilon_select`` (truncated geometric).
    selection: PartitionSelection | None = None
    epsilon_select: float = 0.0
    #: Columns (among ``means``) whose per-group variance and standard deviation are
    #: released, from a noisy sum of squares (its own part, ``epsilon_mean``).
    variances: tuple[str, ...] = ()
    #: The nominal coverage of every released interval (None: no intervals).
    interval: float | None = 0.95
    #: Decimals of the released table: ``"auto"`` (what each value's interval supports),
    #: an integer, or None (unrounded).
    rounding: int | str | None = "auto"
    #: Groups whose noisy count is below this are left out of the table (None: none).
    min_count: float | None = None
    #: Columns whose per-group quantiles at each of ``probabilities`` are released.
    quantiles: tuple[str, ...] = ()
    probabilities: tuple[float, ...] = ()
    #: ``"tree"``: one noisy tree histogram per column (``epsilon_mean``), every
    #: probability and its interval read from it; ``"exponential"``: one exponential
    #: mechanism draw per (column, p) (``epsilon_mean`` each), no interval;
    #: ``"exponential+tree"``: per (column, p) a part ``epsilon_mean``, of which
    #: ``point_share`` goes to an exponential mechanism draw (the quantile) and the rest of
    #: the column's parts to one tree (the intervals).
    quantile_method: str = HYBRID
    #: ``"exponential+tree"``: the exponential mechanism's share of each (column, p) part;
    #: 1 without intervals (no tree is drawn then).
    point_share: float = 1.0

    @property
    def quantile_parts(self) -> int:
        """The budget parts of the quantiles: one per column (tree), or per (column, p)."""
        per = 1 if self.quantile_method == "tree" else len(self.probabilities)
        return len(self.quantiles) * per

    @property
    def draws_tree(self) -> bool:
        """Whether a tree is drawn per quantile column (the tree's, or the hybrid's intervals)."""
        return bool(self.quantiles) and (
            self.quantile_method == "tree"
            or (self.quantile_method == HYBRID and self.point_share < 1.0)
        )

    @property
    def draws_exponential(self) -> bool:
        """Whether an exponential mechanism draw is made per (column, p)."""
        return bool(self.quantiles) and self.quantile_method != "tree"

    @property
    def epsilon_tree(self) -> float:
        """ε of one column's tree: its part (tree), or what the column's (column, p) parts
        leave after the exponential mechanism's shares (hybrid)."""
        if self.quantile_method == "tree":
            return self.epsilon_mean
        return (1.0 - self.point_share) * len(self.probabilities) * self.epsilon_mean

    @property
    def epsilon_point(self) -> float:
        """ε of one (column, p) exponential mechanism draw (all groups)."""
        share = self.point_share if self.quantile_method == HYBRID else 1.0
        return share * self.epsilon_mean

    @property
    def tree_sensitivity(self) -> int:
        """L1 sensitivity of one column's trees (all groups): a row is under one node per
        level (``LEVELS``); twice under replace-one (a row may move between groups); times
        :attr:`contribution` under a privacy unit."""
        moves = 2 if self.relation is Neighbouring.REPLACE_ONE else 1
        return LEVELS * moves * self.contribution

    @property
    def epsilon_quantile_group(self) -> float:
        """ε of one group's quantile draw: ``ε_part / (moves · contribution)``. One row
        moves its group's rank utility by at most 1, so one person's ``contribution`` rows
        move the utilities of all groups by at most ``contribution`` in total, twice that
        under replace-one (a removal, then an addition: a row may also move between two
        groups); the draws' losses add up over groups."""
        moves = 2 if self.relation is Neighbouring.REPLACE_ONE else 1
        return self.epsilon_point / (moves * self.contribution)

    @property
    def square_sensitivity(self) -> int:
        """L1 sensitivity of one column's sum-of-squares vector, in ``(2⁻¹²·range)²``:
        ``SQ_HALF²·2`` under replace-one (a row moves between groups), ``SQ_HALF²`` under
        add/remove; times :attr:`contribution` under a privacy unit (each of a person's
        rows adds at most ``SQ_HALF²`` to one group's sum)."""
        moves = 2 if self.relation is Neighbouring.REPLACE_ONE else 1
        return SQ_HALF**2 * moves * self.contribution

    @property
    def delta(self) -> float:
        """δ of the release: the selection's (0 for declared keys)."""
        return self.selection.delta if self.selection is not None else 0.0

    @property
    def n_groups(self) -> int:
        """The number of groups: the product of the levels' counts (1 without ``by``)."""
        return math.prod(len(lv) for lv in self.levels)

    @property
    def count_sensitivity(self) -> int:
        """L1 sensitivity of the count vector: 2 (replace-one: one row moves between
        groups), 1 (add/remove); times :attr:`contribution` under a privacy unit."""
        return (2 if self.relation is Neighbouring.REPLACE_ONE else 1) * self.contribution

    @property
    def sum_sensitivity(self) -> int:
        """L1 sensitivity of one column's centred-sum vector, in units of ``2⁻²⁴`` of the
        declared range: ``UNIT`` (the range) under replace-one, ``UNIT/2`` under add/remove;
        times :attr:`contribution` under a privacy unit."""
        one = UNIT if self.relation is Neighbouring.REPLACE_ONE else HALF_UNIT
        return one * self.contribution

    def keys(self) -> pd.DataFrame:
        """One row per group, the ``by`` columns' declared values, in release order."""
        if not self.by:
            return pd.DataFrame(index=range(1))
        index = pd.MultiIndex.from_product([list(lv) for lv in self.levels], names=self.by)
        return index.to_frame(index=False)


@dataclass(frozen=True)
class GroupStatistics:
    """The exact statistics the release reads: per group, the row count and, per ``means``
    column, the centred integer sum ``Σ (q − UNIT/2)``. Partition values add with ``+``."""

    counts: NDArray[np.int64]  # (G,)
    sums: NDArray[np.int64]  # (k, G)
    squares: NDArray[np.int64] | None = None  # (len(variances), G): Σ (q₁₂ − SQ_HALF)²
    #: Per ``quantiles`` column, each group's histogram on the column's grid.
    cells: tuple[CellCounts, ...] = ()
    #: keys="private" with DP-SIPS under a privacy unit: the distinct (person code,
    #: candidate index) pairs (:func:`~ppdp.publish.groupby_keys.sips_inputs`); without a
    #: unit None (each row a person of one key: the counts are the weights).
    pairs: tuple[NDArray[np.int64], NDArray[np.int64]] | None = None

    def __add__(self, other: GroupStatistics) -> GroupStatistics:
        squares = None
        if self.squares is not None and other.squares is not None:
            squares = self.squares + other.squares
        cells = tuple(a + b for a, b in zip(self.cells, other.cells, strict=True))
        return GroupStatistics(self.counts + other.counts, self.sums + other.sums, squares, cells)


@dataclass(frozen=True)
class GroupByParams:
    """The validated parameters of :class:`GroupByPublisher` (built once per ``fit``)."""

    allow_large_epsilon: bool
    epsilon: float
    relation: Neighbouring
    schema: Schema
    keys: str
    by: tuple[str, ...]
    means: tuple[str, ...]
    variances: tuple[str, ...]
    quantiles: tuple[str, ...]
    q: tuple[float, ...]
    quantile_method: str
    count_share: float | None
    max_groups: int | None
    max_rows_per_group: int | None
    delta: float | None
    selection: str
    threshold: float | None
    interval: float | None
    rounding: int | str | None
    min_count: float | None
    plan: GroupPlan


def _check_schema(schema: Any, _: Mapping[str, Any]) -> Schema:
    if not isinstance(schema, Schema):
        raise ParameterTypeError(
            f"schema ({type(schema).__name__}) must be a ppdp.data.Schema; "
            "load one with Schema.from_file(path)"
        )
    r = schema.row_norm_bound
    natural = math.sqrt(schema.p1 + schema.p2)
    if r is not None and r < natural:
        raise ParameterError(
            f"schema declares row_norm_bound ({r:g}), which scales encoded rows and would bias "
            "the group means; GroupByPublisher needs a schema without it"
        )
    return schema


def _names(param: str, value: Any, known: Sequence[str] = ()) -> tuple[str, ...]:
    """A tuple of column names from a name, a comma-separated text or a sequence; in a text,
    spaces around a name are dropped unless the schema's name (``known``) has them (a
    spreadsheet's ``' Age '``)."""
    if value is None:
        return ()
    if isinstance(value, str):
        items = [v if v in known else v.strip() for v in value.split(",") if v.strip()]
    elif isinstance(value, list | tuple):
        items = list(value)
    else:
        raise ParameterTypeError(
            f"{param} ({value!r}) must be a list of column names (or one comma-separated text)"
        )
    for v in items:
        if not isinstance(v, str):
            raise ParameterTypeError(f"{param} ({value!r}) must hold column names (strings)")
    if len(set(items)) != len(items):
        raise ParameterError(f"{param} ({value!r}) names a column twice")
    return tuple(items)


def _check_by(value: Any, checked: Mapping[str, Any]) -> tuple[str, ...]:
    schema: Schema = checked["schema"]
    label = schema.label.name if schema.label is not None else None
    by = _names("by", value, (*schema.column_names, *([label] if label else [])))
    categorical = [c.name for c in schema.categorical_columns] + ([label] if label else [])
    for name in by:
        if name == label:
            continue
        if name in schema.open_column_names:
            if checked["keys"] != "private":
                raise ParameterError(
                    f"by ({name!r}) is an open column (its categories are not declared): its "
                    "keys can only be selected privately; use keys='private' (--keys private) "
                    "with a delta, or declare its categories in the schema"
                )
            continue
        if name not in schema.column_names:
            known = [*categorical, *schema.open_column_names]
            raise ParameterError(
                f"by ({name!r}) is not a column of the schema; declared categorical columns: "
                f"{', '.join(map(repr, known)) or 'none'}"
                + near_names([name], known, where="the schema")
            )
        col = schema.column(name)
        if isinstance(col, NumericColumn) and col.cuts is None:
            raise ParameterError(
                f"by ({name!r}) is a numeric column without declared cuts; declare its public "
                "cut points in the schema (cuts: [30, 45, 60] groups by those intervals; "
                "dates too) or group by categorical columns or the label "
                f"({', '.join(map(repr, categorical)) or 'none declared'})"
            )
    if "count" in by:
        raise ParameterError("by ('count') clashes with the released column 'count'; rename it")
    if checked["keys"] == "private" and not any(n in schema.open_column_names for n in by):
        raise ParameterError(
            f"keys ('private') selects the keys of open columns, but by ({', '.join(by) or '()'}) "
            "names none; declare a column open: true in the schema, or use keys='declared'"
        )
    return by


def _check_means(value: Any, checked: Mapping[str, Any]) -> tuple[str, ...]:
    schema: Schema = checked["schema"]
    means = _names("means", value, schema.column_names)
    numeric = [c.name for c in schema.numeric_columns if not c.date]  # what means take
    listed = ", ".join(map(repr, numeric))
    for name in means:
        col = schema.column(name) if name in schema.column_names else None
        if col is None:
            raise ParameterError(
                f"means ({name!r}) is not a column of the schema; declared numeric columns: "
                f"{listed or 'none'}" + near_names([name], numeric, where="the schema")
            )
        if not isinstance(col, NumericColumn):
            raise ParameterError(
                f"means ({name!r}) is a categorical column; means apply to numeric columns "
                f"({listed or 'none declared'}); group by it with by instead"
            )
        if col.date:
            raise ParameterError(
                f"means ({name!r}) is a date column; means of dates are not supported"
            )
        if f"mean_{name}" in checked["by"]:
            raise ParameterError(f"means ({name!r}): by already has a column 'mean_{name}'")
    return means


def _check_share(value: Any, checked: Mapping[str, Any]) -> float | None:
    if value is None:
        return None
    share = check_real("count_share", value)
    if not (0.0 < share < 1.0):
        raise ParameterError(f"count_share ({value!r}) must be in (0, 1)")
    if not checked["means"] and not checked["variances"] and not checked["quantiles"]:
        raise ParameterError(
            f"count_share ({value!r}) splits ε between the counts and the means, but means is "
            "empty (the counts get all of ε); leave it unset or name means columns"
        )
    return share


def _check_cap(param: str) -> Any:
    """The rule of a per-person group cap: None, or an integer >= 1 with a privacy unit."""

    def check(value: Any, checked: Mapping[str, Any]) -> int | None:
        if value is None:
            return None
        if checked["schema"].privacy_unit is None:
            raise ParameterError(
                f"{param} ({value!r}) caps what one person contributes, but the schema "
                "declares no privacy_unit (each row is its own person); leave it unset"
            )
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
            raise ParameterError(f"{param} ({value!r}) must be an integer >= 1")
        return int(value)

    return check


def _contribution(checked: Mapping[str, Any]) -> int:
    """The most rows of one person in the statistics (1 without a privacy unit)."""
    unit = checked["schema"].privacy_unit
    if unit is None:
        return 1
    k = unit.max_rows
    l0, linf = checked["max_groups"], checked["max_rows_per_group"]
    if l0 is not None and linf is not None:
        k = min(k, l0 * linf)
    return k


def _check_keys(value: Any, _: Mapping[str, Any]) -> str:
    if value not in ("declared", "private"):
        raise ParameterError(
            f"keys ({value!r}) must be 'declared' (the declared domain of by) or 'private' "
            "(keys of open columns selected from the data, at a cost in delta)"
        )
    return str(value)


def _check_delta(value: Any, checked: Mapping[str, Any]) -> float | None:
    if checked["keys"] != "private":
        if value is not None:
            raise ParameterError(
                f"delta ({value!r}) applies to keys='private' only (declared keys cost no delta); "
                "leave it unset"
            )
        return None
    if value is None:
        raise ParameterError(
            "delta (None): keys='private' needs delta > 0, the chance that a key held by one "
            "person is released (e.g. --delta 1e-6, well below 1/n)"
        )
    delta = check_real("delta", value)
    if not 0.0 < delta < 1.0:
        raise ParameterError(f"delta ({value!r}) must be in (0, 1), well below 1/n")
    return delta


def _check_selection(value: Any, checked: Mapping[str, Any]) -> str:
    if value not in METHODS:
        raise ParameterError(
            f"selection ({value!r}) must be one of {', '.join(map(repr, METHODS))}"
        )
    return str(value)


def _check_threshold(value: Any, checked: Mapping[str, Any]) -> float | None:
    if value is None:
        return None
    if checked["keys"] != "private" or checked["selection"] in ("truncated-geometric", "dp-sips"):
        raise ParameterError(
            f"threshold ({value!r}) applies to keys='private' with selection 'laplace' or "
            "'gaussian' only; leave it unset"
        )
    return check_real("threshold", value)


def _check_variances(value: Any, checked: Mapping[str, Any]) -> tuple[str, ...]:
    schema: Schema = checked["schema"]
    names = _names("variances", value, schema.column_names)
    numeric = [c.name for c in schema.numeric_columns if not c.date]
    for name in names:
        if name not in numeric:
            raise ParameterError(
                f"variances ({name!r}) is not a numeric column of the schema; numeric columns: "
                f"{', '.join(map(repr, numeric)) or 'none'}"
                + near_names([name], numeric, where="the schema")
            )
    return names


def _check_quantiles(value: Any, checked: Mapping[str, Any]) -> tuple[str, ...]:
    return _check_variances(value, checked) if value else ()


def _check_q(value: Any, checked: Mapping[str, Any]) -> tuple[float, ...]:
    items = value if isinstance(value, list | tuple) else [value]
    out = []
    for v in items:
        p = check_real("q", v)
        if not 0.0 < p < 1.0:
            raise ParameterError(
                f"q ({v!r}) must be a probability strictly between 0 and 1 (0.5: the median)"
            )
        out.append(p)
    if len(set(out)) != len(out) or not out:
        raise ParameterError(f"q ({value!r}) must list distinct probabilities, at least one")
    return tuple(out)


def _check_quantile_method(value: Any, _: Mapping[str, Any]) -> str:
    if value not in QUANTILE_METHODS:
        raise ParameterError(
            f"quantile_method ({value!r}) must be '{HYBRID}' (each quantile by the "
            "exponential mechanism, its interval from a noisy tree; the default), 'tree' (a "
            "noisy tree histogram per column: every quantile with an interval) or "
            "'exponential' (one exponential mechanism draw per column and probability, no "
            "interval)"
        )
    return str(value)


def _check_interval(value: Any, _: Mapping[str, Any]) -> float | None:
    if value is None:
        return None
    level = check_real("interval", value)
    if not 0.5 <= level < 1.0:
        raise ParameterError(
            f"interval ({value!r}) is the coverage of each released interval: a number in "
            "[0.5, 1), e.g. 0.95; None releases no intervals"
        )
    return level


def _check_rounding(value: Any, _: Mapping[str, Any]) -> int | str | None:
    if value is None or value == "auto":
        return value
    if isinstance(value, bool) or not isinstance(value, int) or not -15 <= value <= 15:
        raise ParameterError(
            f"rounding ({value!r}) must be 'auto' (to what each value's noise supports), a "
            "number of decimals in [-15, 15], or None (unrounded)"
        )
    return int(value)


def _check_min_count(value: Any, _: Mapping[str, Any]) -> float | None:
    if value is None:
        return None
    t = check_real("min_count", value)
    if not (math.isfinite(t) and t >= 0):
        raise ParameterError(
            f"min_count ({value!r}) must be a number >= 0: groups whose noisy count is below it "
            "are left out of the table"
        )
    return t


def _selection_caps(checked: Mapping[str, Any]) -> dict[str, int]:
    """The private selection's caps per person: 1 where rows are persons; with a privacy
    unit of ``k = max_rows`` rows, a person reaches at most ``min(max_groups, k)`` keys (L0)
    with at most ``min(max_rows_per_group, k)`` rows in one (L∞) and ``k`` rows in all
    (each cap ``k`` when unset; docs/proofs/partition-selection.md, Setting)."""
    unit = checked["schema"].privacy_unit
    if unit is None:
        return {}
    k = int(unit.max_rows)
    l0, linf = checked["max_groups"], checked["max_rows_per_group"]
    return {
        "max_groups": k if l0 is None else min(l0, k),
        "max_rows_per_group": k if linf is None else min(linf, k),
        "max_contribution": k,
    }


def _split(eps: float, k: int, share: float | None) -> tuple[float, float]:
    """(ε of the counts, ε of each of the ``k`` mean columns); their sum is at most ε.

    Equal shares by default; the sum is checked in the accountant's decimal arithmetic
    (``docs/proofs/ledger.md`` §5), so spending exactly ε in ``k + 1`` parts is accepted.
    """
    if k == 0:
        return eps, 0.0
    eps_count = eps * share if share is not None else eps / (k + 1)
    eps_mean = (eps - eps_count) / k
    total = Decimal(repr(eps))
    while Decimal(repr(eps_count)) + k * Decimal(repr(eps_mean)) > total:
        eps_mean = math.nextafter(eps_mean, 0.0)
    return eps_count, eps_mean


def _levels_of(col: Any) -> tuple[Category, ...]:
    """A grouping column's levels: its declared categories, or the intervals between a
    numeric column's bounds and declared cuts, written ``[30, 45)`` (the last one closed,
    ``[60, 90]``; dates as ISO dates)."""
    if isinstance(col, OpenCategoricalColumn):  # its known keys, as the data's key texts
        return tuple(str(c) for c in col.categories)
    if isinstance(col, CategoricalColumn):
        return tuple(col.categories)
    from ppdp.data.dates import day_text

    def text(v: float) -> str:
        return day_text(v) if col.date else f"{v:g}"

    edges = [col.lower, *col.cuts, col.upper]
    return tuple(
        f"[{text(lo)}, {text(hi)}{']' if k == len(edges) - 2 else ')'}"
        for k, (lo, hi) in enumerate(itertools.pairwise(edges))
    )


def _plan(_: Any, checked: Mapping[str, Any]) -> GroupPlan:
    schema: Schema = checked["schema"]
    by, means = checked["by"], checked["means"]
    levels = tuple(
        tuple(schema.label.classes)
        if schema.label is not None and name == schema.label.name
        else _levels_of(
            schema.open_column(name) if name in schema.open_column_names else schema.column(name)
        )
        for name in by
    )
    n_groups = math.prod(len(lv) for lv in levels)
    if n_groups > MAX_GROUPS:
        raise ParameterError(
            f"by ({', '.join(by)}) spans {n_groups:,} groups (the product of the declared "
            f"categories); at most {MAX_GROUPS:,} are allowed: group by fewer columns"
        )
    variances = checked["variances"]
    means = (*means, *(v for v in variances if v not in means))  # a variance needs the sum
    per_column = 1 if checked["quantile_method"] == "tree" else len(checked["q"])
    parts = len(means) + len(variances) + len(checked["quantiles"]) * per_column
    eps_count, eps_mean = _split(checked["epsilon"], parts, checked["count_share"])
    open_by = tuple(n for n in by if n in schema.open_column_names)
    post = {
        "contribution": _contribution(checked),
        "variances": variances,
        "interval": checked["interval"],
        "rounding": checked["rounding"],
        "min_count": checked["min_count"],
        "quantiles": checked["quantiles"],
        "probabilities": checked["q"] if checked["quantiles"] else (),
        "quantile_method": checked["quantile_method"],
        # the hybrid's tree only gives the intervals: without them, all to the point
        "point_share": POINT_SHARE if checked["interval"] is not None else 1.0,
    }
    if checked["keys"] != "private":
        return GroupPlan(by, levels, means, checked["relation"], eps_count, eps_mean, **post)
    eps_select = 0.0
    if checked["selection"] in _KEYS_ONLY:  # keys only: half of ε_count each
        eps_select = eps_count / 2.0
        eps_count = eps_count - eps_select
    selection = PartitionSelection(
        checked["selection"],
        eps_select or eps_count,
        checked["delta"],
        checked["relation"],
        threshold=checked["threshold"],
        **_selection_caps(checked),
    )
    return GroupPlan(
        by,
        levels,
        means,
        checked["relation"],
        eps_count,
        eps_mean,
        key_mode="private",
        open_by=open_by,
        selection=selection,
        epsilon_select=eps_select,
        **post,
    )


def _numeric(schema: Schema, name: str) -> NumericColumn:
    col = schema.column(name)
    assert isinstance(col, NumericColumn)
    return col


#: GroupByPublisher's constraint table, in the order the parameters are checked.
GROUPBY_CONSTRAINTS: tuple[Rule, ...] = (
    *epsilon_rules(),
    Rule("relation", lambda v, _: Neighbouring.parse(v)),
    Rule("schema", _check_schema),
    Rule("keys", _check_keys),
    Rule("by", _check_by),
    Rule("means", _check_means),
    Rule("variances", _check_variances),
    Rule("quantiles", _check_quantiles),
    Rule("q", _check_q),
    Rule("quantile_method", _check_quantile_method),
    Rule("count_share", _check_share),
    Rule("max_groups", _check_cap("max_groups")),
    Rule("max_rows_per_group", _check_cap("max_rows_per_group")),
    Rule("delta", _check_delta),
    Rule("selection", _check_selection),
    Rule("threshold", _check_threshold),
    Rule("interval", _check_interval),
    Rule("rounding", _check_rounding),
    Rule("min_count", _check_min_count),
    Rule("plan", _plan, attribute="by"),
)


class GroupByPublisher(Publisher):
    """Noisy counts, sums and means of numeric columns per group of categorical columns.

    Groups are the full declared domain of ``by``: every combination of the declared
    categories (the label's classes for the label), empty groups included, in the order
    the schema declares them; ``by=()`` is one group, the whole table. For each group the
    release holds

    - ``count``: the row count plus discrete Laplace noise (L1 sensitivity 2 under
      replace-one, where one row may move between two groups; 1 under add/remove);
    - for each column ``x`` of ``means``, the *centred* sum ``Σ (clip(x) − c)`` with ``c``
      the midpoint of the declared bounds, plus discrete Laplace noise. It is computed
      exactly in integers: each clipped value is mapped to its position in the declared
      range in steps of ``2⁻²⁴`` of the range (:data:`UNIT`), so the L1 sensitivity of the
      vector is the range ``upper − lower`` under replace-one (moving a row between groups
      included) and half the range under add/remove;
    - ``mean_x`` (post-processing): ``c + noisy centred sum / noisy count``, clamped to the
      declared bounds, and NaN where the noisy count is below 1 (too few rows to say);
    - ``mean_x_sd`` (post-processing): the standard deviation of the sum's noise over the
      noisy count, in the column's units, so a group whose mean is mostly noise shows it
      (the count's own noise, smaller where the count is large, is left out);
    - ``sum_x`` in ``release_.statistics`` (post-processing): ``noisy centred sum + c ·
      noisy count``, to aggregate groups yourself.

    Guarantee: ε-differential privacy under ``relation`` (basic composition of the count
    vector and one centred-sum vector per ``means`` column); see
    ``docs/proofs/groupby.md``. With a schema's privacy unit, per person: each person keeps
    at most ``max_rows`` rows (and the caps below), chosen at random before anything is
    counted, and both sensitivities are multiplied by the most rows one person can bring,
    ``min(max_rows, max_groups · max_rows_per_group)``; see
    ``docs/proofs/privacy-unit.md``.

    Parameters
    ----------
    epsilon : float
        ε > 0 of one ``fit`` (at most 10 unless ``allow_large_epsilon``).
    schema : Schema
        Declared bounds and categories. A schema whose ``row_norm_bound`` binds is refused
        (it would scale rows and bias the means).
    by : sequence of str, default ()
        Columns to group by: categorical columns, the label, or numeric (and date) columns
        that declare ``cuts``, grouped by the intervals between their bounds and cuts
        (``[30, 45)``, the last one closed; a value equal to a cut opens the next).
    means : sequence of str, default ()
        Numeric columns (not dates) whose per-group sums and means are released.
    count_share : float, optional
        Share of ε, in (0, 1), for the counts; the rest is split equally between the
        ``means`` columns. Default: equal shares, ``ε / (1 + len(means))`` each.
    max_groups : int, optional
        With a schema's privacy unit only: at most this many groups per person (L0), chosen
        uniformly at random among the person's groups.
    max_rows_per_group : int, optional
        With a schema's privacy unit only: at most this many rows of one person in one
        group (L∞), chosen uniformly at random. With ``keys="private"`` the groups are the
        keys read from the data, and the caps are the selection's L0 and L∞ (each
        ``max_rows`` when unset).
    keys : {"declared", "private"}, default "declared"
        ``"declared"``: the groups are the declared domain of ``by`` only. ``"private"``:
        the declared keys, then the keys of the ``by`` columns declared open (at least one)
        that the data hold, each released only when it passes ``selection``; the guarantee
        is then (ε, ``delta``)-DP. See ``docs/proofs/partition-selection.md``.
    delta : float, optional
        With ``keys="private"`` only (and required there): δ in (0, 1), the most probability
        that a key held by one person is released; well below 1/n.
    selection : {"laplace", "gaussian", "truncated-geometric", "dp-sips"}, default "laplace"
        With ``keys="private"``: how the keys are selected. ``"laplace"`` and
        ``"gaussian"`` threshold noisy counts (the same noisy counts are released);
        ``"truncated-geometric"`` (one group per person) and ``"dp-sips"`` (many keys per
        person, with a privacy unit) release keys only, with half of the counts' share of ε,
        the counts drawn afterwards with the other half.
    threshold : float, optional
        With ``keys="private"`` and ``selection`` ``"laplace"`` or ``"gaussian"`` only: a
        threshold τ above the least one that (ε, ``delta``) needs (a stricter selection);
        below it is refused. Default: the least τ.
    variances : sequence of str, default ()
        Numeric columns (not dates) whose per-group population variance and standard
        deviation of the clipped values are released (``var_x``, ``std_x``), from a noisy
        sum of squares: one more share of ε per column (a column not in ``means`` gets its
        sum too, a share of its own).
    interval : float or None, default 0.95
        The nominal coverage, in [0.5, 1), of the interval released beside every statistic
        (``count_lo``/``count_hi``, ``mean_x_lo``/``mean_x_hi``, ...), computed from the
        noise laws and the released values only (no budget). None: no intervals.
    rounding : "auto", int or None, default "auto"
        How the released table is rounded: ``"auto"``, each value to two significant digits
        of its interval's half-width (what its noise supports); an integer in
        [-15, 15], to that many decimals; None, unrounded. ``release_.statistics`` keeps the
        unrounded values.
    min_count : float, optional
        A number >= 0: groups whose noisy count is below it are left out of the table
        (post-processing of the noisy counts). Default: every group is kept.
    quantiles : sequence of str, default ()
        Numeric columns whose per-group quantiles at each of ``q`` are released as
        ``p50_x`` (and, with intervals, ``p50_x_lo``/``p50_x_hi``).
    q : sequence of float, default (0.5,)
        The probabilities, each in (0, 1).
    quantile_method : {"exponential+tree", "tree", "exponential"}, default "exponential+tree"
        ``"exponential+tree"``: one share of ε per (column, p), 80 % of it to an exponential
        mechanism draw (the quantile, clipped into its interval), the rest of the column's
        shares to one noisy tree histogram per column and group (the intervals; without
        intervals all goes to the draws); ``"tree"``: the tree alone (one share per column),
        every probability and its interval read from it; ``"exponential"``: the draws alone
        (one share each), no interval. The hybrid's quantiles are close to the exponential
        mechanism's and its intervals cover like the tree's
        (``benchmarks/groupby_quantiles.md``).
    relation : {"replace-one", "add/remove"}, default "replace-one"
        The neighbouring relation of the guarantee (it must be the budget ledger's).
        Add/remove halves both sensitivities and keeps ``n`` private: an empty table is
        then released like any other (replace-one refuses it: ``n`` is public there).
    random_state : None, int, SeedSequence, Generator or RandomSource, optional
        ``None`` (default) uses the OS CSPRNG; anything else is reproducible, for tests.
    allow_large_epsilon : bool, default False
        Accept ε > 10.

    Attributes
    ----------
    release_ : Release
        ``data``: one row per group: the ``by`` columns, ``count`` (an integer, possibly
        negative or 0), ``mean_x`` and ``mean_x_sd`` per ``means`` column. ``statistics``:
        ``"count"``,
        and per column ``"sum_x"`` and ``"mean_x"`` (float arrays in the rows' order).

    Notes
    -----
    Missing values follow the schema's ``nan_policy`` (refused, or imputed with the
    declared constant); values outside the bounds are clipped (counted in the custodian's
    log), as in every publisher. Mapping a value to the integer grid moves it by at most
    ``2⁻²⁵`` of its range, far below the noise. The statistics add across partitions, so a
    Parquet dataset or a Dask DataFrame gives exactly the in-memory release for a seed
    (every selection, DP-SIPS included); what reaches the driver's memory is the per-key
    aggregates and, for DP-SIPS under a privacy unit, the distinct (person, key) pairs of
    the keys not declared (one per person and key, never the rows; without a unit each row
    is a person of one key and the per-key counts suffice);
    ``fit(path, output=folder)`` also writes the released table there as Parquet (what
    ``ppdp publish groupby`` does with a Parquet dataset).

    Examples
    --------
    >>> from ppdp.datasets import load_adult
    >>> df, schema = load_adult("train")  # doctest: +SKIP
    >>> pub = GroupByPublisher(1.0, schema, by=["sex"], means=["age"]).fit(df)  # doctest: +SKIP
    >>> pub.release_.data.columns.tolist()  # doctest: +SKIP
    ['sex', 'count', 'mean_age']
    """

    supports_distributed: ClassVar[bool] = True
    supports_privacy_unit: ClassVar[bool] = True
    #: keys="private" reads the keys of open columns through a private selection.
    accepts_open_columns: ClassVar[bool] = True
    output_kind: ClassVar[str] = "groups"
    _params_type = GroupByParams
    _constraints = GROUPBY_CONSTRAINTS

    def __init__(
        self,
        epsilon: float,
        schema: Schema,
        *,
        by: Any = (),
        means: Any = (),
        count_share: float | None = None,
        max_groups: int | None = None,
        max_rows_per_group: int | None = None,
        relation: Neighbouring | str = Neighbouring.REPLACE_ONE,
        keys: str = "declared",
        delta: float | None = None,
        selection: str = "laplace",
        threshold: float | None = None,
        variances: Any = (),
        interval: float | None = 0.95,
        rounding: int | str | None = "auto",
        min_count: float | None = None,
        quantiles: Any = (),
        q: Any = (0.5,),
        quantile_method: str = HYBRID,
        random_state: RandomState = None,
        allow_large_epsilon: bool = False,
    ) -> None:
        self.epsilon = epsilon
        self.schema = schema
        self.by = by
        self.means = means
        self.count_share = count_share
        self.max_groups = max_groups
        self.max_rows_per_group = max_rows_per_group
        self.relation = relation
        self.keys = keys
        self.delta = delta
        self.selection = selection
        self.threshold = threshold
        self.variances = variances
        self.interval = interval
        self.rounding = rounding
        self.min_count = min_count
        self.quantiles = quantiles
        self.q = q
        self.quantile_method = quantile_method
        self.random_state = random_state
        self.allow_large_epsilon = allow_large_epsilon

    # -- parameters -----------------------------------------------------------------------

    def _params(self) -> GroupByParams:
        params: GroupByParams = super()._params()
        return params

    def plan(self) -> GroupPlan:
        """Validate the parameters and return what ``fit`` will release (public)."""
        return self._params().plan

    def _contribution_bounds(self) -> Any:
        """The privacy unit's caps, with this release's L0/L∞ caps on the ``by`` groups."""
        unit = self.schema.privacy_unit
        if unit is None:
            return None
        import functools

        from ppdp.data.contribution import ContributionBounds

        params = self._params()
        capped = params.max_groups is not None or params.max_rows_per_group is not None
        private = params.plan.key_mode == "private"
        return ContributionBounds(
            unit,
            max_groups=params.max_groups,
            max_rows_per_group=params.max_rows_per_group,
            group_fn=(
                functools.partial(group_codes, self.schema, params.plan)
                if capped and not private
                else None
            ),
            # Private keys: groups are key texts, fingerprinted by content (not numbered).
            frame_group_fn=(
                functools.partial(key_groups, self.schema, params.plan)
                if capped and private
                else None
            ),
        )

    def _unit_details(self) -> dict[str, Any]:
        """``{"privacy_unit": {...}}`` for the ledger and the guarantee (empty without)."""
        bounds = self._contribution_bounds()
        return {} if bounds is None else {"privacy_unit": bounds.ledger_details()}

    def _count_mechanism(self, plan: GroupPlan) -> DiscreteLaplaceMechanism:
        return self._mechanism(plan.epsilon_count, plan.count_sensitivity, plan, "the counts")

    def _sum_mechanism(self, plan: GroupPlan) -> DiscreteLaplaceMechanism:
        return self._mechanism(plan.epsilon_mean, plan.sum_sensitivity, plan, "each mean column")

    def _square_mechanism(self, plan: GroupPlan) -> DiscreteLaplaceMechanism:
        return self._mechanism(
            plan.epsilon_mean, plan.square_sensitivity, plan, "each variance column"
        )

    def _tree_mechanism(self, plan: GroupPlan) -> DiscreteLaplaceMechanism:
        """The noise of each quantile column's trees (every node of every group's tree)."""
        return self._mechanism(
            plan.epsilon_tree, plan.tree_sensitivity, plan, "each quantile column's tree", NODES
        )

    def _mechanism(
        self, eps: float, sensitivity: int, plan: GroupPlan, what: str, per_group: int = 1
    ) -> DiscreteLaplaceMechanism:
        try:
            return DiscreteLaplaceMechanism(
                epsilon=eps,
                sensitivity=sensitivity,
                dimension=max(1, plan.n_groups) * per_group,
                relation=plan.relation,
                allow_large_epsilon=True,  # a share of an ε already checked
            )
        except ParameterError:
            smallest = sensitivity / 2.0**40 * float(self.epsilon) / eps
            raise ParameterError(
                f"epsilon ({self.epsilon!r}): the share of {what} ({eps:.3g}) needs discrete "
                f"Laplace noise of scale {sensitivity / eps:.3g}, above the sampler's 2**40; "
                f"use epsilon >= {smallest:.3g}"
            ) from None

    def _planned_charges(self, n_rows: int | None) -> list[Charge]:
        plan = self._params().plan
        counts = self._count_mechanism(plan)
        details: dict[str, Any] = {
            "query": f"row counts of {plan.n_groups} declared group(s) of "
            f"({', '.join(plan.by) or 'whole table'})",
            **counts.ledger_details(),
            "units": "rows",
            **self._unit_details(),
        }
        if n_rows is not None and plan.relation is Neighbouring.REPLACE_ONE:
            details["n"] = n_rows
        charges = [Charge(counts.event, f"{_NAME}: counts", details)]
        if plan.selection is not None:
            charges = self._selection_charges(plan, charges[0])
        if plan.means:
            sums = self._sum_mechanism(plan)
            count_sd = self._count_sd(plan)
            for name in plan.means:
                col = _numeric(self.schema, name)
                span = col.upper - col.lower
                sum_details = {
                    "query": f"centred sums of {name} per group, in units of 2**-{QUANT_BITS} "
                    f"of its declared range [{col.lower:g}, {col.upper:g}]",
                    **sums.ledger_details(),
                    "units": f"2**-{QUANT_BITS} of the declared range of {name}",
                    "noise_scale_in_column_units": sums.scale * span / UNIT,
                    # what a group's mean's error follows from (public: noise laws, bounds)
                    "mean_error": self._mean_error(name, sums, count_sd),
                    **self._unit_details(),
                }
                charges.append(Charge(sums.event, f"{_NAME}: sums of {name}", sum_details))
        if plan.variances:
            squares = self._square_mechanism(plan)
            for name in plan.variances:
                sq_details = {
                    "query": f"sums of squared offsets of {name} from its declared midpoint per "
                    f"group, in units of (2**-{SQ_BITS} of its declared range)**2",
                    **squares.ledger_details(),
                }
                charges.append(
                    Charge(squares.event, f"{_NAME}: sums of squares of {name}", sq_details)
                )
        return charges + self._quantile_charges(plan)

    def _quantile_charges(self, plan: GroupPlan) -> list[Charge]:
        """Per quantile column: its tree (tree, hybrid with intervals), then one exponential
        mechanism draw per probability (exponential, hybrid); the hybrid's parts compose
        sequentially to the column's ``len(probabilities) · epsilon_mean``."""
        charges = []
        hybrid = plan.quantile_method == HYBRID
        composed = (
            {
                "composition": f"sequential, with the column's other quantile entries: tree "
                f"ε = {plan.epsilon_tree:.6g} (the intervals) + {len(plan.probabilities)} × "
                f"exponential mechanism ε = {plan.epsilon_point:.6g} (the quantiles)"
            }
            if hybrid and plan.draws_tree
            else {}
        )
        for name in plan.quantiles:
            col = _numeric(self.schema, name)
            ps = ", ".join(f"{p:g}" for p in plan.probabilities)
            if plan.draws_tree:
                tree = self._tree_mechanism(plan)
                gives = (
                    f"the intervals of the quantiles {ps} are post-processing"
                    if hybrid
                    else f"the quantiles {ps} and their intervals are post-processing"
                )
                t_details = {
                    "query": f"counts of {name} per group under each node of a tree of {LEVELS} "
                    f"levels of {BRANCH} children over {BRANCH**LEVELS:,} grid cells of "
                    f"[{col.lower:g}, {col.upper:g}] ({gives})",
                    **tree.ledger_details(),
                    "units": "rows (each node's count)",
                    **composed,
                    **self._unit_details(),
                }
                charges.append(Charge(tree.event, f"{_NAME}: quantile tree of {name}", t_details))
            for p in plan.probabilities if plan.draws_exponential else ():
                q_details = {
                    "query": f"the {p:g}-quantile of {name} per group, exponential mechanism on "
                    f"[{col.lower:g}, {col.upper:g}], utility -|rank - p n| (sensitivity "
                    f"{plan.contribution} row(s) of one person)",
                    "epsilon_per_group": plan.epsilon_quantile_group,
                    # a choice among the grid's points, said as the selections are
                    "norm": "utility",
                    "sensitivity": plan.contribution,
                    **composed,
                    **self._unit_details(),
                }
                event = Exponential(epsilon=plan.epsilon_point)
                charges.append(Charge(event, f"{_NAME}: {_qname(p, name)}", q_details))
        return charges

    def _mean_error(
        self, name: str, sums: DiscreteLaplaceMechanism, count_sd: float
    ) -> dict[str, Any]:
        """What a group mean's error of the column ``name`` follows from (public: the noise
        laws and the declared bounds; :func:`ppdp.accounting.plan.group_mean_error`)."""
        col = _numeric(self.schema, name)
        span = col.upper - col.lower
        return {
            "column": name,
            "sum_sd": math.sqrt(sums.variance()) * span / UNIT,
            "count_sd": count_sd,
            "half_range": span / 2.0,
        }

    def _selection_charges(self, plan: GroupPlan, counts: Charge) -> list[Charge]:
        """keys="private": the selection (with the counts, for the thresholding methods)
        is one (ε, δ) entry; truncated geometric's keys are an entry before the counts."""
        sel = plan.selection
        assert sel is not None
        what = (
            f"keys of ({', '.join(plan.by)}): {plan.n_groups} declared key(s) always, others "
            f"(open columns {', '.join(plan.open_by)}) selected privately"
        )
        event = EpsilonDelta(epsilon=sel.epsilon, delta=sel.delta)
        unit = self._unit_details()  # per person: every entry names the unit
        if sel.method in _KEYS_ONLY:
            details = {"query": what, **sel.details(), **unit}
            return [Charge(event, f"{_NAME}: keys", details), counts]
        details = {
            "query": f"noisy row counts and {what}",
            **sel.details(),
            "units": "rows",
            **unit,
        }
        if "n" in counts.details:
            details["n"] = counts.details["n"]
        return [Charge(event, f"{_NAME}: keys and counts", details)]

    def _quantile_assumption(self, plan: GroupPlan) -> str:
        """The guarantee's line on the quantiles' measurement."""
        cols = ", ".join(plan.quantiles)
        ps = ", ".join(f"{p:g}" for p in plan.probabilities)
        grid = (
            "values clipped to the declared bounds, then moved to the nearest of 2^16 + 1 "
            "evenly spaced points of the range"
        )
        replace = plan.relation is Neighbouring.REPLACE_ONE
        moves = " × 2 (a row may move between groups)" if replace else ""
        unit = f" × {plan.contribution} row(s) of one person" if plan.contribution > 1 else ""
        em = (
            "exponential mechanism per group and probability on the declared range, utility "
            f"−|rank − p·n| (sensitivity 1 row{moves}{unit}, over all groups), "
            f"ε = {plan.epsilon_point:.6g} per (column, p), "
            f"{plan.epsilon_quantile_group:.6g} per group's draw"
        )
        if not plan.draws_tree:
            return f"quantiles ({cols}; p = {ps}): {em}; {grid}; no interval"
        tree = (
            f"per group, counts under every node of a tree of {LEVELS} levels of {BRANCH} "
            f"children over the range's {BRANCH**LEVELS:,} grid cells; discrete Laplace, L1 "
            f"sensitivity {plan.tree_sensitivity} ({LEVELS} levels{moves}{unit}), "
            f"ε = {plan.epsilon_tree:.6g} per column"
        )
        if plan.quantile_method == "tree":
            return (
                f"quantiles ({cols}; p = {ps}): {tree}; {grid}; every probability's quantile "
                "(and its interval) is post-processing of the noisy tree"
            )
        total = plan.epsilon_tree + len(plan.probabilities) * plan.epsilon_point
        return (
            f"quantiles ({cols}; p = {ps}): each quantile from an {em}; its interval from a "
            f"noisy tree ({tree}), post-processing of the tree, and the quantile is clipped "
            f"into it (post-processing of both); {grid}; the two compose sequentially, "
            f"ε = {total:.6g} per column"
        )

    def _post_processing(self, plan: GroupPlan) -> list[str]:
        """The guarantee's lines on what is computed from released values only."""
        lines = []
        if plan.variances:
            lines.append(
                f"sums of squared offsets from the midpoint ({', '.join(plan.variances)}), exact "
                f"integers in steps of 2^-{SQ_BITS} of the declared range: discrete Laplace, L1 "
                f"sensitivity {'half ' if plan.relation is Neighbouring.ADD_REMOVE else ''}"
                f"(range/2)^2·2, ε = {plan.epsilon_mean:.6g} per column; var and std are "
                "post-processing (NaN where the noisy count < 2)"
            )
        if plan.interval is not None:
            lines.append(
                f"intervals ({plan.interval:g}) are post-processing: computed from the noise "
                "laws and the released values only (to first order for means, variances and "
                "standard deviations; a quantile's from the noisy ranks its tree gives, "
                "widened by half a grid step)"
                + (
                    "; a group released because its noisy count passed a threshold has "
                    "intervals given that it passed (the noise law truncated there)"
                    if (plan.selection is not None and plan.selection.method not in _KEYS_ONLY)
                    or plan.min_count is not None
                    else ""
                )
            )
        if plan.rounding is not None:
            how = (
                "to what each value's interval supports (two significant digits of its half-width)"
                if plan.rounding == "auto"
                else f"to {plan.rounding} decimal(s)"
            )
            lines.append(f"table values rounded {how}: post-processing")
        if plan.min_count is not None:
            lines.append(
                f"groups whose noisy count is below {plan.min_count:g} are left out: "
                "post-processing of the noisy counts"
            )
        return lines

    def _column_notes(self, plan: GroupPlan) -> dict[str, str]:
        """One plain-words line per released column (the guarantee file's header)."""
        level = f"{plan.interval:g}" if plan.interval is not None else ""
        notes = {"count": "the group's row count plus noise (may be 0 or negative)"}
        if level:
            notes["count_lo/count_hi"] = f"a {level} interval for the true count"
        for name in plan.means:
            notes[f"mean_{name}"] = (
                f"the group's average {name}, from noisy sums over the noisy count, within the "
                "declared bounds; empty where the noisy count is below 1"
            )
            notes[f"mean_{name}_sd"] = f"the standard deviation of mean_{name}'s sum noise"
            if level:
                notes[f"mean_{name}_lo/hi"] = f"a {level} interval for the true average"
        for name in plan.quantiles:
            for p in plan.probabilities:
                key = _qname(p, name)
                notes[key] = (
                    f"the group's {p:g}-quantile of {name} (the least value with at least "
                    f"{p:g} of the group's rows at or below it), within the declared bounds"
                )
                if level and plan.draws_tree:
                    notes[f"{key}_lo/hi"] = f"a {level} interval for the true quantile" + (
                        f" (from the noisy tree; {key} is the exponential mechanism's, "
                        "clipped into it)"
                        if plan.quantile_method == HYBRID
                        else ""
                    )
        for name in plan.variances:
            notes[f"var_{name}/std_{name}"] = (
                f"the group's variance and standard deviation of {name} (population, values "
                "clipped to the declared bounds); empty below 2 rows"
            )
        return notes

    @staticmethod
    def _selection_assumption(plan: GroupPlan) -> str:
        sel = plan.selection
        assert sel is not None
        if sel.method == "truncated-geometric":
            how = "a key of n persons is kept with the truncated-geometric probability π(n)"
        elif sel.method == "dp-sips":
            taus = ", ".join(f"{t:.4g}" for t in sel.sips_thresholds())
            how = (
                f"{len(sel.shares)} rounds; in each, every person spreads a weight of L2 norm 1 "
                "over their keys not yet selected, and a key is released when its summed "
                f"weight plus Gaussian noise passes the round's threshold ({taus})"
            )
        else:
            how = f"a key is released when its noisy count is >= {sel.threshold_:.6g}"
        return (
            f"group keys: the {plan.n_groups} declared key(s) of ({', '.join(plan.by)}) always; "
            f"keys of the open column(s) {', '.join(plan.open_by)} read from the data and "
            f"selected privately ({sel.method}, ε = {sel.epsilon:.6g}, δ = {sel.delta:g}: "
            f"{how}; each person in at most {sel.max_groups} key(s)); the released keys are "
            "sorted by their text, so their order reveals nothing more"
        )

    def noiseless_table(self, keys: pd.DataFrame, stats: GroupStatistics) -> pd.DataFrame:
        """The table this release's post-processing makes of exact statistics without noise
        (unrounded, no intervals, every group kept): the true values the custodian's report
        compares a release with. It reads the private data: never release it.

        Parameters
        ----------
        keys : DataFrame
            One row per group, the ``by`` columns.
        stats : GroupStatistics
            The groups' exact counts, centred sums and sums of squares, in ``keys``' order.
        """
        plan = dataclasses.replace(
            self._params().plan, rounding=None, interval=None, min_count=None, quantiles=()
        )
        table = keys.reset_index(drop=True).copy()
        counts = np.asarray(stats.counts, dtype=np.int64)
        sums = np.asarray(stats.sums, dtype=np.int64).reshape(len(plan.means), len(counts))
        return self._table(plan, table, counts, sums, stats.squares).data

    # -- data -----------------------------------------------------------------------------

    def _encode(self, df: pd.DataFrame, on_invalid: str = "raise") -> tuple[Any, Any]:
        X, y = self.schema.encode(df, on_invalid=on_invalid)
        self._check_rows(X.shape[0])
        plan = self._params().plan
        if plan.key_mode == "private":
            keys, keep = open_key_values(self.schema, df, plan.open_by, on_invalid)
            return KeyedRows(X, keys, keep, self._sips_persons(plan, df)), y
        return X, y

    def _sips_persons(self, plan: GroupPlan, rows: pd.DataFrame) -> NDArray[Any] | None:
        """DP-SIPS under a privacy unit: each (bounded) row's person, the id column's text
        (as the bounding reads it, so one person is one text in every partition)."""
        unit = self.schema.privacy_unit
        sel = plan.selection
        if sel is None or sel.method != "dp-sips" or unit is None or unit.column not in rows:
            return None
        return rows[unit.column].astype(str).to_numpy(dtype=object)

    def checked_table(self, data: Any) -> Any:
        """``data`` with every declared column this release does not read set to one
        declared value (a column outside ``by``, ``means``, ``variances`` and
        ``quantiles``; the label unless it is in ``by``): its values are neither checked
        (an undeclared category, a missing value) nor counted (clipped, imputed) nor
        warned about, here, in the dry run or in ``ppdp publish groupby``'s lines.

        The columns the release reads keep their values and every statistic reads only
        their encoded blocks, so the release is the one the whole table gives. A column
        missing from ``data`` stays missing (refused as before); the privacy unit's column
        and the open columns are not encoded and are left as they are. A pandas or Dask
        DataFrame only (anything else is returned unchanged)."""
        return unread_filled(self.schema, self._params().plan, data)

    def _check_rows(self, n: int) -> None:
        """Refuse an empty table where ``n`` is public (replace-one). Under add/remove an
        empty table is released like any other (noisy counts and sums of zero rows): a
        refusal there would say for free whether any row matched."""
        if n < 1 and self._params().relation is Neighbouring.REPLACE_ONE:
            raise DataValidationError(
                "data has 0 rows; there is nothing to publish (n is public under replace-one)"
            )

    def _distributed_include_label(self) -> bool:
        return False  # the label comes as class codes ``y``, as in memory

    def _partition_reads_rows(self) -> bool:
        """keys="private" reads the open columns' key texts of each partition's rows."""
        return self._params().plan.key_mode == "private"

    def _partition_statistics(
        self, X: NDArray[np.float64], y: Any, rows: pd.DataFrame | None = None
    ) -> GroupStatistics | KeyedAggregate:
        """One partition's exact statistics: per declared group, or (keys="private") per
        key of the partition's rows; a missing open key is counted, refused after the pass
        with the whole table's count (:meth:`_check_scan`)."""
        plan = self._params().plan
        if plan.key_mode != "private":
            return group_statistics(self.schema, plan, X, y)
        assert rows is not None
        keys, gaps = open_key_texts(self.schema, rows, plan.open_by)
        keep = np.ones(X.shape[0], dtype=bool)
        for m in gaps.values():
            keep &= ~m
        missing = {name: int(m.sum()) for name, m in gaps.items()}
        persons = self._sips_persons(plan, rows)
        return self._keyed_aggregate(plan, KeyedRows(X, keys, keep, persons), y, missing)

    def _check_scan(self, scan: Any, on_invalid: str) -> None:
        self._check_rows(scan.n_rows)
        if isinstance(scan.value, KeyedAggregate):
            check_missing_keys(scan.value.missing, on_invalid)

    def _check_output(self, output: Any, name: str) -> Path | None:
        """``output`` is optional for distributed input: a new folder that ``fit`` writes
        the released table to, as Parquet (what ``ppdp publish groupby`` does with a
        Parquet dataset)."""
        return None if output is None else new_folder(output, "output")

    # -- release --------------------------------------------------------------------------

    def _release(self, X: Any, y: Any, source: RandomSource, charges: list[Charge]) -> Release:
        plan = self._params().plan
        if isinstance(X, KeyedRows):
            return self._publish_private(plan, self._keyed_aggregate(plan, X, y), source)
        return self._publish(plan, group_statistics(self.schema, plan, X, y), source)

    def _private_statistics(
        self, plan: GroupPlan, rows: KeyedRows, y: Any
    ) -> tuple[GroupStatistics, pd.DataFrame, GroupStatistics]:
        """The declared keys' exact statistics, the candidate keys and theirs."""
        agg = self._keyed_aggregate(plan, rows, y)
        declared, cand_keys, cand, _, _ = self._split(plan, agg)
        return declared, cand_keys, cand

    def _keyed_aggregate(
        self, plan: GroupPlan, rows: KeyedRows, y: Any, missing: dict[str, int] | None = None
    ) -> KeyedAggregate:
        """:func:`keyed_statistics` of the rows under this publisher's schema."""
        return keyed_statistics(self.schema, plan, rows, y, missing)

    def _grid_cells(self, name: str, X: NDArray[np.float64]) -> NDArray[np.int64]:
        """Each encoded row's point of the quantile grid of column ``name``."""
        return column_grid_cells(self.schema, name, X)

    def _split(
        self, plan: GroupPlan, agg: KeyedAggregate
    ) -> tuple[
        GroupStatistics, pd.DataFrame, GroupStatistics, NDArray[np.int64], NDArray[np.int64]
    ]:
        """The declared keys' exact statistics (every declared key, empty ones included),
        the candidate keys (sorted by their texts) and theirs; then each aggregate key's
        declared group (-1 for a candidate) and the candidates' rows of the aggregate.

        With DP-SIPS under a privacy unit, the candidates' statistics carry the aggregate's
        distinct (person, key) pairs as (person code, candidate index)."""
        group, cand = agg.split(plan.levels)
        k = len(plan.means)
        declared = np.zeros((agg.stats.shape[0], plan.n_groups), dtype=np.int64)
        at = group >= 0
        declared[:, group[at]] = agg.stats[:, at]
        found = agg.stats[:, cand]
        cand_keys = agg.keys.iloc[cand].reset_index(drop=True).infer_objects()
        pairs = None
        if agg.pairs is not None:
            pairs = sips_inputs(agg.pairs, plan.by, agg.keys.iloc[cand])
        return (
            GroupStatistics(declared[0], declared[1 : 1 + k], declared[1 + k :]),
            cand_keys,
            GroupStatistics(found[0], found[1 : 1 + k], found[1 + k :], pairs=pairs),
            group,
            cand,
        )

    def _publish_private(
        self,
        plan: GroupPlan,
        agg: KeyedAggregate,
        source: RandomSource,
    ) -> Release:
        """keys="private": declared keys always, candidate keys through the selection;
        then the sums of the released keys (the noise of the declared keys drawn first),
        the sums of squares, and last the quantiles of the released keys. DP-SIPS reads
        the aggregate's (person, key) pairs, or without a privacy unit its counts."""
        declared, cand_keys, cand, group, cand_rows = self._split(plan, agg)
        counts, keep = self._private_counts(plan, declared, cand, source)
        cut = self._selection_cut(plan, len(declared.counts), int(keep.sum()))
        exact_sums = np.concatenate([declared.sums, cand.sums[:, keep]], axis=1)
        sums = self._noisy_sums(plan, exact_sums, source)
        squares = None
        if declared.squares is not None and cand.squares is not None:
            exact_sq = np.concatenate([declared.squares, cand.squares[:, keep]], axis=1)
            squares = self._noisy_squares(plan, exact_sq, source)
        keys = pd.concat([plan.keys(), cand_keys[keep]], ignore_index=True)
        extra: dict[str, NDArray[np.float64]] = {}
        if plan.quantiles:  # each aggregate key's row of the release, -1 if not released
            released = np.full(len(agg.keys), -1, dtype=np.int64)
            released[group >= 0] = group[group >= 0]
            chosen = cand_rows[keep]
            released[chosen] = plan.n_groups + np.arange(len(chosen))
            cells = tuple(c.regroup(released) for c in agg.cells)
            extra = self._quantile_draws(plan, cells, len(keys), source)
        return self._table(plan, keys, counts, sums, squares, extra, cut)

    @staticmethod
    def _selection_cut(plan: GroupPlan, n_declared: int, n_selected: int) -> NDArray[np.float64]:
        """Per released key, the threshold its released count's noisy count passed to be
        released (−inf: none). Thresholding methods: τ for the selected keys, whose counts
        are the selection's noisy counts; truncated geometric and DP-SIPS draw the counts
        afterwards with fresh noise, independent of the selection: none."""
        cut = np.full(n_declared + n_selected, -np.inf)
        sel = plan.selection
        if sel is not None and sel.method not in _KEYS_ONLY:
            cut[n_declared:] = sel.threshold_
        return cut

    def _private_counts(
        self,
        plan: GroupPlan,
        declared: GroupStatistics,
        cand: GroupStatistics,
        source: RandomSource,
    ) -> tuple[NDArray[np.int64], NDArray[np.bool_]]:
        """The released keys' noisy counts (declared, then selected) and the selection mask
        of the candidates."""
        sel = plan.selection
        assert sel is not None
        if sel.method in _KEYS_ONLY:
            if sel.method == "dp-sips":
                keep = self._sips_keep(sel, cand, source)
            else:
                keep, _ = sel.select(cand.counts, source)
            exact = np.concatenate([declared.counts, cand.counts[keep]])
            mech = self._count_mechanism(plan)
            return mech._release(exact, source, scale=mech.scale), keep
        noisy_declared = sel.noisy_counts(declared.counts, source)
        keep, noisy = sel.select(cand.counts, source)
        assert noisy is not None
        counts = np.concatenate([noisy_declared, noisy[keep]])
        return np.rint(counts).astype(np.int64), keep

    def _sips_keep(
        self, sel: PartitionSelection, cand: GroupStatistics, source: RandomSource
    ) -> NDArray[np.bool_]:
        """DP-SIPS on the candidates' (person, key) pairs; without a privacy unit each row
        is a person of one key, so each key's row count is its weight in every round."""
        if cand.pairs is None:
            none = np.zeros(0, dtype=np.int64)
            return sel.select_persons(none, none, len(cand.counts), source, singles=cand.counts)
        persons, index = cand.pairs
        return sel.select_persons(persons, index, len(cand.counts), source)

    def _release_distributed(
        self,
        frame: Any,
        scan: Any,
        source: RandomSource,
        charges: list[Charge],
        *,
        scheduler: Any,
        output: Any,
    ) -> Release:
        plan = self._params().plan
        if isinstance(scan.value, KeyedAggregate):
            release = self._publish_private(plan, scan.value, source)
        else:
            release = self._publish(plan, scan.value, source)
        if output is not None:
            from ppdp.data.distributed import write_parquet_dataset

            write_parquet_dataset([release.data], output, scheduler=scheduler)
        return release

    def _noisy(
        self, plan: GroupPlan, stats: GroupStatistics, source: RandomSource
    ) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """The noisy counts, then each column's noisy centred sums (integers), in that order
        of draws; each vector may hold several stacked releases (the audit's batches)."""
        counts_mech = self._count_mechanism(plan)
        counts = counts_mech._release(
            np.asarray(stats.counts, dtype=np.int64).reshape(-1),
            source,
            scale=counts_mech.scale,
        ).reshape(np.shape(stats.counts))
        return counts, self._noisy_sums(plan, stats.sums, source)

    def _noisy_sums(
        self, plan: GroupPlan, exact_sums: Any, source: RandomSource
    ) -> NDArray[np.int64]:
        """Each ``means`` column's noisy centred sums (integers), column by column."""
        sums = np.zeros(np.shape(exact_sums), dtype=np.int64)
        if plan.means:
            sums_mech = self._sum_mechanism(plan)
            for j in range(len(plan.means)):
                exact = np.clip(np.asarray(exact_sums[j], dtype=np.int64), -SUM_LIMIT, SUM_LIMIT)
                sums[j] = sums_mech._release(
                    exact.reshape(-1), source, scale=sums_mech.scale
                ).reshape(exact.shape)
        return sums

    def _noisy_squares(
        self, plan: GroupPlan, exact: Any, source: RandomSource
    ) -> NDArray[np.int64] | None:
        """Each ``variances`` column's noisy sums of squares (integers), after the sums."""
        if not plan.variances or exact is None:
            return None
        mech = self._square_mechanism(plan)
        out = np.zeros(np.shape(exact), dtype=np.int64)
        for j in range(len(plan.variances)):
            e = np.clip(np.asarray(exact[j], dtype=np.int64), 0, SUM_LIMIT)
            out[j] = mech._release(e.reshape(-1), source, scale=mech.scale).reshape(e.shape)
        return out

    def _publish(self, plan: GroupPlan, stats: GroupStatistics, source: RandomSource) -> Release:
        noisy_counts, noisy_sums = self._noisy(plan, stats, source)
        squares = self._noisy_squares(plan, stats.squares, source)
        extra = self._quantile_draws(plan, stats.cells, plan.n_groups, source)
        return self._table(plan, plan.keys(), noisy_counts, noisy_sums, squares, extra)

    def _quantiles(
        self,
        plan: GroupPlan,
        rows: tuple[NDArray[np.int64], NDArray[np.float64]],
        source: RandomSource,
    ) -> dict[str, NDArray[np.float64]]:
        """The quantile draws of encoded rows ``(group codes, X)`` over ``plan``'s groups:
        :meth:`_quantile_draws` of their grid histograms (what ``fit`` draws)."""
        g, X = rows
        cells = tuple(CellCounts.of(g, self._grid_cells(name, X)) for name in plan.quantiles)
        return self._quantile_draws(plan, cells, plan.n_groups, source)

    def _quantile_draws(
        self, plan: GroupPlan, cells: tuple[CellCounts, ...], n_groups: int, source: RandomSource
    ) -> dict[str, NDArray[np.float64]]:
        """Each quantile column's per-group quantiles from the groups' grid histograms, one
        column after another (after every other draw of the release): with the tree, every
        probability and (intervals on) its interval's ends ``_lo``/``_hi`` from the column's
        tree; with the exponential mechanism, one draw per (column, p); with both
        (``"exponential+tree"``), every column's tree first, then the draws, each clipped
        into its interval."""
        out: dict[str, NDArray[np.float64]] = {}
        if plan.draws_tree:
            out = self._tree_draws(plan, cells, n_groups, source)
        if not plan.draws_exponential:
            return out
        for name, hist in zip(plan.quantiles, cells, strict=True):
            col = _numeric(self.schema, name)
            for p in plan.probabilities:
                key = _qname(p, name)
                x = histogram_quantiles(
                    hist, n_groups, p, plan.epsilon_quantile_group, col.lower, col.upper, source
                )
                if f"{key}_lo" in out:  # hybrid: the point clipped into the tree's interval
                    x = np.clip(x, out[f"{key}_lo"], out[f"{key}_hi"])
                out[key] = x
        return out

    def _tree_draws(
        self, plan: GroupPlan, cells: tuple[CellCounts, ...], n_groups: int, source: RandomSource
    ) -> dict[str, NDArray[np.float64]]:
        """The tree quantiles (and their intervals' ends) of every column and probability."""
        mech = self._tree_mechanism(plan)

        def add(exact: NDArray[np.int64]) -> NDArray[np.int64]:
            return mech._release(exact, source, scale=mech.scale)

        noise = TreeNoise(mech.scale, add)
        out: dict[str, NDArray[np.float64]] = {}
        for name, hist in zip(plan.quantiles, cells, strict=True):
            col = _numeric(self.schema, name)
            found = tree_quantiles(
                hist, n_groups, plan.probabilities, noise, plan.interval, col.lower, col.upper
            )
            for p, q in found.items():
                out[_qname(p, name)] = q.value
                if plan.interval is not None:
                    out[_qname(p, name) + "_lo"] = q.lo
                    out[_qname(p, name) + "_hi"] = q.hi
        return out

    def _table(
        self,
        plan: GroupPlan,
        table: pd.DataFrame,
        noisy_counts: NDArray[np.int64],
        noisy_sums: NDArray[np.int64],
        noisy_squares: NDArray[np.int64] | None = None,
        extra: dict[str, NDArray[np.float64]] | None = None,
        cut: NDArray[np.float64] | None = None,
    ) -> Release:
        """The released table from the keys and the noisy integers (post-processing: it
        reads released values and public noise scales only). ``cut``: per key, the threshold
        its count's noise passed to be released (−inf or None: none); its intervals are
        conditioned on passing it (:meth:`_selected_ends`)."""
        counts = noisy_counts.astype(np.float64)
        stats: dict[str, NDArray[np.float64]] = {"count": counts}
        hw: dict[str, NDArray[np.float64]] = {}  # interval half-widths (or sds), per statistic
        law, b_count = self._count_noise(plan)
        level = plan.interval if plan.interval is not None else 0.95
        if law == "dlap":
            hw["count"] = np.full(counts.shape, float(discrete_laplace_halfwidth(b_count, level)))
            b_n = b_count  # as a Laplace term of the mixes below
        else:  # Gaussian counts, rounded to integers
            z = float(ndtri(0.5 + level / 2.0))
            hw["count"] = np.full(counts.shape, z * b_count + 0.5)
            b_n = b_count / math.sqrt(2.0)  # the Laplace of the same variance (approximate)
        sum_b = self._sum_mechanism(plan).scale if plan.means else 0.0
        sum_sd = math.sqrt(self._sum_mechanism(plan).variance()) if plan.means else 0.0
        ok = counts >= 1.0
        n = np.maximum(counts, 1.0)
        for j, name in enumerate(plan.means):
            col = _numeric(self.schema, name)
            span = col.upper - col.lower
            centre = col.lower + span / 2.0
            a = span / UNIT
            centred = noisy_sums[j].astype(np.float64) * a
            mu = np.where(ok, centred / n, 0.0)
            mean = np.where(ok, np.clip(centre + mu, col.lower, col.upper), np.nan)
            stats[f"sum_{name}"] = centred + centre * counts
            hw[f"sum_{name}"] = laplace_mix_halfwidth(
                np.stack(
                    [np.full(counts.shape, a * sum_b), np.full(counts.shape, abs(centre) * b_n)]
                ),
                level,
            )
            stats[f"mean_{name}"] = mean
            stats[f"mean_{name}_sd"] = np.where(ok, sum_sd * a / n, np.nan)
            hw[f"mean_{name}"] = np.where(
                ok,
                laplace_mix_halfwidth(np.stack([a * sum_b / n, np.abs(mu) * b_n / n]), level),
                np.nan,
            )
            if name in plan.variances:
                self._variance(plan, name, noisy_squares, counts, mu, sum_b, b_n, level, stats, hw)
        stats.update(extra or {})
        keep = np.ones(len(counts), dtype=bool)
        if plan.min_count is not None:
            keep = counts >= plan.min_count  # post-processing of the noisy counts
        bounds = {"count": (-np.inf, np.inf)}
        for name in plan.means:
            col = _numeric(self.schema, name)
            bounds[f"mean_{name}"] = (col.lower, col.upper)
            bounds[f"sum_{name}"] = (-np.inf, np.inf)
        for name in plan.variances:
            span = _numeric(self.schema, name).upper - _numeric(self.schema, name).lower
            bounds[f"var_{name}"] = (0.0, (span / 2.0) ** 2)
        if plan.interval is not None:
            ends = self._selected_ends(plan, counts, cut, noisy_sums, noisy_squares, hw)
            for key, h in list(hw.items()):
                lo, hi = bounds[key]
                down, up = ends.get(key, (h, h))
                stats[f"{key}_lo"] = np.clip(stats[key] - down, lo, hi)
                stats[f"{key}_hi"] = np.clip(stats[key] + up, lo, hi)
                hw[key] = np.minimum(down, up)  # rounding: the finer side's digits
            for name in plan.variances:  # std: the square root of var's interval's ends
                stats[f"std_{name}_lo"] = np.sqrt(stats[f"var_{name}_lo"])
                stats[f"std_{name}_hi"] = np.sqrt(stats[f"var_{name}_hi"])
        stats = {k: v[keep] for k, v in stats.items()}
        hw = {k: v[keep] for k, v in hw.items()}
        table = table[keep].reset_index(drop=True)
        self._fill(plan, table, noisy_counts[keep], stats, hw)
        return Release(data=table, encoded=None, guarantee=self._guarantee(plan), statistics=stats)

    def _variance(
        self,
        plan: GroupPlan,
        name: str,
        noisy_squares: NDArray[np.int64] | None,
        counts: NDArray[np.float64],
        mu: NDArray[np.float64],
        sum_b: float,
        b_n: float,
        level: float,
        stats: dict[str, NDArray[np.float64]],
        hw: dict[str, NDArray[np.float64]],
    ) -> None:
        """``var_x`` (population variance of the clipped values) and ``std_x`` from the noisy
        sum of squares, the noisy centred sum and the noisy count; NaN below 2 rows."""
        assert noisy_squares is not None
        col = _numeric(self.schema, name)
        span = col.upper - col.lower
        a, a2 = span / UNIT, span / SQ_UNIT
        j = plan.variances.index(name)
        ok = counts >= 2.0
        n = np.maximum(counts, 1.0)
        mean_sq = noisy_squares[j].astype(np.float64) * a2 * a2 / n
        var = np.where(ok, np.clip(mean_sq - mu * mu, 0.0, (span / 2.0) ** 2), np.nan)
        b_q = self._square_mechanism(plan).scale * a2 * a2
        scales = np.stack(
            [b_q / n, 2.0 * np.abs(mu) * a * sum_b / n, np.abs(2 * mu * mu - mean_sq) * b_n / n]
        )
        stats[f"var_{name}"] = var
        hw[f"var_{name}"] = np.where(ok, laplace_mix_halfwidth(scales, level), np.nan)
        stats[f"std_{name}"] = np.sqrt(var)

    def _selected_ends(
        self,
        plan: GroupPlan,
        counts: NDArray[np.float64],
        cut: NDArray[np.float64] | None,
        noisy_sums: NDArray[np.int64],
        noisy_squares: NDArray[np.int64] | None,
        hw: dict[str, NDArray[np.float64]],
    ) -> dict[str, tuple[NDArray[np.float64], NDArray[np.float64]]]:
        """The (down, up) half-widths of every statistic of a key released because its
        noisy count passed a threshold (the selection's τ, ``min_count``): conditioned on
        passing it (post-processing; docs/proofs/partition-selection.md, Intervals of
        selected keys). Other keys keep ``hw`` (no entry).

        The count's interval inverts the noise law truncated at the threshold
        (:func:`selected_count_interval`). A statistic that reads the count (sum: ``m·Ñ``;
        mean: ``S̃/Ñ``; variance) takes, in place of its count term, the range of its value
        over that interval (its other noisy parts as released), combined on each side with
        the half-width of its other parts by root-sum-square: far from the threshold the
        count interval is the unconditional one and the statistic's is within a few per
        cent of its unconditional interval.
        """
        law, b = self._count_noise(plan)
        selected = np.zeros(counts.shape, bool) if cut is None else np.isfinite(cut)
        at = np.full(counts.shape, -np.inf) if cut is None else np.asarray(cut, np.float64)
        if plan.min_count is not None:  # Ñ ≥ m: N ≥ m (integers) or rint(N) ≥ m (Gaussian)
            m = math.ceil(plan.min_count)
            at = np.maximum(at, m if law == "dlap" else m - 0.5)
        # the keys that passed (the others are suppressed: min_count); rint(Ñ) ≥ τ − 1/2
        cond = np.isfinite(at) & (counts >= at - (0.5 if law == "gauss" else 0.0))
        if not cond.any() or plan.interval is None:
            return {}
        level = plan.interval
        r = counts[cond]
        # a selected key is one the data hold (≥ 1 row); a declared one may be empty
        lo_c, hi_c = selected_count_interval(
            r, law, b, at[cond], level, np.where(selected[cond], 1.0, 0.0)
        )
        down_c, up_c = hw["count"].copy(), hw["count"].copy()
        down_c[cond], up_c[cond] = r - lo_c, hi_c - r
        ends = {"count": (down_c, up_c)}

        def side(key: str, f: Any, others: list[Any], vertex: Any = None) -> None:
            vals = [f(lo_c), f(hi_c)]
            if vertex is not None:  # an interior extreme of f over [lo_c, hi_c]
                vals.append(f(np.clip(vertex, lo_c, hi_c)))
            now = f(r)
            low, high = np.minimum.reduce(vals), np.maximum.reduce(vals)
            rest = laplace_mix_halfwidth(
                np.stack([np.broadcast_to(o, r.shape) for o in others]), level
            )
            ok = np.isfinite(hw[key][cond])
            down, up = hw[key].copy(), hw[key].copy()
            down[cond] = np.where(ok, np.hypot(rest, np.maximum(now - low, 0.0)), np.nan)
            up[cond] = np.where(ok, np.hypot(rest, np.maximum(high - now, 0.0)), np.nan)
            ends[key] = (down, up)

        sum_b = self._sum_mechanism(plan).scale if plan.means else 0.0
        n = np.maximum(r, 1.0)
        for j, name in enumerate(plan.means):
            col = _numeric(self.schema, name)
            span = col.upper - col.lower
            centre, a = col.lower + span / 2.0, span / UNIT
            s = noisy_sums[j][cond].astype(np.float64) * a  # the centred sum, as released
            side(f"sum_{name}", lambda c, s=s, m=centre: s + m * c, [a * sum_b])
            side(f"mean_{name}", lambda c, s=s: s / np.maximum(c, 1.0), [a * sum_b / n])
            if name in plan.variances:
                assert noisy_squares is not None
                a2 = span / SQ_UNIT
                q = noisy_squares[plan.variances.index(name)][cond].astype(np.float64) * a2 * a2
                mu = s / n
                b_q = self._square_mechanism(plan).scale * a2 * a2
                with np.errstate(divide="ignore", invalid="ignore"):
                    top = np.where(q > 0, 2.0 * s * s / q, np.inf)  # Q/c − S²/c² peaks here
                side(
                    f"var_{name}",
                    lambda c, s=s, q=q: q / np.maximum(c, 1.0) - (s / np.maximum(c, 1.0)) ** 2,
                    [b_q / n, 2.0 * np.abs(mu) * a * sum_b / n],
                    top,
                )
        return ends

    def _count_sd(self, plan: GroupPlan) -> float:
        """The standard deviation of a released count's noise (public: its law's)."""
        law, scale = self._count_noise(plan)
        if law == "gauss":
            return scale
        q = math.exp(-1.0 / scale)  # discrete Laplace: variance 2q / (1 - q)²
        return math.sqrt(2.0 * q) / -math.expm1(-1.0 / scale)

    def _count_noise(self, plan: GroupPlan) -> tuple[str, float]:
        """The law and scale of the released counts' noise: ``("dlap", b)`` or
        ``("gauss", σ)`` (Gaussian selection)."""
        sel = plan.selection
        if sel is not None and sel.method == "laplace":
            return "dlap", sel.laplace().scale
        if sel is not None and sel.method == "gaussian":
            return "gauss", sel.gaussian().sigma
        return "dlap", self._count_mechanism(plan).scale

    def _fill(
        self,
        plan: GroupPlan,
        table: pd.DataFrame,
        counts: NDArray[np.int64],
        stats: dict[str, NDArray[np.float64]],
        hw: dict[str, NDArray[np.float64]],
    ) -> None:
        """Write the table's columns: each statistic, then its interval, rounded."""

        def put(key: str, column: str, halfwidth: NDArray[np.float64]) -> None:
            digits = plan.rounding if isinstance(plan.rounding, int) else None
            for suffix in ("", "_lo", "_hi"):
                if suffix and plan.interval is None:
                    continue
                v = stats[key + suffix]
                if plan.rounding is not None:
                    v = round_to_noise(v, halfwidth, digits)
                table[column + suffix] = v

        table["count"] = counts
        if plan.interval is not None:
            table["count_lo"] = np.rint(stats["count_lo"]).astype(np.int64)
            table["count_hi"] = np.rint(stats["count_hi"]).astype(np.int64)
        for name in plan.means:
            h = hw[f"mean_{name}"] if plan.interval is not None else stats[f"mean_{name}_sd"]
            put(f"mean_{name}", f"mean_{name}", h)
            sd = stats[f"mean_{name}_sd"]
            table[f"mean_{name}_sd"] = sd if plan.rounding is None else round_to_noise(sd, sd, None)
            if name in plan.variances:
                put(f"var_{name}", f"var_{name}", hw[f"var_{name}"])
                std = stats[f"std_{name}"]
                with np.errstate(invalid="ignore", divide="ignore"):
                    h_std = hw[f"var_{name}"] / (2.0 * np.maximum(std, 1e-300))
                put(f"std_{name}", f"std_{name}", np.minimum(h_std, np.sqrt(hw[f"var_{name}"])))
        for name in plan.quantiles:
            col = _numeric(self.schema, name)
            for p in plan.probabilities:
                key = _qname(p, name)
                if f"{key}_lo" in stats:  # the tree's interval: rounded to its half-width
                    put(key, key, (stats[f"{key}_hi"] - stats[f"{key}_lo"]) / 2.0)
                    continue
                # no interval: rounded to a hundredth of the range
                v = stats[key]
                if plan.rounding is not None:
                    digits = plan.rounding if isinstance(plan.rounding, int) else None
                    v = round_to_noise(v, np.full(v.shape, (col.upper - col.lower) / 100), digits)
                table[key] = v

    def _guarantee(self, plan: GroupPlan) -> Guarantee:
        count_sens = plan.count_sensitivity
        ranges = ", ".join(
            f"{name}: {_numeric(self.schema, name).upper - _numeric(self.schema, name).lower:g}"
            for name in plan.means
        )
        half = "" if plan.relation is Neighbouring.REPLACE_ONE else "half "
        bounds = self._contribution_bounds()
        times = "" if bounds is None else f"{plan.contribution} × the "
        assumptions = (
            [
                "n (the number of rows) is public; neighbours replace one row (a row may move "
                "between groups)"
                if plan.relation is Neighbouring.REPLACE_ONE
                else "n private (add/remove neighbours)"
            ]
            if bounds is None
            else _unit_assumptions(bounds, plan)
        )
        keys_at = len(assumptions)  # the keys' line, then the counts'
        assumptions += [
            f"group keys are the declared domain of ({', '.join(plan.by) or 'whole table'}): "
            f"{plan.n_groups} group(s), empty ones included, never read from the data",
            f"counts: discrete Laplace, L1 sensitivity {count_sens}, ε = {plan.epsilon_count:.6g}",
        ]
        if plan.means:
            assumptions.append(
                "centred sums Σ(clip(x) − midpoint), exact integers in steps of 2^-24 of the "
                f"declared range: discrete Laplace, L1 sensitivity {times or 'the '}{half}range "
                f"({ranges}), ε = {plan.epsilon_mean:.6g} per column; values clipped to "
                "their declared bounds"
            )
            assumptions.append(
                "means and sums are post-processing (mean NaN where the noisy count < 1)"
            )
        if plan.quantiles:
            assumptions.append(self._quantile_assumption(plan))
        assumptions.extend(self._post_processing(plan))
        mechanism = f"{_NAME} (discrete Laplace counts and centred sums)"
        mean_errors = []
        if plan.means:
            sums, count_sd = self._sum_mechanism(plan), self._count_sd(plan)
            mean_errors = [self._mean_error(name, sums, count_sd) for name in plan.means]
        if plan.selection is not None:
            assumptions[keys_at] = self._selection_assumption(plan)
            if plan.selection.method not in _KEYS_ONLY:
                assumptions[keys_at + 1] = (
                    f"counts: the selection's noisy counts ({plan.selection.method}), "
                    f"ε = {plan.epsilon_count:.6g}, δ = {plan.delta:g}"
                )
            mechanism = f"{_NAME} (private keys: {plan.selection.method} selection)"
        return Guarantee.approx(
            float(self.epsilon),
            plan.delta,
            relation=plan.relation,
            mechanism=mechanism,
            assumptions=tuple(assumptions),
            details={
                "by": list(plan.by),
                "means": list(plan.means),
                "groups": plan.n_groups,
                "count_sensitivity": count_sens,
                "sum_sensitivity_ranges": (1.0 if half == "" else 0.5) * plan.contribution,
                "epsilon_count": plan.epsilon_count,
                "epsilon_per_mean": plan.epsilon_mean,
                # each mean's error follows from these (the release note states it)
                "mean_errors": mean_errors,
                "relation": plan.relation.value,
                **self._unit_details(),
                "keys": plan.key_mode,
                "interval": plan.interval,  # the nominal coverage of the intervals (or None)
                **(
                    {"quantile_method": plan.quantile_method, "quantile_parts": plan.quantile_parts}
                    if plan.quantiles
                    else {}
                ),
                "columns": self._column_notes(plan),
                **({"selection": plan.selection.details()} if plan.selection else {}),
            },
        )


def _unit_assumptions(bounds: Any, plan: GroupPlan) -> list[str]:
    """What a person-level guarantee rests on: the unit, the caps and the bounding."""
    unit = bounds.unit
    extra = [
        f"{v} {what}"
        for v, what in (
            (bounds.max_groups, "group(s)"),
            (bounds.max_rows_per_group, "row(s) per group"),
        )
        if v is not None
    ]
    caps = f" in at most {' and '.join(extra)}" if extra else ""
    relation = (
        "the number of persons is public; neighbours replace one person's whole set of rows"
        if plan.relation is Neighbouring.REPLACE_ONE
        else "the numbers of persons and rows are private (add/remove one person's rows)"
    )
    return [
        f"privacy unit: the persons of column {unit.column!r} (read only to bound "
        "contributions, never released); " + relation,
        f"each person keeps at most {unit.max_rows} row(s){caps} (chosen uniformly at random "
        "before any statistic): at most "
        f"{plan.contribution} row(s) of one person reach the statistics",
    ]


def _declared_value(col: Any) -> Any:
    """One value ``encode`` takes for ``col`` without a count: its first category, or its
    lower bound (for a date, the first whole day in its bounds, as ISO text)."""
    if isinstance(col, CategoricalColumn):
        return col.categories[0]
    if col.date:
        day = np.datetime64(0, "D") + np.timedelta64(math.ceil(col.lower), "D")
        return str(day)
    return col.lower


def unread_filled(schema: Schema, plan: GroupPlan, data: Any) -> Any:
    """``data`` with the encoded columns ``plan`` does not read set to a declared value
    (:meth:`GroupByPublisher.checked_table`)."""
    if not hasattr(data, "assign") or not hasattr(data, "columns"):
        return data
    read = {*plan.by, *plan.means, *plan.quantiles}
    fill = {c.name: _declared_value(c) for c in schema.columns if c.name not in read}
    label = schema.label
    if label is not None and label.name not in read:
        fill[label.name] = label.classes[0]
    present = set(data.columns)
    fill = {name: value for name, value in fill.items() if name in present}
    return data.assign(**fill) if fill else data


def _qname(p: float, name: str) -> str:
    """The column of the ``p``-quantile of ``name``: ``p50_age`` for the median."""
    return f"p{round(p * 100, 10):g}_{name}"


def keyed_statistics(
    schema: Schema,
    plan: GroupPlan,
    rows: KeyedRows,
    y: Any,
    missing: dict[str, int] | None = None,
) -> KeyedAggregate:
    """The exact per-key statistics of encoded rows (a table, or one partition of it):
    counts, centred sums, sums of squares and the quantile columns' grid histograms, keyed
    by each row's declared level or open key text (:func:`row_labels`), and with
    ``rows.persons`` (DP-SIPS under a privacy unit) the distinct (person, key) pairs of the
    keys not declared. What a release adds its noise to; nothing here is released (the
    report reads it, custodian only)."""
    X, labels = row_labels(schema, plan, rows, y)
    blocks = schema.layout().blocks
    k = len(plan.means)
    sums = np.zeros((k + len(plan.variances), X.shape[0]), dtype=np.int64)
    for j, name in enumerate(plan.means):
        sums[j] = centred_units(_numeric(schema, name), X[:, blocks[name].start])
    for j, name in enumerate(plan.variances):  # squares ride along as more sums
        sums[k + j] = squared_units(_numeric(schema, name), X[:, blocks[name].start])
    cells = [column_grid_cells(schema, name, X) for name in plan.quantiles]
    agg = KeyedAggregate.of_rows(labels, sums, cells, missing)
    if rows.persons is None:
        return agg
    pairs = person_key_pairs(rows.persons[rows.keep], labels, plan.levels)
    return dataclasses.replace(agg, pairs=pairs)


def row_labels(
    schema: Schema, plan: GroupPlan, rows: KeyedRows, y: Any
) -> tuple[NDArray[np.float64], dict[str, NDArray[Any]]]:
    """The rows with their open keys present, and each one's key: its level (declared
    ``by`` columns) or key text (open columns), per ``by`` column."""
    keep = rows.keep
    X = rows.X if keep.all() else rows.X[keep]
    if y is not None and not keep.all():
        y = np.asarray(y)[keep]
    codes = column_codes(schema, plan, X, y)
    labels: dict[str, Any] = {}
    for j, name in enumerate(plan.by):
        if name in plan.open_by:
            labels[name] = rows.open_keys[name][keep]
        else:
            labels[name] = np.asarray(plan.levels[j], dtype=object)[codes[j]]
    return X, labels


def column_grid_cells(schema: Schema, name: str, X: NDArray[np.float64]) -> NDArray[np.int64]:
    """Each encoded row's point of the quantile grid of the numeric column ``name``."""
    col = _numeric(schema, name)
    values = col.from_unit(X[:, schema.layout().blocks[name].start])
    return grid_cells(values, col.lower, col.upper)


def group_codes(schema: Schema, plan: GroupPlan, X: NDArray[np.float64], y: Any) -> Any:
    """The group index of every encoded row (row-major over the ``by`` columns' levels)."""
    n = X.shape[0]
    if not plan.by:
        return np.zeros(n, dtype=np.int64)
    codes = column_codes(schema, plan, X, y)
    sizes = tuple(len(lv) for lv in plan.levels)
    return np.ravel_multi_index(tuple(codes), sizes).astype(np.int64)


def key_groups(
    schema: Schema, plan: GroupPlan, frame: pd.DataFrame, X: NDArray[np.float64], y: Any
) -> tuple[NDArray[np.int64], NDArray[np.uint64]]:
    """keys="private": each row's key as a code (equal keys, equal codes) and a 64-bit
    fingerprint of the key's texts (a function of the key alone), for the per-person caps.

    A row whose open key is missing and not imputed gets a key of its own (it is left out
    of every statistic later, or refused)."""
    codes = column_codes(schema, plan, X, y)
    keys, keep = open_key_values(schema, frame, plan.open_by, "mask")
    parts = {}
    for j, name in enumerate(plan.by):
        if name in plan.open_by:
            parts[f"k{j}"] = np.where(keep, keys[name], "\x00missing")
        else:
            parts[f"k{j}"] = np.asarray(codes[j], dtype=np.int64).astype(str)
    table = pd.DataFrame(parts, index=range(len(frame)))
    prints = pd.util.hash_pandas_object(table, index=False).to_numpy(np.uint64)
    code, _ = pd.MultiIndex.from_frame(table).factorize()  # exact: no collision merges keys
    return code.astype(np.int64), prints


def column_codes(schema: Schema, plan: GroupPlan, X: NDArray[np.float64], y: Any) -> list[Any]:
    """Each ``by`` column's level index of every encoded row (an empty array for an open
    column: its keys are texts, read apart)."""
    codes: list[Any] = []
    label = schema.label.name if schema.label is not None else None
    blocks = schema.layout().blocks
    for name in plan.by:
        if name in plan.open_by:
            codes.append(np.zeros(0, dtype=np.int64))
            continue
        col = schema.column(name) if name != label else None
        if name == label:
            codes.append(np.asarray(y, dtype=np.int64))
        elif isinstance(col, NumericColumn):  # its declared intervals; a cut opens the next
            cuts = col.to_unit(np.asarray(col.cuts, dtype=np.float64))
            u = X[:, blocks[name].start]
            codes.append(np.searchsorted(cuts, u, side="right").astype(np.int64))
        else:
            codes.append(np.argmax(X[:, blocks[name]], axis=1).astype(np.int64))
    return codes


def centred_units(col: NumericColumn, u: NDArray[np.float64]) -> NDArray[np.int64]:
    """Each encoded value of ``col`` as an integer in ``[−UNIT/2, UNIT/2]``: its clipped
    position in the declared range in steps of ``2⁻²⁴`` of the range, minus the midpoint."""
    u = np.clip(np.asarray(u, dtype=np.float64), 0.0, 1.0)
    if col.scale != "linear":  # the position of the value itself, not of its log
        span = col.upper - col.lower
        u = np.clip((col.from_unit(u) - col.lower) / span, 0.0, 1.0)
    q = np.rint(u * UNIT).astype(np.int64)  # in [0, UNIT]: u*UNIT is exact, rint exact
    return q - HALF_UNIT


def group_statistics(schema: Schema, plan: GroupPlan, X: NDArray[np.float64], y: Any) -> Any:
    """The exact :class:`GroupStatistics` of encoded rows (integers, summed exactly)."""
    g = group_codes(schema, plan, X, y)
    G = plan.n_groups
    counts = np.bincount(g, minlength=G).astype(np.int64)
    sums = np.zeros((len(plan.means), G), dtype=np.int64)
    blocks = schema.layout().blocks
    for j, name in enumerate(plan.means):
        col = _numeric(schema, name)
        c = centred_units(col, X[:, blocks[name].start])
        for start in range(0, len(c), _CHUNK_ROWS):  # float partial sums < 2**53: exact
            part = slice(start, start + _CHUNK_ROWS)
            sums[j] += np.rint(np.bincount(g[part], weights=c[part], minlength=G)).astype(np.int64)
    squares = np.zeros((len(plan.variances), G), dtype=np.int64)
    for j, name in enumerate(plan.variances):
        sq = squared_units(_numeric(schema, name), X[:, blocks[name].start])
        for start in range(0, len(sq), _CHUNK_ROWS // 2**10):  # partial sums < 2**50
            part = slice(start, start + _CHUNK_ROWS // 2**10)
            squares[j] += np.rint(np.bincount(g[part], weights=sq[part], minlength=G)).astype(
                np.int64
            )
    cells = []
    for name in plan.quantiles:  # each group's histogram on the column's quantile grid
        col = _numeric(schema, name)
        values = col.from_unit(X[:, blocks[name].start])
        cells.append(CellCounts.of(g, grid_cells(values, col.lower, col.upper)))
    return GroupStatistics(counts, sums, squares, tuple(cells))


def squared_units(col: NumericColumn, u: NDArray[np.float64]) -> NDArray[np.int64]:
    """Each encoded value's squared offset from the midpoint, in ``(2⁻¹²·range)²``: the
    clipped position on a ``2⁻¹²`` grid of the range, centred, squared (``≤ 2²²``)."""
    c = centred_units(col, u)  # exact integer in [−2²³, 2²³]
    q = np.rint(c / (UNIT // SQ_UNIT)).astype(np.int64)  # in [−SQ_HALF, SQ_HALF]
    return q * q
