"""DP synthetic tables from noisy marginals under zCDP: :class:`TableSynthesizer`.

Select–measure–generate over the discretised columns of the declared schema
(:mod:`ppdp.publish.table_synth_model` holds the numerics). ``fit`` converts (ε, δ) to a
zCDP budget ρ, spends it on Gaussian contingency tables (and, for the tree model, on
exponential-mechanism choices of the tree's edges), fits a model to the noisy tables and
samples ``n`` rows from it. The privacy argument is in ``docs/proofs/table-synth.md``.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import logging
import math
import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, NamedTuple

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ppdp._params import Rule, epsilon_rules
from ppdp._validation import check_delta, check_int, check_option
from ppdp.accounting.events import ZCDP, Exponential, Gaussian, PrivacyEvent
from ppdp.budget import Guarantee, Neighbouring
from ppdp.data import Schema
from ppdp.data.columns import NumericColumn
from ppdp.exceptions import (
    DataValidationError,
    LowUtilityWarning,
    ParameterError,
    ParameterTypeError,
    user_stacklevel,
)
from ppdp.mechanisms.grid import UndrawableNoiseError, effective_sensitivity, too_small_epsilon
from ppdp.publish._base import Charge, Publisher, Release, new_folder
from ppdp.publish.table_synth_check import (
    CHECK_SHARE,
    CheckedPair,
    CheckNoise,
    check_candidates,
    check_noise,
    check_pairs_value,
    exact_pair_table,
    rounds_for,
    run_pair_check,
    warn_pairs,
)
from ppdp.publish.table_synth_model import (
    ADD_REMOVE_SENSITIVITY,
    FINE_BINS,
    MAX_TABLE_SIGMA,
    SUB_BINS,
    TABLE_L2_SENSITIVITY,
    UTILITY_SENSITIVITY,
    Bins,
    EdgeForm,
    FineHistograms,
    JointModel,
    MarginalCounts,
    Measurement,
    Model,
    SubBinDecoder,
    TablesAndSubBins,
    cdp_rho,
    class_counts_for,
    coarse_of,
    compress_levels,
    crowded_end_bins,
    decoding_weights,
    estimate,
    fine_codes,
    fine_histogram,
    fit_joint,
    group_table,
    measure_table,
    merge_runs,
    model_class_law,
    noisy_total,
    occupied_bins,
    quantile_cuts,
    recut_bin_masses,
    recut_from_sub_bins,
    resolutions,
    sample_codes,
    sample_codes_given_classes,
    sample_joint,
    second_parent_child,
    second_parent_placed,
    select_tree,
    sigma_for,
    spread_levels,
    sub_bin_codes,
    sub_bin_histogram,
    sub_bins_of,
    with_second_parent,
)
from ppdp.random import PartitionStreams, RandomSource, RandomState, resolve_random_state

if TYPE_CHECKING:
    from ppdp.publish.synth_persons import PersonsPlan

__all__ = ["TableSynthesizer"]

logger = logging.getLogger(__name__)

_MECHANISM = "TableSynthesizer (Gaussian marginals, zCDP)"
_METHODS = ("auto", "tree", "chow-liu", "pairs")
#: ``method="pairs"`` fits an explicit table over the whole domain; its one-hot design
#: (cells × total levels) may hold at most this many entries (64 MiB in float32). ``"auto"``
#: picks ``"pairs"`` up to it: at 1.4 × 2²³ (cps1988) the joint fits in 0.5 s and beats the
#: tree; at 20 × 2²³ (chem97) it takes 3.4 s and loses (benchmarks/synth/second_parents.md).
MAX_JOINT_ENTRIES = 2**24
#: The most bins per numeric column.
MAX_BINS = 4096
#: The most cells of one table a fit counts (:meth:`Plan.counted_cliques`): 32 MiB per
#: float64 copy; the selection and the sampler hold a few copies of the largest at once.
MAX_TABLE_CELLS = 2**22
#: The most cells of all the tables a fit counts together (256 MiB of int64 counts; the
#: fitted model holds at most as many floats again). With :data:`MAX_TABLE_CELLS` this
#: keeps a fit's memory to a few hundred MB, whatever the number of rows.
MAX_COUNTED_CELLS = 2**25
#: Shares of ρ in the tree models: first-round tables, edge selection, edge tables.
TREE_SHARES = (0.3, 0.1, 0.6)
#: How the label-rooted tree's edge tables may be measured (``pair_tables``): with the
#: label axis (``"labelled"``), also summed over the classes on compressed levels
#: (``"both"``), or only so (``"unlabelled"``); the last two with :data:`UNLABELLED_SHARES`.
#: ``"auto"``: planned as ``"both"``; the unlabelled forms are candidates only where the
#: noisy row count is at least :data:`AUTO_MIN_ROWS` (:func:`offers_unlabelled`).
PAIR_TABLES = ("labelled", "both", "unlabelled", "auto")
#: ``pair_tables="auto"``: below this many rows (round 1's noisy total under add/remove) the
#: selection keeps every edge table labelled: on Swiss labor (611 rows) the unlabelled forms
#: cost label AUC, on credit (2,827) they gain 2-way TVD (``credit_pairs.md``, "auto").
AUTO_MIN_ROWS = 1000
#: Shares of ρ of the tree with unlabelled edge tables: those tables are small (compressed
#: levels, no label axis), so more goes to the (C, x) tables (``credit_pairs.md``).
UNLABELLED_SHARES = (0.6, 0.05, 0.35)
#: How numeric columns without declared cuts are binned: ``n_bins`` equal widths over the
#: declared bounds, or at cut points near their quantiles, measured with part of ρ.
#: ``"auto"``: equal widths, and a column whose rows the measured sub-bins show crowded
#: into a few bins re-cut from them before the tables (post-processing, no extra ρ).
BINNINGS = ("equal-width", "private-quantiles", "auto")
#: Share of ρ that ``binning="private-quantiles"`` spends on the fine histograms.
QUANTILE_SHARE = 0.1
#: How values are drawn within a numeric column's equal-width bin: uniformly, or by the
#: bin's sub-bins, measured with part of ρ (:class:`~ppdp.publish.table_synth_model.SubBinDecoder`).
DECODES = ("uniform", "sub-bins")
#: Share of ρ that ``decode="sub-bins"`` spends on the sub-bin histograms.
DECODE_SHARE = 0.02
#: Share of ρ of each second parent's pair table (``extra_parents``), reserved before the
#: tables are planned, as the pair check's share is.
EXTRA_SHARE = 0.05
#: A pair the check names gets a second parent only if its table's expected L1 noise is at
#: most this many times the check's noisy residual of the pair.
EXTRA_NOISE_RATIO = 2.0
#: Second parents of ``extra_parents="auto"``: one per check round, at most this many
#: (``benchmarks/synth/second_parents.md``).
DEFAULT_EXTRA_PARENTS = 6
#: The most second parents a fit accepts.
MAX_EXTRA_PARENTS = 10
#: Synthetic rows written to Parquet are drawn in partitions of about this many bytes of
#: working memory (codes, encoded rows and the decoded frame).
SAMPLE_PARTITION_BYTES = 64 << 20


def _round_sigma_up(rho: float, sensitivity: float) -> float:
    # One ulp up, so that the cost Δ²/(2σ²) never exceeds the planned ρ in exact arithmetic.
    return math.nextafter(sigma_for(rho, sensitivity), math.inf)


def _table_sensitivity(relation: Neighbouring) -> float:
    """L2 sensitivity of one count table: √2 under replace-one, 1 under add/remove."""
    if relation is Neighbouring.ADD_REMOVE:
        return ADD_REMOVE_SENSITIVITY
    return TABLE_L2_SENSITIVITY


def _cells(sizes: tuple[int, ...], clique: tuple[int, ...]) -> int:
    return math.prod(sizes[a] for a in clique)


@dataclass(frozen=True)
class Plan:
    """What one ``fit`` measures, from the schema and the parameters alone (public)."""

    method: Literal["tree", "chow-liu", "pairs"]
    rho: float
    bins: Bins
    features: tuple[int, ...]
    label: int | None
    first: tuple[tuple[int, ...], ...]  # cliques of the first round (all of "pairs")
    sigma_first: float
    n_select: int  # exponential-mechanism draws (tree only)
    epsilon_select: float
    n_second: int  # edge tables (tree only)
    sigma_second: float
    relation: Neighbouring = Neighbouring.REPLACE_ONE
    #: Columns whose cut points a fit measures first (``binning="private-quantiles"``: a
    #: coarse histogram, then the sub-bins of its occupied bins), and the σ of each of
    #: those two histograms per column.
    quantile_columns: tuple[int, ...] = ()
    sigma_quantiles: float = 0.0
    #: The pairs declared in ``keep`` (column indices, lower first), and those of them that
    #: are tree edges by choice (public): their tables are measured in the second round,
    #: and the exponential mechanism chooses only the ``n_select`` other edges.
    kept: tuple[tuple[int, int], ...] = ()
    forced: tuple[tuple[int, int], ...] = ()
    #: Columns whose values decode by their measured sub-bins (``decode="sub-bins"``): one
    #: Gaussian histogram of ``n_bins · SUB_BINS`` cells per column, at this σ.
    decode_columns: tuple[int, ...] = ()
    sigma_decode: float = 0.0
    #: ``binning="auto"``: the sub-bin histograms are drawn before the tables, and a decoded
    #: column they show crowded is re-cut from them (:func:`recut_from_sub_bins`).
    recut: bool = False
    #: The pair check (:mod:`ppdp.publish.table_synth_check`): its rounds (0: none) and
    #: the noise of each, from :data:`CHECK_SHARE` of ρ reserved before the tables.
    check_pairs: int = 0
    check: CheckNoise | None = None
    #: Second parents (``extra_parents``): up to ``extra_parents`` pairs the check names
    #: get their (i, j) table measured (after the check), sharing the row-level pool
    #: ``extra_rho`` equally (:func:`second_parent_sigma`); ``sigma_extra`` is the σ of each
    #: when all ``extra_parents`` are measured (the largest).
    extra_parents: int = 0
    sigma_extra: float = 0.0
    #: ``pair_tables`` (:data:`PAIR_TABLES`): ``"labelled"`` wherever the model has no label.
    pair_tables: str = "labelled"
    extra_rho: float = 0.0
    #: The edge-table σ the selection's noise correction assumes (0: ``sigma_second``):
    #: with a pool, the plan's σ₂ before it, so the pool does not tilt the tree toward
    #: small tables (the edge tables the pool leaves unused get that σ back).
    sigma_select: float = 0.0
    #: The most rows of one person (the schema's privacy unit ``max_rows``; 1 without a
    #: unit). Every draw above is calibrated for one row at ``ρ / k²``; per person each
    #: sensitivity and selection ε is ``k`` times the row's (docs/proofs/privacy-unit.md).
    contribution: int = 1

    @property
    def table_sensitivity(self) -> float:
        """L2 sensitivity of one count table: √2 under replace-one, 1 under add/remove."""
        return _table_sensitivity(self.relation)

    @property
    def utility_sensitivity(self) -> float:
        """Sensitivity of the selection's L1 utility: 2 under replace-one, 1 under add/remove."""
        if self.relation is Neighbouring.ADD_REMOVE:
            return ADD_REMOVE_SENSITIVITY
        return UTILITY_SENSITIVITY

    @property
    def n_public(self) -> bool:
        """Whether the number of rows is public (replace-one, one row per person) or must
        be estimated (add/remove, or several rows per person)."""
        return self.relation is Neighbouring.REPLACE_ONE and self.contribution == 1

    @property
    def compresses(self) -> bool:
        """Whether the edge tables merge codes the first round cannot tell from noise."""
        return self.method == "chow-liu"

    def spent_rho(self) -> float:
        """ρ of every draw of the plan (Gaussian tables ``Δ²/(2σ²)``, selections ``ε²/8``),
        per person: ``k²`` times the row-level sum under a privacy unit of ``k`` rows."""
        return self.contribution**2 * self._row_spent_rho()

    def _row_spent_rho(self) -> float:
        half_sq = self.table_sensitivity**2 / 2.0
        total = len(self.first) * half_sq / self.sigma_first**2
        if self.n_second:
            total += self.n_second * half_sq / self.sigma_second**2
        if self.n_select:
            total += self.n_select * self.epsilon_select**2 / 8.0
        if self.quantile_columns:
            total += 2 * len(self.quantile_columns) * half_sq / self.sigma_quantiles**2
        if self.decode_columns:
            total += len(self.decode_columns) * half_sq / self.sigma_decode**2
        if self.check is not None:
            total += self.check_pairs * self.check.rho_per_round
        return total + self.extra_rho

    def counted_cliques(self) -> tuple[tuple[int, ...], ...]:
        """Every table a fit may read from the data: the first round's, then (tree) the
        (label, i, j) table of every candidate edge, which the selection scores and the
        second round measures. Exact counts of these are all a fit needs from the rows."""
        if self.method == "pairs" or self.n_second == 0:
            return self.first
        pre = () if self.label is None else (self.label,)
        feats = self.features
        edges = tuple((*pre, i, j) for x, i in enumerate(feats) for j in feats[x + 1 :])
        return self.first + edges

    def _named(self, pairs: tuple[tuple[int, int], ...]) -> list[list[str]]:
        return [[self.bins.names[i], self.bins.names[j]] for i, j in pairs]

    def _check_details(self) -> dict[str, Any]:
        if self.check is None:
            return {"pair_check": "none"}
        return {
            "pair_check": {
                "pairs": self.check_pairs,
                "rho_share": CHECK_SHARE,
                "epsilon_per_selection": self.check.epsilon,
                "sigma_residual": self.check.sigma,
                "residual_sensitivity": self.check.sensitivity,
                "what": "the off-tree pairs the model reproduces worst (L1 residual of the "
                "2-way table), chosen by the exponential mechanism, then measured",
            }
        }

    def details(self) -> dict[str, Any]:
        """JSON-safe facts for the ledger."""
        return {
            "method": self.method,
            "rho": self.rho,
            "relation": self.relation.value,
            "norm": "l2",
            "noise_scale": self.sigma_first,
            "units": "counts of a contingency table",
            "first_round_tables": len(self.first),
            "edge_selections": self.n_select,
            "epsilon_per_selection": self.epsilon_select,
            "edge_tables": self.n_second,
            "edge_levels": ("rare codes merged (< 3σ in round 1)" if self.compresses else "codes")
            + "; a categorical column's codes under 3σ in round 1 also merged (within its "
            "declared groups), and its declared groups; each edge's form chosen with it",
            "sigma_edge_tables": self.sigma_second,
            **(
                {
                    "pair_tables": self.pair_tables,
                    "unlabelled_edge_levels": "(i, j) tables summed over the classes; codes "
                    "under 3σ in round 1 merged (runs of adjacent bins of a numeric column)",
                    **(
                        {"unlabelled_min_rows": AUTO_MIN_ROWS} if self.pair_tables == "auto" else {}
                    ),
                }
                if self.pair_tables != "labelled"
                else {}
            ),
            "table_sensitivity_l2": self.table_sensitivity * self.contribution,
            "utility_sensitivity": self.utility_sensitivity * self.contribution,
            **({"rows_per_person": self.contribution} if self.contribution > 1 else {}),
            "bins": dict(zip(self.bins.names, self.bins.sizes, strict=True)),
            **({"kept_pairs": self._named(self.kept)} if self.kept else {}),
            **self._check_details(),
            **(
                {
                    "second_parent_tables": self.extra_parents,
                    "sigma_second_parent": self.sigma_extra,
                    "second_parent_rho": self.extra_rho,
                    "second_parent_pool": "taken from the edge tables; the share of the "
                    "pair tables not measured measures the edge tables again",
                }
                if self.extra_parents
                else {}
            ),
            **({"forced_edges": self._named(self.forced)} if self.forced else {}),
            **(
                {
                    "quantile_histograms": 2 * len(self.quantile_columns),
                    "sigma_quantile_histograms": self.sigma_quantiles,
                    "quantile_bins": f"{FINE_BINS // SUB_BINS} bins, then {SUB_BINS} sub-bins "
                    "of each occupied bin",
                }
                if self.quantile_columns
                else {}
            ),
            **self._decode_details(),
        }

    def _decode_details(self) -> dict[str, Any]:
        if not self.decode_columns:
            return {}
        return {
            "decode_histograms": len(self.decode_columns),
            "sigma_decode_histograms": self.sigma_decode,
            "decode_bins": f"{SUB_BINS} sub-bins of each equal-width bin",
        }


