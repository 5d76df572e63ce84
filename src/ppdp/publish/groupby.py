"""Private counts, sums and means by group: :class:`GroupByPublisher`.

The everyday query "count the rows and average age and income per region and sex", with
one ε. Groups are every combination of the declared categories of the ``by`` columns
(empty groups included: the keys never come from the data). Per group, ``fit`` releases a
discrete-Laplace count and, for each ``means`` column, a discrete-Laplace *centred* sum
computed exactly in integers; means and sums are post-processing of those. The privacy
argument is in ``docs/proofs/groupby.md``; the user page is ``docs/groupby.md``.
"""

from __future__ import annotations

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

from ppdp._params import Rule, epsilon_rules
from ppdp._validation import check_real
from ppdp.budget import Guarantee, Neighbouring
from ppdp.data import Schema
from ppdp.data.columns import CategoricalColumn, Category, NumericColumn
from ppdp.data.names import near_names
from ppdp.exceptions import DataValidationError, ParameterError, ParameterTypeError
from ppdp.mechanisms import DiscreteLaplaceMechanism
from ppdp.publish._base import Charge, Publisher, Release, new_folder
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
#: The most groups (cells of the declared domain of ``by``).
MAX_GROUPS = 2**22
#: Rows per exact chunk of the float ``bincount`` (partial sums stay below 2⁵³).
_CHUNK_ROWS = 2**28


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

    def __add__(self, other: GroupStatistics) -> GroupStatistics:
        return GroupStatistics(self.counts + other.counts, self.sums + other.sums)


