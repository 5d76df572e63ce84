"""Private RBF-kernel SVMs by random features: Rubinstein et al.'s PrivateSVM, Li et al.'s hybrid.

Both learners map every record to the cos/sin random-feature map ``z(x) ∈ R^{2D}`` of norm 1
(:mod:`ppdp.learn.rff`), solve a linear SVM **without intercept** in that space,

    w* = argmin_w  ½‖w‖² + (C/n) Σ_i ℓ(y_i wᵀz(x_i)),

with a convex 1-Lipschitz loss ℓ (the Huber-smoothed hinge of width ``h``; the exact
solver of :func:`ppdp.learn._erm.solve_erm`), and release ``ŵ = w* + Lap(λ)^{2D}`` with

    λ = 2^{2.5} C √D / (n ε)        (Rubinstein et al. 2012, Cor. 15; C in the C/n form).

They differ only in where the frequencies ρ come from: :class:`PrivateRBFSVM` draws them
from the kernel's Fourier transform, :class:`HybridRBFSVM` fits them to the kernel on a
public sample (Li et al. 2014). ρ is public either way and is released with ``ŵ``.

The privacy argument is in ``docs/proofs/rbf-svm.md``.

References
----------
.. [RBHT12] B. I. P. Rubinstein, P. L. Bartlett, L. Huang, N. Taft, "Learning in a large
   function space: privacy-preserving mechanisms for SVM learning", Journal of Privacy
   and Confidentiality 4(1), 2012.
.. [LXOJ14] H. Li, L. Xiong, L. Ohno-Machado, X. Jiang, "Privacy preserving RBF kernel
   support vector machine", BioMed Research International, 2014.
.. [CMS11] K. Chaudhuri, C. Monteleoni, A. D. Sarwate, "Differentially private empirical
   risk minimization", JMLR 12, 2011 (Section 6: private tuning).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import itertools
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, ClassVar, Literal

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from ppdp import _progress
from ppdp._params import Rule, epsilon_rules
from ppdp._validation import check_bool, check_int, check_option, check_positive
from ppdp.accounting.events import EpsilonDelta, Parallel
from ppdp.budget import Guarantee, Neighbouring
from ppdp.data.schema import Schema
from ppdp.exceptions import (
    ConvergenceError,
    DataValidationError,
    ParameterError,
    PrivacyLeakWarning,
)
from ppdp.learn._base import (
    Plan,
    PrivateClassifierBase,
    check_binary_labels,
    check_schema,
    encode_features,
)
from ppdp.learn._erm import (
    FINISH_STEP_CAP,
    ERMData,
    HuberLoss,
    InMemoryERMData,
    accelerated_finish,
    check_finish,
    finish_steps,
)
from ppdp.learn.rff import draw_frequencies, feature_map, fit_frequencies
from ppdp.learn.tuning import split_parts
from ppdp.mechanisms import ExponentialMechanism, LaplaceMechanism
from ppdp.mechanisms.grid import UndrawableNoiseError, too_small_epsilon
from ppdp.random import RandomSource

__all__ = [
    "HYBRID_CONSTRAINTS",
    "RBF_CONSTRAINTS",
    "HybridParams",
    "HybridRBFSVM",
    "PrivateRBFSVM",
    "RBFParams",
    "check_svm_finish",
    "libsvm_to_rubinstein_c",
    "rubinstein_noise_scale",
    "rubinstein_sensitivity",
    "solve_svm",
    "solve_svm_data",
    "solver_tolerance",
]

logger = logging.getLogger(__name__)
custodian = logging.getLogger("ppdp.custodian")

#: The solver returns w with ‖w − w*‖₂ ≤ SOLVER_RTOL · 4C/n; the sensitivity is inflated by
#: (1 + 2·SOLVER_RTOL) so two inexact solutions are covered too (docs/proofs/rbf-svm.md).
SOLVER_RTOL = 1e-6

#: Newton iterations of :func:`solve_svm`. A solve not certified within them goes on with
#: the certified finish (at most a public number of accelerated gradient steps): the
#: sensitivity only covers certified solutions (``docs/proofs/rbf-svm.md``).
SOLVER_MAX_ITER = 200

#: Simulated noise draws per fold in the hybrid's public tuning.
PUBLIC_TUNING_DRAWS = 5

#: Parameters that private tuning may search over.
_TUNABLE = ("C", "gamma", "n_components", "huber_h")


# --------------------------------------------------------------------------- constants


def libsvm_to_rubinstein_c(C_libsvm: float, n: int) -> float:
    """Convert a LIBSVM / scikit-learn ``C_s`` (objective ``½‖w‖² + C_s Σ ℓ``) to the C/n form.

    ``½‖w‖² + C_s Σ ℓ = ½‖w‖² + (C/n) Σ ℓ`` with ``C = n·C_s``. Plugging ``C_s`` into the
    noise scale ``2^{2.5} C √D/(nε)`` instead of ``n·C_s`` under-noises by a factor n
    (the erratum of Li et al. 2014; ALGORITHMS-publishing.md C.5.1).

    >>> libsvm_to_rubinstein_c(0.5, 1000)
    500.0
    """
    return float(n) * check_positive("C_libsvm", C_libsvm)


def rubinstein_sensitivity(C: float, n_components: int, n: int) -> float:
    """L1 sensitivity ``4 C √(2D) / n`` of ``w*`` (replace-one, L = κ = 1, F = 2D coordinates).

    >>> rubinstein_sensitivity(1.0, 2, 8) == 1.0
    True
    """
    return 4.0 * C * math.sqrt(2.0 * n_components) / n


def rubinstein_noise_scale(C: float, n_components: int, n: int, epsilon: float) -> float:
    """Li et al.'s ``λ = 2^{2.5} C √D / (n ε)`` (= ``4C√(2D)/(nε)``), C in the C/n form.

    >>> round(rubinstein_noise_scale(1.0, 1, 1, 1.0), 6)
    5.656854
    """
    return 2.0**2.5 * C * math.sqrt(n_components) / (n * epsilon)


def output_mechanism(
    *, epsilon: float, C: float, n_components: int, n: int, allow_large_epsilon: bool = False
) -> LaplaceMechanism:
    """The Laplace mechanism that perturbs ``w*`` (2D coordinates, replace-one).

    Its sensitivity is ``4C√(2D)/n · (1 + 2·SOLVER_RTOL)``: the bound for exact minimisers
    plus the solver's guaranteed distance to them on both neighbours.
    """
    return LaplaceMechanism(
        epsilon=epsilon,
        sensitivity=rubinstein_sensitivity(C, n_components, n) * (1.0 + 2.0 * SOLVER_RTOL),
        dimension=2 * n_components,
        relation=Neighbouring.REPLACE_ONE,
        allow_large_epsilon=allow_large_epsilon,
    )


def solver_tolerance(n: int) -> float:
    """The gradient tolerance ``SOLVER_RTOL·4/n`` of :func:`solve_svm` (public: n is public).

    >>> solver_tolerance(4) == SOLVER_RTOL
    True
    """
    return SOLVER_RTOL * 4.0 / n


def solve_svm(
    Z: NDArray[np.float64], y_pm: NDArray[np.float64], *, C: float, huber_h: float
) -> tuple[NDArray[np.float64], bool, dict[str, Any]]:
    """``argmin ½‖w‖² + (C/n) Σ ℓ_h(y_i wᵀz_i)``, within ``SOLVER_RTOL·4C/n`` of it when converged.

    The objective equals ``C·[(1/n) Σ ℓ + (1/(2C))‖w‖²]``: the ERM solver runs with
    ``Λ = 1/C``, gradient tolerance :func:`solver_tolerance` ``= SOLVER_RTOL·4/n`` and at most
    :data:`SOLVER_MAX_ITER` Newton iterations (then, by Λ-strong convexity,
    ``‖w − w*‖ ≤ tol/Λ = SOLVER_RTOL·4C/n`` when the returned flag is True). Newton runs to
    ``tol/4``; the flag is :func:`~ppdp.learn._erm.certified_gradient_bound` ``≤ tol``, a
    bound on the exact gradient norm that includes float rounding. Where Newton stops short,
    :func:`~ppdp.learn._erm.accelerated_finish` completes the solve in at most
    ``min(finish_steps(...), FINISH_STEP_CAP)`` steps: the whole bound for parameters that
    :func:`check_svm_finish` admits (the private fits), a bounded time for the others.
    """
    return solve_svm_data(InMemoryERMData(Z, y_pm), C=C, huber_h=huber_h)


def solve_svm_data(
    data: ERMData, *, C: float, huber_h: float
) -> tuple[NDArray[np.float64], bool, dict[str, Any]]:
    """:func:`solve_svm` on an :class:`~ppdp.learn._erm.ERMData` (in memory or partitions).

    The same Newton solve (``Λ = 1/C``, to ``tol/4``, at most :data:`SOLVER_MAX_ITER`
    iterations) and the same certificate, whatever holds the mapped records.
    """
    loss = HuberLoss(huber_h)
    tol = solver_tolerance(data.n)
    w, info = data.solve(
        loss=loss,
        regularization=1.0 / C,
        extra_l2=0.0,
        linear_term=None,
        tol=tol / 4.0,
        max_iter=SOLVER_MAX_ITER,
    )
    # The flag is the certificate: the exact gradient norm, float rounding included, is ≤ tol
    # (the float64 norm alone is not enough at large n; docs/proofs/erm.md, Numerics).
    bound = data.certify(
        w, loss=loss, regularization=1.0 / C, extra_l2=0.0, linear_term=None, w_norm_bound=None
    )
    steps = 0
    if not (math.isfinite(bound) and bound <= tol and np.all(np.isfinite(w))):
        # The certified finish: at most finish_steps(...) accelerated gradient steps, a
        # public bound after which exact arithmetic guarantees the certificate.
        w, bound, steps = accelerated_finish(
            data,
            loss=loss,
            regularization=1.0 / C,
            extra_l2=0.0,
            linear_term=None,
            tol=tol,
            steps=min(finish_steps(loss.smoothness, 1.0 / C, 1.0, tol), FINISH_STEP_CAP),
        )
    info = {**info, "gradient_bound": bound, "finish_steps": steps}
    return w, bool(math.isfinite(bound) and bound <= tol and np.all(np.isfinite(w))), info


def check_svm_finish(C: float, huber_h: float, n: int, n_components: int) -> int:
    """Refuse, before the spend, a ``C`` (C/n form) and ``huber_h`` whose certified solve is
    not sure to finish (:func:`~ppdp.learn._erm.check_finish` with Λ = 1/C, the Huber
    smoothness ``1/(2h)``, ``G₀ = 1`` and the tolerance :func:`solver_tolerance`)."""
    return check_finish(
        smoothness=HuberLoss(huber_h).smoothness,
        strong_convexity=1.0 / C,
        gradient_at_zero=1.0,
        tol=solver_tolerance(n),
        n=n,
        dim=2 * int(n_components),
        what=f"C={C:g} (C/n form), huber_h={huber_h:g} (n={n})",
        fix="lower C or raise huber_h",
    )


# --------------------------------------------------------------------------- data checks


def _as_matrix(X: Any, name: str) -> NDArray[np.float64]:
    try:
        arr = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise DataValidationError(
            f"{name} must be a 2-d array of real numbers (rows × features)"
        ) from exc
    if arr.ndim != 2:
        raise DataValidationError(
            f"{name} must be a 2-d array (rows × features), got ndim {arr.ndim}"
        )
    if arr.shape[1] < 1:
        raise DataValidationError(f"{name} has no feature columns")
    if not np.isfinite(arr).all():
        bad = np.flatnonzero(~np.isfinite(arr).all(axis=0))
        raise DataValidationError(
            f"{name} contains NaN or infinite entries (in column(s) {bad[:5].tolist()}); "
            "remove or impute them before fitting"
        )
    return arr


def _row_digests(X: NDArray[np.float64]) -> list[bytes]:
    rows = np.ascontiguousarray(X + 0.0)  # -0.0 → 0.0, so equal rows hash equally
    return [hashlib.blake2b(r.tobytes(), digest_size=16).digest() for r in rows]


def _public_rows_seen(
    X: NDArray[np.float64], y: Any, *, public: tuple[bytes, ...]
) -> NDArray[np.bool_]:
    """Which public rows (by digest) equal a row of this partition (OR-merged with ``+``)."""
    if X.shape[0] == 0:
        return np.zeros(len(public), dtype=bool)
    seen = set(_row_digests(np.asarray(X, dtype=np.float64)))
    return np.fromiter((h in seen for h in public), dtype=bool, count=len(public))


def overlap_count(public: NDArray[np.float64], private: NDArray[np.float64]) -> int:
    """How many public rows are bit-identical to some private row (one hash per row)."""
    if public.shape[1] != private.shape[1]:
        return 0
    seen = set(_row_digests(private))
    return sum(h in seen for h in _row_digests(public))


# --------------------------------------------------------------------------- parameters


@dataclass(frozen=True)
class RBFParams:
    """The validated parameters of :class:`PrivateRBFSVM` (its table, run once per fit).

    Attributes
    ----------
    allow_large_epsilon : bool
    epsilon : float
    C, gamma : float
    n_components : int
    huber_h : float
    C_form : {"rubinstein", "libsvm"}
    tuning : str
        One of the learner's tuning options.
    grid : tuple of mapping
        The candidates (read-only mappings over ``C``, ``gamma``, ``n_components``,
        ``huber_h``) when tuning; empty with ``tuning="none"``.
    """

    allow_large_epsilon: bool
    epsilon: float
    C: float
    gamma: float
    n_components: int
    huber_h: float
    C_form: str
    tuning: str
    grid: tuple[Mapping[str, Any], ...]


@dataclass(frozen=True, eq=False)
class HybridParams(RBFParams):
    """The validated parameters of :class:`HybridRBFSVM`: :class:`RBFParams` and its own.

    Attributes
    ----------
    rho_max_iter : int
    rho_fit_rows : int or None
    check_overlap : bool
    public_sample : object
        ``public_X`` as given (not None).
    schema : Schema or None
    public : ndarray of shape (n_public, d)
        The public rows, encoded like the private rows (at least 2).
    public_y : object
        ``public_y`` as given (required with ``tuning="public"``).
    """

    rho_max_iter: int
    rho_fit_rows: int | None
    check_overlap: bool
    public_sample: Any
    schema: Schema | None
    public: NDArray[np.float64]
    public_y: Any


def _fit_rows(public: NDArray[np.float64], cap: int | None, seed: Any) -> NDArray[np.float64]:
    """The public rows the ρ fit reads: all of them, or ``cap`` drawn uniformly without
    replacement (in their original order) when there are more. Public data: no privacy
    cost; ``seed`` makes the draw reproducible."""
    if cap is None or public.shape[0] <= cap:
        return public
    keep = np.sort(np.random.default_rng(seed).choice(public.shape[0], cap, replace=False))
    return public[keep]


def _candidates(param_grid: Any, c: Mapping[str, Any]) -> tuple[Mapping[str, Any], ...]:
    """The tuning candidates: ``param_grid``'s combinations over the validated parameters."""
    if c["tuning"] == "none":
        return ()
    if not isinstance(param_grid, Mapping) or not param_grid:
        raise ParameterError(
            f"param_grid ({param_grid!r}) must be a non-empty dict of candidate "
            f"lists over {list(_TUNABLE)} when tuning={c['tuning']!r}"
        )
    keys = sorted(param_grid)
    for k in keys:
        if k not in _TUNABLE:
            raise ParameterError(f"param_grid key ({k!r}) must be one of {list(_TUNABLE)}")
        vals = param_grid[k]
        if isinstance(vals, str) or not isinstance(vals, Sequence) or len(vals) == 0:
            raise ParameterError(f"param_grid[{k!r}] ({vals!r}) must be a non-empty list")
    base = {k: c[k] for k in _TUNABLE}
    cands = []
    for combo in itertools.product(*(param_grid[k] for k in keys)):
        cand = {**base, **dict(zip(keys, combo, strict=True))}
        for k, v in cand.items():
            cand[k] = check_int(k, v, minimum=1) if k == "n_components" else check_positive(k, v)
        cands.append(MappingProxyType(cand))
    if c["tuning"] == "private" and len(cands) < 2:
        raise ParameterError(
            f"param_grid ({param_grid!r}) gives {len(cands)} candidate; private "
            "tuning needs at least 2 (with one, set the parameters and tuning='none')"
        )
    return tuple(cands)