def _check_fit_schema(schema: Any, checked: Mapping[str, Any]) -> Schema:
    """The schema the models are fitted on: the declared one, plus the hidden level columns
    of ``person_levels`` (:func:`ppdp.publish.synth_persons.fit_schema`)."""
    from ppdp.publish.synth_persons import fit_schema

    if not isinstance(schema, Schema):
        raise ParameterTypeError(
            f"schema ({type(schema).__name__}) must be a ppdp.data.Schema; "
            "load one with Schema.from_file(path)"
        )
    fitted: Schema = fit_schema(schema, checked["person_levels"])
    return fitted


def _check_bins(_: Any, checked: Mapping[str, Any]) -> Bins:
    return Bins.from_schema(checked["fit_schema"], checked["n_bins"])


def _check_n_bins(value: Any) -> int:
    n_bins = check_int("n_bins", value, minimum=2)
    if n_bins > MAX_BINS:
        raise ParameterError(
            f"n_bins ({n_bins}) must be an integer in 2..{MAX_BINS}: each numeric column's "
            "tables grow with it (and the noise per bin stays the same)"
        )
    return n_bins


def _plan(method: Any, checked: Mapping[str, Any]) -> Plan:
    """What ``fit`` will measure, from the fields checked before it (public).

    Refuses, before anything is spent, a plan whose count tables would not fit in memory
    (:data:`MAX_TABLE_CELLS`, :data:`MAX_COUNTED_CELLS`) and an ε whose table noise the
    sampler cannot draw exactly (σ above :data:`MAX_TABLE_SIGMA`).
    """
    epsilon, delta = checked["epsilon"], checked["delta"]
    bins: Bins = checked["bins"]
    n_bins = checked["n_bins"]
    relation: Neighbouring = checked["relation"]
    binning: str = checked["binning"]
    decode: str = checked["decode"]
    keep: tuple[tuple[int, int], ...] = checked["keep"]
    check_pairs: int | Literal["auto"] = checked["check_pairs"]
    extra: int = checked["extra_parents"]
    k: int = checked["contribution"]
    share: float = checked["row_share"]
    pair_tables: str = checked["pair_tables"]
    if binning == "auto" and share < 1.0:
        # Synthetic persons (per_person columns): the person model cuts them at equal widths
        # and the row model must cut them alike, so no column is re-cut (synth_persons).
        binning = "equal-width"
    try:
        plan = _build_plan(
            method, epsilon, delta, bins, n_bins, relation, binning, keep, decode, check_pairs, k,
            share, extra, pair_tables,
        )  # fmt: skip
    except UndrawableNoiseError as exc:

        def feasible(eps: float) -> bool:
            try:
                _build_plan(
                    method, eps, delta, bins, n_bins, relation, binning, keep, decode, check_pairs,
                    k, share, extra, pair_tables,
                )  # fmt: skip
            except UndrawableNoiseError:
                return False
            return True

        raise too_small_epsilon("TableSynthesizer", epsilon, exc, feasible) from None
    _check_cells(plan, n_bins)
    return plan


def _counted_cells(plan: Plan) -> tuple[int, int]:
    """(the largest table's cells, all the counted tables' cells) of ``plan``."""
    sizes = plan.bins.sizes
    cells = [_cells(sizes, c) for c in plan.counted_cliques()]
    return max(cells), sum(cells)


def _check_cells(plan: Plan, n_bins: int) -> None:
    """Refuse a plan whose count tables exceed the memory ceilings (from the schema)."""
    largest, total = _counted_cells(plan)
    if largest <= MAX_TABLE_CELLS and total <= MAX_COUNTED_CELLS:
        return

    def fits(nb: int) -> bool:
        sized = _with_bins(plan, nb)
        big, tot = _counted_cells(sized)
        return big <= MAX_TABLE_CELLS and tot <= MAX_COUNTED_CELLS

    lo, hi = 1, n_bins  # fits(lo) is assumed, then checked; not fits(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid
    advice = (
        f"use n_bins <= {lo}"
        if lo >= 2 and fits(lo)
        else "no n_bins fits: the categorical columns alone are too large"
    )
    if plan.method == "tree":
        advice += " (or method='chow-liu', whose tables have no label axis)"
    raise ParameterError(
        f"n_bins ({n_bins}): TableSynthesizer (method {plan.method!r}) would count "
        f"{total:,} table cells, the largest table {largest:,}; at most "
        f"{MAX_TABLE_CELLS:,} per table and {MAX_COUNTED_CELLS:,} in all are allowed (a few "
        f"hundred MB of memory); {advice}"
    )


def _edge_resolutions(
    plan: Plan, a: int, first: NDArray[np.float64]
) -> list[NDArray[np.int64] | None]:
    """The level maps attribute ``a``'s edge tables may use, finest first: under
    ``"chow-liu"`` its rare codes merged (from round 1's noisy table ``first``), else its
    codes; then its declared groups (:func:`resolutions`). A categorical column's codes
    whose noisy counts round 1 cannot tell from noise are also offered merged (within
    their declared groups, if any), between its codes and its groups: post-processing of
    round 1, so the selection may choose it (``benchmarks/synth/suite_forms.md``)."""
    coarser = resolutions(plan.bins, a)[1:]
    if not plan.compresses and plan.bins.kinds[a] != "categorical":
        return [None, *coarser]
    merged = compress_levels(first, plan.sigma_first, groups=plan.bins.groups.get(a))
    if plan.compresses:
        return [merged, *coarser]
    return [None, merged, *coarser] if int(merged.max()) + 1 < merged.size else [None, *coarser]


def _unlabelled_resolutions(
    plan: Plan, a: int, first: NDArray[np.float64]
) -> list[NDArray[np.int64] | None]:
    """The level maps of attribute ``a`` in edge tables without the label axis: its codes
    whose round-1 noisy counts the noise cannot tell from 0 merged (numeric columns too,
    as MST compresses its domains), then its declared groups. Post-processing of round 1."""
    coarser = resolutions(plan.bins, a)[1:]
    if plan.bins.kinds[a] == "categorical":
        merged = compress_levels(first, plan.sigma_first, groups=plan.bins.groups.get(a))
    else:
        merged = merge_runs(first, plan.sigma_first)
    return [merged if int(merged.max()) + 1 < merged.size else None, *coarser]


def _with_bins(plan: Plan, n_bins: int) -> Plan:
    """``plan`` with the numeric columns cut into ``n_bins`` bins (sizes only)."""
    sizes = tuple(
        size
        if kind in ("categorical", "cut")  # declared: n_bins does not apply
        else n_bins + 2  # the bounds' own codes and n_bins bins
        if kind == "binned" or size > n_bins  # one code per integer: binned above n_bins
        else size
        for size, kind in zip(plan.bins.sizes, plan.bins.kinds, strict=True)
    )
    return dataclasses.replace(plan, bins=dataclasses.replace(plan.bins, sizes=sizes))


def _check_sigmas(plan: Plan) -> Plan:
    """Refuse table noise the sampler cannot draw exactly (ε too small)."""
    sigma = max(
        plan.sigma_first, plan.sigma_second, plan.sigma_quantiles, plan.sigma_decode,
        plan.sigma_extra,
    )  # fmt: skip
    if not sigma <= MAX_TABLE_SIGMA:
        raise UndrawableNoiseError(
            f"TableSynthesizer's table noise (σ = {sigma:.3g}) exceeds {MAX_TABLE_SIGMA:.3g}",
            symbol="σ",
            scale=sigma,
            limit=MAX_TABLE_SIGMA,
        )
    return plan


def _build_plan(
    method: Any,
    epsilon: float,
    delta: float,
    bins: Bins,
    n_bins: int,
    relation: Neighbouring = Neighbouring.REPLACE_ONE,
    binning: str = "equal-width",
    keep: tuple[tuple[int, int], ...] = (),
    decode: str = "sub-bins",
    check_pairs: int | Literal["auto"] = 0,
    contribution: int = 1,
    share: float = 1.0,
    extra_parents: int = 0,
    pair_tables: str = "labelled",
) -> Plan:
    """The plan at ``epsilon`` (raises :class:`UndrawableNoiseError` for too small an ε).

    With a pair check (``check_pairs`` rounds, at most the pairs a tree leaves off: none for
    ``"pairs"``), :data:`CHECK_SHARE` of ρ is reserved for it first and the rest planned as
    without it (:func:`_spend`). Under a privacy unit of ``contribution = k`` rows per
    person, every draw is planned for one row at ``ρ / k²`` (a hair less, so that the
    per-person sum ``k² · Σ`` never rounds above ρ): per person each sensitivity and
    selection ε is ``k`` times the row's, so each draw costs ``k²`` times its row cost.
    With ``share < 1`` the draws spend that share of ρ (synthetic persons split ρ between
    the person model and the row model: :mod:`ppdp.publish.synth_persons`); the plan's
    ``rho`` is the whole fit's.
    """
    rho = cdp_rho(epsilon, delta)
    exact = contribution == 1 and share == 1.0
    budget = rho if exact else rho * share / contribution**2 * (1.0 - 2.0**-40)
    args = (bins, n_bins, relation, binning, keep, decode, pair_tables)
    plan = _spend(method, budget, *args)
    rounds = rounds_for(
        plan.method, plan.features, plan.label, check_pairs, labelled=bins.has_label
    )
    if rounds:
        share = budget * CHECK_SHARE
        extra = min(extra_parents, rounds)
        plan = _spend(plan.method, budget - share, *args)
        noise_ = check_noise(share, rounds, plan.utility_sensitivity)
        plan = dataclasses.replace(plan, check_pairs=rounds, check=noise_)
        if extra:
            plan = _check_sigmas(_with_pool(plan, extra, budget * EXTRA_SHARE * extra))
    return dataclasses.replace(plan, rho=rho, contribution=contribution)


