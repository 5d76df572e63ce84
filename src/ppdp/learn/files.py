"""Model-file workflows: what ``ppdp train`` and ``ppdp predict`` do, for a Python caller.

:func:`train_model_file` builds the learner registered under its ``ppdp train`` name
(:data:`ppdp.registry.LEARNERS`), checks the budget, reads and encodes the table with the
declared schema, records the spend, trains and writes the model file atomically;
:func:`predict_file` predicts a table with a model file (post-processing: no cost).

Examples
--------
>>> from ppdp.learn.files import predict_file, train_model_file
>>> result = train_model_file(  # doctest: +SKIP
...     "logreg", "adult.csv", schema="adult.schema.json", output="model.json", epsilon=1.0)
>>> predict_file("model.json", "new.csv", output="predictions.csv")  # doctest: +SKIP
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from ppdp._io import atomic_path, check_output, ledger_files, write_error
from ppdp.budget import Guarantee
from ppdp.data.schema import Schema
from ppdp.exceptions import ParameterError, ParameterTypeError
from ppdp.learn._model_io import read_model, save_model
from ppdp.random import refuse_seeded
from ppdp.registry import LEARNERS as _REGISTRY
from ppdp.release import WorkflowOptions

__all__ = [
    "LEARNERS",
    "PredictResult",
    "TrainResult",
    "build_learner",
    "predict_file",
    "train_model_file",
]

#: ``ppdp train`` learner names -> estimator class names (from :data:`ppdp.registry.LEARNERS`).
LEARNERS: dict[str, str] = {e.name: e.class_name for e in _REGISTRY.entries()}


@dataclass(frozen=True)
class TrainResult:
    """What :func:`train_model_file` did.

    Attributes
    ----------
    path : Path
        The model file written.
    estimator : object
        The fitted learner.
    guarantee : Guarantee
        The guarantee of the release.
    ledger_indices : tuple of int
        Ledger entries of the spend (empty without a ledger).
    seeded : bool
        The noise came from a seed (reproducible; not fit for a real release).
    """

    path: Path
    estimator: Any
    guarantee: Guarantee
    ledger_indices: tuple[int, ...]
    seeded: bool
    report: Any = None
    plan: Any = None
    schema: Any = None
    ledger_state: Any = None
    after: Any = None


@dataclass(frozen=True)
class PredictResult:
    """What :func:`predict_file` wrote: the output path and the number of rows.

    ``masked`` (``on_invalid="mask"`` only): per column, the rows whose value was masked
    (columns with none are left out); ``n_masked`` the rows with any masked value.
    ``imputed`` (a CSV input): per column, the missing values filled with the schema's
    ``impute`` constant (``nan_policy: impute``; declared, so not masked): those rows are
    predicted for the constant.
    """

    path: Path
    n_rows: int
    columns: tuple[str, ...]
    masked: Mapping[str, int] = field(default_factory=dict)
    n_masked: int = 0
    imputed: Mapping[str, int] = field(default_factory=dict)


def _learner_class(kind: str) -> type:
    return _REGISTRY.load(kind)


def _as_schema(schema: Any) -> Schema:
    if isinstance(schema, Schema):
        return schema
    if isinstance(schema, str | os.PathLike):
        return Schema.from_file(schema)
    raise ParameterTypeError(f"schema ({type(schema).__name__}) must be a Schema or a file path")


def _as_frame(
    data: Any,
    what: str,
    columns: Any = None,
    *,
    sep: str | None = None,
    encoding: str = "utf-8",
) -> Any:
    """A DataFrame as it is, or a file read (only ``columns``, header first, when given)."""
    import pandas as pd

    if isinstance(data, pd.DataFrame):
        return data
    if isinstance(data, str | os.PathLike):
        from ppdp.data.draft import read_table

        return read_table(
            data,
            columns=None if columns is None else tuple(columns),
            sep=sep,
            encoding=encoding,
        )
    raise ParameterTypeError(f"{what} ({type(data).__name__}) must be a DataFrame or a file path")


def _check_keep(keep: Any) -> tuple[str, ...]:
    """``keep``: column names (a single name is one column)."""
    if isinstance(keep, str):
        keep = (keep,)
    try:
        names = tuple(keep)
    except TypeError:
        raise ParameterTypeError(f"keep ({keep!r}) must be a list of column names") from None
    if not all(isinstance(c, str) and c for c in names) or len(set(names)) != len(names):
        raise ParameterError(f"keep ({list(names)!r}) must be distinct, non-empty column names")
    return names


def _file(value: Any) -> Any:
    """A path-like input, or None (a DataFrame or Schema object is not a file)."""
    return value if isinstance(value, str | os.PathLike) else None


def _model_with_schema(model: Any) -> Any:
    """The model file, refused in one line when it holds no schema to encode rows with."""
    mf = read_model(model)
    if mf.schema is None:
        raise ParameterError(
            f"model file ({str(model)!r}) holds no schema; it was saved without one"
        )
    return mf


def _binary_schema(schema: Schema) -> Schema:
    schema.check_reviewed()  # a draft's bounds are the data's own: refused before reading
    if schema.label is None:
        raise ParameterError(
            "schema declares no label: training a classifier needs a label with two classes"
        )
    if len(schema.label.classes) != 2:
        raise ParameterError(
            f"schema label {schema.label.name!r} has {len(schema.label.classes)} classes; the "
            "private classifiers need exactly two: derive a two-class column from it (one "
            f"class against the rest, e.g. {schema.label.classes[0]!r} or not) and declare "
            "that as the label"
        )
    return schema


def _param_names(cls: type) -> list[str]:
    """The constructor parameters of a learner class (what ``get_params`` returns)."""
    import inspect

    params = inspect.signature(cls.__init__).parameters.values()
    return [p.name for p in params if p.name != "self" and p.kind != p.VAR_KEYWORD]


def build_learner(
    kind: str,
    *,
    schema: Schema,
    epsilon: float,
    regularization: float | None = None,
    perturbation: str | None = None,
    public_X: Any = None,
    random_state: Any = None,
    options: Mapping[str, Any] | None = None,
) -> Any:
    """The learner ``kind`` with its parameters; ``data_norm`` from the declared schema.

    ``data_norm`` is :attr:`Schema.max_row_l2_norm` of the encoded features (the declared
    ``row_norm_bound`` where smaller), never read from the data. Options the learner does
    not take are refused (``--perturbation`` for a kernel SVM, say), not ignored.
    ``None`` leaves the learner's default.
    """
    cls = _learner_class(kind)
    accepted = set(_param_names(cls))
    wanted: dict[str, Any] = {
        "epsilon": epsilon,
        "regularization": regularization,
        "perturbation": perturbation,
        "random_state": random_state,
        **dict(options or {}),
    }
    kwargs: dict[str, Any] = {}
    for key, value in wanted.items():
        if value is None:
            continue
        if key not in accepted:
            raise ParameterError(
                f"{key} ({value!r}) does not apply to {kind} ({cls.__name__} takes "
                f"{', '.join(sorted(accepted - {'public_X'}))})"
            )
        kwargs[key] = value
    if "data_norm" in accepted:
        kwargs["data_norm"] = schema.max_row_l2_norm
    if "public_X" in accepted:  # fitted on a public sample, given first
        if public_X is None:
            raise ParameterError(f"public (None) is required for {kind}: a public sample")
        return cls(public_X, **kwargs)
    if public_X is not None:
        owners = [e.name for e in _REGISTRY.entries() if "public_X" in _param_names(e.load())]
        raise ParameterError(f"public data apply to {' and '.join(owners)} only, not {kind}")
    return cls(**kwargs)


def train_model_file(
    kind: str,
    data: Any,
    *,
    schema: Any,
    output: str | os.PathLike[str],
    epsilon: float,
    regularization: float | None = None,
    perturbation: str | None = None,
    public: Any = None,
    accountant: Any = None,
    random_state: Any = None,
    options: Mapping[str, Any] | None = None,
    allow_seeded: bool = False,
    force: bool = False,
    sep: str | None = None,
    encoding: str = "utf-8",
    dry_run: bool = False,
    on_report: Any = None,
    idempotency_key: str | None = None,
    ledger: str | os.PathLike[str] | None = None,
    say: Any = None,
    scheduler: Any = None,
) -> TrainResult:
    """Train a private classifier on a table and write its model file.

    Runs in the order every release follows: the parameters and the output path are
    validated (a writable folder, not an input, not an existing file unless ``force``), the
    public sample (``hybrid-svm``) is read, the learner's cost is checked against
    ``accountant``, then the private table is read and encoded with the declared schema,
    :meth:`fit` records the spend and trains, and the model file is written atomically. An
    error before the spend costs nothing and writes nothing; a write that fails after it
    (disk full) raises :class:`~ppdp._io.OutputWriteError`, and the spend stands.

    Parameters
    ----------
    kind : {"logreg", "svm", "rbf-svm", "hybrid-svm"}
    data : DataFrame, dask DataFrame or path
        The private table (CSV, optionally compressed, or Parquet): the schema's feature
        columns and its label (two classes). A folder of Parquet files, a glob or a Dask
        DataFrame (a single ``.parquet`` file with ``scheduler``) is not read into memory:
        the learner, built with ``schema=``, fits it partition by partition
        (``fit(data, scheduler=...)``); a learner without that is refused in one line
        before anything is spent.
    schema : Schema or path
        The declared schema; ``data_norm`` is its encoded row-norm bound.
    output : path
        The model file (``.json``).
    epsilon, regularization, perturbation : optional
        Passed to the learner (``None`` keeps its default).
    public : DataFrame or path, optional
        Public rows with the schema's feature columns (``hybrid-svm`` only; required there).
    accountant : Accountant, optional
        The dataset's accountant (replace-one). Without one nothing is recorded.
    random_state : int or Generator, optional
        Reproducible noise for experiments (warns; not for real releases).
    options : mapping, optional
        Further learner parameters (``n_components``, ``gamma``, ``huber_h``, ...).
    allow_seeded : bool, default False
        With an accountant, a ``random_state`` is refused unless True (recorded).
    force : bool, default False
        Replace an existing model file.
    dry_run : bool, default False
        Run every check of a real run (output, budget, data) in the same order, then stop
        before the spend: the result's ``plan`` is the charge that would be made, ``path``
        is the model file that would be written, nothing is spent or written.

    on_report : callable, optional
        Called as ``on_report(schema, report)`` with the custodian's encoding report right
        after the data are encoded, before the spend (the CLI warns about clipping there).

    idempotency_key : str, optional
        A key unique to this release request: a retry with the same key is not charged
        again, and one whose model file was already written is refused.
    ledger : path, optional
        The dataset's budget ledger, opened (and closed) here; instead of ``accountant``.
    say : callable, optional
        Called with each progress or warning line for the custodian (the CLI's stderr).
    scheduler : optional
        Where a distributed input is processed (``ppdp train --scheduler``): ``None`` or
        ``"local"`` (a ``LocalCluster``), ``"tcp://host:8786"``, a ``distributed.Client``
        or a Dask local scheduler name; an unreachable address is refused in one line.

    The result's ``report`` is the custodian's encoding report (values clipped per column);
    its ``ledger_state`` the ledger as it was closed, and for a dry run ``after`` what it
    would have left (None: refused, or no ledger).
    """
    from ppdp.accounting import Accountant, claim_key, refuse_released_retry
    from ppdp.publish.files import LedgerState, planned_remaining

    if ledger is not None and accountant is not None:
        raise ParameterError("ledger and accountant: give one of them, not both")
    own = Accountant.open_existing(ledger) if ledger is not None else None
    acct = own if own is not None else accountant
    claim = claim_key(acct, idempotency_key)  # held from the checks to the recorded release
    try:
        claim.acquire()
        refuse_released_retry(acct, idempotency_key, output)
        run = WorkflowOptions(
            ledger=getattr(acct, "path", None),
            random_state=random_state,
            allow_seeded=allow_seeded,
            idempotency_key=idempotency_key,
            force=force,
            dry_run=dry_run,
            scheduler=scheduler,
            say=say,
        )
        learner = functools.partial(
            build_learner,
            kind,
            epsilon=epsilon,
            regularization=regularization,
            perturbation=perturbation,
            random_state=random_state,
            options=options,
        )
        result = _train_model_file(
            learner, kind, data, schema=schema, output=output, public=public, accountant=acct,
            run=run, sep=sep, encoding=encoding, on_report=on_report,
        )  # fmt: skip
        if acct is None:
            return result
        return replace(
            result,
            ledger_state=LedgerState(acct.guarantee, acct.composition, acct.remaining),
            after=planned_remaining(acct, [result.plan]) if dry_run else None,
        )
    finally:
        claim.release()
        if own is not None:
            own.close()


def _train_model_file(
    learner: Callable[..., Any],
    kind: str,
    data: Any,
    *,
    schema: Any,
    output: str | os.PathLike[str],
    public: Any,
    accountant: Any,
    run: WorkflowOptions,
    sep: str | None,
    encoding: str,
    on_report: Any,
) -> TrainResult:
    """:func:`train_model_file` with an open accountant (or none); ``learner(schema=...,
    public_X=...)`` builds the learner with the caller's parameters."""
    from ppdp.publish.parquet_files import distributed_input

    tell, random_state = run.tell, run.random_state
    ledger = getattr(accountant, "path", None)
    dest = check_output(
        output,
        param="output",
        suffixes=(".json",),
        inputs=[
            ("data", _file(data)),
            ("schema", _file(schema)),
            ("public sample", _file(public)),
            *ledger_files(ledger),
        ],
        force=run.force,
    )
    if accountant is not None:
        seeded = random_state is not None and not getattr(random_state, "is_secure", False)
        refuse_seeded(seeded, allow_seeded=run.allow_seeded, value=random_state)
    sch = _binary_schema(_as_schema(schema))
    # a learner that cannot calibrate to a person refuses a unit, never ignores it
    if not getattr(_learner_class(kind), "supports_privacy_unit", False):
        sch.check_row_level(f"train {kind}")
    distributed = distributed_input(data, run.scheduler)
    if distributed:
        from ppdp.learn.parquet_files import refuse_unsupported

        refuse_unsupported(kind, _learner_class(kind))
    if distributed or sch.privacy_unit is not None:
        # the learner reads the raw table with the schema (per person: the unit's column)
        given = dict(getattr(learner, "keywords", {}).get("options") or {})
        learner = functools.partial(learner, options={**given, "schema": sch})
    learner = functools.partial(learner, schema=sch)
    features = sch.without_label()
    public_X = None
    if public is not None:
        # The parameters first, on a stand-in for the public rows: a refused --gamma is said
        # before a large public sample is read.
        learner(public_X=np.zeros((2, features.n_features))).privacy_budget()
        tell(f"reading the public sample {public}")
        public_X, _ = features.encode(
            _as_frame(public, "public", features.column_names, sep=sep, encoding=encoding)
        )
    est = learner(public_X=public_X)
    with est.validated():  # the parameters are validated once for the whole run
        return _check_and_train(est, kind, data, sch, dest, public_X, accountant, run, on_report,
                                sep=sep, encoding=encoding, distributed=distributed)  # fmt: skip


def _check_and_train(
    est: Any,
    kind: str,
    data: Any,
    sch: Schema,
    dest: Path,
    public_X: Any,
    accountant: Any,
    run: WorkflowOptions,
    on_report: Any,
    *,
    sep: str | None,
    encoding: str,
    distributed: bool,
) -> TrainResult:
    """The budget check, the data read and checked, then the fit (or the dry run's stop)."""
    from ppdp.publish.files import warn_crowded_features

    tell, dry_run = run.tell, run.dry_run
    cost = est.privacy_budget()  # validates every parameter; reads no data
    if accountant is None and not dry_run:  # said once the parameters hold; a dry run says it
        tell(f"warning: no --ledger given; the spend of {cost} is not recorded anywhere")
    if accountant is not None:
        from ppdp.accounting import check_charges

        check_charges(
            accountant,
            est.planned_charges(),
            mechanism=type(est).__name__,
            idempotency_key=run.idempotency_key,
        )
    if distributed:
        return _train_dataset(est, data, sch, dest, cost, accountant, run, on_report)
    tell(f"reading {data}")
    frame = _as_frame(data, "data", sch.data_columns, sep=sep, encoding=encoding)
    X, y, report = sch.encode(frame, return_report=True)
    if on_report is not None:
        on_report(sch, report)
    warn_crowded_features(sch.without_label(), X, tell)
    unit = sch.privacy_unit
    if unit is not None:  # per person: the learner bounds and averages each person's rows
        assert sch.label is not None
        tell(f"privacy unit {unit.column!r}: each person's rows are bounded and averaged")
        X, y = frame.drop(columns=[sch.label.name]), frame[sch.label.name]
    if dry_run:
        # The checks fit runs before its spend, in its order; then stop.
        (plan,) = est.run(X, y, run.release_options(accountant)).charges
        return TrainResult(
            path=dest,
            estimator=est,
            guarantee=None,
            ledger_indices=(),
            seeded=run.random_state is not None,
            report=report,
            plan=plan,
            schema=sch,
        )
    fitted_first = ""
    if public_X is not None:  # the frequencies: a fit over every pair of its public rows
        cap = getattr(est, "rho_fit_rows", None)
        rows = f"the {len(public_X):,} public rows"
        if cap is not None and len(public_X) > cap:
            rows = f"{cap:,} of {rows} (--rho-fit-rows)"
        fitted_first = (
            f"; the frequencies are fitted to {rows} first (the time grows with the square "
            "of their number)"
        )
    tell(f"{len(X):,} rows; checking the data and training {kind} ({cost}){fitted_first}")
    est.run(X, y, run.release_options(accountant))
    if est.bounding_summary:  # privacy unit: the custodian's line (never released)
        tell(est.bounding_summary)
    tell(f"writing {dest}")
    ledger = getattr(accountant, "path", None)
    return _saved(est, dest, sch, cost=cost, ledger=ledger, report=report)


def _train_dataset(
    est: Any,
    data: Any,
    sch: Schema,
    dest: Path,
    cost: Any,
    accountant: Any,
    run: WorkflowOptions,
    on_report: Any,
) -> TrainResult:
    """Fit ``est`` (built with ``schema=``) on a Parquet dataset or a Dask DataFrame."""
    from ppdp.data.distributed import dask_session, open_table

    local_default = isinstance(data, str | os.PathLike)
    open_table(data, sch)  # the files' footers, before a cluster is started
    with dask_session(run.scheduler, default_local_cluster=local_default) as sched:
        where = data if isinstance(data, str | os.PathLike) else "the Dask DataFrame"
        run.tell(f"scanning {where}" + (" (dry run: nothing is spent)" if run.dry_run else ""))
        result = est.run(data, None, run.release_options(accountant, scheduler=sched))
    if on_report is not None:
        on_report(sch, result.report)
    if run.dry_run:
        (plan,) = result.charges
        return TrainResult(
            path=dest,
            estimator=est,
            guarantee=None,
            ledger_indices=(),
            seeded=run.random_state is not None,
            report=result.report,
            plan=plan,
            schema=sch,
        )
    run.tell(f"writing {dest}")
    ledger = getattr(accountant, "path", None)
    return _saved(est, dest, sch, cost=cost, ledger=ledger, report=result.report)


def _saved(
    est: Any, dest: Path, sch: Schema, *, cost: Any, ledger: Any, report: Any
) -> TrainResult:
    """Write the fitted model file; a failed write says what was charged (one line)."""
    try:
        path = save_model(est, dest, schema=sch)
    except OSError as exc:
        indices = ", ".join(map(str, getattr(est, "ledger_indices_", ())))
        charged = f"{cost} in {ledger}, entries {indices}" if ledger else f"{cost}, unrecorded"
        raise write_error(exc, dest, charged=charged) from exc
    return TrainResult(
        path=path,
        estimator=est,
        guarantee=est.guarantee_,
        ledger_indices=tuple(getattr(est, "ledger_indices_", ())),
        seeded=bool(getattr(est, "seeded_", False)),
        report=report,
        schema=sch,
    )


def predict_file(
    model: str | os.PathLike[str],
    data: Any,
    *,
    output: str | os.PathLike[str],
    force: bool = False,
    sep: str | None = None,
    encoding: str = "utf-8",
    scheduler: Any = None,
    keep: Sequence[str] = (),
    on_invalid: str = "raise",
    output_sep: str = ",",
    output_decimal: str = ".",
) -> PredictResult:
    """Predict the rows of a table with a model file; write a CSV (free post-processing).

    The table is encoded with the schema stored in the model file (its label column, if
    present, is ignored). The output has one row per input row: ``prediction`` (the class
    name), ``score`` (``decision_function``; positive means the second class) and, for
    logistic regression, ``probability`` (of the second class), after the input's ``keep``
    columns (an ID, say, to join the predictions back; they are the caller's own data and
    are copied as they are). The output is checked like a release's (not an input, not an
    existing file unless ``force``) before anything is read.

    A Parquet dataset (a folder or a glob) or a Dask DataFrame (a single ``.parquet`` file
    with ``scheduler``) is predicted partition by partition: ``output`` is then a folder,
    written as partitioned Parquet in the input's row order (``part-00000.parquet``, ...,
    ``_SUCCESS``), atomically; ``scheduler`` is as for :func:`train_model_file`.

    ``on_invalid`` says what a value the stored schema refuses does (an undeclared category,
    a non-number in a numeric column, a missing value under ``nan_policy="error"``):
    ``"raise"`` (default) refuses the table in one line (column, sample values, rows
    affected) and writes nothing; ``"mask"`` predicts every row, the refused value replaced
    as the schema's total mode does (:mod:`ppdp.data.encoding`: the column's ``impute``,
    else the bounds' midpoint or the first declared category), and adds a ``masked``
    column naming, per row, the columns masked (empty when none): such a row's prediction
    is the one for that substitute, not for the row as it was.

    ``output_sep`` and ``output_decimal`` are the CSV output's separator and decimal mark
    (:func:`ppdp._io.check_csv_format`; ``";"`` and ``","`` for a European spreadsheet).
    """
    from ppdp._io import check_csv_format
    from ppdp.learn.parquet_files import (
        MASKED,
        check_on_invalid,
        masked_counts,
        masked_summary,
        predict_dataset,
        predict_rows,
    )
    from ppdp.publish.parquet_files import check_folder_output, distributed_input

    keep = _check_keep(keep)
    on_invalid = check_on_invalid(on_invalid)
    output_sep, output_decimal = check_csv_format(output, output_sep, output_decimal)
    if distributed_input(data, scheduler):
        if keep:
            raise ParameterError(
                f"keep ({list(keep)!r}) is for a CSV input; a Parquet dataset's predictions "
                "keep the input's row order: join them by position"
            )
        folder = check_folder_output(
            Path(os.fspath(output)),
            param="output",
            inputs=[("model file", _file(model)), ("data", _file(data))],
            force=force,
        )
        mf = _model_with_schema(model)
        path, n_rows, columns = predict_dataset(
            mf, data, folder, force=force, scheduler=scheduler, on_invalid=on_invalid
        )
        if on_invalid == "raise":
            return PredictResult(path=path, n_rows=n_rows, columns=columns)
        counts, n_masked = masked_counts(path)
        return PredictResult(path, n_rows, columns, _in_order(counts, mf.schema), n_masked)
    dest = check_output(
        output,
        param="output",
        suffixes=(".csv", ".csv.gz"),
        inputs=[("model file", _file(model)), ("data", _file(data))],
        force=force,
    )
    name = dest.name.lower()
    mf = _model_with_schema(model)
    features = mf.schema.without_label()
    # With keep, the whole header is read, so a kept column that is not there is named as
    # such (read_table would call it a declared column).
    wanted = None if keep else features.column_names
    frame = _as_frame(data, "data", wanted, sep=sep, encoding=encoding)
    missing = [c for c in keep if c not in frame.columns]
    if missing:
        raise ParameterError(
            f"keep ({missing!r}) names column(s) the data does not have; its columns: "
            f"{list(frame.columns)[:20]!r}"
        )
    out, imputed = predict_rows(mf.estimator, features, frame, mf.classes, on_invalid=on_invalid)
    if keep:
        clash = [c for c in keep if c in out.columns]
        if clash:
            raise ParameterError(
                f"keep ({clash!r}) would overwrite the prediction columns "
                f"{list(out.columns)!r}; rename them in the data first"
            )
        import pandas as pd

        out = pd.concat([frame[list(keep)].reset_index(drop=True), out], axis=1)
    with atomic_path(dest) as tmp:
        compression = "gzip" if name.endswith(".gz") else None
        out.to_csv(  # shortest exact repr
            tmp, index=False, compression=compression, sep=output_sep, decimal=output_decimal
        )
    imputed = _in_order(imputed, features)
    if on_invalid == "raise":
        return PredictResult(dest, len(out), tuple(out.columns), imputed=imputed)
    counts, n_masked = masked_summary(out[MASKED])
    return PredictResult(
        dest, len(out), tuple(out.columns), _in_order(counts, features), n_masked, imputed
    )


def _in_order(counts: Mapping[str, int], schema: Schema) -> dict[str, int]:
    """``counts`` in the schema's column order."""
    return {n: counts[n] for n in schema.column_names if n in counts}