def _rbf_rules(tuning_options: tuple[str, ...]) -> tuple[Rule, ...]:
    """The RBF SVMs' rows, in the order they are checked, for these tuning options."""
    return (
        *epsilon_rules(),
        Rule("C", lambda v, _: check_positive("C", v)),
        Rule("gamma", lambda v, _: check_positive("gamma", v)),
        Rule("n_components", lambda v, _: check_int("n_components", v, minimum=1)),
        Rule("huber_h", lambda v, _: check_positive("huber_h", v)),
        Rule("C_form", lambda v, _: check_option("C_form", v, ("rubinstein", "libsvm"))),
        Rule("tuning", lambda v, _: check_option("tuning", v, tuning_options)),
        Rule("grid", _candidates, attribute="param_grid"),
    )


def _chosen(p: RBFParams) -> dict[str, Any]:
    """The hyperparameters as set (the model's, without tuning)."""
    return {k: getattr(p, k) for k in _TUNABLE}


def _require_public(public_X: Any, _: Mapping[str, Any]) -> Any:
    if public_X is None:
        raise ParameterError(
            "public_X (None) is required: HybridRBFSVM fits its frequencies on a public "
            "sample (at least 2 rows, encoded like the private rows)"
        )
    return public_X


def _public_rows(public_X: Any, c: Mapping[str, Any]) -> NDArray[np.float64]:
    """The public rows encoded like the private rows (a DataFrame with the schema)."""
    schema = c["schema"]
    if schema is not None and isinstance(public_X, pd.DataFrame):
        pub = encode_features(schema, public_X, "raise")
    else:
        pub = _as_matrix(public_X, "public_X")
    if pub.shape[0] < 2:
        raise ParameterError(
            f"public_X has {pub.shape[0]} row(s); fitting ρ needs at least 2 public rows"
        )
    return pub


