"""The pair check of :class:`~ppdp.publish.TableSynthesizer`: which column pairs the fitted
tree model reproduces badly, found and measured privately before the release is written.

The tree models measure every (label, x) table and the tables of the tree's edges; a pair of
columns off the tree is modelled only through the path that joins them, so a strong
association the selection did not choose (a numeric pair whose large table lost to small
ones, a pair the noise hid) comes out weak. After the fit the model is public
(post-processing of noisy tables), and so is its 2-way table ``M_ij`` of every pair
(:func:`model_pair_table`, exact: the tree's conditionals propagated along the path between
``i`` and ``j``). The residual ``r_ij(D) = ‖T_ij(D) − M_ij‖₁`` then moves by at most 1 under
add/remove and 2 under replace-one (``M_ij`` fixed: adaptive composition). The check spends
a public share of ρ, reserved in the plan with the rest (:data:`CHECK_SHARE`), on ``k``
rounds (peeling): the exponential mechanism picks the pair of largest residual (net of the
sampling floor, a public offset) among the pairs not yet picked, then a Gaussian scalar
measures its residual, reported as a 2-way TVD with its interval. A pair whose TVD is
clearly above :func:`warn_threshold` draws a :class:`~ppdp.exceptions.LowUtilityWarning`
naming it and advising ``keep``. The privacy argument is in ``docs/proofs/table-synth.md``
("Pair check").
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from ppdp import noise
from ppdp._validation import check_int
from ppdp.exceptions import LowUtilityWarning, ParameterError, user_stacklevel
from ppdp.mechanisms import ExponentialMechanism
from ppdp.mechanisms.grid import effective_sensitivity
from ppdp.publish.table_synth_model import MarginalCounts, Model
from ppdp.random import RandomSource

__all__ = [
    "CHECK_SHARE",
    "CheckNoise",
    "CheckedPair",
    "check_candidates",
    "check_noise",
    "model_class_pair_table",
    "model_pair_table",
    "run_pair_check",
    "warn_pairs",
    "warn_threshold",
]

#: Share of ρ the pair check spends (when it runs), reserved before the tables are planned.
CHECK_SHARE = 0.03
#: Of each round's share, the part that goes to the exponential mechanism's choice (the rest
#: measures the chosen pair's residual): choosing right needs more than reading the value.
CHECK_SELECT_SHARE = 0.75
#: Rounds of the check (``check_pairs``) under ``"auto"`` (the default): SMALL_CHECK_PAIRS
#: for a table without a label whose tree leaves at most SMALL_OFF_TREE pairs off (few
#: columns, each pair a large share of what the tree drops), else DEFAULT_CHECK_PAIRS (with a
#: label the edge tables carry the classifier's signal, and the second parents' larger pool,
#: taken from them, cost Adult's AUC at ε = 0.3: ``benchmarks/synth/second_parents.md``);
#: and the most a fit accepts.
DEFAULT_CHECK_PAIRS = 3
SMALL_CHECK_PAIRS = 6
SMALL_OFF_TREE = 50
MAX_CHECK_PAIRS = 100
#: A checked pair warns when its noisy TVD less this many noise standard deviations exceeds
#: :func:`warn_threshold` (the interval reported is ± this many σ).
CHECK_SIGMAS = 3.0
#: The 2-way TVD a checked pair may lose beyond the sampling floor before it warns.
CHECK_TVD = 0.1


def check_pairs_value(value: Any) -> int | Literal["auto"]:
    """``check_pairs``: ``"auto"`` or an integer in ``0..MAX_CHECK_PAIRS`` (one clear line
    otherwise)."""
    if isinstance(value, str) and value == "auto":
        return "auto"
    if isinstance(value, str):
        raise ParameterError(
            f"check_pairs ({value!r}) must be 'auto' or an integer in 0..{MAX_CHECK_PAIRS}"
        )
    k = check_int("check_pairs", value)
    if not 0 <= k <= MAX_CHECK_PAIRS:
        raise ParameterError(
            f"check_pairs ({k}) must be an integer in 0..{MAX_CHECK_PAIRS}: the column pairs "
            "the fitted model reproduces worst that the release checks and names (0: no check)"
        )
    return k


def check_candidates(
    method: str, features: Sequence[int], label: int | None
) -> list[tuple[int, int]]:
    """The pairs a fitted tree model may reproduce badly, before the edges are known.

    ``"tree"``: every pair of features (the label's pairs are in every table); ``"chow-liu"``
    (``label`` is then ``None`` and every column is a feature): every pair of columns. The
    tree's ``len(features) − 1`` edges are measured and leave the candidates after the fit;
    ``"pairs"`` measures every pair and has none."""
    if method not in ("tree", "chow-liu"):
        return []
    feats = list(features)
    return [(i, j) for x, i in enumerate(feats) for j in feats[x + 1 :]]


def rounds_for(
    method: str,
    features: Sequence[int],
    label: int | None,
    asked: int | Literal["auto"],
    *,
    labelled: bool = False,
) -> int:
    """The check's rounds: ``asked`` (``"auto"``: :data:`SMALL_CHECK_PAIRS` for a schema
    without a label (``labelled``) whose tree leaves at most :data:`SMALL_OFF_TREE` pairs
    off, else :data:`DEFAULT_CHECK_PAIRS`), at most the pairs left off the tree (public: the
    schema and the method)."""
    off_tree = len(check_candidates(method, features, label)) - (len(features) - 1)
    if asked == "auto":
        small = not labelled and off_tree <= SMALL_OFF_TREE
        asked = SMALL_CHECK_PAIRS if small else DEFAULT_CHECK_PAIRS
    return max(0, min(int(asked), off_tree))


@dataclass(frozen=True)
class CheckNoise:
    """The noise of each of the check's rounds (public, from the plan)."""

    epsilon: float  # the exponential mechanism's ε per round
    sigma: float  # the Gaussian σ of each measured residual
    grid: float  # its grid Λ (the residual is snapped to it)
    sensitivity: float  # of the residual and of the utility: 2 replace-one, 1 add/remove

    @property
    def rho_per_round(self) -> float:
        """ρ of one round: ``ε²/8`` + ``(Δ + Λ)²/(2σ²)`` (the snapped residual's sensitivity)."""
        eff = effective_sensitivity(self.sensitivity, self.grid)
        return self.epsilon**2 / 8.0 + eff**2 / (2.0 * self.sigma**2)