def _edges_rho(plan: Plan) -> float:
    """Row-level ρ of the edge tables of ``plan``."""
    return plan.n_second * plan.table_sensitivity**2 / (2.0 * plan.sigma_second**2)


def _with_pool(plan: Plan, extra: int, pool: float) -> Plan:
    """``plan`` with the second parents' pool (at most half the edge tables' ρ) taken from
    its edge tables alone (their σ scaled up); what the pair tables leave goes back to the
    edge tables (:func:`remeasure_sigma`), so a fit that adds none has the edge tables' ρ
    of the plan without the pool, and every other draw is the same."""
    tables = _edges_rho(plan)
    pool = min(pool, tables / 2.0)
    scale = math.sqrt(tables / (tables - pool))
    plan = dataclasses.replace(
        plan,
        sigma_select=plan.sigma_second,
        sigma_second=math.nextafter(plan.sigma_second * scale, math.inf),
        extra_parents=extra,
        extra_rho=pool,
    )
    return dataclasses.replace(plan, sigma_extra=second_parent_sigma(plan, extra))


def second_parent_sigma(plan: Plan, m: int) -> float:
    """σ of each of ``m`` second-parent pair tables sharing the plan's pool: ``m`` tables of
    L2 sensitivity Δ at this σ spend ``m·Δ²/(2σ²) ≤ extra_rho`` (σ rounded up)."""
    return _round_sigma_up(plan.extra_rho / m, plan.table_sensitivity)


class SecondParent(NamedTuple):
    """A second parent a fit adds (:func:`choose_second_parents`): the check's pair, the
    end drawn given the other (``child``, ``second``), the level map of each end of its
    pair table (``None``: the codes) and the table's cells on those levels."""

    pair: tuple[int, int]
    child: int
    second: int
    maps: tuple[NDArray[np.int64] | None, NDArray[np.int64] | None]
    cells: int


def offers_unlabelled(plan: Plan, n: float) -> bool:
    """Whether the selection may choose an edge table without the label axis (and second
    parents' tables are on the unlabelled levels): under ``pair_tables="auto"`` where ``n``
    (the model's rows: public under replace-one, round 1's noisy total under add/remove) is
    at least :data:`AUTO_MIN_ROWS`, a public threshold; a function of noisy values."""
    if plan.pair_tables == "auto":
        return n >= AUTO_MIN_ROWS
    return plan.pair_tables != "labelled"


def second_parent_levels(
    plan: Plan, model: Model, pair: tuple[int, int]
) -> tuple[NDArray[np.int64] | None, NDArray[np.int64] | None]:
    """The level map of each end of a second parent's pair table: the codes where the
    selection offers no unlabelled forms (:func:`offers_unlabelled`), else the compressed
    levels of the unlabelled edge tables, read from the model's (C, x) tables
    (post-processing of noisy ones)."""
    if not offers_unlabelled(plan, float(model.n)):
        return (None, None)
    i, j = pair
    return (
        _unlabelled_resolutions(plan, i, model.pairs[i])[0],
        _unlabelled_resolutions(plan, j, model.pairs[j])[0],
    )


def _swamped(pair: CheckedPair, sigma: float, cells: int, n: float) -> bool:
    """Whether the pair's table of ``cells`` cells at ``sigma`` would be swamped by its
    noise: expected L1 noise above :data:`EXTRA_NOISE_RATIO` times the check's released
    residual (public)."""
    noise_l1 = math.sqrt(2.0 / math.pi) * sigma * cells
    return noise_l1 > EXTRA_NOISE_RATIO * pair.tvd * 2.0 * max(n, 1.0)


def choose_second_parents(
    plan: Plan, model: Model, checked: Sequence[CheckedPair]
) -> list[SecondParent]:
    """The second parents a fit adds: the check's pairs in its order, each skipped where
    its table (on :func:`second_parent_levels`) at ``plan.sigma_extra`` would be
    :func:`_swamped` or no end is free (:func:`second_parent_child`), up to
    ``plan.extra_parents``. A function of the released check, the public model's
    structure, its noisy (C, x) tables and the plan."""
    sizes, n = plan.bins.sizes, float(model.n)
    chosen: list[SecondParent] = []
    structure = model
    for pair in checked:
        if len(chosen) == plan.extra_parents:
            break
        maps = second_parent_levels(plan, model, pair.pair)
        cells = math.prod(
            sizes[a] if mp is None else int(mp.max()) + 1
            for a, mp in zip(pair.pair, maps, strict=True)
        )
        if _swamped(pair, plan.sigma_extra, cells, n):
            continue
        placed = second_parent_child(structure, *pair.pair)
        if placed is not None:
            chosen.append(SecondParent(pair.pair, *placed, maps, cells))
            structure = second_parent_placed(structure, *placed)
    return chosen


def pair_sigmas(plan: Plan, cells: Sequence[int]) -> list[float]:
    """σ of each chosen pair table (of ``cells`` cells, on its levels): their
    ``len(cells)/extra_parents`` of the pool split in proportion to ``cells^(2/3)`` (the
    split that minimises their summed expected L1 noise ``Σ √(2/π)·σ·cells`` for that ρ),
    each σ rounded up."""
    weights = [float(c) ** (2.0 / 3.0) for c in cells]
    share = plan.extra_rho * len(cells) / plan.extra_parents
    return [_round_sigma_up(share * w / sum(weights), plan.table_sensitivity) for w in weights]


def remeasure_sigma(plan: Plan, n_pairs: int) -> float:
    """σ of each edge table measured again with the share of the second parents' pool that
    ``n_pairs < extra_parents`` pair tables leave: the planned edge σ times
    ``√(ρ_edges / left)``, rounded up, so the ``n_second`` tables spend at most that share."""
    left = plan.extra_rho * (plan.extra_parents - n_pairs) / plan.extra_parents
    return math.nextafter(plan.sigma_second * math.sqrt(_edges_rho(plan) / left), math.inf)


def _pooled(
    old: Measurement, exact: NDArray[np.float64], sigma: float, source: RandomSource
) -> Measurement:
    """``old`` pooled with a new measurement of its table at ``sigma`` by inverse-variance
    weights (the pooled σ is ``(σ₁⁻² + σ₂⁻²)^(-1/2)``)."""
    new = measure_table(exact, old.clique, sigma, source)
    w_old, w_new = old.sigma**-2, sigma**-2
    values = (w_old * old.values + w_new * new.values) / (w_old + w_new)
    return Measurement(old.clique, values, (w_old + w_new) ** -0.5)


def _measure_edges_again(
    plan: Plan,
    counts: MarginalCounts,
    edges: Sequence[tuple[int, int]],
    second: Sequence[Measurement],
    forms: Mapping[tuple[int, int], EdgeForm],
    n_pairs: int,
    source: RandomSource,
) -> list[Measurement]:
    """The edge tables, each measured again at :func:`remeasure_sigma` (in the edges'
    order) and pooled with its first measurement."""
    sigma = remeasure_sigma(plan, n_pairs)
    return [
        _pooled(m, _edge_table(plan, counts, e, forms[e])[0], sigma, source)
        for e, m in zip(edges, second, strict=True)
    ]


def _edge_table(
    plan: Plan, counts: MarginalCounts, e: tuple[int, int], form: EdgeForm
) -> tuple[NDArray[np.float64], tuple[int, ...]]:
    """Edge ``e``'s exact table in ``form`` (its levels; the label axis kept or summed)
    and its clique."""
    pre = (plan.label,) if plan.label is not None else ()
    exact = counts.table(pre + e)
    if pre and not form.labelled:
        exact, pre = exact.sum(axis=0), ()
    lead = (None,) * len(pre)
    return group_table(exact, (*lead, *form.maps)), pre + e


def _estimate_tree(
    plan: Plan,
    n: int,
    first: Sequence[Measurement],
    edges: Sequence[tuple[int, int]],
    second: Sequence[Measurement],
    forms: Mapping[tuple[int, int], EdgeForm],
) -> Model:
    """The tree model of the measured tables (post-processing)."""
    return estimate(
        n,
        plan.bins.sizes,
        plan.features,
        plan.label,
        {m.clique[-1]: m for m in first},
        list(edges),
        {e: m for e, m in zip(edges, second, strict=True)},
        forms=dict(forms),
    )


def _spend(
    method: Any,
    rho: float,
    bins: Bins,
    n_bins: int,
    relation: Neighbouring,
    binning: str,
    keep: tuple[tuple[int, int], ...],
    decode: str = "sub-bins",
    pair_tables: str = "labelled",
) -> Plan:
    """The tables, selections and histograms that spend ``rho``.

    With ``binning="private-quantiles"`` and numeric columns binned at equal widths, a
    :data:`QUANTILE_SHARE` of ρ goes to two histograms per such column (coarse bins, then
    the sub-bins of the occupied ones) and the rest to the plan as without it. With
    ``decode="sub-bins"`` and columns left at equal widths, a :data:`DECODE_SHARE` of ρ
    goes to their sub-bin histograms (:func:`_with_decoding`).
    """
    binned = tuple(a for a, k in enumerate(bins.kinds) if k == "binned")
    quantiled = binned if binning == "private-quantiles" else ()
    decoded = binned if decode == "sub-bins" and not quantiled else ()
    if not quantiled and not decoded:
        return _measured_plan(method, rho, bins, n_bins, relation, keep, pair_tables)
    share = rho * QUANTILE_SHARE if quantiled else 0.0
    decode_share = rho * DECODE_SHARE if decoded else 0.0
    plan = _measured_plan(
        method, rho - share - decode_share, bins, n_bins, relation, keep, pair_tables
    )
    if quantiled:
        sigma = _round_sigma_up(share / (2 * len(quantiled)), _table_sensitivity(relation))
        plan = dataclasses.replace(plan, quantile_columns=quantiled, sigma_quantiles=sigma)
    if decoded:
        plan = _with_decoding(plan, decoded, decode_share, relation)
        # The re-cut reads the sub-bins on the fine grid that cut columns decode on.
        plan = dataclasses.replace(plan, recut=binning == "auto" and n_bins * SUB_BINS == FINE_BINS)
    return _check_sigmas(dataclasses.replace(plan, rho=rho))


def _with_decoding(
    plan: Plan, columns: tuple[int, ...], rho_share: float, relation: Neighbouring
) -> Plan:
    """``plan`` with one sub-bin histogram per column of ``columns``, spending ``rho_share``
    equally (public: the columns come from the schema)."""
    sigma = _round_sigma_up(rho_share / len(columns), _table_sensitivity(relation))
    return dataclasses.replace(plan, decode_columns=columns, sigma_decode=sigma)


def _measured_plan(
    method: Any,
    rho: float,
    bins: Bins,
    n_bins: int,
    relation: Neighbouring,
    keep: tuple[tuple[int, int], ...] = (),
    pair_tables: str = "labelled",
) -> Plan:
    """The tables, selections and their noise that spend ``rho``.

    ``keep``: pairs always measured. ``"pairs"`` measures every pair anyway; the tree
    models make them edges by choice (:func:`_tree_plan`)."""
    d = len(bins.sizes)
    label = d - 1 if bins.has_label else None
    features = tuple(range(d - 1)) if bins.has_label else tuple(range(d))
    if not features:
        raise ParameterError("schema declares no feature column; TableSynthesizer needs one")
    sens = _table_sensitivity(relation)
    entries = math.prod(bins.sizes) * sum(bins.sizes)
    if method == "auto":
        method = "pairs" if entries <= MAX_JOINT_ENTRIES else "tree"
    if method == "pairs":
        if entries > MAX_JOINT_ENTRIES:
            raise ParameterError(
                f"method ('pairs') needs cells x levels of at most {MAX_JOINT_ENTRIES:,}; "
                f"this schema's domain has {math.prod(bins.sizes):,} cells and "
                f"{sum(bins.sizes)} levels (n_bins={n_bins}); use method='tree' or 'chow-liu'"
            )
        cliques = tuple(itertools.combinations(range(d), 2)) if d >= 2 else ((0,),)
        return _check_sigmas(Plan(
            "pairs", rho, bins, features, label, cliques,
            _round_sigma_up(rho / len(cliques), sens), 0, 0.0, 0, 0.0, relation, kept=keep,
        ))  # fmt: skip
    if method == "chow-liu":  # the label (if any) is one more node of the tree
        plan = _tree_plan("chow-liu", rho, bins, tuple(range(d)), None, relation, keep)
        return _check_sigmas(plan)
    plan = _tree_plan("tree", rho, bins, features, label, relation, keep, pair_tables)
    return _check_sigmas(plan)