def _public_labels(public_y: Any, c: Mapping[str, Any]) -> Any:
    if c["tuning"] == "public" and public_y is None:
        raise ParameterError("tuning ('public') needs public_y, the public rows' labels")
    return public_y


#: :class:`PrivateRBFSVM`'s constraint table, in the order the parameters are checked.
RBF_CONSTRAINTS: tuple[Rule, ...] = _rbf_rules(("none", "private"))

#: :class:`HybridRBFSVM`'s table: the RBF SVM's (with public tuning), then its own rows.
HYBRID_CONSTRAINTS: tuple[Rule, ...] = (
    *_rbf_rules(("none", "private", "public")),
    Rule("rho_max_iter", lambda v, _: check_int("rho_max_iter", v, minimum=1)),
    Rule(
        "rho_fit_rows",
        lambda v, _: None if v is None else check_int("rho_fit_rows", v, minimum=2),
    ),
    Rule("check_overlap", lambda v, _: check_bool("check_overlap", v)),
    Rule("public_sample", _require_public, attribute="public_X"),
    Rule("schema", lambda v, _: check_schema(v)),
    Rule("public", _public_rows, attribute="public_X"),
    Rule("public_y", _public_labels),
)


# --------------------------------------------------------------------------- estimators


class _RBFSVMBase(PrivateClassifierBase):
    """Shared plan/release/predict of the two learners; subclasses choose the frequencies."""

    # -- hooks -------------------------------------------------------------------------------

    def _frequencies(
        self, params: Mapping[str, Any], n_features: int, seed: Any
    ) -> NDArray[np.float64]:
        raise NotImplementedError

    def _assumptions(self) -> tuple[str, ...]:
        return ()

    def _public_tuning(self, p: RBFParams, n_private: int) -> dict[str, Any]:
        raise ParameterError(
            f"tuning ('public') needs public labelled data; {type(self).__name__} has none: "
            "use tuning='private' or HybridRBFSVM(public_X, public_y=...)"
        )

    # -- parameters ----------------------------------------------------------------------------

    _params_type: ClassVar[type | None] = RBFParams
    _constraints: ClassVar[tuple[Rule, ...]] = RBF_CONSTRAINTS

    def _params(self) -> RBFParams:
        params: RBFParams = super()._params()
        return params

    @staticmethod
    def _c_rubinstein(C: float, form: str, n: int) -> float:
        return libsvm_to_rubinstein_c(C, n) if form == "libsvm" else C

    def _part_sizes(self, n: int, m: int) -> list[int]:
        k = m + 1
        return [n // k + (1 if i < n % k else 0) for i in range(k)]

    def _check_drawable(self, p: RBFParams, n_rows: int | None) -> None:
        """Refuse, before the spend, an ε whose Laplace noise cannot be drawn exactly.

        Every candidate's mechanism is built at the public ``n`` (public tuning only picks
        one in the release, after the spend); its scale on the grid is about
        ``2³² + 2D/ε`` grid steps, beyond the sampler's ``2**40`` once ε < ``2D·2⁻⁴⁰``.
        """
        if n_rows is None or n_rows < self._rows_needed(p):
            return
        m = len(p.grid) if p.tuning == "private" else 0
        sizes = self._part_sizes(n_rows, m) if m else [n_rows] * len(p.grid)
        cands = list(zip(p.grid, sizes, strict=False)) or [(_chosen(p), n_rows)]
        if p.tuning == "none":
            cands = [(_chosen(p), n_rows)]

        def check(eps: float) -> None:
            q = dataclasses.replace(p, epsilon=eps, allow_large_epsilon=True)
            for c, n in cands:
                self._mechanism(q, c, n)

        try:
            check(p.epsilon)
        except UndrawableNoiseError as exc:

            def feasible(eps: float) -> bool:
                try:
                    check(eps)
                except ParameterError:
                    return False
                return True

            raise too_small_epsilon(type(self).__name__, p.epsilon, exc, feasible) from None

    def _check_finish(self, p: RBFParams, n_rows: int | None) -> None:
        """Refuse, before the spend, any candidate whose certified solve may not finish.

        Every candidate a release may fit (public tuning picks one inside the release) at
        its public part size: :func:`check_svm_finish`. A fit that passes always releases.
        """
        if n_rows is None or n_rows < self._rows_needed(p):
            return
        m = len(p.grid) if p.tuning == "private" else 0
        sizes = self._part_sizes(n_rows, m) if m else [n_rows] * len(p.grid)
        cands = list(zip(p.grid, sizes, strict=False))
        if p.tuning == "none" or not cands:
            cands = [(_chosen(p), n_rows)]
        for c, n in cands:
            C = self._c_rubinstein(c["C"], p.C_form, n)
            try:
                check_svm_finish(C, c["huber_h"], n, c["n_components"])
            except ParameterError as exc:
                raise ParameterError(f"{type(self).__name__}: {exc}") from None

    def _plan(self, n_rows: int | None) -> Plan:
        p = self._params()
        self._check_drawable(p, n_rows)
        self._check_finish(p, n_rows)
        details: dict[str, Any] = {
            "C_form": p.C_form,
            "tuning": p.tuning,
            "loss": {"name": "huber", "h": p.huber_h},
        }
        m = len(p.grid) if p.tuning == "private" else 0
        if m:
            details["candidates"] = m
        # The stated ε until the public n fixes the noise (and with public tuning, whose
        # candidate, hence sensitivity, is only chosen in the release): costs as much under
        # basic composition and no less under PLD or RDP.
        event: Any = EpsilonDelta(epsilon=p.epsilon)
        if n_rows is not None and n_rows >= self._rows_needed(p) and p.tuning == "none":
            mech = self._mechanism(p, _chosen(p), n_rows)
            event = mech.event  # Laplace on the 2D weights, with its grid slack
            details.update(
                n_components=p.n_components,
                C=self._c_rubinstein(p.C, p.C_form, n_rows),
                noise_scale=mech.scale,
                sensitivity=mech.sensitivity,
            )
        elif n_rows is not None and n_rows >= self._rows_needed(p) and m:
            # CMS11 Alg. 4: candidate i's Laplace release on part i, the exponential choice
            # on the last part; disjoint parts, so parallel composition.
            sizes = self._part_sizes(n_rows, m)
            parts = [self._mechanism(p, c, sizes[i]).event for i, c in enumerate(p.grid)]
            choice = ExponentialMechanism(
                epsilon=p.epsilon, sensitivity=1.0, allow_large_epsilon=p.allow_large_epsilon
            ).event
            event = Parallel(events=(*parts, choice))
        return Plan(event, type(self).__name__, details)

    def _rows_needed(self, p: RBFParams) -> int:
        m = len(p.grid) if p.tuning == "private" else 0
        return 2 * (m + 1) if m else 2

    def _mechanism(self, p: RBFParams, c: Mapping[str, Any], n: int) -> LaplaceMechanism:
        return output_mechanism(
            epsilon=p.epsilon,
            C=self._c_rubinstein(c["C"], p.C_form, n),
            n_components=c["n_components"],
            n=n,
            allow_large_epsilon=p.allow_large_epsilon,
        )

    def _validate_training_data(
        self, X: ArrayLike, y: ArrayLike, *, on_invalid: str = "raise"
    ) -> tuple[NDArray[np.float64], NDArray[Any], NDArray[np.float64]]:
        Xv, classes, ypm = super()._validate_training_data(X, y, on_invalid=on_invalid)
        need = self._rows_needed(self._params())
        if Xv.shape[0] < need:
            raise DataValidationError(
                f"X has {Xv.shape[0]} rows; {type(self).__name__} with these settings needs "
                f"at least {need} (2 per part when tuning privately)"
            )
        return Xv, classes, ypm

    def _prepare(self, X: NDArray[np.float64]) -> NDArray[np.float64]:
        # No clipping: every row of the feature map has norm 1 whatever x is.
        return X

    # -- release -------------------------------------------------------------------------------

    def _release(
        self, Z: NDArray[np.float64], y: NDArray[np.float64], source: RandomSource, plan: Plan
    ) -> None:
        p = self._params()
        X = Z  # raw validated records; the map is applied per candidate
        n = X.shape[0]
        chosen = _chosen(p)
        if p.tuning == "public":
            chosen = self._public_tuning(p, n)
        m = len(p.grid) if p.tuning == "private" else 0
        if m:
            rho, coef, mech, used, n_used = self._private_tuning(X, y, p, source)
        else:
            mech = self._mechanism(p, chosen, n)
            rho, coef = self._fit_one(X, y, chosen, p.C_form, mech, source)
            used, n_used = chosen, n
        self.rho_ = rho
        self.coef_ = coef
        self.best_params_ = dict(used)
        self.noise_scale_ = mech.scale
        self.n_train_rows_ = n_used
        self.guarantee_ = self._guarantee(p, used, mech, n_used, m)

    def _fit_one(
        self,
        X: NDArray[np.float64],
        y: NDArray[np.float64],
        c: Mapping[str, Any],
        form: str,
        mech: LaplaceMechanism,
        source: RandomSource,
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        return self._fit_mapped(
            lambda rho: InMemoryERMData(feature_map(X, rho), y),
            X.shape[1],
            X.shape[0],
            c,
            form,
            mech,
            source,
        )

    def _fit_mapped(
        self,
        mapped: Any,
        n_features: int,
        n: int,
        c: Mapping[str, Any],
        form: str,
        mech: LaplaceMechanism,
        source: RandomSource,
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """ρ (public), the certified solve on ``mapped(ρ)`` (an ERMData of the map's rows),
        then the Laplace release: one ε-DP model."""
        with _progress.bar(f"{type(self).__name__}: ρ, then SVM", total=2, unit="phase") as bar:
            rho = self._frequencies(c, n_features, self.feature_random_state)
            bar.update()  # phases, not solver iterations (those depend on the private rows)
            C = self._c_rubinstein(c["C"], form, n)
            w, converged, info = solve_svm_data(mapped(rho), C=C, huber_h=c["huber_h"])
            bar.update()
        # The residual and the iterations depend on the private rows: they go to the
        # custodian's log only, never into what an analyst sees.
        custodian.info(
            "%s: SVM solve (certified bound %r after %d Newton iterations and %d finishing "
            "steps; private: not released)",
            type(self).__name__,
            info["gradient_bound"],
            info["n_iter"],
            info["finish_steps"],
        )
        if not converged:
            steps = finish_steps(
                HuberLoss(c["huber_h"]).smoothness, 1.0 / C, 1.0, solver_tolerance(n)
            )
            raise ConvergenceError(
                f"the SVM solver did not certify its gradient tolerance "
                f"{solver_tolerance(n):.3g} (SOLVER_RTOL·4/n) after {SOLVER_MAX_ITER} Newton "
                f"iterations and {steps:,} accelerated gradient steps, which exact arithmetic "
                "guarantees (docs/proofs/rbf-svm.md): a floating-point failure, please report "
                "it; nothing was released and ε was charged"
            )
        # Laplace output perturbation through the mechanism's own release path.
        coef = mech._release(w, source)
        return rho, coef

    # -- distributed tables --------------------------------------------------------------------

    supports_distributed: ClassVar[bool] = True

    def _check_distributed_params(self) -> None:
        if self.tuning == "private":
            raise ParameterError(
                "tuning ('private') is not supported for a Dask DataFrame or a Parquet "
                "dataset (Algorithm 4 splits the rows at random into parts); set the "
                "parameters and tuning='none', or fit a pandas DataFrame"
            )

    def _scan_function(self) -> Any:
        return None  # no clipping: every row of the feature map has norm 1

    def _after_scan(self, value: Any, n_rows: int, width: int) -> None:
        pass

    def _check_row_count(self, n_rows: int) -> None:
        super()._check_row_count(n_rows)
        need = self._rows_needed(self._params())
        if n_rows < need:
            raise DataValidationError(
                f"X has {n_rows} rows; {type(self).__name__} with these settings needs "
                f"at least {need} (2 per part when tuning privately)"
            )

    def _release_distributed(
        self, rows: Any, n_rows: int, source: RandomSource, plan: Plan
    ) -> None:
        """:meth:`_release` on partitions: ρ in the driver, the map computed per partition
        inside each Newton pass, the Laplace noise drawn once in the driver."""
        p = self._params()
        chosen = _chosen(p)
        if p.tuning == "public":
            chosen = self._public_tuning(p, n_rows)
        mech = self._mechanism(p, chosen, n_rows)
        rho, coef = self._fit_mapped(
            lambda rho: rows(
                functools.partial(feature_map, rho=rho), 2 * int(chosen["n_components"])
            ),
            self._n_model_features(),
            n_rows,
            chosen,
            p.C_form,
            mech,
            source,
        )
        self.rho_ = rho
        self.coef_ = coef
        self.best_params_ = dict(chosen)
        self.noise_scale_ = mech.scale
        self.n_train_rows_ = n_rows
        self.guarantee_ = self._guarantee(p, chosen, mech, n_rows, 0)

    def _private_tuning(
        self,
        X: NDArray[np.float64],
        y: NDArray[np.float64],
        p: RBFParams,
        source: RandomSource,
    ) -> tuple[NDArray[np.float64], NDArray[np.float64], LaplaceMechanism, dict[str, Any], int]:
        """CMS11 Algorithm 4: one ε-DP model per disjoint part, exponential choice on the last."""
        grid = p.grid
        m = len(grid)
        parts = split_parts(X.shape[0], self._part_sizes(X.shape[0], m), source)
        hold = parts[m]
        models = []
        fits: list[Any] = []
        mistakes = np.empty(m)
        for i, c in _progress.track(enumerate(grid), "private tuning", total=m, unit="candidate"):
            idx = parts[i]
            mech = self._mechanism(p, c, idx.size)
            rho, coef = self._fit_one(X[idx], y[idx], c, p.C_form, mech, source)
            scores = feature_map(X[hold], rho) @ coef
            mistakes[i] = float(np.sum(np.where(scores > 0, 1.0, -1.0) != y[hold]))
            models.append((rho, coef, mech, dict(c), int(idx.size)))
            fits.append(getattr(self, "rho_fit_", None))
        k = ExponentialMechanism(
            epsilon=p.epsilon, sensitivity=1.0, allow_large_epsilon=p.allow_large_epsilon
        ).randomise(-mistakes, random_state=source)
        custodian.info(
            "%s private tuning: validation mistakes %s on %d rows (private: not released)",
            type(self).__name__,
            mistakes.astype(int).tolist(),
            hold.size,
        )
        if fits[k] is not None:
            self.rho_fit_ = fits[k]  # the hybrid's fit of the chosen candidate
        return models[k]

    def _guarantee(
        self, p: RBFParams, c: Mapping[str, Any], mech: LaplaceMechanism, n: int, m: int
    ) -> Guarantee:
        C = self._c_rubinstein(c["C"], p.C_form, n)
        sens = rubinstein_sensitivity(C, c["n_components"], n)
        assumptions = [
            "replace-one neighbours; the number of training rows n is public",
            f"features z(x) = D^(-1/2)[cos ρᵀx, sin ρᵀx] with ‖z(x)‖ = 1 for every x "
            f"(D = {c['n_components']}); ρ is public and independent of the private rows",
            f"L1 sensitivity of w* ≤ 4C√(2D)/n = {sens:.6g} (Rubinstein et al. 2012; "
            f"1-Lipschitz loss, no intercept, C = {C:g} in the C/n form)",
            f"w* solved to ‖w − w*‖ ≤ {SOLVER_RTOL:g}·4C/n (sensitivity inflated by "
            f"1 + 2·{SOLVER_RTOL:g})",
            *self._assumptions(),
        ]
        if m:
            assumptions.append(
                f"private tuning (CMS11 Alg. 4): {m} candidates on disjoint parts of the rows, "
                "chosen by the exponential mechanism on a held-out part (mistakes, sensitivity 1)"
            )
        return Guarantee.pure(
            p.epsilon,
            relation=Neighbouring.REPLACE_ONE,
            mechanism=f"{type(self).__name__} (Laplace output perturbation, Rubinstein et al.)",
            assumptions=tuple(assumptions),
            details={
                **mech.ledger_details(),
                "C": C,
                "gamma": c["gamma"],
                "n_components": c["n_components"],
                "huber_h": c["huber_h"],
                "n_train_rows": n,
            },
        )

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        tags.classifier_tags.poor_score = True
        return tags

    # -- predict and model files -----------------------------------------------------------

    def _decision(self, X: NDArray[np.float64]) -> NDArray[np.float64]:
        return feature_map(X, self.rho_) @ self.coef_

    def _released_state(self) -> dict[str, Any]:
        return {
            "rho": self.rho_.tolist(),
            "coef": [float(v) for v in self.coef_],
            "noise_scale": float(self.noise_scale_),
            "n_train_rows": int(self.n_train_rows_),
            "chosen": {k: float(v) for k, v in self.best_params_.items()},
        }

    def _load_state(self, state: dict[str, Any]) -> None:
        rho = np.asarray(state["rho"], dtype=np.float64)
        coef = np.asarray(state["coef"], dtype=np.float64)
        if (
            rho.ndim != 2
            or rho.shape[1] != self._n_model_features()
            or coef.shape != (2 * rho.shape[0],)
        ):
            raise ParameterError(
                f"model: rho (shape {rho.shape}) must be (D, {self._n_model_features()}) and coef "
                f"(shape {coef.shape}) must have 2·D entries"
            )
        self.rho_ = rho
        self.coef_ = coef
        self.noise_scale_ = float(state["noise_scale"])
        self.n_train_rows_ = int(state["n_train_rows"])
        chosen = dict(state.get("chosen", {}))
        if "n_components" in chosen:
            chosen["n_components"] = int(chosen["n_components"])
        self.best_params_ = chosen


class PrivateRBFSVM(_RBFSVMBase):
    """ε-DP RBF-kernel SVM by random Fourier features (Rubinstein et al.'s PrivateSVM-Finite).

    Draws ``ρ_j ~ N(0, 2γ I)`` (j = 1..D, the Fourier transform of ``exp(-γ‖x - y‖²)``),
    maps records to ``z(x) ∈ R^{2D}`` with ``‖z(x)‖ = 1``, solves the linear SVM without
    intercept ``min ½‖w‖² + (C/n) Σ ℓ(y_i wᵀz_i)`` exactly, and releases
    ``ŵ = w* + Lap(λ)^{2D}`` with ``λ = 2^{2.5} C √D / (n ε)`` and ρ.

    Guarantee: ε-differential privacy under **replace-one** neighbours with n public
    (Rubinstein et al. 2012, Cor. 15: ``‖w*_D − w*_D'‖₂ ≤ 4LCκ/n`` with L = κ = 1, so the L1
    sensitivity is ``4C√(2D)/n``). No input bound is needed, because every map row has norm
    1. The loss is the Huber-smoothed hinge of width ``huber_h`` (convex, 1-Lipschitz, so the
    constant is that of the hinge, L = 1); ``huber_h → 0`` approaches the hinge.

    Parameters
    ----------
    epsilon : float, default 1.0
        ε > 0 (≤ 10 unless ``allow_large_epsilon``).
    C : float, default 1.0
        Loss weight > 0. With ``C_form="rubinstein"`` (default) the objective is
        ``½‖w‖² + (C/n) Σ ℓ``; with ``C_form="libsvm"`` it is ``½‖w‖² + C Σ ℓ`` (scikit-learn's
        ``SVC(C=...)``) and is converted to ``n·C`` before the noise is calibrated — the
        conversion Li et al. omit, which under-noises by a factor n.
    gamma : float, default 1.0
        γ > 0 of the kernel ``exp(-γ‖x - y‖²)``.
    n_components : int, default 100
        D, the number of frequencies (the model has 2D coefficients).
    huber_h : float, default 0.5
        Width of the Huber smoothing, > 0.
    C_form : {"rubinstein", "libsvm"}, default "rubinstein"
    tuning : {"none", "private"}, default "none"
        ``"private"``: Chaudhuri et al.'s Algorithm 4 over ``param_grid`` — the rows are split
        into (m + 1) random disjoint parts, one ε-DP model per candidate, and the exponential
        mechanism (ε, sensitivity 1) picks one by its mistakes on the last part. Total cost ε.
    param_grid : dict, optional
        Candidate lists for keys among ``C``, ``gamma``, ``n_components``, ``huber_h``,
        fixed without looking at the data.
    schema : ppdp.data.Schema, optional
        The declared schema (a two-class label): ``fit``, ``predict`` and
        ``decision_function`` then take the raw table and encode it with the schema (the
        label column may be absent at prediction); the classes are the label's and
        ``predict`` returns their names; ``feature_names_in_`` holds the schema's columns.
    random_state : None, int or Generator, optional
        The privacy noise (``None``: OS CSPRNG; anything else is for tests and warns).
    feature_random_state : None, int or Generator, optional
        The public draw of ρ. Seeding it is fine: ρ is published and is not privacy noise.
    allow_large_epsilon : bool, default False

    Attributes
    ----------
    coef_ : ndarray of shape (2·n_components,)
        The released ŵ.
    rho_ : ndarray of shape (n_components, n_features_in_)
        The released frequencies.
    classes_ : ndarray of shape (2,)
    noise_scale_ : float
        λ actually used (≥ Li et al.'s λ by the grid and solver allowances, ≈ 1 + 2e-6).
    guarantee_ : Guarantee
    best_params_ : dict
        The hyperparameters of the released model (the chosen candidate when tuned).

    Notes
    -----
    2^{2.5} is Rubinstein et al.'s stability constant 4 times √2 from converting the L2
    bound to L1 over 2D coordinates; strong convexity gives the tighter ``2C/n`` (so the
    release is in fact also (ε/2)-DP, which the audit uses). Numerical caveats: the noise is
    :class:`~ppdp.mechanisms.LaplaceMechanism`'s grid noise; the solver's inexactness is
    paid for in the sensitivity.

    References
    ----------
    .. [RBHT12] Rubinstein, Bartlett, Huang, Taft, J. Privacy and Confidentiality 4(1), 2012.
    .. [CMS11] Chaudhuri, Monteleoni, Sarwate, JMLR 12, 2011.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.random((200, 3)); y = (X[:, 0] > 0.5).astype(int)
    >>> svm = PrivateRBFSVM(epsilon=1.0, C=10.0, gamma=1.0, n_components=20,
    ...                     random_state=0, feature_random_state=0).fit(X, y)
    >>> svm.coef_.shape, svm.rho_.shape
    ((40,), (20, 3))
    >>> print(svm.guarantee_)  # doctest: +ELLIPSIS
    ε-differential privacy with ε=1, neighbouring: replace-one ...
    """

    def __init__(
        self,
        *,
        epsilon: float = 1.0,
        C: float = 1.0,
        gamma: float = 1.0,
        n_components: int = 100,
        huber_h: float = 0.5,
        C_form: Literal["rubinstein", "libsvm"] = "rubinstein",
        tuning: Literal["none", "private"] = "none",
        param_grid: dict[str, list[Any]] | None = None,
        schema: Any = None,
        random_state: Any = None,
        feature_random_state: Any = None,
        allow_large_epsilon: bool = False,
    ):
        self.epsilon = epsilon
        self.C = C
        self.gamma = gamma
        self.n_components = n_components
        self.huber_h = huber_h
        self.C_form = C_form
        self.tuning = tuning
        self.param_grid = param_grid
        self.schema = schema
        self.random_state = random_state
        self.feature_random_state = feature_random_state
        self.allow_large_epsilon = allow_large_epsilon

    def _frequencies(
        self, params: Mapping[str, Any], n_features: int, seed: Any
    ) -> NDArray[np.float64]:
        return draw_frequencies(params["n_components"], n_features, params["gamma"], seed)

    def _assumptions(self) -> tuple[str, ...]:
        return ("ρ drawn iid from N(0, 2γI), independently of the data",)


class HybridRBFSVM(_RBFSVMBase):
    """Li et al.'s hybrid SVM: ρ fitted to the RBF kernel on public rows, then the private SVM.

    The frequencies are fitted by L-BFGS with an analytic gradient
    (:func:`ppdp.learn.rff.fit_frequencies`) so that the kernel of the training map,
    ``(1/D) Σ_j cos(ρ_jᵀ(x_a - x_b))``, matches ``exp(-γ‖x_a - x_b‖²)`` on all pairs of
    public rows (starting from an RFF draw). Training is then exactly
    :class:`PrivateRBFSVM`'s: same map (norm 1 for *any* ρ), same solver, same noise
    ``λ = 2^{2.5} C √D / (n ε)``.

    Guarantee: ε-differential privacy under replace-one neighbours of the **private** rows,
    provided ``public_X`` is public: drawn from people disjoint from the private data (it is
    released, in effect, through ρ). ``fit`` warns :class:`~ppdp.exceptions.PrivacyLeakWarning`
    when public rows are bit-identical to private rows (a hash of each row; on data with
    many natural duplicates, such as encoded census tables, confirm disjointness by record
    identity and pass ``check_overlap=False``).

    Parameters
    ----------
    public_X : array_like of shape (n_public, d)
        Public rows, encoded exactly as the private rows (≥ 2 rows); with ``schema=`` a raw
        DataFrame is encoded with the schema.
    public_y : array_like of shape (n_public,), optional
        Public labels; needed only for ``tuning="public"`` (free: 3-fold cross-validation on
        the public rows of the release as it will be made — each fold's model perturbed by
        simulated noise of the private fit's scale, computed from public n, ε, C, D).
    epsilon, C, gamma, n_components, huber_h, C_form, param_grid, random_state, allow_large_epsilon
        As in :class:`PrivateRBFSVM`.
    tuning : {"none", "private", "public"}, default "none"
    feature_random_state : None, int or Generator, optional
        The starting draw of ρ before the fit (and the folds of public tuning).
    rho_max_iter : int, default 300
        L-BFGS iterations for ρ.
    rho_fit_rows : int or None, default 5000
        At most this many public rows enter the ρ fit: a larger public sample is subsampled
        uniformly (seeded by ``feature_random_state``) for the fit only. The fit's cost is
        quadratic in its rows (an n × n kernel: 5,000 rows take a few minutes and 200 MB,
        20,000 would take hours and 3.2 GB), while its held-out kernel error keeps falling
        more slowly (``benchmarks/hybrid_rho_fit.md``: on Adult, 4.7e-4 from 2,000 rows,
        3.9e-4 from 4,000). ``None``: every public row. The rows are public, so the
        subsample costs no privacy; every public row is still checked against the private
        ones.
    check_overlap : bool, default True
        Warn when public rows equal private rows. The count says whether chosen rows are
        among the private ones, so with an accountant in total mode (``on_invalid="mask"``)
        it goes to the custodian's log (``ppdp.custodian``) instead of a warning.

    Attributes
    ----------
    rho_fit_ : RhoFit
        The ρ fit (loss before and after, iterations, seconds).
    coef_, rho_, classes_, noise_scale_, guarantee_, best_params_
        As in :class:`PrivateRBFSVM`.

    References
    ----------
    .. [LXOJ14] Li, Xiong, Ohno-Machado, Jiang, BioMed Research International, 2014.
    """

    _params_type = HybridParams
    _constraints = HYBRID_CONSTRAINTS

    def __init__(
        self,
        public_X: ArrayLike | None = None,
        *,
        public_y: ArrayLike | None = None,
        epsilon: float = 1.0,
        C: float = 1.0,
        gamma: float = 1.0,
        n_components: int = 100,
        huber_h: float = 0.5,
        C_form: Literal["rubinstein", "libsvm"] = "rubinstein",
        tuning: Literal["none", "private", "public"] = "none",
        param_grid: dict[str, list[Any]] | None = None,
        schema: Any = None,
        random_state: Any = None,
        feature_random_state: Any = None,
        rho_max_iter: int = 300,
        rho_fit_rows: int | None = 5000,
        check_overlap: bool = True,
        allow_large_epsilon: bool = False,
    ):
        self.public_X = public_X
        self.public_y = public_y
        self.epsilon = epsilon
        self.C = C
        self.gamma = gamma
        self.n_components = n_components
        self.huber_h = huber_h
        self.C_form = C_form
        self.tuning = tuning
        self.param_grid = param_grid
        self.schema = schema
        self.random_state = random_state
        self.feature_random_state = feature_random_state
        self.rho_max_iter = rho_max_iter
        self.rho_fit_rows = rho_fit_rows
        self.check_overlap = check_overlap
        self.allow_large_epsilon = allow_large_epsilon

    def _params(self) -> HybridParams:
        params: HybridParams = super()._params()
        return params

    def _public(self) -> NDArray[np.float64]:
        """The public rows, encoded like the private rows (validated with the parameters)."""
        return self._params().public

    def _prepare(self, X: NDArray[np.float64]) -> NDArray[np.float64]:
        p = self._params()
        pub = p.public
        if pub.shape[1] != X.shape[1]:
            raise DataValidationError(
                f"public_X has {pub.shape[1]} columns but X has {X.shape[1]}; encode both alike"
            )
        if p.check_overlap:
            self._warn_overlap(overlap_count(pub, X), pub.shape[0])
        return X

    def _scan_function(self) -> Any:
        p = self._params()
        if not p.check_overlap:
            return None
        pub = p.public
        return functools.partial(_public_rows_seen, public=tuple(_row_digests(pub)))

    def _after_scan(self, value: Any, n_rows: int, width: int) -> None:
        pub = self._public()
        if pub.shape[1] != width:
            raise DataValidationError(
                f"public_X has {pub.shape[1]} columns but X has {width}; encode both alike"
            )
        self._warn_overlap(0 if value is None else int(np.count_nonzero(value)), pub.shape[0])

    def _warn_overlap(self, k: int, n_public: int) -> None:
        """Say that public rows equal private rows: a membership fact for the custodian only.

        Whether a chosen public row is among the private rows is a free membership test, so
        in total mode it reaches the custodian's log, never the caller (``_value_note``).
        """
        if k:
            self._value_note(
                f"{k} of {n_public} public rows are identical to private training "
                "rows: ρ is fitted on public_X and released, so the public sample must "
                "come from records disjoint from the private data (pass "
                "check_overlap=False once disjointness is established by record identity)",
                PrivacyLeakWarning,
            )

    def _frequencies(
        self, params: Mapping[str, Any], n_features: int, seed: Any
    ) -> NDArray[np.float64]:
        p = self._params()
        fit = fit_frequencies(
            _fit_rows(p.public, p.rho_fit_rows, self.feature_random_state),
            n_components=params["n_components"],
            gamma=params["gamma"],
            random_state=seed,
            max_iter=p.rho_max_iter,
        )
        self.rho_fit_ = fit
        return fit.rho

    def _public_tuning(self, p: RBFParams, n_private: int) -> dict[str, Any]:
        """The candidate with the fewest 3-fold CV mistakes on the public rows, noise included.

        Free: it reads public rows and public quantities only. Each fold's model is solved on
        the public training fold with the C/n-form C the private fit will use, then perturbed
        by simulated Laplace noise of the scale the private release will have (from ``n``,
        ε, C and D, all public) — ``PUBLIC_TUNING_DRAWS`` draws from a seeded numpy
        generator (a simulation, not a release) — so the choice accounts for the noise
        (a smaller D or C wins at small ε).
        """
        hp = self._params()
        pub = hp.public
        _, y_pub = check_binary_labels(
            np.asarray(hp.public_y).reshape(-1), self._declared_classes()
        )
        if y_pub.shape[0] != pub.shape[0] or pub.shape[0] < 6:
            raise DataValidationError(
                f"public_y ({y_pub.shape[0]} labels) must label each of the public rows "
                f"({pub.shape[0]}), at least 6 for public tuning"
            )
        rng = np.random.default_rng(self.feature_random_state)
        perm = rng.permutation(len(pub))
        folds = np.array_split(perm, 3)
        best, best_err = hp.grid[0], math.inf
        for c in _progress.track(hp.grid, "public tuning", unit="candidate"):
            C = self._c_rubinstein(c["C"], hp.C_form, n_private)
            lam = rubinstein_noise_scale(C, c["n_components"], n_private, hp.epsilon)
            err = 0.0
            for f in folds:
                tr = np.setdiff1d(perm, f)
                rho = fit_frequencies(
                    _fit_rows(pub[tr], hp.rho_fit_rows, self.feature_random_state),
                    n_components=c["n_components"],
                    gamma=c["gamma"],
                    random_state=self.feature_random_state,
                    max_iter=hp.rho_max_iter,
                ).rho
                w, _, _ = solve_svm(feature_map(pub[tr], rho), y_pub[tr], C=C, huber_h=c["huber_h"])
                W = w + rng.laplace(0.0, lam, size=(PUBLIC_TUNING_DRAWS, w.size))
                pred = np.where(feature_map(pub[f], rho) @ W.T > 0, 1.0, -1.0)
                err += float(np.sum(pred != y_pub[f][:, None])) / PUBLIC_TUNING_DRAWS
            if err < best_err:
                best, best_err = c, err
        self.public_tuning_mistakes_ = best_err
        return dict(best)

    def _assumptions(self) -> tuple[str, ...]:
        return (
            "ρ fitted on public rows only (public_X), which are disjoint from the private rows",
        )

    def to_model_dict(self) -> dict[str, Any]:
        """As the base class, without the public sample (ρ already carries what is used)."""
        out = super().to_model_dict()
        out["hyperparameters"].pop("public_X", None)
        out["hyperparameters"].pop("public_y", None)
        return out
