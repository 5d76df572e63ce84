"""Synthetic persons: :class:`~ppdp.publish.TableSynthesizer` on a schema whose privacy unit
comes with ``per_person`` columns.

The fit is two models, planned together before the data are read and charged as one
ρ-zCDP event (``docs/proofs/table-synth.md`` §"Synthetic persons"):

- the **person model**, fitted to the *person table*: one row per person, holding the
  per-person columns (read from the person's most frequent combination of them) and the
  number of rows the person keeps after bounding, a category ``1..max_rows`` (its 1-way
  table is the rows-per-person histogram). Each person is one row of that table, so its
  tables are calibrated for one row, at :data:`PERSON_SHARE` of ρ;
- the **row model**, the ordinary fit on the bounded rows (per-person columns included),
  calibrated per person (``k`` rows: ``ρ/k²`` per row) on the rest of ρ.

Sampling (post-processing): draw persons from the person model; decode their per-person
values once; draw each person's rows from the row model *conditioned on* the person's
per-person codes (exact inference on the tree, or a slice of the joint table), so the rows
keep their relation to the person's attributes; write the person's values into every row
and a synthetic id (``P000001``...) in the unit's column.

With ``person_levels`` (numeric columns whose persons keep a persistent level), both models
are fitted on :func:`fit_schema`: each such column's person median is one more (hidden)
per-person column and the column holds each row's deviation from it (:func:`with_levels`, a
per-person map of the bounded rows, so every sensitivity above holds); a synthetic row's
value is its person's level plus its deviation (:func:`from_levels`), the level dropped.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ppdp import noise
from ppdp.accounting.events import ZCDP, Gaussian
from ppdp.data import Schema
from ppdp.data.columns import CategoricalColumn, NumericColumn
from ppdp.data.encoding import CUSTODIAN_LOGGER
from ppdp.exceptions import ParameterError
from ppdp.mechanisms.grid import UndrawableNoiseError, too_small_epsilon
from ppdp.publish._base import Release
from ppdp.publish.table_synth_model import (
    MAX_TABLE_SIGMA,
    Bins,
    JointModel,
    MarginalCounts,
    Model,
    _largest_remainder,
    _project_rows,
    measure_table,
    sigma_for,
)

if TYPE_CHECKING:
    from ppdp.publish.table_synth import Plan, TableSynthesizer
    from ppdp.random import RandomSource

__all__ = [
    "DEVIATION",
    "MAX_LEVEL_COLUMNS",
    "PERSON_SHARE",
    "PersonsModel",
    "PersonsPlan",
    "fit_schema",
    "persons_plan",
    "row_share",
]

#: Share of ρ spent on the persons: the rows-per-person histogram and the person model
#: (:data:`HISTOGRAM_SHARE` of ρ, then the rest of this share); the row model spends the rest.
PERSON_SHARE = 0.3
#: Share of ρ spent on the rows-per-person histogram (within :data:`PERSON_SHARE`).
HISTOGRAM_SHARE = 0.1

#: The most columns ``person_levels`` may name (each adds a column to both models).
MAX_LEVEL_COLUMNS = 3
#: With ``person_levels``, the row model's column holds each row's deviation from its
#: person's level, clamped to ``±DEVIATION`` of the declared range (the column's encoding):
#: a window as wide as the range, so its ``n_bins`` bins are as wide as the column's own.
#: (``benchmarks/synth/persons.md``: ±0.125 and ±0.25 put ln_wage's within-person share
#: of variance below the panel's; ±0.5 within 0.04 of it.)
DEVIATION = 0.5

_custodian_log = logging.getLogger(CUSTODIAN_LOGGER)


# -- person levels (public: the schema and the parameters) ----------------------------------


def check_levels_value(value: Any) -> tuple[str, ...]:
    """``person_levels``: None, a column name or a sequence of names (checked against the
    schema by :func:`fit_schema`)."""
    if value is None:
        return ()
    names = (value,) if isinstance(value, str) else value
    if not isinstance(names, (list, tuple)) or not all(isinstance(v, str) for v in names):
        raise ParameterError(
            f"person_levels ({value!r}) must be None, a column name or a list of names, "
            "e.g. ['ln_wage']"
        )
    if len(set(names)) != len(names):
        raise ParameterError(f"person_levels ({list(names)!r}) names a column twice")
    if len(names) > MAX_LEVEL_COLUMNS:
        raise ParameterError(
            f"person_levels ({list(names)!r}) names {len(names)} columns; at most "
            f"{MAX_LEVEL_COLUMNS} (each adds a column to the person model and the row model)"
        )
    return tuple(names)


def level_names(schema: Schema, levels: tuple[str, ...]) -> tuple[str, ...]:
    """The hidden level columns' names (``<column>_level``, underscores added until free)."""
    taken = set(schema.column_names) | {schema.privacy_unit.column if schema.privacy_unit else ""}
    if schema.label is not None:
        taken.add(schema.label.name)
    out = []
    for name in levels:
        hidden = f"{name}_level"
        while hidden in taken:
            hidden += "_"
        taken.add(hidden)
        out.append(hidden)
    return tuple(out)


