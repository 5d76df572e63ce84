"""What every private classifier shares: validation, the check-validate-spend-release flow, models.

A private learner follows the scikit-learn contract: ``__init__`` only stores its
parameters; ``fit(X, y, accountant=None)`` is the only step that reads the data or spends
budget, and returns ``self``; learned state ends in ``_``. ``fit`` is the release run
(:func:`ppdp.release.run_release`, with this module's steps), always in this order
(DESIGN.md contract 2, RELIABILITY.md (c)):

1. validate the parameters (:meth:`PrivateClassifierBase._plan`): the budget and the
   mechanism follow from the parameters alone; a learner's parameters are one
   declarative constraint table (:mod:`ppdp._params`), checked once per ``fit`` into a
   frozen parameter object (:meth:`PrivateClassifierBase._params`);
2. :func:`ppdp.accounting.check_charges`: refused here, the data are never read;
3. validate the data (shape, finite values, exactly two classes, enough rows), then map
   the records into the unit ball (:meth:`PrivateClassifierBase._prepare`): an error
   costs nothing;
4. :func:`ppdp.accounting.charge` the plan, durably (its typed event, and the caller's
   ``idempotency_key``);
5. train and add the noise (:meth:`PrivateClassifierBase._release`), only now.

Records are divided by the *declared* ``data_norm`` and rows whose norm still exceeds 1
are scaled back onto the unit sphere. The number of rows scaled is logged to the
custodian's logger (``"ppdp.custodian"``); it describes the private data and is never part
of a release. The norm is never read from the data.

With ``schema=`` (a :class:`ppdp.data.Schema` with a two-class label) a learner takes the
raw table: ``fit``, ``predict`` and ``decision_function`` encode it inside with the schema
(features only; the label column may be absent at prediction), ``data_norm`` defaults to
the schema's declared ``max_row_l2_norm``, the declared classes are the label's classes,
``feature_names_in_`` holds the schema's column names and ``predict`` returns class names.
The encoding is part of step 3 (validation): it follows the accountant's ``on_invalid``
mode and costs nothing when it fails.

With ``schema=`` a learner that sets ``supports_distributed`` (all of ppdp's) also takes a
Dask DataFrame or a Parquet dataset holding the label column: ``fit(path, accountant=acct,
scheduler=...)``. Step 3 is then one distributed scan (``ppdp.data.distributed.scan_table``:
the in-memory error with the whole table's count, and ``n``); step 5 runs Newton passes over
the partitions (:class:`~ppdp.learn._erm.PartitionedERMData`), nothing persisted, with the
noise drawn in the driver as in memory. ``predict`` and ``decision_function`` of such a
table return a lazy Dask Series.

A fit without an accountant records nothing. The first such fit of a process warns
:class:`UnaccountedFitWarning` (a :class:`~ppdp.exceptions.PPDPWarning`; silence it with
``warnings.filterwarnings("ignore", category=UnaccountedFitWarning)``). It also covers
``cross_val_score`` and grid searches over private rows: choosing hyperparameters on the
private data without an accountant voids the guarantee. Fits with a seeded
``random_state`` do not warn: they already warn that their output is not for production.

Released models serialise with :meth:`PrivateClassifierBase.to_model_dict` (class name,
hyperparameters, released parameters, classes, guarantee; JSON-safe, nothing private) and
load with :meth:`PrivateClassifierBase.from_model_dict`.
"""

from __future__ import annotations

import functools
import logging
import math
import operator
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import NotFittedError as _SklearnNotFittedError
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import check_is_fitted, validate_data

from ppdp._params import ValidatedParams
from ppdp.accounting import Accountant, Charge, check_charges
from ppdp.accounting.events import PrivacyEvent
from ppdp.budget import Guarantee, Neighbouring, PrivacyBudget
from ppdp.data.schema import Schema
from ppdp.exceptions import (
    DataValidationError,
    NotFittedError,
    ParameterError,
    ParameterTypeError,
    PPDPWarning,
    user_stacklevel,
)
from ppdp.learn._erm import ERMPartial, Loss, PartitionedERMData, erm_partition_terms
from ppdp.random import RandomSource, resolve_random_state
from ppdp.release import (
    InMemoryTable,
    PartitionedTable,
    ReleaseOptions,
    RunResult,
    run_release,
)

__all__ = [
    "CUSTODIAN_LOGGER",
    "MODEL_FORMAT",
    "LearnerNotFittedError",
    "Plan",
    "PrivateClassifierBase",
    "UnaccountedFitWarning",
    "check_binary_labels",
    "check_declared_classes",
    "check_schema",
    "clip_to_unit_ball",
    "declared_classes",
    "encode_features",
]

logger = logging.getLogger(__name__)
#: Where counts about the private data go (never into a release).
CUSTODIAN_LOGGER = "ppdp.custodian"
custodian = logging.getLogger(CUSTODIAN_LOGGER)

#: ``format`` field of a model dict.
MODEL_FORMAT = "ppdp-model/1"


class UnaccountedFitWarning(PPDPWarning):
    """A private learner was fitted without an accountant: nothing was recorded.

    Issued once per process (the first unaccounted fit with secure randomness). Silence it
    with ``warnings.filterwarnings("ignore", category=UnaccountedFitWarning)``.
    """


_UNACCOUNTED_MESSAGE = (
    "{name}.fit without an accountant: nothing was recorded in a budget ledger, and the "
    "caller answers for the total spend. Fitting repeatedly on the same private rows (as "
    "cross_val_score or a grid search does) composes the cost, and choosing hyperparameters "
    "that way voids the guarantee unless every fit is accounted: pass "
    "fit(..., accountant=acct) (cross_val_score(..., params={{'accountant': acct}})). "
    "This warning is shown once per process."
)
_warned_unaccounted = False


