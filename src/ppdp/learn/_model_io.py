"""Model files: a fitted private classifier as JSON, with its guarantee and nothing private.

A model file holds what the learner *released* (the noisy coefficients; for kernel models
the random or publicly fitted frequencies, which are not derived from the private data),
the hyperparameters, the guarantee, the declared schema the features were encoded with (a
public declaration) and its fingerprint, and the ppdp version. It never holds training
rows or statistics of them: no class counts, no solver objective or residual, no clipping
counts, no validation mistakes of private tuning (those describe the private data and go
to the custodian's log only). The one number about the training data it may hold is the
row count ``n``, inside the guarantee: every learner here is ε-DP for replace-one
neighbours, under which ``n`` is public.

The file format (``format_version`` 1)::

    {
      "format": "ppdp-model",
      "format_version": 1,
      "ppdp_version": "0.4.0",
      "estimator": "PrivateLogisticRegression",
      "model": {...},                  # estimator.to_model_dict(): released state + params
      "guarantee": {...},              # Guarantee.to_dict() of the release
      "schema": {...} or null,         # Schema.to_dict(), when the model was trained on one
      "schema_fingerprint": "sha256:..." or null,
      "feature_names": [...] or null,  # encoded feature names of the schema
      "classes": [...] or null,        # the label's classes, in class-code order
      "sha256": "..."                  # of the canonical JSON of every other key
    }

Loading rebuilds the estimator with its class's ``from_model_dict``; the class is looked
up by name in a fixed list of ppdp learners, never imported from a name read in the file.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ppdp._io import atomic_path, check_output, ledger_files, write_error
from ppdp._version import __version__
from ppdp.budget import Guarantee
from ppdp.data.schema import Schema
from ppdp.exceptions import (
    DataValidationError,
    NotFittedError,
    ParameterError,
    ParameterTypeError,
)
from ppdp.random import refuse_seeded

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "LEARNERS",
    "ModelFile",
    "PredictResult",
    "TrainResult",
    "build_learner",
    "load_model",
    "predict_file",
    "read_model",
    "save_model",
    "schema_fingerprint",
    "train_model_file",
]

FORMAT = "ppdp-model"
FORMAT_VERSION = 1

#: The learners a model file may hold: class name -> module. A name read from a file is
#: only ever looked up here.
ESTIMATORS: dict[str, str] = {
    "PrivateLogisticRegression": "ppdp.learn.linear",
    "PrivateLinearSVM": "ppdp.learn.linear",
    "PrivateRBFSVM": "ppdp.learn.rbf_svm",
    "HybridRBFSVM": "ppdp.learn.rbf_svm",
}

#: Keys that describe the private training data. A model dict holding any of them (at any
#: depth) is refused: they are for the custodian's log, not for a released file.
PRIVATE_KEYS = frozenset(
    {
        "X",
        "y",
        "class_counts",
        "n_clipped",
        "n_clipped_",
        "rows_clipped",
        "objective",
        "objective_value",
        "gradient_norm",
        "n_iter",
        "n_iter_",
        "solver_info",
        "solver_info_",
        "encode_report",
        "mistakes",
        "tuning_mistakes",
        "tuning_mistakes_",
    }
)

_KEYS = (
    "format",
    "format_version",
    "ppdp_version",
    "estimator",
    "model",
    "guarantee",
    "schema",
    "schema_fingerprint",
    "feature_names",
    "classes",
)


def _canonical(obj: Any) -> str:
    return json.dumps(
        obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def schema_fingerprint(schema: Schema) -> str:
    """``"sha256:<hex>"`` of the schema's canonical JSON (:meth:`Schema.to_dict`).

    Two schemas have the same fingerprint exactly when they declare the same columns,
    domains, label, missing-value tokens, NaN policy and row-norm bound.

    Examples
    --------
    >>> from ppdp.data import NumericColumn, Schema
    >>> fp = schema_fingerprint(Schema(columns=(NumericColumn("a", 0, 1),)))
    >>> fp.startswith("sha256:") and len(fp) == 7 + 64
    True
    """
    if not isinstance(schema, Schema):
        raise ParameterTypeError(f"schema ({type(schema).__name__}) must be a ppdp Schema")
    return "sha256:" + hashlib.sha256(_canonical(schema.to_dict()).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ModelFile:
    """A model file as read back: the estimator and what was stored beside it.

    Attributes
    ----------
    estimator : object
        The fitted learner, rebuilt with ``from_model_dict``; ``predict`` and
        ``decision_function`` work, ``fit`` would train (and spend) anew.
    estimator_name : str
        Its class name.
    guarantee : Guarantee or None
        The guarantee the release states.
    schema : Schema or None
        The declared schema the features were encoded with, if the model was saved with one.
    schema_fingerprint : str or None
    feature_names : tuple of str or None
        Encoded feature names of the schema (the model's input columns).
    classes : tuple or None
        The label's classes in class-code order (code ``k`` is ``classes[k]``).
    ppdp_version : str
        The version that wrote the file.
    """

    estimator: Any
    estimator_name: str
    guarantee: Guarantee | None
    schema: Schema | None
    schema_fingerprint: str | None
    feature_names: tuple[str, ...] | None
    classes: tuple[Any, ...] | None
    ppdp_version: str


def _estimator_name(estimator: Any) -> str:
    name = type(estimator).__name__
    if name not in ESTIMATORS or not hasattr(estimator, "to_model_dict"):
        raise ParameterTypeError(
            f"estimator ({name}) must be one of the ppdp learners {', '.join(ESTIMATORS)}, fitted"
        )
    return name


def _check_released(where: str, value: Any) -> None:
    """Refuse private keys and non-JSON values anywhere in the model dict."""
    if isinstance(value, Mapping):
        for k, v in value.items():
            if not isinstance(k, str):
                raise ParameterTypeError(f"{where}: key {k!r} must be a string")
            if k in PRIVATE_KEYS:
                raise ParameterError(
                    f"{where}: key {k!r} describes the private training data and must not be "
                    "written to a model file"
                )
            _check_released(f"{where}.{k}", v)
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            _check_released(f"{where}[{i}]", v)
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ParameterError(f"{where} ({value!r}) must be a finite number")
    elif value is not None and not isinstance(value, str | int | bool):
        raise ParameterTypeError(
            f"{where} ({type(value).__name__}) must be JSON data (numbers, strings, lists, maps)"
        )


def _plain(value: Any) -> Any:
    """numpy arrays and scalars as lists and Python numbers; tuples as lists; a private
    tuning grid as its list of Λ (what the learners accept back)."""
    grid = getattr(value, "regularization_grid", None)
    if grid is not None and not isinstance(value, Mapping):
        return [float(v) for v in grid]
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if hasattr(value, "tolist") and callable(value.tolist):  # numpy array or scalar
        return _plain(value.tolist())
    return value


def _guarantee_of(estimator: Any, model: Mapping[str, Any]) -> dict[str, Any] | None:
    g = getattr(estimator, "guarantee_", None)
    if isinstance(g, Guarantee):
        return g.to_dict()
    raw = model.get("guarantee")
    return dict(raw) if isinstance(raw, Mapping) else None


def save_model(
    estimator: Any,
    path: str | os.PathLike[str],
    *,
    schema: Schema | None = None,
) -> Path:
    """Write a fitted private classifier to ``path`` as JSON, atomically.

    Parameters
    ----------
    estimator : PrivateLogisticRegression, PrivateLinearSVM, PrivateRBFSVM or HybridRBFSVM
        Fitted. Its ``to_model_dict()`` gives the released parameters and hyperparameters.
    path : path
        Destination; must end in ``.json``. Written through a temporary file and renamed, so
        it is either complete or untouched.
    schema : Schema, optional
        The declared schema the training features were encoded with (stored, with its
        fingerprint, so that ``ppdp predict`` encodes new data the same way). Its encoded
        width must match the model's input width when the model states one. For a learner
        fitted with ``schema=`` it defaults to that schema (another one is refused).

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    NotFittedError
        The estimator has not been fitted (there is nothing released to save).
    ParameterError
        The model dict holds a key that describes the private data (see
        :data:`PRIVATE_KEYS`), a non-finite number, or the path does not end in ``.json``.

    Notes
    -----
    Saving is post-processing of a release: no privacy cost. The file holds only what the
    learner released (see the module docstring); a schema is a public declaration.
    """
    dest = Path(path)
    if dest.suffix.lower() != ".json":
        raise ParameterError(f"model path ({str(dest)!r}) must end in .json")
    name = _estimator_name(estimator)
    if schema is not None and not isinstance(schema, Schema):
        raise ParameterTypeError(f"schema ({type(schema).__name__}) must be a ppdp Schema")
    try:
        model = estimator.to_model_dict()
    except (NotFittedError, AttributeError) as exc:
        raise NotFittedError(
            f"estimator ({name}) is not fitted: fit it before saving; nothing to save"
        ) from exc
    if not isinstance(model, Mapping):
        raise ParameterTypeError(f"{name}.to_model_dict() must return a mapping")
    model = _plain(model)
    _check_released("model", model)
    n_in = model.get("n_features_in")
    if n_in is None:
        n_in = getattr(estimator, "n_features_in_", None)
    own = getattr(estimator, "schema", None)  # a learner fitted with schema= takes raw columns
    if isinstance(own, Schema):
        if schema is None:
            schema = own
        elif schema_fingerprint(schema) != schema_fingerprint(own):
            raise ParameterError(
                "schema (given) must be the learner's own schema= (or be left out to use it)"
            )
        expected = len(own.without_label().column_names)
    else:
        expected = schema.n_features if schema is not None else None
    if expected is not None and n_in is not None and int(n_in) != expected:
        assert schema is not None
        raise ParameterError(
            f"schema encodes {schema.n_features} feature columns but the model takes {n_in}"
        )
    fitted = model.get("classes")
    if schema is not None and schema.classes is not None and fitted is not None:
        codes = list(range(len(schema.classes)))
        if list(fitted) not in (codes, list(schema.classes)):
            raise ParameterError(
                f"the model's classes ({list(fitted)!r}) are neither the schema's class codes "
                f"{codes} nor its classes {list(schema.classes)!r}"
            )
    body: dict[str, Any] = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "ppdp_version": __version__,
        "estimator": name,
        "model": model,
        "guarantee": _guarantee_of(estimator, model),
        "schema": schema.to_dict() if schema is not None else None,
        "schema_fingerprint": schema_fingerprint(schema) if schema is not None else None,
        "feature_names": list(schema.feature_names) if schema is not None else None,
        "classes": list(schema.classes) if schema is not None and schema.classes else None,
    }
    body["sha256"] = hashlib.sha256(_canonical(body).encode("utf-8")).hexdigest()
    text = json.dumps(body, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    with atomic_path(dest) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return dest


def _bad(path: Path, what: str) -> DataValidationError:
    return DataValidationError(f"model file ({str(path)!r}) {what}")


def read_model(path: str | os.PathLike[str]) -> ModelFile:
    """Read a model file written by :func:`save_model`.

    Raises
    ------
    FileNotFoundError
        No such file.
    DataValidationError
        Not JSON, not a ppdp model file, a newer format version, an unknown estimator, or
        contents that do not match the stored checksum (the file was edited or damaged).
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"model file ({str(p)!r}) does not exist")
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise _bad(p, f"is not valid JSON: {first}") from exc
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise _bad(p, 'is not a ppdp model file (no "format": "ppdp-model")')
    version = data.get("format_version")
    if version != FORMAT_VERSION:
        raise _bad(
            p, f"has format_version {version!r}; this ppdp ({__version__}) reads {FORMAT_VERSION}"
        )
    missing = [k for k in (*_KEYS, "sha256") if k not in data]
    if missing:
        raise _bad(p, f"lacks the key(s) {', '.join(repr(m) for m in missing)}")
    body = {k: data[k] for k in _KEYS}
    try:
        digest = hashlib.sha256(_canonical(body).encode("utf-8")).hexdigest()
    except ValueError as exc:
        raise _bad(p, "holds a non-finite number") from exc
    if digest != data["sha256"]:
        raise _bad(p, "does not match its sha256: it was edited or damaged")
    name = data["estimator"]
    if name not in ESTIMATORS:
        raise _bad(p, f"holds an unknown estimator {name!r} (known: {', '.join(ESTIMATORS)})")
    cls = getattr(importlib.import_module(ESTIMATORS[name]), name)
    estimator = cls.from_model_dict(data["model"])
    schema = Schema.from_dict(data["schema"]) if data["schema"] is not None else None
    if schema is not None and schema_fingerprint(schema) != data["schema_fingerprint"]:
        raise _bad(p, "holds a schema that does not match its fingerprint")
    g = data["guarantee"]
    return ModelFile(
        estimator=estimator,
        estimator_name=name,
        guarantee=Guarantee.from_dict(g) if g is not None else None,
        schema=schema,
        schema_fingerprint=data["schema_fingerprint"],
        feature_names=tuple(data["feature_names"]) if data["feature_names"] is not None else None,
        classes=tuple(data["classes"]) if data["classes"] is not None else None,
        ppdp_version=str(data["ppdp_version"]),
    )


