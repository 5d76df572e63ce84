"""The numerical core of :class:`~ppdp.publish.TableSynthesizer`: bins, plan, estimate, sample.

Everything here is plain numpy. The private steps (:func:`measure` and :func:`select_tree`)
draw their noise from :mod:`ppdp.noise` and :class:`~ppdp.mechanisms.ExponentialMechanism`;
the rest (:func:`estimate`, :func:`sample_codes`) is post-processing of their outputs.
The privacy argument is in ``docs/proofs/table-synth.md``.

The model is a tree-augmented network over the discretised attributes: every feature
depends on the label ``C`` and on at most one other feature (its parent in a spanning tree
chosen privately). Without a label, ``C`` is a constant (one class), and the model is a
Chow–Liu tree, as in MST.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray
from threadpoolctl import threadpool_limits

from ppdp import noise
from ppdp.data import Schema
from ppdp.data.columns import CategoricalColumn, NumericColumn
from ppdp.mechanisms import ExponentialMechanism
from ppdp.mechanisms.calibration import zcdp_delta
from ppdp.random import RandomSource

__all__ = [
    "Bins",
    "FineHistograms",
    "MarginalCounts",
    "Measurement",
    "SubBinDecoder",
    "TablesAndSubBins",
    "cdp_delta",
    "cdp_rho",
    "estimate",
    "measure",
    "measure_table",
    "merge_runs",
    "noisy_total",
    "sample_codes",
    "select_tree",
    "spread_levels",
]

#: L2 sensitivity of one contingency table under replace-one: one cell −1, another +1.
TABLE_L2_SENSITIVITY = math.sqrt(2.0)
#: Sensitivity of an L1-error utility under replace-one (two cells move by one).
UTILITY_SENSITIVITY = 2.0
#: Under add/remove one cell moves by one: L2 sensitivity 1 and L1-utility sensitivity 1.
ADD_REMOVE_SENSITIVITY = 1.0


# -- zCDP ↔ (ε, δ) ------------------------------------------------------------------------


#: The δ at which ρ-zCDP implies (ε, δ)-DP ([CKS20]); the ledger checks a plan's stated
#: (ε, δ) with the same arithmetic.
cdp_delta = zcdp_delta


def cdp_rho(epsilon: float, delta: float) -> float:
    """The largest ρ (to a relative 1e-12, rounded down) whose ρ-zCDP implies (ε, δ)-DP.

    >>> round(cdp_rho(1.0, 1e-9), 5)  # the classic ε = ρ + 2√(ρ ln 1/δ) allows 0.01065
    0.01497
    """
    lo, hi = 0.0, epsilon + 1.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if cdp_delta(mid, epsilon) <= delta:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * hi:
            break
    return lo


# -- discretisation -----------------------------------------------------------------------


@dataclass(frozen=True)
class Bins:
    """How each schema column is cut into codes ``0 … size−1`` (from the schema alone).

    Categorical columns keep their declared categories; a numeric column whose declared
    domain holds at most ``n_bins`` integers gets one code per integer; any other numeric
    column gets ``n_bins + 2`` codes: code 0 for a value exactly at its declared lower
    bound, then ``n_bins`` equal-width bins over ``(lower, upper)``, then the last code for a
    value exactly at its upper bound; a column that declares ``cuts`` gets code 0 for its
    lower bound, one bin per interval between its bounds and cut points (``n_bins`` does not
    apply), and the last code for its upper bound. The bounds' own codes keep the mass of
    zero-heavy columns (capital gains: mostly 0), of rates at 1 (KDD Cup's
    ``same_srv_rate``: 77 % of the rows), of top-coded values and of values clamped to a
    bound at the bound, instead of spreading it over the end bin
    (``benchmarks/synth/bound_codes.py``). The label, when declared, is the last attribute.
    """

    names: tuple[str, ...]
    sizes: tuple[int, ...]
    # "categorical", "integer" (one code per value), "binned" (equal widths), "cut" (at cuts)
    kinds: tuple[str, ...]
    has_label: bool
    #: Cut points of "cut" columns that the schema does not declare (measured privately:
    #: :func:`quantile_cuts`), by attribute.
    cuts: Mapping[int, tuple[float, ...]] = field(default_factory=dict)
    #: Weights of the :data:`FINE_BINS` fine bins that values of those columns decode by
    #: within their bin (:func:`decoding_weights`), by attribute.
    weights: Mapping[int, NDArray[np.float64]] = field(default_factory=dict, compare=False)
    #: The declared group of each code of a categorical column with ``groups``, by attribute.
    groups: Mapping[int, NDArray[np.int64]] = field(default_factory=dict, compare=False)
    #: How values of "binned" attributes decode within their bin when their sub-bins were
    #: measured (``decode="sub-bins"``: :class:`SubBinDecoder`), by attribute.
    decoders: Mapping[int, SubBinDecoder] = field(default_factory=dict, compare=False)

    def cuts_of(self, j: int, col: NumericColumn) -> tuple[float, ...]:
        """The cut points of the "cut" attribute ``j``: measured ones, else the declared."""
        found = self.cuts.get(j, col.cuts)
        assert found is not None
        return found

    def with_cuts(
        self,
        cuts: Mapping[int, tuple[float, ...]],
        weights: Mapping[int, NDArray[np.float64]] | None = None,
    ) -> Bins:
        """These bins with the attributes of ``cuts`` cut there (one code per interval,
        between the bounds' own codes), decoding by ``weights`` where given."""
        sizes, kinds = list(self.sizes), list(self.kinds)
        for j, points in cuts.items():
            sizes[j], kinds[j] = len(points) + 3, "cut"
        return dataclasses.replace(
            self,
            sizes=tuple(sizes),
            kinds=tuple(kinds),
            cuts={**self.cuts, **cuts},
            weights={**self.weights, **(weights or {})},
        )

    def with_decoders(self, decoders: Mapping[int, SubBinDecoder]) -> Bins:
        """These bins with the "binned" attributes of ``decoders`` decoded by them."""
        return dataclasses.replace(self, decoders={**self.decoders, **decoders})

    @classmethod
    def from_schema(cls, schema: Schema, n_bins: int) -> Bins:
        names, sizes, kinds = [], [], []
        groups: dict[int, NDArray[np.int64]] = {}
        for col in schema.columns:
            names.append(col.name)
            if isinstance(col, CategoricalColumn):
                sizes.append(len(col.categories))
                kinds.append("categorical")
                codes = col.group_codes()
                if codes is not None:
                    groups[len(names) - 1] = np.asarray(codes, dtype=np.int64)
            else:
                assert isinstance(col, NumericColumn)
                values = math.floor(col.upper) - math.ceil(col.lower) + 1
                if col.cuts is not None:
                    sizes.append(len(col.cuts) + 3)  # the lower bound, intervals, the upper
                    kinds.append("cut")
                elif col.integer and values <= n_bins:
                    sizes.append(max(values, 1))
                    kinds.append("integer")
                else:
                    sizes.append(n_bins + 2)  # the lower bound, n_bins bins, the upper
                    kinds.append("binned")
        if schema.label is not None:
            names.append(schema.label.name)
            sizes.append(schema.label.n_classes)
            kinds.append("categorical")
        return cls(
            tuple(names), tuple(sizes), tuple(kinds), schema.label is not None, groups=groups
        )

    def codes(
        self, schema: Schema, X: NDArray[np.float64], y: NDArray[np.int64] | None
    ) -> NDArray[np.int64]:
        """Codes (n, d) from the schema's encoding (``[0, 1]`` numerics, one-hot blocks)."""
        n = X.shape[0]
        out = np.empty((n, len(self.names)), dtype=np.int64, order="F")  # columns contiguous
        for j, col in enumerate(schema.columns):
            block = X[:, schema.blocks[col.name]]
            size, kind = self.sizes[j], self.kinds[j]
            if kind == "categorical":
                out[:, j] = np.argmax(block, axis=1)
            elif kind == "integer":
                assert isinstance(col, NumericColumn)
                v = col.from_unit(block[:, 0])
                out[:, j] = np.clip(np.rint(v - math.ceil(col.lower)), 0, size - 1)
            elif kind == "cut":
                assert isinstance(col, NumericColumn)
                b = block[:, 0]
                positions = _cut_positions(col, self.cuts_of(j, col))
                inside = 1 + np.searchsorted(positions, b, side="right")
                out[:, j] = np.where(b <= 0.0, 0, np.where(b >= 1.0, size - 1, inside))
            else:
                b = block[:, 0]
                inside = 1 + np.clip(np.floor(b * (size - 2)), 0, size - 3)
                out[:, j] = np.where(b <= 0.0, 0, np.where(b >= 1.0, size - 1, inside))
        if self.has_label:
            assert y is not None
            out[:, -1] = y
        return out

    def encode_codes(
        self, schema: Schema, codes: NDArray[np.int64], source: RandomSource
    ) -> tuple[NDArray[np.float64], NDArray[np.int64] | None]:
        """The schema encoding of coded rows; binned values uniform within their bin on the
        column's scale (log-uniform for a ``scale="log"`` column), or by the bin's measured
        sub-bins where :attr:`decoders` holds the column."""
        n = codes.shape[0]
        X = np.zeros((n, schema.n_features))
        for j, col in enumerate(schema.columns):
            sl = schema.blocks[col.name]
            size, kind = self.sizes[j], self.kinds[j]
            c = codes[:, j]
            if kind == "categorical":
                X[np.arange(n), sl.start + c] = 1.0
                continue
            assert isinstance(col, NumericColumn)
            if kind == "integer":
                v = math.ceil(col.lower) + c.astype(np.float64)
            elif kind == "cut":
                u = np.asarray(noise.uniform(n, random_state=source))
                cuts = self.cuts_of(j, col)
                if j in self.weights:
                    second = np.asarray(noise.uniform(n, random_state=source))
                    within = _within_weighted_integers if col.integer else _within_weighted
                    v = within(col, cuts, self.weights[j], c, u, second)
                else:
                    v = _within_cuts(col, cuts, c, u)
            else:
                k = np.clip(c - 1, 0, size - 3)  # the bin, for codes 1 … size - 2
                u = np.asarray(noise.uniform(n, random_state=source), dtype=np.float64)
                if j in self.decoders:
                    second = np.asarray(noise.uniform(n, random_state=source))
                    inner = self.decoders[j].values(col, k, u, second)
                else:
                    inner = _within_bins(col, size - 2, k, u)
                v = np.where(c == 0, col.lower, np.where(c == size - 1, col.upper, inner))
            X[:, sl.start] = col.to_unit(v)
        y = codes[:, -1].copy() if self.has_label else None
        return X, y


def _within_bins(
    col: NumericColumn, inner: int, k: NDArray[np.int64], u: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Values in bin ``k`` of ``inner`` equal-width bins of the encoded ``[0, 1]``, drawn by
    ``u``: uniform within the bin on the column's scale (log-uniform in value for a log
    column); an integer column: an integer of the bin strictly between the bounds (they
    have codes of their own), or the bin's nearest when it holds none."""
    if col.scale == "linear":
        span = col.upper - col.lower
        v = col.lower + (k + u) * (span / inner)
        if col.integer:
            lo = np.maximum(np.ceil(col.lower + k * (span / inner)), col.lower + 1)
            hi = np.ceil(col.lower + (k + 1) * (span / inner)) - 1
            hi = np.maximum(np.minimum(hi, col.upper - 1), lo)
            v = np.minimum(lo + np.floor(u * (hi - lo + 1)), hi)
        return v
    v = col.from_unit((k + u) / inner)
    if col.integer:
        lo = np.maximum(np.ceil(col.from_unit(k / inner)), col.lower + 1)
        top = np.ceil(col.from_unit((k + 1) / inner)) - 1
        hi = np.maximum(np.minimum(top, col.upper - 1), lo)
        v = np.clip(np.ceil(v), lo, hi)
    return v


def _within_weighted(
    col: NumericColumn,
    cuts: Sequence[float],
    weights: NDArray[np.float64],
    codes: NDArray[np.int64],
    u: NDArray[np.float64],
    second: NDArray[np.float64],
) -> NDArray[np.float64]:
    """Values of a column cut on fine edges (:func:`quantile_cuts`): code 0 is the lower
    bound and the last code (``len(cuts) + 2``) the upper; code ``k ≥ 1`` picks a fine bin
    of its interval with probability proportional to ``weights`` (uniformly when they are
    all 0 there) using ``u``, then a value uniform within that fine bin using ``second`` (on
    the column's scale: the fine bins are equal widths of the encoded ``[0, 1]``).
    Post-processing of released counts."""
    lo, hi, intervals = _fine_range(col, cuts, codes)
    weighted, mass = _weighted_fine(np.maximum(weights, 0.0), lo, hi, u)
    flat = lo + np.floor(u * (hi - lo)).astype(np.int64)
    fine = np.clip(np.where(mass > 0, weighted, flat), lo, hi - 1)
    v = col.from_unit((fine + second) / FINE_BINS)
    upper = codes == intervals + 1
    return np.where(codes == 0, col.lower, np.where(upper, col.upper, v))


def _fine_range(
    col: NumericColumn, cuts: Sequence[float], codes: NDArray[np.int64]
) -> tuple[NDArray[np.int64], NDArray[np.int64], int]:
    """``(lo, hi, intervals)``: the fine bins ``[lo, hi)`` of each code's interval between
    the cuts (a bound's own code gets the first or last interval's) and how many intervals
    there are."""
    steps = np.rint(col.to_unit(cuts) * FINE_BINS).astype(np.int64)
    starts = np.concatenate([[0], steps])  # fine bin where each interval starts
    ends = np.concatenate([steps, [FINE_BINS]])
    k = np.clip(codes - 1, 0, len(starts) - 1)
    return starts[k], ends[k], len(starts)


def _weighted_fine(
    weights: NDArray[np.float64],
    lo: NDArray[np.int64],
    hi: NDArray[np.int64],
    u: NDArray[np.float64],
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """A fine bin in ``[lo, hi)`` drawn by ``u`` with probability proportional to the
    (non-negative) ``weights``, and the interval's total weight (where it is 0 the bin is
    the interval's last and means nothing)."""
    cum = np.concatenate([[0.0], np.cumsum(weights)])
    mass = cum[hi] - cum[lo]
    fine = np.searchsorted(cum, cum[lo] + u * mass, side="right") - 1
    return np.clip(fine, lo, hi - 1), mass


def _within_weighted_integers(
    col: NumericColumn,
    cuts: Sequence[float],
    weights: NDArray[np.float64],
    codes: NDArray[np.int64],
    u: NDArray[np.float64],
    second: NDArray[np.float64],
) -> NDArray[np.float64]:
    """:func:`_within_weighted` for an integer column: a fine bin of the code's interval by
    ``weights`` restricted to the fine bins that hold an interior integer (read from the
    schema), then by ``second`` one of that fine bin's integers, so a heaped value keeps the
    share its fine bin's count shows. An interval whose weights are all 0 there, and a
    column of more than :data:`MAX_ENUMERATED_INTEGERS` integers, decode as
    :func:`_within_cuts` (uniformly over the interval's integers). Post-processing."""
    ints = _interior_integers(col)
    if ints is None or ints.size == 0:
        return _within_cuts(col, cuts, codes, u)
    fine_of = fine_codes(col, col.to_unit(ints))  # sorted: to_unit is increasing
    first = np.searchsorted(fine_of, np.arange(FINE_BINS + 1)).astype(np.int64)
    held = np.diff(first)
    lo, hi, intervals = _fine_range(col, cuts, codes)
    fine, mass = _weighted_fine(np.where(held > 0, np.maximum(weights, 0.0), 0.0), lo, hi, u)
    count = held[fine]
    pick = first[fine] + np.minimum(np.floor(second * count), np.maximum(count - 1, 0))
    v = ints[np.clip(pick.astype(np.int64), 0, ints.size - 1)]
    inner = (codes >= 1) & (codes <= intervals)  # not a bound's own code
    return np.where(inner & (mass > 0) & (count > 0), v, _within_cuts(col, cuts, codes, u))


def decoding_weights(
    noisy_sub: NDArray[np.float64], occupied: NDArray[np.int64]
) -> NDArray[np.float64]:
    """Fine-bin weights to decode by: the occupied bins' noisy sub-bin counts clipped at 0,
    zero elsewhere (post-processing)."""
    weights = np.zeros(FINE_BINS)
    for k, c in enumerate(np.asarray(occupied, dtype=np.int64)):
        part = noisy_sub[k * SUB_BINS : (k + 1) * SUB_BINS]
        weights[c * SUB_BINS : (c + 1) * SUB_BINS] = np.maximum(part, 0.0)
    return weights


def _cut_positions(col: NumericColumn, cuts: Sequence[float]) -> NDArray[np.float64]:
    """The cut points where the encoding puts them (:meth:`NumericColumn.to_unit`),
    computed as the encoder computes a value's, so a value equal to a cut lands on it."""
    return col.to_unit(cuts)


def _within_cuts(
    col: NumericColumn, cuts: Sequence[float], codes: NDArray[np.int64], u: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Values of a column cut at ``cuts``: code 0 is the lower bound and the last code
    (``len(cuts) + 2``) the upper; code ``k ≥ 1`` is uniform on ``[e_{k−1}, e_k)`` of the
    edges ``lower, cuts…, upper`` (an integer column: uniform over the integers of that
    interval strictly between the bounds). For a log column,
    uniform on the log scale (:meth:`NumericColumn.to_unit`) within the interval, and an
    integer column rounds such a value up into the interval's integers."""
    edges = np.array([col.lower, *cuts, col.upper])
    k = np.clip(codes - 1, 0, len(edges) - 2)
    lo_edge, hi_edge = edges[k], edges[k + 1]
    if col.scale == "linear":
        v = lo_edge + u * (hi_edge - lo_edge)
    else:
        at = col.to_unit(edges)
        v = col.from_unit(at[k] + u * (at[k + 1] - at[k]))
    if col.integer:
        lo = np.maximum(np.ceil(lo_edge), col.lower + 1)
        hi = np.maximum(np.minimum(np.ceil(hi_edge) - 1, col.upper - 1), lo)
        if col.scale == "linear":
            v = np.minimum(lo + np.floor(u * (hi - lo + 1)), hi)
        else:
            v = np.clip(np.ceil(v), lo, hi)
    v = np.where(codes == len(edges), col.upper, np.minimum(v, col.upper))
    return np.where(codes == 0, col.lower, v)


#: Private-quantile binning (``binning="private-quantiles"``) measures a column in two
#: levels: :data:`COARSE_BINS` equal-width bins of its bounds, then :data:`SUB_BINS` equal
#: sub-bins of each coarse bin that holds rows; cut points fall on the sub-bins' edges.
COARSE_BINS = 16
SUB_BINS = 16
FINE_BINS = COARSE_BINS * SUB_BINS
#: A coarse bin is refined when its noisy count reaches this many σ (a bin with no rows
#: does so with probability 0.13 %).
OCCUPIED_SIGMAS = 3.0


def fine_codes(col: NumericColumn, encoded: NDArray[np.float64]) -> NDArray[np.int64]:
    """Codes of a numeric column's encoded values on :data:`FINE_BINS` equal-width bins:
    ``-1`` for either bound itself (each keeps a code of its own, outside these
    histograms), else ``floor(b · FINE_BINS)``; the coarse bin is ``code // SUB_BINS``."""
    b = np.asarray(encoded, dtype=np.float64)
    inside = np.clip(np.floor(b * FINE_BINS), 0, FINE_BINS - 1)
    return np.where((b <= 0.0) | (b >= 1.0), -1, inside).astype(np.int64)


def coarse_table(fine: NDArray[np.int64]) -> NDArray[np.float64]:
    """Counts of the :data:`COARSE_BINS` coarse bins (values at the bounds left out)."""
    inside = fine[fine >= 0]
    return np.bincount(inside // SUB_BINS, minlength=COARSE_BINS).astype(np.float64)


def fine_histogram(fine: NDArray[np.int64]) -> NDArray[np.int64]:
    """Exact counts of the :data:`FINE_BINS` fine bins of :func:`fine_codes` (values at the
    bounds left out): :func:`coarse_of` and :func:`sub_bins_of` read the same counts
    from it as :func:`coarse_table` and :func:`sub_table` from the codes, and histograms of
    disjoint row sets add up (the partitions of a distributed table)."""
    inside = fine[fine >= 0]
    return np.bincount(inside, minlength=FINE_BINS).astype(np.int64)


def coarse_of(histogram: NDArray[np.int64]) -> NDArray[np.float64]:
    """:func:`coarse_table` of the codes whose :func:`fine_histogram` is ``histogram``."""
    fine = np.asarray(histogram, dtype=np.int64).reshape(COARSE_BINS, SUB_BINS)
    return fine.sum(axis=1).astype(np.float64)


def sub_bins_of(histogram: NDArray[np.int64], occupied: NDArray[np.int64]) -> NDArray[np.float64]:
    """:func:`sub_table` of the codes whose :func:`fine_histogram` is ``histogram``: the
    sub-bins of each ``occupied`` coarse bin (increasing, as :func:`occupied_bins` gives
    them), in order."""
    fine = np.asarray(histogram, dtype=np.int64).reshape(COARSE_BINS, SUB_BINS)
    return fine[np.asarray(occupied, dtype=np.int64)].reshape(-1).astype(np.float64)


@dataclass(frozen=True)
class FineHistograms:
    """Exact :func:`fine_histogram` of some numeric columns, mergeable with ``+``.

    What ``binning="private-quantiles"`` reads from the data before the cut points exist:
    the first scan of a distributed table reduces these from its partitions (integer counts,
    so the sum is exactly the whole table's), an in-memory fit counts them at once.

    Attributes
    ----------
    columns : tuple of int
        The attributes (:attr:`Plan.quantile_columns`), in order.
    counts : tuple of ndarray of int64
        One histogram of :data:`FINE_BINS` counts per column.
    """

    columns: tuple[int, ...]
    counts: tuple[NDArray[np.int64], ...]

    def __add__(self, other: FineHistograms) -> FineHistograms:
        if not isinstance(other, FineHistograms):
            return NotImplemented
        if other.columns != self.columns:
            raise ValueError("fine histograms of different columns cannot be added")
        return FineHistograms(
            self.columns, tuple(a + b for a, b in zip(self.counts, other.counts, strict=True))
        )

    def histogram(self, column: int) -> NDArray[np.int64]:
        """The exact fine histogram of attribute ``column``."""
        return self.counts[self.columns.index(column)]


def occupied_bins(noisy_coarse: NDArray[np.float64], sigma: float) -> NDArray[np.int64]:
    """The coarse bins to refine: noisy count at least :data:`OCCUPIED_SIGMAS` σ."""
    return np.flatnonzero(np.asarray(noisy_coarse) >= OCCUPIED_SIGMAS * sigma).astype(np.int64)


def sub_table(fine: NDArray[np.int64], occupied: NDArray[np.int64]) -> NDArray[np.float64]:
    """Counts of the :data:`SUB_BINS` sub-bins of each ``occupied`` coarse bin, in order;
    a row elsewhere (or at a bound) is in no cell, so one row still moves at most
    one cell (the L2 sensitivity of a count table)."""
    slot = np.full(COARSE_BINS, -1, dtype=np.int64)
    slot[occupied] = np.arange(occupied.size)
    inside = fine[fine >= 0]
    where = slot[inside // SUB_BINS]
    keep = where >= 0
    cells = where[keep] * SUB_BINS + inside[keep] % SUB_BINS
    return np.bincount(cells, minlength=occupied.size * SUB_BINS).astype(np.float64)


def quantile_cuts(
    noisy_sub: NDArray[np.float64], occupied: NDArray[np.int64], col: NumericColumn, n_bins: int
) -> tuple[float, ...]:
    """Cut points near the ``k / n_bins`` quantiles of a column (post-processing) from the
    noisy sub-bin counts of its ``occupied`` coarse bins (:func:`sub_table` layout).

    The other coarse bins count as empty: their noise is left out, so a skewed column's
    long empty range adds none (its noise, summed over hundreds of empty fine bins, would
    be worth hundreds of rows). The running sums of the sub-bin counts are not clipped
    (unbiased), and each quantile is placed on the sub-bin edge where their share of the
    total first reaches it (first crossings rise with the quantile). Equal edges merge, so
    a column whose mass sits in few sub-bins gets fewer, narrower bins there. One more cut
    closes the last occupied coarse bin, so the top bin does not spread its rows over the
    empty range above them. With no occupied bin or no positive total, the cuts are the
    equal-width ones.
    """
    leaves = np.zeros(FINE_BINS)
    for k, c in enumerate(np.asarray(occupied, dtype=np.int64)):
        leaves[c * SUB_BINS : (c + 1) * SUB_BINS] = noisy_sub[k * SUB_BINS : (k + 1) * SUB_BINS]
    running = np.cumsum(leaves)
    total = running[-1]
    if not total > 0:
        steps = np.arange(1, n_bins) * (FINE_BINS // n_bins or 1)
    else:
        reached = running[None, :] / total >= (np.arange(1, n_bins) / n_bins)[:, None]
        steps = np.argmax(reached, axis=1) + 1  # each row reaches it: the share ends at 1
    if np.size(occupied):  # where the occupied bins end: the top bin holds no empty range
        steps = np.append(steps, (int(np.max(occupied)) + 1) * SUB_BINS)
    steps = np.unique(steps[(steps > 0) & (steps < FINE_BINS)])
    # FINE_BINS is a power of 2: for a linear column this is lower + k · (upper − lower) /
    # FINE_BINS to the last bit; for a log column the edge on the log scale.
    return tuple(float(v) for v in col.from_unit(steps / FINE_BINS))


# -- decoding inside a bin from measured sub-bins (``decode="sub-bins"``) -------------------

#: ``decode="sub-bins"`` measures each equal-width bin of a binned numeric column in
#: :data:`SUB_BINS` equal sub-bins (one Gaussian histogram of ``n_bins · SUB_BINS`` cells per
#: column). An integer column whose declared range holds at most this many integers decodes
#: onto the integers of each sub-bin, read from the schema (a wider one, within the sub-bin
#: as :func:`_within_bins` does within a bin).
MAX_ENUMERATED_INTEGERS = 1 << 16
#: A bin departs from the uniform decoding only when its noisy sub-bins' departure ``Q``
#: exceeds what noise alone exceeds with this probability (a χ² test at this level).
DECODE_GATE = 1e-3


def sub_bin_codes(
    col: NumericColumn, encoded: NDArray[np.float64], n_bins: int
) -> NDArray[np.int64]:
    """Sub-bin codes of a binned column's encoded values: ``-1`` for either bound itself
    (each has a code of its own), else ``floor(b · n_bins · SUB_BINS)``. Sub-bin ``s`` lies
    in bin ``s // SUB_BINS`` of :meth:`Bins.codes` exactly (scaling by the power of two
    :data:`SUB_BINS` is exact, so the floors agree)."""
    b = np.asarray(encoded, dtype=np.float64)
    cells = n_bins * SUB_BINS
    inside = np.clip(np.floor(b * n_bins * SUB_BINS), 0, cells - 1)
    return np.where((b <= 0.0) | (b >= 1.0), -1, inside).astype(np.int64)


def sub_bin_histogram(codes: NDArray[np.int64], n_bins: int) -> NDArray[np.int64]:
    """Exact counts of the ``n_bins · SUB_BINS`` sub-bins (values at the bounds left out):
    one row is in at most one cell, so the table has a count table's L2 sensitivity."""
    inside = codes[codes >= 0]
    return np.bincount(inside, minlength=n_bins * SUB_BINS).astype(np.int64)


def _interior_integers(col: NumericColumn) -> NDArray[np.float64] | None:
    """The integers strictly between an integer column's bounds (None: not an integer
    column, or more than :data:`MAX_ENUMERATED_INTEGERS` of them)."""
    if not col.integer:
        return None
    lo, hi = math.floor(col.lower) + 1, math.ceil(col.upper) - 1
    if hi - lo + 1 > MAX_ENUMERATED_INTEGERS:
        return None
    return np.arange(lo, max(hi + 1, lo), dtype=np.float64)


def sub_bin_support(col: NumericColumn, n_bins: int) -> NDArray[np.float64]:
    """How many values each sub-bin can hold, from the schema alone (public): the number of
    an integer column's interior integers whose encoding falls in it (zero for a sub-bin
    narrower than one step), else 1 per sub-bin. Decoding spreads a bin uniformly over its
    sub-bins in proportion to this: the uniform decoding that the shrinkage pulls toward."""
    ints = _interior_integers(col)
    cells = n_bins * SUB_BINS
    if ints is None:
        return np.ones(cells)
    codes = sub_bin_codes(col, col.to_unit(ints), n_bins)
    return np.bincount(codes[codes >= 0], minlength=cells).astype(np.float64)


def sub_bin_weights(
    noisy: NDArray[np.float64], support: NDArray[np.float64], n_bins: int, sigma: float
) -> NDArray[np.float64]:
    """Each bin's share of its sub-bins, ``(n_bins, SUB_BINS)``, from the noisy sub-bin
    counts ``noisy``, the public ``support`` and the noise σ (post-processing).

    Within a bin, the ``c`` sub-bins that can hold values (support > 0) have prior shares
    ``π`` proportional to their support (the uniform decoding) and noisy counts ``y`` of total
    ``T``. The estimate is ``Tπ + α (y − Tπ)`` clipped at 0, where ``α = max(0, 1 − G/Q)``,
    ``Q = ‖y − Tπ‖²`` and ``G = E₀ · χ²_{c−1}(1 − DECODE_GATE) / (c − 1)``, with ``E₀ = σ²
    (c − 2 + c‖π‖²)`` the expectation of ``Q`` when the bin is spread as ``π`` exactly (noise
    alone): a positive-part James–Stein factor whose threshold is the χ² test's critical
    value instead of the mean (exact for equal support), so noise alone gives ``α > 0`` in
    only a :data:`DECODE_GATE` share of bins, and then a small one. In a bin whose departure
    from uniform is within the noise (a sparse bin, a smooth one) even a small ``α`` adds
    more noise than it removes error, so such a bin keeps the uniform decoding; a heap whose
    count exceeds the noise by many σ (``Q ≫ G``: ``G`` is about 20σ² with 6 sub-bins, 38σ²
    with 16) gives ``α`` near 1 and keeps its share. A bin with ``T ≤ 0`` or at most one
    possible sub-bin decodes as ``π``.
    """
    from scipy.stats import chi2

    y = np.asarray(noisy, dtype=np.float64).reshape(n_bins, SUB_BINS)
    m = np.asarray(support, dtype=np.float64).reshape(n_bins, SUB_BINS)
    active = m > 0
    c = active.sum(axis=1)
    mass = m.sum(axis=1, keepdims=True)
    pi = np.divide(m, mass, out=np.full_like(m, 1.0 / SUB_BINS), where=mass > 0)
    y = np.where(active, y, 0.0)
    total = y.sum(axis=1, keepdims=True)
    resid = y - total * pi
    q = (resid**2).sum(axis=1)
    e0 = sigma**2 * (c - 2 + c * (pi**2).sum(axis=1))
    dof = np.maximum(c - 1, 1)
    gate = e0 * chi2.isf(DECODE_GATE, dof) / dof
    alpha = np.where(q > gate, 1.0 - gate / np.where(q > 0, q, 1.0), 0.0)
    alpha = np.where((c >= 2) & (total[:, 0] > 0), np.clip(alpha, 0.0, 1.0), 0.0)
    est = np.maximum(total * pi + alpha[:, None] * resid, 0.0) * active
    flat = est.sum(axis=1, keepdims=True) <= 0
    return np.where(flat, pi, est)


@dataclass(frozen=True)
class SubBinDecoder:
    """How a binned column's values are drawn within their bin (``decode="sub-bins"``):
    a sub-bin by its weight (:func:`sub_bin_weights`), then a value within the sub-bin.

    Attributes
    ----------
    n_bins : int
        Equal-width bins of the column (between its bounds' own codes).
    weights : ndarray, shape (n_bins, SUB_BINS)
        Each bin's (unnormalised) sub-bin weights.
    integers : ndarray or None
        The interior integers of an integer column (:func:`_interior_integers`), sorted;
        ``first[s]`` is the index of the first in sub-bin ``s`` (``first[-1]`` their number).
    """

    n_bins: int
    weights: NDArray[np.float64]
    integers: NDArray[np.float64] | None
    first: NDArray[np.int64] | None

    @classmethod
    def measured(
        cls, col: NumericColumn, n_bins: int, noisy: NDArray[np.float64], sigma: float
    ) -> SubBinDecoder:
        """The decoder of ``col`` from its noisy sub-bin histogram (post-processing)."""
        weights = sub_bin_weights(noisy, sub_bin_support(col, n_bins), n_bins, sigma)
        ints = _interior_integers(col)
        first = None
        if ints is not None:
            codes = sub_bin_codes(col, col.to_unit(ints), n_bins)
            first = np.searchsorted(codes, np.arange(n_bins * SUB_BINS + 1)).astype(np.int64)
        return cls(n_bins, weights, ints, first)

    def values(
        self,
        col: NumericColumn,
        k: NDArray[np.int64],
        u: NDArray[np.float64],
        second: NDArray[np.float64],
    ) -> NDArray[np.float64]:
        """Values of rows in bins ``k``: a sub-bin drawn by ``u`` (multiples of 2⁻⁵³, as
        :func:`ppdp.noise.uniform` gives), then by ``second`` an integer of that sub-bin
        (integer columns; a bin holding none decodes as :func:`_within_bins`), else a value
        uniform within it on the column's scale."""
        s = _draw_grouped(_cdf_rows(self.weights), np.asarray(k, dtype=np.int64), u)
        cell = k * SUB_BINS + s
        cells = self.n_bins * SUB_BINS
        if self.integers is None:
            if col.integer:
                return _within_bins(col, cells, cell, second)
            return col.from_unit((cell + second) / cells)
        assert self.first is not None
        lo = self.first[cell]
        count = self.first[cell + 1] - lo
        pick = lo + np.minimum(np.floor(second * count), np.maximum(count - 1, 0)).astype(np.int64)
        ints = self.integers[np.clip(pick, 0, max(self.integers.size - 1, 0))]
        if self.integers.size == 0:
            return _within_bins(col, self.n_bins, k, second)
        return np.where(count > 0, ints, _within_bins(col, self.n_bins, k, second))


# -- re-cutting crowded columns from their measured sub-bins (``binning="auto"``) ------------

#: ``binning="auto"`` re-cuts a column only when at most ``n_bins // RECUT_FEW`` of its
#: bins are occupied and they hold :data:`RECUT_MASS` of its whole noisy mass.
RECUT_FEW = 8
RECUT_MASS = 0.9
#: A re-cut column gets at most ``RECUT_SHARE · n_bins`` intervals where the rows are
#: (finer cuts there made the crowded columns the tree's hub and cost other pairs' edges:
#: ``benchmarks/synth/recut.md``).
RECUT_SHARE = 0.75


def recut_from_sub_bins(
    noisy: NDArray[np.float64], sigma: float, col: NumericColumn, n_bins: int
) -> tuple[float, ...] | None:
    """Cut points for a column whose rows crowd into a few of its ``n_bins`` equal-width
    bins, from its noisy sub-bin histogram ``noisy`` (``n_bins · SUB_BINS`` cells, each with
    noise σ; :func:`sub_bin_histogram`'s layout), or None to keep the equal widths.

    Post-processing of ``noisy`` with public ``sigma``, ``n_bins`` and schema. A bin's
    noisy count is the sum of its sub-bins (noise ``σ_c = √SUB_BINS · σ``); it is
    *occupied* when that reaches ``f = OCCUPIED_SIGMAS · σ_c``. The column is re-cut only
    when the histogram resolves it (``n_bins · f`` at most the occupied bins' noisy mass
    ``M``: an unoccupied bin then holds at most about ``M / n_bins``) and it is *crowded*
    (at most ``n_bins // RECUT_FEW`` bins are occupied and ``M`` is at least
    :data:`RECUT_MASS` of the sum of all the bins' noisy counts). The
    equal-width edges that border an occupied bin are kept, so the bins where the rows are
    stay aligned with the equal widths, and each run of unoccupied bins becomes one
    interval. The intervals this frees split the occupied bins holding more than
    ``M / n_bins``, in proportion to their mass (largest remainders), at most as many in a
    bin as keep each part above ``f`` on average, each bin at the quantiles of its noisy
    sub-bins' running sums (on sub-bin edges; equal edges merge). The column never gets
    more than ``n_bins`` intervals. Edges are on the fine grid of ``n_bins · SUB_BINS``
    equal widths of the encoded ``[0, 1]``.
    """
    y = np.asarray(noisy, dtype=np.float64).reshape(n_bins, SUB_BINS)
    coarse = y.sum(axis=1)
    floor = OCCUPIED_SIGMAS * math.sqrt(SUB_BINS) * sigma
    occupied = coarse >= floor
    mass = np.where(occupied, coarse, 0.0)
    total = mass.sum()
    if not total >= n_bins * floor:
        return None
    # A few occupied bins, holding most of the whole noisy mass (unclipped: unbiased). The
    # count of occupied bins is the robust half: a column with a tail the noise half hides
    # (its share near the threshold) has a third bin above 3σ_c (flights' delays: 92 %).
    if occupied.sum() > max(n_bins // RECUT_FEW, 1) or not total >= RECUT_MASS * coarse.sum():
        return None
    edges = [k for k in range(1, n_bins) if occupied[k - 1] or occupied[k]]
    crowded = np.where(mass > total / n_bins, mass, 0.0)
    spare = min(n_bins - (len(edges) + 1), int(n_bins * RECUT_SHARE) - int(occupied.sum()))
    extra = _largest_remainder_split(crowded, max(spare, 0))
    extra = np.minimum(extra, np.floor(mass / floor).astype(np.int64) - 1).clip(0)
    if not extra.any():
        return None
    steps = [k * SUB_BINS for k in edges]
    for k in np.flatnonzero(extra):
        running = np.cumsum(y[k])
        levels = np.arange(1, extra[k] + 1) / (extra[k] + 1)
        inner = np.argmax(running[None, :] / running[-1] >= levels[:, None], axis=1) + 1
        steps += [k * SUB_BINS + int(s) for s in inner if 0 < s < SUB_BINS]
    points = np.unique(np.asarray(steps, dtype=np.int64))
    return tuple(float(v) for v in col.from_unit(points / (n_bins * SUB_BINS)))


def recut_bin_masses(noisy: NDArray[np.float64], sigma: float, n_bins: int) -> NDArray[np.float64]:
    """Each equal-width bin's mass for decoding a re-cut column (:func:`recut_from_sub_bins`)
    within its intervals, from the same noisy sub-bins (post-processing).

    An occupied bin keeps its noisy count. A run of unoccupied bins (one interval of the
    re-cut column) gets its noisy counts fitted by least squares under a monotone shape,
    rising toward the occupied bins: non-increasing after the last occupied bin,
    non-decreasing before the first, constant between two (pool-adjacent-violators), then
    clipped at 0; raw noisy counts there (σ_c per bin, as large as the rows a tail holds)
    would scatter a tail's rows over its run.
    """
    coarse = np.asarray(noisy, dtype=np.float64).reshape(n_bins, SUB_BINS).sum(axis=1)
    occupied = coarse >= OCCUPIED_SIGMAS * math.sqrt(SUB_BINS) * sigma
    out = coarse.copy()
    where = np.flatnonzero(occupied)
    k = 0
    while k < n_bins:
        if occupied[k]:
            k += 1
            continue
        end = k
        while end < n_bins and not occupied[end]:
            end += 1
        run = coarse[k:end]
        if where.size and k > where[-1]:  # the upper tail
            fit = _decreasing(run)
        elif where.size and end <= where[0]:  # the lower tail
            fit = _decreasing(run[::-1])[::-1]
        else:
            fit = np.full(run.size, run.mean())
        out[k:end] = fit
        k = end
    return np.maximum(out, 0.0)


def _decreasing(v: NDArray[np.float64]) -> NDArray[np.float64]:
    """The non-increasing least-squares fit of ``v`` (pool-adjacent-violators)."""
    blocks: list[list[float]] = []  # [sum, count]
    for x in v:
        blocks.append([float(x), 1.0])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] < blocks[-1][0] / blocks[-1][1]:
            total, count = blocks.pop()
            blocks[-1][0] += total
            blocks[-1][1] += count
    return np.concatenate([np.full(int(c), t / c) for t, c in blocks])


def _largest_remainder_split(weights: NDArray[np.float64], total: int) -> NDArray[np.int64]:
    """``total`` split in proportion to the non-negative ``weights`` (largest remainders)."""
    w = np.maximum(weights, 0.0)
    if not w.sum() > 0:
        return np.zeros(w.size, dtype=np.int64)
    share = w / w.sum() * total
    out = np.floor(share).astype(np.int64)
    left = total - int(out.sum())
    out[np.argsort(-(share - out), kind="stable")[:left]] += 1
    return out


@dataclass(frozen=True)
class TablesAndSubBins:
    """What the first scan of a distributed fit with ``decode="sub-bins"`` reduces: the
    exact count tables and the exact sub-bin histograms (:func:`sub_bin_histogram`) of the
    decoded columns, both mergeable with ``+``."""

    tables: MarginalCounts
    sub_bins: FineHistograms

    def __add__(self, other: TablesAndSubBins) -> TablesAndSubBins:
        if not isinstance(other, TablesAndSubBins):
            return NotImplemented
        return TablesAndSubBins(self.tables + other.tables, self.sub_bins + other.sub_bins)


# -- measurement ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Measurement:
    """A noisy contingency table over ``clique`` (attribute indices), with its noise σ."""

    clique: tuple[int, ...]
    values: NDArray[np.float64]  # shape = sizes of the clique's attributes
    sigma: float


def table(
    codes: NDArray[np.int64], sizes: Sequence[int], clique: Sequence[int]
) -> NDArray[np.float64]:
    """The exact contingency table (counts) of ``codes`` over ``clique``."""
    shape = tuple(sizes[a] for a in clique)
    if not clique:
        return np.array(float(codes.shape[0]))
    flat = np.ravel_multi_index(tuple(codes[:, a] for a in clique), shape)
    return np.bincount(flat, minlength=int(np.prod(shape))).astype(np.float64).reshape(shape)


@dataclass(frozen=True)
class MarginalCounts:
    """Exact contingency tables of several cliques, mergeable with ``+`` (a scan's value).

    What every private step of a fit reads from the data: the partitions of a distributed
    table each count their rows, the counts add up exactly (integers), and the driver
    measures and selects from the sums as an in-memory fit does from the whole table.

    Attributes
    ----------
    n : int
        Rows counted.
    sizes : tuple of int
        Codes per attribute.
    cliques : tuple of tuple of int
        The tables' attributes, in order.
    tables : tuple of ndarray of int64
        One table per clique, shaped by the clique's sizes.
    """

    n: int
    sizes: tuple[int, ...]
    cliques: tuple[tuple[int, ...], ...]
    tables: tuple[NDArray[np.int64], ...]

    @classmethod
    def of(
        cls, codes: NDArray[np.int64], sizes: Sequence[int], cliques: Sequence[tuple[int, ...]]
    ) -> MarginalCounts:
        """Count ``codes`` (n, d) over every clique (consecutive cliques sharing all but
        their last attribute reuse one flat index)."""
        sizes = tuple(int(s) for s in sizes)
        table_codes = np.asfortranarray(codes, dtype=np.int64)  # no copy for Bins.codes output
        cols = [table_codes[:, a] for a in range(codes.shape[1])]
        prefix: tuple[int, ...] | None = None
        base = np.zeros(codes.shape[0], dtype=np.int64)
        out: list[NDArray[np.int64]] = []
        for clique in cliques:
            shape = tuple(sizes[a] for a in clique)
            if not clique:
                out.append(np.array(codes.shape[0], dtype=np.int64))
                continue
            head = tuple(clique[:-1])
            if head != prefix:
                prefix = head
                base = np.zeros(codes.shape[0], dtype=np.int64)
                for a in head:
                    base = base * sizes[a] + cols[a]
            last = clique[-1]
            flat = base * sizes[last] + cols[last]
            counts = np.bincount(flat, minlength=math.prod(shape)).astype(np.int64)
            out.append(counts.reshape(shape))
        return cls(int(codes.shape[0]), sizes, tuple(tuple(c) for c in cliques), tuple(out))

    def __add__(self, other: MarginalCounts) -> MarginalCounts:
        if not isinstance(other, MarginalCounts):
            return NotImplemented
        if other.cliques != self.cliques or other.sizes != self.sizes:
            raise ValueError("marginal counts over different cliques cannot be added")
        return MarginalCounts(
            self.n + other.n,
            self.sizes,
            self.cliques,
            tuple(a + b for a, b in zip(self.tables, other.tables, strict=True)),
        )

    def table(self, clique: Sequence[int]) -> NDArray[np.float64]:
        """The exact table of ``clique`` (as :func:`table` gives it on the whole table)."""
        key = tuple(clique)
        try:
            i = self.cliques.index(key)
        except ValueError:
            raise KeyError(f"clique {key} was not counted") from None
        return self.tables[i].astype(np.float64)

    @property
    def nbytes(self) -> int:
        """Bytes held by the tables."""
        return int(sum(t.nbytes for t in self.tables))


def sigma_for(rho: float, sensitivity: float = TABLE_L2_SENSITIVITY) -> float:
    """σ of a Gaussian count table costing ``rho`` at L2 ``sensitivity`` (ρ = Δ²/(2σ²):
    1/σ² under replace-one, 1/(2σ²) under add/remove); inf for ``rho = 0`` (an ε too small
    to plan: refused before anything is spent)."""
    if not rho > 0.0:
        return math.inf
    return math.sqrt(sensitivity**2 / (2.0 * rho))


def noisy_total(measurements: Sequence[Measurement]) -> float:
    """The number of rows estimated from noisy tables (post-processing).

    Each table's sum is ``n`` plus Gaussian noise of variance ``cells·σ²``; the estimate is
    their inverse-variance average. Under add/remove neighbours ``n`` is private and every
    step that needs it (the independence tables of the selection, the projection of the
    class counts, the number of rows drawn) uses this instead.
    """
    weights = [1.0 / (m.values.size * m.sigma**2) for m in measurements]
    sums = [float(m.values.sum()) for m in measurements]
    return float(np.dot(weights, sums) / np.sum(weights))


#: The largest σ of a noisy count table: its noise grid ``noise.granularity(σ)`` must be
#: at most 1, so that integer counts are on it exactly (snapping changes nothing).
MAX_TABLE_SIGMA = 2.0**32


#: A code is kept as its own level in the edge tables when its noisy count is at least
#: this many standard deviations of that count's noise; the others share one level.
SUPPORT_SIGMAS = 3.0
#: The tree model pulls each code's class split toward the overall one with a weight of
#: this many noise standard deviations (pseudo-rows) of the code's cells: a code whose
#: count is a few σ is mostly noise, and its noisy split would read as a strong signal.
PRIOR_SIGMAS = 3.0


def compress_levels(
    first: NDArray[np.float64],
    sigma: float,
    factor: float = SUPPORT_SIGMAS,
    groups: NDArray[np.int64] | None = None,
) -> NDArray[np.int64]:
    """Which edge-table level each code of one attribute maps to (post-processing).

    ``first`` is the attribute's noisy first-round table, (K, k) or (k,), measured at
    ``sigma`` per cell. A code whose noisy total over the classes is below
    ``factor·σ·√K`` (indistinguishable from noise) is merged with the other such codes into
    one last level, as MST compresses its domain ([MSM21]); the supported codes keep a level
    each, in code order. One lone unsupported code keeps its own level (merging gains
    nothing). With declared ``groups`` (the group of each code, public) the unsupported
    codes of each group share one level instead, after the supported codes' levels. The map
    is a function of the noisy table and the schema only, so the edge tables measured over
    it are adaptive choices, which zCDP composes as usual.
    """
    table = first.reshape(-1, first.shape[-1])
    total = table.sum(axis=0)
    supported = total >= factor * sigma * math.sqrt(table.shape[0])
    if int((~supported).sum()) < 2:
        return np.arange(total.size, dtype=np.int64)
    levels = np.cumsum(supported) - 1
    if groups is None:
        return np.where(supported, levels, int(supported.sum())).astype(np.int64)
    # Unsupported codes: one level per group that has any, numbered after the supported.
    rare_groups = np.unique(groups[~supported])
    rare_level = int(supported.sum()) + np.searchsorted(rare_groups, groups)
    return np.where(supported, levels, rare_level).astype(np.int64)


def merge_runs(
    first: NDArray[np.float64], sigma: float, factor: float = SUPPORT_SIGMAS
) -> NDArray[np.int64]:
    """Which level each code of an ordered (numeric) attribute maps to (post-processing).

    As :func:`compress_levels`, a code whose noisy total is below ``factor·σ·√K`` is
    unsupported, but each run of adjacent unsupported codes gets one level of its own, in
    code order, so a level never joins the two tails of a column.
    """
    table = first.reshape(-1, first.shape[-1])
    supported = table.sum(axis=0) >= factor * sigma * math.sqrt(table.shape[0])
    # A new level starts at every supported code and at the first code of each run.
    starts = supported | np.concatenate(([True], supported[:-1]))
    return (np.cumsum(starts) - 1).astype(np.int64)


def group_table(
    exact: NDArray[np.float64], maps: Sequence[NDArray[np.int64] | None]
) -> NDArray[np.float64]:
    """``exact`` with each axis's codes summed into the levels of its map (``None``: as is)."""
    out = exact
    for axis, m in enumerate(maps):
        if m is None:
            continue
        size = int(m.max()) + 1
        onehot = np.zeros((m.size, size))
        onehot[np.arange(m.size), m] = 1.0
        out = np.moveaxis(np.tensordot(np.moveaxis(out, axis, -1), onehot, axes=1), -1, axis)
    return out


def measure(
    codes: NDArray[np.int64],
    sizes: Sequence[int],
    clique: tuple[int, ...],
    sigma: float,
    source: RandomSource,
) -> Measurement:
    """The Gaussian mechanism on one contingency table (ρ = 1/σ² under replace-one).

    Counts are integers and the grid Λ of :func:`ppdp.noise.gaussian` is a power of two
    below 1, so snapping leaves them exact and the sensitivity stays √2.
    """
    return measure_table(table(codes, sizes, clique), clique, sigma, source)


def measure_table(
    exact: NDArray[np.float64], clique: tuple[int, ...], sigma: float, source: RandomSource
) -> Measurement:
    """:func:`measure` on an exact count table already computed (in memory or reduced)."""
    noisy = draw_tables(exact, sigma, 1, source)[0]
    return Measurement(clique, noisy.reshape(exact.shape), sigma)


def draw_tables(
    exact: NDArray[np.float64], sigma: float, n_draws: int, source: RandomSource
) -> NDArray[np.float64]:
    """``n_draws`` independent noisy copies of a count table, shape ``(n_draws, cells)``.

    The release path of :func:`measure` (batched for the audit, whose broken control draws
    from a rescaled source, :class:`ppdp.audit.ScaledNoise`).
    """
    if not sigma <= MAX_TABLE_SIGMA:  # pragma: no cover - TableSynthesizer's plan refuses it
        raise ValueError(f"sigma ({sigma}) too large for exact integer snapping")
    flat = exact.reshape(1, -1)
    draw = np.asarray(noise.gaussian(sigma, (n_draws, flat.shape[1]), random_state=source))
    return flat + draw


# -- edge forms ----------------------------------------------------------------------------


def resolutions(bins: Bins, a: int) -> list[NDArray[np.int64] | None]:
    """The level maps of attribute ``a`` that the schema alone offers its edge tables.

    ``None`` is the codes themselves; a categorical column with declared ``groups`` also
    offers its groups (each code summed into its group's level).
    """
    group = bins.groups.get(a)
    if group is None or int(group.max()) + 1 >= bins.sizes[a]:
        return [None]
    return [None, group]


@dataclass(frozen=True)
class EdgeForm:
    """How an edge's table is measured: the level map of each endpoint (``None``: its
    codes), in the edge's ``(i, j)`` order. The label axis, when there is one, is kept."""

    maps: tuple[NDArray[np.int64] | None, NDArray[np.int64] | None]
    #: Whether the table keeps the label axis: ``False`` for a (i, j) table summed over
    #: the classes (``pair_tables``), which the model fits as a third margin.
    labelled: bool = True

    def levels(self, sizes: Sequence[int], edge: tuple[int, int]) -> tuple[int, int]:
        """How many levels each endpoint has in the measured table."""
        (i, mi), (j, mj) = zip(edge, self.maps, strict=True)
        return (
            sizes[i] if mi is None else int(mi.max()) + 1,
            sizes[j] if mj is None else int(mj.max()) + 1,
        )

    def describe(self, sizes: Sequence[int], edge: tuple[int, int], label: int | None) -> str:
        """E.g. ``"label x 6 x 18"``: the measured table's shape (public)."""
        dims = self.levels(sizes, edge)
        lead = [] if label is None or not self.labelled else ["label"]
        return " x ".join([*lead, *(str(v) for v in dims)])


def edge_forms(
    i: int,
    j: int,
    maps: Mapping[int, list[NDArray[np.int64] | None]],
    labelled: bool = True,
) -> list[EdgeForm]:
    """The forms the selection may choose for edge ``(i, j)``: the endpoints' level maps
    (``maps[a]``, finest first) taken step by step, an endpoint with fewer steps staying
    at its coarsest; ``labelled=False`` gives the same forms without the label axis."""
    steps = max(len(maps[i]), len(maps[j]))
    return [
        EdgeForm((maps[i][min(r, len(maps[i]) - 1)], maps[j][min(r, len(maps[j]) - 1)]), labelled)
        for r in range(steps)
    ]


def form_table(exact: NDArray[np.float64], form: EdgeForm) -> NDArray[np.float64]:
    """A (C, i, j) table (shape (K, k_i, k_j); K = 1 without a label) in ``form``: each
    endpoint's codes summed into the form's levels, and the classes summed (shape
    (1, ·, ·)) for a form without the label axis."""
    if not form.labelled:
        exact = exact.sum(axis=0, keepdims=True)
    return group_table(exact, (None, *form.maps))


# -- selection ------------------------------------------------------------------------------


def _independent(
    m_i: NDArray[np.float64], m_j: NDArray[np.float64], m_c: NDArray[np.float64]
) -> NDArray[np.float64]:
    """``N(c, i) N(c, j) / N(c)``: the (C, i, j) table if i ⊥ j given C."""
    with np.errstate(divide="ignore", invalid="ignore"):
        w = np.where(m_c > 0, 1.0 / m_c, 0.0)
    return m_i[:, :, None] * m_j[:, None, :] * w[:, None, None]


def edge_utilities(
    counts: MarginalCounts,
    sizes: Sequence[int],
    features: Sequence[int],
    label: int | None,
    margins: Mapping[int, NDArray[np.float64]],
    class_totals: NDArray[np.float64],
    sigma_edge: float,
    maps: Mapping[int, list[NDArray[np.int64] | None]],
    unlabelled: Mapping[int, list[NDArray[np.int64] | None]] | None = None,
    labelled: bool = True,
) -> tuple[list[tuple[int, int, EdgeForm]], list[float]]:
    """Every candidate (edge, form) of :func:`select_tree` and its utility.

    ``margins[a]`` is the clipped round-1 (K, k_a) table of ``a`` (K = 1 without a label)
    and ``class_totals`` the (K,) class counts the independence tables divide by.
    ``unlabelled`` (with a label): the level maps of the forms without the label axis,
    also candidates; ``labelled=False`` leaves out the forms with it.
    """
    feats = list(features)
    cand: list[tuple[int, int, EdgeForm]] = []
    util: list[float] = []
    for x, i in enumerate(feats):
        for j in feats[x + 1 :]:
            clique = (i, j) if label is None else (label, i, j)
            exact = counts.table(clique).reshape(class_totals.size, sizes[i], sizes[j])
            est = _independent(margins[i], margins[j], class_totals)
            forms = edge_forms(i, j, maps) if labelled or label is None else []
            if unlabelled is not None and label is not None:
                forms += edge_forms(i, j, unlabelled, labelled=False)
            for form in forms:
                shown = form_table(exact, form)
                err = float(np.abs(shown - form_table(est, form)).sum())
                cand.append((i, j, form))
                util.append(err - math.sqrt(2.0 / math.pi) * sigma_edge * shown.size)
    return cand, util


def select_tree(
    counts: MarginalCounts | NDArray[np.int64],
    sizes: Sequence[int],
    features: Sequence[int],
    label: int | None,
    first: dict[int, NDArray[np.float64]],
    epsilon_step: float,
    sigma_edge: float,
    source: RandomSource,
    maps: Mapping[int, list[NDArray[np.int64] | None]] | None = None,
    *,
    total: float,
    utility_sensitivity: float = UTILITY_SENSITIVITY,
    forced: Sequence[tuple[int, int]] = (),
    unlabelled: Mapping[int, list[NDArray[np.int64] | None]] | None = None,
    labelled: bool = True,
) -> tuple[list[tuple[int, int]], dict[tuple[int, int], EdgeForm]]:
    """A spanning tree over ``features`` and the form of each edge's table: Kruskal, each
    edge and its form chosen together by the exponential mechanism.

    ``forced`` edges (public, acyclic, each ``(i, j)`` in ``features`` order) come first,
    by choice, in their finest form; the mechanism then chooses the
    ``len(features) − 1 − len(forced)`` others.

    A candidate is an edge ``(i, j)`` in one of its forms (:func:`edge_forms`: the level
    maps ``maps[a]`` of its endpoints, finest first, ``None`` meaning the codes: e.g. a
    long-tail column's rare codes merged, or its declared groups). Its utility is
    ``‖T(D) − T̂‖₁ − √(2/π)·σ·cells``: ``T`` the exact (C, i, j) table in that form, ``T̂``
    the table the first-round measurements ``first`` imply if ``i ⊥ j | C``, in the same
    form, and the last term the expected L1 error of measuring the form's ``cells`` at
    ``sigma_edge`` (public). ``T̂``, the forms and the correction are public, and summing
    cells into levels does not raise an L1 distance's sensitivity, so every utility moves
    by at most 2 under replace-one and 1 under add/remove (``utility_sensitivity``). Each
    of the choices is
    ``epsilon_step``-DP, hence ``epsilon_step²/8``-zCDP ([CR21]). ``total`` is the number of
    rows used in ``T̂`` without a label: ``n`` where it is public (replace-one), else a
    noisy estimate (:func:`noisy_total`), so that ``T̂`` stays public.

    ``counts`` holds the exact tables: :class:`MarginalCounts` with every candidate's
    (C, i, j) table (a distributed scan's), or the coded rows ``(n, d)`` themselves.
    """
    if not isinstance(counts, MarginalCounts):
        pre = () if label is None else (label,)
        cliques = [(*pre, i, j) for x, i in enumerate(features) for j in features[x + 1 :]]
        counts = MarginalCounts.of(counts, sizes, cliques)
    feats = list(features)
    if len(feats) < 2:
        return [], {}
    res = dict(maps or {})
    res = {a: res.get(a, [None]) for a in feats}
    clean = {a: np.maximum(v, 0.0) for a, v in first.items()}
    if label is None:
        m_c = np.array([float(total)])
        marg = {a: clean[a][None, :] for a in feats}
    else:
        marg = {a: clean[a] for a in feats}  # (K, k_a)
        m_c = np.mean([marg[a].sum(axis=1) for a in feats], axis=0)
    cand, util = edge_utilities(
        counts, sizes, feats, label, marg, m_c, sigma_edge, res, unlabelled, labelled
    )
    parent = {a: a for a in feats}

    def root(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    chosen: list[tuple[int, int]] = []
    forms: dict[tuple[int, int], EdgeForm] = {}
    for i, j in forced:
        assert root(i) != root(j), "forced edges must form no cycle"
        chosen.append((i, j))
        forms[(i, j)] = EdgeForm((res[i][0], res[j][0]))
        parent[root(i)] = root(j)
    u = np.asarray(util)
    for _ in range(len(feats) - 1 - len(forced)):
        # The candidates are the edges joining two components: a function of the
        # edges chosen so far (public), not of the data.
        ok = np.array([root(i) != root(j) for i, j, _ in cand])
        idx = np.nonzero(ok)[0]
        mech = ExponentialMechanism(
            epsilon=epsilon_step, sensitivity=utility_sensitivity, allow_large_epsilon=True
        )
        k = idx[mech.randomise(u[idx], random_state=source)]
        i, j, form = cand[k]
        chosen.append((i, j))
        forms[(i, j)] = form
        parent[root(i)] = root(j)
    return chosen, forms


# -- estimation (post-processing) -----------------------------------------------------------


def _project_rows(v: NDArray[np.float64], totals: NDArray[np.float64]) -> NDArray[np.float64]:
    """Each row of ``v`` projected (Euclidean) onto ``{x ≥ 0, Σx = total}``."""
    out = np.empty_like(v)
    for r in range(v.shape[0]):
        t = max(float(totals[r]), 0.0)
        row = v[r]
        if t == 0.0:
            out[r] = 0.0
            continue
        u = np.sort(row)[::-1]
        css = np.cumsum(u) - t
        k = np.arange(1, row.size + 1)
        rho = int(np.nonzero(u - css / k > 0)[0][-1])
        out[r] = np.maximum(row - css[rho] / (rho + 1), 0.0)
    return out


def _level_totals(table: NDArray[np.float64], level: NDArray[np.int64]) -> NDArray[np.float64]:
    """A (K, k) table's columns summed into the levels of ``level``: (K, levels)."""
    totals = np.zeros((table.shape[0], int(level.max()) + 1))
    np.add.at(totals, (slice(None), level), table)
    return totals


def _within(table: NDArray[np.float64], level: NDArray[np.int64]) -> NDArray[np.float64]:
    """Each code's share of its level's count, per class (uniform in an empty level)."""
    k = int(level.max()) + 1
    per_level = _level_totals(table, level)[:, level]
    uniform = 1.0 / np.bincount(level, minlength=k)[level]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(per_level > 0, table / per_level, uniform[None, :])


@dataclass(frozen=True)
class Model:
    """The fitted tree model: class counts, (C, x) tables and (C, parent, child) tables."""

    n: int
    sizes: tuple[int, ...]
    label: int | None
    class_counts: NDArray[np.float64]  # (K,)
    pairs: dict[int, NDArray[np.float64]]  # a -> (K, k_a)
    order: tuple[int, ...]  # features in sampling order (each after its parent)
    parent: dict[int, int]  # feature -> parent feature (the tree's root has none)
    triples: dict[int, NDArray[np.float64]]  # child -> (K, k_parent, k_child)
    #: Children with a second parent (``extra_parents``): child -> (that parent, the
    #: (K, k_parent, k_second, k_child) table the child is drawn from). ``order`` then
    #: puts each such child after both its parents.
    extra: dict[int, tuple[int, NDArray[np.float64]]] = field(default_factory=dict)


def second_parent_child(model: Model, i: int, j: int) -> tuple[int, int] | None:
    """``(child, second parent)`` for the off-tree pair ``(i, j)``: the descendant gets
    its ancestor, else the later of the two in ``order`` gets the earlier, else (that end
    already has a second parent) the earlier gets the later where no cycle follows; None
    when no end can take one (public: a function of the model's structure)."""
    if i in _ancestors(model, j):
        options = [(j, i)]
    elif j in _ancestors(model, i):
        options = [(i, j)]
    else:
        pos = {a: x for x, a in enumerate(model.order)}
        late, early = (i, j) if pos[i] > pos[j] else (j, i)
        options = [(late, early), (early, late)]
    free = [(c, s) for c, s in options if c not in model.extra and c not in _ancestors(model, s)]
    return free[0] if free else None


def _ancestors(model: Model, a: int) -> set[int]:
    """Every column ``a`` is drawn after: its tree parent, its second parent, theirs, …"""
    out: set[int] = set()
    stack = [a]
    while stack:
        b = stack.pop()
        up = [model.parent[b]] if b in model.parent else []
        up += [model.extra[b][0]] if b in model.extra else []
        stack += [u for u in up if u not in out]
        out.update(up)
    return out


def second_parent_placed(model: Model, child: int, second: int) -> Model:
    """``model``'s structure with ``child`` given the second parent ``second`` (no table
    yet: what :func:`second_parent_child` and the sampling order see once it is added)."""
    extra = {**model.extra, child: (second, np.zeros((0, 0, 0, 0)))}
    return dataclasses.replace(model, extra=extra, order=_order_with(model, extra))


def with_second_parent(
    model: Model,
    child: int,
    second: int,
    joint: NDArray[np.float64],
    measured: Measurement,
    *,
    ipf_iterations: int = 30,
) -> Model:
    """``model`` with ``child`` drawn given the class, its tree parent and ``second``
    (post-processing of the noisy pair table ``measured``).

    ``joint`` is the model's (K, k_parent, k_second) table of the rows it samples (for a
    root child, (K, 1, k_second)). The start ``Q(c, p, s, x) = joint(c, p, s) · P(x | c, p)``
    is the tree's own law; the measured (second, child) table, pulled toward independence
    (:func:`_shrink_edge_table`) and fitted to the model's margins of both, is then
    matched by iterative proportional fitting in turn with ``Q``'s (c, p, x) margin (the
    tree's edge table) and its (c, p, s) margin (``joint``: the law the sampler draws the
    parents from, so the conditional reproduces ``Q``), so every table the tree held is
    kept and the pair gains the measured association. The child's new conditional is ``Q``
    normalised over ``x``.
    """
    t = model.triples[child] if child in model.parent else model.pairs[child][:, None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        tot = t.sum(axis=2, keepdims=True)
        cond = np.where(tot > 0, t / np.where(tot > 0, tot, 1.0), 1.0 / t.shape[2])
    q = joint[:, :, :, None] * cond[:, :, None, :] + 1e-9
    keep = q.sum(axis=2)  # (K, p, x): the tree's table, kept
    rows = q.sum(axis=(0, 1, 3))[None, :]
    cols = q.sum(axis=(0, 1, 2))[None, :]
    pair = measured.values.reshape(1, *measured.values.shape[-2:])
    if measured.clique[0] != second:
        pair = pair.transpose(0, 2, 1)
    pair = _shrink_edge_table(pair, rows, cols, measured.sigma)[0] + 1e-3
    for _ in range(ipf_iterations):
        with np.errstate(divide="ignore", invalid="ignore"):
            pair = pair * np.nan_to_num(rows[0] / pair.sum(axis=1))[:, None]
            pair = pair * np.nan_to_num(cols[0] / pair.sum(axis=0))[None, :]
    for _ in range(ipf_iterations):
        with np.errstate(divide="ignore", invalid="ignore"):
            q = q * np.nan_to_num(pair / q.sum(axis=(0, 1)))[None, None, :, :]
            q = q * np.nan_to_num(keep / q.sum(axis=2))[:, :, None, :]
            q = q * np.nan_to_num(joint / q.sum(axis=3))[:, :, :, None]
    extra = {**model.extra, child: (second, q)}
    return dataclasses.replace(model, extra=extra, order=_order_with(model, extra))


def _feature_conditional(model: Model, a: int) -> tuple[tuple[int, ...], NDArray[np.float64]]:
    """The law the sampler draws feature ``a`` from, as a factor over ``(class, [tree
    parent], [second parent], a)`` (the class is variable ``-1``): each row of the fitted
    table normalised over ``a``, a row of no mass uniform (as :func:`_cdf_rows` draws)."""
    if a in model.extra:
        s, q = model.extra[a]
        head = (-1, model.parent[a], s) if a in model.parent else (-1, s)
        t = q if a in model.parent else q[:, 0]
    elif a in model.parent:
        head, t = (-1, model.parent[a]), model.triples[a]
    else:
        head, t = (-1,), np.maximum(model.pairs[a], 0.0)
    tot = t.sum(axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        cond = np.where(tot > 0, t / np.where(tot > 0, tot, 1.0), 1.0 / t.shape[-1])
    return (*head, a), cond


def model_class_law(model: Model, cols: Sequence[int]) -> NDArray[np.float64]:
    """The expected (class, *cols) table of the rows the model samples (counts summing to
    the class counts): exact, with or without second parents (post-processing).

    The sampler's law is a Bayesian network (class, then each feature given the class, its
    tree parent and its second parent); only the ancestors of ``cols`` matter (every other
    conditional sums to 1), and those are summed out one at a time by variable elimination,
    each time the one whose product of factors has the fewest cells."""
    need: set[int] = set()
    stack = list(cols)
    while stack:
        a = stack.pop()
        if a in need:
            continue
        need.add(a)
        stack += [model.parent[a]] if a in model.parent else []
        stack += [model.extra[a][0]] if a in model.extra else []
    factors = [((-1,), np.asarray(model.class_counts, dtype=np.float64))]
    factors += [_feature_conditional(model, a) for a in sorted(need)]
    size = {-1: model.class_counts.size, **{a: model.sizes[a] for a in need}}
    for _ in range(len(need - set(cols))):
        v = min(need - set(cols), key=lambda u: (_cost(factors, size, u), u))
        need.discard(v)
        used = [f for f in factors if v in f[0]]
        factors = [f for f in factors if v not in f[0]]
        keep = tuple(sorted({u for f in used for u in f[0]} - {v}))
        factors.append((keep, _contract(used, keep)))
    return _contract(factors, (-1, *cols))


def _cost(factors: Sequence[tuple[tuple[int, ...], NDArray]], size: Mapping, v: int) -> int:
    """Cells of the product of the factors that hold variable ``v``."""
    return math.prod(size[u] for u in {u for f in factors if v in f[0] for u in f[0]})


def _contract(
    factors: Sequence[tuple[tuple[int, ...], NDArray[np.float64]]], out: tuple[int, ...]
) -> NDArray[np.float64]:
    """The product of ``factors`` summed onto the variables ``out`` (one einsum)."""
    names = {v: i for i, v in enumerate(dict.fromkeys([*out, *(u for f in factors for u in f[0])]))}
    args: list = []
    for vars_, arr in factors:
        args += [arr, [names[u] for u in vars_]]
    return np.einsum(*args, [names[u] for u in out], optimize=True)


def _order_with(model: Model, extra: Mapping[int, tuple[int, NDArray[np.float64]]]) -> tuple:
    """The features in an order where each comes after its tree parent and its second
    parent: the tree's order, each feature held back until its parents are placed."""
    placed: list[int] = []
    done: set[int] = set()
    waiting = list(model.order)
    while waiting:
        for a in waiting:
            need = [model.parent[a]] if a in model.parent else []
            need += [extra[a][0]] if a in extra else []
            if all(b in done for b in need):
                placed.append(a)
                done.add(a)
                waiting.remove(a)
                break
        else:  # pragma: no cover - second_parent_child keeps the graph acyclic
            raise AssertionError("second parents form a cycle")
    return tuple(placed)


def estimate(
    n: int,
    sizes: Sequence[int],
    features: Sequence[int],
    label: int | None,
    first: dict[int, Measurement],
    edges: list[tuple[int, int]],
    second: dict[tuple[int, int], Measurement],
    *,
    forms: Mapping[tuple[int, int], EdgeForm] | None = None,
    ipf_iterations: int = 20,
) -> Model:
    """Consistent non-negative tables from the noisy ones (post-processing only).

    ``forms`` says how each edge's table was measured (:class:`EdgeForm`: each endpoint's
    level map); an edge without one is a table of codes.

    1. Each (C, x) table is the inverse-variance average of its own measurement and the
       margins of the edge tables in which x's code has a level of its own (an edge table
       without the label axis updates the code's total: :func:`_add_unlabelled_margins`); the class
       counts are the inverse-variance average of every (C, x) table's class margin,
       projected to ``{≥ 0, Σ = n}`` (``n`` public, or its noisy estimate under
       add/remove); each (C, x) table is then projected row by row onto those counts,
       its code totals replaced by its margin's own projection
       (:func:`_with_projected_margin`), and each code's class split is smoothed toward
       the overall one
       (:func:`_smooth_class_splits`, :data:`PRIOR_SIGMAS`).
    2. Each edge table's parent rows are pulled toward independence given the class
       (:func:`_shrink_edge_table`: a rare code's noise-dominated conditional would otherwise
       read as a strong association) and made ≥ 0: a row within the noise clipped at 0, a
       well-measured row projected onto ``{≥ 0, Σ = its total}``; its levels are spread over their
       codes by the codes' shares of the (C, x) tables, and iterative proportional fitting
       matches it to its two (C, x) tables (a small floor keeps every cell reachable).
    """
    feats = list(features)
    K = sizes[label] if label is not None else 1
    form_of = dict(forms or {})
    for e in edges:
        form_of.setdefault(e, EdgeForm((None, None)))

    def as3(m: Measurement) -> NDArray[np.float64]:
        return m.values.reshape((-1, *m.values.shape[-2:]))

    def as2(m: Measurement) -> NDArray[np.float64]:
        return m.values.reshape((K, m.values.shape[-1]))

    def level_map(a: int, m: NDArray[np.int64] | None) -> NDArray[np.int64]:
        return np.arange(sizes[a], dtype=np.int64) if m is None else m

    # 1. (C, x) tables
    acc = {a: as2(first[a]) / first[a].sigma ** 2 for a in feats}
    wts = {a: np.full(sizes[a], 1.0 / first[a].sigma ** 2) for a in feats}
    unlabelled = [e for e in edges if as3(second[e]).shape[0] != K]
    for i, j in edges:
        if (i, j) in unlabelled:
            continue
        m, form = second[(i, j)], form_of[(i, j)]
        t = as3(m)
        var = m.sigma**2
        margins = ((i, t.sum(axis=2), t.shape[2]), (j, t.sum(axis=1), t.shape[1]))
        for (a, margin, other), mp in zip(margins, form.maps, strict=True):
            lv = level_map(a, mp)
            # A code alone in its level: the edge table's margin measures it directly.
            keep = np.bincount(lv)[lv] == 1
            acc[a][:, keep] = acc[a][:, keep] + margin[:, lv[keep]] / (var * other)
            wts[a][keep] = wts[a][keep] + 1.0 / (var * other)
    avg = {a: acc[a] / wts[a][None, :] for a in feats}
    _add_unlabelled_margins(avg, wts, K, [(e, second[e], form_of[e]) for e in unlabelled])
    if label is None:
        counts = np.array([float(n)])
    else:
        num = np.zeros(K)
        den = 0.0
        for a in feats:
            var = float((1.0 / wts[a]).sum())
            num += avg[a].sum(axis=1) / var
            den += 1.0 / var
        counts = _project_rows((num / den)[None, :], np.array([float(n)]))[0]
    pairs = {a: _project_rows(avg[a], counts) for a in feats}
    if label is not None:
        pairs = {a: _with_projected_margin(pairs[a], avg[a], counts) for a in feats}
    if label is not None:
        pairs = {
            a: _smooth_class_splits(pairs[a], counts, PRIOR_SIGMAS * np.sqrt(1.0 / wts[a]))
            for a in feats
        }

    # 2. edge tables, oriented from the root outwards
    adj: dict[int, list[int]] = {a: [] for a in feats}
    for i, j in edges:
        adj[i].append(j)
        adj[j].append(i)
    order: list[int] = []
    parent: dict[int, int] = {}
    seen: set[int] = set()
    for start in feats:
        if start in seen:
            continue
        seen.add(start)
        queue = [start]
        while queue:
            a = queue.pop(0)
            order.append(a)
            for b in adj[a]:
                if b not in seen:
                    seen.add(b)
                    parent[b] = a
                    queue.append(b)
    triples: dict[int, NDArray[np.float64]] = {}
    for child, par in parent.items():
        key = (par, child) if (par, child) in second else (child, par)
        form = form_of[key]
        t = as3(second[key])
        lv_par, lv_child = (level_map(a, m) for a, m in zip(key, form.maps, strict=True))
        if key[0] != par:
            t = t.transpose(0, 2, 1)
            lv_par, lv_child = lv_child, lv_par
        row, col = pairs[par], pairs[child]
        # A table without the label axis is read against the margins summed over the classes.
        r2, c2 = (row, col)
        if t.shape[0] != K:
            r2, c2 = row.sum(0, keepdims=True), col.sum(0, keepdims=True)
        t = _shrink_edge_table(
            t, _level_totals(r2, lv_par), _level_totals(c2, lv_child), second[key].sigma
        )
        # Back from the edge table's levels to codes, each code its share of its level.
        t = t + 1e-3
        t = t[:, lv_par][:, :, lv_child] * _within(r2, lv_par)[:, :, None]
        t = t * _within(c2, lv_child)[:, None, :]
        joint = None
        if t.shape[0] != K:
            # No label axis: the (C, parent, child) table of largest entropy whose three
            # 2-way margins are the two (C, x) tables and this one (IPF from uniform).
            joint, t = t[0], np.ones((K, *t.shape[1:]))
        for _ in range(ipf_iterations):
            with np.errstate(divide="ignore", invalid="ignore"):
                if joint is not None:
                    t = t * np.nan_to_num(joint / t.sum(axis=0))[None, :, :]
                t = t * np.nan_to_num(row / t.sum(axis=2))[:, :, None]
                t = t * np.nan_to_num(col / t.sum(axis=1))[:, None, :]
        triples[child] = t
    return Model(
        n=n,
        sizes=tuple(sizes),
        label=label,
        class_counts=counts,
        pairs=pairs,
        order=tuple(order),
        parent=parent,
        triples=triples,
    )


def _with_projected_margin(
    table: NDArray[np.float64],
    noisy: NDArray[np.float64],
    counts: NDArray[np.float64],
    iterations: int = 20,
) -> NDArray[np.float64]:
    """A (K, k) table with its code totals replaced by the noisy table's margin projected
    onto ``{≥ 0, Σ = n}`` (post-processing).

    ``table`` holds each class row of ``noisy`` projected onto its class count; summed, the
    K projections keep K times the positive noise of an empty code. The margin
    ``Σ_c noisy(c, x)`` has K times the signal and √K times the noise of a row, so its one
    projection removes more of the noise of a sparse column (measured:
    ``benchmarks/synth/credit_pairs.md``). Each code keeps ``table``'s class split; iterative
    proportional fitting then restores the class counts and the projected margin.
    """
    total = np.array([float(counts.sum())])
    margin = _project_rows(noisy.sum(axis=0)[None, :], total)[0]
    col = table.sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        split = np.where(col > 0, table / col, (counts / max(total[0], 1e-300))[:, None])
        out = split * margin[None, :]
        for _ in range(iterations):
            out = out * np.nan_to_num(counts / out.sum(axis=1))[:, None]
            out = out * np.nan_to_num(margin / out.sum(axis=0))[None, :]
    return out


def spread_levels(
    m: Measurement, ends: Sequence[tuple[NDArray[np.int64] | None, NDArray[np.float64]]]
) -> Measurement:
    """A noisy (i, j) table measured on levels, spread back over the codes: each code gets
    its share of its level by ``ends[k] = (level map, the codes' counts)`` (post-processing;
    a ``None`` map leaves that axis as it is). The σ stays the levels' (conservative)."""
    t = m.values.reshape(m.values.shape[-2:])
    for axis, (mp, counts) in enumerate(ends):
        if mp is None:
            continue
        share = _within(np.maximum(counts, 0.0)[None, :], mp)[0]
        t = np.take(t, mp, axis=axis) * (share[:, None] if axis == 0 else share[None, :])
    return Measurement(m.clique, t, m.sigma)


def _add_unlabelled_margins(
    avg: dict[int, NDArray[np.float64]],
    wts: dict[int, NDArray[np.float64]],
    K: int,
    tables: list[tuple[tuple[int, int], Measurement, EdgeForm]],
) -> None:
    """Update the averaged (C, x) tables ``avg`` in place with the margins of edge tables
    measured without the label axis (post-processing).

    Such a margin measures a level's total over its codes and the classes,
    ``Σ_{x ∈ ℓ} Σ_c T(c, x)``, with variance ``v = σ²·(levels of the other end)``. With the
    K class cells of a code of equal variance ``1/w`` (``wts``), ``s_x`` the variance of
    the code's current total (``K/w`` at first) and ``S_ℓ = Σ_{x ∈ ℓ} s_x``, the generalised
    least-squares update adds to each cell of code x ``s_x/K / (S_ℓ + v)`` of the level's
    residual (the cells' class split is kept; a code alone in its level moves toward the
    measured total by its precision), and ``s_x`` becomes ``s_x·(1 − s_x/(S_ℓ + v))``, the
    exact posterior variance for a code alone in its level and the diagonal of it for a
    merged level.
    """
    total_var = {a: K / w for a, w in wts.items()}
    for (i, j), m, form in tables:
        t = m.values.reshape(m.values.shape[-2:])
        var = m.sigma**2
        margins = ((i, t.sum(axis=1), t.shape[1]), (j, t.sum(axis=0), t.shape[0]))
        for (a, margin, other), mp in zip(margins, form.maps, strict=True):
            lv = np.arange(avg[a].shape[1], dtype=np.int64) if mp is None else mp
            s, v = total_var[a], var * other
            level_var = np.bincount(lv, weights=s)  # the variance of each level's total
            level_sum = np.bincount(lv, weights=avg[a].sum(axis=0), minlength=level_var.size)
            gain = s / (level_var[lv] + v)
            avg[a] = avg[a] + (gain / K * (margin - level_sum)[lv])[None, :]
            total_var[a] = s * (1.0 - gain)


def _shrink_edge_table(
    noisy: NDArray[np.float64],
    rows: NDArray[np.float64],
    cols: NDArray[np.float64],
    sigma: float,
    factor: float | None = None,
) -> NDArray[np.float64]:
    """A noisy (K, p, x) edge table whose rows are pulled toward independence, made ≥ 0.

    ``rows`` (K, p) and ``cols`` (K, x) are the consistent (C, parent) and (C, child) tables
    in the edge table's levels; ``sigma`` is the edge table's noise per cell (public);
    ``factor`` defaults to :data:`PRIOR_SIGMAS`. In each
    class slice ``c`` parent row ``r`` (total ``n_r``) gets ``w_r`` pseudo-rows spread as the
    child's share given the class, ``cols[c] / N_c``: the posterior mean of the row's
    conditional under a Dirichlet prior centred on the independence product. The weight is
    ``w = factor·σ`` while the row's total is within ``factor`` noise standard deviations of
    a row total (``n_r ≤ factor·σ·√x``), so such a row keeps about the marginal conditional;
    above that it decays as ``w · factor·σ·√x / n_r`` (the mean-squared-error optimal
    pseudo-count falls as ``1/n_r``), so a well-measured row is nearly unchanged. Without
    it, clipping a rare code's noise-dominated row at 0 and fitting the margins gives
    conditionals of 0 % or 100 %: associations the data do not show. A row within the noise
    is then clipped at 0; a well-measured row (``n_r > factor·σ·√x``, from the noisy
    margins) is projected (Euclidean) onto ``{≥ 0, Σ = n_r + w_r}``, which removes the
    positive noise clipping would leave in its empty cells. Post-processing of noisy tables
    with their public σ, so it costs no privacy.
    """
    factor = PRIOR_SIGMAS if factor is None else factor
    w = factor * sigma
    full = w * math.sqrt(noisy.shape[2])
    n_c = cols.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(n_c > 0, cols / n_c, 1.0 / cols.shape[1])
        weight = w * np.minimum(1.0, np.where(rows > 0, full / rows, 1.0))
    shrunk = noisy + weight[:, :, None] * share[:, None, :]
    clipped = np.maximum(shrunk, 0.0)
    # A well-measured row (total above the prior's full weight) is projected onto
    # {≥ 0, Σ = its total}: clipping alone keeps about 0.4σ of positive noise in each of
    # its empty cells, mass the IPF then spreads over the row (on KDD Cup 99 a 14 x 9 edge
    # table at σ = 63 came out at 2-way TVD 0.10). A row within the noise keeps the clipped
    # prior, which is what stops a rare code's conditional from collapsing onto one cell.
    k, p, x = shrunk.shape
    flat = shrunk.reshape(-1, x)
    totals = (rows + weight).reshape(-1)
    measured = rows.reshape(-1) > full
    if factor <= 0.0 or not measured.any():  # no prior, no gate: clipped, as before
        return clipped
    out = clipped.reshape(-1, x).copy()
    out[measured] = _project_rows(flat[measured], totals[measured])
    return out.reshape(k, p, x)


def _smooth_class_splits(
    table: NDArray[np.float64],
    class_counts: NDArray[np.float64],
    weight: NDArray[np.float64],
    iterations: int = 10,
) -> NDArray[np.float64]:
    """A (K, k) table whose columns' class splits are pulled toward the overall split.

    Column ``x`` (total ``t_x``) becomes ``t_x · (T[:, x] + w_x π) / (t_x + w_x)``, with ``π``
    the class shares of ``class_counts``: the posterior mean of the class split under a
    Dirichlet prior of ``w_x`` pseudo-rows centred on ``π``. ``weight`` is a few noise
    standard deviations of the column's cells, so a column whose count is within noise
    keeps about the overall split, and a well-measured one is nearly unchanged. Iterative
    proportional fitting then restores the class counts and the column totals.
    Post-processing of noisy tables.
    """
    total = float(class_counts.sum())
    if total <= 0.0:
        return table
    prior = class_counts / total
    col = table.sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where(col + weight > 0.0, col / (col + weight), 0.0)
        out = (table + weight[None, :] * prior[:, None]) * scale[None, :]
        for _ in range(iterations):
            out = out * np.nan_to_num(class_counts / out.sum(axis=1))[:, None]
            out = out * np.nan_to_num(col / out.sum(axis=0))[None, :]
    return out


def _largest_remainder(v: NDArray[np.float64], n: int) -> NDArray[np.int64]:
    total = v.sum()
    share = v * (n / total) if total > 0 else np.full(v.size, n / v.size)
    base = np.floor(share).astype(np.int64)
    short = n - int(base.sum())
    if short > 0:
        base[np.argsort(-(share - base), kind="stable")[:short]] += 1
    return base


def sample_codes(model: Model, n: int, source: RandomSource) -> NDArray[np.int64]:
    """``n`` coded rows drawn ancestrally from the model (post-processing).

    Class counts are the model's, scaled to ``n`` by largest remainder; each feature is
    drawn given the class and its parent, from the fitted tables.
    """
    return sample_codes_given_classes(model, class_counts_for(model, n), source)


def class_counts_for(model: Model, n: int) -> NDArray[np.int64]:
    """How many of ``n`` sampled rows get each class: the model's counts, largest remainder."""
    return _largest_remainder(model.class_counts, n)


def sample_codes_given_classes(
    model: Model, class_counts: NDArray[np.int64], source: RandomSource
) -> NDArray[np.int64]:
    """Coded rows with exactly ``class_counts[k]`` rows of class ``k``, in random order."""
    n = int(np.sum(class_counts))
    d = len(model.sizes)
    out = np.zeros((n, d), dtype=np.int64)
    K = model.class_counts.size
    cls = np.repeat(np.arange(K), np.asarray(class_counts, dtype=np.int64))
    if model.label is not None:
        out[:, model.label] = cls
    for a in model.order:
        if a in model.extra:
            s, q = model.extra[a]
            p_codes = out[:, model.parent[a]] if a in model.parent else 0
            group = (cls * q.shape[1] + p_codes) * q.shape[2] + out[:, s]
            u = balanced_uniforms(group, source)
            out[:, a] = _draw_grouped(_cdf_rows(q.reshape(-1, q.shape[3])), group, u)
        elif a in model.parent:
            p = model.parent[a]
            t = model.triples[a]
            group = cls * t.shape[1] + out[:, p]
            u = balanced_uniforms(group, source)
            out[:, a] = _draw_grouped(_cdf_rows(t.reshape(-1, t.shape[2])), group, u)
        else:
            u = balanced_uniforms(cls, source)
            out[:, a] = _draw_grouped(_cdf_rows(model.pairs[a]), cls, u)
    perm = np.argsort(np.asarray(noise.uniform(n, random_state=source)), kind="stable")
    return out[perm]


_RANDOM_BITS = 40
_GROUP_BITS = 62 - _RANDOM_BITS


def balanced_uniforms(group: NDArray[np.int64], source: RandomSource) -> NDArray[np.float64]:
    """One uniform per row, balanced within each group of rows (stratified sampling).

    The ``m`` rows of a group get ``(r + j)/m`` for ``r = 0, ..., m − 1`` in a random order,
    each with its own uniform jitter ``j``, so each row's value is uniform on ``[0, 1)``
    (its rank is uniform and independent of its jitter) while the group's values fall one
    in each of ``m`` equal strata. An inverse-CDF draw from these gives each category
    ``c`` a count within 2 of its expected ``m·p_c`` instead of a binomial one: the sampled
    table's marginals carry almost no sampling error on top of the model's. Post-processing
    of the model; it changes no release's privacy. The values are multiples of ``2⁻⁵³``, as
    :func:`_draw_grouped` requires.
    """
    g = np.asarray(group, dtype=np.int64)
    n = g.size
    key = np.asarray(noise.uniform(n, random_state=source), dtype=np.float64)
    jitter = np.asarray(noise.uniform(n, random_state=source), dtype=np.float64)
    # By group, random within a group: one int64 sort key (group, 40 random bits) sorts
    # 3-4x faster than lexsort; more groups than the high bits hold take lexsort.
    if n and int(g.max()) < 1 << _GROUP_BITS:
        order = np.argsort((g << _RANDOM_BITS) | (key * (1 << _RANDOM_BITS)).astype(np.int64))
    else:
        order = np.lexsort((key, g))
    sorted_groups = g[order]
    rank = np.arange(n) - np.searchsorted(sorted_groups, sorted_groups, side="left")
    size = np.bincount(sorted_groups)[sorted_groups] if n else sorted_groups
    u = np.empty(n)
    u[order] = np.floor((rank + jitter[order]) / size * _U_SCALE) / _U_SCALE
    return np.minimum(u, 1.0 - 1.0 / _U_SCALE)  # rank + jitter may round up to the group size


def _cdf_rows(prob: NDArray[np.float64]) -> NDArray[np.float64]:
    """Each row's normalised CDF (a row summing to 0 gets the uniform one)."""
    cdf = np.cumsum(prob, axis=1)
    tot = cdf[:, -1:]
    return np.where(
        tot > 0, cdf / np.where(tot > 0, tot, 1.0), np.arange(1, prob.shape[1] + 1) / prob.shape[1]
    )


#: ``noise.uniform`` returns multiples of 2**-53; groups are keyed 2**54 apart.
_U_SCALE = 2.0**53
_GROUP_SPAN = 1 << 54
_MAX_GROUPS = (1 << 63) // _GROUP_SPAN - 1


def _draw_grouped(
    cdf: NDArray[np.float64], group: NDArray[np.int64], u: NDArray[np.float64]
) -> NDArray[np.int64]:
    """:func:`_draw` of the rows ``cdf[group]`` (normalised CDFs) without gathering them.

    Row ``r`` gets ``min(#{j: cdf[group[r], j] < u[r]}, k − 1)``: the same integer as
    ``_draw``. With ``u = M·2⁻⁵³`` (integer ``M``), ``c < u`` iff ``floor(c·2⁵³) < M`` (the
    scaling is exact), so one ``searchsorted`` over the groups' integer keys, offset by
    ``2⁵⁴`` per group, counts every row at once.
    """
    n_groups, k = cdf.shape
    if n_groups > _MAX_GROUPS:  # pragma: no cover - more groups than int64 offsets allow
        return np.minimum((cdf[group] < u[:, None]).sum(axis=1), k - 1).astype(np.int64)
    offsets = np.arange(n_groups, dtype=np.int64) * _GROUP_SPAN
    keys = (np.floor(cdf * _U_SCALE).astype(np.int64) + offsets[:, None]).ravel()
    g = np.asarray(group, dtype=np.int64)
    target = (u * _U_SCALE).astype(np.int64) + g * _GROUP_SPAN
    counts = np.searchsorted(keys, target, side="left") - g * k
    return np.minimum(counts, k - 1).astype(np.int64)


# -- the explicit joint (small domains) -----------------------------------------------------


@dataclass(frozen=True)
class JointModel:
    """A distribution over the whole (small) domain, as expected counts summing to ``n``."""

    n: int
    sizes: tuple[int, ...]
    counts: NDArray[np.float64]  # shape = sizes


def fit_joint(
    n: int,
    sizes: Sequence[int],
    measurements: Sequence[Measurement],
    *,
    min_iterations: int = 100,
    max_iterations: int = 1000,
) -> JointModel:
    """The table over the whole (small) domain that best fits the noisy pair tables.

    Post-processing. Mirror descent (exponentiated gradient, as Private-PGM's estimator)
    on ``Σ_m ‖M_m(p) − y_m/n‖² / σ_m²`` (weights scaled so the largest is 1) over the
    probability simplex, from the uniform table, with a backtracking step size; ``M_m`` is
    the marginal of measurement ``m``. It takes at least ``min_iterations`` steps and then
    stops once the loss is at the level the true table would have under the noise (the
    discrepancy principle: ``Σ_m cells_m σ_min²/n²``), or after ``max_iterations``. Stopping
    early from the uniform table keeps the fit smooth where the noise dominates. A
    one-column schema (one 1-way table) is projected onto ``{≥ 0, Σ = n}`` instead.
    """
    shape = tuple(sizes)
    if len(shape) == 1:
        m = measurements[0]
        flat = _project_rows(m.values.reshape(1, -1), np.array([float(n)]))[0]
        return JointModel(n, shape, flat.reshape(shape))
    # The last measurement of a pair counts (as a dict keeps it), its weight relative to
    # the least noisy one.
    pairs: dict[tuple[int, int], tuple[NDArray[np.float64], float]] = {}
    sigma_min = min(m.sigma for m in measurements)
    floor = 0.0  # the expected loss of the true table
    for m in measurements:
        i, j = m.clique
        pairs[(i, j)] = (m.values.reshape(shape[i], shape[j]) / n, 1.0 / m.sigma**2)
        floor += shape[i] * shape[j] * sigma_min**2 / float(n) ** 2
    top = max(w for _, w in pairs.values())
    terms = [(i, j, y, w / top) for (i, j), (y, w) in pairs.items()]
    # The products are small (levels × cells): BLAS threads cost more than they save (one
    # product took 20-140 times as long with the default threads on two busy cores).
    with threadpool_limits(limits=1, user_api="blas"):
        p = _mirror_descent(_PairMarginals(shape), terms, floor, min_iterations, max_iterations)
    return JointModel(n, shape, p.reshape(shape) * n)


_Term = tuple[int, int, NDArray[np.float64], float]


def _mirror_descent(
    pm: _PairMarginals,
    terms: Sequence[_Term],
    floor: float,
    min_iterations: int,
    max_iterations: int,
) -> NDArray[np.float64]:
    """:func:`fit_joint`'s descent: the fitted probabilities over the flat domain."""

    target, weight, const = pm.targets(terms)

    def loss(p: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
        diff = pm.marginals(p) - target
        residuals = weight * diff
        return float((residuals * diff).sum()) + const, residuals

    cells = math.prod(pm.shape)
    theta = np.zeros(cells)
    p = np.full(cells, 1.0 / cells)
    value, R = loss(p)
    step = 1.0
    for step_index in range(max_iterations):
        if step_index >= min_iterations and value <= floor:
            break
        grad = 2.0 * pm.broadcast(R)
        while True:
            trial = theta - step * grad
            w = np.exp(trial - trial.max())
            q = w / w.sum()
            new, R_new = loss(q)
            if new <= value or step < 1e-12:
                break
            step *= 0.5
        theta, p, value, R = trial, q, new, R_new
        step *= 1.5
    return p


class _PairMarginals:
    """Every pair marginal of a joint table, and pair tables broadcast back over it.

    The axes are split into a leading and a trailing group, so the flat table is an
    ``A × B`` matrix ``P`` (no copy); ``H`` (``A × Lₕ``) and ``T`` (``B × Lₜ``) are the
    one-hot codes of the groups' levels (the identity for a group of one axis, not stored).
    Every pair marginal is then a block of ``HᵀPT`` (across the groups), ``Hᵀ diag(P1) H``
    or ``Tᵀ diag(Pᵀ1) T`` (within them): cells × levels work in a few matrix products
    instead of one strided sum over the whole table per pair. The pair tables (``a < b``,
    each ``sizes[a] × sizes[b]`` in C order) are kept end to end in one vector. The sums
    run in another order than ``table.sum(axis=...)``, so values may differ in the last
    bits.
    """

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shape = shape
        self.k = k = _split_axes(shape)
        self.rows = math.prod(shape[:k])
        self.h = _one_hot(shape[:k]) if k > 1 else None
        self.t = _one_hot(shape[k:]) if len(shape) - k > 1 else None
        self.levels = (sum(shape[:k]), sum(shape[k:]))
        # Where each pair's table sits in the vector, and which entries of the three
        # products fill it (flat indices into the cross, leading and trailing products).
        self.slices: dict[tuple[int, int], slice] = {}
        picks: list[list[NDArray[np.int64]]] = [[], [], []]
        start = 0
        for part in range(3):
            for a, b in itertools.combinations(range(len(shape)), 2):
                if _part(k, a, b) != part:
                    continue
                rows, cols = self._at(a), self._at(b)
                width = self.levels[0] if part == 1 else self.levels[1]
                picks[part].append((rows[:, None] * width + cols[None, :]).ravel())
                self.slices[(a, b)] = slice(start, start + shape[a] * shape[b])
                start += shape[a] * shape[b]
        self.size = start
        self.picks = [np.concatenate(p) if p else np.zeros(0, dtype=np.int64) for p in picks]
        self.bounds = np.cumsum([0] + [len(p) for p in self.picks])

    def _at(self, a: int) -> NDArray[np.int64]:
        """Axis ``a``'s levels as rows (or columns) of its group's one-hot codes."""
        first = 0 if a < self.k else self.k
        return np.arange(self.shape[a]) + sum(self.shape[first:a])

    def marginals(self, p: NDArray[np.float64]) -> NDArray[np.float64]:
        """The pair tables of ``p``, end to end (see :attr:`slices`)."""
        table = p.reshape(self.rows, -1)
        cross = table if self.h is None else self.h.T @ table
        cross = cross if self.t is None else cross @ self.t
        parts = [cross.ravel()[self.picks[0]]]
        for g, sums, part in ((self.h, table.sum(axis=1), 1), (self.t, table.sum(axis=0), 2)):
            if g is not None and self.picks[part].size:
                parts.append(((g * sums[:, None]).T @ g).ravel()[self.picks[part]])
        return np.concatenate(parts)

    def block(self, v: NDArray[np.float64], i: int, j: int) -> NDArray[np.float64]:
        """The ``(i, j)`` table (axes in that order) in a vector of pair tables (a view)."""
        a, b = min(i, j), max(i, j)
        g = v[self.slices[(a, b)]].reshape(self.shape[a], self.shape[b])
        return g if i < j else g.T

    def broadcast(self, v: NDArray[np.float64]) -> NDArray[np.float64]:
        """``Σ`` over the pair tables in ``v`` of each table broadcast over the cells."""
        lead, trail = self.levels
        cross = np.zeros(lead * trail)
        cross[self.picks[0]] = v[self.bounds[0] : self.bounds[1]]
        grad = cross.reshape(lead, trail)
        grad = grad if self.h is None else self.h @ grad
        grad = grad if self.t is None else grad @ self.t.T
        for g, part, axis in ((self.h, 1, 1), (self.t, 2, 0)):
            if g is None or not self.picks[part].size:
                continue
            within = np.zeros(g.shape[1] ** 2)
            within[self.picks[part]] = v[self.bounds[part] : self.bounds[part + 1]]
            spread = ((g @ within.reshape(g.shape[1], -1)) * g).sum(axis=1)
            grad = grad + (spread[:, None] if axis == 1 else spread[None, :])
        return np.asarray(grad).reshape(-1)

    def targets(
        self, terms: Sequence[_Term]
    ) -> tuple[NDArray[np.float64], NDArray[np.float64], float]:
        """The terms' tables and weights as vectors of pair tables, and the constant that
        makes ``Σ weight·(M − target)² + constant`` the terms' loss.

        A pair measured in both orders, ``(i, j)`` and ``(j, i)``, is one table whose target
        is the weighted mean of the two; the constant is what that merge takes from the
        loss (zero when no pair has two terms).
        """
        target, weight = np.zeros(self.size), np.zeros(self.size)
        seen: dict[tuple[int, int], list[tuple[NDArray[np.float64], float]]] = {}
        for i, j, y, w in terms:
            a, b = min(i, j), max(i, j)
            seen.setdefault((a, b), []).append((y if i < j else y.T, w))
        const = 0.0
        for (a, b), tables in seen.items():
            total = sum(w for _, w in tables)
            mean = tables[0][0] if len(tables) == 1 else sum(w * y for y, w in tables) / total
            self.block(target, a, b)[...] = mean
            self.block(weight, a, b)[...] = total
            if len(tables) > 1:
                const += sum(w * float(((y - mean) ** 2).sum()) for y, w in tables)
        return target, weight, const


def _part(k: int, a: int, b: int) -> int:
    """Which product holds pair ``(a, b)``, ``a < b``: 0 across the cut, 1 before, 2 after."""
    return 0 if a < k <= b else (1 if b < k else 2)


def _split_axes(shape: tuple[int, ...]) -> int:
    """The cut ``k`` (1 ≤ k < d) whose within-group products cost least (cells × levels²).

    The products across the groups cost cells × levels whatever the cut; a group of one
    axis has no pair within it.
    """

    def within(group: tuple[int, ...]) -> int:
        return math.prod(group) * sum(group) ** 2 if len(group) > 1 else 0

    def cost(k: int) -> int:
        return within(shape[:k]) + within(shape[k:])

    return min(range(1, len(shape)), key=cost)


def _one_hot(shape: tuple[int, ...]) -> NDArray[np.float64]:
    """``cells × levels``: row ``c`` marks the level of each axis in cell ``c`` (C order)."""
    codes = np.indices(shape).reshape(len(shape), -1)
    offsets = np.concatenate([[0], np.cumsum(shape)[:-1]]).astype(int)
    out = np.zeros((codes.shape[1], sum(shape)))
    rows = np.arange(codes.shape[1])
    for a in range(len(shape)):
        out[rows, offsets[a] + codes[a]] = 1.0
    return out


def attribute_counts(model: Model | JointModel, a: int) -> NDArray[np.float64]:
    """The model's 1-way table of attribute ``a`` (post-processing of the noisy tables)."""
    if isinstance(model, JointModel):
        axes = tuple(i for i in range(len(model.sizes)) if i != a)
        return np.asarray(model.counts.sum(axis=axes), dtype=np.float64)
    if a == model.label:
        return np.asarray(model.class_counts, dtype=np.float64)
    return np.asarray(model.pairs[a].sum(axis=0), dtype=np.float64)


#: :func:`crowded_end_bins` reports an end bin holding at least this share of a column.
CROWDED_SHARE = 0.5


def crowded_end_bins(model: Model | JointModel, bins: Bins) -> list[tuple[int, int, float]]:
    """``(attribute, code, share)`` for each binned numeric column whose first or last bin
    holds at least :data:`CROWDED_SHARE` of the model's rows.

    Such a column's values lie in a small part of its declared range (a skewed column such
    as an income, or bounds far wider than the values), so the release keeps almost nothing
    of how they spread. A crowded middle bin (Adult's 40 hours a week) is a real spike and
    is not reported; the bounds' own codes (zero-heavy columns, rates at 1) are not bins.
    Post-processing of the model, so it can be said without further privacy cost.
    """
    out = []
    for a, kind in enumerate(bins.kinds):
        if kind != "binned":
            continue
        counts = np.maximum(attribute_counts(model, a), 0.0)
        total = counts.sum()
        if not total > 0:
            continue
        for code in (1, bins.sizes[a] - 2):
            share = float(counts[code] / total)
            if share >= CROWDED_SHARE:
                out.append((a, code, share))
    return out


def sample_joint(model: JointModel, n: int, source: RandomSource) -> NDArray[np.int64]:
    """``n`` coded rows drawn from the fitted table (post-processing).

    Each row is distributed as the table; the rows are drawn together with
    :func:`balanced_uniforms` (systematic sampling), so each cell's count is within 2 of
    its expected ``n·p``; the rows come in random order.
    """
    flat = model.counts.ravel()
    cdf = np.cumsum(flat)
    if not cdf[-1] > 0:  # pragma: no cover - the floor keeps the table positive
        cdf = np.arange(1.0, flat.size + 1.0)
    cdf /= cdf[-1]
    u = balanced_uniforms(np.zeros(n, dtype=np.int64), source)
    idx = np.minimum(np.searchsorted(cdf, u, side="right"), flat.size - 1)
    return np.stack(np.unravel_index(idx, model.sizes), axis=1).astype(np.int64)
