"""DP-PCA publishing (Jiang et al. 2013): a private copy of a table via its principal components.

:class:`DPPCAPublisher` releases one row per input row, in the same order, decoded to the
schema. Stage 1 (ε/2) adds Laplace noise to ``Σx`` and the upper triangle of ``Σxxᵀ`` and
takes the top-``k`` eigenvectors of the noisy covariance; stage 2 (ε/2) adds Laplace noise to
every row's projection on them; the table is rebuilt from the noisy projections. The privacy
argument, with the corrected categorical sensitivity and the float-rounding padding, is in
``docs/proofs/dp-pca.md``; the algorithm is ALGORITHMS-publishing.md A.2.

The stage helpers (:func:`_pack`, :func:`_moments`, :func:`_top_components`,
:func:`_add_laplace`) accept leading batch dimensions, so the statistical audit runs many
independent releases through the very code :meth:`DPPCAPublisher.fit` uses.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ppdp._params import Rule, epsilon_rules
from ppdp._validation import check_bool, check_int
from ppdp.budget import Guarantee, Neighbouring, PrivacyBudget
from ppdp.data import Schema
from ppdp.data.schema import Layout
from ppdp.data.stats import SufficientStats, float_sum_error_bound
from ppdp.exceptions import (
    DataValidationError,
    LowUtilityWarning,
    ParameterError,
    ParameterTypeError,
    user_stacklevel,
)
from ppdp.mechanisms import LaplaceMechanism
from ppdp.publish._base import Charge, Publisher, Release
from ppdp.publish._noise_limits import epsilon_that_clears
from ppdp.random import PartitionStreams, RandomSource, RandomState

__all__ = ["DPPCAPublisher", "joint_moment_sensitivity", "projection_sensitivity"]

_RELATION = Neighbouring.REPLACE_ONE
_NAME = "DP-PCA (Jiang et al. 2013)"
_UNIT_ROUNDOFF = 2.0**-53
#: Largest accepted ``‖ŪᵀŪ − I‖_F``: then ``‖Ū‖₂ ≤ 1 + 2⁻²²`` and the factor below covers it.
_ORTHO_TOL = 2.0**-21
#: Stage-2 sensitivities are multiplied by this to cover ``‖Ū‖₂ > 1`` by rounding.
_NORM_SLACK = 1.0 + 2.0**-20
#: :meth:`DPPCAPublisher.low_utility_message` warns when the stage-2 noise adds at least
#: this standard deviation to an encoded value (range [0, 1]).
SWAMPED_NOISE_SD = 2.0


# ------------------------------------------------------------------ sensitivities


def joint_moment_sensitivity(p1: int, p2: int) -> float:
    """Safe joint L1 sensitivity of ``(Σx, upper(Σxxᵀ))`` under replace-one (A.3, [ours]).

    ``(p1 + 2·p2) + p1(p1+1)/2 + 2·p1·p2 + p2(p2+1)`` for ``p1`` numeric columns in ``[0, 1]``
    and ``p2`` one-hot categorical variables: each numeric entry of ``Σx`` moves at most 1 and
    each one-hot block at most 2; each numeric–numeric entry of ``Σxxᵀ`` at most 1; the
    entries of each (numeric, categorical) pair, each pair of categoricals and each
    categorical's own diagonal block at most 2 in total. The paper's value is too small for
    ``p2 ≥ 2`` (ALGORITHMS-publishing.md A.3 erratum).

    Examples
    --------
    >>> joint_moment_sensitivity(5, 6)  # Adult with the label block: p = 35
    134.0
    """
    p1 = check_int("p1", p1, minimum=0)
    p2 = check_int("p2", p2, minimum=0)
    return float((p1 + 2 * p2) + p1 * (p1 + 1) // 2 + 2 * p1 * p2 + p2 * (p2 + 1))


def projection_sensitivity(p1: int, p2: int, k: int) -> float:
    """L1 sensitivity of one row's ``k`` projections on orthonormal vectors (Lemma 2).

    ``Σ_j |(x − x′)ᵀu_j| ≤ √k·‖x − x′‖₂ ≤ √(k·(p1 + 2·p2))``: a numeric entry moves at most 1,
    a one-hot block contributes at most 2 to ``‖x − x′‖₂²``.

    Examples
    --------
    >>> projection_sensitivity(1, 1, 3)
    3.0
    """
    p1 = check_int("p1", p1, minimum=0)
    p2 = check_int("p2", p2, minimum=0)
    k = check_int("k", k, minimum=1)
    return math.sqrt(k * (p1 + 2 * p2))


def _gamma(m: int) -> float:
    """Higham's γ_m = m·u/(1 − m·u): the relative error bound of an m-term dot product."""
    mu = m * _UNIT_ROUNDOFF
    return mu / (1.0 - mu)