def _warn_unaccounted(name: str) -> None:
    global _warned_unaccounted
    if _warned_unaccounted:
        return
    _warned_unaccounted = True
    warnings.warn(
        _UNACCOUNTED_MESSAGE.format(name=name), UnaccountedFitWarning, stacklevel=user_stacklevel()
    )


#: What one ``fit`` will cost and how, fixed from the parameters and the public ``n``: the
#: one planned-charge type of ppdp (:class:`ppdp.accounting.Charge`; ``Plan`` is its old name).
Plan = Charge


def check_binary_labels(
    y: ArrayLike, classes: ArrayLike | None = None, *, on_invalid: str = "raise"
) -> tuple[NDArray[Any], NDArray[np.float64]]:
    """Return ``classes_`` and the labels mapped to ``{-1, +1}`` (``classes_[1]`` is +1).

    Without ``classes`` the label set is read from ``y`` and must hold exactly two values
    (then the guarantee assumes the two labels are public). With ``classes`` (two distinct
    declared labels, in that order) every label must be one of them; ``y`` may hold only one.
    ``on_invalid="mask"`` (total mode) needs ``classes`` and maps any other label to
    ``classes[0]`` instead of raising (the count goes to the custodian log only).

    Raises
    ------
    DataValidationError
        If ``y`` does not hold exactly two distinct labels, or holds a label outside the
        declared ``classes`` (the message gives counts, never a label value).
    ParameterError
        If ``classes`` is not two distinct values.
    """
    y = np.asarray(y)
    if classes is not None:
        declared = check_declared_classes(classes)
        yr = y.reshape(-1)
        is_pos = yr == declared[1]
        outside = int(np.count_nonzero(~(is_pos | (yr == declared[0]))))
        if outside and on_invalid == "mask":
            custodian.info("%d label(s) outside the declared classes were masked", outside)
        elif outside:
            raise DataValidationError(
                f"y has {outside} label(s) outside the two declared classes; "
                "only binary classification is supported"
            )
        return declared, np.where(is_pos, 1.0, -1.0)
    if on_invalid == "mask":
        raise ParameterError(
            "classes (None) must be declared when invalid values are masked "
            "(on_invalid='mask'): reading the label set from y would be a data-dependent error"
        )
    kind = type_of_target(y, input_name="y")
    if kind in ("continuous", "continuous-multioutput"):
        raise DataValidationError(
            f"y has {kind} values; the private classifiers need exactly two classes "
            "(Unknown label type: continuous)"
        )
    classes, codes = np.unique(y, return_inverse=True)
    if classes.size != 2:
        raise DataValidationError(
            "Only binary classification is supported. "
            f"y has {classes.size} class{'es' if classes.size != 1 else ''}; the private "
            "classifiers need exactly two"
        )
    return classes, np.where(codes.reshape(-1) == 1, 1.0, -1.0)


def check_declared_classes(classes: ArrayLike) -> NDArray[Any]:
    """Two distinct declared labels, as a 1-D array (negative class first)."""
    if isinstance(classes, str):
        raise ParameterTypeError(f"classes ({classes!r}) must be a sequence of two labels")
    declared = np.asarray(classes)
    if declared.ndim != 1 or declared.size != 2 or declared[0] == declared[1]:
        raise ParameterError(
            f"classes (shape {declared.shape}) must be two distinct declared labels"
        )
    return declared


def check_schema(schema: Any) -> Schema | None:
    """The declared schema of a learner: a :class:`ppdp.data.Schema` or ``None``."""
    if schema is None:
        return None
    if not isinstance(schema, Schema):
        raise ParameterTypeError(
            f"schema ({type(schema).__name__}) must be a ppdp.data.Schema or None"
        )
    return schema


def declared_classes(schema: Schema | None, classes: Any, name: str) -> NDArray[Any] | None:
    """``classes`` if given, else the schema label's classes; checked for the learner ``name``.

    ``schema`` is already checked (:func:`check_schema`). The schema, when given, must
    declare a two-class label, and ``classes``, when given too, must name the same classes.
    """
    from_schema = None
    if schema is not None:
        if schema.label is None:
            raise ParameterError(
                f"schema (no label) must declare the label {name} learns, with exactly two "
                "classes (label: {name: COLUMN, classes: [A, B]}); the features are read "
                "from the schema's columns"
            )
        if schema.label.n_classes != 2:
            label = schema.label
            raise ParameterError(
                f"schema (label with {label.n_classes} classes) must declare a label with "
                f"exactly two classes for {name}, a binary classifier: derive a two-class "
                f"column from {label.name!r} (one class against the rest, e.g. "
                f"{label.classes[0]!r} or not) and declare that as the label"
            )
        from_schema = check_declared_classes(list(schema.label.classes))
    if classes is None:
        return from_schema
    declared = check_declared_classes(classes)
    if from_schema is not None and not (
        [str(v) for v in declared] == [str(v) for v in from_schema]
    ):
        raise ParameterError(
            f"classes ({list(declared)!r}) must match the schema label's classes "
            f"({list(from_schema)!r}) or be left out"
        )
    return declared