def _tree_plan(
    method: Literal["tree", "chow-liu"],
    rho: float,
    bins: Bins,
    features: tuple[int, ...],
    label: int | None,
    relation: Neighbouring,
    keep: tuple[tuple[int, int], ...] = (),
    pair_tables: str = "labelled",
) -> Plan:
    """A tree model's plan: ``features`` are the tree's nodes, ``label`` the class column
    every node also depends on (``None`` for the Chow–Liu tree).

    The pairs of ``keep`` between two nodes are edges by choice (a pair with ``label`` is
    in every table already); the exponential mechanism chooses the others, with the
    selection's share of ρ spread over fewer draws, or, when ``keep`` fixes the whole tree,
    added to the edge tables' share (a function of the number of pairs: public).
    ``pair_tables`` other than ``"labelled"`` (with a label only) plans the shares
    :data:`UNLABELLED_SHARES`."""
    f = len(features)
    first = tuple((label, a) if label is not None else (a,) for a in features)
    sens = _table_sensitivity(relation)
    forced = tuple(p for p in keep if label not in p)
    _refuse_cycle(method, forced, bins.names)
    if f == 1:
        sigma = _round_sigma_up(rho, sens)
        return Plan(
            method, rho, bins, features, label, first, sigma, 0, 0.0, 0, 0.0, relation,
            kept=keep,
        )  # fmt: skip
    if label is None:
        pair_tables = "labelled"
    s1, ss, s2 = TREE_SHARES if pair_tables == "labelled" else UNLABELLED_SHARES
    n_select = f - 1 - len(forced)
    if n_select:
        eps_sel = math.nextafter(math.sqrt(8.0 * rho * ss / n_select), 0.0)
    else:
        eps_sel, s2 = 0.0, s2 + ss
    return Plan(
        method, rho, bins, features, label, first,
        _round_sigma_up(rho * s1 / f, sens), n_select, eps_sel, f - 1,
        _round_sigma_up(rho * s2 / (f - 1), sens), relation, kept=keep, forced=forced,
        pair_tables=pair_tables,
    )  # fmt: skip


def _refuse_cycle(method: str, forced: tuple[tuple[int, int], ...], names: tuple[str, ...]) -> None:
    """Refuse kept pairs that a tree cannot hold all at once (a cycle), before any spend."""
    parent = list(range(len(names)))

    def root(a: int) -> int:
        while parent[a] != a:
            a = parent[a]
        return a

    for i, j in forced:
        if root(i) == root(j):
            shown = ", ".join(f"{names[a]}:{names[b]}" for a, b in forced)
            raise ParameterError(
                f"keep ({shown}): {names[i]}:{names[j]} closes a cycle of kept pairs; method "
                f"{method!r} models a tree, which holds no cycle; drop one pair of the cycle "
                "(a tree over F columns keeps at most F - 1 pairs), or use method='pairs' "
                "(every pair measured) on a small domain"
            )
        parent[root(i)] = root(j)


def _keep_pairs(value: Any) -> list[Any]:
    """The raw pairs of ``keep``: ``"a:b"`` texts (commas between pairs) or 2-sequences."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, Sequence | set | frozenset):
        raise ParameterTypeError(
            f"keep ({value!r}) must be pairs of column names, e.g. [('los', 'cost')] or "
            "'los:cost,age:los'"
        )
    out: list[Any] = []
    for item in items:
        if isinstance(item, str):
            out += [p for p in item.split(",") if p.strip()]
        else:
            out.append(item)
    return out


def _check_keep(value: Any, checked: Mapping[str, Any]) -> tuple[tuple[int, int], ...]:
    """``keep`` and the schema's ``keep``, as sorted column-index pairs, each once."""
    names: tuple[str, ...] = checked["bins"].names
    given = [] if value is None else _keep_pairs(value)
    pairs: set[tuple[int, int]] = set()
    for raw in [*checked["declared_keep"], *given]:
        pair = tuple(raw.split(":")) if isinstance(raw, str) else ()
        if isinstance(raw, Sequence) and not isinstance(raw, str):
            pair = tuple(raw)
        if len(pair) != 2 or not all(isinstance(v, str) for v in pair):
            raise ParameterError(
                f"keep ({raw!r}) must be a pair of column names, e.g. 'los:cost' or ('los', 'cost')"
            )
        a, b = (v.strip() for v in pair)
        for v in (a, b):
            if v not in names:
                raise ParameterError(
                    f"keep ({a}:{b}): {v!r} is not a column of the schema; its columns: "
                    f"{', '.join(names)}"
                )
        if a == b:
            raise ParameterError(
                f"keep ({a}:{b}) names the same column twice; a kept pair joins two columns"
            )
        i, j = sorted((names.index(a), names.index(b)))
        pairs.add((i, j))
    return tuple(sorted(pairs))


@dataclass(frozen=True)
class TableSynthParams:
    """The validated parameters of :class:`TableSynthesizer` and its :class:`Plan` (built
    once per ``fit``)."""

    allow_large_epsilon: bool
    epsilon: float
    delta: float
    method: str
    n_bins: int
    #: The columns whose persons' levels are kept (``person_levels``), else ().
    person_levels: tuple[str, ...]
    #: The schema the models are fitted on (the declared one, plus the hidden levels).
    fit_schema: Schema
    bins: Bins
    relation: Neighbouring
    binning: str
    decode: str
    declared_keep: tuple[tuple[str, str], ...]
    keep: tuple[tuple[int, int], ...]
    check_pairs: int | Literal["auto"]
    contribution: int
    #: The share of ρ the row tables spend (1, or less with synthetic persons).
    row_share: float
    #: Second parents (``"auto"`` resolved).
    extra_parents: int
    pair_tables: str
    plan: Plan
    #: Synthetic persons (the schema declares ``per_person`` columns), else None.
    persons: PersonsPlan | None


def _row_share(_: Schema, checked: Mapping[str, Any]) -> float:
    from ppdp.publish.synth_persons import row_share

    return row_share(checked["fit_schema"], checked)


def _persons(_: Schema, checked: Mapping[str, Any]) -> PersonsPlan | None:
    from ppdp.publish.synth_persons import persons_plan

    return persons_plan(checked["fit_schema"], checked)


def _check_person_levels(value: Any, _: Mapping[str, Any]) -> tuple[str, ...]:
    from ppdp.publish.synth_persons import check_levels_value

    return check_levels_value(value)


#: TableSynthesizer's constraint table, in the order the parameters are checked (``bins``
#: comes from the schema, ``plan`` from the fields before it and ``method``).
TABLE_SYNTH_CONSTRAINTS: tuple[Rule, ...] = (
    *epsilon_rules(),
    Rule("delta", lambda v, _: check_delta("delta", v, allow_zero=False)),
    Rule("method", lambda v, _: check_option("method", v, _METHODS)),
    Rule("n_bins", lambda v, _: _check_n_bins(v)),
    Rule("person_levels", _check_person_levels),
    Rule("fit_schema", _check_fit_schema, attribute="schema"),
    Rule("bins", _check_bins, attribute="schema"),
    Rule("relation", lambda v, _: Neighbouring.parse(v)),
    Rule("binning", lambda v, _: check_option("binning", v, BINNINGS)),
    Rule("decode", lambda v, _: check_option("decode", v, DECODES)),
    Rule("declared_keep", lambda v, _: v.keep, attribute="schema"),
    Rule("keep", lambda v, checked: _check_keep(v, checked)),
    Rule("check_pairs", lambda v, _: check_pairs_value(v)),
    Rule(
        "contribution",
        lambda v, _: v.privacy_unit.max_rows if v.privacy_unit is not None else 1,
        attribute="schema",
    ),
    Rule("row_share", _row_share, attribute="schema"),
    Rule("extra_parents", lambda v, checked: _check_extra_parents(v, checked)),
    Rule("pair_tables", lambda v, _: check_option("pair_tables", v, PAIR_TABLES)),
    Rule("plan", _plan, attribute="method"),
    Rule("persons", _persons, attribute="schema"),
)


def _check_extra_parents(value: Any, checked: Mapping[str, Any]) -> int:
    """``extra_parents``: an integer in ``0..MAX_EXTRA_PARENTS``, at most ``check_pairs``
    (the pairs it adds come from the check), and 0 with synthetic persons; ``"auto"`` is
    :data:`DEFAULT_EXTRA_PARENTS` where those allow it, else 0."""
    rounds = checked["check_pairs"]  # an integer, or "auto": the plan's rounds
    if isinstance(value, str) and value == "auto":
        if checked["row_share"] < 1.0:
            return 0
        return DEFAULT_EXTRA_PARENTS if rounds == "auto" else min(DEFAULT_EXTRA_PARENTS, rounds)
    if isinstance(value, str):
        raise ParameterError(
            f"extra_parents ({value!r}) must be 'auto' or an integer in 0..{MAX_EXTRA_PARENTS}"
        )
    k = check_int("extra_parents", value)
    if not 0 <= k <= MAX_EXTRA_PARENTS:
        raise ParameterError(
            f"extra_parents ({k}) must be an integer in 0..{MAX_EXTRA_PARENTS}: the pairs the "
            "pair check names that get a second parent (0: a tree)"
        )
    if rounds != "auto" and k > rounds:
        raise ParameterError(
            f"extra_parents ({k}) must be at most check_pairs ({checked['check_pairs']}): "
            "each second parent is a pair the check names"
        )
    if k and checked["row_share"] < 1.0:
        raise ParameterError(
            f"extra_parents ({k}) must be 0 with synthetic persons (the schema declares "
            "per_person columns): the person model's tree has one parent per column"
        )
    return k


def zcdp_event(plan: Plan, epsilon: float, delta: float) -> ZCDP:
    """The ledger event of a fit of ``plan``: ρ-zCDP, converted to the stated (ε, δ).

    Its draws: each round of count tables is one Gaussian query (``k`` tables of L2
    sensitivity Δ, each with its own noise, are one vector of sensitivity ``√k·Δ``, rounded
    up: the same privacy loss as the ``k`` tables composed), each edge choice one
    exponential mechanism, and each round of the pair check one exponential mechanism and
    one Gaussian scalar (its residual, sensitivity ``Δ_r + Λ`` once snapped to its grid).
    Every draw of the plan is listed (:meth:`Plan.spent_rho` adds the same terms). See
    ``docs/proofs/table-synth.md`` §Accounting.
    """
    k = plan.contribution  # per person: every sensitivity and selection ε times k
    sens = Fraction(plan.table_sensitivity) * k
    rounds = (
        (len(plan.first), plan.sigma_first),
        (plan.n_second, plan.sigma_second),
        (2 * len(plan.quantile_columns), plan.sigma_quantiles),
        (len(plan.decode_columns), plan.sigma_decode),
        # The second parents' pool: m ≤ extra_parents tables at second_parent_sigma(m),
        # m chosen from released values, spend at most one table's worth at m = 1.
        (1 if plan.extra_parents else 0, second_parent_sigma(plan, 1) if plan.extra_rho else 0),
    )
    draws: list[PrivacyEvent] = [
        Gaussian(l2_sensitivity=_sqrt_up(k * sens * sens), sigma=sigma) for k, sigma in rounds if k
    ]
    if plan.n_select:
        draws += [Exponential(epsilon=_times_up(k, plan.epsilon_select))] * plan.n_select
    if plan.check is not None:
        check = plan.check
        residual = _times_up(k, effective_sensitivity(check.sensitivity, check.grid))
        draws += [
            Exponential(epsilon=_times_up(k, check.epsilon)),
            Gaussian(l2_sensitivity=residual, sigma=check.sigma),
        ] * plan.check_pairs
    return ZCDP(rho=plan.rho, epsilon=epsilon, delta=delta, events=tuple(draws))


def _times_up(k: int, x: float) -> float:
    """``k · x`` rounded up (``x`` itself for ``k = 1``): a per-person ε or sensitivity
    never stated below its exact value."""
    return x if k == 1 else math.nextafter(k * x, math.inf)


def _sqrt_up(x: Fraction) -> float:
    """The smallest float whose square is at least ``x``, exactly."""
    r = math.sqrt(x)
    while Fraction(r) ** 2 < x:
        r = math.nextafter(r, math.inf)
    while r > 0 and Fraction(math.nextafter(r, 0.0)) ** 2 >= x:
        r = math.nextafter(r, 0.0)
    return r