def fit_schema(schema: Any, levels: tuple[str, ...]) -> Any:
    """The schema the models are fitted on: ``schema``, where each column of ``levels``
    holds a row's deviation from its person's level (numeric, ``±DEVIATION`` in the column's
    encoding), plus one hidden ``per_person`` numeric column per name (the person's level,
    the column's encoding on ``[0, 1]``), after the features.

    Each names a numeric (not date) feature column that is not ``per_person``, of a schema
    that declares ``per_person`` columns (refused in one line otherwise)."""
    if not levels or not isinstance(schema, Schema):
        return schema
    if not schema.per_person:
        raise ParameterError(
            f"person_levels ({list(levels)!r}) needs a schema with per_person columns (and a "
            "privacy unit): levels are kept for synthetic persons only"
        )
    for name in levels:
        col = schema.column(name) if name in {c.name for c in schema.columns} else None
        if not isinstance(col, NumericColumn) or col.date or name in schema.per_person:
            raise ParameterError(
                f"person_levels names {name!r}, which is not a numeric feature column of the "
                "schema that varies within a person (numeric, not a date, not per_person, "
                "not the label)"
            )
    hidden = level_names(schema, levels)
    columns = tuple(
        NumericColumn(c.name, -DEVIATION, DEVIATION) if c.name in levels else c
        for c in schema.columns
    )
    extra = tuple(NumericColumn(h, 0.0, 1.0) for h in hidden)
    return dataclasses.replace(
        schema, columns=(*columns, *extra), per_person=(*schema.per_person, *hidden)
    )


def with_levels(
    X: NDArray[np.float64],
    schema: Schema,
    levels: tuple[str, ...],
    person: NDArray[np.int64],
) -> NDArray[np.float64]:
    """The encoded rows of ``schema`` in the encoding of :func:`fit_schema`: for each column
    of ``levels``, the person's level ``m_p`` (the median of the column's encoding over the
    person's bounded rows) appended, and the column's block replaced by the row's deviation
    ``v − m_p``, clamped to ``±DEVIATION`` and encoded. A function of the person's multiset
    of rows, whatever their order or the other persons."""
    if not levels:
        return X
    out = X.copy()
    medians = []
    for name in levels:
        at = schema.blocks[name].start
        v = X[:, at]
        median = pd.Series(v).groupby(person).median().to_numpy()[person]
        deviation = np.clip(v - median, -DEVIATION, DEVIATION)
        out[:, at] = (deviation + DEVIATION) / (2.0 * DEVIATION)
        medians.append(median)
    return np.column_stack([out, *medians])


def from_levels(
    Z: NDArray[np.float64],
    schema: Schema,
    levels: tuple[str, ...],
    level: NDArray[np.float64],
) -> NDArray[np.float64]:
    """Post-processing, the inverse of :func:`with_levels` on synthetic rows: ``schema``'s
    encoding of rows drawn in :func:`fit_schema`'s, each column of ``levels`` its person's
    level (``level``: one column per name, one row per row) plus the row's deviation,
    clamped to ``[0, 1]``; the hidden columns dropped."""
    out = np.array(Z[:, : schema.n_features], dtype=np.float64)
    for j, name in enumerate(levels):
        at = schema.blocks[name].start
        deviation = out[:, at] * (2.0 * DEVIATION) - DEVIATION
        out[:, at] = np.clip(level[:, j] + deviation, 0.0, 1.0)
    return out