@dataclass(frozen=True)
class GroupByParams:
    """The validated parameters of :class:`GroupByPublisher` (built once per ``fit``)."""

    allow_large_epsilon: bool
    epsilon: float
    relation: Neighbouring
    schema: Schema
    by: tuple[str, ...]
    means: tuple[str, ...]
    count_share: float | None
    max_groups: int | None
    max_rows_per_group: int | None
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
        if name not in schema.column_names:
            raise ParameterError(
                f"by ({name!r}) is not a column of the schema; declared categorical columns: "
                f"{', '.join(map(repr, categorical)) or 'none'}"
                + near_names([name], categorical, where="the schema")
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
    if not checked["means"]:
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
        else _levels_of(schema.column(name))
        for name in by
    )
    n_groups = math.prod(len(lv) for lv in levels)
    if n_groups > MAX_GROUPS:
        raise ParameterError(
            f"by ({', '.join(by)}) spans {n_groups:,} groups (the product of the declared "
            f"categories); at most {MAX_GROUPS:,} are allowed: group by fewer columns"
        )
    eps_count, eps_mean = _split(checked["epsilon"], len(means), checked["count_share"])
    return GroupPlan(
        by, levels, means, checked["relation"], eps_count, eps_mean, _contribution(checked)
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
    Rule("by", _check_by),
    Rule("means", _check_means),
    Rule("count_share", _check_share),
    Rule("max_groups", _check_cap("max_groups")),
    Rule("max_rows_per_group", _check_cap("max_rows_per_group")),
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
        group (L∞), chosen uniformly at random.
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
    Parquet dataset or a Dask DataFrame gives exactly the in-memory release for a seed;
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
        return ContributionBounds(
            unit,
            max_groups=params.max_groups,
            max_rows_per_group=params.max_rows_per_group,
            group_fn=functools.partial(group_codes, self.schema, params.plan),
        )

    def _unit_details(self) -> dict[str, Any]:
        """``{"privacy_unit": {...}}`` for the ledger and the guarantee (empty without)."""
        bounds = self._contribution_bounds()
        return {} if bounds is None else {"privacy_unit": bounds.ledger_details()}

    def _count_mechanism(self, plan: GroupPlan) -> DiscreteLaplaceMechanism:
        return self._mechanism(plan.epsilon_count, plan.count_sensitivity, plan, "the counts")

    def _sum_mechanism(self, plan: GroupPlan) -> DiscreteLaplaceMechanism:
        return self._mechanism(plan.epsilon_mean, plan.sum_sensitivity, plan, "each mean column")

    def _mechanism(
        self, eps: float, sensitivity: int, plan: GroupPlan, what: str
    ) -> DiscreteLaplaceMechanism:
        try:
            return DiscreteLaplaceMechanism(
                epsilon=eps,
                sensitivity=sensitivity,
                dimension=plan.n_groups,
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
        if plan.means:
            sums = self._sum_mechanism(plan)
            for name in plan.means:
                col = _numeric(self.schema, name)
                sum_details = {
                    "query": f"centred sums of {name} per group, in units of 2**-{QUANT_BITS} "
                    f"of its declared range [{col.lower:g}, {col.upper:g}]",
                    **sums.ledger_details(),
                    "units": f"2**-{QUANT_BITS} of the declared range of {name}",
                    "noise_scale_in_column_units": sums.scale * (col.upper - col.lower) / UNIT,
                    **self._unit_details(),
                }
                charges.append(Charge(sums.event, f"{_NAME}: sums of {name}", sum_details))
        return charges

    # -- data -----------------------------------------------------------------------------

    def _encode(self, df: pd.DataFrame, on_invalid: str = "raise") -> tuple[Any, Any]:
        X, y = self.schema.encode(df, on_invalid=on_invalid)
        self._check_rows(X.shape[0])
        return X, y

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

    def _partition_statistics(self, X: NDArray[np.float64], y: Any) -> GroupStatistics:
        return group_statistics(self.schema, self._params().plan, X, y)

    def _check_scan(self, scan: Any, on_invalid: str) -> None:
        self._check_rows(scan.n_rows)

    def _check_output(self, output: Any, name: str) -> Path | None:
        """``output`` is optional for distributed input: a new folder that ``fit`` writes
        the released table to, as Parquet (what ``ppdp publish groupby`` does with a
        Parquet dataset)."""
        return None if output is None else new_folder(output, "output")

    # -- release --------------------------------------------------------------------------

    def _release(self, X: Any, y: Any, source: RandomSource, charges: list[Charge]) -> Release:
        plan = self._params().plan
        return self._publish(plan, group_statistics(self.schema, plan, X, y), source)

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
        release = self._publish(self._params().plan, scan.value, source)
        if output is not None:
            from ppdp.data.distributed import write_parquet_dataset

            write_parquet_dataset([release.data], output, scheduler=scheduler)
        return release

    def _noisy(
        self, plan: GroupPlan, stats: GroupStatistics, source: RandomSource
    ) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """The noisy counts, then each column's noisy centred sums (integers), in that order
        of draws; each vector may hold several stacked releases (the audit's batches)."""
        factor = self._noise_factor()
        counts_mech = self._count_mechanism(plan)
        counts = counts_mech._release(
            np.asarray(stats.counts, dtype=np.int64).reshape(-1),
            source,
            scale=counts_mech.scale * factor,
        ).reshape(np.shape(stats.counts))
        sums = np.zeros(np.shape(stats.sums), dtype=np.int64)
        if plan.means:
            sums_mech = self._sum_mechanism(plan)
            for j in range(len(plan.means)):
                exact = np.clip(np.asarray(stats.sums[j], dtype=np.int64), -SUM_LIMIT, SUM_LIMIT)
                sums[j] = sums_mech._release(
                    exact.reshape(-1), source, scale=sums_mech.scale * factor
                ).reshape(exact.shape)
        return counts, sums

    def _publish(self, plan: GroupPlan, stats: GroupStatistics, source: RandomSource) -> Release:
        noisy_counts, noisy_sums = self._noisy(plan, stats, source)
        table = plan.keys()
        counts = noisy_counts.astype(np.float64)
        table["count"] = noisy_counts
        statistics: dict[str, NDArray[np.float64]] = {"count": counts}
        sum_sd = math.sqrt(self._sum_mechanism(plan).variance()) if plan.means else 0.0
        for j, name in enumerate(plan.means):
            col = _numeric(self.schema, name)
            span = col.upper - col.lower
            centre = col.lower + span / 2.0
            centred = noisy_sums[j].astype(np.float64) * (span / UNIT)
            with np.errstate(divide="ignore", invalid="ignore"):
                mean = np.clip(centre + centred / counts, col.lower, col.upper)
            mean = np.where(counts >= 1.0, mean, np.nan)
            table[f"mean_{name}"] = mean
            # How far the mean may be from the group's: the sum noise's standard deviation
            # over the released count (public quantities only: post-processing).
            table[f"mean_{name}_sd"] = np.where(
                counts >= 1.0, sum_sd * (span / UNIT) / np.maximum(counts, 1.0), np.nan
            )
            statistics[f"sum_{name}"] = centred + centre * counts
            statistics[f"mean_{name}"] = mean
        return Release(
            data=table, encoded=None, guarantee=self._guarantee(plan), statistics=statistics
        )

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
        return Guarantee.pure(
            float(self.epsilon),
            relation=plan.relation,
            mechanism=f"{_NAME} (discrete Laplace counts and centred sums)",
            assumptions=tuple(assumptions),
            details={
                "by": list(plan.by),
                "means": list(plan.means),
                "groups": plan.n_groups,
                "count_sensitivity": count_sens,
                "sum_sensitivity_ranges": (1.0 if half == "" else 0.5) * plan.contribution,
                "epsilon_count": plan.epsilon_count,
                "epsilon_per_mean": plan.epsilon_mean,
                "relation": plan.relation.value,
                **self._unit_details(),
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


def group_codes(schema: Schema, plan: GroupPlan, X: NDArray[np.float64], y: Any) -> Any:
    """The group index of every encoded row (row-major over the ``by`` columns' levels)."""
    n = X.shape[0]
    if not plan.by:
        return np.zeros(n, dtype=np.int64)
    codes = []
    label = schema.label.name if schema.label is not None else None
    blocks = schema.layout().blocks
    for name in plan.by:
        col = schema.column(name) if name != label else None
        if name == label:
            codes.append(np.asarray(y, dtype=np.int64))
        elif isinstance(col, NumericColumn):  # its declared intervals; a cut opens the next
            cuts = col.to_unit(np.asarray(col.cuts, dtype=np.float64))
            u = X[:, blocks[name].start]
            codes.append(np.searchsorted(cuts, u, side="right").astype(np.int64))
        else:
            codes.append(np.argmax(X[:, blocks[name]], axis=1).astype(np.int64))
    sizes = tuple(len(lv) for lv in plan.levels)
    return np.ravel_multi_index(tuple(codes), sizes).astype(np.int64)


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
    return GroupStatistics(counts, sums)