def load_model(path: str | os.PathLike[str]) -> Any:
    """The fitted estimator stored in a model file (see :func:`read_model` for the rest).

    Loading is free post-processing: predictions of the loaded model equal those of the
    saved one exactly (the coefficients round-trip through JSON's shortest float repr).
    """
    return read_model(path).estimator


# ---------------------------------------------------------------------------- train / predict
#: ``ppdp train`` learner names -> estimator class names.
LEARNERS: dict[str, str] = {
    "logreg": "PrivateLogisticRegression",
    "svm": "PrivateLinearSVM",
    "rbf-svm": "PrivateRBFSVM",
    "hybrid-svm": "HybridRBFSVM",
}


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


@dataclass(frozen=True)
class PredictResult:
    """What :func:`predict_file` wrote: the output path and the number of rows."""

    path: Path
    n_rows: int
    columns: tuple[str, ...]


def _learner_class(kind: str) -> type:
    from ppdp._validation import check_option

    kind = check_option("learner", kind, tuple(LEARNERS))
    name = LEARNERS[kind]
    return getattr(importlib.import_module(ESTIMATORS[name]), name)  # type: ignore[no-any-return]


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


def _file(value: Any) -> Any:
    """A path-like input, or None (a DataFrame or Schema object is not a file)."""
    return value if isinstance(value, str | os.PathLike) else None


