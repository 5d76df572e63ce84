"""Private linear classifiers by objective or output perturbation ([CMS11]_).

:class:`PrivateLogisticRegression` (logistic loss, c = 1/4) and :class:`PrivateLinearSVM`
(Huber loss of width h, c = 1/(2h)) minimise ``(1/n) Σ ℓ(y_i wᵀx_i) + Λ/2 ‖w‖²`` on records
scaled into the unit ball by the declared ``data_norm``, and release ``w`` with

* ``perturbation="objective"`` (default; CMS11 Algorithm 2): the minimiser of the objective
  plus ``bᵀw/n`` (and ``Δ/2‖w‖²`` when ``2 log(1 + c/(nΛ)) ≥ ε``), ``‖b‖ ~ Gamma(d, 2/ε')``
  drawn at full float resolution, solved to a certified gradient norm, then snapped to a
  grid and released with a small output noise that covers the solver's residual (1 % of ε);
* ``perturbation="output"`` (Algorithm 1): the minimiser plus ``b`` with
  ``‖b‖ ~ Gamma(d, 2/(nΛε))`` (plus the solver's and the grid's allowances).

Both are ε-DP under replace-one neighbours with ``n`` public, for records of norm at most
``data_norm`` (larger ones are scaled to it) and labels in the two (public) classes. The
privacy argument, the constants and the numerical caveats are in ``docs/proofs/erm.md``.

References
----------
.. [CMS11] K. Chaudhuri, C. Monteleoni and A. D. Sarwate. Differentially private empirical
   risk minimization. JMLR 12:1069-1109, 2011.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import expit

from ppdp._params import Rule, epsilon_rules
from ppdp._validation import check_bool, check_int, check_option, check_positive
from ppdp.accounting.events import (
    Composed,
    EpsilonDelta,
    ObjectivePerturbation,
    Parallel,
    PrivacyEvent,
)
from ppdp.budget import Guarantee, Neighbouring
from ppdp.data.schema import PrivacyUnit, Schema
from ppdp.exceptions import ParameterError, ParameterTypeError, SchemaError
from ppdp.learn._base import (
    Plan,
    PrivateClassifierBase,
    check_schema,
    clip_to_unit_ball,
    declared_classes,
)
from ppdp.learn._erm import (
    DEFAULT_MAX_ITER,
    DEFAULT_RESIDUAL_SHARE,
    DEFAULT_TOL,
    ERMResult,
    HuberLoss,
    LogisticLoss,
    Loss,
    ObjectiveConstants,
    OutputConstants,
    auto_regularization,
    check_finish,
    finish_bounds,
    output_perturbation_constants,
    private_erm,
    private_erm_data,
    release_constants,
)
from ppdp.learn.tuning import PrivateTuning, tune
from ppdp.mechanisms import ExponentialMechanism
from ppdp.mechanisms.grid import UndrawableNoiseError, check_drawable, too_small_epsilon
from ppdp.random import RandomSource

__all__ = [
    "DEFAULT_REGULARIZATION",
    "LINEAR_CONSTRAINTS",
    "LinearParams",
    "PrivateLinearSVM",
    "PrivateLogisticRegression",
]

logger = logging.getLogger(__name__)
_custodian = logging.getLogger("ppdp.custodian")

#: Default Λ. A public constant: Λ must never be chosen by looking at the private data
#: (use ``tuning=`` for a private choice).
DEFAULT_REGULARIZATION = 1e-3
_PERTURBATIONS = ("objective", "output")
_MECHANISM = {
    "objective": "objective perturbation (CMS11 Alg. 2) with a certified residual step",
    "output": "output perturbation (CMS11 Alg. 1)",
}


@dataclass(frozen=True, eq=False)
class LinearParams:
    """The validated parameters of a linear learner (its constraint table, run once per fit).

    Attributes
    ----------
    estimator : str
        The learner's class name (for messages).
    allow_large_epsilon : bool
    epsilon : float
    schema : Schema or None
    declared_norm : float or int
        ``data_norm``, or the schema's ``max_row_l2_norm``, as declared: a number, checked
        > 0 as ``data_norm`` once the classes are checked.
    classes : ndarray or None
        The declared classes (``classes=`` or the schema label's).
    data_norm : float
        The declared bound on ``‖x‖₂``, > 0.
    perturbation : {"objective", "output"}
    fit_intercept : bool
    intercept_scaling : float
    tuning : PrivateTuning or None
    unit : PrivacyUnit or None
        The schema's privacy unit (output perturbation on per-person averaged losses).
    regularization : float or "auto"
    tol : float
    max_iter : int
    loss : Loss
    """

    estimator: str
    allow_large_epsilon: bool
    epsilon: float
    schema: Schema | None
    declared_norm: Any
    classes: NDArray[Any] | None
    data_norm: float
    perturbation: str
    fit_intercept: bool
    intercept_scaling: float
    tuning: PrivateTuning | None
    unit: PrivacyUnit | None
    regularization: float | str
    tol: float
    max_iter: int
    loss: Loss


def _declared_norm(norm: Any, checked: Mapping[str, Any]) -> Any:
    """``data_norm``, or the schema's declared bound, which must be a declared number."""
    schema = checked["schema"]
    if norm is None and schema is not None:
        norm = schema.max_row_l2_norm
    if norm is None:
        raise ParameterError(
            "data_norm (None) must be declared: a public bound on the Euclidean norm of "
            "a record (it is never read from the data), or give schema= to take the "
            "schema's declared max_row_l2_norm"
        )
    if isinstance(norm, bool):
        raise ParameterTypeError(f"data_norm ({norm!r}) must be a number, not a bool")
    return norm


def _check_unit(schema: Any, checked: Mapping[str, Any]) -> PrivacyUnit | None:
    """The schema's privacy unit, for what can honour it: output perturbation, without
    private tuning, with a declared ``max_rows`` (``docs/proofs/privacy-unit.md`` §6)."""
    unit = None if schema is None else schema.privacy_unit
    if unit is None:
        return None
    what = f"schema declares privacy_unit (column {unit.column!r})"
    if checked["perturbation"] != "output":
        raise ParameterError(
            f"perturbation ({checked['perturbation']!r}): {what}; {checked['estimator']} "
            "trains per person with perturbation='output' only (objective perturbation's "
            "analysis is per row)"
        )
    if checked["tuning"] is not None:
        raise ParameterError(
            f"tuning ({checked['tuning']!r}): {what}; private tuning splits rows, not persons: "
            "fix regularization"
        )
    if unit.is_auto:
        raise SchemaError(
            f"privacy_unit: max_rows (auto): {checked['estimator']} needs a declared "
            "max_rows (an integer >= 1); it does not enter this learner's noise (each "
            "person's rows are averaged into one term), so declare a generous one"
        )
    return unit


def _regularization(value: Any, _: Mapping[str, Any]) -> float | str:
    """Λ > 0, or ``"auto"``."""
    if isinstance(value, str):
        check_option("regularization", value, ("auto",))
        return "auto"
    return check_positive("regularization", value)


#: The rows both linear learners share, in the order they are checked; each learner adds
#: its ``loss`` row last (:data:`LINEAR_CONSTRAINTS`).
_COMMON_ROWS: tuple[Rule, ...] = (
    Rule("estimator", lambda cls, _: cls.__name__, attribute="__class__"),
    *epsilon_rules(),
    Rule("schema", lambda v, _: check_schema(v)),
    Rule("declared_norm", _declared_norm, attribute="data_norm"),
    Rule("classes", lambda v, c: declared_classes(c["schema"], v, c["estimator"])),
    Rule("data_norm", lambda _, c: check_positive("data_norm", c["declared_norm"])),
    Rule("perturbation", lambda v, _: check_option("perturbation", v, _PERTURBATIONS)),
    Rule("fit_intercept", lambda v, _: check_bool("fit_intercept", v)),
    Rule("intercept_scaling", lambda v, _: check_positive("intercept_scaling", v)),
    Rule("tuning", lambda v, _: PrivateTuning.coerce(v)),
    Rule("unit", _check_unit, attribute="schema"),
    Rule("regularization", _regularization),
    Rule("tol", lambda v, _: check_positive("tol", v)),
    Rule("max_iter", lambda v, _: check_int("max_iter", v, minimum=1)),
)

#: The constraint table of each linear learner, by its loss.
LINEAR_CONSTRAINTS: dict[str, tuple[Rule, ...]] = {
    "logistic": (
        *_COMMON_ROWS,
        Rule("loss", lambda _, __: LogisticLoss(), attribute="_loss_label"),
    ),
    "huber": (*_COMMON_ROWS, Rule("loss", lambda h, _: HuberLoss(h), attribute="huber_h")),
}


class _PrivateLinearERM(PrivateClassifierBase):
    """Shared implementation of the two linear learners."""

    _loss_label: ClassVar[str] = ""
    #: Output perturbation trains per person under a schema's privacy unit: each person's
    #: (bounded) rows enter the objective as one term, their average loss.
    supports_privacy_unit: ClassVar[bool] = True
    _params_type = LinearParams

    # -- parameters ---------------------------------------------------------------------

    def _params(self) -> LinearParams:
        params: LinearParams = super()._params()
        return params

    def _plan(self, n_rows: int | None) -> Plan:
        p = self._params()
        details: dict[str, Any] = {
            "loss": p.loss.to_dict(),
            "perturbation": p.perturbation,
            "data_norm": p.data_norm,
            "fit_intercept": p.fit_intercept,
        }
        if p.tuning is not None:
            details["tuning_grid"] = list(p.tuning.regularization_grid)
            if n_rows is not None:
                details["part_sizes"] = p.tuning.part_sizes(n_rows)
        elif n_rows and (p.regularization != "auto" or self._planned_dim is not None):
            # 0 rows fail data validation later; "auto" needs the validated width too
            details["regularization"] = self._resolve_lambda(p, n_rows, self._planned_dim)
        else:
            details["regularization"] = p.regularization
        if n_rows is not None:
            details["n"] = n_rows
        if p.unit is not None:  # n counts persons: each person's rows are one term
            details["privacy_unit"] = p.unit.ledger_dict()
            details["units"] = "persons"
        mech = _MECHANISM[p.perturbation]
        if p.tuning is not None:
            mech += " with private tuning (CMS11 Alg. 4)"
        self._check_drawable(p, n_rows)
        self._check_finish(p, n_rows)
        return Plan(self._events(p, n_rows), f"{type(self).__name__}: {mech}", details)

    def _fits(self, p: LinearParams, n_rows: int, dim: int) -> list[tuple[int, float]]:
        """``(n, Λ)`` of every solve a release makes: one, or each private-tuning
        candidate on its part of the rows (CMS11 Alg. 4)."""
        if p.tuning is None:
            return [(n_rows, self._resolve_lambda(p, n_rows, dim))]
        sizes, grid = p.tuning.part_sizes(n_rows), p.tuning.regularization_grid
        return [(m, float(lam)) for m, lam in zip(sizes, grid, strict=False)]

    def _constants(
        self, p: LinearParams, n: int, lam: float, dim: int
    ) -> ObjectiveConstants | OutputConstants:
        """The release constants of one solve of ``n`` rows at regularization ``lam``."""
        return release_constants(
            n,
            dim,
            loss=p.loss,
            epsilon=p.epsilon,
            regularization=lam,
            perturbation=p.perturbation,
            tol=p.tol,
            residual_share=DEFAULT_RESIDUAL_SHARE,
        )

    def _check_drawable(self, p: LinearParams, n_rows: int | None) -> None:
        """Refuse, before the spend, an ε whose grid-rounded noise cannot be drawn exactly.

        The released noise (output perturbation's, or the residual step's) has scale
        ``(Δ + √d·Λ)/ε`` on the grid ``Λ ≈ 2⁻³²·Δ/ε``: about ``2³² + √d/ε`` grid steps,
        beyond the sampler's ``2**40`` once ε is below about ``√d·2⁻⁴⁰``. Known once the
        public ``n`` and width are (the second plan of ``fit``, before the charge).
        """
        dim = self._planned_dim
        if not n_rows or dim is None or n_rows < self._min_rows:
            return

        def check(q: LinearParams) -> None:
            # The first fit only: the noise's ratio to its grid does not depend on n or Λ.
            n, lam = self._fits(q, n_rows, dim)[0]
            k = self._constants(q, n, lam, dim)
            released = k.residual if isinstance(k, ObjectiveConstants) else k
            if released is not None:
                check_drawable("b", released.noise_scale, released.granularity, what="noise")

        try:
            check(p)
        except UndrawableNoiseError as exc:

            def feasible(eps: float) -> bool:
                try:
                    check(dataclasses.replace(p, epsilon=eps))
                except ParameterError:
                    return False
                return True

            raise too_small_epsilon(type(self).__name__, p.epsilon, exc, feasible) from None

    def _check_finish(self, p: LinearParams, n_rows: int | None) -> None:
        """Refuse, before the spend, parameters whose certified solve is not sure to finish.

        After the caller's ``max_iter`` Newton iterations the solver finishes with at most
        :func:`~ppdp.learn._erm.finish_steps` accelerated gradient steps, a public bound
        (``docs/proofs/erm.md``, *The certified finish*): a fit whose bound exceeds
        :data:`~ppdp.learn._erm.FINISH_STEP_CAP` is refused here, so a fit that passes this
        check always releases. ``max_iter`` itself is never refused.
        """
        dim = self._planned_dim
        if not n_rows or dim is None or n_rows < self._min_rows:
            return
        is_huber = isinstance(p.loss, HuberLoss)
        h = f", huber_h={p.loss.h:g}" if is_huber else ""
        for n, lam in self._fits(p, n_rows, dim):
            mu, g0, tau = finish_bounds(self._constants(p, n, lam, dim))
            what = f"{type(self).__name__}: regularization={lam:g}{h}"
            check_finish(
                smoothness=p.loss.smoothness,
                strong_convexity=mu,
                gradient_at_zero=g0,
                tol=tau,
                n=n,
                dim=dim,
                what=f"{what}, tol={p.tol:g} (n={n})",
                fix="raise regularization" + (" or huber_h" if is_huber else "") + " or tol",
            )

    def _events(self, p: LinearParams, n_rows: int | None) -> tuple[PrivacyEvent, ...]:
        """The typed events of one fit: the draws :func:`private_erm` makes.

        Output perturbation: one :class:`~ppdp.accounting.events.GammaNorm` (sensitivity
        ``2/(nΛ) + 2τ/Λ``, its grid and scale). Objective perturbation: its objective noise
        at ``ε_obj`` and the certified residual step's Gamma-norm noise at ``ε_r``, composed.
        They depend on the public ``n`` and width, so before the data are validated (and for
        :meth:`privacy_events`, which has neither) the fit is described by its stated ε alone
        (objective perturbation at ε, or an ε-DP event), which costs as much under basic
        composition and no less under PLD or RDP. With private tuning (CMS11 Alg. 4): a
        parallel event of each candidate's fit on its part and the exponential choice.
        """
        stated: PrivacyEvent = (
            ObjectivePerturbation(epsilon=p.epsilon)
            if p.perturbation == "objective"
            else EpsilonDelta(epsilon=p.epsilon)
        )
        dim = self._planned_dim
        if not n_rows or dim is None or n_rows < self._min_rows:
            return (stated,)

        def fit(n: int, lam: float) -> tuple[PrivacyEvent, ...]:
            return self._constants(p, n, lam, dim).events

        tuning = p.tuning
        if tuning is None:
            return fit(n_rows, self._resolve_lambda(p, n_rows, dim))
        # CMS11 Alg. 4: candidate i's fit on part i, the exponential choice on the last part;
        # the parts are disjoint, so parallel composition
        sizes = tuning.part_sizes(n_rows)
        parts: list[PrivacyEvent] = []
        for size, lam in zip(sizes, tuning.regularization_grid, strict=False):
            events = fit(size, float(lam))
            parts.append(events[0] if len(events) == 1 else Composed(events=events))
        choice = ExponentialMechanism(epsilon=p.epsilon, sensitivity=1.0).event
        return (Parallel(events=(*parts, choice)),)

    #: Length of the released vector (features, plus one with an intercept), set when the
    #: training data have been validated: "auto" depends on it (public: the width).
    _planned_dim: int | None = None

    @staticmethod
    def _resolve_lambda(p: LinearParams, n: int, dim: int | None = None) -> float:
        """Λ for ``n`` rows of ``dim`` coordinates: the number given, or the public "auto".

        ``"auto"``: :func:`auto_regularization` for objective perturbation (raised to the
        float floor with ``dim``); the public constant :data:`DEFAULT_REGULARIZATION` for
        output perturbation (whose noise shrinks as Λ grows, so it has no least Λ of its own).
        """
        if p.regularization == "auto" and p.perturbation == "output":
            return DEFAULT_REGULARIZATION
        if p.regularization == "auto":
            return auto_regularization(
                p.epsilon,
                n,
                p.loss.smoothness,
                residual_share=DEFAULT_RESIDUAL_SHARE,
                dim=dim,
                tol=p.tol,
            )
        return float(p.regularization)

    def _validate_training_data(self, X: Any, y: Any, **kw: Any) -> Any:
        Xv, classes, ypm = super()._validate_training_data(X, y, **kw)
        self._planned_dim = int(Xv.shape[1]) + int(self._params().fit_intercept)
        return Xv, classes, ypm

    @property
    def _min_rows(self) -> int:  # type: ignore[override]
        tuning = self._params().tuning
        return 2 if tuning is None else 2 * tuning.n_parts

    def _warn_low_utility(self, n: int) -> None:
        """Log a warning when output perturbation's noise exceeds the largest possible ‖w*‖.

        Public quantities only: ``J(w*) ≤ J(0) = ℓ(0)`` gives ``‖w*‖ ≤ sqrt(2ℓ(0)/Λ)``, and
        the expected norm of output perturbation's noise is ``d·s``. A log record (logger
        ``ppdp.learn.linear``), not a Python warning: experiments run in this regime on
        purpose. Objective perturbation is not checked (its effect on ``w`` is damped by
        the data's curvature, which is private), nor is tuning.
        """
        p = self._params()
        if p.tuning is not None or p.perturbation != "output":
            return
        lam = self._resolve_lambda(p, n)
        d = self._n_model_features() + int(p.fit_intercept)
        bound = math.sqrt(2.0 * float(p.loss.value(np.zeros(1))[0]) / lam)
        k_out = output_perturbation_constants(p.epsilon, n, lam, d, tol=p.tol)
        expected = d * k_out.noise_scale
        if expected > bound:
            logger.warning(
                "%s: the expected norm of the output noise (%.3g) exceeds the largest possible "
                "‖w‖ (%.3g) at epsilon=%g, n=%d, Λ=%g: the noise dominates the weights; raise "
                "epsilon, n or Λ",
                type(self).__name__,
                expected,
                bound,
                p.epsilon,
                n,
                lam,
            )

    # -- data -----------------------------------------------------------------------------

    def _augment(self, Z: NDArray[np.float64]) -> NDArray[np.float64]:
        """Append the constant feature (inside the unit ball) when fitting an intercept."""
        p = self._params()
        if not p.fit_intercept:
            return Z
        return _augment_rows(Z, p.intercept_scaling)

    def _prepare(self, X: NDArray[np.float64]) -> NDArray[np.float64]:
        return self._augment(super()._prepare(X))

    # -- training ------------------------------------------------------------------------

    def _fit_one(
        self, Z: NDArray[np.float64], y: NDArray[np.float64], lam: float, source: RandomSource
    ) -> ERMResult:
        p = self._params()
        weights, persons = getattr(self, "_unit_weights", (None, None))
        return private_erm(
            Z,
            y,
            loss=p.loss,
            epsilon=p.epsilon,
            regularization=lam,
            perturbation=p.perturbation,
            random_state=source,
            tol=p.tol,
            max_iter=p.max_iter,
            sample_weight=weights if p.unit is not None else None,
            n_units=persons if p.unit is not None else None,
        )

    # -- distributed tables ------------------------------------------------------------------

    supports_distributed: ClassVar[bool] = True

    def _check_distributed_params(self) -> None:
        unit = self._params().unit
        if unit is not None:
            raise ParameterError(
                f"X: schema declares privacy_unit (column {unit.column!r}); "
                f"{type(self).__name__} trains per person on a pandas DataFrame only (each "
                "person's rows are averaged in memory)"
            )
        if self.tuning is not None:
            raise ParameterError(
                f"tuning ({self.tuning!r}) is not supported for a Dask DataFrame or a Parquet "
                "dataset (Algorithm 4 splits the rows at random into parts); fix "
                "regularization, or fit a pandas DataFrame"
            )

    def _after_scan(self, value: Any, n_rows: int, width: int) -> None:
        self._planned_dim = int(width) + int(self._params().fit_intercept)
        super()._after_scan(value, n_rows, width)

    def _release_distributed(
        self, rows: Any, n_rows: int, source: RandomSource, plan: Plan
    ) -> None:
        """The release of :meth:`_release` with the records in partitions.

        Each partition is clipped (and augmented) exactly as :meth:`_prepare` does in
        memory; the Newton passes, the certificate and the noise are those of
        :func:`~ppdp.learn._erm.private_erm_data`.
        """
        p = self._params()
        dim = self._n_model_features() + int(p.fit_intercept)
        lam = self._resolve_lambda(p, n_rows, dim)
        scaling = p.intercept_scaling if p.fit_intercept else None
        transform = functools.partial(
            _unit_ball_rows, data_norm=p.data_norm, intercept_scaling=scaling
        )
        data = rows(transform, dim)
        result = private_erm_data(
            data,
            loss=p.loss,
            epsilon=p.epsilon,
            regularization=lam,
            perturbation=p.perturbation,
            random_state=source,
            tol=p.tol,
            max_iter=p.max_iter,
        )
        # The passes follow the Newton iterations and the finish's steps: data-dependent, so
        # the custodian's log only (issue 29).
        _custodian.info(
            "%s: %d passes over the partitions (private: not released)",
            type(self).__name__,
            int(data.n_passes),
        )
        self._store(p, result, lam, n_rows, n_rows)

    def _release(
        self, Z: NDArray[np.float64], y: NDArray[np.float64], source: RandomSource, plan: Plan
    ) -> None:
        p = self._params()
        n = Z.shape[0] if p.unit is None else self._unit_weights[1]  # persons under a unit
        tuning = p.tuning
        if tuning is None:
            lam = self._resolve_lambda(p, n, Z.shape[1])
            result = self._fit_one(Z, y, lam, source)
            n_train = n
        else:
            outcome = tune(
                Z,
                y,
                tuning=tuning,
                epsilon=p.epsilon,
                fit_one=lambda Zi, yi, lam_i: self._fit_one(Zi, yi, lam_i, source),
                mistakes=lambda res, Zv, yv: int(np.count_nonzero((Zv @ res.coef) * yv <= 0)),
                source=source,
            )
            result = outcome.model
            lam = outcome.regularization
            n_train = tuning.part_sizes(n)[outcome.index]
        self._store(p, result, lam, n, n_train)

    def _store(self, p: LinearParams, result: ERMResult, lam: float, n: int, n_train: int) -> None:
        """Set the fitted state from one private fit."""
        w = result.coef
        self._set_coef(w)
        self.regularization_ = lam
        self.n_iter_ = result.n_iter
        self.converged_ = result.converged
        self.gradient_bound_ = result.gradient_norm
        self.guarantee_ = self._guarantee(p, result, lam, n, n_train)

    def _guarantee(
        self, p: LinearParams, result: ERMResult, lam: float, n: int, n_train: int
    ) -> Guarantee:
        k = result.constants
        loss = p.loss
        assumptions = [
            f"records scaled by the declared data_norm={p.data_norm:g} and clipped to norm 1",
            "n is public (replace-one neighbours)"
            if p.unit is None
            else (
                f"privacy unit: the persons of column {p.unit.column!r} (read only to bound "
                "and group each person's rows, never released); n is the number of persons, "
                "public (replace-one per person: one person's whole set of rows replaced); each "
                f"person keeps at most {p.unit.max_rows} row(s) (chosen uniformly at random) "
                "and they enter the objective as one term, their average loss (|ℓ'| ≤ 1, "
                "ℓ'' ≤ c as one record's), so the per-record sensitivity 2/(nΛ) holds per "
                "person whatever their number of rows"
            ),
            "the two class labels are public"
            if p.classes is None
            else "the two class labels are declared",
            f"{loss.name} loss: |ℓ'| ≤ 1, ℓ'' ≤ c = {loss.smoothness:g}",
            f"Λ = {lam:g} chosen without looking at the data"
            + (" (privately tuned: CMS11 Alg. 4)" if p.tuning is not None else ""),
            "solver gradient norm certified ≤ tol, float rounding included (covered by "
            + (
                "the residual output step"
                if p.perturbation == "objective"
                else "the sensitivity's 2·tol/Λ"
            )
            + "; see docs/proofs/erm.md)",
        ]
        if p.fit_intercept:
            assumptions.append(
                f"intercept: constant feature {p.intercept_scaling:g} inside the norm bound"
            )
        details: dict[str, Any] = {
            "loss": loss.to_dict(),
            "perturbation": p.perturbation,
            "regularization": lam,
            "n": n,
            "n_train": n_train,
            "dim": int(result.coef.size),
            "solver_tol": p.tol,
            **k.to_dict(),
        }
        if p.tuning is not None:
            details["tuning_grid"] = list(p.tuning.regularization_grid)
        if p.unit is not None:
            details["privacy_unit"] = p.unit.ledger_dict()
        if isinstance(k, ObjectiveConstants) and k.fallback:
            assumptions.append("Δ fallback: ε' = ε/2 and ridge Δ added (2 log(1 + c/(nΛ)) ≥ ε)")
        return Guarantee.pure(
            p.epsilon,
            relation=Neighbouring.REPLACE_ONE,
            mechanism=f"{type(self).__name__}: {_MECHANISM[p.perturbation]}",
            assumptions=tuple(assumptions),
            details=details,
        )

    # -- released state ----------------------------------------------------------------------

    def _set_coef(self, w: NDArray[np.float64]) -> None:
        p = self._params()
        norm = p.data_norm
        if p.fit_intercept:
            s = p.intercept_scaling
            r = math.sqrt(1.0 + s * s)
            self.coef_ = (w[:-1] / (r * norm)).reshape(1, -1)
            self.intercept_ = np.array([w[-1] * s / r])
        else:
            self.coef_ = (w / norm).reshape(1, -1)
            self.intercept_ = np.zeros(1)

    def _decision(self, X: NDArray[np.float64]) -> NDArray[np.float64]:
        norm = float(self._data_norm())
        Z, _ = clip_to_unit_ball(X, norm)  # the training map; rows within the bound unchanged
        return np.asarray(Z @ (self.coef_[0] * norm) + self.intercept_[0], dtype=np.float64)

    def _released_state(self) -> dict[str, Any]:
        return {
            "coef": [float(v) for v in self.coef_[0]],
            "intercept": float(self.intercept_[0]),
            "regularization": float(self.regularization_),
        }

    def _load_state(self, state: dict[str, Any]) -> None:
        coef = np.asarray(state["coef"], dtype=np.float64).reshape(1, -1)
        width = self._n_model_features()
        if coef.shape[1] != width:
            raise ParameterError(
                f"coef (length {coef.shape[1]}) must have one entry per encoded feature ({width})"
            )
        self.coef_ = coef
        self.intercept_ = np.array([float(state.get("intercept", 0.0))])
        self.regularization_ = float(state["regularization"])

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        tags.classifier_tags.poor_score = True
        return tags


def _augment_rows(
    Z: NDArray[np.float64], scaling: float, order: Literal["C", "F"] = "C"
) -> NDArray[np.float64]:
    """``[z, s]/sqrt(1 + s²)`` for each row (inside the unit ball after rounding)."""
    r = math.sqrt(1.0 + scaling * scaling)
    out = np.empty((Z.shape[0], Z.shape[1] + 1), order=order)
    np.divide(Z, r, out=out[:, :-1])
    out[:, -1] = scaling / r
    # Keep every augmented row inside the unit ball after rounding.
    norms = np.sqrt(np.einsum("ij,ij->i", out, out))
    over = norms > 1.0
    if over.any():
        out[over] *= 1.0 - 2.0**-52
    return out


def _unit_ball_rows(
    X: NDArray[np.float64], *, data_norm: float, intercept_scaling: float | None
) -> NDArray[np.float64]:
    """One partition's records as the learner trains on them: clipped, then augmented.

    Fortran-ordered (so that :func:`~ppdp.learn._erm.erm_partition_terms` reads ``Zᵀ``
    without a copy); the values are those of :meth:`_PrivateLinearERM._prepare`.
    """
    Z, _ = clip_to_unit_ball(np.asfortranarray(X), data_norm)
    return Z if intercept_scaling is None else _augment_rows(Z, intercept_scaling, "F")


class PrivateLogisticRegression(_PrivateLinearERM):
    """ε-DP logistic regression by objective or output perturbation ([CMS11]_).

    Minimises ``(1/n) Σ log(1 + exp(−y_i wᵀx_i)) + Λ/2 ‖w‖²`` on records ``x_i/data_norm``
    (rows longer than ``data_norm`` are scaled to it; the count goes to the custodian's
    log) and releases a noisy ``w``.

    Guarantee: ε-DP under replace-one neighbours with n public (CMS11 Thm 6 for output,
    Thm 9 / Cor. 11 for objective perturbation, c = 1/4), assuming the declared
    ``data_norm`` is public and Λ (``regularization``) does not depend on the data. With
    ``tuning`` the whole procedure, training and selection, costs ε (CMS11 Thm 26).

    Parameters
    ----------
    epsilon : float, default 1.0
        ε > 0 (at most 10).
    regularization : float or "auto", default "auto"
        Λ > 0, the ridge weight on the unit-ball records (scikit-learn's ``C`` is
        ``1/(nΛ)``). ``"auto"`` uses, for objective perturbation,
        ``Λ = c/(n(e^{ε_obj/4} − 1))``, the smallest Λ without the Δ fallback
        (:func:`ppdp.learn._erm.auto_regularization`), and for output perturbation the public
        constant 1e-3; it depends on ε and the public n only. On Adult at ε = 1 it scores
        AUC 0.858 against 0.844 for Λ = 1e-3 (``benchmarks/bench_logreg_defaults.py``).
    data_norm : float, optional
        Declared public bound on ``‖x‖₂``; required without ``schema`` (``None`` is refused
        at ``fit``). With ``schema`` it defaults to ``schema.max_row_l2_norm``.
    perturbation : {"objective", "output"}, default "objective"
    fit_intercept : bool, default True
        The records become ``[x/data_norm, intercept_scaling]/sqrt(1 + intercept_scaling²)``
        (still in the unit ball, so the guarantee is unchanged) and the bias is regularised
        like every weight. CMS11 has no intercept: pass ``False`` to reproduce the paper.
    intercept_scaling : float, default 1.0
    tuning : PrivateTuning or sequence of float, optional
        A public grid of Λ for private tuning (CMS11 Alg. 4); ``regularization`` is then
        unused and the chosen value is ``regularization_``.
    classes : sequence of two labels, optional
        The declared labels (negative, positive). Without it the two labels are read from
        ``y`` (and the guarantee assumes they are public); with it ``y`` may hold one of
        them only, and any other label is refused before anything is spent.
    random_state : None, int or Generator, optional
        ``None`` uses the OS CSPRNG; a seed is reproducible and warns.
    tol : float, default 1e-10
        Certified bound on the solver's final gradient norm, float rounding included
        (see ``docs/proofs/erm.md``). Parameters for which the certified finish may need
        more than :data:`~ppdp.learn._erm.FINISH_STEP_CAP` gradient steps are refused
        before the spend.
    max_iter : int, default 500
        Newton iterations (typically fewer than 15; the Huber loss with a tiny Λ and a
        large noise term can need a few hundred). If Newton stops short, at most a public
        number of accelerated gradient steps finish the solve (*The certified finish* in
        ``docs/proofs/erm.md``): any ``max_iter`` releases; a small one costs time.
    allow_large_epsilon : bool, default False
        Accept ε above 10 (a weak guarantee).

    Attributes
    ----------
    coef_ : ndarray, shape (1, n_features)
        Released weights in the original feature scale: for rows within ``data_norm``
        the score is ``X @ coef_.T + intercept_``.
    intercept_ : ndarray, shape (1,)
    classes_ : ndarray, shape (2,)
    n_features_in_ : int
    regularization_ : float
    guarantee_ : Guarantee
    converged_, n_iter_, gradient_bound_ : bool, int, float
        Public functions of the parameters, the same on any data: ``converged_`` is True;
        ``n_iter_`` is ``max_iter`` plus the certified finish's public step bound (a bound
        on the iterations, not their count); ``gradient_bound_`` is the certified τ
        (``solver_tol`` raised to what float64 can certify). The iterations taken go to
        the custodian's log only. Not part of the model file.

    References
    ----------
    .. [CMS11] K. Chaudhuri, C. Monteleoni and A. D. Sarwate. Differentially private
       empirical risk minimization. JMLR 12:1069-1109, 2011.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 0.9]] * 50)
    >>> y = np.array([1, 1, 0, 0] * 50)
    >>> clf = PrivateLogisticRegression(epsilon=1.0, data_norm=1.0, random_state=0)
    >>> clf.fit(X, y).predict([[1.0, 0.0]]).shape
    (1,)
    >>> print(clf.guarantee_.epsilon)
    1.0
    """

    _loss_label = "logistic"
    _constraints = LINEAR_CONSTRAINTS["logistic"]

    def __init__(
        self,
        *,
        epsilon: float = 1.0,
        regularization: float | str = "auto",
        data_norm: float | None = None,
        perturbation: str = "objective",
        fit_intercept: bool = True,
        intercept_scaling: float = 1.0,
        tuning: Any = None,
        classes: Any = None,
        schema: Any = None,
        random_state: Any = None,
        tol: float = DEFAULT_TOL,
        max_iter: int = DEFAULT_MAX_ITER,
        allow_large_epsilon: bool = False,
    ) -> None:
        self.epsilon = epsilon
        self.regularization = regularization
        self.data_norm = data_norm
        self.perturbation = perturbation
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.tuning = tuning
        self.classes = classes
        self.schema = schema
        self.random_state = random_state
        self.tol = tol
        self.max_iter = max_iter
        self.allow_large_epsilon = allow_large_epsilon

    def predict_proba(self, X: ArrayLike) -> NDArray[np.float64]:
        """``[P(classes_[0]), P(classes_[1])]`` from the logistic model. Free post-processing."""
        f = self.decision_function(X)
        return np.column_stack([expit(-f), expit(f)])

    def predict_log_proba(self, X: ArrayLike) -> NDArray[np.float64]:
        """Logarithm of :meth:`predict_proba`, computed stably."""
        f = self.decision_function(X)
        return np.column_stack([-np.logaddexp(0.0, f), -np.logaddexp(0.0, -f)])


class PrivateLinearSVM(_PrivateLinearERM):
    """ε-DP linear SVM with the Huber loss, by objective or output perturbation ([CMS11]_).

    Minimises ``(1/n) Σ ℓ_H(y_i wᵀx_i) + Λ/2 ‖w‖²`` with the Huber loss of width ``huber_h``
    (CMS11 eq. 7; ``|ℓ'| ≤ 1``, ``ℓ'' ≤ c = 1/(2h)``) on records ``x_i/data_norm`` clipped to
    norm 1, and releases a noisy ``w``.

    Guarantee: ε-DP under replace-one neighbours with n public (CMS11 Thm 6, and Thm 9 with
    Cor. 13 for the kinks of ℓ_H), assuming the declared ``data_norm`` is public and Λ does
    not depend on the data.

    Parameters
    ----------
    huber_h : float, default 0.5
        Width h of the Huber loss's quadratic piece (> 0).

    Other parameters and attributes as :class:`PrivateLogisticRegression` (no
    ``predict_proba``).

    References
    ----------
    .. [CMS11] K. Chaudhuri, C. Monteleoni and A. D. Sarwate. Differentially private
       empirical risk minimization. JMLR 12:1069-1109, 2011.
    """

    _loss_label = "huber"
    _constraints = LINEAR_CONSTRAINTS["huber"]

    def __init__(
        self,
        *,
        epsilon: float = 1.0,
        regularization: float | str = "auto",
        data_norm: float | None = None,
        perturbation: str = "objective",
        huber_h: float = 0.5,
        fit_intercept: bool = True,
        intercept_scaling: float = 1.0,
        tuning: Any = None,
        classes: Any = None,
        schema: Any = None,
        random_state: Any = None,
        tol: float = DEFAULT_TOL,
        max_iter: int = DEFAULT_MAX_ITER,
        allow_large_epsilon: bool = False,
    ) -> None:
        self.epsilon = epsilon
        self.regularization = regularization
        self.data_norm = data_norm
        self.perturbation = perturbation
        self.huber_h = huber_h
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.tuning = tuning
        self.classes = classes
        self.schema = schema
        self.random_state = random_state
        self.tol = tol
        self.max_iter = max_iter
        self.allow_large_epsilon = allow_large_epsilon