@dataclass(frozen=True)
class PersonsPlan:
    """What a synthetic-persons fit measures on the person table (public, from the schema).

    Attributes
    ----------
    schema : Schema
        The person table's schema: the per-person columns, then :attr:`rows_column`.
    plan : Plan
        The person model's plan at :data:`PERSON_SHARE` of ρ, one row per person.
    attributes : tuple of int
        The per-person columns' positions in the row model's columns.
    rows_column : str
        The person table's column of rows per person (categories ``1..max_rows``).
    sigma_histogram : float
        σ of the rows-per-person histogram (one count per person: L2 sensitivity √2 under
        replace-one, 1 under add/remove).
    levels : tuple of (str, str)
        ``person_levels``: each column whose persons' levels are kept, and its hidden level
        column (a per-person column of both models, dropped from the output).
    """

    schema: Schema
    plan: Plan
    attributes: tuple[int, ...]
    rows_column: str
    sigma_histogram: float
    levels: tuple[tuple[str, str], ...] = ()

    def spent_rho(self) -> float:
        """ρ of the person model's draws and the histogram's (one row per person: the
        row-level costs)."""
        return self.plan.spent_rho() + self.plan.table_sensitivity**2 / (
            2.0 * self.sigma_histogram**2
        )

    def event(self, rows: ZCDP) -> ZCDP:
        """The fit's ledger event: the row model's draws and the person model's, under the
        whole fit's ρ (the event refuses draws above it)."""
        from ppdp.publish.table_synth import zcdp_event

        own = zcdp_event(self.plan, rows.epsilon, rows.delta).events
        histogram = Gaussian(l2_sensitivity=self.plan.table_sensitivity, sigma=self.sigma_histogram)
        return ZCDP(
            rho=rows.rho,
            epsilon=rows.epsilon,
            delta=rows.delta,
            events=(*own, histogram, *rows.events),
        )

    def details(self) -> dict[str, Any]:
        """JSON-safe facts for the ledger and the guarantee."""
        hidden = {h for _, h in self.levels}
        levels = {"person_levels": dict(self.levels), "deviation": DEVIATION} if self.levels else {}
        return {
            "per_person": [c for c in self.schema.column_names[:-1] if c not in hidden],
            **levels,
            "rho_share": PERSON_SHARE,
            "histogram_rho_share": HISTOGRAM_SHARE,
            "sigma_rows_per_person_histogram": self.sigma_histogram,
            "what": "a person table (one row per person: the per-person columns and the rows "
            "kept, 1..max_rows) fitted at the row-level calibration; each person's rows drawn "
            "from the row model given the person's columns",
            "person_model": self.plan.details(),
        }


def row_share(schema: Schema, checked: Mapping[str, Any]) -> float:
    """The share of ρ the row tables spend: 1, or ``1 − PERSON_SHARE`` with per-person
    columns (refusing, in one line, what synthetic persons do not support yet)."""
    if not schema.per_person:
        return 1.0
    if checked["binning"] not in ("equal-width", "auto"):  # "auto": equal widths here
        raise ParameterError(
            f"binning ({checked['binning']!r}) cannot go with per_person columns yet: the "
            "person model and the row model must cut the per-person columns alike; use "
            "binning='equal-width' or 'auto' (equal widths with per_person; declared cuts "
            "are fine)"
        )
    return 1.0 - PERSON_SHARE


def _rows_name(schema: Schema) -> str:
    taken = set(schema.column_names) | {schema.privacy_unit.column if schema.privacy_unit else ""}
    name = "rows_per_person"
    while name in taken:
        name += "_"
    return name


def person_schema(schema: Schema) -> tuple[Schema, str]:
    """The person table's schema (per-person columns, then the rows column) and that
    column's name."""
    unit = schema.privacy_unit
    assert unit is not None
    name = _rows_name(schema)
    rows = CategoricalColumn(name, tuple(range(1, unit.max_rows + 1)))
    columns = tuple(schema.column(c) for c in schema.per_person)
    return Schema(columns=(*columns, rows)), name