def check_noise(rho: float, rounds: int, sensitivity: float) -> CheckNoise:
    """The noise that spends ``rho`` on ``rounds`` rounds, rounded to the safe side.

    Each round gives :data:`CHECK_SELECT_SHARE` of its share to one exponential-mechanism
    choice (``ε²/8``-zCDP) and the rest to one Gaussian scalar at sensitivity ``Δ + Λ``
    (``Λ`` its grid: the real residual is snapped to it, as ``noise.snap`` says)."""
    per = rho / rounds
    eps = math.nextafter(math.sqrt(8.0 * per * CHECK_SELECT_SHARE), 0.0)
    rho_g = per * (1.0 - CHECK_SELECT_SHARE)
    grid = noise.granularity(sensitivity / math.sqrt(2.0 * rho_g))
    eff = effective_sensitivity(sensitivity, grid)
    sigma = math.nextafter(eff / math.sqrt(2.0 * rho_g), math.inf)
    return CheckNoise(eps, sigma, grid, sensitivity)


# -- the model's pair tables (post-processing) ---------------------------------------------


def _conditionals(model: Model) -> dict[int, NDArray[np.float64]]:
    """P(child | class, parent) of every non-root feature, (K, k_parent, k_child); a row of
    no mass gets the uniform law (the sampler's choice, and of weight 0 anyway)."""
    out = {}
    for child, t in model.triples.items():
        tot = t.sum(axis=2, keepdims=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            out[child] = np.where(tot > 0, t / np.where(tot > 0, tot, 1.0), 1.0 / t.shape[2])
    return out


class _Paths:
    """The sampler's law of a tree model, read along its paths (memoised)."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.cond = _conditionals(model)
        self.down: dict[tuple[int, int], NDArray[np.float64]] = {}
        self.marg: dict[int, NDArray[np.float64]] = {}

    def ancestors(self, a: int) -> list[int]:
        """``a``, its parent, …, its component's root."""
        out = [a]
        while out[-1] in self.model.parent:
            out.append(self.model.parent[out[-1]])
        return out

    def common(self, i: int, j: int) -> int | None:
        """The lowest common ancestor of ``i`` and ``j`` (None: two components)."""
        up_j = set(self.ancestors(j))
        return next((a for a in self.ancestors(i) if a in up_j), None)

    def counts(self, a: int) -> NDArray[np.float64]:
        """The (class, a) table the sampler draws: the root's, pushed down the tree."""
        if a not in self.marg:
            if a in self.model.parent:
                up = self.counts(self.model.parent[a])
                self.marg[a] = np.einsum("cv,cvw->cw", up, self.cond[a])
            else:
                pairs = np.maximum(self.model.pairs[a], 0.0)
                tot = pairs.sum(axis=1, keepdims=True)
                with np.errstate(divide="ignore", invalid="ignore"):
                    share = np.where(tot > 0, pairs / np.where(tot > 0, tot, 1.0), 0.0)
                self.marg[a] = share * self.model.class_counts[:, None]
        return self.marg[a]

    def given(self, top: int, a: int) -> NDArray[np.float64]:
        """P(a | class, top) for an ancestor ``top`` of ``a``: (K, k_top, k_a)."""
        key = (top, a)
        if key not in self.down:
            if top == a:
                eye = np.eye(self.model.sizes[a])
                self.down[key] = np.broadcast_to(eye, (self.model.class_counts.size, *eye.shape))
            else:
                self.down[key] = self.given(top, self.model.parent[a]) @ self.cond[a]
        return self.down[key]


def model_pair_table(model: Model | _Paths, i: int, j: int) -> NDArray[np.float64]:
    """The expected (i, j) table of the rows the tree model samples (counts, sum ``n``).

    Exact: given the class, ``i`` and ``j`` are independent given their lowest common
    ancestor ``l`` in the tree, so ``M_c(i, j) = Σ_v N_c(l = v) P(i | v, c) P(j | v, c)``, with
    ``N_c(l)`` the sampler's (class, l) table and the conditionals multiplied along the paths;
    in two components (no common ancestor) ``M_c = N_c(i) N_c(j) / N_c``. Summed over the
    classes. The label's own pairs (a tree model with a label) are its (class, x) tables.
    Post-processing of the model (public)."""
    paths = model if isinstance(model, _Paths) else _Paths(model)
    m = paths.model
    if m.label is not None and m.label in (i, j):
        x = j if i == m.label else i
        t = paths.counts(x)
        return t if i == m.label else t.T
    common = paths.common(i, j)
    if common is None:
        n_c = m.class_counts
        with np.errstate(divide="ignore", invalid="ignore"):
            w = np.where(n_c > 0, 1.0 / n_c, 0.0)
        return np.einsum("ci,cj,c->ij", paths.counts(i), paths.counts(j), w)
    return np.einsum(
        "cv,cvi,cvj->ij", paths.counts(common), paths.given(common, i), paths.given(common, j)
    )


def model_class_pair_table(model: Model, i: int, j: int) -> NDArray[np.float64]:
    """The tree model's expected (class, i, j) table of two features, (K, k_i, k_j): as
    :func:`model_pair_table`, not summed over the classes (post-processing)."""
    paths = _Paths(model)
    common = paths.common(i, j)
    if common is None:
        n_c = model.class_counts
        with np.errstate(divide="ignore", invalid="ignore"):
            w = np.where(n_c > 0, 1.0 / n_c, 0.0)
        return np.einsum("ci,cj,c->cij", paths.counts(i), paths.counts(j), w)
    return np.einsum(
        "cv,cvi,cvj->cij", paths.counts(common), paths.given(common, i), paths.given(common, j)
    )


def exact_pair_table(counts: MarginalCounts, label: int | None, i: int, j: int) -> NDArray:
    """The exact (i, j) table from the counted ones (the (label, i, j) table summed over the
    classes where the plan counted that)."""
    if label is not None and (label, i, j) in counts.cliques:
        return counts.table((label, i, j)).sum(axis=0)
    return counts.table((i, j))


# -- the check ----------------------------------------------------------------------------


def sampling_floor(expected: NDArray[np.float64], n: float) -> float:
    """``Σ_c √(2·m_c·(1 − m_c/n)/π)``: about the L1 distance by which ``n`` rows drawn from
    the table ``expected`` (counts ``m_c``, summing to ``n``) miss it by chance alone (the
    mean absolute deviation of each binomial count, normal approximation). Of the model's
    table, so public; small for a table whose rows sit in few cells."""
    m = np.maximum(np.asarray(expected, dtype=np.float64), 0.0)
    share = np.clip(m / max(n, 1.0), 0.0, 1.0)
    return float(np.sqrt(2.0 * m * (1.0 - share) / math.pi).sum())


def warn_threshold(floor: float, n: float) -> float:
    """The 2-way TVD above which a checked pair warns: :data:`CHECK_TVD` plus the pair's
    :func:`sampling_floor` in TVD (``floor / (2n)``): a table of many cells on few rows
    misses by that much by chance alone."""
    return CHECK_TVD + floor / (2.0 * max(n, 1.0))


@dataclass(frozen=True)
class CheckedPair:
    """One pair the check chose and measured (every field public)."""

    pair: tuple[int, int]
    tvd: float  # the noisy residual as a 2-way TVD, r̃ / (2n)
    plus_minus: float  # CHECK_SIGMAS noise standard deviations, in TVD
    threshold: float  # warn_threshold of the pair's table

    @property
    def flagged(self) -> bool:
        """Whether the TVD is clearly above the threshold (the whole interval is)."""
        return self.tvd - self.plus_minus > self.threshold

    def as_dict(self, names: Sequence[str]) -> dict[str, Any]:
        """JSON-safe, for the release's details."""
        return {
            "pair": [names[self.pair[0]], names[self.pair[1]]],
            "tvd": self.tvd,
            "plus_minus": self.plus_minus,
            "threshold": self.threshold,
            "warned": self.flagged,
        }


def pair_residuals(
    model: Model,
    counts: MarginalCounts,
    label: int | None,
    candidates: Sequence[tuple[int, int]],
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``r_ij = ‖T_ij(D) − M_ij‖₁`` of every candidate, and the :func:`sampling_floor` of
    ``M_ij`` (public) for ``n = model.n``. ``M_ij``
    is the model's (public), so each ``r_ij`` moves by at most ``‖T_ij(D) − T_ij(D')‖₁``: 2
    under replace-one, 1 under add/remove."""
    paths = _Paths(model)
    resid = np.zeros(len(candidates))
    floors = np.zeros(len(candidates))
    # By common ancestor, the path products of one ancestor at a time in memory (a chain of
    # d columns would otherwise hold d² of them).
    tops = [paths.common(i, j) for i, j in candidates]
    current: int | None = -1
    for t in sorted(range(len(candidates)), key=lambda t: -1 if tops[t] is None else tops[t]):
        if tops[t] != current:
            paths.down.clear()
            current = tops[t]
        i, j = candidates[t]
        exact = exact_pair_table(counts, label, i, j)
        expected = model_pair_table(paths, i, j)
        resid[t] = float(np.abs(exact - expected).sum())
        floors[t] = sampling_floor(expected, float(model.n))
    return resid, floors


def draw_residuals(
    value: float, check: CheckNoise, n_draws: int, source: RandomSource
) -> NDArray[np.float64]:
    """``n_draws`` independent releases ``snap(value, Λ) + N(0, σ²)`` of one residual (the
    release path of :func:`run_pair_check`, batched for the audit, whose broken control
    draws from a rescaled source, :class:`ppdp.audit.ScaledNoise`)."""
    snapped = noise.snap(value, check.grid)
    draws = noise.gaussian(check.sigma, n_draws, random_state=source, granularity=check.grid)
    return snapped + np.asarray(draws, dtype=np.float64)


def run_pair_check(
    model: Model,
    counts: MarginalCounts,
    label: int | None,
    candidates: Sequence[tuple[int, int]],
    rounds: int,
    check: CheckNoise,
    source: RandomSource,
) -> list[CheckedPair]:
    """``rounds`` rounds of select-then-measure over ``candidates`` (the pairs off the tree:
    a function of the released edges).

    Round ``t``: the exponential mechanism (``check.epsilon``, sensitivity
    ``check.sensitivity``) picks among the pairs not picked yet the one of largest utility
    ``r_ij − floor_ij`` (:func:`pair_residuals`; the offset is the model's
    :func:`sampling_floor`, public), then
    ``snap(r_ij, Λ) + N(0, σ²)`` is released. ``n`` is ``model.n`` (public, or the noisy
    estimate under add/remove); the model and the candidates are public, so each utility
    and each residual moves by at most ``check.sensitivity`` between neighbours."""
    n = float(model.n)
    r, floors = pair_residuals(model, counts, label, candidates)
    util = r - floors
    mech = ExponentialMechanism(
        epsilon=check.epsilon, sensitivity=check.sensitivity, allow_large_epsilon=True
    )
    open_ = np.ones(len(candidates), dtype=bool)
    scale = 2.0 * max(n, 1.0)
    out: list[CheckedPair] = []
    for _ in range(min(rounds, len(candidates))):
        idx = np.nonzero(open_)[0]
        k = int(idx[mech.randomise(util[idx], random_state=source)])
        open_[k] = False
        value = float(draw_residuals(float(r[k]), check, 1, source)[0])
        out.append(
            CheckedPair(
                tuple(candidates[k]),
                value / scale,
                CHECK_SIGMAS * check.sigma / scale,
                warn_threshold(float(floors[k]), n),
            )
        )
    return out


def warn_pairs(checked: Sequence[CheckedPair], names: Sequence[str]) -> None:
    """A :class:`LowUtilityWarning` per flagged pair, one line each (read from released
    values: no further privacy cost)."""
    for c in checked:
        if not c.flagged:
            continue
        a, b = (names[x] for x in c.pair)
        warnings.warn(
            f"pair {a!r}:{b!r}: the fitted model reproduces it with 2-way TVD "
            f"{c.tvd:.3f} ± {c.plus_minus:.3f} (above {c.threshold:.3f}: an association the "
            f"tree left unmeasured); declare it in keep (keep=[({a!r}, {b!r})], --keep "
            f"{a}:{b}, or the schema's keep)",
            LowUtilityWarning,
            stacklevel=user_stacklevel(),
        )