def clip_to_unit_ball(X: NDArray[np.float64], data_norm: float) -> tuple[NDArray[np.float64], int]:
    """Divide by the declared ``data_norm``; scale rows still longer than 1 onto the sphere.

    Returns the scaled records and the number of rows that were scaled (a fact about the
    private data: log it to the custodian, never release it).

    Examples
    --------
    >>> Z, k = clip_to_unit_ball(np.array([[3.0, 4.0], [0.3, 0.4]]), 1.0)
    >>> Z.round(3).tolist(), k
    ([[0.6, 0.8], [0.3, 0.4]], 1)
    """
    X = np.asarray(X, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        Z = X / data_norm
        norms = np.sqrt(np.einsum("ij,ij->i", Z, Z))  # may overflow to inf: then clipped
    over = ~(norms <= 1.0)
    k = int(over.sum())
    if k:
        # Direction of each long row without overflow: scale by its largest entry first.
        rows = X[over]
        peak = np.max(np.abs(rows), axis=1, keepdims=True)
        unit = rows / peak
        unit /= np.sqrt(np.einsum("ij,ij->i", unit, unit))[:, None]
        # Rounding can leave a norm of 1 + a few ulp; shrink until inside the ball.
        for _ in range(4):
            long = np.sqrt(np.einsum("ij,ij->i", unit, unit)) > 1.0
            if not long.any():
                break
            unit[long] *= 1.0 - 2.0**-52
        Z[over] = unit
    return Z, k


class LearnerNotFittedError(NotFittedError, _SklearnNotFittedError):
    """ppdp's :class:`~ppdp.exceptions.NotFittedError` that is also scikit-learn's."""


class PrivateClassifierBase(ValidatedParams, ClassifierMixin, BaseEstimator):  # type: ignore[misc]
    """Base class of ppdp's private binary classifiers (see the module docstring).

    Subclasses store ``epsilon``, ``data_norm`` and ``random_state`` as attributes and
    implement :meth:`_plan`, :meth:`_release`, :meth:`_decision` and
    :meth:`_released_state` / :meth:`_load_state`; :meth:`_prepare` maps validated records
    into the unit ball (default: :func:`clip_to_unit_ball` with ``data_norm``).
    ``_min_rows`` is the smallest training set accepted. A learner declares its constraint
    table (``_constraints``) and the frozen dataclass it builds (``_params_type``), and its
    methods read :meth:`_params`.
    """

    _min_rows: ClassVar[int] = 2

    # -- to implement ------------------------------------------------------------------

    def _plan(self, n_rows: int | None) -> Plan:
        """Validate every parameter; return the charge. Must not read the data."""
        raise NotImplementedError

    def _prepare(self, X: NDArray[np.float64]) -> NDArray[np.float64]:
        """Map validated records into the unit ball (default: clip with ``data_norm``)."""
        Z, k = clip_to_unit_ball(X, float(self._data_norm()))
        if k:
            custodian.info(
                "%s: %d of %d rows had norm above the declared data_norm and were scaled to it",
                type(self).__name__,
                k,
                X.shape[0],
            )
        return Z

    def _release(
        self, Z: NDArray[np.float64], y: NDArray[np.float64], source: RandomSource, plan: Plan
    ) -> None:
        """Train on the unit-ball records ``Z`` and ±1 labels ``y``; set the fitted state."""
        raise NotImplementedError

    def _warn_low_utility(self, n: int) -> None:
        """Log when the noise will swamp the signal, from public quantities (optional hook)."""

    def _decision(self, X: NDArray[np.float64]) -> NDArray[np.float64]:
        """Real-valued scores of validated records (positive means ``classes_[1]``)."""
        raise NotImplementedError

    def _released_state(self) -> dict[str, Any]:
        """The released parameters, JSON-safe (lists of floats)."""
        raise NotImplementedError

    def _load_state(self, state: dict[str, Any]) -> None:
        """Inverse of :meth:`_released_state`."""
        raise NotImplementedError

    # -- shared validation ------------------------------------------------------------------

    # -- schema= (raw tables) ----------------------------------------------------------------

    def _schema(self) -> Schema | None:
        """The declared schema, checked (``None`` without one)."""
        return check_schema(getattr(self, "schema", None))

    def _data_norm(self) -> Any:
        """``data_norm`` if given, else the schema's declared ``max_row_l2_norm``."""
        norm = getattr(self, "data_norm", None)
        schema = self._schema()
        if norm is None and schema is not None:
            return schema.max_row_l2_norm
        return norm

    def _declared_classes(self) -> NDArray[Any] | None:
        """``classes`` if given, else the schema label's classes; checked."""
        schema = self._schema()
        return declared_classes(schema, getattr(self, "classes", None), type(self).__name__)

    def _n_model_features(self) -> int:
        """Width of the encoded records the model acts on."""
        schema = self._schema()
        return schema.n_features if schema is not None else int(self.n_features_in_)

    def _encode_features(self, X: Any, on_invalid: str) -> NDArray[np.float64]:
        schema = self._schema()
        assert schema is not None
        return encode_features(schema, X, on_invalid)

    @property
    def bounding_summary(self) -> str | None:
        """The custodian's line of the last fit's contribution bounding (persons, rows
        dropped), or None without a privacy unit: for the custodian only, never released."""
        return getattr(self, "_custodian_bounding_line", None)

    def _with_label(self, frame: pd.DataFrame, y: Any) -> pd.DataFrame:
        """``frame`` with the labels ``y`` as the schema's label column (one per row)."""
        schema = self._schema()
        assert schema is not None and schema.label is not None
        yv = np.asarray(y)
        if yv.ndim == 2 and yv.shape[1] == 1:
            yv = yv.reshape(-1)
        if yv.ndim != 1 or yv.shape[0] != len(frame):
            raise DataValidationError(
                f"y (shape {yv.shape}) must hold one label per row of X ({len(frame)} rows)"
            )
        out = frame.copy(deep=False)
        out[schema.label.name] = yv
        return out

    def _encode_training(
        self, X: Any, y: Any, on_invalid: str
    ) -> tuple[NDArray[np.float64], NDArray[Any]]:
        """Encode the raw table with the schema: encoded features and class values."""
        schema = self._schema()
        assert schema is not None and schema.label is not None
        label = schema.label.name
        frame = _as_table(schema, X)
        if y is None:
            if label not in frame.columns:
                raise DataValidationError(
                    f"y (None): give the labels or a column {label!r} (the schema's label) in X"
                )
        else:
            frame = self._with_label(frame, y)
        Xe, codes = schema.encode(frame, on_invalid=on_invalid)
        assert codes is not None
        return Xe, np.asarray(list(schema.label.classes))[codes]

    def privacy_budget(self) -> PrivacyBudget:
        """What one :meth:`fit` costs, from the parameters alone."""
        with self._params_once():
            return self._plan(None).budget

    def planned_charges(self) -> list[Charge]:
        """The charge one :meth:`fit` makes, from the parameters alone (what a budget check
        before the data are read compares with the ledger)."""
        with self._params_once():
            return [self._plan(None)]

    def privacy_events(self) -> tuple[PrivacyEvent, ...]:
        """The typed events one :meth:`fit` charges, from the parameters alone."""
        with self._params_once():
            return self._plan(None).events

    # -- the shared flow ----------------------------------------------------------------

    def fit(
        self,
        X: ArrayLike,
        y: ArrayLike | None = None,
        accountant: Accountant | None = None,
        *,
        scheduler: Any = None,
        allow_seeded: bool = False,
        idempotency_key: str | None = None,
    ) -> Any:
        """Check the budget, validate the data, record the spend, then train privately.

        Parameters
        ----------
        X : array_like, shape (n_samples, n_features), or a table with ``schema=``
            Private records. Rows are divided by ``data_norm`` and clipped to norm 1.
            With ``schema=`` the raw table, encoded here with the schema: a pandas
            DataFrame, or (learners with ``supports_distributed``) a Dask DataFrame or a
            Parquet dataset (a folder, a ``.parquet`` file or a glob) holding the label
            column, trained partition by partition (a partitioned table of the release run).
        y : array_like, shape (n_samples,)
            Exactly two distinct labels (treated as public, like the feature count). With
            ``schema=`` it may be left out when ``X`` holds the label column (it must be
            left out for a distributed table).
        accountant : Accountant, optional
            The dataset's accountant (replace-one relation). Without one nothing is
            recorded and the caller is responsible for the budget (the first such fit of
            the process warns :class:`UnaccountedFitWarning`).
        allow_seeded : bool, default False
            With an accountant, a seeded ``random_state`` is refused (before the data are
            read) unless this is True: the same seed on neighbouring tables cancels the
            noise exactly. The ledger records the seeded spend and this permission.
        idempotency_key : str, optional
            A key unique to this training request (``ppdp train --idempotency-key``): a
            retry with the same key charges nothing again (``replayed_`` is then True); a
            copy started while another run holds the key is refused (``KeyInUseError``).
        scheduler : optional
            For a distributed table only: ``"local"`` (a ``LocalCluster``, the default for
            a Parquet path), an address ``"tcp://host:8786"``, a ``distributed.Client``, or
            one of Dask's local schedulers (``"threads"``, ``"sync"``, ``"processes"``);
            ``None`` with a Dask DataFrame uses Dask's default (an active ``Client``).

        Returns
        -------
        self
        """
        options = ReleaseOptions(
            accountant=accountant,
            allow_seeded=allow_seeded,
            idempotency_key=idempotency_key,
            scheduler=scheduler,
        )
        self.run(X, y, options)
        return self

    def run(self, X: Any, y: Any = None, options: ReleaseOptions | None = None) -> RunResult:
        """:meth:`fit` with its options as one object, returning what the run did.

        ``ReleaseOptions(dry_run=True)`` runs every check of a real fit (parameters, budget,
        the data's validation, or one scan of a distributed table) and stops before the
        charge: nothing is spent or trained, and the result's ``charges`` hold the charge a
        real fit would make.

        Parameters
        ----------
        X, y : see :meth:`fit`
        options : ReleaseOptions, optional
            The accountant and every option of the run (default: none, no accountant).

        Returns
        -------
        ppdp.release.RunResult
        """
        return run_release(_LearnerSteps(self, y), X, options or ReleaseOptions())

    def _released(self, records: Any, seeded: bool) -> None:
        """After a release (both paths): the ledger entries, replay and seeding state."""
        self.ledger_indices_ = tuple(r.index for r in records)
        self.replayed_ = bool(records) and all(r.replayed for r in records)
        self.seeded_ = seeded

    def _check_accountant(
        self, accountant: Accountant, plan: Plan, idempotency_key: str | None
    ) -> None:
        """Step 2 after the seeded source: refuse another relation, or no budget."""
        if accountant.relation is not Neighbouring.REPLACE_ONE:
            raise ParameterError(
                f"accountant relation ({accountant.relation.value!r}) must be 'replace-one': "
                f"{type(self).__name__} is ε-DP for replaced records with n public"
            )
        check_charges(accountant, plan, mechanism=plan.mechanism, idempotency_key=idempotency_key)

    # -- distributed tables (Dask DataFrame or Parquet dataset) ------------------------------

    #: Whether :meth:`fit` takes a Dask DataFrame or a Parquet dataset (with ``schema=``).
    supports_distributed: ClassVar[bool] = False

    def _check_distributed_params(self) -> None:
        """Refuse, in one line, parameters the distributed fit does not support (hook)."""

    def _scan_function(self) -> Any:
        """What the validating scan also reduces per partition, ``(X, y) -> mergeable``
        (picklable; ``None`` for nothing). Default: rows longer than ``data_norm``."""
        return functools.partial(_rows_over_norm, data_norm=float(self._data_norm()))

    def _value_note(self, message: str, category: type[Warning]) -> None:
        """Tell the custodian a fact that depends on the private values (DESIGN.md contract 8).

        With ``on_invalid="raise"`` the caller is the custodian (as for its value-dependent
        errors) and gets a warning; in total mode (``"mask"``), where an analyst may choose
        the data and read the result, it goes to the custodian's log only.
        """
        if getattr(self, "_on_invalid", "raise") == "mask":
            custodian.warning("%s: %s", type(self).__name__, message)
        else:
            warnings.warn(message, category, stacklevel=user_stacklevel())

    def _after_scan(self, value: Any, n_rows: int, width: int) -> None:
        """Use the scan's reduced value (default: log the clipped-row count) (hook)."""
        if value:
            custodian.info(
                "%s: %d of %d rows had norm above the declared data_norm and were scaled to it",
                type(self).__name__,
                int(value),
                n_rows,
            )

    def _check_row_count(self, n_rows: int) -> None:
        """The in-memory row-count check, on the scanned count (same message)."""
        if n_rows < self._min_rows:
            raise DataValidationError(
                f"X has {n_rows} rows; {type(self).__name__} needs at least {self._min_rows}"
            )

    def _release_distributed(
        self, rows: Any, n_rows: int, source: RandomSource, plan: Plan
    ) -> None:
        """Train on the scanned table and set the fitted state (as :meth:`_release`).

        ``rows(transform, dim)`` returns a :class:`~ppdp.learn._erm.PartitionedERMData`
        whose records are ``transform(X)`` (width ``dim``) of each encoded partition ``X``,
        with the labels as ±1 (``classes_[1]`` is +1).
        """
        raise NotImplementedError

    def _validate_training_data(
        self, X: ArrayLike, y: ArrayLike, *, on_invalid: str = "raise"
    ) -> tuple[NDArray[np.float64], NDArray[Any], NDArray[np.float64]]:
        schema = self._schema()
        if schema is not None:  # the raw table: encoded here, before anything is spent
            X, y = self._encode_training(X, y, on_invalid)
        if on_invalid == "mask":
            X = _mask_non_finite(X)
        _check_finite_columns(X)
        try:
            Xv, yv = validate_data(self, X, y, dtype=np.float64, y_numeric=False)
        except ValueError as exc:
            if isinstance(exc, DataValidationError):
                raise
            raise DataValidationError(_one_line(exc)) from None
        classes, ypm = check_binary_labels(yv, self._declared_classes(), on_invalid=on_invalid)
        n = Xv.shape[0]
        if n < self._min_rows:
            raise DataValidationError(
                f"X has {n} rows; {type(self).__name__} needs at least {self._min_rows}"
            )
        if schema is not None:  # the columns the caller passes: the schema's, not encoded ones
            names = schema.without_label().column_names
            self.n_features_in_ = len(names)
            self.feature_names_in_ = np.asarray(names, dtype=object)
        return Xv, classes, ypm

    # -- prediction -----------------------------------------------------------------------

    def _check_fitted(self) -> None:
        try:
            check_is_fitted(self, "classes_")
        except Exception:
            raise LearnerNotFittedError(
                f"{type(self).__name__} is not fitted: call fit(X, y) first"
            ) from None

    def decision_function(self, X: ArrayLike) -> NDArray[np.float64]:
        """Real-valued scores; positive means ``classes_[1]``. Free post-processing.

        With ``schema=`` ``X`` is the raw table (the label column may be absent).
        """
        self._check_fitted()
        if self._schema() is not None:
            if _is_distributed(X):
                return self._distributed_scores(X, "decision_function")
            return self._decision(self._encode_features(X, "raise"))
        try:
            Xv = validate_data(self, X, dtype=np.float64, reset=False)
        except ValueError as exc:
            if isinstance(exc, DataValidationError):
                raise
            raise DataValidationError(_one_line(exc)) from None
        return self._decision(Xv)

    def encoded_decision_function(self, X: ArrayLike) -> NDArray[np.float64]:
        """Scores of rows already encoded with the learner's schema (free post-processing).

        For a learner trained with ``schema=`` whose caller encoded the rows itself (a
        prediction workflow that flags refused values first); the scores are those
        :meth:`decision_function` gives the raw rows.
        """
        self._check_fitted()
        return self._decision(np.asarray(X, dtype=np.float64))

    def predict(self, X: ArrayLike) -> NDArray[Any]:
        """The class of each row: ``classes_[1]`` where the score is positive.

        With ``schema=`` a Dask DataFrame or a Parquet dataset gives a lazy Dask Series
        (one partition per input partition, the input's index).
        """
        if self._schema() is not None and _is_distributed(X):
            self._check_fitted()
            return self._distributed_scores(X, "predict")
        scores = self.decision_function(X)
        return self.classes_[(scores > 0).astype(int)]

    def _distributed_scores(self, X: Any, method: str) -> Any:
        """A lazy Dask Series of ``method`` on each partition (free post-processing)."""
        from ppdp.data.distributed import open_table

        schema = self._schema()
        assert schema is not None
        frame = open_table(X, schema.without_label(), param="X")
        if method == "predict":
            meta = pd.Series(self.classes_[:0], dtype=self.classes_.dtype)
        else:
            meta = pd.Series(np.zeros(0), dtype=np.float64)
        return frame.map_partitions(_apply_partition, self, method, meta=meta)

    @property
    def guarantee(self) -> Guarantee:
        """The guarantee of the fitted model (same as ``guarantee_``)."""
        self._check_fitted()
        return self.guarantee_  # type: ignore[no-any-return]

    # -- model files ------------------------------------------------------------------------

    def to_model_dict(self) -> dict[str, Any]:
        """The released model, JSON-safe: nothing here is private.

        Keys: ``format``, ``class``, ``hyperparameters`` (the constructor parameters, with
        ``random_state`` dropped), ``n_features_in``, ``classes``, ``model`` (the released
        parameters), ``guarantee`` (:meth:`Guarantee.to_dict`) and, when fitted on a
        DataFrame, ``feature_names``.
        """
        self._check_fitted()
        params = {k: _json_param(v) for k, v in self.get_params(deep=False).items()}
        params.pop("random_state", None)
        out = {
            "format": MODEL_FORMAT,
            "class": type(self).__name__,
            "hyperparameters": params,
            "n_features_in": int(self.n_features_in_),
            "classes": [_json_scalar(c) for c in self.classes_],
            "model": self._released_state(),
            "guarantee": self.guarantee_.to_dict(),
        }
        names = getattr(self, "feature_names_in_", None)
        if names is not None:  # column names: public, like the feature count
            out["feature_names"] = [str(v) for v in names]
        return out

    @classmethod
    def from_model_dict(cls, data: dict[str, Any]) -> Any:
        """Rebuild a fitted estimator from :meth:`to_model_dict` (for prediction only)."""
        if not isinstance(data, dict):
            raise ParameterTypeError(f"data ({type(data).__name__}) must be a dict")
        if data.get("format") != MODEL_FORMAT:
            raise ParameterError(f"format ({data.get('format')!r}) must be {MODEL_FORMAT!r}")
        if data.get("class") != cls.__name__:
            raise ParameterError(f"class ({data.get('class')!r}) does not match {cls.__name__!r}")
        params = dict(data.get("hyperparameters", {}))
        if isinstance(params.get("schema"), dict):
            params["schema"] = Schema.from_dict(params["schema"])
        est = cls(**params)
        est.n_features_in_ = int(data["n_features_in"])
        if data.get("feature_names") is not None:
            est.feature_names_in_ = np.asarray(data["feature_names"], dtype=object)
        est.classes_ = np.asarray(data["classes"])
        est.guarantee_ = Guarantee.from_dict(data["guarantee"])
        est._load_state(dict(data["model"]))
        return est


def _one_line(exc: Exception) -> str:
    return " ".join(part.strip() for part in str(exc).splitlines() if part.strip())


def encode_features(schema: Schema, X: Any, on_invalid: str) -> NDArray[np.float64]:
    """The feature columns of a raw table (or 2-D array), encoded with ``schema``."""
    features = schema.without_label()
    Xe, _ = features.encode(_as_table(features, X), on_invalid=on_invalid)
    return Xe


def _as_table(schema: Schema, X: Any) -> pd.DataFrame:
    """A DataFrame for :meth:`Schema.encode` (a 2-D array gets the schema's column names)."""
    if isinstance(X, pd.DataFrame):
        return X
    if isinstance(X, np.ndarray) and X.ndim == 2:
        names = list(schema.column_names)
        features = list(schema.without_label().column_names)
        if X.shape[1] in (len(names), len(features)):
            return pd.DataFrame(X, columns=names if X.shape[1] == len(names) else features)
        raise DataValidationError(
            f"X has {X.shape[1]} columns; the schema declares {len(features)} feature "
            "column(s) (pass a DataFrame with the schema's column names)"
        )
    raise ParameterTypeError(
        f"X ({type(X).__name__}) must be a pandas DataFrame or a 2-D array when schema= is given"
    )


def _row_count(X: Any) -> int | None:
    shape = getattr(X, "shape", None)
    if shape is not None and len(shape) == 2:
        return int(shape[0])
    return None


def _json_scalar(v: Any) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    return v


def _json_param(v: Any) -> Any:
    if isinstance(v, Schema):
        return v.to_dict()
    grid = getattr(v, "regularization_grid", None)  # a PrivateTuning: its public grid
    if grid is not None:
        return [float(x) for x in grid]
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    if isinstance(v, tuple | list):
        return [_json_param(x) for x in v]
    if isinstance(v, np.ndarray):
        return [_json_param(x) for x in v.tolist()]
    return v


def _mask_non_finite(X: Any) -> Any:
    """Total mode: NaN and infinities become 0 (inside every norm ball), counted for the
    custodian only; anything that is not a real table is left to the usual validation."""
    if isinstance(X, pd.DataFrame):
        values = X.to_numpy()
        if values.dtype.kind not in "biuf":
            return X
        bad = ~np.isfinite(values.astype(np.float64))
        if bad.any():
            custodian.info("%d non-finite value(s) in X were masked to 0", int(bad.sum()))
            return pd.DataFrame(np.where(bad, 0.0, values), columns=X.columns, index=X.index)
        return X
    try:
        arr = np.asarray(X)
    except (TypeError, ValueError):
        return X
    if arr.dtype.kind not in "biuf" or arr.ndim != 2:
        return X
    bad = ~np.isfinite(arr.astype(np.float64))
    if bad.any():
        custodian.info("%d non-finite value(s) in X were masked to 0", int(bad.sum()))
        return np.where(bad, 0.0, arr)
    return X


def _check_finite_columns(X: Any) -> None:
    """One clear line naming the columns with NaN or infinite entries (never a value)."""
    try:
        arr = np.asarray(X)
    except (TypeError, ValueError):
        return
    if arr.dtype.kind not in "biuf" or arr.ndim != 2 or np.all(np.isfinite(arr)):
        # Not a dense real table (object, complex, sparse...): scikit-learn's validation
        # says what is wrong.
        return
    bad = np.flatnonzero(~np.all(np.isfinite(arr), axis=0))
    names = getattr(X, "columns", None)
    cols = [str(names[i]) for i in bad[:5]] if names is not None else [int(i) for i in bad[:5]]
    more = f" and {bad.size - 5} more" if bad.size > 5 else ""
    raise DataValidationError(
        f"X contains NaN or infinity in column(s) {cols}{more}: "
        "impute or drop them before fitting (nothing was spent)"
    )


def _is_distributed(X: Any) -> bool:
    from ppdp.data.distributed import is_distributed

    return is_distributed(X)


def _describe_table(data: Any) -> str:
    if hasattr(data, "to_delayed"):
        return "a Dask DataFrame"
    return repr(str(data))


def _rows_over_norm(X: NDArray[np.float64], y: Any, *, data_norm: float) -> int:
    """Rows of one encoded partition longer than ``data_norm`` (the scan's clip count)."""
    _, k = clip_to_unit_ball(X, data_norm)
    return k


def _apply_partition(part: pd.DataFrame, est: Any, method: str) -> pd.Series:
    values = getattr(est, method)(part)
    return pd.Series(values, index=part.index)


@dataclass(frozen=True)
class _PassSpec:
    """What one pass ships to every partition (one graph key, shared by the tasks)."""

    schema: Schema
    on_invalid: str
    transform: Callable[[NDArray[np.float64]], NDArray[np.float64]]
    W: NDArray[np.float64]
    loss: Loss
    n: int
    curvature: bool


#: Rows encoded and mapped at a time inside a partition: a partition's extra memory is a
#: few blocks of this many rows, whatever the partition's size.
_BLOCK_ROWS = 1 << 16


def _mapped_block(
    block: pd.DataFrame, schema: Schema, on_invalid: str, transform: Any
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Rows of a raw block as the learner trains on them, and their labels as ±1."""
    from ppdp.data.encoding import encode

    X, codes, _ = encode(
        schema, block, include_label=False, log=False, order="F", on_invalid=on_invalid
    )
    return transform(X), np.where(np.asarray(codes) == 1, 1.0, -1.0)


def _partition_pass(part: pd.DataFrame, spec: _PassSpec) -> ERMPartial:
    """One partition's :class:`ERMPartial`: encoded, mapped and summed block by block.

    The encoding is the scan's (after a successful scan nothing raises: ``on_invalid`` is
    the fit's mode), the map is the learner's row map, the labels are ±1 with code 1 (the
    second declared class) as +1.
    """
    out: ERMPartial | None = None
    for start in range(0, max(len(part), 1), _BLOCK_ROWS):
        block = part.iloc[start : start + _BLOCK_ROWS]
        Z, y = _mapped_block(block, spec.schema, spec.on_invalid, spec.transform)
        terms = erm_partition_terms(
            Z, y, spec.W, loss=spec.loss, n=spec.n, curvature=spec.curvature
        )
        out = terms if out is None else out + terms
    assert out is not None
    return out


def _add_partials(*parts: ERMPartial) -> ERMPartial:
    return functools.reduce(operator.add, parts)


#: Fan-in of the reduction tree of a pass.
_SPLIT_EVERY = 8


def _partitioned_rows(
    frame: Any, schema: Schema, on_invalid: str, transform: Any, dim: int, n: int, scheduler: Any
) -> PartitionedERMData:
    """A :class:`PartitionedERMData` over the partitions of ``frame`` (after the scan).

    Each pass builds a fresh graph (read, encode, map and sum each partition block by
    block, then a tree of additions) and computes it: nothing is persisted, so a worker
    holds one raw partition and a few blocks per task.
    """
    from dask import delayed

    from ppdp.data.distributed import compute

    parts = frame.to_delayed()

    def sample() -> tuple[NDArray[np.float64], NDArray[np.float64]] | None:
        """One block of the first partition with rows, mapped (the warm start's rows)."""
        for p in parts[:_SAMPLE_PARTITIONS]:
            (part,) = compute(p, scheduler=scheduler)
            if len(part):
                return _mapped_block(part.iloc[:_BLOCK_ROWS], schema, on_invalid, transform)
        return None

    def evaluate(W: NDArray[np.float64], loss: Loss, curvature: bool) -> ERMPartial:
        spec = delayed(
            _PassSpec(
                schema,
                on_invalid,
                transform,
                np.array(W, dtype=np.float64),
                loss,
                int(n),
                curvature,
            ),
            pure=True,
        )
        level = [delayed(_partition_pass, pure=True)(p, spec) for p in parts]
        while len(level) > 1:
            level = [
                delayed(_add_partials, pure=True)(*level[i : i + _SPLIT_EVERY])
                for i in range(0, len(level), _SPLIT_EVERY)
            ]
        (out,) = compute(level[0], scheduler=scheduler)
        return out

    return PartitionedERMData(evaluate, n, dim, sample=sample)


#: Partitions tried (in order) for a non-empty one to draw the warm start's rows from.
_SAMPLE_PARTITIONS = 4


class _LearnerSteps:
    """How a learner plans, scans and trains, for :func:`ppdp.release.run_release`."""

    def __init__(self, learner: PrivateClassifierBase, y: Any) -> None:
        self.learner = learner
        self.y = y
        self.name = type(learner).__name__
        self.random_state = getattr(learner, "random_state", None)
        self.classes: Any = None
        self.plan_: Plan | None = None
        self._source: Any = None

    def validated(self) -> Any:
        return self.learner._params_once()

    def table(self, data: Any, options: ReleaseOptions) -> InMemoryTable | PartitionedTable:
        est, name, y = self.learner, self.name, self.y
        if not _is_distributed(data):
            if options.scheduler is not None:
                raise ParameterError(
                    f"scheduler ({options.scheduler!r}) is for a Dask DataFrame or a Parquet "
                    f"dataset; X is a {type(data).__name__}, processed in memory"
                )
            if y is None and est._schema() is None:
                raise DataValidationError(
                    f"{name} requires y to be passed, but the target y is None "
                    "(give the labels, or schema= and a table holding the label column)"
                )
            est._declared_classes()  # schema= and classes= checked before anything else
            return InMemoryTable(data, _row_count(data))
        schema = est._schema()
        if schema is None:
            raise ParameterError(
                f"X ({_describe_table(data)}) is a distributed table: {name} needs schema= "
                "(a ppdp.data.Schema with the two-class label) to encode it"
            )
        if y is not None:
            raise ParameterError(
                f"y ({type(y).__name__}) must be left out for a Dask DataFrame or a Parquet "
                f"dataset: the labels are the table's column {schema.label.name!r}"
                if schema.label is not None
                else f"y ({type(y).__name__}) must be left out for a distributed table"
            )
        self.classes = est._declared_classes()
        if not est.supports_distributed:
            raise ParameterError(
                f"X ({_describe_table(data)}): {name} does not accept a Dask DataFrame or a "
                "Parquet dataset; read the table into a pandas DataFrame"
            )
        return PartitionedTable(data, schema, scheduler=options.scheduler, param="X")

    def _unit(self) -> Any:
        """The schema's privacy unit when the learner honours one (None otherwise)."""
        schema = self.learner._schema()
        unit = None if schema is None else schema.privacy_unit
        return unit if getattr(self.learner, "supports_privacy_unit", False) else None

    def plan(self, table: Any) -> list[Charge]:
        rows = None if self._unit() is not None else table.rows  # n counts persons
        self.plan_ = self.learner._plan(rows)
        if table.partitioned:
            self.learner._check_distributed_params()
        return [self.plan_]

    def source(self) -> RandomSource:
        self._source = resolve_random_state(self.random_state)
        return self._source

    def _bounded(self, data: Any, on_invalid: str) -> tuple[Any, Any]:
        """Each person's rows bounded (the label joined to the table first), and the
        rows' per-person weights kept on the learner (``docs/proofs/privacy-unit.md`` §6)."""
        from ppdp.data.contribution import (
            ContributionBounds,
            bound_table,
            bounding_keys,
            person_weights,
        )

        est, unit = self.learner, self._unit()
        schema = est._schema()
        frame, y = data, self.y
        if y is not None and isinstance(frame, pd.DataFrame) and schema.label is not None:
            frame = est._with_label(frame, y)
            y = None
        bounds = ContributionBounds(unit)
        kept, counts = bound_table(
            frame, schema, bounds, bounding_keys(self._source), on_invalid=on_invalid
        )
        est._custodian_bounding_line = counts.summary(bounds)  # custodian only
        est._unit_weights = person_weights(kept[unit.column])
        return kept, y

    def check(self, accountant: Accountant, charges: list[Charge], key: str | None) -> None:
        self.learner._check_accountant(accountant, charges[0], key)

    def scan(self, table: Any, on_invalid: str, on_scan: Any) -> Any:
        est = self.learner
        est._on_invalid = on_invalid  # where value-dependent notes go (see _value_note)
        if not table.partitioned:
            data, y = table.data, self.y
            if self._unit() is not None:  # each person's rows bounded, then one term each
                data, y = self._bounded(data, on_invalid)
            Xv, self.classes, ypm = est._validate_training_data(data, y, on_invalid=on_invalid)
            return est._prepare(Xv), ypm
        schema = table.schema
        scan = table.scan(
            include_label=False, on_invalid=on_invalid, partition_fn=est._scan_function()
        )
        if on_scan is not None:
            on_scan(scan)
        n = int(scan.n_rows)
        # The custodian's encoding counts (clipping, imputation): never part of a release.
        est.encode_report_ = scan.report
        est._check_row_count(n)
        names = schema.without_label().column_names
        est.n_features_in_ = len(names)
        est.feature_names_in_ = np.asarray(names, dtype=object)
        est._after_scan(scan.value, n, schema.n_features)
        return scan

    def rows_scanned(self, scan: Any) -> int:
        return int(scan.n_rows) if hasattr(scan, "n_rows") else int(scan[0].shape[0])

    def replan(self, table: Any, scan: Any, charges: list[Charge]) -> list[Charge]:
        n = self.rows_scanned(scan)
        if self._unit() is not None:
            n = int(self.learner._unit_weights[1])  # persons: public per person
        self.plan_ = plan = self.learner._plan(n)  # with the validated shape (n, and the width)
        self.learner._warn_low_utility(n)
        details = {**plan.details, "relation": Neighbouring.REPLACE_ONE.value}
        return [Charge(plan.events, plan.mechanism, details)]

    def unaccounted(self, source: RandomSource) -> None:
        if source.is_secure:
            _warn_unaccounted(self.name)

    def release(
        self, table: Any, scan: Any, source: RandomSource, charges: list[Charge], output: Any
    ) -> Guarantee:
        est, plan = self.learner, self.plan_
        assert plan is not None
        est.classes_ = self.classes
        try:
            if table.partitioned:
                frame, schema, sched, mode = (
                    table.frame,
                    table.schema,
                    table.scheduler,
                    (est._on_invalid),
                )
                n = int(scan.n_rows)

                def rows(transform: Any, dim: int) -> PartitionedERMData:
                    return _partitioned_rows(frame, schema, mode, transform, dim, n, sched)

                est._release_distributed(rows, n, source, plan)
            else:
                Z, ypm = scan
                est._release(Z, ypm, source, plan)
        except BaseException:
            del est.classes_  # never look fitted after a failed release
            raise
        finally:
            est.__dict__.pop("_unit_weights", None)  # rows per person: never kept
        return est.guarantee_  # type: ignore[no-any-return]

    def finish(self, records: tuple[Any, ...], seeded: bool) -> None:
        self.learner._released(records, seeded)