def _binary_schema(schema: Schema) -> Schema:
    if schema.label is None:
        raise ParameterError(
            "schema declares no label: training a classifier needs a label with two classes"
        )
    if len(schema.label.classes) != 2:
        raise ParameterError(
            f"schema label {schema.label.name!r} has {len(schema.label.classes)} classes; the "
            "private classifiers need exactly two"
        )
    return schema


def build_learner(
    kind: str,
    *,
    schema: Schema,
    epsilon: float,
    delta: float | None = None,
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
    accepted = set(cls._get_param_names())  # type: ignore[attr-defined]
    wanted: dict[str, Any] = {
        "epsilon": epsilon,
        "delta": delta,
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
    if kind == "hybrid-svm":
        if public_X is None:
            raise ParameterError("public (None) is required for hybrid-svm: a public sample")
        return cls(public_X, **kwargs)
    if public_X is not None:
        raise ParameterError(f"public data apply to hybrid-svm only, not {kind}")
    return cls(**kwargs)


def train_model_file(
    kind: str,
    data: Any,
    *,
    schema: Any,
    output: str | os.PathLike[str],
    epsilon: float,
    delta: float | None = None,
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
    data : DataFrame or path
        The private table (CSV, optionally compressed, or Parquet): the schema's feature
        columns and its label (two classes).
    schema : Schema or path
        The declared schema; ``data_norm`` is its encoded row-norm bound.
    output : path
        The model file (``.json``).
    epsilon, delta, regularization, perturbation : optional
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

    The result's ``report`` is the custodian's encoding report (values clipped per column).
    """
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
        force=force,
    )
    if accountant is not None:
        seeded = random_state is not None and not getattr(random_state, "is_secure", False)
        refuse_seeded(seeded, allow_seeded=allow_seeded, value=random_state)
    sch = _binary_schema(_as_schema(schema))
    features = sch.without_label()
    public_X = None
    if public is not None:
        public_X, _ = features.encode(
            _as_frame(public, "public", features.column_names, sep=sep, encoding=encoding)
        )
    est = build_learner(
        kind,
        schema=sch,
        epsilon=epsilon,
        delta=delta,
        regularization=regularization,
        perturbation=perturbation,
        public_X=public_X,
        random_state=random_state,
        options=options,
    )
    cost = est.privacy_budget()  # validates every parameter; reads no data
    if accountant is not None:
        from ppdp.accounting import check_charges

        check_charges(
            accountant,
            est._plan(None),
            mechanism=type(est).__name__,
            idempotency_key=idempotency_key,
        )
    X, y, report = sch.encode(
        _as_frame(data, "data", sch.column_names, sep=sep, encoding=encoding),
        return_report=True,
    )
    if on_report is not None:
        on_report(sch, report)
    if dry_run:
        # The checks fit runs before its spend, in its order; then stop.
        est._declared_classes()
        mode = accountant.on_invalid if accountant is not None else "raise"
        Xv, _, _ = est._validate_training_data(X, y, on_invalid=mode)
        plan = est._plan(Xv.shape[0])
        est._warn_low_utility(Xv.shape[0])
        return TrainResult(
            path=dest,
            estimator=est,
            guarantee=None,
            ledger_indices=(),
            seeded=random_state is not None,
            report=report,
            plan=plan,
            schema=sch,
        )
    est.fit(X, y, accountant=accountant, allow_seeded=allow_seeded, idempotency_key=idempotency_key)
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
) -> PredictResult:
    """Predict the rows of a table with a model file; write a CSV (free post-processing).

    The table is encoded with the schema stored in the model file (its label column, if
    present, is ignored). The output has one row per input row: ``prediction`` (the class
    name), ``score`` (``decision_function``; positive means the second class) and, for
    logistic regression, ``probability`` (of the second class). The output is checked
    like a release's (not an input, not an existing file unless ``force``) before anything
    is read.
    """
    import pandas as pd

    dest = check_output(
        output,
        param="output",
        suffixes=(".csv", ".csv.gz"),
        inputs=[("model file", _file(model)), ("data", _file(data))],
        force=force,
    )
    name = dest.name.lower()
    mf = read_model(model)
    if mf.schema is None:
        raise ParameterError(
            f"model file ({str(model)!r}) holds no schema; it was saved without one"
        )
    features = mf.schema.without_label()
    X, _ = features.encode(
        _as_frame(data, "data", features.column_names, sep=sep, encoding=encoding)
    )
    est = mf.estimator
    scores = np.asarray(est.decision_function(X), dtype=np.float64)
    predicted = np.asarray(est.predict(X))
    classes = mf.classes
    if classes is not None and np.issubdtype(predicted.dtype, np.integer):
        labels: Any = np.asarray(classes, dtype=object)[predicted]  # class codes -> names
    else:
        labels = predicted
    out = pd.DataFrame({"prediction": labels, "score": scores})
    if hasattr(est, "predict_proba"):
        out["probability"] = np.asarray(est.predict_proba(X))[:, 1]
    with atomic_path(dest) as tmp:
        compression = "gzip" if name.endswith(".gz") else None
        out.to_csv(tmp, index=False, float_format="%.17g", compression=compression)
    return PredictResult(path=dest, n_rows=len(out), columns=tuple(out.columns))