def persons_plan(schema: Schema, checked: Mapping[str, Any]) -> PersonsPlan | None:
    """The person model's plan (None without per-person columns), from the checked
    parameters: the same method, bins, relation, decoding and pair check as the rows."""
    if not schema.per_person:
        return None
    from ppdp.publish.table_synth import _build_plan, _check_cells

    table, rows_column = person_schema(schema)
    n_bins = checked["n_bins"]
    bins = Bins.from_schema(table, n_bins)
    args = (checked["method"], checked["delta"], bins, n_bins, checked["relation"])
    model_share = PERSON_SHARE - HISTOGRAM_SHARE
    rest = ("equal-width", (), checked["decode"], checked["check_pairs"], 1, model_share)
    try:
        plan = _build_plan(args[0], checked["epsilon"], *args[1:], *rest)
    except UndrawableNoiseError as exc:

        def feasible(eps: float) -> bool:
            try:
                _build_plan(args[0], eps, *args[1:], *rest)
            except UndrawableNoiseError:
                return False
            return True

        raise too_small_epsilon("TableSynthesizer", checked["epsilon"], exc, feasible) from None
    _check_cells(plan, n_bins)
    # The histogram's σ: its share of ρ, a hair less (the shares' float sum stays below ρ).
    budget = plan.rho * HISTOGRAM_SHARE * (1.0 - 2.0**-40)
    sigma = math.nextafter(sigma_for(budget, plan.table_sensitivity), math.inf)
    if not sigma <= MAX_TABLE_SIGMA:
        raise ParameterError(
            f"epsilon ({checked['epsilon']!r}) is too small for the rows-per-person histogram "
            f"(σ = {sigma:.3g} > {MAX_TABLE_SIGMA:.3g})"
        )
    row_bins: Bins = checked["bins"]
    attributes = tuple(row_bins.names.index(c) for c in schema.per_person)
    # The two models code the per-person columns alike (same declarations, same n_bins).
    assert bins.sizes[:-1] == tuple(row_bins.sizes[a] for a in attributes)
    named = checked["person_levels"]
    hidden = schema.per_person[len(schema.per_person) - len(named) :]  # appended last
    levels = tuple(zip(named, hidden, strict=True))
    return PersonsPlan(table, plan, attributes, rows_column, sigma, levels)


# -- the person table (private) -------------------------------------------------------------


def person_index(df: pd.DataFrame, schema: Schema) -> NDArray[np.int64]:
    """Each (bounded) row's person, ``0 … persons − 1`` (ids compared as text)."""
    unit = schema.privacy_unit
    assert unit is not None
    codes, _ = pd.factorize(df[unit.column].astype(str), sort=False)
    return codes.astype(np.int64)


def person_values(schema: Schema, X: NDArray[np.float64]) -> NDArray[np.float64]:
    """The per-person columns' blocks of the encoded rows (in the person table's encoding)."""
    blocks = schema.layout().blocks
    return np.hstack([X[:, blocks[name]] for name in schema.per_person])