class TableSynthesizer(Publisher):
    """Synthetic rows of the declared schema from noisy marginals (select–measure–generate).

    Every column is discretised from the schema alone: categorical columns and the label
    keep their declared levels; a numeric column whose declared integer domain has at most
    ``n_bins`` values keeps one level per value, any other numeric column is cut into
    ``n_bins`` equal-width bins over its declared bounds (values decode within their bin by
    its measured sub-bins, or uniformly with ``decode="uniform"``) plus one level for each
    bound itself (so the zeros of a zero-heavy column decode to 0 and a rate's ones to 1,
    not across the end bins). ``fit`` then spends a zCDP budget ρ, the largest whose
    conversion gives (ε, δ)-DP, in one of two ways:

    - ``"tree"``: Gaussian (label, x) tables for every feature x (1-way tables without a
      label), then a spanning tree over the features chosen edge by edge with the
      exponential mechanism (Kruskal; the utility of an edge is how far its (label, x, x')
      table is from what the first round implies, as in MST), then the tree's
      (label, x, x') tables. The model is a tree-augmented network: the label, then each
      feature given the label and its tree parent, made consistent (inverse-variance
      averaging, projection, each code's class split smoothed toward the overall split
      with 3σ pseudo-rows, iterative proportional fitting) and sampled ancestrally.
      Shares of ρ: 0.3, 0.1, 0.6.
    - ``"chow-liu"``: MST's model, with the label (if any) one more node: 1-way tables of
      every column, a spanning tree over all columns chosen as above, and the tree's 2-way
      tables, in which the codes whose noisy 1-way count is below 3σ share one level (as MST
      compresses its domain). Smaller tables than ``"tree"``, but on Adult it predicts the
      label no better (misclassification 0.167 / 0.164 / 0.162 at ε = 0.5 / 1 / 2 against
      0.166 / 0.164 / 0.159) with a larger 2-way TVD everywhere
      (``benchmarks/synth/results.md``).
    - ``"pairs"``: Gaussian tables of every pair of columns (label included), and the table
      over the whole domain that best fits them in least squares (mirror descent from the
      uniform table, as Private-PGM estimates). Only for small domains (cells × levels at
      most 2²³, e.g. 16 binary columns).
    - ``"auto"`` (default): ``"pairs"`` when the domain is that small, else ``"tree"``.

    Guarantee: (ε, δ)-differential privacy under replace-one neighbours (``n`` public) by
    default, or under add/remove neighbours (``relation="add/remove"``, ``n`` private),
    through ρ-zCDP of the whole fit; see ``docs/proofs/table-synth.md``.

    Under a schema's privacy unit every draw is calibrated per person (``max_rows`` rows).
    When the schema also declares ``per_person`` columns, the fit synthesises **persons**
    (:mod:`ppdp.publish.synth_persons`): 10 % of ρ on a rows-per-person histogram, 20 % on a
    model of the person table (one row per person: its ``per_person`` columns and rows
    kept), the rest on the rows; each synthetic person's columns are drawn once, its rows
    given them, and the unit's column holds synthetic ids (``P000001``...). ``sample(n)``
    then draws ``n`` persons. In memory, with equal-width or declared bins, only.

    Parameters
    ----------
    epsilon : float
        ε > 0 of one ``fit`` (at most 10 unless ``allow_large_epsilon``). An ε so small
        that a table's noise σ would exceed 2³² (about ε < 1e-9 at δ = 1e-9; its grid would
        be coarser than the integer counts) is refused before anything is spent, with the
        smallest ε that works.
    schema : Schema
        Declared schema; the label, if declared, is synthesised too (any number of classes).
    delta : float, default 1e-9
        δ in (0, 1); keep it far below 1/n (under replace-one, at δ ≥ 1/n ``fit`` warns
        with :class:`~ppdp.exceptions.PrivacyLeakWarning`: such a δ allows releasing a
        record; under add/remove ``n`` is private and nothing is said).
    method : {"auto", "tree", "chow-liu", "pairs"}, default "auto"
    n_bins : int, default 16
        Bins per numeric column, in ``2..4096``. The tables a fit counts
        (:meth:`Plan.counted_cliques`) may hold at most 2²² cells each and 2²⁵ in all
        (:data:`MAX_TABLE_CELLS`, :data:`MAX_COUNTED_CELLS`: a few hundred MB of memory);
        a larger plan is refused before anything is spent, with the largest ``n_bins`` that
        fits.
    relation : {"replace-one", "add/remove"}, default "replace-one"
        The neighbouring relation of the guarantee (it must be the budget ledger's).
        Replace-one keeps ``n`` public and gives each table L2 sensitivity √2. Add/remove
        (the relation of MST, AIM and PrivBayes, whose ε is worth about twice as much as a
        replace-one ε) gives sensitivity 1, so half the noise variance at the same ρ, and
        keeps ``n`` private: every step that needs ``n`` uses its estimate from the noisy
        tables, which is also the number of rows released, the ledger does not
        record ``n``, and any table is released, 0 or 1 rows included (replace-one
        refuses fewer than 2 rows: ``n`` is public there).
    binning : {"auto", "equal-width", "private-quantiles"}, default "auto"
        How a numeric column that declares no ``cuts`` (and is not one code per integer) is
        binned. ``"auto"``: ``n_bins`` equal widths, except that the sub-bin histograms of
        ``decode="sub-bins"`` are measured first and a column whose noisy sub-bins show its
        rows crowded into a few bins (at most ``n_bins // 8`` bins above the noise, holding
        90 %; its bounds far wider than its values) is re-cut from them before the tables:
        the equal-width edges where the rows are kept, empty ranges merged, the crowded
        bins split at their noisy quantiles
        (:func:`~ppdp.publish.table_synth_model.recut_from_sub_bins`; post-processing, no
        extra ρ; with ``decode="uniform"`` or ``n_bins != 16`` it is ``"equal-width"``).
        ``benchmarks/synth/recut.md`` has the figures. ``"private-quantiles"`` first
        spends 10 % of ρ (:data:`QUANTILE_SHARE`) on two Gaussian histograms per such
        column (16 equal-width bins of its bounds, then 16 sub-bins of each bin whose noisy
        count shows rows), then cuts it near its noisy
        ``k / n_bins`` quantiles: a skewed column (an income on ``[0, 1e6]``) gets narrow
        bins where its values are instead of one bin holding most rows. Values decode
        within their interval by the second histogram's noisy counts (an integer column:
        onto the integers of the weighted fine bins, so a heap keeps its share). The cut
        points are part of the release (``guarantee.details["cuts"]``). On a Parquet
        dataset or a Dask frame the fit reads the data twice (the fine histograms, then the
        tables on the measured cut points) and gives the in-memory release for the same
        seed.
    decode : {"sub-bins", "uniform"}, default "sub-bins"
        How values are drawn within an equal-width bin. ``"sub-bins"`` spends 2 % of ρ
        (:data:`DECODE_SHARE`, split equally) on one Gaussian histogram per equal-width
        column of 16 sub-bins per bin (measured before the tables under ``binning="auto"``,
        after them otherwise), and draws a value's
        sub-bin by the noisy counts shrunk toward uniform as far as the noise requires
        (:func:`~ppdp.publish.table_synth_model.sub_bin_weights`), then a value within it;
        an integer column whose range holds at most 2¹⁶ integers decodes onto the
        integers of the sub-bin, so a heaped value (40 hours a week) keeps its share when
        its count exceeds the noise. Nothing is measured, and nothing spent, when no column
        is binned at equal widths (``binning="private-quantiles"`` decodes by its own
        sub-bins). ``"uniform"``: uniformly (an integer column: uniformly over the bin's
        integers), with the whole ρ on the tables (the pair check's 3 % apart). With the
        check, the default splits ρ as 3 % check, 1.94 % sub-bins and the rest for the
        tables and selections. ``benchmarks/synth/suite_decode.md`` has the figures.
    keep : sequence of column pairs, optional
        Pairs whose joint table is always measured, whatever the selection would choose,
        added to the schema's ``keep``: ``[("los", "cost"), ("age", "los")]`` or
        ``"los:cost,age:los"`` (``--keep los:cost``). ``"pairs"`` measures every pair
        anyway. The tree models make each pair an edge by choice before the exponential
        mechanism picks the others (Kruskal from the kept pairs), so its (label, x, x')
        table (``"tree"``) or (x, x') table (``"chow-liu"``) is measured and modelled; a
        pair with the label is already in every table of ``"tree"``. The pairs are public
        parameters: forcing them costs nothing beyond their tables, which the plan spends
        anyway (ρ is split as without ``keep``; the selection's share goes to fewer draws).
        Refused before anything is spent: a column the schema does not declare, a pair
        naming one column twice, and, for the tree models, pairs forming a cycle (a tree
        holds at most F − 1 of them).
    check_pairs : int or "auto", default "auto"
        The pair check, in ``0..100``; ``"auto"``: 6 rounds for a schema without a label
        whose tree leaves at most 50 pairs off (a table of few columns, up to about 11),
        else 3. After the fit, the tree
        models look for the column pairs off the tree that the model reproduces worst,
        privately, before any row is drawn.
        :data:`~ppdp.publish.table_synth_check.CHECK_SHARE` (3 %) of ρ is reserved for it
        in the plan (charged with the rest); each of ``check_pairs`` rounds picks the
        pair of largest L1 residual ``‖T_ij − M_ij‖₁`` between its 2-way table and the
        model's (exponential mechanism), then measures that residual (Gaussian), released as
        a 2-way TVD ± 3σ in ``guarantee.details["checked_pairs"]``. A pair whose whole
        interval is above ``0.1`` plus its table's sampling floor draws a
        :class:`~ppdp.exceptions.LowUtilityWarning` naming it: declare it in ``keep``.
        ``0`` (and ``method="pairs"``, which measures every pair) runs no check and gives
        its share back to the tables. At ε = 1 the interval is about ±0.01 TVD at 30,000 rows
        (±0.1 at 3,000).
    extra_parents : int or "auto", default "auto"
        Second parents, in ``0..10`` and at most ``check_pairs`` (its rounds): the pairs
        the check names (in its order; a pair whose table the noise would swamp, judged from the
        check's released residual, or with no end free to take a second parent, is
        skipped) get their (i, j) table measured, and one end is drawn given its tree
        parent and the other end, so a triangle the tree cannot hold (a star around one
        column) keeps its third side. The plan takes a pool of :data:`EXTRA_SHARE` (5 %)
        of ρ per second parent (at most half their ρ) from the edge tables; the pair
        tables share their part in proportion to cells^(2/3), and the part the skipped ones
        leave measures the edge tables again, so the pool is always spent. ``"auto"``: one
        per check round (at most 6) where the check runs, 0 with ``per_person`` columns
        (whose samplers are trees);
        ``0``: the tree alone. ``benchmarks/synth/second_parents.md`` has the measurements.
    pair_tables : {"labelled", "both", "unlabelled", "auto"}, default "labelled"
        How the label-rooted tree (``method="tree"``, a schema with a label) may measure
        its edge tables: ``"labelled"``, each a (label, i, j) table; ``"unlabelled"``, each
        an (i, j) table summed over the classes, on levels where the codes whose round-1
        noisy counts the noise cannot tell from 0 are merged (runs of adjacent bins for a
        numeric column, as MST compresses its domains), fitted as the third margin of the
        (label, i, j) table; ``"both"``, the selection chooses either form per edge. The
        last two give the (label, x) tables more of ρ (:data:`UNLABELLED_SHARES`). On small
        tables the labelled (label, 18, 18) table of two numeric columns is mostly noise
        and is never chosen; its compressed unlabelled form is. Second parents' pair tables
        are then measured on the same levels (the gate and the pool's split count their
        cells); the pool still comes from the edge tables. ``"auto"``: planned as
        ``"both"``; where the rows (round 1's noisy count when ``n`` is private) are fewer
        than :data:`AUTO_MIN_ROWS`, every edge table keeps the label axis (on a few
        hundred rows the unlabelled forms cost label AUC); not the default, as KDD Cup 99's
        2-way TVD is worse with it. Measured in
        ``benchmarks/synth/credit_pairs.md`` and ``second_parents.md``.
    person_levels : str or sequence of str, optional
        Synthetic persons only (``per_person`` columns): up to 3 numeric columns whose
        persons' persistent levels are kept (a woman's wage level across her years). Each
        person's level of the column (the median over the person's kept rows) becomes a
        hidden per-person column of the person model and the row model, and the row model
        holds each row's deviation from it (within half the declared range); a synthetic
        row's value is its person's level plus its own deviation. The hidden column is not
        released; the charge is the same ρ (``docs/proofs/table-synth.md``, "Synthetic
        persons"). Default None: rows drawn independently given the ``per_person`` columns.
        ``benchmarks/synth/persons.md`` has the measurements.
    random_state : None, int, SeedSequence, Generator or RandomSource, optional
        ``None`` (default) uses the OS CSPRNG; anything else is reproducible, warns, and the
        ledger records the release as seeded.
    allow_large_epsilon : bool, default False
        Accept ε > 10.

    Attributes
    ----------
    release_ : Release
        ``data``: ``n`` synthetic rows (schema columns and the label); ``encoded``: the same
        rows in the feature encoding; ``statistics``: every noisy table, keyed
        ``"noisy:" + "|".join(column names)``; ``guarantee``.

    Notes
    -----
    Distributed input: ``fit(path_or_dask_frame, scheduler=..., output=None)`` takes a
    Parquet dataset (folder, file or glob) or a Dask DataFrame. One scan validates every
    partition (errors as in memory, with the whole table's counts, before anything is
    spent) and reduces the exact count tables every private step reads
    (:meth:`Plan.counted_cliques`: the first round's and every candidate edge's); the noise
    is drawn in the driver in the in-memory order, so the same seed gives the same
    measurements. With ``binning="private-quantiles"`` that scan reduces the exact fine
    histograms of the quantile columns instead; the driver measures the cut points from
    them, and a second scan counts the tables on those bins (one ledger charge for both).
    With ``output=folder`` the ``n`` synthetic rows are written there as partitioned Parquet
    and ``release_.data`` is a lazy Dask frame over those files (``encoded`` is None);
    without it no rows are drawn (``release_.data`` is None) and :meth:`sample_to_parquet`
    writes any number of rows later, partition by partition.

    References
    ----------
    .. [MSM21] R. McKenna, G. Miklau, D. Sheldon. Winning the NIST contest: a scalable and
       general approach to differentially private synthetic data. JPC 11(3), 2021 (MST).
    .. [BS16] M. Bun, T. Steinke. Concentrated differential privacy. TCC 2016.
    .. [CKS20] C. Canonne, G. Kamath, T. Steinke. The discrete Gaussian for differential
       privacy. NeurIPS 2020.
    .. [CR21] M. Cesar, R. Rogers. Bounding, concentrating, and truncating: unifying
       privacy loss composition for data analytics. ALT 2021.

    Examples
    --------
    >>> from ppdp.datasets import load_adult
    >>> df, schema = load_adult("train")
    >>> synth = TableSynthesizer(1.0, schema).fit(df)  # doctest: +SKIP
    >>> synth.sample(1000).shape  # doctest: +SKIP
    (1000, 11)
    """

    supports_distributed: ClassVar[bool] = True
    #: A schema's privacy unit of ``k`` rows: each person's rows bounded to ``k``, every
    #: draw calibrated per person (docs/proofs/privacy-unit.md).
    supports_privacy_unit: ClassVar[bool] = True
    _params_type = TableSynthParams
    _constraints = TABLE_SYNTH_CONSTRAINTS

    def __init__(
        self,
        epsilon: float,
        schema: Schema,
        *,
        delta: float = 1e-9,
        method: Literal["auto", "tree", "chow-liu", "pairs"] = "auto",
        n_bins: int = 16,
        relation: Neighbouring | str = Neighbouring.REPLACE_ONE,
        binning: Literal["auto", "equal-width", "private-quantiles"] = "auto",
        decode: Literal["uniform", "sub-bins"] = "sub-bins",
        keep: Any = None,
        check_pairs: int | Literal["auto"] = "auto",
        extra_parents: int | Literal["auto"] = "auto",
        pair_tables: Literal["labelled", "both", "unlabelled", "auto"] = "labelled",
        person_levels: str | Sequence[str] | None = None,
        random_state: RandomState = None,
        allow_large_epsilon: bool = False,
    ) -> None:
        self.epsilon = epsilon
        self.schema = schema
        self.delta = delta
        self.method = method
        self.n_bins = n_bins
        self.relation = relation
        self.binning = binning
        self.decode = decode
        self.keep = keep
        self.check_pairs = check_pairs
        self.extra_parents = extra_parents
        self.pair_tables = pair_tables
        self.person_levels = person_levels
        self.random_state = random_state
        self.allow_large_epsilon = allow_large_epsilon

    # -- parameters -----------------------------------------------------------------------

    def plan(self) -> Plan:
        """Validate the parameters and return what ``fit`` will measure (public)."""
        return self._params().plan

    @property
    def scan_note(self) -> str | None:
        """Two passes over a distributed input with private-quantile binning (with
        ``binning="auto"`` a second pass only when a crowded column is re-cut: not known
        before the noise is drawn, so not announced)."""
        if not self._params().plan.quantile_columns:
            return None
        return "two passes: the private-quantile cut points first, then the tables"

    def _params(self) -> TableSynthParams:
        params: TableSynthParams = super()._params()
        return params

    def _charges(self, plan: Plan, n_rows: int | None) -> list[Charge]:
        """The ledger charge of one fit: its ρ-zCDP event (ρ, the stated (ε, δ) and the
        draws), one entry; the plan in its details."""
        details = plan.details()
        if n_rows is not None and plan.n_public:  # under add/remove n is private
            details["n"] = n_rows
        if self.schema.privacy_unit is not None:
            details["privacy_unit"] = self.schema.privacy_unit.ledger_dict()
        event = zcdp_event(plan, float(self.epsilon), float(self.delta))
        persons = self._params().persons
        if persons is not None:  # the person model's draws compose with the rows'
            event = persons.event(event)
            details["persons"] = persons.details()
        return [Charge(event, "TableSynthesizer", details)]

    def _planned_charges(self, n_rows: int | None) -> list[Charge]:
        return self._charges(self._params().plan, n_rows)

    # -- data -----------------------------------------------------------------------------

    def _encode(
        self, df: pd.DataFrame, on_invalid: str = "raise"
    ) -> tuple[NDArray[np.float64], NDArray[np.int64] | None]:
        X, y = self.schema.encode(df, on_invalid=on_invalid)
        self._check_rows(X.shape[0])
        params = self._params()
        if params.persons is not None:  # private: read by _release only, then dropped
            from ppdp.publish.synth_persons import person_index, with_levels

            self._person_index = person_index(df, self.schema)
            X = with_levels(X, self.schema, params.person_levels, self._person_index)
        if self.schema.label is not None and y is None:  # pragma: no cover - encode checks
            raise DataValidationError("the data must have the label column")
        return X, y

    # -- distributed input ----------------------------------------------------------------

    def _distributed_include_label(self) -> bool:
        return False  # the label comes as class codes ``y``, as in memory

    def _partition_statistics(
        self, X: NDArray[np.float64], y: NDArray[np.int64] | None
    ) -> MarginalCounts | FineHistograms:
        """What the first scan reduces: exact counts of every table the fit may read
        (:meth:`Plan.counted_cliques`), or, with private quantile binning, the exact fine
        histograms of :attr:`Plan.quantile_columns` (the tables are counted in a second
        scan, once the cut points are measured)."""
        plan = self._params().plan
        if plan.quantile_columns:
            return _fine_histograms(self.schema, plan, X)
        tables = _count_tables(
            X, y, schema=self.schema, bins=plan.bins, cliques=plan.counted_cliques()
        )
        sub_bins = _sub_bin_histograms(self.schema, plan, X)
        return tables if sub_bins is None else TablesAndSubBins(tables, sub_bins)

    def _check_rows(self, n: int) -> None:
        """Refuse fewer than 2 rows where ``n`` is public (replace-one). Under add/remove
        any table is released, 0 or 1 rows included (the model's row count is estimated
        from the noisy tables): a refusal there would tell such tables apart for free."""
        if n < 2 and self._params().plan.n_public:
            raise DataValidationError(
                f"data has {n} row(s); TableSynthesizer needs n >= 2 under replace-one (n is "
                "public there; relation='add/remove' releases any table)"
            )

    def _check_scan(self, scan: Any, on_invalid: str) -> None:
        self._check_rows(scan.n_rows)

    def _check_partitioned(self) -> None:
        """Synthetic persons need each person's rows together: in memory only, for now."""
        if self._params().persons is not None:
            raise ParameterError(
                "schema declares per_person columns: TableSynthesizer synthesises persons from "
                "a pandas DataFrame only (not yet from a Dask DataFrame or a Parquet dataset); "
                "read the table into memory, or drop per_person to synthesise rows"
            )

    def _check_output(self, output: Any, name: str) -> Path | None:
        """``output`` is optional: a new folder for ``n`` synthetic rows, written in ``fit``
        (any ``binning``: private quantiles take a second scan, see
        :meth:`_release_distributed`)."""
        if output is None:
            return None
        return new_folder(output, "output")

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
        params = self._params()
        plan, histograms = params.plan, {}
        if plan.quantile_columns:
            # Pass 1 (the caller's scan) reduced the exact fine histograms; the cut points are
            # measured from them as in memory, then pass 2 counts the tables on those bins.
            plan, histograms = self._place_cuts(plan, params.n_bins, scan.value, source)
            counts = self._count_again(frame, scan, plan, scheduler)
        else:
            counts = scan.value
        sub_bins = None
        if isinstance(counts, TablesAndSubBins):  # decode="sub-bins": pass 1 reduced both
            counts, sub_bins = counts.tables, counts.sub_bins
        if plan.recut:  # the sub-bins first, as in memory; a re-cut column: count again
            recut, decoding = self._measure_decoding(plan, sub_bins, source)
            if recut.bins.cuts != plan.bins.cuts:
                counts = self._count_again(frame, scan, recut, scheduler)
            plan = recut
        release = self._fit_model(plan, counts, source)
        if not plan.recut:
            self._plan, decoding = self._measure_decoding(self._plan, sub_bins, source)
        histograms |= decoding
        statistics = {**histograms, **release.statistics}
        data = None
        if output is not None:
            from ppdp.data.distributed import read_parquet_dataset

            self._write_samples(self._model.n, Path(output), source, scheduler=scheduler)
            data = read_parquet_dataset(output)
        return Release(data=data, encoded=None, guarantee=release.guarantee, statistics=statistics)

    def _count_again(self, frame: Any, scan: Any, plan: Plan, scheduler: Any) -> MarginalCounts:
        """Pass 2 of a private-quantile fit: the exact tables of ``plan`` (its bins cut at
        the measured points), reduced from the partitions like the first scan's value."""
        from ppdp.data.distributed import scan_table

        logger.info(
            "TableSynthesizer: pass 1 of 2 done (fine histograms of %d column(s)); "
            "pass 2 of 2: counting %d table(s) on the measured cut points",
            len(plan.quantile_columns or plan.bins.cuts),
            len(plan.counted_cliques()),
        )
        count = functools.partial(
            _count_tables, schema=self.schema, bins=plan.bins, cliques=plan.counted_cliques()
        )
        # on_invalid="mask" is safe: scan_table encodes every partition in total mode
        # whatever on_invalid is (``encode_collecting``), so the rows counted here are the
        # rows pass 1 read; on_invalid only decides whether the collected problems raise
        # after a pass, and pass 1 already raised them, before the charge, under the
        # caller's mode ("raise" refused the data; "mask" is the accountant's total mode).
        again = scan_table(
            frame,
            self.schema,
            include_label=self._distributed_include_label(),
            on_invalid="mask",
            partition_fn=count,
            scheduler=scheduler,
        )
        if again.n_rows != scan.n_rows or again.report != scan.report:
            # The dataset changed between the passes: the tables would not be those of the
            # rows whose histograms placed the cuts. The budget stays spent (conservative);
            # guarded_release says so.
            from ppdp.data.distributed import DatasetChangedError

            raise DatasetChangedError(
                "data: the dataset changed between TableSynthesizer's two passes (other rows "
                "or other encoding counts)"
            )
        logger.info("TableSynthesizer: pass 2 of 2 done")
        counts: MarginalCounts = again.value
        return counts

    # -- release --------------------------------------------------------------------------

    def _measure_all(
        self, plan: Plan, counts: MarginalCounts, source: RandomSource
    ) -> tuple[
        list[Measurement], list[tuple[int, int]], list[Measurement], dict[tuple[int, int], EdgeForm]
    ]:
        """Every private step of ``fit``, in order (first tables, selection, edge tables).

        ``counts`` holds the exact tables (:meth:`Plan.counted_cliques`): the whole table's
        in memory, the reduced partition counts of a distributed scan. The noise is drawn
        from ``source`` in the same order either way.
        """
        sizes = plan.bins.sizes
        first = [measure_table(counts.table(c), c, plan.sigma_first, source) for c in plan.first]
        if plan.method == "pairs" or plan.n_second == 0:
            return first, [], [], {}
        total = _row_count(plan, counts, first)
        by_attr = {c[-1]: m.values for c, m in zip(plan.first, first, strict=True)}
        # Each feature's level maps, finest first (:func:`_edge_resolutions`): public, from
        # the schema and round 1's noisy tables.
        maps = {a: _edge_resolutions(plan, a, by_attr[a]) for a in plan.features}
        edges, forms = select_tree(
            counts,
            sizes,
            plan.features,
            plan.label,
            by_attr,
            plan.epsilon_select,
            plan.sigma_select or plan.sigma_second,
            source,
            maps,
            total=total,
            utility_sensitivity=plan.utility_sensitivity,
            forced=plan.forced,
            unlabelled=(
                {a: _unlabelled_resolutions(plan, a, by_attr[a]) for a in plan.features}
                if offers_unlabelled(plan, total)
                else None
            ),
            labelled=plan.pair_tables != "unlabelled",
        )
        second = [self._measure_edge(plan, counts, e, forms[e], source) for e in edges]
        return first, edges, second, forms

    @staticmethod
    def _measure_edge(
        plan: Plan, counts: MarginalCounts, e: tuple[int, int], form: EdgeForm, source: RandomSource
    ) -> Measurement:
        """Edge ``e``'s table in ``form`` (its levels; the label axis kept or summed)."""
        exact, clique = _edge_table(plan, counts, e, form)
        return measure_table(exact, clique, plan.sigma_second, source)

    def _fit_model(self, plan: Plan, counts: MarginalCounts, source: RandomSource) -> Release:
        """Measure, select and estimate; keep the model; the release without rows."""
        first, edges, second, forms = self._measure_all(plan, counts, source)
        n = _row_count(plan, counts, first)
        model: Model | JointModel
        if plan.method == "pairs":
            model = fit_joint(n, plan.bins.sizes, first)
        else:
            model = _estimate_tree(plan, n, first, edges, second, forms)
        self._model = model
        self._plan = plan
        _warn_crowded_bins(model, plan.bins, self._params().fit_schema)
        checked = self._check_pairs(plan, counts, edges, source)
        chosen: list[SecondParent] = []
        if plan.extra_parents and isinstance(model, Model):
            chosen = choose_second_parents(plan, model, checked)
            if len(chosen) < plan.extra_parents:
                # The pool's share the named pairs leave: the edge tables again.
                second = _measure_edges_again(
                    plan, counts, edges, second, forms, len(chosen), source
                )
                self._model = _estimate_tree(plan, n, first, edges, second, forms)
        extra = self._add_second_parents(plan, counts, chosen, source)
        names = plan.bins.names
        statistics = {
            "noisy:" + "|".join(names[a] for a in m.clique): m.values
            for m in first + second + extra
        }
        # How each edge table's levels map to codes (public: the schema's resolutions, and
        # under chow-liu round 1's merges of rare codes), needed to read the edge tables.
        for (i, j), form in forms.items():
            for a, mp in zip((i, j), form.maps, strict=True):
                if mp is not None:
                    statistics[f"levels:{names[i]}|{names[j]}:{names[a]}"] = mp
        return Release(
            data=None,
            encoded=None,
            guarantee=self._guarantee(plan, n, edges, forms, checked),
            statistics=statistics,
        )

    def _check_pairs(
        self,
        plan: Plan,
        counts: MarginalCounts,
        edges: list[tuple[int, int]],
        source: RandomSource,
    ) -> list[CheckedPair]:
        """The pair check's private rounds on the fitted model (the last draws of ``fit``,
        before any row is sampled), and a warning per pair it names."""
        model = self._model
        if plan.check is None or not isinstance(model, Model):
            return []
        on_tree = {tuple(sorted(e)) for e in edges}
        candidates = [
            p for p in check_candidates(plan.method, plan.features, plan.label) if p not in on_tree
        ]
        label = plan.label if plan.method == "tree" else None
        checked = run_pair_check(
            model, counts, label, candidates, plan.check_pairs, plan.check, source
        )
        warn_pairs(checked, plan.bins.names)
        return checked

    def _add_second_parents(
        self,
        plan: Plan,
        counts: MarginalCounts,
        chosen: Sequence[SecondParent],
        source: RandomSource,
    ) -> list[Measurement]:
        """Measure the (i, j) table of each pair :func:`choose_second_parents` took from
        those the check named (on its levels, at :func:`pair_sigmas`) and give one end the
        other as a second parent (:func:`with_second_parent`), each given the law of the
        model with the earlier ones (:func:`model_class_law`). The draws follow the
        check's."""
        model = self._model
        if not chosen or not isinstance(model, Model):
            return []
        sigmas = pair_sigmas(plan, [c.cells for c in chosen])
        label = plan.label if plan.method == "tree" else None
        out: list[Measurement] = []
        for c, sigma in zip(chosen, sigmas, strict=True):
            i, j = c.pair
            exact = group_table(exact_pair_table(counts, label, i, j), list(c.maps))
            m = measure_table(exact, (i, j), sigma, source)
            out.append(m)
            totals = [model.pairs[a].sum(axis=0) for a in c.pair]
            m = spread_levels(m, list(zip(c.maps, totals, strict=True)))
            if c.child in model.parent:
                joint = model_class_law(model, (model.parent[c.child], c.second))
            else:
                joint = model_class_law(model, (c.second,))[:, None, :]
            model = with_second_parent(model, c.child, c.second, joint, m)
        self._model = model
        return out

    def _release(
        self,
        X: NDArray[np.float64],
        y: NDArray[np.int64] | None,
        source: RandomSource,
        charges: list[Charge],
    ) -> Release:
        params = self._params()
        if params.persons is not None:
            from ppdp.publish.synth_persons import release_persons

            person, self._person_index = self._person_index, None
            return release_persons(self, params.persons, X, y, person, source)
        fine = _fine_histograms(self.schema, params.plan, X)
        plan, histograms = self._place_cuts(params.plan, params.n_bins, fine, source)
        sub_bins = _sub_bin_histograms(self.schema, plan, X)
        if plan.recut:  # the sub-bins first: the re-cut fixes the codes the tables count
            plan, decoding = self._measure_decoding(plan, sub_bins, source)
        codes = plan.bins.codes(self.schema, X, y)
        counts = MarginalCounts.of(codes, plan.bins.sizes, plan.counted_cliques())
        del codes
        release = self._fit_model(plan, counts, source)
        if not plan.recut:
            self._plan, decoding = self._measure_decoding(self._plan, sub_bins, source)
        histograms |= decoding
        Z, yy = self._decode(self._draw(self._model.n, source), source)
        return Release(
            data=self.schema.decode(Z, yy),
            encoded=Z,
            guarantee=release.guarantee,
            statistics={**histograms, **release.statistics},
        )

    def _place_cuts(
        self, plan: Plan, n_bins: int, fine: FineHistograms | None, source: RandomSource
    ) -> tuple[Plan, dict[str, NDArray[np.float64]]]:
        """``binning="private-quantiles"``: for each of :attr:`Plan.quantile_columns`, a
        Gaussian histogram of its coarse bins, then one of the sub-bins of the coarse bins
        whose noisy count shows rows (:func:`occupied_bins`, chosen from the first: adaptive
        composition), and the plan with the column cut near its noisy quantiles
        (:func:`quantile_cuts`, post-processing). Drawn before every other table, so the
        cut points fix the codes the tables count. The plan as it is otherwise.

        ``fine`` holds the exact :func:`fine_histogram` of each such column (the whole
        table's in memory, the reduced partitions' of a distributed scan): the coarse and
        sub-bin tables are sums of its cells, equal to ``coarse_table`` and ``sub_table`` of
        the fine codes, so both inputs give the same draws for the same ``source``."""
        if not plan.quantile_columns:
            return plan, {}
        assert fine is not None and fine.columns == plan.quantile_columns
        sigma = plan.sigma_quantiles
        cuts: dict[int, tuple[float, ...]] = {}
        weights: dict[int, NDArray[np.float64]] = {}
        released: dict[str, NDArray[np.float64]] = {}
        for a in plan.quantile_columns:
            col = self._params().fit_schema.column(plan.bins.names[a])
            assert isinstance(col, NumericColumn)
            histogram = fine.histogram(a)
            coarse = measure_table(coarse_of(histogram), (a,), sigma, source).values
            occupied = occupied_bins(coarse, sigma)
            sub = (
                measure_table(sub_bins_of(histogram, occupied), (a,), sigma, source).values
                if occupied.size
                else np.zeros(0)
            )
            released |= {
                f"noisy-coarse:{col.name}": coarse,
                f"noisy-sub-bins:{col.name}": sub,
                f"occupied-bins:{col.name}": occupied.astype(np.float64),
            }
            cuts[a] = quantile_cuts(sub, occupied, col, n_bins)
            weights[a] = decoding_weights(sub, occupied)
        bins = plan.bins.with_cuts(cuts, weights)
        return dataclasses.replace(plan, bins=bins), released

    def _measure_decoding(
        self, plan: Plan, sub_bins: FineHistograms | None, source: RandomSource
    ) -> tuple[Plan, dict[str, NDArray[np.float64]]]:
        """``decode="sub-bins"``: for each of :attr:`Plan.decode_columns`, a Gaussian
        histogram of its ``n_bins · SUB_BINS`` sub-bins (:func:`sub_bin_histogram`, one cell
        per row at most) at :attr:`Plan.sigma_decode`, and the plan whose bins decode the
        column by them (:class:`SubBinDecoder`, post-processing); under :attr:`Plan.recut`
        also the crowded columns re-cut from them (:func:`_recut_crowded`). Drawn after every
        table (so a seed's tables get the noise draws they get without it: a paired
        comparison), or under :attr:`Plan.recut` before every table, in memory and
        distributed alike. The plan as it is otherwise."""
        if not plan.decode_columns:
            return plan, {}
        assert sub_bins is not None and sub_bins.columns == plan.decode_columns
        sigma = plan.sigma_decode
        decoders: dict[int, SubBinDecoder] = {}
        released: dict[str, NDArray[np.float64]] = {}
        for a in plan.decode_columns:
            col = self._params().fit_schema.column(plan.bins.names[a])
            assert isinstance(col, NumericColumn)
            exact = sub_bins.histogram(a).astype(np.float64)
            noisy = measure_table(exact, (a,), sigma, source).values
            inner = plan.bins.sizes[a] - 2
            decoders[a] = SubBinDecoder.measured(col, inner, noisy, sigma)
            released[f"noisy-decode-sub-bins:{col.name}"] = noisy
        bins = plan.bins.with_decoders(decoders)
        if plan.recut:
            bins = _recut_crowded(bins, self._params().fit_schema, released, sigma)
        return dataclasses.replace(plan, bins=bins), released

    def _guarantee(
        self,
        plan: Plan,
        n: int,
        edges: list[tuple[int, int]],
        forms: Mapping[tuple[int, int], EdgeForm] | None = None,
        checked: Sequence[CheckedPair] = (),
    ) -> Guarantee:
        names = plan.bins.names
        shown = forms or {}
        unit = self.schema.privacy_unit
        k = plan.contribution
        return Guarantee.approx(
            float(self.epsilon),
            float(self.delta),
            relation=plan.relation,
            mechanism=_MECHANISM,
            assumptions=(
                f"n = {n} public (replace-one neighbours)"
                if plan.n_public
                else f"n private (add/remove neighbours); {n} rows, the number estimated "
                "from the noisy tables"
                if unit is None
                else f"privacy unit: the persons of column {unit.column!r} (read only to bound "
                f"contributions, never released); neighbours differ by one person's rows; each "
                f"person keeps at most {k} row(s), chosen uniformly at random before any "
                f"table; n private ({n} rows, estimated from the noisy tables)",
                f"ρ-zCDP with ρ = {plan.rho:.6g}, converted to (ε, δ) [CKS20]",
                _binning_assumption(plan),
                *_decoding_assumption(plan),
                f"each contingency table has L2 sensitivity "
                f"{_sens(plan.table_sensitivity, k)} (Gaussian noise); each tree edge is chosen "
                "by the exponential mechanism with utility sensitivity "
                f"{_sens(plan.utility_sensitivity, k)}",
                *(
                    [
                        "the tree edges "
                        + ", ".join(f"{names[i]}:{names[j]}" for i, j in plan.forced)
                        + " are kept by choice (keep, public); the others are selected"
                    ]
                    if plan.forced
                    else []
                ),
                *(
                    [
                        f"pair check: {plan.check_pairs} off-tree pair(s) chosen by the "
                        "exponential mechanism on the L1 residual of their 2-way table against "
                        "the fitted model (sensitivity "
                        f"{_sens(plan.utility_sensitivity, k)}), each residual then measured "
                        "with Gaussian noise (σ = "
                        f"{plan.check.sigma:.6g}); {CHECK_SHARE:.0%} of ρ"
                    ]
                    if plan.check is not None
                    else []
                ),
                *(
                    [
                        f"second parents: up to {plan.extra_parents} pair(s) the check names "
                        "(those whose table the noise would not swamp, judged from the check's "
                        "released residual), each (i, j) table measured with Gaussian noise "
                        + (
                            "on the unlabelled edge tables' levels "
                            if offers_unlabelled(plan, n)
                            else ""
                        )
                        + f"(σ = {plan.sigma_extra:.6g} with all of them, shared by "
                        f"cells^(2/3)); a pool of {plan.extra_rho:.6g} of ρ "
                        "taken from the edge tables, and what the measured pairs leave of it "
                        "spent measuring the edge tables again (pooled by inverse variance)"
                    ]
                    if plan.extra_parents
                    else []
                ),
                "the synthetic rows are post-processing of the noisy tables",
            ),
            details={
                **plan.details(),
                **({"privacy_unit": unit.ledger_dict()} if unit is not None else {}),
                "edges": [[names[i], names[j]] for i, j in edges],
                **(
                    {
                        "edge_tables_shape": [
                            shown[e].describe(plan.bins.sizes, e, plan.label) for e in edges
                        ]
                    }
                    if shown
                    else {}
                ),
                **(
                    {"checked_pairs": [c.as_dict(names) for c in checked]}
                    if plan.check is not None
                    else {}
                ),
                **(
                    {"cuts": {names[a]: list(c) for a, c in plan.bins.cuts.items()}}
                    if plan.bins.cuts
                    else {}
                ),
            },
        )

    # -- post-processing ------------------------------------------------------------------

    def _draw(self, n: int, source: RandomSource) -> NDArray[np.int64]:
        model = self._model
        if isinstance(model, JointModel):
            return sample_joint(model, n, source)
        return sample_codes(model, n, source)

    def _decode(
        self, codes: NDArray[np.int64], source: RandomSource
    ) -> tuple[NDArray[np.float64], NDArray[np.int64] | None]:
        return self._plan.bins.encode_codes(self._params().fit_schema, codes, source)

    def sample(self, n: int | None = None, *, random_state: RandomState = None) -> pd.DataFrame:
        """Draw synthetic rows from the fitted model (post-processing: free, repeatable).

        Parameters
        ----------
        n : int, optional
            Number of rows (default: the number of rows ``fit`` saw, or under add/remove
            its estimate from the noisy tables).
        random_state : None, int, SeedSequence, Generator or RandomSource, optional
            ``None`` uses the OS CSPRNG.

        Returns
        -------
        DataFrame
            Schema columns (and the label), decoded: categories valid, numerics inside their
            declared bounds. For more rows than memory holds, use :meth:`sample_to_parquet`.
        """
        self._check_fitted()
        persons = getattr(self, "_persons_model", None)
        if persons is not None:  # n persons, each with their rows
            count = persons.n if n is None else check_int("n", n, minimum=1)
            return persons.sample(count, resolve_random_state(random_state))
        n = self._model.n if n is None else check_int("n", n, minimum=1)
        source = resolve_random_state(random_state)
        Z, y = self._decode(self._draw(n, source), source)
        return self.schema.decode(Z, y)

    def sample_to_parquet(
        self,
        n: int | None,
        output: str | os.PathLike[str],
        *,
        random_state: RandomState = None,
        scheduler: Any = None,
        rows_per_partition: int | None = None,
    ) -> Path:
        """Write ``n`` synthetic rows to a new folder as partitioned Parquet (post-processing).

        Rows are drawn partition by partition (memory bounded by one partition per worker)
        and written with :func:`ppdp.data.distributed.write_parquet_dataset`: files
        ``part-00000.parquet``, ... and ``_SUCCESS``, nothing visible on failure. The rows
        have the law of :meth:`sample`'s: with a tree model the number of rows of each class
        is the same largest-remainder split of ``n``, shared among the partitions as a
        uniformly shuffled table would share them (multivariate hypergeometric); a joint
        model's rows are independent draws. Partition ``i`` reads its own stream
        (:class:`ppdp.random.PartitionStreams`), so the same ``random_state`` and
        ``rows_per_partition`` give the same files whatever the scheduler.

        Parameters
        ----------
        n : int or None
            Number of rows (None: as in :meth:`sample`).
        output : path
            A folder that does not exist yet; its parent must exist.
        random_state : None, int, SeedSequence, Generator or RandomSource, optional
            ``None`` uses the OS CSPRNG.
        scheduler : optional
            ``"local"``, an address ``"tcp://host:8786"``, a ``distributed.Client``, or a
            Dask local scheduler name (default: Dask's default, threads unless a ``Client``
            is active); see :func:`ppdp.data.distributed.dask_session`.
        rows_per_partition : int, optional
            Rows per file (default: about 64 MiB of working memory per partition).

        Returns
        -------
        Path
            The folder written.
        """
        self._check_fitted()
        if getattr(self, "_persons_model", None) is not None:
            raise ParameterError(
                "sample_to_parquet: synthetic persons (per_person columns) are drawn in memory "
                "only for now; use sample(n_persons) and write the frame"
            )
        n = self._model.n if n is None else check_int("n", n, minimum=1)
        path = new_folder(output, "output")
        if rows_per_partition is not None:
            check_int("rows_per_partition", rows_per_partition, minimum=1)
        source = resolve_random_state(random_state)
        from ppdp.data.distributed import dask_session

        with dask_session(scheduler, default_local_cluster=False) as sched:
            return self._write_samples(
                n, path, source, scheduler=sched, rows_per_partition=rows_per_partition
            )

    def _partition_rows(self, n: int, rows_per_partition: int | None) -> list[int]:
        if rows_per_partition is None:
            row_bytes = 8 * (self.schema.n_features + 3 * len(self._plan.bins.sizes))
            rows_per_partition = max(1024, SAMPLE_PARTITION_BYTES // row_bytes)
        full, rest = divmod(n, rows_per_partition)
        return [rows_per_partition] * full + ([rest] if rest else [])

    def _write_samples(
        self,
        n: int,
        path: Path,
        source: RandomSource,
        *,
        scheduler: Any,
        rows_per_partition: int | None = None,
    ) -> Path:
        """Draw ``n`` rows partition by partition and write them to ``path`` (post-processing)."""
        from dask import delayed

        from ppdp.data.distributed import write_parquet_dataset

        sizes = self._partition_rows(n, rows_per_partition)
        model = self._model
        if isinstance(model, JointModel):
            shares: list[Any] = list(sizes)
        else:
            shares = list(_split_classes(class_counts_for(model, n), sizes, source))
        streams = PartitionStreams(source)
        shared = delayed((model, self._plan.bins, self.schema, streams), traverse=False)
        parts = [
            delayed(_sample_partition, pure=True)(shared, share, i)
            for i, share in enumerate(shares)
        ]
        return write_parquet_dataset(parts, path, scheduler=scheduler)


def _fine_histograms(schema: Schema, plan: Plan, X: NDArray[np.float64]) -> FineHistograms | None:
    """The exact fine histograms of ``plan``'s quantile columns in ``X`` (None without)."""
    if not plan.quantile_columns:
        return None
    counts = []
    for a in plan.quantile_columns:
        col = schema.column(plan.bins.names[a])
        assert isinstance(col, NumericColumn)
        counts.append(fine_histogram(fine_codes(col, X[:, schema.blocks[col.name].start])))
    return FineHistograms(plan.quantile_columns, tuple(counts))


def _sub_bin_histograms(
    schema: Schema, plan: Plan, X: NDArray[np.float64]
) -> FineHistograms | None:
    """The exact sub-bin histograms of ``plan``'s decoded columns in ``X`` (None without)."""
    if not plan.decode_columns:
        return None
    counts = []
    for a in plan.decode_columns:
        col = schema.column(plan.bins.names[a])
        assert isinstance(col, NumericColumn)
        inner = plan.bins.sizes[a] - 2
        codes = sub_bin_codes(col, X[:, schema.blocks[col.name].start], inner)
        counts.append(sub_bin_histogram(codes, inner))
    return FineHistograms(plan.decode_columns, tuple(counts))


def _recut_crowded(
    bins: Bins, schema: Schema, released: Mapping[str, NDArray[np.float64]], sigma: float
) -> Bins:
    """``bins`` with each decoded column that its noisy sub-bins show crowded re-cut
    (:func:`recut_from_sub_bins`), decoding within its new bins by the same shrunk sub-bin
    weights as its decoder (on the fine grid: ``n_bins · SUB_BINS == FINE_BINS``).
    Post-processing of ``released`` (the noisy sub-bin histograms) and public ``sigma``."""
    cuts: dict[int, tuple[float, ...]] = {}
    weights: dict[int, NDArray[np.float64]] = {}
    for a, decoder in bins.decoders.items():
        col = schema.column(bins.names[a])
        assert isinstance(col, NumericColumn)
        noisy = released[f"noisy-decode-sub-bins:{col.name}"]
        found = recut_from_sub_bins(noisy, sigma, col, decoder.n_bins)
        if found is not None:
            # Each bin's shares of its sub-bins (the decoder's), times the bin's mass.
            held = decoder.weights.sum(axis=1, keepdims=True)
            shares = decoder.weights / np.maximum(held, 1e-300)
            masses = recut_bin_masses(noisy, sigma, decoder.n_bins)
            cuts[a], weights[a] = found, (shares * masses[:, None]).reshape(-1)
    return bins.with_cuts(cuts, weights) if cuts else bins


def _decoding_assumption(plan: Plan) -> list[str]:
    """How values are drawn within their bins, for the guarantee (empty: uniformly)."""
    if not plan.decode_columns:
        return []
    names = ", ".join(repr(plan.bins.names[a]) for a in plan.decode_columns)
    return [
        f"the values of {names} are drawn within their bins by a Gaussian histogram of "
        f"{SUB_BINS} sub-bins per bin (σ = {plan.sigma_decode:.6g}, part of ρ), measured "
        + (
            "before every table; a column they show crowded into a few bins is cut again "
            "from them (post-processing; its cut points are released)"
            if plan.recut
            else "after every table"
        )
    ]


def _count_tables(
    X: NDArray[np.float64],
    y: NDArray[np.int64] | None,
    *,
    schema: Schema,
    bins: Bins,
    cliques: tuple[tuple[int, ...], ...],
) -> MarginalCounts:
    """Exact counts of ``cliques`` on ``bins`` (a partition task: module level, picklable
    with :func:`functools.partial`, independent of the constructor's plan)."""
    return MarginalCounts.of(bins.codes(schema, X, y), bins.sizes, cliques)


def _binning_assumption(plan: Plan) -> str:
    """How the columns were discretised, for the guarantee."""
    declared = "columns discretised on the declared bounds, cut points and categories"
    clamped = "numeric values clamped to their declared bounds"
    if not plan.quantile_columns:
        return f"{declared} (from the schema alone); {clamped}"
    names = ", ".join(repr(plan.bins.names[a]) for a in plan.quantile_columns)
    return (
        f"{declared}, except {names}: each cut near its quantiles, read from two Gaussian "
        f"histograms (its {FINE_BINS // SUB_BINS} equal-width bins, then {SUB_BINS} "
        f"sub-bins of each bin whose noisy count shows rows; σ = "
        f"{plan.sigma_quantiles:.6g}, part of ρ), measured before every other table; {clamped}"
    )


def _warn_crowded_bins(model: Model | JointModel, bins: Bins, schema: Schema) -> None:
    """A :class:`LowUtilityWarning` per skewed numeric column (:func:`crowded_end_bins`).

    Read from the fitted model, that is from the noisy tables: it costs no privacy."""
    for a, code, share in crowded_end_bins(model, bins):
        col = schema.column(bins.names[a])
        inner = bins.sizes[a] - 2  # the bins between the bounds' own codes
        lo, hi = col.from_unit(np.array([code - 1, code]) / inner)
        which = "first" if code == 1 else "last"
        # A log scale spreads values crowded low in a wide range; it cannot help values
        # already crowded there on the log scale, nor values crowded at the top.
        log = (
            "declare 'scale: log' for the column (its bins then have equal widths on the "
            "log scale), "
            if code == 1 and col.scale == "linear"
            else ""
        )
        warnings.warn(
            f"column {col.name!r}: about {share:.0%} of the released values fall in its {which} "
            f"bin [{lo:.6g}, {hi:.6g}) of {inner}, so the release keeps little of how "
            f"they spread; {log}declare cut points that follow the values (the column's 'cuts' "
            "in the schema, e.g. brackets), let the release place them (binning='private-"
            "quantiles', --binning private-quantiles), declare bounds closer to the values "
            "or more bins (n_bins, --bins) (read from the noisy tables: no privacy cost)",
            LowUtilityWarning,
            stacklevel=user_stacklevel(),
        )


def _sens(value: float, k: int = 1) -> str:
    """A row's sensitivity as the guarantee writes it, times ``k`` rows per person."""
    text = "√2" if value == TABLE_L2_SENSITIVITY else f"{value:g}"
    return text if k == 1 else f"{k} × {text} (per person)"


def _row_count(plan: Plan, counts: MarginalCounts, first: list[Measurement]) -> int:
    """The rows the model stands for: ``n`` where it is public (replace-one), else its
    estimate from the first-round tables (post-processing; at least 1)."""
    if plan.n_public:
        return counts.n
    return max(1, round(noisy_total(first)))


def _split_classes(
    totals: NDArray[np.int64], sizes: list[int], source: RandomSource
) -> list[NDArray[np.int64]]:
    """Class counts of each partition: consecutive blocks of a uniformly shuffled table.

    Sequential multivariate hypergeometric draws (post-processing randomness, from a
    generator keyed by ``source``).
    """
    seed = np.random.SeedSequence([int(w) for w in source.uint64(4)])
    rng = np.random.default_rng(seed)
    left = np.asarray(totals, dtype=np.int64).copy()
    out = []
    for m in sizes:
        if m == int(left.sum()):
            draw = left.copy()
        else:
            draw = rng.multivariate_hypergeometric(left, m).astype(np.int64)
        out.append(draw)
        left -= draw
    return out


def _sample_partition(shared: tuple[Any, Bins, Schema, PartitionStreams], share: Any, index: int):
    """One partition of synthetic rows, decoded (runs on a worker)."""
    model, bins, schema, streams = shared
    source = streams.stream(index)
    if isinstance(model, JointModel):
        codes = sample_joint(model, int(share), source)
    else:
        codes = sample_codes_given_classes(model, share, source)
    Z, y = bins.encode_codes(schema, codes, source)
    return schema.decode(Z, y)