# ------------------------------------------------------------------ the stages (batchable)


def _pack(sum_x: NDArray[np.float64], sum_xx: NDArray[np.float64]) -> NDArray[np.float64]:
    """``(Σx, upper(Σxxᵀ))`` as one vector of ``p + p(p+1)/2`` entries (batch dims allowed)."""
    p = sum_x.shape[-1]
    iu = np.triu_indices(p)
    return np.concatenate([sum_x, sum_xx[..., iu[0], iu[1]]], axis=-1)


def _moments(
    noisy: NDArray[np.float64], n: int, p: int
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """``μ̃ = S̃₁/n``, ``M̃ = sym(S̃₂)/n`` and ``D̄ = M̃ − μ̃μ̃ᵀ`` from the packed noisy vector."""
    iu = np.triu_indices(p)
    mu = noisy[..., :p] / n
    upper = noisy[..., p:] / n
    M = np.zeros((*noisy.shape[:-1], p, p), dtype=np.float64)
    M[..., iu[0], iu[1]] = upper
    M[..., iu[1], iu[0]] = upper  # mirror: the diagonal is written twice with the same value
    D = M - mu[..., :, None] * mu[..., None, :]
    return mu, M, D


def _top_components(
    D: NDArray[np.float64], k: int
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The ``k`` algebraically largest eigenvalues of the symmetric ``D`` and their eigenvectors.

    ``D`` may be indefinite (it carries noise): a symmetric eigensolver, eigenvalues ranked
    by value, never by magnitude, and no redraw of the noise (A.7.5). Each eigenvector's
    sign is fixed (its largest-magnitude entry positive) so that releases are reproducible.
    Columns whose Gram matrix is not orthonormal within ``2**-21`` are re-orthonormalised.
    """
    w, v = np.linalg.eigh(D)  # ascending
    vals = w[..., ::-1][..., :k]
    U = np.ascontiguousarray(v[..., :, ::-1][..., :, :k])
    pivot = np.take_along_axis(U, np.argmax(np.abs(U), axis=-2)[..., None, :], axis=-2)
    U *= np.where(pivot < 0.0, -1.0, 1.0)
    if _orthonormality_error(U) > _ORTHO_TOL:  # pragma: no cover - LAPACK keeps ~p·2⁻⁵³
        U, _ = np.linalg.qr(U)
        if _orthonormality_error(U) > _ORTHO_TOL:
            raise ParameterError("the noisy covariance's eigenvectors are not orthonormal")
    return vals, U


def _orthonormality_error(U: NDArray[np.float64]) -> float:
    k = U.shape[-1]
    gram = np.swapaxes(U, -1, -2) @ U - np.eye(k)
    return float(np.max(np.sqrt(np.sum(gram * gram, axis=(-2, -1)))))


def _add_laplace(
    mech: LaplaceMechanism,
    values: NDArray[np.float64],
    source: RandomSource,
) -> NDArray[np.float64]:
    """``snap(values, Λ) + Lap(b)`` per entry: ``mech``'s own release path, on every entry.

    The mechanism is calibrated for one release of ``mech.dimension`` coordinates. Here
    ``values`` may hold many such releases (a batch, or one row per record); each gets the
    same law as ``mech.randomise`` would give it, independently. Only the caller knows that
    the releases are disjoint (parallel composition), so this is private to the module.
    """
    flat = np.ascontiguousarray(values, dtype=np.float64).reshape(-1)
    out = mech._release(flat, source)
    return out.reshape(values.shape)


def _stage2_projections(
    X: NDArray[np.float64],
    U: NDArray[np.float64],
    mu: NDArray[np.float64],
    mech: LaplaceMechanism,
    source: RandomSource,
) -> NDArray[np.float64]:
    """Stage 2 on the rows of ``X``: ``Ỹ = (XŪ + Z) − 1(μ̃ᵀŪ)``, one noise draw per entry.

    The noise is added to ``XŪ``, whose rounding is bounded by ``‖x‖₂`` alone, and the
    public ``μ̃ᵀŪ`` is subtracted afterwards (post-processing).
    """
    return _add_laplace(mech, X @ U, source) - mu @ U


# ------------------------------------------------------------------ post-processing


def _postprocess(
    X: NDArray[np.float64], schema: Schema, layout: Layout, *, clamp: bool
) -> NDArray[np.float64]:
    """One-hot every categorical block by its arg-max (first on ties); clamp numerics to [0, 1].

    Pure post-processing (in place on ``X``, which is returned). Decoding the result with
    ``schema.decode`` gives the same categories as decoding ``X`` before it.
    """
    numeric = {c.name for c in schema.numeric_columns}
    if clamp:  # runs of adjacent numeric columns in one call each (a clip per column is slow)
        cols = sorted(block.start for name, block in layout.blocks.items() if name in numeric)
        start = 0
        for i in range(1, len(cols) + 1):
            if i == len(cols) or cols[i] != cols[i - 1] + 1:
                run = X[:, cols[start] : cols[i - 1] + 1]
                np.clip(run, 0.0, 1.0, out=run)
                start = i
    for name, block in layout.blocks.items():
        if name in numeric:
            continue
        codes = np.argmax(X[:, block], axis=1)
        X[:, block] = 0.0
        X[np.arange(X.shape[0]), block.start + codes] = 1.0
    return X


def _reconstruct(
    Y_tilde: NDArray[np.float64],
    U: NDArray[np.float64],
    mu: NDArray[np.float64],
    schema: Schema,
    layout: Layout,
    *,
    clamp: bool,
) -> NDArray[np.float64]:
    """``X̄ = ỸŪᵀ + 1μ̃ᵀ``, then :func:`_postprocess` (arg-max blocks, clamped numerics)."""
    X_bar = Y_tilde @ U.T + mu
    return _postprocess(X_bar, schema, layout, clamp=clamp)


def _release_partition(
    encoded: tuple[NDArray[np.float64], Any],
    index: int,
    streams: PartitionStreams,
    U: NDArray[np.float64],
    mu: NDArray[np.float64],
    mech: LaplaceMechanism,
    schema: Schema,
    layout: Layout,
    clamp: bool,
) -> pd.DataFrame:
    """Stage 2 and the reconstruction of one partition, on a worker, from its own stream.

    Partition ``index`` reads only ``streams.stream(index)``: its rows' noise is drawn
    once, here, and nowhere else (the result is written once by the caller).
    """
    X = np.asarray(encoded[0], dtype=np.float64)
    np.clip(X, 0.0, 1.0, out=X)  # as _encode_table (A.7.6); X is this task's own array
    Y_tilde = _stage2_projections(X, U, mu, mech, streams.stream(index))
    return schema.decode(_reconstruct(Y_tilde, U, mu, schema, layout, clamp=clamp))


def _encode_table(
    schema: Schema, df: pd.DataFrame, on_invalid: str = "raise"
) -> tuple[NDArray[np.float64], Any]:
    """The whole table encoded, the label's one-hot block included when there is a label."""
    X, y = schema.encode(df, include_label=schema.label is not None, on_invalid=on_invalid)
    # Lemma 2 and the sensitivities need every entry in [0, 1] *before* the projection
    # (A.7.6). encode guarantees it; a subclass's encoder might not, so enforce it.
    np.clip(X, 0.0, 1.0, out=X)
    return X, y


def _check_schema(schema: Any) -> Layout:
    if not isinstance(schema, Schema):
        raise ParameterTypeError(
            f"schema ({type(schema).__name__}) must be a ppdp.data.Schema; "
            "load one with Schema.from_file(path)"
        )
    return schema.layout(include_label=schema.label is not None)


@dataclass(frozen=True)
class PCAParams:
    """The validated parameters of :class:`DPPCAPublisher` (built once per ``fit``)."""

    layout: Layout
    allow_large_epsilon: bool
    epsilon: float
    n_components: int
    clamp: bool


def _check_components(value: Any, checked: Mapping[str, Any]) -> int:
    p = checked["layout"].n_features
    k = check_int("n_components", value, minimum=1)
    if k > p:
        raise ParameterError(
            f"n_components ({k}) must be an integer in 1..{p}: the table encodes to {p} "
            "columns (label block included)"
        )
    return k


#: DP-PCA's constraint table, in the order the parameters are checked.
PCA_CONSTRAINTS: tuple[Rule, ...] = (
    Rule("layout", lambda v, _: _check_schema(v), attribute="schema"),
    *epsilon_rules(),
    Rule("n_components", _check_components),
    Rule("clamp", lambda v, _: check_bool("clamp", v)),
)


def _max_total_variance(schema: Schema, layout: Layout) -> float:
    """``tr Cov(x)`` can be at most ``p1/4 + Σ_blocks (1 − 1/K)`` in the declared domain."""
    total = layout.p1 / 4.0
    for c in schema.categorical_columns:
        total += 1.0 - 1.0 / len(c.categories)
    if layout.includes_label and schema.label is not None:
        total += 1.0 - 1.0 / schema.label.n_classes
    return total


# ------------------------------------------------------------------ the publisher


class DPPCAPublisher(Publisher):
    """Publish a table through its noisy principal components (DP-PCA, Jiang et al. 2013).

    ``fit(df)`` releases one row per input row, in the same order: categorical values are
    declared categories, the label (when the schema has one) a declared class, numerics
    inside their declared bounds. The encoded table includes the label's one-hot block
    (Adult: ``p = 35``), as in the paper.

    Guarantee: ε-differential privacy, replace-one neighbours, ``n`` public. Stage 1 spends
    ε/2 on Laplace noise added to ``(Σx, upper(Σxxᵀ))`` with the *safe* joint L1 sensitivity
    ``(p1+2p2) + p1(p1+1)/2 + 2p1p2 + p2(p2+1)`` (:func:`joint_moment_sensitivity`; the
    paper's value is too small with two or more categorical variables), padded by the
    float-summation bound ``2·float_sum_error_bound(n)`` per entry. Stage 2 spends ε/2 on
    Laplace noise added to every projected entry ``(x_i − μ̃)ᵀū_j``, with L1 sensitivity
    ``√(k(p1+2p2))`` per row (Lemma 2, :func:`projection_sensitivity`); one record moves one
    row, so the rows compose in parallel. Reconstruction, arg-max and clamping are
    post-processing. ``p2`` counts the label when its block is part of the table.

    Parameters
    ----------
    epsilon : float
        Total ε > 0 (at most 10 unless ``allow_large_epsilon``); ε/2 per stage.
    n_components : int
        ``k`` in ``1..p`` (``p`` encoded columns, label block included). It must be fixed in
        advance: choosing it from the exact spectrum (the paper's Fig. 2a) leaks (A.7.4).
    schema : Schema
        Declared bounds and categories; nothing is read from the data.
    random_state : None, int, SeedSequence, Generator or RandomSource, optional
        ``None`` (default) uses the OS CSPRNG; anything else is reproducible, for tests.
    clamp : bool, default True
        Clamp the numeric columns of ``release_.encoded`` to ``[0, 1]``. The decoded table
        is always inside the bounds (decoding clips).
    allow_large_epsilon : bool, default False
        Accept ε > 10.

    Attributes
    ----------
    release_ : Release
        ``data`` (decoded DataFrame), ``encoded`` (post-processed ``[0, 1]`` + one-hot
        matrix), ``guarantee``, and ``statistics``: ``mean`` μ̃, ``second_moment`` M̃,
        ``components`` Ū_k (p × k), ``eigenvalues`` (the k largest of D̄, descending,
        possibly negative) and ``projections`` Ỹ (n × k), all differentially private.
        For distributed input (see Notes) ``data`` is a lazy Dask DataFrame reading the
        ``output`` folder back, ``encoded`` is None and there is no ``projections``.

    Warns
    -----
    LowUtilityWarning
        When ``n`` is so small that the expected spectral norm of the stage-1 noise in the
        covariance, ``2·√(2p)·b₁/n``, reaches ``p1/4 + Σ(1 − 1/K)``, the largest total
        variance *any* table in the declared domain can have: the components are then
        essentially random. Decided from public quantities only (n, p, ε, the schema).

    Raises
    ------
    ParameterError, ParameterTypeError
        Invalid ε, ``n_components`` outside ``1..p``, non-boolean options; before anything.
    DataValidationError
        Invalid data or fewer than 2 rows; nothing is charged.
    BudgetExceededError
        The accountant cannot afford ε; the data are not read.

    Notes
    -----
    :meth:`low_utility_message` says, from ε, ``k`` and the schema alone, when the stage-2
    noise adds a standard deviation ``√(2k/p)·b₂`` of at least 2 to each reconstructed
    encoded value (range [0, 1]), so that the released rows are mostly noise; ``ppdp
    publish`` prints it before the spend. The covariance estimate ``D̄`` may be indefinite;
    its eigenvectors are ranked by algebraic eigenvalue and the noise is never redrawn.
    Numerical caveats: the Laplace noise is on a power-of-two grid
    (``docs/proofs/noise.md``); the sums are float sums, covered by the padding; the
    projection's rounding (``2k·γ_p·‖x‖₂`` per row) and ``‖Ū‖₂ ≤ 1 + 2⁻²²`` are covered
    by padding stage 2 (``docs/proofs/dp-pca.md``).

    Distributed input: ``fit`` also takes a Dask DataFrame or a Parquet dataset (``scheduler=``,
    and ``output=``, a new folder, required): one scan validates the table (errors carry the
    whole table's counts, nothing is spent on failure) and reduces ``Σx``, ``Σxxᵀ``; the stage-1
    noise is drawn in the driver, in the in-memory order, so the same seed gives the same
    ``mean``, ``second_moment``, ``components`` and ``eigenvalues`` (to float-summation error).
    Stage 2 runs partition by partition, partition ``i`` drawing its rows' noise from
    ``PartitionStreams(source).stream(i)`` (created after the stage-1 draw); the decoded rows
    are written to ``output`` as partitioned Parquet, in row order, inside ``fit``.
    ``release_.data`` is then a lazy Dask DataFrame reading ``output`` back, ``encoded`` is
    None, and ``statistics`` has no ``projections`` (an ``n × k`` matrix would not fit the
    driver's memory). The same seed gives the same rows for the same partitioning; across the
    in-memory and distributed paths the rows agree in distribution only.

    References
    ----------
    .. [JJW13] X. Jiang, Z. Ji, S. Wang, N. Mohammed, S. Cheng, L. Ohno-Machado.
       Differential-private data publishing through component analysis. Transactions on
       Data Privacy 6(1):19–34, 2013.
    .. [DMNS06] C. Dwork, F. McSherry, K. Nissim, A. Smith. Calibrating noise to sensitivity
       in private data analysis. TCC 2006.

    Examples
    --------
    >>> from ppdp.datasets import load_adult
    >>> df, schema = load_adult()
    >>> pub = DPPCAPublisher(1.0, 5, schema).fit(df)  # doctest: +SKIP
    >>> pub.release_.data.shape  # doctest: +SKIP
    (45222, 11)
    >>> DPPCAPublisher(1.0, 5, schema).privacy_budget()
    PrivacyBudget(epsilon=1.0, delta=0.0)
    """

    supports_distributed: ClassVar[bool] = True
    row_level_output: ClassVar[bool] = True

    _params_type = PCAParams
    _constraints = PCA_CONSTRAINTS

    def __init__(
        self,
        epsilon: float,
        n_components: int,
        schema: Schema,
        *,
        random_state: RandomState = None,
        clamp: bool = True,
        allow_large_epsilon: bool = False,
    ) -> None:
        self.epsilon = epsilon
        self.n_components = n_components
        self.schema = schema
        self.random_state = random_state
        self.clamp = clamp
        self.allow_large_epsilon = allow_large_epsilon

    # -- parameters and charges -------------------------------------------------------------

    def _params(self) -> PCAParams:
        params: PCAParams = super()._params()
        return params

    def _layout(self) -> Layout:
        return self._params().layout

    def _stage1_mechanism(self, n: int) -> LaplaceMechanism:
        c = self._params()
        eps, layout = c.epsilon, c.layout
        p = layout.n_features
        dim = p + p * (p + 1) // 2
        pad = 2.0 * float_sum_error_bound(n, max_term=1.0) * dim
        return LaplaceMechanism(
            epsilon=eps / 2.0,
            sensitivity=joint_moment_sensitivity(layout.p1, layout.p2) + pad,
            dimension=dim,
            relation=_RELATION,
            allow_large_epsilon=c.allow_large_epsilon,
        )

    def _stage2_mechanism(self) -> LaplaceMechanism:
        c = self._params()
        eps, k, layout = c.epsilon, c.n_components, c.layout
        lemma2 = projection_sensitivity(layout.p1, layout.p2, k)
        # Rounding of the k dot products of a row with ‖x‖₂ ≤ R, for both neighbours.
        rounding = 2.0 * k * _gamma(layout.n_features) * layout.max_row_l2_norm
        return LaplaceMechanism(
            epsilon=eps / 2.0,
            sensitivity=(lemma2 + rounding) * _NORM_SLACK,
            dimension=k,
            relation=_RELATION,
            allow_large_epsilon=c.allow_large_epsilon,
        )

    def _planned_charges(self, n_rows: int | None) -> list[Charge]:
        c = self._params()
        eps, k, layout = c.epsilon, c.n_components, c.layout
        p1, p2, p = layout.p1, layout.p2, layout.n_features
        half = PrivacyBudget(eps / 2.0)
        dim = p + p * (p + 1) // 2
        stage1: dict[str, Any] = {
            "query": f"Σx and upper(Σxxᵀ) of the encoded table ({dim} entries)",
            "sensitivity_formula": "(p1+2p2) + p1(p1+1)/2 + 2p1p2 + p2(p2+1) "
            "+ 2·float_sum_error_bound(n)·entries",
            "p1": p1,
            "p2": p2,
        }
        n = n_rows
        if n is not None and n >= 2:
            stage1.update(self._stage1_mechanism(n).ledger_details())
            stage1["n"] = n
        else:
            self._stage1_mechanism(2)  # its noise must be drawable (UndrawableNoiseError)
            stage1.update(
                {
                    "sensitivity_before_padding": joint_moment_sensitivity(p1, p2),
                    "dimension": dim,
                    "norm": "l1",
                    "relation": _RELATION.value,
                }
            )
        stage2 = {
            "query": f"per row, its projections on the {k} noisy components",
            "sensitivity_formula": "√(k(p1+2p2)) per row (Lemma 2), padded for rounding; "
            "rows disjoint (parallel composition)",
            "n_components": k,
            **self._stage2_mechanism().ledger_details(),
        }
        # Typed Laplace events where the exact mechanism is known (stage 1 needs the public
        # n for its rounding pad); the ε of each is ``half`` either way.
        ev1: Any = self._stage1_mechanism(n).event if n is not None and n >= 2 else half
        ev2: Any = self._stage2_mechanism().event  # the same Laplace on disjoint rows
        return [
            Charge(ev1, f"{_NAME} stage 1: Laplace on the moments", stage1),
            Charge(ev2, f"{_NAME} stage 2: Laplace on the projections", stage2),
        ]

    def low_utility_message(self) -> str | None:
        """Why the released rows would be mostly noise, or None; spends nothing.

        From public quantities only (ε, ``k``, the schema's encoded width ``p``), so it is
        said before the spend: ``ppdp publish`` prints it as one line
        (``warning: LowUtilityWarning: ...``) before reading the data; call it before
        :meth:`fit` from Python. Criterion: stage 2 adds Laplace noise of scale
        ``b₂ ≈ 2√(k(p1+2p2))/ε`` to each of a row's ``k`` projections, and the
        reconstruction ``ỸŪᵀ`` spreads it over the ``p`` encoded values: with ``k``
        orthonormal components each value gets on average ``k/p`` of the noise variance
        ``2b₂²``, a standard deviation ``s = √(2k/p)·b₂``. An encoded numeric value lies in
        ``[0, 1]``; when ``s`` is at least twice that range (:data:`SWAMPED_NOISE_SD`) the
        noise dominates whatever the data are, and clamping piles the numeric values at
        their declared bounds (the clinic trial: 57–99% of each numeric column at a bound
        for ``s`` from 3.7 to 37; ``s = 1.1`` left 2–17%). ``s`` grows like ``k/ε`` and
        does not depend on ``n``; the message names the smallest ε (rounded up to 3
        significant digits) with ``s`` below the threshold. The stage-1 check of
        :meth:`fit` (covariance noise against ``n``) is separate.
        """
        c = self._params()
        k, p = c.n_components, c.layout.n_features
        b2 = self._stage2_mechanism().scale
        sd = math.sqrt(2.0 * k / p) * b2
        if sd < SWAMPED_NOISE_SD:
            return None

        def sd_at(eps: float) -> float:
            trial = DPPCAPublisher(eps, k, self.schema, clamp=c.clamp, allow_large_epsilon=True)
            return math.sqrt(2.0 * k / p) * trial._stage2_mechanism().scale

        needed = epsilon_that_clears(
            float(c.epsilon) * sd / SWAMPED_NOISE_SD, lambda eps: sd_at(eps) >= SWAMPED_NOISE_SD
        )
        return (
            f"DP-PCA at epsilon {c.epsilon:g} with {k} component(s): the stage-2 Laplace "
            f"noise (scale {b2:.3g} per projection) adds about {sd:.3g} (standard "
            "deviation) to each reconstructed encoded value, whose range is [0, 1], so the "
            "released rows will be mostly noise (numeric values piled at their declared "
            f"bounds); use epsilon above {needed:g}, or fewer components"
        )

    # -- the flow ---------------------------------------------------------------------------

    def _encode(
        self, df: pd.DataFrame, on_invalid: str = "raise"
    ) -> tuple[NDArray[np.float64], Any]:
        X, y = _encode_table(self.schema, df, on_invalid)
        n = X.shape[0]
        if n < 2:
            raise DataValidationError(
                f"data has {n} row(s); DP-PCA needs at least 2 (n is public and divides the "
                "noisy sums)"
            )
        self._warn_if_swamped(n)
        return X, y

    def _warn_if_swamped(self, n: int) -> None:
        layout = self._params().layout
        p = layout.n_features
        b1 = self._stage1_mechanism(n).scale
        noise_norm = 2.0 * math.sqrt(2.0 * p) * b1 / n
        ceiling = _max_total_variance(self.schema, layout)
        if noise_norm >= ceiling:
            n_min = math.ceil(2.0 * math.sqrt(2.0 * p) * b1 / max(ceiling, 1e-300))
            warnings.warn(
                f"n ({n}) is too small for epsilon ({self.epsilon}) with {p} encoded columns: "
                f"the stage-1 noise in the covariance (expected spectral norm ≈ "
                f"{noise_norm:.3g}) exceeds the largest total variance any data in the "
                f"declared domain can have ({ceiling:.3g}), so the components are essentially "
                f"random; about {n_min} rows would be needed",
                LowUtilityWarning,
                stacklevel=user_stacklevel(),
            )

    def _release(
        self,
        X: NDArray[np.float64],
        y: Any,
        source: RandomSource,
        charges: list[Charge],
    ) -> Release:
        c = self._params()
        eps, k, layout = c.epsilon, c.n_components, c.layout
        n = X.shape[0]
        mech1 = self._stage1_mechanism(n)
        mech2 = self._stage2_mechanism()

        # Stage 1 (ε/2): one noise draw for the whole packed vector, never repeated.
        mu, M, eigvals, U = self._stage1(SufficientStats.compute(X), n, source)

        # Stage 2 (ε/2): Ỹ = (X − 1μ̃ᵀ)Ū + Z, computed as (XŪ + Z) − 1(μ̃ᵀŪ).
        Y_tilde = _stage2_projections(X, U, mu, mech2, source)
        encoded = _reconstruct(Y_tilde, U, mu, self.schema, layout, clamp=c.clamp)
        data = self.schema.decode(encoded)
        return Release(
            data=data,
            encoded=encoded,
            guarantee=self._guarantee(eps, k, layout, mech1, mech2),
            statistics={
                "mean": mu,
                "second_moment": M,
                "components": U,
                "eigenvalues": eigvals,
                "projections": Y_tilde,
            },
        )

    def _stage1(
        self, stats: SufficientStats, n: int, source: RandomSource
    ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        """Stage 1 from the (exact) statistics: ``μ̃, M̃``, the top eigenvalues and ``Ū_k``.

        One Laplace draw for the whole packed vector ``(Σx, upper(Σxxᵀ))``, from ``source``.
        """
        c = self._params()
        k, layout = c.n_components, c.layout
        mech1 = self._stage1_mechanism(n)
        noisy = _add_laplace(mech1, _pack(stats.sum_x, stats.sum_xx), source)
        mu, M, D = _moments(noisy, n, layout.n_features)
        eigvals, U = _top_components(D, k)
        return mu, M, eigvals, U

    # -- distributed input ------------------------------------------------------------------

    def _partition_statistics(self, X: NDArray[np.float64], y: Any) -> SufficientStats:
        """``n``, ``Σx`` and ``Σxxᵀ`` of one encoded partition (label block included)."""
        np.clip(X, 0.0, 1.0, out=X)  # as _encode_table: every entry in [0, 1] (A.7.6)
        return SufficientStats.compute(X, n_threads=1)

    def _check_scan(self, scan: Any, on_invalid: str) -> None:
        """The in-memory checks on the whole table's ``n``: at least 2 rows, the utility warning."""
        n = scan.n_rows
        if n < 2:
            raise DataValidationError(
                f"data has {n} row(s); DP-PCA needs at least 2 (n is public and divides the "
                "noisy sums)"
            )
        self._warn_if_swamped(n)

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
        """Stage 1 in the driver from the reduced statistics; stage 2 partition by partition.

        The stage-1 noise is drawn here from ``source`` exactly as in memory; only then is
        :class:`~ppdp.random.PartitionStreams` created from the same source, and partition
        ``i`` draws its rows' stage-2 noise from ``stream(i)``. The decoded rows are written
        once to ``output`` (row order kept) and read back lazily.
        """
        from dask import delayed

        from ppdp.data.distributed import (
            encoded_partitions,
            read_parquet_dataset,
            write_parquet_dataset,
        )

        c = self._params()
        eps, k, layout = c.epsilon, c.n_components, c.layout
        n = scan.n_rows
        mech1 = self._stage1_mechanism(n)
        mech2 = self._stage2_mechanism()
        mu, M, eigvals, U = self._stage1(scan.value, n, source)
        streams = PartitionStreams(source)  # after the stage-1 draw, as the contract says
        parts = encoded_partitions(
            frame, self.schema, include_label=layout.includes_label, on_invalid="mask", scan=scan
        )
        rows = [
            delayed(_release_partition, pure=False)(
                part,
                i,
                streams,
                U,
                mu,
                mech2,
                self.schema,
                layout,
                c.clamp,
            )
            for i, part in enumerate(parts)
        ]
        folder = write_parquet_dataset(rows, output, scheduler=scheduler)
        return Release(
            data=read_parquet_dataset(folder),
            encoded=None,
            guarantee=self._guarantee(eps, k, layout, mech1, mech2),
            statistics={"mean": mu, "second_moment": M, "components": U, "eigenvalues": eigvals},
        )

    def _guarantee(
        self,
        eps: float,
        k: int,
        layout: Layout,
        mech1: LaplaceMechanism,
        mech2: LaplaceMechanism,
    ) -> Guarantee:
        p1, p2 = layout.p1, layout.p2
        return Guarantee.pure(
            eps,
            relation=_RELATION,
            mechanism=_NAME,
            assumptions=(
                "n (the number of rows) is public; neighbours replace one row",
                "numeric columns clipped to their declared public bounds, categories declared",
                f"n_components k = {k} fixed in advance, not chosen from the data",
                f"stage 1 (ε/2): Laplace on Σx and upper(Σxxᵀ), safe categorical L1 "
                f"sensitivity {joint_moment_sensitivity(p1, p2):g} (p1={p1}, p2={p2}; "
                "ALGORITHMS A.3 erratum) padded for float sums",
                f"stage 2 (ε/2): Laplace per projected entry, L1 sensitivity "
                f"√(k(p1+2p2)) = {projection_sensitivity(p1, p2, k):.6g} per row (Lemma 2), "
                "parallel composition over rows",
                "sequential composition ε/2 + ε/2; reconstruction, arg-max and clamping "
                "are post-processing",
            ),
            details={
                "stage1": mech1.ledger_details(),
                "stage2": mech2.ledger_details(),
                "n_components": k,
                "p1": p1,
                "p2": p2,
            },
        )