def person_rows(
    person: NDArray[np.int64],
    codes: NDArray[np.int64],
    attributes: tuple[int, ...],
    values: NDArray[np.float64],
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """For each person, a representative row and the number of rows the person keeps.

    The representative holds the person's most frequent per-person codes, ties broken by the
    smallest codes, then the smallest encoded ``values``: a function of the person's multiset
    of rows (not of their order), so the person table is a per-person map."""
    n = person.size
    frame = pd.DataFrame(codes[:, list(attributes)])
    frame.insert(0, "_p", person)
    same = frame.groupby(list(frame.columns), sort=False)["_p"].transform("size").to_numpy()
    keys = [*values.T[::-1], *codes[:, list(attributes)].T[::-1], -same, person]
    order = np.lexsort(keys)
    first = np.ones(n, dtype=bool)
    first[1:] = person[order][1:] != person[order][:-1]
    rep = order[first]  # one per person, in person order
    varying = int((same[rep] < np.bincount(person)[person[rep]]).sum())
    if varying:  # custodian only: a data-dependent count, never released
        _custodian_log.info(
            "per_person columns vary within %d person(s); each person's most frequent "
            "combination is synthesised (custodian only, not released)",
            varying,
        )
    return rep, np.bincount(person, minlength=int(person.max()) + 1 if n else 0)


def person_matrix(
    values: NDArray[np.float64], rows: NDArray[np.int64], k: int
) -> NDArray[np.float64]:
    """The person table in its schema's encoding: the representatives' per-person blocks
    (encoded alike: the same declarations), then the one-hot of the rows kept (1..k)."""
    return np.hstack([values, np.eye(k)[rows - 1]])


# -- release ---------------------------------------------------------------------------------


def release_persons(
    synth: TableSynthesizer,
    persons: PersonsPlan,
    X: NDArray[np.float64],
    y: NDArray[np.int64] | None,
    person: NDArray[np.int64],
    source: RandomSource,
) -> Release:
    """Fit the row model and the person model (every private step), then draw persons."""
    from ppdp.publish.table_synth import TableSynthesizer, _sub_bin_histograms

    schema, plan = synth._params().fit_schema, synth._params().plan
    codes = plan.bins.codes(schema, X, y)
    counts = MarginalCounts.of(codes, plan.bins.sizes, plan.counted_cliques())
    rows_release = synth._fit_model(plan, counts, source)
    sub_bins = _sub_bin_histograms(schema, plan, X)
    synth._plan, decoding = synth._measure_decoding(synth._plan, sub_bins, source)

    values = person_values(schema, X)
    rep, rows = person_rows(person, codes, persons.attributes, values)
    del codes
    Xp = person_matrix(values[rep], rows, schema.privacy_unit.max_rows)  # type: ignore[union-attr]
    helper = TableSynthesizer(
        synth.epsilon,
        persons.schema,
        delta=synth.delta,
        method=synth.method,
        n_bins=synth.n_bins,
        relation=synth.relation,
        decode=synth.decode,
        check_pairs=synth.check_pairs,
    )
    pplan = persons.plan
    pcounts = MarginalCounts.of(
        pplan.bins.codes(persons.schema, Xp, None), pplan.bins.sizes, pplan.counted_cliques()
    )
    person_release = helper._fit_model(pplan, pcounts, source)
    helper._plan, person_decoding = helper._measure_decoding(
        helper._plan, _sub_bin_histograms(persons.schema, pplan, Xp), source
    )
    last = len(pplan.bins.sizes) - 1  # the rows column, categories 1..k
    exact = np.bincount(rows - 1, minlength=pplan.bins.sizes[last]).astype(np.float64)
    histogram = measure_table(exact, (last,), persons.sigma_histogram, source)
    model = PersonsModel(synth, helper, persons, histogram.values)
    synth._persons_model = model
    data = model.sample(model.n, source)
    statistics = {
        f"noisy-rows-per-person:{persons.rows_column}": histogram.values,
        **decoding,
        **rows_release.statistics,
        **{f"persons:{k}": v for k, v in {**person_decoding, **person_release.statistics}.items()},
    }
    return Release(
        data=data,
        encoded=None,
        guarantee=_guarantee(rows_release, person_release, persons, model.n),
        statistics=statistics,
    )


def _guarantee(rows: Release, people: Release, persons: PersonsPlan, n: int) -> Any:
    g = rows.guarantee
    declared = persons.details()["per_person"]
    kept = (
        f"; each person's level of {', '.join(c for c, _ in persons.levels)} (the median over "
        "the person's rows) is a hidden per-person column of both models, not released, and "
        f"the row model holds each row's deviation from it (within ±{DEVIATION:g} of the "
        "declared range)"
        if persons.levels
        else ""
    )
    lines = (
        f"synthetic persons: a person model (one row per person: the per_person columns "
        f"{', '.join(declared)} and the rows each person keeps, "
        f"1..max_rows) fitted on {PERSON_SHARE:.0%} of ρ with one row per person's "
        f"sensitivities; the row tables on the rest, per person{kept}",
        f"{n} synthetic persons ({_count_text(persons.plan)}); each person's rows drawn from "
        "the row model given the person's per_person columns; ids in the unit's column are "
        "synthetic (P000001...), never the data's",
    )
    details = {**g.details, "persons": {**persons.details(), "persons": n}}
    details["persons"]["person_edges"] = people.guarantee.details.get("edges", [])
    return dataclasses.replace(g, assumptions=(*g.assumptions, *lines), details=details)


def _count_text(plan: Plan) -> str:
    return (
        "the number of persons is public under replace-one (one person replaced by another)"
        if plan.n_public
        else "the number of persons estimated from the noisy tables"
    )


# -- sampling (post-processing) --------------------------------------------------------------


class PersonsModel:
    """The fitted person model and row model; draws synthetic persons (free, repeatable)."""

    def __init__(
        self,
        synth: TableSynthesizer,
        helper: TableSynthesizer,
        persons: PersonsPlan,
        histogram: NDArray[np.float64],
    ) -> None:
        self.synth = synth
        self.helper = helper
        self.persons = persons
        self.histogram = histogram  # noisy persons with 1..k rows (released)

    @property
    def n(self) -> int:
        """The person model's number of persons."""
        return int(self.helper._model.n)

    def sample(self, n_persons: int, source: RandomSource) -> pd.DataFrame:
        """``n_persons`` synthetic persons and their rows: the unit's column (synthetic
        ids) first, then the schema's columns (and the label)."""
        persons, schema = self.persons, self.synth._params().fit_schema
        # Rows per person from the noisy histogram (projected to n persons, largest
        # remainder), then each person's columns from the person model given that count.
        fitted = _project_rows(self.histogram[None, :], np.array([float(self.n)]))[0]
        count = _largest_remainder(fitted, n_persons)
        k = count.size
        rows_code = np.repeat(np.arange(k), count)
        rows_code = rows_code[np.argsort(_uniforms(n_persons, source), kind="stable")]
        last = len(self.helper._plan.bins.sizes) - 1
        pcodes = sample_given(
            self.helper._model, (last,), rows_code[:, None], np.arange(n_persons), source
        )
        Zp, _ = self.helper._decode(pcodes, source)
        people = persons.schema.decode(Zp, None)
        rows = pcodes[:, -1] + 1  # category j of 1..max_rows has code j - 1
        owner = np.repeat(np.arange(n_persons), rows)
        row_codes = sample_given(
            self.synth._model, persons.attributes, pcodes[:, :-1], owner, source
        )
        Z, y = self.synth._decode(row_codes, source)
        declared = self.synth.schema
        if persons.levels:  # each row: its person's level plus its own deviation
            level = np.column_stack([people[h].to_numpy()[owner] for _, h in persons.levels])
            named = tuple(c for c, _ in persons.levels)
            Z, schema = from_levels(Z, declared, named, level), declared
        out = schema.decode(Z, y)
        for name in declared.per_person:  # decoded once per person: constant within a person
            out[name] = people[name].to_numpy()[owner]
        unit = schema.privacy_unit
        assert unit is not None
        width = max(6, len(str(n_persons)))
        ids = np.array([f"P{i:0{width}d}" for i in range(1, n_persons + 1)], dtype=object)
        out.insert(0, unit.column, ids[owner])
        return out


def sample_given(
    model: Model | JointModel,
    attributes: tuple[int, ...],
    evidence: NDArray[np.int64],
    owner: NDArray[np.int64],
    source: RandomSource,
) -> NDArray[np.int64]:
    """One coded row per entry of ``owner``, drawn from ``model`` given that the columns
    ``attributes`` take the codes ``evidence[owner]`` (exactly: inference on the tree, or
    the joint table's slice). Where the model gives the evidence no mass, the row is drawn
    without it (its per-person columns are overwritten anyway)."""
    if isinstance(model, JointModel):
        return _joint_given(model, attributes, evidence, owner, source)
    return _tree_given(model, attributes, evidence, owner, source)


def _uniforms(n: int, source: RandomSource) -> NDArray[np.float64]:
    return np.asarray(noise.uniform(n, random_state=source), dtype=np.float64)


def _pick(prob: NDArray[np.float64], u: NDArray[np.float64]) -> NDArray[np.int64]:
    """One index per row of ``prob`` (unnormalised, non-negative; uniform where all zero)."""
    total = prob.sum(axis=1, keepdims=True)
    prob = np.where(total > 0, prob, 1.0)
    cdf = np.cumsum(prob, axis=1)
    idx = (u[:, None] * cdf[:, -1:] >= cdf).sum(axis=1)
    return np.minimum(idx, prob.shape[1] - 1).astype(np.int64)


def _conditionals(model: Model) -> dict[int, NDArray[np.float64]]:
    """``P(x_a | c)`` (K, k_a) for the tree's roots, ``P(x_a | c, x_parent)`` (K, k_p, k_a)
    for the others; a row of zeros becomes uniform (as the sampler reads it)."""
    out = {}
    for a in model.order:
        t = model.triples[a] if a in model.parent else model.pairs[a]
        s = t.sum(axis=-1, keepdims=True)
        out[a] = np.where(s > 0, t / np.where(s > 0, s, 1.0), 1.0 / t.shape[-1])
    return out


def _tree_given(
    model: Model,
    attributes: tuple[int, ...],
    evidence: NDArray[np.int64],
    owner: NDArray[np.int64],
    source: RandomSource,
) -> NDArray[np.int64]:
    cond = _conditionals(model)
    lam = _likelihoods(model, cond, attributes, evidence)
    prior = np.asarray(model.class_counts, dtype=np.float64)
    weight = prior[None, :] * np.prod(
        [np.einsum("cx,ncx->nc", cond[a], lam[a]) for a in model.order if a not in model.parent],
        axis=0,
    )
    lost = weight.sum(axis=1) <= 0
    if lost.any():  # evidence the model gives no mass: drawn without it
        free = _likelihoods(model, cond, (), evidence[lost][:, :0])
        for a in lam:
            lam[a][lost] = free[a]
        weight[lost] = prior
    m = owner.size
    out = np.zeros((m, len(model.sizes)), dtype=np.int64)
    cls = _pick(weight[owner], _uniforms(m, source))
    if model.label is not None:
        out[:, model.label] = cls
    for a in model.order:
        here = lam[a][owner, cls]  # (m, k_a)
        base = cond[a][cls, out[:, model.parent[a]]] if a in model.parent else cond[a][cls]
        out[:, a] = _pick(base * here, _uniforms(m, source))
    return out


def _likelihoods(
    model: Model,
    cond: dict[int, NDArray[np.float64]],
    attributes: tuple[int, ...],
    evidence: NDArray[np.int64],
) -> dict[int, NDArray[np.float64]]:
    """``λ_a[n, c, x]``: the likelihood of person ``n``'s evidence in the subtree of ``a``
    given ``a = x`` and class ``c`` (upward pass, leaves first; each message scaled by its
    largest entry per person, which leaves every conditional unchanged)."""
    n = evidence.shape[0]
    K = model.class_counts.size
    fixed = dict(zip(attributes, evidence.T, strict=True))
    lam: dict[int, NDArray[np.float64]] = {}
    for a in model.order:
        k = model.sizes[a]
        if a in fixed:
            lam[a] = np.broadcast_to((np.arange(k) == fixed[a][:, None])[:, None, :], (n, K, k))
        else:
            lam[a] = np.ones((n, K, k))
        lam[a] = np.array(lam[a], dtype=np.float64)
    for a in reversed(model.order):  # children come after their parents in ``order``
        if a not in model.parent:
            continue
        msg = np.einsum("cpx,ncx->ncp", cond[a], lam[a])
        top = msg.reshape(n, -1).max(axis=1)
        lam[model.parent[a]] *= msg / np.where(top > 0, top, 1.0)[:, None, None]
    return lam


def _joint_given(
    model: JointModel,
    attributes: tuple[int, ...],
    evidence: NDArray[np.int64],
    owner: NDArray[np.int64],
    source: RandomSource,
) -> NDArray[np.int64]:
    sizes = model.sizes
    others = tuple(a for a in range(len(sizes)) if a not in attributes)
    table = np.moveaxis(model.counts, attributes, tuple(range(len(attributes))))
    flat = table.reshape(int(np.prod([sizes[a] for a in attributes])), -1)
    key = np.ravel_multi_index(tuple(evidence.T), tuple(sizes[a] for a in attributes))
    row_key = key[owner]
    u = _uniforms(owner.size, source)
    drawn = np.empty(owner.size, dtype=np.int64)
    for g in np.unique(row_key):
        at = np.flatnonzero(row_key == g)
        prob = flat[g] if flat[g].sum() > 0 else flat.sum(axis=0)
        cdf = np.cumsum(np.maximum(prob, 0.0))
        if not cdf[-1] > 0:  # pragma: no cover - the fit floors the table
            cdf = np.arange(1.0, prob.size + 1.0)
        drawn[at] = np.minimum(np.searchsorted(cdf, u[at] * cdf[-1], side="right"), prob.size - 1)
    out = np.zeros((owner.size, len(sizes)), dtype=np.int64)
    out[:, list(attributes)] = evidence[owner]
    if others:
        rest = np.unravel_index(drawn, tuple(sizes[a] for a in others))
        for a, v in zip(others, rest, strict=True):
            out[:, a] = v
    return out
